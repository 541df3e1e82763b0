//! What a live run reads back from the kernel, in the simulator's result shape: counter
//! snapshots, the sampled time series, and the programs' task and iteration figures.

use std::collections::BTreeMap;

use foliosim::scenario::Counters;
use serde_json::{json, Map, Value};

use super::bench::Record;
use super::cgroup::Hierarchy;
use super::play::Running;
use super::setup::Setup;
use super::{signal, sys, LiveError};

/// Counters of the whole machine at one moment.
pub(super) struct Snapshot {
    pub(super) vmstat: Counters,
    pub(super) mthp: BTreeMap<String, Counters>,
    /// zswap's debugfs figures, when debugfs is mounted.
    pub(super) zswap: Counters,
}

impl Snapshot {
    pub(super) fn take() -> Snapshot {
        let mut vmstat = sys::parse_name_values(&sys::read("/proc/vmstat").unwrap_or_default());
        // without CONFIG_DEBUG_TLBFLUSH /proc/vmstat has no nr_tlb_*; the flush IPIs each CPU
        // received are still in /proc/interrupts (irq_tlb_count, counted where the kernel
        // counts NR_TLB_REMOTE_FLUSH_RECEIVED)
        if !vmstat.contains_key("nr_tlb_remote_flush_received") {
            if let Some(n) = sys::read("/proc/interrupts").and_then(|t| sys::tlb_shootdowns(&t)) {
                vmstat.insert("nr_tlb_remote_flush_received".into(), n);
            }
        }
        Snapshot {
            vmstat,
            mthp: sys::read_mthp_stats(),
            zswap: sys::read_zswap_debugfs(),
        }
    }

    /// zswap's figures over a run: levels as they are at the end, events as the run's deltas.
    pub(super) fn zswap_delta(before: &Snapshot, after: &Snapshot) -> Counters {
        let mut c = sys::delta(&before.zswap, &after.zswap);
        for level in sys::ZSWAP_LEVELS {
            if let Some(&v) = after.zswap.get(*level) {
                c.insert(level.to_string(), v);
            }
        }
        c
    }
}

/// The tool's figures for one iteration, as the simulator reports them: fallback_pct rounded
/// to two decimals, null when nothing was swapped out.
pub fn iteration_figures(r: &Record) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("time_ns".into(), json!(r.number("time_ns").unwrap_or(0)));
    if let (Some(swpout), Some(fallback)) = (r.number("swpout_inc"), r.number("fallback_inc")) {
        m.insert("swpout_inc".into(), json!(swpout));
        m.insert("fallback_inc".into(), json!(fallback));
        let pct = (swpout + fallback > 0)
            .then(|| (fallback as f64 * 10_000.0 / (swpout + fallback) as f64).round() / 100.0);
        m.insert("fallback_pct".into(), json!(pct));
    }
    m
}

/// Per-task figures from the programs' `task` records; a process killed by a signal was
/// OOM-killed if its cgroup counted an OOM kill, and otherwise the run failed.
pub(super) fn task_figures(
    running: &[Running],
    records: &[(u64, usize, Record)],
    hierarchy: &Hierarchy,
) -> Result<Vec<Map<String, Value>>, LiveError> {
    let mut tasks: Vec<(usize, Map<String, Value>)> = Vec::new();
    let killed = |index: usize, name: &str, sig: i32| -> Result<(), LiveError> {
        if hierarchy.oom_kills(&running[index].cgroup) > 0 {
            Ok(())
        } else {
            Err(LiveError::Failed(format!(
                "task {name} was killed by signal {sig} ({}) without an OOM kill in its cgroup",
                signal::name(sig)
            )))
        }
    };
    for (t_ns, index, r) in records.iter().filter(|(_, _, r)| r.kind == "task") {
        let name = r.get("name").unwrap_or("").to_string();
        let mut m = Map::new();
        m.insert("name".into(), json!(name));
        m.insert("exit_ns".into(), json!(t_ns));
        let mut oom_killed = false;
        if let Some(sig) = r.number("killed_by") {
            killed(*index, &name, sig as i32)?;
            oom_killed = true;
        }
        m.insert("oom_killed".into(), json!(oom_killed));
        for (k, v) in &r.fields {
            if k != "name" && k != "killed_by" {
                if let Ok(v) = v.parse::<u64>() {
                    m.insert(k.clone(), json!(v));
                }
            }
        }
        tasks.push((running[*index].launch.task, m));
    }
    for (index, r) in running.iter().enumerate() {
        let Some((status, t_ns)) = r.exit else {
            continue;
        };
        let name = r.launch.name.clone();
        if status.success() {
            // a task's command prints no task record: its exit is its figure
            if !r.launch.prints_records {
                let mut m = Map::new();
                m.insert("name".into(), json!(name));
                m.insert("exit_ns".into(), json!(t_ns));
                m.insert("oom_killed".into(), json!(false));
                insert_cpu_ns(&mut m, r.cpu_ns);
                tasks.push((r.launch.task, m));
            }
            continue;
        }
        match std::os::unix::process::ExitStatusExt::signal(&status) {
            Some(sig) => {
                killed(index, &name, sig)?;
                if !tasks.iter().any(|(_, m)| m["name"] == json!(name)) {
                    let mut m = Map::new();
                    m.insert("name".into(), json!(name));
                    m.insert("exit_ns".into(), json!(t_ns));
                    m.insert("oom_killed".into(), json!(true));
                    insert_cpu_ns(&mut m, r.cpu_ns);
                    tasks.push((r.launch.task, m));
                }
            }
            None => {
                return Err(LiveError::Failed(format!(
                    "task {name} ({}) exited with status {}",
                    r.launch.argv[0],
                    status.code().unwrap_or(-1)
                )))
            }
        }
    }
    // scenario task order, then the names' own order (usemem-2 before usemem-10)
    tasks.sort_by(|(a, ma), (b, mb)| {
        let key = |m: &Map<String, Value>| {
            let name = m["name"].as_str().unwrap_or("").to_string();
            let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
            let (stem, number) = name.split_at(name.len() - digits);
            (stem.to_string(), number.parse::<u64>().unwrap_or(0))
        };
        (a, key(ma)).cmp(&(b, key(mb)))
    });
    Ok(tasks.into_iter().map(|(_, m)| m).collect())
}

/// The simulator's time-series columns, sampled from the live kernel.
#[derive(Default)]
pub(super) struct Series {
    pub(super) cols: BTreeMap<String, Vec<u64>>,
}

const SERIES_VMSTAT: &[&str] = &[
    "pgfault",
    "pswpout",
    "pswpin",
    "pgscan_direct",
    "pgscan_kswapd",
    "oom_kill",
];

impl Series {
    pub(super) fn sample(
        &mut self,
        t_ns: u64,
        before: &Snapshot,
        setup: &Setup,
        zram_before: &[Counters],
        hierarchy: &Hierarchy,
    ) {
        let vmstat = sys::parse_name_values(&sys::read("/proc/vmstat").unwrap_or_default());
        let mut push = |name: String, v: u64| self.cols.entry(name).or_default().push(v);
        push("t_ns".into(), t_ns);
        push(
            "nr_free_pages".into(),
            vmstat.get("nr_free_pages").copied().unwrap_or(0),
        );
        for name in SERIES_VMSTAT {
            let v = vmstat.get(*name).copied().unwrap_or(0);
            push(
                name.to_string(),
                v.saturating_sub(before.vmstat.get(*name).copied().unwrap_or(0)),
            );
        }
        for (name, dir) in &setup.cgroups {
            push(
                format!("memcg:{name}:usage_pages"),
                hierarchy.usage_pages(dir),
            );
        }
        for ((name, z), b) in setup.devices.iter().zip(zram_before) {
            let used = z.mm_stat().get("mem_used_total").copied().unwrap_or(0);
            push(
                format!("zram:{name}:mem_used_total"),
                used.saturating_sub(b.get("mem_used_total").copied().unwrap_or(0)),
            );
        }
    }
}

/// A command's CPU time (wait4's user and system time), where its process was reaped with it.
fn insert_cpu_ns(m: &mut Map<String, Value>, cpu_ns: Option<(u64, u64)>) {
    if let Some((user_ns, sys_ns)) = cpu_ns {
        m.insert("user_ns".into(), json!(user_ns));
        m.insert("sys_ns".into(), json!(sys_ns));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::bench;

    #[test]
    fn iteration_figures_match_the_simulators_rounding() {
        let r = bench::parse_record("iteration time_ns=7 swpout_inc=32 fallback_inc=192").unwrap();
        let m = iteration_figures(&r);
        assert_eq!(m["fallback_pct"], json!(85.71));
        assert_eq!(m["swpout_inc"], json!(32));
        assert_eq!(m["time_ns"], json!(7));
        let none = bench::parse_record("iteration time_ns=7 swpout_inc=0 fallback_inc=0").unwrap();
        assert_eq!(iteration_figures(&none)["fallback_pct"], Value::Null);
        let time_only = bench::parse_record("iteration time_ns=9").unwrap();
        assert_eq!(iteration_figures(&time_only).len(), 1);
    }
}
