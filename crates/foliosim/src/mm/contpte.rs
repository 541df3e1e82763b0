//! arm64 contiguous PTEs (contpte): 16 naturally aligned PTEs that map 16 contiguous pages of
//! one folio with the same attributes carry PTE_CONT, and the TLB holds them as one entry.
//!
//! Models arch/arm64/mm/contpte.c and the wrappers of arch/arm64/include/asm/pgtable.h
//! (v6.9-v6.12): contpte_set_ptes folds every whole aligned block of a multi-page set_ptes;
//! contpte_try_fold (automatic folding, from v6.9) folds a block when a single set_pte_at writes
//! its last PTE and the block is one folio, valid, contiguous and of one protection;
//! contpte_try_unfold repaints a block as plain PTEs before one of its PTEs changes
//! (ptep_get_and_clear for unmap, migration and split, the write bit of ptep_set_access_flags,
//! change_prot_numa); contpte_convert clears the block, flushes its 16 pages synchronously
//! (__flush_tlb_range: 16 TLBIs and a DSB) and rewrites it with the gathered young and dirty bits;
//! get_and_clear_full_ptes / clear_full_ptes unfold only a block a zap covers partly;
//! contpte_wrprotect_ptes leaves whole blocks folded (fork write-protects whole VMAs here);
//! contpte_ptep_clear_flush_young clears young on the block and issues 16 TLBIs without a DSB.
//! Only arm64 profiles (Arch::Arm64) have contiguous PTEs.
//! A PMD split (without freeze) writes its PTEs with one set_ptes, so they come out folded.
//! Left out: madvise's young clearing (madvise.rs) does not unfold, and kernel mappings.

use super::pagetable::{self as pt};
use super::Kernel;
use crate::machine::hw::Arch;

/// PTEs in a contpte block (CONT_PTES with 4K pages).
pub const CONT_PTES: u32 = 16;

impl Kernel {
    /// set_ptes's arm64 part, after `nr` PTEs from slot `from` of a VMA were written for one
    /// folio: contpte_set_ptes folds the whole aligned blocks of a batch; a single PTE goes
    /// through contpte_try_fold. Nothing on x86.
    pub fn arch_set_ptes(&mut self, mm: u32, vi: usize, from: usize, nr: usize) {
        if self.hw.arch != Arch::Arm64 {
            return;
        }
        if nr == 1 {
            self.contpte_try_fold(mm, vi, from);
            return;
        }
        let v = &mut self.mms[mm as usize].vmas[vi];
        let cont = CONT_PTES as usize;
        let mut idx = from;
        while idx + cont <= from + nr {
            let vpn = v.start + idx as u32;
            let first = v.ptes[idx];
            if vpn.is_multiple_of(CONT_PTES)
                && pt::pfn(first).is_multiple_of(CONT_PTES)
                && pt::is_accessible(first)
                && first & pt::PMD == 0
            {
                for p in &mut v.ptes[idx..idx + cont] {
                    *p |= pt::CONT;
                }
                idx += cont;
            } else {
                idx += 1;
            }
        }
    }

    /// contpte_try_fold: the PTE at slot `idx` was just set on its own. When it is the last of
    /// an aligned block whose 16 PTEs map one folio contiguously, valid and with one protection,
    /// the block is converted to a contpte block.
    fn contpte_try_fold(&mut self, mm: u32, vi: usize, idx: usize) {
        let v = &self.mms[mm as usize].vmas[vi];
        let pte = v.ptes[idx];
        let vpn = v.start + idx as u32;
        let last = CONT_PTES - 1;
        if vpn % CONT_PTES != last
            || pt::pfn(pte) % CONT_PTES != last
            || !pt::is_accessible(pte)
            || pte & (pt::CONT | pt::PMD) != 0
            || idx < last as usize
        {
            return;
        }
        let first = idx - last as usize;
        let base = pt::pfn(pte) - last;
        let folio = self.mem.head_of(pt::pfn(pte));
        if folio > base || folio + self.mem.nr_pages(folio) <= pt::pfn(pte) {
            return;
        }
        // Access and dirty bits do not count: the block gets their union.
        let prot = |p: pt::Pte| p & !(pt::YOUNG | pt::DIRTY | (u32::MAX as u64) << 32);
        let same = v.ptes[first..=idx].iter().enumerate().all(|(i, &p)| {
            pt::is_present(p) && pt::pfn(p) == base + i as u32 && prot(p) == prot(pte)
        });
        if same {
            self.contpte_convert(mm, vi, first, true);
        }
    }

    /// contpte_try_unfold: if the PTE at slot `idx` is part of a contpte block, the block becomes
    /// 16 plain PTEs (with a synchronous flush) before the PTE is changed.
    pub fn contpte_try_unfold(&mut self, mm: u32, vi: usize, idx: usize) {
        if self.mms[mm as usize].vmas[vi].ptes[idx] & pt::CONT != 0 {
            let first = self.contpte_block_start(mm, vi, idx);
            self.contpte_convert(mm, vi, first, false);
        }
    }

    /// The slot of the first PTE of the aligned block that holds slot `idx` (blocks are aligned
    /// in the address space, not in the VMA).
    fn contpte_block_start(&self, mm: u32, vi: usize, idx: usize) -> usize {
        let vpn = self.mms[mm as usize].vmas[vi].start + idx as u32;
        idx - (vpn % CONT_PTES) as usize
    }

    /// contpte_try_unfold_partial: a batch of `nr` PTEs from slot `from` is about to be cleared;
    /// blocks it covers only in part are unfolded, whole blocks are cleared as they are.
    pub fn contpte_try_unfold_partial(&mut self, mm: u32, vi: usize, from: usize, nr: usize) {
        let vpn = self.mms[mm as usize].vmas[vi].start + from as u32;
        if !vpn.is_multiple_of(CONT_PTES) || nr < CONT_PTES as usize {
            self.contpte_try_unfold(mm, vi, from);
        }
        if !(vpn + nr as u32).is_multiple_of(CONT_PTES) {
            self.contpte_try_unfold(mm, vi, from + nr - 1);
        }
    }

    /// contpte_convert: the aligned block from slot `first` is cleared, its 16 pages flushed
    /// (__flush_tlb_range with its DSB) and rewritten with the union of their young and dirty
    /// bits, folded (`cont`) or not.
    fn contpte_convert(&mut self, mm: u32, vi: usize, first: usize, cont: bool) {
        let v = &mut self.mms[mm as usize].vmas[vi];
        let block = &mut v.ptes[first..first + CONT_PTES as usize];
        let gathered = block
            .iter()
            .fold(0, |a, &p| a | (p & (pt::YOUNG | pt::DIRTY)));
        for p in block.iter_mut() {
            *p = if cont { *p | pt::CONT } else { *p & !pt::CONT } | gathered;
        }
        let vpn = v.start + first as u32;
        self.spend(
            super::TimeKind::PteUpdate,
            CONT_PTES as u64 * self.hw.pte_update_ns,
        );
        self.flush_tlb_mm_range(mm, vpn, CONT_PTES as u64, false);
    }

    /// ptep_clear_flush_young's arm64 TLB maintenance, before folio_referenced clears the young
    /// bits of `folio` in slots [from, from + nr): a TLBI without a DSB for each young plain PTE,
    /// and 16 for each contpte block with a young PTE (contpte_ptep_clear_flush_young).
    pub fn arch_clear_flush_young(
        &mut self,
        mm: u32,
        vi: usize,
        from: usize,
        nr: usize,
        folio: u32,
    ) {
        if self.hw.arch != Arch::Arm64 {
            return;
        }
        let end = folio + self.mem.nr_pages(folio);
        let start = self.mms[mm as usize].vmas[vi].start;
        let mut flushed_block = usize::MAX;
        for idx in from..from + nr {
            let p = self.mms[mm as usize].vmas[vi].ptes[idx];
            if !pt::maps_pfn_in(p, folio, end) || p & pt::YOUNG == 0 {
                continue;
            }
            if p & pt::CONT != 0 {
                let first = self.contpte_block_start(mm, vi, idx);
                if first != flushed_block {
                    flushed_block = first;
                    self.tlbi_vale1is(mm, start + first as u32, CONT_PTES);
                }
            } else {
                self.tlbi_vale1is(mm, start + idx as u32, 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::folio::content;
    use crate::mm::tlb::tests::boot;

    fn ptes(k: &Kernel, mm: u32, vpn: u32, n: u32) -> Vec<pt::Pte> {
        let vi = k.mms[mm as usize].find_vma(vpn).unwrap();
        let from = (vpn - k.mms[mm as usize].vmas[vi].start) as usize;
        k.mms[mm as usize].vmas[vi].ptes[from..from + n as usize].to_vec()
    }

    fn folded(k: &Kernel, mm: u32, vpn: u32) -> bool {
        ptes(k, mm, vpn, CONT_PTES)
            .iter()
            .all(|&p| p & pt::CONT != 0)
    }

    /// The cost of one contpte_convert: 16 PTE rewrites, 16 TLBIs and one DSB.
    fn convert_ns(k: &Kernel) -> u64 {
        CONT_PTES as u64 * (k.hw.pte_update_ns + k.hw.tlbi_broadcast_ns) + k.hw.dsb_ish_ns
    }

    #[test]
    fn a_fault_maps_an_aligned_64k_folio_folded_and_the_tlb_holds_it_once() {
        let (mut k, mm, start) = boot("arm64-altra");
        k.touch(mm, start + 20, true, content::DATA_DEFAULT)
            .unwrap();
        assert!(folded(&k, mm, start + 16));
        assert!(!folded(&k, mm, start) && ptes(&k, mm, start, 16).iter().all(|&p| p == 0));
        // The fault filled one contpte entry: every page of the block hits it.
        assert_eq!(k.tlb_access(mm, start + 31, false, true, false), None);
        // x86 has no contiguous bit.
        let (mut k, mm, start) = boot("x86-server");
        k.touch(mm, start + 20, true, content::DATA_DEFAULT)
            .unwrap();
        assert!(ptes(&k, mm, start + 16, 16)
            .iter()
            .all(|&p| pt::is_present(p) && p & pt::CONT == 0));
    }

    #[test]
    fn changing_one_pte_unfolds_the_block_with_one_synchronous_flush() {
        let (mut k, mm, start) = boot("arm64-altra");
        k.touch(mm, start, true, content::DATA_DEFAULT).unwrap();
        k.touch(mm, start + 16, true, content::DATA_DEFAULT)
            .unwrap();
        let vi = k.mms[mm as usize].find_vma(start).unwrap();
        // Hardware set the dirty bit of one PTE only; the unfolded PTEs all get it.
        for p in &mut k.mms[mm as usize].vmas[vi].ptes[0..32] {
            *p &= !pt::DIRTY;
        }
        k.mms[mm as usize].vmas[vi].ptes[3] |= pt::DIRTY;
        let t0 = k.clock_ns;
        k.contpte_try_unfold(mm, vi, 5);
        assert_eq!(k.clock_ns - t0, convert_ns(&k));
        assert!(ptes(&k, mm, start, 16)
            .iter()
            .all(|&p| p & (pt::CONT | pt::DIRTY) == pt::DIRTY));
        // Unfolded already: nothing more to do.
        let t0 = k.clock_ns;
        k.contpte_try_unfold(mm, vi, 6);
        assert_eq!(k.clock_ns, t0);
        // MADV_DONTNEED of one page of each block: only the folded one pays the unfold.
        let t0 = k.clock_ns;
        k.zap_range(mm, vi, 7, 8, false);
        let plain_ns = k.clock_ns - t0;
        let t0 = k.clock_ns;
        k.zap_range(mm, vi, 23, 24, false);
        assert_eq!(k.clock_ns - t0, plain_ns + convert_ns(&k));
        assert!(!folded(&k, mm, start + 16));
    }

    #[test]
    fn a_pmd_split_maps_the_ptes_folded() {
        let (mut k, mm, start) = boot("arm64-altra");
        k.touch(mm, start, true, content::DATA_DEFAULT).unwrap();
        let vi = k.mms[mm as usize].find_vma(start).unwrap();
        // Stand-in for a PMD mapping: the simulator keeps a PMD's PTEs with the PMD bit.
        for p in &mut k.mms[mm as usize].vmas[vi].ptes[0..16] {
            *p = (*p & !pt::CONT) | pt::PMD;
        }
        let folio = k.mem.head_of(pt::pfn(ptes(&k, mm, start, 1)[0]));
        // __split_huge_pmd_locked's set_ptes folds without a flush.
        let t0 = k.clock_ns;
        k.remap_pmd_with_ptes(mm, vi, folio);
        assert_eq!(k.clock_ns, t0);
        assert!(ptes(&k, mm, start, 16)
            .iter()
            .all(|&p| p & (pt::PMD | pt::CONT) == pt::CONT));
    }

    #[test]
    fn blocks_are_aligned_in_the_address_space_not_in_the_vma() {
        let (mut k, mm, _) = boot("arm64-altra");
        let start = k.mmap_anon(mm, 64);
        assert_ne!(start % CONT_PTES, 0);
        let block = start.next_multiple_of(CONT_PTES);
        k.touch(mm, block + 3, true, content::DATA_DEFAULT).unwrap();
        assert!(folded(&k, mm, block));
        let vi = k.mms[mm as usize].find_vma(start).unwrap();
        let idx = (block - start) as usize;
        // A one-page zap at the block's last page unfolds exactly that block.
        k.zap_range(mm, vi, idx as u32 + 15, idx as u32 + 16, false);
        let block_ptes = ptes(&k, mm, block, 15);
        assert!(block_ptes
            .iter()
            .all(|&p| pt::is_present(p) && p & pt::CONT == 0));
    }

    #[test]
    fn a_zap_of_a_whole_block_clears_it_without_unfolding() {
        let (mut k, mm, start) = boot("arm64-altra");
        k.touch(mm, start, true, content::DATA_DEFAULT).unwrap();
        k.touch(mm, start + 16, true, content::DATA_DEFAULT)
            .unwrap();
        let vi = k.mms[mm as usize].find_vma(start).unwrap();
        k.contpte_try_unfold(mm, vi, 0);
        let t0 = k.clock_ns;
        k.zap_range(mm, vi, 0, 16, false);
        let plain_ns = k.clock_ns - t0;
        let t0 = k.clock_ns;
        k.zap_range(mm, vi, 16, 32, false);
        assert_eq!(k.clock_ns - t0, plain_ns);
        assert!(ptes(&k, mm, start, 32).iter().all(|&p| p == pt::PTE_NONE));
    }

    #[test]
    fn setting_the_last_pte_of_a_matching_block_folds_it() {
        let (mut k, mm, start) = boot("arm64-altra");
        k.touch(mm, start, true, content::DATA_DEFAULT).unwrap();
        let vi = k.mms[mm as usize].find_vma(start).unwrap();
        k.contpte_try_unfold(mm, vi, 0);
        // One PTE with another protection: no fold.
        k.mms[mm as usize].vmas[vi].ptes[4] &= !pt::WRITE;
        let t0 = k.clock_ns;
        k.arch_set_ptes(mm, vi, 15, 1);
        assert_eq!(k.clock_ns, t0);
        assert!(!folded(&k, mm, start));
        // All alike: folding is a contpte_convert, flush included. Only the last PTE tries.
        k.mms[mm as usize].vmas[vi].ptes[4] |= pt::WRITE;
        k.arch_set_ptes(mm, vi, 14, 1);
        assert!(!folded(&k, mm, start));
        k.arch_set_ptes(mm, vi, 15, 1);
        assert_eq!(k.clock_ns - t0, convert_ns(&k));
        assert!(folded(&k, mm, start));
    }

    #[test]
    fn swap_out_unfolds_each_block_once_then_batches_its_tlbis() {
        let (mut k, mm, start) = boot("arm64-altra");
        k.touch(mm, start, true, content::DATA_DEFAULT).unwrap();
        let vi = k.mms[mm as usize].find_vma(start).unwrap();
        let folio = k.mem.head_of(pt::pfn(ptes(&k, mm, start, 1)[0]));
        // Reclaim's rmap walk for references clears young with a TLBI per block, no DSB.
        let t0 = k.clock_ns;
        k.arch_clear_flush_young(mm, vi, 0, 16, folio);
        assert_eq!(k.clock_ns - t0, CONT_PTES as u64 * k.hw.tlbi_broadcast_ns);
        // try_to_migrate (the unmap of a split) clears the PTEs one by one: one unfold, then
        // a deferred TLBI per PTE.
        let mut entries = Vec::new();
        let t0 = k.clock_ns;
        k.try_to_migrate(folio, &mut entries);
        assert_eq!(entries.len(), 16);
        let per_pte = k.hw.pte_update_ns + k.hw.tlbi_broadcast_ns;
        assert_eq!(
            k.clock_ns - t0,
            convert_ns(&k) + 16 * per_pte + k.hw.rmap_walk_ns
        );
        assert!(k.tlb_batch.flush_required);
        // remove_migration_ptes puts them back one by one: the last one folds the block again.
        let t0 = k.clock_ns;
        for e in &entries {
            k.mms[mm as usize].vmas[vi].ptes[e.idx] = e.pte & !pt::CONT;
            k.arch_set_ptes(mm, vi, e.idx, 1);
        }
        assert_eq!(k.clock_ns - t0, convert_ns(&k));
        assert!(folded(&k, mm, start));
    }
}
