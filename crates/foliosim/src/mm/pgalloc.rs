//! Page-table pages: the PTE, PMD and PUD tables and the PGD an address space needs, each a page
//! charged to the memcg of the task that makes it.
//!
//! Models mm/memory.c (v6.9–v6.18): __pte_alloc / __pmd_alloc / __pud_alloc when a fault finds
//! the table for its address missing; pagetable_alloc with GFP_PGTABLE_USER
//! (arch/x86/include/asm/pgalloc.h: a zeroed page with __GFP_ACCOUNT, so that
//! __memcg_kmem_charge_page charges the faulting task's memcg like any charge, reclaiming there
//! when it is full); the table do_huge_pmd_anonymous_page deposits beside a PMD-mapped THP (one
//! page per 2 MiB either way, so it is counted as that range's PTE table); copy_page_range
//! making the child's tables at fork, charged to the forking task; free_pgtables at munmap and
//! exit (a table goes when no mapping is left in the range it maps); and, from v6.14 on x86
//! (mm/pt_reclaim.c), the PTE tables MADV_DONTNEED empties: those whose whole 2 MiB range the
//! advice covers. A freed table's charge goes back through the CPU's charge stock
//! (obj_cgroup_uncharge_pages → refill_stock).
//! Live, a process that touches 400 MiB in a memcg has 852 KiB of kernel memory charged at its
//! peak (memory.kmem.max_usage_in_bytes on 6.18.44): 200 PTE tables and the levels above.
//! Left out: the RCU grace period before a freed table returns (MMU_GATHER_RCU_TABLE_FREE), the
//! node's free memory (a table is charged, not taken from the simulated allocator), 5-level
//! paging (the P4D folds into the PGD), the PGD's second page under page-table isolation, the
//! PGD charged at the first fault rather than at exec, a fork whose table charge fails (charged
//! anyway, where the kernel fails the fork), the slab objects a process charges (VMAs,
//! anon_vmas, its mm_struct), and mremap moving tables (a replayed range keeps the tables of its
//! address before the move).

use std::collections::BTreeSet;

use super::memory::{Gfp, Killed};
use super::vma::VM_SHARED;
use super::{Kernel, TimeKind};
use crate::machine::hw::Arch;

/// log2 of the pages one table maps, per level: PTE 512 pages (2 MiB), PMD 1 GiB, PUD 512 GiB.
const LEVEL_SHIFTS: [u32; 3] = [9, 18, 27];

/// An address space's page tables: for each level, the tables present, each named by the range
/// of table addresses it maps (table address >> the level's shift). A table address is the page
/// number the program sees (`Vma::table_vpn`).
#[derive(Debug, Default)]
pub struct PageTables {
    levels: [BTreeSet<u64>; 3],
    pgd: bool,
    /// The PTE table the last fault found or made: consecutive faults mostly share one.
    last_pte_table: Option<u64>,
}

impl PageTables {
    /// Pages the tables take, the PGD included.
    pub fn nr_pages(&self) -> u64 {
        self.levels.iter().map(|l| l.len() as u64).sum::<u64>() + self.pgd as u64
    }
}

impl Kernel {
    /// The tables the page at `vpn` of VMA `vi` needs, made where missing (pte_alloc and the
    /// levels above it). Err when a charge fails.
    pub(crate) fn pte_alloc(&mut self, mm: u32, vi: usize, vpn: u32) -> Result<(), Killed> {
        let tvpn = self.mms[mm as usize].vmas[vi].table_vpn(vpn);
        let pte_table = tvpn >> LEVEL_SHIFTS[0];
        let tables = &self.mms[mm as usize].page_tables;
        // a PTE table's levels above it exist as long as it does (they go only after it)
        if tables.last_pte_table == Some(pte_table) || tables.levels[0].contains(&pte_table) {
            self.mms[mm as usize].page_tables.last_pte_table = Some(pte_table);
            return Ok(());
        }
        if !self.mms[mm as usize].page_tables.pgd {
            self.pagetable_alloc(mm)?;
            self.mms[mm as usize].page_tables.pgd = true;
        }
        for level in (0..LEVEL_SHIFTS.len()).rev() {
            let table = tvpn >> LEVEL_SHIFTS[level];
            if !self.mms[mm as usize].page_tables.levels[level].contains(&table) {
                self.pagetable_alloc(mm)?;
                self.mms[mm as usize].page_tables.levels[level].insert(table);
            }
        }
        self.mms[mm as usize].page_tables.last_pte_table = Some(pte_table);
        Ok(())
    }

    /// One table page: allocated zeroed and charged to the mm's memcg.
    fn pagetable_alloc(&mut self, mm: u32) -> Result<(), Killed> {
        self.spend(TimeKind::PageAlloc, self.hw.page_alloc_ns);
        self.spend(TimeKind::Zeroing, self.hw.zero_page_ns);
        self.spend(TimeKind::MemcgCharge, self.hw.memcg_charge_ns);
        let memcg = self.mms[mm as usize].memcg;
        if memcg == 0 {
            self.memcgs[0].usage_pages += 1;
            return Ok(());
        }
        self.try_charge(memcg, 1, Gfp::USER).map_err(|()| Killed)
    }

    fn pagetable_free(&mut self, mm: u32) {
        let memcg = self.mms[mm as usize].memcg;
        if memcg == 0 {
            self.memcgs[0].usage_pages -= 1;
        } else {
            self.refill_stock(memcg, 1);
        }
    }

    /// free_pgtables once the table addresses [lo, hi) are unmapped: a whole VMA, already gone
    /// (`partial` None), or a part of VMA `partial`, which stays. Each table overlapping the
    /// range goes if no mapping is left in the range it maps.
    pub(crate) fn free_pgtables(&mut self, mm: u32, lo: u64, hi: u64, partial: Option<usize>) {
        for (level, &shift) in LEVEL_SHIFTS.iter().enumerate() {
            let tables: Vec<u64> = self.mms[mm as usize].page_tables.levels[level]
                .range(lo >> shift..=(hi - 1) >> shift)
                .copied()
                .collect();
            for table in tables {
                let (t_lo, t_hi) = (table << shift, (table + 1) << shift);
                if self.table_range_in_use(mm, t_lo, t_hi, partial.map(|vi| (vi, lo, hi))) {
                    continue;
                }
                self.mms[mm as usize].page_tables.levels[level].remove(&table);
                self.pagetable_free(mm);
            }
        }
        self.mms[mm as usize].page_tables.last_pte_table = None;
    }

    /// Whether a mapping is left in the table addresses [t_lo, t_hi): some VMA's range overlaps
    /// it, the part [lo, hi) of VMA `vi` that is being unmapped excepted.
    fn table_range_in_use(
        &self,
        mm: u32,
        t_lo: u64,
        t_hi: u64,
        unmapping: Option<(usize, u64, u64)>,
    ) -> bool {
        let overlaps = |a: u64, b: u64| a < b && a < t_hi && t_lo < b;
        self.mms[mm as usize].vmas.iter().enumerate().any(|(i, v)| {
            let (v_lo, v_hi) = v.table_range();
            match unmapping {
                Some((vi, lo, hi)) if vi == i => overlaps(v_lo, lo) || overlaps(hi, v_hi),
                _ => overlaps(v_lo, v_hi),
            }
        })
    }

    /// The pages [from, to) of VMA `vi` unmapped while the VMA stays (a replayed munmap of part
    /// of a simulated VMA, or the break moving down).
    pub(crate) fn free_pgtables_of_range(&mut self, mm: u32, vi: usize, from: u32, to: u32) {
        let v = &self.mms[mm as usize].vmas[vi];
        let (lo, hi) = (v.table_vpn(v.start + from), v.table_vpn(v.start + to));
        if lo < hi {
            self.free_pgtables(mm, lo, hi, Some(vi));
        }
    }

    /// MADV_DONTNEED of pages [from, to) of VMA `vi`: zap_page_range_single, and from v6.14 on
    /// x86 (mm/pt_reclaim.c) every PTE table whose whole range the advice covers is then empty,
    /// and goes; the flush then reaches lazy CPUs too, as after freeing tables at munmap.
    pub fn madvise_dontneed(&mut self, mm: u32, vi: usize, from: u32, to: u32) {
        let mut tables = Vec::new();
        if self.generation().has_pt_reclaim() && self.hw.arch == Arch::X86 {
            let v = &self.mms[mm as usize].vmas[vi];
            let (lo, hi) = (v.table_vpn(v.start + from), v.table_vpn(v.start + to));
            let shift = LEVEL_SHIFTS[0];
            let (first, end) = (lo.div_ceil(1 << shift), hi >> shift);
            if first < end {
                let pte_tables = &self.mms[mm as usize].page_tables.levels[0];
                tables.extend(pte_tables.range(first..end).copied());
            }
        }
        self.zap_range(mm, vi, from, to, !tables.is_empty());
        for table in tables {
            self.mms[mm as usize].page_tables.levels[0].remove(&table);
            self.mms[mm as usize].page_tables.last_pte_table = None;
            self.pagetable_free(mm);
        }
    }

    /// exit_mmap's free_pgtables over an address space with no VMA left, and the PGD.
    pub(crate) fn free_all_pgtables(&mut self, mm: u32) {
        let nr = self.mms[mm as usize].page_tables.nr_pages();
        self.mms[mm as usize].page_tables = PageTables::default();
        for _ in 0..nr {
            self.pagetable_free(mm);
        }
    }

    /// copy_page_range's tables for a forked child: the tables of the parent's ranges that the
    /// child's copied (private) VMAs map, charged to the parent's memcg as the forking task.
    pub(crate) fn fork_pgtables(&mut self, parent: u32, child: u32) {
        let mut tables = PageTables::default();
        for v in &self.mms[parent as usize].vmas {
            if v.flags & VM_SHARED != 0 || v.ptes.is_empty() {
                continue;
            }
            let (lo, hi) = v.table_range();
            let pte_tables = &self.mms[parent as usize].page_tables.levels[0];
            for &table in pte_tables.range(lo >> LEVEL_SHIFTS[0]..=(hi - 1) >> LEVEL_SHIFTS[0]) {
                let tvpn = table << LEVEL_SHIFTS[0];
                for (level, &shift) in LEVEL_SHIFTS.iter().enumerate() {
                    tables.levels[level].insert(tvpn >> shift);
                }
            }
        }
        tables.pgd = !tables.levels[0].is_empty();
        let nr = tables.nr_pages();
        self.mms[child as usize].page_tables = tables;
        for _ in 0..nr {
            if self.pagetable_alloc(child).is_err() {
                // The kernel fails the fork; the model charges the table anyway.
                let memcg = self.mms[child as usize].memcg;
                self.memcgs[memcg as usize].usage_pages += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::folio::content;

    /// A task in a 64 MiB memcg (zram swap, THP off), its mm and memcg.
    fn boot(profile: &str) -> (Kernel, u32, u16) {
        let (k, mm) = crate::mm::boot_zram_for_test(
            profile,
            Some("64M"),
            r#""/sys/kernel/mm/transparent_hugepage/enabled" = "never""#,
        );
        let memcg = k.mms[mm as usize].memcg;
        (k, mm, memcg)
    }

    fn write_all(k: &mut Kernel, mm: u32, start: u32, nr: u32) {
        for i in 0..nr {
            k.touch(mm, start + i, true, content::DATA_DEFAULT).unwrap();
        }
    }

    /// What the memcg's counter holds beyond `folio_pages`, its CPUs' stocks drained.
    fn charged_beyond(k: &mut Kernel, memcg: u16, folio_pages: u64) -> u64 {
        k.drain_all_stock(memcg);
        k.memcgs[memcg as usize].usage_pages - folio_pages
    }

    fn assert_consistent(k: &Kernel) {
        let v = crate::check::check(k);
        assert!(v.is_empty(), "{v:?}");
    }

    #[test]
    fn faults_charge_the_page_tables_and_munmap_and_exit_uncharge_them() {
        let (mut k, mm, memcg) = boot("v6.18");
        // 4 MiB, PMD-aligned: the PGD, a PUD, a PMD and two PTE tables.
        let first = k.mmap_anon(mm, 1024);
        write_all(&mut k, mm, first, 1024);
        assert_eq!(k.mms[mm as usize].page_tables.nr_pages(), 5);
        assert_eq!(charged_beyond(&mut k, memcg, 1024), 5);
        // The next mapping starts in the 2 MiB after them: one PTE table more.
        let second = k.mmap_anon(mm, 8);
        write_all(&mut k, mm, second, 8);
        assert_eq!(charged_beyond(&mut k, memcg, 1032), 6);
        assert_consistent(&k);
        // munmap frees the two PTE tables no mapping is left in; the PMD still maps `second`.
        k.munmap(mm, first);
        assert_eq!(charged_beyond(&mut k, memcg, 8), 4);
        assert_consistent(&k);
        k.exit_mmap(mm);
        assert_eq!(charged_beyond(&mut k, memcg, 0), 0);
        assert_consistent(&k);
    }

    #[test]
    fn a_forked_child_gets_tables_for_the_ranges_it_copies() {
        let (mut k, mm, memcg) = boot("v6.18");
        let start = k.mmap_anon(mm, 1024);
        write_all(&mut k, mm, start, 600);
        let child = k.fork_mm(mm, 0);
        // 600 pages of one mapping lie in two PTE tables; both sides have PGD, PUD, PMD, 2 PTE.
        assert_eq!(k.mms[child as usize].page_tables.nr_pages(), 5);
        assert_eq!(charged_beyond(&mut k, memcg, 600), 10);
        assert_consistent(&k);
    }

    #[test]
    fn madvise_dontneed_frees_the_pte_tables_it_empties_from_v6_14() {
        for (profile, left) in [("v6.18", 4), ("v6.12", 6)] {
            let (mut k, mm, memcg) = boot(profile);
            // 6 MiB: three PTE tables; DONTNEED of the first 4 MiB and a page empties two whole
            // tables, and only a page of the third.
            let start = k.mmap_anon(mm, 1536);
            write_all(&mut k, mm, start, 1536);
            assert_eq!(charged_beyond(&mut k, memcg, 1536), 6, "{profile}");
            let vi = k.mms[mm as usize].find_vma(start).unwrap();
            k.madvise_dontneed(mm, vi, 0, 1025);
            assert_eq!(charged_beyond(&mut k, memcg, 511), left, "{profile}");
            assert_consistent(&k);
            // The next write there makes a table again.
            k.touch(mm, start, true, content::DATA_DEFAULT).unwrap();
            assert_eq!(charged_beyond(&mut k, memcg, 512), 5.max(left), "{profile}");
        }
    }
}
