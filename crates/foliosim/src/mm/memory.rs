//! Page faults: anonymous faults with the mTHP order choice, swap-in, copy-on-write, fork.
//!
//! Models mm/memory.c (v6.9–v6.18): handle_mm_fault → do_anonymous_page / alloc_anon_folio
//! (highest allowed order first, naturally aligned, inside the VMA, all PTEs none, fall back on
//! allocation or memcg-charge failure), do_huge_pmd_anonymous_page for the PMD order, read faults
//! mapping the zero page, do_swap_page (swap cache, the SWP_SYNCHRONOUS_IO bypass, and from v6.12
//! mTHP swap-in on that path), do_wp_page
//! and copy_page_range. Every folio is allocated by vma_alloc_folio, placed by the VMA's memory
//! policy (mm/mempolicy.rs), and a fault's folio stays inside the VMA piece its policy covers.
//! Left out: file faults, userfaultfd, fault-around, the huge zero page's own
//! folio, swap readahead, and mapping a whole large folio found in the swap cache.

use super::folio::{content, pg, FolioId};
use super::pagetable::{self as pt};
use super::vma::{VM_HUGEPAGE, VM_NOHUGEPAGE};
use super::Kernel;
use crate::scenario::knobs::{ThpDefrag, ThpEnabled, PMD_ORDER};
use crate::scenario::profile::Kernel as Gen;
use crate::stats::{Memcg, Mthp, Vm};

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
}

impl Gfp {
    /// GFP_HIGHUSER_MOVABLE.
    pub const USER: Gfp = Gfp {
        direct_reclaim: true,
        kswapd_reclaim: true,
        retry: true,
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
            self.handle_mm_fault(mm, vi, vpn, write)?;
        }
        let pte = self.mms[mm as usize].vmas[vi].ptes[idx];
        let huge = pte & pt::PMD != 0;
        self.clock_ns += self.tlb_access(mm, vpn, huge, write);
        let pte = &mut self.mms[mm as usize].vmas[vi].ptes[idx];
        if pt::is_present(*pte) {
            *pte |= pt::YOUNG;
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
        self.charge_time(self.hw.fault_entry_ns);
        let idx = (vpn - self.mms[mm as usize].vmas[vi].start) as usize;
        let pte = self.mms[mm as usize].vmas[vi].ptes[idx];
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
        } else if pt::is_zero_page(pte) || write {
            self.do_anonymous_page(mm, vi, vpn, pt::is_zero_page(pte))
        } else {
            // A read of never-written anonymous memory maps the shared zero page.
            self.mms[mm as usize].vmas[vi].ptes[idx] = pt::ZERO_PAGE;
            self.charge_time(self.hw.pte_update_ns);
            Ok(())
        }
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
            if is_pmd && self.profile_kernel() >= Gen::V6_12 && self.spec.knobs.shrink_underused {
                // Queued at fault so that the underused-THP shrinker can look at it.
                self.deferred_split_folio(pfn, false);
            }
            return Ok(());
        }
        let pfn = self
            .vma_alloc_folio(Gfp::USER, 0, mm, vi, vpn)
            .ok_or(Killed)?;
        let av = self.mms[mm as usize].anon_vma;
        self.mem.prep_folio(pfn, 0, av, memcg, vpn);
        if self.mem_cgroup_charge(pfn, memcg, Gfp::USER).is_err() {
            self.mem.clear_folio(pfn);
            self.free_pages(pfn, 0);
            return Err(Killed);
        }
        self.map_new_anon_folio(mm, vi, vpn, pfn, false);
        Ok(())
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
        self.mms[mm as usize].rss_anon += nr as u64;
        self.mem.add_mapcount(folio, nr as i32);
        self.charge_time(
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
        let exclusive = self.anon_vmas[self.mms[mm as usize].anon_vma as usize]
            .mms
            .len()
            == 1;
        let (folio, first_page, base_vpn, base_off, nr) = match self.swap_cache_lookup(dev, off) {
            Some((folio, page)) => (folio, page, vpn, off, 1),
            None => {
                self.stat.count(Vm::Pgmajfault, 1);
                self.memcgs[memcg as usize].count(Memcg::Pgmajfault, 1);
                let bypass = self.swap[dev as usize].synchronous()
                    && self.swap[dev as usize].swap_count(off) == 1;
                let mut order = if bypass && self.profile_kernel() >= Gen::V6_12 {
                    self.swap_folio_order(mm, vi, vpn, dev, off)
                } else {
                    0
                };
                let vma_flags = self.mms[mm as usize].vmas[vi].flags;
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
                        let av = self.mms[mm as usize].anon_vma;
                        self.mem.prep_folio(pfn, order, av, memcg, base);
                        if self.mem_cgroup_charge(pfn, memcg, gfp).is_ok() {
                            break pfn;
                        }
                        charge_failed = true;
                        self.mem.clear_folio(pfn);
                        self.free_pages(pfn, order);
                    }
                    if order == 0 {
                        return Err(Killed);
                    }
                    // Per-size swap-in fallback counters came after v6.12.
                    if self.profile_kernel() >= Gen::V6_18 {
                        self.stat.count_mthp(order, Mthp::SwpinFallback);
                        if charge_failed {
                            self.stat.count_mthp(order, Mthp::SwpinFallbackCharge);
                        }
                    }
                    order = 0;
                };
                let nr = 1u32 << order;
                let base_vpn = vpn & !(nr - 1);
                let base_off = off - (vpn - base_vpn);
                self.mem.set(folio, pg::SWAPBACKED);
                if !bypass {
                    self.add_to_swap_cache(folio, dev, base_off);
                }
                self.swap_read_folio(folio, dev, base_off, nr);
                if order > 0 {
                    self.stat.count_mthp(order, Mthp::Swpin);
                }
                self.memcgs[memcg as usize].count(Memcg::Pswpin, nr as u64);
                self.folio_add_lru(folio);
                (folio, folio, base_vpn, base_off, nr)
            }
        };
        let mut flags = pt::YOUNG;
        if exclusive {
            flags |= pt::WRITE;
        }
        if write {
            flags |= pt::DIRTY;
            self.mem.set(folio, pg::DIRTY);
        }
        let start = self.mms[mm as usize].vmas[vi].start;
        for i in 0..nr {
            let idx = (base_vpn + i - start) as usize;
            self.mms[mm as usize].vmas[vi].ptes[idx] = pt::mk_present(first_page + i, flags);
        }
        self.mms[mm as usize].rss_anon += nr as u64;
        self.mm_add_swapents(mm, -(nr as i64));
        self.mem.add_mapcount(folio, nr as i32);
        self.charge_time(nr as u64 * self.hw.pte_update_ns);
        for i in 0..nr {
            self.swap_free(dev, base_off + i);
        }
        if self.mem.test(folio, pg::SWAPCACHE) && (self.vm_swap_full() || (write && exclusive)) {
            self.folio_free_swap(folio);
        }
        Ok(())
    }

    /// alloc_swap_folio's order choice (v6.12): the highest enabled mTHP order below PMD whose
    /// aligned range lies in the VMA, is all swap PTEs with consecutive offsets on one device
    /// aligned like the addresses, and has no slot in the swap cache.
    fn swap_folio_order(&self, mm: u32, vi: usize, vpn: u32, dev: u32, off: u32) -> u32 {
        let v = &self.mms[mm as usize].vmas[vi];
        let orders = self.anon_thp_orders(v.flags) & !(1 << PMD_ORDER);
        let si = &self.swap[dev as usize];
        let mut order = 32 - orders.leading_zeros();
        while order > 1 {
            order -= 1;
            if orders & (1 << order) == 0 {
                continue;
            }
            let nr = 1u32 << order;
            let base = vpn & !(nr - 1);
            let (start, end) = v.extent(vpn);
            if base < start || base + nr > end || vpn % nr != off % nr {
                continue;
            }
            let base_off = off - (vpn - base);
            let fits = (0..nr).all(|i| {
                let p = v.ptes[(base + i - v.start) as usize];
                pt::is_swap(p)
                    && pt::swap_device(p) == dev
                    && pt::swap_offset(p) == base_off + i
                    && si.swap_map[(base_off + i) as usize] & super::swapfile::SWAP_HAS_CACHE == 0
            });
            if fits {
                return order;
            }
        }
        0
    }

    /// do_wp_page: a write to a present read-only PTE (shared with a forked child, or exclusive).
    fn do_wp_page(&mut self, mm: u32, vi: usize, vpn: u32, pte: pt::Pte) -> Result<(), Killed> {
        let idx = (vpn - self.mms[mm as usize].vmas[vi].start) as usize;
        let old_page = pt::pfn(pte);
        let old = self.mem.head_of(old_page);
        if self.spec.profile.migrc {
            // MIGRC gives up when a read-only PTE may become writable.
            self.migrc_flush_free_folios();
        }
        if self.mem.mapcount(old) == 1 && !self.mem.test(old, pg::SWAPCACHE) {
            // Only we map it: reuse in place.
            self.mms[mm as usize].vmas[vi].ptes[idx] |= pt::WRITE | pt::DIRTY;
            self.charge_time(self.hw.pte_update_ns);
            return Ok(());
        }
        let memcg = self.mms[mm as usize].memcg;
        let pfn = self
            .vma_alloc_folio(Gfp::USER, 0, mm, vi, vpn)
            .ok_or(Killed)?;
        let av = self.mms[mm as usize].anon_vma;
        self.mem.prep_folio(pfn, 0, av, memcg, vpn);
        if self.mem_cgroup_charge(pfn, memcg, Gfp::USER).is_err() {
            self.mem.clear_folio(pfn);
            self.free_pages(pfn, 0);
            return Err(Killed);
        }
        self.mem.pages[pfn as usize].content = self.mem.pages[old_page as usize].content;
        self.mem.set(pfn, pg::SWAPBACKED);
        self.mms[mm as usize].vmas[vi].ptes[idx] =
            pt::mk_present(pfn, pt::WRITE | pt::DIRTY | pt::YOUNG);
        self.mem.add_mapcount(pfn, 1);
        self.folio_add_lru(pfn);
        self.charge_time(self.hw.copy_page_ns + self.hw.pte_update_ns);
        self.flush_tlb_mm_range(mm, vpn, 1, false);
        self.folio_remove_rmap_ptes(old, 1);
        Ok(())
    }

    /// copy_page_range for a private anonymous fork: the child shares every folio and swap entry,
    /// and both sides lose write access so the next write copies.
    pub fn fork_mm(&mut self, parent: u32, child_owner: u32) -> u32 {
        let memcg = self.mms[parent as usize].memcg;
        let child = self.mm_create(memcg, child_owner);
        let av = self.mms[parent as usize].anon_vma as usize;
        self.anon_vmas[av].mms.push(child);
        let nr_vmas = self.mms[parent as usize].vmas.len();
        let mut copied = 0u64;
        for vi in 0..nr_vmas {
            let (start, flags, mut ptes, policies) = {
                let v = &mut self.mms[parent as usize].vmas[vi];
                for p in v.ptes.iter_mut() {
                    if pt::is_present(*p) {
                        *p &= !pt::WRITE;
                    }
                }
                (v.start, v.flags, v.ptes.clone(), v.policies.clone())
            };
            for p in ptes.iter_mut() {
                if pt::is_present(*p) {
                    let folio = self.mem.head_of(pt::pfn(*p));
                    self.mem.add_mapcount(folio, 1);
                    self.mms[child as usize].rss_anon += 1;
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
            });
        }
        self.mms[child as usize].next_vpn = self.mms[parent as usize].next_vpn;
        self.charge_time(copied * self.hw.pte_update_ns);
        self.flush_tlb_mm(parent);
        child
    }
}
