//! The real-program corpus (scenarios/real/): record.py records a task's command with its `env`
//! and `cwd` into the task's trace, and every corpus scenario, given such a trace, loads and runs
//! in both variants. The command recorded here is tiny (a shell that checks its environment and
//! reads a file); the corpus's own traces are too large to make in a test. Skipped, with the
//! reason, on a machine without valgrind or Debian's python3.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn foliosim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_foliosim"))
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Why this machine cannot record, if it cannot.
fn cannot_record() -> Option<String> {
    let on_path = |name: &str| {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(name).is_file()))
    };
    if !on_path("valgrind") {
        return Some("valgrind is not installed (apt-get install valgrind)".into());
    }
    // record.py reads the scenarios with tomllib (Python 3.11)
    let python = Command::new("/usr/bin/python3")
        .args(["-c", "import tomllib"])
        .output();
    match python {
        Ok(out) if out.status.success() => None,
        _ => Some("no /usr/bin/python3 with tomllib (3.11 or later)".into()),
    }
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const TINY: &str = r#"
name = "tiny"
[machine]
[[machine.node]]
memory = "1G"
cpus = 2
[[task]]
name = "reader"
trace = "traces/tiny.trace"
cwd = "work"
env = { FOLIOSIM_CORPUS_TEST = "yes" }
command = ["/bin/sh", "-c", "test \"$FOLIOSIM_CORPUS_TEST\" = yes && exec /bin/cat input.txt"]
"#;

#[test]
fn record_py_records_a_command_with_its_env_and_cwd_and_the_corpus_runs_on_a_trace() {
    if let Some(why) = cannot_record() {
        eprintln!("skipping: {why}");
        return;
    }
    let dir =
        Scratch(std::env::temp_dir().join(format!("foliosim-corpus-test-{}", std::process::id())));
    std::fs::create_dir_all(dir.0.join("work")).unwrap();
    std::fs::write(dir.0.join("work/input.txt"), "x".repeat(3 * 4096)).unwrap();
    let scenario = dir.0.join("tiny.toml");
    std::fs::write(&scenario, TINY).unwrap();
    let out = Command::new("/usr/bin/python3")
        .arg(repository().join("scenarios/real/record.py"))
        .arg("--foliosim")
        .arg(env!("CARGO_BIN_EXE_foliosim"))
        .arg(&scenario)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    // the trace is where the scenario says, relative to its folder
    let trace = dir.0.join("traces/tiny.trace");
    assert!(trace.is_file(), "{}", text(&out));
    // the shell ran in `cwd` with `env` (record.py checks the command's exit status, and the
    // shell exits 1 without FOLIOSIM_CORPUS_TEST, cat without input.txt): cat read the file
    let info = foliosim()
        .args(["trace", "info", "--json"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(info.status.success(), "{}", text(&info));
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert!(info["events"]["read"].as_u64().unwrap_or(0) >= 1, "{info}");
    let run = foliosim().arg("run").arg(&scenario).output().unwrap();
    assert!(run.status.success(), "{}", text(&run));

    // every corpus scenario, pointed at this trace, loads and runs its variants
    let corpus = repository().join("scenarios/real");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&corpus).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let text_of = std::fs::read_to_string(&path).unwrap();
        let line = text_of
            .lines()
            .find(|l| l.starts_with("trace = "))
            .unwrap_or_else(|| panic!("{}: no trace", path.display()));
        assert!(
            text_of.contains("\ncommand = ["),
            "{}: no command",
            path.display()
        );
        let copy = dir.0.join(path.file_name().unwrap());
        std::fs::write(
            &copy,
            text_of.replace(line, "trace = \"traces/tiny.trace\""),
        )
        .unwrap();
        let run = foliosim().arg("run").arg(&copy).output().unwrap();
        assert!(run.status.success(), "{}: {}", path.display(), text(&run));
        let table = String::from_utf8_lossy(&run.stdout);
        assert!(table.contains("/4K") && table.contains("/64K"), "{table}");
        names.push(path.file_name().unwrap().to_string_lossy().into_owned());
    }
    names.sort();
    assert_eq!(
        names,
        ["python-dict.toml", "sort.toml", "sqlite.toml", "xz.toml"],
        "four programs"
    );
}
