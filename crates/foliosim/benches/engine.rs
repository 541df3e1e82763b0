//! Engine throughput and memory: `cargo bench -p foliosim --bench engine` (criterion).
//!
//! A 64 GiB single-node machine with no swap; one process maps 60 GiB and writes it once
//! (every touch faults in a 4 KiB folio), then reads random resident pages. Criterion measures
//! faulting touches/s (one run that only faults) and resident touches/s (per iteration, the time
//! of a run that also makes the random reads minus that of a run that only faults), both as
//! Throughput::Elements. The peak resident memory of this process divided by the machine's
//! 4 KiB pages is not a time, so it is printed after the runs. Targets: >= 3 M faulting
//! touches/s, >= 20 M resident touches/s, <= 32 bytes per simulated page.
//!
//! One iteration takes seconds (about 15 for the resident figure), so each figure is sampled
//! 10 times (criterion's smallest sample) with flat sampling and a single warm-up run; criterion
//! warns that it cannot fit 10 samples in the target time, which is expected here.

use criterion::{Criterion, SamplingMode, Throughput};
use foliosim::scenario::{
    knobs, Access, MachineSpec, NodeSpec, Op, Pattern, Profile, Program, RunSpec, Scenario,
    TaskSpec, Tier,
};
use std::time::{Duration, Instant};

const MACHINE_BYTES: u64 = 64 << 30;
const MAPPED_BYTES: u64 = 60 << 30;
const RESIDENT_TOUCHES: u64 = 100_000_000;

fn spec(resident_touches: u64) -> RunSpec {
    let mut ops = vec![
        Op::Mmap {
            region: "a".into(),
            size_bytes: MAPPED_BYTES,
        },
        Op::Touch {
            region: "a".into(),
            access: Access::Write,
            pattern: Pattern::Sequential,
            offset_bytes: 0,
            len_bytes: None,
            count: None,
            data: foliosim::mm::folio::content::DATA_DEFAULT,
            work_ns: 0,
        },
    ];
    if resident_touches > 0 {
        ops.push(Op::Touch {
            region: "a".into(),
            access: Access::Read,
            pattern: Pattern::Random,
            offset_bytes: 0,
            len_bytes: None,
            count: Some(resident_touches),
            data: 0,
            work_ns: 0,
        });
    }
    let scenario = Scenario {
        file: "bench".into(),
        name: "bench".into(),
        description: String::new(),
        machine: MachineSpec {
            hardware: "x86-server".into(),
            hw: foliosim::machine::hw::profile("x86-server").unwrap(),
            nodes: vec![NodeSpec {
                memory_bytes: MACHINE_BYTES,
                cpus: 1,
                tier: Tier::Dram,
                active_file_bytes: 0,
                inactive_file_bytes: 0,
            }],
        },
        swap: vec![],
        files: vec![],
        cgroups: vec![],
        knobs: vec![],
        profiles: vec![],
        variants: vec![],
        tasks: vec![TaskSpec {
            name: "toucher".into(),
            cgroup: None,
            node: 0,
            mempolicy: None,
            program: Program::Ops(ops),
            command: None,
        }],
        sample_interval_ns: 1_000_000_000,
        sched_quantum_ns: foliosim::scenario::parse::DEFAULT_SCHED_QUANTUM_NS,
        published: serde_json::Value::Null,
    };
    let mut k = knobs::Knobs::default();
    k.thp_enabled = knobs::ThpEnabled::Never;
    RunSpec {
        scenario,
        profile: Profile::parse("v6.12").unwrap(),
        variant: None,
        knobs: k,
        seed: 1,
        check: false,
    }
}

fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Wall time of one run of `spec`.
fn timed(spec: &RunSpec) -> Duration {
    let t = Instant::now();
    let r = foliosim::run(spec, &mut |_| {}).expect("bench run");
    let elapsed = t.elapsed();
    assert!(r.vmstat["pgfault"] >= MAPPED_BYTES / 4096);
    elapsed
}

fn engine(c: &mut Criterion) {
    let faulting = spec(0);
    let both = spec(RESIDENT_TOUCHES);
    let mut group = c.benchmark_group("engine");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_secs(1));
    group.throughput(Throughput::Elements(MAPPED_BYTES / 4096));
    group.bench_function("faulting touches", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| timed(&faulting)).sum())
    });
    let peak = peak_rss_bytes();
    group.throughput(Throughput::Elements(RESIDENT_TOUCHES));
    group.bench_function("resident touches", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| timed(&both).saturating_sub(timed(&faulting)))
                .sum()
        })
    });
    group.finish();
    let pages = (MACHINE_BYTES / 4096) as f64;
    println!(
        "peak bytes per 4 KiB page: {:>12.1}   (target <= 32; peak RSS {} MiB)",
        peak as f64 / pages,
        peak >> 20
    );
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    engine(&mut c);
    c.final_summary();
}
