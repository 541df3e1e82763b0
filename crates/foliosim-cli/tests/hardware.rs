//! Hardware profiles as files (docs/hardware.md): a scenario's `[machine] hardware` and
//! `--hardware` name a bundled profile or a .toml file; a bad file exits 2 with one line naming
//! the file and the key, and writes no result.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn foliosim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_foliosim"))
}

/// A directory under the system temp dir, unique per test, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("foliosim-hw-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

fn x86_server() -> String {
    std::fs::read_to_string(repo("profiles/x86-server.toml")).unwrap()
}

/// A small scenario that faults, zeroes, reclaims and swaps.
const SCENARIO: &str = r#"
name = "hw-test"
profiles = ["v6.12"]

[machine]
[[machine.node]]
memory = "1G"
cpus = 2

[[swap]]
name = "ram0"
kind = "brd"
size = "256M"

[[cgroup]]
name = "bench"
"memory.max" = "24M"

[[task]]
name = "usemem"
cgroup = "bench"
generator = "usemem"
processes = 2
size = "16M"
"#;

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `foliosim ARGS... --json DIR/out.json` refused: exit 2, one line with each needle, no output.
fn expect_refusal(dir: &TempDir, args: &[&str], needles: &[&str]) -> String {
    let json = dir.0.join("out.json");
    let out = foliosim()
        .args(args)
        .arg("--json")
        .arg(&json)
        .current_dir(&dir.0)
        .output()
        .unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "{needle:?} missing from: {stderr}");
    }
    assert!(!json.exists(), "no --json output on error");
    assert!(out.stdout.is_empty(), "nothing on stdout on error");
    stderr
}

/// x86-server's file with `from` replaced by `to` (once), as `name` in `dir`.
fn edited(dir: &TempDir, name: &str, from: &str, to: &str) -> PathBuf {
    let text = x86_server();
    assert!(text.contains(from), "{from}");
    dir.write(name, &text.replacen(from, to, 1))
}

#[test]
fn a_bad_profile_file_names_the_file_and_the_key() {
    let dir = TempDir::new("bad");
    let scenario = dir.write("s.toml", SCENARIO);
    let scenario = scenario.to_str().unwrap();
    let cases: &[(&str, &str, &str, &[&str])] = &[
        (
            "value = 700\n",
            "value = -3\n",
            "negative.toml",
            &[
                "negative.toml: cost.fault_entry_ns.value: expected a non-negative integer \
                 (nanoseconds), found -3",
            ],
        ),
        (
            "value = 700\n",
            "value = 7e2\n",
            "float.toml",
            &["float.toml: cost.fault_entry_ns.value: ", "found 700.0"],
        ),
        (
            "[cost.zero_page_ns]",
            "[cost.zero_page_us]",
            "unknown.toml",
            &[
                "unknown.toml: cost.zero_page_us: ",
                "the model does not use",
            ],
        ),
        (
            "arch = \"x86\"",
            "arch = \"sparc\"",
            "arch.toml",
            &["arch.toml: arch: expected \"x86\" or \"arm64\", found \"sparc\""],
        ),
        (
            "value = 1536\n",
            "value = 0\n",
            "tlb.toml",
            &["tlb.toml: cost.dtlb_entries.value: expected a positive integer (entries"],
        ),
        (
            "source = \"unused on x86 (see tlbi_broadcast_ns)\"",
            "",
            "nosource.toml",
            &[
                "nosource.toml: cost.dsb_ish_ns.source: expected a non-empty string",
                "found none",
            ],
        ),
        (
            "[cost.dsb_ish_ns]",
            "[cost.dsb_ish_ns",
            "syntax.toml",
            &["syntax.toml: line ", "TOML syntax error"],
        ),
    ];
    for (from, to, name, needles) in cases {
        edited(&dir, name, from, to);
        expect_refusal(&dir, &["run", scenario, "--hardware", name], needles);
    }
    // a cost left out
    let text = x86_server();
    let start = text.find("[cost.zero_page_ns]").unwrap();
    let end = text.find("[cost.copy_page_ns]").unwrap();
    dir.write(
        "missing.toml",
        &format!("{}{}", &text[..start], &text[end..]),
    );
    expect_refusal(
        &dir,
        &["run", scenario, "--hardware", "missing.toml"],
        &["missing.toml: cost.zero_page_ns: expected a [cost.zero_page_ns] table"],
    );
    // the same file named by the scenario: the file's path, relative to the scenario's folder
    std::fs::create_dir_all(dir.0.join("sub")).unwrap();
    let in_sub = dir.write(
        "sub/s.toml",
        &SCENARIO.replace("[machine]", "[machine]\nhardware = \"../negative.toml\""),
    );
    expect_refusal(
        &dir,
        &["run", in_sub.to_str().unwrap()],
        &["sub/../negative.toml: cost.fault_entry_ns.value: "],
    );
    // reproduce and validate check --hardware before anything runs (validate before root)
    expect_refusal(
        &dir,
        &["reproduce", scenario, "--hardware", "negative.toml"],
        &["negative.toml: cost.fault_entry_ns.value"],
    );
    expect_refusal(
        &dir,
        &[
            "validate",
            scenario,
            "--profile",
            "v6.12",
            "--hardware",
            "tlb.toml",
        ],
        &["tlb.toml: cost.dtlb_entries.value"],
    );
    expect_refusal(
        &dir,
        &["run", scenario, "--hardware", "vax"],
        &[
            "--hardware: expected a bundled hardware profile (x86-server, arm64-altra) or a path \
           to a .toml profile file, found \"vax\"",
        ],
    );
    expect_refusal(
        &dir,
        &["run", scenario, "--hardware", "absent.toml"],
        &["absent.toml: cannot read: No such file or directory"],
    );
}

/// `run FILE ARGS --json` in `dir`: the JSON text.
fn run_json(dir: &TempDir, scenario: &Path, args: &[&str]) -> String {
    let json = dir.0.join("result.json");
    let out = foliosim()
        .arg("run")
        .arg(scenario)
        .args(args)
        .arg("--json")
        .arg(&json)
        .current_dir(&dir.0)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    std::fs::read_to_string(&json).unwrap()
}

fn sim_time_ns(json: &str) -> u64 {
    let doc: serde_json::Value = serde_json::from_str(json).unwrap();
    doc["runs"][0]["sim_time_ns"].as_u64().unwrap()
}

// ---- The tests below run the simulation engine. ----

#[test]
fn a_profile_file_runs_like_the_bundled_profile_it_copies() {
    let dir = TempDir::new("copy");
    let scenario = dir.write("s.toml", SCENARIO);
    dir.write(
        "copy.toml",
        &x86_server().replace("name = \"x86-server\"", "name = \"mine\""),
    );
    let bundled = run_json(&dir, &scenario, &[]);
    assert_eq!(
        run_json(&dir, &scenario, &["--hardware", "copy.toml"]),
        bundled
    );
    assert_eq!(
        run_json(&dir, &scenario, &["--hardware", "x86-server"]),
        bundled
    );
    // named by the scenario, relative to its folder, from another working directory
    std::fs::create_dir_all(dir.0.join("sub")).unwrap();
    let in_sub = dir.write(
        "sub/s.toml",
        &SCENARIO.replace("[machine]", "[machine]\nhardware = \"../copy.toml\""),
    );
    assert_eq!(run_json(&dir, &in_sub, &[]), bundled);
    // the file's values are the ones charged: faults zero pages, so dearer zeroing is slower
    edited(&dir, "slow.toml", "value = 470\n", "value = 4700\n");
    let slow = run_json(&dir, &scenario, &["--hardware", "slow.toml"]);
    assert!(sim_time_ns(&slow) > sim_time_ns(&bundled), "{slow}");
    // the other bundled profile is another machine
    let altra = run_json(&dir, &scenario, &["--hardware", "arm64-altra"]);
    assert_ne!(sim_time_ns(&altra), sim_time_ns(&bundled));
    // the header says which hardware the flag chose
    let out = foliosim()
        .arg("run")
        .arg(&scenario)
        .args(["--hardware", "slow.toml"])
        .current_dir(&dir.0)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout
            .lines()
            .next()
            .unwrap()
            .ends_with("hardware x86-server (slow.toml)"),
        "{stdout}"
    );
}

#[test]
fn explain_time_prints_each_tasks_time_by_mechanism_with_its_costs() {
    let dir = TempDir::new("explain");
    let scenario = dir.write("s.toml", SCENARIO);
    edited(&dir, "slow.toml", "value = 470\n", "value = 4700\n");
    let out = foliosim()
        .arg("run")
        .arg(&scenario)
        .args(["--hardware", "slow.toml", "--explain-time"])
        .current_dir(&dir.0)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // one table per task, each naming the hardware
    assert_eq!(stdout.matches("v6.12  task usemem").count(), 2, "{stdout}");
    assert_eq!(
        stdout.matches("(hardware x86-server)").count(),
        2,
        "{stdout}"
    );
    let zeroing: Vec<&str> = stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("zeroing "))
        .collect();
    assert_eq!(zeroing.len(), 2, "{stdout}");
    assert!(
        zeroing[0].ends_with("zero_page_ns 4700, pte_update_ns 15"),
        "{stdout}"
    );
    // the run swaps to brd: its block I/O shows; no zram, so no compression
    assert!(stdout.contains("  block_io "), "{stdout}");
    assert!(!stdout.contains("  compression "), "{stdout}");
    // the shares of a task's user + sys add up to about 100 %
    let shares: f64 = stdout
        .split("\n\n")
        .nth(2)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2)?.parse::<f64>().ok())
        .sum();
    assert!((shares - 100.0).abs() < 0.5, "{shares}: {stdout}");
    // without the flag, no tables
    let plain = foliosim().arg("run").arg(&scenario).output().unwrap();
    assert!(!String::from_utf8_lossy(&plain.stdout).contains("profile costs"));
}

#[test]
fn list_shows_the_bundled_profiles() {
    let out = foliosim().arg("list").current_dir("/").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("  x86-server   a current 2-socket-class"),
        "{stdout}"
    );
    assert!(stdout.contains("  arm64-altra  Ampere Altra"), "{stdout}");
}
