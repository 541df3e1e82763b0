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

/// A program that does what an external sort does with its runs: builds a heap with malloc
/// (the break grows over the page valgrind maps at it), writes a 24 MiB temporary file,
/// closes it, opens it again and reads it back. The temporary file is empty when it is opened,
/// so the replay must let write() extend it; under the 16 MiB memcg part of it is evicted
/// before the reread and comes from disk again as refaults; and every heap access translates.
#[test]
fn a_temporary_file_written_then_read_back_replays_its_rereads() {
    for tool in ["valgrind", "cc"] {
        if !on_path(tool) {
            eprintln!("skipped: {tool} is not installed");
            return;
        }
    }
    let dir = Dir(std::env::temp_dir().join(format!("foliosim-tmpfile-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    std::fs::create_dir_all(&dir.0).unwrap();
    let d = |name: &str| dir.0.join(name);
    std::fs::write(
        d("runs.c"),
        r#"#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define FILE_BYTES (24 << 20)
int main(int argc, char **argv) {
    /* a heap of small blocks: malloc takes them from the break */
    char *blocks[512];
    for (int i = 0; i < 512; i++) { blocks[i] = malloc(4000); memset(blocks[i], i, 4000); }
    char path[4096];
    snprintf(path, sizeof path, "%s/runXXXXXX", argv[1]);
    int fd = mkstemp(path);
    if (fd < 0) return 1;
    static char buf[65536];
    for (long done = 0; done < FILE_BYTES; done += 4096) {
        memcpy(buf, blocks[(done >> 12) % 512], 4096);
        if (write(fd, buf, 4096) != 4096) return 2;
    }
    close(fd);
    fd = open(path, O_RDONLY);
    long sum = 0, n;
    while ((n = read(fd, buf, sizeof buf)) > 0) sum += buf[n - 1];
    close(fd);
    unlink(path);
    for (int i = 0; i < 512; i++) sum += blocks[i][7];
    return sum == 42;
}
"#,
    )
    .unwrap();
    let status = Command::new("cc")
        .args(["-O1", "-o"])
        .arg(d("runs"))
        .arg(d("runs.c"))
        .status()
        .unwrap();
    assert!(status.success(), "cc failed");
    let out = foliosim()
        .args(["trace", "record", "-o"])
        .arg(d("runs.trace"))
        .arg("--")
        .arg(d("runs"))
        .arg(&dir.0)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "recording failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replay = format!(
        "name = \"replay\"{MACHINE}\n[[task]]\nname = \"p\"\ncgroup = \"cg\"\ntrace = \"runs.trace\"\n"
    );
    std::fs::write(d("replay.toml"), replay).unwrap();
    let run = run_json(&d("replay.toml"), &d("replay.json"));
    let task = &run["tasks"][0];
    assert_eq!(task["trace_unmapped_accesses"], 0, "{task}");
    assert_eq!(run["vmstat"]["oom_kill"], 0);
    // 24 MiB through a 16 MiB memcg: at least 8 MiB (2,048 pages) are read back from disk
    let pgpgin_kb = run["vmstat"]["pgpgin"].as_u64().unwrap();
    assert!(pgpgin_kb >= 8 << 10, "pgpgin {pgpgin_kb} KiB");
    let refaults = run["vmstat"]["workingset_refault_file"].as_u64().unwrap();
    assert!(refaults >= 2048, "workingset_refault_file {refaults}");
}
