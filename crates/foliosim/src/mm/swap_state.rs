//! The swap cache and the swap I/O entry points.
//!
//! Models mm/swap_state.c (add_to_swap_cache, delete_from_swap_cache, swap_cache lookup),
//! mm/swap_slots.c folio_alloc_swap / add_to_swap, mm/page_io.c swap_writepage / swap_read_folio
//! with their counters (and, from v6.12, the zeromap: a zero-filled folio is not written, and
//! reads back as zeros without I/O), and free_swap_and_cache / folio_free_swap of mm/swapfile.c
//! (v6.9–v6.18).
//! The cache is one folio id per slot (the newest kernels' swap table, in effect). Left out:
//! readahead and swap-cache races. Evicted folios leave their shadow entries in their slots
//! (mm/workingset.rs); zswap is mm/zswap.rs.

use super::folio::{pg, FolioId, NIL};
use super::swapfile::SWAP_HAS_CACHE;
use super::vmstat::{Memcg, Mthp, Vm};
use super::workingset::Shadow;
use super::Kernel;
use crate::scenario::knobs::PMD_ORDER;

/// What swap_writepage did with a folio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwapWrite {
    /// Written (or kept by the zeromap or zswap): the folio can be freed now.
    Done,
    /// Under writeback to an asynchronous device.
    InFlight,
    /// Kept in memory (AOP_WRITEPAGE_ACTIVATE): reclaim activates it.
    Activate,
}

const OFFSET_BITS: u32 = 27;
const OFFSET_MASK: u32 = (1 << OFFSET_BITS) - 1;

/// A swap entry as one `u32` (device, offset), as a swap-cache folio keeps it.
pub fn pack_swap_entry(dev: u32, off: u32) -> u32 {
    (dev << OFFSET_BITS) | off
}

pub fn unpack_swap_entry(v: u32) -> (u32, u32) {
    (v >> OFFSET_BITS, v & OFFSET_MASK)
}

impl Kernel {
    pub fn folio_swap_entry(&self, folio: FolioId) -> (u32, u32) {
        unpack_swap_entry(self.mem.pages[folio as usize].private)
    }

    pub fn set_folio_swap_entry(&mut self, folio: FolioId, dev: u32, off: u32) {
        self.mem.pages[folio as usize].private = pack_swap_entry(dev, off);
        self.swap[dev as usize].cache[off as usize] = folio;
    }

    /// The folio caching a slot and the page of it that holds that slot.
    pub fn swap_cache_lookup(&self, dev: u32, off: u32) -> Option<(FolioId, u32)> {
        let folio = self.swap[dev as usize].cache[off as usize];
        if folio == NIL {
            return None;
        }
        let (_, first) = self.folio_swap_entry(folio);
        Some((folio, folio + (off - first)))
    }

    /// Puts a folio that was just read or allocated for `off..` into the swap cache.
    pub fn add_to_swap_cache(&mut self, folio: FolioId, dev: u32, off: u32) {
        let nr = self.mem.nr_pages(folio);
        self.mem.set(folio, pg::SWAPCACHE);
        self.mem.pages[folio as usize].private = pack_swap_entry(dev, off);
        let si = &mut self.swap[dev as usize];
        for s in off..off + nr {
            si.cache[s as usize] = folio;
            si.shadows[s as usize] = Shadow::NONE;
            si.swap_map[s as usize] |= SWAP_HAS_CACHE;
        }
    }

    /// add_to_swap: allocate slots for the whole folio and put it in the swap cache, dirty.
    pub fn add_to_swap(&mut self, folio: FolioId) -> bool {
        let order = self.mem.order(folio);
        let entry = if order == 0 {
            self.alloc_swap_slot()
        } else {
            self.get_swap_pages(order)
        };
        let Some((dev, off)) = entry else {
            return false;
        };
        self.add_to_swap_cache(folio, dev, off);
        self.mem.set(folio, pg::DIRTY);
        true
    }

    /// delete_from_swap_cache + put_swap_folio: the folio leaves the cache and its slots lose
    /// SWAP_HAS_CACHE; slots nothing else refers to are freed.
    pub fn delete_from_swap_cache(&mut self, folio: FolioId) {
        self.delete_from_swap_cache_shadow(folio, Shadow::NONE);
    }

    /// __remove_mapping's __delete_from_swap_cache: as delete_from_swap_cache, leaving `shadow`
    /// in the folio's slots (until they are freed).
    pub fn delete_from_swap_cache_shadow(&mut self, folio: FolioId, shadow: Shadow) {
        if !self.mem.test(folio, pg::SWAPCACHE) {
            return;
        }
        let (dev, off) = self.folio_swap_entry(folio);
        let nr = self.mem.nr_pages(folio);
        self.mem.clear(folio, pg::SWAPCACHE);
        self.mem.pages[folio as usize].private = 0;
        let range_free =
            self.generation().frees_mthp_swap_as_range() || nr == super::swapfile::SWAPFILE_CLUSTER;
        let now = self.clock_ns;
        let si = &mut self.swap[dev as usize];
        for s in off..off + nr {
            si.cache[s as usize] = NIL;
            si.shadows[s as usize] = shadow;
        }
        // put_swap_folio: a large folio whose slots nothing else holds is freed as one range
        // (from v6.12; v6.10 only for a whole PMD cluster); the rest go slot by slot.
        let whole = nr > 1
            && range_free
            && (off..off + nr).all(|s| si.swap_map[s as usize] == SWAP_HAS_CACHE);
        if whole {
            si.free_slots_range(off, nr, now);
            for s in off..off + nr {
                si.slot_freed(s);
            }
            self.charge_zram_frees(dev);
            return;
        }
        for s in off..off + nr {
            let m = &mut self.swap[dev as usize].swap_map[s as usize];
            *m &= !SWAP_HAS_CACHE;
            if *m == 0 {
                self.free_swap_slot(dev, s);
            }
        }
    }

    /// Does any slot of this swap-cache folio still have swap PTEs referring to it?
    fn folio_swapped(&self, folio: FolioId) -> bool {
        let (dev, off) = self.folio_swap_entry(folio);
        let nr = self.mem.nr_pages(folio);
        (off..off + nr).any(|s| self.swap[dev as usize].swap_count(s) > 0)
    }

    /// folio_free_swap: drop the swap copy of a folio that no swap PTE needs any more.
    pub fn folio_free_swap(&mut self, folio: FolioId) -> bool {
        if self.mem.test(folio, pg::WRITEBACK) || self.folio_swapped(folio) {
            return false;
        }
        self.delete_from_swap_cache(folio);
        self.mem.set(folio, pg::DIRTY);
        true
    }

    /// Called when a swap-cache folio lost its last mapping or its last swap reference: free it
    /// if nothing needs it (free_swap_cache / __try_to_reclaim_swap).
    pub fn try_to_reclaim_swap_folio(&mut self, folio: FolioId) {
        if self.mem.mapcount(folio) > 0 {
            if self.vm_swap_full() {
                self.folio_free_swap(folio);
            }
            return;
        }
        if self.mem.test(folio, pg::LRU)
            && !self.mem.test(folio, pg::WRITEBACK)
            && !self.folio_swapped(folio)
        {
            self.delete_from_swap_cache(folio);
            self.free_folio(folio);
        }
    }

    /// free_swap_and_cache: a swap PTE went away.
    pub fn free_swap_and_cache(&mut self, dev: u32, off: u32) {
        self.spend(super::TimeKind::SwapFree, self.hw.swap_free_ns);
        let si = &mut self.swap[dev as usize];
        si.swap_map[off as usize] -= 1;
        let m = si.swap_map[off as usize];
        if m == 0 {
            self.free_swap_slot(dev, off);
        } else if m == SWAP_HAS_CACHE {
            let folio = si.cache[off as usize];
            if folio != NIL {
                self.try_to_reclaim_swap_folio(folio);
            }
        }
    }

    /// swap_writepage: write the folio out (to the zeromap, zswap or the device).
    pub fn swap_writepage(&mut self, folio: FolioId) -> SwapWrite {
        let (dev, off) = self.folio_swap_entry(folio);
        let nr = self.mem.nr_pages(folio);
        let order = self.mem.order(folio);
        for i in 0..nr {
            let c = self.mem.pages[(folio + i) as usize].content;
            self.swap[dev as usize].content[(off + i) as usize] = c;
        }
        self.mem.clear(folio, pg::DIRTY);
        if self.generation().has_zeromap() {
            // zeromap: a wholly zero-filled folio is remembered, not written.
            let zero = self.folio_zero_scan(folio);
            for s in off..off + nr {
                self.zeromap[dev as usize][s as usize] = zero;
            }
            if zero {
                if self.generation().counts_swap_zero_io() {
                    self.stat.count(Vm::SwpoutZero, nr as u64);
                }
                return SwapWrite::Done;
            }
        }
        if self.zswap_store(folio) {
            return SwapWrite::Done;
        }
        let memcg = self.mem.memcg(folio) as usize;
        if !self.zswap_writeback_enabled(memcg as u16) {
            // memory.zswap.writeback=0: what zswap refused stays in memory (AOP_WRITEPAGE_ACTIVATE).
            self.mem.set(folio, pg::DIRTY);
            return SwapWrite::Activate;
        }
        self.stat.count(Vm::Pswpout, nr as u64);
        // submit_bio counts the swap write in pgpgout (KiB in /proc/vmstat)
        self.stat
            .count(Vm::Pgpgout, nr as u64 * super::PAGE_SIZE / 1024);
        self.memcgs[memcg].count(Memcg::Pswpout, nr as u64);
        if order as usize == PMD_ORDER {
            self.stat.count(Vm::ThpSwpout, 1);
            self.memcgs[memcg].count(Memcg::ThpSwpout, 1);
        }
        if self.generation().counts_per_size_swpout() {
            self.stat.count_mthp(order, Mthp::Swpout);
        }
        // what swap_writeout does for the folio around the device's request (the writeback
        // flag, the bio, and at the end __remove_mapping), once per folio whatever its size
        self.spend(super::TimeKind::BlockIo, self.hw.swap_writeout_ns);
        let done_ns = self.swap_device_write(dev, off, nr);
        if self.swap[dev as usize].synchronous() {
            // the bio completed inside the submission: folio_end_writeback counts it written
            self.stat.count(Vm::NrWritten, nr as u64);
            return SwapWrite::Done;
        }
        self.mem.set(folio, pg::WRITEBACK);
        self.swap[dev as usize].inflight.push_back((done_ns, folio));
        SwapWrite::InFlight
    }

    /// is_folio_zero_filled: every page of the folio is zero, scanned as `page_is_zero` does.
    fn folio_zero_scan(&mut self, folio: FolioId) -> bool {
        let nr = self.mem.nr_pages(folio);
        (0..nr).all(|i| self.page_is_zero(folio + i))
    }

    /// memchr_inv over one page: a zero page (or one whose only data is at its end) is read to the
    /// end; a page with data near its start costs one access.
    pub fn page_is_zero(&mut self, pfn: u32) -> bool {
        use super::folio::content;
        let c = self.mem.pages[pfn as usize].content;
        let ns = match c {
            content::ZERO | content::SPARSE_TAIL => {
                super::PAGE_SIZE * 1_000_000_000 / self.hw.dram_bandwidth_bytes_per_s.max(1)
            }
            _ => self.hw.dram_read_latency_ns,
        };
        self.spend(super::TimeKind::ZeroCheck, ns);
        c == content::ZERO
    }

    /// Ends the writeback of every swap write that has completed by now (folio_end_writeback);
    /// folios reclaim wanted go to the inactive tail to be freed on the next pass.
    pub fn complete_swap_writeback(&mut self) {
        for dev in 0..self.swap.len() {
            while let Some(&(done, folio)) = self.swap[dev].inflight.front() {
                if done > self.clock_ns {
                    break;
                }
                self.swap[dev].inflight.pop_front();
                self.mem.clear(folio, pg::WRITEBACK);
                self.stat
                    .count(Vm::NrWritten, self.mem.nr_pages(folio) as u64);
                if self.mem.test(folio, pg::RECLAIM) {
                    self.mem.clear(folio, pg::RECLAIM);
                    self.folio_rotate_reclaimable(folio);
                }
            }
        }
    }

    /// swap_read_folio: read `nr` slots into the folio; the caller waits for the device.
    /// Returns true when zswap held the data (no device read).
    pub fn swap_read_folio(&mut self, folio: FolioId, dev: u32, off: u32, nr: u32) -> bool {
        for i in 0..nr {
            let c = self.swap[dev as usize].content[(off + i) as usize];
            self.mem.pages[(folio + i) as usize].content = c;
        }
        if self.generation().has_zeromap() && self.zeromap[dev as usize][off as usize] {
            // swap_read_folio_zeromap: the folio is zero-filled in place, no I/O.
            self.spend(super::TimeKind::Zeroing, nr as u64 * self.hw.zero_page_ns);
            if self.generation().counts_swap_zero_io() {
                self.stat.count(Vm::SwpinZero, nr as u64);
            }
            return false;
        }
        if self.zswap_load(folio, dev, off) {
            return true;
        }
        self.stat.count(Vm::Pswpin, nr as u64);
        // submit_bio counts the swap read in pgpgin (KiB in /proc/vmstat)
        self.stat
            .count(Vm::Pgpgin, nr as u64 * super::PAGE_SIZE / 1024);
        let done_ns = self.swap_device_read(dev, off, nr);
        self.wait_until(super::TimeKind::IoWait, done_ns);
        false
    }
}
