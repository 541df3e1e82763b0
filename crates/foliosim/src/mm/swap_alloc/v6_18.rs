//! The swap-slot allocator of v6.18 (mm/swapfile.c since v6.14/v6.15; spec swap.md §B(iv),
//! UNSURE: read from a newer tree).
//!
//! swap_alloc_fast: this CPU's cached {device, offset} per order, used while the cluster still
//! suits the order. The slow path isolates each cluster it scans and relocates it afterwards
//! (free, full, or frag of its order), takes nonfull[order] before a free cluster (a discarding
//! device the other way round, to spread writes), then one frag cluster, then for order 0 steals
//! from the other orders. Rotational devices have clusters too and keep one device-wide cursor
//! per order. The free list is in plain order; order 0 waits for discards synchronously.
//! Left out: the swap table itself (the swap cache is one folio id per slot anyway), the
//! cluster locks and the per-CPU lock.

use super::super::swap_cluster::{
    list_frag, list_nonfull, LIST_DISCARD, LIST_FREE, LIST_FULL, NONE, SWAP_NR_ORDERS,
};
use super::super::swapfile::{
    AllocCtx, SwapInfo, COUNT_MASK, PMD_ORDER, SWAPFILE_CLUSTER, SWAP_MAP_BAD,
};
use super::{cluster_scan_range, Range};
use crate::mm::folio::NIL;

/// The allocator state of v6.18, per device.
pub struct PercpuFastAllocator {
    /// Per CPU, per order: the cached next offset, valid only on the device that is this CPU's
    /// cached `si` for the order. NONE = no cached cluster.
    pub(in crate::mm) percpu_next: Vec<[u32; SWAP_NR_ORDERS]>,
    /// Rotational devices: the device-wide cursor per order (global_cluster->next[]).
    global_next: [u32; SWAP_NR_ORDERS],
    /// The current allocation scanned a cluster and so set this CPU's cached `si`.
    percpu_scanned: bool,
}

impl PercpuFastAllocator {
    pub fn new(nr_cpus: usize) -> PercpuFastAllocator {
        PercpuFastAllocator {
            percpu_next: vec![[NONE; SWAP_NR_ORDERS]; nr_cpus],
            global_next: [NONE; SWAP_NR_ORDERS],
            percpu_scanned: false,
        }
    }

    /// The start of an allocation on this device.
    pub fn begin(&mut self) {
        self.percpu_scanned = false;
    }

    /// Did the last allocation make this device the CPU's cached `si`? Clears the mark.
    pub fn take_percpu_scanned(&mut self) -> bool {
        std::mem::take(&mut self.percpu_scanned)
    }

    /// Up to `nr` allocations (one when large) by the slow path, pushed to `out`; a device that
    /// filled up then reclaims its full clusters' cache-only slots.
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
        si.reclaim_work(ctx, true);
    }

    /// swap_alloc_fast: this CPU's cached offset, if this device is its cached `si` for the
    /// order and the cluster is still usable for it.
    pub fn alloc_fast(
        &mut self,
        si: &mut SwapInfo,
        cpu: usize,
        order: u32,
        ctx: &AllocCtx,
    ) -> Option<u32> {
        let off = self.percpu_next[cpu][order as usize];
        if off == NONE {
            return None;
        }
        let idx = off / SWAPFILE_CLUSTER;
        if !cluster_is_usable(si, idx, order) {
            return None;
        }
        let off = if si.clusters[idx as usize].count == 0 {
            idx * SWAPFILE_CLUSTER
        } else {
            off
        };
        let r = self.scan_cluster(si, cpu, idx, off, order, ctx);
        si.reclaim_work(ctx, true);
        r
    }

    /// alloc_swap_scan_cluster: scan from `off`, then relocate the cluster and record the next
    /// offset in this CPU's cache (SSD) or the device cursor (rotational).
    fn scan_cluster(
        &mut self,
        si: &mut SwapInfo,
        cpu: usize,
        idx: u32,
        off: u32,
        order: u32,
        ctx: &AllocCtx,
    ) -> Option<u32> {
        let nr = 1u32 << order;
        let start = idx * SWAPFILE_CLUSTER;
        let end = (start + SWAPFILE_CLUSTER).min(si.max);
        let mut found = None;
        let mut next = NONE;
        if end >= start + nr && si.clusters[idx as usize].count as u32 + nr <= SWAPFILE_CLUSTER {
            let last = end - nr;
            let mut o = off.next_multiple_of(nr).max(start);
            while o <= last {
                match cluster_scan_range(si, o, nr, ctx.swap_full) {
                    Range::Busy => {
                        o += nr;
                        continue;
                    }
                    Range::NeedReclaim => {
                        let (free, usable) = cluster_reclaim_range(si, idx, o, order, ctx);
                        if !usable {
                            break;
                        }
                        if si.clusters[idx as usize].count == 0 {
                            o = start;
                        }
                        if !free {
                            o += nr;
                            continue;
                        }
                    }
                    Range::Free => {}
                }
                alloc_range(si, idx, o, order);
                found = Some(o);
                o += nr;
                if (si.clusters[idx as usize].count as u32) < SWAPFILE_CLUSTER && o <= last {
                    next = o;
                }
                break;
            }
        }
        si.relocate_cluster(idx, ctx.now_ns);
        if si.solidstate() {
            self.percpu_next[cpu][order as usize] = next;
            self.percpu_scanned = true;
        } else {
            self.global_next[order as usize] = next;
        }
        found
    }

    /// alloc_swap_scan_list: isolate the head cluster and scan it; with `scan_all`, go on
    /// through the list (each failed cluster is relocated off it, or to its tail).
    fn scan_list(
        &mut self,
        si: &mut SwapInfo,
        cpu: usize,
        list: u8,
        order: u32,
        scan_all: bool,
        ctx: &AllocCtx,
    ) -> Option<u32> {
        let mut budget = si.clusters.list_len(list);
        while budget > 0 {
            budget -= 1;
            let idx = si.clusters.first(list)?;
            si.clusters.list_del(idx);
            if let Some(o) = self.scan_cluster(si, cpu, idx, idx * SWAPFILE_CLUSTER, order, ctx) {
                return Some(o);
            }
            if !scan_all {
                break;
            }
        }
        None
    }

    /// cluster_alloc_swap_entry (the slow path on one device).
    fn cluster_alloc_swap_entry(
        &mut self,
        si: &mut SwapInfo,
        cpu: usize,
        order: u32,
        ctx: &AllocCtx,
    ) -> Option<u32> {
        if !si.solidstate() {
            let off = self.global_next[order as usize];
            if off != NONE {
                let idx = off / SWAPFILE_CLUSTER;
                if cluster_is_usable(si, idx, order) {
                    let off = if si.clusters[idx as usize].count == 0 {
                        idx * SWAPFILE_CLUSTER
                    } else {
                        off
                    };
                    if let Some(o) = self.scan_cluster(si, cpu, idx, off, order, ctx) {
                        return Some(o);
                    }
                }
            }
        }
        // A discarding device prefers a new cluster, to spread the writes.
        if si.discard {
            if let Some(o) = self.scan_list(si, cpu, LIST_FREE, order, false, ctx) {
                return Some(o);
            }
        }
        if order < PMD_ORDER {
            if let Some(o) = self.scan_list(si, cpu, list_nonfull(order), order, true, ctx) {
                return Some(o);
            }
        }
        if !si.discard {
            if let Some(o) = self.scan_list(si, cpu, LIST_FREE, order, false, ctx) {
                return Some(o);
            }
        }
        if ctx.swap_full {
            si.reclaim_full_clusters(false, true, ctx);
        }
        if order < PMD_ORDER {
            if let Some(o) = self.scan_list(si, cpu, list_frag(order), order, false, ctx) {
                return Some(o);
            }
        }
        if order > 0 {
            return None;
        }
        for o in 1..SWAP_NR_ORDERS as u32 {
            for list in [list_frag(o), list_nonfull(o)] {
                if let Some(s) = self.scan_list(si, cpu, list, 0, true, ctx) {
                    return Some(s);
                }
            }
        }
        None
    }
}

/// cluster_is_usable: on no list or a usable one, and empty or of this order (any cluster for
/// order 0).
fn cluster_is_usable(si: &SwapInfo, idx: u32, order: u32) -> bool {
    let ci = si.clusters[idx as usize];
    if ci.list == LIST_FULL || ci.list == LIST_DISCARD {
        return false;
    }
    order == 0 || ci.count == 0 || ci.order as u32 == order
}

/// cluster_reclaim_range: reclaim, then (the cluster may have changed meanwhile) check it is
/// still usable and the range free. Returns (range free, cluster usable).
fn cluster_reclaim_range(
    si: &mut SwapInfo,
    idx: u32,
    off: u32,
    order: u32,
    ctx: &AllocCtx,
) -> (bool, bool) {
    let nr = 1u32 << order;
    for s in off..off + nr {
        let m = si.swap_map[s as usize];
        if m & COUNT_MASK != 0 || m == SWAP_MAP_BAD {
            break;
        }
        if si.cache[s as usize] != NIL && si.try_to_reclaim_swap(s, true, ctx) < 0 {
            break;
        }
    }
    if !cluster_is_usable(si, idx, order) {
        return (false, false);
    }
    if si.clusters[idx as usize].count == 0 {
        return (true, true);
    }
    let free = si.swap_map[off as usize..(off + nr) as usize]
        .iter()
        .all(|&m| m == 0);
    (free, true)
}

/// cluster_alloc_range: take the slots; an empty cluster takes the order. The lists are left to
/// relocate_cluster.
fn alloc_range(si: &mut SwapInfo, idx: u32, off: u32, order: u32) {
    let nr = 1u32 << order;
    if si.clusters[idx as usize].count == 0 {
        si.clusters[idx as usize].order = order as u8;
    }
    si.take_range(off, nr);
    si.clusters[idx as usize].count += nr as u16;
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::scenario::generation::Generation;
    use crate::scenario::SwapKind;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn v6_18_allocator_keeps_its_invariants(device in devices(), steps in steps()) {
            run_steps(Generation::V6_18, device, &steps)?;
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
        *si.allocator.cpu_next_mut(0, 4) = NONE;
        let b = si.alloc(0, 4, false, 0).unwrap();
        for _ in 1..32 {
            si.alloc(0, 4, false, 0).unwrap();
        }
        let bi = (b / 512) as usize;
        assert_eq!(si.clusters[bi].list, LIST_FULL);
        si.free_slots_range(b + 64, 16, 0);
        assert_eq!(si.clusters[bi].list, list_nonfull(4));
        // The slow path takes nonfull[4] before a free cluster.
        *si.allocator.cpu_next_mut(0, 4) = NONE;
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
        *d.allocator.cpu_next_mut(0, 4) = NONE;
        assert_eq!(d.alloc(0, 4, false, 0).map(|o| o / 512), Some(2));
    }

    #[test]
    fn v6_18_cursor_is_used_only_while_the_cluster_suits_the_order() {
        let mut si = dev(Generation::V6_18, 8 * MIB);
        assert_eq!(si.alloc(0, 4, false, 0), Some(512));
        // Cluster 1 is emptied and taken by order 2: the order-4 cursor may not use it.
        si.free_slots_range(512, 16, 0);
        *si.allocator.cpu_next_mut(0, 2) = 512;
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
        assert_eq!(*si.allocator.cpu_next_mut(1, 4), NONE);
        let mut old = SwapInfo::new("h", SwapKind::Hdd, -2, 8 * MIB, 2, Generation::V6_12);
        assert_eq!(old.alloc(0, 4, false, 0), None);
    }
}
