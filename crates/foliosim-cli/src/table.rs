//! The comparison table: one column per run (profile/variant), one row per key figure.

use aho_corasick::{AhoCorasick, Anchored, Input, MatchKind, StartKind};
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

/// Shown only when some run counted something: zswap, tiering, migration and TLB counters.
const OPTIONAL_VMSTAT_ROWS: &[&str] = &[
    "zswpout",
    "zswpin",
    "zswpwb",
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
    let owners = Owners::new(scenario);
    let metrics: Vec<_> = scenario.tasks.iter().map(task_metric).collect();
    // cells[run][task]: each run's result tasks are grouped by owner once
    let cells: Vec<Vec<String>> = runs
        .iter()
        .map(|run| {
            owners
                .group(run)
                .iter()
                .zip(&metrics)
                .map(|(tasks, (field, sum, _))| {
                    let values: Vec<u64> = tasks
                        .iter()
                        .filter_map(|t| t.get(*field).and_then(|v| v.as_u64()))
                        .collect();
                    if values.is_empty() {
                        MISSING.to_string()
                    } else if *sum {
                        values.iter().sum::<u64>().to_string()
                    } else {
                        format_ms(values.iter().copied().max().unwrap_or(0))
                    }
                })
                .collect()
        })
        .collect();
    for (index, (_, _, label)) in metrics.into_iter().enumerate() {
        rows.push((label, cells.iter().map(|c| c[index].clone()).collect()));
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
    // zswap's debugfs figures, for runs with zswap on; the level ones are 0 once the tasks exit
    let mut zswap_keys: Vec<&String> = Vec::new();
    for run in runs {
        for (name, value) in &run.zswap {
            if *value != 0 && !zswap_keys.contains(&name) {
                zswap_keys.push(name);
            }
        }
    }
    zswap_keys.sort();
    for name in zswap_keys {
        let cells = runs
            .iter()
            .map(|r| {
                r.zswap
                    .get(name)
                    .map_or(MISSING.to_string(), |v| v.to_string())
            })
            .collect();
        rows.push((format!("zswap/{name}"), cells));
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

pub(crate) fn task_name(task: &ResultTask) -> &str {
    task.get("name").and_then(|v| v.as_str()).unwrap_or("")
}

/// A result task as the engine reports it (`name`, figures).
pub(crate) type ResultTask = serde_json::Map<String, serde_json::Value>;

/// Which scenario task a result task belongs to: the longest task name that starts the result's
/// name (`usemem-3` belongs to `usemem`; `usemem2-0` to `usemem2` when both exist). One automaton
/// over all the names answers in the time of reading the result's name, whatever the number of
/// tasks (comparing with each name in turn made a table of 10^5 tasks take hours).
pub(crate) struct Owners<'s> {
    scenario: &'s Scenario,
    /// The task names, matched from the start of a result name, the longest winning; None only
    /// when the names exceed the automaton's limits (gigabytes of names), then they are scanned.
    names: Option<AhoCorasick>,
}

impl<'s> Owners<'s> {
    pub(crate) fn new(scenario: &'s Scenario) -> Owners<'s> {
        let names = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .start_kind(StartKind::Anchored)
            .build(scenario.tasks.iter().map(|t| t.name.as_str()))
            .ok();
        Owners { scenario, names }
    }

    /// The index of the scenario task owning `result_name`, if any.
    pub(crate) fn of(&self, result_name: &str) -> Option<usize> {
        match &self.names {
            Some(names) => names
                .find(Input::new(result_name).anchored(Anchored::Yes))
                .map(|m| m.pattern().as_usize()),
            None => self
                .scenario
                .tasks
                .iter()
                .enumerate()
                .filter(|(_, t)| result_name.starts_with(t.name.as_str()))
                .max_by_key(|(_, t)| t.name.len())
                .map(|(i, _)| i),
        }
    }

    /// A run's result tasks grouped by the scenario task owning them, in the scenario's order.
    pub(crate) fn group<'r>(&self, run: &'r RunResult) -> Vec<Vec<&'r ResultTask>> {
        let mut groups = vec![Vec::new(); self.scenario.tasks.len()];
        for task in &run.tasks {
            if let Some(owner) = self.of(task_name(task)) {
                groups[owner].push(task);
            }
        }
        groups
    }
}

/// "64kB" -> 64, for ordering sizes numerically.
fn size_kb(size: &str) -> u64 {
    size.trim_end_matches("kB").parse().unwrap_or(u64::MAX)
}

fn format_ms(ns: u64) -> String {
    format!("{}.{:03}", ns / 1_000_000, (ns % 1_000_000) / 1_000)
}

/// Cells longer than this many characters (a name of thousands) show their start and their end,
/// so that every row stays one line (comfy-table wraps a cell wider than 65,535 columns).
const CELL_CHARS: usize = 100;
const CELL_START_CHARS: usize = 60;
const CELL_END_CHARS: usize = 30;

/// A cell as the table shows it: whole, or its first and last characters around a `…`.
fn shown(cell: &str) -> String {
    let count = cell.chars().count();
    if count <= CELL_CHARS {
        return cell.to_string();
    }
    let start: String = cell.chars().take(CELL_START_CHARS).collect();
    let end: String = cell.chars().skip(count - CELL_END_CHARS).collect();
    format!("{start}…{end}")
}

/// Renders the table: labels left-aligned, figures right-aligned, two spaces between columns.
pub fn render(table: &Table) -> String {
    let mut text = TextTable::new();
    text.load_style(presets::NOTHING)
        .force_no_tty()
        .set_header(std::iter::once(String::new()).chain(table.columns.iter().map(|c| shown(c))));
    for (label, cells) in &table.rows {
        text.add_row(std::iter::once(shown(label)).chain(cells.iter().map(|c| shown(c))));
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
        .set_header(header.iter().map(|c| shown(c)));
    for row in rows {
        text.add_row(row.iter().map(|c| shown(c)));
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

    /// A scenario of op-list tasks with these names.
    fn scenario_of(names: &[String]) -> Scenario {
        let mut text = String::from(
            "name = \"t\"\nprofiles = [\"v6.12\"]\n[machine]\n[[machine.node]]\nmemory = \"1G\"\ncpus = 2\n",
        );
        for name in names {
            text.push_str(&format!(
                "[[task]]\nname = \"{name}\"\nops = [{{ op = \"mmap\", region = \"r\", size = \"4K\" }}]\n"
            ));
        }
        Scenario::parse_str(&text, "t.toml").unwrap()
    }

    fn result_of(task_names: &[String]) -> RunResult {
        RunResult {
            profile: "v6.12".into(),
            variant: None,
            seed: 1,
            sim_time_ns: 0,
            vmstat: Default::default(),
            mthp: Default::default(),
            memcg: Default::default(),
            zram: Default::default(),
            zswap: Default::default(),
            tasks: task_names
                .iter()
                .enumerate()
                .map(|(i, name)| {
                    let mut task = ResultTask::new();
                    task.insert("name".into(), name.as_str().into());
                    task.insert("exit_ns".into(), (i as u64 * 1_000_000).into());
                    task
                })
                .collect(),
            iterations: Vec::new(),
            series: Default::default(),
            series_interval_ns: None,
        }
    }

    #[test]
    fn a_result_task_belongs_to_the_longest_task_name_starting_it() {
        let names: Vec<String> = ["usemem", "usemem2", "a", "ab"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let scenario = scenario_of(&names);
        let owners = Owners::new(&scenario);
        assert_eq!(owners.of("usemem-3"), Some(0));
        assert_eq!(owners.of("usemem2-0"), Some(1));
        assert_eq!(owners.of("usemem"), Some(0));
        assert_eq!(owners.of("ac"), Some(2));
        assert_eq!(owners.of("abc"), Some(3));
        assert_eq!(owners.of("b"), None);
        assert_eq!(owners.of(""), None);
    }

    #[test]
    fn a_table_of_many_tasks_is_made_in_one_pass() {
        // 20,000 tasks and 40,000 result tasks: comparing each result with each name for each
        // row (what the table did) would take about 10^13 steps and never end
        let names: Vec<String> = (0..20_000).map(|i| format!("task{i}")).collect();
        let results: Vec<String> = names
            .iter()
            .flat_map(|n| [n.clone(), format!("{n}-child")])
            .collect();
        let scenario = scenario_of(&names);
        let table = comparison(&scenario, &[result_of(&results)]);
        // the row of task7 shows the later exit of task7 and task7-child (results 14 and 15)
        let row = table
            .rows
            .iter()
            .find(|(l, _)| l.starts_with("task7 "))
            .unwrap();
        assert_eq!(row.1, vec!["15.000".to_string()]);
        let row = table
            .rows
            .iter()
            .find(|(l, _)| l.starts_with("task19999 "))
            .unwrap();
        assert_eq!(row.1, vec!["39999.000".to_string()]);
    }

    #[test]
    fn long_names_are_shortened_to_keep_one_line_per_row() {
        let long = format!("{}z", "a".repeat(100_000));
        let t = Table {
            columns: vec![format!("v6.12/{long}")],
            rows: vec![(format!("{long} exit (ms)"), vec!["1.000".into()])],
        };
        let text = render(&t);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines.iter().all(|l| l.chars().count() < 200), "{text}");
        assert!(lines[0].trim_start().starts_with("v6.12/aaa"), "{text}");
        assert!(lines[0].ends_with("aaaaz"), "{text}");
        assert!(
            lines[1].contains("…") && lines[1].ends_with("1.000"),
            "{text}"
        );
        let aligned = render_aligned(&["figure"], &[vec![long.clone()]], 1, 12);
        assert!(
            aligned.lines().all(|l| l.chars().count() < 200),
            "{aligned}"
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
