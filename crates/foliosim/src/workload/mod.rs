//! Workloads: the programs tasks run, the interpreter of their operations, and benchmark
//! generators. The workload spawns its tasks into a booted kernel (spawn.rs) and runs their
//! programs (exec.rs) when the scheduler gives them a CPU; barriers between tasks are in
//! barrier.rs.

pub mod barrier;
pub mod exec;
pub mod file_read;
pub mod kbuild;
pub mod poisson;
pub mod spawn;
pub mod task;
pub mod thp_swap_allocator;
pub mod usemem;
pub mod xsbench;
pub mod zero_subpage;

use crate::scenario::IterationReport;
use crate::stats::{Mthp, VmStat};
use serde_json::{json, Map, Value};
use task::TaskProgram;

/// The workload of one run: per task id (kernel threads included, with empty programs) the
/// program and its progress, and what the generators keep for the whole run.
#[derive(Default)]
pub struct Workload {
    pub tasks: Vec<TaskProgram>,
    /// Figures of generator iterations, in the order they ended.
    pub iterations: Vec<Map<String, Value>>,
    /// The XSBench generator's parameters, when a task runs it.
    pub xsbench: Option<xsbench::Xsbench>,
}

/// The figures of one iteration, from the counters at its start and end.
pub fn iteration_figures(
    report: IterationReport,
    start_ns: u64,
    end_ns: u64,
    before: &VmStat,
    after: &VmStat,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("time_ns".into(), json!(end_ns - start_ns));
    if let IterationReport::MthpSwpout { order } = report {
        let inc = |item: Mthp| {
            after.mthp[order as usize][item as usize] - before.mthp[order as usize][item as usize]
        };
        let (swpout, fallback) = (inc(Mthp::Swpout), inc(Mthp::SwpoutFallback));
        m.insert("swpout_inc".into(), json!(swpout));
        m.insert("fallback_inc".into(), json!(fallback));
        // The tool prints nan for 0/0; JSON has no nan, so that case is null.
        let pct = (swpout + fallback > 0)
            .then(|| (fallback as f64 * 10_000.0 / (swpout + fallback) as f64).round() / 100.0);
        m.insert("fallback_pct".into(), json!(pct));
    }
    m
}
