//! Engine throughput and memory: `cargo bench -p foliosim --bench engine`.
//!
//! A 64 GiB single-node machine with no swap; one process maps 60 GiB and writes it once
//! (every touch faults in a 4 KiB folio), then reads random resident pages. Reports faulting
//! touches/s, resident touches/s (from the difference of two runs), and the peak resident memory
//! of this process divided by the machine's 4 KiB pages. Targets: >= 3 M faulting touches/s,
//! >= 20 M resident touches/s, <= 32 bytes per simulated page.

use foliosim::scenario::{
    knobs, Access, MachineSpec, NodeSpec, Op, Pattern, Profile, Program, RunSpec, Scenario,
    TaskSpec, Tier,
};
use std::time::Instant;

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
            nodes: vec![NodeSpec {
                memory_bytes: MACHINE_BYTES,
                cpus: 1,
                tier: Tier::Dram,
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

fn timed(spec: &RunSpec) -> f64 {
    let t = Instant::now();
    let r = foliosim::run(spec, &mut |_| {}).expect("bench run");
    assert!(r.vmstat["pgfault"] >= MAPPED_BYTES / 4096);
    t.elapsed().as_secs_f64()
}

fn main() {
    let faults = (MAPPED_BYTES / 4096) as f64;
    let t_fault = timed(&spec(0));
    let peak = peak_rss_bytes();
    let t_both = timed(&spec(RESIDENT_TOUCHES));
    let resident_rate = RESIDENT_TOUCHES as f64 / (t_both - t_fault).max(1e-9);
    let pages = (MACHINE_BYTES / 4096) as f64;
    println!(
        "faulting touches/s:        {:>12.0}   (target >= 3,000,000)",
        faults / t_fault
    );
    println!(
        "resident touches/s:        {:>12.0}   (target >= 20,000,000)",
        resident_rate
    );
    println!(
        "peak bytes per 4 KiB page: {:>12.1}   (target <= 32; peak RSS {} MiB)",
        peak as f64 / pages,
        peak >> 20
    );
}
