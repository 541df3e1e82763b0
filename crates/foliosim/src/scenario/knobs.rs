//! Kernel knobs, addressed by their sysfs/procfs paths, with the kernel's defaults.

/// `enabled` values of transparent_hugepage (top level: always/madvise/never; per size also inherit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThpEnabled {
    Always,
    Inherit,
    Madvise,
    Never,
}

/// `/sys/kernel/mm/transparent_hugepage/defrag`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThpDefrag {
    Always,
    Defer,
    DeferMadvise,
    Madvise,
    Never,
}

/// shmem's huge page policy: the `huge=` mount option of a tmpfs (never, always, within_size,
/// advise) and the top-level `shmem_enabled` knob, which adds deny and force and is the
/// policy of the internal mount behind shared anonymous memory (mm/shmem.c SHMEM_HUGE_*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShmemHuge {
    Never,
    Always,
    WithinSize,
    Advise,
    Deny,
    Force,
}

impl ShmemHuge {
    pub fn name(self) -> &'static str {
        match self {
            ShmemHuge::Never => "never",
            ShmemHuge::Always => "always",
            ShmemHuge::WithinSize => "within_size",
            ShmemHuge::Advise => "advise",
            ShmemHuge::Deny => "deny",
            ShmemHuge::Force => "force",
        }
    }
    /// Parses a value; `deny` and `force` only where `knob` (they are not mount options).
    pub fn parse(value: &str, knob: bool) -> Option<ShmemHuge> {
        Some(match value.trim() {
            "never" => ShmemHuge::Never,
            "always" => ShmemHuge::Always,
            "within_size" => ShmemHuge::WithinSize,
            "advise" => ShmemHuge::Advise,
            "deny" if knob => ShmemHuge::Deny,
            "force" if knob => ShmemHuge::Force,
            _ => return None,
        })
    }
}

const SHMEM_ENABLED_VALUES: &str = "always|within_size|advise|never|deny|force";

/// A size's `hugepages-<size>kB/shmem_enabled` (v6.11+): which large folios shared anonymous
/// memory may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MthpShmem {
    Always,
    Inherit,
    WithinSize,
    Advise,
    Never,
}

const MTHP_SHMEM_VALUES: &str = "always|inherit|within_size|advise|never";

impl MthpShmem {
    fn name(self) -> &'static str {
        match self {
            MthpShmem::Always => "always",
            MthpShmem::Inherit => "inherit",
            MthpShmem::WithinSize => "within_size",
            MthpShmem::Advise => "advise",
            MthpShmem::Never => "never",
        }
    }
    fn parse(value: &str) -> Option<MthpShmem> {
        Some(match value.trim() {
            "always" => MthpShmem::Always,
            "inherit" => MthpShmem::Inherit,
            "within_size" => MthpShmem::WithinSize,
            "advise" => MthpShmem::Advise,
            "never" => MthpShmem::Never,
            _ => return None,
        })
    }
}

pub const PMD_ORDER: usize = 9;
/// Anonymous mTHP orders that have a `hugepages-<size>kB` directory (order 1 is not allowed for anon).
pub const ANON_ORDERS: std::ops::RangeInclusive<usize> = 2..=PMD_ORDER;
/// File and shmem large-folio orders with a `hugepages-<size>kB` directory: 8 KiB too.
pub const SHMEM_ORDERS: std::ops::RangeInclusive<usize> = 1..=PMD_ORDER;

#[derive(Clone, Debug, PartialEq)]
pub struct Knobs {
    /// /sys/kernel/mm/transparent_hugepage/enabled (default always, CONFIG_TRANSPARENT_HUGEPAGE_ALWAYS).
    pub thp_enabled: ThpEnabled,
    /// /sys/kernel/mm/transparent_hugepage/defrag (default madvise).
    pub thp_defrag: ThpDefrag,
    /// /sys/kernel/mm/transparent_hugepage/hugepages-<4<<order>kB/enabled, indexed by order.
    /// Defaults: PMD order inherit, others never.
    pub mthp_enabled: [ThpEnabled; PMD_ORDER + 1],
    /// /sys/kernel/mm/transparent_hugepage/shmem_enabled (default never,
    /// CONFIG_TRANSPARENT_HUGEPAGE_SHMEM_HUGE_NEVER).
    pub shmem_enabled: ShmemHuge,
    /// /sys/kernel/mm/transparent_hugepage/hugepages-<4<<order>kB/shmem_enabled, indexed by
    /// order. Defaults: PMD order inherit, others never.
    pub mthp_shmem_enabled: [MthpShmem; PMD_ORDER + 1],
    /// /sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none (default 511).
    pub max_ptes_none: u32,
    /// /proc/sys/vm/min_free_kbytes; None = computed at boot as the kernel does.
    pub min_free_kbytes: Option<u64>,
    /// /proc/sys/vm/watermark_scale_factor (default 10, i.e. 0.1%).
    pub watermark_scale_factor: u32,
    /// /proc/sys/vm/swappiness (default 60).
    pub swappiness: u32,
    /// /proc/sys/vm/page-cluster (default 3).
    pub page_cluster: u32,
    /// /proc/sys/kernel/numa_balancing (default 0).
    pub numa_balancing: u32,
    /// /sys/kernel/mm/numa/demotion_enabled (default false).
    pub demotion_enabled: bool,
    /// CONFIG_THP_SWAP (default y): large folios can get swap space whole.
    pub thp_swap: bool,
    /// /sys/kernel/mm/transparent_hugepage/shrink_underused (default 1, v6.12+).
    pub shrink_underused: bool,
    /// /proc/sys/kernel/numa_balancing_promote_rate_limit_MBps (default 65536).
    pub promote_rate_limit_mbps: u64,
    /// debugfs sched/numa_balancing/scan_delay_ms (default 1000).
    pub numa_scan_delay_ms: u64,
    /// debugfs sched/numa_balancing/scan_period_min_ms (default 1000).
    pub numa_scan_period_min_ms: u64,
    /// debugfs sched/numa_balancing/scan_period_max_ms (default 60000).
    pub numa_scan_period_max_ms: u64,
    /// debugfs sched/numa_balancing/scan_size_mb (default 256).
    pub numa_scan_size_mb: u64,
    /// debugfs sched/numa_balancing/hot_threshold_ms (default 1000).
    pub numa_hot_threshold_ms: u64,
    /// swap_migration_ad_supported (a boot-time property, default 1): migration entries carry the
    /// young and dirty bits. It is 0 when the swap offset is too narrow for them, e.g. on x86
    /// CPUs whose L1TF mitigation limits swap offsets.
    pub swap_migration_ad_supported: bool,
    /// /sys/kernel/mm/numa/pagecache_promotion_enabled (`+pagecache_promotion`, default false).
    pub pagecache_promotion_enabled: bool,
    /// pagecache_promotion_task_cap (a model switch, not a kernel file; default 1): RFC v3's cap
    /// of a task's promotion list at promote_rate_limit pages per return to user mode. 0 plays
    /// v2, which had no cap.
    pub pagecache_promotion_task_cap: bool,
    /// /proc/sys/vm/dirty_ratio (default 20) and dirty_bytes (default 0; when set it is used
    /// instead, as writing one of the pair zeroes the other).
    pub dirty_ratio: u32,
    pub dirty_bytes: u64,
    /// /proc/sys/vm/dirty_background_ratio (default 10) and dirty_background_bytes (default 0).
    pub dirty_background_ratio: u32,
    pub dirty_background_bytes: u64,
    /// /proc/sys/vm/dirty_expire_centisecs (default 3000).
    pub dirty_expire_centisecs: u64,
    /// /proc/sys/vm/dirty_writeback_centisecs (default 500; 0 turns periodic writeback off).
    pub dirty_writeback_centisecs: u64,
    /// `memory.max` overrides: (cgroup name, None = max). A bare `memory.max` names every cgroup.
    pub memory_max: Vec<(Option<String>, Option<u64>)>,
    /// /sys/module/zswap/parameters/enabled (default N, CONFIG_ZSWAP_DEFAULT_ON=n).
    pub zswap_enabled: bool,
    /// /sys/module/zswap/parameters/compressor (default lzo, CONFIG_ZSWAP_COMPRESSOR_DEFAULT).
    pub zswap_compressor: ZswapCompressor,
    /// /sys/module/zswap/parameters/max_pool_percent (default 20): the pool's limit, in % of RAM.
    pub zswap_max_pool_percent: u32,
    /// /sys/module/zswap/parameters/accept_threshold_percent (default 90, of the pool limit):
    /// after the limit was hit, stores are refused until the pool is back below this.
    pub zswap_accept_threshold_percent: u32,
    /// /sys/module/zswap/parameters/shrinker_enabled (default N, CONFIG_ZSWAP_SHRINKER_DEFAULT_ON=n).
    pub zswap_shrinker_enabled: bool,
    /// memory_cgroup_v1 (a boot-time property, default 0): the memory controller is on the v1
    /// hierarchy, where zswap charges nothing to memcgs and memory.zswap.* do not exist.
    /// `foliosim validate` sets it from the host.
    pub memory_cgroup_v1: bool,
    /// zswap_enabled_since_boot (a boot-time property, default 0): zswap was enabled at some
    /// time since boot, so zswap_never_enabled() is false even with zswap off now, and large
    /// folios are swapped in page by page (v6.12+). `foliosim validate` sets it from the host.
    pub zswap_enabled_since_boot: bool,
    /// host_memcgs (a property of the machine, default 0): memory cgroups of the machine
    /// outside the scenario's (other services', and dying ones not yet freed), which zswap's
    /// shrink worker walks past (mm/zswap.rs). `foliosim validate` sets it from the host.
    pub host_memcgs: u32,
    /// host_memcgs_online (default 0): how many of those are online (the shrink worker calls
    /// shrink_memcg on them; the dying ones it only passes). `foliosim validate` sets it.
    pub host_memcgs_online: u32,
    /// memcg_stats_flush_first_us (a property of the run, default: drawn from the seed): when
    /// the memcg statistics flusher (flush_memcg_stats_dwork, every 2 s) first runs after the
    /// run starts, in µs. Reclaim and refault detection read the statistics as last flushed, so
    /// short runs under memcg pressure fall into different modes by this phase; `foliosim
    /// kernel-run` reports the live run's (`memcg_stats_flushes_us`), so a simulation can be
    /// given the live run's.
    pub memcg_stats_flush_first_us: Option<u64>,
    /// `<task>/native_user_ns` (a property of the run, default: the trace's header): the user
    /// time of a native run of the program a task replays with `user_time = "native"`, in ns.
    /// The host's speed drifts by tens of percent over hours, so `foliosim kernel-run` times
    /// the task's command natively beside each live run (`native_user_ns` in its notes), and a
    /// simulation given that time replays the program at the speed the live run had.
    pub native_user_ns: Vec<(String, u64)>,
}

/// The zswap compressors the model has costs and compressed sizes for (those of the zram
/// model, measured with lzo / lzo-rle; see machine/hw.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZswapCompressor {
    Lzo,
    LzoRle,
}

impl ZswapCompressor {
    pub fn name(self) -> &'static str {
        match self {
            ZswapCompressor::Lzo => "lzo",
            ZswapCompressor::LzoRle => "lzo-rle",
        }
    }
}

/// The zswap module parameters' directory.
pub const ZSWAP_PARAMETERS: &str = "/sys/module/zswap/parameters";
const ZSWAP_ENABLED: &str = "/sys/module/zswap/parameters/enabled";
const ZSWAP_COMPRESSOR: &str = "/sys/module/zswap/parameters/compressor";
const ZSWAP_MAX_POOL: &str = "/sys/module/zswap/parameters/max_pool_percent";
const ZSWAP_ACCEPT: &str = "/sys/module/zswap/parameters/accept_threshold_percent";
const ZSWAP_SHRINKER: &str = "/sys/module/zswap/parameters/shrinker_enabled";
/// The knob naming the host's cgroup version (not a file: never written live).
pub const MEMORY_CGROUP_V1: &str = "memory_cgroup_v1";
pub const ZSWAP_ENABLED_SINCE_BOOT: &str = "zswap_enabled_since_boot";
/// The knobs counting the host's other memory cgroups, and the online ones among them (not
/// files: never written live).
pub const HOST_MEMCGS: &str = "host_memcgs";
pub const HOST_MEMCGS_ONLINE: &str = "host_memcgs_online";
/// The knob placing the memcg statistics flusher's first run (not a file: never written live).
pub const MEMCG_STATS_FLUSH_FIRST_US: &str = "memcg_stats_flush_first_us";
/// The knobs that are properties of the host or the run rather than files: a live run never
/// writes them (`validate` and `kernel-run` read or report them instead).
pub const NOT_FILES: [&str; 5] = [
    MEMORY_CGROUP_V1,
    HOST_MEMCGS,
    HOST_MEMCGS_ONLINE,
    ZSWAP_ENABLED_SINCE_BOOT,
    MEMCG_STATS_FLUSH_FIRST_US,
];

/// A kernel bool parameter (param_set_bool: y/Y/1 or n/N/0).
fn parse_param_bool(value: &str) -> Option<bool> {
    match value.trim() {
        "Y" | "y" | "1" => Some(true),
        "N" | "n" | "0" => Some(false),
        _ => None,
    }
}

fn param_bool_name(b: bool) -> &'static str {
    if b {
        "Y"
    } else {
        "N"
    }
}

impl Default for Knobs {
    fn default() -> Self {
        let mut mthp_enabled = [ThpEnabled::Never; PMD_ORDER + 1];
        mthp_enabled[PMD_ORDER] = ThpEnabled::Inherit;
        let mut mthp_shmem_enabled = [MthpShmem::Never; PMD_ORDER + 1];
        mthp_shmem_enabled[PMD_ORDER] = MthpShmem::Inherit;
        Knobs {
            thp_enabled: ThpEnabled::Always,
            thp_defrag: ThpDefrag::Madvise,
            mthp_enabled,
            shmem_enabled: ShmemHuge::Never,
            mthp_shmem_enabled,
            max_ptes_none: 511,
            min_free_kbytes: None,
            watermark_scale_factor: 10,
            swappiness: 60,
            page_cluster: 3,
            numa_balancing: 0,
            demotion_enabled: false,
            thp_swap: true,
            shrink_underused: true,
            promote_rate_limit_mbps: 65536,
            numa_scan_delay_ms: 1000,
            numa_scan_period_min_ms: 1000,
            numa_scan_period_max_ms: 60000,
            numa_scan_size_mb: 256,
            numa_hot_threshold_ms: 1000,
            swap_migration_ad_supported: true,
            pagecache_promotion_enabled: false,
            pagecache_promotion_task_cap: true,
            dirty_ratio: 20,
            dirty_bytes: 0,
            dirty_background_ratio: 10,
            dirty_background_bytes: 0,
            dirty_expire_centisecs: 3000,
            dirty_writeback_centisecs: 500,
            memory_max: Vec::new(),
            native_user_ns: Vec::new(),
            zswap_enabled: false,
            zswap_compressor: ZswapCompressor::Lzo,
            zswap_max_pool_percent: 20,
            zswap_accept_threshold_percent: 90,
            zswap_shrinker_enabled: false,
            memory_cgroup_v1: false,
            zswap_enabled_since_boot: false,
            host_memcgs: 0,
            host_memcgs_online: 0,
            memcg_stats_flush_first_us: None,
        }
    }
}

/// Size name of an order as sysfs spells it: order 4 -> "64kB".
pub fn order_size_name(order: usize) -> String {
    format!("{}kB", 4usize << order)
}

const THP_DIR: &str = "/sys/kernel/mm/transparent_hugepage";

/// Sizes in kB of the `hugepages-<N>kB` directories, smallest first (order = log2(N / 4)); 8 KiB
/// has shmem_enabled only.
pub const MTHP_SIZES_KB: [u64; 9] = [8, 16, 32, 64, 128, 256, 512, 1024, 2048];

/// One entry of the knob table: the path, the values it accepts (for messages and `list`).
struct KnobInfo {
    path: &'static str,
    values: &'static str,
}

/// Every supported path except the per-size mTHP ones, which `knob_paths` expands.
const SCALAR_KNOBS: &[KnobInfo] = &[
    KnobInfo {
        path: "/sys/kernel/mm/transparent_hugepage/enabled",
        values: "always|madvise|never",
    },
    KnobInfo {
        path: "/sys/kernel/mm/transparent_hugepage/defrag",
        values: "always|defer|defer+madvise|madvise|never",
    },
    KnobInfo {
        path: "/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none",
        values: "0..=511",
    },
    KnobInfo {
        path: "/proc/sys/vm/min_free_kbytes",
        values: "an integer > 0",
    },
    KnobInfo {
        path: "/proc/sys/vm/watermark_scale_factor",
        values: "1..=3000",
    },
    KnobInfo {
        path: "/proc/sys/vm/swappiness",
        values: "0..=200",
    },
    KnobInfo {
        path: "/proc/sys/vm/dirty_ratio",
        values: "0..=100 (setting it zeroes dirty_bytes)",
    },
    KnobInfo {
        path: "/proc/sys/vm/dirty_bytes",
        values: "0 or a size >= 8K (a non-zero value zeroes dirty_ratio)",
    },
    KnobInfo {
        path: "/proc/sys/vm/dirty_background_ratio",
        values: "0..=100 (setting it zeroes dirty_background_bytes)",
    },
    KnobInfo {
        path: "/proc/sys/vm/dirty_background_bytes",
        values: "0 or a size (a non-zero value zeroes dirty_background_ratio)",
    },
    KnobInfo {
        path: "/proc/sys/vm/dirty_expire_centisecs",
        values: "0..=4294967295 (centiseconds)",
    },
    KnobInfo {
        path: "/proc/sys/vm/dirty_writeback_centisecs",
        values: "0..=4294967295 (centiseconds; 0 turns periodic writeback off)",
    },
    KnobInfo {
        path: "/proc/sys/vm/page-cluster",
        values: "0..=31",
    },
    KnobInfo {
        path: "/proc/sys/kernel/numa_balancing",
        values: "0..=3",
    },
    KnobInfo {
        path: "/sys/kernel/mm/numa/demotion_enabled",
        values: "true|false|1|0",
    },
    KnobInfo {
        path: "/sys/kernel/mm/transparent_hugepage/shrink_underused",
        values: "0|1",
    },
    KnobInfo {
        path: PROMOTE_RATE_LIMIT,
        values: "1..=1048576 (MB/s)",
    },
    KnobInfo {
        path: SCAN_DELAY,
        values: "1..=3600000 (ms)",
    },
    KnobInfo {
        path: SCAN_PERIOD_MIN,
        values: "1..=3600000 (ms)",
    },
    KnobInfo {
        path: SCAN_PERIOD_MAX,
        values: "1..=3600000 (ms)",
    },
    KnobInfo {
        path: SCAN_SIZE,
        values: "1..=1048576 (MB)",
    },
    KnobInfo {
        path: HOT_THRESHOLD,
        values: "1..=3600000 (ms)",
    },
    KnobInfo {
        path: "swap_migration_ad_supported",
        values: "0|1 (a boot-time property: migration entries keep the young and dirty bits)",
    },
    KnobInfo {
        path: PAGECACHE_PROMOTION,
        values: "true|false|1|0 (+pagecache_promotion)",
    },
    KnobInfo {
        path: "pagecache_promotion_task_cap",
        values: "0|1 (a model switch: 1 caps a task's promotion list as RFC v3 does, 0 plays v2's uncapped list)",
    },
    KnobInfo {
        path: ZSWAP_ENABLED,
        values: "Y|N",
    },
    KnobInfo {
        path: ZSWAP_COMPRESSOR,
        values: "lzo|lzo-rle (the compressors the model has costs for)",
    },
    KnobInfo {
        path: ZSWAP_MAX_POOL,
        values: "0..=100 (% of RAM)",
    },
    KnobInfo {
        path: ZSWAP_ACCEPT,
        values: "0..=100 (% of the pool limit)",
    },
    KnobInfo {
        path: ZSWAP_SHRINKER,
        values: "Y|N",
    },
    KnobInfo {
        path: ZSWAP_ENABLED_SINCE_BOOT,
        values: "0|1 (a boot-time property: 1 = zswap was on at some time since boot, so large folios are swapped in page by page)",
    },
    KnobInfo {
        path: HOST_MEMCGS,
        values: "0..65535 (a property of the machine: memory cgroups outside the scenario's, dying ones included, that zswap's shrink worker walks past)",
    },
    KnobInfo {
        path: HOST_MEMCGS_ONLINE,
        values: "0..65535 (a property of the machine: how many of host_memcgs are online, the rest dying)",
    },
    KnobInfo {
        path: MEMCG_STATS_FLUSH_FIRST_US,
        values: "µs after the run starts when the memcg statistics flusher first runs (a property of the run; kernel-run reports a live run's as memcg_stats_flush_first_us)",
    },
    KnobInfo {
        path: MEMORY_CGROUP_V1,
        values: "0|1 (a boot-time property: 1 = the memory controller on cgroup v1, where zswap is not charged to memcgs)",
    },
    KnobInfo {
        path: "CONFIG_THP_SWAP",
        values: "y|n (a build option: n splits large folios before swap-out)",
    },
];

const PAGECACHE_PROMOTION: &str = "/sys/kernel/mm/numa/pagecache_promotion_enabled";
const PROMOTE_RATE_LIMIT: &str = "/proc/sys/kernel/numa_balancing_promote_rate_limit_MBps";
const SCAN_DELAY: &str = "/sys/kernel/debug/sched/numa_balancing/scan_delay_ms";
const SCAN_PERIOD_MIN: &str = "/sys/kernel/debug/sched/numa_balancing/scan_period_min_ms";
const SCAN_PERIOD_MAX: &str = "/sys/kernel/debug/sched/numa_balancing/scan_period_max_ms";
const SCAN_SIZE: &str = "/sys/kernel/debug/sched/numa_balancing/scan_size_mb";
const HOT_THRESHOLD: &str = "/sys/kernel/debug/sched/numa_balancing/hot_threshold_ms";

const MTHP_VALUES: &str = "always|inherit|madvise|never";
const MEMORY_MAX_VALUES: &str = "a size such as 512M, or max";

/// The path of the per-size `enabled` knob of an order.
pub fn mthp_enabled_path(order: usize) -> String {
    format!("{THP_DIR}/hugepages-{}/enabled", order_size_name(order))
}

/// The path of the per-size `shmem_enabled` knob of an order.
pub fn mthp_shmem_enabled_path(order: usize) -> String {
    format!(
        "{THP_DIR}/hugepages-{}/shmem_enabled",
        order_size_name(order)
    )
}

const SHMEM_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/shmem_enabled";

/// The order of a `hugepages-<N>kB/enabled` path, if it is one of the supported sizes.
fn mthp_order_of_path(path: &str) -> Option<usize> {
    mthp_order_of_file(path, "enabled").filter(|o| ANON_ORDERS.contains(o))
}

/// The order of a `hugepages-<N>kB/shmem_enabled` path, if it is one of the supported sizes.
fn mthp_shmem_order_of_path(path: &str) -> Option<usize> {
    mthp_order_of_file(path, "shmem_enabled").filter(|o| SHMEM_ORDERS.contains(o))
}

fn mthp_order_of_file(path: &str, file: &str) -> Option<usize> {
    let size = path
        .strip_prefix(THP_DIR)?
        .strip_prefix("/hugepages-")?
        .strip_suffix(file)?
        .strip_suffix("kB/")?;
    let size_kb: u64 = size.parse().ok()?;
    if !MTHP_SIZES_KB.contains(&size_kb) {
        return None;
    }
    // size_kb = 4 << order
    Some((size_kb / 4).trailing_zeros() as usize)
}

/// Splits a memory.max path: `memory.max` -> Some(None), `bench/memory.max` -> Some(Some("bench")).
pub fn memory_max_cgroup(path: &str) -> Option<Option<&str>> {
    if path == "memory.max" {
        return Some(None);
    }
    let cgroup = path.strip_suffix("/memory.max")?;
    if cgroup.is_empty() || cgroup.contains('/') {
        return None;
    }
    Some(Some(cgroup))
}

/// The knob (`<task>/native_user_ns`) and generator parameter (workload/trace_replay.rs) that
/// re-time a trace replay with a native run's user time.
pub const NATIVE_USER_NS: &str = "native_user_ns";
pub const NOT_NATIVE_TIMED: &str = "expected a task replaying a trace with user_time = \"native\"";

/// The task of a `<task>/native_user_ns` path.
pub fn native_user_ns_task(path: &str) -> Option<&str> {
    let task = path.strip_suffix("/native_user_ns")?;
    (!task.is_empty() && !task.contains('/')).then_some(task)
}

pub const NATIVE_USER_NS_VALUES: &str = "a user time in ns, at least 1";

/// Every kernel path `Knobs::set` accepts (memory.max forms excluded), in table order.
pub fn knob_paths() -> Vec<String> {
    let mut paths: Vec<String> = SCALAR_KNOBS.iter().map(|k| k.path.to_string()).collect();
    // the per-size directories sit after the top-level `defrag` knob
    let at = 2;
    for (i, order) in ANON_ORDERS.enumerate() {
        paths.insert(at + i, mthp_enabled_path(order));
    }
    // then shmem's: the top-level knob and the per-size ones
    let at = at + ANON_ORDERS.count();
    paths.insert(at, SHMEM_ENABLED.to_string());
    for (i, order) in SHMEM_ORDERS.enumerate() {
        paths.insert(at + 1 + i, mthp_shmem_enabled_path(order));
    }
    paths
}

/// The knob table for `foliosim list`: (path, "accepted values (default D)").
pub fn knob_table() -> Vec<(String, String)> {
    let defaults = Knobs::default();
    let mut table: Vec<(String, String)> = knob_paths()
        .into_iter()
        .map(|path| {
            let values = accepted_values(&path).unwrap_or("");
            let default = defaults.get(&path).unwrap_or_default();
            (path, format!("{values} (default {default})"))
        })
        .collect();
    table.push((
        "memory.max".into(),
        format!("{MEMORY_MAX_VALUES}; sets every cgroup (default: the scenario's)"),
    ));
    table.push((
        "<cgroup>/memory.max".into(),
        format!("{MEMORY_MAX_VALUES}; sets one cgroup (default: the scenario's)"),
    ));
    table.push((
        "<task>/native_user_ns".into(),
        format!(
            "{NATIVE_USER_NS_VALUES}; the native user time of a task replaying a trace with \
             user_time = \"native\" (default: the trace's)"
        ),
    ));
    table
}

fn accepted_values(path: &str) -> Option<&'static str> {
    if mthp_order_of_path(path).is_some() {
        return Some(MTHP_VALUES);
    }
    if mthp_shmem_order_of_path(path).is_some() {
        return Some(MTHP_SHMEM_VALUES);
    }
    if path == SHMEM_ENABLED {
        return Some(SHMEM_ENABLED_VALUES);
    }
    if memory_max_cgroup(path).is_some() {
        return Some(MEMORY_MAX_VALUES);
    }
    SCALAR_KNOBS
        .iter()
        .find(|k| k.path == path)
        .map(|k| k.values)
}

/// Parses an integer in `min..=max`; the error names the range.
fn parse_in_range(value: &str, min: u64, max: u64, expected: &str) -> Result<u64, String> {
    match value.trim().parse::<u64>() {
        Ok(v) if (min..=max).contains(&v) => Ok(v),
        _ => Err(format!("expected {expected}, found {value:?}")),
    }
}

/// Parses a size in bytes (4096, 64K, 1G); the error names what the knob accepts.
fn parse_size_knob(value: &str, expected: &str) -> Result<u64, String> {
    super::units::parse_size(value).map_err(|_| format!("expected {expected}, found {value:?}"))
}

fn parse_thp_enabled(value: &str, allow_inherit: bool) -> Option<ThpEnabled> {
    match value.trim() {
        "always" => Some(ThpEnabled::Always),
        "inherit" if allow_inherit => Some(ThpEnabled::Inherit),
        "madvise" => Some(ThpEnabled::Madvise),
        "never" => Some(ThpEnabled::Never),
        _ => None,
    }
}

fn thp_enabled_name(e: ThpEnabled) -> &'static str {
    match e {
        ThpEnabled::Always => "always",
        ThpEnabled::Inherit => "inherit",
        ThpEnabled::Madvise => "madvise",
        ThpEnabled::Never => "never",
    }
}

fn thp_defrag_name(d: ThpDefrag) -> &'static str {
    match d {
        ThpDefrag::Always => "always",
        ThpDefrag::Defer => "defer",
        ThpDefrag::DeferMadvise => "defer+madvise",
        ThpDefrag::Madvise => "madvise",
        ThpDefrag::Never => "never",
    }
}

/// Parses a `memory.max` value: a size, or `max` for no limit.
pub fn parse_memory_max(value: &str) -> Result<Option<u64>, String> {
    let value = value.trim();
    if value == "max" {
        return Ok(None);
    }
    match super::units::parse_size(value) {
        Ok(0) => Err(format!(
            "expected a limit greater than 0 or max, found {value:?}"
        )),
        Ok(bytes) => Ok(Some(bytes)),
        Err(_) => Err(format!("expected {MEMORY_MAX_VALUES}, found {value:?}")),
    }
}

impl Knobs {
    /// Sets the knob at a kernel path, as writing `value` to that file would. The error says what
    /// was expected. `memory.max` forms are recorded in `memory_max`; whether the named cgroup exists
    /// is for the caller to check, since the knob table does not know the scenario.
    pub fn set(&mut self, path: &str, value: &str) -> Result<(), String> {
        if let Some(order) = mthp_order_of_path(path) {
            self.mthp_enabled[order] = parse_thp_enabled(value, true)
                .ok_or_else(|| format!("expected one of {MTHP_VALUES}, found {value:?}"))?;
            return Ok(());
        }
        if let Some(order) = mthp_shmem_order_of_path(path) {
            self.mthp_shmem_enabled[order] = MthpShmem::parse(value)
                .ok_or_else(|| format!("expected one of {MTHP_SHMEM_VALUES}, found {value:?}"))?;
            return Ok(());
        }
        if path == SHMEM_ENABLED {
            self.shmem_enabled = ShmemHuge::parse(value, true).ok_or_else(|| {
                format!("expected one of {SHMEM_ENABLED_VALUES}, found {value:?}")
            })?;
            return Ok(());
        }
        if let Some(cgroup) = memory_max_cgroup(path) {
            let limit = parse_memory_max(value)?;
            match cgroup {
                // a bare memory.max replaces every earlier setting
                None => self.memory_max.clear(),
                Some(name) => self.memory_max.retain(|(c, _)| c.as_deref() != Some(name)),
            }
            self.memory_max.push((cgroup.map(str::to_string), limit));
            return Ok(());
        }
        if let Some(task) = native_user_ns_task(path) {
            let ns = value
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|ns| *ns > 0)
                .ok_or_else(|| format!("expected {NATIVE_USER_NS_VALUES}, found {value:?}"))?;
            self.native_user_ns.retain(|(t, _)| t != task);
            self.native_user_ns.push((task.to_string(), ns));
            return Ok(());
        }
        let Some(info) = SCALAR_KNOBS.iter().find(|k| k.path == path) else {
            return Err(unknown_knob_message(path));
        };
        let expected = info.values;
        let bad = || format!("expected one of {expected}, found {value:?}");
        match path {
            "/sys/kernel/mm/transparent_hugepage/enabled" => {
                self.thp_enabled = parse_thp_enabled(value, false).ok_or_else(bad)?;
            }
            "/sys/kernel/mm/transparent_hugepage/defrag" => {
                self.thp_defrag = match value.trim() {
                    "always" => ThpDefrag::Always,
                    "defer" => ThpDefrag::Defer,
                    "defer+madvise" => ThpDefrag::DeferMadvise,
                    "madvise" => ThpDefrag::Madvise,
                    "never" => ThpDefrag::Never,
                    _ => return Err(bad()),
                };
            }
            "/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none" => {
                self.max_ptes_none = parse_in_range(value, 0, 511, expected)? as u32;
            }
            "/proc/sys/vm/min_free_kbytes" => {
                self.min_free_kbytes = Some(parse_in_range(value, 1, u64::MAX / 1024, expected)?);
            }
            "/proc/sys/vm/watermark_scale_factor" => {
                self.watermark_scale_factor = parse_in_range(value, 1, 3000, expected)? as u32;
            }
            "/proc/sys/vm/swappiness" => {
                self.swappiness = parse_in_range(value, 0, 200, expected)? as u32;
            }
            "/proc/sys/vm/page-cluster" => {
                self.page_cluster = parse_in_range(value, 0, 31, expected)? as u32;
            }
            // The handlers zero the other of each ratio/bytes pair, as the kernel's do.
            "/proc/sys/vm/dirty_ratio" => {
                self.dirty_ratio = parse_in_range(value, 0, 100, expected)? as u32;
                self.dirty_bytes = 0;
            }
            "/proc/sys/vm/dirty_bytes" => {
                let bytes = parse_size_knob(value, expected)?;
                if bytes != 0 && bytes < 2 * super::types::PAGE_SIZE {
                    return Err(bad());
                }
                self.dirty_bytes = bytes;
                if bytes != 0 {
                    self.dirty_ratio = 0;
                }
            }
            "/proc/sys/vm/dirty_background_ratio" => {
                self.dirty_background_ratio = parse_in_range(value, 0, 100, expected)? as u32;
                self.dirty_background_bytes = 0;
            }
            "/proc/sys/vm/dirty_background_bytes" => {
                self.dirty_background_bytes = parse_size_knob(value, expected)?;
                if self.dirty_background_bytes != 0 {
                    self.dirty_background_ratio = 0;
                }
            }
            "/proc/sys/vm/dirty_expire_centisecs" => {
                self.dirty_expire_centisecs = parse_in_range(value, 0, u32::MAX as u64, expected)?;
            }
            "/proc/sys/vm/dirty_writeback_centisecs" => {
                self.dirty_writeback_centisecs =
                    parse_in_range(value, 0, u32::MAX as u64, expected)?;
            }
            "/proc/sys/kernel/numa_balancing" => {
                self.numa_balancing = parse_in_range(value, 0, 3, expected)? as u32;
            }
            "/sys/kernel/mm/numa/demotion_enabled" => {
                self.demotion_enabled = match value.trim() {
                    "true" | "1" => true,
                    "false" | "0" => false,
                    _ => return Err(bad()),
                };
            }
            "/sys/kernel/mm/transparent_hugepage/shrink_underused" => {
                self.shrink_underused = match value.trim() {
                    "1" => true,
                    "0" => false,
                    _ => return Err(bad()),
                };
            }
            PROMOTE_RATE_LIMIT => {
                self.promote_rate_limit_mbps = parse_in_range(value, 1, 1 << 20, expected)?;
            }
            SCAN_DELAY => self.numa_scan_delay_ms = parse_in_range(value, 1, 3_600_000, expected)?,
            SCAN_PERIOD_MIN => {
                self.numa_scan_period_min_ms = parse_in_range(value, 1, 3_600_000, expected)?
            }
            SCAN_PERIOD_MAX => {
                self.numa_scan_period_max_ms = parse_in_range(value, 1, 3_600_000, expected)?
            }
            SCAN_SIZE => self.numa_scan_size_mb = parse_in_range(value, 1, 1 << 20, expected)?,
            HOT_THRESHOLD => {
                self.numa_hot_threshold_ms = parse_in_range(value, 1, 3_600_000, expected)?
            }
            PAGECACHE_PROMOTION => {
                self.pagecache_promotion_enabled = match value.trim() {
                    "true" | "1" => true,
                    "false" | "0" => false,
                    _ => return Err(bad()),
                };
            }
            "pagecache_promotion_task_cap" => {
                self.pagecache_promotion_task_cap = match value.trim() {
                    "1" => true,
                    "0" => false,
                    _ => return Err(bad()),
                };
            }
            "swap_migration_ad_supported" => {
                self.swap_migration_ad_supported = match value.trim() {
                    "1" => true,
                    "0" => false,
                    _ => return Err(bad()),
                };
            }
            ZSWAP_ENABLED => self.zswap_enabled = parse_param_bool(value).ok_or_else(bad)?,
            ZSWAP_COMPRESSOR => {
                self.zswap_compressor = match value.trim() {
                    "lzo" => ZswapCompressor::Lzo,
                    "lzo-rle" => ZswapCompressor::LzoRle,
                    _ => return Err(bad()),
                };
            }
            ZSWAP_MAX_POOL => {
                self.zswap_max_pool_percent = parse_in_range(value, 0, 100, expected)? as u32;
            }
            ZSWAP_ACCEPT => {
                self.zswap_accept_threshold_percent =
                    parse_in_range(value, 0, 100, expected)? as u32;
            }
            ZSWAP_SHRINKER => {
                self.zswap_shrinker_enabled = parse_param_bool(value).ok_or_else(bad)?;
            }
            HOST_MEMCGS | HOST_MEMCGS_ONLINE => {
                let n = match value.trim().parse::<u32>() {
                    Ok(n) if n <= u16::MAX as u32 => n,
                    _ => return Err(bad()),
                };
                if path == HOST_MEMCGS {
                    self.host_memcgs = n;
                } else {
                    self.host_memcgs_online = n;
                }
            }
            MEMCG_STATS_FLUSH_FIRST_US => {
                self.memcg_stats_flush_first_us = Some(
                    value
                        .trim()
                        .parse::<u64>()
                        .ok()
                        .filter(|us| *us <= u64::MAX / 1000)
                        .ok_or_else(bad)?,
                );
            }
            MEMORY_CGROUP_V1 => {
                self.memory_cgroup_v1 = match value.trim() {
                    "1" => true,
                    "0" => false,
                    _ => return Err(bad()),
                };
            }
            ZSWAP_ENABLED_SINCE_BOOT => {
                self.zswap_enabled_since_boot = match value.trim() {
                    "1" => true,
                    "0" => false,
                    _ => return Err(bad()),
                };
            }
            "CONFIG_THP_SWAP" => {
                self.thp_swap = match value.trim() {
                    "y" => true,
                    "n" => false,
                    _ => return Err(bad()),
                };
            }
            _ => return Err(unknown_knob_message(path)),
        }
        Ok(())
    }

    /// The current value of a knob as its file would read (memory.max forms excluded).
    pub fn get(&self, path: &str) -> Option<String> {
        if let Some(order) = mthp_order_of_path(path) {
            return Some(thp_enabled_name(self.mthp_enabled[order]).to_string());
        }
        if let Some(order) = mthp_shmem_order_of_path(path) {
            return Some(self.mthp_shmem_enabled[order].name().to_string());
        }
        let value = match path {
            SHMEM_ENABLED => self.shmem_enabled.name().to_string(),
            "/sys/kernel/mm/transparent_hugepage/enabled" => {
                thp_enabled_name(self.thp_enabled).to_string()
            }
            "/sys/kernel/mm/transparent_hugepage/defrag" => {
                thp_defrag_name(self.thp_defrag).to_string()
            }
            "/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none" => {
                self.max_ptes_none.to_string()
            }
            "/proc/sys/vm/min_free_kbytes" => match self.min_free_kbytes {
                Some(kb) => kb.to_string(),
                None => "computed at boot".to_string(),
            },
            "/proc/sys/vm/watermark_scale_factor" => self.watermark_scale_factor.to_string(),
            "/proc/sys/vm/swappiness" => self.swappiness.to_string(),
            "/proc/sys/vm/page-cluster" => self.page_cluster.to_string(),
            "/proc/sys/kernel/numa_balancing" => self.numa_balancing.to_string(),
            "/proc/sys/vm/dirty_ratio" => self.dirty_ratio.to_string(),
            "/proc/sys/vm/dirty_bytes" => self.dirty_bytes.to_string(),
            "/proc/sys/vm/dirty_background_ratio" => self.dirty_background_ratio.to_string(),
            "/proc/sys/vm/dirty_background_bytes" => self.dirty_background_bytes.to_string(),
            "/proc/sys/vm/dirty_expire_centisecs" => self.dirty_expire_centisecs.to_string(),
            "/proc/sys/vm/dirty_writeback_centisecs" => self.dirty_writeback_centisecs.to_string(),
            "/sys/kernel/mm/numa/demotion_enabled" => self.demotion_enabled.to_string(),
            "/sys/kernel/mm/transparent_hugepage/shrink_underused" => {
                (self.shrink_underused as u8).to_string()
            }
            PROMOTE_RATE_LIMIT => self.promote_rate_limit_mbps.to_string(),
            SCAN_DELAY => self.numa_scan_delay_ms.to_string(),
            SCAN_PERIOD_MIN => self.numa_scan_period_min_ms.to_string(),
            SCAN_PERIOD_MAX => self.numa_scan_period_max_ms.to_string(),
            SCAN_SIZE => self.numa_scan_size_mb.to_string(),
            HOT_THRESHOLD => self.numa_hot_threshold_ms.to_string(),
            "swap_migration_ad_supported" => (self.swap_migration_ad_supported as u8).to_string(),
            PAGECACHE_PROMOTION => self.pagecache_promotion_enabled.to_string(),
            "pagecache_promotion_task_cap" => (self.pagecache_promotion_task_cap as u8).to_string(),
            "CONFIG_THP_SWAP" => if self.thp_swap { "y" } else { "n" }.to_string(),
            ZSWAP_ENABLED => param_bool_name(self.zswap_enabled).to_string(),
            ZSWAP_COMPRESSOR => self.zswap_compressor.name().to_string(),
            ZSWAP_MAX_POOL => self.zswap_max_pool_percent.to_string(),
            ZSWAP_ACCEPT => self.zswap_accept_threshold_percent.to_string(),
            ZSWAP_SHRINKER => param_bool_name(self.zswap_shrinker_enabled).to_string(),
            MEMORY_CGROUP_V1 => (self.memory_cgroup_v1 as u8).to_string(),
            MEMCG_STATS_FLUSH_FIRST_US => match self.memcg_stats_flush_first_us {
                Some(us) => us.to_string(),
                None => "drawn from the seed".to_string(),
            },
            ZSWAP_ENABLED_SINCE_BOOT => (self.zswap_enabled_since_boot as u8).to_string(),
            HOST_MEMCGS => self.host_memcgs.to_string(),
            HOST_MEMCGS_ONLINE => self.host_memcgs_online.to_string(),
            _ => return None,
        };
        Some(value)
    }
}

fn unknown_knob_message(path: &str) -> String {
    if let Some(near) = nearest_path(path) {
        return format!("unknown knob; expected a path from `foliosim list`, e.g. {near}");
    }
    format!(
        "unknown knob; expected a kernel path from `foliosim list` (e.g. {THP_DIR}/enabled) \
         or [<cgroup>/]memory.max, or <task>/native_user_ns"
    )
}

/// The supported path closest to a mistyped one (a few edits away, or the same file name in
/// another directory), for the error message.
fn nearest_path(path: &str) -> Option<String> {
    let file_name = |p: &str| p.rsplit('/').next().unwrap_or("").to_string();
    let mut best: Option<(usize, String)> = None;
    for known in knob_paths() {
        let distance = if file_name(&known) == file_name(path) && !path.contains("hugepages-") {
            0
        } else {
            edit_distance(path, &known)
        };
        if distance <= 3 && best.as_ref().is_none_or(|(d, _)| distance < *d) {
            best = Some((distance, known));
        }
    }
    best.map(|(_, p)| p)
}

/// Levenshtein distance over bytes; paths are short, so the O(n*m) table is cheap.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitute.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mthp_paths_map_to_orders() {
        let mut k = Knobs::default();
        k.set(&format!("{THP_DIR}/hugepages-64kB/enabled"), "always")
            .unwrap();
        assert_eq!(k.mthp_enabled[4], ThpEnabled::Always);
        k.set(&format!("{THP_DIR}/hugepages-2048kB/enabled"), "never")
            .unwrap();
        assert_eq!(k.mthp_enabled[PMD_ORDER], ThpEnabled::Never);
        assert_eq!(
            mthp_enabled_path(2),
            format!("{THP_DIR}/hugepages-16kB/enabled")
        );
        // a mistyped size points at the nearest real one
        assert!(k
            .set(&format!("{THP_DIR}/hugepages-8kB/enabled"), "always")
            .unwrap_err()
            .contains("e.g. /sys/kernel/mm/transparent_hugepage/hugepages-"));
    }

    #[test]
    fn values_are_checked_and_messages_name_the_expected_values() {
        let mut k = Knobs::default();
        let e = k.set(&format!("{THP_DIR}/enabled"), "inherit").unwrap_err();
        assert!(e.contains("always|madvise|never"), "{e}");
        let e = k.set("/proc/sys/vm/swappiness", "201").unwrap_err();
        assert!(e.contains("0..=200"), "{e}");
        let e = k
            .set("/proc/sys/vm/watermark_scale_factor", "0")
            .unwrap_err();
        assert!(e.contains("1..=3000"), "{e}");
        assert!(k.set("/proc/sys/vm/min_free_kbytes", "0").is_err());
        k.set("/proc/sys/vm/min_free_kbytes", "65536").unwrap();
        assert_eq!(k.min_free_kbytes, Some(65536));
        k.set("/sys/kernel/mm/numa/demotion_enabled", "1").unwrap();
        assert!(k.demotion_enabled);
        k.set(&format!("{THP_DIR}/defrag"), "defer+madvise")
            .unwrap();
        assert_eq!(k.thp_defrag, ThpDefrag::DeferMadvise);
        assert!(k
            .set("/proc/sys/vm/nope", "1")
            .unwrap_err()
            .contains("unknown knob"));
        // a typo or a wrong directory suggests the real path
        assert!(k
            .set("/proc/sys/vm/swapiness", "1")
            .unwrap_err()
            .ends_with("e.g. /proc/sys/vm/swappiness"));
        assert!(k
            .set("/sys/vm/swappiness", "1")
            .unwrap_err()
            .ends_with("e.g. /proc/sys/vm/swappiness"));
        // shmem's: the top level has deny and force, the sizes inherit and no deny
        k.set(&format!("{THP_DIR}/shmem_enabled"), "force").unwrap();
        assert_eq!(k.shmem_enabled, ShmemHuge::Force);
        let e = k
            .set(&format!("{THP_DIR}/shmem_enabled"), "inherit")
            .unwrap_err();
        assert!(
            e.contains("always|within_size|advise|never|deny|force"),
            "{e}"
        );
        k.set(
            &format!("{THP_DIR}/hugepages-64kB/shmem_enabled"),
            "within_size",
        )
        .unwrap();
        assert_eq!(k.mthp_shmem_enabled[4], MthpShmem::WithinSize);
        assert_eq!(
            k.mthp_enabled[4],
            ThpEnabled::Never,
            "the anonymous knob is another file"
        );
        let e = k
            .set(&format!("{THP_DIR}/hugepages-64kB/shmem_enabled"), "deny")
            .unwrap_err();
        assert!(e.contains("always|inherit|within_size|advise|never"), "{e}");
        assert_eq!(
            k.get(&format!("{THP_DIR}/hugepages-2048kB/shmem_enabled"))
                .as_deref(),
            Some("inherit")
        );
    }

    #[test]
    fn a_native_user_time_is_a_positive_count_of_ns_per_task_the_last_one_kept() {
        let mut k = Knobs::default();
        k.set("app/native_user_ns", "500000").unwrap();
        k.set("db/native_user_ns", " 7 ").unwrap();
        k.set("app/native_user_ns", "400000").unwrap();
        assert_eq!(
            k.native_user_ns,
            vec![("db".to_string(), 7), ("app".to_string(), 400_000)]
        );
        for bad in ["0", "-1", "1.5", "fast"] {
            assert_eq!(
                k.set("app/native_user_ns", bad),
                Err(format!(
                    "expected a user time in ns, at least 1, found {bad:?}"
                ))
            );
        }
        assert!(k.set("a/b/native_user_ns", "1").is_err());
        assert!(k.set("/native_user_ns", "1").is_err());
        assert!(knob_table()
            .iter()
            .any(|(p, _)| p == "<task>/native_user_ns"));
    }

    #[test]
    fn memory_max_overrides_replace_earlier_ones() {
        let mut k = Knobs::default();
        k.set("bench/memory.max", "1G").unwrap();
        k.set("other/memory.max", "max").unwrap();
        k.set("bench/memory.max", "470M").unwrap();
        assert_eq!(
            k.memory_max,
            vec![
                (Some("other".to_string()), None),
                (Some("bench".to_string()), Some(470 << 20))
            ]
        );
        k.set("memory.max", "2G").unwrap();
        assert_eq!(k.memory_max, vec![(None, Some(2 << 30))]);
        assert!(k.set("memory.max", "0").is_err());
        assert!(k.set("memory.max", "lots").is_err());
        assert!(k.set("a/b/memory.max", "1G").is_err());
    }

    #[test]
    fn table_lists_every_path_with_its_default() {
        let table = knob_table();
        let paths: Vec<&str> = table.iter().map(|(p, _)| p.as_str()).collect();
        for path in knob_paths() {
            assert!(paths.contains(&path.as_str()));
            // every listed path is settable to its own default
            let mut k = Knobs::default();
            if let Some(v) = Knobs::default().get(&path) {
                // defaults computed at boot or drawn from the seed are no value to set
                if path != "/proc/sys/vm/min_free_kbytes" && path != MEMCG_STATS_FLUSH_FIRST_US {
                    k.set(&path, &v).unwrap();
                    assert_eq!(k, Knobs::default());
                }
            }
        }
        let thp = table
            .iter()
            .find(|(p, _)| p == "/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled")
            .unwrap();
        assert!(thp.1.contains("default inherit"), "{}", thp.1);
    }
}

/// Properties of the `memory.max` parser, checked against sizes computed here.
#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn memory_max_is_a_positive_size_or_max(
            n in prop_oneof![0u64..4, 0u64..(1 << 30)],
            (unit, multiple) in prop::sample::select(vec![("", 1u64), ("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)]),
            pad in prop::sample::select(vec!["", " "]),
        ) {
            let value = format!("{pad}{n}{unit}{pad}");
            let trimmed = value.trim();
            let expected = match n * multiple {
                0 => Err(format!("expected a limit greater than 0 or max, found {trimmed:?}")),
                bytes => Ok(Some(bytes)),
            };
            prop_assert_eq!(parse_memory_max(&value), expected);
            prop_assert_eq!(parse_memory_max(&format!("{pad}max{pad}")), Ok(None));
        }
    }
}
