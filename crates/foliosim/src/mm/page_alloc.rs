//! The buddy allocator of one node, and its watermarks.
//!
//! Models mm/page_alloc.c (v6.9–v6.18): free lists per order 0..=MAX_PAGE_ORDER linked through the
//! first page of each free block (PageBuddy + order, as the kernel does), __rmqueue_smallest with
//! expand, __free_one_page merging with the buddy, __zone_watermark_ok without reserves, and the
//! watermarks of calculate_min_free_kbytes / __setup_per_zone_wmarks. One zone (ZONE_NORMAL) per
//! node. Left out: migratetypes and fallbacks, per-CPU page lists, compaction, watermark boosting,
//! lowmem_reserve, highatomic and CMA reserves.

use super::folio::{pg, MemMap, Pfn, NIL};

pub const MAX_PAGE_ORDER: u32 = 10;
pub const NR_PAGE_ORDERS: usize = MAX_PAGE_ORDER as usize + 1;

#[derive(Clone, Copy, Debug)]
struct FreeArea {
    head: Pfn,
    nr_free: u64,
}

pub struct Zone {
    pub node: u32,
    pub start_pfn: Pfn,
    pub nr_pages: u32,
    free_area: [FreeArea; NR_PAGE_ORDERS],
    nr_free: u64,
    pub wmark_min: u64,
    pub wmark_low: u64,
    pub wmark_high: u64,
    pub wmark_promo: u64,
    /// `+migrc` (mm/features/migrc.rs): source folios kept allocated until their TLB flush
    /// (zone->migrc_pending_nr).
    pub migrc_pending_nr: u64,
}

impl Zone {
    /// A zone of `nr_pages` frames from `start_pfn`, all free in the largest aligned blocks,
    /// handed out from the lowest PFN first.
    pub fn new(node: u32, start_pfn: Pfn, nr_pages: u32, mem: &mut MemMap) -> Zone {
        let mut z = Zone {
            node,
            start_pfn,
            nr_pages,
            free_area: [FreeArea {
                head: NIL,
                nr_free: 0,
            }; NR_PAGE_ORDERS],
            nr_free: 0,
            wmark_min: 0,
            wmark_low: 0,
            wmark_high: 0,
            wmark_promo: 0,
            migrc_pending_nr: 0,
        };
        // Free from the top down, each block at the head, so the lowest block ends up first.
        let end = start_pfn as u64 + nr_pages as u64;
        let mut blocks = Vec::new();
        let mut pfn = start_pfn as u64;
        while pfn < end {
            let mut order = MAX_PAGE_ORDER;
            while order > 0 && (pfn % (1 << order) != 0 || pfn + (1 << order) > end) {
                order -= 1;
            }
            blocks.push((pfn as Pfn, order));
            pfn += 1 << order;
        }
        for &(pfn, order) in blocks.iter().rev() {
            z.add_to_free_list(mem, pfn, order);
        }
        z
    }

    fn add_to_free_list(&mut self, mem: &mut MemMap, pfn: Pfn, order: u32) {
        let area = &mut self.free_area[order as usize];
        let old = area.head;
        let p = &mut mem.pages[pfn as usize];
        p.flags = pg::BUDDY;
        p.set_order(order);
        p.lru_prev = NIL;
        p.lru_next = old;
        if old != NIL {
            mem.pages[old as usize].lru_prev = pfn;
        }
        area.head = pfn;
        area.nr_free += 1;
        self.nr_free += 1 << order;
    }

    fn del_from_free_list(&mut self, mem: &mut MemMap, pfn: Pfn, order: u32) {
        let (prev, next) = {
            let p = &mem.pages[pfn as usize];
            (p.lru_prev, p.lru_next)
        };
        if prev == NIL {
            self.free_area[order as usize].head = next;
        } else {
            mem.pages[prev as usize].lru_next = next;
        }
        if next != NIL {
            mem.pages[next as usize].lru_prev = prev;
        }
        let p = &mut mem.pages[pfn as usize];
        p.flags = 0;
        p.lru_next = NIL;
        p.lru_prev = NIL;
        self.free_area[order as usize].nr_free -= 1;
        self.nr_free -= 1 << order;
    }

    /// __rmqueue_smallest + expand: the smallest free block of at least `order`, split down with
    /// the upper halves going back on the lower free lists. Watermarks are the caller's business.
    pub fn alloc(&mut self, mem: &mut MemMap, order: u32) -> Option<Pfn> {
        let mut current = order;
        while self.free_area[current as usize].head == NIL {
            current += 1;
            if current > MAX_PAGE_ORDER {
                return None;
            }
        }
        let pfn = self.free_area[current as usize].head;
        self.del_from_free_list(mem, pfn, current);
        while current > order {
            current -= 1;
            self.add_to_free_list(mem, pfn + (1 << current), current);
        }
        Some(pfn)
    }

    /// __free_one_page: merge with free buddies as far as possible, then put the block on its list.
    pub fn free(&mut self, mem: &mut MemMap, pfn: Pfn, order: u32) {
        let (mut pfn, mut order) = (pfn, order);
        let end = self.start_pfn as u64 + self.nr_pages as u64;
        while order < MAX_PAGE_ORDER {
            let buddy = pfn ^ (1 << order);
            if buddy < self.start_pfn || buddy as u64 + (1 << order) > end {
                break;
            }
            let b = &mem.pages[buddy as usize];
            if !b.is_buddy() || b.order() != order {
                break;
            }
            self.del_from_free_list(mem, buddy, order);
            pfn = pfn.min(buddy);
            order += 1;
        }
        self.add_to_free_list(mem, pfn, order);
    }

    pub fn nr_free_pages(&self) -> u64 {
        self.nr_free
    }

    pub fn nr_free_blocks(&self, order: u32) -> u64 {
        self.free_area[order as usize].nr_free
    }

    pub fn managed_pages(&self) -> u64 {
        self.nr_pages as u64
    }

    /// __zone_watermark_ok without reserves: enough free pages above `mark` once this allocation is
    /// taken, and for order > 0 a free block at least that large.
    pub fn watermark_ok(&self, order: u32, mark_pages: u64) -> bool {
        let free = (self.nr_free + super::features::migrc::zone_kept_pages(self)) as i64
            - ((1i64 << order) - 1);
        if free <= mark_pages as i64 {
            return false;
        }
        order == 0 || (order..=MAX_PAGE_ORDER).any(|o| self.free_area[o as usize].nr_free > 0)
    }

    /// For the invariant checker: every free list is consistent and adds up to `nr_free`.
    pub fn check(&self, mem: &MemMap, out: &mut Vec<String>) {
        let mut total = 0u64;
        let end = self.start_pfn as u64 + self.nr_pages as u64;
        for order in 0..=MAX_PAGE_ORDER {
            let (mut pfn, mut prev, mut n) = (self.free_area[order as usize].head, NIL, 0u64);
            while pfn != NIL {
                let p = &mem.pages[pfn as usize];
                if !p.is_buddy()
                    || p.order() != order
                    || pfn % (1 << order) != 0
                    || p.lru_prev != prev
                {
                    out.push(format!(
                        "node {} free list {order}: bad block at pfn {pfn}",
                        self.node
                    ));
                    return;
                }
                if pfn < self.start_pfn || pfn as u64 + (1 << order) > end {
                    out.push(format!(
                        "node {} free list {order}: block {pfn} outside the zone",
                        self.node
                    ));
                    return;
                }
                n += 1;
                total += 1 << order;
                prev = pfn;
                pfn = p.lru_next;
            }
            if n != self.free_area[order as usize].nr_free {
                out.push(format!(
                    "node {} free list {order}: {n} blocks, recorded {}",
                    self.node, self.free_area[order as usize].nr_free
                ));
            }
        }
        if total != self.nr_free {
            out.push(format!(
                "node {}: free lists hold {total} pages, recorded {}",
                self.node, self.nr_free
            ));
        }
    }
}

/// calculate_min_free_kbytes: sqrt(lowmem_kbytes * 16), clamped to [128, 262144].
pub fn calculate_min_free_kbytes(total_managed_pages: u64) -> u64 {
    let lowmem_kbytes = total_managed_pages * 4;
    ((lowmem_kbytes * 16) as f64)
        .sqrt()
        .floor()
        .clamp(128.0, 262_144.0) as u64
}

/// __setup_per_zone_wmarks: each zone's share of min_free_kbytes is its min; low, high and promo
/// follow at steps of max(min/4, managed * watermark_scale_factor / 10000).
pub fn setup_per_zone_wmarks(
    zones: &mut [Zone],
    min_free_kbytes: u64,
    watermark_scale_factor: u32,
) {
    let pages_min = min_free_kbytes / 4;
    let total: u64 = zones.iter().map(|z| z.managed_pages()).sum::<u64>().max(1);
    for z in zones {
        let managed = z.managed_pages();
        let min = pages_min * managed / total;
        let step = (min / 4).max(managed * watermark_scale_factor as u64 / 10_000);
        z.wmark_min = min;
        z.wmark_low = min + step;
        z.wmark_high = min + 2 * step;
        z.wmark_promo = min + 3 * step;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(pages: u32) -> (Zone, MemMap) {
        let mut mem = MemMap::new(pages as usize);
        let z = Zone::new(0, 0, pages, &mut mem);
        (z, mem)
    }

    #[test]
    fn an_order0_allocation_splits_a_max_block_into_one_block_per_order() {
        let (mut z, mut mem) = zone(1024);
        assert_eq!(z.alloc(&mut mem, 0), Some(0));
        for order in 0..MAX_PAGE_ORDER {
            assert_eq!(z.nr_free_blocks(order), 1, "order {order}");
        }
        assert_eq!(z.nr_free_blocks(MAX_PAGE_ORDER), 0);
        assert_eq!(z.nr_free_pages(), 1023);
        // The next order-0 allocation is the buddy left by the split.
        assert_eq!(z.alloc(&mut mem, 0), Some(1));
    }

    #[test]
    fn freeing_everything_merges_back_to_max_order_blocks() {
        let (mut z, mut mem) = zone(2048);
        let mut got: Vec<(Pfn, u32)> = (0..100)
            .map(|i| (z.alloc(&mut mem, i % 4).unwrap(), i % 4))
            .collect();
        got.reverse();
        for (pfn, order) in got {
            z.free(&mut mem, pfn, order);
        }
        assert_eq!(z.nr_free_blocks(MAX_PAGE_ORDER), 2);
        assert_eq!(z.nr_free_pages(), 2048);
        let mut out = Vec::new();
        z.check(&mem, &mut out);
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn no_merge_while_the_buddy_is_allocated_and_blocks_are_aligned() {
        let (mut z, mut mem) = zone(1024);
        let a = z.alloc(&mut mem, 0).unwrap();
        let b = z.alloc(&mut mem, 0).unwrap();
        assert_eq!(a ^ 1, b);
        z.free(&mut mem, a, 0);
        assert_eq!(z.nr_free_blocks(0), 1, "a stays alone while b is in use");
        let big = z.alloc(&mut mem, 4).unwrap();
        assert_eq!(big % 16, 0);
    }

    #[test]
    fn watermark_needs_a_large_enough_block_for_high_orders() {
        let (mut z, mut mem) = zone(1024);
        // Take everything, then free every other page: 512 free pages, all order 0.
        let pages: Vec<Pfn> = (0..1024).map(|_| z.alloc(&mut mem, 0).unwrap()).collect();
        for p in pages.iter().filter(|&&p| p % 2 == 0) {
            z.free(&mut mem, *p, 0);
        }
        assert_eq!(z.nr_free_pages(), 512);
        assert!(z.watermark_ok(0, 100));
        assert!(!z.watermark_ok(3, 100));
        assert!(z.watermark_ok(0, 511));
        assert!(!z.watermark_ok(0, 512));
    }

    #[test]
    fn min_free_kbytes_follows_the_square_root_rule() {
        // 1 GiB: sqrt(1048576 * 16) = 4096 KiB
        assert_eq!(calculate_min_free_kbytes(262_144), 4096);
        // 64 GiB: sqrt(67108864 * 16) = 32768 KiB
        assert_eq!(calculate_min_free_kbytes(16 << 20), 32_768);
        // 16 TiB would exceed the clamp
        assert_eq!(calculate_min_free_kbytes(1 << 32), 262_144);
        assert_eq!(calculate_min_free_kbytes(1000), 252);
    }

    #[test]
    fn watermarks_are_shared_by_size_and_spaced_by_the_scale_factor() {
        let mut mem = MemMap::new(3 << 20);
        let a = Zone::new(0, 0, 1 << 20, &mut mem);
        let b = Zone::new(1, 1 << 20, 2 << 20, &mut mem);
        let mut zones = [a, b];
        setup_per_zone_wmarks(&mut zones, 12_288, 10);
        // 3072 min pages split 1:2
        assert_eq!(zones[0].wmark_min, 1024);
        assert_eq!(zones[1].wmark_min, 2048);
        // step = max(min/4, managed/1000)
        assert_eq!(zones[0].wmark_low - zones[0].wmark_min, 1048);
        assert_eq!(zones[1].wmark_high - zones[1].wmark_low, 2097);
        // A large min dominates the scale factor.
        setup_per_zone_wmarks(&mut zones, 1 << 20, 10);
        assert_eq!(
            zones[0].wmark_low - zones[0].wmark_min,
            zones[0].wmark_min / 4
        );
    }
}
