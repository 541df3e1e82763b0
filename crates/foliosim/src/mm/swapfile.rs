//! Swap areas: swap_map, clusters and the swap-slot allocator of each kernel generation.
//!
//! Models mm/swapfile.c (spec swap.md §A–C). Slot 0 is the header; clusters of 512 slots are put
//! on the free list in swapon's column-major order (§A.5). Allocation by generation:
//! - v6.9 (§B(i)): order 0 from this CPU's cluster, then a new free cluster, then a linear scan of
//!   the whole map; PMD order only as a whole free cluster on a block device; other orders fail.
//! - v6.10 (§B(ii)): per-CPU, per-order cursors; order > 0 only from clusters that cursor took off
//!   the free list, naturally aligned; order 0 falls back to the linear scan.
//! - v6.12 (§B(iii)): free / nonfull[order] / frag[order] / full lists, the slow-path scan that
//!   moves nonfull clusters to frag, order-0 stealing from frag[o] then nonfull[o], and, when swap
//!   is more than half full, reuse of cache-only slots and reclaim of one full cluster.
//! - v6.18 (§B(iv), versions UNSURE): nonfull before free, isolated candidates relocated after each
//!   scan (free / frag[order] / full), one frag cluster per slow path, the same stealing order.
//! Rotating devices have no clusters: order 0 by a sequential cursor, never large. Cache-only
//! slots found while scanning are reclaimed by the caller (get_swap_pages) before one retry, where
//! the kernel drops its locks to do it in place. With discard (swapon --discard, SSDs) an emptied
//! cluster stays out of use until the device has discarded it; an allocator that would otherwise
//! fail waits for the pending discards. The per-CPU slot cache is swap_slots.rs. Left out: swap
//! continuation counts, the v6.9 per-CPU random scan base and its conflict check.

use super::Kernel;
use crate::scenario::profile::Kernel as Gen;
use crate::scenario::{RunSpec, SwapKind};
use crate::sim::FifoServer;
use std::collections::VecDeque;

pub const SWAPFILE_CLUSTER: u32 = 512;
/// swap_map bits.
pub const SWAP_HAS_CACHE: u8 = 0x40;
pub const SWAP_MAP_BAD: u8 = 0x3f;
const COUNT_MASK: u8 = 0x3f;
/// Column count of the swapon free-list order (SWAP_ADDRESS_SPACE_PAGES / 512).
const CLUSTER_COLS: u32 = 32;
const NONE: u32 = u32::MAX;
const SWAP_NR_ORDERS: usize = 10;
const PMD_ORDER: u32 = 9;

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
/// On no list (in use before v6.12, or isolated).
pub const LIST_NONE: u8 = u8::MAX;

#[derive(Clone, Copy, Debug)]
pub struct ClusterInfo {
    pub count: u16,
    /// Order of the allocations the cluster serves (set when it leaves the free list).
    pub order: u8,
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

pub struct SwapInfo {
    pub name: String,
    pub kind: SwapKind,
    pub prio: i32,
    pub gen: Gen,
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
    /// Per CPU, per order: the next offset to try (NONE = no current cluster).
    percpu_next: Vec<[u32; SWAP_NR_ORDERS]>,
    /// Per CPU, per order (v6.9/v6.10): the cluster the cursor owns.
    percpu_cluster: Vec<[u32; SWAP_NR_ORDERS]>,
    /// Linear-scan cursor (v6.9/v6.10 fallback scan, rotational devices).
    pub scan_next: u32,
    /// Cache-only slots the allocator wants reclaimed (v6.12+, when swap is more than half full).
    pub pending_reclaim: Vec<u32>,
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
        gen: Gen,
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
        gen: Gen,
        discard_ns: Option<u64>,
    ) -> SwapInfo {
        let max = (size_bytes / super::PAGE_SIZE).clamp(2, 1 << 27) as u32;
        let nr_clusters = max.div_ceil(SWAPFILE_CLUSTER);
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
            cache: vec![super::folio::NIL; max as usize],
            content: vec![0; max as usize],
            inuse_pages: 0,
            clusters: vec![empty; nr_clusters as usize],
            lists: [ListHead {
                head: NONE,
                tail: NONE,
                len: 0,
            }; NR_LISTS],
            percpu_next: vec![[NONE; SWAP_NR_ORDERS]; nr_cpus.max(1)],
            percpu_cluster: vec![[NONE; SWAP_NR_ORDERS]; nr_cpus.max(1)],
            scan_next: 1,
            pending_reclaim: Vec::new(),
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
            for col in 0..CLUSTER_COLS {
                let mut idx = col;
                while idx < nr_clusters {
                    if si.clusters[idx as usize].count == 0 {
                        si.list_add_tail(idx, LIST_FREE);
                    } else if gen >= Gen::V6_12 {
                        si.list_add_tail(idx, list_nonfull(0));
                    }
                    idx += CLUSTER_COLS;
                }
            }
        }
        si
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

    pub fn has_clusters(&self) -> bool {
        self.kind != SwapKind::Hdd
    }

    #[inline]
    pub fn swap_count(&self, off: u32) -> u8 {
        self.swap_map[off as usize] & COUNT_MASK
    }

    pub fn list_len(&self, list: u8) -> u32 {
        self.lists[list as usize].len
    }

    /// The clusters on a list, head first.
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

    fn take_slots(&mut self, off: u32, nr: u32) {
        for s in off..off + nr {
            debug_assert_eq!(self.swap_map[s as usize], 0);
            self.swap_map[s as usize] = SWAP_HAS_CACHE;
        }
        self.inuse_pages += nr as u64;
        if self.has_clusters() {
            self.clusters[(off / SWAPFILE_CLUSTER) as usize].count += nr as u16;
        }
    }

    /// swap_entry_range_free: slots that are exactly HAS_CACHE or 0 become free; the cluster moves
    /// to the free list (or is discarded first) at count 0, and from v6.12 a full or fragmented
    /// one back to nonfull.
    pub fn free_slots_range(&mut self, off: u32, nr: u32, now_ns: u64) {
        for s in off..off + nr {
            self.swap_map[s as usize] = 0;
        }
        self.inuse_pages -= nr as u64;
        if !self.has_clusters() {
            return;
        }
        let idx = off / SWAPFILE_CLUSTER;
        let ci = &mut self.clusters[idx as usize];
        ci.count -= nr as u16;
        let (count, list, order) = (ci.count, ci.list, ci.order as u32);
        if count == 0 {
            self.clusters[idx as usize].order = 0;
            if self.discard {
                self.schedule_discard(idx, now_ns);
            } else {
                self.list_add_tail(idx, LIST_FREE);
            }
            return;
        }
        if self.gen >= Gen::V6_12 && list != list_nonfull(order) && list != LIST_NONE {
            self.list_add_tail(idx, list_nonfull(order));
        }
    }

    fn cluster_range(&self, idx: u32) -> std::ops::Range<usize> {
        let start = idx * SWAPFILE_CLUSTER;
        start as usize..(start + SWAPFILE_CLUSTER).min(self.max) as usize
    }

    /// swap_cluster_schedule_discard: nothing may allocate in the cluster until the device has
    /// discarded it.
    fn schedule_discard(&mut self, idx: u32, now_ns: u64) {
        let range = self.cluster_range(idx);
        self.swap_map[range].fill(SWAP_MAP_BAD);
        self.list_add_tail(idx, LIST_DISCARD);
        let done = self.queue.serve(now_ns, self.discard_ns);
        self.discard_queue.push_back((done, idx));
    }

    /// The discard work: clusters discarded by `until_ns` join the free list.
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

    /// Waits for every pending discard, as the allocator does when it would fail otherwise.
    fn discard_now(&mut self) -> bool {
        let Some(&(last, _)) = self.discard_queue.back() else {
            return false;
        };
        self.waited_until_ns = self.waited_until_ns.max(last);
        self.complete_discards(u64::MAX);
        true
    }

    /// A free cluster, or (v6.9/v6.10) one that pending discards free up.
    fn take_free_cluster(&mut self) -> Option<u32> {
        if self.first(LIST_FREE).is_none() {
            self.discard_now();
        }
        let idx = self.first(LIST_FREE)?;
        self.list_del(idx);
        Some(idx)
    }

    /// v6.9/v6.10: a free aligned range in the cluster this CPU's cursor owns for that order, or
    /// in a fresh free cluster.
    fn alloc_from_cursor(&mut self, cpu: usize, order: u32) -> Option<u32> {
        let nr = 1u32 << order;
        loop {
            let cluster = self.percpu_cluster[cpu][order as usize];
            if cluster != NONE {
                let end = ((cluster + 1) * SWAPFILE_CLUSTER).min(self.max);
                let mut off = self.percpu_next[cpu][order as usize];
                while off + nr <= end {
                    if self.range_free(off, nr) {
                        self.percpu_next[cpu][order as usize] = off + nr;
                        return Some(off);
                    }
                    off += nr;
                }
            }
            let idx = self.take_free_cluster()?;
            self.percpu_cluster[cpu][order as usize] = idx;
            self.percpu_next[cpu][order as usize] = idx * SWAPFILE_CLUSTER;
        }
    }

    fn range_free(&self, off: u32, nr: u32) -> bool {
        self.swap_map[off as usize..(off + nr) as usize]
            .iter()
            .all(|&m| m == 0)
    }

    /// The v6.9 fallback: a linear scan for any free slot, wrapping around once.
    fn scan_for_free_slot(&mut self) -> Option<u32> {
        let start = self.scan_next.max(1);
        let found = (start..self.max)
            .chain(1..start)
            .find(|&s| self.swap_map[s as usize] == 0)?;
        self.scan_next = found + 1;
        Some(found)
    }

    /// alloc_swap_scan_cluster: the first free naturally aligned range from `off` to the cluster's
    /// end. Returns the offset found and the next offset to try. Cache-only slots (when swap is
    /// more than half full) are noted for reclaim instead.
    fn scan_cluster(&mut self, off: u32, order: u32, swap_full: bool) -> Option<(u32, u32)> {
        let nr = 1u32 << order;
        if !self.pending_reclaim.is_empty() {
            return None;
        }
        let idx = off / SWAPFILE_CLUSTER;
        let start = idx * SWAPFILE_CLUSTER;
        let end = (start + SWAPFILE_CLUSTER).min(self.max);
        if self.clusters[idx as usize].count as u32 + nr > SWAPFILE_CLUSTER {
            return None;
        }
        let mut o = off.next_multiple_of(nr).max(start);
        while o + nr <= end {
            let range = &self.swap_map[o as usize..(o + nr) as usize];
            if range.iter().all(|&m| m == 0) {
                self.alloc_range(idx, o, order);
                let next = o + nr;
                let done =
                    self.clusters[idx as usize].count as u32 == SWAPFILE_CLUSTER || next + nr > end;
                return Some((o, if done { NONE } else { next }));
            }
            // Cache-only slots are usable once their folio leaves the swap cache; slots held by
            // the slot cache have no folio and cannot be reclaimed.
            let reclaimable = (o..o + nr).all(|s| {
                let m = self.swap_map[s as usize];
                m == 0 || (m == SWAP_HAS_CACHE && self.cache[s as usize] != super::folio::NIL)
            });
            if swap_full && reclaimable {
                // The kernel reclaims this range now and takes it; the caller does that and retries.
                self.pending_reclaim
                    .extend((o..o + nr).filter(|&s| self.swap_map[s as usize] == SWAP_HAS_CACHE));
                return None;
            }
            o += nr;
        }
        None
    }

    /// cluster_alloc_range: take the slots and move the cluster between lists.
    fn alloc_range(&mut self, idx: u32, off: u32, order: u32) {
        let nr = 1u32 << order;
        if self.clusters[idx as usize].list == LIST_FREE || self.clusters[idx as usize].count == 0 {
            if nr < SWAPFILE_CLUSTER && self.gen == Gen::V6_12 {
                self.list_add_tail(idx, list_nonfull(order));
            }
            self.clusters[idx as usize].order = order as u8;
        }
        self.take_slots(off, nr);
        if self.clusters[idx as usize].count as u32 == SWAPFILE_CLUSTER && self.gen == Gen::V6_12 {
            self.list_add_tail(idx, LIST_FULL);
        }
    }

    /// swap_reclaim_full_clusters without force: one cluster from the head of the full list,
    /// rotated to the tail, its cache-only slots noted for reclaim.
    fn reclaim_full_cluster(&mut self) {
        let Some(idx) = self.first(LIST_FULL) else {
            return;
        };
        self.list_add_tail(idx, LIST_FULL);
        let start = idx * SWAPFILE_CLUSTER;
        let end = (start + SWAPFILE_CLUSTER).min(self.max);
        let (map, cache) = (&self.swap_map, &self.cache);
        self.pending_reclaim.extend((start..end).filter(|&s| {
            map[s as usize] == SWAP_HAS_CACHE && cache[s as usize] != super::folio::NIL
        }));
    }

    /// Scans one cluster taken off its list (v6.18 isolation) and puts it back where it belongs.
    fn scan_isolated(
        &mut self,
        idx: u32,
        off: u32,
        order: u32,
        swap_full: bool,
    ) -> Option<(u32, u32)> {
        self.list_del(idx);
        let r = self.scan_cluster(off, order, swap_full);
        self.relocate_cluster(idx);
        r
    }

    /// relocate_cluster (v6.18): free when empty, full when full, else frag of its order.
    fn relocate_cluster(&mut self, idx: u32) {
        let ci = self.clusters[idx as usize];
        let list = match ci.count as u32 {
            0 => LIST_FREE,
            SWAPFILE_CLUSTER => LIST_FULL,
            _ => list_frag(ci.order as u32),
        };
        self.list_add_tail(idx, list);
    }

    /// cluster_alloc_swap_entry of v6.12. Stops early when a scan found cache-only slots to
    /// reclaim, for the caller to reclaim them and retry.
    fn alloc_v6_12(&mut self, cpu: usize, order: u32, swap_full: bool) -> Option<(u32, u32)> {
        let next = self.percpu_next[cpu][order as usize];
        if next != NONE {
            if let Some(r) = self.scan_cluster(next, order, swap_full) {
                return Some(r);
            }
        }
        if let Some(idx) = self.first(LIST_FREE) {
            return self.scan_cluster(idx * SWAPFILE_CLUSTER, order, swap_full);
        }
        if swap_full {
            self.reclaim_full_cluster();
        }
        if order < PMD_ORDER {
            let mut frags = 0;
            while let Some(idx) = self.first(list_nonfull(order)) {
                self.list_add_tail(idx, list_frag(order));
                frags += 1;
                if let Some(r) = self.scan_cluster(idx * SWAPFILE_CLUSTER, order, swap_full) {
                    return Some(r);
                }
            }
            while frags < self.list_len(list_frag(order)) {
                let idx = self
                    .first(list_frag(order))
                    .expect("frag list is not empty");
                self.list_add_tail(idx, list_frag(order));
                frags += 1;
                if let Some(r) = self.scan_cluster(idx * SWAPFILE_CLUSTER, order, swap_full) {
                    return Some(r);
                }
            }
        }
        if order > 0 {
            return None;
        }
        self.steal_order0(swap_full, false)
    }

    /// cluster_alloc_swap_entry of the newest design (v6.18 profile).
    fn alloc_v6_18(&mut self, cpu: usize, order: u32, swap_full: bool) -> Option<(u32, u32)> {
        let next = self.percpu_next[cpu][order as usize];
        if next != NONE {
            let idx = next / SWAPFILE_CLUSTER;
            let ci = self.clusters[idx as usize];
            // cluster_is_usable: empty, or serving this order (order 0 may use any).
            if ci.count == 0 || ci.order as u32 == order || order == 0 {
                if let Some(r) = self.scan_isolated(idx, next, order, swap_full) {
                    return Some(r);
                }
            }
        }
        if order < PMD_ORDER {
            for idx in self.list_clusters(list_nonfull(order)) {
                if let Some(r) = self.scan_isolated(idx, idx * SWAPFILE_CLUSTER, order, swap_full) {
                    return Some(r);
                }
            }
        }
        if let Some(idx) = self.first(LIST_FREE) {
            if let Some(r) = self.scan_isolated(idx, idx * SWAPFILE_CLUSTER, order, swap_full) {
                return Some(r);
            }
        }
        if swap_full {
            self.reclaim_full_cluster();
        }
        if order < PMD_ORDER {
            if let Some(idx) = self.first(list_frag(order)) {
                if let Some(r) = self.scan_isolated(idx, idx * SWAPFILE_CLUSTER, order, swap_full) {
                    return Some(r);
                }
            }
        }
        if order > 0 {
            return None;
        }
        self.steal_order0(swap_full, true)
    }

    /// Order 0 takes a slot from the higher orders' clusters: frag[o] then nonfull[o], o rising.
    fn steal_order0(&mut self, swap_full: bool, isolate: bool) -> Option<(u32, u32)> {
        for o in 1..SWAP_NR_ORDERS as u32 {
            for list in [list_frag(o), list_nonfull(o)] {
                for idx in self.list_clusters(list) {
                    let start = idx * SWAPFILE_CLUSTER;
                    let r = if isolate {
                        self.scan_isolated(idx, start, 0, swap_full)
                    } else {
                        self.scan_cluster(start, 0, swap_full)
                    };
                    if r.is_some() {
                        return r;
                    }
                }
            }
        }
        None
    }

    /// Allocates 2^order slots marked SWAP_HAS_CACHE at time `now_ns`; returns the first offset.
    /// `swap_full` is vm_swap_full(), which lets v6.12+ reuse cache-only slots. An allocation that
    /// had to wait for discards sets `waited_until_ns`.
    pub fn alloc(&mut self, cpu: usize, order: u32, swap_full: bool, now_ns: u64) -> Option<u32> {
        self.complete_discards(now_ns);
        let got = self.alloc_inner(cpu, order, swap_full);
        // v6.12 discards synchronously once its lists are exhausted, v6.18 only for order 0.
        let retry = got.is_none()
            && match self.gen {
                Gen::V6_12 => true,
                Gen::V6_18 => order == 0,
                Gen::V6_9 | Gen::V6_10 => false,
            };
        if retry && self.discard_now() {
            return self.alloc_inner(cpu, order, swap_full);
        }
        got
    }

    fn alloc_inner(&mut self, cpu: usize, order: u32, swap_full: bool) -> Option<u32> {
        let nr = 1u32 << order;
        if self.free_slots() < nr as u64 {
            return None;
        }
        // Large allocations need a block device with clusters (SWP_BLKDEV and cluster_info).
        if order > 0 && self.kind == SwapKind::File {
            return None;
        }
        if !self.has_clusters() {
            if order > 0 {
                return None;
            }
            let off = self.scan_for_free_slot()?;
            self.take_slots(off, 1);
            return Some(off);
        }
        match self.gen {
            Gen::V6_9 | Gen::V6_10 => {
                let off = if order == 0 {
                    match self.alloc_from_cursor(cpu, 0) {
                        Some(off) => off,
                        None => self.scan_for_free_slot()?,
                    }
                } else if self.gen == Gen::V6_9 {
                    if order != PMD_ORDER {
                        return None;
                    }
                    self.take_free_cluster()? * SWAPFILE_CLUSTER
                } else {
                    self.alloc_from_cursor(cpu, order)?
                };
                self.take_slots(off, nr);
                Some(off)
            }
            Gen::V6_12 | Gen::V6_18 => {
                let found = if self.gen == Gen::V6_12 {
                    self.alloc_v6_12(cpu, order, swap_full)
                } else {
                    self.alloc_v6_18(cpu, order, swap_full)
                };
                self.percpu_next[cpu][order as usize] = found.map_or(NONE, |(_, next)| next);
                found.map(|(off, _)| off)
            }
        }
    }
}

pub fn swapon_all(spec: &RunSpec, hw: &crate::machine::hw::HwCosts) -> Vec<SwapInfo> {
    let nr_cpus = spec.scenario.machine.nr_cpus() as usize;
    let gen = spec.profile.kernel;
    let mut v: Vec<SwapInfo> = spec
        .scenario
        .swap
        .iter()
        .map(|s| {
            let discard = s.discard.then_some(hw.ssd_discard_ns);
            SwapInfo::with_discard(
                &s.name,
                s.kind,
                s.priority,
                s.size_bytes,
                nr_cpus,
                gen,
                discard,
            )
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

    /// get_swap_pages for one folio: the first device by priority that has room; a large request
    /// tries only one device.
    pub fn get_swap_pages(&mut self, order: u32) -> Option<(u32, u32)> {
        if order > 0 && !self.spec.knobs.thp_swap {
            return None;
        }
        let cpu = self.current_cpu as usize;
        let swap_full = self.vm_swap_full();
        for dev in self.swap_avail.clone() {
            self.plist_requeue(dev);
            let dev = dev as usize;
            if self.swap[dev].free_slots() == 0 {
                continue;
            }
            let cpu = cpu % self.swap[dev].nr_cpus();
            let now = self.clock_ns;
            let mut got = self.swap[dev].alloc(cpu, order, swap_full, now);
            self.charge_time(self.hw.swap_slot_alloc_ns);
            if got.is_none() && !self.swap[dev].pending_reclaim.is_empty() {
                // The kernel reclaims cache-only slots in place while scanning; here the scan
                // noted them, they are reclaimed now, and the allocation is tried once more.
                self.reclaim_cache_only_slots(dev as u32);
                got = self.swap[dev].alloc(cpu, order, swap_full, now);
            }
            self.reclaim_cache_only_slots(dev as u32);
            let waited = std::mem::take(&mut self.swap[dev].waited_until_ns);
            self.clock_ns = self.clock_ns.max(waited);
            if let Some(off) = got {
                return Some((dev as u32, off));
            }
            if order > 0 {
                return None;
            }
        }
        None
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

    /// __try_to_reclaim_swap(TTRS_ANYWAY) for each noted slot: a swap-cache folio none of whose
    /// slots has a swap PTE leaves the cache (and is freed if nothing maps it).
    fn reclaim_cache_only_slots(&mut self, dev: u32) {
        let slots = std::mem::take(&mut self.swap[dev as usize].pending_reclaim);
        for off in slots {
            let folio = self.swap[dev as usize].cache[off as usize];
            if folio == super::folio::NIL
                || self.swap[dev as usize].swap_map[off as usize] != SWAP_HAS_CACHE
            {
                continue;
            }
            if self.folio_free_swap(folio) && self.mem.mapcount(folio) == 0 {
                self.free_folio(folio);
            }
        }
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

    fn dev(gen: Gen, size: u64) -> SwapInfo {
        SwapInfo::new("s", SwapKind::Ssd, -2, size, 1, gen)
    }

    #[test]
    fn free_list_is_column_major_and_the_header_cluster_placement_depends_on_the_generation() {
        let si = dev(Gen::V6_9, 256 * MIB);
        assert_eq!(&si.list_clusters(LIST_FREE)[..6], &[32, 64, 96, 1, 33, 65]);
        assert_eq!(si.list_len(LIST_FREE), 127);
        assert_eq!(si.clusters[0].list, LIST_NONE);
        let si = dev(Gen::V6_12, 256 * MIB);
        assert_eq!(
            si.list_clusters(list_nonfull(0)),
            vec![0],
            "v6.12 puts the header cluster on nonfull[0]"
        );
    }

    #[test]
    fn v6_9_order0_fills_a_cluster_then_takes_the_next_free_one() {
        let mut si = dev(Gen::V6_9, 64 * MIB);
        assert_eq!(si.alloc(0, 0, false, 0), Some(512));
        for i in 1..512 {
            assert_eq!(si.alloc(0, 0, false, 0), Some(512 + i));
        }
        assert_eq!(si.alloc(0, 0, false, 0), Some(1024));
        assert_eq!(si.clusters[1].count, 512);
    }

    #[test]
    fn v6_9_rejects_mthp_orders_and_hands_out_pmd_clusters_whole() {
        let mut si = dev(Gen::V6_9, 64 * MIB);
        assert_eq!(si.alloc(0, 4, false, 0), None);
        assert_eq!(si.alloc(0, 9, false, 0), Some(512));
        assert_eq!(si.inuse_pages, 512);
    }

    #[test]
    fn v6_10_large_allocations_are_aligned_and_only_from_free_clusters() {
        let mut si = dev(Gen::V6_10, 4 * MIB);
        // Two clusters: 0 holds the header, 1 is free.
        assert_eq!(si.alloc(0, 0, false, 0), Some(512));
        assert_eq!(
            si.alloc(0, 4, false, 0),
            None,
            "the only free cluster went to order 0"
        );
        si.free_slots_range(512, 1, 0);
        let a = si.alloc(0, 4, false, 0).unwrap();
        assert_eq!(a % 16, 0);
        assert_eq!(si.alloc(0, 4, false, 0), Some(a + 16));
    }

    #[test]
    fn v6_10_order0_steals_by_linear_scan_when_no_cluster_is_free() {
        let mut si = dev(Gen::V6_10, 4 * MIB);
        let a = si.alloc(0, 4, false, 0).unwrap();
        assert_eq!(a, 512);
        // Cluster 0 has the header: its other slots are reachable only by the scan.
        assert_eq!(si.alloc(0, 0, false, 0), Some(1));
    }

    #[test]
    fn v6_12_cluster_lists_follow_allocation_and_free() {
        let mut si = dev(Gen::V6_12, 8 * MIB);
        // free -> nonfull[4] on the first order-4 allocation
        let a = si.alloc(0, 4, false, 0).unwrap();
        let idx = a / 512;
        assert_eq!(si.clusters[idx as usize].list, list_nonfull(4));
        assert_eq!(si.clusters[idx as usize].order, 4);
        // ... full at 512 slots
        for _ in 1..32 {
            si.alloc(0, 4, false, 0).unwrap();
        }
        assert_eq!(si.clusters[idx as usize].list, LIST_FULL);
        // full -> nonfull[4] on any free
        si.free_slots_range(a + 16, 16, 0);
        assert_eq!(si.clusters[idx as usize].list, list_nonfull(4));
        // -> free when the count reaches 0
        for off in (a..a + 512).step_by(16).filter(|&o| o != a + 16) {
            si.free_slots_range(off, 16, 0);
        }
        assert_eq!(si.clusters[idx as usize].list, LIST_FREE);
        assert_eq!(si.clusters[idx as usize].order, 0);
    }

    #[test]
    fn v6_12_slow_path_moves_nonfull_clusters_to_frag() {
        let mut si = dev(Gen::V6_12, 2 * MIB * 2);
        // Fill the single free cluster with order 4, then free one aligned block in the middle.
        let a = si.alloc(0, 4, false, 0).unwrap();
        for _ in 1..32 {
            si.alloc(0, 4, false, 0).unwrap();
        }
        si.free_slots_range(a + 32, 1, 0);
        assert_eq!(si.clusters[(a / 512) as usize].list, list_nonfull(4));
        // An order-4 request finds no aligned 16-slot hole: the scan leaves the cluster on frag[4].
        assert_eq!(si.alloc(0, 4, false, 0), None);
        assert_eq!(si.clusters[(a / 512) as usize].list, list_frag(4));
        // Order 0 first finds room in the header's cluster, on nonfull[0].
        assert_eq!(si.alloc(0, 0, false, 0), Some(1));
    }

    #[test]
    fn v6_12_order0_steals_frag_before_nonfull_in_ascending_order() {
        let mut si = dev(Gen::V6_12, 8 * MIB);
        // Clusters 1, 2 and 3 serve orders 2, 3 and 2; no free cluster is left.
        let c1 = si.alloc(0, 2, false, 0).unwrap() / 512;
        let c2 = si.alloc(0, 3, false, 0).unwrap() / 512;
        si.percpu_next[0][2] = NONE;
        let c3 = si.alloc(0, 2, false, 0).unwrap() / 512;
        assert_eq!((c1, c2, c3), (1, 2, 3));
        // Fill cluster 0 (the header's) so order 0 must steal.
        while si.clusters[0].count < 512 {
            si.alloc(0, 0, false, 0).unwrap();
        }
        si.percpu_next[0][0] = NONE;
        si.list_add_tail(3, list_frag(2));
        // frag[2] (cluster 3) comes before nonfull[2] (cluster 1) and nonfull[3] (cluster 2).
        let s = si.alloc(0, 0, false, 0).unwrap();
        assert_eq!(s / 512, 3);
    }

    #[test]
    fn v6_12_notes_cache_only_slots_only_when_swap_is_full() {
        let mut si = dev(Gen::V6_12, 4 * MIB);
        while si.alloc(0, 0, false, 0).is_some() {}
        // Every slot is referenced by a swap PTE but 700, which only the swap cache holds.
        for s in 1..1024 {
            si.swap_map[s] = 1;
        }
        si.swap_map[700] = SWAP_HAS_CACHE;
        si.cache[700] = 4242;
        si.clusters[1].count -= 1;
        assert_eq!(si.scan_cluster(512, 0, false), None);
        assert!(si.pending_reclaim.is_empty());
        assert_eq!(si.scan_cluster(512, 0, true), None);
        assert_eq!(si.pending_reclaim, vec![700]);
    }

    #[test]
    fn v6_18_relocates_scanned_clusters_to_frag() {
        let mut si = dev(Gen::V6_18, 8 * MIB);
        let a = si.alloc(0, 4, false, 0).unwrap();
        assert_eq!(si.clusters[(a / 512) as usize].list, list_frag(4));
        assert_eq!(si.clusters[(a / 512) as usize].order, 4);
        si.free_slots_range(a, 16, 0);
        assert_eq!(si.clusters[(a / 512) as usize].list, LIST_FREE);
    }

    #[test]
    fn a_freed_cluster_is_not_reused_until_discarded() {
        let mut si =
            SwapInfo::with_discard("s", SwapKind::Ssd, -2, 6 * MIB, 1, Gen::V6_12, Some(1000));
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
        let mut si =
            SwapInfo::with_discard("s", SwapKind::Ssd, -2, 4 * MIB, 1, Gen::V6_10, Some(1000));
        let a = si.alloc(0, 9, false, 0);
        assert_eq!(a, Some(512));
        si.free_slots_range(512, 512, 0);
        assert_eq!(si.alloc(0, 9, false, 5000), Some(512));
        assert_eq!(si.waited_until_ns, 0);
    }

    #[test]
    fn swap_files_use_clusters_for_order0_but_never_allocate_large() {
        let mut si = SwapInfo::new("f", SwapKind::File, -2, 4 * MIB, 1, Gen::V6_12);
        assert_eq!(si.alloc(0, 4, false, 0), None);
        assert_eq!(si.alloc(0, 9, false, 0), None);
        assert!(si.alloc(0, 0, false, 0).is_some());
    }

    #[test]
    fn rotational_devices_allocate_sequentially_and_never_large() {
        let mut si = SwapInfo::new("s", SwapKind::Hdd, -2, 4 * MIB, 1, Gen::V6_12);
        assert_eq!(si.alloc(0, 0, false, 0), Some(1));
        assert_eq!(si.alloc(0, 0, false, 0), Some(2));
        assert_eq!(si.alloc(0, 9, false, 0), None);
    }
}
