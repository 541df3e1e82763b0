//! Reverse mapping: from a folio to the PTEs that map it, for reference checks and unmapping.
//!
//! Models mm/rmap.c (v6.9–v6.18): rmap_walk_anon over the anon_vma's address spaces,
//! folio_referenced_one (clears young bits; one reference per mapping, a PMD counts once),
//! try_to_unmap_one for anonymous folios going to swap (split of a PMD mapping, swap PTEs with
//! swap_duplicate, the dirty bit moved to the folio), and the deferred TLB flush batch
//! (TTU_BATCH_FLUSH, try_to_unmap_flush[_dirty]). Left out: file rmap, KSM, mlock, migration
//! entries, exclusive-anon bits, and per-CPU TLB state (tlb.rs will model which CPUs are hit).

use super::folio::{pg, FolioId};
use super::pagetable::{self as pt};
use super::Kernel;
use crate::stats::Vm;

/// Pending flush of PTEs cleared by try_to_unmap (struct tlbflush_unmap_batch).
#[derive(Default, Clone, Copy, Debug)]
pub struct TlbBatch {
    pub pending: bool,
    /// A cleared PTE was writable and dirty: flush before writing the folio out.
    pub writable: bool,
    pub local: bool,
    /// Number of other CPUs to interrupt.
    pub remote_cpus: u32,
}

impl Kernel {
    /// Calls `f(mm, vma index)` for each address space that maps the folio's range.
    fn for_each_mapping(&self, folio: FolioId, mut f: impl FnMut(u32, usize)) {
        let av = self.mem.anon_vma(folio) as usize;
        let index = self.mem.index(folio);
        for &mm in &self.anon_vmas[av].mms {
            if let Some(vi) = self.mms[mm as usize].find_vma(index) {
                f(mm, vi);
            }
        }
    }

    /// The PTE slots of `folio` in one VMA: (first slot, number of pages inside the VMA).
    fn folio_ptes(&self, folio: FolioId, mm: u32, vi: usize) -> (usize, usize) {
        let v = &self.mms[mm as usize].vmas[vi];
        let index = self.mem.index(folio);
        let nr = (self.mem.nr_pages(folio)).min(v.end() - index);
        ((index - v.start) as usize, nr as usize)
    }

    /// Is the folio mapped by a PMD anywhere?
    pub fn folio_pmd_mapped(&self, folio: FolioId) -> bool {
        let mut pmd = false;
        self.for_each_mapping(folio, |mm, vi| {
            let (from, _) = self.folio_ptes(folio, mm, vi);
            let p = self.mms[mm as usize].vmas[vi].ptes[from];
            pmd |= pt::is_present(p) && p & pt::PMD != 0 && pt::pfn(p) == folio;
        });
        pmd
    }

    /// folio_referenced: clears the young bits of every PTE mapping the folio and returns the
    /// number of mappings in which at least one was young.
    pub fn folio_referenced(&mut self, folio: FolioId) -> u32 {
        let mut mappings = Vec::new();
        self.for_each_mapping(folio, |mm, vi| mappings.push((mm, vi)));
        let end = folio + self.mem.nr_pages(folio);
        let mut referenced = 0;
        for (mm, vi) in mappings {
            let (from, nr) = self.folio_ptes(folio, mm, vi);
            let mut young = false;
            for p in &mut self.mms[mm as usize].vmas[vi].ptes[from..from + nr] {
                if pt::is_present(*p) && (folio..end).contains(&pt::pfn(*p)) && *p & pt::YOUNG != 0
                {
                    *p &= !pt::YOUNG;
                    young = true;
                }
            }
            referenced += young as u32;
            self.charge_time(self.hw.rmap_walk_ns);
        }
        referenced
    }

    /// try_to_unmap for a folio in the swap cache: every PTE mapping it becomes a swap PTE.
    pub fn try_to_unmap(&mut self, folio: FolioId) {
        debug_assert!(self.mem.test(folio, pg::SWAPCACHE));
        let (dev, first_off) = self.folio_swap_entry(folio);
        let mut mappings = Vec::new();
        self.for_each_mapping(folio, |mm, vi| mappings.push((mm, vi)));
        let end = folio + self.mem.nr_pages(folio);
        for (mm, vi) in mappings {
            let (from, nr) = self.folio_ptes(folio, mm, vi);
            let mut unmapped = 0u32;
            let mut split_pmd = false;
            let mut dirty = false;
            let mut writable = false;
            for i in from..from + nr {
                let p = self.mms[mm as usize].vmas[vi].ptes[i];
                if !pt::is_present(p) || !(folio..end).contains(&pt::pfn(p)) {
                    continue;
                }
                split_pmd |= p & pt::PMD != 0;
                dirty |= p & pt::DIRTY != 0;
                writable |= p & pt::WRITE != 0;
                let off = first_off + (pt::pfn(p) - folio);
                self.mms[mm as usize].vmas[vi].ptes[i] = pt::mk_swap(dev, off);
                self.swap_duplicate(dev, off);
                unmapped += 1;
            }
            if unmapped == 0 {
                continue;
            }
            if split_pmd {
                self.stat.count(Vm::ThpSplitPmd, 1);
            }
            if dirty {
                self.mem.set(folio, pg::DIRTY);
            }
            self.mms[mm as usize].rss_anon -= unmapped as u64;
            self.mm_add_swapents(mm, unmapped as i64);
            self.mem.add_mapcount(folio, -(unmapped as i32));
            self.charge_time(self.hw.rmap_walk_ns + unmapped as u64 * self.hw.pte_update_ns);
            self.set_tlb_ubc_flush_pending(mm, writable && dirty);
        }
    }

    /// Records that `mm`'s TLB entries must be flushed before the page can be reused.
    pub fn set_tlb_ubc_flush_pending(&mut self, mm: u32, writable: bool) {
        let owner = self.mms[mm as usize].owner;
        let b = &mut self.tlb_batch;
        b.pending = true;
        b.writable |= writable;
        if owner == self.current {
            b.local = true;
        } else if self.tasks[owner as usize].is_running() {
            b.remote_cpus += 1;
        }
    }

    /// try_to_unmap_flush: one flush for every PTE cleared since the last one.
    pub fn try_to_unmap_flush(&mut self) {
        let b = std::mem::take(&mut self.tlb_batch);
        if !b.pending {
            return;
        }
        if b.local {
            self.stat.count(Vm::NrTlbLocalFlushAll, 1);
            self.charge_time(self.hw.tlb_flush_local_all_ns);
        }
        if b.remote_cpus > 0 {
            self.stat.count(Vm::NrTlbRemoteFlush, 1);
            self.stat
                .count(Vm::NrTlbRemoteFlushReceived, b.remote_cpus as u64);
            self.charge_time(self.hw.tlb_flush_ipi_send_ns);
        }
    }

    /// try_to_unmap_flush_dirty: flush before writeback if a writable dirty PTE was cleared.
    pub fn try_to_unmap_flush_dirty(&mut self) {
        if self.tlb_batch.writable {
            self.try_to_unmap_flush();
        }
    }
}
