//! Swap areas: swap_map, clusters and the swap-slot allocator of each kernel generation.
//!
//! Models mm/swapfile.c (spec swap.md §A–C, §H); slot 0 is the header, clusters have 512 slots.
//! - v6.9 (§B(i)): scan_swap_map_slots with this CPU's cluster {index, next} taken from the head
//!   of the free list, the free-list conflict check, and once no cluster is free the wrap-around
//!   `scan:` from the CPU's scan base (cluster_next_cpu: random at swapon and on crossing a 64 MiB
//!   chunk, drawn from the run seed). PMD order only whole, by swap_alloc_cluster; mTHP orders
//!   fail (the kernel would wrongly hand out one slot; v6.9 splits mTHPs before swap-out).
//! - v6.10 (§B(ii)): per-CPU next[order] cursors over free-list clusters, naturally aligned; a
//!   cluster is free again only at count 0; order 0 steals by the linear scan.
//! - v6.12 (§B(iii)): free / nonfull[o] / frag[o] / full / discard lists, order-0 stealing,
//!   cache-only reuse and full-cluster reclaim only when vm_swap_full().
//! - v6.18 (§B(iv), UNSURE: read from a newer tree): the global per-CPU {si, offset} fast path,
//!   isolate-and-relocate, nonfull before free, one frag cluster, rotational devices with
//!   clusters, free list in plain order, order-0 synchronous discard.
//! - Rotational devices up to v6.12: no clusters, order 0 only, cluster_next with 512-slot runs.
//!
//! Cache-only slots are reclaimed in place; `Kernel` then takes their folios out of the swap
//! cache (v6.9/v6.10 free them through an active slot cache, swap_slots.rs). Left out: swap
//! continuation counts, bad pages, locks and the races they allow, swapoff, the swap table.

use super::folio::{pg, NIL};
use super::Kernel;
use crate::scenario::generation::Generation;
use crate::scenario::{RunSpec, SwapKind};
use crate::sim::rng::Rng;
use crate::sim::FifoServer;
use std::collections::VecDeque;

pub const SWAPFILE_CLUSTER: u32 = 512;
/// swap_map bits.
pub const SWAP_HAS_CACHE: u8 = 0x40;
pub const SWAP_MAP_BAD: u8 = 0x3f;
const COUNT_MASK: u8 = 0x3f;
/// Column count of the swapon free-list order up to v6.12 (SWAP_ADDRESS_SPACE_PAGES / 512).
const CLUSTER_COLS: u32 = 32;
const NONE: u32 = u32::MAX;
const SWAP_NR_ORDERS: usize = 10;
const PMD_ORDER: u32 = crate::scenario::knobs::PMD_ORDER as u32;
/// The most slots one get_swap_pages call hands out.
pub const SWAP_BATCH: usize = 64;
/// Scan budget of the old scanner before it "takes a break".
const LATENCY_LIMIT: i64 = 256;
/// One swap address space (64 MiB): cluster_next_cpu jumps when it crosses one.
const SWAP_ADDRESS_SPACE_SHIFT: u32 = 14;
/// MAX_SWAPFILES.
const MAX_SWAPFILES: usize = 32;

/// The cluster lists, by index: free, full, discard, then nonfull[order] and frag[order].
pub const LIST_FREE: u8 = 0;
pub const LIST_FULL: u8 = 1;
pub const LIST_DISCARD: u8 = 2;
pub const fn list_nonfull(order: u32) -> u8 {
    3 + order as u8
}
pub const fn list_frag(order: u32) -> u8 {
    3 + SWAP_NR_ORDERS as u8 + order as u8
}
const NR_LISTS: usize = 3 + 2 * SWAP_NR_ORDERS;
/// On no list (in use before v6.12, or isolated in v6.18).
pub const LIST_NONE: u8 = u8::MAX;

#[derive(Clone, Copy, Debug)]
pub struct ClusterInfo {
    pub count: u16,
    /// Order of the allocations the cluster serves (v6.12+: set by its first allocation).
    pub order: u8,
    /// The list it is on; stands for the kernel's cluster flags.
    pub list: u8,
    prev: u32,
    next: u32,
}

#[derive(Clone, Copy, Debug)]
struct ListHead {
    head: u32,
    tail: u32,
    len: u32,
}

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

/// The old scanner's steps (the labels of scan_swap_map_slots).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    Checks,
    Scan,
    Done,
    NoPage,
}

/// cluster_scan_range's verdict on one aligned range.
enum Range {
    Free,
    NeedReclaim,
    Busy,
}

pub struct SwapInfo {
    pub name: String,
    pub kind: SwapKind,
    pub prio: i32,
    pub gen: Generation,
    /// Slots including the header.
    pub max: u32,
    pub swap_map: Vec<u8>,
    /// Swap cache: the folio caching each slot, or NIL.
    pub cache: Vec<u32>,
    /// Content of the page written to each slot.
    pub content: Vec<u8>,
    pub inuse_pages: u64,
    pub clusters: Vec<ClusterInfo>,
    lists: [ListHead; NR_LISTS],
    /// Per CPU, per order: the next offset to try (v6.9 uses order 0 only; v6.18: valid only on
    /// the device that is this CPU's cached `si` for the order). NONE = no current cluster.
    percpu_next: Vec<[u32; SWAP_NR_ORDERS]>,
    /// v6.9: per CPU, the cluster `percpu_next[cpu][0]` walks (NONE = null).
    percpu_cluster: Vec<u32>,
    /// Per CPU scan base of the old scanner on non-rotational devices (cluster_next_cpu).
    cluster_next_cpu: Vec<u32>,
    /// Rotational devices: the sequential cursor and its countdown (cluster_next, cluster_nr).
    cluster_next: u32,
    cluster_nr: u32,
    /// v6.18 rotational devices: the device-wide cursor per order (global_cluster->next[]).
    global_next: [u32; SWAP_NR_ORDERS],
    /// Bounds of the free slots kept as the kernel keeps them (lowest_bit, highest_bit).
    lowest_bit: u32,
    highest_bit: u32,
    /// The random choices of set_cluster_next and swapon's scan bases.
    scan_rng: Rng,
    /// On swap_avail_heads (not full).
    on_avail: bool,
    /// Became non-full since get_swap_pages last looked: goes behind its priority siblings.
    rejoined_avail: bool,
    /// Filled up during the current allocation (schedules reclaim_work from v6.12).
    became_full: bool,
    /// v6.18: the current allocation scanned a cluster and so set this CPU's cached `si`.
    percpu_scanned: bool,
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
        let empty = ClusterInfo {
            count: 0,
            order: 0,
            list: LIST_NONE,
            prev: NONE,
            next: NONE,
        };
        let mut si = SwapInfo {
            name: name.into(),
            kind,
            prio,
            gen,
            max,
            swap_map: vec![0; max as usize],
            cache: vec![NIL; max as usize],
            content: vec![0; max as usize],
            inuse_pages: 0,
            clusters: vec![empty; nr_clusters as usize],
            lists: [ListHead {
                head: NONE,
                tail: NONE,
                len: 0,
            }; NR_LISTS],
            percpu_next: vec![[NONE; SWAP_NR_ORDERS]; nr_cpus],
            percpu_cluster: vec![NONE; nr_cpus],
            cluster_next_cpu: vec![1; nr_cpus],
            cluster_next: 1,
            cluster_nr: 0,
            global_next: [NONE; SWAP_NR_ORDERS],
            lowest_bit: 1,
            highest_bit: max - 1,
            scan_rng: Rng::new(0),
            on_avail: true,
            rejoined_avail: false,
            became_full: false,
            percpu_scanned: false,
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
        };
        si.swap_map[0] = SWAP_MAP_BAD;
        si.clusters[0].count = 1;
        // The slots past the end of the last cluster are counted as used.
        let tail = nr_clusters * SWAPFILE_CLUSTER - max;
        si.clusters[(nr_clusters - 1) as usize].count += tail as u16;
        if si.has_clusters() {
            if gen >= Generation::V6_18 {
                // The swap table made the column shuffle pointless; clusters go on in order.
                for idx in 0..nr_clusters {
                    si.setup_cluster(idx);
                }
            } else {
                // Column-major, so that CPUs start in different 64 MiB swap address spaces.
                for col in 0..CLUSTER_COLS {
                    let mut idx = col;
                    while idx < nr_clusters {
                        si.setup_cluster(idx);
                        idx += CLUSTER_COLS;
                    }
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
            self.list_add_tail(idx, LIST_FREE);
        } else if self.gen >= Generation::V6_12 {
            self.list_add_tail(idx, list_nonfull(0));
        }
    }

    /// Seeds the scanner's random choices and draws each CPU's scan base as swapon does
    /// (get_random_u32_inclusive(1, highest_bit)). The stream is derived from the run seed, so a
    /// run stays a function of (scenario, profile, seed).
    pub fn seed_scan(&mut self, seed: u64) {
        self.scan_rng = Rng::new(seed ^ 0x7377_6170_5f73_6361);
        for cpu in 0..self.cluster_next_cpu.len() {
            self.cluster_next_cpu[cpu] = 1 + self.scan_rng.below(self.highest_bit as u64) as u32;
        }
    }

    pub fn nr_cpus(&self) -> usize {
        self.percpu_next.len()
    }

    /// Slots usable for swap (`pages`).
    pub fn pages(&self) -> u64 {
        self.max as u64 - 1
    }

    pub fn free_slots(&self) -> u64 {
        self.pages() - self.inuse_pages
    }

    /// cluster_info exists: non-rotational devices, and from v6.18 rotational ones too.
    pub fn has_clusters(&self) -> bool {
        self.kind != SwapKind::Hdd || self.gen >= Generation::V6_18
    }

    /// SWP_SOLIDSTATE (a swap file is taken to sit on an SSD).
    fn solidstate(&self) -> bool {
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
        self.lists[list as usize].len
    }

    /// The clusters on a list, head first (for tests and tools; allocates).
    pub fn list_clusters(&self, list: u8) -> Vec<u32> {
        let mut v = Vec::new();
        let mut c = self.lists[list as usize].head;
        while c != NONE {
            v.push(c);
            c = self.clusters[c as usize].next;
        }
        v
    }

    fn list_del(&mut self, idx: u32) {
        let ci = self.clusters[idx as usize];
        if ci.list == LIST_NONE {
            return;
        }
        let l = &mut self.lists[ci.list as usize];
        l.len -= 1;
        if ci.prev == NONE {
            l.head = ci.next;
        } else {
            self.clusters[ci.prev as usize].next = ci.next;
        }
        if ci.next == NONE {
            l.tail = ci.prev;
        } else {
            self.clusters[ci.next as usize].prev = ci.prev;
        }
        let c = &mut self.clusters[idx as usize];
        c.list = LIST_NONE;
        c.prev = NONE;
        c.next = NONE;
    }

    /// list_move_tail.
    fn list_add_tail(&mut self, idx: u32, list: u8) {
        self.list_del(idx);
        let l = &mut self.lists[list as usize];
        let old_tail = l.tail;
        l.tail = idx;
        l.len += 1;
        if old_tail == NONE {
            l.head = idx;
        } else {
            self.clusters[old_tail as usize].next = idx;
        }
        let c = &mut self.clusters[idx as usize];
        c.list = list;
        c.prev = old_tail;
        c.next = NONE;
    }

    fn first(&self, list: u8) -> Option<u32> {
        let h = self.lists[list as usize].head;
        (h != NONE).then_some(h)
    }

    fn cluster_range(&self, idx: u32) -> std::ops::Range<usize> {
        let start = idx * SWAPFILE_CLUSTER;
        start as usize..(start + SWAPFILE_CLUSTER).min(self.max) as usize
    }

    // ---- Slot accounting ------------------------------------------------------------------

    /// Marks 2^order slots SWAP_HAS_CACHE and accounts them (swap_range_alloc). Cluster
    /// counts and lists are the caller's.
    fn take_range(&mut self, off: u32, nr: u32) {
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
            } else if self.gen >= Generation::V6_12 && list != list_nonfull(order) {
                self.list_add_tail(idx, list_nonfull(order));
            }
        }
        self.swap_range_free(off, nr);
    }

    /// free_cluster: discard first on a discarding device, else to the tail of the free list.
    fn free_cluster(&mut self, idx: u32, now_ns: u64) {
        self.clusters[idx as usize].order = 0;
        if self.discard {
            self.schedule_discard(idx, now_ns);
        } else {
            self.list_add_tail(idx, LIST_FREE);
        }
    }

    // ---- Discard (§C.6) -------------------------------------------------------------------

    /// swap_cluster_schedule_discard: nothing may allocate in the cluster until the device has
    /// discarded it.
    fn schedule_discard(&mut self, idx: u32, now_ns: u64) {
        let range = self.cluster_range(idx);
        self.swap_map[range].fill(SWAP_MAP_BAD);
        self.list_add_tail(idx, LIST_DISCARD);
        let done = self.queue.serve(now_ns, self.discard_ns);
        self.discard_queue.push_back((done, idx));
    }

    /// The discard work: clusters discarded by `until_ns` join the tail of the free list.
    fn complete_discards(&mut self, until_ns: u64) {
        while let Some(&(done, idx)) = self.discard_queue.front() {
            if done > until_ns {
                break;
            }
            self.discard_queue.pop_front();
            let range = self.cluster_range(idx);
            self.swap_map[range].fill(0);
            self.list_add_tail(idx, LIST_FREE);
        }
    }

    /// swap_do_scheduled_discard run synchronously: waits for every pending discard. Returns
    /// whether there was any.
    pub fn discard_now(&mut self) -> bool {
        let Some(&(last, _)) = self.discard_queue.back() else {
            return false;
        };
        self.waited_until_ns = self.waited_until_ns.max(last);
        self.complete_discards(u64::MAX);
        true
    }

    // ---- Cache-only reclaim ---------------------------------------------------------------

    /// __try_to_reclaim_swap(TTRS_ANYWAY [| TTRS_DIRECT]) for the swap-cache folio holding
    /// `off`, done in place: its slots must all be exactly SWAP_HAS_CACHE (no swap PTE left).
    /// Returns the folio's page count when reclaimed, minus it when the folio stays, 0 when no
    /// folio caches the slot (e.g. the slot cache holds it). Direct reclaim (v6.12+) frees the
    /// range at once; before, an order-0 or mTHP folio's slots go through the slot cache when it
    /// is on (put_swap_folio → free_swap_slot).
    fn try_to_reclaim_swap(&mut self, off: u32, direct: bool, ctx: &AllocCtx) -> i64 {
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
                self.zram_free(s);
            }
        }
        nr as i64
    }

    /// swap_reclaim_full_clusters: from the head of the full list, one cluster (or with `force`,
    /// inuse/512 of them), each rotated to the tail (v6.18: isolated, then relocated unless a
    /// free moved it); every cache-only slot with a folio is reclaimed.
    fn reclaim_full_clusters(&mut self, force: bool, ctx: &AllocCtx) {
        let mut to_scan: i64 = if force {
            (self.inuse_pages / SWAPFILE_CLUSTER as u64) as i64
        } else {
            1
        };
        while let Some(idx) = self.first(LIST_FULL) {
            if self.gen >= Generation::V6_18 {
                self.list_del(idx);
            } else {
                self.list_add_tail(idx, LIST_FULL);
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
            if self.gen >= Generation::V6_18 && self.clusters[idx as usize].list == LIST_NONE {
                self.relocate_cluster(idx, ctx.now_ns);
            }
            if to_scan <= 0 {
                break;
            }
        }
    }

    // ---- v6.9 / v6.10 and rotational devices: scan_swap_map_slots -------------------------

    /// set_cluster_next: the scan base after an allocation; on an SSD, crossing into another
    /// 64 MiB swap address space jumps to a random one.
    fn set_cluster_next(&mut self, cpu: usize, next: u32) {
        if !self.solidstate() {
            self.cluster_next = next;
            return;
        }
        let prev = self.cluster_next_cpu[cpu];
        let mut next = next;
        if prev >> SWAP_ADDRESS_SPACE_SHIFT != next >> SWAP_ADDRESS_SPACE_SHIFT {
            if self.highest_bit <= self.lowest_bit {
                return;
            }
            let span = (self.highest_bit - self.lowest_bit + 1) as u64;
            next = self.lowest_bit + self.scan_rng.below(span) as u32;
            next &= !((1 << SWAP_ADDRESS_SPACE_SHIFT) - 1);
            next = next.max(self.lowest_bit);
        }
        self.cluster_next_cpu[cpu] = next;
    }

    /// The free-list conflict check: the offset lies in a cluster that is free but not the
    /// head of the free list (e.g. this CPU's cluster was emptied and freed meanwhile).
    fn ssd_cluster_conflict(&self, off: u32) -> bool {
        let idx = off / SWAPFILE_CLUSTER;
        match self.first(LIST_FREE) {
            Some(head) => idx != head && self.clusters[idx as usize].list == LIST_FREE,
            None => false,
        }
    }

    fn reset_cursor(&mut self, cpu: usize, order: u32) {
        if self.gen == Generation::V6_9 {
            self.percpu_cluster[cpu] = NONE;
        } else {
            self.percpu_next[cpu][order as usize] = NONE;
        }
    }

    /// scan_swap_map_try_ssd_cluster: the next free (v6.10: naturally aligned, 2^order) range in
    /// this CPU's cluster, or in the cluster at the head of the free list; pending discards are
    /// waited for when no cluster is free. Sets `offset` and `scan_base`.
    fn try_ssd_cluster(
        &mut self,
        cpu: usize,
        order: u32,
        offset: &mut u32,
        scan_base: &mut u32,
    ) -> bool {
        let nr = 1u32 << order;
        let mut guard = self.clusters.len() + 2;
        loop {
            guard -= 1;
            if guard == 0 {
                return false;
            }
            let (mut tmp, idx) = if self.gen == Generation::V6_9 {
                if self.percpu_cluster[cpu] == NONE {
                    match self.first(LIST_FREE) {
                        Some(h) => {
                            self.percpu_cluster[cpu] = h;
                            self.percpu_next[cpu][0] = h * SWAPFILE_CLUSTER;
                        }
                        None if self.discard_now() => {
                            *scan_base = self.cluster_next_cpu[cpu];
                            *offset = *scan_base;
                            continue;
                        }
                        None => return false,
                    }
                }
                (self.percpu_next[cpu][0], self.percpu_cluster[cpu])
            } else {
                let mut t = self.percpu_next[cpu][order as usize];
                if t == NONE {
                    match self.first(LIST_FREE) {
                        Some(h) => t = h * SWAPFILE_CLUSTER,
                        None if self.discard_now() => {
                            *scan_base = self.cluster_next_cpu[cpu];
                            *offset = *scan_base;
                            continue;
                        }
                        None => return false,
                    }
                }
                (t, t / SWAPFILE_CLUSTER)
            };
            let max = ((idx + 1) * SWAPFILE_CLUSTER).min(self.max);
            while tmp < max {
                if tmp + nr <= max
                    && self.swap_map[tmp as usize..(tmp + nr) as usize]
                        .iter()
                        .all(|&m| m == 0)
                {
                    break;
                }
                tmp += nr;
            }
            if tmp >= max {
                self.reset_cursor(cpu, order);
                continue;
            }
            *offset = tmp;
            *scan_base = tmp;
            self.percpu_next[cpu][order as usize] = if self.gen == Generation::V6_9 {
                tmp + 1
            } else if tmp + nr < max {
                tmp + nr
            } else {
                NONE
            };
            return true;
        }
    }

    /// The `scan:` walk: the first slot after `offset` up to highest_bit, then from lowest_bit
    /// up to (not including) `scan_base`, that is free or, when swap is full, cache-only.
    /// `latency` and `scanned_many` follow the kernel's LATENCY_LIMIT bookkeeping; `steps`
    /// counts the slots looked at.
    fn linear_scan(
        &self,
        offset: u32,
        scan_base: u32,
        swap_full: bool,
        latency: &mut i64,
        scanned_many: &mut bool,
        steps: &mut u64,
    ) -> Option<u32> {
        let avail = |m: &u8| *m == 0 || (swap_full && *m == SWAP_HAS_CACHE);
        let parts = [
            (offset as u64 + 1, self.highest_bit as u64 + 1),
            (
                self.lowest_bit as u64,
                (scan_base as u64).min(self.max as u64),
            ),
        ];
        for (lo, hi) in parts {
            if lo >= hi {
                continue;
            }
            let slice = &self.swap_map[lo as usize..hi as usize];
            match slice.iter().position(avail) {
                Some(i) => {
                    burn_latency(latency, scanned_many, i as i64 + 1);
                    *steps += i as u64 + 1;
                    return Some(lo as u32 + i as u32);
                }
                None => {
                    burn_latency(latency, scanned_many, slice.len() as i64);
                    *steps += slice.len() as u64;
                }
            }
        }
        None
    }

    /// add_cluster_info_page (v6.9/v6.10): the first use of a free cluster takes it off the
    /// free list, whose head it must be.
    fn old_cluster_inc(&mut self, off: u32, nr: u32) {
        if !self.has_clusters() {
            return;
        }
        let idx = off / SWAPFILE_CLUSTER;
        if self.clusters[idx as usize].list == LIST_FREE {
            debug_assert_eq!(self.first(LIST_FREE), Some(idx));
            self.list_del(idx);
        }
        self.clusters[idx as usize].count += nr as u16;
    }

    /// scan_swap_map_slots of v6.9/v6.10 (and of rotational devices up to v6.12): up to `nr`
    /// allocations of 2^order slots (order > 0 only on v6.10 SSDs), pushed to `out`.
    fn scan_swap_map_slots(
        &mut self,
        cpu: usize,
        order: u32,
        nr: usize,
        ctx: &AllocCtx,
        out: &mut Vec<u32>,
    ) {
        let nr_pages = 1u32 << order;
        let ssd = self.has_clusters();
        let direct = self.gen >= Generation::V6_12;
        let start_len = out.len();
        let mut latency = LATENCY_LIMIT;
        let mut scanned_many = false;
        // Bounds the rescans after failed cache-only reclaims, which the kernel would retry
        // while time passes.
        let scan_budget = 2 * self.max as u64 + 2;
        let mut scanned_total = 0u64;
        let mut scan_base = if self.solidstate() {
            self.cluster_next_cpu[cpu]
        } else {
            self.cluster_next
        };
        let mut offset = scan_base;
        let mut step = Step::Checks;
        if ssd {
            if !self.try_ssd_cluster(cpu, order, &mut offset, &mut scan_base) {
                step = if order > 0 { Step::NoPage } else { Step::Scan };
            }
        } else if self.cluster_nr == 0 {
            // Every 512 allocations: look from lowest_bit for 512 free slots in a row.
            if self.free_slots() >= SWAPFILE_CLUSTER as u64 {
                scan_base = self.lowest_bit;
                offset = scan_base;
                let mut last_in_cluster = offset + SWAPFILE_CLUSTER - 1;
                let mut found = false;
                while last_in_cluster <= self.highest_bit {
                    if self.swap_map[offset as usize] != 0 {
                        last_in_cluster = offset + SWAPFILE_CLUSTER;
                    } else if offset == last_in_cluster {
                        offset -= SWAPFILE_CLUSTER - 1;
                        self.cluster_next = offset;
                        found = true;
                        break;
                    }
                    offset += 1;
                }
                if !found {
                    offset = scan_base;
                }
            }
            self.cluster_nr = SWAPFILE_CLUSTER - 1;
        } else {
            self.cluster_nr -= 1;
        }
        loop {
            match step {
                Step::Checks => {
                    if ssd {
                        let mut next = Step::Checks;
                        while self.ssd_cluster_conflict(offset) {
                            self.reset_cursor(cpu, order);
                            if out.len() > start_len {
                                next = Step::Done;
                                break;
                            }
                            if !self.try_ssd_cluster(cpu, order, &mut offset, &mut scan_base) {
                                next = if order > 0 { Step::NoPage } else { Step::Scan };
                                break;
                            }
                        }
                        if next != Step::Checks {
                            step = next;
                            continue;
                        }
                    }
                    if self.highest_bit == 0 {
                        step = Step::NoPage;
                        continue;
                    }
                    if offset > self.highest_bit {
                        scan_base = self.lowest_bit;
                        offset = scan_base;
                    }
                    let m = self.swap_map[offset as usize];
                    // Reuse a cache-only slot if its folio can leave the swap cache.
                    if ctx.swap_full && m == SWAP_HAS_CACHE {
                        if self.try_to_reclaim_swap(offset, direct, ctx) > 0 {
                            continue;
                        }
                        step = Step::Scan;
                        continue;
                    }
                    if m != 0 {
                        step = if out.len() == start_len {
                            Step::Scan
                        } else {
                            Step::Done
                        };
                        continue;
                    }
                    self.take_range(offset, nr_pages);
                    self.old_cluster_inc(offset, nr_pages);
                    out.push(offset);
                    if out.len() - start_len == nr || offset >= self.highest_bit {
                        step = Step::Done;
                        continue;
                    }
                    latency -= 1;
                    if latency < 0 {
                        step = Step::Done;
                        continue;
                    }
                    // More slots in this cluster (SSD) or in this run (rotational)?
                    if ssd {
                        if self.try_ssd_cluster(cpu, order, &mut offset, &mut scan_base) {
                            continue;
                        }
                    } else if self.cluster_nr > 0 {
                        offset += 1;
                        if self.swap_map[offset as usize] == 0 {
                            self.cluster_nr -= 1;
                            continue;
                        }
                    }
                    // A quick look further on, unless the scan already took long.
                    step = Step::Done;
                    if !scanned_many {
                        let limit = if offset < scan_base {
                            scan_base.min(self.max - 1)
                        } else {
                            self.highest_bit
                        };
                        while offset <= limit {
                            latency -= 1;
                            if latency <= 0 {
                                break;
                            }
                            if self.swap_map[offset as usize] == 0 {
                                step = Step::Checks;
                                break;
                            }
                            offset += 1;
                        }
                    }
                }
                Step::Scan => {
                    debug_assert_eq!(order, 0);
                    let mut steps = 0;
                    let found = self.linear_scan(
                        offset,
                        scan_base,
                        ctx.swap_full,
                        &mut latency,
                        &mut scanned_many,
                        &mut steps,
                    );
                    scanned_total += steps;
                    match found {
                        Some(o) if scanned_total <= scan_budget => {
                            offset = o;
                            step = Step::Checks;
                        }
                        _ => step = Step::NoPage,
                    }
                }
                Step::Done => {
                    if self.gen == Generation::V6_9 || order == 0 {
                        self.set_cluster_next(cpu, offset + 1);
                    }
                    return;
                }
                Step::NoPage => return,
            }
        }
    }

    /// swap_alloc_cluster (v6.9, PMD order on a block device): the head of the free list, whole.
    fn swap_alloc_cluster(&mut self) -> Option<u32> {
        let idx = self.first(LIST_FREE)?;
        self.list_del(idx);
        let off = idx * SWAPFILE_CLUSTER;
        self.take_range(off, SWAPFILE_CLUSTER);
        self.clusters[idx as usize].count = SWAPFILE_CLUSTER as u16;
        Some(off)
    }

    // ---- v6.12 and v6.18: cluster lists -------------------------------------------------

    /// cluster_scan_range: every slot free, or (only when swap is full) some cache-only.
    fn scan_range(&self, off: u32, nr: u32, swap_full: bool) -> Range {
        let mut need_reclaim = false;
        for &m in &self.swap_map[off as usize..(off + nr) as usize] {
            match m {
                0 => {}
                SWAP_HAS_CACHE if swap_full => need_reclaim = true,
                _ => return Range::Busy,
            }
        }
        if need_reclaim {
            Range::NeedReclaim
        } else {
            Range::Free
        }
    }

    /// cluster_reclaim_range: reclaim the cache-only slots of the range, then recheck it.
    fn cluster_reclaim_range(&mut self, off: u32, nr: u32, ctx: &AllocCtx) -> bool {
        for s in off..off + nr {
            let m = self.swap_map[s as usize];
            if m == 0 {
                continue;
            }
            if m != SWAP_HAS_CACHE || self.try_to_reclaim_swap(s, true, ctx) <= 0 {
                break;
            }
        }
        self.swap_map[off as usize..(off + nr) as usize]
            .iter()
            .all(|&m| m == 0)
    }

    /// cluster_alloc_range: take the slots; v6.12 moves a free cluster to nonfull[order] (or,
    /// for a whole-cluster allocation, straight to full) and a filled one to full. v6.18 leaves
    /// the lists to relocate_cluster.
    fn alloc_range(&mut self, idx: u32, off: u32, order: u32) {
        let nr = 1u32 << order;
        let ci = self.clusters[idx as usize];
        if self.gen == Generation::V6_12 {
            if ci.list == LIST_FREE {
                if nr < SWAPFILE_CLUSTER {
                    self.list_add_tail(idx, list_nonfull(order));
                }
                self.clusters[idx as usize].order = order as u8;
            }
        } else if ci.count == 0 {
            self.clusters[idx as usize].order = order as u8;
        }
        self.take_range(off, nr);
        self.clusters[idx as usize].count += nr as u16;
        if self.gen == Generation::V6_12
            && self.clusters[idx as usize].count as u32 == SWAPFILE_CLUSTER
        {
            self.list_add_tail(idx, LIST_FULL);
        }
    }

    /// alloc_swap_scan_cluster (v6.12): the first free naturally aligned range from `off` to
    /// the cluster's end (no wrap to its start). Returns the offset found and the next offset
    /// to try (NONE when the cluster is full or exhausted).
    fn scan_cluster(&mut self, off: u32, order: u32, ctx: &AllocCtx) -> (Option<u32>, u32) {
        let nr = 1u32 << order;
        let idx = off / SWAPFILE_CLUSTER;
        let start = idx * SWAPFILE_CLUSTER;
        let end = (start + SWAPFILE_CLUSTER).min(self.max);
        if end < start + nr || self.clusters[idx as usize].count as u32 + nr > SWAPFILE_CLUSTER {
            return (None, NONE);
        }
        let last = end - nr;
        let mut o = off.next_multiple_of(nr).max(start);
        while o <= last {
            let usable = match self.scan_range(o, nr, ctx.swap_full) {
                Range::Free => true,
                Range::NeedReclaim => self.cluster_reclaim_range(o, nr, ctx),
                Range::Busy => false,
            };
            if usable {
                self.alloc_range(idx, o, order);
                let next = o + nr;
                let done =
                    self.clusters[idx as usize].count as u32 == SWAPFILE_CLUSTER || next > last;
                return (Some(o), if done { NONE } else { next });
            }
            o += nr;
        }
        (None, NONE)
    }

    /// Order-0 stealing of v6.12 over one list, head first.
    fn steal_from_list(&mut self, list: u8, ctx: &AllocCtx, off: &mut u32) -> Option<u32> {
        let mut guard = self.clusters.len();
        let mut c = self.lists[list as usize].head;
        while c != NONE && guard > 0 {
            guard -= 1;
            let next = self.clusters[c as usize].next;
            let (found, o) = self.scan_cluster(c * SWAPFILE_CLUSTER, 0, ctx);
            *off = o;
            if found.is_some() {
                return found;
            }
            c = next;
        }
        None
    }

    /// cluster_alloc_swap_entry of v6.12.
    fn cluster_alloc_swap_entry_v6_12(
        &mut self,
        cpu: usize,
        order: u32,
        ctx: &AllocCtx,
    ) -> Option<u32> {
        let o_idx = order as usize;
        let mut off = NONE;
        let found = 'done: loop {
            // new_cluster:
            let next = self.percpu_next[cpu][o_idx];
            if next != NONE {
                let (found, o) = self.scan_cluster(next, order, ctx);
                off = o;
                if found.is_some() {
                    break 'done found;
                }
            }
            if let Some(idx) = self.first(LIST_FREE) {
                let (found, o) = self.scan_cluster(idx * SWAPFILE_CLUSTER, order, ctx);
                off = o;
                break 'done found;
            }
            if ctx.swap_full {
                self.reclaim_full_clusters(false, ctx);
            }
            if order < PMD_ORDER {
                let mut frags = 0;
                while let Some(idx) = self.first(list_nonfull(order)) {
                    self.list_add_tail(idx, list_frag(order));
                    let (found, o) = self.scan_cluster(idx * SWAPFILE_CLUSTER, order, ctx);
                    off = o;
                    frags += 1;
                    if found.is_some() {
                        break 'done found;
                    }
                }
                // A bounded pass over frag[order], rotating each cluster to the tail.
                while frags < self.list_len(list_frag(order)) {
                    let idx = self
                        .first(list_frag(order))
                        .expect("frag list is not empty");
                    self.list_add_tail(idx, list_frag(order));
                    let (found, o) = self.scan_cluster(idx * SWAPFILE_CLUSTER, order, ctx);
                    off = o;
                    frags += 1;
                    if found.is_some() {
                        break 'done found;
                    }
                }
            }
            if self.list_len(LIST_DISCARD) > 0 && self.discard_now() {
                continue;
            }
            if order > 0 {
                break 'done None;
            }
            for o in 1..SWAP_NR_ORDERS as u32 {
                for list in [list_frag(o), list_nonfull(o)] {
                    if let Some(s) = self.steal_from_list(list, ctx, &mut off) {
                        break 'done Some(s);
                    }
                }
            }
            break 'done None;
        };
        self.percpu_next[cpu][o_idx] = off;
        found
    }

    /// cluster_is_usable (v6.18): on no list or a usable one, and empty or of this order (any
    /// cluster for order 0).
    fn cluster_is_usable(&self, idx: u32, order: u32) -> bool {
        let ci = self.clusters[idx as usize];
        if ci.list == LIST_FULL || ci.list == LIST_DISCARD {
            return false;
        }
        order == 0 || ci.count == 0 || ci.order as u32 == order
    }

    /// relocate_cluster (v6.18): free when empty, full when full, else frag of its order.
    fn relocate_cluster(&mut self, idx: u32, now_ns: u64) {
        let ci = self.clusters[idx as usize];
        if ci.list == LIST_DISCARD {
            return;
        }
        match ci.count as u32 {
            0 => {
                if ci.list != LIST_FREE {
                    self.free_cluster(idx, now_ns);
                }
            }
            SWAPFILE_CLUSTER => {
                if ci.list != LIST_FULL {
                    self.list_add_tail(idx, LIST_FULL);
                }
            }
            _ => {
                let frag = list_frag(ci.order as u32);
                if ci.list != frag {
                    self.list_add_tail(idx, frag);
                }
            }
        }
    }

    /// cluster_reclaim_range of v6.18: reclaim, then (the cluster may have changed meanwhile)
    /// check it is still usable and the range free. Returns (range free, cluster usable).
    fn cluster_reclaim_range_v6_18(
        &mut self,
        idx: u32,
        off: u32,
        order: u32,
        ctx: &AllocCtx,
    ) -> (bool, bool) {
        let nr = 1u32 << order;
        for s in off..off + nr {
            let m = self.swap_map[s as usize];
            if m & COUNT_MASK != 0 || m == SWAP_MAP_BAD {
                break;
            }
            if self.cache[s as usize] != NIL && self.try_to_reclaim_swap(s, true, ctx) < 0 {
                break;
            }
        }
        if !self.cluster_is_usable(idx, order) {
            return (false, false);
        }
        if self.clusters[idx as usize].count == 0 {
            return (true, true);
        }
        let free = self.swap_map[off as usize..(off + nr) as usize]
            .iter()
            .all(|&m| m == 0);
        (free, true)
    }

    /// alloc_swap_scan_cluster of v6.18: scan from `off`, then relocate the cluster and record
    /// the next offset in this CPU's cache (SSD) or the device cursor (rotational).
    fn scan_cluster_v6_18(
        &mut self,
        cpu: usize,
        idx: u32,
        off: u32,
        order: u32,
        ctx: &AllocCtx,
    ) -> Option<u32> {
        let nr = 1u32 << order;
        let start = idx * SWAPFILE_CLUSTER;
        let end = (start + SWAPFILE_CLUSTER).min(self.max);
        let mut found = None;
        let mut next = NONE;
        if end >= start + nr && self.clusters[idx as usize].count as u32 + nr <= SWAPFILE_CLUSTER {
            let last = end - nr;
            let mut o = off.next_multiple_of(nr).max(start);
            while o <= last {
                match self.scan_range(o, nr, ctx.swap_full) {
                    Range::Busy => {
                        o += nr;
                        continue;
                    }
                    Range::NeedReclaim => {
                        let (free, usable) = self.cluster_reclaim_range_v6_18(idx, o, order, ctx);
                        if !usable {
                            break;
                        }
                        if self.clusters[idx as usize].count == 0 {
                            o = start;
                        }
                        if !free {
                            o += nr;
                            continue;
                        }
                    }
                    Range::Free => {}
                }
                self.alloc_range(idx, o, order);
                found = Some(o);
                o += nr;
                if (self.clusters[idx as usize].count as u32) < SWAPFILE_CLUSTER && o <= last {
                    next = o;
                }
                break;
            }
        }
        self.relocate_cluster(idx, ctx.now_ns);
        if self.solidstate() {
            self.percpu_next[cpu][order as usize] = next;
            self.percpu_scanned = true;
        } else {
            self.global_next[order as usize] = next;
        }
        found
    }

    /// alloc_swap_scan_list (v6.18): isolate the head cluster and scan it; with `scan_all`, go
    /// on through the list (each failed cluster is relocated off it, or to its tail).
    fn scan_list_v6_18(
        &mut self,
        cpu: usize,
        list: u8,
        order: u32,
        scan_all: bool,
        ctx: &AllocCtx,
    ) -> Option<u32> {
        let mut budget = self.list_len(list);
        while budget > 0 {
            budget -= 1;
            let idx = self.first(list)?;
            self.list_del(idx);
            if let Some(o) = self.scan_cluster_v6_18(cpu, idx, idx * SWAPFILE_CLUSTER, order, ctx) {
                return Some(o);
            }
            if !scan_all {
                break;
            }
        }
        None
    }

    /// swap_alloc_fast (v6.18): this CPU's cached offset, if this device is its cached `si` for
    /// the order and the cluster is still usable for it.
    pub fn alloc_fast(&mut self, cpu: usize, order: u32, ctx: &AllocCtx) -> Option<u32> {
        self.percpu_scanned = false;
        self.became_full = false;
        self.complete_discards(ctx.now_ns);
        let off = self.percpu_next[cpu][order as usize];
        if off == NONE {
            return None;
        }
        let idx = off / SWAPFILE_CLUSTER;
        if !self.cluster_is_usable(idx, order) {
            return None;
        }
        let off = if self.clusters[idx as usize].count == 0 {
            idx * SWAPFILE_CLUSTER
        } else {
            off
        };
        let r = self.scan_cluster_v6_18(cpu, idx, off, order, ctx);
        self.after_alloc(ctx);
        r
    }

    /// cluster_alloc_swap_entry of v6.18 (the slow path on one device).
    fn cluster_alloc_swap_entry_v6_18(
        &mut self,
        cpu: usize,
        order: u32,
        ctx: &AllocCtx,
    ) -> Option<u32> {
        if !self.solidstate() {
            let off = self.global_next[order as usize];
            if off != NONE {
                let idx = off / SWAPFILE_CLUSTER;
                if self.cluster_is_usable(idx, order) {
                    let off = if self.clusters[idx as usize].count == 0 {
                        idx * SWAPFILE_CLUSTER
                    } else {
                        off
                    };
                    if let Some(o) = self.scan_cluster_v6_18(cpu, idx, off, order, ctx) {
                        return Some(o);
                    }
                }
            }
        }
        // A discarding device prefers a new cluster, to spread the writes.
        if self.discard {
            if let Some(o) = self.scan_list_v6_18(cpu, LIST_FREE, order, false, ctx) {
                return Some(o);
            }
        }
        if order < PMD_ORDER {
            if let Some(o) = self.scan_list_v6_18(cpu, list_nonfull(order), order, true, ctx) {
                return Some(o);
            }
        }
        if !self.discard {
            if let Some(o) = self.scan_list_v6_18(cpu, LIST_FREE, order, false, ctx) {
                return Some(o);
            }
        }
        if ctx.swap_full {
            self.reclaim_full_clusters(false, ctx);
        }
        if order < PMD_ORDER {
            if let Some(o) = self.scan_list_v6_18(cpu, list_frag(order), order, false, ctx) {
                return Some(o);
            }
        }
        if order > 0 {
            return None;
        }
        for o in 1..SWAP_NR_ORDERS as u32 {
            for list in [list_frag(o), list_nonfull(o)] {
                if let Some(s) = self.scan_list_v6_18(cpu, list, 0, true, ctx) {
                    return Some(s);
                }
            }
        }
        None
    }

    // ---- Entry points --------------------------------------------------------------------

    /// After an allocation: a device that filled up schedules reclaim_work (v6.12+, clusters,
    /// when vm_swap_full()), which reclaims the cache-only slots of all its full clusters. The
    /// kernel runs it from a worker soon after; here it runs at once.
    fn after_alloc(&mut self, ctx: &AllocCtx) {
        if std::mem::take(&mut self.became_full)
            && self.gen >= Generation::V6_12
            && self.has_clusters()
            && ctx.swap_full
        {
            self.reclaim_full_clusters(true, ctx);
        }
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
        self.percpu_scanned = false;
        self.became_full = false;
        self.complete_discards(ctx.now_ns);
        if order > PMD_ORDER || (order > 0 && (!self.blkdev() || !self.has_clusters())) {
            return 0;
        }
        match self.gen {
            Generation::V6_9 => {
                if order == PMD_ORDER {
                    if let Some(off) = self.swap_alloc_cluster() {
                        out.push(off);
                    }
                } else if order == 0 {
                    self.scan_swap_map_slots(cpu, 0, nr, ctx, out);
                }
            }
            Generation::V6_10 => {
                let nr = if order > 0 { 1 } else { nr };
                self.scan_swap_map_slots(cpu, order, nr, ctx, out);
            }
            Generation::V6_12 if !self.has_clusters() => {
                self.scan_swap_map_slots(cpu, 0, nr, ctx, out);
            }
            Generation::V6_12 | Generation::V6_18 => {
                let nr = if order > 0 { 1 } else { nr };
                for _ in 0..nr {
                    let got = if self.gen == Generation::V6_12 {
                        self.cluster_alloc_swap_entry_v6_12(cpu, order, ctx)
                    } else {
                        self.cluster_alloc_swap_entry_v6_18(cpu, order, ctx)
                    };
                    match got {
                        Some(off) => out.push(off),
                        None => break,
                    }
                }
            }
        }
        self.after_alloc(ctx);
        out.len() - start_len
    }

    /// One allocation of 2^order slots as the whole allocator does it on this device alone
    /// (v6.18: fast path, slow path, then the order-0 synchronous discard). Returns the first
    /// offset. An allocation that had to wait for discards sets `waited_until_ns`.
    pub fn alloc_with(&mut self, cpu: usize, order: u32, ctx: &AllocCtx) -> Option<u32> {
        loop {
            if self.gen >= Generation::V6_18 {
                if let Some(off) = self.alloc_fast(cpu, order, ctx) {
                    return Some(off);
                }
            }
            let mut out = std::mem::take(&mut self.out_scratch);
            out.clear();
            self.alloc_slots(cpu, order, 1, ctx, &mut out);
            let got = out.first().copied();
            self.out_scratch = out;
            if got.is_none() && self.gen >= Generation::V6_18 && order == 0 && self.discard_now() {
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

/// LATENCY_LIMIT bookkeeping for `steps` scanned slots: the budget drops by one per slot and is
/// refilled (marking the scan as long) each time it goes below zero.
fn burn_latency(latency: &mut i64, scanned_many: &mut bool, steps: i64) {
    if steps <= *latency {
        *latency -= steps;
        return;
    }
    *scanned_many = true;
    let rest = steps - (*latency + 1);
    *latency = LATENCY_LIMIT - rest % (LATENCY_LIMIT + 1);
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
        if self.generation() >= Generation::V6_18 {
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
        self.charge_time(self.hw.swap_slot_alloc_ns);
        self.finish_swap_reclaim(dev);
        let waited = std::mem::take(&mut self.swap[d].waited_until_ns);
        self.clock_ns = self.clock_ns.max(waited);
        // v6.18: the scan made this device the CPU's cached `si` for the order.
        if std::mem::take(&mut self.swap[d].percpu_scanned) {
            for (e, si) in self.swap.iter_mut().enumerate() {
                if e != d {
                    let c = cpu % si.percpu_next.len();
                    si.percpu_next[c][order as usize] = NONE;
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
                si.percpu_next[cpu % si.nr_cpus()][order as usize] != NONE
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
            self.clock_ns = self.clock_ns.max(waited);
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn dev(gen: Generation, size: u64) -> SwapInfo {
        SwapInfo::new("s", SwapKind::Ssd, -2, size, 1, gen)
    }

    /// A context whose swap-cache folios are order 0 and may always leave the cache.
    fn reclaim_ctx<'a>(swap_full: bool, slot_cache_active: bool) -> AllocCtx<'a> {
        AllocCtx {
            swap_full,
            now_ns: 0,
            slot_cache_active,
            folio: &|_| (1, true),
        }
    }

    /// Fills every slot with order-0 allocations, then gives each a swap PTE (count 1).
    fn fill_referenced(si: &mut SwapInfo) {
        while si.alloc(0, 0, false, 0).is_some() {}
        for m in si.swap_map[1..].iter_mut() {
            *m = 1;
        }
    }

    /// Makes a free slot of a full device (it stays on the avail list).
    fn free_one(si: &mut SwapInfo, off: u32) {
        si.swap_map[off as usize] = SWAP_HAS_CACHE;
        si.free_slots_range(off, 1, 0);
    }

    fn aligned_in_one_cluster(off: u32, order: u32) -> bool {
        let nr = 1u32 << order;
        off.is_multiple_of(nr) && off / SWAPFILE_CLUSTER == (off + nr - 1) / SWAPFILE_CLUSTER
    }

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

    // ---- v6.9 ----

    #[test]
    fn v6_9_order0_takes_the_head_free_cluster_and_frees_it_to_the_tail() {
        let mut si = dev(Generation::V6_9, 64 * MIB);
        assert_eq!(si.first(LIST_FREE), Some(1));
        assert_eq!(si.alloc(0, 0, false, 0), Some(512));
        assert_eq!(
            si.clusters[1].list, LIST_NONE,
            "off the free list on first use"
        );
        for i in 1..512 {
            assert_eq!(si.alloc(0, 0, false, 0), Some(512 + i));
        }
        assert_eq!(si.alloc(0, 0, false, 0), Some(1024), "then the next head");
        assert_eq!(si.clusters[1].count, 512);
        // A partial free leaves it on no list; the last free puts it at the tail.
        si.free_slots_range(600, 1, 0);
        assert_eq!(si.clusters[1].list, LIST_NONE);
        for off in 512..1024 {
            if off != 600 {
                si.free_slots_range(off, 1, 0);
            }
        }
        assert_eq!(si.clusters[1].list, LIST_FREE);
        assert_eq!(si.list_clusters(LIST_FREE).last(), Some(&1));
    }

    #[test]
    fn v6_9_conflict_check_drops_a_cpu_cluster_that_went_back_to_the_free_list() {
        let mut si = dev(Generation::V6_9, 64 * MIB);
        assert_eq!(si.alloc(0, 0, false, 0), Some(512));
        si.free_slots_range(512, 1, 0);
        // Cluster 1 is free again, at the tail: this CPU's cluster still points into it, but
        // the conflict check sends the CPU to the head of the free list.
        assert_eq!(si.list_clusters(LIST_FREE).last(), Some(&1));
        assert_eq!(si.alloc(0, 0, false, 0), Some(1024));
        assert_eq!(si.clusters[1].list, LIST_FREE);
        assert_eq!(si.clusters[1].count, 0);
    }

    #[test]
    fn v6_9_linear_scan_starts_after_the_cpu_scan_base_and_wraps() {
        let mut si = SwapInfo::new("s", SwapKind::Ssd, -2, 4 * MIB, 2, Generation::V6_9);
        // Cluster 1 is the only free cluster; once it is used up, order 0 scans linearly.
        for _ in 0..512 {
            si.alloc(0, 0, false, 0).unwrap();
        }
        assert_eq!(si.list_len(LIST_FREE), 0);
        si.cluster_next_cpu[0] = 300;
        si.cluster_next_cpu[1] = 40;
        assert_eq!(
            si.alloc(0, 0, false, 0),
            Some(301),
            "scan begins after the base"
        );
        assert_eq!(si.cluster_next_cpu[0], 302);
        assert_eq!(
            si.alloc(1, 0, false, 0),
            Some(41),
            "each CPU has its own base"
        );
        // The next scan of CPU 0 starts at 302 and skips it, as the kernel's `++offset` does.
        assert_eq!(si.alloc(0, 0, false, 0), Some(303));
        // From a base in the used cluster the scan runs to highest_bit and wraps to lowest_bit.
        si.cluster_next_cpu[0] = 700;
        assert_eq!(si.alloc(0, 0, false, 0), Some(1));
    }

    #[test]
    fn v6_9_batch_takes_the_slots_after_the_first_found_one() {
        let mut si = dev(Generation::V6_9, 4 * MIB);
        for _ in 0..512 {
            si.alloc(0, 0, false, 0).unwrap();
        }
        // A slot-cache refill (one scan_swap_map_slots call for several slots) looks on from
        // each slot it took ("scan a little more quickly"); single calls skip the scan base.
        si.cluster_next_cpu[0] = 300;
        let ctx = reclaim_ctx(false, false);
        let mut out = Vec::new();
        assert_eq!(si.alloc_slots(0, 0, 4, &ctx, &mut out), 4);
        assert_eq!(out, [301, 302, 303, 304]);
        assert_eq!(si.alloc(0, 0, false, 0), Some(306));
    }

    #[test]
    fn v6_9_rejects_mthp_orders_and_hands_out_pmd_clusters_whole() {
        let mut si = dev(Generation::V6_9, 64 * MIB);
        for order in 1..PMD_ORDER {
            assert_eq!(si.alloc(0, order, false, 0), None, "order {order}");
        }
        assert_eq!(si.inuse_pages, 0);
        assert_eq!(si.alloc(0, 9, false, 0), Some(512));
        assert_eq!(si.clusters[1].count, 512);
        assert_eq!(si.clusters[1].list, LIST_NONE);
        assert!(si.swap_map[512..1024].iter().all(|&m| m == SWAP_HAS_CACHE));
        assert_eq!(si.alloc(0, 9, false, 0), Some(1024), "the next head, whole");
        assert_eq!(si.inuse_pages, 1024);
        // No whole free cluster: PMD fails even with room elsewhere.
        let mut si = dev(Generation::V6_9, 4 * MIB);
        si.alloc(0, 0, false, 0).unwrap();
        assert_eq!(si.alloc(0, 9, false, 0), None);
        // Swap files are not block devices.
        let mut f = SwapInfo::new("f", SwapKind::File, -2, 64 * MIB, 1, Generation::V6_9);
        assert_eq!(f.alloc(0, 9, false, 0), None);
    }

    // ---- v6.10 ----

    #[test]
    fn v6_10_order_cursors_take_whole_free_clusters_which_return_only_at_count_0() {
        let mut si = dev(Generation::V6_10, 64 * MIB);
        let a = si.alloc(0, 4, false, 0).unwrap();
        assert_eq!(a, 512);
        assert_eq!(si.clusters[1].list, LIST_NONE);
        for i in 1..32 {
            assert_eq!(si.alloc(0, 4, false, 0), Some(512 + 16 * i));
        }
        assert_eq!(
            si.percpu_next[0][4], NONE,
            "the cursor ran off the cluster's end"
        );
        // An order-0 cursor takes its own free cluster.
        assert_eq!(si.alloc(0, 0, false, 0), Some(1024));
        // Freeing a block of cluster 1 does not give it back to order 4 ...
        si.free_slots_range(512, 16, 0);
        assert_eq!(si.clusters[1].list, LIST_NONE);
        assert_eq!(si.alloc(0, 4, false, 0), Some(1536), "a new free cluster");
        // ... only count 0 does, at the tail of the free list.
        for off in (528..1024).step_by(16) {
            si.free_slots_range(off, 16, 0);
        }
        assert_eq!(si.clusters[1].list, LIST_FREE);
        assert_eq!(si.list_clusters(LIST_FREE).last(), Some(&1));
    }

    #[test]
    fn v6_10_a_partly_free_cluster_is_never_reused_for_large_orders() {
        let mut si = dev(Generation::V6_10, 4 * MIB);
        // Two clusters: 0 holds the header, 1 is free and goes to order 0.
        assert_eq!(si.alloc(0, 0, false, 0), Some(512));
        assert_eq!(si.alloc(0, 4, false, 0), None);
        si.free_slots_range(512, 1, 0);
        let a = si.alloc(0, 4, false, 0).unwrap();
        assert_eq!(a, 512);
        assert_eq!(si.alloc(0, 4, false, 0), Some(a + 16));
    }

    #[test]
    fn v6_10_order0_steals_by_linear_scan_inside_another_order_cluster() {
        let mut si = dev(Generation::V6_10, 4 * MIB);
        assert_eq!(si.alloc(0, 4, false, 0), Some(512));
        assert_eq!(si.list_len(LIST_FREE), 0);
        // No free cluster for order 0: the scan from the CPU's base takes any free slot, here
        // the next one in the order-4 cursor's cluster.
        si.cluster_next_cpu[0] = 520;
        assert_eq!(si.alloc(0, 0, false, 0), Some(528));
        assert_eq!(
            si.alloc(0, 4, false, 0),
            Some(544),
            "the cursor skips the stolen block"
        );
        si.cluster_next_cpu[0] = 5;
        assert_eq!(si.alloc(0, 0, false, 0), Some(6));
    }

    #[test]
    fn large_allocations_are_naturally_aligned_and_never_span_clusters() {
        for gen in [Generation::V6_10, Generation::V6_12, Generation::V6_18] {
            let mut si = SwapInfo::new("s", SwapKind::Ssd, -2, 64 * MIB, 3, gen);
            let mut got = Vec::new();
            for i in 0..4000u32 {
                let order = [0, 2, 3, 4, 5, 6, 8, 4, 1][i as usize % 9];
                if let Some(off) = si.alloc(i as usize % 3, order, false, 0) {
                    assert!(
                        aligned_in_one_cluster(off, order),
                        "{gen:?} {off} order {order}"
                    );
                    got.push((off, order));
                }
                // Free every third allocation to fragment the device.
                if i % 3 == 2 {
                    if let Some((off, order)) = got.pop() {
                        si.free_slots_range(off, 1 << order, 0);
                    }
                }
            }
            assert!(got.len() > 500, "{gen:?}");
        }
    }

    #[test]
    fn v6_9_scan_base_jumps_to_a_random_64mib_chunk_when_it_crosses_one() {
        let mut seen = Vec::new();
        for seed in 0..16 {
            let mut si = dev(Generation::V6_9, 256 * MIB);
            si.seed_scan(seed);
            let base = si.cluster_next_cpu[0];
            assert!((1..65536).contains(&base));
            // Within a chunk the base just follows the allocations.
            si.cluster_next_cpu[0] = 100;
            si.set_cluster_next(0, 101);
            assert_eq!(si.cluster_next_cpu[0], 101);
            // Crossing into the next chunk draws a chunk start (or lowest_bit).
            si.set_cluster_next(0, 16384 + 5);
            let b = si.cluster_next_cpu[0];
            assert!(b == 1 || b % 16384 == 0, "{b}");
            seen.push(b);
        }
        seen.sort_unstable();
        seen.dedup();
        assert!(seen.len() >= 3, "{seen:?}");
    }

    // ---- v6.12 ----

    #[test]
    fn v6_12_cluster_lists_follow_allocation_and_free() {
        let mut si = dev(Generation::V6_12, 8 * MIB);
        // free -> nonfull[4] on the first order-4 allocation
        let a = si.alloc(0, 4, false, 0).unwrap();
        let idx = (a / 512) as usize;
        assert_eq!(si.clusters[idx].list, list_nonfull(4));
        assert_eq!(si.clusters[idx].order, 4);
        // ... full at 512 slots
        for _ in 1..32 {
            si.alloc(0, 4, false, 0).unwrap();
        }
        assert_eq!(si.clusters[idx].list, LIST_FULL);
        // full -> nonfull[4] on any free
        si.free_slots_range(a + 16, 16, 0);
        assert_eq!(si.clusters[idx].list, list_nonfull(4));
        // -> free (at the tail) when the count reaches 0, with the order reset
        for off in (a..a + 512).step_by(16).filter(|&o| o != a + 16) {
            si.free_slots_range(off, 16, 0);
        }
        assert_eq!(si.clusters[idx].list, LIST_FREE);
        assert_eq!(si.clusters[idx].order, 0);
        assert_eq!(si.list_clusters(LIST_FREE).last(), Some(&(idx as u32)));
        // A PMD allocation takes a free cluster straight to full.
        let p = si.alloc(0, 9, false, 0).unwrap();
        assert_eq!(si.clusters[(p / 512) as usize].list, LIST_FULL);
        assert_eq!(si.clusters[(p / 512) as usize].order, 9);
    }

    #[test]
    fn v6_12_failed_slow_path_scan_moves_nonfull_to_frag_and_a_free_moves_it_back() {
        let mut si = dev(Generation::V6_12, 4 * MIB);
        // Fill the one free cluster with order 4, then free one slot in the middle.
        let a = si.alloc(0, 4, false, 0).unwrap();
        for _ in 1..32 {
            si.alloc(0, 4, false, 0).unwrap();
        }
        let idx = (a / 512) as usize;
        si.free_slots_range(a + 32, 1, 0);
        assert_eq!(si.clusters[idx].list, list_nonfull(4));
        // No aligned 16-slot hole: the slow path leaves the cluster on frag[4].
        assert_eq!(si.alloc(0, 4, false, 0), None);
        assert_eq!(si.clusters[idx].list, list_frag(4));
        assert_eq!(si.list_len(list_frag(4)), 1);
        // Order 0 first finds room in the header's cluster, on nonfull[0] (now on frag[0]).
        assert_eq!(si.alloc(0, 0, false, 0), Some(1));
        assert_eq!(si.clusters[0].list, list_frag(0));
        // Any free moves a fragmented cluster back to nonfull of its order.
        si.free_slots_range(a + 48, 1, 0);
        assert_eq!(si.clusters[idx].list, list_nonfull(4));
        assert_eq!(si.list_len(list_frag(4)), 0);
    }

    #[test]
    fn v6_12_order0_steals_frag_before_nonfull_with_orders_rising() {
        let mut si = dev(Generation::V6_12, 8 * MIB);
        // Clusters 1, 2 and 3 serve orders 2, 3 and 2; no free cluster is left.
        assert_eq!(si.alloc(0, 2, false, 0).map(|o| o / 512), Some(1));
        assert_eq!(si.alloc(0, 3, false, 0).map(|o| o / 512), Some(2));
        si.percpu_next[0][2] = NONE;
        assert_eq!(si.alloc(0, 2, false, 0).map(|o| o / 512), Some(3));
        // Fill cluster 0 (the header's) so that order 0 must steal.
        while si.clusters[0].count < 512 {
            si.alloc(0, 0, false, 0).unwrap();
        }
        si.percpu_next[0][0] = NONE;
        si.list_add_tail(3, list_frag(2));
        si.list_add_tail(2, list_frag(3));
        // frag[2] (cluster 3) before nonfull[2] (cluster 1) and anything of order 3.
        let s = si.alloc(0, 0, false, 0).unwrap();
        assert_eq!(s / 512, 3);
        assert_eq!(si.clusters[3].order, 2, "a steal keeps the cluster's order");
        // With frag[2] empty, nonfull[2] (cluster 1) comes before frag[3] (cluster 2).
        let mut si = dev(Generation::V6_12, 8 * MIB);
        assert_eq!(si.alloc(0, 2, false, 0).map(|o| o / 512), Some(1));
        assert_eq!(si.alloc(0, 3, false, 0).map(|o| o / 512), Some(2));
        while si.clusters[0].count < 512 || si.list_len(LIST_FREE) > 0 {
            si.alloc(0, 0, false, 0).unwrap();
        }
        si.percpu_next[0][0] = NONE;
        si.list_add_tail(2, list_frag(3));
        assert_eq!(si.alloc(0, 0, false, 0).map(|o| o / 512), Some(1));
    }

    #[test]
    fn a_stolen_slot_makes_the_large_cursor_skip_to_the_next_aligned_range() {
        for gen in [Generation::V6_12, Generation::V6_18] {
            let mut si = dev(gen, 4 * MIB);
            assert_eq!(si.alloc(0, 4, false, 0), Some(512));
            // Fill the header's cluster, then order 0 steals the first free slot of cluster 1.
            while si.clusters[0].count < 512 {
                si.alloc(0, 0, false, 0).unwrap();
            }
            si.percpu_next[0][0] = NONE;
            assert_eq!(si.alloc(0, 0, false, 0), Some(528), "{gen:?}");
            assert_eq!(si.clusters[1].order, 4);
            assert_eq!(si.alloc(0, 4, false, 0), Some(544), "{gen:?}");
        }
    }

    #[test]
    fn v6_12_reuses_cache_only_slots_only_when_swap_is_full() {
        for swap_full in [false, true] {
            let mut si = dev(Generation::V6_12, 4 * MIB);
            fill_referenced(&mut si);
            // Slot 600 only the swap cache holds; slot 900 is free.
            si.swap_map[600] = SWAP_HAS_CACHE;
            si.cache[600] = 77;
            free_one(&mut si, 900);
            assert_eq!(si.clusters[1].list, list_nonfull(0));
            let ctx = reclaim_ctx(swap_full, false);
            let got = si.alloc_with(0, 0, &ctx);
            if swap_full {
                assert_eq!(
                    got,
                    Some(600),
                    "the cache-only range comes first in the scan"
                );
                assert_eq!(si.reclaimed_folios, vec![77]);
                assert_eq!(si.cache[600], NIL);
            } else {
                assert_eq!(got, Some(900));
                assert!(si.reclaimed_folios.is_empty());
            }
        }
        // A folio that cannot leave the cache (under writeback) is skipped.
        let mut si = dev(Generation::V6_12, 4 * MIB);
        fill_referenced(&mut si);
        si.swap_map[600] = SWAP_HAS_CACHE;
        si.cache[600] = 77;
        free_one(&mut si, 900);
        let busy = |_: u32| (1, false);
        let ctx = AllocCtx {
            swap_full: true,
            now_ns: 0,
            slot_cache_active: false,
            folio: &busy,
        };
        assert_eq!(si.alloc_with(0, 0, &ctx), Some(900));
    }

    #[test]
    fn v6_12_full_cluster_reclaim_runs_only_when_swap_is_full() {
        for swap_full in [false, true] {
            let mut si = dev(Generation::V6_12, 4 * MIB);
            fill_referenced(&mut si);
            // Cluster 1 filled first, then the header's: full = [1, 0]. One free slot keeps the
            // device on the avail list.
            assert_eq!(si.list_clusters(LIST_FULL), vec![1, 0]);
            free_one(&mut si, 1);
            si.swap_map[700] = SWAP_HAS_CACHE;
            si.cache[700] = 5;
            si.percpu_next[0][0] = NONE;
            let ctx = reclaim_ctx(swap_full, false);
            // No free cluster: with swap full, the head of the full list is reclaimed first.
            assert_eq!(si.alloc_with(0, 0, &ctx), Some(1));
            if swap_full {
                assert_eq!(si.reclaimed_folios, vec![5]);
                assert_eq!(si.swap_map[700], 0);
                assert_eq!(si.clusters[1].list, list_nonfull(0));
                assert_eq!(si.alloc_with(0, 0, &ctx), Some(700));
            } else {
                assert!(si.reclaimed_folios.is_empty());
                assert_eq!(si.swap_map[700], SWAP_HAS_CACHE);
                assert_eq!(si.alloc_with(0, 0, &ctx), None);
            }
        }
    }

    #[test]
    fn v6_9_and_v6_10_cache_only_reclaim_goes_through_an_active_slot_cache() {
        for gen in [Generation::V6_9, Generation::V6_10] {
            for active in [false, true] {
                let mut si = dev(gen, 4 * MIB);
                fill_referenced(&mut si);
                free_one(&mut si, 1000);
                si.swap_map[600] = SWAP_HAS_CACHE;
                si.cache[600] = 77;
                si.cluster_next_cpu[0] = 550;
                let ctx = reclaim_ctx(true, active);
                let got = si.alloc_with(0, 0, &ctx);
                assert_eq!(si.reclaimed_folios, vec![77]);
                if active {
                    // Freed into the slot cache: still marked, not reusable now; the scan
                    // goes on to the next free slot.
                    assert_eq!(got, Some(1000));
                    assert_eq!(si.deferred_slot_frees, vec![600]);
                    assert_eq!(si.swap_map[600], SWAP_HAS_CACHE);
                } else {
                    assert_eq!(got, Some(600));
                }
                // Not full: the same scan skips the cache-only slot.
                let mut si = dev(gen, 4 * MIB);
                fill_referenced(&mut si);
                free_one(&mut si, 1000);
                si.swap_map[600] = SWAP_HAS_CACHE;
                si.cache[600] = 77;
                si.cluster_next_cpu[0] = 550;
                assert_eq!(si.alloc_with(0, 0, &reclaim_ctx(false, active)), Some(1000));
            }
        }
    }

    // ---- v6.18 ----

    #[test]
    fn v6_18_relocates_scanned_clusters_and_prefers_nonfull_over_free() {
        let mut si = dev(Generation::V6_18, 8 * MIB);
        let a = si.alloc(0, 4, false, 0).unwrap();
        assert_eq!(a, 512, "ascending free list");
        assert_eq!(si.clusters[1].list, list_frag(4));
        assert_eq!(si.clusters[1].order, 4);
        // The fast path continues in the CPU's cluster.
        assert_eq!(si.alloc(0, 4, false, 0), Some(528));
        // A free moves it to nonfull[4]; count 0 to free.
        si.free_slots_range(a, 16, 0);
        assert_eq!(si.clusters[1].list, list_nonfull(4));
        si.free_slots_range(528, 16, 0);
        assert_eq!(si.clusters[1].list, LIST_FREE);
        // Full -> nonfull on a free.
        si.percpu_next[0][4] = NONE;
        let b = si.alloc(0, 4, false, 0).unwrap();
        for _ in 1..32 {
            si.alloc(0, 4, false, 0).unwrap();
        }
        let bi = (b / 512) as usize;
        assert_eq!(si.clusters[bi].list, LIST_FULL);
        si.free_slots_range(b + 64, 16, 0);
        assert_eq!(si.clusters[bi].list, list_nonfull(4));
        // The slow path takes nonfull[4] before a free cluster.
        si.percpu_next[0][4] = NONE;
        assert_eq!(si.alloc(0, 4, false, 0), Some(b + 64));
        // With discard it takes a free cluster first, to spread the writes.
        let mut d = SwapInfo::with_discard(
            "d",
            SwapKind::Ssd,
            -2,
            8 * MIB,
            1,
            Generation::V6_18,
            Some(1),
        );
        let x = d.alloc(0, 4, false, 0).unwrap();
        d.alloc(0, 4, false, 0).unwrap();
        d.free_slots_range(x, 16, 0);
        assert_eq!(d.clusters[1].list, list_nonfull(4));
        d.percpu_next[0][4] = NONE;
        assert_eq!(d.alloc(0, 4, false, 0).map(|o| o / 512), Some(2));
    }

    #[test]
    fn v6_18_cursor_is_used_only_while_the_cluster_suits_the_order() {
        let mut si = dev(Generation::V6_18, 8 * MIB);
        assert_eq!(si.alloc(0, 4, false, 0), Some(512));
        // Cluster 1 is emptied and taken by order 2: the order-4 cursor may not use it.
        si.free_slots_range(512, 16, 0);
        si.percpu_next[0][2] = 512;
        assert_eq!(si.alloc(0, 2, false, 0), Some(512));
        assert_eq!(si.clusters[1].order, 2);
        assert_eq!(si.alloc(0, 4, false, 0).map(|o| o / 512), Some(2));
    }

    #[test]
    fn v6_18_rotational_devices_have_clusters_and_large_allocations() {
        let mut si = SwapInfo::new("h", SwapKind::Hdd, -2, 8 * MIB, 2, Generation::V6_18);
        assert_eq!(si.alloc(0, 4, false, 0), Some(512));
        // One device-wide cursor, whatever the CPU.
        assert_eq!(si.alloc(1, 4, false, 0), Some(528));
        assert_eq!(si.percpu_next[1][4], NONE);
        let mut old = SwapInfo::new("h", SwapKind::Hdd, -2, 8 * MIB, 2, Generation::V6_12);
        assert_eq!(old.alloc(0, 4, false, 0), None);
    }

    // ---- rotational devices up to v6.12 ----

    #[test]
    fn rotational_devices_allocate_sequentially_in_512_runs_and_never_large() {
        let mut si = SwapInfo::new("h", SwapKind::Hdd, -2, 8 * MIB, 1, Generation::V6_12);
        assert_eq!(si.alloc(0, 9, false, 0), None);
        for i in 1..=512 {
            assert_eq!(si.alloc(0, 0, false, 0), Some(i));
        }
        // A hole at the start is too small for a new run of 512: the search skips it.
        for off in 100..110 {
            free_one(&mut si, off);
        }
        assert_eq!(si.alloc(0, 0, false, 0), Some(513));
        assert_eq!(si.alloc(0, 0, false, 0), Some(514));
        let mut v69 = SwapInfo::new("h", SwapKind::Hdd, -2, 8 * MIB, 1, Generation::V6_9);
        assert_eq!(v69.alloc(0, 0, false, 0), Some(1));
        assert_eq!(v69.alloc(0, 0, false, 0), Some(2));
    }

    #[test]
    fn swap_files_use_clusters_for_order0_but_never_allocate_large() {
        for gen in [Generation::V6_10, Generation::V6_12, Generation::V6_18] {
            let mut si = SwapInfo::new("f", SwapKind::File, -2, 4 * MIB, 1, gen);
            assert_eq!(si.alloc(0, 4, false, 0), None);
            assert_eq!(si.alloc(0, 9, false, 0), None);
            assert!(si.alloc(0, 0, false, 0).is_some());
        }
    }

    // ---- discard ----

    #[test]
    fn a_freed_cluster_is_not_reused_until_discarded() {
        let mut si = SwapInfo::with_discard(
            "s",
            SwapKind::Ssd,
            -2,
            6 * MIB,
            1,
            Generation::V6_12,
            Some(1000),
        );
        let first: Vec<u32> = (0..32).map(|_| si.alloc(0, 4, false, 0).unwrap()).collect();
        assert!(first.iter().all(|&o| o / 512 == 1));
        for &o in &first {
            si.free_slots_range(o, 16, 0);
        }
        assert_eq!(si.clusters[1].list, LIST_DISCARD);
        assert_eq!(si.swap_map[600], SWAP_MAP_BAD);
        // While the discard runs, allocations go elsewhere ...
        for _ in 0..32 {
            assert_eq!(si.alloc(0, 4, false, 10).unwrap() / 512, 2);
        }
        // ... and once nothing else is left, the allocator waits for the discard.
        assert_eq!(si.alloc(0, 4, false, 20).unwrap() / 512, 1);
        assert_eq!(si.waited_until_ns, 1000);
        // A discard that finished by the time of the allocation needs no wait.
        for gen in [Generation::V6_9, Generation::V6_10, Generation::V6_18] {
            let mut si =
                SwapInfo::with_discard("s", SwapKind::Ssd, -2, 4 * MIB, 1, gen, Some(1000));
            assert_eq!(si.alloc(0, 9, false, 0), Some(512));
            si.free_slots_range(512, 512, 0);
            assert_eq!(si.clusters[1].list, LIST_DISCARD);
            assert_eq!(si.alloc(0, 9, false, 5000), Some(512), "{gen:?}");
            assert_eq!(si.waited_until_ns, 0);
        }
        // v6.10 order 0 waits for a pending discard rather than scanning linearly.
        let mut si = SwapInfo::with_discard(
            "s",
            SwapKind::Ssd,
            -2,
            4 * MIB,
            1,
            Generation::V6_10,
            Some(1000),
        );
        assert_eq!(si.alloc(0, 4, false, 0), Some(512));
        si.free_slots_range(512, 16, 0);
        assert_eq!(si.alloc(0, 0, false, 10), Some(512));
        assert_eq!(si.waited_until_ns, 1000);
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
        k.swap[0].percpu_next[0][0] = x;
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
        assert_eq!(k.swap[0].percpu_next[0][4], NONE);
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
