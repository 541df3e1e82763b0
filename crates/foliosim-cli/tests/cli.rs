//! End-to-end tests of the `foliosim` binary: input errors (exit 2, one line naming the file and
//! the key, no --json file left behind), usage, and, with a working engine, determinism.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

fn foliosim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_foliosim"))
}

/// A directory under the system temp dir, unique per test, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!(
            "foliosim-cli-{tag}-{}-{}-{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A small valid scenario; tests change one thing in it.
const VALID: &str = r#"
name = "cli-test"
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
"memory.max" = "64M"

[knobs]
"/sys/kernel/mm/transparent_hugepage/enabled" = "never"

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

/// Whether `dir` holds no temporary file (`*.tmp`) of a result.
fn no_temporary_files(dir: &TempDir) -> bool {
    std::fs::read_dir(&dir.0)
        .unwrap()
        .filter_map(|e| e.ok())
        .all(|e| !e.file_name().to_string_lossy().ends_with(".tmp"))
}

/// Runs `foliosim run FILE ARGS... --json OUT` and checks the input-error contract: exit 2, one
/// line `foliosim: FILE: KEY: ...` containing each of `needles`, and no output file.
fn expect_input_error(dir: &TempDir, scenario: &Path, extra: &[&str], needles: &[&str]) -> String {
    let json = dir.path("out.json");
    let out = foliosim()
        .arg("run")
        .arg(scenario)
        .args(extra)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line expected: {stderr}");
    assert!(stderr.starts_with("foliosim: "), "{stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "{needle:?} missing from: {stderr}");
    }
    assert!(!json.exists(), "no --json output on error");
    assert!(no_temporary_files(dir), "no temporary file left");
    assert!(out.stdout.is_empty(), "nothing on stdout on error");
    stderr
}

#[test]
fn nonexistent_file() {
    let dir = TempDir::new("missing");
    let missing = dir.path("nope.toml");
    let name = missing.display().to_string();
    expect_input_error(
        &dir,
        &missing,
        &[],
        &[&name, "cannot read: No such file or directory"],
    );
}

#[test]
fn bad_toml() {
    let dir = TempDir::new("syntax");
    let file = dir.write("bad.toml", "name = \"x\"\n[machine\ncpus = 1\n");
    let name = file.display().to_string();
    expect_input_error(&dir, &file, &[], &[&name, "line 2", "TOML syntax error"]);
}

#[test]
fn unknown_key() {
    let dir = TempDir::new("unknown-key");
    let file = dir.write("s.toml", &VALID.replace("size = \"16M\"", "sise = \"16M\""));
    let name = file.display().to_string();
    expect_input_error(
        &dir,
        &file,
        &[],
        &[
            &format!("{name}: task[0].sise: unknown key"),
            "processes, size",
        ],
    );
}

#[test]
fn unknown_knob_path_in_file() {
    let dir = TempDir::new("knob-file");
    let file = dir.write(
        "s.toml",
        &VALID.replace(
            "transparent_hugepage/enabled\"",
            "transparent_hugepage/enable\"",
        ),
    );
    let name = file.display().to_string();
    expect_input_error(
        &dir,
        &file,
        &[],
        &[
            &format!("{name}: knobs./sys/kernel/mm/transparent_hugepage/enable: "),
            "unknown knob",
        ],
    );
}

#[test]
fn invalid_knob_value_names_the_expected_values() {
    let dir = TempDir::new("knob-value");
    let file = dir.write("s.toml", &VALID.replace("= \"never\"", "= \"sometimes\""));
    let name = file.display().to_string();
    expect_input_error(
        &dir,
        &file,
        &[],
        &[
            &format!("{name}: knobs./sys/kernel/mm/transparent_hugepage/enabled: "),
            "always|madvise|never",
        ],
    );
}

#[test]
fn unknown_knob_via_set() {
    let dir = TempDir::new("knob-set");
    let file = dir.write("s.toml", VALID);
    expect_input_error(
        &dir,
        &file,
        &["--set", "/proc/sys/vm/swapiness=100"],
        &["foliosim: --set: /proc/sys/vm/swapiness: unknown knob"],
    );
    // a known knob with a bad value, and a memory.max for a cgroup the scenario lacks
    expect_input_error(
        &dir,
        &file,
        &["--set", "/proc/sys/vm/swappiness=300"],
        &["--set: /proc/sys/vm/swappiness: ", "0..=200"],
    );
    expect_input_error(
        &dir,
        &file,
        &["--set", "other/memory.max=1G"],
        &["--set: other/memory.max: ", "bench"],
    );
}

#[test]
fn negative_size() {
    let dir = TempDir::new("negative");
    let file = dir.write(
        "s.toml",
        &VALID.replace("size = \"256M\"", "size = \"-256M\""),
    );
    let name = file.display().to_string();
    expect_input_error(&dir, &file, &[], &[&format!("{name}: swap[0].size: ")]);
    let file = dir.write("t.toml", &VALID.replace("size = \"16M\"", "size = -16"));
    let name = file.display().to_string();
    expect_input_error(&dir, &file, &[], &[&format!("{name}: task[0].size: ")]);
}

#[test]
fn a_float_where_an_integer_is_expected_reads_as_a_float() {
    let dir = TempDir::new("float");
    for (value, shown) in [
        ("2.0", "found 2.0"),
        ("1e30", "found 1e30"),
        ("2.5", "found 2.5"),
    ] {
        let file = dir.write(
            "s.toml",
            &VALID.replace("cpus = 2", &format!("cpus = {value}")),
        );
        let stderr = expect_input_error(
            &dir,
            &file,
            &[],
            &["machine.node[0].cpus: expected an integer", shown],
        );
        assert!(stderr.trim_end().ends_with(shown), "{stderr}");
    }
    // a size too: not 1000000000000000000000000000000
    let file = dir.write("t.toml", &VALID.replace("size = \"16M\"", "size = 1e30"));
    expect_input_error(&dir, &file, &[], &["task[0].size: ", "found 1e30"]);
}

/// A name of 100,000 characters.
fn long_name() -> String {
    "n".repeat(100_000)
}

#[test]
fn a_long_value_is_echoed_shortened() {
    let dir = TempDir::new("long-echo");
    let long = long_name();
    let cases = [
        // a name that is not one (the scenario parser's echo)
        (
            VALID.replace("name = \"usemem\"", &format!("name = \"{long} x\"")),
            vec![],
            "task[0].name: ",
            "(100002 characters)",
        ),
        // a value not among the choices
        (
            VALID.replace("kind = \"brd\"", &format!("kind = \"{long}\"")),
            vec![],
            "swap[0].kind: ",
            "(100000 characters)",
        ),
        // a command-line value
        (
            VALID.to_string(),
            vec!["--variant".to_string(), long.clone()],
            "--variant: ",
            "(100000 characters)",
        ),
    ];
    for (text, args, key, length) in cases {
        let file = dir.write("s.toml", &text);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let stderr = expect_input_error(&dir, &file, &args, &[key, length, "nnnnnnnnnn"]);
        assert!(stderr.len() < 1_000, "echoed whole: {} bytes", stderr.len());
    }
}

#[test]
fn memcg_limit_larger_than_memory() {
    let dir = TempDir::new("memcg");
    let file = dir.write(
        "s.toml",
        &VALID.replace("\"memory.max\" = \"64M\"", "\"memory.max\" = \"2G\""),
    );
    let name = file.display().to_string();
    expect_input_error(
        &dir,
        &file,
        &[],
        &[&format!("{name}: cgroup[0].memory.max: "), "1 GiB"],
    );
    // the same through --set
    let file = dir.write("ok.toml", VALID);
    expect_input_error(
        &dir,
        &file,
        &["--set", "memory.max=2G"],
        &["--set: memory.max: ", "1 GiB"],
    );
}

#[test]
fn swap_device_of_zero_bytes() {
    let dir = TempDir::new("swap0");
    let file = dir.write("s.toml", &VALID.replace("size = \"256M\"", "size = \"0\""));
    let name = file.display().to_string();
    expect_input_error(
        &dir,
        &file,
        &[],
        &[&format!("{name}: swap[0].size: "), "greater than 0"],
    );
}

#[test]
fn unknown_profile() {
    let dir = TempDir::new("profile");
    let file = dir.write("s.toml", &VALID.replace("[\"v6.12\"]", "[\"v6.13\"]"));
    let name = file.display().to_string();
    expect_input_error(
        &dir,
        &file,
        &[],
        &[&format!("{name}: profiles[0]: "), "v6.9|v6.10|v6.12|v6.18"],
    );
    let file = dir.write("ok.toml", VALID);
    expect_input_error(
        &dir,
        &file,
        &["--profile", "v6.12+migrc+nope"],
        &["--profile: v6.12+migrc+nope: ", "+migrc"],
    );
}

#[test]
fn unknown_variant() {
    let dir = TempDir::new("variant");
    let file = dir.write("s.toml", VALID);
    expect_input_error(
        &dir,
        &file,
        &["--variant", "64K"],
        &["--variant: 64K: ", "no [[variant]]"],
    );
}

/// Two nodes; the task interleaves its heap and binds half of a buffer.
const POLICIES: &str = r#"
name = "policies"
profiles = ["v6.18"]
[machine]
[[machine.node]]
memory = "256M"
cpus = 1
[[machine.node]]
memory = "256M"
cpus = 1
[knobs]
"/sys/kernel/mm/transparent_hugepage/enabled" = "never"
[[task]]
name = "t"
mempolicy = "interleave:0-1"
ops = [
  { op = "mmap", region = "heap", size = "8M" },
  { op = "touch", region = "heap", access = "write" },
  { op = "mmap", region = "buf", size = "8M" },
  { op = "mbind", region = "buf", mode = "bind:1", offset = "4M", len = "4M" },
  { op = "set_mempolicy", mode = "default" },
  { op = "touch", region = "buf", access = "write" },
]
"#;

#[test]
fn bad_memory_policies_name_the_key_and_the_expected_form() {
    let dir = TempDir::new("mempolicy");
    let file = dir.write(
        "s.toml",
        &POLICIES.replace("\"interleave:0-1\"", "\"bind:0,2\""),
    );
    let name = file.display().to_string();
    expect_input_error(
        &dir,
        &file,
        &[],
        &[&format!("{name}: task[0].mempolicy: "), "found node 2"],
    );
    let file = dir.write("t.toml", &POLICIES.replace("\"bind:1\"", "\"bind-1\""));
    let name = file.display().to_string();
    expect_input_error(
        &dir,
        &file,
        &[],
        &[
            &format!("{name}: task[0].ops[3].mode: "),
            "\"interleave:0-1\"",
        ],
    );
}

/// Usage errors: exit 2, clap's reason on one line starting `foliosim: `, then one line saying
/// where the help is (no usage dump).
fn expect_usage_error(args: &[&str], needles: &[&str]) {
    let out = foliosim().args(args).output().unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{args:?}: two lines expected: {stderr}");
    assert!(lines[0].starts_with("foliosim: "), "{args:?}: {stderr}");
    assert!(
        lines[1].starts_with("For more information, try 'foliosim") && lines[1].contains("--help"),
        "{args:?}: {stderr}"
    );
    for needle in needles {
        assert!(
            stderr.contains(needle),
            "{args:?}: {needle:?} missing: {stderr}"
        );
    }
    assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
}

#[test]
fn usage_errors_exit_2_with_a_short_message() {
    expect_usage_error(
        &[],
        &["missing command (run, reproduce, kernel-run, validate, calibrate, list, swarm, trace, report)"],
    );
    expect_usage_error(&["frobnicate"], &["'frobnicate'"]);
    expect_usage_error(&["run"], &["<SCENARIO>", "'foliosim run --help'"]);
    expect_usage_error(
        &["run", "x.toml", "--bogus"],
        &["'--bogus'", "'foliosim run --help'"],
    );
    expect_usage_error(&["run", "x.toml", "--seed"], &["--seed"]);
    expect_usage_error(
        &["run", "x.toml", "--seed", "many"],
        &["'many'", "--seed", "expected an unsigned integer"],
    );
    expect_usage_error(
        &["validate", "x.toml", "--frob"],
        &["'--frob'", "'foliosim validate --help'"],
    );
    expect_usage_error(
        &["kernel-run", "x.toml", "--profile", "v6.12"],
        &["'--profile'"],
    );
    expect_usage_error(&["list", "extra"], &["'extra'"]);
}

#[test]
fn help_exits_0_and_lists_every_command() {
    let out = foliosim().arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Usage: foliosim <COMMAND>"), "{stdout}");
    for command in ["run", "reproduce", "kernel-run", "validate", "list"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{command} "))),
            "{command} missing from --help:\n{stdout}"
        );
    }
    // each command's own help names its flags
    for (command, flags) in [
        (
            "run",
            &[
                "--profile",
                "--variant",
                "--set",
                "--seed",
                "--json",
                "--check",
            ][..],
        ),
        ("reproduce", &["NAME|all", "--seed", "--json", "--check"]),
        ("kernel-run", &["--variant", "--set", "--seed", "--json"]),
        (
            "validate",
            &["--variant", "--set", "--seed", "--json", "--profile"],
        ),
    ] {
        let out = foliosim().args([command, "--help"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(&format!("Usage: foliosim {command}")),
            "{stdout}"
        );
        for flag in flags {
            assert!(
                stdout.contains(flag),
                "{flag} missing from {command} --help:\n{stdout}"
            );
        }
    }
    let out = foliosim().arg("--version").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("foliosim {}\n", env!("CARGO_PKG_VERSION"))
    );
}

/// An unknown scenario name: exit 2, one line naming the bundled scenarios.
#[test]
fn unknown_scenario_name_names_the_bundled_ones() {
    for command in ["run", "reproduce", "validate", "kernel-run"] {
        let out = foliosim()
            .args([command, "no-such-scenario"])
            .output()
            .unwrap();
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{command}: {stderr}");
        assert!(
            stderr.starts_with(&format!("foliosim: {command}: no-such-scenario: ")),
            "{stderr}"
        );
        assert!(
            stderr.contains("usemem-small") && stderr.contains("thp-swap-allocator"),
            "{stderr}"
        );
    }
}

/// Whether this process runs as root (a live run would really run).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

#[test]
fn validate_takes_a_bundled_name() {
    // the name resolves: the next check, the profile, is what fails (root or not)
    let out = foliosim()
        .args(["validate", "thp-swap-allocator", "--profile", "v0"])
        .output()
        .unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("foliosim: --profile: v0: "), "{stderr}");
    if is_root() {
        return;
    }
    // not root: refused by the live run's preflight, before anything runs
    let out = foliosim()
        .args(["validate", "thp-swap-allocator", "--profile", "v6.18"])
        .output()
        .unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("need root"), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn list_shows_scenarios_profiles_and_knobs() {
    let out = foliosim().arg("list").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "usemem-small",
        "v6.10",
        "+thp_zero_split",
        "/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled",
        "/proc/sys/vm/swappiness",
        "(default 60)",
    ] {
        assert!(
            stdout.contains(needle),
            "{needle:?} missing from list:\n{stdout}"
        );
    }
}

fn bundled(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name)
}

// ---- The tests below run the simulation engine. ----

#[test]
fn run_prints_a_column_per_run_and_writes_json() {
    let dir = TempDir::new("run");
    let file = dir.write("s.toml", VALID);
    let json = dir.path("out.json");
    let out = foliosim()
        .arg("run")
        .arg(&file)
        .args([
            "--profile",
            "v6.9",
            "--profile",
            "v6.18",
            "--check",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("foliosim "), "{stdout}");
    assert!(stdout.contains("scenario cli-test") && stdout.contains("seed 1"));
    assert!(
        stdout.contains("v6.9") && stdout.contains("v6.18"),
        "{stdout}"
    );
    assert!(stdout.contains("usemem throughput_kbps"), "{stdout}");
    assert!(stdout.contains("pswpout"), "{stdout}");
    let text = std::fs::read_to_string(&json).unwrap();
    assert!(text.ends_with("}\n"));
    assert!(no_temporary_files(&dir));
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["foliosim_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(doc["scenario"], "cli-test");
    assert_eq!(doc["runs"].as_array().unwrap().len(), 2);
    assert_eq!(doc["runs"][0]["profile"], "v6.9");
    assert_eq!(doc["runs"][0]["variant"], serde_json::Value::Null);
    assert_eq!(doc["runs"][0]["seed"], 1);
    // key order as DESIGN.md shows it
    let order: Vec<usize> = [
        "\"foliosim_version\"",
        "\"scenario\"",
        "\"runs\"",
        "\"published\"",
    ]
    .iter()
    .map(|k| text.find(k).unwrap())
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
}

#[test]
fn memory_policies_run_under_check() {
    let dir = TempDir::new("mempolicy-run");
    let file = dir.write("s.toml", POLICIES);
    let json = dir.path("out.json");
    let out = foliosim()
        .arg("run")
        .arg(&file)
        .arg("--check")
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let vmstat = &doc["runs"][0]["vmstat"];
    assert_eq!(vmstat["pgfault"], 4096);
    // The heap alternates between the nodes, each page on its interleave target; the buffer's
    // bound half is on node 1, the rest local to the task's node 0.
    assert_eq!(vmstat["numa_interleave"], 2048);
    assert_eq!(vmstat["numa_hit"], 4096);
    assert_eq!(vmstat["numa_local"], 2048);
    assert_eq!(vmstat["numa_other"], 2048);
}

#[test]
fn long_task_and_variant_names_keep_the_table_one_line_per_row() {
    // the JSON holds the names whole; the table shows their start and end
    let dir = TempDir::new("long-names");
    let long = long_name();
    let text = format!(
        "{}\n[[variant]]\nname = \"{long}v\"\n",
        VALID.replace("name = \"usemem\"", &format!("name = \"{long}t\""))
    );
    let file = dir.write("s.toml", &text);
    let json = dir.path("out.json");
    let out = foliosim()
        .arg("run")
        .arg(&file)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["runs"][0]["variant"], format!("{long}v"));
    assert_eq!(doc["runs"][0]["tasks"][0]["name"], format!("{long}t-0"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.lines().all(|l| l.len() < 300), "a long line");
    let header = stdout.lines().nth(2).unwrap();
    assert!(header.trim().starts_with("v6.12/nnnn") && header.ends_with("nnnnv"));
    let row = stdout
        .lines()
        .find(|l| l.starts_with("nnnn"))
        .expect("the task's row");
    assert!(
        row.contains("…") && row.contains("nnnnt throughput_kbps"),
        "{row}"
    );
    let figure = row.split_whitespace().last().unwrap();
    assert!(figure.parse::<u64>().is_ok(), "no figure on the row: {row}");
}

#[test]
fn usemem_small_is_deterministic_under_check() {
    let dir = TempDir::new("determinism");
    let scenario = bundled("usemem-small.toml");
    let mut outputs = Vec::new();
    for i in 0..2 {
        let json = dir.path(&format!("run{i}.json"));
        let out = foliosim()
            .arg("run")
            .arg(&scenario)
            .arg("--check")
            .arg("--json")
            .arg(&json)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        outputs.push((std::fs::read(&json).unwrap(), out.stdout));
    }
    assert!(outputs[0].0 == outputs[1].0, "JSON differs between runs");
    assert_eq!(outputs[0].1, outputs[1].1, "table differs between runs");
    let doc: serde_json::Value = serde_json::from_slice(&outputs[0].0).unwrap();
    let runs = doc["runs"].as_array().unwrap();
    // 4 default profiles x variants 4K and 64K
    assert_eq!(runs.len(), 8);
    assert_eq!(runs[0]["variant"], "4K");
    assert_eq!(runs[1]["variant"], "64K");
}

#[test]
fn run_takes_a_bundled_name_as_it_takes_the_path() {
    let dir = TempDir::new("bundled-name");
    let mut outputs = Vec::new();
    for scenario in [
        "usemem-small".to_string(),
        bundled("usemem-small.toml").display().to_string(),
    ] {
        let json = dir.path("out.json");
        let out = foliosim()
            .args([
                "run",
                &scenario,
                "--profile",
                "v6.18",
                "--variant",
                "64K",
                "--json",
            ])
            .arg(&json)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        outputs.push((std::fs::read(&json).unwrap(), out.stdout));
    }
    assert!(
        outputs[0] == outputs[1],
        "a name and its path give different results"
    );
    let stdout = String::from_utf8_lossy(&outputs[0].1);
    assert!(stdout.contains("scenario usemem-small"), "{stdout}");
    assert!(stdout.contains("v6.18/64K"), "{stdout}");
}

#[test]
fn run_refuses_a_task_with_only_a_command_naming_the_trace_key() {
    let dir = TempDir::new("command-only");
    let text = VALID.replace(
        "generator = \"usemem\"\nprocesses = 2\nsize = \"16M\"",
        "command = [\"/usr/bin/sort\", \"in.txt\"]",
    );
    assert_ne!(text, VALID);
    let scenario = dir.write("s.toml", &text);
    expect_input_error(
        &dir,
        &scenario,
        &[],
        &[
            "s.toml: task[0].trace: ",
            "only a command",
            "foliosim trace record",
        ],
    );
}
