//! The comparison table: one column per run (profile/variant), one row per key figure.

use comfy_table::{presets, CellAlignment, ColumnConstraint, Table as TextTable, Width};
use foliosim::scenario::{Scenario, TaskSpec};
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
        let (field, sum, label) = task_metric(task);
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

/// The figure a task's row shows: (result field, summed over the task's processes rather than
/// the latest of them, row label). usemem throughput adds up over its processes; an op list's
/// figure is when it (or the last of the tasks named after it) exited.
fn task_metric(task: &TaskSpec) -> (&'static str, bool, String) {
    // each generator names its figure (workload/<name>.rs): usemem's throughput adds up over its
    // processes; an op list's figure is when it (or the last of the tasks named after it) exited
    let metric = foliosim::workload::task_metric(&task.program);
    (
        metric.field,
        metric.sum,
        format!("{} {}", task.name, metric.label),
    )
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
    let mut text = TextTable::new();
    text.load_style(presets::NOTHING)
        .force_no_tty()
        .set_header(std::iter::once(String::new()).chain(table.columns.iter().cloned()));
    for (label, cells) in &table.rows {
        text.add_row(std::iter::once(label.clone()).chain(cells.iter().cloned()));
    }
    let mut columns = text.column_iter_mut();
    if let Some(labels) = columns.next() {
        labels.set_padding((0, 0));
    }
    for figures in columns {
        figures.set_padding((2, 0));
        figures.set_cell_alignment(CellAlignment::Right);
    }
    lines(&text)
}

/// A left-aligned text column and right-aligned figure columns of at least `min_width`
/// characters, each line indented by two spaces: the `reproduce` table of published figures.
pub fn render_aligned(
    header: &[&str],
    rows: &[Vec<String>],
    right_from: usize,
    min_width: u16,
) -> String {
    let mut text = TextTable::new();
    text.load_style(presets::NOTHING)
        .force_no_tty()
        .set_header(header.to_vec());
    for row in rows {
        text.add_row(row.clone());
    }
    for (index, column) in text.column_iter_mut().enumerate() {
        column.set_padding((2, 0));
        if index >= right_from {
            column.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(min_width + 2)));
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    lines(&text)
}

/// The table's lines without trailing spaces, each ending in a newline.
fn lines(text: &TextTable) -> String {
    text.lines()
        .map(|l| format!("{}\n", l.trim_end()))
        .collect()
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

    #[test]
    fn render_aligned_keeps_figure_columns_at_least_min_width() {
        let rows = vec![vec![
            "-a iteration 1".to_string(),
            "v6.10/a".to_string(),
            "87.05".to_string(),
            "85.71".to_string(),
        ]];
        assert_eq!(
            render_aligned(&["figure", "run", "simulated", "published"], &rows, 2, 12),
            "  figure          run         simulated     published\n  \
             -a iteration 1  v6.10/a         87.05         85.71\n"
        );
    }
}
