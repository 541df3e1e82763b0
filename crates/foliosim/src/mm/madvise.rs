//! MADV_COLD and MADV_PAGEOUT on anonymous memory.
//!
//! Models mm/madvise.c madvise_cold_or_pageout_pte_range (v6.9–v6.18): only folios this mm maps
//! exclusively; their PG_referenced is cleared (and, by COLD, their young bits, whose TLB entries
//! the mmu_gather flushes at the end), and an active one is marked PG_workingset; COLD moves
//! active ones to the inactive list (lru_deactivate, which leaves inactive ones where they are
//! and counts pgdeactivate for the moved ones only), PAGEOUT
//! isolates them and reclaims them at once without looking at references (reclaim_pages). A
//! large folio is split first unless it lies wholly in the range and is PMD-mapped (all
//! generations) or, from v6.10, PTE-mapped. Left out: page-cache folios (skipped; the kernel
//! deactivates them and may page them out when the caller may write the file), the per-PMD
//! batching of the reclaim and the lazyfree (MADV_FREE) path.

use super::folio::{pg, FolioId};
use super::pagetable::{self as pt};
use super::Kernel;

impl Kernel {
    pub fn madvise_cold_or_pageout(
        &mut self,
        mm: u32,
        vi: usize,
        from: u32,
        to: u32,
        pageout: bool,
    ) {
        self.lru_add_drain();
        let mut list: Vec<FolioId> = Vec::new();
        // The span of the PTEs made old, flushed as the mmu_gather finishes.
        let mut young: Option<(u32, u32)> = None;
        let mut i = from;
        while i < to {
            let pte = self.mms[mm as usize].vmas[vi].ptes[i as usize];
            if !pt::is_present(pte) {
                i += 1;
                continue;
            }
            let folio = self.mem.head_of(pt::pfn(pte));
            // page-cache folios, shmem's included, are left alone here
            if !self.folio_test_anon(folio) {
                i += 1;
                continue;
            }
            let nr = self.mem.nr_pages(folio);
            let vma_start = self.mms[mm as usize].vmas[vi].start;
            let first = self.mem.index(folio) - vma_start;
            if nr > 1 {
                let whole = first >= from
                    && first + nr <= to
                    && self.folio_pte_batch(mm, vi, first, first + nr, folio) == nr;
                let keep_whole = whole
                    && (pte & pt::PMD != 0 || self.generation().madv_pageout_large_folio_whole());
                if !keep_whole {
                    if self.mem.mapcount(folio) > nr || self.mem.test(folio, pg::SWAPCACHE) {
                        i += 1;
                        continue;
                    }
                    let mut tails = Vec::new();
                    self.split_folio_to_list(folio, &mut tails);
                    // Look at the same PTE again: it now maps a small folio.
                    continue;
                }
            }
            if self.mem.mapcount(folio) > nr {
                i = first + nr;
                continue;
            }
            if !pageout {
                let mut was_young = false;
                for p in
                    &mut self.mms[mm as usize].vmas[vi].ptes[first as usize..(first + nr) as usize]
                {
                    was_young |= *p & pt::YOUNG != 0;
                    *p &= !pt::YOUNG;
                }
                if was_young {
                    young = Some((young.map_or(first, |(lo, _)| lo), first + nr));
                }
            }
            self.mem.clear(folio, pg::REFERENCED);
            let active = self.mem.test(folio, pg::ACTIVE);
            if active {
                self.mem.set(folio, pg::WORKINGSET);
            }
            if self.mem.test(folio, pg::LRU) && pageout {
                self.lruvec_del_folio(folio);
                list.push(folio);
            } else if self.mem.test(folio, pg::LRU) && active {
                // lru_deactivate: to the head of the inactive list
                self.lruvec_del_folio(folio);
                self.mem.clear(folio, pg::ACTIVE);
                self.stat.count(super::vmstat::Vm::Pgdeactivate, nr as u64);
                self.lruvec_add_folio(folio);
            }
            i = first + nr;
        }
        if !list.is_empty() {
            self.reclaim_pages(&mut list);
        }
        if let Some((lo, hi)) = young {
            let start = self.mms[mm as usize].vmas[vi].start;
            self.flush_tlb_mm_range(mm, start + lo, (hi - lo) as u64, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::mm::folio::{content, pg};
    use crate::mm::pagetable as pt;
    use crate::mm::vmstat::Vm;

    #[test]
    fn madv_cold_moves_only_active_folios_and_counts_only_them() {
        let toml = r#"
name = "t"
[[machine.node]]
memory = "256M"
cpus = 1
[[task]]
name = "t"
ops = [{ op = "sleep", time = "1ms" }]
"#;
        let (mut k, t) = crate::mm::boot_for_test(toml, "v6.18");
        let mm = k.tasks[t as usize].mm.unwrap();
        let start = k.mmap_anon(mm, 4);
        for i in 0..4 {
            k.touch(mm, start + i, true, content::DATA_DEFAULT).unwrap();
        }
        let folio = |k: &crate::mm::Kernel, i: u32| {
            let vi = k.mms[mm as usize].find_vma(start).unwrap();
            pt::pfn(k.mms[mm as usize].vmas[vi].ptes[i as usize])
        };
        // page 3 is active; pages 0-2 are inactive, page 0 the oldest (at the tail)
        let active = folio(&k, 3);
        k.lru_add_drain();
        k.lruvec_del_folio(active);
        k.mem.set(active, pg::ACTIVE | pg::REFERENCED);
        k.lruvec_add_folio(active);
        let lv = k.lruvec_index(0, 0);
        let tail_before = k.lruvecs[lv].lists[0].tail;
        assert_eq!(tail_before, folio(&k, 0));
        k.mem.set(folio(&k, 1), pg::REFERENCED);
        let vi = k.mms[mm as usize].find_vma(start).unwrap();
        k.madvise_cold_or_pageout(mm, vi, 0, 4, false);
        assert_eq!(
            k.stat.get(Vm::Pgdeactivate),
            1,
            "only the active folio counts"
        );
        assert!(!k.mem.test(active, pg::ACTIVE) && k.mem.test(active, pg::WORKINGSET));
        assert_eq!(k.lruvecs[lv].lists[0].head, active, "to the inactive head");
        assert_eq!(
            k.lruvecs[lv].lists[0].tail, tail_before,
            "inactive ones stay in place"
        );
        assert!(
            !k.mem.test(folio(&k, 1), pg::REFERENCED),
            "PG_referenced cleared for all"
        );
        assert!(!k.mem.test(folio(&k, 1), pg::WORKINGSET));
    }
}
