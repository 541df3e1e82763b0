//! Swap areas: swap_info, swap_map counts, swapon, and the device side of slot allocation.
//!
//! Models mm/swapfile.c (spec swap.md §A–C, §H), v6.9–v6.18: slot 0 is the header, clusters have
//! 512 slots (swap_cluster.rs keeps them, their lists and discard). The slot allocator is one
//! type per kernel generation, chosen at swapon (swap_alloc/); this file holds what they share:
//! swap_range_alloc / swap_entry_range_free, the cache-only reclaim (__try_to_reclaim_swap,
//! swap_reclaim_full_clusters), and get_swap_pages / folio_alloc_swap over the devices by
//! priority. Rotational devices have no clusters up to v6.12.
//!
//! Cache-only slots are reclaimed in place; `Kernel` then takes their folios out of the swap
//! cache (v6.9/v6.10 free them through an active slot cache, swap_slots.rs). Left out: swap
//! continuation counts, bad pages, locks and the races they allow, swapoff, the swap table.

use super::folio::{pg, NIL};
use super::swap_alloc::SwapAllocator;
use super::Kernel;
use crate::scenario::generation::Generation;
use crate::scenario::{RunSpec, SwapKind};
use crate::sim::FifoServer;
use std::collections::VecDeque;

pub use super::swap_cluster::{
    list_frag, list_nonfull, ClusterInfo, SwapClusters, LIST_DISCARD, LIST_FREE, LIST_FULL,
    LIST_NONE,
};

pub const SWAPFILE_CLUSTER: u32 = 512;
/// swap_map bits.
pub const SWAP_HAS_CACHE: u8 = 0x40;
pub const SWAP_MAP_BAD: u8 = 0x3f;
pub(super) const COUNT_MASK: u8 = 0x3f;
/// Column count of the swapon free-list order up to v6.17 (SWAP_ADDRESS_SPACE_PAGES / 512).
const CLUSTER_COLS: u32 = 32;
/// PMD_ORDER as the swap code counts it (folio orders are u32 here).
pub(super) const PMD_ORDER: u32 = crate::scenario::knobs::PMD_ORDER as u32;
/// The most slots one get_swap_pages call hands out.
pub const SWAP_BATCH: usize = 64;
/// MAX_SWAPFILES.
const MAX_SWAPFILES: usize = 32;

/// What an allocation needs from outside the device.
pub struct AllocCtx<'a> {
    /// vm_swap_full() as the allocation sees it.
    pub swap_full: bool,
    pub now_ns: u64,
    /// The per-CPU slot cache is on: v6.9/v6.10 cache-only reclaim frees through it.
    pub slot_cache_active: bool,
    /// For a swap-cache folio: its page count, and whether it may leave the swap cache now
    /// (__try_to_reclaim_swap's trylock and folio_swapcache_freeable: not under writeback).
    pub folio: &'a dyn Fn(u32) -> (u32, bool),
}

/// A context for callers without folios (tests, tools): cache-only slots are never reclaimed.
fn no_folios(_: u32) -> (u32, bool) {
    (1, false)
}

pub struct SwapInfo {
    pub name: String,
    pub kind: SwapKind,
    pub prio: i32,
    /// Slots including the header.
    pub max: u32,
    pub swap_map: Vec<u8>,
    /// Swap cache: the folio caching each slot, or NIL.
    pub cache: Vec<u32>,
    /// Swap cache shadow entries of evicted folios, per slot (mm/workingset.rs).
    pub shadows: Vec<super::workingset::Shadow>,
    /// Content of the page written to each slot.
    pub content: Vec<u8>,
    pub inuse_pages: u64,
    /// cluster_info and the cluster lists (empty lists on a device without clusters).
    pub clusters: SwapClusters,
    /// cluster_info exists: non-rotational devices, and from v6.14 rotational ones too.
    cluster_info: bool,
    /// v6.12+: a partly freed cluster goes to nonfull of its order.
    order_lists: bool,
    /// The slot allocator of the device's kernel generation.
    pub allocator: SwapAllocator,
    nr_cpus: usize,
    /// Bounds of the free slots kept as the kernel keeps them (lowest_bit, highest_bit).
    pub(super) lowest_bit: u32,
    pub(super) highest_bit: u32,
    /// On swap_avail_heads (not full).
    on_avail: bool,
    /// Became non-full since get_swap_pages last looked: goes behind its priority siblings.
    rejoined_avail: bool,
    /// Filled up during the current allocation (schedules reclaim_work from v6.12).
    became_full: bool,
    /// Folios whose slots the allocator reclaimed; `Kernel` takes them out of the swap cache.
    pub reclaimed_folios: Vec<u32>,
    /// v6.9/v6.10: reclaimed slots that go through the slot cache (still SWAP_HAS_CACHE).
    pub deferred_slot_frees: Vec<u32>,
    /// Offsets found by the current allocation.
    out_scratch: Vec<u32>,
    pub queue: FifoServer,
    /// Swapped on with discard (SWP_PAGE_DISCARD): emptied clusters are discarded before reuse.
    pub discard: bool,
    /// Time the device takes to discard one cluster.
    pub discard_ns: u64,
    /// Clusters being discarded, in completion order: (done_ns, cluster).
    pub discard_queue: VecDeque<(u64, u32)>,
    /// Set by an allocation that had to wait for discards: the time they finished.
    pub waited_until_ns: u64,
    /// Slot after the last one transferred: a rotational device seeks only when a request
    /// starts elsewhere.
    pub head_pos: u32,
    /// Writes in flight on an asynchronous device, in completion order: (done_ns, folio).
    pub inflight: VecDeque<(u64, u32)>,
    /// zram mm_stat figures (zero for other kinds).
    pub zram: super::swap_device::ZramStat,
    /// zram: which slots hold a stored object (empty for other kinds).
    pub zram_stored: Vec<bool>,
    /// zram: compressed objects freed since `Kernel::charge_zram_frees` last charged for them.
    pub zram_frees_uncharged: u64,
    /// zswap: the entry of each slot it holds (empty while zswap is off).
    pub zswap: Vec<Option<super::zswap::ZswapEntry>>,
    /// zswap: slots freed since `Kernel::zswap_settle` last freed their entries.
    pub zswap_freed: Vec<u32>,
}

impl SwapInfo {
    pub fn new(
        name: &str,
        kind: SwapKind,
        prio: i32,
        size_bytes: u64,
        nr_cpus: usize,
        gen: Generation,
    ) -> SwapInfo {
        Self::with_discard(name, kind, prio, size_bytes, nr_cpus, gen, None)
    }

    /// A device swapped on with discard when `discard_ns` is given (SSDs only).
    pub fn with_discard(
        name: &str,
        kind: SwapKind,
        prio: i32,
        size_bytes: u64,
        nr_cpus: usize,
        gen: Generation,
        discard_ns: Option<u64>,
    ) -> SwapInfo {
        let max = (size_bytes / super::PAGE_SIZE).clamp(2, 1 << 27) as u32;
        let nr_clusters = max.div_ceil(SWAPFILE_CLUSTER);
        let nr_cpus = nr_cpus.max(1);
        let cluster_info = kind != SwapKind::Hdd || gen.hdd_uses_clusters();
        let mut si = SwapInfo {
            name: name.into(),
            kind,
            prio,
            max,
            swap_map: vec![0; max as usize],
            cache: vec![NIL; max as usize],
            shadows: vec![super::workingset::Shadow::NONE; max as usize],
            content: vec![0; max as usize],
            inuse_pages: 0,
            clusters: SwapClusters::new(nr_clusters),
            cluster_info,
            order_lists: gen.has_cluster_order_lists(),
            allocator: SwapAllocator::for_device(gen, cluster_info, nr_cpus),
            nr_cpus,
            lowest_bit: 1,
            highest_bit: max - 1,
            on_avail: true,
            rejoined_avail: false,
            became_full: false,
            reclaimed_folios: Vec::new(),
            deferred_slot_frees: Vec::new(),
            out_scratch: Vec::with_capacity(SWAP_BATCH),
            queue: FifoServer::default(),
            discard: discard_ns.is_some() && kind == SwapKind::Ssd,
            discard_ns: discard_ns.unwrap_or(0),
            discard_queue: VecDeque::new(),
            waited_until_ns: 0,
            head_pos: 0,
            inflight: VecDeque::new(),
            zram: Default::default(),
            zram_stored: if kind == SwapKind::Zram {
                vec![false; max as usize]
            } else {
                Vec::new()
            },
            zram_frees_uncharged: 0,
            zswap: Vec::new(),
            zswap_freed: Vec::new(),
        };
        si.swap_map[0] = SWAP_MAP_BAD;
        si.clusters[0].count = 1;
        // The slots past the end of the last cluster are counted as used.
        let tail = nr_clusters * SWAPFILE_CLUSTER - max;
        si.clusters[(nr_clusters - 1) as usize].count += tail as u16;
        if si.has_clusters() {
            if gen.swapon_interleaves_free_clusters() {
                // Column-major, so that CPUs start in different 64 MiB swap address spaces.
                for col in 0..CLUSTER_COLS {
                    let mut idx = col;
                    while idx < nr_clusters {
                        si.setup_cluster(idx);
                        idx += CLUSTER_COLS;
                    }
                }
            } else {
                // The swap table made the column shuffle pointless; clusters go on in order.
                for idx in 0..nr_clusters {
                    si.setup_cluster(idx);
                }
            }
        }
        si.seed_scan(0);
        si
    }

    /// swapon's list placement of one cluster: free when empty; partly used (the header's, the
    /// tail) on nonfull[0] from v6.12, on no list before.
    fn setup_cluster(&mut self, idx: u32) {
        if self.clusters[idx as usize].count == 0 {
            self.clusters.list_add_tail(idx, LIST_FREE);
        } else if self.order_lists {
            self.clusters.list_add_tail(idx, list_nonfull(0));
        }
    }

    /// Seeds the allocator's random choices (the old scanner's per-CPU scan bases, drawn as
    /// swapon does). The stream is derived from the run seed, so a run stays a function of
    /// (scenario, profile, seed).
    pub fn seed_scan(&mut self, seed: u64) {
        self.allocator.seed(seed, self.highest_bit);
    }

    pub fn nr_cpus(&self) -> usize {
        self.nr_cpus
    }

    /// Slots usable for swap (`pages`).
    pub fn pages(&self) -> u64 {
        self.max as u64 - 1
    }

    pub fn free_slots(&self) -> u64 {
        self.pages() - self.inuse_pages
    }

    /// cluster_info exists: non-rotational devices, and from v6.14 rotational ones too.
    pub fn has_clusters(&self) -> bool {
        self.cluster_info
    }

    /// SWP_SOLIDSTATE (a swap file is taken to sit on an SSD).
    pub(super) fn solidstate(&self) -> bool {
        self.kind != SwapKind::Hdd
    }

    /// SWP_BLKDEV: only block devices allocate large entries.
    fn blkdev(&self) -> bool {
        self.kind != SwapKind::File
    }

    /// On swap_avail_heads: not full.
    pub fn on_avail_list(&self) -> bool {
        self.on_avail
    }

    #[inline]
    pub fn swap_count(&self, off: u32) -> u8 {
        self.swap_map[off as usize] & COUNT_MASK
    }

    pub fn list_len(&self, list: u8) -> u32 {
        self.clusters.list_len(list)
    }

    /// The clusters on a list, head first (for tests and tools; allocates).
    pub fn list_clusters(&self, list: u8) -> Vec<u32> {
        self.clusters.list_clusters(list)
    }

    // ---- Slot accounting ------------------------------------------------------------------

    /// Marks 2^order slots SWAP_HAS_CACHE and accounts them (swap_range_alloc). Cluster
    /// counts and lists are the caller's.
    pub(super) fn take_range(&mut self, off: u32, nr: u32) {
        let r = off as usize..(off + nr) as usize;
        debug_assert!(self.swap_map[r.clone()].iter().all(|&m| m == 0));
        self.swap_map[r].fill(SWAP_HAS_CACHE);
        let end = off + nr - 1;
        if off == self.lowest_bit {
            self.lowest_bit += nr;
        }
        if end == self.highest_bit {
            self.highest_bit -= nr;
        }
        self.inuse_pages += nr as u64;
        if self.inuse_pages == self.pages() {
            // Full: off swap_avail_heads.
            self.lowest_bit = self.max;
            self.highest_bit = 0;
            self.on_avail = false;
            self.became_full = true;
        }
    }

    /// swap_range_free.
    fn swap_range_free(&mut self, off: u32, nr: u32) {
        // clear_shadow_from_swap_cache
        self.shadows[off as usize..(off + nr) as usize].fill(super::workingset::Shadow::NONE);
        let end = off + nr - 1;
        if off < self.lowest_bit {
            self.lowest_bit = off;
        }
        if end > self.highest_bit {
            self.highest_bit = end;
        }
        self.inuse_pages -= nr as u64;
        if !self.on_avail {
            self.on_avail = true;
            self.rejoined_avail = true;
        }
    }

    /// swap_entry_range_free: slots that are exactly HAS_CACHE (or 0) become free; the cluster
    /// count drops, at 0 the cluster is freed (or discarded first), and from v6.12 a full,
    /// fragmented (or v6.18 isolated) cluster moves to nonfull[its order].
    pub fn free_slots_range(&mut self, off: u32, nr: u32, now_ns: u64) {
        let r = off as usize..(off + nr) as usize;
        debug_assert!(self.swap_map[r.clone()]
            .iter()
            .all(|&m| m == SWAP_HAS_CACHE || m == 0));
        self.swap_map[r].fill(0);
        if self.has_clusters() {
            let idx = off / SWAPFILE_CLUSTER;
            debug_assert_eq!(idx, (off + nr - 1) / SWAPFILE_CLUSTER);
            let ci = &mut self.clusters[idx as usize];
            debug_assert!(ci.count as u32 >= nr);
            ci.count -= nr as u16;
            let (count, list, order) = (ci.count, ci.list, ci.order as u32);
            if count == 0 {
                self.free_cluster(idx, now_ns);
            } else if self.order_lists && list != list_nonfull(order) {
                self.clusters.list_add_tail(idx, list_nonfull(order));
            }
        }
        self.swap_range_free(off, nr);
    }

    // ---- Cache-only reclaim ---------------------------------------------------------------

    /// __try_to_reclaim_swap(TTRS_ANYWAY [| TTRS_DIRECT]) for the swap-cache folio holding
    /// `off`, done in place: its slots must all be exactly SWAP_HAS_CACHE (no swap PTE left).
    /// Returns the folio's page count when reclaimed, minus it when the folio stays, 0 when no
    /// folio caches the slot (e.g. the slot cache holds it). Direct reclaim (v6.12+) frees the
    /// range at once; before, an order-0 or mTHP folio's slots go through the slot cache when it
    /// is on (put_swap_folio → free_swap_slot).
    pub(super) fn try_to_reclaim_swap(&mut self, off: u32, direct: bool, ctx: &AllocCtx) -> i64 {
        let folio = self.cache[off as usize];
        if folio == NIL {
            return 0;
        }
        let (nr, freeable) = (ctx.folio)(folio);
        // Large folios sit naturally aligned in swap.
        let first = off & !(nr - 1);
        let r = first as usize..(first + nr).min(self.max) as usize;
        let ok = freeable
            && first + nr <= self.max
            && self.cache[r.clone()].iter().all(|&f| f == folio)
            && self.swap_map[r.clone()]
                .iter()
                .all(|&m| m == SWAP_HAS_CACHE);
        if !ok {
            return -(nr as i64);
        }
        self.cache[r].fill(NIL);
        self.reclaimed_folios.push(folio);
        if !direct && ctx.slot_cache_active && nr != SWAPFILE_CLUSTER {
            self.deferred_slot_frees.extend(first..first + nr);
        } else {
            self.free_slots_range(first, nr, ctx.now_ns);
            for s in first..first + nr {
                self.slot_freed(s);
            }
        }
        nr as i64
    }

    /// swap_reclaim_full_clusters (v6.12+): from the head of the full list, one cluster (or with
    /// `force`, inuse/512 of them), each rotated to the tail (with `isolate`, v6.18: taken off,
    /// then relocated unless a free moved it); every cache-only slot with a folio is reclaimed.
    pub(super) fn reclaim_full_clusters(&mut self, force: bool, isolate: bool, ctx: &AllocCtx) {
        let mut to_scan: i64 = if force {
            (self.inuse_pages / SWAPFILE_CLUSTER as u64) as i64
        } else {
            1
        };
        while let Some(idx) = self.clusters.first(LIST_FULL) {
            if isolate {
                self.clusters.list_del(idx);
            } else {
                self.clusters.list_add_tail(idx, LIST_FULL);
            }
            let range = self.cluster_range(idx);
            to_scan -= 1;
            let mut off = range.start as u32;
            while off < range.end as u32 {
                if self.swap_map[off as usize] == SWAP_HAS_CACHE {
                    let n = self.try_to_reclaim_swap(off, true, ctx);
                    if n != 0 {
                        off += n.unsigned_abs() as u32;
                        continue;
                    }
                }
                off += 1;
            }
            if isolate && self.clusters[idx as usize].list == LIST_NONE {
                self.relocate_cluster(idx, ctx.now_ns);
            }
            if to_scan <= 0 {
                break;
            }
        }
    }

    /// After an allocation of the cluster allocators (v6.12+): a device that filled up
    /// schedules reclaim_work (when vm_swap_full()), which reclaims the cache-only slots of all
    /// its full clusters. The kernel runs it from a worker soon after; here it runs at once.
    pub(super) fn reclaim_work(&mut self, ctx: &AllocCtx, isolate: bool) {
        if std::mem::take(&mut self.became_full) && ctx.swap_full {
            self.reclaim_full_clusters(true, isolate, ctx);
        }
    }

    // ---- Entry points --------------------------------------------------------------------

    /// Runs `f` on the device's allocator and the device, the allocator taken out meanwhile.
    pub(super) fn with_allocator<R>(
        &mut self,
        f: impl FnOnce(&mut SwapAllocator, &mut SwapInfo) -> R,
    ) -> R {
        let mut alloc = std::mem::replace(&mut self.allocator, SwapAllocator::Detached);
        let r = f(&mut alloc, self);
        self.allocator = alloc;
        r
    }

    /// swap_alloc_fast (v6.18; None on earlier generations): this CPU's cached offset.
    pub fn alloc_fast(&mut self, cpu: usize, order: u32, ctx: &AllocCtx) -> Option<u32> {
        self.allocator.begin();
        self.became_full = false;
        self.complete_discards(ctx.now_ns);
        self.with_allocator(|a, si| a.alloc_fast(si, cpu, order, ctx))
    }

    /// scan_swap_map_slots / cluster_alloc_swap (v6.9–v6.12) or the slow path of
    /// cluster_alloc_swap_entry (v6.18) on this device: up to `nr` allocations of 2^order slots
    /// marked SWAP_HAS_CACHE, offsets pushed to `out`. Returns how many.
    pub fn alloc_slots(
        &mut self,
        cpu: usize,
        order: u32,
        nr: usize,
        ctx: &AllocCtx,
        out: &mut Vec<u32>,
    ) -> usize {
        let start_len = out.len();
        self.allocator.begin();
        self.became_full = false;
        self.complete_discards(ctx.now_ns);
        if order > PMD_ORDER || (order > 0 && (!self.blkdev() || !self.has_clusters())) {
            return 0;
        }
        self.with_allocator(|a, si| a.alloc_slots(si, cpu, order, nr, ctx, out));
        out.len() - start_len
    }

    /// One allocation of 2^order slots as the whole allocator does it on this device alone
    /// (v6.18: fast path, slow path, then the order-0 synchronous discard). Returns the first
    /// offset. An allocation that had to wait for discards sets `waited_until_ns`.
    pub fn alloc_with(&mut self, cpu: usize, order: u32, ctx: &AllocCtx) -> Option<u32> {
        let fast = self.allocator.has_alloc_fast();
        loop {
            if fast {
                if let Some(off) = self.alloc_fast(cpu, order, ctx) {
                    return Some(off);
                }
            }
            let mut out = std::mem::take(&mut self.out_scratch);
            out.clear();
            self.alloc_slots(cpu, order, 1, ctx, &mut out);
            let got = out.first().copied();
            self.out_scratch = out;
            if got.is_none() && fast && order == 0 && self.discard_now() {
                continue;
            }
            return got;
        }
    }

    /// Allocates 2^order slots marked SWAP_HAS_CACHE at time `now_ns`; returns the first offset.
    /// `swap_full` is vm_swap_full(). Cache-only slots are not reclaimed (no folios here).
    pub fn alloc(&mut self, cpu: usize, order: u32, swap_full: bool, now_ns: u64) -> Option<u32> {
        let ctx = AllocCtx {
            swap_full,
            now_ns,
            slot_cache_active: false,
            folio: &no_folios,
        };
        self.alloc_with(cpu, order, &ctx)
    }
}

pub fn swapon_all(spec: &RunSpec, hw: &crate::machine::hw::HwCosts) -> Vec<SwapInfo> {
    let nr_cpus = spec.scenario.machine.nr_cpus() as usize;
    let gen = spec.profile.generation;
    let mut v: Vec<SwapInfo> = spec
        .scenario
        .swap
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let discard = s.discard.then_some(hw.ssd_discard_ns);
            let mut si = SwapInfo::with_discard(
                &s.name,
                s.kind,
                s.priority,
                s.size_bytes,
                nr_cpus,
                gen,
                discard,
            );
            si.seed_scan(spec.seed.wrapping_add(i as u64));
            si
        })
        .collect();
    // Higher priority first; equal priorities keep file order.
    v.sort_by_key(|s| std::cmp::Reverse(s.prio));
    v
}

impl Kernel {
    /// vm_swap_full: more than half of all swap is in use.
    pub fn vm_swap_full(&self) -> bool {
        let total: u64 = self.swap.iter().map(|s| s.pages()).sum();
        self.nr_swap_pages() * 2 < total
    }

    /// get_swap_pages for one folio of 2^order pages: (device, first offset).
    pub fn get_swap_pages(&mut self, order: u32) -> Option<(u32, u32)> {
        let (dev, n) = self.get_swap_pages_core(order, 1)?;
        debug_assert_eq!(n, 1);
        Some((dev, self.swap[dev as usize].out_scratch[0]))
    }

    /// get_swap_pages(n_goal, ..., order): up to min(n_goal, 64) allocations, all from one
    /// device (the slot cache's refill), appended to `out`. Returns how many.
    pub fn get_swap_pages_nr(
        &mut self,
        order: u32,
        n_goal: usize,
        out: &mut Vec<(u32, u32)>,
    ) -> usize {
        let Some((dev, n)) = self.get_swap_pages_core(order, n_goal) else {
            return 0;
        };
        let si = &self.swap[dev as usize];
        out.extend(si.out_scratch[..n].iter().map(|&off| (dev, off)));
        n
    }

    /// Devices that became non-full since the last call rejoin swap_avail_heads behind their
    /// priority siblings (add_to_avail_list).
    fn rejoin_avail_devices(&mut self) {
        for dev in 0..self.swap.len() {
            if std::mem::take(&mut self.swap[dev].rejoined_avail) {
                self.plist_requeue(dev as u32);
            }
        }
    }

    /// The allocation; the offsets are left in the chosen device's `out_scratch`.
    fn get_swap_pages_core(&mut self, order: u32, n_goal: usize) -> Option<(u32, usize)> {
        if order > 0 && !self.spec.knobs.thp_swap {
            return None;
        }
        self.rejoin_avail_devices();
        if self.generation().has_swap_alloc_fast() {
            return self.folio_alloc_swap_v6_18(order);
        }
        let size = 1u64 << order;
        let free = self.nr_swap_pages();
        let avail = free / size;
        if avail == 0 {
            return None;
        }
        let n_goal = (n_goal.min(SWAP_BATCH) as u64).min(avail) as usize;
        // nr_swap_pages is reserved up front, so the allocation sees vm_swap_full() after it.
        let total: u64 = self.swap.iter().map(|s| s.pages()).sum();
        let swap_full = (free - n_goal as u64 * size) * 2 < total;
        let slot_cache_active = self.slot_cache.active;
        let mut buf = [0u32; MAX_SWAPFILES];
        let heap;
        let devs: &[u32] = if self.swap_avail.len() <= MAX_SWAPFILES {
            buf[..self.swap_avail.len()].copy_from_slice(&self.swap_avail);
            &buf[..self.swap_avail.len()]
        } else {
            heap = self.swap_avail.clone();
            &heap
        };
        for &dev in devs {
            if !self.swap[dev as usize].on_avail {
                continue;
            }
            self.plist_requeue(dev);
            let n = self.alloc_on(dev, order, n_goal, swap_full, slot_cache_active, false);
            if n > 0 {
                return Some((dev, n));
            }
            if order > 0 {
                // A large request only ever tries one device.
                return None;
            }
        }
        None
    }

    /// One device's allocation with the kernel's view of folios; finishes the reclaims it did
    /// and charges its time. `fast` is v6.18's swap_alloc_fast.
    fn alloc_on(
        &mut self,
        dev: u32,
        order: u32,
        n_goal: usize,
        swap_full: bool,
        slot_cache_active: bool,
        fast: bool,
    ) -> usize {
        let d = dev as usize;
        let cpu = self.current_cpu as usize % self.swap[d].nr_cpus();
        let now_ns = self.clock_ns;
        let n = {
            let mem = &self.mem;
            let folio = |f: u32| (mem.nr_pages(f), !mem.test(f, pg::WRITEBACK));
            let ctx = AllocCtx {
                swap_full,
                now_ns,
                slot_cache_active,
                folio: &folio,
            };
            let si = &mut self.swap[d];
            let mut out = std::mem::take(&mut si.out_scratch);
            out.clear();
            if fast {
                if let Some(off) = si.alloc_fast(cpu, order, &ctx) {
                    out.push(off);
                }
            } else {
                si.alloc_slots(cpu, order, n_goal, &ctx, &mut out);
            }
            let n = out.len();
            si.out_scratch = out;
            n
        };
        self.spend(super::TimeKind::SwapAlloc, self.hw.swap_slot_alloc_ns);
        self.finish_swap_reclaim(dev);
        let waited = std::mem::take(&mut self.swap[d].waited_until_ns);
        self.wait_until(super::TimeKind::IoWait, waited);
        // v6.18: the scan made this device the CPU's cached `si` for the order.
        if self.swap[d].allocator.take_percpu_scanned() {
            for (e, si) in self.swap.iter_mut().enumerate() {
                if e != d {
                    let c = cpu % si.nr_cpus();
                    si.allocator.forget_cpu_cluster(c, order);
                }
            }
        }
        n
    }

    /// folio_alloc_swap of v6.18: the fast path on this CPU's cached device, the slow path over
    /// the devices by priority (round-robin among equals; a large folio tries one), then for
    /// order 0 a synchronous discard on the first device with discards pending, and again.
    fn folio_alloc_swap_v6_18(&mut self, order: u32) -> Option<(u32, usize)> {
        loop {
            let swap_full = self.vm_swap_full();
            let cpu = self.current_cpu as usize;
            let cached = (0..self.swap.len()).find(|&d| {
                let si = &self.swap[d];
                si.allocator.has_cpu_cluster(cpu % si.nr_cpus(), order)
            });
            if let Some(dev) = cached {
                if self.alloc_on(dev as u32, order, 1, swap_full, false, true) > 0 {
                    return Some((dev as u32, 1));
                }
            }
            let mut buf = [0u32; MAX_SWAPFILES];
            let heap;
            let devs: &[u32] = if self.swap_avail.len() <= MAX_SWAPFILES {
                buf[..self.swap_avail.len()].copy_from_slice(&self.swap_avail);
                &buf[..self.swap_avail.len()]
            } else {
                heap = self.swap_avail.clone();
                &heap
            };
            for &dev in devs {
                if !self.swap[dev as usize].on_avail {
                    continue;
                }
                self.plist_requeue(dev);
                if self.alloc_on(dev, order, 1, swap_full, false, false) > 0 {
                    return Some((dev, 1));
                }
                if order > 0 {
                    return None;
                }
            }
            if order > 0 {
                return None;
            }
            // swap_sync_discard: devices in priority order (self.swap is sorted by priority).
            let dev = (0..self.swap.len()).find(|&d| self.swap[d].list_len(LIST_DISCARD) > 0)?;
            self.swap[dev].discard_now();
            let waited = std::mem::take(&mut self.swap[dev].waited_until_ns);
            self.wait_until(super::TimeKind::IoWait, waited);
        }
    }

    /// plist_requeue: the device goes behind the others of its priority, so equal priorities
    /// take turns.
    fn plist_requeue(&mut self, dev: u32) {
        let prio = self.swap[dev as usize].prio;
        let pos = self
            .swap_avail
            .iter()
            .position(|&d| d == dev)
            .expect("device on the avail list");
        self.swap_avail.remove(pos);
        let end = self
            .swap_avail
            .iter()
            .rposition(|&d| self.swap[d as usize].prio == prio)
            .map_or(pos, |i| i + 1);
        self.swap_avail.insert(end, dev);
    }

    /// The folio side of the allocator's cache-only reclaim: the folios leave the swap cache
    /// (dirty, as delete_from_swap_cache + folio_set_dirty leave them) and an unmapped one on
    /// the LRU is freed; slots reclaimed through the slot cache (v6.9/v6.10) go to it.
    fn finish_swap_reclaim(&mut self, dev: u32) {
        let d = dev as usize;
        if self.swap[d].reclaimed_folios.is_empty() && self.swap[d].deferred_slot_frees.is_empty() {
            return;
        }
        let mut folios = std::mem::take(&mut self.swap[d].reclaimed_folios);
        for &f in &folios {
            self.mem.clear(f, pg::SWAPCACHE);
            self.mem.pages[f as usize].private = 0;
            self.mem.set(f, pg::DIRTY);
            if self.mem.mapcount(f) == 0 && self.mem.test(f, pg::LRU) {
                self.free_folio(f);
            }
        }
        folios.clear();
        self.swap[d].reclaimed_folios = folios;
        let mut slots = std::mem::take(&mut self.swap[d].deferred_slot_frees);
        for &off in &slots {
            self.free_swap_slot(dev, off);
        }
        slots.clear();
        self.swap[d].deferred_slot_frees = slots;
        self.charge_zram_frees(dev);
    }

    pub fn swap_duplicate(&mut self, dev: u32, off: u32) {
        let m = &mut self.swap[dev as usize].swap_map[off as usize];
        debug_assert!(*m & COUNT_MASK < COUNT_MASK - 1);
        *m += 1;
    }

    /// swap_free: drop one reference; the slot is free when nothing else holds it.
    pub fn swap_free(&mut self, dev: u32, off: u32) {
        let m = &mut self.swap[dev as usize].swap_map[off as usize];
        debug_assert!(*m & COUNT_MASK > 0);
        *m -= 1;
        if *m == 0 {
            self.free_swap_slot(dev, off);
        }
        self.spend(super::TimeKind::SwapFree, self.hw.swap_free_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::swap_alloc::testing::{dev, MIB};
    use crate::mm::swap_cluster::NONE;

    // ---- swapon ----

    #[test]
    fn free_list_order_at_swapon_per_generation() {
        for gen in [Generation::V6_9, Generation::V6_10, Generation::V6_12] {
            let si = dev(gen, 256 * MIB);
            // Column-major over 32 columns: column 0 is 0 (the header's), 32, 64, 96.
            assert_eq!(&si.list_clusters(LIST_FREE)[..6], &[32, 64, 96, 1, 33, 65]);
            assert_eq!(si.list_len(LIST_FREE), 127);
        }
        assert_eq!(dev(Generation::V6_9, 256 * MIB).clusters[0].list, LIST_NONE);
        assert_eq!(
            dev(Generation::V6_10, 256 * MIB).clusters[0].list,
            LIST_NONE
        );
        let si = dev(Generation::V6_12, 256 * MIB);
        assert_eq!(si.list_clusters(list_nonfull(0)), vec![0]);
        // The newest kernels dropped the column shuffle.
        let si = dev(Generation::V6_18, 256 * MIB);
        assert_eq!(si.list_clusters(LIST_FREE), (1..128).collect::<Vec<u32>>());
        assert_eq!(si.list_clusters(list_nonfull(0)), vec![0]);
        // A partial last cluster is used from the start: on nonfull[0] in v6.12, no list before.
        let si = dev(Generation::V6_12, 64 * MIB + 8192);
        assert_eq!(si.list_clusters(list_nonfull(0)), vec![0, 32]);
        assert_eq!(si.clusters[32].count, 510);
        let si = dev(Generation::V6_9, 64 * MIB + 8192);
        assert_eq!(si.clusters[32].list, LIST_NONE);
        assert!(!si.list_clusters(LIST_FREE).contains(&32));
        // Rotational devices have no clusters up to v6.12.
        let hdd = SwapInfo::new("h", SwapKind::Hdd, -2, 64 * MIB, 1, Generation::V6_12);
        assert_eq!(hdd.list_len(LIST_FREE), 0);
        let hdd = SwapInfo::new("h", SwapKind::Hdd, -2, 64 * MIB, 1, Generation::V6_18);
        assert_eq!(hdd.list_len(LIST_FREE), 31);
    }

    // ---- Kernel level ----

    fn boot(profile: &str, cpus: u32, swaps: &str) -> Kernel {
        let toml = format!(
            r#"
name = "t"
[[machine.node]]
memory = "1G"
cpus = {cpus}
{swaps}
[[task]]
name = "t"
ops = [{{ op = "mmap", region = "a", size = "4M" }}]
"#
        );
        crate::mm::boot_for_test(&toml, profile).0
    }

    const TWO_EQUAL: &str = r#"
[[swap]]
name = "a"
kind = "ssd"
size = "64M"
priority = 5
[[swap]]
name = "b"
kind = "ssd"
size = "64M"
priority = 5
"#;

    #[test]
    fn slot_cache_thresholds_and_cached_frees_are_not_reused() {
        // One CPU: active above 320 free slots, inactive below 128.
        let swaps = "[[swap]]\nname = \"z\"\nkind = \"ssd\"\nsize = \"4M\"\n";
        let mut k = boot("v6.12", 1, swaps);
        assert!(!k.slot_cache.active, "the cache starts inactive");
        let (dev, x) = k.alloc_swap_slot().unwrap();
        assert!(k.slot_cache.active, "1023 free > 320");
        assert_eq!(
            k.swap[0].inuse_pages, 64,
            "a refill takes a batch, counted as used"
        );
        k.free_swap_slot(dev, x);
        assert_eq!(k.swap[0].swap_map[x as usize], SWAP_HAS_CACHE);
        assert_eq!(k.swap[0].inuse_pages, 64);
        // Point the CPU's cursor at the freed slot: the scan passes over it.
        *k.swap[0].allocator.cpu_next_mut(0, 0) = x;
        let (_, y) = k.get_swap_pages(0).unwrap();
        assert_ne!(y, x, "a slot held by the slot cache is not reusable");
        // Use slots until fewer than 128 are free: the cache turns off and drains.
        while k.nr_swap_pages() >= 128 {
            k.alloc_swap_slot().unwrap();
        }
        k.alloc_swap_slot().unwrap();
        assert!(!k.slot_cache.active);
        assert_eq!(k.swap[0].swap_map[x as usize], 0, "released by the drain");
        // No slot cache after v6.14.
        let mut k = boot("v6.18", 1, swaps);
        k.alloc_swap_slot().unwrap();
        assert_eq!(k.swap[0].inuse_pages, 1);
    }

    #[test]
    fn equal_priority_devices_alternate_up_to_v6_12_and_stick_to_the_cpu_cache_in_v6_18() {
        let mut k = boot("v6.12", 1, TWO_EQUAL);
        let devs: Vec<u32> = (0..4).map(|_| k.get_swap_pages(0).unwrap().0).collect();
        assert_eq!(devs, [0, 1, 0, 1]);
        // The newest allocator's fast path stays on this CPU's cached device and offset.
        // (Order 0 starts on nonfull[0], the header's cluster, before any free cluster.)
        let mut k = boot("v6.18", 1, TWO_EQUAL);
        let got: Vec<(u32, u32)> = (0..4).map(|_| k.get_swap_pages(0).unwrap()).collect();
        assert_eq!(got, [(0, 1), (0, 2), (0, 3), (0, 4)]);
        // A large folio goes through the slow path when its order has no cached cluster:
        // round-robin moved on to the other device, which becomes the cached one.
        assert_eq!(k.get_swap_pages(4), Some((1, 512)));
        assert_eq!(k.get_swap_pages(4), Some((1, 528)));
        assert_eq!(*k.swap[0].allocator.cpu_next_mut(0, 4), NONE);
    }

    #[test]
    fn a_batch_comes_from_one_device() {
        let mut k = boot("v6.12", 1, TWO_EQUAL);
        let mut out = Vec::new();
        assert_eq!(k.get_swap_pages_nr(0, 100, &mut out), SWAP_BATCH);
        assert!(out.iter().all(|&(d, _)| d == 0));
        assert_eq!(out[63], (0, 575));
        out.clear();
        k.get_swap_pages_nr(0, 10, &mut out);
        assert!(out.iter().all(|&(d, _)| d == 1));
    }

    #[test]
    fn a_full_device_leaves_the_rotation_until_a_slot_is_freed() {
        let swaps = "[[swap]]\nname = \"a\"\nkind = \"ssd\"\nsize = \"4M\"\npriority = 5\n\
                     [[swap]]\nname = \"b\"\nkind = \"ssd\"\nsize = \"64M\"\npriority = 5\n";
        let mut k = boot("v6.12", 1, swaps);
        let mut on_a = Vec::new();
        while k.swap[0].free_slots() > 0 {
            let (d, off) = k.get_swap_pages(0).unwrap();
            if d == 0 {
                on_a.push(off);
            }
        }
        assert!(!k.swap[0].on_avail_list());
        for _ in 0..3 {
            assert_eq!(k.get_swap_pages(0).unwrap().0, 1);
        }
        let now = k.clock_ns;
        k.swap[0].free_slots_range(on_a[0], 1, now);
        assert!(k.swap[0].on_avail_list());
        // Back behind its priority sibling.
        assert_eq!(k.get_swap_pages(0).unwrap().0, 1);
        assert_eq!(k.get_swap_pages(0), Some((0, on_a[0])));
    }
}
