//! Workloads: tasks, the operations they run, and benchmark generators.

pub mod exec;
pub mod file_read;
pub mod kbuild;
pub mod poisson;
pub mod task;
pub mod thp_swap_allocator;
pub mod usemem;
pub mod xsbench;
pub mod zero_subpage;

use crate::mm::vmstat::{Mthp, VmStat};
use crate::scenario::IterationReport;
use serde_json::{json, Map, Value};

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
