//! `+thp_zero_split`: Yu Zhao's "mm: optimize thp for reclaim and migration" ([PATCH 0/3],
//! 2021-07-31, unmerged).
//!
//! Models the series' split of an isolated THP (one taken off the LRU by reclaim or migration):
//! subpages that hold only zeros (found by a memchr_inv scan, `page_is_zero`) are unmapped, their
//! PTEs left none as try_to_unmap_clean does, and freed instead of being written out or copied;
//! counted as thp_split_unmap and thp_split_free. From v6.12 upstream maps such subpages to the
//! shared zero page on every split (mm/huge_memory.rs), which takes precedence here. Left out:
//! folios in the swap cache (they keep all their subpages, as upstream's split does here) and
//! splits of folios still on the LRU.

use crate::mm::folio::FolioId;
use crate::mm::pagetable as pt;
use crate::mm::vmstat::Vm;
use crate::mm::Kernel;

impl Kernel {
    /// Hook in split_folio_to_list (before v6.12's zero page): with the feature, an isolated
    /// folio's zero-filled subpages are unmapped and freed. Returns the indices of the freed
    /// pages (none without the feature).
    pub(in crate::mm) fn thp_zero_split_hook_split(
        &mut self,
        folio: FolioId,
        nr: u32,
        mappings: &[(u32, usize)],
        on_lru: bool,
    ) -> Vec<u32> {
        if on_lru || !self.spec.profile.thp_zero_split {
            return Vec::new();
        }
        let (freed, unmapped) =
            self.drop_zero_subpages(folio, nr, mappings, pt::PTE_NONE, true, true);
        self.stat.count(Vm::ThpSplitUnmap, unmapped);
        self.stat.count(Vm::ThpSplitFree, freed.len() as u64);
        freed
    }
}
