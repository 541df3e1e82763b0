//! Replaying trace files (docs/replay.md): a trace written by TraceWriter and named by a
//! scenario's `trace` replays to the counters of the equivalent ops scenario, forks copy on
//! write, bad traces are one-line errors, and a replay is deterministic.

mod common;
use common::{header, run, write_trace, write_trace_with, Dir, MACHINE};
use foliosim::trace::{Access, Entry, Event, Header, TraceWriter};
use foliosim::{RunError, Scenario};
use std::path::PathBuf;

const BASE: u64 = 0x7f12_3400_0000;

fn access(thread: u32, page: u64, write: bool) -> Entry {
    Entry::Access(Access {
        thread,
        page: BASE / 4096 + page,
        write,
        count: 1,
        instructions: 0,
    })
}

fn mmap(pages: u64) -> Entry {
    Entry::Event(Event::Mmap {
        thread: 0,
        addr: BASE,
        len_bytes: pages * 4096,
        prot: 3,
        flags: 0x22,
        file: None,
    })
}

fn trace_scenario(dir: &Dir, trace: &str) -> PathBuf {
    dir.write(
        "replay.toml",
        &format!("{MACHINE}[[task]]\nname = \"app\"\ncgroup = \"cg\"\ntrace = \"{trace}\"\n"),
    )
}

fn ops_scenario(dir: &Dir, ops: &str) -> PathBuf {
    dir.write(
        "ops.toml",
        &format!("{MACHINE}[[task]]\nname = \"app\"\ncgroup = \"cg\"\nops = [\n{ops}]\n"),
    )
}

/// Pages of a fixed pseudo-random sequence below `n`.
fn random_pages(n: u64, count: usize) -> Vec<u64> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..count)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        })
        .collect()
}

#[test]
fn a_trace_replays_to_the_counters_of_the_equivalent_ops_scenario() {
    let dir = Dir::new("round-trip");
    // map 16 MiB in an 8 MiB memcg, write it sequentially, read 3000 pages in a fixed order
    let pages = 4096;
    let reads = random_pages(pages, 3000);
    let mut entries = vec![mmap(pages)];
    entries.extend((0..pages).map(|p| access(0, p, true)));
    entries.extend(reads.iter().map(|&p| access(0, p, false)));
    write_trace(&dir.path("app.trace"), &entries);
    let mut ops = String::from(
        "{ op = \"mmap\", region = \"a\", size = \"16M\" },\n\
         { op = \"touch\", region = \"a\", access = \"write\", pattern = \"sequential\" },\n",
    );
    for p in &reads {
        ops.push_str(&format!(
            "{{ op = \"touch\", region = \"a\", access = \"read\", pattern = \"sequential\", \
             offset = {}, len = 4096 }},\n",
            p * 4096
        ));
    }
    let replay_toml = trace_scenario(&dir, "app.trace");
    let ops_toml = ops_scenario(&dir, &ops);
    for profile in ["v6.9", "v6.18"] {
        let a = run(&replay_toml, profile).unwrap();
        let b = run(&ops_toml, profile).unwrap();
        assert!(a.vmstat["pswpout"] > 2000 && a.vmstat["pswpin"] > 1000);
        // exactly, not only within 1%
        for c in ["pgfault", "pgmajfault", "pswpout", "pswpin", "pgsteal_anon"] {
            assert_eq!(a.vmstat[c], b.vmstat[c], "{profile} {c}");
        }
        assert_eq!(a.vmstat, b.vmstat, "{profile}");
        assert_eq!(a.memcg, b.memcg, "{profile}");
        // the same kernel time; in user time the ops' writes also pay the stores that fill
        // each page, which a trace charges as the instructions between its records (none here)
        assert_eq!(a.tasks[0]["sys_ns"], b.tasks[0]["sys_ns"], "{profile}");
        let word_ps = foliosim::machine::hw::profile("x86-server")
            .unwrap()
            .costs
            .word_write_ns_x1000;
        let fill_ns = pages * (512 * word_ps / 1000);
        let user = |r: &foliosim::RunResult| r.tasks[0]["user_ns"].as_u64().unwrap();
        assert_eq!(user(&a) + fill_ns, user(&b), "{profile}");
        assert_eq!(a.sim_time_ns + fill_ns, b.sim_time_ns, "{profile}");
        assert_eq!(a.tasks[0]["trace_records"], pages + 3000);
    }
}

/// A mapping, then one access after a million instructions.
fn million_instructions() -> Vec<Entry> {
    let mut busy = access(0, 0, true);
    if let Entry::Access(a) = &mut busy {
        a.instructions = 1_000_000;
    }
    vec![mmap(16), busy]
}

/// A header whose native run took 0.5 ms over a million instructions: 500 ps each.
fn measured_header() -> Header {
    Header {
        native_user_ns: 500_000,
        instructions: 1_000_000,
        ..header()
    }
}

/// `user_time = "native"` charges each instruction the program's own time on the recording
/// machine (the header's native user time over its instruction total) instead of the profile's.
#[test]
fn a_native_user_time_charges_the_programs_own_time_per_instruction() {
    let dir = Dir::new("native-user-time");
    let entries = million_instructions();
    write_trace_with(&dir.path("measured.trace"), &measured_header(), &entries);
    write_trace(&dir.path("unmeasured.trace"), &entries);
    let scenario = |trace: &str, user_time: &str| {
        dir.write(
            &format!("{trace}-{user_time}.toml"),
            &format!(
                "{MACHINE}[[task]]\nname = \"app\"\ncgroup = \"cg\"\ntrace = \"{trace}.trace\"\n\
                 user_time = \"{user_time}\"\n"
            ),
        )
    };
    let user = |r: &foliosim::RunResult| r.tasks[0]["user_ns"].as_u64().unwrap();
    let native = run(&scenario("measured", "native"), "v6.18").unwrap();
    let profile = run(&scenario("measured", "profile"), "v6.18").unwrap();
    let profile_ps = foliosim::machine::hw::profile("x86-server")
        .unwrap()
        .costs
        .instruction_ns_x1000;
    assert_eq!(
        user(&native) - user(&profile),
        1_000_000 * (500 - profile_ps) / 1000
    );
    // the measured time includes the program's page walks: the data accesses' TLB misses cost
    // nothing more (the code pages refilled after a full flush still do)
    let walks = |r: &foliosim::RunResult| {
        r.tasks[0]["time_breakdown_ns"]["tlb_miss"]
            .as_u64()
            .unwrap()
    };
    assert!(
        walks(&native) < walks(&profile),
        "{} {}",
        walks(&native),
        walks(&profile)
    );
    // a trace without a native run, or a value of neither kind, is refused naming the key
    let toml = scenario("unmeasured", "native");
    let e = Scenario::load(&toml).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "{}: task[0].user_time: expected a trace with its native run",
            toml.display()
        )),
        "{e}"
    );
    let toml = scenario("measured", "fast");
    let e = Scenario::load(&toml).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}: task[0].user_time: expected \"profile\" or \"native\", found \"fast\"",
            toml.display()
        )
    );
}

/// `<task>/native_user_ns` (what kernel-run times natively beside a live run) replays a
/// native-timed trace at that speed instead of the header's; other tasks refuse it.
#[test]
fn a_native_user_time_given_for_the_run_replaces_the_traces() {
    let dir = Dir::new("native-user-time-set");
    write_trace_with(
        &dir.path("app.trace"),
        &measured_header(),
        &million_instructions(),
    );
    let scenario_with = |user_time: &str| {
        let toml = dir.write(
            &format!("{user_time}.toml"),
            &format!(
                "{MACHINE}[[task]]\nname = \"app\"\ncgroup = \"cg\"\ntrace = \"app.trace\"\n\
                 user_time = \"{user_time}\"\n"
            ),
        );
        Scenario::load(&toml).unwrap()
    };
    let native = scenario_with("native");
    let run_with = |sets: &[(String, String)]| {
        let spec = foliosim::scenario::parse::resolve(&native, "v6.18", None, sets, 1, false)?;
        Ok::<_, foliosim::scenario::InputError>(foliosim::run(&spec, &mut |_| {}).unwrap())
    };
    let set = |path: &str, value: &str| vec![(path.to_string(), value.to_string())];
    let user = |r: &foliosim::RunResult| r.tasks[0]["user_ns"].as_u64().unwrap();
    let recorded = run_with(&[]).unwrap();
    // 0.2 ms over the same million instructions: 200 ps each, 300 µs less user time
    let faster = run_with(&set("app/native_user_ns", "200000")).unwrap();
    assert_eq!(user(&recorded) - user(&faster), 300_000);
    assert_eq!(recorded.sim_time_ns - faster.sim_time_ns, 300_000);
    // as validate gives it a resolved run
    let mut spec =
        foliosim::scenario::parse::resolve(&native, "v6.18", None, &[], 1, false).unwrap();
    spec.retime_native("app", 200_000).unwrap();
    assert_eq!(spec.knobs.native_user_ns, [("app".to_string(), 200_000)]);
    assert_eq!(
        user(&foliosim::run(&spec, &mut |_| {}).unwrap()),
        user(&faster)
    );
    // a task of another name, no time, or a trace replayed at the profile's speed: refused
    let e = run_with(&set("other/native_user_ns", "200000")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--set: other/native_user_ns: expected the name of a [[task]] (app), found \"other\""
    );
    let e = run_with(&set("app/native_user_ns", "0")).unwrap_err();
    assert!(
        e.to_string()
            .contains("expected a user time in ns, at least 1"),
        "{e}"
    );
    let profile = scenario_with("profile");
    let e = foliosim::scenario::parse::resolve(
        &profile,
        "v6.18",
        None,
        &set("app/native_user_ns", "1"),
        1,
        false,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "--set: app/native_user_ns: expected a task replaying a trace with user_time = \"native\""
    );
}

#[test]
fn fork_in_a_trace_copies_on_write() {
    let dir = Dir::new("fork");
    let mut entries = vec![mmap(256)];
    entries.extend((0..256).map(|p| access(0, p, true)));
    entries.push(Entry::Event(Event::Fork {
        thread: 0,
        child: 1,
    }));
    entries.extend((0..128).map(|p| access(1, p, true)));
    // the parent works 30 ms (at 333 ps per instruction) before it reads, so it still maps the
    // pages while the child writes them
    entries.push(Entry::Access(Access {
        thread: 0,
        page: BASE / 4096,
        write: false,
        count: 1,
        instructions: 90_000_000,
    }));
    write_trace(&dir.path("fork.trace"), &entries);
    let r = run(&trace_scenario(&dir, "fork.trace"), "v6.12").unwrap();
    // 256 first touches, 128 copy-on-write faults that each copy
    assert_eq!(r.vmstat["pgfault"], 256 + 128);
    assert_eq!(r.vmstat["pgalloc_normal"], 256 + 128);
    let names: Vec<&str> = r
        .tasks
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["app", "app.1"]);
}

#[test]
fn a_missing_trace_is_a_one_line_error_naming_the_scenario_and_the_key() {
    let dir = Dir::new("missing");
    let toml = trace_scenario(&dir, "nope.trace");
    let e = Scenario::load(&toml).unwrap_err().to_string();
    let expected = format!(
        "{}: task[0].trace: {}: byte 0: cannot open: No such file or directory",
        toml.display(),
        dir.path("nope.trace").display()
    );
    assert_eq!(e, expected);
    assert!(!e.contains('\n'));
}

#[test]
fn a_file_that_is_not_a_trace_is_refused_when_the_scenario_loads() {
    let dir = Dir::new("garbage");
    dir.write("bad.trace", "this is not a trace\n");
    let toml = trace_scenario(&dir, "bad.trace");
    let e = Scenario::load(&toml).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{}: task[0].trace: ", toml.display())),
        "{e}"
    );
    assert!(
        e.contains("bad.trace: byte 0: expected a foliosim trace"),
        "{e}"
    );
    assert!(!e.contains('\n'));
}

#[test]
fn a_trace_truncated_after_its_header_stops_the_run_with_a_one_line_error() {
    let dir = Dir::new("truncated");
    let mut entries = vec![mmap(1024)];
    entries.extend(
        random_pages(1024, 20_000)
            .iter()
            .map(|&p| access(0, p, p % 2 == 0)),
    );
    let full = dir.path("full.trace");
    write_trace(&full, &entries);
    let bytes = std::fs::read(&full).unwrap();
    std::fs::write(dir.path("cut.trace"), &bytes[..bytes.len() * 2 / 3]).unwrap();
    let toml = trace_scenario(&dir, "cut.trace");
    match run(&toml, "v6.12") {
        Err(RunError::Input(e)) => {
            let e = e.to_string();
            assert!(
                e.starts_with(&format!(
                    "{}: task[0].trace: {}: byte ",
                    toml.display(),
                    dir.path("cut.trace").display()
                )),
                "{e}"
            );
            assert!(!e.contains('\n'));
        }
        other => panic!("expected an input error, got {other:?}"),
    }
}

#[test]
fn a_task_with_both_trace_and_ops_or_a_foreign_page_size_is_refused() {
    let dir = Dir::new("keys");
    write_trace(&dir.path("t.trace"), &[mmap(1)]);
    let both = dir.write(
        "both.toml",
        &format!("{MACHINE}[[task]]\nname = \"a\"\ntrace = \"t.trace\"\nops = []\n"),
    );
    let e = Scenario::load(&both).unwrap_err().to_string();
    assert!(
        e.contains("task[0].ops: expected either generator or ops"),
        "{e}"
    );

    let file = std::fs::File::create(dir.path("64k.trace")).unwrap();
    let h = Header {
        page_size_bytes: 65536,
        ..header()
    };
    TraceWriter::new(file, &h).unwrap().finish().unwrap();
    let e = Scenario::load(&trace_scenario(&dir, "64k.trace"))
        .unwrap_err()
        .to_string();
    assert!(
        e.ends_with(
            "task[0].trace: expected a trace of 4096-byte pages, found page_size_bytes = 65536"
        ),
        "{e}"
    );
}

#[test]
fn the_same_trace_gives_the_same_result_bytes() {
    let dir = Dir::new("determinism");
    let mut entries = vec![mmap(4096)];
    entries.extend(
        random_pages(4096, 30_000)
            .iter()
            .map(|&p| access(0, p, p % 3 == 0)),
    );
    write_trace(&dir.path("d.trace"), &entries);
    let toml = trace_scenario(&dir, "d.trace");
    let a = serde_json::to_string(&run(&toml, "v6.12").unwrap()).unwrap();
    let b = serde_json::to_string(&run(&toml, "v6.12").unwrap()).unwrap();
    assert_eq!(a, b);
}
