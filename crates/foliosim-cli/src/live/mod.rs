//! Live runs: a resolved scenario run played by the kernel-bench programs on the running kernel,
//! with the same counters read back (/proc/vmstat deltas, hugepages-<size>/stats deltas, zram
//! mm_stat, the run's memory cgroups) into the same result shape as a simulated run.
//!
//! A run owns what it makes and nothing else: knob writes are recorded before they happen and
//! undone afterwards, zram devices are added (or idle ones claimed) and removed, cgroups are
//! created beside or below this process's own and removed. Cleanup runs on success, on failure,
//! on SIGINT/SIGTERM/SIGHUP, and when a session is dropped early (see `session`).
//!
//! Swap devices: zram is zram. A brd RAM disk is played by a zram device of the same size (both
//! are synchronous RAM-backed block devices; zram compresses, brd does not, which changes memory
//! use but not the swap paths; `validate` simulates them as zram too). SSD, HDD and swap-file devices are refused: this runner has no
//! disk to spare for them.
//!
//! One run, in order: `preflight` (checks before any change, once for all runs), `setup` (on a VM,
//! free page reporting held off and the run's memory touched once, see `page_reporting`; knobs,
//! swap, cgroups), `stats_flush` (recording when the memcg statistics flusher runs), `warm` (the
//! page cache a trace task's `warm_files` starts with, the other files it names dropped), `play`
//! (the programs), `figures` (what is read back), `native` (a traced program's native speed, timed
//! after its live run); `session` undoes.

pub mod bench;
pub mod cgroup;
mod figures;
pub mod knobs;
pub(crate) mod native;
pub(crate) mod page_reporting;
mod play;
mod preflight;
pub mod session;
mod setup;
pub mod signal;
mod stats_flush;
pub mod sys;
pub mod tmpfs;
mod warm;
pub mod zram;

use std::collections::BTreeMap;
use std::path::PathBuf;

use foliosim::scenario::{Counters, Op, Program, RunSpec, SwapKind};
use foliosim::RunResult;
use serde_json::{json, Map, Value};

use cgroup::{Hierarchy, Version};
use figures::{task_figures, Snapshot};
use session::Session;
use setup::set_up;

pub use figures::iteration_figures;
pub use preflight::preflight;

/// Why a live run did not produce a result.
#[derive(Debug)]
pub enum LiveError {
    /// This machine or kernel cannot play the scenario (not root, no zram, a build option, ...).
    Unsupported(String),
    /// Setting up, running or cleaning up failed.
    Failed(String),
    /// A signal stopped the run; everything was undone.
    Interrupted(i32),
    /// Cleanup could not undo everything: the machine is not as it was (what is left is named).
    Dirty(String),
}

/// What every live run on this machine shares, found before anything is changed.
pub struct Host {
    pub release: String,
    pub hierarchy: Hierarchy,
    /// The built kernel-bench programs.
    pub bin: PathBuf,
    pub cpus: u32,
    pub memory_bytes: u64,
    /// CONFIG_THP_SWAP of this kernel, if its configuration can be read.
    pub thp_swap: Option<bool>,
    /// Each node's memory and page cache before the runs (validate plays them in the
    /// simulator).
    pub meminfo: Vec<sys::NodeMeminfo>,
    /// /proc/loadavg's 1-, 5- and 15-minute load averages before the runs: other work on the
    /// machine's CPUs stretches the live runs' timeline (docs/fidelity.md).
    pub loadavg: Option<String>,
}

/// Whether a run swaps to swap files on ext4 rather than to zram devices: a run that needs
/// CONFIG_THP_SWAP=n on a kernel that may have it. The kernel gives a swap file no large swap
/// entries, so reclaim splits every large folio before swap-out, the path CONFIG_THP_SWAP=n takes.
pub(super) fn plays_with_swap_files(run_thp_swap: bool, kernel_thp_swap: Option<bool>) -> bool {
    !run_thp_swap && kernel_thp_swap != Some(false)
}

impl Host {
    /// The profile name live results carry.
    pub fn profile(&self) -> String {
        format!("live-{}", self.release)
    }
}

pub(super) fn unsupported(message: impl Into<String>) -> LiveError {
    LiveError::Unsupported(message.into())
}

pub(super) fn read_knob(path: &str) -> Option<String> {
    sys::read(path).map(|t| sys::knob_value(&t))
}

pub(super) fn kind_name(kind: SwapKind) -> String {
    format!("{kind:?}").to_lowercase()
}

/// The shmem levels a run with shmem reports (stats/report.rs does likewise).
const SHMEM_LEVELS: [&str; 2] = ["nr_shmem", "nr_shmem_hugepages"];

/// Whether a scenario has shmem: a tmpfs file, or shared anonymous memory in a task's ops.
fn has_shmem(scenario: &foliosim::Scenario) -> bool {
    fn maps_shared(ops: &[Op]) -> bool {
        ops.iter().any(|op| match op {
            Op::MmapShared { .. } => true,
            Op::Fork { child, .. } => maps_shared(child),
            _ => false,
        })
    }
    scenario.files.iter().any(|f| f.tmpfs.is_some())
        || scenario
            .tasks
            .iter()
            .any(|t| matches!(&t.program, Program::Ops(ops) if maps_shared(ops)))
}

/// A live result and the notes on how it was made (devices, cgroups, knobs written).
pub struct LiveRun {
    pub result: RunResult,
    pub info: Value,
}

/// Plays one resolved run, then undoes everything it did, whatever happened.
pub fn run(host: &Host, spec: &RunSpec, serial: u32) -> Result<LiveRun, LiveError> {
    let mut session = Session::new();
    let outcome = run_in(host, spec, serial, &mut session);
    let cleanup = session.cleanup();
    match (outcome, cleanup) {
        (outcome, Err(errors)) => {
            let before = match outcome {
                Err(LiveError::Failed(m) | LiveError::Unsupported(m) | LiveError::Dirty(m)) => {
                    format!("{m}; ")
                }
                Err(LiveError::Interrupted(sig)) => {
                    format!("interrupted by {}; ", signal::name(sig))
                }
                Ok(_) => String::new(),
            };
            Err(LiveError::Dirty(format!(
                "{before}cleanup could not undo: {}",
                errors.join("; ")
            )))
        }
        (outcome, Ok(())) => outcome,
    }
}

pub(super) fn check_signal() -> Result<(), LiveError> {
    match signal::pending() {
        Some(sig) => Err(LiveError::Interrupted(sig)),
        None => Ok(()),
    }
}

fn run_in(
    host: &Host,
    spec: &RunSpec,
    serial: u32,
    session: &mut Session,
) -> Result<LiveRun, LiveError> {
    let setup = set_up(host, spec, serial, session)?;
    let flush_recorder = stats_flush::start(session, serial);
    check_signal()?;
    let (warmed, dropped) = warm::prepare_page_cache(spec)?;
    check_signal()?;
    let zram_before: Vec<Counters> = setup.devices.iter().map(|(_, z)| z.mm_stat()).collect();
    let reported_kib_before = setup.page_reporting.as_ref().and_then(|h| h.reported_kib());
    let before = Snapshot::take();
    let played = play::play(host, spec, &setup, &before, &zram_before)?;
    let after = Snapshot::take();
    let reported_kib_after = setup.page_reporting.as_ref().and_then(|h| h.reported_kib());
    let zram_after: Vec<Counters> = setup.devices.iter().map(|(_, z)| z.mm_stat()).collect();
    let memcg: BTreeMap<String, Counters> = setup
        .cgroups
        .iter()
        .map(|(name, dir)| (name.clone(), host.hierarchy.stats(dir)))
        .collect();
    let tasks = task_figures(&played.running, &played.records, &host.hierarchy)?;
    let iterations = played
        .records
        .iter()
        .filter(|(_, _, r)| r.kind == "iteration")
        .map(|(_, _, r)| iteration_figures(r))
        .collect();
    let mut vmstat: Counters = sys::delta(&before.vmstat, &after.vmstat)
        .into_iter()
        .filter(|(k, _)| !sys::is_vmstat_level(k))
        .collect();
    // the shmem the run leaves (its tmpfs files, still mounted), as the simulator reports it: a
    // level at the end, here what it rose by over the run (the machine's own shmem is not ours)
    if has_shmem(&spec.scenario) {
        for level in SHMEM_LEVELS {
            let level_of = |c: &Counters| c.get(level).copied().unwrap_or(0);
            let rise = level_of(&after.vmstat).saturating_sub(level_of(&before.vmstat));
            vmstat.insert(level.to_string(), rise);
        }
    }
    let empty = Counters::new();
    let mthp = after
        .mthp
        .iter()
        .map(|(size, c)| {
            let b = before.mthp.get(size).unwrap_or(&empty);
            (size.clone(), sys::delta(b, c))
        })
        .collect();
    // levels (the mkswap header, the allocator's own pages) are reported as what the run added
    let zram_delta: Vec<Counters> = zram_before
        .iter()
        .zip(&zram_after)
        .map(|(b, a)| {
            let mut c = sys::delta(b, a);
            let stored = c.get("orig_data_size").copied().unwrap_or(0) / 4096;
            c.insert("pages_stored".into(), stored);
            c
        })
        .collect();
    // the programs have exited, so what zram still holds is someone else's: pages that DAMON
    // or global reclaim swapped out to the run's device, counted in its swap counters
    let mut swap_info = setup.swap_info.clone();
    for (info, c) in swap_info.iter_mut().zip(&zram_delta) {
        info["pages_left_at_end"] = json!(c["pages_stored"]);
    }
    let zram = setup
        .devices
        .iter()
        .map(|(name, _)| name.clone())
        .zip(zram_delta)
        .collect();
    let knobs_written: Map<String, Value> = setup
        .changes
        .iter()
        .map(|c| (c.path.clone(), json!(c.value)))
        .collect();
    let mut info = json!({
        "kernel": host.release,
        "cpus": host.cpus,
        "memory_bytes": host.memory_bytes,
        "cgroup": match host.hierarchy.version { Version::V1 => "v1", Version::V2 => "v2" },
        "cgroup_parent": host.hierarchy.parent.display().to_string(),
        "swap": swap_info,
        "knobs_written": knobs_written,
        "elapsed_ns": played.elapsed_ns,
    });
    // a note on the run, not a figure of it: what cannot be recorded is said, not fatal
    match flush_recorder.and_then(|r| r.flushes_us(played.start_mono_ns)) {
        Ok(flushes) => {
            if let Some(first) = stats_flush::first_flush_us(&flushes) {
                info["memcg_stats_flush_first_us"] = json!(first);
            }
            info["memcg_stats_flushes_us"] = json!(flushes);
        }
        Err(why) => info["memcg_stats_flushes_not_recorded"] = json!(why),
    }
    if let Some(hold) = &setup.page_reporting {
        let reported = reported_kib_before
            .zip(reported_kib_after)
            .map(|(b, a)| a.saturating_sub(b));
        info["page_reporting"] = hold.notes(reported);
    }
    if let Some(prefault) = &setup.prefault {
        info["prefault"] = prefault.clone();
    }
    if let Some(warmed) = warmed {
        info["warm_files"] = warmed;
    }
    if let Some(dropped) = dropped {
        info["cold_files_dropped"] = dropped;
    }
    if !setup.tmpfs_info.is_empty() {
        info["tmpfs"] = json!(setup.tmpfs_info);
    }
    // after every figure is read: the native runs are not the run's
    native::time_native_runs(spec, &mut info)?;
    Ok(LiveRun {
        result: RunResult {
            profile: host.profile(),
            variant: spec.variant.clone(),
            seed: spec.seed,
            sim_time_ns: played.elapsed_ns,
            vmstat,
            mthp,
            memcg,
            zram,
            zswap: if spec.knobs.zswap_enabled {
                Snapshot::zswap_delta(&before, &after)
            } else {
                Counters::new()
            },
            tasks,
            iterations,
            series: played.series.cols,
            series_interval_ns: None,
        },
        info,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use foliosim::Scenario;

    fn scenario(files: &str, ops: &str) -> Scenario {
        Scenario::parse_str(
            &format!(
                "name = \"t\"\n[machine]\n[[machine.node]]\nmemory = \"1G\"\ncpus = 1\n{files}\n\
                 [[task]]\nname = \"t\"\nops = [{ops}]\n"
            ),
            "t.toml",
        )
        .unwrap()
    }

    #[test]
    fn a_run_has_shmem_with_a_tmpfs_file_or_shared_anonymous_memory_anywhere() {
        let disk = "[[file]]\nname = \"f\"\nsize = \"1M\"\n";
        let tmpfs = "[[file]]\nname = \"f\"\nsize = \"1M\"\nfs = \"tmpfs\"\n";
        let private = r#"{ op = "mmap", region = "a", size = "4K" }"#;
        let shared_in_child = r#"{ op = "fork", name = "c", ops = [
            { op = "mmap", region = "a", size = "4K", shared = true } ] }"#;
        assert!(!has_shmem(&scenario(disk, private)));
        assert!(has_shmem(&scenario(tmpfs, private)));
        assert!(has_shmem(&scenario("", shared_in_child)));
    }
}
