//! Where the time goes (mm/cputime.rs): each task's `time_breakdown_ns` adds up to its user +
//! sys time exactly, and each category holds the time of its own mechanism only.

use foliosim::mm::cputime::TimeKind;
use foliosim::scenario::parse::resolve;
use foliosim::{RunResult, Scenario};

fn run(scenario: &Scenario, profile: &str, variant: Option<&str>) -> RunResult {
    let spec = resolve(scenario, profile, variant, &[], 1, false).expect("scenario resolves");
    foliosim::run(&spec, &mut |_| {}).unwrap_or_else(|e| panic!("run failed: {e}"))
}

fn breakdown(task: &serde_json::Map<String, serde_json::Value>, kind: TimeKind) -> u64 {
    task["time_breakdown_ns"][kind.name()].as_u64().unwrap()
}

/// Every task's categories but the waits (for a CPU, for a device) add up to its user + sys
/// time, as a task's CPU time does; every kind is present.
fn assert_adds_up(r: &RunResult, label: &str) {
    assert!(!r.tasks.is_empty(), "{label}");
    for task in &r.tasks {
        let map = task["time_breakdown_ns"].as_object().unwrap();
        assert_eq!(map.len(), TimeKind::ALL.len(), "{label}");
        let run: u64 = TimeKind::ALL
            .iter()
            .filter(|k| !k.is_wait())
            .map(|k| breakdown(task, *k))
            .sum();
        let user_sys = task["user_ns"].as_u64().unwrap() + task["sys_ns"].as_u64().unwrap();
        assert_eq!(run, user_sys, "{label} {}", task["name"]);
    }
}

fn bundled(name: &str) -> Scenario {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(format!("{name}.toml"));
    Scenario::load(&path).unwrap()
}

#[test]
fn bundled_runs_add_up_to_user_plus_sys() {
    // memcg reclaim to brd, mTHP pageout to zram, THP zero subpages on zram and a disk, the
    // page cache on CXL with promotion
    for (name, profile, variant) in [
        ("usemem-small", "v6.9", Some("64K")),
        ("mthp-pageout-sizes", "v6.18", None),
        ("thp-zero-subpage", "v6.9", Some("zram-worst")),
        ("thp-zero-subpage", "v6.9", Some("disk-worst")),
        (
            "pagecache-promotion-small",
            "v6.18+pagecache_promotion",
            None,
        ),
    ] {
        let scenario = bundled(name);
        let variant = variant.or_else(|| scenario.variants.first().map(|v| v.name.as_str()));
        let r = run(&scenario, profile, variant);
        assert_adds_up(&r, name);
        // a swap-out to the disk sleeps on it: that time is not the task's CPU time
        if variant == Some("disk-worst") {
            let task = r.tasks.iter().find(|t| t["name"] == "test").unwrap();
            assert!(
                breakdown(task, TimeKind::IoWait) > 0,
                "{name}: no wait for the disk"
            );
        }
    }
}

const NO_SWAP: &str = r#"
name = "t"
[machine]
hardware = "HW"
[[machine.node]]
memory = "1G"
cpus = 2
[knobs]
"/sys/kernel/mm/transparent_hugepage/enabled" = "always"
[[task]]
name = "usemem"
generator = "usemem"
size = "64M"
"#;

#[test]
fn thp_faults_without_swap_charge_zeroing_and_no_swap_io() {
    let scenario = Scenario::parse_str(&NO_SWAP.replace("HW", "x86-server"), "t.toml").unwrap();
    let r = run(&scenario, "v6.18", None);
    assert_adds_up(&r, "no swap");
    let task = &r.tasks[0];
    for kind in [
        TimeKind::BlockIo,
        TimeKind::IoWait,
        TimeKind::Compression,
        TimeKind::SwapAlloc,
        TimeKind::ReclaimScan,
        TimeKind::Rmap,
        TimeKind::Split,
        TimeKind::Migration,
        TimeKind::ZeroCheck,
        TimeKind::CpuWait,
    ] {
        assert_eq!(breakdown(task, kind), 0, "{}", kind.name());
    }
    // each 2 MiB fault clears 512 pages at the profile's cost and maps them with one PMD, and
    // clears and charges the page table deposited beside it; the first fault also makes the
    // PGD, a PUD and a PMD table; nothing else zeroes
    let hw = foliosim::machine::hw::profile("x86-server").unwrap();
    let thp = r.vmstat["thp_fault_alloc"];
    assert_eq!(thp, 32);
    let tables = thp + 3;
    assert_eq!(
        breakdown(task, TimeKind::Zeroing),
        thp * (512 * hw.costs.zero_page_ns + hw.costs.pte_update_ns)
            + tables * hw.costs.zero_page_ns
    );
    assert_eq!(
        breakdown(task, TimeKind::FaultEntry),
        thp * hw.costs.fault_entry_ns
    );
    assert_eq!(
        breakdown(task, TimeKind::MemcgCharge),
        (thp + tables) * hw.costs.memcg_charge_ns
    );
}

#[test]
fn a_dearer_cost_moves_only_its_category() {
    let dir = std::env::temp_dir().join(format!("foliosim-tb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = foliosim::machine::hw::bundled_text("x86-server").unwrap();
    let dearer = text.replacen("value = 470\n", "value = 940\n", 1);
    std::fs::write(dir.join("dear.toml"), dearer).unwrap();
    let base = run(
        &Scenario::parse_str(&NO_SWAP.replace("HW", "x86-server"), "t.toml").unwrap(),
        "v6.18",
        None,
    );
    let scenario_file = dir.join("t.toml");
    std::fs::write(&scenario_file, NO_SWAP.replace("HW", "dear.toml")).unwrap();
    let dear = run(&Scenario::load(&scenario_file).unwrap(), "v6.18", None);
    std::fs::remove_dir_all(&dir).unwrap();
    let (b, d) = (&base.tasks[0], &dear.tasks[0]);
    // 32 faults of 512 pages and 35 page tables, each page 470 ns dearer
    assert_eq!(
        breakdown(d, TimeKind::Zeroing) - breakdown(b, TimeKind::Zeroing),
        (32 * 512 + 35) * 470
    );
    for kind in TimeKind::ALL {
        if kind != TimeKind::Zeroing {
            assert_eq!(breakdown(d, kind), breakdown(b, kind), "{}", kind.name());
        }
    }
}

#[test]
fn every_kind_names_costs_of_the_profile() {
    let fields = foliosim::machine::hw::COST_FIELDS;
    for kind in TimeKind::ALL {
        for cost in kind.costs() {
            assert!(fields.contains(cost), "{}: {cost}", kind.name());
        }
        assert_eq!(kind.costs().is_empty(), kind == TimeKind::CpuWait);
    }
}

/// User time of a task that maps 1 MiB and touches it sequentially once per `data` given
/// (`read` reads it), with THP off.
fn fill_user_ns(passes: &[&str]) -> u64 {
    let touches: String = passes
        .iter()
        .map(|data| match *data {
            "read" => "{ op = \"touch\", region = \"a\", access = \"read\", pattern = \"sequential\" },\n".to_string(),
            d => format!("{{ op = \"touch\", region = \"a\", access = \"write\", pattern = \"sequential\", data = {d} }},\n"),
        })
        .collect();
    let toml = format!(
        "name = \"fill\"\nprofiles = [\"v6.18\"]\n[machine]\nhardware = \"x86-server\"\n\
         [[machine.node]]\nmemory = \"1G\"\ncpus = 1\n[[task]]\nname = \"t\"\nops = [\n\
         {{ op = \"mmap\", region = \"a\", size = \"1M\" }},\n{touches}]\n"
    );
    let scenario = Scenario::parse_str(&toml, "fill.toml").unwrap();
    let r = run(&scenario, "v6.18", None);
    r.tasks[0]["user_ns"].as_u64().unwrap()
}

/// A write touch pays user time for the stores that give its page content: every word of a
/// data page, one store for a zero page; a read touch stores nothing.
#[test]
fn write_touches_pay_for_the_words_they_store() {
    let word_ps = foliosim::machine::hw::profile("x86-server")
        .unwrap()
        .costs
        .word_write_ns_x1000;
    let pages = 256;
    // the rest of the user time (the instruction TLB's misses) is the same for all three
    let read = fill_user_ns(&["read"]);
    assert_eq!(
        fill_user_ns(&["\"nonzero\""]) - read,
        pages * (512 * word_ps / 1000)
    );
    assert_eq!(fill_user_ns(&["\"zero\""]) - read, pages * (word_ps / 1000));
}

/// A same-filled page is one memset: at the cache's speed into the page its own write fault has
/// just cleared, at the store bandwidth into a resident page written before; a data page's
/// generator loop costs the same either way.
#[test]
fn a_memset_into_the_page_its_fault_just_filled_runs_at_the_cache_speed() {
    let c = foliosim::machine::hw::profile("x86-server")
        .unwrap()
        .costs
        .clone();
    let pages = 256;
    // within 1 us: the instruction TLB's refills after a full flush (mm/task.rs), a few hundred
    // ns of user time, move with the run's length
    let about =
        |ns: u64, expected: u64| assert!(ns.abs_diff(expected) < 1_000, "{ns} vs {expected}");
    let read = fill_user_ns(&["read"]);
    // the read maps the shared zero page: the write then faults in a cleared page of its own
    let faulted = fill_user_ns(&["read", "1"]) - read;
    about(
        faulted,
        pages * (512 * c.memset_word_cached_ns_x1000 / 1000),
    );
    let resident = fill_user_ns(&["read", "1", "1"]) - read - faulted;
    about(resident, pages * (512 * c.memset_word_ns_x1000 / 1000));
    let data_faulted = fill_user_ns(&["read", "128"]) - read;
    let data_resident = fill_user_ns(&["read", "128", "128"]) - read - data_faulted;
    about(data_faulted, pages * (512 * c.word_write_ns_x1000 / 1000));
    about(data_resident, pages * (512 * c.word_write_ns_x1000 / 1000));
}

/// x86-server's profile text with `cost`, 0 there, set to `value_ns`.
fn x86_server_costing(cost: &str, value_ns: u64) -> String {
    let profile = foliosim::machine::hw::bundled_text("x86-server").unwrap();
    let at = profile.find(&format!("[cost.{cost}]")).unwrap();
    let value = at + profile[at..].find("value = 0\n").unwrap();
    format!(
        "{}value = {value_ns}\n{}",
        &profile[..value],
        &profile[value + "value = 0\n".len()..]
    )
}

/// A split charges `split_zero_subpage_ns` once for each zero-filled subpage it drops, both
/// where v6.12+ maps the shared zero page in its place and where `+thp_zero_split` unmaps it, and
/// nothing for a subpage it keeps.
#[test]
fn each_dropped_zero_subpage_pays_its_own_split_cost() {
    let dir = std::env::temp_dir().join(format!("foliosim-tb-split-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("dear.toml"),
        x86_server_costing("split_zero_subpage_ns", 1000),
    )
    .unwrap();
    let bundled_path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/thp-zero-subpage.toml");
    let text = std::fs::read_to_string(bundled_path)
        .unwrap()
        .replace("size = \"10G\"", "size = \"64M\"");
    let load = |hardware: &str| {
        let file = dir.join(format!("t-{}.toml", hardware.replace('.', "-")));
        std::fs::write(
            &file,
            text.replace(
                "hardware = \"x86-server\"",
                &format!("hardware = \"{hardware}\""),
            ),
        )
        .unwrap();
        Scenario::load(&file).unwrap()
    };
    let (cheap, dear) = (load("x86-server"), load("dear.toml"));
    for profile in ["v6.18", "v6.9+thp_zero_split"] {
        for (variant, dropped) in [("zram-best", 32 * 511), ("zram-worst", 0)] {
            let b = run(&cheap, profile, Some(variant));
            let d = run(&dear, profile, Some(variant));
            let (b, d) = (&b.tasks[0], &d.tasks[0]);
            assert_eq!(
                breakdown(d, TimeKind::Split) - breakdown(b, TimeKind::Split),
                dropped * 1000,
                "{profile} {variant}"
            );
            for kind in TimeKind::ALL {
                if kind != TimeKind::Split {
                    assert_eq!(breakdown(d, kind), breakdown(b, kind), "{}", kind.name());
                }
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A folio written to a swap device pays `swap_writeout_ns` once, whatever its size: the
/// per-folio part of a swap-out that `foliosim calibrate` measures beyond the other costs.
#[test]
fn each_folio_written_to_swap_pays_the_writeout_once() {
    let dir = std::env::temp_dir().join(format!("foliosim-tb-wo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("dear.toml"),
        x86_server_costing("swap_writeout_ns", 1000),
    )
    .unwrap();
    let pageout = |hardware: &str, mthp: &str| {
        let toml = format!(
            r#"name = "t"
profiles = ["v6.18"]
[machine]
hardware = "{hardware}"
[[machine.node]]
memory = "1G"
cpus = 1
[[swap]]
name = "zram0"
kind = "zram"
size = "64M"
[knobs]
"/sys/kernel/mm/transparent_hugepage/enabled" = "never"
"/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled" = "{mthp}"
[[task]]
name = "pageout"
ops = [
  {{ op = "mmap", region = "mem", size = "4M" }},
  {{ op = "touch", region = "mem", access = "write", pattern = "sequential", data = "nonzero" }},
  {{ op = "madvise", region = "mem", advice = "pageout" }},
]
"#
        );
        let file = dir.join(format!("t-{}-{mthp}.toml", hardware.replace('.', "-")));
        std::fs::write(&file, toml).unwrap();
        let r = run(&Scenario::load(&file).unwrap(), "v6.18", None);
        assert_eq!(r.vmstat["pswpout"], 1024, "{hardware} {mthp}");
        r
    };
    for (mthp, folios) in [("never", 1024), ("always", 64)] {
        let (cheap, dear) = (pageout("x86-server", mthp), pageout("dear.toml", mthp));
        let (c, d) = (&cheap.tasks[0], &dear.tasks[0]);
        assert_eq!(
            breakdown(d, TimeKind::BlockIo) - breakdown(c, TimeKind::BlockIo),
            folios * 1000,
            "{mthp}"
        );
        for kind in TimeKind::ALL {
            if kind != TimeKind::BlockIo {
                assert_eq!(
                    breakdown(d, kind),
                    breakdown(c, kind),
                    "{mthp} {}",
                    kind.name()
                );
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
