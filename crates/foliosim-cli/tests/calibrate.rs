//! `foliosim calibrate`: without root or zram it exits 2 with one line and writes nothing; a
//! bad --base is refused the same way; on a machine that can (root, zram), one run writes a
//! profile that parses, with measured costs marked as such, and leaves swap, zram devices and
//! the THP and zswap knobs as they were. The live test is named `calibrate_live` so that
//! `cargo test -- --skip calibrate_live` leaves the machine alone.

use std::path::PathBuf;
use std::process::{Command, Output};

use foliosim::machine::hw::{HwProfile, COST_FIELDS};

fn foliosim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_foliosim"))
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("foliosim-cal-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(2).map(|uid| uid == "0"))
        .unwrap_or(false)
}

#[test]
fn without_root_or_zram_it_exits_2_with_one_line_and_writes_nothing() {
    let dir = scratch("missing");
    let file = dir.join("p.toml");
    let out = foliosim()
        .args(["calibrate", "-o"])
        .arg(&file)
        .env("FOLIOSIM_CALIBRATE_FAKE_NO_ZRAM", "1")
        .output()
        .unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // root is checked first; as root, the faked missing zram is what is named
    let needle = if is_root() {
        "needs zram"
    } else {
        "needs root"
    };
    assert!(stderr.contains(needle), "{needle:?} missing from: {stderr}");
    assert!(!file.exists(), "no profile written");
    assert!(out.stdout.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_base_profile_exits_2_naming_it() {
    let dir = scratch("base");
    for (base, needle) in [
        (
            "no-such-machine",
            "--base no-such-machine: expected a bundled profile",
        ),
        ("absent.toml", "absent.toml: cannot read"),
    ] {
        let out = foliosim()
            .args(["calibrate", "--base", base])
            .current_dir(&dir)
            .output()
            .unwrap();
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(needle), "{needle:?} missing from: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// What calibrate may change and must restore: swap areas, zram devices, THP (every size's),
/// zswap and page reporting knobs.
fn machine_state() -> Vec<String> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let mut zram: Vec<String> = std::fs::read_dir("/sys/block")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("zram"))
                .collect()
        })
        .unwrap_or_default();
    zram.sort();
    let mut mthp_sizes: Vec<String> = std::fs::read_dir("/sys/kernel/mm/transparent_hugepage")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("hugepages-"))
                .collect()
        })
        .unwrap_or_default();
    mthp_sizes.sort();
    let mut state = vec![
        read("/proc/swaps"),
        zram.join(","),
        read("/sys/kernel/mm/transparent_hugepage/enabled"),
        read("/sys/module/zswap/parameters/enabled"),
        read("/sys/module/page_reporting/parameters/page_reporting_order"),
    ];
    for size in mthp_sizes {
        state.push(read(&format!(
            "/sys/kernel/mm/transparent_hugepage/{size}/enabled"
        )));
    }
    state
}

#[test]
fn calibrate_live_writes_a_profile_that_parses_and_restores_the_machine() {
    let dir = scratch("live");
    let file = dir.join("this-host.toml");
    let before = machine_state();
    let out = foliosim()
        .args(["calibrate", "--runs", "1", "--wait-idle", "0", "-o"])
        .arg(&file)
        .arg("--disk-dir")
        .arg(&dir)
        .output()
        .unwrap();
    let stderr = stderr_of(&out);
    if out.status.code() == Some(2) {
        eprintln!("skipping live test: {}", stderr.trim());
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        machine_state(),
        before,
        "calibrate left the machine changed"
    );
    // the disk benchmark's file is gone
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "this-host.toml")
        .collect();
    assert!(left.is_empty(), "calibrate left {left:?} in --disk-dir");
    let text = std::fs::read_to_string(&file).unwrap();
    let profile = HwProfile::parse(&text).expect("the written profile parses");
    let measured: Vec<&str> = COST_FIELDS
        .iter()
        .copied()
        .filter(|f| {
            profile
                .source(f)
                .unwrap()
                .starts_with("measured by foliosim calibrate on ")
        })
        .collect();
    for f in COST_FIELDS {
        let source = profile.source(f).unwrap();
        assert!(
            measured.contains(&f) || source.starts_with("from base profile x86-server: "),
            "{f}: {source}"
        );
    }
    // the word loop and the read fault cannot fail to measure on a machine that runs at all
    assert!(measured.contains(&"word_write_ns_x1000"), "{measured:?}");
    assert!(measured.contains(&"fault_entry_ns"), "{measured:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
