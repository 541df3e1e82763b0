//! The per-CPU LRU add batch: folio_add_lru, lru_add_drain and lru_add_drain_all.
//!
//! Models mm/swap.c (v6.9–v6.18): a new folio (an anonymous fault's, a swap-in's, a COW copy's,
//! a page-cache or shmem folio, a migration's destination or a folio put back after a failed
//! migration) is not put on its LRU list at once but in its CPU's `cpu_fbatches.lru_add`,
//! without PG_lru. The batch moves to the lists when it holds PAGEVEC_SIZE (31) folios, when a
//! large folio joins it (folio_may_be_lru_cached), or when its CPU drains it: at the start of
//! shrink_inactive_list and shrink_active_list, of MADV_COLD and MADV_PAGEOUT, and before a zap
//! frees what it unmapped (free_pages_and_swap_cache). mbind's migration drains every CPU
//! (lru_add_drain_all).
//! A folio is charged the profile's `lru_op_ns` when it joins the batch, its share of the
//! batch's list insertion under one lru_lock; the drain costs nothing more.
//! What this changes: get_scan_count sizes a reclaim's scan before shrink_inactive_list drains,
//! so the folios of the last few faults are invisible to it, and an inactive list that is
//! otherwise empty is not scanned at all; reclaim cannot take a batched folio either.
//! Left out: the other batches (lru_activate, lru_deactivate, lru_lazyfree, lru_move_tail,
//! lru_deactivate_file), whose moves the model makes at once; reclaim's putback, which the model
//! makes directly for reclaim_pages too (the kernel's folio_putback_lru batches it there);
//! wp_can_reuse_anon_folio's drain of this CPU's batch before it looks at a non-exclusive folio
//! off the LRU (the model decides reuse by mapcount); the reference a remote CPU's batch holds,
//! which makes that check copy instead of reusing and keeps a freed folio charged until the batch
//! drains (here a freed folio leaves its batch at once).

use super::folio::{pg, FolioId, NIL};
use super::Kernel;

/// PAGEVEC_SIZE: the folios a per-CPU batch holds before it moves them to the lists.
pub const PAGEVEC_SIZE: usize = 31;

/// A folio waiting in an lru_add batch has this as its `lru_prev`, so freeing it finds out
/// without searching every CPU's batch (the kernel knows by the batch's folio reference).
pub const IN_LRU_ADD_BATCH: u32 = NIL - 1;

impl Kernel {
    /// folio_add_lru: into this CPU's batch, which moves to the lists once full or when the
    /// folio is large. A new or swapped-in anonymous folio starts on the inactive list (v5.9+);
    /// the flags it has when the batch moves decide its list.
    pub fn folio_add_lru(&mut self, folio: FolioId) {
        self.spend(super::TimeKind::Lru, self.hw.lru_op_ns);
        let cpu = self.current_cpu as usize;
        self.mem.pages[folio as usize].lru_prev = IN_LRU_ADD_BATCH;
        self.lru_add_batches[cpu].push(folio);
        if self.lru_add_batches[cpu].len() >= PAGEVEC_SIZE || self.mem.order(folio) > 0 {
            self.folio_batch_move_lru(cpu);
        }
    }

    /// lru_add_drain: this CPU's batch to the lists.
    pub fn lru_add_drain(&mut self) {
        self.folio_batch_move_lru(self.current_cpu as usize);
    }

    /// lru_add_drain_all: every CPU's batch to the lists.
    pub fn lru_add_drain_all(&mut self) {
        for cpu in 0..self.lru_add_batches.len() {
            self.folio_batch_move_lru(cpu);
        }
    }

    fn folio_batch_move_lru(&mut self, cpu: usize) {
        let mut batch = std::mem::take(&mut self.lru_add_batches[cpu]);
        for &folio in &batch {
            self.lruvec_add_folio_uncharged(folio);
        }
        batch.clear();
        self.lru_add_batches[cpu] = batch;
    }

    /// The folio waits in some CPU's lru_add batch.
    pub fn folio_in_lru_add_batch(&self, folio: FolioId) -> bool {
        self.mem.pages[folio as usize].lru_prev == IN_LRU_ADD_BATCH
            && !self.mem.test(folio, pg::LRU)
    }

    /// A folio freed while waiting in a batch leaves it.
    pub fn lru_add_batch_remove(&mut self, folio: FolioId) {
        for batch in &mut self.lru_add_batches {
            if let Some(i) = batch.iter().position(|&f| f == folio) {
                batch.remove(i);
                self.mem.pages[folio as usize].lru_prev = NIL;
                return;
            }
        }
    }

    /// __lru_cache_activate_folio: folio_mark_accessed of a folio not on the LRU activates it
    /// only if it waits in this CPU's batch; it reaches the active list when the batch moves.
    pub fn lru_cache_activate_folio(&mut self, folio: FolioId) {
        if self.lru_add_batches[self.current_cpu as usize].contains(&folio) {
            self.mem.set(folio, pg::ACTIVE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PAGEVEC_SIZE;
    use crate::mm::folio::{content, pg};
    use crate::mm::pagetable as pt;
    use crate::mm::vmscan::{Lru, ScanControl, SWAP_CLUSTER_MAX};
    use crate::mm::Kernel;

    /// One process with `nr` anonymous pages written once; its mm, first page and lruvec.
    fn faulted(nr: u32) -> (Kernel, u32, u32, usize) {
        let thp_never = r#""/sys/kernel/mm/transparent_hugepage/enabled" = "never""#;
        let (mut k, mm) = crate::mm::boot_zram_for_test("v6.18", None, thp_never);
        let start = k.mmap_anon(mm, nr);
        for vpn in start..start + nr {
            k.touch(mm, vpn, true, content::DATA_DEFAULT).unwrap();
        }
        let lv = k.lruvec_index(0, 0);
        (k, mm, start, lv)
    }

    fn folio_at(k: &Kernel, mm: u32, vpn: u32) -> u32 {
        let vi = k.mms[mm as usize].find_vma(vpn).unwrap();
        let v = &k.mms[mm as usize].vmas[vi];
        pt::pfn(v.ptes[(vpn - v.start) as usize])
    }

    fn inactive_anon(k: &Kernel, lv: usize) -> u64 {
        k.lruvecs[lv].lists[Lru::InactiveAnon as usize].nr_pages
    }

    #[test]
    fn new_folios_reach_the_lru_31_at_a_time_and_a_drain_moves_the_rest() {
        let (mut k, mm, start, lv) = faulted(PAGEVEC_SIZE as u32 + 5);
        // The first 31 moved when the batch filled; the last 5 wait, on no list.
        assert_eq!(inactive_anon(&k, lv), PAGEVEC_SIZE as u64);
        let last = folio_at(&k, mm, start + PAGEVEC_SIZE as u32 + 4);
        assert!(k.folio_in_lru_add_batch(last) && !k.mem.test(last, pg::LRU));
        // Each folio paid for its insertion when it joined the batch; the drain costs nothing.
        let clock_ns = k.clock_ns;
        k.lru_add_drain();
        assert_eq!(k.clock_ns, clock_ns);
        assert_eq!(inactive_anon(&k, lv), PAGEVEC_SIZE as u64 + 5);
        assert!(!k.folio_in_lru_add_batch(last) && k.mem.test(last, pg::LRU));
    }

    #[test]
    fn reclaim_sizes_its_scan_before_it_drains_the_batch() {
        // get_scan_count reads the lists before shrink_inactive_list drains: the 5 folios of
        // the last faults are not counted, but the scan takes them once drained.
        let (mut k, _, _, lv) = faulted(PAGEVEC_SIZE as u32 + 5);
        let mut sc = ScanControl::new(SWAP_CLUSTER_MAX, false);
        sc.priority = 0;
        assert_eq!(k.get_scan_count(lv, &sc, true)[0][0], PAGEVEC_SIZE as u64);
        k.shrink_inactive_list(lv, false, 64, &mut sc);
        assert_eq!(
            k.stat.get(crate::mm::vmstat::Vm::PgscanAnon),
            PAGEVEC_SIZE as u64 + 5
        );
    }

    #[test]
    fn a_zap_drains_the_batch_and_a_freed_folio_leaves_it() {
        // The batch holds the last 5 folios; unmapping the last page frees one of them, and the
        // drain before it puts the other 4 on the list.
        let (mut k, mm, start, lv) = faulted(PAGEVEC_SIZE as u32 + 5);
        let last = start + PAGEVEC_SIZE as u32 + 4;
        let vi = k.mms[mm as usize].find_vma(last).unwrap();
        let from = last - k.mms[mm as usize].vmas[vi].start;
        k.zap_range(mm, vi, from, from + 1, false);
        assert_eq!(inactive_anon(&k, lv), PAGEVEC_SIZE as u64 + 4);
        assert!(k.lru_add_batches.iter().all(|b| b.is_empty()));
        assert!(crate::check::check(&k).is_empty());
    }

    #[test]
    fn marking_a_batched_folio_accessed_activates_it_on_the_way_to_the_list() {
        // __lru_cache_activate_folio: the second folio_mark_accessed of a folio in this CPU's
        // batch sets PG_active, so the drain puts it on the active list.
        let (mut k, mm, start, lv) = faulted(1);
        let folio = folio_at(&k, mm, start);
        k.folio_mark_accessed(folio);
        k.folio_mark_accessed(folio);
        k.lru_add_drain();
        assert_eq!(k.lruvecs[lv].lists[Lru::ActiveAnon as usize].nr_pages, 1);
        assert_eq!(inactive_anon(&k, lv), 0);
    }
}
