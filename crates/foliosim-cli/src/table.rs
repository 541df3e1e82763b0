//! The comparison table: one column per run (profile/variant), one row per key figure.

use foliosim::scenario::Scenario;
use foliosim::RunResult;

/// /proc/vmstat counters always shown, in this order.
const VMSTAT_ROWS: &[&str] = &[
    "pgfault",
    "pswpout",
    "pswpin",
    "pgscan_direct",
    "pgscan_kswapd",
    "pgsteal_direct",
    "pgsteal_kswapd",
    "thp_fault_alloc",
    "thp_fault_fallback",
    "thp_split_page",
    "oom_kill",
];

/// Shown only when some run counted something: tiering, migration and TLB counters.
const OPTIONAL_VMSTAT_ROWS: &[&str] = &[
    "numa_pte_updates",
    "numa_hint_faults",
    "numa_pages_migrated",
    "pgpromote_success",
    "pgdemote_kswapd",
    "pgdemote_direct",
    "pgmigrate_success",
    "pgmigrate_fail",
    "nr_tlb_remote_flush",
    "nr_tlb_remote_flush_received",
    "nr_tlb_local_flush_all",
    "nr_tlb_local_flush_one",
];

/// Shown in place of a figure a run did not report.
const MISSING: &str = "-";

pub struct Table {
    pub columns: Vec<String>,
    /// (label, one cell per column)
    pub rows: Vec<(String, Vec<String>)>,
}

/// A run's column header: `v6.12/64K`, or `v6.12` when the scenario has no variants.
pub fn run_label(run: &RunResult) -> String {
    match &run.variant {
        Some(v) => format!("{}/{v}", run.profile),
        None => run.profile.clone(),
    }
}

pub fn comparison(scenario: &Scenario, runs: &[RunResult]) -> Table {
    let columns = runs.iter().map(run_label).collect();
    let mut rows = Vec::new();
    rows.push((
        "sim time (ms)".to_string(),
        runs.iter().map(|r| format_ms(r.sim_time_ns)).collect(),
    ));
    for (index, task) in scenario.tasks.iter().enumerate() {
        // each generator names its figure (workload/<name>.rs): usemem's throughput adds up
        // over its processes; an op list's figure is when it (or the last of the tasks named
        // after it) exited
        let metric = foliosim::workload::task_metric(&task.program);
        let (field, sum) = (metric.field, metric.sum);
        let label = format!("{} {}", task.name, metric.label);
        let cells = runs
            .iter()
            .map(|run| {
                let values: Vec<u64> = run
                    .tasks
                    .iter()
                    .filter(|t| owner_of(scenario, task_name(t)) == Some(index))
                    .filter_map(|t| t.get(field).and_then(|v| v.as_u64()))
                    .collect();
                if values.is_empty() {
                    MISSING.to_string()
                } else if sum {
                    values.iter().sum::<u64>().to_string()
                } else {
                    format_ms(values.iter().copied().max().unwrap_or(0))
                }
            })
            .collect();
        rows.push((label, cells));
    }
    let counted = |name: &str| {
        runs.iter()
            .any(|r| r.vmstat.get(name).is_some_and(|v| *v != 0))
    };
    let optional = OPTIONAL_VMSTAT_ROWS.iter().filter(|n| counted(n));
    for name in VMSTAT_ROWS.iter().chain(optional) {
        let cells = runs
            .iter()
            .map(|r| {
                r.vmstat
                    .get(*name)
                    .map_or(MISSING.to_string(), |v| v.to_string())
            })
            .collect();
        rows.push((name.to_string(), cells));
    }
    // mTHP counters only where some run counted something: most sizes stay idle
    let mut mthp_keys: Vec<(u64, String, String)> = Vec::new();
    for run in runs {
        for (size, counters) in &run.mthp {
            for (counter, value) in counters {
                let key = (size_kb(size), size.clone(), counter.clone());
                if *value != 0 && !mthp_keys.contains(&key) {
                    mthp_keys.push(key);
                }
            }
        }
    }
    mthp_keys.sort();
    for (_, size, counter) in mthp_keys {
        let cells = runs
            .iter()
            .map(|r| {
                r.mthp
                    .get(&size)
                    .and_then(|c| c.get(&counter))
                    .map_or(MISSING.to_string(), |v| v.to_string())
            })
            .collect();
        rows.push((format!("hugepages-{size}/{counter}"), cells));
    }
    Table { columns, rows }
}

fn task_name(task: &serde_json::Map<String, serde_json::Value>) -> &str {
    task.get("name").and_then(|v| v.as_str()).unwrap_or("")
}

/// The scenario task a result task belongs to: the longest task name that starts the result's
/// name (`usemem-3` belongs to `usemem`; `usemem2-0` to `usemem2` when both exist).
pub(crate) fn owner_of(scenario: &Scenario, result_name: &str) -> Option<usize> {
    scenario
        .tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| result_name.starts_with(t.name.as_str()))
        .max_by_key(|(_, t)| t.name.len())
        .map(|(i, _)| i)
}

/// "64kB" -> 64, for ordering sizes numerically.
fn size_kb(size: &str) -> u64 {
    size.trim_end_matches("kB").parse().unwrap_or(u64::MAX)
}

fn format_ms(ns: u64) -> String {
    format!("{}.{:03}", ns / 1_000_000, (ns % 1_000_000) / 1_000)
}

/// Renders the table: labels left-aligned, figures right-aligned, two spaces between columns.
pub fn render(table: &Table) -> String {
    let label_width = table
        .rows
        .iter()
        .map(|(l, _)| l.chars().count())
        .max()
        .unwrap_or(0);
    let widths: Vec<usize> = table
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            table
                .rows
                .iter()
                .filter_map(|(_, cells)| cells.get(i))
                .map(|s| s.chars().count())
                .chain(std::iter::once(c.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let mut line = format!("{:label_width$}", "");
    for (c, w) in table.columns.iter().zip(&widths) {
        line.push_str(&format!("  {c:>w$}"));
    }
    out.push_str(line.trim_end());
    out.push('\n');
    for (label, cells) in &table.rows {
        let mut line = format!("{label:label_width$}");
        for (cell, w) in cells.iter().zip(&widths) {
            line.push_str(&format!("  {cell:>w$}"));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_keep_three_decimals() {
        assert_eq!(format_ms(123_456_789), "123.456");
        assert_eq!(format_ms(5_000), "0.005");
    }

    #[test]
    fn render_right_aligns_figures() {
        let t = Table {
            columns: vec!["v6.9/4K".into(), "b".into()],
            rows: vec![
                ("pgfault".into(), vec!["1".into(), "12345".into()]),
                ("oom_kill".into(), vec!["100".into(), "0".into()]),
            ],
        };
        assert_eq!(
            render(&t),
            "          v6.9/4K      b\n\
             pgfault         1  12345\n\
             oom_kill      100      0\n"
        );
    }
}
