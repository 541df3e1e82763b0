//! The swap-slot allocator: one type per kernel generation, chosen at swapon.
//!
//! Models the allocation half of mm/swapfile.c (spec swap.md §B): scan.rs is v6.9's and
//! v6.10's scan_swap_map_slots (and rotational devices up to v6.12), v6_12.rs the cluster-order
//! lists of v6.12, v6_18.rs the per-CPU fast path with isolate-and-relocate of v6.18. Each holds
//! its own per-CPU cursors; the device state they share (swap_map, the cluster lists, discard)
//! is `SwapInfo`'s (swapfile.rs, swap_cluster.rs). Left out: the locks of every generation.

pub mod scan;
pub mod v6_12;
pub mod v6_18;

use super::swap_cluster::NONE;
use super::swapfile::{AllocCtx, SwapInfo, SWAP_HAS_CACHE};
use crate::scenario::generation::Generation;
use scan::ScanAllocator;
use v6_12::ClusterOrderAllocator;
use v6_18::PercpuFastAllocator;

/// A device's slot allocator.
pub enum SwapAllocator {
    /// v6.9 / v6.10, and rotational devices without clusters.
    Scan(ScanAllocator),
    /// v6.12 on devices with clusters.
    ClusterOrder(ClusterOrderAllocator),
    /// v6.18.
    PercpuFast(PercpuFastAllocator),
    /// Stands in while an allocation has the allocator out of its device.
    Detached,
}

impl SwapAllocator {
    /// The allocator swapon sets up for a device of generation `gen`; `has_clusters` says
    /// whether the device has cluster_info.
    pub fn for_device(gen: Generation, has_clusters: bool, nr_cpus: usize) -> SwapAllocator {
        if gen.has_swap_alloc_fast() {
            SwapAllocator::PercpuFast(PercpuFastAllocator::new(nr_cpus))
        } else if has_clusters && gen.has_cluster_order_lists() {
            SwapAllocator::ClusterOrder(ClusterOrderAllocator::new(nr_cpus))
        } else {
            SwapAllocator::Scan(ScanAllocator::new(
                nr_cpus,
                gen.has_per_order_swap_cursors(),
                gen.reclaims_swap_cache_directly(),
            ))
        }
    }

    /// Seeds the random choices of the allocator (the old scanner's scan bases).
    pub fn seed(&mut self, seed: u64, highest_bit: u32) {
        if let SwapAllocator::Scan(a) = self {
            a.seed(seed, highest_bit);
        }
    }

    /// Whether folio_alloc_swap first tries swap_alloc_fast, and order 0 waits for discards
    /// synchronously when everything failed (v6.18).
    pub fn has_alloc_fast(&self) -> bool {
        matches!(self, SwapAllocator::PercpuFast(_))
    }

    /// The start of an allocation on this device.
    pub fn begin(&mut self) {
        if let SwapAllocator::PercpuFast(a) = self {
            a.begin();
        }
    }

    /// Up to `nr` allocations of 2^order slots, offsets pushed to `out`.
    pub fn alloc_slots(
        &mut self,
        si: &mut SwapInfo,
        cpu: usize,
        order: u32,
        nr: usize,
        ctx: &AllocCtx,
        out: &mut Vec<u32>,
    ) {
        match self {
            SwapAllocator::Scan(a) => a.alloc_slots(si, cpu, order, nr, ctx, out),
            SwapAllocator::ClusterOrder(a) => a.alloc_slots(si, cpu, order, nr, ctx, out),
            SwapAllocator::PercpuFast(a) => a.alloc_slots(si, cpu, order, nr, ctx, out),
            SwapAllocator::Detached => unreachable!("swap allocator re-entered"),
        }
    }

    /// swap_alloc_fast (v6.18; no fast path before).
    pub fn alloc_fast(
        &mut self,
        si: &mut SwapInfo,
        cpu: usize,
        order: u32,
        ctx: &AllocCtx,
    ) -> Option<u32> {
        match self {
            SwapAllocator::PercpuFast(a) => a.alloc_fast(si, cpu, order, ctx),
            _ => None,
        }
    }

    /// v6.18: is this device the CPU's cached `si` for the order (a cached offset)?
    pub fn has_cpu_cluster(&self, cpu: usize, order: u32) -> bool {
        match self {
            SwapAllocator::PercpuFast(a) => a.percpu_next[cpu][order as usize] != NONE,
            _ => false,
        }
    }

    /// v6.18: another device became the CPU's cached `si` for the order.
    pub fn forget_cpu_cluster(&mut self, cpu: usize, order: u32) {
        if let SwapAllocator::PercpuFast(a) = self {
            a.percpu_next[cpu][order as usize] = NONE;
        }
    }

    /// v6.18: did the last allocation make this device the CPU's cached `si`? Clears the mark.
    pub fn take_percpu_scanned(&mut self) -> bool {
        match self {
            SwapAllocator::PercpuFast(a) => a.take_percpu_scanned(),
            _ => false,
        }
    }

    /// This CPU's next offset for the order (tests and tools).
    #[cfg(test)]
    pub fn cpu_next_mut(&mut self, cpu: usize, order: u32) -> &mut u32 {
        match self {
            SwapAllocator::Scan(a) => &mut a.percpu_next[cpu][order as usize],
            SwapAllocator::ClusterOrder(a) => &mut a.percpu_next[cpu][order as usize],
            SwapAllocator::PercpuFast(a) => &mut a.percpu_next[cpu][order as usize],
            SwapAllocator::Detached => unreachable!(),
        }
    }
}

/// cluster_scan_range's verdict on one aligned range (v6.12+).
pub(super) enum Range {
    Free,
    NeedReclaim,
    Busy,
}

/// cluster_scan_range: every slot free, or (only when swap is full) some cache-only.
pub(super) fn cluster_scan_range(si: &SwapInfo, off: u32, nr: u32, swap_full: bool) -> Range {
    let mut need_reclaim = false;
    for &m in &si.swap_map[off as usize..(off + nr) as usize] {
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

/// Test helpers shared by the allocators' tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::super::swap_cluster::{list_frag, list_nonfull};
    use super::super::swap_cluster::{LIST_DISCARD, LIST_FREE, LIST_FULL, LIST_NONE};
    use super::super::swapfile::{AllocCtx, SwapInfo, SWAPFILE_CLUSTER, SWAP_HAS_CACHE};
    use crate::scenario::generation::Generation;
    use crate::scenario::SwapKind;
    use proptest::prelude::*;

    pub const MIB: u64 = 1 << 20;

    pub fn dev(gen: Generation, size: u64) -> SwapInfo {
        SwapInfo::new("s", SwapKind::Ssd, -2, size, 1, gen)
    }

    /// A context whose swap-cache folios are order 0 and may always leave the cache.
    pub fn reclaim_ctx<'a>(swap_full: bool, slot_cache_active: bool) -> AllocCtx<'a> {
        AllocCtx {
            swap_full,
            now_ns: 0,
            slot_cache_active,
            folio: &|_| (1, true),
        }
    }

    /// Fills every slot with order-0 allocations, then gives each a swap PTE (count 1).
    pub fn fill_referenced(si: &mut SwapInfo) {
        while si.alloc(0, 0, false, 0).is_some() {}
        for m in si.swap_map[1..].iter_mut() {
            *m = 1;
        }
    }

    /// Makes a free slot of a full device (it stays on the avail list).
    pub fn free_one(si: &mut SwapInfo, off: u32) {
        si.swap_map[off as usize] = SWAP_HAS_CACHE;
        si.free_slots_range(off, 1, 0);
    }

    pub fn aligned_in_one_cluster(off: u32, order: u32) -> bool {
        let nr = 1u32 << order;
        off.is_multiple_of(nr) && off / SWAPFILE_CLUSTER == (off + nr - 1) / SWAPFILE_CLUSTER
    }

    // ---- Properties of every allocator -------------------------------------------------

    /// One step of a random run: allocate 2^order slots on a CPU, or free the `pick`-th live
    /// allocation (modulo their number).
    #[derive(Clone, Debug)]
    pub enum Step {
        Alloc { cpu: usize, order: u32 },
        Free { pick: usize },
    }

    pub fn steps() -> impl Strategy<Value = Vec<Step>> {
        let step = prop_oneof![
            3 => (0..2usize, prop_oneof![4 => Just(0u32), 6 => 1..=9u32])
                .prop_map(|(cpu, order)| Step::Alloc { cpu, order }),
            2 => any::<usize>().prop_map(|pick| Step::Free { pick }),
        ];
        prop::collection::vec(step, 1..300)
    }

    /// The devices the properties run on: kind, size (2 to 6 clusters, sometimes a partial
    /// last one), and discard.
    pub fn devices() -> impl Strategy<Value = (SwapKind, u64, bool)> {
        (
            prop_oneof![
                Just(SwapKind::Ssd),
                Just(SwapKind::Hdd),
                Just(SwapKind::File)
            ],
            2..=6u64,
            prop_oneof![Just(0u64), Just(8192u64), Just(1 << 20)],
            any::<bool>(),
        )
            .prop_map(|(kind, clusters, extra, discard)| {
                (kind, clusters * 2 * MIB + extra, discard)
            })
    }

    /// The list a cluster must be on given its count and order (several may be allowed).
    fn list_ok(gen: Generation, si: &SwapInfo, idx: usize) -> bool {
        let ci = si.clusters[idx];
        let order = ci.order as u32;
        if ci.list == LIST_DISCARD {
            return ci.count == 0;
        }
        match ci.count as u32 {
            0 => ci.list == LIST_FREE,
            SWAPFILE_CLUSTER if gen.has_cluster_order_lists() => ci.list == LIST_FULL,
            _ if gen.has_cluster_order_lists() => {
                ci.list == list_nonfull(order) || ci.list == list_frag(order)
            }
            _ => ci.list == LIST_NONE,
        }
    }

    /// Slots at swapon that are not usable (the header, the tail of a partial last cluster).
    fn reserved(si: &SwapInfo, idx: usize) -> u32 {
        let start = idx as u32 * SWAPFILE_CLUSTER;
        let end = start + SWAPFILE_CLUSTER;
        (idx == 0) as u32 + end.saturating_sub(si.max).min(SWAPFILE_CLUSTER)
    }

    /// The invariants every allocator keeps between operations.
    pub fn check_invariants(gen: Generation, si: &SwapInfo) -> Result<(), TestCaseError> {
        let used = si.swap_map[1..]
            .iter()
            .filter(|&&m| m != 0 && m != super::super::swapfile::SWAP_MAP_BAD)
            .count() as u64;
        prop_assert_eq!(si.inuse_pages, used, "inuse_pages = the used slots");
        if !si.has_clusters() {
            return Ok(());
        }
        let mut sum = 0u64;
        for idx in 0..si.clusters.len() {
            let ci = si.clusters[idx];
            let range = si.cluster_range(idx as u32);
            let in_use = si.swap_map[range.clone()]
                .iter()
                .filter(|&&m| m != 0 && m != super::super::swapfile::SWAP_MAP_BAD)
                .count() as u32;
            // The header slot is SWAP_MAP_BAD but counted.
            let in_use = in_use + reserved(si, idx);
            if ci.list == LIST_DISCARD {
                prop_assert_eq!(ci.count, 0);
            } else {
                prop_assert_eq!(ci.count as u32, in_use, "cluster {} count", idx);
            }
            prop_assert!(
                list_ok(gen, si, idx),
                "cluster {} on list {}: {:?}",
                idx,
                ci.list,
                ci
            );
            sum += (ci.count as u32 - reserved(si, idx)) as u64;
        }
        prop_assert_eq!(si.inuse_pages, sum, "inuse_pages = the sum of the counts");
        // Each list's length matches the clusters that say they are on it.
        for list in [LIST_FREE, LIST_FULL, LIST_DISCARD] {
            let n = (0..si.clusters.len())
                .filter(|&i| si.clusters[i].list == list)
                .count() as u32;
            prop_assert_eq!(si.clusters.list_len(list), n);
        }
        Ok(())
    }

    /// Runs `steps` on a fresh device of generation `gen` and checks the invariants after each
    /// one, then frees everything and checks that the device is all free.
    pub fn run_steps(
        gen: Generation,
        (kind, size, discard): (SwapKind, u64, bool),
        steps: &[Step],
    ) -> Result<(), TestCaseError> {
        let discard_ns = (discard && kind == SwapKind::Ssd).then_some(1000);
        let mut si = SwapInfo::with_discard("p", kind, -2, size, 2, gen, discard_ns);
        si.seed_scan(7);
        let mut owner = vec![false; si.max as usize];
        let mut live: Vec<(u32, u32)> = Vec::new();
        let mut now_ns = 0;
        for step in steps {
            now_ns += 100;
            match *step {
                Step::Alloc { cpu, order } => {
                    if let Some(off) = si.alloc(cpu, order, false, now_ns) {
                        let nr = 1u32 << order;
                        prop_assert!(off > 0 && off + nr <= si.max, "{} order {}", off, order);
                        prop_assert!(aligned_in_one_cluster(off, order) || !si.has_clusters());
                        for s in off..off + nr {
                            prop_assert!(!owner[s as usize], "slot {} handed out twice", s);
                            owner[s as usize] = true;
                        }
                        live.push((off, nr));
                    }
                }
                Step::Free { pick } => {
                    if !live.is_empty() {
                        let (off, nr) = live.swap_remove(pick % live.len());
                        for s in off..off + nr {
                            owner[s as usize] = false;
                        }
                        si.free_slots_range(off, nr, now_ns);
                    }
                }
            }
            check_invariants(gen, &si)?;
        }
        for (off, nr) in live.drain(..) {
            si.free_slots_range(off, nr, now_ns);
        }
        si.discard_now();
        check_invariants(gen, &si)?;
        prop_assert_eq!(si.inuse_pages, 0);
        prop_assert!(si.swap_map[1..].iter().all(|&m| m == 0), "all slots free");
        if si.has_clusters() {
            let empty = (0..si.clusters.len())
                .filter(|&i| si.clusters[i].count as u32 == reserved(&si, i))
                .count();
            prop_assert_eq!(si.clusters.list_len(LIST_FREE) as usize, {
                (0..si.clusters.len())
                    .filter(|&i| reserved(&si, i) == 0)
                    .count()
            });
            prop_assert_eq!(empty, si.clusters.len());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::swapfile::SwapInfo;
    use super::testing::*;
    use crate::scenario::generation::Generation;
    use crate::scenario::SwapKind;

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
    fn a_stolen_slot_makes_the_large_cursor_skip_to_the_next_aligned_range() {
        for gen in [Generation::V6_12, Generation::V6_18] {
            let mut si = dev(gen, 4 * MIB);
            assert_eq!(si.alloc(0, 4, false, 0), Some(512));
            // Fill the header's cluster, then order 0 steals the first free slot of cluster 1.
            while si.clusters[0].count < 512 {
                si.alloc(0, 0, false, 0).unwrap();
            }
            *si.allocator.cpu_next_mut(0, 0) = crate::mm::swap_cluster::NONE;
            assert_eq!(si.alloc(0, 0, false, 0), Some(528), "{gen:?}");
            assert_eq!(si.clusters[1].order, 4);
            assert_eq!(si.alloc(0, 4, false, 0), Some(544), "{gen:?}");
        }
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
}
