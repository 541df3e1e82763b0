//! The cluster-order swap-slot allocator of v6.12: cluster_alloc_swap_entry of mm/swapfile.c
//! (spec swap.md §B(iii)).
//!
//! Per CPU and per order, the next offset in the cluster last used; else a cluster from the free
//! list, then nonfull[order] (each tried cluster moves to frag[order]), a bounded pass over
//! frag[order], pending discards, and for order 0 stealing from the other orders' frag and
//! nonfull lists, orders rising. Cache-only slots are reused, and full clusters reclaimed, only
//! when vm_swap_full(). Rotational devices keep the scan allocator (scan.rs) in v6.12.
//! Left out: the per-CPU cluster lock and the device lock, and the races they allow.

use super::super::swap_cluster::{
    list_frag, list_nonfull, LIST_DISCARD, LIST_FREE, LIST_FULL, NONE, SWAP_NR_ORDERS,
};
use super::super::swapfile::{AllocCtx, SwapInfo, PMD_ORDER, SWAPFILE_CLUSTER, SWAP_HAS_CACHE};
use super::{cluster_scan_range, Range};

/// The allocator state v6.12 keeps in swap_info_struct.
pub struct ClusterOrderAllocator {
    /// Per CPU, per order: the next offset to try (percpu_cluster->next[order]); NONE = none.
    pub(in crate::mm) percpu_next: Vec<[u32; SWAP_NR_ORDERS]>,
}

impl ClusterOrderAllocator {
    pub fn new(nr_cpus: usize) -> ClusterOrderAllocator {
        ClusterOrderAllocator {
            percpu_next: vec![[NONE; SWAP_NR_ORDERS]; nr_cpus],
        }
    }

    /// cluster_alloc_swap: up to `nr` allocations (one when large), pushed to `out`; a device
    /// that filled up then reclaims its full clusters' cache-only slots.
    pub fn alloc_slots(
        &mut self,
        si: &mut SwapInfo,
        cpu: usize,
        order: u32,
        nr: usize,
        ctx: &AllocCtx,
        out: &mut Vec<u32>,
    ) {
        let nr = if order > 0 { 1 } else { nr };
        for _ in 0..nr {
            match self.cluster_alloc_swap_entry(si, cpu, order, ctx) {
                Some(off) => out.push(off),
                None => break,
            }
        }
        si.reclaim_work(ctx, false);
    }

    /// cluster_alloc_swap_entry.
    fn cluster_alloc_swap_entry(
        &mut self,
        si: &mut SwapInfo,
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
                let (found, o) = scan_cluster(si, next, order, ctx);
                off = o;
                if found.is_some() {
                    break 'done found;
                }
            }
            if let Some(idx) = si.clusters.first(LIST_FREE) {
                let (found, o) = scan_cluster(si, idx * SWAPFILE_CLUSTER, order, ctx);
                off = o;
                break 'done found;
            }
            if ctx.swap_full {
                si.reclaim_full_clusters(false, false, ctx);
            }
            if order < PMD_ORDER {
                let mut frags = 0;
                while let Some(idx) = si.clusters.first(list_nonfull(order)) {
                    si.clusters.list_add_tail(idx, list_frag(order));
                    let (found, o) = scan_cluster(si, idx * SWAPFILE_CLUSTER, order, ctx);
                    off = o;
                    frags += 1;
                    if found.is_some() {
                        break 'done found;
                    }
                }
                // A bounded pass over frag[order], rotating each cluster to the tail.
                while frags < si.clusters.list_len(list_frag(order)) {
                    let idx = si
                        .clusters
                        .first(list_frag(order))
                        .expect("frag list is not empty");
                    si.clusters.list_add_tail(idx, list_frag(order));
                    let (found, o) = scan_cluster(si, idx * SWAPFILE_CLUSTER, order, ctx);
                    off = o;
                    frags += 1;
                    if found.is_some() {
                        break 'done found;
                    }
                }
            }
            if si.clusters.list_len(LIST_DISCARD) > 0 && si.discard_now() {
                continue;
            }
            if order > 0 {
                break 'done None;
            }
            for o in 1..SWAP_NR_ORDERS as u32 {
                for list in [list_frag(o), list_nonfull(o)] {
                    if let Some(s) = steal_from_list(si, list, ctx, &mut off) {
                        break 'done Some(s);
                    }
                }
            }
            break 'done None;
        };
        self.percpu_next[cpu][o_idx] = off;
        found
    }
}

/// cluster_reclaim_range: reclaim the cache-only slots of the range, then recheck it.
fn cluster_reclaim_range(si: &mut SwapInfo, off: u32, nr: u32, ctx: &AllocCtx) -> bool {
    for s in off..off + nr {
        let m = si.swap_map[s as usize];
        if m == 0 {
            continue;
        }
        if m != SWAP_HAS_CACHE || si.try_to_reclaim_swap(s, true, ctx) <= 0 {
            break;
        }
    }
    si.swap_map[off as usize..(off + nr) as usize]
        .iter()
        .all(|&m| m == 0)
}

/// cluster_alloc_range: take the slots; a free cluster moves to nonfull[order] (or, for a
/// whole-cluster allocation, straight to full) and a filled one to full.
fn alloc_range(si: &mut SwapInfo, idx: u32, off: u32, order: u32) {
    let nr = 1u32 << order;
    if si.clusters[idx as usize].list == LIST_FREE {
        if nr < SWAPFILE_CLUSTER {
            si.clusters.list_add_tail(idx, list_nonfull(order));
        }
        si.clusters[idx as usize].order = order as u8;
    }
    si.take_range(off, nr);
    si.clusters[idx as usize].count += nr as u16;
    if si.clusters[idx as usize].count as u32 == SWAPFILE_CLUSTER {
        si.clusters.list_add_tail(idx, LIST_FULL);
    }
}

/// alloc_swap_scan_cluster: the first free naturally aligned range from `off` to the cluster's
/// end (no wrap to its start). Returns the offset found and the next offset to try (NONE when
/// the cluster is full or exhausted).
fn scan_cluster(si: &mut SwapInfo, off: u32, order: u32, ctx: &AllocCtx) -> (Option<u32>, u32) {
    let nr = 1u32 << order;
    let idx = off / SWAPFILE_CLUSTER;
    let start = idx * SWAPFILE_CLUSTER;
    let end = (start + SWAPFILE_CLUSTER).min(si.max);
    if end < start + nr || si.clusters[idx as usize].count as u32 + nr > SWAPFILE_CLUSTER {
        return (None, NONE);
    }
    let last = end - nr;
    let mut o = off.next_multiple_of(nr).max(start);
    while o <= last {
        let usable = match cluster_scan_range(si, o, nr, ctx.swap_full) {
            Range::Free => true,
            Range::NeedReclaim => cluster_reclaim_range(si, o, nr, ctx),
            Range::Busy => false,
        };
        if usable {
            alloc_range(si, idx, o, order);
            let next = o + nr;
            let done = si.clusters[idx as usize].count as u32 == SWAPFILE_CLUSTER || next > last;
            return (Some(o), if done { NONE } else { next });
        }
        o += nr;
    }
    (None, NONE)
}

/// Order-0 stealing over one list, head first.
fn steal_from_list(si: &mut SwapInfo, list: u8, ctx: &AllocCtx, off: &mut u32) -> Option<u32> {
    let mut guard = si.clusters.len();
    let mut c = si.clusters.first(list);
    while let Some(idx) = c {
        if guard == 0 {
            break;
        }
        guard -= 1;
        let next = si.clusters.next_on_list(idx);
        let (found, o) = scan_cluster(si, idx * SWAPFILE_CLUSTER, 0, ctx);
        *off = o;
        if found.is_some() {
            return found;
        }
        c = next;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::mm::folio::NIL;
    use crate::scenario::generation::Generation;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn v6_12_allocator_keeps_its_invariants(device in devices(), steps in steps()) {
            run_steps(Generation::V6_12, device, &steps)?;
        }
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
        *si.allocator.cpu_next_mut(0, 2) = NONE;
        assert_eq!(si.alloc(0, 2, false, 0).map(|o| o / 512), Some(3));
        // Fill cluster 0 (the header's) so that order 0 must steal.
        while si.clusters[0].count < 512 {
            si.alloc(0, 0, false, 0).unwrap();
        }
        *si.allocator.cpu_next_mut(0, 0) = NONE;
        si.clusters.list_add_tail(3, list_frag(2));
        si.clusters.list_add_tail(2, list_frag(3));
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
        *si.allocator.cpu_next_mut(0, 0) = NONE;
        si.clusters.list_add_tail(2, list_frag(3));
        assert_eq!(si.alloc(0, 0, false, 0).map(|o| o / 512), Some(1));
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
            *si.allocator.cpu_next_mut(0, 0) = NONE;
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
}
