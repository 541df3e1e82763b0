//! Workingset refault detection: shadow entries left in the page cache and the swap cache when
//! reclaim evicts a folio, the refault distance they give when the folio comes back, and the
//! activation (and restore of PG_workingset) it decides.
//!
//! Models mm/workingset.c for the classic LRU (v6.9–v6.18, MGLRU off): each lruvec's
//! `nonresident_age`, advanced by evictions, refault activations and folio_mark_accessed
//! activations (workingset_age_nonresident, up the cgroup hierarchy); workingset_eviction packs
//! the reclaim target's age, cgroup, node and PG_workingset into the shadow (pack_shadow);
//! workingset_test_recent compares the refault distance with the workingset size of the
//! evicting lruvec (active file, plus inactive file for anon, plus active anon, and inactive anon
//! for file, when swap space is left; the sizes as the memcg statistics were last flushed,
//! mm/memcontrol.rs); workingset_refault counts the refault, activates a recent
//! one and restores PG_workingset (charging the refault's I/O to lru_note_cost); and the
//! refault-driven deactivation of prepare_scan_control with snapshot_refaults. Shadows go where
//! the kernel keeps them: the swap cache slot (`SwapInfo::shadows`; dropped when the slot is
//! freed, as swap_range_free does) and the page-cache index (`File::shadows`).
//! workingset_nodes is the kernel's gauge of xarray leaf nodes (64 slots) holding only shadows,
//! counted from the caches when asked; from v6.18 the swap cache is the swap table, whose shadows
//! are in no xarray.
//! Left out: bucket_order (0 on any machine of less than 2^40 pages), the shadow-node shrinker
//! (workingset_nodereclaim stays 0: it drops shadows only when their nodes exceed 1/8 of the
//! memory's pages, far beyond what runs here leave), memcg IDs recycled after a cgroup is
//! removed, MGLRU's lru_gen_refault, and multi-index page-cache entries (each index of a large
//! folio counts as one slot of its leaf node).

use super::folio::{pg, FolioId, NIL};
use super::vmscan::Lru;
use super::vmstat::{Memcg, Vm};
use super::Kernel;

/// Bits of the eviction counter a shadow keeps (64 minus the xarray value tag, PG_workingset,
/// the node and the 16-bit memcg ID: EVICTION_BITS with NODES_SHIFT 6).
const EVICTION_BITS: u32 = 40;
const EVICTION_MASK: u64 = (1 << EVICTION_BITS) - 1;
/// Slots per xarray node (XA_CHUNK_SHIFT 6).
const XA_CHUNK_SHIFT: u32 = 6;

/// A shadow entry: the evicting lruvec's nonresident age, cgroup and node, and whether the folio
/// was in the workingset. Zero is no shadow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shadow(u64);

impl Shadow {
    pub const NONE: Shadow = Shadow(0);

    fn pack(memcg: u16, node: u32, eviction: u64, workingset: bool) -> Shadow {
        debug_assert!(node < 64);
        Shadow(
            (eviction & EVICTION_MASK) << 24
                | (memcg as u64) << 8
                | (node as u64) << 2
                | (workingset as u64) << 1
                | 1,
        )
    }

    /// (memcg, node, eviction age, PG_workingset).
    fn unpack(self) -> (u16, u32, u64, bool) {
        let v = self.0;
        ((v >> 8) as u16, ((v >> 2) & 63) as u32, v >> 24, v & 2 != 0)
    }

    pub fn is_some(self) -> bool {
        self.0 != 0
    }
}

/// Per-lruvec workingset state.
#[derive(Clone, Debug, Default)]
pub struct LruvecWorkingset {
    /// Evictions and activations seen by this lruvec and its descendants (nonresident_age).
    pub nonresident_age: u64,
    /// WORKINGSET_ACTIVATE_ANON / _FILE, hierarchical (the lruvec's and its descendants').
    pub activate: [u64; 2],
    /// The activations when reclaim of this target last ended (lruvec->refaults).
    pub refaults_snapshot: [u64; 2],
}

impl Kernel {
    /// The lruvec and its ancestors: a cgroup's lruvec of a node, then the root's of that node.
    fn lruvec_and_parents(
        &self,
        lv: usize,
    ) -> std::iter::Chain<std::iter::Once<usize>, std::option::IntoIter<usize>> {
        let nodes = self.nodes.len();
        std::iter::once(lv).chain((lv >= nodes).then_some(lv % nodes))
    }

    /// workingset_age_nonresident: the lruvec and every ancestor age by `nr` pages.
    pub fn workingset_age_nonresident(&mut self, lv: usize, nr: u64) {
        for i in self.lruvec_and_parents(lv) {
            self.lruvecs[i].workingset.nonresident_age += nr;
        }
    }

    /// workingset_eviction: the shadow of a folio reclaim evicts on behalf of `target_memcg`
    /// (the root cgroup for global reclaim and MADV_PAGEOUT).
    pub fn workingset_eviction(&mut self, folio: FolioId, target_memcg: u16) -> Shadow {
        let node = self.pfn_node(folio);
        let lv = self.lruvec_index(target_memcg, node);
        let eviction = self.lruvecs[lv].workingset.nonresident_age;
        self.workingset_age_nonresident(lv, self.mem.nr_pages(folio) as u64);
        Shadow::pack(
            target_memcg,
            node,
            eviction,
            self.mem.test(folio, pg::WORKINGSET),
        )
    }

    /// workingset_test_recent: was the evicted folio closer to the evicting lruvec's workingset
    /// than that workingset's size? Also returns the shadow's PG_workingset.
    pub fn workingset_test_recent(&self, shadow: Shadow, file: bool) -> (bool, bool) {
        let (memcg, node, eviction, workingset) = shadow.unpack();
        let lv = self.lruvec_index(memcg, node);
        let refault = self.lruvecs[lv].workingset.nonresident_age;
        let refault_distance = refault.wrapping_sub(eviction) & EVICTION_MASK;
        // lruvec_page_state: the statistics as last flushed (mm/memcontrol.rs)
        let size = |lru: Lru| self.lruvecs[lv].flushed.lru[lru as usize];
        let mut workingset_size = size(Lru::ActiveFile);
        if !file {
            workingset_size += size(Lru::InactiveFile);
        }
        // mem_cgroup_get_nr_swap_pages: no memory.swap.max is modelled, so the machine's.
        if self.nr_swap_pages() > 0 {
            workingset_size += size(Lru::ActiveAnon);
            if file {
                workingset_size += size(Lru::InactiveAnon);
            }
        }
        (refault_distance <= workingset_size, workingset)
    }

    /// workingset_refault: a folio read back where a shadow was; counted, and activated (before
    /// it joins the LRU) when its refault distance says it belongs to the workingset.
    pub fn workingset_refault(&mut self, folio: FolioId, shadow: Shadow) {
        let file = self.folio_is_file_lru(folio);
        let nr = self.mem.nr_pages(folio) as u64;
        let memcg = self.mem.memcg(folio) as usize;
        let lv = self.lruvec_index(memcg as u16, self.pfn_node(folio));
        let [refault, activate, restore] = if file {
            [
                (Vm::WorkingsetRefaultFile, Memcg::WorkingsetRefaultFile),
                (Vm::WorkingsetActivateFile, Memcg::WorkingsetActivateFile),
                (Vm::WorkingsetRestoreFile, Memcg::WorkingsetRestoreFile),
            ]
        } else {
            [
                (Vm::WorkingsetRefaultAnon, Memcg::WorkingsetRefaultAnon),
                (Vm::WorkingsetActivateAnon, Memcg::WorkingsetActivateAnon),
                (Vm::WorkingsetRestoreAnon, Memcg::WorkingsetRestoreAnon),
            ]
        };
        let count = |k: &mut Kernel, (vm, cg): (Vm, Memcg)| {
            k.stat.count(vm, nr);
            k.memcgs[memcg].count(cg, nr);
        };
        count(self, refault);
        self.memcg_stats_flush_due();
        let (recent, workingset) = self.workingset_test_recent(shadow, file);
        if !recent {
            return;
        }
        self.mem.set(folio, pg::ACTIVE);
        self.workingset_age_nonresident(lv, nr);
        count(self, activate);
        for i in self.lruvec_and_parents(lv) {
            self.lruvecs[i].workingset.activate[file as usize] += nr;
        }
        if workingset {
            self.mem.set(folio, pg::WORKINGSET);
            self.lru_note_cost(lv, file, nr, 0);
            count(self, restore);
        }
    }

    /// workingset_activation: folio_mark_accessed activated a folio; its lruvec ages.
    pub fn workingset_activation(&mut self, folio: FolioId) {
        let lv = self.lruvec_index(self.mem.memcg(folio), self.pfn_node(folio));
        self.workingset_age_nonresident(lv, self.mem.nr_pages(folio) as u64);
    }

    /// prepare_scan_control's test: did the reclaim target see refault activations of this kind
    /// since its last reclaim ended? Then its active list is deactivated, however long.
    pub fn refaults_since_snapshot(&self, target_lv: usize, file: bool) -> bool {
        let v = &self.lruvecs[target_lv];
        v.flushed.workingset_activate[file as usize]
            != v.workingset.refaults_snapshot[file as usize]
    }

    /// snapshot_refaults: the end of a reclaim of `target_lv`.
    pub fn snapshot_refaults(&mut self, target_lv: usize) {
        let v = &mut self.lruvecs[target_lv];
        v.workingset.refaults_snapshot = v.flushed.workingset_activate;
    }

    /// The page-cache insertion of `folio` at `index..index + nr`: the shadows it replaces go,
    /// and the last of them decides the refault unless the folio is for a write (__GFP_WRITE).
    pub fn workingset_refault_file(
        &mut self,
        folio: FolioId,
        file: u32,
        index: u32,
        nr: u32,
        write: bool,
    ) {
        let f = &mut self.files[file as usize];
        if f.shadows.is_empty() {
            return; // nothing of the file was ever evicted
        }
        let mut shadow = Shadow::NONE;
        for s in &mut f.shadows[index as usize..(index + nr) as usize] {
            if s.is_some() {
                shadow = std::mem::take(s);
            }
        }
        if shadow.is_some() && !write {
            self.workingset_refault(folio, shadow);
        }
    }

    /// workingset_nodes: xarray leaf nodes that hold shadows and no folio, in every file's page
    /// cache and (before the swap table of v6.18) every swap device's swap cache.
    pub fn workingset_nodes(&self) -> u64 {
        let mut nodes = 0;
        let chunk = 1 << XA_CHUNK_SHIFT;
        let shadow_only = |shadows: &[Shadow], cache: &[FolioId]| {
            shadows
                .chunks(chunk)
                .zip(cache.chunks(chunk))
                .filter(|(s, c)| s.iter().any(|s| s.is_some()) && c.iter().all(|&c| c == NIL))
                .count() as u64
        };
        for f in &self.files {
            nodes += shadow_only(&f.shadows, &f.cache);
        }
        if self.generation().swap_cache_in_xarray() {
            for si in &self.swap {
                nodes += shadow_only(&si.shadows, &si.cache);
            }
        }
        nodes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::folio::content;
    use crate::mm::vmscan::ScanControl;

    #[test]
    fn a_shadow_round_trips_its_fields_and_masks_the_age() {
        let s = Shadow::pack(513, 3, (1 << 41) + 77, true);
        assert!(s.is_some());
        assert_eq!(s.unpack(), (513, 3, 77 + (1 << 41 & EVICTION_MASK), true));
        assert_eq!(Shadow::pack(0, 0, 0, false).unpack(), (0, 0, 0, false));
        assert!(!Shadow::NONE.is_some());
    }

    fn boot(profile: &str) -> (Kernel, u32) {
        crate::mm::boot_zram_for_test(profile, None, "")
    }

    /// Writes `nr` pages of a new anonymous region with data and returns its first page.
    fn populate(k: &mut Kernel, mm: u32, nr: u32) -> u32 {
        let start = k.mmap_anon(mm, nr);
        for i in 0..nr {
            k.touch(mm, start + i, true, content::DATA_DEFAULT).unwrap();
        }
        start
    }

    fn folio_at(k: &Kernel, mm: u32, vpn: u32) -> FolioId {
        let vi = k.mms[mm as usize].find_vma(vpn).unwrap();
        let v = &k.mms[mm as usize].vmas[vi];
        crate::mm::pagetable::pfn(v.ptes[(vpn - v.start) as usize])
    }

    /// Global reclaim of exactly these pages' folios, as shrink_inactive_list would.
    fn evict(k: &mut Kernel, mm: u32, vpns: std::ops::Range<u32>) {
        let mut list: Vec<FolioId> = vpns.map(|v| folio_at(k, mm, v)).collect();
        for &f in &list {
            k.lru_add_drain();
            k.lruvec_del_folio(f);
        }
        let mut sc = ScanControl::new(u64::MAX, false);
        sc.ignore_references = true;
        k.shrink_folio_list(&mut list, &mut sc);
    }

    fn activate(k: &mut Kernel, mm: u32, vpns: std::ops::Range<u32>) {
        for vpn in vpns {
            let f = folio_at(k, mm, vpn);
            k.lru_add_drain();
            k.lruvec_del_folio(f);
            k.mem.set(f, pg::ACTIVE);
            k.lruvec_add_folio(f);
        }
    }

    #[test]
    fn an_anon_refault_within_the_workingset_is_activated_and_one_beyond_it_is_not() {
        let (mut k, mm) = boot("v6.12");
        let start = populate(&mut k, mm, 64);
        let root = k.lruvec_index(0, 0);
        // Page 0 goes first; 40 evictions after it put it 40 pages behind, while the workingset
        // (active + inactive file, active anon) is 0 pages: not recent.
        evict(&mut k, mm, start..start + 1);
        evict(&mut k, mm, start + 1..start + 41);
        assert_eq!(k.lruvecs[root].workingset.nonresident_age, 41);
        k.touch(mm, start, false, 0).unwrap();
        assert_eq!(k.stat.get(Vm::WorkingsetRefaultAnon), 1);
        assert_eq!(k.stat.get(Vm::WorkingsetActivateAnon), 0);
        assert!(!k.mem.test(folio_at(&k, mm, start), pg::ACTIVE));
        // With 40 active anon pages, page 1's distance (39 evictions since it, plus the one
        // above) is inside the workingset: it comes back active, and the age moves on.
        let busy = populate(&mut k, mm, 40);
        activate(&mut k, mm, busy..busy + 40);
        // once the statistics are flushed (refault detection reads them as last flushed)
        k.touch(mm, start + 1, false, 0).unwrap();
        assert_eq!(
            k.stat.get(Vm::WorkingsetActivateAnon),
            0,
            "stale statistics"
        );
        k.memcg_stats_flush();
        k.touch(mm, start + 2, false, 0).unwrap();
        assert_eq!(k.stat.get(Vm::WorkingsetRefaultAnon), 3);
        assert_eq!(k.stat.get(Vm::WorkingsetActivateAnon), 1);
        assert_eq!(k.stat.get(Vm::WorkingsetRestoreAnon), 0);
        assert!(k.mem.test(folio_at(&k, mm, start + 2), pg::ACTIVE));
        assert_eq!(k.lruvecs[root].workingset.nonresident_age, 42);
        // Reclaim of the root now deactivates anon whatever the list sizes say, once, from
        // when the activation shows in the flushed statistics.
        assert!(!k.refaults_since_snapshot(root, false));
        k.memcg_stats_flush();
        assert!(k.refaults_since_snapshot(root, false));
        assert!(!k.refaults_since_snapshot(root, true));
        k.snapshot_refaults(root);
        assert!(!k.refaults_since_snapshot(root, false));
    }

    #[test]
    fn a_deactivated_folio_is_restored_on_refault_and_its_shadow_goes_with_its_slot() {
        // v6.18: no swap slot cache, so the swap-in frees the slot at once
        let (mut k, mm) = boot("v6.18");
        let start = populate(&mut k, mm, 8);
        // a workingset of 7 active pages: a distance of 1 is recent
        activate(&mut k, mm, start + 1..start + 8);
        k.memcg_stats_flush();
        let f = folio_at(&k, mm, start);
        k.mem.set(f, pg::WORKINGSET);
        evict(&mut k, mm, start..start + 1);
        let pte = {
            let vi = k.mms[mm as usize].find_vma(start).unwrap();
            k.mms[mm as usize].vmas[vi].ptes[0]
        };
        let (dev, off) = (
            crate::mm::pagetable::swap_device(pte),
            crate::mm::pagetable::swap_offset(pte),
        );
        let shadow = k.swap[dev as usize].shadows[off as usize];
        assert!(shadow.is_some());
        assert_eq!(shadow.unpack().3, true, "PG_workingset kept in the shadow");
        assert_eq!(k.stat.get(Vm::Pgpgout), 4, "one page written, in KiB");
        k.touch(mm, start, false, 0).unwrap();
        assert_eq!(k.stat.get(Vm::Pgpgin), 4);
        assert_eq!(k.stat.get(Vm::WorkingsetActivateAnon), 1);
        assert_eq!(k.stat.get(Vm::WorkingsetRestoreAnon), 1);
        let back = folio_at(&k, mm, start);
        assert!(k.mem.test(back, pg::WORKINGSET) && k.mem.test(back, pg::ACTIVE));
        // zram swap-in frees the slot (no swap cache kept): the shadow is gone with it.
        assert!(!k.swap[dev as usize].shadows[off as usize].is_some());
    }

    #[test]
    fn a_page_cache_eviction_leaves_a_shadow_that_a_read_takes_and_a_write_drops() {
        let mut k = crate::mm::filemap::tests::boot("v6.12", false);
        let file = k.create_file(crate::mm::filemap::File::new(
            "f".into(),
            64 << 10,
            128,
            false,
        ));
        let gfp = crate::mm::memory::Gfp::USER;
        for index in 0..16 {
            k.filemap_alloc_folio(file, index, 0, gfp).unwrap();
        }
        // 8 active file pages make the workingset
        for index in 8..16 {
            let f = k.files[file as usize].cache[index];
            k.lru_add_drain();
            k.lruvec_del_folio(f);
            k.mem.set(f, pg::ACTIVE);
            k.lruvec_add_folio(f);
        }
        k.memcg_stats_flush();
        let mut list: Vec<FolioId> = (0..2).map(|i| k.files[file as usize].cache[i]).collect();
        for &f in &list {
            k.lru_add_drain();
            k.lruvec_del_folio(f);
        }
        let mut sc = ScanControl::new(u64::MAX, false);
        sc.ignore_references = true;
        assert_eq!(k.shrink_folio_list(&mut list, &mut sc), 2);
        assert_eq!(
            k.files[file as usize]
                .shadows
                .iter()
                .filter(|s| s.is_some())
                .count(),
            2
        );
        // 16 slots, none cached at 0-1 but 14 others cached: no leaf node is shadow-only
        assert_eq!(k.workingset_nodes(), 0);
        let back = k.filemap_alloc_folio(file, 0, 0, gfp).unwrap();
        assert_eq!(k.stat.get(Vm::WorkingsetRefaultFile), 1);
        assert_eq!(k.stat.get(Vm::WorkingsetActivateFile), 1);
        assert!(k.mem.test(back, pg::ACTIVE));
        // write_begin's allocation replaces the shadow without a refault
        k.filemap_alloc_folio_for(file, 1, 0, gfp, true).unwrap();
        assert_eq!(k.stat.get(Vm::WorkingsetRefaultFile), 1);
        assert!(!k.files[file as usize].shadows.iter().any(|s| s.is_some()));
    }

    #[test]
    fn a_forked_child_maps_its_parents_folios_old_so_one_young_mapping_does_not_activate() {
        let (mut k, mm) = boot("v6.18");
        let start = populate(&mut k, mm, 4);
        let child = k.fork_mm(mm, k.current);
        let young = |k: &Kernel, mm: u32| {
            let vi = k.mms[mm as usize].find_vma(start).unwrap();
            k.mms[mm as usize].vmas[vi].ptes[0] & crate::mm::pagetable::YOUNG != 0
        };
        assert!(young(&k, mm) && !young(&k, child));
        // folio_check_references: referenced by one mapping and not PG_referenced: kept on
        // the inactive list, not activated (a young copy in the child would make two)
        let folio = folio_at(&k, mm, start);
        k.lru_add_drain();
        k.lruvec_del_folio(folio);
        let mut sc = ScanControl::new(u64::MAX, false);
        assert_eq!(k.shrink_folio_list(&mut vec![folio], &mut sc), 0);
        assert!(!k.mem.test(folio, pg::ACTIVE));
        assert_eq!(k.stat.get(Vm::Pgactivate), 0);
    }
}
