//! The checks before a live run changes anything: root, no swap already active, a memory cgroup
//! hierarchy, zram, tmpfs and the tools the runs need, each run's knobs and build options,
//! programs the runner can play; then the kernel-bench programs are built.

use std::path::PathBuf;

use foliosim::scenario::{RunSpec, SwapKind};

use super::{
    bench, cgroup, kind_name, knobs, plays_with_swap_files, read_knob, sys, unsupported, zram,
    Host, LiveError,
};

/// Everything that can be checked before a change: root, no foreign swap, a memory cgroup
/// hierarchy, zram and the swap tools when the runs swap, each run's knobs and build options,
/// programs the runner can play. Then builds the programs.
pub fn preflight(specs: &[RunSpec]) -> Result<Host, LiveError> {
    match sys::effective_uid() {
        Some(0) => {}
        _ => {
            return Err(unsupported(
                "kernel-run and validate need root: they write /sys and /proc knobs, add zram swap and create cgroups",
            ))
        }
    }
    let swaps = sys::active_swaps();
    if !swaps.is_empty() {
        return Err(unsupported(format!(
            "swap is already active ({}); a live run needs its own swap device to be the only one, \
             so that every swap counter is its own (swapoff the others first)",
            swaps.join(", ")
        )));
    }
    let hierarchy = cgroup::detect().map_err(unsupported)?;
    let (cpus, memory_bytes) = sys::machine();
    let mut need_zram = false;
    let mut need_ext4 = false;
    let mut need_tmpfs = false;
    let thp_swap = sys::kernel_config(knobs::THP_SWAP_OPTION);
    for spec in specs {
        let run = spec.variant.as_deref().unwrap_or("(no variant)");
        // a scenario for a bigger machine would push this one into global reclaim and OOM kills
        // of whatever else runs here: its cgroup limits assume the memory it describes
        let scenario_bytes = spec.scenario.machine.memory_bytes();
        if scenario_bytes > memory_bytes {
            return Err(unsupported(format!(
                "{run}: the scenario's machine has {} MiB, this one {} MiB",
                scenario_bytes >> 20,
                memory_bytes >> 20
            )));
        }
        for swap in &spec.scenario.swap {
            match swap.kind {
                SwapKind::Zram | SwapKind::Brd => need_zram = true,
                kind => {
                    return Err(unsupported(format!(
                        "{run}: swap device {} is {}; kernel-run plays zram and brd (as zram) only",
                        swap.name,
                        kind_name(kind)
                    )))
                }
            }
        }
        // memory.zswap.* exist on cgroup v2 only
        let zswap_limited = spec
            .scenario
            .cgroups
            .iter()
            .find(|cg| cg.zswap_max_bytes.is_some() || !cg.zswap_writeback);
        if let (Some(cg), cgroup::Version::V1) = (zswap_limited, hierarchy.version) {
            return Err(unsupported(format!(
                "{run}: cgroup {} sets memory.zswap.max or memory.zswap.writeback, which this \
                 machine's cgroup v1 memory controller does not have",
                cg.name
            )));
        }
        let changes = knobs::plan(&knobs::wanted(&spec.knobs), read_knob)
            .map_err(|e| unsupported(format!("{run}: {e}")))?;
        // a read-only /sys or /proc (a container) shows at open time, before anything is written
        for c in &changes {
            std::fs::OpenOptions::new()
                .write(true)
                .open(&c.path)
                .map_err(|e| unsupported(format!("{run}: cannot write {}: {e}", c.path)))?;
        }
        if spec.knobs.thp_swap && thp_swap == Some(false) {
            return Err(unsupported(format!(
                "{run}: the run needs {}=y, a build option; this kernel has n",
                knobs::THP_SWAP_OPTION
            )));
        }
        need_ext4 |= plays_with_swap_files(spec.knobs.thp_swap, thp_swap);
        need_tmpfs |= spec.scenario.files.iter().any(|f| f.tmpfs.is_some());
        for (index, task) in spec.scenario.tasks.iter().enumerate() {
            bench::launches(
                index,
                task,
                &spec.scenario.files,
                &PathBuf::new(),
                &std::env::temp_dir(),
                spec.seed,
            )
            .map_err(|e| unsupported(format!("task {}: {e}", task.name)))?;
        }
    }
    if need_zram {
        zram::check_available().map_err(unsupported)?;
        for tool in ["mkswap", "swapon", "swapoff"] {
            if sys::find_program(tool).is_none() {
                return Err(unsupported(format!("{tool} not found (util-linux)")));
            }
        }
        if need_ext4 {
            for tool in ["mkfs.ext4", "mount", "umount"] {
                if sys::find_program(tool).is_none() {
                    return Err(unsupported(format!(
                        "{tool} not found: a run that needs {}=n on this kernel swaps to a swap \
                         file on ext4",
                        knobs::THP_SWAP_OPTION
                    )));
                }
            }
        }
    }
    if need_tmpfs {
        let filesystems = sys::read("/proc/filesystems").unwrap_or_default();
        if !filesystems
            .lines()
            .any(|l| l.split_whitespace().last() == Some("tmpfs"))
        {
            return Err(unsupported(
                "the scenario has tmpfs files and this kernel has no tmpfs (/proc/filesystems)",
            ));
        }
        for tool in ["mount", "umount"] {
            if sys::find_program(tool).is_none() {
                return Err(unsupported(format!(
                    "{tool} not found: the run mounts a tmpfs for the scenario's tmpfs files"
                )));
            }
        }
    }
    for tool in ["make", "cc"] {
        if sys::find_program(tool).is_none() {
            return Err(unsupported(format!(
                "{tool} not found: it builds the kernel-bench programs"
            )));
        }
    }
    let bin = bench::build().map_err(LiveError::Failed)?;
    Ok(Host {
        release: sys::os_release(),
        hierarchy,
        bin,
        cpus,
        memory_bytes,
        thp_swap,
        meminfo: sys::node_meminfo(),
        loadavg: sys::read("/proc/loadavg")
            .map(|t| t.split_whitespace().take(3).collect::<Vec<_>>().join(" ")),
    })
}
