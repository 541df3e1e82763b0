//! Address spaces: `mm_struct`, VMAs with their page tables, anon_vmas, mmap/munmap and zap.
//!
//! Models mm/mmap.c (mmap placement, PMD alignment of large anonymous mappings since v6.7 and of
//! large file mappings by thp_get_unmapped_area), mm/memory.c zap_pte_range / zap_present_ptes
//! (batched by folio; a file folio's dirty and young PTE bits go to the folio), the anon_vma of
//! mm/rmap.c and a file's i_mmap (here a list of the VMAs mapping it, not an interval tree).
//! One anon_vma per mm: a fork links the child into its parent's anon_vma, which is what rmap
//! needs here. Left out: VMA merging/splitting (madvise flags apply to the whole VMA; mbind's
//! policies are page ranges inside it, see mm/mempolicy.rs), mremap, mprotect, mlock, and the
//! mmap_lock.

use super::filemap::FileId;
use super::folio::{pg, FolioId};
use super::pagetable::{self as pt, Pte};
use super::readahead::FileRaState;
use super::Kernel;

pub const VM_HUGEPAGE: u8 = 1 << 0;
pub const VM_NOHUGEPAGE: u8 = 1 << 1;
/// PROT_WRITE (every VMA is readable; anonymous ones are writable).
pub const VM_WRITE: u8 = 1 << 2;
/// PROT_EXEC.
pub const VM_EXEC: u8 = 1 << 3;
/// MAP_SHARED.
pub const VM_SHARED: u8 = 1 << 4;

/// What a file VMA maps: `vm_file` and `vm_pgoff`, and the struct file's readahead state
/// (`file->f_ra`; each mmap has its own struct file here).
#[derive(Clone, Copy, Debug)]
pub struct VmaFile {
    pub file: FileId,
    pub pgoff: u32,
    pub ra: FileRaState,
}

/// First virtual page number handed out by mmap (1 TiB): keeps every vpn within a `u32`.
const MMAP_BASE_VPN: u32 = 1 << 28;
pub const HPAGE_PMD_NR: u32 = 512;

pub struct Vma {
    pub start: u32,
    pub flags: u8,
    pub ptes: Vec<Pte>,
    /// Reads of this region are modelled per page (as Poisson processes): its handle in the
    /// kernel's `read_model` (see mm::ReadModel).
    pub poisson: Option<u32>,
    /// Memory policies set by mbind, by page range (see mm/mempolicy.rs); empty: none.
    pub policies: Vec<super::mempolicy::PolicyRange>,
    /// A file mapping; None for anonymous memory.
    pub file: Option<VmaFile>,
    /// What to add (wrapping) to a page number here to get the one the page tables are built
    /// for (mm/pgalloc.rs): 0, but for a replayed trace's mapping, the program's own address.
    pub table_vpn_offset: u64,
}

impl Vma {
    #[inline]
    pub fn end(&self) -> u32 {
        self.start + self.ptes.len() as u32
    }
    #[inline]
    pub fn contains(&self, vpn: u32) -> bool {
        vpn >= self.start && vpn < self.end()
    }
    /// The page number the page tables see for `vpn` (mm/pgalloc.rs).
    #[inline]
    pub fn table_vpn(&self, vpn: u32) -> u64 {
        (vpn as u64).wrapping_add(self.table_vpn_offset)
    }
    /// The page numbers [lo, hi) the page tables see for the whole VMA.
    pub fn table_range(&self) -> (u64, u64) {
        let lo = self.table_vpn(self.start);
        (lo, lo + self.ptes.len() as u64)
    }
    /// linear_page_index: the file page that `vpn` maps in this file VMA.
    #[inline]
    pub fn linear_page_index(&self, vpn: u32) -> u32 {
        self.file.expect("a file VMA").pgoff + (vpn - self.start)
    }
    /// The pages around `vpn` that the kernel would hold in one VMA after mbind's splits.
    #[inline]
    pub fn extent(&self, vpn: u32) -> (u32, u32) {
        let (start, end, _) =
            super::mempolicy::policy_extent(&self.policies, self.start, self.end(), vpn);
        (start, end)
    }
}

pub struct Mm {
    /// Sorted by start.
    pub vmas: Vec<Vma>,
    pub next_vpn: u32,
    pub memcg: u16,
    /// The anon_vma of the folios this mm creates.
    pub anon_vma: u32,
    /// Every anon_vma whose folios this mm may map: its own and its ancestors' (anon_vma_fork
    /// links a child into its parent's chain, so a grandparent's folios are found in a
    /// grandchild too).
    pub anon_vma_chain: Vec<u32>,
    /// MM_ANONPAGES, MM_FILEPAGES and MM_SWAPENTS.
    pub rss_anon: u64,
    pub rss_file: u64,
    pub swapents: u64,
    /// The task that owns this address space (for the OOM killer).
    pub owner: u32,
    /// Tasks sharing it (mm_users).
    pub users: u32,
    pub alive: bool,
    /// CPUs that may hold its translations (mm_cpumask).
    pub cpumask: super::tlb::CpuMask,
    /// When a flush next IPIs every CPU of the mask to trim it (context.next_trim_cpumask).
    pub next_trim_cpumask_ns: u64,
    /// mm->tlb_flush_batched: batched unmaps deferred, and how many of those are flushed.
    pub tlb_flush_batched_pending: u32,
    pub tlb_flush_batched_flushed: u32,
    /// NUMA scanning: when the next scan may start, where it resumes, full passes so far.
    pub numa_next_scan_ns: u64,
    pub numa_scan_offset: u32,
    pub numa_scan_seq: u32,
    /// The VMAs `find_vma` found last (hints, checked before use, so the VMAs may change under
    /// them): a replayed program's consecutive records go back and forth between a few VMAs
    /// (its stack, heap and data), and searching a hundred VMAs for each was a fifth of its
    /// replay time.
    pub recent_found: std::cell::Cell<RecentHits>,
    pub page_tables: super::pgalloc::PageTables,
}

impl Mm {
    #[inline]
    pub fn find_vma(&self, vpn: u32) -> Option<usize> {
        let mut recent = self.recent_found.get();
        if let Some(i) = recent.find(|i| self.vmas.get(i).is_some_and(|v| v.contains(vpn))) {
            self.recent_found.set(recent);
            return Some(i);
        }
        let i = self.vmas.partition_point(|v| v.end() <= vpn);
        let found = i < self.vmas.len() && self.vmas[i].contains(vpn);
        if found {
            recent.remember(i);
            self.recent_found.set(recent);
        }
        found.then_some(i)
    }
}

/// The last few indices a search found, most recent first: a cache in front of a search over a
/// sorted array, for lookups that go back and forth between a few of its entries.
#[derive(Clone, Copy, Debug, Default)]
pub struct RecentHits([usize; 4]);

impl RecentHits {
    /// The most recent index `hit` accepts, moved to the front.
    #[inline]
    pub fn find(&mut self, hit: impl Fn(usize) -> bool) -> Option<usize> {
        let j = self.0.iter().position(|&i| hit(i))?;
        self.0[..=j].rotate_right(1);
        Some(self.0[0])
    }

    /// Remembers `i` as the most recent, forgetting the oldest.
    #[inline]
    pub fn remember(&mut self, i: usize) {
        self.0.rotate_right(1);
        self.0[0] = i;
    }
}

/// The address spaces that may map folios of this anon_vma (the parent and its forked children).
pub struct AnonVma {
    pub mms: Vec<u32>,
}

impl Kernel {
    pub fn mm_create(&mut self, memcg: u16, owner: u32) -> u32 {
        let id = self.mms.len() as u32;
        let av = self.anon_vmas.len() as u32;
        self.anon_vmas.push(AnonVma { mms: vec![id] });
        self.mms.push(Mm {
            vmas: Vec::new(),
            next_vpn: MMAP_BASE_VPN,
            memcg,
            anon_vma: av,
            anon_vma_chain: vec![av],
            rss_anon: 0,
            rss_file: 0,
            swapents: 0,
            owner,
            users: 1,
            alive: true,
            cpumask: Default::default(),
            next_trim_cpumask_ns: self.clock_ns + super::tlb::TRIM_CPUMASK_INTERVAL_NS,
            tlb_flush_batched_pending: 0,
            tlb_flush_batched_flushed: 0,
            numa_next_scan_ns: self.clock_ns + self.spec.knobs.numa_scan_delay_ms * 1_000_000,
            numa_scan_offset: 0,
            numa_scan_seq: 0,
            recent_found: Default::default(),
            page_tables: Default::default(),
        });
        id
    }

    /// Anonymous private mmap of `nr_pages`; returns the first vpn. Mappings of at least a PMD are
    /// PMD-aligned, as `thp_get_unmapped_area` does for anonymous memory.
    pub fn mmap_anon(&mut self, mm: u32, nr_pages: u32) -> u32 {
        let m = &mut self.mms[mm as usize];
        let mut start = m.next_vpn;
        if nr_pages >= HPAGE_PMD_NR {
            start = start.next_multiple_of(HPAGE_PMD_NR);
        }
        // A guard gap keeps neighbouring mappings from merging into one aligned range.
        m.next_vpn = start + nr_pages + 1;
        Self::insert_vma(m, start, nr_pages, VM_WRITE, None);
        self.spend(super::TimeKind::PteUpdate, self.hw.pte_update_ns);
        start
    }

    /// Anonymous private mmap of `nr_pages` at `start`, which must lie above every mapping so
    /// far (MAP_FIXED_NOREPLACE in fresh address space): a replayed trace places its mappings
    /// itself, so that they keep the trace's alignment to a PMD (workload/trace_replay.rs).
    pub fn mmap_anon_at(&mut self, mm: u32, start: u32, nr_pages: u32) {
        let m = &mut self.mms[mm as usize];
        debug_assert!(start >= m.next_vpn);
        m.next_vpn = start + nr_pages + 1;
        Self::insert_vma(m, start, nr_pages, VM_WRITE, None);
        self.spend(super::TimeKind::PteUpdate, self.hw.pte_update_ns);
    }

    fn insert_vma(m: &mut Mm, start: u32, nr_pages: u32, flags: u8, file: Option<VmaFile>) {
        m.vmas.push(Vma {
            start,
            flags,
            ptes: {
                let mut ptes = Vec::with_capacity(nr_pages as usize);
                crate::sim::hugepage_hint(ptes.spare_capacity_mut());
                ptes.resize(nr_pages as usize, pt::PTE_NONE);
                ptes
            },
            poisson: None,
            policies: Vec::new(),
            file,
            table_vpn_offset: 0,
        });
        m.vmas.sort_by_key(|v| v.start);
    }

    /// mmap of `nr_pages` of a file from page `pgoff` (`flags`: VM_WRITE, VM_EXEC, VM_SHARED);
    /// returns the first vpn. Nothing is read or mapped until the first fault. A mapping of at
    /// least a PMD of a file with large folios is placed so that file offsets and addresses
    /// agree modulo the PMD size (thp_get_unmapped_area), which do_set_pmd needs.
    pub fn mmap_file(
        &mut self,
        mm: u32,
        file: FileId,
        pgoff: u32,
        nr_pages: u32,
        flags: u8,
    ) -> u32 {
        let large = self.files[file as usize].large_folios;
        let m = &mut self.mms[mm as usize];
        let mut start = m.next_vpn;
        if large && nr_pages >= HPAGE_PMD_NR {
            start = start.next_multiple_of(HPAGE_PMD_NR) + pgoff % HPAGE_PMD_NR;
        }
        m.next_vpn = start + nr_pages + 1;
        let vf = VmaFile {
            file,
            pgoff,
            ra: FileRaState::default(),
        };
        Self::insert_vma(m, start, nr_pages, flags, Some(vf));
        // vma_link_file: the file's i_mmap learns of the mapping.
        self.files[file as usize].i_mmap.push((mm, start));
        self.spend(super::TimeKind::PteUpdate, self.hw.pte_update_ns);
        start
    }

    pub fn munmap(&mut self, mm: u32, start: u32) {
        let Some(vi) = self.mms[mm as usize].find_vma(start) else {
            return;
        };
        let len = self.mms[mm as usize].vmas[vi].ptes.len() as u32;
        self.zap_range(mm, vi, 0, len, true);
        let v = self.mms[mm as usize].vmas.remove(vi);
        if len > 0 {
            let (lo, hi) = v.table_range();
            self.free_pgtables(mm, lo, hi, None);
        }
        if let Some(vf) = v.file {
            let f = &mut self.files[vf.file as usize];
            f.i_mmap.retain(|&m| m != (mm, v.start));
            // the last mapping of shared anonymous memory drops its object (shmem_evict_inode)
            if f.i_mmap.is_empty() && f.shmem.as_ref().is_some_and(|s| s.anon) {
                self.shmem_truncate(vf.file);
            }
        }
    }

    /// anon_vma->root: the anon_vma of the fork tree's first process, the last of the chain
    /// (a child's chain is its own anon_vma followed by its parent's chain).
    pub fn anon_vma_root(&self, mm: u32) -> u32 {
        *self.mms[mm as usize]
            .anon_vma_chain
            .last()
            .expect("an mm's chain holds at least its own anon_vma")
    }

    /// Unmaps every page of every VMA and frees the address space (exit_mmap).
    pub fn exit_mmap(&mut self, mm: u32) {
        while let Some(v) = self.mms[mm as usize].vmas.last() {
            let start = v.start;
            self.munmap(mm, start);
        }
        self.free_all_pgtables(mm);
        self.mms[mm as usize].alive = false;
        for av in std::mem::take(&mut self.mms[mm as usize].anon_vma_chain) {
            self.anon_vmas[av as usize].mms.retain(|&m| m != mm);
        }
    }

    /// zap_pte_range over pages [from, to) of a VMA: present PTEs drop their folio's mapping (a
    /// whole folio's PTEs at once), swap PTEs free their swap entry. `freed_tables`: the page
    /// tables go too (munmap, not MADV_DONTNEED), so the flush reaches lazy CPUs as well.
    pub fn zap_range(&mut self, mm: u32, vi: usize, from: u32, to: u32, freed_tables: bool) {
        self.flush_tlb_batched_pending(mm);
        let mut i = from;
        let mut nr_zapped = 0u64;
        let mut drained = false;
        while i < to {
            let pte = self.mms[mm as usize].vmas[vi].ptes[i as usize];
            if pt::is_present(pte) {
                if !drained {
                    // free_pages_and_swap_cache drains this CPU's lru_add batch before it puts
                    // the folios the zap gathered.
                    self.lru_add_drain();
                    drained = true;
                }
                let folio = self.mem.head_of(pt::pfn(pte));
                let nr = self.folio_pte_batch(mm, vi, i, to, folio);
                if pte & pt::PMD != 0 && nr < self.mem.nr_pages(folio) {
                    if !self.folio_test_anon(folio) {
                        // The whole PMD goes; look at the same PTE again, now none.
                        self.split_huge_pmd_file(mm, vi, folio);
                        continue;
                    }
                    self.split_huge_pmd(mm, vi, folio);
                }
                // get_and_clear_full_ptes: only a contpte block the batch covers in part unfolds.
                self.contpte_try_unfold_partial(mm, vi, i as usize, nr as usize);
                let ptes = &mut self.mms[mm as usize].vmas[vi].ptes;
                let (mut dirty, mut young) = (false, false);
                for p in &mut ptes[i as usize..(i + nr) as usize] {
                    dirty |= *p & pt::DIRTY != 0;
                    young |= *p & pt::YOUNG != 0;
                    *p = pt::PTE_NONE;
                }
                if !self.folio_test_anon(folio) {
                    // zap_present_folio_ptes: the file folio keeps what the PTEs knew.
                    self.mms[mm as usize].rss_file -= nr as u64;
                    if dirty {
                        self.folio_mark_dirty(folio);
                    }
                    if young {
                        self.folio_mark_accessed(folio);
                    }
                } else {
                    self.mms[mm as usize].rss_anon -= nr as u64;
                }
                self.folio_remove_rmap_ptes(folio, nr);
                nr_zapped += nr as u64;
                i += nr;
            } else if pt::is_zero_page(pte) {
                self.mms[mm as usize].vmas[vi].ptes[i as usize] = pt::PTE_NONE;
                i += 1;
            } else {
                if pt::is_swap(pte) {
                    self.mms[mm as usize].vmas[vi].ptes[i as usize] = pt::PTE_NONE;
                    self.mm_add_swapents(mm, -1);
                    self.free_swap_and_cache(pt::swap_device(pte), pt::swap_offset(pte));
                    nr_zapped += 1;
                }
                i += 1;
            }
        }
        if nr_zapped > 0 {
            self.spend(
                super::TimeKind::PteUpdate,
                nr_zapped * self.hw.pte_update_ns,
            );
            let start = self.mms[mm as usize].vmas[vi].start;
            self.flush_tlb_mm_range(mm, start + from, (to - from) as u64, freed_tables);
            for dev in 0..self.swap.len() as u32 {
                self.zram_sync_memory(dev);
            }
        }
    }

    /// __split_huge_pmd: a PMD mapping that is partly zapped becomes PTE mappings.
    pub fn split_huge_pmd(&mut self, mm: u32, vi: usize, folio: FolioId) {
        self.remap_pmd_with_ptes(mm, vi, folio);
        self.stat.count(super::vmstat::Vm::ThpSplitPmd, 1);
    }

    /// __split_huge_pmd_locked without freeze: the folio's PMD becomes PTEs written by one
    /// set_ptes (v6.9+), which on arm64 folds them into contpte blocks.
    pub fn remap_pmd_with_ptes(&mut self, mm: u32, vi: usize, folio: FolioId) {
        let (first, nr) = self.folio_ptes(folio, mm, vi);
        let v = &mut self.mms[mm as usize].vmas[vi];
        for p in &mut v.ptes[first..first + nr] {
            *p &= !pt::PMD;
        }
        self.arch_set_ptes(mm, vi, first, nr);
    }

    /// __split_huge_pmd in a file VMA: the PMD mapping of a page-cache folio is removed rather
    /// than turned into PTEs (its dirty and young bits go to the folio); faults map it again.
    pub fn split_huge_pmd_file(&mut self, mm: u32, vi: usize, folio: FolioId) {
        let (first, nr) = self.folio_ptes(folio, mm, vi);
        let v = &mut self.mms[mm as usize].vmas[vi];
        let (mut dirty, mut young) = (false, false);
        for p in &mut v.ptes[first..first + nr] {
            dirty |= *p & pt::DIRTY != 0;
            young |= *p & pt::YOUNG != 0;
            *p = pt::PTE_NONE;
        }
        let start = v.start;
        if dirty {
            self.folio_mark_dirty(folio);
        }
        if young {
            self.mem.set(folio, pg::REFERENCED);
        }
        self.mms[mm as usize].rss_file -= nr as u64;
        self.folio_remove_rmap_ptes(folio, nr as u32);
        self.stat.count(super::vmstat::Vm::ThpSplitPmd, 1);
        self.spend(super::TimeKind::PteUpdate, self.hw.pte_update_ns);
        self.flush_tlb_mm_range(mm, start + first as u32, nr as u64, false);
    }

    /// How many consecutive PTEs from `i` (below `to`) map consecutive pages of `folio`.
    pub fn folio_pte_batch(&self, mm: u32, vi: usize, i: u32, to: u32, folio: FolioId) -> u32 {
        let ptes = &self.mms[mm as usize].vmas[vi].ptes;
        let first = pt::pfn(ptes[i as usize]);
        let folio_end = folio + self.mem.nr_pages(folio);
        let mut n = 1;
        while i + n < to {
            let p = ptes[(i + n) as usize];
            if !pt::is_present(p) || pt::pfn(p) != first + n || first + n >= folio_end {
                break;
            }
            n += 1;
        }
        n
    }

    /// A folio lost `nr` PTE mappings. Frees an anonymous one when nothing maps it and the swap
    /// cache does not hold it; queues a large anonymous folio that is now partially mapped for
    /// deferred split. A file folio stays in the page cache.
    pub fn folio_remove_rmap_ptes(&mut self, folio: FolioId, nr: u32) {
        self.mem.add_mapcount(folio, -(nr as i32));
        if !self.folio_test_anon(folio) {
            return;
        }
        let mapcount = self.mem.mapcount(folio);
        if mapcount == 0 {
            if self.mem.test(folio, pg::SWAPCACHE) {
                // free_swap_cache: drop the cache copy unless swap PTEs still refer to it.
                self.try_to_reclaim_swap_folio(folio);
            } else {
                self.free_folio(folio);
            }
        } else if self.mem.order(folio) > 1 && !self.mem.test(folio, pg::DEFERRED) {
            self.deferred_split_folio(folio, true);
        }
    }

    /// MM_SWAPENTS changes; the memcg's count of swapped-out pages follows, and with it the peak
    /// of resident plus swapped pages.
    pub fn mm_add_swapents(&mut self, mm: u32, delta: i64) {
        let m = &mut self.mms[mm as usize];
        m.swapents = (m.swapents as i64 + delta) as u64;
        let cg = &mut self.memcgs[m.memcg as usize];
        cg.swap_pages = (cg.swap_pages as i64 + delta) as u64;
        cg.note_footprint();
    }
}
