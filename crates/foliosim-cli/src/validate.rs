//! `foliosim validate`: each run of a scenario in the simulator, under the profile that models
//! the running kernel, and on the kernel itself; counters and times side by side with the ratio
//! simulated / live, then the counters that differ. With `--json` the document holds the
//! simulated runs, then the live ones (profile `live-<release>`).

use std::collections::BTreeSet;

use foliosim::scenario::types::PAGE_SIZE;
use foliosim::scenario::SwapKind;
use foliosim::{RunResult, RunSpec, Scenario};
use serde_json::Value;

use crate::args::ValidateArgs;
use crate::kernel_run;
use crate::live::sys::NodeMeminfo;
use crate::live::LiveRun;
use crate::run::{run_all, Loader};
use crate::{output, scenarios, table, Failure};

/// One line of the side-by-side table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub label: String,
    pub sim: f64,
    pub live: f64,
    /// A count (compared exactly) rather than a time or a mean.
    pub counter: bool,
    /// With several live runs: `live` is their median, and this their minimum and maximum.
    pub live_range: Option<(f64, f64)>,
    /// With a simulated run paired to each live run (`--paired`): `sim` is their median, and
    /// this their minimum and maximum.
    pub sim_range: Option<(f64, f64)>,
}

impl Row {
    fn count(label: String, sim: u64, live: u64) -> Row {
        Row {
            label,
            sim: sim as f64,
            live: live as f64,
            counter: true,
            live_range: None,
            sim_range: None,
        }
    }
    fn figure(label: String, sim: f64, live: f64) -> Row {
        Row {
            label,
            sim,
            live,
            counter: false,
            live_range: None,
            sim_range: None,
        }
    }
    /// simulated / live; None when live is 0.
    pub fn ratio(&self) -> Option<f64> {
        (self.live != 0.0).then(|| self.sim / self.live)
    }

    /// Within 10% of the live median, or inside the live runs' min-max.
    pub fn matches(&self) -> bool {
        let near = (self.sim - self.live).abs() <= 0.1 * self.live.abs();
        let inside = self
            .live_range
            .is_some_and(|(lo, hi)| lo <= self.sim && self.sim <= hi);
        near || inside
    }
}

/// The middle value (the mean of the two middle ones for an even count).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// The rows of one simulated run against several live runs of it: each row's live value is the
/// median over the runs (a counter a run did not print counts 0 there), with their min-max.
pub fn rows_against(scenario: &Scenario, sim: &RunResult, lives: &[&RunResult]) -> Vec<Row> {
    let pairs: Vec<(&RunResult, &RunResult)> = lives.iter().map(|l| (sim, *l)).collect();
    rows_of_pairs(scenario, &pairs, false)
}

/// The rows of simulated runs each paired with the live run it plays (`--paired`): both sides
/// are medians with their min-max.
pub fn rows_paired(scenario: &Scenario, pairs: &[(&RunResult, &RunResult)]) -> Vec<Row> {
    rows_of_pairs(scenario, pairs, true)
}

fn rows_of_pairs(
    scenario: &Scenario,
    pairs: &[(&RunResult, &RunResult)],
    sims_differ: bool,
) -> Vec<Row> {
    let per_run: Vec<Vec<Row>> = pairs
        .iter()
        .map(|(sim, live)| rows(scenario, sim, live))
        .collect();
    if per_run.len() == 1 {
        return per_run.into_iter().next().unwrap_or_default();
    }
    let mut merged: Vec<Row> = Vec::new();
    for row in per_run.iter().flatten() {
        if !merged.iter().any(|m| m.label == row.label) {
            merged.push(row.clone());
        }
    }
    // a counter a run did not print counts 0 there
    let spread = |label: &str, side: fn(&Row) -> f64| {
        let mut values: Vec<f64> = per_run
            .iter()
            .map(|rows| rows.iter().find(|r| r.label == label).map_or(0.0, side))
            .collect();
        let range = values
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        (median(&mut values), range)
    };
    for m in &mut merged {
        (m.live, m.live_range) = {
            let (median, range) = spread(&m.label, |r| r.live);
            (median, Some(range))
        };
        if sims_differ {
            let (median, range) = spread(&m.label, |r| r.sim);
            (m.sim, m.sim_range) = (median, Some(range));
        }
    }
    merged
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Mean of an iteration figure over iterations `from..` (1-based), skipping nulls.
pub fn iteration_mean(run: &RunResult, key: &str, from: usize) -> Option<f64> {
    let values: Vec<f64> = run
        .iterations
        .iter()
        .skip(from - 1)
        .filter_map(|m| m.get(key).and_then(Value::as_f64))
        .collect();
    mean(&values)
}

/// A task figure summed over the result tasks a scenario task owns (usemem-0, usemem-1, ...),
/// or its maximum for times of exit.
fn task_figure(owned: &[&table::ResultTask], key: &str) -> Option<f64> {
    let values: Vec<f64> = owned
        .iter()
        .filter_map(|t| t.get(key).and_then(Value::as_f64))
        .collect();
    if values.is_empty() {
        None
    } else if key == "exit_ns" {
        values.into_iter().reduce(f64::max)
    } else {
        Some(values.iter().sum())
    }
}

/// At most this many processes get rows of their own (a scenario of hundreds, kbuild-like's
/// jobs, keeps its per-task sums only).
const MAX_PROCESS_ROWS: usize = 16;

/// Each process's exit and system time, where a scenario task runs several (usemem-0,
/// usemem-1, ...) or forks children, which no scenario task names: the sums above hide which
/// process did the work (which one reclaims for the others, how long a child ran).
fn process_rows(scenario: &Scenario, sim: &RunResult, live: &RunResult) -> Vec<Row> {
    let own: Vec<&table::ResultTask> = sim
        .tasks
        .iter()
        .filter(|t| {
            let n = table::task_name(t);
            !n.is_empty() && !scenario.tasks.iter().any(|s| s.name == n)
        })
        .take(MAX_PROCESS_ROWS + 1)
        .collect();
    if own.len() > MAX_PROCESS_ROWS {
        return Vec::new();
    }
    let mut rows = Vec::new();
    for s in own {
        let name = table::task_name(s);
        let Some(l) = live.tasks.iter().find(|l| table::task_name(l) == name) else {
            continue;
        };
        for (key, label) in [("exit_ns", "exit (ms)"), ("sys_ns", "sys (ms)")] {
            let (Some(sv), Some(lv)) = (
                s.get(key).and_then(Value::as_f64),
                l.get(key).and_then(Value::as_f64),
            ) else {
                continue;
            };
            rows.push(Row::figure(format!("{name} {label}"), sv / 1e6, lv / 1e6));
        }
    }
    rows
}

/// The rows comparing a simulated run with the live run of the same variant: times, iteration
/// means, then every counter either side counted (/proc/vmstat names the simulator has,
/// per-size mTHP stats, the scenario's cgroups, zram).
pub fn rows(scenario: &Scenario, sim: &RunResult, live: &RunResult) -> Vec<Row> {
    let ms = |ns: f64| ns / 1e6;
    let mut rows = vec![Row::figure(
        "run time (ms)".into(),
        ms(sim.sim_time_ns as f64),
        ms(live.sim_time_ns as f64),
    )];
    let owners = table::Owners::new(scenario);
    let (sim_tasks, live_tasks) = (owners.group(sim), owners.group(live));
    for (index, task) in scenario.tasks.iter().enumerate() {
        for (key, label, scale) in [
            ("exit_ns", "exit (ms)", 1e-6),
            ("user_ns", "user (ms)", 1e-6),
            ("sys_ns", "sys (ms)", 1e-6),
            ("throughput_kbps", "throughput_kbps", 1.0),
        ] {
            if let (Some(s), Some(l)) = (
                task_figure(&sim_tasks[index], key),
                task_figure(&live_tasks[index], key),
            ) {
                rows.push(Row::figure(
                    format!("{} {label}", task.name),
                    s * scale,
                    l * scale,
                ));
            }
        }
    }
    rows.extend(process_rows(scenario, sim, live));
    let iterations = sim.iterations.len().min(live.iterations.len());
    if iterations > 0 {
        for key in ["swpout_inc", "fallback_inc", "fallback_pct", "time_ns"] {
            let scale = if key == "time_ns" { 1e-6 } else { 1.0 };
            let name = if key == "time_ns" { "time (ms)" } else { key };
            let mut ranges = vec![(1, format!("iteration mean {name}"))];
            if iterations > 1 {
                ranges.push((2, format!("iteration mean 2-{iterations} {name}")));
            }
            for (from, label) in ranges {
                if let (Some(s), Some(l)) = (
                    iteration_mean(sim, key, from),
                    iteration_mean(live, key, from),
                ) {
                    rows.push(Row::figure(label, s * scale, l * scale));
                }
            }
        }
    }
    // a counter the live kernel does not print (nr_tlb_* without CONFIG_DEBUG_TLBFLUSH) is
    // left out rather than shown as 0
    for (name, &s) in &sim.vmstat {
        if let Some(&l) = live.vmstat.get(name) {
            if s != 0 || l != 0 {
                rows.push(Row::count(name.clone(), s, l));
            }
        }
    }
    let mut sizes: Vec<&String> = sim.mthp.keys().chain(live.mthp.keys()).collect();
    sizes.sort_by_key(|s| s.trim_end_matches("kB").parse::<u64>().unwrap_or(u64::MAX));
    sizes.dedup();
    for size in sizes {
        let empty = Default::default();
        let s = sim.mthp.get(size).unwrap_or(&empty);
        let l = live.mthp.get(size).unwrap_or(&empty);
        let names: BTreeSet<&String> = s.keys().chain(l.keys()).collect();
        for name in names {
            let (a, b) = (s.get(name).copied(), l.get(name).copied());
            // a stat only one side has is shown when it counted something there
            if a.unwrap_or(0) != 0 || b.unwrap_or(0) != 0 {
                rows.push(Row::count(
                    format!("hugepages-{size}/{name}"),
                    a.unwrap_or(0),
                    b.unwrap_or(0),
                ));
            }
        }
    }
    for (group, label) in [(&sim.memcg, "memcg"), (&sim.zram, "zram")] {
        let other = if label == "memcg" {
            &live.memcg
        } else {
            &live.zram
        };
        for (name, counters) in group {
            let Some(live_counters) = other.get(name) else {
                continue;
            };
            for (key, &s) in counters {
                let Some(&l) = live_counters.get(key) else {
                    continue;
                };
                if s != 0 || l != 0 {
                    rows.push(Row::count(format!("{label}:{name}:{key}"), s, l));
                }
            }
        }
    }
    // zswap's debugfs figures (pool_limit_hit, written_back_pages, ...), when the live run could
    // read them (debugfs mounted)
    for (key, &s) in &sim.zswap {
        if let Some(&l) = live.zswap.get(key) {
            if s != 0 || l != 0 {
                rows.push(Row::count(format!("zswap/{key}"), s, l));
            }
        }
    }
    // zram's peak memory: the simulator reports it as a sampled series, the kernel as mm_stat's
    // mem_used_max
    for (name, counters) in &live.zram {
        let (Some(&peak), Some(samples)) = (
            counters.get("mem_used_max"),
            sim.series.get(&format!("zram:{name}:mem_used_total")),
        ) else {
            continue;
        };
        let sampled_peak = samples.iter().copied().max().unwrap_or(0);
        rows.push(Row::figure(
            format!("zram:{name}:mem_used_max (MiB)"),
            sampled_peak as f64 / 1048576.0,
            peak as f64 / 1048576.0,
        ));
    }
    rows
}

fn format_value(v: f64, counter: bool) -> String {
    if counter || (v.fract() == 0.0 && v.abs() < 1e15) {
        format!("{v:.0}")
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Event counters the live runs counted (machine-wide, nonzero in any run) that the simulator
/// has no counter for; docs/fidelity.md says why each is left out.
pub fn not_modelled(sim: &RunResult, lives: &[&RunResult]) -> Vec<String> {
    let mut names: BTreeSet<String> = BTreeSet::new();
    for live in lives {
        for (name, &v) in &live.vmstat {
            if v != 0 && !sim.vmstat.contains_key(name) {
                names.insert(name.clone());
            }
        }
    }
    names.into_iter().collect()
}

/// Simulated counters the live kernel does not print at all.
pub fn absent_on_live(sim: &RunResult, live: &RunResult) -> Vec<String> {
    sim.vmstat
        .iter()
        .filter(|(name, v)| **v != 0 && !live.vmstat.contains_key(*name))
        .map(|(name, _)| name.clone())
        .collect()
}

/// The side-by-side table of one variant.
pub fn render(sim_label: &str, live_label: &str, rows: &[Row]) -> String {
    let ranged = rows.iter().any(|r| r.live_range.is_some());
    let sim_ranged = rows.iter().any(|r| r.sim_range.is_some());
    let mut columns = vec![sim_label.to_string()];
    if sim_ranged {
        columns[0] = format!("{sim_label} median");
        columns.push("sim min-max".into());
    }
    if ranged {
        columns.push(format!("{live_label} median"));
        columns.push("live min-max".into());
    } else {
        columns.push(live_label.into());
    }
    columns.push("sim/live".into());
    let table = table::Table {
        columns,
        rows: rows
            .iter()
            .map(|r| {
                let ratio = match r.ratio() {
                    Some(x) if r.sim == r.live => format!("{x:.3} ="),
                    Some(x) => format!("{x:.3}  "),
                    None if r.sim == 0.0 => "- =".into(),
                    None => "-  ".into(),
                };
                let range = |(lo, hi): (f64, f64)| {
                    format!(
                        "{}-{}",
                        format_value(lo, r.counter),
                        format_value(hi, r.counter)
                    )
                };
                let mut cells = vec![format_value(r.sim, r.counter)];
                cells.extend(r.sim_range.map(range));
                cells.push(format_value(r.live, r.counter));
                cells.extend(r.live_range.map(range));
                cells.push(ratio);
                (r.label.clone(), cells)
            })
            .collect(),
    };
    table::render(&table)
}

/// The counters that differ, largest relative difference first, one line. With several live
/// runs, the counters neither within 10% of the live median nor inside the live min-max.
pub fn differences(rows: &[Row]) -> String {
    if rows.iter().any(|r| r.live_range.is_some()) {
        let counters: Vec<&Row> = rows.iter().filter(|r| r.counter).collect();
        let outside: Vec<String> = counters
            .iter()
            .filter(|r| !r.matches())
            .map(|r| match r.ratio() {
                Some(x) => format!("{} {:+.1}%", r.label, (x - 1.0) * 100.0),
                None => format!("{} {} vs 0", r.label, format_value(r.sim, true)),
            })
            .collect();
        let simulated = match rows.iter().any(|r| r.sim_range.is_some()) {
            true => "simulated medians",
            false => "counters",
        };
        let mut text = format!(
            "{simulated} within 10% of the live median or inside its min-max: {} of {}",
            counters.len() - outside.len(),
            counters.len()
        );
        if !outside.is_empty() {
            text.push_str(&format!(
                "; outside (sim vs median): {}",
                outside.join(", ")
            ));
        }
        text.push('\n');
        return text;
    }
    let counters: Vec<&Row> = rows.iter().filter(|r| r.counter).collect();
    let mut differ: Vec<&Row> = counters
        .iter()
        .copied()
        .filter(|r| r.sim != r.live)
        .collect();
    let relative = |r: &Row| (r.sim - r.live).abs() / r.live.abs().max(r.sim.abs()).max(1.0);
    differ.sort_by(|a, b| relative(b).total_cmp(&relative(a)));
    let mut text = format!(
        "counters equal: {} of {}",
        counters.len() - differ.len(),
        counters.len()
    );
    if !differ.is_empty() {
        let shown: Vec<String> = differ
            .iter()
            .map(|r| match r.ratio() {
                Some(x) => format!("{} {:+.1}%", r.label, (x - 1.0) * 100.0),
                None => format!("{} {} vs 0", r.label, format_value(r.sim, true)),
            })
            .collect();
        text.push_str(&format!("; differ (sim vs live): {}", shown.join(", ")));
    }
    text.push('\n');
    text
}

/// How close a simulated time must come to the live median to count as matching: within 20 %,
/// the bar docs/calibration.md holds a calibrated profile to.
const TIME_TOLERANCE: f64 = 0.2;

/// The simulated parts named for a time figure outside [`TIME_TOLERANCE`].
const PARTS_SHOWN: usize = 3;

/// The time figures (the run time and each task's and process's sys time) within 20 % of the live
/// median, one line; each one outside is followed by the largest parts of the simulated time it
/// is made of (time_breakdown_ns, mm/cputime.rs: all tasks for the run time, the task's own for
/// its sys), which point at the costs to look at (`run --explain-time` lists every part).
pub fn time_figures(scenario: &Scenario, sim: &RunResult, rows: &[Row]) -> String {
    let figures: Vec<&Row> = rows
        .iter()
        .filter(|r| !r.counter && (r.label == "run time (ms)" || r.label.ends_with(" sys (ms)")))
        .collect();
    if figures.is_empty() {
        return String::new();
    }
    // the tasks each scenario task's row summed (rows), a process row being its own
    let owned = table::Owners::new(scenario).group(sim);
    let outside: Vec<String> = figures
        .iter()
        .filter(|r| r.ratio().is_some_and(|x| (x - 1.0).abs() > TIME_TOLERANCE))
        .map(|r| {
            let tasks: Vec<&table::ResultTask> = match r.label.strip_suffix(" sys (ms)") {
                None => sim.tasks.iter().collect(),
                Some(name) => match scenario.tasks.iter().position(|s| s.name == name) {
                    Some(index) => owned[index].clone(),
                    None => sim
                        .tasks
                        .iter()
                        .filter(|t| table::task_name(t) == name)
                        .collect(),
                },
            };
            format!(
                "{} {:.2} ({})",
                r.label.trim_end_matches(" (ms)"),
                r.ratio().unwrap_or(0.0),
                largest_parts(&tasks)
            )
        })
        .collect();
    let mut text = format!(
        "time figures (run time, sys) within {:.0}% of the live median: {} of {}",
        TIME_TOLERANCE * 100.0,
        figures.len() - outside.len(),
        figures.len()
    );
    if !outside.is_empty() {
        text.push_str(&format!("; outside (sim / median): {}", outside.join(", ")));
    }
    text.push('\n');
    text
}

/// The largest parts of these tasks' simulated user + sys time by mechanism, with their shares.
fn largest_parts(tasks: &[&table::ResultTask]) -> String {
    use foliosim::mm::cputime::TimeKind;
    let of = |kind: TimeKind| -> u64 {
        tasks
            .iter()
            .map(|t| crate::explain_time::breakdown_ns(t, kind))
            .sum()
    };
    let mut parts: Vec<(TimeKind, u64)> = TimeKind::ALL
        .into_iter()
        .filter(|k| !k.is_wait())
        .map(|k| (k, of(k)))
        .filter(|(_, ns)| *ns > 0)
        .collect();
    let total: u64 = parts.iter().map(|(_, ns)| ns).sum();
    parts.sort_by_key(|&(_, ns)| std::cmp::Reverse(ns));
    let shown: Vec<String> = parts
        .iter()
        .take(PARTS_SHOWN)
        .map(|(k, ns)| format!("{} {:.0}%", k.name(), *ns as f64 * 100.0 / total as f64))
        .collect();
    match shown.is_empty() {
        true => "no simulated breakdown".to_string(),
        false => format!("simulated: {}", shown.join(", ")),
    }
}

/// The scenario, the simulator's profile and the resolved runs of `validate`, before anything
/// on the machine is looked at or changed.
pub fn plan(
    validate_args: &ValidateArgs,
    load: &Loader,
) -> Result<(Scenario, String, Vec<RunSpec>), Failure> {
    let args = &validate_args.live;
    let mut scenario = load(&scenarios::find("validate", &args.scenario)?)?;
    if let Some(hardware) = &validate_args.hardware {
        scenario.set_hardware(hardware)?;
    }
    let profile = match &validate_args.profile {
        Some(p) => p.clone(),
        None => kernel_run::kernel_profile()?,
    };
    let specs = kernel_run::resolve(&scenario, args, &profile)?;
    Ok((scenario, profile, specs))
}

/// The simulated runs of `--paired`, one per live run (repetition-major): each variant's spec
/// with the flusher phase its live run recorded. Also the labels of the live runs that recorded
/// none, whose simulations keep the seed's phase.
fn paired_specs(specs: &[RunSpec], repetitions: &[Vec<LiveRun>]) -> (Vec<RunSpec>, Vec<String>) {
    let mut paired = Vec::new();
    let mut unrecorded = Vec::new();
    for runs in repetitions {
        for (spec, live) in specs.iter().zip(runs) {
            let mut spec = spec.clone();
            match live.info["memcg_stats_flush_first_us"].as_u64() {
                Some(us) => spec.knobs.memcg_stats_flush_first_us = Some(us),
                None => unrecorded.push(table::run_label(&live.result)),
            }
            retime_native(&mut spec, &[live]);
            paired.push(spec);
        }
    }
    (paired, unrecorded)
}

/// Replays each trace task of `spec` timed natively beside `lives` (live/native.rs) at the
/// median of those native user times.
fn retime_native(spec: &mut RunSpec, lives: &[&LiveRun]) {
    let names: Vec<String> = spec.scenario.tasks.iter().map(|t| t.name.clone()).collect();
    for name in names {
        let user_ns: Vec<u64> = lives
            .iter()
            .filter_map(|live| live.info["native_user_ns"][&name].as_u64())
            .collect();
        if user_ns.is_empty() {
            continue;
        }
        spec.retime_native(&name, crate::live::native::median_ns(&user_ns))
            .expect("a live run times natively only the tasks replaying a native-timed trace");
    }
}

/// Whether a task of the scenario replays a trace at its program's native speed and runs its
/// command live: its live runs time that command natively, and the simulation takes their time.
fn retimed_live(scenario: &Scenario) -> bool {
    scenario
        .tasks
        .iter()
        .any(|t| crate::live::native::natively_timed(t).is_some())
}

/// What `--paired` simulated, under the table.
fn paired_note(runs: usize, unrecorded: &[String]) -> String {
    let mut text = format!(
        "paired: {runs} simulated runs, each playing the memcg statistics flusher's phase its \
         live run recorded; the simulated column is their median\n"
    );
    if !unrecorded.is_empty() {
        text.push_str(&format!(
            "paired: {} live runs recorded no flusher phase ({}); their simulations draw it from \
             the seed\n",
            unrecorded.len(),
            unrecorded.join(", ")
        ));
    }
    text
}

/// Turns the scenario's brd swap devices into zram devices of the same size; true if it had any.
fn play_brd_as_zram(scenario: &mut Scenario) -> bool {
    let mut any = false;
    for swap in &mut scenario.swap {
        if swap.kind == SwapKind::Brd {
            swap.kind = SwapKind::Zram;
            any = true;
        }
    }
    any
}

/// Plays the live host's memory and page cache in the simulated machine: each node gets the
/// host's page cache as its resident `Active(file)` and `Inactive(file)` (clean, charged to the
/// root cgroup, mm/resident_cache.rs) and, where its memory is smaller, the host's memory. The
/// root's workingset, against which a refault after global reclaim or MADV_PAGEOUT is judged, is
/// then the host's. The host's nodes are taken one for one when the counts agree, else pooled and
/// shared out by the scenario nodes' memory. Returns a line saying what was taken, or None when
/// the host's meminfo could not be read.
pub fn play_host_memory(scenario: &mut Scenario, host: &[NodeMeminfo]) -> Option<String> {
    if host.is_empty() {
        return None;
    }
    let pages = |bytes: u128| (bytes as u64) & !(PAGE_SIZE - 1);
    let nodes = &mut scenario.machine.nodes;
    let scenario_memory: u128 = nodes.iter().map(|n| n.memory_bytes as u128).sum();
    let sum = |f: fn(&NodeMeminfo) -> u64| host.iter().map(|n| f(n) as u128).sum::<u128>();
    let pooled = [
        sum(|n| n.mem_total_bytes),
        sum(|n| n.active_file_bytes),
        sum(|n| n.inactive_file_bytes),
    ];
    let one_for_one = host.len() == nodes.len();
    let mut parts = Vec::new();
    for (i, node) in nodes.iter_mut().enumerate() {
        let [memory, active, inactive] = if one_for_one {
            let h = &host[i];
            [
                h.mem_total_bytes,
                h.active_file_bytes,
                h.inactive_file_bytes,
            ]
        } else {
            pooled.map(|bytes| pages(bytes * node.memory_bytes as u128 / scenario_memory.max(1)))
        };
        let scenario_bytes = node.memory_bytes;
        node.memory_bytes = node.memory_bytes.max(pages(memory as u128));
        // the host's cache fits its memory; a node larger than the host's keeps its own
        node.active_file_bytes = pages(active as u128).min(node.memory_bytes);
        node.inactive_file_bytes =
            pages(inactive as u128).min(node.memory_bytes - node.active_file_bytes);
        parts.push(format!(
            "node {i}: Active(file) {} MiB, Inactive(file) {} MiB, memory {} MiB (the scenario's {} MiB)",
            node.active_file_bytes >> 20,
            node.inactive_file_bytes >> 20,
            node.memory_bytes >> 20,
            scenario_bytes >> 20
        ));
    }
    let source = if one_for_one {
        "each host node's meminfo"
    } else {
        "the host's meminfo, shared out by memory"
    };
    Some(format!(
        "simulated with the host's page cache and memory ({source}), resident and charged to the \
         root cgroup from the start: {}\n",
        parts.join("; ")
    ))
}

/// Plays the live host's CPUs in the simulated machine where the scenario has more: the live
/// run's tasks share the host's. Each node with CPUs keeps its share of them (at least one).
/// Returns a line saying so, or None when the scenario's machine fits.
pub fn play_host_cpus(scenario: &mut Scenario, host_cpus: u32) -> Option<String> {
    let nodes = &mut scenario.machine.nodes;
    let total: u32 = nodes.iter().map(|n| n.cpus).sum();
    if host_cpus == 0 || total <= host_cpus {
        return None;
    }
    for node in nodes.iter_mut().filter(|n| n.cpus > 0) {
        node.cpus = (node.cpus * host_cpus / total).max(1);
    }
    Some(format!(
        "simulated with the host's {host_cpus} CPUs (the scenario's machine has {total}), which \
         the live run's tasks share\n"
    ))
}

pub fn validate(validate_args: &ValidateArgs) -> Result<(), Failure> {
    let args = &validate_args.live;
    let (mut scenario, profile, specs) = plan(validate_args, &Scenario::load)?;
    // what the machine cannot do is refused before the (possibly long) simulation
    let host = kernel_run::preflight(&specs)?;
    // the live side plays a brd RAM disk as zram (live/mod.rs); so does the simulator here, so
    // that both compress and both pay zram's per-page work
    let brd_played_as_zram = play_brd_as_zram(&mut scenario);
    let mut specs = specs;
    for spec in &mut specs {
        play_brd_as_zram(&mut spec.scenario);
    }
    // the simulator plays the host's cgroup version (zswap charges memcgs on v2 only)
    if host.hierarchy.version == crate::live::cgroup::Version::V1 {
        for spec in &mut specs {
            spec.knobs.memory_cgroup_v1 = true;
        }
    }
    // and its zswap history: once zswap was on, no large folio is swapped in until reboot
    if crate::live::sys::zswap_was_enabled() {
        for spec in &mut specs {
            spec.knobs.zswap_enabled_since_boot = true;
        }
    }
    // and its other memory cgroups, which zswap's shrink worker walks past (mm/zswap.rs)
    if let Some(n) = crate::live::cgroup::host_memcgs() {
        let online = crate::live::cgroup::host_memcgs_online()
            .unwrap_or(0)
            .min(n);
        for spec in &mut specs {
            spec.knobs.host_memcgs = n;
            spec.knobs.host_memcgs_online = online;
        }
    }
    // and its memory and page cache (the root's workingset), in the simulated machine only: the
    // live side's set-up reads the scenario's machine as it is
    let mut sim_scenario = scenario.clone();
    let mut sim_specs = specs.clone();
    let host_memory = play_host_memory(&mut sim_scenario, &host.meminfo);
    let host_cpus = play_host_cpus(&mut sim_scenario, host.cpus);
    for spec in &mut sim_specs {
        play_host_memory(&mut spec.scenario, &host.meminfo);
        play_host_cpus(&mut spec.scenario, host.cpus);
    }
    if validate_args.sim_only {
        let sim_runs = run_all(&sim_scenario, &sim_specs)?;
        if let Some(json) = &args.json {
            let document = output::document(&sim_scenario, &sim_runs)
                .map_err(|m| crate::json_error(json, m))?;
            output::write_atomically(json, &document)?;
        }
        let mut text = crate::table::render(&crate::table::comparison(&sim_scenario, &sim_runs));
        for line in [&host_memory, &host_cpus].into_iter().flatten() {
            text.push_str(line);
        }
        crate::print_stdout(&text);
        return Ok(());
    }
    // a run plays its seed's flusher phase unless paired, when it plays a live run's; unpaired,
    // the simulation comes first, so that a scenario the engine refuses touches nothing live,
    // unless it replays a program at the native speed measured beside the live runs
    let retimed = retimed_live(&sim_scenario);
    let seeded_runs = match validate_args.paired || retimed {
        false => Some(run_all(&sim_scenario, &sim_specs)?),
        true => None,
    };
    // the live kernel varies from run to run: each repetition plays every variant once
    let mut repetitions = Vec::new();
    for repetition in 1..=validate_args.live_runs {
        if validate_args.live_runs > 1 {
            eprintln!(
                "live repetition {repetition} of {}",
                validate_args.live_runs
            );
        }
        repetitions.push(kernel_run::live_runs(&scenario, &host, &specs)?);
    }
    let live_runs = &repetitions[0];
    // paired: repetition-major, as the live runs are
    let (sim_runs, unrecorded) = match seeded_runs {
        Some(runs) => (runs, Vec::new()),
        None if validate_args.paired => {
            let (specs, unrecorded) = paired_specs(&sim_specs, &repetitions);
            (run_all(&sim_scenario, &specs)?, unrecorded)
        }
        None => {
            let mut specs = sim_specs.clone();
            for (index, spec) in specs.iter_mut().enumerate() {
                let lives: Vec<&LiveRun> = repetitions.iter().map(|r| &r[index]).collect();
                retime_native(spec, &lives);
            }
            (run_all(&sim_scenario, &specs)?, Vec::new())
        }
    };
    if let Some(json) = &args.json {
        let mut encoded = sim_runs
            .iter()
            .map(|r| output::run_json(r, None))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|m| crate::json_error(json, m))?;
        for runs in &repetitions {
            encoded.extend(kernel_run::live_json(runs).map_err(|m| crate::json_error(json, m))?);
        }
        let document =
            output::document_of(&scenario, &encoded).map_err(|m| crate::json_error(json, m))?;
        output::write_atomically(json, &document)?;
    }
    let mut text = format!(
        "foliosim {}  scenario {}  seed {}  simulated {profile} on {} vs live {} (kernel {})\n",
        foliosim::VERSION,
        scenario.name,
        args.seed,
        scenario.machine.hw.costs.name,
        host.profile(),
        host.release
    );
    for (index, sim) in sim_runs.iter().take(specs.len()).enumerate() {
        let lives: Vec<&RunResult> = repetitions.iter().map(|r| &r[index].result).collect();
        let rows = if validate_args.paired {
            let sims = sim_runs.iter().skip(index).step_by(specs.len());
            rows_paired(
                &scenario,
                &sims.zip(lives.iter().copied()).collect::<Vec<_>>(),
            )
        } else {
            rows_against(&scenario, sim, &lives)
        };
        text.push('\n');
        text.push_str(&render(
            &table::run_label(sim),
            &table::run_label(lives[0]),
            &rows,
        ));
        text.push_str(&differences(&rows));
        text.push_str(&time_figures(&scenario, sim, &rows));
        let absent = absent_on_live(sim, lives[0]);
        if !absent.is_empty() {
            text.push_str(&format!(
                "not printed by this kernel's /proc/vmstat: {}\n",
                absent.join(", ")
            ));
        }
        let missing = not_modelled(sim, &lives);
        if !missing.is_empty() {
            text.push_str(&format!(
                "counted live, not modelled (docs/fidelity.md says why): {}\n",
                missing.join(", ")
            ));
        }
    }
    text.push_str(&kernel_run::notes(&scenario, &host, live_runs));
    if validate_args.paired {
        text.push_str(&paired_note(sim_runs.len(), &unrecorded));
    }
    if retimed {
        text.push_str(
            "retimed: each traced program replays at the user time of its native runs beside \
             the live ones (their median; the live notes above give each), not at its trace's\n",
        );
    }
    for line in [&host_memory, &host_cpus].into_iter().flatten() {
        text.push_str(line);
    }
    if brd_played_as_zram {
        text.push_str(
            "brd swap devices are played as zram live (kernel-bench has no brd), and simulated as \
             zram here to match; `foliosim run` simulates them as brd\n",
        );
    }
    text.push_str(
        "live: /proc/vmstat and hugepages-* counters are machine-wide (other processes' faults and \
         allocations count too); swap counters are the run's own, its zram being the only swap; \
         memcg:* are the run's cgroups\n",
    );
    crate::print_stdout(&text);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(profile: &str) -> RunResult {
        RunResult {
            profile: profile.into(),
            variant: Some("64K".into()),
            seed: 1,
            sim_time_ns: 2_000_000,
            vmstat: Default::default(),
            mthp: Default::default(),
            memcg: Default::default(),
            zram: Default::default(),
            zswap: Default::default(),
            tasks: vec![],
            iterations: vec![],
            series: Default::default(),
            series_interval_ns: None,
        }
    }

    #[test]
    fn the_hosts_page_cache_and_memory_go_to_the_simulated_nodes() {
        let gib = 1u64 << 30;
        let host = |node, total, active, inactive| NodeMeminfo {
            node,
            mem_total_bytes: total * gib,
            active_file_bytes: active * gib,
            inactive_file_bytes: inactive * gib,
        };
        // one node for one: the host's memory where the scenario's is smaller
        let mut one = scenario();
        let line = play_host_memory(&mut one, &[host(0, 24, 4, 9)]).unwrap();
        let n = &one.machine.nodes[0];
        assert_eq!(
            (n.memory_bytes, n.active_file_bytes, n.inactive_file_bytes),
            (24 * gib, 4 * gib, 9 * gib)
        );
        assert!(line.contains("node 0: Active(file) 4096 MiB, Inactive(file) 9216 MiB, memory 24576 MiB (the scenario's 1024 MiB)"), "{line}");
        // two host nodes for a one-node scenario: pooled
        let mut pooled = scenario();
        play_host_memory(&mut pooled, &[host(0, 8, 1, 2), host(1, 8, 3, 4)]).unwrap();
        let n = &pooled.machine.nodes[0];
        assert_eq!(
            (n.memory_bytes, n.active_file_bytes, n.inactive_file_bytes),
            (16 * gib, 4 * gib, 6 * gib)
        );
        // nothing read, nothing played
        let mut none = scenario();
        assert!(play_host_memory(&mut none, &[]).is_none());
        assert_eq!(none.machine.nodes[0].active_file_bytes, 0);
    }

    #[test]
    fn the_hosts_cpus_replace_more_of_the_scenarios_in_proportion() {
        let mut four = scenario();
        four.machine.nodes[0].cpus = 4;
        let line = play_host_cpus(&mut four, 2).unwrap();
        assert_eq!(four.machine.nodes[0].cpus, 2);
        assert!(
            line.contains("host's 2 CPUs (the scenario's machine has 4)"),
            "{line}"
        );
        // a scenario that fits keeps its CPUs
        assert!(play_host_cpus(&mut four, 8).is_none());
        assert_eq!(four.machine.nodes[0].cpus, 2);
        // shared out by node; a CPU-less (memory-only) node stays so
        let mut two_nodes = scenario();
        let mut cxl = two_nodes.machine.nodes[0].clone();
        cxl.cpus = 0;
        two_nodes.machine.nodes[0].cpus = 8;
        two_nodes.machine.nodes.push(cxl.clone());
        cxl.cpus = 8;
        two_nodes.machine.nodes.push(cxl);
        play_host_cpus(&mut two_nodes, 2).unwrap();
        let cpus: Vec<u32> = two_nodes.machine.nodes.iter().map(|n| n.cpus).collect();
        assert_eq!(cpus, vec![1, 0, 1]);
    }

    #[test]
    fn meminfo_is_read_from_the_machines_and_a_nodes_format() {
        let proc = "MemTotal:       24684096 kB\nActive(file):    5388932 kB\nInactive(file): 18133556 kB\n";
        let node = "Node 1 MemTotal:       24684096 kB\nNode 1 Active(anon):  1528 kB\nNode 1 Active(file):    5388932 kB\nNode 1 Inactive(file): 18133556 kB\n";
        let want = |node| NodeMeminfo {
            node,
            mem_total_bytes: 24684096 << 10,
            active_file_bytes: 5388932 << 10,
            inactive_file_bytes: 18133556 << 10,
        };
        assert_eq!(crate::live::sys::parse_meminfo(0, proc), Some(want(0)));
        assert_eq!(crate::live::sys::parse_meminfo(1, node), Some(want(1)));
        assert_eq!(
            crate::live::sys::parse_meminfo(0, "Active(file): 4 kB"),
            None
        );
    }

    fn scenario() -> Scenario {
        Scenario::parse_str(
            "name = \"t\"\n[machine]\n[[machine.node]]\nmemory = \"1G\"\ncpus = 1\n[[task]]\nname = \"t\"\nops = [{ op = \"sleep\", time = \"1ms\" }]\n",
            "t.toml",
        )
        .unwrap()
    }

    #[test]
    fn brd_is_simulated_as_the_zram_it_is_played_by() {
        let mut s = Scenario::parse_str(
            "name = \"t\"\n[machine]\n[[machine.node]]\nmemory = \"1G\"\ncpus = 1\n[[swap]]\nname = \"ram\"\nkind = \"brd\"\nsize = \"64M\"\n[[swap]]\nname = \"z\"\nkind = \"zram\"\nsize = \"64M\"\n[[task]]\nname = \"t\"\nops = [{ op = \"sleep\", time = \"1ms\" }]\n",
            "t.toml",
        )
        .unwrap();
        assert!(play_brd_as_zram(&mut s));
        assert!(s.swap.iter().all(|d| d.kind == SwapKind::Zram));
        assert_eq!(s.swap[0].size_bytes, 64 << 20);
        assert!(!play_brd_as_zram(&mut scenario()));
    }

    #[test]
    fn rows_pair_counters_and_skip_what_neither_counted() {
        let mut sim = result("v6.18");
        let mut live = result("live-6.18.1");
        live.sim_time_ns = 4_000_000;
        sim.vmstat.insert("pswpout".into(), 100);
        live.vmstat.insert("pswpout".into(), 100);
        sim.vmstat.insert("pswpin".into(), 90);
        live.vmstat.insert("pswpin".into(), 100);
        sim.vmstat.insert("oom_kill".into(), 0);
        live.vmstat.insert("oom_kill".into(), 0);
        live.vmstat.insert("zswpout".into(), 5); // the simulator has no such counter
        live.mthp.insert(
            "8kB".into(),
            [("swpout".to_string(), 0)].into_iter().collect(),
        );
        sim.mthp.insert(
            "64kB".into(),
            [("swpout".to_string(), 3)].into_iter().collect(),
        );
        live.mthp.insert(
            "64kB".into(),
            [("swpout".to_string(), 3), ("zswpout".to_string(), 0)]
                .into_iter()
                .collect(),
        );
        let rows = rows(&scenario(), &sim, &live);
        assert_eq!(
            labels(&rows),
            vec![
                "run time (ms)",
                "pswpin",
                "pswpout",
                "hugepages-64kB/swpout"
            ]
        );
        assert_eq!(rows[0].ratio(), Some(0.5));
        assert_eq!(rows[1].ratio(), Some(0.9));
        let d = differences(&rows);
        assert!(
            d.starts_with("counters equal: 2 of 3; differ (sim vs live): pswpin -10.0%"),
            "{d}"
        );
        // a counter only the simulator has is not a row
        sim.vmstat.insert("nr_tlb_local_flush_all".into(), 9);
        assert_eq!(rows_len(&sim, &live), 4);
        assert_eq!(absent_on_live(&sim, &live), vec!["nr_tlb_local_flush_all"]);
        // zswap's debugfs figures are rows once the live run read them (debugfs mounted)
        sim.zswap.insert("pool_limit_hit".into(), 53_862);
        assert_eq!(rows_len(&sim, &live), 4);
        live.zswap.insert("pool_limit_hit".into(), 56_282);
        let with_zswap = super::rows(&scenario(), &sim, &live);
        let last = with_zswap.last().unwrap();
        assert_eq!(
            (last.label.as_str(), last.sim, last.live),
            ("zswap/pool_limit_hit", 53_862.0, 56_282.0)
        );
    }

    #[test]
    fn each_process_and_forked_child_gets_its_exit_and_sys_rows() {
        let task = |name: &str, exit_ms: u64, sys_ms: u64| {
            serde_json::json!({"name": name, "exit_ns": exit_ms * 1_000_000, "sys_ns": sys_ms * 1_000_000})
                .as_object()
                .unwrap()
                .clone()
        };
        let mut sim = result("v6.18");
        let mut live = result("live-6.18.1");
        // "t" is the scenario's task; "t-1" a second process of it; "child" a fork of it
        sim.tasks = vec![task("t", 10, 5), task("t-1", 12, 6), task("child", 30, 20)];
        live.tasks = vec![task("child", 60, 40), task("t", 11, 5), task("t-1", 12, 6)];
        let rows = rows(&scenario(), &sim, &live);
        assert_eq!(
            labels(&rows),
            vec![
                "run time (ms)",
                "t exit (ms)",
                "t sys (ms)",
                "t-1 exit (ms)",
                "t-1 sys (ms)",
                "child exit (ms)",
                "child sys (ms)"
            ]
        );
        assert_eq!(rows[6].ratio(), Some(0.5));
        // a process the live run does not have gets no rows
        live.tasks.retain(|t| t["name"] != "child");
        assert_eq!(rows_len(&sim, &live), 5);
    }

    #[test]
    fn time_figures_outside_20_percent_name_their_largest_simulated_parts() {
        let task = |name: &str, sys_ms: u64, parts: serde_json::Value| {
            serde_json::json!({"name": name, "exit_ns": 1, "sys_ns": sys_ms * 1_000_000,
                               "time_breakdown_ns": parts})
            .as_object()
            .unwrap()
            .clone()
        };
        let mut sim = result("v6.18");
        let mut live = result("live-6.18.1");
        // "t" owns "t" and "t-1"; "child" is a fork no scenario task names
        sim.tasks = vec![
            task(
                "t",
                10,
                json!({"block_io": 6_000_000, "reclaim_scan": 3_000_000, "fault_entry": 1_000_000}),
            ),
            task(
                "t-1",
                10,
                json!({"block_io": 2_000_000, "compression": 8_000_000}),
            ),
            task(
                "child",
                5,
                json!({"zeroing": 5_000_000, "cpu_wait": 9_000_000}),
            ),
        ];
        live.tasks = vec![
            task("t", 10, json!({})),
            task("t-1", 16, json!({})),
            task("child", 5, json!({})),
        ];
        // run time 2 ms both; t's sys 20 against 26 (0.77): t's and t-1's parts, summed
        let rows = rows(&scenario(), &sim, &live);
        assert_eq!(
            time_figures(&scenario(), &sim, &rows),
            "time figures (run time, sys) within 20% of the live median: 2 of 4; outside (sim / \
             median): t sys 0.77 (simulated: block_io 40%, compression 40%, reclaim_scan 15%), \
             t-1 sys 0.62 (simulated: compression 80%, block_io 20%)\n"
        );
        // a process's own parts only; waiting for a CPU is not a part of its time
        live.tasks[2] = task("child", 10, json!({}));
        let rows = super::rows(&scenario(), &sim, &live);
        assert!(time_figures(&scenario(), &sim, &rows)
            .contains("child sys 0.50 (simulated: zeroing 100%)"));
    }

    fn labels(rows: &[Row]) -> Vec<&str> {
        rows.iter().map(|r| r.label.as_str()).collect()
    }

    fn rows_len(sim: &RunResult, live: &RunResult) -> usize {
        rows(&scenario(), sim, live).len()
    }

    #[test]
    fn several_live_runs_give_the_median_and_range_and_judge_against_both() {
        let sim = {
            let mut r = result("v6.18");
            r.vmstat.insert("pswpout".into(), 130);
            r.vmstat.insert("pswpin".into(), 50);
            r
        };
        let lives: Vec<RunResult> = [(100, 80), (120, 90), (200, 100)]
            .into_iter()
            .map(|(out, inn)| {
                let mut r = result("live-6.18.1");
                r.vmstat.insert("pswpout".into(), out);
                r.vmstat.insert("pswpin".into(), inn);
                r
            })
            .collect();
        let lives: Vec<&RunResult> = lives.iter().collect();
        let rows = rows_against(&scenario(), &sim, &lives);
        let pswpout = rows.iter().find(|r| r.label == "pswpout").unwrap();
        // median 120, range 100-200: 130 is 8% off the median and inside the range
        assert_eq!(
            (pswpout.live, pswpout.live_range),
            (120.0, Some((100.0, 200.0)))
        );
        assert!(pswpout.matches());
        let pswpin = rows.iter().find(|r| r.label == "pswpin").unwrap();
        assert_eq!(pswpin.live, 90.0);
        assert!(
            !pswpin.matches(),
            "50 is below 80-100 and 44% off the median"
        );
        let d = differences(&rows);
        assert!(d.contains("outside (sim vs median): pswpin -44.4%"), "{d}");
        assert!(render("v6.18", "live", &rows).contains("100-200"));
        // a run alone is compared as before: no range
        assert_eq!(
            rows_against(&scenario(), &sim, &lives[..1])[1].live_range,
            None
        );
        // live counters the simulator has no name for are listed
        let mut extra = result("live-6.18.1");
        extra.vmstat.insert("zswpout".into(), 3);
        extra.vmstat.insert("compact_stall".into(), 0);
        assert_eq!(not_modelled(&sim, &[&extra]), vec!["zswpout"]);
    }

    /// A program replayed at its native speed is simulated at the speed its live runs' native
    /// runs had: each variant at their median, each paired run at its own live run's.
    #[test]
    fn traced_programs_are_simulated_at_the_native_speed_measured_beside_their_live_runs() {
        use foliosim::trace::{Header, TraceWriter};
        let dir = tempfile::tempdir().unwrap();
        let header = Header {
            page_size_bytes: 4096,
            native_user_ns: 500,
            instructions: 1000,
            ..Default::default()
        };
        let file = std::fs::File::create(dir.path().join("app.trace")).unwrap();
        TraceWriter::new(file, &header).unwrap().finish().unwrap();
        let toml = dir.path().join("s.toml");
        std::fs::write(
            &toml,
            "name = \"s\"\n[machine]\n[[machine.node]]\nmemory = \"1G\"\ncpus = 1\n[[task]]\n\
             name = \"app\"\ntrace = \"app.trace\"\nuser_time = \"native\"\n\
             command = [\"/bin/true\"]\n",
        )
        .unwrap();
        let traced = Scenario::load(&toml).unwrap();
        assert!(retimed_live(&traced));
        assert!(!retimed_live(&scenario()), "ops are not retimed");
        let spec =
            foliosim::scenario::parse::resolve(&traced, "v6.18", None, &[], 1, false).unwrap();
        let live = |ns: u64| LiveRun {
            result: result("live-6.18.1"),
            info: json!({ "native_user_ns": { "app": ns } }),
        };
        let lives = [live(300), live(100), live(200)];
        let mut median = spec.clone();
        retime_native(&mut median, &lives.iter().collect::<Vec<_>>());
        assert_eq!(median.knobs.native_user_ns, [("app".to_string(), 200)]);
        let repetitions: Vec<Vec<LiveRun>> = lives.into_iter().map(|l| vec![l]).collect();
        let (paired, _) = paired_specs(&[spec], &repetitions);
        let each: Vec<u64> = paired.iter().map(|s| s.knobs.native_user_ns[0].1).collect();
        assert_eq!(each, [300, 100, 200]);
    }

    #[test]
    fn paired_runs_play_each_live_phase_and_give_both_medians_and_ranges() {
        let live = |out: u64, first_us: Option<u64>| {
            let mut result = result("live-6.18.1");
            result.vmstat.insert("pswpout".into(), out);
            let info = match first_us {
                Some(us) => json!({ "memcg_stats_flush_first_us": us }),
                None => json!({ "memcg_stats_flushes_not_recorded": "no tracefs" }),
            };
            LiveRun { result, info }
        };
        let spec =
            foliosim::scenario::parse::resolve(&scenario(), "v6.18", None, &[], 1, false).unwrap();
        // two repetitions of one variant; the second recorded no phase
        let repetitions = vec![vec![live(100, Some(250_000))], vec![live(300, None)]];
        let (specs, unrecorded) = paired_specs(&[spec.clone()], &repetitions);
        let phases: Vec<Option<u64>> = specs
            .iter()
            .map(|s| s.knobs.memcg_stats_flush_first_us)
            .collect();
        assert_eq!(
            phases,
            vec![Some(250_000), spec.knobs.memcg_stats_flush_first_us]
        );
        assert_eq!(unrecorded, vec!["live-6.18.1/64K"]);
        assert!(paired_note(2, &unrecorded).contains("1 live runs recorded no flusher phase"));
        // three pairs: each side's median and min-max
        let sim = |out: u64| {
            let mut r = result("v6.18");
            r.vmstat.insert("pswpout".into(), out);
            r
        };
        let sims = [sim(90), sim(330), sim(200)];
        let lives = [live(100, None), live(300, None), live(210, None)];
        let pairs: Vec<(&RunResult, &RunResult)> =
            sims.iter().zip(lives.iter().map(|l| &l.result)).collect();
        let rows = rows_paired(&scenario(), &pairs);
        let pswpout = rows.iter().find(|r| r.label == "pswpout").unwrap();
        assert_eq!(
            (
                pswpout.sim,
                pswpout.sim_range,
                pswpout.live,
                pswpout.live_range
            ),
            (200.0, Some((90.0, 330.0)), 210.0, Some((100.0, 300.0)))
        );
        assert!(pswpout.matches());
        let text = render("v6.18/64K", "live-6.18.1/64K", &rows);
        let header = text.lines().next().unwrap();
        assert!(
            header.contains("v6.18/64K median  sim min-max  live-6.18.1/64K median  live min-max"),
            "{text}"
        );
        assert!(text.contains(" 90-330 "), "{text}");
        assert!(differences(&rows).starts_with("simulated medians within 10%"));
        // unpaired, the one simulated run has no range
        let lives: Vec<&RunResult> = pairs.iter().map(|p| p.1).collect();
        let one = rows_against(&scenario(), &sims[0], &lives);
        assert!(one.iter().all(|r| r.sim_range.is_none()));
        assert_eq!(one.iter().find(|r| r.label == "pswpout").unwrap().sim, 90.0);
    }

    #[test]
    fn iteration_means_skip_nulls_and_can_start_later() {
        let mut r = result("v6.18");
        for pct in [json!(50.0), json!(null), json!(10.0), json!(20.0)] {
            let mut m = serde_json::Map::new();
            m.insert("fallback_pct".into(), pct);
            r.iterations.push(m);
        }
        assert_eq!(iteration_mean(&r, "fallback_pct", 1), Some(80.0 / 3.0));
        assert_eq!(iteration_mean(&r, "fallback_pct", 2), Some(15.0));
        assert_eq!(iteration_mean(&r, "swpout_inc", 1), None);
    }

    #[test]
    fn ratio_column_marks_equal_counters() {
        let rows = vec![
            Row::count("pswpout".into(), 131072, 131072),
            Row::count("pswpin".into(), 5, 0),
        ];
        let text = render("v6.18/4K", "live-6.18/4K", &rows);
        assert!(text.contains("1.000 ="), "{text}");
        assert!(
            text.lines().nth(2).unwrap().trim_end().ends_with('-'),
            "{text}"
        );
        assert!(differences(&rows).contains("pswpin 5 vs 0"));
        // the ratios' decimal points line up whether or not an `=` follows
        assert_eq!(
            text,
            "         v6.18/4K  live-6.18/4K  sim/live\n\
             pswpout    131072        131072   1.000 =\n\
             pswpin          5             0       -\n"
        );
    }
}
