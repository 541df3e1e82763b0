//! `foliosim kernel-run` on the machine the tests run on: after a successful run, a run played
//! with a swap file for CONFIG_THP_SWAP=n, a run of tmpfs files and shared anonymous memory, a
//! run whose program is killed and a run interrupted by SIGTERM, every knob reads as before and
//! no zram device, file system (a swap file's ext4, a tmpfs), swap area or cgroup the run made
//! remains.
//!
//! These need root, zram and a memory cgroup controller, and no swap already active. Where the
//! machine lacks one, `kernel-run` refuses with exit status 3 before changing anything, and each
//! test prints why and passes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Live runs change machine-wide state: one at a time.
static LIVE: Mutex<()> = Mutex::new(());

fn foliosim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_foliosim"))
}

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!(
            "foliosim-kernel-run-test-{tag}-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// Files under `dir` (recursively), sorted, with their contents.
fn files_under(dir: &Path, skip: &dyn Fn(&Path) -> bool, out: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if skip(&p) {
            continue;
        }
        if p.is_dir() {
            files_under(&p, skip, out);
        } else if let Some(text) = read(&p) {
            out.push((p.display().to_string(), text));
        }
    }
}

/// Directories named `foliosim-*` anywhere in the cgroup file systems.
fn foliosim_cgroups(dir: &Path, depth: u32, out: &mut Vec<PathBuf>) {
    if depth == 0 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if !p.is_dir() || p.is_symlink() {
            continue;
        }
        if e.file_name().to_string_lossy().starts_with("foliosim-") {
            out.push(p.clone());
        }
        foliosim_cgroups(&p, depth - 1, out);
    }
}

/// Everything a live run may touch: the knobs (THP and its per-size and khugepaged settings,
/// the vm sysctls foliosim knows, NUMA balancing and demotion, zswap), the swap areas, the zram
/// devices, and cgroups named like the runner's.
fn machine_state() -> Vec<(String, String)> {
    let mut state = Vec::new();
    // counters change on their own; the rest of the directory is settings
    let skip = |p: &Path| {
        p.ends_with("stats")
            || p.ends_with("khugepaged/full_scans")
            || p.ends_with("khugepaged/pages_collapsed")
    };
    files_under(
        Path::new("/sys/kernel/mm/transparent_hugepage"),
        &skip,
        &mut state,
    );
    for knob in [
        "/proc/sys/vm/swappiness",
        "/proc/sys/vm/page-cluster",
        "/proc/sys/vm/min_free_kbytes",
        "/proc/sys/vm/watermark_scale_factor",
        "/proc/sys/kernel/numa_balancing",
        "/sys/kernel/mm/numa/demotion_enabled",
        "/sys/module/zswap/parameters/enabled",
        // raised by each run on a VM whose balloon reports free pages
        "/sys/module/page_reporting/parameters/page_reporting_order",
        "/proc/swaps",
    ] {
        state.push((knob.into(), read(Path::new(knob)).unwrap_or_default()));
    }
    let mut zram: Vec<String> = std::fs::read_dir("/sys/block")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("zram"))
                .collect()
        })
        .unwrap_or_default();
    zram.sort();
    for dev in zram {
        let sys = Path::new("/sys/block").join(&dev);
        for file in ["disksize", "comp_algorithm", "initstate"] {
            state.push((
                format!("{}/{file}", sys.display()),
                read(&sys.join(file)).unwrap_or_default(),
            ));
        }
    }
    for mount in read(Path::new("/proc/mounts")).unwrap_or_default().lines() {
        // a run's own mounts, and tracefs, which a run mounts for itself where it is not
        if mount.contains("foliosim-") || mount.split_whitespace().nth(2) == Some("tracefs") {
            state.push(("mount".into(), mount.into()));
        }
    }
    // the tracefs instance a run records the memcg statistics flusher in
    for e in std::fs::read_dir("/sys/kernel/tracing/instances")
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("foliosim-") {
            state.push(("tracefs instance".into(), name));
        }
    }
    let mut cgroups = Vec::new();
    foliosim_cgroups(Path::new("/sys/fs/cgroup"), 8, &mut cgroups);
    for cg in cgroups {
        state.push(("cgroup".into(), cg.display().to_string()));
    }
    state
}

fn assert_same_state(before: &[(String, String)], context: &str) {
    let after = machine_state();
    let diff: Vec<String> = before
        .iter()
        .zip(after.iter())
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("{} {:?} -> {} {:?}", a.0, a.1.trim(), b.0, b.1.trim()))
        .collect();
    assert!(
        diff.is_empty() && before.len() == after.len(),
        "{context}: the machine differs after the run ({} vs {} entries): {diff:?}",
        before.len(),
        after.len()
    );
}

/// A tiny pageout run: 16 MiB of 64K folios written, paged out to a 64 MiB zram, read back, in
/// a 64 MiB cgroup, with knobs moved away from their usual values.
const PAGEOUT: &str = r#"
name = "kernel-run-test"
profiles = ["v6.18"]

[machine]
[[machine.node]]
memory = "1G"
cpus = 2

[[swap]]
name = "zram0"
kind = "zram"
size = "64M"

[[cgroup]]
name = "bench"
"memory.max" = "64M"

[knobs]
"/sys/kernel/mm/transparent_hugepage/enabled" = "never"
"/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled" = "never"
"/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled" = "always"
"/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none" = "255"
"/sys/kernel/mm/transparent_hugepage/shrink_underused" = "0"
"/proc/sys/vm/swappiness" = "100"

[[variant]]
name = "plain"

[[variant]]
name = "no-thp-swap"
knobs = { "CONFIG_THP_SWAP" = "n" }

[[task]]
name = "pageout"
cgroup = "bench"
ops = [
  { op = "mmap", region = "mem", size = "16M" },
  { op = "touch", region = "mem", access = "write", pattern = "sequential", data = "nonzero" },
  { op = "madvise", region = "mem", advice = "pageout" },
  { op = "touch", region = "mem", access = "read", pattern = "sequential" },
  { op = "munmap", region = "mem" },
]
"#;

/// A program that waits, to be killed or interrupted, with a tmpfs file it wrote still mounted.
const SLEEPER: &str = r#"
name = "kernel-run-sleeper"
profiles = ["v6.18"]

[machine]
[[machine.node]]
memory = "1G"
cpus = 2

[[swap]]
name = "zram0"
kind = "zram"
size = "32M"

[[file]]
name = "scratch"
size = "4M"
fs = "tmpfs"
huge = "always"

[knobs]
"/sys/kernel/mm/transparent_hugepage/hugepages-32kB/enabled" = "always"
"/proc/sys/vm/page-cluster" = "0"

[[task]]
name = "sleeper"
ops = [
  { op = "mmap", region = "mem", size = "4M" },
  { op = "touch", region = "mem", access = "write", pattern = "sequential", data = "nonzero" },
  { op = "write", file = "scratch" },
  { op = "sleep", time = "60s" },
]
"#;

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs kernel-run; None (with the reason printed) when this machine cannot do live runs.
fn kernel_run(args: &[&str]) -> Option<Output> {
    let out = foliosim().arg("kernel-run").args(args).output().unwrap();
    if out.status.code() == Some(3) {
        eprintln!(
            "skipping live test: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return None;
    }
    Some(out)
}

/// Plays one variant of PAGEOUT and checks the machine is as before; the run's JSON result, or
/// None when this machine cannot do live runs.
fn pageout_run(variant: &str) -> Option<serde_json::Value> {
    let _one = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = Scratch::new(variant);
    let scenario = dir.write("pageout.toml", PAGEOUT);
    let json = dir.0.join("out.json");
    let before = machine_state();
    let out = kernel_run(&[
        scenario.to_str().unwrap(),
        "--variant",
        variant,
        "--json",
        json.to_str().unwrap(),
    ])?;
    assert_same_state(&before, &format!("after a run of {variant}"));
    assert!(out.status.success(), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_str(&read(&json).unwrap()).unwrap();
    Some(doc["runs"][0].clone())
}

/// shmem: a 32 MiB tmpfs file written in a 24 MiB memcg, so that part of it swaps, and read back;
/// 8 MiB of shared anonymous memory that a forked child writes and its parent then reads (the
/// child's pages, not copies); a mapping of the file read through.
const SHMEM: &str = r#"
name = "kernel-run-shmem"
profiles = ["v6.18"]

[machine]
[[machine.node]]
memory = "1G"
cpus = 2

[[swap]]
name = "zram0"
kind = "zram"
size = "128M"

[[cgroup]]
name = "bench"
"memory.max" = "24M"

[[file]]
name = "data"
size = "32M"
fs = "tmpfs"

[knobs]
"/sys/kernel/mm/transparent_hugepage/enabled" = "never"

[[task]]
name = "shmem"
cgroup = "bench"
ops = [
  { op = "write", file = "data", buffer = "64K", data = "nonzero" },
  { op = "fsync", file = "data" },
  { op = "read", file = "data" },
  { op = "mmap", region = "shm", size = "8M", shared = true },
  { op = "fork", name = "writer", ops = [
    { op = "touch", region = "shm", access = "write", pattern = "sequential", data = "nonzero" },
  ] },
  { op = "sleep", time = "1s" },
  { op = "touch", region = "shm", access = "read", pattern = "sequential" },
  { op = "mmap", region = "file", file = "data", prot = "r", shared = true },
  { op = "touch", region = "file", access = "read", pattern = "sequential" },
]
"#;

/// A real program as a task's command: it reports its cgroup, environment and directory, then
/// writes 48 MiB in a 24 MiB memcg, so that it swaps.
const COMMAND: &str = r#"
name = "kernel-run-command"
profiles = ["v6.18"]

[machine]
[[machine.node]]
memory = "1G"
cpus = 2

[[swap]]
name = "zram0"
kind = "zram"
size = "128M"

[[cgroup]]
name = "bench"
"memory.max" = "24M"

[knobs]
"/sys/kernel/mm/transparent_hugepage/enabled" = "never"

[[task]]
name = "writer"
cgroup = "bench"
command = ["/bin/sh", "-c", "cat /proc/self/cgroup > seen.txt; echo \"$FOLIOSIM_TEST_VALUE\" >> seen.txt; exec /usr/bin/python3 -c 'b = bytearray(48 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nfor i in range(0, len(b), 4096): b[i] += 1'"]
env = { FOLIOSIM_TEST_VALUE = "from-env" }
cwd = "CWD"
"#;

/// Named `kernel_run` so that `cargo test -- --skip kernel_run` leaves the live machine alone.
mod kernel_run {
    use super::*;

    #[test]
    fn a_command_runs_in_its_cgroup_with_its_env_and_cwd() {
        let _one = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        let dir = Scratch::new("command");
        let cwd = dir.0.join("cwd");
        std::fs::create_dir_all(&cwd).unwrap();
        let scenario = dir.write(
            "command.toml",
            &COMMAND.replace("CWD", cwd.to_str().unwrap()),
        );
        let json = dir.0.join("out.json");
        let before = machine_state();
        let Some(out) = kernel_run(&[scenario.to_str().unwrap(), "--json", json.to_str().unwrap()])
        else {
            return;
        };
        assert_same_state(&before, "after a command's run");
        assert!(out.status.success(), "{}", text(&out));
        let seen = read(&cwd.join("seen.txt")).expect("the command ran in its cwd");
        assert!(seen.contains("/foliosim-"), "in the run's cgroup: {seen}");
        assert!(seen.contains("from-env"), "with its env: {seen}");
        let doc: serde_json::Value = serde_json::from_str(&read(&json).unwrap()).unwrap();
        let run = &doc["runs"][0];
        assert_eq!(run["tasks"][0]["name"], "writer", "{run}");
        let task = &run["tasks"][0];
        let exit_ns = task["exit_ns"].as_u64().unwrap();
        assert!(exit_ns > 0, "{run}");
        // its CPU time, from wait4: python's loops in user mode, its faults and swap-outs in
        // the kernel; one thread cannot use more CPU than the time it ran
        let (user_ns, sys_ns) = (
            task["user_ns"].as_u64().unwrap(),
            task["sys_ns"].as_u64().unwrap(),
        );
        assert!(user_ns > 0 && sys_ns > 0, "{task}");
        assert!(user_ns + sys_ns <= exit_ns + exit_ns / 20, "{task}");
        // 48 MiB written in 24 MiB: at least half of it went to zram
        assert!(run["vmstat"]["pswpout"].as_u64().unwrap() >= 4096, "{run}");
    }

    #[test]
    fn a_successful_run_reads_the_counters_and_leaves_the_machine_as_it_was() {
        let Some(run) = pageout_run("plain") else {
            return;
        };
        assert!(run["profile"].as_str().unwrap().starts_with("live-"));
        assert_eq!(run["variant"], "plain");
        // 16 MiB out and back in: 256 folios of 64 KiB (other processes' idle pages may join them
        // in a machine whose DAMON pages out, hence at least)
        assert!(run["vmstat"]["pswpout"].as_u64().unwrap() >= 4096, "{run}");
        assert!(
            run["mthp"]["64kB"]["swpout"].as_u64().unwrap() >= 256,
            "{run}"
        );
        assert!(
            run["memcg"]["bench"]["pgmajfault"].as_u64().unwrap() >= 256,
            "{run}"
        );
        assert_eq!(run["tasks"][0]["name"], "pageout");
        assert_eq!(run["tasks"][0]["touches"], 8192);
        assert_eq!(run["live"]["swap"][0]["name"], "zram0");
        assert!(run["live"]["knobs_written"]
            .as_object()
            .unwrap()
            .contains_key("/proc/sys/vm/swappiness"));
        // the memcg statistics flusher: its periodic runs, 2 s apart, where tracefs has the
        // tracepoint; else the reason it was not recorded
        let live = &run["live"];
        match live["memcg_stats_flushes_us"].as_array() {
            Some(flushes) => {
                let t: Vec<i64> = flushes.iter().map(|v| v.as_i64().unwrap()).collect();
                assert!(t.windows(2).all(|w| w[1] - w[0] >= 1_900_000), "{live}");
                assert_eq!(live["memcg_stats_flush_first_us"].is_u64(), !t.is_empty());
            }
            None => assert!(
                live["memcg_stats_flushes_not_recorded"].is_string(),
                "{live}"
            ),
        }
        // where the run held free page reporting off, the kernel reported nothing during it
        let held = &run["live"]["page_reporting"];
        if held["reports_nothing"] == true {
            assert!(
                matches!(held["reported_kib_during_run"].as_u64(), None | Some(0)),
                "{held}"
            );
        }
    }

    #[test]
    fn validate_sim_only_simulates_this_machine_and_leaves_it_alone() {
        let _one = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        let dir = Scratch::new("sim-only");
        // more CPUs than any machine this runs on, so that validate plays the host's
        let scenario = dir.write("pageout.toml", &PAGEOUT.replace("cpus = 2", "cpus = 1024"));
        let json = dir.0.join("out.json");
        let before = machine_state();
        let out = foliosim()
            .args(["validate", scenario.to_str().unwrap(), "--variant", "plain"])
            .args(["--sim-only", "--json", json.to_str().unwrap()])
            .output()
            .unwrap();
        if out.status.code() == Some(3) {
            eprintln!("skipping live test: {}", text(&out));
            return;
        }
        assert_same_state(&before, "after validate --sim-only");
        assert!(out.status.success(), "{}", text(&out));
        assert!(
            text(&out).contains("simulated with the host's"),
            "{}",
            text(&out)
        );
        let doc: serde_json::Value = serde_json::from_str(&read(&json).unwrap()).unwrap();
        let runs = doc["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 1, "the simulated run only: {doc}");
        assert_eq!(runs[0]["profile"], "v6.18");
    }

    #[test]
    fn validate_runs_side_by_side_leave_no_mount_behind_and_report_no_mount_error() {
        // Each looks at zswap's debugfs directory on a mount of its own and removes it. With
        // debugfs mounted on /sys/kernel/debug for the look, one run's mount made another's
        // fail ("already mounted"), which read as zswap never enabled; seen once in a day of
        // parallel runs, as the looks rarely meet.
        let _one = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        let dir = Scratch::new("sim-only-parallel");
        let scenario = dir.write("pageout.toml", PAGEOUT);
        let mounts = || read(Path::new("/proc/mounts")).unwrap_or_default();
        let before = (machine_state(), mounts());
        let children: Vec<_> = (0..4)
            .map(|i| {
                let json = dir.0.join(format!("out-{i}.json"));
                foliosim()
                    .args(["validate", scenario.to_str().unwrap(), "--variant", "plain"])
                    .args(["--sim-only", "--json", json.to_str().unwrap()])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let outs: Vec<Output> = children
            .into_iter()
            .map(|c| c.wait_with_output().unwrap())
            .collect();
        if outs.iter().any(|o| o.status.code() == Some(3)) {
            eprintln!("skipping live test: {}", text(&outs[0]));
            return;
        }
        assert_same_state(&before.0, "after validate --sim-only side by side");
        assert_eq!(mounts(), before.1, "the mounts are as they were");
        for out in &outs {
            assert!(out.status.success(), "{}", text(out));
            assert!(!text(out).contains("already mounted"), "{}", text(out));
        }
    }

    #[test]
    fn tmpfs_files_and_shared_memory_are_played_and_unmounted() {
        let _one = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        let dir = Scratch::new("shmem");
        let scenario = dir.write("shmem.toml", SHMEM);
        let json = dir.0.join("out.json");
        let before = machine_state();
        let Some(out) = kernel_run(&[scenario.to_str().unwrap(), "--json", json.to_str().unwrap()])
        else {
            return;
        };
        // the tmpfs is unmounted (machine_state lists foliosim mounts) and its file gone
        assert_same_state(&before, "after a run with tmpfs files");
        assert!(out.status.success(), "{}", text(&out));
        let doc: serde_json::Value = serde_json::from_str(&read(&json).unwrap()).unwrap();
        let run = &doc["runs"][0];
        let tmpfs = &run["live"]["tmpfs"][0];
        assert!(
            tmpfs["options"]
                .as_str()
                .unwrap()
                .starts_with("huge=never,"),
            "{run}"
        );
        let file = tmpfs["files"][0]["path"].as_str().unwrap();
        assert!(file.ends_with("tmpfs-never/file-data"), "{run}");
        assert!(!Path::new(file).exists(), "{file} is left");
        // 32 MiB of tmpfs in 24 MiB: shmem pages went to zram and came back
        assert!(run["vmstat"]["pswpout"].as_u64().unwrap() >= 1024, "{run}");
        assert!(run["vmstat"]["pswpin"].as_u64().unwrap() >= 1024, "{run}");
        // the parent read what its child wrote: one process's faults, no copies
        assert_eq!(run["tasks"][1]["name"], "writer", "{run}");
        assert_eq!(run["tasks"][1]["touches"], 2048, "{run}");
    }

    #[test]
    fn a_run_without_thp_swap_splits_on_a_swap_file_and_leaves_the_machine_as_it_was() {
        let Some(run) = pageout_run("no-thp-swap") else {
            return;
        };
        let swap = &run["live"]["swap"][0];
        // a kernel built without THP_SWAP plays the device itself
        if swap.get("swap_file").is_none() {
            return;
        }
        assert_eq!(swap["plays"], "CONFIG_THP_SWAP=n", "{run}");
        // no large swap entries on a swap file: each of the 256 folios is split, then swapped
        let mthp = &run["mthp"]["64kB"];
        assert_eq!(mthp["swpout"].as_u64().unwrap(), 0, "{run}");
        assert!(mthp["swpout_fallback"].as_u64().unwrap() >= 256, "{run}");
        assert!(run["vmstat"]["pswpout"].as_u64().unwrap() >= 4096, "{run}");
    }

    /// Starts kernel-run on the sleeper and waits until its program runs; returns the child and the
    /// program's pid, or None when the machine cannot do live runs.
    fn start_sleeper(dir: &Scratch) -> Option<(std::process::Child, i32)> {
        let scenario = dir.write("sleeper.toml", SLEEPER);
        let mut child = foliosim()
            .arg("kernel-run")
            .arg(&scenario)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let prefix = format!("foliosim-{}-", child.id());
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                let out = child.wait_with_output().unwrap();
                if status.code() == Some(3) {
                    eprintln!(
                        "skipping live test: {}",
                        String::from_utf8_lossy(&out.stderr).trim()
                    );
                    return None;
                }
                panic!("kernel-run ended early: {}", text(&out));
            }
            let mut cgroups = Vec::new();
            foliosim_cgroups(Path::new("/sys/fs/cgroup"), 8, &mut cgroups);
            let pid = cgroups
                .iter()
                .filter(|c| {
                    c.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
                })
                .flat_map(|c| {
                    read(&c.join("cgroup.procs"))
                        .unwrap_or_default()
                        .split_whitespace()
                        .filter_map(|p| p.parse::<i32>().ok())
                        .collect::<Vec<_>>()
                })
                .find(|pid| {
                    read(Path::new(&format!("/proc/{pid}/comm")))
                        .is_some_and(|c| c.trim() == "ops_player")
                });
            if let Some(pid) = pid {
                // let it map and write its memory first
                std::thread::sleep(Duration::from_millis(300));
                return Some((child, pid));
            }
            assert!(Instant::now() < deadline, "the program never started");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn send(signal: &str, pid: i32) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[test]
    fn a_run_whose_program_is_killed_fails_and_leaves_the_machine_as_it_was() {
        let _one = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        let dir = Scratch::new("killed");
        let before = machine_state();
        let Some((child, program)) = start_sleeper(&dir) else {
            return;
        };
        send("KILL", program);
        let out = child.wait_with_output().unwrap();
        assert_same_state(&before, "after a run whose program was killed");
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("killed by signal 9"),
            "{}",
            text(&out)
        );
    }

    #[test]
    fn an_interrupted_run_leaves_the_machine_as_it_was() {
        let _one = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        let dir = Scratch::new("interrupted");
        let before = machine_state();
        let Some((child, _)) = start_sleeper(&dir) else {
            return;
        };
        send("TERM", child.id() as i32);
        let out = child.wait_with_output().unwrap();
        assert_same_state(&before, "after an interrupted run");
        assert_eq!(out.status.code(), Some(128 + 15), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("interrupted by SIGTERM"),
            "{}",
            text(&out)
        );
    }
}
