//! Reverse mapping: from a folio to the PTEs that map it, for reference checks and unmapping.
//!
//! Models mm/rmap.c (v6.9–v6.18): rmap_walk_anon over the anon_vma's address spaces and
//! rmap_walk_file over the file's i_mmap (the VMAs whose file range covers the folio),
//! folio_referenced_one (clears young bits; one reference per mapping, a PMD counts once; the
//! flags of the VMAs that referenced it), try_to_unmap_one for anonymous folios going to swap
//! (split of a PMD mapping, swap PTEs with swap_duplicate, the dirty bit moved to the folio) and
//! for page-cache folios (PTEs cleared, the dirty bit moved to the folio), folio_mkclean before
//! writeback (page_vma_mkclean_one: mapped PTEs clean and read-only), and the deferred TLB
//! flush batch (TTU_BATCH_FLUSH, try_to_unmap_flush[_dirty]). Left out: KSM, mlock, migration
//! entries and exclusive-anon bits. The flushes themselves are in tlb.rs, arm64's contiguous-PTE
//! unfolding and young-bit TLBIs in contpte.rs.

use super::folio::{pg, FolioId};
use super::pagetable::{self as pt};
use super::vmstat::Vm;
use super::Kernel;

impl Kernel {
    /// Calls `f(mm, vma index)` for each VMA that may map the folio's range.
    pub(super) fn for_each_mapping(&self, folio: FolioId, mut f: impl FnMut(u32, usize)) {
        if !self.folio_test_anon(folio) {
            // rmap_walk_file: the VMAs of i_mmap whose file range overlaps the folio; callers
            // do not walk an unmapped folio.
            if self.mem.mapcount(folio) == 0 {
                return;
            }
            let file = &self.files[self.mem.anon_vma(folio) as usize];
            let (index, nr) = (self.mem.index(folio), self.mem.nr_pages(folio));
            for &(mm, start) in &file.i_mmap {
                let Some(vi) = self.mms[mm as usize].find_vma(start) else {
                    continue;
                };
                let v = &self.mms[mm as usize].vmas[vi];
                let pgoff = v.file.map_or(0, |vf| vf.pgoff);
                if pgoff < index + nr && index < pgoff + v.ptes.len() as u32 {
                    f(mm, vi);
                }
            }
            return;
        }
        let av = self.mem.anon_vma(folio) as usize;
        let index = self.mem.index(folio);
        for &mm in &self.anon_vmas[av].mms {
            if let Some(vi) = self.mms[mm as usize].find_vma(index) {
                f(mm, vi);
            }
        }
    }

    /// The (mm, VMA index) pairs for_each_mapping visits, collected into the reusable
    /// `rmap_scratch` list (reclaim and migration walk every folio they look at); callers hand
    /// the list back with `self.rmap_scratch = mappings`.
    pub(super) fn folio_mappings(&mut self, folio: FolioId) -> Vec<(u32, usize)> {
        let mut mappings = std::mem::take(&mut self.rmap_scratch);
        mappings.clear();
        self.for_each_mapping(folio, |mm, vi| mappings.push((mm, vi)));
        mappings
    }

    /// The vpn at which the folio's first page is, or would be, mapped in a VMA (vma_address):
    /// an anonymous folio's index is its vpn; a file folio's is its page offset in the file.
    pub fn folio_vpn(&self, folio: FolioId, mm: u32, vi: usize) -> i64 {
        let v = &self.mms[mm as usize].vmas[vi];
        let index = self.mem.index(folio) as i64;
        match v.file {
            Some(vf) if !self.folio_test_anon(folio) => v.start as i64 + index - vf.pgoff as i64,
            _ => index,
        }
    }

    /// The PTE slots of `folio` in one VMA: (first slot, number of pages inside the VMA).
    pub(super) fn folio_ptes(&self, folio: FolioId, mm: u32, vi: usize) -> (usize, usize) {
        let v = &self.mms[mm as usize].vmas[vi];
        let first = self.folio_vpn(folio, mm, vi) - v.start as i64;
        let from = first.max(0);
        let to = (first + self.mem.nr_pages(folio) as i64).min(v.ptes.len() as i64);
        (from as usize, (to - from).max(0) as usize)
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

    /// folio_mkclean: before writeback, every PTE mapping a page-cache folio is made clean and
    /// read-only (page_vma_mkclean_one, with its TLB flush), so that the next write through a
    /// mapping faults and dirties the folio again. Returns the PTEs changed.
    pub fn folio_mkclean(&mut self, folio: FolioId) -> u32 {
        let mappings = self.folio_mappings(folio);
        let end = folio + self.mem.nr_pages(folio);
        let mut cleaned = 0;
        for &(mm, vi) in &mappings {
            let (from, nr) = self.folio_ptes(folio, mm, vi);
            let mut changed = 0;
            for p in &mut self.mms[mm as usize].vmas[vi].ptes[from..from + nr] {
                if pt::maps_pfn_in(*p, folio, end) && *p & (pt::WRITE | pt::DIRTY) != 0 {
                    *p &= !(pt::WRITE | pt::DIRTY);
                    changed += 1;
                }
            }
            self.spend(
                super::TimeKind::Rmap,
                self.hw.rmap_walk_ns + changed as u64 * self.hw.pte_update_ns,
            );
            if changed > 0 {
                let start = self.mms[mm as usize].vmas[vi].start + from as u32;
                self.flush_tlb_mm_range(mm, start, nr as u64, false);
                cleaned += changed;
            }
        }
        self.rmap_scratch = mappings;
        cleaned
    }

    /// folio_referenced: clears the young bits of every PTE mapping the folio and returns the
    /// number of mappings in which at least one was young, and (`vm_flags`) the union of the
    /// flags of those VMAs.
    pub fn folio_referenced(&mut self, folio: FolioId) -> (u32, u8) {
        let mut vm_flags = 0;
        let mappings = self.folio_mappings(folio);
        let end = folio + self.mem.nr_pages(folio);
        let mut referenced = 0;
        for &(mm, vi) in &mappings {
            let (from, nr) = self.folio_ptes(folio, mm, vi);
            let poisson = self.mms[mm as usize].vmas[vi].poisson.is_some();
            if poisson {
                for idx in from..from + nr {
                    self.poisson_advance(mm, vi, idx);
                }
            }
            self.arch_clear_flush_young(mm, vi, from, nr, folio);
            let mut young = false;
            for p in &mut self.mms[mm as usize].vmas[vi].ptes[from..from + nr] {
                if pt::maps_pfn_in(*p, folio, end) && *p & pt::YOUNG != 0 {
                    *p &= !pt::YOUNG;
                    young = true;
                }
            }
            if poisson && young {
                for idx in from..from + nr {
                    self.poisson_rearm(mm, vi, idx);
                }
            }
            referenced += young as u32;
            if young {
                vm_flags |= self.mms[mm as usize].vmas[vi].flags;
            }
            self.spend(super::TimeKind::Rmap, self.hw.rmap_walk_ns);
        }
        self.rmap_scratch = mappings;
        (referenced, vm_flags)
    }

    /// try_to_unmap: every PTE mapping the folio becomes a swap PTE (an anonymous folio in the
    /// swap cache) or none (a page-cache folio, shmem's included, which the file gives back).
    pub fn try_to_unmap(&mut self, folio: FolioId) {
        let file = !self.folio_test_anon(folio);
        debug_assert!(file || self.mem.test(folio, pg::SWAPCACHE));
        let (dev, first_off) = if file {
            (0, 0)
        } else {
            self.folio_swap_entry(folio)
        };
        let mappings = self.folio_mappings(folio);
        let end = folio + self.mem.nr_pages(folio);
        for &(mm, vi) in &mappings {
            let (from, nr) = self.folio_ptes(folio, mm, vi);
            let mut unmapped = 0u32;
            let mut split_pmd = false;
            let mut dirty = false;
            let start = self.mms[mm as usize].vmas[vi].start;
            for i in from..from + nr {
                let p = self.mms[mm as usize].vmas[vi].ptes[i];
                if !pt::maps_pfn_in(p, folio, end) {
                    continue;
                }
                if p & pt::PMD != 0 {
                    // TTU_SPLIT_HUGE_PMD: an anonymous PMD is split into PTEs first (contpte
                    // blocks on arm64); a file PMD is just cleared.
                    if !file {
                        self.remap_pmd_with_ptes(mm, vi, folio);
                    }
                    split_pmd = true;
                }
                // ptep_get_and_clear of one PTE of a contpte block unfolds it first.
                self.contpte_try_unfold(mm, vi, i);
                let p = self.mms[mm as usize].vmas[vi].ptes[i];
                dirty |= p & pt::DIRTY != 0;
                self.unmap_flush_pte(mm, start + i as u32, p);
                if file {
                    self.mms[mm as usize].vmas[vi].ptes[i] = pt::PTE_NONE;
                } else {
                    let off = first_off + (pt::pfn(p) - folio);
                    self.mms[mm as usize].vmas[vi].ptes[i] = pt::mk_swap(dev, off);
                    self.swap_duplicate(dev, off);
                }
                unmapped += 1;
            }
            if unmapped == 0 {
                continue;
            }
            if split_pmd {
                self.stat.count(Vm::ThpSplitPmd, 1);
            }
            if dirty {
                self.folio_mark_dirty(folio);
            }
            if file {
                self.mms[mm as usize].rss_file -= unmapped as u64;
            } else {
                self.mms[mm as usize].rss_anon -= unmapped as u64;
                self.mm_add_swapents(mm, unmapped as i64);
            }
            self.mem.add_mapcount(folio, -(unmapped as i32));
            self.spend(
                super::TimeKind::Rmap,
                self.hw.rmap_walk_ns + unmapped as u64 * self.hw.pte_update_ns,
            );
        }
        self.rmap_scratch = mappings;
    }
}
