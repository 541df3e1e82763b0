//! Trace replay throughput: `cargo bench -p foliosim --bench trace_replay` (criterion).
//!
//! A traced process maps 256 MiB, writes it once (65,536 records that fault), then makes
//! RECORDS accesses to random resident pages (one in four a write), 10 instructions apart. The
//! machine has room for all of it, so after the first pass every record finds its page resident:
//! the common case of a real program's trace. Criterion reports records per second
//! (Throughput::Elements) for the replay of entries made in memory (the replay alone) and of a
//! trace file written by TraceWriter (the replay plus decoding). Target: >= 10 M records/s.

use criterion::{Criterion, SamplingMode, Throughput};
use foliosim::run::Simulation;
use foliosim::scenario::parse::resolve;
use foliosim::scenario::{Program, TaskSpec};
use foliosim::trace::{Access, Entry, Event, Header, TraceError, TraceWriter};
use foliosim::workload::trace_replay::MemorySource;
use foliosim::Scenario;
use std::time::{Duration, Instant};

const MAPPED_PAGES: u64 = 65_536;
const RECORDS: u64 = 20_000_000;
const BASE_PAGE: u64 = 0x7f00_0000_0000 / 4096;

const MACHINE: &str = r#"
name = "bench"
[[machine.node]]
memory = "4G"
cpus = 1
[knobs]
"/sys/kernel/mm/transparent_hugepage/enabled" = "never"
"#;

fn header() -> Header {
    Header {
        program: "bench".into(),
        args: vec![],
        recorder: "bench".into(),
        recorder_version: "0".into(),
        page_size_bytes: 4096,
        ..Default::default()
    }
}

/// The trace's entries, made as they are read.
fn entries() -> impl Iterator<Item = Entry> {
    let map = Entry::Event(Event::Mmap {
        thread: 0,
        addr: BASE_PAGE * 4096,
        len_bytes: MAPPED_PAGES * 4096,
        prot: 3,
        flags: 0x22,
        file: None,
    });
    let first_pass = (0..MAPPED_PAGES).map(|p| access(p, true));
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let random = (0..RECORDS).map(move |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        access(x % MAPPED_PAGES, x >> 62 == 0)
    });
    std::iter::once(map).chain(first_pass).chain(random)
}

fn access(page: u64, write: bool) -> Entry {
    Entry::Access(Access {
        thread: 0,
        page: BASE_PAGE + page,
        write,
        count: 1,
        instructions: 10,
    })
}

/// A booted machine with the replaying task spawned from `source`.
fn simulation(source: Box<dyn foliosim::workload::trace_replay::EntrySource>) -> Simulation {
    let text = format!("{MACHINE}\n[[task]]\nname = \"idle\"\nops = [{{ op = \"exit\" }}]\n");
    let scenario = Scenario::parse_str(&text, "bench.toml").expect("scenario parses");
    let spec = resolve(&scenario, "v6.12", None, &[], 1, false).expect("resolves");
    let mut sim = Simulation::start(&spec).expect("starts");
    let task = TaskSpec {
        name: "replay".into(),
        cgroup: None,
        node: 0,
        mempolicy: None,
        program: Program::Ops(vec![]),
        command: None,
    };
    sim.workload.spawn_replay(
        &mut sim.kernel,
        &task,
        0,
        source,
        "task[2].trace".into(),
        (128, true),
        None,
    );
    sim
}

/// Nanoseconds this thread has run on a CPU (/proc/thread-self/schedstat): unlike wall time,
/// it does not count the time other processes on a busy machine took the CPU.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Wall time of one replay of `source`; prints the records per second of CPU time.
fn timed(source: Box<dyn foliosim::workload::trace_replay::EntrySource>) -> Duration {
    let sim = simulation(source);
    let (t, cpu) = (Instant::now(), cpu_ns());
    let r = sim.run(&mut |_| {}).expect("replay runs");
    let elapsed = t.elapsed();
    let cpu = cpu_ns() - cpu;
    println!(
        "  {:.2} M records per CPU second",
        (MAPPED_PAGES + RECORDS) as f64 * 1e3 / cpu.max(1) as f64
    );
    let task = r.tasks.iter().find(|t| t["name"] == "replay").unwrap();
    assert_eq!(task["trace_records"], MAPPED_PAGES + RECORDS);
    assert_eq!(r.vmstat["pgfault"], MAPPED_PAGES);
    elapsed
}

fn in_memory() -> Box<dyn foliosim::workload::trace_replay::EntrySource> {
    Box::new(MemorySource {
        header: header(),
        entries: entries().map(Ok::<_, TraceError>),
    })
}

/// Writes the trace to a temporary file (removed at the end of the bench).
fn write_trace() -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("foliosim-bench-{}.trace", std::process::id()));
    let file = std::io::BufWriter::new(std::fs::File::create(&path).expect("temp file"));
    let mut w = TraceWriter::new(file, &header()).expect("trace header");
    for e in entries() {
        w.push(&e).expect("trace entry");
    }
    w.finish().expect("trace end");
    path
}

fn trace_replay(c: &mut Criterion) {
    let mut group = c.benchmark_group("trace_replay");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_secs(1));
    group.throughput(Throughput::Elements(MAPPED_PAGES + RECORDS));
    group.bench_function("records in memory", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| timed(in_memory())).sum())
    });
    let path = write_trace();
    println!(
        "trace file: {} bytes ({:.2} bytes per record)",
        std::fs::metadata(&path).map_or(0, |m| m.len()),
        std::fs::metadata(&path).map_or(0, |m| m.len()) as f64 / (MAPPED_PAGES + RECORDS) as f64
    );
    group.bench_function("records from a trace file", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| timed(foliosim::workload::trace_replay::open(&path).expect("opens")))
                .sum()
        })
    });
    group.finish();
    let _ = std::fs::remove_file(&path);
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    trace_replay(&mut c);
    c.final_summary();
}
