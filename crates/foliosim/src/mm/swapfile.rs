//! Swap areas: swap_map, clusters and the swap-slot allocator.
//!
//! Models mm/swapfile.c. Slot 0 is the header. Clusters of 512 slots are put on the free list in
//! the column-major order of swapon (spec A.5). Allocation by generation:
//! - v6.9: order 0 from this CPU's current cluster, a new free cluster when it is used up, then a
//!   linear scan of the whole map for any free slot; PMD order only as a whole free cluster on a
//!   block device; other orders fail.
//! - v6.10 and later (for now): per-CPU, per-order cursors; order > 0 only from clusters that
//!   cursor took from the free list, naturally aligned; order 0 as in v6.9.
//! Rotational devices have no clusters: order 0 by a sequential cursor, no large allocations.
//! Left out so far: the v6.12 nonfull/frag/full lists, the slot cache, discard, reclaim of
//! cache-only slots, swap continuation counts, zeromap, and priorities beyond first-fit order.

use super::Kernel;
use crate::machine::hw::HwCosts;
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
const NO_CLUSTER: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, Default)]
pub struct ClusterInfo {
    pub count: u16,
    pub free: bool,
}

/// A per-CPU allocation cursor: the cluster it is filling and the next offset to try.
#[derive(Clone, Copy, Debug)]
pub struct Cursor {
    pub cluster: u32,
    pub next: u32,
}

const NO_CURSOR: Cursor = Cursor {
    cluster: NO_CLUSTER,
    next: 0,
};

pub struct SwapInfo {
    pub name: String,
    pub kind: SwapKind,
    pub prio: i32,
    /// Slots including the header.
    pub max: u32,
    pub swap_map: Vec<u8>,
    /// Swap cache: the folio caching each slot, or NIL.
    pub cache: Vec<u32>,
    /// Content of the page written to each slot.
    pub content: Vec<u8>,
    pub inuse_pages: u64,
    pub clusters: Vec<ClusterInfo>,
    pub free_clusters: VecDeque<u32>,
    /// Per CPU, per order (0..=9).
    pub percpu: Vec<[Cursor; 10]>,
    /// Linear-scan cursor (v6.9 fallback scan, rotational devices).
    pub scan_next: u32,
    pub queue: FifoServer,
    /// Writes in flight on an asynchronous device, in completion order: (done_ns, folio).
    pub inflight: VecDeque<(u64, u32)>,
    /// zram mm_stat figures (zero for other kinds).
    pub zram: super::swap_device::ZramStat,
    /// zram: which slots hold a stored object (empty for other kinds).
    pub zram_stored: Vec<bool>,
}

impl SwapInfo {
    pub fn new(name: &str, kind: SwapKind, prio: i32, size_bytes: u64, nr_cpus: usize) -> SwapInfo {
        let max = (size_bytes / super::PAGE_SIZE).min(1 << 27) as u32;
        let nr_clusters = max.div_ceil(SWAPFILE_CLUSTER);
        let mut si = SwapInfo {
            name: name.into(),
            kind,
            prio,
            max,
            swap_map: vec![0; max as usize],
            cache: vec![super::folio::NIL; max as usize],
            content: vec![0; max as usize],
            inuse_pages: 0,
            clusters: vec![ClusterInfo::default(); nr_clusters as usize],
            free_clusters: VecDeque::new(),
            percpu: vec![[NO_CURSOR; 10]; nr_cpus.max(1)],
            scan_next: 1,
            queue: FifoServer::default(),
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
                        si.clusters[idx as usize].free = true;
                        si.free_clusters.push_back(idx);
                    }
                    idx += CLUSTER_COLS;
                }
            }
        }
        si
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

    fn take_slots(&mut self, off: u32, nr: u32) {
        for s in off..off + nr {
            debug_assert_eq!(self.swap_map[s as usize], 0);
            self.swap_map[s as usize] = SWAP_HAS_CACHE;
        }
        if self.has_clusters() {
            let ci = &mut self.clusters[(off / SWAPFILE_CLUSTER) as usize];
            ci.count += nr as u16;
        }
        self.inuse_pages += nr as u64;
    }

    /// Releases slots whose value is exactly HAS_CACHE or 0 (swap_entry_range_free).
    pub fn free_slots_range(&mut self, off: u32, nr: u32) {
        for s in off..off + nr {
            self.swap_map[s as usize] = 0;
        }
        self.inuse_pages -= nr as u64;
        if self.has_clusters() {
            let idx = off / SWAPFILE_CLUSTER;
            let ci = &mut self.clusters[idx as usize];
            ci.count -= nr as u16;
            if ci.count == 0 {
                ci.free = true;
                self.free_clusters.push_back(idx);
            }
        }
    }

    fn take_free_cluster(&mut self) -> Option<u32> {
        let idx = self.free_clusters.pop_front()?;
        self.clusters[idx as usize].free = false;
        Some(idx)
    }

    /// A free aligned range of 2^order slots in the CPU's cluster for that order, or in a fresh
    /// free cluster.
    fn alloc_from_cursor(&mut self, cpu: usize, order: u32) -> Option<u32> {
        let nr = 1u32 << order;
        loop {
            let cur = self.percpu[cpu][order as usize];
            if cur.cluster != NO_CLUSTER {
                let end = (cur.cluster + 1) * SWAPFILE_CLUSTER;
                let mut off = cur.next;
                while off + nr <= end.min(self.max) {
                    if self.swap_map[off as usize..(off + nr) as usize]
                        .iter()
                        .all(|&m| m == 0)
                    {
                        self.percpu[cpu][order as usize].next = off + nr;
                        return Some(off);
                    }
                    off += nr;
                }
            }
            let idx = self.take_free_cluster()?;
            self.percpu[cpu][order as usize] = Cursor {
                cluster: idx,
                next: idx * SWAPFILE_CLUSTER,
            };
        }
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

    /// Allocates 2^order slots marked SWAP_HAS_CACHE; returns the first offset.
    pub fn alloc(
        &mut self,
        gen: crate::scenario::profile::Kernel,
        cpu: usize,
        order: u32,
    ) -> Option<u32> {
        use crate::scenario::profile::Kernel as Gen;
        let nr = 1u32 << order;
        if self.free_slots() < nr as u64 {
            return None;
        }
        let off = if !self.has_clusters() {
            if order > 0 {
                return None;
            }
            self.scan_for_free_slot()?
        } else if order == 0 {
            match self.alloc_from_cursor(cpu, 0) {
                Some(off) => off,
                None => self.scan_for_free_slot()?,
            }
        } else if gen == Gen::V6_9 {
            if order as usize != crate::scenario::knobs::PMD_ORDER {
                return None;
            }
            self.take_free_cluster()? * SWAPFILE_CLUSTER
        } else {
            self.alloc_from_cursor(cpu, order)?
        };
        self.take_slots(off, nr);
        Some(off)
    }
}

pub fn swapon_all(spec: &RunSpec, _hw: &HwCosts) -> Vec<SwapInfo> {
    let nr_cpus = spec.scenario.machine.nr_cpus() as usize;
    let mut v: Vec<SwapInfo> = spec
        .scenario
        .swap
        .iter()
        .map(|s| SwapInfo::new(&s.name, s.kind, s.priority, s.size_bytes, nr_cpus))
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
        let gen = self.profile_kernel();
        let cpu = self.current_cpu as usize;
        for dev in 0..self.swap.len() {
            let si = &mut self.swap[dev];
            if si.free_slots() == 0 {
                continue;
            }
            let got = si.alloc(gen, cpu % si.percpu.len(), order);
            self.charge_time(self.hw.swap_slot_alloc_ns);
            if let Some(off) = got {
                return Some((dev as u32, off));
            }
            if order > 0 {
                return None;
            }
        }
        None
    }

    pub fn swap_duplicate(&mut self, dev: u32, off: u32) {
        let m = &mut self.swap[dev as usize].swap_map[off as usize];
        debug_assert!(*m & COUNT_MASK < COUNT_MASK - 1);
        *m += 1;
    }

    /// swap_free: drop one reference; the slot is free when nothing else holds it.
    pub fn swap_free(&mut self, dev: u32, off: u32) {
        let si = &mut self.swap[dev as usize];
        let m = &mut si.swap_map[off as usize];
        debug_assert!(*m & COUNT_MASK > 0);
        *m -= 1;
        if *m == 0 {
            si.free_slots_range(off, 1);
            si.zram_free(off);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::profile::Kernel as Gen;

    #[test]
    fn free_list_is_column_major_and_skips_the_header_cluster() {
        let si = SwapInfo::new("s", SwapKind::Ssd, -2, 128 * 2 * 1024 * 1024, 1);
        let order: Vec<u32> = si.free_clusters.iter().copied().take(6).collect();
        assert_eq!(order, vec![32, 64, 96, 1, 33, 65]);
        assert_eq!(si.free_clusters.len(), 127);
    }

    #[test]
    fn v6_9_order0_fills_a_cluster_then_takes_the_next_free_one() {
        let mut si = SwapInfo::new("s", SwapKind::Ssd, -2, 64 << 20, 1);
        let first = si.alloc(Gen::V6_9, 0, 0).unwrap();
        assert_eq!(first, 512);
        for i in 1..512 {
            assert_eq!(si.alloc(Gen::V6_9, 0, 0), Some(512 + i));
        }
        assert_eq!(si.alloc(Gen::V6_9, 0, 0), Some(1024));
        assert_eq!(si.clusters[1].count, 512);
        assert!(!si.clusters[1].free);
    }

    #[test]
    fn v6_9_allows_only_whole_cluster_large_allocations() {
        let mut si = SwapInfo::new("s", SwapKind::Ssd, -2, 64 << 20, 1);
        assert_eq!(si.alloc(Gen::V6_9, 0, 4), None);
        assert_eq!(si.alloc(Gen::V6_9, 0, 9), Some(512));
        assert_eq!(si.inuse_pages, 512);
    }

    #[test]
    fn v6_10_large_allocations_are_naturally_aligned_and_only_from_free_clusters() {
        let mut si = SwapInfo::new("s", SwapKind::Ssd, -2, 4 << 20, 1);
        // Two clusters: 0 holds the header, 1 is free.
        assert_eq!(si.alloc(Gen::V6_10, 0, 0), Some(512));
        let a = si.alloc(Gen::V6_10, 0, 4);
        assert_eq!(a, None, "the only free cluster was taken by order 0");
        si.free_slots_range(512, 1);
        let a = si.alloc(Gen::V6_10, 0, 4).unwrap();
        assert_eq!(a % 16, 0);
        assert_eq!(si.alloc(Gen::V6_10, 0, 4), Some(a + 16));
    }

    #[test]
    fn freeing_the_last_slot_returns_the_cluster_to_the_free_tail() {
        let mut si = SwapInfo::new("s", SwapKind::Ssd, -2, 64 << 20, 1);
        let off = si.alloc(Gen::V6_9, 0, 9).unwrap();
        let before = si.free_clusters.len();
        si.free_slots_range(off, 512);
        assert_eq!(si.free_clusters.len(), before + 1);
        assert_eq!(*si.free_clusters.back().unwrap(), off / 512);
        assert_eq!(si.inuse_pages, 0);
    }

    #[test]
    fn rotational_devices_allocate_sequentially_and_never_large() {
        let mut si = SwapInfo::new("s", SwapKind::Hdd, -2, 4 << 20, 1);
        assert_eq!(si.alloc(Gen::V6_12, 0, 0), Some(1));
        assert_eq!(si.alloc(Gen::V6_12, 0, 0), Some(2));
        assert_eq!(si.alloc(Gen::V6_12, 0, 9), None);
    }
}
