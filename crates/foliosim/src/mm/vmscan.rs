//! Page reclaim on the classic active/inactive LRU: LRU lists per (memcg, node), kswapd, direct
//! and memcg reclaim, and shrink_folio_list for anonymous and page-cache folios.
//!
//! Models mm/vmscan.c (v6.9–v6.18, MGLRU off): shrink_lruvec with get_scan_count's targets
//! (`size >> priority`, balanced between anon and file by swappiness and each list's recent
//! reclaim cost from lru_note_cost: SCAN_FRACT, or SCAN_EQUAL at priority 0, SCAN_ANON when the
//! node's file pages are tiny, SCAN_FILE in cache-trim mode) and the inactive_is_low ratio,
//! isolate_lru_folios from the list tail (shrink_inactive_list and shrink_active_list first drain
//! this CPU's lru_add batch, mm/swap.rs, so the targets were sized without it), shrink_active_list
//! (anon folios are always deactivated), folio_check_references (one reference per mapping), the
//! anonymous branch of shrink_folio_list (early split rule, add_to_swap, split on failure with the
//! fallback counters, try_to_unmap, pageout, __remove_mapping), and balance_pgdat for kswapd.
//! pageout counts nr_vmscan_write; a folio no swap PTE refers to leaves the swap cache there
//! instead of being written (swap_writeout's folio_free_swap) and is freed when put back.
//! Page-cache folios (mm/filemap.rs) live on the file lists: both kinds are scanned in
//! proportion to their size, clean file folios are freed (or demoted first; mapped ones are
//! unmapped first), and active file folios are deactivated keeping PG_referenced, except those
//! referenced through a VM_EXEC mapping, which stay active; folio_check_references activates a
//! mapped file folio referenced twice (by PG_referenced or two mappings) or through VM_EXEC. Dirty
//! file folios are never written by reclaim (v6.16+; earlier only kswapd could, through a
//! ->writepage iomap filesystems lack): they get PG_reclaim and are activated
//! (nr_vmscan_immediate_reclaim), as are file folios under writeback; a scan whose folios were
//! all dirty and unqueued wakes the flusher (wakeup_flusher_threads), and a reclaimer that freed
//! nothing among dirty folios waits for the next writeback (a simplified reclaim_throttle: at
//! the end of a failed direct or memcg reclaim, not per node). A cgroup v1 reclaimer has no
//! dirty throttling to rely on (writeback_throttling_sane, v5.16+): right after waking the
//! flusher it sleeps in reclaim_throttle until more than SWAP_CLUSTER_MAX pages have been
//! written since, at most HZ/10 (mm/page_writeback.rs); and one meeting a folio it marked that
//! is still under writeback waits for that folio and frees it (case 3 of shrink_folio_list; page-cache folios only, as the model's swap
//! writeback to a slow device is never waited on).
//! Evictions leave shadow entries, and refault activations since a target's last reclaim force
//! deactivation (prepare_scan_control; mm/workingset.rs). inactive_is_low, those activations and
//! cache-trim mode's inactive file size are read from the memcg statistics as last flushed
//! (mm/memcontrol.rs), as the kernel's lruvec_page_state reads them: a cgroup that filled up
//! since the last flush has no cache to trim. The scan targets use the exact list sizes. A
//! page-cache folio whose read is being assembled or in flight is locked, and
//! shrink_folio_list's folio_trylock keeps it (mm/filemap.rs). shmem folios
//! (mm/shmem.rs) are unmapped like page-cache folios and written by shmem_writeout, then freed
//! as swap-cache folios.
//! A direct or memcg reclaim that freed nothing after skipping active lists retries with
//! force_deactivate (do_try_to_free_pages, v5.5+).
//! shrink_lruvec loops while inactive anon or either file list has pages left to scan (the
//! active anon list alone does not keep it going), turns proportional once the lruvec gave
//! enough (except direct global reclaim at DEF_PRIORITY), and then ages only the anon lists.
//! Left out: the congested/PGDAT_WRITEBACK throttling of
//! kswapd, compaction, MGLRU.

use super::folio::{pg, FolioId, NIL};
use super::shmem::ShmemWrite;
use super::swap_state::SwapWrite;
use super::vma::VM_EXEC;
use super::vmstat::{Memcg, Mthp, Vm};
use super::Kernel;

pub const SWAP_CLUSTER_MAX: u64 = 32;
const MAX_SWAPPINESS: u64 = 200;
pub const DEF_PRIORITY: u32 = 12;
pub const MAX_RECLAIM_RETRIES: u32 = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Lru {
    InactiveAnon = 0,
    ActiveAnon = 1,
    InactiveFile = 2,
    ActiveFile = 3,
}
pub const NR_LRU_LISTS: usize = 4;

#[derive(Clone, Copy, Debug)]
pub struct ListHead {
    /// Most recently added end.
    pub head: u32,
    /// Reclaim takes from here.
    pub tail: u32,
    pub nr_pages: u64,
    pub nr_folios: u64,
}

impl Default for ListHead {
    fn default() -> Self {
        ListHead {
            head: NIL,
            tail: NIL,
            nr_pages: 0,
            nr_folios: 0,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Lruvec {
    pub lists: [ListHead; NR_LRU_LISTS],
    /// Recent reclaim cost of the anon and file lists (lru_note_cost), decaying.
    pub anon_cost: u64,
    pub file_cost: u64,
    /// Refault detection's age and activations (mm/workingset.rs).
    pub workingset: super::workingset::LruvecWorkingset,
    /// The statistics reclaim decisions read, as last flushed (mm/memcontrol.rs).
    pub flushed: super::memcontrol::LruvecStats,
}

pub struct ScanControl {
    pub nr_to_reclaim: u64,
    pub nr_reclaimed: u64,
    pub priority: u32,
    pub is_kswapd: bool,
    /// MADV_PAGEOUT: reclaim without looking at references.
    pub ignore_references: bool,
    pub may_deactivate: bool,
    /// An active list was due a scan that may_deactivate forbade (sc->skipped_deactivate).
    pub skipped_deactivate: bool,
    /// A direct reclaim that freed nothing after skipping deactivation retries with every
    /// active list deactivated (sc->force_deactivate, do_try_to_free_pages, v5.5+).
    pub force_deactivate: bool,
    /// MADV_PAGEOUT reclaims to swap, never to a lower tier.
    pub no_demotion: bool,
    /// Reclaim of one memcg at its limit (sc->target_mem_cgroup set).
    pub cgroup_reclaim: bool,
    /// The cgroup reclaim works for (sc->target_mem_cgroup; the root for global reclaim and
    /// MADV_PAGEOUT): evicted folios' shadows record its lruvec's age.
    pub target_memcg: u16,
    /// Pages of file folios found dirty or under writeback (sc->nr.dirty), and dirty but not
    /// yet queued for writeback (nr_unqueued_dirty).
    pub nr_dirty: u64,
    pub nr_unqueued_dirty: u64,
    /// Pages handed to pageout (swap writes).
    pub nr_pageout: u64,
}

impl ScanControl {
    /// do_try_to_free_pages after a pass that freed nothing: if it left active lists
    /// unscanned for want of may_deactivate, the inactive:active estimates were wrong (stale
    /// flushed statistics, say); go again from DEF_PRIORITY deactivating every list.
    fn retry_with_force_deactivate(&mut self) -> bool {
        if self.nr_reclaimed > 0 || !self.skipped_deactivate {
            return false;
        }
        self.priority = DEF_PRIORITY;
        self.force_deactivate = true;
        self.skipped_deactivate = false;
        true
    }

    /// A reclaim of `memcg` at its limit for a charge of `nr_pages`
    /// (try_to_free_mem_cgroup_pages).
    pub fn memcg_reclaim(memcg: u16, nr_pages: u64) -> Self {
        let mut sc = ScanControl::new(nr_pages.max(SWAP_CLUSTER_MAX), false);
        sc.cgroup_reclaim = true;
        sc.target_memcg = memcg;
        sc
    }

    pub fn new(nr_to_reclaim: u64, is_kswapd: bool) -> Self {
        ScanControl {
            nr_to_reclaim,
            nr_reclaimed: 0,
            priority: DEF_PRIORITY,
            is_kswapd,
            ignore_references: false,
            may_deactivate: false,
            skipped_deactivate: false,
            force_deactivate: false,
            no_demotion: false,
            cgroup_reclaim: false,
            target_memcg: 0,
            nr_dirty: 0,
            nr_unqueued_dirty: 0,
            nr_pageout: 0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FolioRef {
    Reclaim,
    Keep,
    Activate,
}

fn lru_of(file: bool, active: bool) -> Lru {
    match (file, active) {
        (false, false) => Lru::InactiveAnon,
        (false, true) => Lru::ActiveAnon,
        (true, false) => Lru::InactiveFile,
        (true, true) => Lru::ActiveFile,
    }
}

/// LRU list primitives.
impl Kernel {
    fn folio_lruvec(&self, folio: FolioId) -> usize {
        self.lruvec_index(self.mem.memcg(folio), self.pfn_node(folio))
    }

    pub(super) fn list_add(&mut self, lv: usize, lru: Lru, folio: FolioId, at_tail: bool) {
        let nr = self.mem.nr_pages(folio) as u64;
        let list = &mut self.lruvecs[lv].lists[lru as usize];
        let (old_head, old_tail) = (list.head, list.tail);
        list.nr_pages += nr;
        list.nr_folios += 1;
        if old_head == NIL {
            list.head = folio;
            list.tail = folio;
            let p = &mut self.mem.pages[folio as usize];
            p.lru_next = NIL;
            p.lru_prev = NIL;
        } else if at_tail {
            list.tail = folio;
            self.mem.pages[old_tail as usize].lru_next = folio;
            let p = &mut self.mem.pages[folio as usize];
            p.lru_prev = old_tail;
            p.lru_next = NIL;
        } else {
            list.head = folio;
            self.mem.pages[old_head as usize].lru_prev = folio;
            let p = &mut self.mem.pages[folio as usize];
            p.lru_next = old_head;
            p.lru_prev = NIL;
        }
        self.mem.set(folio, pg::LRU);
    }

    fn list_del(&mut self, lv: usize, lru: Lru, folio: FolioId) {
        let nr = self.mem.nr_pages(folio) as u64;
        let (prev, next) = {
            let p = &self.mem.pages[folio as usize];
            (p.lru_prev, p.lru_next)
        };
        let list = &mut self.lruvecs[lv].lists[lru as usize];
        list.nr_pages -= nr;
        list.nr_folios -= 1;
        if prev == NIL {
            list.head = next;
        } else {
            self.mem.pages[prev as usize].lru_next = next;
        }
        if next == NIL {
            list.tail = prev;
        } else {
            self.mem.pages[next as usize].lru_prev = prev;
        }
        let p = &mut self.mem.pages[folio as usize];
        p.lru_next = NIL;
        p.lru_prev = NIL;
        p.clear(pg::LRU);
    }

    /// lruvec_add_folio: to the head of the list its flags name (new folios come through the
    /// per-CPU batch of mm/swap.rs; moves and putbacks come here directly).
    pub fn lruvec_add_folio(&mut self, folio: FolioId) {
        self.lruvec_add_folio_uncharged(folio);
        self.spend(super::TimeKind::Lru, self.hw.lru_op_ns);
    }

    /// lruvec_add_folio without its time: a batch's folios paid theirs when they joined it.
    pub(super) fn lruvec_add_folio_uncharged(&mut self, folio: FolioId) {
        let lv = self.folio_lruvec(folio);
        let active = self.mem.test(folio, pg::ACTIVE);
        let file = !self.mem.test(folio, pg::SWAPBACKED);
        self.list_add(lv, lru_of(file, active), folio, false);
    }

    pub fn lruvec_del_folio(&mut self, folio: FolioId) {
        let lv = self.folio_lruvec(folio);
        let active = self.mem.test(folio, pg::ACTIVE);
        let file = !self.mem.test(folio, pg::SWAPBACKED);
        self.list_del(lv, lru_of(file, active), folio);
    }

    /// folio_rotate_reclaimable: a folio whose writeback finished goes to the inactive tail.
    pub fn folio_rotate_reclaimable(&mut self, folio: FolioId) {
        if self.mem.test(folio, pg::LRU) && !self.mem.test(folio, pg::ACTIVE) {
            let lv = self.folio_lruvec(folio);
            let lru = lru_of(!self.mem.test(folio, pg::SWAPBACKED), false);
            self.list_del(lv, lru, folio);
            self.list_add(lv, lru, folio, true);
            self.stat
                .count(Vm::Pgrotated, self.mem.nr_pages(folio) as u64);
        }
    }

    /// lru_move_tail (folio_rotate_reclaimable of a page-cache folio whose writeback ended):
    /// to the inactive tail, deactivated, so reclaim frees it next.
    pub fn lru_move_tail(&mut self, folio: FolioId) {
        if !self.mem.test(folio, pg::LRU) {
            return;
        }
        self.lruvec_del_folio(folio);
        self.mem.clear(folio, pg::ACTIVE);
        let lv = self.folio_lruvec(folio);
        let lru = lru_of(self.folio_is_file_lru(folio), false);
        self.list_add(lv, lru, folio, true);
        self.stat
            .count(Vm::Pgrotated, self.mem.nr_pages(folio) as u64);
    }

    /// Takes folios off the tail of a list until `nr_to_scan` pages were taken.
    fn isolate_lru_folios(
        &mut self,
        lv: usize,
        lru: Lru,
        nr_to_scan: u64,
        out: &mut Vec<FolioId>,
    ) -> u64 {
        let mut scanned = 0;
        while scanned < nr_to_scan {
            let folio = self.lruvecs[lv].lists[lru as usize].tail;
            if folio == NIL {
                break;
            }
            scanned += self.mem.nr_pages(folio) as u64;
            self.list_del(lv, lru, folio);
            out.push(folio);
        }
        self.spend(super::TimeKind::Lru, out.len() as u64 * self.hw.lru_op_ns);
        scanned
    }

    fn lru_size(&self, lv: usize, lru: Lru) -> u64 {
        self.lruvecs[lv].lists[lru as usize].nr_pages
    }

    /// The lruvecs whose pages count for `lv` in the kernel's statistics: `lv` itself, and for
    /// the root cgroup's lruvec of a node every cgroup's on that node (memcg statistics are
    /// hierarchical).
    fn lruvecs_hier(&self, lv: usize) -> std::iter::StepBy<std::ops::Range<usize>> {
        let nodes = self.nodes.len();
        let step = if lv >= nodes {
            self.lruvecs.len()
        } else {
            nodes
        };
        (lv..self.lruvecs.len()).step_by(step)
    }

    pub(super) fn lru_size_hier(&self, lv: usize, lru: Lru) -> u64 {
        self.lruvecs_hier(lv).map(|i| self.lru_size(i, lru)).sum()
    }

    /// lru_note_cost: what reclaiming from a list cost: each page written out counts
    /// SWAP_CLUSTER_MAX, each page scanned but kept (rotated) one. Charged to the lruvec and to
    /// its parent, the root cgroup's lruvec of the node; both costs halve once they exceed a
    /// quarter of the lruvec's pages, so recent reclaim weighs most. Those pages are
    /// lruvec_page_state's, the statistics as last flushed: a cgroup that filled since the last
    /// flush halves its costs at every note.
    pub(super) fn lru_note_cost(&mut self, lv: usize, file: bool, nr_io: u64, nr_rotated: u64) {
        let cost = nr_io * SWAP_CLUSTER_MAX + nr_rotated;
        let nodes = self.nodes.len();
        let mut at = Some(lv);
        while let Some(i) = at {
            let v = &mut self.lruvecs[i];
            let size: u64 = v.flushed.lru.iter().sum();
            if file {
                v.file_cost += cost;
            } else {
                v.anon_cost += cost;
            }
            if v.file_cost + v.anon_cost > size / 4 {
                v.file_cost /= 2;
                v.anon_cost /= 2;
            }
            at = (i >= nodes).then_some(i % nodes);
        }
    }

    /// get_scan_count: pages of each list kind (anon, file) and state (inactive, active) to scan
    /// in lruvec `lv`, balanced by the reclaim target's costs: the cgroup's own lruvec in limit
    /// reclaim, the node's root lruvec otherwise (prepare_scan_control's cache_trim_mode and
    /// file_is_tiny decided there too).
    pub(super) fn get_scan_count(&self, lv: usize, sc: &ScanControl, anon: bool) -> [[u64; 2]; 2] {
        let node = lv % self.nodes.len();
        let target = if sc.cgroup_reclaim { lv } else { node };
        let swappiness = self.spec.knobs.swappiness as u64;
        let [may_deactivate_anon, may_deactivate_file] = self.may_deactivate(target, sc);
        let file_is_tiny = !sc.cgroup_reclaim && {
            let file = self.lru_size_hier(node, Lru::InactiveFile)
                + self.lru_size_hier(node, Lru::ActiveFile);
            let zone = &self.zones[node];
            file + zone.nr_free_pages() <= zone.wmark_high
                && !may_deactivate_anon
                && self.lru_size_hier(node, Lru::InactiveAnon) >> sc.priority > 0
        };
        // Plenty of inactive cache by the statistics as last flushed (lruvec_page_state), and
        // no file deactivation due: a cgroup whose statistics were not flushed since it filled
        // up has no cache to trim, and its anon pages are scanned by cost.
        let inactive_file_flushed = self.lruvecs[target].flushed.lru[Lru::InactiveFile as usize];
        let cache_trim_mode = inactive_file_flushed >> sc.priority > 0 && !may_deactivate_file;
        // Each kind scans fraction / denominator of its lists' `size >> priority`.
        let (fraction, denominator) = if !anon || (sc.cgroup_reclaim && swappiness == 0) {
            ([0, 1], 1) // SCAN_FILE
        } else if sc.priority == 0 && swappiness > 0 {
            ([1, 1], 1) // SCAN_EQUAL: close to OOM
        } else if file_is_tiny {
            ([1, 0], 1) // SCAN_ANON
        } else if cache_trim_mode {
            ([0, 1], 1) // SCAN_FILE
        } else {
            // SCAN_FRACT: pressure inversely proportional to each kind's recent cost, no kind
            // below a third of it before swappiness.
            let v = &self.lruvecs[target];
            let total = v.anon_cost + v.file_cost;
            let (anon_cost, file_cost) = (total + v.anon_cost, total + v.file_cost);
            let total = anon_cost + file_cost;
            let ap = swappiness * (total + 1) / (anon_cost + 1);
            let fp = (MAX_SWAPPINESS - swappiness) * (total + 1) / (file_cost + 1);
            ([ap, fp], ap + fp)
        };
        let mut nr = [[0u64; 2]; 2];
        for (k, file) in [false, true].into_iter().enumerate() {
            for (a, active) in [false, true].into_iter().enumerate() {
                let scan = self.lru_size(lv, lru_of(file, active)) >> sc.priority;
                nr[k][a] = scan * fraction[k] / denominator;
            }
        }
        nr
    }

    /// prepare_scan_control's sc->may_deactivate for the reclaim target `target`, per kind
    /// (anon, file): always on the force_deactivate retry, else when the target's inactive list
    /// is low or it saw refault activations of the kind since its last reclaim ended.
    fn may_deactivate(&self, target: usize, sc: &ScanControl) -> [bool; 2] {
        [false, true].map(|file| {
            sc.force_deactivate
                || self.inactive_is_low_flushed(target, file)
                || self.refaults_since_snapshot(target, file)
        })
    }

    /// inactive_is_low as the kernel evaluates it: on the lruvec's hierarchical statistics as
    /// last flushed (lruvec_page_state, mm/memcontrol.rs).
    fn inactive_is_low_flushed(&self, lv: usize, file: bool) -> bool {
        let s = &self.lruvecs[lv].flushed.lru;
        inactive_is_low(
            s[lru_of(file, false) as usize],
            s[lru_of(file, true) as usize],
        )
    }
}

fn inactive_is_low(inactive: u64, active: u64) -> bool {
    let gb = (inactive + active) >> (30 - 12);
    let ratio = if gb > 0 { (10 * gb).isqrt() } else { 1 };
    inactive * ratio < active
}

/// Reclaim.
impl Kernel {
    /// can_reclaim_anon_pages: swap space, or a lower tier to demote to.
    fn can_reclaim_anon_pages(&self, node: u32, sc: &ScanControl) -> bool {
        self.nr_swap_pages() > 0 || self.can_demote(node, sc)
    }

    /// can_demote: demotion is enabled and the node has a lower tier.
    pub fn can_demote(&self, node: u32, sc: &ScanControl) -> bool {
        self.spec.knobs.demotion_enabled
            && !sc.no_demotion
            && self.memory_tiers.demotion_target[node as usize].is_some()
    }

    /// demote_folio_list: migrates the folios to the node's demotion target without reclaim
    /// there. Returns the pages demoted; the rest stay in `list`.
    fn demote_folio_list(&mut self, list: &mut Vec<FolioId>, node: u32, sc: &ScanControl) -> u64 {
        let Some(target) = self.memory_tiers.demotion_target[node as usize] else {
            return 0;
        };
        let nr = self.migrate_pages(list, target, super::migrate::MigrateReason::Demotion);
        self.stat.count(
            if sc.is_kswapd {
                Vm::PgdemoteKswapd
            } else {
                Vm::PgdemoteDirect
            },
            nr,
        );
        nr
    }

    pub fn shrink_lruvec(&mut self, lv: usize, sc: &mut ScanControl) {
        self.complete_swap_writeback();
        self.complete_file_writeback();
        for dev in 0..self.swap.len() as u32 {
            self.zram_sync_memory(dev);
        }
        let node = (lv % self.nodes.len()) as u32;
        let anon = self.can_reclaim_anon_pages(node, sc);
        // prepare_scan_control: the target's flushed statistics decide; refault activations it
        // saw since its last reclaim force deactivation too.
        self.memcg_stats_flush_due();
        let target = if sc.cgroup_reclaim { lv } else { node as usize };
        let may_deactivate = self.may_deactivate(target, sc);
        // Per list kind (anon, file): inactive and active pages to scan.
        let mut nr = self.get_scan_count(lv, sc, anon);
        let targets = nr;
        // Direct global reclaim at DEF_PRIORITY scans its whole targets; every other reclaimer
        // turns proportional once this lruvec gave it enough.
        let proportional_reclaim =
            !sc.cgroup_reclaim && !sc.is_kswapd && sc.priority == DEF_PRIORITY;
        let reclaimed_before = sc.nr_reclaimed;
        // The active anon list alone does not keep the loop going.
        while nr[0][0] > 0 || nr[1][0] > 0 || nr[1][1] > 0 {
            for (k, file) in [false, true].into_iter().enumerate() {
                sc.may_deactivate = may_deactivate[k];
                if nr[k][0] > 0 {
                    let n = nr[k][0].min(SWAP_CLUSTER_MAX);
                    nr[k][0] -= n;
                    self.shrink_inactive_list(lv, file, n, sc);
                }
                if nr[k][1] > 0 {
                    let n = nr[k][1].min(SWAP_CLUSTER_MAX);
                    nr[k][1] -= n;
                    if sc.may_deactivate {
                        self.shrink_active_list(lv, file, n, sc);
                    } else {
                        sc.skipped_deactivate = true;
                    }
                }
            }
            if sc.nr_reclaimed - reclaimed_before < sc.nr_to_reclaim || proportional_reclaim {
                continue;
            }
            // Enough reclaimed: stop the kind with less left to scan and scan the other only
            // down to the same fraction of its target.
            let left = |k: usize| nr[k][0] + nr[k][1];
            if left(0) == 0 || left(1) == 0 {
                break;
            }
            let (stop, other) = if left(1) > left(0) { (0, 1) } else { (1, 0) };
            let percentage = left(stop) * 100 / (targets[stop][0] + targets[stop][1] + 1);
            nr[stop] = [0, 0];
            for a in 0..2 {
                let scanned = targets[other][a] - nr[other][a];
                nr[other][a] =
                    (targets[other][a] * (100 - percentage) / 100).saturating_sub(scanned);
            }
        }
        // Even without evicting anon pages, rebalance the anon active:inactive ratio (only anon:
        // file lists are aged through the scan targets alone).
        if anon && self.inactive_is_low_flushed(lv, false) {
            self.shrink_active_list(lv, false, SWAP_CLUSTER_MAX, sc);
        }
    }

    pub(super) fn shrink_active_list(
        &mut self,
        lv: usize,
        file: bool,
        nr_to_scan: u64,
        sc: &mut ScanControl,
    ) {
        self.lru_add_drain();
        let mut list = std::mem::take(&mut self.reclaim_scratch);
        list.clear();
        let scanned = self.isolate_lru_folios(lv, lru_of(file, true), nr_to_scan, &mut list);
        // /proc/vmstat's pgrefill counts global reclaim only (a memcg's own is in memory.stat)
        if !sc.cgroup_reclaim {
            self.stat.count(Vm::Pgrefill, scanned);
        }
        let (mut deactivated, mut rotated) = (0, 0);
        for &folio in &list {
            // The references are looked at (and the young bits cleared) but anonymous folios are
            // deactivated whatever they say; so are file folios, except those referenced from an
            // executable mapping: one more trip on the list. Both keep PG_referenced, which
            // folio_check_references set when it activated them: a deactivated folio used again
            // is activated at its next check instead of being kept once more.
            let (referenced, vm_flags) = self.folio_referenced(folio);
            if file && referenced > 0 && vm_flags & VM_EXEC != 0 {
                rotated += self.mem.nr_pages(folio) as u64;
                self.list_add(lv, Lru::ActiveFile, folio, false);
                continue;
            }
            self.mem.clear(folio, pg::ACTIVE);
            self.mem.set(folio, pg::WORKINGSET);
            deactivated += self.mem.nr_pages(folio) as u64;
            self.list_add(lv, lru_of(file, false), folio, false);
        }
        self.stat.count(Vm::Pgdeactivate, deactivated);
        self.reclaim_scratch = list;
        if rotated > 0 {
            self.lru_note_cost(lv, file, 0, rotated);
        }
    }

    pub(super) fn shrink_inactive_list(
        &mut self,
        lv: usize,
        file: bool,
        nr_to_scan: u64,
        sc: &mut ScanControl,
    ) {
        self.lru_add_drain();
        let mut list = std::mem::take(&mut self.reclaim_scratch);
        list.clear();
        let scanned = self.isolate_lru_folios(lv, lru_of(file, false), nr_to_scan, &mut list);
        let memcg = lv / self.nodes.len();
        // pgscan/pgsteal_{kswapd,direct} count only global reclaim; a memcg's own reclaim shows
        // in its memory.stat and in pgscan_anon/pgsteal_anon.
        if !sc.cgroup_reclaim {
            self.stat.count(
                if sc.is_kswapd {
                    Vm::PgscanKswapd
                } else {
                    Vm::PgscanDirect
                },
                scanned,
            );
        }
        self.stat
            .count(if file { Vm::PgscanFile } else { Vm::PgscanAnon }, scanned);
        self.memcgs[memcg].count(Memcg::Pgscan, scanned);
        let (unqueued_before, pageout_before) = (sc.nr_unqueued_dirty, sc.nr_pageout);
        let reclaimed = self.shrink_folio_list(&mut list, sc);
        self.lru_note_cost(
            lv,
            file,
            sc.nr_pageout - pageout_before,
            scanned.saturating_sub(reclaimed),
        );
        if scanned > 0 && sc.nr_unqueued_dirty - unqueued_before == scanned {
            // Every folio taken was dirty and not queued: the flushers are behind.
            self.wakeup_flusher_threads();
            if !self.writeback_throttling_sane(sc) {
                // cgroup v1 throttles its reclaimers here instead (v5.16+).
                self.reclaim_throttle_writeback();
            }
        }
        sc.nr_reclaimed += reclaimed;
        if !sc.cgroup_reclaim {
            self.stat.count(
                if sc.is_kswapd {
                    Vm::PgstealKswapd
                } else {
                    Vm::PgstealDirect
                },
                reclaimed,
            );
        }
        self.stat.count(
            if file {
                Vm::PgstealFile
            } else {
                Vm::PgstealAnon
            },
            reclaimed,
        );
        self.memcgs[memcg].count(Memcg::Pgsteal, reclaimed);
        self.reclaim_scratch = list;
    }

    /// writeback_throttling_sane: global reclaim, or cgroup v2's, which throttles dirtiers
    /// per cgroup; a cgroup v1 reclaimer must throttle itself on writeback.
    fn writeback_throttling_sane(&self, sc: &ScanControl) -> bool {
        !sc.cgroup_reclaim || !self.spec.knobs.memory_cgroup_v1
    }

    /// folio_check_references.
    fn folio_check_references(&mut self, folio: FolioId) -> FolioRef {
        let (referenced_mappings, vm_flags) = self.folio_referenced(folio);
        let referenced_folio = self.mem.test(folio, pg::REFERENCED);
        self.mem.clear(folio, pg::REFERENCED);
        if referenced_mappings > 0 {
            self.mem.set(folio, pg::REFERENCED);
            if referenced_folio || referenced_mappings > 1 {
                return FolioRef::Activate;
            }
            // An executable file folio is activated after its first use.
            if vm_flags & VM_EXEC != 0 && self.folio_is_file_lru(folio) {
                return FolioRef::Activate;
            }
            return FolioRef::Keep;
        }
        FolioRef::Reclaim
    }

    /// Should reclaim split this large anonymous folio before trying to swap it out?
    fn early_split(&self, folio: FolioId) -> bool {
        if self.generation().splits_only_partially_mapped_for_swapout() {
            // Partially mapped folios are split; the rest try a whole allocation.
            self.mem.test(folio, pg::DEFERRED)
        } else {
            // Only a PMD-mapped THP may go to swap whole; everything else is split first.
            !self.folio_pmd_mapped(folio)
        }
    }

    /// shrink_folio_list for isolated anonymous folios of one node; folios it keeps are put back
    /// on the LRU. Folios to reclaim go to the lower tier first when the node can demote; those
    /// that fail to move go through a second pass without demotion. Returns the pages freed.
    pub fn shrink_folio_list(&mut self, list: &mut Vec<FolioId>, sc: &mut ScanControl) -> u64 {
        let Some(&first) = list.first() else {
            return 0;
        };
        let node = self.pfn_node(first);
        let do_demote_pass = self.can_demote(node, sc);
        let mut demote = Vec::new();
        let mut reclaimed =
            self.shrink_folio_list_pass(list, sc, do_demote_pass.then_some(&mut demote));
        if !demote.is_empty() {
            reclaimed += self.demote_folio_list(&mut demote, node, sc);
            if !demote.is_empty() {
                reclaimed += self.shrink_folio_list_pass(&mut demote, sc, None);
            }
        }
        reclaimed
    }

    /// One pass of shrink_folio_list; with `demote`, folios to reclaim are moved there.
    fn shrink_folio_list_pass(
        &mut self,
        list: &mut Vec<FolioId>,
        sc: &mut ScanControl,
        mut demote: Option<&mut Vec<FolioId>>,
    ) -> u64 {
        let mut reclaimed = 0;
        let mut i = 0;
        while i < list.len() {
            let folio = list[i];
            i += 1;
            self.spend(super::TimeKind::ReclaimScan, self.hw.reclaim_scan_folio_ns);
            let file = self.folio_is_file_lru(folio);
            if file && !self.mem.is_shmem(folio) && self.filemap_folio_read_locked(folio) {
                // folio_trylock fails on a folio whose read is in flight or being assembled.
                self.putback_folio(folio, false);
                continue;
            }
            if file {
                // folio_check_dirty_writeback.
                let nr = self.mem.nr_pages(folio) as u64;
                let (dirty, writeback) = (
                    self.mem.test(folio, pg::DIRTY),
                    self.mem.test(folio, pg::WRITEBACK),
                );
                if dirty || writeback {
                    sc.nr_dirty += nr;
                }
                if dirty && !writeback {
                    sc.nr_unqueued_dirty += nr;
                }
            }
            if self.mem.test(folio, pg::WRITEBACK) {
                if file
                    && !self.mem.is_shmem(folio)
                    && self.mem.test(folio, pg::RECLAIM)
                    && !self.writeback_throttling_sane(sc)
                {
                    // Case 3: a cgroup v1 reclaimer meeting a folio it already marked waits
                    // for its writeback (v1 has no dirty throttling of its own) and tries it
                    // again, clean.
                    self.folio_wait_writeback(folio);
                    i -= 1;
                    continue;
                }
                // Case 2: marked for immediate reclaim once written; a file folio is activated
                // meanwhile (v6.x), folio_end_writeback rotates it to the inactive tail.
                self.mem.set(folio, pg::RECLAIM);
                self.putback_folio(folio, file);
                continue;
            }
            let refs = if sc.ignore_references {
                FolioRef::Reclaim
            } else {
                self.folio_check_references(folio)
            };
            match refs {
                FolioRef::Activate => {
                    self.putback_folio(folio, true);
                    continue;
                }
                FolioRef::Keep => {
                    self.putback_folio(folio, false);
                    continue;
                }
                FolioRef::Reclaim => {}
            }
            if let Some(d) = demote.as_deref_mut() {
                d.push(folio);
                continue;
            }
            if file {
                // A page-cache folio: a mapped one is unmapped first (its dirty PTE bits reach
                // the folio); clean ones leave the page cache and are freed. Reclaim does not
                // write dirty ones (v6.16+ never does; before, only kswapd on a node flagged
                // PGDAT_DIRTY, through a ->writepage that iomap filesystems lack): it marks them
                // for immediate reclaim after the flusher's writeback and activates them.
                if self.mem.mapcount(folio) > 0 {
                    self.try_to_unmap(folio);
                }
                if self.mem.test(folio, pg::DIRTY) {
                    let nr = self.mem.nr_pages(folio) as u64;
                    self.stat.count(Vm::NrVmscanImmediateReclaim, nr);
                    self.mem.set(folio, pg::RECLAIM);
                    self.putback_folio(folio, true);
                    continue;
                }
                if self.mem.mapcount(folio) > 0 {
                    self.putback_folio(folio, false);
                    continue;
                }
                let nr = self.mem.nr_pages(folio) as u64;
                let shadow = self.workingset_eviction(folio, sc.target_memcg);
                self.filemap_remove_folio_shadow(folio, shadow);
                self.free_folio(folio);
                reclaimed += nr;
                continue;
            }
            if self.mem.is_shmem(folio) && !self.mem.test(folio, pg::SWAPCACHE) {
                // An shmem folio in its page cache: unmapped like a file folio; a clean one
                // (never written: all zeros) is dropped; a dirty one goes to swap through
                // shmem_writeout, leaving the page cache for the swap cache, and is then freed
                // below as an anonymous swap-cache folio is.
                if self.mem.mapcount(folio) > 0 {
                    self.try_to_unmap(folio);
                    if self.mem.mapcount(folio) > 0 {
                        self.putback_folio(folio, true);
                        continue;
                    }
                }
                let nr = self.mem.nr_pages(folio) as u64;
                if !self.mem.test(folio, pg::DIRTY) {
                    self.filemap_remove_folio(folio);
                    self.free_folio(folio);
                    reclaimed += nr;
                    continue;
                }
                self.try_to_unmap_flush_dirty();
                sc.nr_pageout += nr;
                match self.shmem_writeout(folio, list) {
                    ShmemWrite::Swapped(SwapWrite::Done) => {
                        self.stat.count(Vm::NrVmscanWrite, nr);
                    }
                    ShmemWrite::Swapped(SwapWrite::InFlight) => {
                        self.stat.count(Vm::NrVmscanWrite, nr);
                        self.mem.set(folio, pg::RECLAIM);
                        self.putback_folio(folio, false);
                        continue;
                    }
                    ShmemWrite::Redirty | ShmemWrite::Swapped(SwapWrite::Activate) => {
                        self.putback_folio(folio, true);
                        continue;
                    }
                }
            }
            if !self.mem.test(folio, pg::SWAPCACHE) {
                let nr = self.mem.nr_pages(folio);
                if nr > 1 && self.early_split(folio) {
                    if !self.split_folio_to_list(folio, list) {
                        self.putback_folio(folio, true);
                        continue;
                    }
                }
                if !self.add_to_swap(folio) {
                    let nr = self.mem.nr_pages(folio);
                    if nr == 1 {
                        self.putback_folio(folio, true);
                        continue;
                    }
                    let order = self.mem.order(folio);
                    if !self.split_folio_to_list(folio, list) {
                        self.putback_folio(folio, true);
                        continue;
                    }
                    self.count_swpout_fallback(folio, order);
                    if !self.add_to_swap(folio) {
                        self.putback_folio(folio, true);
                        continue;
                    }
                }
            }
            if self.mem.mapcount(folio) > 0 {
                self.try_to_unmap(folio);
                if self.mem.mapcount(folio) > 0 {
                    self.putback_folio(folio, true);
                    continue;
                }
            }
            if self.mem.test(folio, pg::DIRTY) {
                self.try_to_unmap_flush_dirty();
                let nr = self.mem.nr_pages(folio);
                sc.nr_pageout += nr as u64;
                if self.folio_free_swap(folio) {
                    // swap_writeout: no swap PTE refers to the folio (nothing maps it, as the
                    // zero-filled tails of a v6.18 split), so it leaves the swap cache, redirtied,
                    // instead of being written; reclaim keeps it, and putting it back drops the
                    // last reference (move_folios_to_lru): the folio is freed, not reclaimed.
                    self.spend(super::TimeKind::SwapFree, nr as u64 * self.hw.swap_free_ns);
                    self.stat.count(Vm::NrVmscanWrite, nr as u64);
                    if self.mem.mapcount(folio) == 0 && !self.mem.is_shmem(folio) {
                        self.free_folio(folio);
                    } else {
                        self.putback_folio(folio, false);
                    }
                    continue;
                }
                match self.swap_writepage(folio) {
                    super::swap_state::SwapWrite::Done => {
                        self.stat.count(Vm::NrVmscanWrite, nr as u64);
                    }
                    super::swap_state::SwapWrite::InFlight => {
                        self.stat.count(Vm::NrVmscanWrite, nr as u64);
                        // Asynchronous device: the folio is freed once its writeback completes.
                        self.mem.set(folio, pg::RECLAIM);
                        self.putback_folio(folio, false);
                        continue;
                    }
                    super::swap_state::SwapWrite::Activate => {
                        self.putback_folio(folio, true);
                        continue;
                    }
                }
            }
            // __remove_mapping
            let nr = self.mem.nr_pages(folio) as u64;
            let shadow = self.workingset_eviction(folio, sc.target_memcg);
            self.delete_from_swap_cache_shadow(folio, shadow);
            self.free_folio(folio);
            reclaimed += nr;
        }
        self.try_to_unmap_flush();
        reclaimed
    }

    fn count_swpout_fallback(&mut self, folio: FolioId, order: u32) {
        if order as usize >= crate::scenario::knobs::PMD_ORDER {
            self.stat.count(Vm::ThpSwpoutFallback, 1);
            let memcg = self.mem.memcg(folio) as usize;
            self.memcgs[memcg].count(Memcg::ThpSwpoutFallback, 1);
        }
        if self.generation().counts_mthp_swpout_fallback() {
            self.stat.count_mthp(order, Mthp::SwpoutFallback);
        }
    }

    fn putback_folio(&mut self, folio: FolioId, activate: bool) {
        if activate {
            self.mem.set(folio, pg::ACTIVE);
            self.stat
                .count(Vm::Pgactivate, self.mem.nr_pages(folio) as u64);
            if self.mem.test(folio, pg::SWAPCACHE) && self.vm_swap_full() {
                self.folio_free_swap(folio);
            }
        }
        self.lruvec_add_folio(folio);
    }

    /// Reclaim over every memcg's lruvec on one node (shrink_node / shrink_node_memcgs).
    fn shrink_node(&mut self, node: u32, sc: &mut ScanControl) {
        if node == 0 {
            // shrink_slab; the deferred-split queue is one list for the whole machine here.
            self.shrink_deferred_split(sc.priority);
        }
        for memcg in 0..self.memcgs.len() {
            let lv = self.lruvec_index(memcg as u16, node);
            self.shrink_lruvec(lv, sc);
            if sc.nr_reclaimed >= sc.nr_to_reclaim && !sc.is_kswapd {
                break;
            }
        }
    }

    /// Direct reclaim from the page allocator (try_to_free_pages) on the nodes of `nodemask`,
    /// from `node` on. Returns pages reclaimed.
    pub fn try_to_free_pages(&mut self, node: u32, nodemask: super::mempolicy::Nodemask) -> u64 {
        let start_ns = self.clock_ns;
        let mut sc = ScanControl::new(SWAP_CLUSTER_MAX, false);
        loop {
            for k in 0..self.zones.len() {
                let n = ((node as usize + k) % self.zones.len()) as u32;
                if !super::mempolicy::node_isset(n, nodemask) {
                    continue;
                }
                self.shrink_node(n, &mut sc);
            }
            if sc.nr_reclaimed >= sc.nr_to_reclaim || sc.priority == 0 {
                for n in 0..self.zones.len() as u32 {
                    if super::mempolicy::node_isset(n, nodemask) {
                        self.snapshot_refaults(n as usize);
                    }
                }
                if sc.retry_with_force_deactivate() {
                    continue;
                }
                self.throttle_on_dirty(&sc);
                self.account_direct_reclaim(start_ns, sc.nr_reclaimed);
                return sc.nr_reclaimed;
            }
            sc.priority -= 1;
        }
    }

    /// A reclaimer that freed nothing but found dirty or writeback file folios waits for
    /// writeback (reclaim_throttle, mm/page_writeback.rs) rather than failing at once.
    fn throttle_on_dirty(&mut self, sc: &ScanControl) {
        if sc.nr_reclaimed == 0 && sc.nr_dirty > 0 {
            self.wait_for_next_writeback();
        }
    }

    /// Reclaim from one memcg's LRUs on every node (try_to_free_mem_cgroup_pages).
    pub fn try_to_free_mem_cgroup_pages(&mut self, memcg: u16, nr_pages: u64) -> u64 {
        let start_ns = self.clock_ns;
        let mut sc = ScanControl::memcg_reclaim(memcg, nr_pages);
        while !self.memcg_reclaim_priority(&mut sc) {}
        self.memcg_reclaim_done(&sc, start_ns)
    }

    /// One pass of try_to_free_mem_cgroup_pages's priority loop, at `sc.priority`. True when
    /// the reclaim is over: enough reclaimed, or priority 0 passed (and no force_deactivate
    /// retry); otherwise the priority is lowered for the next pass.
    pub(super) fn memcg_reclaim_priority(&mut self, sc: &mut ScanControl) -> bool {
        let memcg = sc.target_memcg;
        self.shrink_deferred_split(sc.priority);
        for node in 0..self.nodes.len() as u32 {
            let lv = self.lruvec_index(memcg, node);
            self.shrink_lruvec(lv, sc);
        }
        if sc.nr_reclaimed >= sc.nr_to_reclaim || sc.priority == 0 {
            for node in 0..self.nodes.len() as u32 {
                self.snapshot_refaults(self.lruvec_index(memcg, node));
            }
            return !sc.retry_with_force_deactivate();
        }
        sc.priority -= 1;
        false
    }

    /// The end of a memcg reclaim begun at `start_ns`: the writeback throttle and the reclaimer's
    /// own figures. Returns the pages reclaimed.
    pub(super) fn memcg_reclaim_done(&mut self, sc: &ScanControl, start_ns: u64) -> u64 {
        self.throttle_on_dirty(sc);
        self.account_direct_reclaim(start_ns, sc.nr_reclaimed);
        sc.nr_reclaimed
    }

    /// Per-task figures of the reclaim the current task did itself.
    fn account_direct_reclaim(&mut self, start_ns: u64, reclaimed: u64) {
        let task = &mut self.tasks[self.current as usize];
        task.direct_reclaim_ns += self.clock_ns - start_ns;
        task.direct_reclaim_pages += reclaimed;
    }

    /// MADV_PAGEOUT's reclaim_pages: reclaim these isolated folios whatever their references.
    pub fn reclaim_pages(&mut self, list: &mut Vec<FolioId>) -> u64 {
        let mut sc = ScanControl::new(u64::MAX, false);
        sc.ignore_references = true;
        sc.no_demotion = true;
        self.shrink_folio_list(list, &mut sc)
    }

    /// pgdat_balanced: above the high watermark, or in tiering mode the promotion watermark,
    /// which leaves room for promotions.
    pub fn pgdat_balanced(&self, node: u32) -> bool {
        let z = &self.zones[node as usize];
        let mark = if self.numa_tiering() {
            z.wmark_promo
        } else {
            z.wmark_high
        };
        z.watermark_ok(0, mark)
    }

    /// wakeup_kswapd: only when the node is below its low watermark.
    pub fn wakeup_kswapd(&mut self, node: u32) {
        if self.pgdat_balanced(node) {
            return;
        }
        let t = self.nodes[node as usize].kswapd;
        self.wake_task(t);
    }

    /// One round of balance_pgdat: reclaim toward the high watermark at the current priority,
    /// raising the priority when a round frees nothing. Returns false when kswapd should sleep.
    pub fn kswapd_round(&mut self, node: u32, priority: &mut u32) -> bool {
        if self.pgdat_balanced(node) {
            // the end of balance_pgdat
            self.snapshot_refaults(node as usize);
            *priority = DEF_PRIORITY;
            return false;
        }
        self.stat.count(Vm::KswapdWakeups, 1);
        let high = self.zones[node as usize].wmark_high;
        let mut sc = ScanControl::new(high.max(SWAP_CLUSTER_MAX), true);
        sc.priority = *priority;
        self.shrink_node(node, &mut sc);
        if sc.nr_reclaimed == 0 {
            if *priority == 0 {
                // kswapd_failures: give up until a direct reclaimer makes progress.
                self.snapshot_refaults(node as usize);
                *priority = DEF_PRIORITY;
                return false;
            }
            *priority -= 1;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One node of 4 GiB, a cgroup "cg", no swap configured (the tests set what they need).
    fn boot(swappiness: u32) -> Kernel {
        let toml = r#"
name = "t"
[[machine.node]]
memory = "4G"
cpus = 1
[[swap]]
name = "z"
kind = "zram"
size = "1G"
[[cgroup]]
name = "cg"
"memory.max" = "1G"
[[task]]
name = "t"
ops = [{ op = "sleep", time = "1ms" }]
"#;
        let (mut k, _) = crate::mm::boot_for_test(toml, "v6.18");
        k.spec.knobs.swappiness = swappiness;
        k
    }

    /// The lists' sizes, not yet flushed to the statistics that reclaim reads.
    fn set_sizes_unflushed(k: &mut Kernel, lv: usize, sizes: [u64; NR_LRU_LISTS]) {
        for (list, n) in k.lruvecs[lv].lists.iter_mut().zip(sizes) {
            list.nr_pages = n;
        }
    }

    /// The lists' sizes, flushed to the statistics that reclaim reads.
    fn set_sizes(k: &mut Kernel, lv: usize, sizes: [u64; NR_LRU_LISTS]) {
        set_sizes_unflushed(k, lv, sizes);
        k.memcg_stats_flush();
    }

    fn limit_reclaim(priority: u32) -> ScanControl {
        let mut sc = ScanControl::new(SWAP_CLUSTER_MAX, false);
        sc.cgroup_reclaim = true;
        sc.priority = priority;
        sc
    }

    #[test]
    fn reclaim_reads_the_list_sizes_as_flushed_every_two_seconds() {
        let mut k = boot(60);
        let lv = k.lruvec_index(1, 0);
        set_sizes_unflushed(&mut k, lv, [0, 1000, 0, 0]);
        assert!(!k.inactive_is_low_flushed(lv, false), "nothing flushed yet");
        let due = k.memcg_stats_next_flush_ns;
        assert!(
            due < crate::mm::memcontrol::FLUSH_TIME_NS,
            "the first flush within a period"
        );
        k.clock_ns = due - 1;
        k.memcg_stats_flush_due();
        assert!(!k.inactive_is_low_flushed(lv, false));
        k.clock_ns = due;
        k.memcg_stats_flush_due();
        assert!(k.inactive_is_low_flushed(lv, false), "flushed when due");
        assert_eq!(
            k.memcg_stats_next_flush_ns,
            due + crate::mm::memcontrol::FLUSH_TIME_NS
        );
        // a hierarchical figure: the root's lruvec counts its cgroups' pages
        assert!(k.inactive_is_low_flushed(k.lruvec_index(0, 0), false));
    }

    /// lru_note_cost decays the costs against lruvec_page_state, the statistics as last
    /// flushed: in a cgroup that filled since the last flush, each note halves them.
    #[test]
    fn reclaim_costs_decay_against_the_lists_as_last_flushed() {
        let mut k = boot(60);
        let lv = k.lruvec_index(1, 0);
        set_sizes_unflushed(&mut k, lv, [4000, 0, 0, 0]);
        k.lru_note_cost(lv, false, 0, 100);
        k.lru_note_cost(lv, false, 0, 100);
        assert_eq!(
            k.lruvecs[lv].anon_cost, 75,
            "nothing flushed: (100/2 + 100)/2"
        );
        set_sizes(&mut k, lv, [4000, 0, 0, 0]);
        k.lru_note_cost(lv, false, 0, 100);
        assert_eq!(
            k.lruvecs[lv].anon_cost, 175,
            "under a quarter of the flushed 4000"
        );
    }

    /// Every page of the cgroup is on the active file list, but the flushed statistics are of
    /// before (empty lists): inactive_is_low says no, nothing refaulted, so may_deactivate stays
    /// off and a pass down to priority 0 frees nothing. do_try_to_free_pages then goes again
    /// with force_deactivate instead of failing (and the charge ending in the OOM killer).
    #[test]
    fn a_limit_reclaim_that_skipped_deactivation_retries_with_force_deactivate() {
        let mut k = boot(60);
        let t = k.current as usize;
        k.tasks[t].memcg = 1;
        let file = k.create_file(crate::mm::filemap::File::new(
            "f".into(),
            256 * 4096,
            128,
            false,
        ));
        for index in 0..256 {
            let folio = k
                .filemap_alloc_folio(file, index, 0, crate::mm::memory::Gfp::USER)
                .unwrap();
            k.folio_mark_accessed(folio);
            k.folio_mark_accessed(folio);
        }
        k.lru_add_drain();
        let lv = k.lruvec_index(1, 0);
        assert_eq!(k.lruvecs[lv].lists[Lru::ActiveFile as usize].nr_pages, 256);
        assert!(k.clock_ns < k.memcg_stats_next_flush_ns, "no flush due yet");
        assert!(!k.inactive_is_low_flushed(lv, true));
        let reclaimed = k.try_to_free_mem_cgroup_pages(1, SWAP_CLUSTER_MAX);
        assert!(reclaimed >= SWAP_CLUSTER_MAX, "reclaimed {reclaimed}");
        assert!(k.stat.get(Vm::Pgdeactivate) > 0);
    }

    #[test]
    fn anon_only_limit_reclaim_scans_a_swappiness_share_of_the_list() {
        // 1 GiB of inactive anon pages, no file pages, anon reclaim cost only: with swappiness
        // 60 anon gets 90 / (90 + 420) of `size >> priority`: 11 pages at priority 12 and 22 at
        // 11 (as the live kernel's mm_vmscan_lru_shrink_inactive shows for usemem-split).
        let mut k = boot(60);
        let lv = k.lruvec_index(1, 0);
        set_sizes(&mut k, lv, [262_144, 0, 0, 0]);
        k.lruvecs[lv].anon_cost = 50_000;
        assert_eq!(
            k.get_scan_count(lv, &limit_reclaim(12), true),
            [[11, 0], [0, 0]]
        );
        assert_eq!(
            k.get_scan_count(lv, &limit_reclaim(11), true),
            [[22, 0], [0, 0]]
        );
        // Close to OOM every list is scanned by its size.
        assert_eq!(
            k.get_scan_count(lv, &limit_reclaim(0), true),
            [[262_144, 0], [0, 0]]
        );
        // With swappiness 100 and no history, anon and file weigh the same (the inactive file
        // list is low against the active one, so no cache trimming).
        k.spec.knobs.swappiness = 100;
        k.lruvecs[lv].anon_cost = 0;
        set_sizes(&mut k, lv, [65_536, 0, 65_536, 262_144]);
        assert_eq!(
            k.get_scan_count(lv, &limit_reclaim(12), true),
            [[8, 0], [8, 32]]
        );
    }

    #[test]
    fn no_swappiness_in_limit_reclaim_leaves_anon_alone() {
        let mut k = boot(0);
        let lv = k.lruvec_index(1, 0);
        set_sizes(&mut k, lv, [262_144, 0, 65_536, 0]);
        let nr = k.get_scan_count(lv, &limit_reclaim(12), true);
        assert_eq!(nr[0], [0, 0]);
        assert_eq!(nr[1][0], 16);
        // No anon to reclaim to (no swap, no lower tier): file only, whatever swappiness says.
        k.spec.knobs.swappiness = 100;
        assert_eq!(k.get_scan_count(lv, &limit_reclaim(12), false)[0], [0, 0]);
    }

    #[test]
    fn plenty_of_inactive_cache_is_trimmed_before_anon() {
        let mut k = boot(60);
        let lv = k.lruvec_index(1, 0);
        // The inactive file list is not low against the active one: cache_trim_mode.
        set_sizes(&mut k, lv, [131_072, 0, 131_072, 0]);
        assert_eq!(
            k.get_scan_count(lv, &limit_reclaim(12), true),
            [[0, 0], [32, 0]]
        );
        // Once inactive file is low against active file, the balance is by cost again.
        set_sizes(&mut k, lv, [131_072, 0, 1_000, 131_072]);
        let nr = k.get_scan_count(lv, &limit_reclaim(12), true);
        assert!(nr[0][0] > 0 && nr[1][1] > 0, "{nr:?}");
        // Refault activations since the cgroup's last reclaim: file deactivation is due, so
        // no cache trimming however much inactive cache there is.
        set_sizes(&mut k, lv, [131_072, 0, 131_072, 0]);
        k.lruvecs[lv].flushed.workingset_activate[1] += 1;
        let nr = k.get_scan_count(lv, &limit_reclaim(12), true);
        assert!(nr[0][0] > 0, "{nr:?}");
    }

    #[test]
    fn cache_trimming_reads_the_flushed_inactive_file_size() {
        let mut k = boot(60);
        let lv = k.lruvec_index(1, 0);
        // The cgroup filled up since the statistics were last flushed (when it was empty): the
        // lists hold plenty of inactive cache, but reclaim sees none to trim and balances by
        // cost, scanning anon too.
        for (list, n) in k.lruvecs[lv].lists.iter_mut().zip([131_072, 0, 131_072, 0]) {
            list.nr_pages = n;
        }
        let nr = k.get_scan_count(lv, &limit_reclaim(12), true);
        assert!(nr[0][0] > 0 && nr[1][0] > 0, "{nr:?}");
        k.memcg_stats_flush();
        assert_eq!(k.get_scan_count(lv, &limit_reclaim(12), true)[0], [0, 0]);
    }

    /// A machine with `anon` pages of one process's anonymous memory (the active ones of them
    /// first) and `file` clean, unreferenced page-cache pages, their young bits cleared and
    /// the statistics flushed; returns the node's lruvec.
    fn lists(anon: u32, active_anon: u32, file: u32, active_file: bool) -> (Kernel, usize) {
        let thp_never = r#""/sys/kernel/mm/transparent_hugepage/enabled" = "never""#;
        let (mut k, mm) = crate::mm::boot_zram_for_test("v6.18", None, thp_never);
        let start = k.mmap_anon(mm, anon);
        for vpn in start..start + anon {
            k.touch(mm, vpn, true, crate::mm::folio::content::DATA_DEFAULT)
                .unwrap();
        }
        let f = k.create_file(crate::mm::filemap::File::new(
            "f".into(),
            file as u64 * 4096,
            128,
            false,
        ));
        for index in 0..file {
            let folio = k
                .filemap_alloc_folio(f, index, 0, crate::mm::memory::Gfp::USER)
                .unwrap();
            if active_file {
                k.folio_mark_accessed(folio);
                k.folio_mark_accessed(folio);
            }
        }
        k.lru_add_drain();
        let lv = k.lruvec_index(0, 0);
        let mut folios = Vec::new();
        for lru in 0..NR_LRU_LISTS {
            let mut folio = k.lruvecs[lv].lists[lru].tail;
            while folio != NIL {
                folios.push(folio);
                folio = k.mem.pages[folio as usize].lru_prev;
            }
        }
        for (i, &folio) in folios.iter().enumerate() {
            k.folio_referenced(folio);
            if !k.folio_is_file_lru(folio) && (i as u32) < active_anon {
                k.lruvec_del_folio(folio);
                k.mem.set(folio, pg::ACTIVE);
                k.lruvec_add_folio(folio);
            }
        }
        k.memcg_stats_flush();
        (k, lv)
    }

    #[test]
    fn a_deactivated_anon_folio_used_again_is_activated_at_its_next_check() {
        // folio_check_references leaves PG_referenced on the folios it activates and
        // shrink_active_list leaves it on those it deactivates, so that a deactivated folio
        // used again is activated at its next check, not kept for one more trip.
        let thp_never = r#""/sys/kernel/mm/transparent_hugepage/enabled" = "never""#;
        let (mut k, mm) = crate::mm::boot_zram_for_test("v6.18", None, thp_never);
        let vpn = k.mmap_anon(mm, 1);
        let data = crate::mm::folio::content::DATA_DEFAULT;
        k.touch(mm, vpn, true, data).unwrap();
        let lv = k.lruvec_index(0, 0);
        let vi = k.mms[mm as usize].find_vma(vpn).unwrap();
        let pte =
            k.mms[mm as usize].vmas[vi].ptes[(vpn - k.mms[mm as usize].vmas[vi].start) as usize];
        let folio = crate::mm::pagetable::pfn(pte);
        // Each use below comes after the CPU dropped the translation, so that it walks the
        // page table and sets the young bit the check cleared (x86 does not flush it).
        let evicted = |k: &mut Kernel| k.cpu_tlbs[k.current_cpu as usize].flush_one(mm, vpn);
        // used at two checks in a row: kept, then activated
        assert_eq!(k.folio_check_references(folio), FolioRef::Keep);
        evicted(&mut k);
        k.touch(mm, vpn, false, data).unwrap();
        assert_eq!(k.folio_check_references(folio), FolioRef::Activate);
        k.lru_add_drain();
        k.lruvec_del_folio(folio);
        k.mem.set(folio, pg::ACTIVE);
        k.lruvec_add_folio(folio);
        let mut sc = ScanControl::new(SWAP_CLUSTER_MAX, false);
        k.shrink_active_list(lv, false, 1, &mut sc);
        assert!(!k.mem.test(folio, pg::ACTIVE));
        evicted(&mut k);
        k.touch(mm, vpn, false, data).unwrap();
        assert_eq!(k.folio_check_references(folio), FolioRef::Activate);
    }

    #[test]
    fn the_active_anon_list_alone_does_not_keep_shrink_lruvec_going() {
        // Only active anon pages: at priority 0 every list is a scan target, but the loop runs
        // on inactive anon and the file lists; the anon lists are rebalanced once at the end.
        let (mut k, lv) = lists(256, 256, 0, false);
        assert_eq!(k.lruvecs[lv].lists[Lru::ActiveAnon as usize].nr_pages, 256);
        let mut sc = ScanControl::new(SWAP_CLUSTER_MAX, false);
        sc.priority = 0;
        k.shrink_lruvec(lv, &mut sc);
        assert_eq!(k.stat.get(Vm::Pgdeactivate), SWAP_CLUSTER_MAX);
    }

    #[test]
    fn shrink_lruvec_ages_only_the_anon_lists_at_its_end() {
        // Only active file pages, the inactive list low against them, no scan target at
        // DEF_PRIORITY: the file lists are aged through their targets, not at the end.
        let (mut k, lv) = lists(0, 0, 256, true);
        assert_eq!(k.lruvecs[lv].lists[Lru::ActiveFile as usize].nr_pages, 256);
        let mut sc = ScanControl::new(SWAP_CLUSTER_MAX, false);
        k.shrink_lruvec(lv, &mut sc);
        assert_eq!(k.stat.get(Vm::Pgdeactivate), 0);
    }

    #[test]
    fn once_enough_is_reclaimed_the_larger_kind_gets_one_more_nudge() {
        // 1,024 inactive anon pages and 64 inactive file pages, every one reclaimable; at
        // priority 0 both are scanned whole. The first batch of each frees 64 pages, more than
        // the 32 asked: file, with less left (32 of 64), stops; anon may go on to 51 % of its
        // target, but after one more batch the loop ends, the smaller kind being done.
        let (mut k, lv) = lists(1024, 0, 64, false);
        let mut sc = ScanControl::new(SWAP_CLUSTER_MAX, false);
        sc.priority = 0;
        k.shrink_lruvec(lv, &mut sc);
        assert_eq!(k.stat.get(Vm::PgscanFile), 32);
        assert_eq!(k.stat.get(Vm::PgscanAnon), 64);
    }

    #[test]
    fn reclaim_cost_goes_to_the_cgroup_and_the_root_and_decays() {
        let mut k = boot(60);
        let lv = k.lruvec_index(1, 0);
        set_sizes(&mut k, lv, [4_000, 0, 0, 0]);
        k.lru_note_cost(lv, false, 10, 5);
        assert_eq!(k.lruvecs[lv].anon_cost, 10 * SWAP_CLUSTER_MAX + 5);
        assert_eq!(
            k.lruvecs[0].anon_cost,
            10 * SWAP_CLUSTER_MAX + 5,
            "the parent's"
        );
        // Past a quarter of the lruvec's 4,000 pages both costs halve.
        k.lruvecs[lv].file_cost = 600;
        k.lru_note_cost(lv, false, 20, 0);
        assert_eq!(k.lruvecs[lv].anon_cost, (325 + 640) / 2);
        assert_eq!(k.lruvecs[lv].file_cost, 300);
    }
}
