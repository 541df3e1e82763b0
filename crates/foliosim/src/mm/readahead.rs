//! File readahead: the on-demand window and the large page-cache folios it allocates.
//!
//! Models mm/readahead.c (v6.10–v6.18): page_cache_sync_ra (a miss: a sequential or first read
//! starts a window of get_init_ra_size, a random one reads just what was asked for),
//! page_cache_async_ra (a hit on a PG_readahead folio pushes the window forward by
//! get_next_ra_size), page_cache_ra_order (folio orders grow by 2 per window, up to
//! MAX_PAGECACHE_ORDER and ilog2 of the window, aligned to the index and cut at the window's end;
//! a failure falls back to order-0 pages) and page_cache_ra_unbounded. Where the growth starts
//! is the generation's: before v6.16 from the marker folio's order, from v6.16 from ra->order,
//! with each window's end cut to that order's alignment (Generation::has_readahead_order_state).
//! mmap read-around uses page_cache_ra_order from filemap.rs. Left out: bdi->io_pages (taken
//! equal to ra_pages), the "contiguous cache hits" context readahead of random reads, readahead
//! throttling on congestion, and filesystems' minimum folio orders (always 0 here). PG_readahead
//! shares the PG_reclaim bit, as in the kernel.

use super::filemap::FileId;
use super::folio::pg;
use super::Kernel;

/// MAX_PAGECACHE_ORDER on x86-64 with 4 KiB pages: the PMD order.
pub const MAX_PAGECACHE_ORDER: u32 = 9;

/// `struct file_ra_state`: the last readahead window, in pages, and the end of the last read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileRaState {
    pub start: u32,
    pub size: u32,
    pub async_size: u32,
    /// Byte position where the previous read() ended; -1 before the first.
    pub prev_pos: i64,
    /// Page faults that missed the page cache, less hits (`mmap_miss`).
    pub mmap_miss: u32,
    /// The read path's window maximum when posix_fadvise set one (`ra_pages`: twice the
    /// device's after POSIX_FADV_SEQUENTIAL, mm/fadvise.c); None, the device's.
    pub ra_pages: Option<u32>,
    /// The folio order the last window asked for (`ra->order`, v6.16+).
    pub order: u32,
}

impl Default for FileRaState {
    fn default() -> Self {
        FileRaState {
            start: 0,
            size: 0,
            async_size: 0,
            prev_pos: -1,
            mmap_miss: 0,
            ra_pages: None,
            order: 0,
        }
    }
}

/// get_init_ra_size: the first window for a request of `size` pages.
pub fn get_init_ra_size(size: u32, max: u32) -> u32 {
    let newsize = size.max(1).next_power_of_two();
    if newsize <= max / 32 {
        newsize * 4
    } else if newsize <= max / 4 {
        newsize * 2
    } else {
        max
    }
}

/// get_next_ra_size: ramp the window up, 4x while small, then 2x, to `max`.
pub fn get_next_ra_size(cur: u32, max: u32) -> u32 {
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else {
        max
    }
}

impl Kernel {
    /// page_cache_sync_ra: a read of `req_count` pages missed the page cache at `index`.
    pub fn page_cache_sync_ra(
        &mut self,
        file: FileId,
        ra: &mut FileRaState,
        index: u32,
        req_count: u32,
    ) {
        let max = ra.ra_pages.unwrap_or(self.files[file as usize].ra_pages);
        if max == 0 {
            // No readahead: the caller reads the one folio it needs.
            return;
        }
        let prev_index = if ra.prev_pos < 0 {
            -1
        } else {
            ra.prev_pos >> page_shift()
        };
        let sequential = index == 0 || (index as i64 - prev_index) <= 1 || req_count > max;
        if !sequential {
            // Random read: just what was asked for (up to the window), order 0.
            self.page_cache_ra_unbounded(file, index, req_count.min(max), 0);
            return;
        }
        ra.start = index;
        ra.size = get_init_ra_size(req_count, max);
        ra.async_size = if ra.size > req_count {
            ra.size - req_count
        } else {
            ra.size
        };
        // a new stream starts at order 0 (v6.16+), or one step above it (before)
        ra.order = 0;
        let order = self.readahead_order_step(ra.order);
        self.page_cache_ra_order(file, ra, order);
    }

    /// The order a window asks for after one of `previous_order`: 2 more, up to the PMD order,
    /// before v6.16; from v6.16 the caller moves ra->order itself and asks for it as it is.
    pub fn readahead_order_step(&self, previous_order: u32) -> u32 {
        if self.generation().has_readahead_order_state() {
            previous_order
        } else {
            (previous_order + 2).min(MAX_PAGECACHE_ORDER)
        }
    }

    /// page_cache_async_ra: the read reached the PG_readahead folio `folio` at `index`.
    pub fn page_cache_async_ra(
        &mut self,
        file: FileId,
        ra: &mut FileRaState,
        folio: u32,
        index: u32,
    ) {
        self.mem.clear(folio, pg::RECLAIM);
        let max = ra.ra_pages.unwrap_or(self.files[file as usize].ra_pages);
        if max == 0 {
            return;
        }
        let order = self.mem.order(folio);
        let order_state = self.generation().has_readahead_order_state();
        let mark = ra.start + ra.size - ra.async_size;
        let expected = mark & !((1u32 << order) - 1);
        if index == expected || index == ra.start + ra.size {
            ra.start += ra.size;
            // a window larger than the ramp (MADV_HUGEPAGE's) is kept from v6.16
            ra.size = match order_state {
                true => ra.size.max(get_next_ra_size(ra.size, max)),
                false => get_next_ra_size(ra.size, max),
            };
            ra.async_size = ra.size;
        } else {
            // Lost state (interleaved readers): restart from the next hole after `index`.
            let f = &self.files[file as usize];
            let limit = (index as u64 + 1 + max as u64).min(f.nr_pages as u64) as u32;
            let mut start = index + 1;
            while start < limit && f.cache[start as usize] != super::folio::NIL {
                start += 1;
            }
            if start - index > max || start >= f.nr_pages {
                return;
            }
            ra.start = start;
            ra.size = get_next_ra_size(start - index, max);
            ra.async_size = ra.size;
        }
        if !order_state {
            self.page_cache_ra_order(file, ra, self.readahead_order_step(order));
            return;
        }
        // v6.16+: the order grows from the last window's, and the window's end is cut to its
        // alignment (at most the maximum window's), so the next window starts aligned for it
        ra.order += 2;
        let align = 1u32 << ra.order.min(max.trailing_zeros());
        let end = ra.start + ra.size;
        let aligned_end = end & !(align - 1);
        if aligned_end > ra.start {
            ra.size -= end - aligned_end;
        }
        ra.async_size = ra.size;
        self.page_cache_ra_order(file, ra, ra.order);
    }

    /// page_cache_ra_order: allocates the window [ra.start, ra.start + ra.size) in folios of
    /// `new_order` (at most MAX_PAGECACHE_ORDER and ilog2 of the window, which ra->order then
    /// keeps); falls back to order-0 pages from where it stopped.
    pub fn page_cache_ra_order(&mut self, file: FileId, ra: &mut FileRaState, new_order: u32) {
        let f = &self.files[file as usize];
        if ra.start >= f.nr_pages {
            return;
        }
        let start = ra.start;
        let mut index = start;
        let mark = start + ra.size - ra.async_size;
        // before v6.16 a window under 4 pages was read in order-0 pages
        let min_size = match self.generation().has_readahead_order_state() {
            true => 1,
            false => 4,
        };
        if !f.large_folios || ra.size < min_size {
            ra.order = 0;
            self.page_cache_ra_unbounded(file, index, ra.size, ra.async_size);
            return;
        }
        let limit = (f.nr_pages - 1).min(index + ra.size - 1);
        self.read_batch_begin(file, start, limit + 1);
        let new_order = new_order.min(MAX_PAGECACHE_ORDER).min(ra.size.ilog2());
        ra.order = new_order;
        let mut failed = false;
        let mut pages = 0u64;
        while index <= limit {
            let mut order = new_order;
            if index & ((1 << order) - 1) != 0 {
                order = index.trailing_zeros();
            }
            while order > 0 && index + (1 << order) - 1 > limit {
                order -= 1;
            }
            // ra_alloc_folio: the marker is rounded down to the folio's start.
            let mark_here = mark & !((1u32 << order) - 1) == index;
            if !self.ra_alloc_folio(file, index, order, mark_here) {
                failed = true;
                break;
            }
            pages += 1 << order;
            index += 1 << order;
        }
        self.read_pages(file, start, index, pages);
        if failed {
            let left = ra.size - (index - start);
            self.page_cache_ra_unbounded(file, index, left, ra.async_size);
        }
    }

    /// page_cache_ra_unbounded: order-0 folios for the missing pages of [index, index + nr),
    /// the one `lookahead` pages before the end marked PG_readahead.
    pub fn page_cache_ra_unbounded(&mut self, file: FileId, index: u32, nr: u32, lookahead: u32) {
        let end = (index as u64 + nr as u64).min(self.files[file as usize].nr_pages as u64) as u32;
        self.read_batch_begin(file, index, end);
        let mut pages = 0;
        for i in index..end {
            if self.files[file as usize].cache[i as usize] != super::folio::NIL {
                continue;
            }
            let mark = lookahead > 0 && nr.checked_sub(lookahead) == Some(i - index);
            if !self.ra_alloc_folio(file, i, 0, mark) {
                break;
            }
            pages += 1;
        }
        self.read_pages(file, index, end, pages);
    }

    /// ra_alloc_folio: a new folio of `order` at `index` in the page cache, unless some page of
    /// its range is cached already (-EEXIST) or no memory is left (-ENOMEM).
    fn ra_alloc_folio(&mut self, file: FileId, index: u32, order: u32, mark: bool) -> bool {
        let f = &self.files[file as usize];
        let end = index + (1 << order);
        if f.cache[index as usize..end as usize]
            .iter()
            .any(|&c| c != super::folio::NIL)
        {
            return false;
        }
        let gfp = super::memory::Gfp {
            direct_reclaim: true,
            kswapd_reclaim: true,
            // readahead_gfp_mask: __GFP_NORETRY.
            retry: false,
            noretry: true,
        };
        let Some(folio) = self.filemap_alloc_folio(file, index, order, gfp) else {
            return false;
        };
        if mark {
            self.mem.set(folio, pg::RECLAIM);
        }
        true
    }
}

#[inline]
pub(super) const fn page_shift() -> u32 {
    12
}
