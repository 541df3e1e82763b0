//! `+migrc`: Byungchul Park's "Reduce TLB flushes by 94% by improving folio migration" (MIGRC,
//! Migration Read Copy; [PATCH v8 0/8], 2024-02-19, unmerged, on v6.7).
//!
//! Models the series for tiering migration (demotion and NUMA-misplaced promotion): during the
//! unmap phase of migrate_pages_batch, clean read-only PTEs go to a separate batch (mm/rmap.c's
//! read-only TLB entries, `tlb_ubc_ro`); an order-0 folio whose deferred PTEs were all clean and
//! read-only keeps its source allocated after the move, its flush pending (migrc_add_pending_ubc),
//! and counted as free for watermarks (zone->migrc_pending_nr). A later flush that covers every
//! pending CPU frees the kept folios (migrc_flush_end); a write-protect fault, a failed watermark
//! and the allocator's slow path force the flush (migrc_flush_free_folios); very high memory
//! pressure pauses MIGRC (pause_cnt). Left out: v8's per-node management of pending requests
//! (one global pending batch here: one task migrates at a time) and the per-CPU free lists
//! MIGRC bypasses. The allocator's checks of migrc_pending_nr and the pause are still inline in
//! mm/mod.rs (alloc_from_zonelist, alloc_pages_nodemask, alloc_pages_thisnode).

use crate::mm::folio::FolioId;
use crate::mm::migrate::MigrateReason;
use crate::mm::page_alloc::Zone;
use crate::mm::pagetable::{self as pt, Pte};
use crate::mm::tlb::{CpuMask, TlbBatch};
use crate::mm::Kernel;

/// MIGRC's state: the per-task read-only batch (one task migrates at a time here) and the global
/// pending flush with its kept source folios.
#[derive(Default, Debug)]
pub struct Migrc {
    pub tlb_ubc_ro: TlbBatch,
    pub can_migrc: bool,
    /// The unmap phase of a MIGRC batch runs: clean read-only PTEs go to `tlb_ubc_ro`.
    pub ro_batch_active: bool,
    /// migrc_ubc: the CPUs that still owe a flush for the kept folios.
    pub ubc: TlbBatch,
    pub folios: Vec<FolioId>,
    pub pause_cnt: u32,
}

/// MIGRC's part of one migrate_pages_batch call.
pub struct MigrcBatch {
    /// MIGRC applies to this batch (and has not been paused since it started).
    active: bool,
    /// The flushes owed by the folios MIGRC keeps from this batch.
    pending: TlbBatch,
}

/// Pages of `zone` MIGRC keeps allocated; watermark checks count them as free (they are freed on
/// demand).
#[inline]
pub fn zone_kept_pages(zone: &Zone) -> u64 {
    zone.migrc_pending_nr
}

impl Kernel {
    #[inline]
    pub fn migrc_ro_batch_active(&self) -> bool {
        self.migrc.ro_batch_active
    }

    /// MIGRC applies to demotion and NUMA-misplaced migration, unless paused.
    fn migrc_enabled(&self, reason: MigrateReason) -> bool {
        let tiering = matches!(
            reason,
            MigrateReason::Demotion | MigrateReason::NumaMisplaced
        );
        tiering && self.spec.profile.migrc && self.migrc.pause_cnt == 0
    }

    /// Hook at the start of migrate_pages_batch.
    pub(in crate::mm) fn migrc_hook_batch_start(&self, reason: MigrateReason) -> MigrcBatch {
        MigrcBatch {
            active: self.migrc_enabled(reason),
            pending: TlbBatch::default(),
        }
    }

    /// Hook before each folio's unmap: once paused, the rest of the batch flushes normally and
    /// what was pending joins the ordinary batch.
    pub(in crate::mm) fn migrc_hook_check_pause(&mut self, batch: &mut MigrcBatch) {
        if batch.active && self.migrc.pause_cnt > 0 {
            self.tlb_batch.fold(&mut batch.pending);
            batch.active = false;
        }
    }

    /// Hook right before try_to_migrate of a folio: its clean read-only PTEs go to `tlb_ubc_ro`.
    pub(in crate::mm) fn migrc_hook_unmap_start(&mut self, batch: &MigrcBatch) {
        self.migrc.can_migrc = true;
        self.migrc.ro_batch_active = batch.active;
    }

    /// Hook right after try_to_migrate of a folio of `order`: true when MIGRC keeps its source
    /// (every deferred PTE was clean and read-only, and it is order 0); otherwise its read-only
    /// flushes join the ordinary batch.
    pub(in crate::mm) fn migrc_hook_unmap_end(
        &mut self,
        batch: &mut MigrcBatch,
        order: u32,
    ) -> bool {
        self.migrc.ro_batch_active = false;
        let keep = batch.active
            && self.migrc.can_migrc
            && self.migrc.tlb_ubc_ro.flush_required
            && order == 0;
        if keep {
            batch.pending.fold(&mut self.migrc.tlb_ubc_ro);
        } else {
            self.tlb_batch.fold(&mut self.migrc.tlb_ubc_ro);
        }
        keep
    }

    /// Hook before the batch's one flush: migrc_add_pending_ubc (nothing else flushes
    /// concurrently in the simulator).
    pub(in crate::mm) fn migrc_hook_before_flush(&mut self, batch: &mut MigrcBatch) {
        if batch.active && batch.pending.flush_required {
            self.migrc.ubc.fold(&mut batch.pending);
        }
    }

    /// Hook in the move phase for a source MIGRC keeps: it stays allocated, counted as free.
    pub(in crate::mm) fn migrc_hook_keep_source(&mut self, src: FolioId) {
        let node = self.pfn_node(src) as usize;
        self.zones[node].migrc_pending_nr += 1;
        self.migrc.folios.push(src);
    }

    /// Hook in unmap_flush_pte: the batch a deferred flush goes to. During a MIGRC unmap a clean
    /// read-only PTE goes to `tlb_ubc_ro`; any other PTE goes to the task's batch and stops MIGRC
    /// from keeping the folio.
    pub(in crate::mm) fn migrc_hook_defer_batch(&mut self, pte: Pte) -> &mut TlbBatch {
        if self.migrc_ro_batch_active() && pte & (pt::DIRTY | pt::WRITE) == 0 {
            return &mut self.migrc.tlb_ubc_ro;
        }
        if self.migrc_ro_batch_active() {
            self.migrc.can_migrc = false;
        }
        &mut self.tlb_batch
    }

    /// Hook in do_wp_page: MIGRC gives up when a read-only PTE may become writable.
    pub(in crate::mm) fn migrc_hook_wp_fault(&mut self) {
        if self.spec.profile.migrc {
            self.migrc_flush_free_folios();
        }
    }

    /// migrc_flush_end: the CPUs of a flush that just ran no longer owe MIGRC one; once none
    /// does, the kept folios are freed.
    pub fn migrc_flush_end(&mut self, flushed: &CpuMask) {
        if self.migrc.folios.is_empty() && !self.migrc.ubc.flush_required {
            return;
        }
        if self.migrc.ubc.cpumask.andnot(flushed) {
            return;
        }
        self.migrc.ubc = TlbBatch::default();
        for f in std::mem::take(&mut self.migrc.folios) {
            let node = self.pfn_node(f) as usize;
            self.zones[node].migrc_pending_nr -= 1 << self.mem.order(f);
            self.free_migrated_source(f);
        }
    }

    /// migrc_flush_free_folios: flush what MIGRC owes now and free the kept folios.
    pub fn migrc_flush_free_folios(&mut self) {
        if self.migrc.folios.is_empty() && !self.migrc.ubc.flush_required {
            return;
        }
        let mut ubc = std::mem::take(&mut self.migrc.ubc);
        self.tlb_batch.fold(&mut ubc);
        if self.tlb_batch.flush_required {
            self.try_to_unmap_flush();
        } else {
            self.migrc_flush_end(&CpuMask::default());
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::mm::folio::content;
    use crate::mm::numa_balancing::tests::{boot, demote, pte, written_pages};
    use crate::mm::pagetable as pt;
    use crate::mm::vmstat::Vm;

    #[test]
    fn migrc_keeps_clean_read_only_sources_until_a_later_flush_covers_them() {
        let (mut k, _, mm) = boot("v6.9+migrc");
        let vpn = written_pages(&mut k, mm, 2);
        let vi = k.mms[mm as usize].find_vma(vpn).unwrap();
        let start = k.mms[mm as usize].vmas[vi].start;
        let idx = (vpn - start) as usize;
        // A clean, read-only mapping (as a hint-fault migration leaves it).
        k.mms[mm as usize].vmas[vi].ptes[idx] &= !(pt::WRITE | pt::DIRTY);
        let free_before = k.zones[0].nr_free_pages();
        assert_eq!(demote(&mut k, mm, vpn), 1);
        assert_eq!(k.stat.get(Vm::NrTlbRemoteFlush), 0, "the flush is deferred");
        assert_eq!(k.migrc.folios.len(), 1);
        assert_eq!(k.zones[0].migrc_pending_nr, 1);
        // The source stays allocated, but counts as free for watermarks.
        assert_eq!(k.zones[0].nr_free_pages(), free_before);
        // A dirty page's demotion flushes now, and that flush retires the kept source.
        assert_eq!(demote(&mut k, mm, vpn + 1), 1);
        assert_eq!(k.stat.get(Vm::NrTlbRemoteFlush), 1);
        assert!(k.migrc.folios.is_empty());
        assert_eq!(k.zones[0].migrc_pending_nr, 0);
        assert_eq!(k.zones[0].nr_free_pages(), free_before + 2);
    }

    #[test]
    fn migrc_does_not_defer_when_migration_keeps_the_dirty_bit() {
        let (mut k, _, mm) = boot("v6.9+migrc");
        let vpn = written_pages(&mut k, mm, 1);
        // Written: dirty and writable. Not a MIGRC candidate.
        assert_eq!(demote(&mut k, mm, vpn), 1);
        assert_eq!(k.stat.get(Vm::NrTlbRemoteFlush), 1);
        assert!(k.migrc.folios.is_empty());
        // With swap_migration_ad_supported the copy's PTE stays dirty (and writable here).
        let p = pte(&k, mm, vpn);
        assert!(p & pt::DIRTY != 0 && p & pt::WRITE != 0);
    }

    #[test]
    fn write_protect_fault_forces_migrc_flush() {
        let (mut k, _, mm) = boot("v6.9+migrc");
        let vpn = written_pages(&mut k, mm, 2);
        let vi = k.mms[mm as usize].find_vma(vpn).unwrap();
        let idx = (vpn - k.mms[mm as usize].vmas[vi].start) as usize;
        k.mms[mm as usize].vmas[vi].ptes[idx] &= !(pt::WRITE | pt::DIRTY);
        k.mms[mm as usize].vmas[vi].ptes[idx + 1] &= !pt::WRITE;
        demote(&mut k, mm, vpn);
        assert_eq!(k.migrc.folios.len(), 1);
        // Writing a read-only page takes do_wp_page, which gives MIGRC's pending flush up.
        k.touch(mm, vpn + 1, true, content::DATA_DEFAULT).unwrap();
        assert!(k.migrc.folios.is_empty());
        assert_eq!(k.stat.get(Vm::NrTlbRemoteFlush), 1);
    }
}
