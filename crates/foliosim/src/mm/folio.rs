//! The memmap: one `Page` per physical 4 KiB frame, and folios on top of it.
//!
//! Models `struct page` / `struct folio` (include/linux/mm_types.h, page-flags.h, v6.9–v6.18) the way
//! the kernel lays them out: a folio is its head page; tail pages point at the head. The per-page
//! record is 24 bytes so that a fully populated machine stays small. Free buddy blocks reuse the
//! `lru` links, as the kernel does. Left out: refcounts (reclaim's "extra reference" cases), page
//! locks, mlock, pins, and the per-page `_mapcount` of large folios (only the folio-wide
//! mapcount is kept, in the head).

use std::collections::BTreeMap;

pub type Pfn = u32;
/// Folios are named by their head PFN.
pub type FolioId = u32;
pub const NIL: u32 = u32::MAX;

/// Page flags (`PG_*`). The high 4 bits of `Page::flags` hold the folio order.
pub mod pg {
    pub const LRU: u16 = 1 << 0;
    pub const ACTIVE: u16 = 1 << 1;
    pub const REFERENCED: u16 = 1 << 2;
    pub const SWAPBACKED: u16 = 1 << 3;
    pub const SWAPCACHE: u16 = 1 << 4;
    pub const DIRTY: u16 = 1 << 5;
    pub const WRITEBACK: u16 = 1 << 6;
    pub const RECLAIM: u16 = 1 << 7;
    /// Head of an allocated folio (order 0 included); absent on tails and free pages. Test it
    /// with `Page::is_head` (HEAD, TAIL and BUDDY share two bits).
    pub const HEAD: u16 = 1 << 8;
    pub const TAIL: u16 = 1 << 9;
    /// First page of a free buddy block (`PageBuddy`): both bits, as no page is head and tail.
    pub const BUDDY: u16 = HEAD | TAIL;
    /// `PG_workingset`: the folio was deactivated from the active list, or restored by a
    /// refault of one that had been (mm/workingset.rs).
    pub const WORKINGSET: u16 = 1 << 10;
    /// On a large folio's head: `PG_partially_mapped`, some but not all of its pages are mapped.
    pub const DEFERRED: u16 = 1 << 11;
    /// On a large folio's page 1 (where the kernel keeps folio-wide state too): the folio is on
    /// the deferred-split queue.
    pub const QUEUED: u16 = 1 << 11;
    pub const ORDER_SHIFT: u16 = 12;
    pub const FLAG_MASK: u16 = (1 << ORDER_SHIFT) - 1;
}

// Page content classes are plain scenario values (scenario/types.rs): ops name them.
pub use crate::scenario::types::content;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Page {
    /// LRU list links (allocated folio head) or buddy free-list links (free block head).
    pub lru_next: u32,
    pub lru_prev: u32,
    /// Head: low 23 bits the anon_vma id (anonymous) or the file id (page cache), bit 23 set for
    /// an shmem folio (MAPPING_SHMEM), high 8 bits the memcg id. Tail: the head PFN.
    pub mapping: u32,
    /// Head: linear page index (virtual page number) of the folio's first page.
    pub index: u32,
    /// Head of a swap-cache folio: its first swap entry. Page 1 of a large folio: the mapcount.
    pub private: u32,
    pub flags: u16,
    /// Head of an order-0 folio: the mapcount (large folios keep it in page 1's `private`);
    /// MAPCOUNT0_FULL means it is in `MemMap::mapcount_overflow`.
    pub mapcount0: u8,
    /// This page's content (see `content`).
    pub content: u8,
}

const _: () = assert!(std::mem::size_of::<Page>() == 24);

impl Page {
    pub const EMPTY: Page = Page {
        lru_next: NIL,
        lru_prev: NIL,
        mapping: 0,
        index: 0,
        private: 0,
        flags: 0,
        mapcount0: 0,
        content: content::ZERO,
    };
    #[inline]
    pub fn order(&self) -> u32 {
        (self.flags >> pg::ORDER_SHIFT) as u32
    }
    #[inline]
    pub fn set_order(&mut self, order: u32) {
        debug_assert!(order < 16);
        self.flags = (self.flags & pg::FLAG_MASK) | ((order as u16) << pg::ORDER_SHIFT);
    }
    #[inline]
    pub fn test(&self, f: u16) -> bool {
        self.flags & f != 0
    }
    #[inline]
    pub fn is_head(&self) -> bool {
        self.flags & pg::BUDDY == pg::HEAD
    }
    #[inline]
    pub fn is_tail(&self) -> bool {
        self.flags & pg::BUDDY == pg::TAIL
    }
    #[inline]
    pub fn is_buddy(&self) -> bool {
        self.flags & pg::BUDDY == pg::BUDDY
    }
    #[inline]
    pub fn set(&mut self, f: u16) {
        self.flags |= f;
    }
    #[inline]
    pub fn clear(&mut self, f: u16) {
        self.flags &= !f;
    }
}

pub const ANON_VMA_BITS: u32 = 24;
/// In a head's `mapping`: the folio belongs to an shmem file (tmpfs, shared anonymous memory):
/// swap-backed like an anonymous folio, but in a file's page cache, as `shmem_mapping` tells.
pub const MAPPING_SHMEM: u32 = 1 << (ANON_VMA_BITS - 1);
pub const ANON_VMA_MASK: u32 = MAPPING_SHMEM - 1;

/// `Page::mapcount0` of an order-0 folio mapped 255 times or more (by that many forked or
/// file-sharing processes): the count is kept in `MemMap::mapcount_overflow`, so the page
/// stays 24 bytes.
const MAPCOUNT0_FULL: u8 = u8::MAX;

/// All physical frames of the machine, node after node.
pub struct MemMap {
    pub pages: Vec<Page>,
    /// The mapcounts of order-0 folios whose `mapcount0` is MAPCOUNT0_FULL (the kernel's
    /// _mapcount is an int).
    mapcount_overflow: BTreeMap<Pfn, u32>,
}

impl MemMap {
    pub fn new(nr_pages: usize) -> Self {
        let mut pages = Vec::with_capacity(nr_pages);
        crate::sim::hugepage_hint(pages.spare_capacity_mut());
        pages.resize(nr_pages, Page::EMPTY);
        MemMap {
            pages,
            mapcount_overflow: BTreeMap::new(),
        }
    }

    #[inline]
    pub fn head_of(&self, pfn: Pfn) -> FolioId {
        let p = &self.pages[pfn as usize];
        if p.is_tail() {
            p.mapping
        } else {
            pfn
        }
    }
    #[inline]
    pub fn order(&self, folio: FolioId) -> u32 {
        self.pages[folio as usize].order()
    }
    #[inline]
    pub fn nr_pages(&self, folio: FolioId) -> u32 {
        1 << self.order(folio)
    }
    #[inline]
    pub fn test(&self, folio: FolioId, f: u16) -> bool {
        self.pages[folio as usize].test(f)
    }
    #[inline]
    pub fn set(&mut self, folio: FolioId, f: u16) {
        self.pages[folio as usize].set(f)
    }
    #[inline]
    pub fn clear(&mut self, folio: FolioId, f: u16) {
        self.pages[folio as usize].clear(f)
    }
    #[inline]
    pub fn anon_vma(&self, folio: FolioId) -> u32 {
        self.pages[folio as usize].mapping & ANON_VMA_MASK
    }
    /// The anon_vma or file field with its MAPPING_SHMEM bit, to give a split's new folios.
    #[inline]
    pub fn mapping_field(&self, folio: FolioId) -> u32 {
        self.pages[folio as usize].mapping & (ANON_VMA_MASK | MAPPING_SHMEM)
    }
    /// An shmem folio (`shmem_mapping(folio->mapping)`; kept while it is in the swap cache).
    #[inline]
    pub fn is_shmem(&self, folio: FolioId) -> bool {
        self.pages[folio as usize].mapping & MAPPING_SHMEM != 0
    }
    #[inline]
    pub fn memcg(&self, folio: FolioId) -> u16 {
        (self.pages[folio as usize].mapping >> ANON_VMA_BITS) as u16
    }
    #[inline]
    pub fn index(&self, folio: FolioId) -> u32 {
        self.pages[folio as usize].index
    }

    #[inline]
    pub fn mapcount(&self, folio: FolioId) -> u32 {
        if self.order(folio) == 0 {
            match self.pages[folio as usize].mapcount0 {
                MAPCOUNT0_FULL => self.mapcount_overflow[&folio],
                count => count as u32,
            }
        } else {
            self.pages[folio as usize + 1].private
        }
    }
    #[inline]
    pub fn add_mapcount(&mut self, folio: FolioId, delta: i32) {
        if self.order(folio) == 0 {
            let count = self.mapcount(folio) as i32 + delta;
            debug_assert!(count >= 0, "folio {folio}: mapcount below zero");
            self.set_page_mapcount(folio, count as u32);
        } else {
            let p = &mut self.pages[folio as usize + 1];
            p.private = (p.private as i32 + delta) as u32;
        }
    }

    /// Sets the mapcount of order-0 folio `page`.
    pub fn set_page_mapcount(&mut self, page: Pfn, count: u32) {
        if count >= MAPCOUNT0_FULL as u32 {
            self.pages[page as usize].mapcount0 = MAPCOUNT0_FULL;
            self.mapcount_overflow.insert(page, count);
        } else {
            if self.pages[page as usize].mapcount0 == MAPCOUNT0_FULL {
                self.mapcount_overflow.remove(&page);
            }
            self.pages[page as usize].mapcount0 = count as u8;
        }
    }

    /// Turns a block handed out by the buddy allocator into a folio (`prep_compound_page`).
    /// `anon_vma` is the anon_vma id or the file id, with MAPPING_SHMEM for an shmem folio.
    pub fn prep_folio(&mut self, head: Pfn, order: u32, anon_vma: u32, memcg: u16, index: u32) {
        debug_assert!(anon_vma & !(ANON_VMA_MASK | MAPPING_SHMEM) == 0);
        let h = &mut self.pages[head as usize];
        *h = Page {
            mapping: anon_vma | ((memcg as u32) << ANON_VMA_BITS),
            index,
            flags: pg::HEAD,
            content: h.content,
            ..Page::EMPTY
        };
        h.set_order(order);
        for t in 1..(1u32 << order) {
            let p = &mut self.pages[(head + t) as usize];
            p.flags = pg::TAIL;
            p.mapping = head;
            p.private = 0;
        }
    }

    /// Tears a folio down to plain frames before they go back to the buddy allocator.
    pub fn clear_folio(&mut self, head: Pfn) {
        let nr = self.nr_pages(head);
        for t in 0..nr {
            let p = &mut self.pages[(head + t) as usize];
            let c = p.content;
            *p = Page::EMPTY;
            p.content = c;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_point_at_head_and_order_round_trips() {
        let mut m = MemMap::new(64);
        m.prep_folio(16, 4, 7, 3, 1000);
        assert_eq!(m.order(16), 4);
        assert_eq!(m.head_of(16), 16);
        assert_eq!(m.head_of(31), 16);
        assert_eq!(m.head_of(32), 32);
        assert_eq!(m.anon_vma(16), 7);
        assert_eq!(m.memcg(16), 3);
        m.add_mapcount(16, 16);
        assert_eq!(m.mapcount(16), 16);
        m.prep_folio(0, 0, 1, 0, 5);
        m.add_mapcount(0, 1);
        assert_eq!(m.mapcount(0), 1);
        assert_eq!(m.mapcount(16), 16);
        m.clear_folio(16);
        assert_eq!(m.head_of(20), 20);
        assert_eq!(m.pages[20].flags, 0);
    }
}
