//! Splitting large anonymous folios.
//!
//! Models mm/huge_memory.c split_huge_page_to_list_to_order (to order 0) for anonymous folios
//! (v6.9–v6.18): a PMD mapping is split first, the folio is unmapped with one batched TLB flush,
//! each page becomes an order-0 folio inheriting the flags, memcg and swap-cache entry, and the
//! new folios follow the head on its LRU list or on the caller's isolated list. Counters:
//! thp_split_page counts every large folio before v6.12 and only PMD-sized ones from v6.12, when
//! the per-size `split` counter took over. Left out: splitting to non-zero orders, file folios,
//! and the deferred-split shrinker. Zero-filled subpages: from v6.12 they map the shared zero
//! page after any split of an anonymous folio, and v6.12 frees an isolated folio's tails that
//! nothing maps any more in the split; v6.18 leaves them on reclaim's list (measured on 6.18.44,
//! `Generation::frees_unmapped_tails_of_isolated_split`). With `+thp_zero_split` (the 2021
//! series, in mm/features/thp_zero_split.rs) an isolated THP's are unmapped and freed. Folios in
//! the swap cache keep all their subpages here.

use super::folio::{pg, FolioId};
use super::pagetable::{self as pt};
use super::vmstat::{Mthp, Vm};
use super::Kernel;
use crate::scenario::knobs::PMD_ORDER;

/// Flags a subpage inherits from the head when a folio is split.
const INHERITED: u16 =
    pg::SWAPBACKED | pg::DIRTY | pg::ACTIVE | pg::REFERENCED | pg::SWAPCACHE | pg::WORKINGSET;

impl Kernel {
    /// deferred_split_folio: queue a large folio for the deferred-split shrinker; with
    /// `partially_mapped`, flag it and count the event (only the first time from v6.12, which
    /// also brought the per-size split counters).
    pub fn deferred_split_folio(&mut self, folio: FolioId, partially_mapped: bool) {
        let order = self.mem.order(folio);
        if order < 2 || self.mem.test(folio, pg::SWAPCACHE) {
            return;
        }
        if partially_mapped {
            let newly = !self.mem.test(folio, pg::DEFERRED);
            let per_size = self.generation().counts_per_size_split();
            if newly || !per_size {
                if order as usize == PMD_ORDER {
                    self.stat.count(Vm::ThpDeferredSplitPage, 1);
                }
                if per_size {
                    self.stat.count_mthp(order, Mthp::SplitDeferred);
                }
            }
            if newly {
                self.mem.set(folio, pg::DEFERRED);
                self.stat.mthp_gauge(order, Mthp::NrAnonPartiallyMapped, 1);
            }
        }
        if !self.mem.pages[folio as usize + 1].test(pg::QUEUED) {
            self.mem.pages[folio as usize + 1].set(pg::QUEUED);
            self.deferred_split_queue.push_back(folio);
        }
    }

    /// A partially mapped folio stops being one (split or freed).
    pub fn folio_unqueue_deferred_split(&mut self, folio: FolioId) {
        if self.mem.test(folio, pg::DEFERRED) {
            self.mem.clear(folio, pg::DEFERRED);
            let order = self.mem.order(folio);
            self.stat.mthp_gauge(order, Mthp::NrAnonPartiallyMapped, -1);
        }
    }

    /// thp_underused: more than max_ptes_none of the THP's pages are zero. Off at the default 511.
    fn thp_underused(&mut self, folio: FolioId) -> bool {
        let max_ptes_none = self.spec.knobs.max_ptes_none;
        if max_ptes_none >= 511 || self.mem.order(folio) as usize != PMD_ORDER {
            return false;
        }
        let (mut zeros, mut filled) = (0, 0);
        for i in 0..512 {
            if self.page_is_zero(folio + i) {
                zeros += 1;
                if zeros > max_ptes_none {
                    return true;
                }
            } else {
                filled += 1;
                if filled >= 512 - max_ptes_none {
                    return false;
                }
            }
        }
        false
    }

    /// deferred_split_scan: split partially mapped folios and (v6.12) underused THPs from the head
    /// of the queue; fully used ones leave the queue for good. Returns the folios split.
    pub fn deferred_split_scan(&mut self, nr_to_scan: usize) -> u64 {
        let mut split = 0;
        let mut survivors = Vec::new();
        for _ in 0..nr_to_scan.min(self.deferred_split_queue.len()) {
            let folio = self
                .deferred_split_queue
                .pop_front()
                .expect("queue is not empty");
            let valid = self.mem.pages[folio as usize].is_head()
                && self.mem.order(folio) > 1
                && self.mem.pages[folio as usize + 1].test(pg::QUEUED);
            if !valid {
                continue;
            }
            self.mem.pages[folio as usize + 1].clear(pg::QUEUED);
            let partially_mapped = self.mem.test(folio, pg::DEFERRED);
            let underused = !partially_mapped && self.thp_underused(folio);
            if !partially_mapped && !underused {
                continue;
            }
            // Folios under reclaim are locked: try again later.
            if !self.mem.test(folio, pg::LRU) || self.mem.test(folio, pg::SWAPCACHE) {
                survivors.push(folio);
                continue;
            }
            let mut unused = Vec::new();
            self.split_folio_to_list(folio, &mut unused);
            split += 1;
            if underused {
                self.stat.count(Vm::ThpUnderusedSplitPage, 1);
            }
        }
        for folio in survivors {
            self.mem.pages[folio as usize + 1].set(pg::QUEUED);
            self.deferred_split_queue.push_back(folio);
        }
        split
    }

    /// The shrinker's share at a reclaim priority (do_shrink_slab with DEFAULT_SEEKS).
    pub fn shrink_deferred_split(&mut self, priority: u32) {
        let nr = 2 * (self.deferred_split_queue.len() >> priority);
        if nr > 0 {
            self.deferred_split_scan(nr);
        }
    }

    /// Zero-filled subpages after a split: each PTE that maps one becomes `replacement` (v6.12:
    /// the shared zero page, remap_page with RMP_USE_SHARED_ZEROPAGE; +thp_zero_split: none,
    /// its try_to_unmap_clean). A subpage nothing maps any more is freed when the split folio was
    /// not isolated (the split's reference was the last), and of an isolated one the tails when
    /// `free_isolated_tails` (the head stays the caller's). Returns the indices of the freed pages
    /// and the number of PTEs replaced.
    pub(in crate::mm) fn drop_zero_subpages(
        &mut self,
        head: FolioId,
        nr: u32,
        mappings: &[(u32, usize)],
        replacement: pt::Pte,
        isolated: bool,
        free_isolated_tails: bool,
    ) -> (Vec<u32>, u64) {
        let index = self.mem.index(head);
        let mut freed = Vec::new();
        let mut replaced = 0;
        for i in 0..nr {
            let page = head + i;
            if !self.page_is_zero(page) {
                continue;
            }
            for &(mm, vi) in mappings {
                let v = &mut self.mms[mm as usize].vmas[vi];
                let Some(slot) = (index + i)
                    .checked_sub(v.start)
                    .map(|s| s as usize)
                    .filter(|&s| s < v.ptes.len())
                else {
                    continue;
                };
                if pt::is_present(v.ptes[slot]) && pt::pfn(v.ptes[slot]) == page {
                    v.ptes[slot] = replacement;
                    self.mms[mm as usize].rss_anon -= 1;
                    self.mem.add_mapcount(page, -1);
                    replaced += 1;
                }
            }
            let freeable = !isolated || (i > 0 && free_isolated_tails);
            if freeable && self.mem.mapcount(page) == 0 {
                self.free_folio(page);
                freed.push(i);
            }
        }
        // what the split does for each dropped subpage besides the zero test and the free (the
        // zero-page or none PTE, the mm counter, the uncharge, the LRU removal)
        let dropped_ns = replaced * self.hw.split_zero_subpage_ns;
        if dropped_ns > 0 {
            self.spend(super::TimeKind::Split, dropped_ns);
        }
        (freed, replaced)
    }

    /// Splits `folio` into order-0 folios. When the folio is isolated (not on an LRU list) the new
    /// folios are appended to `list`; otherwise they join the head's LRU list. Returns false when
    /// the folio cannot be split.
    pub fn split_folio_to_list(&mut self, folio: FolioId, list: &mut Vec<FolioId>) -> bool {
        let order = self.mem.order(folio);
        debug_assert!(order > 0);
        let nr = 1u32 << order;

        // Unmap (PMD split, then all PTEs) and flush once; the same PTEs are restored afterwards.
        let mut mappings = Vec::new();
        let shmem = self.mem.is_shmem(folio);
        let index = self.mem.index(folio);
        if shmem {
            // Only shmem_writeout splits an shmem folio here, after reclaim unmapped it.
            debug_assert_eq!(self.mem.mapcount(folio), 0);
        } else {
            let av = self.mem.anon_vma(folio) as usize;
            for &mm in &self.anon_vmas[av].mms {
                if let Some(vi) = self.mms[mm as usize].find_vma(index) {
                    mappings.push((mm, vi));
                }
            }
        }
        let mut mapcounts = vec![0u32; nr as usize];
        let mut pte_updates = 0u64;
        for &(mm, vi) in &mappings {
            let v = &self.mms[mm as usize].vmas[vi];
            let from = (index - v.start) as usize;
            let upto = (from + nr as usize).min(v.ptes.len());
            // try_to_migrate clears the PTEs one by one: each contpte block unfolds first.
            for idx in (from..upto).step_by(super::contpte::CONT_PTES as usize) {
                self.contpte_try_unfold(mm, vi, idx);
            }
            let v = &mut self.mms[mm as usize].vmas[vi];
            let start = v.start;
            let mut pmd = false;
            let mut cleared = Vec::new();
            for (i, p) in v.ptes[from..upto].iter_mut().enumerate() {
                if pt::is_present(*p) && (folio..folio + nr).contains(&pt::pfn(*p)) {
                    pmd |= *p & pt::PMD != 0;
                    cleared.push((start + (from + i) as u32, *p));
                    *p &= !pt::PMD;
                    mapcounts[(pt::pfn(*p) - folio) as usize] += 1;
                    pte_updates += 2;
                }
            }
            if pmd {
                self.stat.count(Vm::ThpSplitPmd, 1);
                // set_pmd_migration_entry: one flush of the PMD's range.
                self.flush_tlb_mm_range(mm, start + from as u32, nr as u64, false);
            } else {
                // Unmapped a PTE at a time, the folio is partially mapped after the first:
                // __folio_remove_rmap queues it for deferred split (not from the swap cache).
                if cleared.len() > 1 {
                    self.deferred_split_folio(folio, true);
                }
                for (vpn, pte) in cleared {
                    self.unmap_flush_pte(mm, vpn, pte);
                }
            }
        }
        self.try_to_unmap_flush();

        self.folio_unqueue_deferred_split(folio);
        let head = self.mem.pages[folio as usize];
        let inherited = head.flags & INHERITED;
        let (memcg, anon_vma) = (self.mem.memcg(folio), self.mem.mapping_field(folio));
        let on_lru = head.test(pg::LRU);
        if on_lru {
            self.lruvec_del_folio(folio);
        }
        let swap = self
            .mem
            .test(folio, pg::SWAPCACHE)
            .then(|| self.folio_swap_entry(folio));
        for i in 0..nr {
            let page = folio + i;
            let content = self.mem.pages[page as usize].content;
            self.mem.prep_folio(page, 0, anon_vma, memcg, index + i);
            let p = &mut self.mem.pages[page as usize];
            p.flags |= inherited;
            p.content = content;
            self.mem.set_page_mapcount(page, mapcounts[i as usize]);
            if let Some((dev, off)) = swap {
                self.set_folio_swap_entry(page, dev, off + i);
            }
        }
        if shmem && !self.mem.test(folio, pg::SWAPCACHE) {
            // the page cache names each new folio (__split_huge_page's xarray split)
            let file = self.mem.anon_vma(folio) as usize;
            for i in 0..nr {
                self.files[file].cache[(index + i) as usize] = folio + i;
            }
        }
        let dropped = if swap.is_some() || shmem {
            Vec::new()
        } else if self.generation().remaps_zero_subpages_on_split() {
            let free_tails = self.generation().frees_unmapped_tails_of_isolated_split();
            self.drop_zero_subpages(folio, nr, &mappings, pt::ZERO_PAGE, !on_lru, free_tails)
                .0
        } else {
            self.thp_zero_split_hook_split(folio, nr, &mappings, on_lru)
        };
        if on_lru {
            // The head goes back first so the tails follow it, as lru_add_split_folio does.
            for i in (0..nr).filter(|i| !dropped.contains(i)) {
                self.lruvec_add_folio(folio + i);
            }
        } else {
            list.extend((1..nr).filter(|i| !dropped.contains(i)).map(|i| folio + i));
        }
        self.spend(
            super::TimeKind::Split,
            nr as u64 * self.hw.split_subpage_ns + pte_updates * self.hw.pte_update_ns,
        );
        if self.generation().counts_per_size_split() {
            self.stat.count_mthp(order, Mthp::SplitCount);
            if order as usize == PMD_ORDER {
                self.stat.count(Vm::ThpSplitPage, 1);
            }
        } else {
            self.stat.count(Vm::ThpSplitPage, 1);
        }
        true
    }
}
