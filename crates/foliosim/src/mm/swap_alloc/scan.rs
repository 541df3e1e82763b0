//! The scanning swap-slot allocator: scan_swap_map_slots of mm/swapfile.c, v6.9 and v6.10
//! (spec swap.md §B(i), §B(ii)), and rotational devices up to v6.12.
//!
//! - v6.9: each CPU's cluster {index, next} taken from the head of the free list, the free-list
//!   conflict check, and once no cluster is free the wrap-around `scan:` from the CPU's scan
//!   base (cluster_next_cpu: random at swapon and on crossing a 64 MiB chunk, drawn from the run
//!   seed). PMD order only whole, by swap_alloc_cluster; mTHP orders fail (the kernel would
//!   wrongly hand out one slot; v6.9 splits mTHPs before swap-out).
//! - v6.10: the same scan with per-CPU next[order] cursors over free-list clusters, naturally
//!   aligned; a cluster is free again only at count 0; order 0 steals by the linear scan.
//! - Rotational devices (no clusters): cluster_next with 512-slot runs, order 0 only.
//!
//! Left out: the device and cluster locks the scan drops and retakes, and the races they allow.

use super::super::swap_cluster::{SwapClusters, LIST_FREE, NONE, SWAP_NR_ORDERS};
use super::super::swapfile::{AllocCtx, SwapInfo, PMD_ORDER, SWAPFILE_CLUSTER, SWAP_HAS_CACHE};
use crate::sim::rng::Rng;

/// Scan budget of the old scanner before it "takes a break".
const LATENCY_LIMIT: i64 = 256;
/// One swap address space (64 MiB): cluster_next_cpu jumps when it crosses one.
const SWAP_ADDRESS_SPACE_SHIFT: u32 = 14;

/// The old scanner's steps (the labels of scan_swap_map_slots).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    Checks,
    Scan,
    Done,
    NoPage,
}

/// The allocator state scan_swap_map_slots keeps in swap_info_struct.
pub struct ScanAllocator {
    /// v6.10's rule: per-CPU next[order] cursors over whole free clusters; v6.9 keeps one
    /// cluster per CPU and serves order 0 only (and PMD order whole).
    per_order_cursors: bool,
    /// v6.12 (rotational devices): cache-only reclaim frees the slots at once (TTRS_DIRECT).
    direct_reclaim: bool,
    /// Per CPU, per order: the next offset to try (v6.9 uses order 0 only). NONE = no current
    /// cluster.
    pub(in crate::mm) percpu_next: Vec<[u32; SWAP_NR_ORDERS]>,
    /// v6.9: per CPU, the cluster `percpu_next[cpu][0]` walks (NONE = null).
    percpu_cluster: Vec<u32>,
    /// Per CPU scan base on non-rotational devices (cluster_next_cpu).
    pub(in crate::mm) cluster_next_cpu: Vec<u32>,
    /// Rotational devices: the sequential cursor and its countdown (cluster_next, cluster_nr).
    cluster_next: u32,
    cluster_nr: u32,
    /// The random choices of set_cluster_next and swapon's scan bases.
    scan_rng: Rng,
}

impl ScanAllocator {
    pub fn new(nr_cpus: usize, per_order_cursors: bool, direct_reclaim: bool) -> ScanAllocator {
        ScanAllocator {
            per_order_cursors,
            direct_reclaim,
            percpu_next: vec![[NONE; SWAP_NR_ORDERS]; nr_cpus],
            percpu_cluster: vec![NONE; nr_cpus],
            cluster_next_cpu: vec![1; nr_cpus],
            cluster_next: 1,
            cluster_nr: 0,
            scan_rng: Rng::new(0),
        }
    }

    /// Seeds the scanner's random choices and draws each CPU's scan base as swapon does
    /// (get_random_u32_inclusive(1, highest_bit)).
    pub fn seed(&mut self, seed: u64, highest_bit: u32) {
        self.scan_rng = Rng::new(seed ^ 0x7377_6170_5f73_6361);
        for cpu in 0..self.cluster_next_cpu.len() {
            self.cluster_next_cpu[cpu] = 1 + self.scan_rng.below(highest_bit as u64) as u32;
        }
    }

    /// Up to `nr` allocations of 2^order slots, pushed to `out`: v6.9 serves order 0 by the
    /// scan and PMD order by swap_alloc_cluster; v6.10 any order by the scan, one at a time
    /// when large.
    pub fn alloc_slots(
        &mut self,
        si: &mut SwapInfo,
        cpu: usize,
        order: u32,
        nr: usize,
        ctx: &AllocCtx,
        out: &mut Vec<u32>,
    ) {
        if self.per_order_cursors {
            let nr = if order > 0 { 1 } else { nr };
            self.scan_swap_map_slots(si, cpu, order, nr, ctx, out);
        } else if order == PMD_ORDER {
            if let Some(off) = swap_alloc_cluster(si) {
                out.push(off);
            }
        } else if order == 0 {
            self.scan_swap_map_slots(si, cpu, 0, nr, ctx, out);
        }
    }

    /// set_cluster_next: the scan base after an allocation; on an SSD, crossing into another
    /// 64 MiB swap address space jumps to a random one.
    pub(in crate::mm) fn set_cluster_next(&mut self, si: &SwapInfo, cpu: usize, next: u32) {
        if !si.solidstate() {
            self.cluster_next = next;
            return;
        }
        let prev = self.cluster_next_cpu[cpu];
        let mut next = next;
        if prev >> SWAP_ADDRESS_SPACE_SHIFT != next >> SWAP_ADDRESS_SPACE_SHIFT {
            if si.highest_bit <= si.lowest_bit {
                return;
            }
            let span = (si.highest_bit - si.lowest_bit + 1) as u64;
            next = si.lowest_bit + self.scan_rng.below(span) as u32;
            next &= !((1 << SWAP_ADDRESS_SPACE_SHIFT) - 1);
            next = next.max(si.lowest_bit);
        }
        self.cluster_next_cpu[cpu] = next;
    }

    fn reset_cursor(&mut self, cpu: usize, order: u32) {
        if self.per_order_cursors {
            self.percpu_next[cpu][order as usize] = NONE;
        } else {
            self.percpu_cluster[cpu] = NONE;
        }
    }

    /// scan_swap_map_try_ssd_cluster: the next free (v6.10: naturally aligned, 2^order) range in
    /// this CPU's cluster, or in the cluster at the head of the free list; pending discards are
    /// waited for when no cluster is free. Sets `offset` and `scan_base`.
    fn try_ssd_cluster(
        &mut self,
        si: &mut SwapInfo,
        cpu: usize,
        order: u32,
        offset: &mut u32,
        scan_base: &mut u32,
    ) -> bool {
        let nr = 1u32 << order;
        let mut guard = si.clusters.len() + 2;
        loop {
            guard -= 1;
            if guard == 0 {
                return false;
            }
            let (mut tmp, idx) = if !self.per_order_cursors {
                if self.percpu_cluster[cpu] == NONE {
                    match si.clusters.first(LIST_FREE) {
                        Some(h) => {
                            self.percpu_cluster[cpu] = h;
                            self.percpu_next[cpu][0] = h * SWAPFILE_CLUSTER;
                        }
                        None if si.discard_now() => {
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
                    match si.clusters.first(LIST_FREE) {
                        Some(h) => t = h * SWAPFILE_CLUSTER,
                        None if si.discard_now() => {
                            *scan_base = self.cluster_next_cpu[cpu];
                            *offset = *scan_base;
                            continue;
                        }
                        None => return false,
                    }
                }
                (t, t / SWAPFILE_CLUSTER)
            };
            let max = ((idx + 1) * SWAPFILE_CLUSTER).min(si.max);
            while tmp < max {
                if tmp + nr <= max
                    && si.swap_map[tmp as usize..(tmp + nr) as usize]
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
            self.percpu_next[cpu][order as usize] = if !self.per_order_cursors {
                tmp + 1
            } else if tmp + nr < max {
                tmp + nr
            } else {
                NONE
            };
            return true;
        }
    }

    /// scan_swap_map_slots: up to `nr` allocations of 2^order slots (order > 0 only on v6.10
    /// SSDs), pushed to `out`.
    fn scan_swap_map_slots(
        &mut self,
        si: &mut SwapInfo,
        cpu: usize,
        order: u32,
        nr: usize,
        ctx: &AllocCtx,
        out: &mut Vec<u32>,
    ) {
        let nr_pages = 1u32 << order;
        let ssd = si.has_clusters();
        let direct = self.direct_reclaim;
        let start_len = out.len();
        let mut latency = LATENCY_LIMIT;
        let mut scanned_many = false;
        // Bounds the rescans after failed cache-only reclaims, which the kernel would retry
        // while time passes.
        let scan_budget = 2 * si.max as u64 + 2;
        let mut scanned_total = 0u64;
        let mut scan_base = if si.solidstate() {
            self.cluster_next_cpu[cpu]
        } else {
            self.cluster_next
        };
        let mut offset = scan_base;
        let mut step = Step::Checks;
        if ssd {
            if !self.try_ssd_cluster(si, cpu, order, &mut offset, &mut scan_base) {
                step = if order > 0 { Step::NoPage } else { Step::Scan };
            }
        } else if self.cluster_nr == 0 {
            // Every 512 allocations: look from lowest_bit for 512 free slots in a row.
            if si.free_slots() >= SWAPFILE_CLUSTER as u64 {
                scan_base = si.lowest_bit;
                offset = scan_base;
                let mut last_in_cluster = offset + SWAPFILE_CLUSTER - 1;
                let mut found = false;
                while last_in_cluster <= si.highest_bit {
                    if si.swap_map[offset as usize] != 0 {
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
                        while ssd_cluster_conflict(&si.clusters, offset) {
                            self.reset_cursor(cpu, order);
                            if out.len() > start_len {
                                next = Step::Done;
                                break;
                            }
                            if !self.try_ssd_cluster(si, cpu, order, &mut offset, &mut scan_base) {
                                next = if order > 0 { Step::NoPage } else { Step::Scan };
                                break;
                            }
                        }
                        if next != Step::Checks {
                            step = next;
                            continue;
                        }
                    }
                    if si.highest_bit == 0 {
                        step = Step::NoPage;
                        continue;
                    }
                    if offset > si.highest_bit {
                        scan_base = si.lowest_bit;
                        offset = scan_base;
                    }
                    let m = si.swap_map[offset as usize];
                    // Reuse a cache-only slot if its folio can leave the swap cache.
                    if ctx.swap_full && m == SWAP_HAS_CACHE {
                        if si.try_to_reclaim_swap(offset, direct, ctx) > 0 {
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
                    si.take_range(offset, nr_pages);
                    old_cluster_inc(si, offset, nr_pages);
                    out.push(offset);
                    if out.len() - start_len == nr || offset >= si.highest_bit {
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
                        if self.try_ssd_cluster(si, cpu, order, &mut offset, &mut scan_base) {
                            continue;
                        }
                    } else if self.cluster_nr > 0 {
                        offset += 1;
                        if si.swap_map[offset as usize] == 0 {
                            self.cluster_nr -= 1;
                            continue;
                        }
                    }
                    // A quick look further on, unless the scan already took long.
                    step = Step::Done;
                    if !scanned_many {
                        let limit = if offset < scan_base {
                            scan_base.min(si.max - 1)
                        } else {
                            si.highest_bit
                        };
                        while offset <= limit {
                            latency -= 1;
                            if latency <= 0 {
                                break;
                            }
                            if si.swap_map[offset as usize] == 0 {
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
                    let found = linear_scan(
                        si,
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
                    if !self.per_order_cursors || order == 0 {
                        self.set_cluster_next(si, cpu, offset + 1);
                    }
                    return;
                }
                Step::NoPage => return,
            }
        }
    }
}

/// The free-list conflict check: the offset lies in a cluster that is free but not the head of
/// the free list (e.g. this CPU's cluster was emptied and freed meanwhile).
fn ssd_cluster_conflict(clusters: &SwapClusters, off: u32) -> bool {
    let idx = off / SWAPFILE_CLUSTER;
    match clusters.first(LIST_FREE) {
        Some(head) => idx != head && clusters[idx as usize].list == LIST_FREE,
        None => false,
    }
}

/// The `scan:` walk: the first slot after `offset` up to highest_bit, then from lowest_bit up to
/// (not including) `scan_base`, that is free or, when swap is full, cache-only. `latency` and
/// `scanned_many` follow the kernel's LATENCY_LIMIT bookkeeping; `steps` counts the slots
/// looked at.
fn linear_scan(
    si: &SwapInfo,
    offset: u32,
    scan_base: u32,
    swap_full: bool,
    latency: &mut i64,
    scanned_many: &mut bool,
    steps: &mut u64,
) -> Option<u32> {
    let avail = |m: &u8| *m == 0 || (swap_full && *m == SWAP_HAS_CACHE);
    let parts = [
        (offset as u64 + 1, si.highest_bit as u64 + 1),
        (si.lowest_bit as u64, (scan_base as u64).min(si.max as u64)),
    ];
    for (lo, hi) in parts {
        if lo >= hi {
            continue;
        }
        let slice = &si.swap_map[lo as usize..hi as usize];
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

/// add_cluster_info_page: the first use of a free cluster takes it off the free list, whose head
/// it must be.
fn old_cluster_inc(si: &mut SwapInfo, off: u32, nr: u32) {
    if !si.has_clusters() {
        return;
    }
    let idx = off / SWAPFILE_CLUSTER;
    if si.clusters[idx as usize].list == LIST_FREE {
        debug_assert_eq!(si.clusters.first(LIST_FREE), Some(idx));
        si.clusters.list_del(idx);
    }
    si.clusters[idx as usize].count += nr as u16;
}

/// swap_alloc_cluster (v6.9, PMD order on a block device): the head of the free list, whole.
fn swap_alloc_cluster(si: &mut SwapInfo) -> Option<u32> {
    let idx = si.clusters.first(LIST_FREE)?;
    si.clusters.list_del(idx);
    let off = idx * SWAPFILE_CLUSTER;
    si.take_range(off, SWAPFILE_CLUSTER);
    si.clusters[idx as usize].count = SWAPFILE_CLUSTER as u16;
    Some(off)
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::SwapAllocator;
    use super::*;
    use crate::mm::swap_cluster::LIST_NONE;
    use crate::mm::swapfile::SWAP_HAS_CACHE;
    use crate::scenario::generation::Generation;
    use crate::scenario::SwapKind;
    use proptest::prelude::*;

    fn scan(si: &mut SwapInfo) -> &mut ScanAllocator {
        match &mut si.allocator {
            SwapAllocator::Scan(a) => a,
            _ => panic!("not the scan allocator"),
        }
    }

    fn set_cluster_next(si: &mut SwapInfo, cpu: usize, next: u32) {
        si.with_allocator(|a, si| match a {
            SwapAllocator::Scan(s) => s.set_cluster_next(si, cpu, next),
            _ => panic!("not the scan allocator"),
        });
    }

    proptest! {
        #[test]
        fn v6_9_allocator_keeps_its_invariants(device in devices(), steps in steps()) {
            run_steps(Generation::V6_9, device, &steps)?;
        }

        #[test]
        fn v6_10_allocator_keeps_its_invariants(device in devices(), steps in steps()) {
            run_steps(Generation::V6_10, device, &steps)?;
        }
    }

    // ---- v6.9 ----

    #[test]
    fn v6_9_order0_takes_the_head_free_cluster_and_frees_it_to_the_tail() {
        let mut si = dev(Generation::V6_9, 64 * MIB);
        assert_eq!(si.clusters.first(LIST_FREE), Some(1));
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
        scan(&mut si).cluster_next_cpu[0] = 300;
        scan(&mut si).cluster_next_cpu[1] = 40;
        assert_eq!(
            si.alloc(0, 0, false, 0),
            Some(301),
            "scan begins after the base"
        );
        assert_eq!(scan(&mut si).cluster_next_cpu[0], 302);
        assert_eq!(
            si.alloc(1, 0, false, 0),
            Some(41),
            "each CPU has its own base"
        );
        // The next scan of CPU 0 starts at 302 and skips it, as the kernel's `++offset` does.
        assert_eq!(si.alloc(0, 0, false, 0), Some(303));
        // From a base in the used cluster the scan runs to highest_bit and wraps to lowest_bit.
        scan(&mut si).cluster_next_cpu[0] = 700;
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
        scan(&mut si).cluster_next_cpu[0] = 300;
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
            scan(&mut si).percpu_next[0][4],
            NONE,
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
        scan(&mut si).cluster_next_cpu[0] = 520;
        assert_eq!(si.alloc(0, 0, false, 0), Some(528));
        assert_eq!(
            si.alloc(0, 4, false, 0),
            Some(544),
            "the cursor skips the stolen block"
        );
        scan(&mut si).cluster_next_cpu[0] = 5;
        assert_eq!(si.alloc(0, 0, false, 0), Some(6));
    }

    #[test]
    fn v6_9_scan_base_jumps_to_a_random_64mib_chunk_when_it_crosses_one() {
        let mut seen = Vec::new();
        for seed in 0..16 {
            let mut si = dev(Generation::V6_9, 256 * MIB);
            si.seed_scan(seed);
            let base = scan(&mut si).cluster_next_cpu[0];
            assert!((1..65536).contains(&base));
            // Within a chunk the base just follows the allocations.
            scan(&mut si).cluster_next_cpu[0] = 100;
            set_cluster_next(&mut si, 0, 101);
            assert_eq!(scan(&mut si).cluster_next_cpu[0], 101);
            // Crossing into the next chunk draws a chunk start (or lowest_bit).
            set_cluster_next(&mut si, 0, 16384 + 5);
            let b = scan(&mut si).cluster_next_cpu[0];
            assert!(b == 1 || b % 16384 == 0, "{b}");
            seen.push(b);
        }
        seen.sort_unstable();
        seen.dedup();
        assert!(seen.len() >= 3, "{seen:?}");
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
                scan(&mut si).cluster_next_cpu[0] = 550;
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
                scan(&mut si).cluster_next_cpu[0] = 550;
                assert_eq!(si.alloc_with(0, 0, &reclaim_ctx(false, active)), Some(1000));
            }
        }
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
}
