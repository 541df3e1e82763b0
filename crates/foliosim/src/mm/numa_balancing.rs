//! NUMA balancing in memory-tiering mode: the scanner that makes PTEs PROT_NONE, the hint fault,
//! and the promotion decision with its hot threshold and rate limit.
//!
//! Models kernel/sched/fair.c (v6.7–v6.18: task_tick_numa, task_numa_work, task_scan_min/max/
//! start, the period doubling of update_task_scan_period for tiering faults,
//! should_numa_migrate_memory's tiering branch, numa_promotion_adjust_threshold,
//! numa_promotion_rate_limit, pgdat_free_space_enough), mm/mprotect.c change_prot_numa
//! (skips PROT_NONE PTEs and, in mode 2, top-tier folios; stamps the access time), and
//! mm/memory.c do_numa_page with mm/migrate.c migrate_misplaced_folio[_prepare]. The memory
//! policy decides the target (mpol_misplaced, mm/mempolicy.rs) and which VMAs are scanned at all
//! (vma_policy_mof): the default policy lets NUMA balancing move folios toward the faulting CPU;
//! a policy set by set_mempolicy or mbind does so only with MPOL_F_NUMA_BALANCING.
//! task_numa_work skips read-only file VMAs (shared libraries); mapped page-cache folios are
//! hinted and migrated like anonymous ones, except dirty ones, which stay.
//! Left out: mode 1's placement (numa groups, cpupid last-access filter, task migration between
//! nodes; a mode-1 fault on a remote folio simply migrates it), the per-VMA pids_active filter,
//! access-time wrap-around, and PMD-level hint faults (a PMD-mapped THP is handled per PTE).

use super::folio::{pg, FolioId};
use super::migrate::MigrateReason;
use super::pagetable::{self as pt};
use super::vmstat::Vm;
use super::Kernel;

pub const NUMA_BALANCING_NORMAL: u32 = 1;
pub const NUMA_BALANCING_MEMORY_TIERING: u32 = 2;
/// MAX_SCAN_WINDOW, in MB per second: the scan period floor is scan_size / this.
const MAX_SCAN_WINDOW_MB: u64 = 2560;
const TICK_NS: u64 = 4_000_000;
const NS_PER_MS: u64 = 1_000_000;

/// Per-node promotion state (the nbp_* fields of pglist_data) and the node's pgpromote_candidate.
#[derive(Clone, Debug, Default)]
pub struct NumaPgdat {
    pub nbp_threshold_ms: u64,
    pub nbp_th_start_ms: u64,
    pub nbp_th_nr_cand: u64,
    pub nbp_rl_start_ms: u64,
    pub nbp_rl_nr_cand: u64,
    pub pgpromote_candidate: u64,
}

impl Kernel {
    /// folio_xchg_access_time: a lower-tier folio's access time, replaced by `ms`.
    pub fn folio_xchg_access_time(&mut self, folio: FolioId, ms: u32) -> u32 {
        let node = self.pfn_node(folio) as usize;
        let i = (folio - self.zones[node].start_pfn) as usize;
        match self.access_time_ms[node].get_mut(i) {
            Some(t) => std::mem::replace(t, ms),
            None => 0,
        }
    }

    fn now_ms(&self) -> u64 {
        self.clock_ns / NS_PER_MS
    }

    pub fn numa_tiering(&self) -> bool {
        self.spec.knobs.numa_balancing & NUMA_BALANCING_MEMORY_TIERING != 0
    }

    /// Windows of scan_size in the task's RSS (task_nr_scan_windows).
    fn task_nr_scan_windows(&self, mm: u32) -> u64 {
        let m = &self.mms[mm as usize];
        let rss = m.rss_anon + m.rss_file;
        let scan_pages = self.spec.knobs.numa_scan_size_mb << 8;
        rss.div_ceil(scan_pages).max(1)
    }

    fn task_scan_min_ms(&self, mm: u32) -> u64 {
        let k = &self.spec.knobs;
        let floor = 1000 * k.numa_scan_size_mb / MAX_SCAN_WINDOW_MB;
        (k.numa_scan_period_min_ms / self.task_nr_scan_windows(mm)).max(floor)
    }

    fn task_scan_max_ms(&self, mm: u32) -> u64 {
        let max = self.spec.knobs.numa_scan_period_max_ms / self.task_nr_scan_windows(mm);
        max.max(self.task_scan_min_ms(mm))
    }

    /// task_tick_numa, checked whenever a user task gets the CPU: once its CPU time passes the
    /// next stamp, the scan work runs (on its way back to user space).
    pub fn task_tick_numa(&mut self, t: u32) {
        if self.spec.knobs.numa_balancing == 0 {
            return;
        }
        let Some(mm) = self.tasks[t as usize].mm else {
            return;
        };
        let task = &self.tasks[t as usize];
        let runtime = task.user_ns + task.sys_ns;
        let period_ns = task.numa_scan_period_ms * NS_PER_MS;
        if runtime <= task.node_stamp_ns + period_ns {
            return;
        }
        if task.node_stamp_ns == 0 {
            self.tasks[t as usize].numa_scan_period_ms = self.task_scan_min_ms(mm);
        }
        self.tasks[t as usize].node_stamp_ns += period_ns;
        if self.clock_ns >= self.mms[mm as usize].numa_next_scan_ns {
            self.task_numa_work(t, mm);
        }
    }

    /// task_numa_work: marks up to scan_size of the address space PROT_NONE, from where the last
    /// scan stopped.
    fn task_numa_work(&mut self, t: u32, mm: u32) {
        let start_ns = self.clock_ns;
        let period_ms = self.tasks[t as usize].numa_scan_period_ms;
        self.mms[mm as usize].numa_next_scan_ns = self.clock_ns + period_ms * NS_PER_MS;
        self.tasks[t as usize].node_stamp_ns += 2 * TICK_NS;
        let mut pages = (self.spec.knobs.numa_scan_size_mb << 8) as i64;
        let mut virtpages = pages * 8;
        let mut offset = self.mms[mm as usize].numa_scan_offset;
        let mut vi = self.mms[mm as usize]
            .vmas
            .partition_point(|v| v.end() <= offset);
        while pages > 0 && virtpages > 0 {
            let Some(v) = self.mms[mm as usize].vmas.get(vi) else {
                // Wrapped: the next scan starts a new sequence from the bottom.
                self.mms[mm as usize].numa_scan_seq += 1;
                offset = 0;
                break;
            };
            let (vstart, vend) = (v.start, v.end());
            if v.file.is_some() && v.flags & super::vma::VM_WRITE == 0 {
                // Read-only file mappings (shared libraries) are not worth hinting faults.
                offset = vend;
                vi += 1;
                continue;
            }
            let mut start = offset.max(vstart);
            while start < vend && pages > 0 && virtpages > 0 {
                // Each piece mbind made is a VMA of its own to the kernel, which skips those
                // whose policy does not allow migration on fault (vma_policy_mof).
                let piece_end = self.mms[mm as usize].vmas[vi].extent(start).1;
                if !self.vma_policy_mof(mm, vi, start) {
                    start = piece_end;
                    continue;
                }
                let end = (start as u64 + pages as u64)
                    .next_multiple_of(super::vma::HPAGE_PMD_NR as u64)
                    .min(piece_end as u64) as u32;
                let changed = self.change_prot_numa(mm, vi, start, end);
                if changed > 0 {
                    pages -= (end - start) as i64;
                }
                virtpages -= (end - start) as i64;
                start = end;
            }
            offset = start;
            if start >= vend {
                vi += 1;
            }
        }
        self.mms[mm as usize].numa_scan_offset = offset;
        // Charge the work 32 times over to the stamp, capping the scanner's overhead (~3%).
        let spent = self.clock_ns - start_ns;
        self.tasks[t as usize].node_stamp_ns += 32 * spent;
    }

    /// change_prot_numa over pages [from, to) of a VMA. Returns the PTEs changed.
    pub fn change_prot_numa(&mut self, mm: u32, vi: usize, from: u32, to: u32) -> u64 {
        self.flush_tlb_batched_pending(mm);
        let tiering_only = self.spec.knobs.numa_balancing == NUMA_BALANCING_MEMORY_TIERING;
        let now_ms = self.now_ms() as u32;
        let start = self.mms[mm as usize].vmas[vi].start;
        let cow = self.mms[mm as usize].vmas[vi].flags & super::vma::VM_SHARED == 0;
        let (mut changed, mut huge) = (0u64, 0u64);
        for vpn in from..to {
            let idx = (vpn - start) as usize;
            let pte = self.mms[mm as usize].vmas[vi].ptes[idx];
            if !pt::is_present(pte) || pte & pt::PROTNONE != 0 {
                continue;
            }
            let folio = self.mem.head_of(pt::pfn(pte));
            let node = self.pfn_node(folio);
            let toptier = self.memory_tiers.node_is_toptier(node);
            if tiering_only && toptier {
                continue;
            }
            if cow && self.mem.mapcount(folio) > 1 && self.mem.order(folio) == 0 {
                // folio_likely_mapped_shared on a COW mapping.
                continue;
            }
            if self.numa_tiering() && !toptier {
                self.folio_xchg_access_time(folio, now_ms);
            }
            // ptep_modify_prot_start clears the PTE: a contpte block unfolds (PAGE_NONE PTEs
            // are not valid, so nothing folds them again).
            self.contpte_try_unfold(mm, vi, idx);
            let p = &mut self.mms[mm as usize].vmas[vi].ptes[idx];
            *p = (*p | pt::PROTNONE) & !pt::WRITE;
            self.poisson_rearm(mm, vi, idx);
            changed += 1;
            if pte & pt::PMD != 0 && pt::pfn(pte) == folio {
                huge += 1;
            }
        }
        self.spend(super::TimeKind::PteUpdate, changed * self.hw.pte_update_ns);
        if changed > 0 {
            self.stat.count(Vm::NumaPteUpdates, changed);
            self.stat.count(Vm::NumaHugePteUpdates, huge);
            self.flush_tlb_mm_range(mm, from, (to - from) as u64, false);
        }
        changed
    }

    /// pgdat_free_space_enough: a zone has max(1 GiB, 1/16 of it) free above the promotion mark.
    fn pgdat_free_space_enough(&self, node: u32) -> bool {
        let z = &self.zones[node as usize];
        let enough = (z.managed_pages() / 16).max(1 << (30 - 12));
        z.nr_free_pages() > z.wmark_promo + enough
    }

    /// numa_promotion_adjust_threshold: every scan_period_max, move the hot threshold by 1/16 of
    /// twice the default toward the rate limit.
    fn numa_promotion_adjust_threshold(&mut self, node: u32, rate_limit_pages: u64, def_th: u64) {
        let now = self.now_ms();
        let period = self.spec.knobs.numa_scan_period_max_ms;
        let p = &mut self.pgdat_numa[node as usize];
        if now.saturating_sub(p.nbp_th_start_ms) <= period {
            return;
        }
        p.nbp_th_start_ms = now;
        let ref_cand = rate_limit_pages * period / 1000;
        let diff = p.pgpromote_candidate - p.nbp_th_nr_cand;
        let unit = def_th * 2 / 16;
        let mut th = if p.nbp_threshold_ms != 0 {
            p.nbp_threshold_ms
        } else {
            def_th
        };
        if diff * 10 > ref_cand * 11 {
            th = th.saturating_sub(unit).max(unit);
        } else if diff * 10 < ref_cand * 9 {
            th = (th + unit).min(2 * def_th);
        }
        p.nbp_th_nr_cand = p.pgpromote_candidate;
        p.nbp_threshold_ms = th;
    }

    /// should_numa_migrate_memory's tiering branch for a folio on a lower tier.
    pub(super) fn should_promote(&mut self, folio: FolioId, target: u32) -> bool {
        let nr = self.mem.nr_pages(folio) as u64;
        if self.pgdat_free_space_enough(target) {
            self.pgdat_numa[target as usize].nbp_threshold_ms = 0;
            return true;
        }
        let def_th = self.spec.knobs.numa_hot_threshold_ms;
        let rate_limit = self.spec.knobs.promote_rate_limit_mbps << (20 - 12);
        self.numa_promotion_adjust_threshold(target, rate_limit, def_th);
        let th = match self.pgdat_numa[target as usize].nbp_threshold_ms {
            0 => def_th,
            th => th,
        };
        let now = self.now_ms() as u32;
        let stamp = self.folio_xchg_access_time(folio, now);
        if now.wrapping_sub(stamp) as u64 >= th {
            return false;
        }
        // numa_promotion_rate_limit: candidates are counted before the limit is applied.
        let now_ms = self.now_ms();
        let p = &mut self.pgdat_numa[target as usize];
        p.pgpromote_candidate += nr;
        self.stat.count(Vm::PgpromoteCandidate, nr);
        if now_ms.saturating_sub(p.nbp_rl_start_ms) > 1000 {
            p.nbp_rl_start_ms = now_ms;
            p.nbp_rl_nr_cand = p.pgpromote_candidate;
        }
        p.pgpromote_candidate - p.nbp_rl_nr_cand < rate_limit
    }

    /// should_numa_migrate_memory: a lower-tier folio in tiering mode moves if hot enough and
    /// within the rate limit; otherwise mode 1 moves it (its cpupid and group filters are left
    /// out).
    fn should_numa_migrate_memory(&mut self, folio: FolioId, src: u32, target: u32) -> bool {
        if self.numa_tiering() && !self.memory_tiers.node_is_toptier(src) {
            return self.should_promote(folio, target);
        }
        self.spec.knobs.numa_balancing & NUMA_BALANCING_NORMAL != 0
    }

    /// do_numa_page: a hint fault on a PROT_NONE PTE at `vpn`.
    pub fn do_numa_page(&mut self, mm: u32, vi: usize, vpn: u32) {
        let idx = (vpn - self.mms[mm as usize].vmas[vi].start) as usize;
        let pte = self.mms[mm as usize].vmas[vi].ptes[idx];
        let folio = self.mem.head_of(pt::pfn(pte));
        let nid = self.pfn_node(folio);
        let this_node = self.task_node();
        self.stat.count(Vm::NumaHintFaults, 1);
        if nid == this_node {
            self.stat.count(Vm::NumaHintFaultsLocal, 1);
        }
        let target = self.mpol_misplaced(folio, mm, vi, vpn, |k, target| {
            k.should_numa_migrate_memory(folio, nid, target)
        });
        if let Some(target) = target {
            if self.migrate_misplaced_folio(folio, target) {
                self.task_numa_fault_migrated(mm);
                return;
            }
        }
        // Restore the PTE: accessible again; writable if the anonymous folio is exclusive, or
        // for a page-cache folio if the mapping is shared and the PTE dirty already
        // (can_change_pte_writable); a private file page stays read-only for its COW.
        let writable = if !self.folio_test_anon(folio) {
            let flags = self.mms[mm as usize].vmas[vi].flags;
            flags & super::vma::VM_SHARED != 0 && pte & pt::DIRTY != 0
        } else {
            self.mem.mapcount(folio) == 1 || self.mem.order(folio) > 0
        };
        let p = &mut self.mms[mm as usize].vmas[vi].ptes[idx];
        *p &= !pt::PROTNONE;
        if writable {
            *p |= pt::WRITE;
        }
        self.spend(super::TimeKind::PteUpdate, self.hw.pte_update_ns);
        self.arch_set_ptes(mm, vi, idx, 1);
    }

    /// migrate_misplaced_folio_prepare + migrate_misplaced_folio. True if the folio moved.
    fn migrate_misplaced_folio(&mut self, folio: FolioId, target: u32) -> bool {
        let nr = self.mem.nr_pages(folio) as u64;
        let z = &self.zones[target as usize];
        if !z.watermark_ok(0, z.wmark_high + nr) {
            if self.numa_tiering() {
                self.wakeup_kswapd(target);
            }
            return false;
        }
        if !self.mem.test(folio, pg::LRU) || self.mem.test(folio, pg::SWAPCACHE) {
            return false;
        }
        if self.folio_is_file_lru(folio) && self.mem.test(folio, pg::DIRTY) {
            // migrate_misplaced_folio_prepare: dirty page cache is not moved on a hint fault.
            return false;
        }
        self.lruvec_del_folio(folio);
        let src_node = self.pfn_node(folio);
        let moved = self.migrate_folio(folio, target, MigrateReason::NumaMisplaced);
        if moved == 0 {
            self.folio_add_lru(folio);
            return false;
        }
        self.stat.count(Vm::NumaPagesMigrated, moved);
        if !self.memory_tiers.node_is_toptier(src_node) && self.memory_tiers.node_is_toptier(target)
        {
            self.stat.count(Vm::PgpromoteSuccess, moved);
        }
        true
    }

    /// task_numa_fault for a promoted folio: in tiering mode it is neither local nor shared, so
    /// task_numa_placement doubles the scan period, once per scan sequence.
    fn task_numa_fault_migrated(&mut self, mm: u32) {
        let t = self.current as usize;
        let seq = self.mms[mm as usize].numa_scan_seq;
        if self.tasks[t].numa_scan_seq == seq {
            return;
        }
        self.tasks[t].numa_scan_seq = seq;
        let max = self.task_scan_max_ms(mm);
        let task = &mut self.tasks[t];
        task.numa_scan_period_ms = (task.numa_scan_period_ms * 2).min(max);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::mm::folio::content;

    /// Node 0: 2 CPUs of DRAM; node 1: a CPU-less lower tier. One task, whose mm is also live
    /// on CPU 1 (as if a second thread ran there).
    pub(crate) fn boot(profile: &str) -> (Kernel, u32, u32) {
        let toml = r#"
name = "t"
[[machine.node]]
memory = "256M"
cpus = 2
[[machine.node]]
memory = "256M"
cpus = 0
tier = "cxl"
[knobs]
"/proc/sys/kernel/numa_balancing" = "2"
"/sys/kernel/mm/numa/demotion_enabled" = "1"
"/sys/kernel/mm/transparent_hugepage/enabled" = "never"
[[task]]
name = "t"
ops = [{ op = "mmap", region = "a", size = "4M" }]
"#;
        let (mut k, t) = crate::mm::boot_for_test(toml, profile);
        let mm = k.tasks[t as usize].mm.unwrap();
        k.mms[mm as usize].cpumask.set(1);
        k.cpu_tlbs[1].loaded_mm = mm;
        k.cpu_tlbs[1].lazy = false;
        (k, t, mm)
    }

    /// Maps `n` written pages; returns their first vpn.
    pub(crate) fn written_pages(k: &mut Kernel, mm: u32, n: u32) -> u32 {
        let start = k.mmap_anon(mm, n);
        for vpn in start..start + n {
            k.touch(mm, vpn, true, content::DATA_DEFAULT).unwrap();
        }
        start
    }

    pub(crate) fn pte(k: &Kernel, mm: u32, vpn: u32) -> pt::Pte {
        let vi = k.mms[mm as usize].find_vma(vpn).unwrap();
        k.mms[mm as usize].vmas[vi].ptes[(vpn - k.mms[mm as usize].vmas[vi].start) as usize]
    }

    pub(crate) fn demote(k: &mut Kernel, mm: u32, vpn: u32) -> u64 {
        let folio = k.mem.head_of(pt::pfn(pte(k, mm, vpn)));
        k.lru_add_drain();
        k.lruvec_del_folio(folio);
        let mut list = vec![folio];
        k.migrate_pages(&mut list, 1, MigrateReason::Demotion)
    }

    #[test]
    fn hint_fault_promotion_needs_no_remote_flush_but_demotion_does() {
        let (mut k, _, mm) = boot("v6.9");
        let vpn = written_pages(&mut k, mm, 1);
        assert_eq!(k.pfn_node(pt::pfn(pte(&k, mm, vpn))), 0);
        // Demotion clears a PTE the TLB of CPU 1 may hold: one batched flush with an IPI.
        assert_eq!(demote(&mut k, mm, vpn), 1);
        k.lru_add_drain();
        assert_eq!(k.stat.get(Vm::NrTlbRemoteFlush), 1);
        assert_eq!(k.stat.get(Vm::NrTlbRemoteFlushReceived), 1);
        assert_eq!(k.pfn_node(pt::pfn(pte(&k, mm, vpn))), 1);
        // The scan makes it PROT_NONE (and flushes, as change_protection does).
        let vi = k.mms[mm as usize].find_vma(vpn).unwrap();
        assert_eq!(k.change_prot_numa(mm, vi, vpn, vpn + 1), 1);
        assert!(pte(&k, mm, vpn) & pt::PROTNONE != 0);
        assert_eq!(k.stat.get(Vm::NumaPteUpdates), 1);
        let flushes = k.stat.get(Vm::NrTlbRemoteFlush);
        // The hint fault promotes it; the PROT_NONE PTE was not accessible, so nothing is flushed.
        k.touch(mm, vpn, false, 0).unwrap();
        assert_eq!(k.stat.get(Vm::NumaHintFaults), 1);
        assert_eq!(k.stat.get(Vm::PgpromoteSuccess), 1);
        assert_eq!(k.pfn_node(pt::pfn(pte(&k, mm, vpn))), 0);
        assert_eq!(k.stat.get(Vm::NrTlbRemoteFlush), flushes);
        assert!(pt::is_accessible(pte(&k, mm, vpn)));
        // A migration entry made from the read-only PROT_NONE PTE maps the copy read-only.
        assert_eq!(pte(&k, mm, vpn) & pt::WRITE, 0);
    }

    #[test]
    fn scan_skips_top_tier_folios_in_tiering_mode() {
        let (mut k, _, mm) = boot("v6.9");
        let vpn = written_pages(&mut k, mm, 4);
        let vi = k.mms[mm as usize].find_vma(vpn).unwrap();
        assert_eq!(k.change_prot_numa(mm, vi, vpn, vpn + 4), 0);
        assert_eq!(k.stat.get(Vm::NrTlbRemoteFlush), 0);
        demote(&mut k, mm, vpn + 2);
        assert_eq!(k.change_prot_numa(mm, vi, vpn, vpn + 4), 1);
    }

    #[test]
    fn the_scan_skips_read_only_file_vmas_and_a_hint_fault_promotes_a_mapped_file_folio() {
        use crate::mm::vma::{VM_SHARED, VM_WRITE};
        let (mut k, t, mm) = boot("v6.18");
        let f = k.create_file(crate::mm::filemap::File::new(
            "f".into(),
            64 << 10,
            0,
            false,
        ));
        // The page cache goes to the lower tier, as under `numactl --membind=1`.
        k.do_set_mempolicy(crate::mm::mempolicy::Mempolicy::parse("bind:1", 2).unwrap());
        for index in 0..16 {
            let gfp = crate::mm::memory::Gfp::USER;
            k.filemap_alloc_folio(f, index, 0, gfp).unwrap();
        }
        k.lru_add_drain();
        k.do_set_mempolicy(None);
        let ro = k.mmap_file(mm, f, 0, 16, 0);
        let rw = k.mmap_file(mm, f, 0, 16, VM_WRITE | VM_SHARED);
        k.touch(mm, ro, false, 0).unwrap();
        k.touch(mm, rw, false, 0).unwrap();
        k.task_numa_work(t, mm);
        for i in 0..16 {
            assert_eq!(
                pte(&k, mm, ro + i) & pt::PROTNONE,
                0,
                "read-only file VMA skipped"
            );
            assert_ne!(pte(&k, mm, rw + i) & pt::PROTNONE, 0);
        }
        assert_eq!(k.stat.get(Vm::NumaPteUpdates), 16);
        // The hint fault moves the folio to DRAM: both mappings and the page cache follow.
        let old = k.files[f as usize].cache[3];
        k.touch(mm, rw + 3, false, 0).unwrap();
        assert_eq!(k.stat.get(Vm::PgpromoteSuccess), 1);
        let new = k.files[f as usize].cache[3];
        assert_ne!(new, old);
        assert_eq!(k.pfn_node(new), 0);
        assert_eq!(pt::pfn(pte(&k, mm, rw + 3)), new);
        assert_eq!(pt::pfn(pte(&k, mm, ro + 3)), new);
        // A clean shared page comes back read-only, so that its first write is still seen.
        assert_eq!(pte(&k, mm, rw + 3) & pt::WRITE, 0);
        assert!(
            crate::check::check(&k).is_empty(),
            "{:?}",
            crate::check::check(&k)
        );
    }

    #[test]
    fn a_cpu_the_task_left_is_lazy_and_takes_no_interrupt() {
        let (mut k, t, mm) = boot("v6.9");
        k.cpu_tlbs[1].last_task = u32::MAX;
        // The task moves from CPU 0 to CPU 1; CPU 0 idles with the mm loaded lazily.
        k.current_cpu = 1;
        k.switch_to(1, t);
        assert!(k.cpu_tlbs[0].lazy && !k.cpu_tlbs[1].lazy);
        assert!(k.mms[mm as usize].cpumask.test(0));
        k.flush_tlb_mm_range(mm, 0, 64, false);
        // v6.7 counts the call (CPU 0 is in the mask) but interrupts no one...
        assert_eq!(k.stat.get(Vm::NrTlbRemoteFlush), 1);
        assert_eq!(k.stat.get(Vm::NrTlbRemoteFlushReceived), 0);
        assert_eq!(k.stat.get(Vm::NrTlbLocalFlushAll), 1);
        // ...unless page tables were freed.
        k.flush_tlb_mm(mm);
        assert_eq!(k.stat.get(Vm::NrTlbRemoteFlushReceived), 1);
    }
}
