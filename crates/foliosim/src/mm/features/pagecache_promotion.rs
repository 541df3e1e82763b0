//! `+pagecache_promotion`: Gregory Price's "Promotion of Unmapped Page Cache Folios" (RFC v3
//! PATCH 0/5, 2025-01-06, unmerged; spec docs/tiering.md §D).
//!
//! Models the series' use of folio_mark_accessed as a hotness hint (mm/swap.c, classic LRU): a
//! folio that is active and referenced already, on the LRU, on a lower tier, read by a user task,
//! with NUMA tiering on and /sys/kernel/mm/numa/pagecache_promotion_enabled set, is a
//! promotion_candidate. It goes through numa_migrate_check (counting numa_hint_page_cache) and
//! migrate_misplaced_folio_prepare and is isolated onto the task's list, capped at
//! promote_rate_limit pages (the knob `pagecache_promotion_task_cap=0` removes the cap, as v2
//! had none); the task work on return to user mode (the run loop calls it) migrates the list
//! with migrate_misplaced_folio_batch. Left out: MGLRU (RFC v3 hooks the classic-LRU branch
//! only; v4 added one to lru_gen_inc_refs) and the series' preparatory changes that let the
//! migration interfaces take a NULL vmf/vma (nothing here needs them).

use crate::mm::folio::{pg, FolioId};
use crate::mm::migrate::MigrateReason;
use crate::mm::vmstat::Vm;
use crate::mm::Kernel;

impl Kernel {
    /// Hook at the end of folio_mark_accessed, for a folio already active and referenced.
    pub(in crate::mm) fn pagecache_promotion_hook_mark_accessed(&mut self, folio: FolioId) {
        if self.spec.profile.pagecache_promotion
            && self.mem.test(folio, pg::LRU)
            && self.numa_tiering()
            && self.spec.knobs.pagecache_promotion_enabled
        {
            self.promotion_candidate(folio);
        }
    }

    /// promotion_candidate: a referenced, active folio on a lower tier, read by a user task,
    /// goes through the NUMA-balancing checks and, if they pass, is isolated onto the task's
    /// promotion list.
    pub fn promotion_candidate(&mut self, folio: FolioId) {
        let nid = self.pfn_node(folio);
        let t = self.current as usize;
        if self.memory_tiers.node_is_toptier(nid) || !self.tasks[t].is_user() {
            return;
        }
        // The cap compares pages with the rate limit's MB/s value, as the RFC does.
        let cap = self.spec.knobs.promote_rate_limit_mbps;
        if self.spec.knobs.pagecache_promotion_task_cap && self.tasks[t].promo_count >= cap {
            return;
        }
        // numa_migrate_check(folio, NULL, ...): page-cache hint, task policy (local).
        let this_node = self.task_node();
        self.stat.count(Vm::NumaHintPageCache, 1);
        if nid == this_node {
            self.stat.count(Vm::NumaHintPageCacheLocal, 1);
            return;
        }
        if !self.should_promote(folio, this_node) {
            return;
        }
        // migrate_misplaced_folio_prepare(folio, NULL, nid).
        let nr = self.mem.nr_pages(folio) as u64;
        if self.mem.test(folio, pg::DIRTY) {
            return;
        }
        let z = &self.zones[this_node as usize];
        if !z.watermark_ok(0, z.wmark_high + nr) {
            self.wakeup_kswapd(this_node);
            return;
        }
        if !self.mem.test(folio, pg::LRU) {
            return;
        }
        self.lruvec_del_folio(folio);
        self.spend(crate::mm::TimeKind::Lru, self.hw.lru_op_ns);
        // task_work_add(TWA_RESUME) on the first; list_add_tail keeps file order.
        let task = &mut self.tasks[t];
        task.promo_list.push(folio);
        task.promo_count += nr;
    }

    /// task_numa_promotion_work, on return to user mode: migrates the task's list to its node.
    pub fn task_numa_promotion_work(&mut self, t: u32) {
        let task = &mut self.tasks[t as usize];
        task.promo_count = 0;
        if task.promo_list.is_empty() {
            return;
        }
        let list = std::mem::take(&mut task.promo_list);
        let node = self.task_node();
        self.migrate_misplaced_folio_batch(list, node);
    }

    /// migrate_misplaced_folio_batch: migrate_pages(MR_NUMA_MISPLACED) of an isolated list;
    /// what did not move goes back to the LRU. Returns the pages moved.
    pub fn migrate_misplaced_folio_batch(&mut self, mut list: Vec<FolioId>, node: u32) -> u64 {
        let moved = self.migrate_pages(&mut list, node, MigrateReason::NumaMisplaced);
        for f in list {
            self.folio_add_lru(f);
        }
        if moved > 0 {
            self.stat.count(Vm::NumaPagesMigrated, moved);
            // Counted whatever the tiers, as the RFC does.
            self.stat.count(Vm::PgpromoteSuccess, moved);
        }
        moved
    }
}
