//! Page migration between nodes. `+migrc` (the deferred TLB flush of migrated read-only folios)
//! is in mm/features/migrc.rs; the `migrc_hook_*` calls here are where it acts.
//!
//! Models mm/migrate.c (v6.7–v6.18) for MIGRATE_ASYNC, the mode of promotion and demotion:
//! migrate_pages cutting the list into batches of NR_MAX_BATCHED_MIGRATION (512) base pages,
//! migrate_pages_batch with its unmap phase (try_to_migrate under TTU_BATCH_FLUSH), one
//! try_to_unmap_flush, and its move phase (copy, remove_migration_ptes, source freed), and the
//! counters pgmigrate_success/fail and thp_migration_*. A new PTE is writable only if the old one
//! was; it keeps the young and dirty bits only when the migration entry can carry them
//! (swap_migration_ad_supported), else it starts old and clean.
//! Dirty page-cache folios fail as busy (fallback_migrate_folio in async mode), as do folios
//! under writeback. Left out: sync modes and their retries (the simulator migrates a batch
//! atomically, so the -EAGAIN passes never happen), migration of swap-cache and hugetlb
//! folios (page-cache folios, mapped or not, move with their page-cache entry), splitting
//! large folios that cannot be migrated.

use super::folio::{pg, FolioId};
use super::pagetable::{self as pt, Pte};
use super::vmstat::Vm;
use super::Kernel;

/// NR_MAX_BATCHED_MIGRATION: a batch ends with the folio that brings it to this many pages.
pub const NR_MAX_BATCHED_MIGRATION: u64 = 512;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrateReason {
    Demotion,
    NumaMisplaced,
    /// mbind with MPOL_MF_MOVE (MR_MEMPOLICY_MBIND).
    MempolicyMbind,
}

/// One PTE cleared by try_to_migrate, to be pointed at the destination.
#[derive(Clone, Copy, Debug)]
pub(super) struct MigrationEntry {
    mm: u32,
    vi: usize,
    pub(super) idx: usize,
    pub(super) pte: Pte,
}

/// A folio unmapped by migrate_pages_batch, waiting for the move phase; its migration entries
/// are a range of the batch's entry list.
#[derive(Clone, Debug)]
struct Unmapped {
    src: FolioId,
    dst: FolioId,
    entries: std::ops::Range<usize>,
    /// `+migrc` keeps the source allocated until a later flush.
    kept_by_migrc: bool,
}

/// Lists migrate_pages reuses from call to call, as every hint-fault promotion is a call.
#[derive(Default, Debug)]
pub struct MigrateScratch {
    batch: Vec<FolioId>,
    unmapped: Vec<Unmapped>,
    entries: Vec<MigrationEntry>,
    single: Vec<FolioId>,
}

// The Kernel's `migrc` field names its type by this path.
pub use super::features::migrc::Migrc;

impl Kernel {
    /// Frees a migrated source folio; the charge went to the destination.
    pub(in crate::mm) fn free_migrated_source(&mut self, folio: FolioId) {
        let order = self.mem.order(folio);
        self.mem.clear_folio(folio);
        self.free_pages(folio, order);
        self.spend(super::TimeKind::Migration, self.hw.page_alloc_ns);
    }

    /// migrate_pages (MIGRATE_ASYNC) of isolated folios to `target`. Returns the base pages
    /// moved; folios that could not be moved are left in `list` for the caller to put back.
    pub fn migrate_pages(
        &mut self,
        list: &mut Vec<FolioId>,
        target: u32,
        reason: MigrateReason,
    ) -> u64 {
        let mut batch = std::mem::take(&mut self.migrate_scratch.batch);
        let (mut succeeded, mut thp_succeeded, mut thp_failed) = (0, 0, 0);
        let mut failed_pages = 0u64;
        // Folios not moved are kept in list[..nr_failed], in the order the kernel's ret_folios
        // gets them; list[next..] are still to be tried.
        let (mut nr_failed, mut next) = (0, 0);
        while next < list.len() {
            batch.clear();
            let mut pages = 0u64;
            while next < list.len() {
                let f = list[next];
                next += 1;
                pages += self.mem.nr_pages(f) as u64;
                batch.push(f);
                if pages >= NR_MAX_BATCHED_MIGRATION {
                    break;
                }
            }
            let (pages, thps, stop) = self.migrate_pages_batch(&mut batch, target, reason);
            succeeded += pages;
            thp_succeeded += thps;
            for &f in &batch {
                thp_failed +=
                    (self.mem.order(f) >= crate::scenario::knobs::PMD_ORDER as u32) as u64;
                failed_pages += self.mem.nr_pages(f) as u64;
                list[nr_failed] = f;
                nr_failed += 1;
            }
            if stop {
                // -ENOMEM: nothing more can be allocated on the target.
                while next < list.len() {
                    failed_pages += self.mem.nr_pages(list[next]) as u64;
                    list[nr_failed] = list[next];
                    nr_failed += 1;
                    next += 1;
                }
            }
        }
        list.truncate(nr_failed);
        self.migrate_scratch.batch = batch;
        self.stat.count(Vm::PgmigrateSuccess, succeeded);
        self.stat.count(Vm::PgmigrateFail, failed_pages);
        self.stat.count(Vm::ThpMigrationSuccess, thp_succeeded);
        self.stat.count(Vm::ThpMigrationFail, thp_failed);
        succeeded
    }

    /// migrate_pages of one isolated folio (a hint-fault promotion). Returns the base pages moved;
    /// with 0 the folio is still isolated, for the caller to put back.
    pub fn migrate_folio(&mut self, folio: FolioId, target: u32, reason: MigrateReason) -> u64 {
        let mut list = std::mem::take(&mut self.migrate_scratch.single);
        list.clear();
        list.push(folio);
        let moved = self.migrate_pages(&mut list, target, reason);
        self.migrate_scratch.single = list;
        moved
    }

    /// migrate_pages_batch: unmap every folio, flush once, move. `batch` keeps the folios not
    /// migrated; returns the base pages and THPs moved, and whether the target ran out of memory.
    fn migrate_pages_batch(
        &mut self,
        batch: &mut Vec<FolioId>,
        target: u32,
        reason: MigrateReason,
    ) -> (u64, u64, bool) {
        let mut migrc = self.migrc_hook_batch_start(reason);
        let mut unmapped = std::mem::take(&mut self.migrate_scratch.unmapped);
        let mut entries = std::mem::take(&mut self.migrate_scratch.entries);
        unmapped.clear();
        entries.clear();
        let mut enomem = false;
        let mut i = 0;
        while i < batch.len() {
            let src = batch[i];
            self.migrc_hook_check_pause(&mut migrc);
            // A dirty page-cache folio is busy in MIGRATE_ASYNC: fallback_migrate_folio will not
            // write it out (filesystems with their own migrate_folio are not modelled).
            let dirty_file = self.mem.test(src, pg::DIRTY) && self.folio_is_file_lru(src);
            if self.mem.test(src, pg::SWAPCACHE) || self.mem.test(src, pg::WRITEBACK) || dirty_file
            {
                i += 1;
                continue;
            }
            let order = self.mem.order(src);
            let Some(dst) = self.alloc_pages_thisnode(target, order, false) else {
                enomem = true;
                break;
            };
            self.migrc_hook_unmap_start(&migrc);
            let first_entry = entries.len();
            self.try_to_migrate(src, &mut entries);
            let kept_by_migrc = self.migrc_hook_unmap_end(&mut migrc, order);
            unmapped.push(Unmapped {
                src,
                dst,
                entries: first_entry..entries.len(),
                kept_by_migrc,
            });
            batch.swap_remove(i);
        }
        let (mut pages, mut thps) = (0, 0);
        if !unmapped.is_empty() {
            self.migrc_hook_before_flush(&mut migrc);
            self.try_to_unmap_flush();
            for u in unmapped.drain(..) {
                let order = self.mem.order(u.src);
                pages += 1u64 << order;
                thps += (order >= crate::scenario::knobs::PMD_ORDER as u32) as u64;
                self.move_to_new_folio(u.src, u.dst, &entries[u.entries]);
                if u.kept_by_migrc {
                    self.migrc_hook_keep_source(u.src);
                } else {
                    self.free_migrated_source(u.src);
                }
            }
        }
        self.migrate_scratch.unmapped = unmapped;
        self.migrate_scratch.entries = entries;
        (pages, thps, enomem)
    }

    /// try_to_migrate: clears every PTE that maps `src`, deferring or doing their flushes, and
    /// appends one migration entry per PTE to `entries`.
    pub(super) fn try_to_migrate(&mut self, src: FolioId, entries: &mut Vec<MigrationEntry>) {
        let end = src + self.mem.nr_pages(src);
        let first = entries.len();
        let mappings = self.folio_mappings(src);
        for &(mm, vi) in &mappings {
            let (from, nr) = self.folio_ptes(src, mm, vi);
            let start = self.mms[mm as usize].vmas[vi].start;
            for idx in from..from + nr {
                self.poisson_advance(mm, vi, idx);
                let pte = self.mms[mm as usize].vmas[vi].ptes[idx];
                if !pt::maps_pfn_in(pte, src, end) {
                    continue;
                }
                self.contpte_try_unfold(mm, vi, idx);
                let pte = self.mms[mm as usize].vmas[vi].ptes[idx];
                self.mms[mm as usize].vmas[vi].ptes[idx] = pt::PTE_NONE;
                if pte & pt::DIRTY != 0 {
                    self.folio_mark_dirty(src);
                }
                self.unmap_flush_pte(mm, start + idx as u32, pte);
                entries.push(MigrationEntry { mm, vi, idx, pte });
            }
            self.spend(super::TimeKind::Migration, self.hw.rmap_walk_ns);
        }
        self.rmap_scratch = mappings;
        let nr_entries = entries.len() - first;
        self.spend(
            super::TimeKind::Migration,
            nr_entries as u64 * self.hw.pte_update_ns,
        );
        self.mem.add_mapcount(src, -(nr_entries as i32));
    }

    /// move_to_new_folio + remove_migration_ptes: `dst` takes `src`'s data, state and mappings.
    fn move_to_new_folio(&mut self, src: FolioId, dst: FolioId, entries: &[MigrationEntry]) {
        let order = self.mem.order(src);
        let nr = self.mem.nr_pages(src);
        let (av, memcg, index) = (
            self.mem.mapping_field(src),
            self.mem.memcg(src),
            self.mem.index(src),
        );
        if order > 1 {
            self.folio_unqueue_deferred_split(src);
        }
        self.mem.prep_folio(dst, order, av, memcg, index);
        for i in 0..nr {
            self.mem.pages[(dst + i) as usize].content = self.mem.pages[(src + i) as usize].content;
        }
        for f in [
            pg::REFERENCED,
            pg::ACTIVE,
            pg::DIRTY,
            pg::SWAPBACKED,
            pg::WORKINGSET,
        ] {
            if self.mem.test(src, f) {
                self.mem.set(dst, f);
            }
        }
        let stamp = self.folio_xchg_access_time(src, 0);
        self.folio_xchg_access_time(dst, stamp);
        let ad = self.spec.knobs.swap_migration_ad_supported;
        for e in entries {
            let old = e.pte;
            let mut flags = old & pt::PMD;
            if old & pt::WRITE != 0 {
                flags |= pt::WRITE;
            }
            if ad {
                flags |= old & (pt::YOUNG | pt::DIRTY);
            }
            let pfn = dst + (pt::pfn(old) - src);
            self.mms[e.mm as usize].vmas[e.vi].ptes[e.idx] = pt::mk_present(pfn, flags);
            // remove_migration_pte sets one PTE at a time: automatic contpte folding.
            self.arch_set_ptes(e.mm, e.vi, e.idx, 1);
            if flags & pt::YOUNG == 0 {
                self.poisson_rearm(e.mm, e.vi, e.idx);
            }
        }
        self.mem.add_mapcount(dst, entries.len() as i32);
        let src_node = self.pfn_node(src);
        let dst_node = self.pfn_node(dst);
        self.spend(
            super::TimeKind::Migration,
            self.copy_folio_ns(src_node, dst_node, nr as u64)
                + entries.len() as u64 * self.hw.pte_update_ns,
        );
        if !self.folio_test_anon(dst) && !self.mem.test(dst, pg::SWAPCACHE) {
            self.filemap_replace_folio(src, dst);
        }
        self.folio_add_lru(dst);
        // The source leaves the page tables and the LRU; only its frames remain.
        let src_flags = pg::LRU | pg::ACTIVE | pg::REFERENCED | pg::DIRTY | pg::SWAPBACKED;
        self.mem.clear(src, src_flags);
    }

    /// Copying `nr` pages between two nodes, at the slower side's bandwidth.
    pub fn copy_folio_ns(&self, src_node: u32, dst_node: u32, nr: u64) -> u64 {
        let bw = self
            .node_bandwidth(src_node)
            .min(self.node_bandwidth(dst_node));
        nr * super::PAGE_SIZE * 1_000_000_000 / bw
    }

    pub fn node_bandwidth(&self, node: u32) -> u64 {
        match self.nodes[node as usize].tier {
            crate::scenario::Tier::Dram => self.hw.dram_bandwidth_bytes_per_s,
            crate::scenario::Tier::Cxl => self.hw.cxl_bandwidth_bytes_per_s,
        }
    }

    pub fn node_latency_ns(&self, node: u32) -> u64 {
        match self.nodes[node as usize].tier {
            crate::scenario::Tier::Dram => self.hw.dram_read_latency_ns,
            crate::scenario::Tier::Cxl => self.hw.cxl_read_latency_ns,
        }
    }
}
