//! Where each task's time goes, by mechanism: the accounting idea of kernel/sched/cputime.c
//! (user and system time per task), split further by what the simulated kernel charged the time
//! for, so that a run's time can be traced to the hardware profile's costs behind it.
//!
//! Every cost the engine charges goes through `Kernel::spend` (time on the CPU) or
//! `Kernel::wait_until` (waiting for a device inside an operation), which advance the clock and
//! add to the running task's `TimeBreakdown`. A task's categories other than `CpuWait` add up to
//! its `user_ns + sys_ns` exactly; `CpuWait` is the time it was runnable but its CPU was busy.
//! Left out: sleeps and barrier waits (the task is off the CPU; they are neither user, sys nor
//! CPU wait), and the kernel's own split of user and system time (a TLB miss is `TlbMiss`
//! whichever of the two the task's user/sys counters put it in).

use super::Kernel;

/// What a stretch of simulated time was spent on.
macro_rules! time_kinds {
    ($($(#[doc = $doc:literal])* $kind:ident = $name:literal [$($cost:literal),*],)+) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum TimeKind {
            $($(#[doc = $doc])* $kind,)+
        }

        impl TimeKind {
            pub const ALL: [TimeKind; [$($name),+].len()] = [$(TimeKind::$kind),+];

            /// The key in the result's `time_breakdown_ns`.
            pub fn name(self) -> &'static str {
                match self {
                    $(TimeKind::$kind => $name,)+
                }
            }

            /// The hardware profile's costs (docs/hardware.md) this time is made of.
            pub fn costs(self) -> &'static [&'static str] {
                match self {
                    $(TimeKind::$kind => &[$($cost),*],)+
                }
            }
        }
    };
}

time_kinds! {
    /// The program's own work: its stores, loads that hit, instructions between accesses.
    User = "user" ["word_write_ns_x1000", "memset_word_ns_x1000", "memset_word_cached_ns_x1000", "touch_resident_ns", "instruction_ns_x1000", "dram_read_latency_ns", "cxl_read_latency_ns"],
    /// Entering the kernel for a fault or a system call (read, fsync).
    FaultEntry = "fault_entry" ["fault_entry_ns"],
    /// Clearing new pages (anonymous faults, with the PTEs or PMD that map them; swap-in of a
    /// zero-filled slot).
    Zeroing = "zeroing" ["zero_page_ns", "pte_update_ns"],
    /// Copying pages: copy-on-write, read() into a user buffer.
    Copying = "copying" ["copy_page_ns", "pte_update_ns", "dram_read_latency_ns", "cxl_read_latency_ns"],
    /// Setting and clearing PTEs outside the mechanisms below (mapping, zapping, NUMA hinting).
    PteUpdate = "pte_update" ["pte_update_ns"],
    /// Page walks after data- and instruction-TLB misses.
    TlbMiss = "tlb_miss" ["page_walk_ns"],
    /// Flushing the local CPU's TLB (x86).
    TlbFlushLocal = "tlb_flush_local" ["tlb_flush_local_one_ns", "tlb_flush_local_all_ns"],
    /// Shooting down other CPUs' translations: IPIs sent and waited for (x86), broadcast TLBIs
    /// and the DSBs that wait for them (arm64).
    TlbShootdownSend = "tlb_shootdown_send" ["tlb_flush_ipi_send_ns", "tlbi_broadcast_ns", "dsb_ish_ns"],
    /// Handling another CPU's flush IPI (x86).
    TlbShootdownReceive = "tlb_shootdown_receive" ["tlb_flush_ipi_receive_ns"],
    /// Reclaim's work per folio scanned (shrink_folio_list), without rmap, I/O and splitting.
    ReclaimScan = "reclaim_scan" ["reclaim_scan_folio_ns"],
    /// Adding folios to, isolating them from and moving them on the LRU lists.
    Lru = "lru" ["lru_op_ns"],
    /// rmap walks (folio_referenced, try_to_unmap) and the PTEs they change.
    Rmap = "rmap" ["rmap_walk_ns", "pte_update_ns"],
    /// Splitting large folios.
    Split = "split" ["split_subpage_ns", "split_zero_subpage_ns", "pte_update_ns"],
    /// Buddy allocations and frees.
    PageAlloc = "page_alloc" ["page_alloc_ns"],
    /// Charging folios to a memcg.
    MemcgCharge = "memcg_charge" ["memcg_charge_ns"],
    /// Allocating swap slots.
    SwapAlloc = "swap_alloc" ["swap_slot_alloc_ns"],
    /// Freeing swap entries (unmap, swap-in) and the objects zram holds for them.
    SwapFree = "swap_free" ["swap_free_ns", "zram_free_ns"],
    /// Scanning a folio for zeros before swap-out (the zeromap, v6.12+).
    ZeroCheck = "zero_check" ["dram_bandwidth_bytes_per_s", "dram_read_latency_ns"],
    /// The CPU side of block I/O: bio submission and completion, a swap-out's writeback around
    /// its request, brd's copies, zram's own work per 4 KiB page (slot lock, table entry,
    /// statistics).
    BlockIo = "block_io" ["block_io_overhead_ns", "swap_writeout_ns", "brd_page_write_ns", "brd_page_read_ns", "zram_page_write_ns", "zram_page_read_ns"],
    /// zram: compressing, decompressing and same-filled pages.
    Compression = "compression" ["zram_compress_ns", "zram_decompress_ns", "zram_same_page_ns", "dram_read_latency_ns"],
    /// Migrating folios between nodes (allocation, unmap, copy, remap).
    Migration = "migration" ["page_alloc_ns", "rmap_walk_ns", "pte_update_ns", "copy_page_ns", "dram_bandwidth_bytes_per_s", "cxl_bandwidth_bytes_per_s"],
    /// Waiting inside an operation for a device: swap reads and full queues, file reads,
    /// writeback waits (the device's service time and its queue). Asleep, so not part of
    /// user + sys either.
    IoWait = "io_wait" ["ssd_read_latency_ns", "ssd_write_latency_ns", "ssd_bandwidth_bytes_per_s", "hdd_seek_ns", "hdd_bandwidth_bytes_per_s", "ssd_discard_ns"],
    /// Runnable, but the CPU was busy with another task (not part of user + sys).
    CpuWait = "cpu_wait" [],
}

impl TimeKind {
    /// Time the task is not on a CPU (runnable behind another task, or asleep on a device):
    /// not part of its user + sys time.
    pub fn is_wait(self) -> bool {
        matches!(self, TimeKind::CpuWait | TimeKind::IoWait)
    }
}

/// A task's time by `TimeKind`, in ns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TimeBreakdown {
    ns: [u64; TimeKind::ALL.len()],
}

impl TimeBreakdown {
    #[inline]
    pub fn add(&mut self, kind: TimeKind, ns: u64) {
        self.ns[kind as usize] += ns;
    }

    pub fn get(&self, kind: TimeKind) -> u64 {
        self.ns[kind as usize]
    }

    /// Every kind with its time, in the order of `TimeKind::ALL`.
    pub fn iter(&self) -> impl Iterator<Item = (TimeKind, u64)> + '_ {
        TimeKind::ALL.iter().map(|&k| (k, self.ns[k as usize]))
    }
}

impl Kernel {
    /// Charges `ns` of CPU time spent on `kind` to the running task.
    #[inline]
    pub fn spend(&mut self, kind: TimeKind, ns: u64) {
        self.clock_ns += ns;
        if let Some(task) = self.tasks.get_mut(self.current as usize) {
            task.time.add(kind, ns);
        }
    }

    /// The running task waits for `kind` until `until_ns` (nothing if that has passed).
    #[inline]
    pub fn wait_until(&mut self, kind: TimeKind, until_ns: u64) {
        if until_ns > self.clock_ns {
            let ns = until_ns - self.clock_ns;
            self.spend(kind, ns);
        }
    }
}
