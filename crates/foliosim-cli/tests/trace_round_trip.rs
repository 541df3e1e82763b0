//! Round trip of a real program: kernel-bench's ops player, recorded by `foliosim trace record`
//! while it plays an op list, replays to the counters the simulator gives for the same op list
//! (within 1%: the recorded program also faults in its loader, libc, stack and the op file).
//! Skipped, with the reason, on a machine without valgrind, a C compiler or make.

use std::path::{Path, PathBuf};
use std::process::Command;

fn foliosim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_foliosim"))
}

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
}

/// A folder of its own, removed when the test ends.
struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const REGION_BYTES: u64 = 64 << 20;

/// The machine both runs share: a 16 MiB memcg on zram, so the region is swapped out as it is
/// written and swapped in again as it is read. 4 KiB folios only, so that the two runs fault
/// the same pages whatever the alignment of the recorded program's other mappings.
const MACHINE: &str = r#"
profiles = ["v6.18"]
[machine]
hardware = "x86-server"
[[machine.node]]
memory = "1G"
cpus = 2
[[swap]]
name = "zram0"
kind = "zram"
size = "1G"
[[cgroup]]
name = "cg"
"memory.max" = "16M"
[knobs]
"/sys/kernel/mm/transparent_hugepage/enabled" = "never"
"#;

fn run_json(scenario: &Path, json: &Path) -> serde_json::Value {
    let out = foliosim()
        .arg("run")
        .arg(scenario)
        .arg("--json")
        .arg(json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "foliosim run {}: {}",
        scenario.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
    doc["runs"][0].clone()
}

#[test]
fn a_recorded_ops_player_replays_to_the_counters_of_its_op_list() {
    for tool in ["valgrind", "cc", "make"] {
        if !on_path(tool) {
            eprintln!("skipped: {tool} is not installed");
            return;
        }
    }
    let dir = Dir(std::env::temp_dir().join(format!("foliosim-round-trip-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    std::fs::create_dir_all(&dir.0).unwrap();
    let d = |name: &str| dir.0.join(name);

    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernel-bench");
    let status = Command::new("make")
        .args(["-s", "-C"])
        .arg(&bench)
        .arg(format!("OUT={}", d("bin").display()))
        .status()
        .unwrap();
    assert!(status.success(), "building kernel-bench failed");

    // The op list, as `foliosim kernel-run` writes it for the ops player, and as a scenario.
    std::fs::write(
        d("ops"),
        format!(
            "mmap a {REGION_BYTES}\n\
             touch a write sequential 0 0 - - 128 0\n\
             touch a read sequential 0 0 - - 128 0\n"
        ),
    )
    .unwrap();
    let ops = format!(
        r#"name = "ops"{MACHINE}
[[task]]
name = "p"
cgroup = "cg"
ops = [
  {{ op = "mmap", region = "a", size = "{REGION_BYTES}" }},
  {{ op = "touch", region = "a", access = "write", pattern = "sequential" }},
  {{ op = "touch", region = "a", access = "read", pattern = "sequential" }},
]
"#
    );
    std::fs::write(d("ops.toml"), ops).unwrap();

    let out = foliosim()
        .args(["trace", "record", "-o"])
        .arg(d("p.trace"))
        .arg("--")
        .arg(d("bin/ops_player"))
        .arg("p")
        .arg(d("ops"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "recording failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replay = format!(
        "name = \"replay\"{MACHINE}\n[[task]]\nname = \"p\"\ncgroup = \"cg\"\ntrace = \"p.trace\"\n"
    );
    std::fs::write(d("replay.toml"), replay).unwrap();

    let simulated = run_json(&d("ops.toml"), &d("ops.json"));
    let replayed = run_json(&d("replay.toml"), &d("replay.json"));
    let region_pages = REGION_BYTES / 4096;
    for counter in ["pgfault", "pgmajfault", "pswpout", "pswpin"] {
        let (s, r) = (
            simulated["vmstat"][counter].as_u64().unwrap(),
            replayed["vmstat"][counter].as_u64().unwrap(),
        );
        // The op list alone moves at least the region's pages through each counter.
        assert!(s >= region_pages / 2, "{counter}: {s} for the op list");
        let ratio = r as f64 / s as f64;
        assert!(
            (0.99..=1.01).contains(&ratio),
            "{counter}: replayed {r}, op list {s} (ratio {ratio:.4})"
        );
    }
}

/// A program whose stack grows 6 MiB deep: the stack grows into the reservation valgrind keeps
/// below it, without a syscall, and every access of the replay must still fall in a mapping.
#[test]
fn a_deep_stack_is_inside_the_recorded_mappings() {
    for tool in ["valgrind", "cc"] {
        if !on_path(tool) {
            eprintln!("skipped: {tool} is not installed");
            return;
        }
    }
    let dir = Dir(std::env::temp_dir().join(format!("foliosim-deep-stack-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    std::fs::create_dir_all(&dir.0).unwrap();
    let d = |name: &str| dir.0.join(name);
    std::fs::write(
        d("deep.c"),
        "#include <string.h>\n\
         static int f(int d) { volatile char buf[65536]; memset((char *)buf, d, sizeof buf);\n\
         return d == 0 ? buf[7] : f(d - 1) + buf[100]; }\n\
         int main(void) { return f(100) == 12345; }\n",
    )
    .unwrap();
    let status = Command::new("cc")
        .args(["-O1", "-o"])
        .arg(d("deep"))
        .arg(d("deep.c"))
        .status()
        .unwrap();
    assert!(status.success(), "cc failed");
    let out = foliosim()
        .args(["trace", "record", "-o"])
        .arg(d("deep.trace"))
        .arg("--")
        .arg(d("deep"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "recording failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replay = format!(
        "name = \"replay\"{MACHINE}\n[[task]]\nname = \"p\"\ncgroup = \"cg\"\ntrace = \"deep.trace\"\n"
    );
    std::fs::write(d("replay.toml"), replay).unwrap();
    let run = run_json(&d("replay.toml"), &d("replay.json"));
    let task = &run["tasks"][0];
    assert!(task["trace_accesses"].as_u64().unwrap() > 6_000_000);
    assert_eq!(task["trace_unmapped_accesses"], 0, "{task}");
}
