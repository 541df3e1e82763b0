//! Page faults: anonymous faults with the mTHP order choice, swap-in, copy-on-write, file
//! faults, fork.
//!
//! Models mm/memory.c (v6.9–v6.18): handle_mm_fault → do_anonymous_page / alloc_anon_folio
//! (highest allowed order first, naturally aligned, inside the VMA, all PTEs none, fall back on
//! allocation or memcg-charge failure), do_huge_pmd_anonymous_page for the PMD order, read faults
//! mapping the zero page, do_swap_page (swap cache, the SWP_SYNCHRONOUS_IO bypass, and from v6.12
//! mTHP swap-in on that path, falling back one enabled order at a time), do_wp_page
//! (wp_page_copy, wp_page_shared for MAP_SHARED files) and copy_page_range. Every folio is
//! allocated by vma_alloc_folio, placed by the VMA's memory policy (mm/mempolicy.rs), and a
//! fault's folio stays inside the VMA piece its policy covers.
//! File VMAs: do_fault → do_read_fault (do_fault_around over
//! fault_around_bytes, 64 KiB, then filemap_fault and finish_fault mapping one page, or a PMD
//! through do_set_pmd), do_cow_fault (an order-0 anonymous copy) and do_shared_fault (the
//! filesystem's page_mkwrite dirties the folio; read faults map shared pages read-only so that
//! the first write is seen, as with ext4 or xfs). Left out: userfaultfd, the huge zero page's
//! own folio, swap readahead, mapping a whole large folio found in the swap cache, shmem, and
//! fork copying the PTEs of a private file VMA that has no anonymous page yet (they are copied).

use super::folio::{content, pg, FolioId};
use super::pagetable::{self as pt};
use super::vma::{HPAGE_PMD_NR, VM_HUGEPAGE, VM_NOHUGEPAGE, VM_SHARED};
use super::vmstat::{Memcg, Mthp, Vm};
use super::{Kernel, TimeKind};
use crate::scenario::knobs::{ThpDefrag, ThpEnabled, PMD_ORDER};

/// highest_order (include/linux/huge_mm.h): the highest order set in a bitmask of orders; 0 for
/// none.
pub(crate) fn highest_order(orders: u32) -> u32 {
    31u32.saturating_sub(orders.leading_zeros())
}

/// The task was chosen by the OOM killer while faulting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Killed;

/// What an allocation may do to find memory (the bits of gfp_t that matter here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gfp {
    pub direct_reclaim: bool,
    pub kswapd_reclaim: bool,
    /// Keep retrying reclaim and end in the OOM killer (not __GFP_NORETRY / costly orders).
    pub retry: bool,
    /// __GFP_NORETRY: a memcg charge gives up after one reclaim and a drain of the stocks
    /// (try_charge_memcg), where a costly order without it retries MAX_RECLAIM_RETRIES times.
    pub noretry: bool,
}

impl Gfp {
    /// GFP_HIGHUSER_MOVABLE.
    pub const USER: Gfp = Gfp {
        direct_reclaim: true,
        kswapd_reclaim: true,
        retry: true,
        noretry: false,
    };
}

impl Kernel {
    /// One access by the current task to the page at `vpn`. Resident pages cost nothing here (the
    /// caller charges the access itself); anything else goes through the fault handler.
    #[inline]
    pub fn touch(&mut self, mm: u32, vpn: u32, write: bool, data: u8) -> Result<(), Killed> {
        let Some(vi) = self.mms[mm as usize].find_vma(vpn) else {
            return Ok(());
        };
        let idx = (vpn - self.mms[mm as usize].vmas[vi].start) as usize;
        let pte = self.mms[mm as usize].vmas[vi].ptes[idx];
        let hit = if write {
            pt::is_accessible(pte) && pte & pt::WRITE != 0
        } else {
            pt::is_accessible(pte) || pt::is_zero_page(pte)
        };
        if !hit {
            let fault = self.handle_mm_fault(mm, vi, vpn, write);
            self.tasks[self.current as usize].fault_after_reclaim = false;
            fault?;
        }
        let pte = self.mms[mm as usize].vmas[vi].ptes[idx];
        if !hit && pt::is_present(pte) {
            let pfn = pt::pfn(pte);
            let folio = self.mem.head_of(pfn);
            let first = vpn.saturating_sub(pfn - folio);
            self.tasks[self.current as usize].faulted_folio =
                (mm, first, first + self.mem.nr_pages(folio));
        }
        let (huge, cont) = (pte & pt::PMD != 0, pte & pt::CONT != 0);
        let walk_ns = self.tlb_access(mm, vpn, huge, cont, write);
        if let Some(ns) = walk_ns {
            if !self.tasks[self.current as usize].page_walks_in_user_time {
                self.spend(TimeKind::TlbMiss, ns);
            }
        }
        let pte = &mut self.mms[mm as usize].vmas[vi].ptes[idx];
        if pt::is_present(*pte) {
            // The CPU sets the accessed bit when a page walk fills the TLB (a fault's retry
            // walks too); a hit does not look at the PTE. So a young bit that x86 reclaim clears
            // without a flush (ptep_clear_flush_young) stays clear while the translation is
            // cached; arm64 flushes as it clears (arch_clear_flush_young).
            if walk_ns.is_some() || !hit {
                *pte |= pt::YOUNG;
            }
            if write {
                *pte |= pt::DIRTY;
                let pfn = pt::pfn(*pte);
                self.mem.pages[pfn as usize].content = data;
            }
        }
        Ok(())
    }

    pub fn handle_mm_fault(
        &mut self,
        mm: u32,
        vi: usize,
        vpn: u32,
        write: bool,
    ) -> Result<(), Killed> {
        self.stat.count(Vm::Pgfault, 1);
        let memcg = self.mms[mm as usize].memcg;
        self.memcgs[memcg as usize].count(Memcg::Pgfault, 1);
        self.spend(TimeKind::FaultEntry, self.hw.fault_entry_ns);
        let idx = (vpn - self.mms[mm as usize].vmas[vi].start) as usize;
        let pte = self.mms[mm as usize].vmas[vi].ptes[idx];
        if pte == pt::PTE_NONE {
            // __pte_alloc: the tables this address needs, charged before the page they map.
            self.pte_alloc(mm, vi, vpn)?;
        }
        if pt::is_present(pte) && pte & pt::PROTNONE != 0 {
            self.do_numa_page(mm, vi, vpn);
            let pte = self.mms[mm as usize].vmas[vi].ptes[idx];
            if write && pt::is_present(pte) && pte & pt::WRITE == 0 {
                return self.do_wp_page(mm, vi, vpn, pte);
            }
            Ok(())
        } else if pt::is_swap(pte) {
            self.do_swap_page(mm, vi, vpn, pte, write)
        } else if pt::is_present(pte) {
            self.do_wp_page(mm, vi, vpn, pte)
        } else if self.mms[mm as usize].vmas[vi].file.is_some() {
            self.do_fault(mm, vi, vpn, write)
        } else if pt::is_zero_page(pte) || write {
            self.do_anonymous_page(mm, vi, vpn, pt::is_zero_page(pte))
        } else {
            // A read of never-written anonymous memory maps the shared zero page.
            self.mms[mm as usize].vmas[vi].ptes[idx] = pt::ZERO_PAGE;
            self.spend(TimeKind::PteUpdate, self.hw.pte_update_ns);
            Ok(())
        }
    }

    /// Whether an access to `vpn` will fault and charge a new anonymous folio: a write to a
    /// never-written page or to the zero page, a swap-in of a small folio that the swap cache
    /// cannot serve, or a write to a page someone else maps too (do_wp_page's copy). Page-cache
    /// and NUMA-hinting faults and PMD mappings are not counted.
    pub(crate) fn anon_fault_charges(&self, mm: u32, vpn: u32, write: bool) -> bool {
        let m = &self.mms[mm as usize];
        let Some(vi) = m.find_vma(vpn) else {
            return false;
        };
        let v = &m.vmas[vi];
        if v.file.is_some() {
            return false;
        }
        let pte = v.ptes[(vpn - v.start) as usize];
        if pt::is_swap(pte) {
            // alloc_swap_folio reads the PTEs around for a large folio's order before it
            // charges, and a reclaim run ahead could change them: such a fault reclaims inside
            if self.swaps_in_large_folios_now() && self.anon_thp_orders(v.flags) != 0 {
                return false;
            }
            let (dev, off) = (pt::swap_device(pte), pt::swap_offset(pte));
            return self.swap_cache_lookup(dev, off).is_none();
        }
        if !write || pte & (pt::PROTNONE | pt::PMD | pt::WRITE) != 0 {
            return false;
        }
        if !pt::is_present(pte) {
            return true;
        }
        let folio = self.mem.head_of(pt::pfn(pte));
        self.folio_test_anon(folio)
            && (self.mem.mapcount(folio) != 1 || self.mem.test(folio, pg::SWAPCACHE))
    }

    /// Whether a swap-in may bring a large folio back: from v6.12, and never once zswap was on
    /// (zswap_never_enabled).
    fn swaps_in_large_folios_now(&self) -> bool {
        self.generation().swaps_in_large_folios() && !self.zswap.ever_enabled
    }

    /// Orders above 0 that the knobs and the VMA allow (thp_vma_allowable_orders), as a bitmask.
    pub fn anon_thp_orders(&self, vma_flags: u8) -> u32 {
        if vma_flags & VM_NOHUGEPAGE != 0 {
            return 0;
        }
        let madvised = vma_flags & VM_HUGEPAGE != 0;
        let knobs = &self.spec.knobs;
        let allowed = |e: ThpEnabled| match e {
            ThpEnabled::Always => true,
            ThpEnabled::Madvise => madvised,
            ThpEnabled::Never | ThpEnabled::Inherit => false,
        };
        let mut mask = 0;
        for order in crate::scenario::knobs::ANON_ORDERS {
            let e = match knobs.mthp_enabled[order] {
                ThpEnabled::Inherit => knobs.thp_enabled,
                e => e,
            };
            if allowed(e) {
                mask |= 1 << order;
            }
        }
        mask
    }

    /// vma_thp_gfp_mask: what a THP/mTHP allocation may do, by the defrag knob.
    pub fn thp_gfp(&self, vma_flags: u8) -> Gfp {
        let madvised = vma_flags & VM_HUGEPAGE != 0;
        let (direct, kswapd) = match self.spec.knobs.thp_defrag {
            ThpDefrag::Always => (true, false),
            ThpDefrag::Defer => (false, true),
            ThpDefrag::DeferMadvise => (madvised, !madvised),
            ThpDefrag::Madvise => (madvised, false),
            ThpDefrag::Never => (false, false),
        };
        Gfp {
            direct_reclaim: direct,
            kswapd_reclaim: kswapd,
            retry: false,
            // defrag=always adds __GFP_NORETRY where the VMA was not madvised
            noretry: self.spec.knobs.thp_defrag == ThpDefrag::Always && !madvised,
        }
    }

    fn do_anonymous_page(
        &mut self,
        mm: u32,
        vi: usize,
        vpn: u32,
        from_zero_page: bool,
    ) -> Result<(), Killed> {
        let (vma_start, vma_flags) = {
            let v = &self.mms[mm as usize].vmas[vi];
            (v.start, v.flags)
        };
        // A folio stays inside the VMA (the piece of it that mbind's policy covers).
        let (extent_start, extent_end) = self.mms[mm as usize].vmas[vi].extent(vpn);
        // A write to the zero page is a copy-on-write of it: always a small folio.
        let orders = if from_zero_page {
            0
        } else {
            self.anon_thp_orders(vma_flags)
        };
        let memcg = self.mms[mm as usize].memcg;
        let mut order = 32 - orders.leading_zeros();
        while order > 0 {
            order -= 1;
            if orders & (1 << order) == 0 || order == 0 {
                continue;
            }
            let nr = 1u32 << order;
            let base = vpn & !(nr - 1);
            if base < extent_start || base + nr > extent_end {
                continue;
            }
            let ptes = &self.mms[mm as usize].vmas[vi].ptes;
            let from = (base - vma_start) as usize;
            if ptes[from..from + nr as usize]
                .iter()
                .any(|&p| p != pt::PTE_NONE)
            {
                continue;
            }
            let gfp = self.thp_gfp(vma_flags);
            let is_pmd = order as usize == PMD_ORDER;
            let Some(pfn) = self.vma_alloc_folio(gfp, order, mm, vi, base) else {
                self.stat.count_mthp(order, Mthp::AnonFaultFallback);
                if is_pmd {
                    self.stat.count(Vm::ThpFaultFallback, 1);
                }
                continue;
            };
            let av = self.mms[mm as usize].anon_vma;
            self.mem.prep_folio(pfn, order, av, memcg, base);
            if self.mem_cgroup_charge(pfn, memcg, gfp).is_err() {
                self.stat.count_mthp(order, Mthp::AnonFaultFallbackCharge);
                self.stat.count_mthp(order, Mthp::AnonFaultFallback);
                if is_pmd {
                    self.stat.count(Vm::ThpFaultFallback, 1);
                    self.stat.count(Vm::ThpFaultFallbackCharge, 1);
                }
                self.mem.clear_folio(pfn);
                self.free_pages(pfn, order);
                continue;
            }
            self.stat.count_mthp(order, Mthp::AnonFaultAlloc);
            if is_pmd {
                self.stat.count(Vm::ThpFaultAlloc, 1);
            }
            self.map_new_anon_folio(mm, vi, base, pfn, is_pmd);
            if is_pmd
                && self.generation().has_thp_underused_shrinker()
                && self.spec.knobs.shrink_underused
            {
                // Queued at fault so that the underused-THP shrinker can look at it.
                self.deferred_split_folio(pfn, false);
            }
            return Ok(());
        }
        let pfn = self.alloc_anon_page(mm, vi, vpn, memcg)?;
        self.map_new_anon_folio(mm, vi, vpn, pfn, false);
        Ok(())
    }

    /// An order-0 anonymous folio for `vpn`, placed by the VMA's policy and charged to `memcg`
    /// (vma_alloc_folio + mem_cgroup_charge); freed again if the charge fails.
    fn alloc_anon_page(
        &mut self,
        mm: u32,
        vi: usize,
        vpn: u32,
        memcg: u16,
    ) -> Result<FolioId, Killed> {
        let pfn = self
            .vma_alloc_folio(Gfp::USER, 0, mm, vi, vpn)
            .ok_or(Killed)?;
        let av = self.mms[mm as usize].anon_vma;
        if !self.charge_new_folio(pfn, 0, av, memcg, vpn, Gfp::USER) {
            return Err(Killed);
        }
        Ok(pfn)
    }

    /// Zero-fills a new anonymous folio, maps it writable at `base` and puts it on the LRU.
    fn map_new_anon_folio(&mut self, mm: u32, vi: usize, base: u32, folio: FolioId, pmd: bool) {
        let nr = self.mem.nr_pages(folio);
        for i in 0..nr {
            self.mem.pages[(folio + i) as usize].content = content::ZERO;
        }
        self.mem.set(folio, pg::SWAPBACKED);
        let flag = pt::WRITE | if pmd { pt::PMD } else { 0 };
        let v = &mut self.mms[mm as usize].vmas[vi];
        let from = (base - v.start) as usize;
        for i in 0..nr as usize {
            v.ptes[from + i] = pt::mk_present(folio + i as u32, flag);
        }
        if !pmd {
            self.arch_set_ptes(mm, vi, from, nr as usize);
        }
        self.mms[mm as usize].rss_anon += nr as u64;
        self.mem.add_mapcount(folio, nr as i32);
        self.spend(
            TimeKind::Zeroing,
            nr as u64 * self.hw.zero_page_ns
                + if pmd {
                    self.hw.pte_update_ns
                } else {
                    nr as u64 * self.hw.pte_update_ns
                },
        );
        self.folio_add_lru(folio);
    }

    /// do_swap_page: bring a swapped-out page back, from the swap cache or the device. From v6.12
    /// a synchronous device without a cached copy may bring back a whole mTHP at once.
    fn do_swap_page(
        &mut self,
        mm: u32,
        vi: usize,
        vpn: u32,
        pte: pt::Pte,
        write: bool,
    ) -> Result<(), Killed> {
        let dev = pt::swap_device(pte);
        let off = pt::swap_offset(pte);
        let memcg = self.mms[mm as usize].memcg;
        let (folio, first_page, base_vpn, base_off, nr) = match self.swap_cache_lookup(dev, off) {
            Some((folio, page)) => (folio, page, vpn, off, 1),
            None => {
                self.stat.count(Vm::Pgmajfault, 1);
                self.memcgs[memcg as usize].count(Memcg::Pgmajfault, 1);
                let bypass = self.swap[dev as usize].synchronous()
                    && self.swap[dev as usize].swap_count(off) == 1;
                let large = self.swaps_in_large_folios_now();
                // alloc_swap_folio tries each candidate order, highest first, then order 0.
                let mut orders = if bypass && large {
                    self.swap_folio_orders(mm, vi, vpn, dev, off)
                } else {
                    0
                };
                let mut order = highest_order(orders);
                let vma_flags = self.mms[mm as usize].vmas[vi].flags;
                // __folio_set_anon: a folio read for a swap entry other mms still hold (after
                // fork) gets the root anon_vma of the fork tree, which every relative that may
                // map it from the swap cache is on; an exclusive one gets this mm's own.
                let av = if self.swap[dev as usize].swap_count(off) > 1 {
                    self.anon_vma_root(mm)
                } else {
                    self.mms[mm as usize].anon_vma
                };
                let folio = loop {
                    let gfp = if order == 0 {
                        Gfp::USER
                    } else {
                        self.thp_gfp(vma_flags)
                    };
                    let nr = 1u32 << order;
                    let base = vpn & !(nr - 1);
                    let mut charge_failed = false;
                    if let Some(pfn) = self.vma_alloc_folio(gfp, order, mm, vi, base) {
                        if self.charge_new_folio(pfn, order, av, memcg, base, gfp) {
                            break pfn;
                        }
                        charge_failed = true;
                    }
                    if order == 0 {
                        return Err(Killed);
                    }
                    // Per-size swap-in fallback counters came after v6.12.
                    if self.generation().counts_mthp_swpin_fallback() {
                        self.stat.count_mthp(order, Mthp::SwpinFallback);
                        if charge_failed {
                            self.stat.count_mthp(order, Mthp::SwpinFallbackCharge);
                        }
                    }
                    orders &= !(1 << order);
                    order = highest_order(orders);
                };
                let nr = 1u32 << order;
                let base_vpn = vpn & !(nr - 1);
                let base_off = off - (vpn - base_vpn);
                self.mem.set(folio, pg::SWAPBACKED);
                // The first slot's shadow (which a folio in the swap cache replaces).
                let shadow = self.swap[dev as usize].shadows[base_off as usize];
                if !bypass {
                    self.add_to_swap_cache(folio, dev, base_off);
                }
                let from_zswap = self.swap_read_folio(folio, dev, base_off, nr);
                if order > 0 {
                    self.stat.count_mthp(order, Mthp::Swpin);
                }
                if !from_zswap {
                    self.memcgs[memcg as usize].count(Memcg::Pswpin, nr as u64);
                }
                // a zswap load refaults as a device read does: the shadow is the swap cache's
                if shadow.is_some() {
                    self.workingset_refault(folio, shadow);
                }
                self.folio_add_lru(folio);
                (folio, folio, base_vpn, base_off, nr)
            }
        };
        // pte_swp_exclusive: the folio is mapped writable only if no other PTE holds its swap
        // entries (fork shares them, and the kernel then clears the exclusive marker).
        let si = &self.swap[dev as usize];
        let exclusive = (0..nr).all(|i| si.swap_count(base_off + i) == 1);
        let mut flags = pt::YOUNG;
        if exclusive {
            flags |= pt::WRITE;
            if write {
                flags |= pt::DIRTY;
                self.mem.set(folio, pg::DIRTY);
            }
        }
        let start = self.mms[mm as usize].vmas[vi].start;
        for i in 0..nr {
            let idx = (base_vpn + i - start) as usize;
            self.mms[mm as usize].vmas[vi].ptes[idx] = pt::mk_present(first_page + i, flags);
        }
        self.arch_set_ptes(mm, vi, (base_vpn - start) as usize, nr as usize);
        self.mms[mm as usize].rss_anon += nr as u64;
        self.mm_add_swapents(mm, -(nr as i64));
        self.mem.add_mapcount(folio, nr as i32);
        self.spend(TimeKind::PteUpdate, nr as u64 * self.hw.pte_update_ns);
        for i in 0..nr {
            self.swap_free(dev, base_off + i);
        }
        if self.mem.test(folio, pg::SWAPCACHE) && (self.vm_swap_full() || (write && exclusive)) {
            self.folio_free_swap(folio);
        }
        if write && !exclusive {
            // A write to a page other mms may still map (after fork) was mapped read-only:
            // do_swap_page goes on to do_wp_page, which copies it.
            let idx = (vpn - start) as usize;
            let pte = self.mms[mm as usize].vmas[vi].ptes[idx];
            return self.do_wp_page(mm, vi, vpn, pte);
        }
        Ok(())
    }

    /// alloc_swap_folio's candidate orders (v6.12), as a bitmask: the enabled mTHP orders below
    /// PMD whose aligned range lies in the VMA with swap offsets aligned like the addresses
    /// (thp_vma_suitable_orders, thp_swap_suitable_orders), from the highest whose range is all
    /// swap PTEs with consecutive offsets on one device and no slot in the swap cache
    /// (can_swapin_thp, non_swapcache_batch) down. Each lower one is a sub-range of that one, so
    /// the kernel does not check it again: it falls back to it when the larger folio cannot be
    /// allocated or charged.
    fn swap_folio_orders(&self, mm: u32, vi: usize, vpn: u32, dev: u32, off: u32) -> u32 {
        let v = &self.mms[mm as usize].vmas[vi];
        let (start, end) = v.extent(vpn);
        let si = &self.swap[dev as usize];
        let enabled = self.anon_thp_orders(v.flags);
        let mut candidates = 0u32;
        for order in 1..PMD_ORDER as u32 {
            let nr = 1u32 << order;
            let base = vpn & !(nr - 1);
            if enabled & (1 << order) != 0
                && base >= start
                && base + nr <= end
                && vpn % nr == off % nr
            {
                candidates |= 1 << order;
            }
        }
        while candidates != 0 {
            let order = highest_order(candidates);
            let nr = 1u32 << order;
            let base = vpn & !(nr - 1);
            let base_off = off - (vpn - base);
            let fits = (0..nr).all(|i| {
                let p = v.ptes[(base + i - v.start) as usize];
                pt::is_swap(p)
                    && pt::swap_device(p) == dev
                    && pt::swap_offset(p) == base_off + i
                    && si.swap_map[(base_off + i) as usize] & super::swapfile::SWAP_HAS_CACHE == 0
            });
            if fits {
                return candidates;
            }
            candidates &= !(1 << order);
        }
        0
    }

    /// do_wp_page: a write to a present read-only PTE (shared with a forked child, or exclusive,
    /// or a page-cache page: written in place in a shared file VMA, copied in a private one).
    fn do_wp_page(&mut self, mm: u32, vi: usize, vpn: u32, pte: pt::Pte) -> Result<(), Killed> {
        let idx = (vpn - self.mms[mm as usize].vmas[vi].start) as usize;
        let old_page = pt::pfn(pte);
        let old = self.mem.head_of(old_page);
        self.migrc_hook_wp_fault();
        let file = !self.folio_test_anon(old);
        if file && pte & pt::PMD != 0 {
            // wp_huge_pmd in a file VMA: COW and write-notify work on PTEs, so the PMD goes
            // and the fault starts again from a none PTE.
            self.split_huge_pmd_file(mm, vi, old);
            return self.do_fault(mm, vi, vpn, true);
        }
        if !file && pte & pt::PMD != 0 {
            // do_huge_pmd_wp_page: a THP that only this PMD maps (and no swap cache holds) is
            // reused whole; a shared one (after fork) has its PMD split, and the fault falls
            // back to the PTE (VM_FAULT_FALLBACK), which copies one page below.
            if self.mem.mapcount(old) == self.mem.nr_pages(old)
                && !self.mem.test(old, pg::SWAPCACHE)
            {
                let (first, nr) = self.folio_ptes(old, mm, vi);
                for p in &mut self.mms[mm as usize].vmas[vi].ptes[first..first + nr] {
                    *p |= pt::WRITE | pt::DIRTY;
                }
                self.spend(TimeKind::PteUpdate, self.hw.pte_update_ns);
                return Ok(());
            }
            self.split_huge_pmd(mm, vi, old);
        }
        // Making the PTE writable (ptep_set_access_flags) or replacing it (ptep_clear_flush)
        // unfolds its contpte block.
        self.contpte_try_unfold(mm, vi, idx);
        if file && self.mms[mm as usize].vmas[vi].flags & VM_SHARED != 0 {
            // wp_page_shared: page_mkwrite dirties the folio, then the PTE is reused writable.
            self.folio_mark_dirty(old);
            self.mms[mm as usize].vmas[vi].ptes[idx] |= pt::WRITE | pt::DIRTY;
            self.spend(TimeKind::PteUpdate, self.hw.pte_update_ns);
            self.stat.count(Vm::Pgreuse, 1); // wp_page_reuse
            return Ok(());
        }
        if !file && self.mem.mapcount(old) == 1 && !self.mem.test(old, pg::SWAPCACHE) {
            // Only we map it: reuse in place.
            self.mms[mm as usize].vmas[vi].ptes[idx] |= pt::WRITE | pt::DIRTY;
            self.spend(TimeKind::PteUpdate, self.hw.pte_update_ns);
            self.stat.count(Vm::Pgreuse, 1); // wp_page_reuse
            return Ok(());
        }
        let memcg = self.mms[mm as usize].memcg;
        let orig_pte = self.mms[mm as usize].vmas[vi].ptes[idx];
        let pfn = self.alloc_anon_page(mm, vi, vpn, memcg)?;
        if self.mms[mm as usize].vmas[vi].ptes[idx] != orig_pte {
            // wp_page_copy's pte_same check: reclaim during the new page's charge changed the
            // PTE (unmapped the old page for swap-out, split its folio, aged it). The new page
            // goes back and the access faults again, as the retried instruction would.
            self.free_folio(pfn);
            // In the kernel the fault's reference keeps reclaim from freeing the old page, so a
            // memcg with nothing else to reclaim ends in the OOM killer; here reclaim can free
            // it, and retrying forever would livelock: after MAX_RECLAIM_RETRIES lost races the
            // charge counts as failed.
            self.cow_lost_races += 1;
            if self.cow_lost_races > super::vmscan::MAX_RECLAIM_RETRIES {
                self.cow_lost_races = 0;
                if !self.out_of_memory(Some(memcg), None)
                    || !self.tasks[self.current as usize].is_running()
                {
                    return Err(Killed);
                }
            }
            let retried = self.handle_mm_fault(mm, vi, vpn, true);
            self.cow_lost_races = 0;
            return retried;
        }
        // The reclaim may also have split the old page's large folio (the kernel's extra folio
        // reference would have made that split fail): its rmap is now the page's own folio's.
        let old = self.mem.head_of(old_page);
        self.mem.pages[pfn as usize].content = self.mem.pages[old_page as usize].content;
        self.mem.set(pfn, pg::SWAPBACKED);
        self.mms[mm as usize].vmas[vi].ptes[idx] =
            pt::mk_present(pfn, pt::WRITE | pt::DIRTY | pt::YOUNG);
        self.mem.add_mapcount(pfn, 1);
        self.folio_add_lru(pfn);
        self.spend(
            TimeKind::Copying,
            self.hw.copy_page_ns + self.hw.pte_update_ns,
        );
        self.flush_tlb_mm_range(mm, vpn, 1, false);
        if file {
            // wp_page_copy of a page-cache page: the mm counts an anonymous page instead.
            self.mms[mm as usize].rss_file -= 1;
            self.mms[mm as usize].rss_anon += 1;
        }
        self.folio_remove_rmap_ptes(old, 1);
        Ok(())
    }

    /// copy_page_range for a private anonymous fork: the child shares every folio and swap entry,
    /// both sides lose write access so the next write copies, and the child's PTEs are old.
    pub fn fork_mm(&mut self, parent: u32, child_owner: u32) -> u32 {
        let memcg = self.mms[parent as usize].memcg;
        let child = self.mm_create(memcg, child_owner);
        // anon_vma_fork: the child joins every anon_vma of its parent's chain.
        let chain = self.mms[parent as usize].anon_vma_chain.clone();
        for &av in &chain {
            self.anon_vmas[av as usize].mms.push(child);
        }
        self.mms[child as usize].anon_vma_chain.extend(chain);
        let nr_vmas = self.mms[parent as usize].vmas.len();
        let mut copied = 0u64;
        for vi in 0..nr_vmas {
            let (start, flags, mut ptes, policies) = {
                let v = &mut self.mms[parent as usize].vmas[vi];
                // Only a private mapping is copy-on-write.
                let cow = v.flags & VM_SHARED == 0;
                for p in v.ptes.iter_mut() {
                    if cow && pt::is_present(*p) {
                        *p &= !pt::WRITE;
                    }
                }
                (v.start, v.flags, v.ptes.clone(), v.policies.clone())
            };
            let file = self.mms[parent as usize].vmas[vi].file;
            let table_vpn_offset = self.mms[parent as usize].vmas[vi].table_vpn_offset;
            if flags & VM_SHARED != 0 {
                // vma_needs_copy: a shared file VMA is refilled by the child's faults.
                ptes.fill(pt::PTE_NONE);
            }
            for p in ptes.iter_mut() {
                if pt::is_present(*p) {
                    // __copy_present_ptes: the child's PTEs start old (and clean in a shared
                    // mapping), so a folio both map counts as referenced by the child only once
                    // the child touches it.
                    *p &= !pt::YOUNG;
                    if flags & VM_SHARED != 0 {
                        *p &= !pt::DIRTY;
                    }
                    let folio = self.mem.head_of(pt::pfn(*p));
                    self.mem.add_mapcount(folio, 1);
                    if !self.folio_test_anon(folio) {
                        self.mms[child as usize].rss_file += 1;
                    } else {
                        self.mms[child as usize].rss_anon += 1;
                    }
                    copied += 1;
                } else if pt::is_swap(*p) {
                    self.swap_duplicate(pt::swap_device(*p), pt::swap_offset(*p));
                    self.mm_add_swapents(child, 1);
                    copied += 1;
                }
            }
            let m = &mut self.mms[child as usize];
            m.vmas.push(super::vma::Vma {
                start,
                flags,
                ptes,
                poisson: None,
                policies,
                file,
                table_vpn_offset,
            });
            if let Some(vf) = file {
                self.files[vf.file as usize].i_mmap.push((child, start));
            }
        }
        self.mms[child as usize].next_vpn = self.mms[parent as usize].next_vpn;
        self.fork_pgtables(parent, child);
        self.spend(TimeKind::PteUpdate, copied * self.hw.pte_update_ns);
        self.flush_tlb_mm(parent);
        child
    }
}

/// fault_around_bytes (debugfs; default 64 KiB): the window filemap_map_pages maps around a read
/// fault on a file VMA.
pub const FAULT_AROUND_BYTES: u64 = 65536;

/// Faults on file VMAs.
impl Kernel {
    /// do_fault: a fault on a none PTE of a file VMA.
    fn do_fault(&mut self, mm: u32, vi: usize, vpn: u32, write: bool) -> Result<(), Killed> {
        if !write {
            self.do_read_fault(mm, vi, vpn)
        } else if self.mms[mm as usize].vmas[vi].flags & VM_SHARED == 0 {
            self.do_cow_fault(mm, vi, vpn)
        } else {
            self.do_shared_fault(mm, vi, vpn)
        }
    }

    /// do_read_fault: fault-around first; if that did not map the page, filemap_fault reads it
    /// and finish_fault maps it.
    fn do_read_fault(&mut self, mm: u32, vi: usize, vpn: u32) -> Result<(), Killed> {
        let fault_around_pages = (FAULT_AROUND_BYTES / super::PAGE_SIZE) as u32;
        if fault_around_pages > 1 && self.do_fault_around(mm, vi, vpn, fault_around_pages) {
            return Ok(());
        }
        let folio = self.filemap_fault(mm, vi, vpn)?;
        self.finish_fault(mm, vi, vpn, folio, false);
        Ok(())
    }

    /// do_fault_around: filemap_map_pages over the `nr`-page aligned block of the page table
    /// around `vpn`, clamped to the VMA. Returns whether `vpn` got mapped.
    fn do_fault_around(&mut self, mm: u32, vi: usize, vpn: u32, nr: u32) -> bool {
        let v = &self.mms[mm as usize].vmas[vi];
        let pte_off = vpn % HPAGE_PMD_NR;
        let vma_off = vpn - v.start;
        let from_pte = (pte_off & !(nr - 1)).max(pte_off - pte_off.min(vma_off));
        let to_pte = (from_pte + nr)
            .min(HPAGE_PMD_NR)
            .min(pte_off + v.ptes.len() as u32 - vma_off)
            - 1;
        let index = v.linear_page_index(vpn);
        self.filemap_map_pages(
            mm,
            vi,
            index + from_pte - pte_off,
            index + to_pte - pte_off,
            vpn,
        )
    }

    /// do_cow_fault: a write to a private file page never mapped here: the page-cache page is
    /// copied into a new anonymous page, which is what gets mapped.
    fn do_cow_fault(&mut self, mm: u32, vi: usize, vpn: u32) -> Result<(), Killed> {
        let memcg = self.mms[mm as usize].memcg;
        let pfn = self.alloc_anon_page(mm, vi, vpn, memcg)?;
        let folio = match self.filemap_fault(mm, vi, vpn) {
            Ok(f) => f,
            Err(k) => {
                self.mem_cgroup_uncharge(pfn);
                self.mem.clear_folio(pfn);
                self.free_pages(pfn, 0);
                return Err(k);
            }
        };
        let v = &self.mms[mm as usize].vmas[vi];
        let idx = (vpn - v.start) as usize;
        let page = folio + (v.linear_page_index(vpn) - self.mem.index(folio));
        self.mem.pages[pfn as usize].content = self.mem.pages[page as usize].content;
        self.mem.set(pfn, pg::SWAPBACKED);
        self.spend(TimeKind::Copying, self.hw.copy_page_ns);
        // finish_fault with the copy: set_pte_range's anonymous branch.
        self.mms[mm as usize].vmas[vi].ptes[idx] =
            pt::mk_present(pfn, pt::WRITE | pt::DIRTY | pt::YOUNG);
        self.mms[mm as usize].rss_anon += 1;
        self.mem.add_mapcount(pfn, 1);
        self.folio_add_lru(pfn);
        self.spend(TimeKind::PteUpdate, self.hw.pte_update_ns);
        Ok(())
    }

    /// do_shared_fault: a write to a shared file page not mapped yet: page_mkwrite and
    /// fault_dirty_shared_page dirty the folio, finish_fault maps it writable.
    fn do_shared_fault(&mut self, mm: u32, vi: usize, vpn: u32) -> Result<(), Killed> {
        let folio = self.filemap_fault(mm, vi, vpn)?;
        self.folio_mark_dirty(folio);
        self.finish_fault(mm, vi, vpn, folio, true);
        Ok(())
    }

    /// finish_fault for a page-cache folio: a PMD when do_set_pmd can map it, else the one
    /// page at `vpn` (regular files map a single PTE here, not the whole folio).
    fn finish_fault(&mut self, mm: u32, vi: usize, vpn: u32, folio: FolioId, write: bool) {
        if self.do_set_pmd(mm, vi, folio, write) {
            return;
        }
        if self.mem.is_shmem(folio) {
            let (first, page, nr) = self.shmem_finish_fault_range(mm, vi, vpn, folio);
            self.set_pte_range(mm, vi, first, page, nr, write);
            return;
        }
        let index = self.mms[mm as usize].vmas[vi].linear_page_index(vpn);
        let page = folio + (index - self.mem.index(folio));
        self.set_pte_range(mm, vi, vpn, page, 1, write);
    }

    /// The write and dirty bits of a new PTE for a page-cache folio: both for a write; write
    /// alone on a read in a shared writable shmem mapping (shmem wants no write notification).
    fn file_pte_write_flags(&self, mm: u32, vi: usize, folio: FolioId, write: bool) -> u64 {
        if write {
            pt::WRITE | pt::DIRTY
        } else if self.mem.is_shmem(folio) && self.shmem_maps_writable(mm, vi) {
            pt::WRITE
        } else {
            0
        }
    }

    /// set_pte_range for a page-cache folio: `nr` PTEs from `vpn` map consecutive pages from
    /// `page` (young, as x86's protections carry the accessed bit; writable and dirty for a
    /// write; writable on a read too in a shared writable shmem mapping, which wants no write
    /// notification), and folio_add_file_rmap_ptes counts them.
    pub fn set_pte_range(&mut self, mm: u32, vi: usize, vpn: u32, page: u32, nr: u32, write: bool) {
        let folio = self.mem.head_of(page);
        let flags = pt::YOUNG | self.file_pte_write_flags(mm, vi, folio, write);
        let v = &mut self.mms[mm as usize].vmas[vi];
        let from = (vpn - v.start) as usize;
        for i in 0..nr as usize {
            debug_assert_eq!(v.ptes[from + i], pt::PTE_NONE);
            v.ptes[from + i] = pt::mk_present(page + i as u32, flags);
        }
        self.arch_set_ptes(mm, vi, from, nr as usize);
        self.mms[mm as usize].rss_file += nr as u64;
        self.mem.add_mapcount(folio, nr as i32);
        self.spend(TimeKind::PteUpdate, nr as u64 * self.hw.pte_update_ns);
    }

    /// do_set_pmd: maps a PMD-sized page-cache folio with one PMD when its file range lines up
    /// with a PMD-aligned range of the VMA (thp_vma_suitable_order) that has no PTE yet, and
    /// the VMA does not refuse THPs. Returns whether it did.
    pub fn do_set_pmd(&mut self, mm: u32, vi: usize, folio: FolioId, write: bool) -> bool {
        if self.mem.order(folio) as usize != PMD_ORDER {
            return false;
        }
        let v = &self.mms[mm as usize].vmas[vi];
        if v.flags & VM_NOHUGEPAGE != 0 {
            return false;
        }
        let base = self.folio_vpn(folio, mm, vi);
        let from = base - v.start as i64;
        if base % HPAGE_PMD_NR as i64 != 0
            || from < 0
            || from + HPAGE_PMD_NR as i64 > v.ptes.len() as i64
        {
            return false;
        }
        let from = from as usize;
        if v.ptes[from..from + HPAGE_PMD_NR as usize]
            .iter()
            .any(|&p| p != pt::PTE_NONE)
        {
            return false;
        }
        let flags = pt::YOUNG | pt::PMD | self.file_pte_write_flags(mm, vi, folio, write);
        let v = &mut self.mms[mm as usize].vmas[vi];
        for i in 0..HPAGE_PMD_NR as usize {
            v.ptes[from + i] = pt::mk_present(folio + i as u32, flags);
        }
        self.mms[mm as usize].rss_file += HPAGE_PMD_NR as u64;
        self.mem.add_mapcount(folio, HPAGE_PMD_NR as i32);
        self.spend(TimeKind::PteUpdate, self.hw.pte_update_ns);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::filemap::{File, FileId};
    use crate::mm::folio::NIL;
    use crate::mm::vma::{VM_EXEC, VM_WRITE};
    use crate::mm::vmscan::ScanControl;

    const KB: u64 = 1024;

    /// A booted machine (one DRAM node) with the user task current, and its mm.
    fn boot() -> (Kernel, u32) {
        let k = crate::mm::filemap::tests::boot("v6.18", false);
        let mm = k.tasks[k.current as usize].mm.expect("user mm");
        (k, mm)
    }

    fn new_file(k: &mut Kernel, size: u64, read_ahead_kb: u64, large: bool) -> FileId {
        k.create_file(File::new("f".into(), size, read_ahead_kb, large))
    }

    /// Fills the file's page cache with uptodate order-0 folios nobody has accessed yet.
    fn cache_file(k: &mut Kernel, file: FileId) {
        for index in 0..k.files[file as usize].nr_pages {
            k.filemap_alloc_folio(file, index, 0, Gfp::USER).unwrap();
        }
    }

    fn pte(k: &Kernel, mm: u32, vpn: u32) -> pt::Pte {
        let vi = k.mms[mm as usize].find_vma(vpn).unwrap();
        let v = &k.mms[mm as usize].vmas[vi];
        v.ptes[(vpn - v.start) as usize]
    }

    fn mapped(k: &Kernel, mm: u32, start: u32, nr: u32) -> Vec<u32> {
        (0..nr)
            .filter(|&i| pt::is_present(pte(k, mm, start + i)))
            .collect()
    }

    fn assert_consistent(k: &Kernel) {
        let v = crate::check::check(k);
        assert!(v.is_empty(), "{v:?}");
    }

    #[test]
    fn a_read_fault_maps_the_cached_fault_around_window_with_one_fault() {
        let (mut k, mm) = boot();
        let f = new_file(&mut k, 256 * KB, 128, false);
        cache_file(&mut k, f);
        let start = k.mmap_file(mm, f, 0, 64, VM_WRITE);
        let faults = k.stat.get(Vm::Pgfault);
        k.touch(mm, start + 5, false, 0).unwrap();
        assert_eq!(k.stat.get(Vm::Pgfault), faults + 1);
        // fault_around_bytes = 64K: the aligned 16 pages around the fault, nothing more.
        assert_eq!(mapped(&k, mm, start, 64), (0..16).collect::<Vec<_>>());
        for i in 0..16 {
            let p = pte(&k, mm, start + i);
            assert_eq!(pt::pfn(p), k.files[f as usize].cache[i as usize]);
            assert_eq!(p & pt::WRITE, 0, "a private file page is mapped read-only");
            k.touch(mm, start + i, false, 0).unwrap();
        }
        assert_eq!(
            k.stat.get(Vm::Pgfault),
            faults + 1,
            "the window costs no more faults"
        );
        assert_eq!(k.stat.get(Vm::Pgmajfault), 0);
        assert_eq!(k.mms[mm as usize].rss_file, 16);
        assert_eq!(k.mem.mapcount(k.files[f as usize].cache[3]), 1);
        k.touch(mm, start + 16, false, 0).unwrap();
        assert_eq!(k.stat.get(Vm::Pgfault), faults + 2);
        assert_eq!(mapped(&k, mm, start, 64), (0..32).collect::<Vec<_>>());
        assert_consistent(&k);
    }

    #[test]
    fn a_cold_read_fault_is_major_reads_around_and_maps_one_page() {
        let (mut k, mm) = boot();
        let f = new_file(&mut k, 256 * KB, 128, false);
        let start = k.mmap_file(mm, f, 0, 64, VM_WRITE);
        let t0 = k.clock_ns;
        k.touch(mm, start + 40, false, 0).unwrap();
        assert_eq!(k.stat.get(Vm::Pgmajfault), 1);
        assert!(
            k.clock_ns - t0 > k.hw.ssd_read_latency_ns,
            "the fault waits for the read"
        );
        // Read-around: ra_pages (32) centred on page 40, PG_readahead at a quarter from the end.
        let cached: Vec<u32> = (0..64)
            .filter(|&i| k.files[f as usize].cache[i as usize] != NIL)
            .collect();
        assert_eq!(cached, (24..56).collect::<Vec<_>>());
        assert_eq!(k.stat.get(Vm::Pgpgin), 32 * 4);
        assert!(k.mem.test(k.files[f as usize].cache[48], pg::RECLAIM));
        // Fault-around found nothing uptodate, so finish_fault mapped the one page.
        assert_eq!(mapped(&k, mm, start, 64), vec![40]);
        // The next fault in the window is minor and maps the rest of it.
        k.touch(mm, start + 41, false, 0).unwrap();
        assert_eq!(k.stat.get(Vm::Pgmajfault), 1);
        assert_eq!(k.stat.get(Vm::Pgfault), 2);
        assert_eq!(mapped(&k, mm, start, 64), (32..48).collect::<Vec<_>>());
        assert_consistent(&k);
    }

    #[test]
    fn read_around_asks_for_order_0_folios_from_v6_16_and_order_2_before() {
        // 6.18.44: one read of a cold mmap of a large-folio file (ext4) at 8 MiB adds 2048
        // order-0 folios (tracefs page_cache_ra_order order=0, mm_filemap_add_to_page_cache)
        let orders = |profile: &str| {
            let mut k = crate::mm::filemap::tests::boot(profile, false);
            let mm = k.tasks[k.current as usize].mm.expect("user mm");
            let f = new_file(&mut k, 16 << 20, 8192, true);
            let start = k.mmap_file(mm, f, 0, 4096, 0);
            k.touch(mm, start + 2048, false, 0).unwrap();
            let cache = &k.files[f as usize].cache;
            let mut seen: Vec<u32> = (1024..3072)
                .map(|i| k.mem.order(cache[i as usize]))
                .collect();
            seen.dedup();
            seen
        };
        assert_eq!(orders("v6.18"), vec![0]);
        assert_eq!(orders("v6.12"), vec![2]);
    }

    #[test]
    fn read_around_stops_after_a_hundred_misses_and_hits_seen_by_fault_around_count_back() {
        let (mut k, mm) = boot();
        let f = new_file(&mut k, 64 << 20, 128, false);
        let start = k.mmap_file(mm, f, 0, 16384, VM_WRITE);
        // Faults 128 pages apart: each misses, and each window (32 pages) stays apart.
        for i in 0..128 {
            k.touch(mm, start + i * 128, false, 0).unwrap();
        }
        assert_eq!(k.stat.get(Vm::Pgmajfault), 128);
        // mmap_miss passes MMAP_LOTSAMISS (100) at the 101st miss: one page each from then on.
        assert_eq!(k.stat.get(Vm::Pgpgin), (100 * 32 + 28) * 4);
        let ra = |k: &Kernel| k.mms[mm as usize].vmas[0].file.unwrap().ra.mmap_miss;
        assert_eq!(ra(&k), 128);
        // A fault that fault-around satisfies: the 16 cached pages it saw lower mmap_miss.
        k.touch(mm, start + 1, false, 0).unwrap();
        assert_eq!(k.stat.get(Vm::Pgmajfault), 128);
        assert_eq!(ra(&k), 112);
        assert_consistent(&k);
    }

    #[test]
    fn a_private_write_copies_into_an_anonymous_page_and_leaves_the_cache_clean() {
        let (mut k, mm) = boot();
        let f = new_file(&mut k, 64 * KB, 128, false);
        cache_file(&mut k, f);
        let start = k.mmap_file(mm, f, 0, 16, VM_WRITE);
        // A write to a page never mapped: do_cow_fault, no fault-around.
        k.touch(mm, start + 3, true, 7).unwrap();
        let cached = k.files[f as usize].cache[3];
        let p = pte(&k, mm, start + 3);
        assert_ne!(pt::pfn(p), cached);
        assert!(k.mem.test(pt::pfn(p), pg::SWAPBACKED), "an anonymous copy");
        assert_ne!(p & pt::WRITE, 0);
        assert_eq!(k.mem.pages[pt::pfn(p) as usize].content, 7);
        assert_eq!(k.mem.pages[cached as usize].content, content::DATA_DEFAULT);
        assert!(!k.mem.test(cached, pg::DIRTY));
        assert_eq!(k.mem.mapcount(cached), 0);
        assert_eq!(mapped(&k, mm, start, 16), vec![3]);
        // A page mapped by a read first: the write fault copies it (wp_page_copy).
        k.touch(mm, start + 8, false, 0).unwrap();
        let cached8 = k.files[f as usize].cache[8];
        assert_eq!(pt::pfn(pte(&k, mm, start + 8)), cached8);
        assert_eq!(k.mms[mm as usize].rss_file, 15);
        k.touch(mm, start + 8, true, 9).unwrap();
        let p = pte(&k, mm, start + 8);
        assert_ne!(pt::pfn(p), cached8);
        assert_eq!(k.mem.mapcount(cached8), 0);
        assert!(!k.mem.test(cached8, pg::DIRTY));
        assert_eq!(k.mem.pages[cached8 as usize].content, content::DATA_DEFAULT);
        assert_eq!(k.mms[mm as usize].rss_file, 14);
        assert_eq!(k.mms[mm as usize].rss_anon, 2);
        assert_consistent(&k);
    }

    #[test]
    fn a_shared_write_dirties_the_page_cache_folio_it_maps() {
        let (mut k, mm) = boot();
        let f = new_file(&mut k, 64 * KB, 128, false);
        cache_file(&mut k, f);
        let start = k.mmap_file(mm, f, 0, 16, VM_WRITE | VM_SHARED);
        k.touch(mm, start + 2, true, 7).unwrap();
        let cached = k.files[f as usize].cache[2];
        let p = pte(&k, mm, start + 2);
        assert_eq!(pt::pfn(p), cached);
        assert_ne!(p & pt::WRITE, 0);
        assert!(k.mem.test(cached, pg::DIRTY));
        assert_eq!(
            k.mem.pages[cached as usize].content, 7,
            "the file's page changed"
        );
        // A read maps shared pages read-only and clean; the first write takes a wp fault.
        k.touch(mm, start + 9, false, 0).unwrap();
        let cached9 = k.files[f as usize].cache[9];
        assert_eq!(pte(&k, mm, start + 9) & pt::WRITE, 0);
        assert!(!k.mem.test(cached9, pg::DIRTY));
        let faults = k.stat.get(Vm::Pgfault);
        k.touch(mm, start + 9, true, 5).unwrap();
        assert_eq!(k.stat.get(Vm::Pgfault), faults + 1);
        assert!(k.mem.test(cached9, pg::DIRTY));
        assert_eq!(pt::pfn(pte(&k, mm, start + 9)), cached9);
        assert_eq!(k.mms[mm as usize].rss_anon, 0);
        assert_consistent(&k);
        // Writeback cleans and write-protects the mappings (folio_mkclean): the next write
        // faults again and dirties the folio again.
        let dirtied = k.stat.get(Vm::NrDirtied);
        k.vfs_fsync(f);
        assert!(!k.mem.test(cached9, pg::DIRTY));
        assert_eq!(pte(&k, mm, start + 9) & (pt::WRITE | pt::DIRTY), 0);
        let faults = k.stat.get(Vm::Pgfault);
        k.touch(mm, start + 9, true, 6).unwrap();
        assert_eq!(k.stat.get(Vm::Pgfault), faults + 1);
        assert!(k.mem.test(cached9, pg::DIRTY));
        assert_eq!(k.stat.get(Vm::NrDirtied), dirtied + 1);
        assert_consistent(&k);
    }

    /// Runs one folio through shrink_folio_list as reclaim would after isolating it.
    fn shrink_one(k: &mut Kernel, folio: FolioId) -> u64 {
        k.lru_add_drain();
        k.lruvec_del_folio(folio);
        let mut sc = ScanControl::new(32, false);
        k.shrink_folio_list(&mut vec![folio], &mut sc)
    }

    #[test]
    fn reclaim_unmaps_a_clean_mapped_file_folio_and_the_next_touch_reads_it_again() {
        let (mut k, mm) = boot();
        let f = new_file(&mut k, 64 * KB, 128, false);
        cache_file(&mut k, f);
        let start = k.mmap_file(mm, f, 0, 16, VM_WRITE);
        k.touch(mm, start, false, 0).unwrap();
        let folio = k.files[f as usize].cache[0];
        // Referenced by one young PTE: kept (not activated), the young bit cleared.
        assert_eq!(shrink_one(&mut k, folio), 0);
        assert!(k.mem.test(folio, pg::LRU) && !k.mem.test(folio, pg::ACTIVE));
        assert_eq!(pte(&k, mm, start) & pt::YOUNG, 0);
        // Not referenced since: unmapped, out of the page cache, freed.
        assert_eq!(shrink_one(&mut k, folio), 1);
        assert_eq!(k.files[f as usize].cache[0], NIL);
        assert_eq!(pte(&k, mm, start), pt::PTE_NONE);
        assert_eq!(k.mms[mm as usize].rss_file, 15);
        assert_consistent(&k);
        let (majfault, pgpgin) = (k.stat.get(Vm::Pgmajfault), k.stat.get(Vm::Pgpgin));
        k.touch(mm, start, false, 0).unwrap();
        assert_eq!(k.stat.get(Vm::Pgmajfault), majfault + 1);
        assert!(k.stat.get(Vm::Pgpgin) > pgpgin);
        assert!(pt::is_present(pte(&k, mm, start)));
        assert_consistent(&k);
    }

    #[test]
    fn a_mapped_file_folio_is_activated_when_executable_or_referenced_twice() {
        let (mut k, mm) = boot();
        let f = new_file(&mut k, 64 * KB, 128, false);
        cache_file(&mut k, f);
        // VM_EXEC: activated on its first referenced check.
        let text = k.mmap_file(mm, f, 0, 16, VM_EXEC);
        k.touch(mm, text, false, 0).unwrap();
        let folio = k.files[f as usize].cache[0];
        shrink_one(&mut k, folio);
        assert!(k.mem.test(folio, pg::ACTIVE));
        // Two mappings referencing it: activated too.
        let a = k.mmap_file(mm, f, 0, 16, VM_WRITE);
        let b = k.mmap_file(mm, f, 0, 16, VM_WRITE);
        k.touch(mm, a + 1, false, 0).unwrap();
        k.touch(mm, b + 1, false, 0).unwrap();
        let folio = k.files[f as usize].cache[1];
        assert_eq!(k.mem.mapcount(folio), 3);
        k.lru_add_drain();
        k.lruvec_del_folio(folio);
        k.mem.clear(folio, pg::ACTIVE);
        k.lruvec_add_folio(folio);
        // text's young bit was cleared by the first shrink only for page 0: clear page 1's.
        // Then the translations of a and b leave the TLB, so that their next uses walk the
        // page table and set the bits again (x86 does not flush as it clears them).
        k.folio_referenced(folio);
        k.flush_tlb_mm_range(mm, a + 1, 1, false);
        k.flush_tlb_mm_range(mm, b + 1, 1, false);
        k.touch(mm, a + 1, false, 0).unwrap();
        k.touch(mm, b + 1, false, 0).unwrap();
        for vpn in [a + 1, b + 1] {
            assert_ne!(pte(&k, mm, vpn) & pt::YOUNG, 0);
        }
        assert_eq!(pte(&k, mm, text + 1) & pt::YOUNG, 0);
        assert!(!k.mem.test(folio, pg::REFERENCED));
        shrink_one(&mut k, folio);
        assert!(k.mem.test(folio, pg::ACTIVE));
        assert_consistent(&k);
    }

    #[test]
    fn munmap_and_exit_unmap_file_pages_and_leave_them_cached() {
        let (mut k, mm) = boot();
        let f = new_file(&mut k, 64 * KB, 128, false);
        cache_file(&mut k, f);
        let start = k.mmap_file(mm, f, 0, 16, VM_WRITE | VM_SHARED);
        k.touch(mm, start + 4, false, 0).unwrap();
        k.touch(mm, start + 5, true, 3).unwrap();
        let folio = k.files[f as usize].cache[4];
        assert!(!k.mem.test(folio, pg::REFERENCED));
        let nrpages = k.files[f as usize].nrpages;
        k.munmap(mm, start);
        assert_eq!(k.files[f as usize].nrpages, nrpages);
        assert_eq!(k.files[f as usize].cache[4], folio);
        assert_eq!(k.mem.mapcount(folio), 0);
        assert!(k.mem.test(folio, pg::LRU));
        // The young PTE is a reference the folio keeps (zap_present_folio_ptes).
        assert!(k.mem.test(folio, pg::REFERENCED));
        assert!(k.mem.test(k.files[f as usize].cache[5], pg::DIRTY));
        assert_eq!(k.mms[mm as usize].rss_file, 0);
        assert!(k.files[f as usize].i_mmap.is_empty());
        let start = k.mmap_file(mm, f, 0, 16, VM_WRITE);
        k.touch(mm, start, false, 0).unwrap();
        k.exit_mmap(mm);
        assert_eq!(k.files[f as usize].nrpages, nrpages);
        assert!(k.files[f as usize].i_mmap.is_empty());
        assert_consistent(&k);
    }

    #[test]
    fn an_aligned_pmd_sized_folio_is_mapped_by_one_pmd_and_a_misaligned_one_by_ptes() {
        let (mut k, mm) = boot();
        let f = new_file(&mut k, 4 << 20, 128, true);
        let folio = k.filemap_alloc_folio(f, 0, 9, Gfp::USER).unwrap();
        let start = k.mmap_file(mm, f, 0, 1024, VM_WRITE);
        assert_eq!(start % HPAGE_PMD_NR, 0);
        k.touch(mm, start + 7, false, 0).unwrap();
        assert_eq!(k.stat.get(Vm::Pgfault), 1);
        assert!((0..512).all(|i| pte(&k, mm, start + i) & pt::PMD != 0));
        assert_eq!(k.mem.mapcount(folio), 512);
        assert_eq!(k.mms[mm as usize].rss_file, 512);
        // A private write: the PMD goes (file PMDs are not split into PTEs) and one page is
        // copied; the next read maps the page cache again by PTEs, around the copy.
        let base = k.mmap_file(mm, f, 0, 1024, VM_WRITE);
        k.touch(mm, base + 3, false, 0).unwrap();
        assert_eq!(k.mem.mapcount(folio), 1024);
        k.touch(mm, base + 3, true, 7).unwrap();
        assert_eq!(k.mem.mapcount(folio), 512);
        assert_eq!(mapped(&k, mm, base, 512), vec![3]);
        assert!(k.mem.test(pt::pfn(pte(&k, mm, base + 3)), pg::SWAPBACKED));
        assert!(!k.mem.test(folio, pg::DIRTY));
        k.touch(mm, base + 4, false, 0).unwrap();
        assert_eq!(mapped(&k, mm, base, 512), (0..16).collect::<Vec<_>>());
        assert_eq!(pte(&k, mm, base + 4) & pt::PMD, 0);
        k.munmap(mm, base);
        // A shared write maps the PMD again, writable, and dirties the whole folio.
        let shared = k.mmap_file(mm, f, 0, 1024, VM_WRITE | VM_SHARED);
        k.touch(mm, shared, false, 0).unwrap();
        k.touch(mm, shared + 100, true, 7).unwrap();
        assert!(k.mem.test(folio, pg::DIRTY));
        assert!((0..512)
            .all(|i| pte(&k, mm, shared + i) & (pt::PMD | pt::WRITE) == pt::PMD | pt::WRITE));
        assert_eq!(k.mem.mapcount(folio), 1024);
        k.munmap(mm, shared);
        // fsync writes it back: clean again, so reclaim can free it below.
        k.vfs_fsync(f);
        assert!(!k.mem.test(folio, pg::DIRTY));
        assert_consistent(&k);
        // From page 1 of the file, the folio's pages cannot line up with a PMD: PTEs.
        let other = k.mmap_file(mm, f, 1, 1023, VM_WRITE);
        assert_eq!(other % HPAGE_PMD_NR, 1);
        k.touch(mm, other + 20, false, 0).unwrap();
        assert_eq!(k.mem.mapcount(folio), 512 + 16);
        assert_eq!(pte(&k, mm, other + 20) & pt::PMD, 0);
        assert_eq!(pt::pfn(pte(&k, mm, other + 20)), folio + 21);
        assert_consistent(&k);
        // Reclaim unmaps both mappings at once.
        k.touch(mm, start, false, 0).unwrap();
        for _ in 0..2 {
            shrink_one(&mut k, folio);
        }
        assert_eq!(k.files[f as usize].cache[0], NIL);
        assert_eq!(k.mms[mm as usize].rss_file, 0);
        assert_consistent(&k);
    }

    #[test]
    fn a_large_swap_in_whose_charge_fails_tries_the_next_smaller_order() {
        // alloc_swap_folio falls back one enabled order at a time. 16 KiB and 64 KiB enabled, a
        // 64 KiB folio paged out, and room in the memcg for 8 pages: the 64 KiB charge cannot
        // reclaim (defrag "madvise", VMA not madvised), so the range comes back 16 KiB at a time.
        let (mut k, mm) = crate::mm::boot_zram_for_test(
            "v6.18",
            Some("1M"),
            r#""/sys/kernel/mm/transparent_hugepage/enabled" = "never"
"/sys/kernel/mm/transparent_hugepage/hugepages-16kB/enabled" = "always"
"/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled" = "always""#,
        );
        let memcg = k.mms[mm as usize].memcg;
        let start = k.mmap_anon(mm, 16);
        k.touch(mm, start, true, content::DATA_DEFAULT).unwrap();
        let folio = k.mem.head_of(pt::pfn(pte(&k, mm, start)));
        assert_eq!(k.mem.nr_pages(folio), 16);
        let vi = k.mms[mm as usize].find_vma(start).unwrap();
        k.madvise_cold_or_pageout(mm, vi, 0, 16, true);
        assert!(mapped(&k, mm, start, 16).is_empty());
        k.drain_all_stock(memcg);
        let cg = &mut k.memcgs[memcg as usize];
        cg.max_pages = cg.usage_pages + 8;

        k.touch(mm, start + 5, false, 0).unwrap();
        assert_eq!(mapped(&k, mm, start, 16), vec![4, 5, 6, 7]);
        let mthp = |k: &Kernel, order: usize, m: Mthp| k.stat.mthp[order][m as usize];
        assert_eq!(mthp(&k, 4, Mthp::SwpinFallbackCharge), 1);
        assert_eq!(mthp(&k, 4, Mthp::SwpinFallback), 1);
        assert_eq!(mthp(&k, 4, Mthp::Swpin), 0);
        assert_eq!(mthp(&k, 2, Mthp::Swpin), 1);
        assert_consistent(&k);
    }
}
