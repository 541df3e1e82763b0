//! Counters with the kernel's names, kept inside mm as mm/vmstat.c keeps them: /proc/vmstat
//! items (`Vm`), hugepages-<size>/stats items (`Mthp`, mm/huge_memory.c's mthp_stats) and
//! memory.stat items (`Memcg`, mm/memcontrol.c). Each counter is named once, here. Left out:
//! per-CPU deltas and their folding into the global counters (every event is counted at once).

macro_rules! counters {
    ($ty:ident, $names:ident, $( $v:ident = $n:literal ),* $(,)?) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(usize)]
        pub enum $ty { $( $v ),* }
        pub const $names: &[&str] = &[ $( $n ),* ];
        impl $ty {
            pub const COUNT: usize = $names.len();
            pub fn name(self) -> &'static str { $names[self as usize] }
        }
    };
}

counters!(
    Vm,
    VM_NAMES,
    Pgfault = "pgfault",
    Pgmajfault = "pgmajfault",
    Pswpin = "pswpin",
    Pswpout = "pswpout",
    PgscanKswapd = "pgscan_kswapd",
    PgscanDirect = "pgscan_direct",
    PgstealKswapd = "pgsteal_kswapd",
    PgstealDirect = "pgsteal_direct",
    PgscanAnon = "pgscan_anon",
    PgstealAnon = "pgsteal_anon",
    PgscanFile = "pgscan_file",
    PgstealFile = "pgsteal_file",
    Pgpgin = "pgpgin",
    Pgpgout = "pgpgout",
    // Gauges (they also go down): pages dirty, and pages under writeback, in the page cache.
    NrDirty = "nr_dirty",
    NrWriteback = "nr_writeback",
    NrDirtied = "nr_dirtied",
    NrWritten = "nr_written",
    NrVmscanWrite = "nr_vmscan_write",
    NrVmscanImmediateReclaim = "nr_vmscan_immediate_reclaim",
    Pgactivate = "pgactivate",
    Pgdeactivate = "pgdeactivate",
    Pgrefill = "pgrefill",
    Pgrotated = "pgrotated",
    Pgreuse = "pgreuse",
    WorkingsetRefaultAnon = "workingset_refault_anon",
    WorkingsetRefaultFile = "workingset_refault_file",
    WorkingsetActivateAnon = "workingset_activate_anon",
    WorkingsetActivateFile = "workingset_activate_file",
    WorkingsetRestoreAnon = "workingset_restore_anon",
    WorkingsetRestoreFile = "workingset_restore_file",
    // The shadow-node shrinker is not modelled (mm/workingset.rs): always 0.
    WorkingsetNodereclaim = "workingset_nodereclaim",
    Pgalloc = "pgalloc_normal",
    Pgfree = "pgfree",
    AllocstallNormal = "allocstall_normal",
    KswapdWakeups = "pageoutrun",
    // shmem (reported only for runs with shmem, see SHMEM_VM); nr_shmem and
    // nr_shmem_hugepages are read from the page caches at report time.
    ThpFileAlloc = "thp_file_alloc",
    ThpFileFallback = "thp_file_fallback",
    ThpFileFallbackCharge = "thp_file_fallback_charge",
    ThpFaultAlloc = "thp_fault_alloc",
    ThpFaultFallback = "thp_fault_fallback",
    ThpFaultFallbackCharge = "thp_fault_fallback_charge",
    ThpSplitPage = "thp_split_page",
    ThpSplitPageFailed = "thp_split_page_failed",
    ThpSplitPmd = "thp_split_pmd",
    ThpSwpout = "thp_swpout",
    ThpSwpoutFallback = "thp_swpout_fallback",
    ThpDeferredSplitPage = "thp_deferred_split_page",
    ThpUnderusedSplitPage = "thp_underused_split_page",
    ThpSplitUnmap = "thp_split_unmap",
    ThpSplitFree = "thp_split_free",
    OomKill = "oom_kill",
    NrTlbLocalFlushAll = "nr_tlb_local_flush_all",
    NrTlbLocalFlushOne = "nr_tlb_local_flush_one",
    NrTlbRemoteFlush = "nr_tlb_remote_flush",
    NrTlbRemoteFlushReceived = "nr_tlb_remote_flush_received",
    SwpoutZero = "swpout_zero",
    SwpinZero = "swpin_zero",
    NumaHit = "numa_hit",
    NumaMiss = "numa_miss",
    NumaForeign = "numa_foreign",
    NumaInterleave = "numa_interleave",
    NumaLocal = "numa_local",
    NumaOther = "numa_other",
    NumaPteUpdates = "numa_pte_updates",
    NumaHugePteUpdates = "numa_huge_pte_updates",
    NumaHintFaults = "numa_hint_faults",
    NumaHintFaultsLocal = "numa_hint_faults_local",
    NumaHintPageCache = "numa_hint_page_cache",
    NumaHintPageCacheLocal = "numa_hint_page_cache_local",
    NumaPagesMigrated = "numa_pages_migrated",
    PgpromoteSuccess = "pgpromote_success",
    PgpromoteCandidate = "pgpromote_candidate",
    PgdemoteKswapd = "pgdemote_kswapd",
    PgdemoteDirect = "pgdemote_direct",
    PgmigrateSuccess = "pgmigrate_success",
    PgmigrateFail = "pgmigrate_fail",
    ThpMigrationSuccess = "thp_migration_success",
    ThpMigrationFail = "thp_migration_fail",
    ThpMigrationSplit = "thp_migration_split",
    // zswap (reported only for runs with zswap enabled, see ZSWAP_VM).
    Zswpin = "zswpin",
    Zswpout = "zswpout",
    Zswpwb = "zswpwb",
    // perf events, not /proc/vmstat: misses of the simulated TLBs.
    DtlbLoadMisses = "dTLB-load-misses",
    DtlbStoreMisses = "dTLB-store-misses",
    ItlbLoadMisses = "iTLB-load-misses",
);

counters!(
    Mthp,
    MTHP_NAMES,
    AnonFaultAlloc = "anon_fault_alloc",
    AnonFaultFallback = "anon_fault_fallback",
    AnonFaultFallbackCharge = "anon_fault_fallback_charge",
    Swpout = "swpout",
    SwpoutFallback = "swpout_fallback",
    Swpin = "swpin",
    SwpinFallback = "swpin_fallback",
    SwpinFallbackCharge = "swpin_fallback_charge",
    SplitCount = "split",
    SplitFailed = "split_failed",
    SplitDeferred = "split_deferred",
    NrAnonPartiallyMapped = "nr_anon_partially_mapped",
    Zswpout = "zswpout",
    ShmemAlloc = "shmem_alloc",
    ShmemFallback = "shmem_fallback",
    ShmemFallbackCharge = "shmem_fallback_charge",
);

counters!(
    Memcg,
    MEMCG_NAMES,
    Pgfault = "pgfault",
    Pgmajfault = "pgmajfault",
    Pswpin = "pswpin",
    Pswpout = "pswpout",
    Pgscan = "pgscan",
    Pgsteal = "pgsteal",
    WorkingsetRefaultAnon = "workingset_refault_anon",
    WorkingsetRefaultFile = "workingset_refault_file",
    WorkingsetActivateAnon = "workingset_activate_anon",
    WorkingsetActivateFile = "workingset_activate_file",
    WorkingsetRestoreAnon = "workingset_restore_anon",
    WorkingsetRestoreFile = "workingset_restore_file",
    ThpSwpout = "thp_swpout",
    ThpSwpoutFallback = "thp_swpout_fallback",
    OomKill = "oom_kill",
    MaxEvents = "max",
    Zswpin = "zswpin",
    Zswpout = "zswpout",
    Zswpwb = "zswpwb",
);

/// The counters that exist only with zswap in play: a run that never enables zswap leaves them
/// out of its result (as earlier results had no such names).
pub const ZSWAP_VM: &[Vm] = &[Vm::Zswpin, Vm::Zswpout, Vm::Zswpwb];
pub const ZSWAP_MTHP: &[Mthp] = &[Mthp::Zswpout];
pub const ZSWAP_MEMCG: &[Memcg] = &[Memcg::Zswpin, Memcg::Zswpout, Memcg::Zswpwb];
/// The counters that exist only with shmem in play, likewise.
pub const SHMEM_VM: &[Vm] = &[
    Vm::ThpFileAlloc,
    Vm::ThpFileFallback,
    Vm::ThpFileFallbackCharge,
];
pub const SHMEM_MTHP: &[Mthp] = &[
    Mthp::ShmemAlloc,
    Mthp::ShmemFallback,
    Mthp::ShmemFallbackCharge,
];

#[derive(Clone, Debug)]
pub struct VmStat {
    pub vm: [u64; Vm::COUNT],
    /// Per order 0..=9; only orders with a sysfs directory are reported.
    pub mthp: [[u64; Mthp::COUNT]; 10],
}

impl Default for VmStat {
    fn default() -> Self {
        VmStat {
            vm: [0; Vm::COUNT],
            mthp: [[0; Mthp::COUNT]; 10],
        }
    }
}

impl VmStat {
    #[inline]
    pub fn count(&mut self, item: Vm, n: u64) {
        self.vm[item as usize] += n;
    }
    #[inline]
    pub fn count_mthp(&mut self, order: u32, item: Mthp) {
        self.mthp[order as usize][item as usize] += 1;
    }
    /// A per-size gauge (a count that also goes down).
    #[inline]
    pub fn mthp_gauge(&mut self, order: u32, item: Mthp, delta: i64) {
        let v = &mut self.mthp[order as usize][item as usize];
        *v = (*v as i64 + delta) as u64;
    }

    /// Lowers a gauge such as nr_dirty.
    #[inline]
    pub fn sub(&mut self, item: Vm, n: u64) {
        debug_assert!(self.vm[item as usize] >= n, "{} below zero", item.name());
        self.vm[item as usize] -= n;
    }

    pub fn get(&self, item: Vm) -> u64 {
        self.vm[item as usize]
    }
}
