//! Swap clusters: the cluster_info array, the cluster lists and discard.
//!
//! Models the cluster half of mm/swapfile.c (spec swap.md §B, §C.6), v6.9–v6.18: each 512-slot
//! cluster's count, order and list (free, full, discard, nonfull[order] and frag[order]; which
//! of them a generation uses is its allocator's business, swap_alloc/), the list moves, v6.14's
//! relocate_cluster, and discard of emptied clusters on a device swapped on with discard.
//! Left out: the cluster locks, the cluster flags other than the list they imply, and the swap
//! table the newest kernels keep per cluster.

use super::swapfile::{SwapInfo, SWAPFILE_CLUSTER, SWAP_MAP_BAD};
use std::ops::{Index, IndexMut};

/// Folio orders a cluster may serve (SWAP_NR_ORDERS).
pub const SWAP_NR_ORDERS: usize = 10;
/// No cluster / no offset.
pub(super) const NONE: u32 = u32::MAX;

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

/// cluster_info and the device's cluster lists (intrusive doubly linked lists by index).
pub struct SwapClusters {
    info: Vec<ClusterInfo>,
    lists: [ListHead; NR_LISTS],
}

impl Index<usize> for SwapClusters {
    type Output = ClusterInfo;
    #[inline]
    fn index(&self, idx: usize) -> &ClusterInfo {
        &self.info[idx]
    }
}

impl IndexMut<usize> for SwapClusters {
    #[inline]
    fn index_mut(&mut self, idx: usize) -> &mut ClusterInfo {
        &mut self.info[idx]
    }
}

impl SwapClusters {
    /// `nr` empty clusters on no list.
    pub fn new(nr: u32) -> SwapClusters {
        let empty = ClusterInfo {
            count: 0,
            order: 0,
            list: LIST_NONE,
            prev: NONE,
            next: NONE,
        };
        SwapClusters {
            info: vec![empty; nr as usize],
            lists: [ListHead {
                head: NONE,
                tail: NONE,
                len: 0,
            }; NR_LISTS],
        }
    }

    pub fn len(&self) -> usize {
        self.info.len()
    }

    pub fn is_empty(&self) -> bool {
        self.info.is_empty()
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
            c = self.info[c as usize].next;
        }
        v
    }

    /// The head of a list.
    pub fn first(&self, list: u8) -> Option<u32> {
        let h = self.lists[list as usize].head;
        (h != NONE).then_some(h)
    }

    /// The cluster after `idx` on its list.
    pub fn next_on_list(&self, idx: u32) -> Option<u32> {
        let n = self.info[idx as usize].next;
        (n != NONE).then_some(n)
    }

    /// Takes the cluster off its list (isolates it).
    pub fn list_del(&mut self, idx: u32) {
        let ci = self.info[idx as usize];
        if ci.list == LIST_NONE {
            return;
        }
        let l = &mut self.lists[ci.list as usize];
        l.len -= 1;
        if ci.prev == NONE {
            l.head = ci.next;
        } else {
            self.info[ci.prev as usize].next = ci.next;
        }
        if ci.next == NONE {
            l.tail = ci.prev;
        } else {
            self.info[ci.next as usize].prev = ci.prev;
        }
        let c = &mut self.info[idx as usize];
        c.list = LIST_NONE;
        c.prev = NONE;
        c.next = NONE;
    }

    /// list_move_tail.
    pub fn list_add_tail(&mut self, idx: u32, list: u8) {
        self.list_del(idx);
        let l = &mut self.lists[list as usize];
        let old_tail = l.tail;
        l.tail = idx;
        l.len += 1;
        if old_tail == NONE {
            l.head = idx;
        } else {
            self.info[old_tail as usize].next = idx;
        }
        let c = &mut self.info[idx as usize];
        c.list = list;
        c.prev = old_tail;
        c.next = NONE;
    }
}

impl SwapInfo {
    /// The slots of cluster `idx` (the last cluster may be cut short by the device's end).
    pub(super) fn cluster_range(&self, idx: u32) -> std::ops::Range<usize> {
        let start = idx * SWAPFILE_CLUSTER;
        start as usize..(start + SWAPFILE_CLUSTER).min(self.max) as usize
    }

    /// free_cluster: discard first on a discarding device, else to the tail of the free list.
    pub(super) fn free_cluster(&mut self, idx: u32, now_ns: u64) {
        self.clusters[idx as usize].order = 0;
        if self.discard {
            self.schedule_discard(idx, now_ns);
        } else {
            self.clusters.list_add_tail(idx, LIST_FREE);
        }
    }

    /// relocate_cluster (v6.14, the v6.18 allocator): an isolated or scanned cluster goes to
    /// free when empty, full when full, else frag of its order.
    pub(super) fn relocate_cluster(&mut self, idx: u32, now_ns: u64) {
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
                    self.clusters.list_add_tail(idx, LIST_FULL);
                }
            }
            _ => {
                let frag = list_frag(ci.order as u32);
                if ci.list != frag {
                    self.clusters.list_add_tail(idx, frag);
                }
            }
        }
    }

    // ---- Discard (§C.6) -------------------------------------------------------------------

    /// swap_cluster_schedule_discard: nothing may allocate in the cluster until the device has
    /// discarded it.
    fn schedule_discard(&mut self, idx: u32, now_ns: u64) {
        let range = self.cluster_range(idx);
        self.swap_map[range].fill(SWAP_MAP_BAD);
        self.clusters.list_add_tail(idx, LIST_DISCARD);
        let done = self.queue.serve(now_ns, self.discard_ns);
        self.discard_queue.push_back((done, idx));
    }

    /// The discard work: clusters discarded by `until_ns` join the tail of the free list.
    pub(super) fn complete_discards(&mut self, until_ns: u64) {
        while let Some(&(done, idx)) = self.discard_queue.front() {
            if done > until_ns {
                break;
            }
            self.discard_queue.pop_front();
            let range = self.cluster_range(idx);
            self.swap_map[range].fill(0);
            self.clusters.list_add_tail(idx, LIST_FREE);
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::swap_alloc::testing::MIB;
    use crate::scenario::generation::Generation;
    use crate::scenario::SwapKind;

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
}
