//! NUMA memory policies: set_mempolicy, mbind, the policy's choice of node for an allocation,
//! and its verdict on a NUMA hint fault.
//!
//! Models mm/mempolicy.c (v6.10–v6.18): the modes MPOL_DEFAULT, MPOL_LOCAL, MPOL_BIND,
//! MPOL_PREFERRED, MPOL_INTERLEAVE and MPOL_PREFERRED_MANY, with MPOL_F_NUMA_BALANCING (which
//! sets MPOL_F_MOF | MPOL_F_MORON on BIND and PREFERRED_MANY); get_task_policy (no task policy:
//! the per-node preferred_node_policy, preferred-local with MOF | MORON), get_vma_policy with the
//! interleave index (`ilx`, the VMA offset shifted by the folio order), policy_nodemask,
//! interleave_nid, interleave_nodes (round-robin through `current->il_prev`), alloc_pages_mpol
//! (counting numa_interleave), alloc_pages_preferred_many, vma_policy_mof and mpol_misplaced.
//! The page-cache allocation (filemap_alloc_folio for non-shmem files) uses the task policy, as
//! the kernel does. The allocator (mm/mod.rs) counts zone_statistics' numa_hit, numa_miss,
//! numa_foreign, numa_local and numa_other per allocation.
//!
//! mbind keeps a VMA whole and records its policies as sorted, non-overlapping page ranges
//! (`Vma::policies`, equal neighbours merged), where the kernel splits and merges VMAs
//! (vma_modify_policy). A range behaves as the VMA the kernel would have made of it: its own
//! interleave base (vm_pgoff), folios allocated at a fault stay inside it, and a PMD-mapped THP
//! that a boundary cuts is split into PTE mappings, as __split_vma does.
//!
//! mbind's MPOL_MF_MOVE migrates the folios present on other nodes to the node the policy
//! would allocate them from (one target per folio, no fallback to the mask's other nodes when it
//! is full; MIGRATE_ASYNC's single pass: a folio that fails, such as a dirty page-cache folio,
//! stays where it is).
//!
//! Left out: MPOL_WEIGHTED_INTERLEAVE, MPOL_F_STATIC_NODES and MPOL_F_RELATIVE_NODES (no cpusets
//! to rebind against), set_mempolicy_home_node, MPOL_MF_STRICT and MPOL_MF_MOVE_ALL, moving with
//! a default or local policy (refused by the scenario parser), the THP-at-fault rule of
//! alloc_pages_mpol (a PMD-order allocation tries only the preferred node first), and shared
//! (shmem) policies. The syscalls' own CPU cost is not charged. An OOM of a policy-limited
//! allocation spares tasks bound elsewhere (mm/oom_kill.rs).

use super::folio::{pg, Pfn};
use super::memory::Gfp;
use super::migrate::MigrateReason;
use super::pagetable as pt;
use super::vmstat::Vm;
use super::Kernel;

// The policy values and their parser are plain scenario values (scenario/mempolicy.rs).
pub use crate::scenario::mempolicy::{
    Mempolicy, MpolMode, Nodemask, MAX_NUMNODES, MPOL_F_MOF, MPOL_F_MORON,
};

/// An mbind()-set policy over VMA pages [start, end) (absolute page numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyRange {
    pub start: u32,
    pub end: u32,
    pub pol: Mempolicy,
}

/// first_node.
#[inline]
pub fn first_node(mask: Nodemask) -> u32 {
    mask.trailing_zeros()
}

/// next_node_in: the next node of `mask` after `node`, wrapping to the first.
#[inline]
pub fn next_node_in(node: u32, mask: Nodemask) -> u32 {
    let above = if node + 1 >= MAX_NUMNODES {
        0
    } else {
        mask & (!0u64 << (node + 1))
    };
    if above != 0 {
        first_node(above)
    } else {
        first_node(mask)
    }
}

#[inline]
pub fn node_isset(node: u32, mask: Nodemask) -> bool {
    node < MAX_NUMNODES && mask & (1 << node) != 0
}

impl Mempolicy {
    /// preferred_node_policy[node]: what a task without a policy gets (get_task_policy).
    pub fn preferred_node(node: u32) -> Mempolicy {
        Mempolicy {
            mode: MpolMode::Preferred,
            nodes: 1 << node,
            flags: MPOL_F_MOF | MPOL_F_MORON,
        }
    }
}

/// A VMA's policy ranges after mbind sets `pol` (None: MPOL_DEFAULT) on [start, end): the old
/// ranges are cut around it, and neighbours with equal policies merge (vma_merge).
pub fn mbind_ranges(ranges: &mut Vec<PolicyRange>, start: u32, end: u32, pol: Option<Mempolicy>) {
    let mut out = Vec::with_capacity(ranges.len() + 2);
    for r in ranges.iter() {
        if r.start < start {
            out.push(PolicyRange {
                end: r.end.min(start),
                ..*r
            });
        }
        if r.end > end {
            out.push(PolicyRange {
                start: r.start.max(end),
                ..*r
            });
        }
    }
    if let Some(pol) = pol {
        out.push(PolicyRange { start, end, pol });
    }
    out.sort_by_key(|r| r.start);
    let mut merged: Vec<PolicyRange> = Vec::with_capacity(out.len());
    for r in out {
        match merged.last_mut() {
            Some(last) if last.end == r.start && last.pol == r.pol => last.end = r.end,
            _ => merged.push(r),
        }
    }
    *ranges = merged;
}

/// The piece of a VMA around `vpn` that would be one kernel VMA after mbind's splits: its
/// bounds, and its own policy (`vma->vm_policy`) if it has one.
pub fn policy_extent(
    ranges: &[PolicyRange],
    vma_start: u32,
    vma_end: u32,
    vpn: u32,
) -> (u32, u32, Option<Mempolicy>) {
    let i = ranges.partition_point(|r| r.end <= vpn);
    match ranges.get(i) {
        Some(r) if r.start <= vpn => (r.start, r.end, Some(r.pol)),
        next => {
            let start = if i > 0 { ranges[i - 1].end } else { vma_start };
            let end = next.map_or(vma_end, |r| r.start);
            (start, end, None)
        }
    }
}

impl Kernel {
    /// get_task_policy for the current task.
    pub fn get_task_policy(&self) -> Mempolicy {
        self.tasks[self.current as usize]
            .mempolicy
            .unwrap_or_else(|| Mempolicy::preferred_node(self.task_node()))
    }

    /// get_vma_policy: the policy for a folio of `order` at `vpn` (the VMA's, else the task's)
    /// and its interleave index: the page offset of the (split) VMA's start (`vm_pgoff`, which
    /// for anonymous memory is its address) and of `vpn` within it, both shifted by the order.
    pub fn get_vma_policy(&self, mm: u32, vi: usize, vpn: u32, order: u32) -> (Mempolicy, u64) {
        let v = &self.mms[mm as usize].vmas[vi];
        let (start, _, pol) = policy_extent(&v.policies, v.start, v.end(), vpn);
        let pol = pol.unwrap_or_else(|| self.get_task_policy());
        let ilx = match pol.mode {
            MpolMode::Interleave => ((start >> order) + ((vpn - start) >> order)) as u64,
            _ => 0,
        };
        (pol, ilx)
    }

    /// vma_policy_mof: may NUMA balancing act on the part of the VMA around `vpn`?
    pub fn vma_policy_mof(&self, mm: u32, vi: usize, vpn: u32) -> bool {
        self.get_vma_policy(mm, vi, vpn, 0).0.flags & MPOL_F_MOF != 0
    }

    /// interleave_nodes: the task's next node of the policy, round-robin (task policy
    /// allocations, which have no interleave index).
    fn interleave_nodes(&mut self, pol: &Mempolicy) -> u32 {
        let task = &mut self.tasks[self.current as usize];
        let nid = next_node_in(task.il_prev, pol.nodes);
        task.il_prev = nid;
        nid
    }

    /// first_zones_zonelist: the nearest node of `mask` in `node`'s zonelist.
    fn first_zonelist_node(&self, node: u32, mask: Nodemask) -> Option<u32> {
        (0..self.nodes.len())
            .map(|k| Self::zonelist_at(node, k) as u32)
            .find(|&n| node_isset(n, mask))
    }

    /// interleave_nid: the (ilx mod n)-th node of the policy.
    pub fn interleave_nid(&self, pol: &Mempolicy, ilx: u64) -> u32 {
        let nnodes = pol.nodes.count_ones() as u64;
        if nnodes == 0 {
            return self.task_node();
        }
        let mut nid = first_node(pol.nodes);
        for _ in 0..ilx % nnodes {
            nid = next_node_in(nid, pol.nodes);
        }
        nid
    }

    /// policy_nodemask: the nodes an allocation may use (None: all) and the node whose zonelist
    /// it walks (`nid`, the local node unless the policy overrides it). `ilx` is None for
    /// allocations without an interleave index (NO_INTERLEAVE_INDEX).
    fn policy_nodemask(
        &mut self,
        pol: &Mempolicy,
        ilx: Option<u64>,
        nid: &mut u32,
    ) -> Option<Nodemask> {
        match pol.mode {
            MpolMode::Preferred => *nid = first_node(pol.nodes),
            MpolMode::PreferredMany | MpolMode::Bind => return Some(pol.nodes),
            MpolMode::Interleave => {
                *nid = match ilx {
                    None => self.interleave_nodes(pol),
                    Some(ilx) => self.interleave_nid(pol, ilx),
                }
            }
            MpolMode::Local => {}
        }
        None
    }

    /// alloc_pages_mpol: a block of `order` placed by `pol`.
    pub fn alloc_pages_mpol(
        &mut self,
        gfp: Gfp,
        order: u32,
        pol: &Mempolicy,
        ilx: Option<u64>,
    ) -> Option<Pfn> {
        let mut nid = self.task_node();
        let nodemask = self.policy_nodemask(pol, ilx, &mut nid);
        let all = super::node_mask_all(self.nodes.len());
        if pol.mode == MpolMode::PreferredMany {
            // alloc_pages_preferred_many: the policy's nodes without direct reclaim first, then
            // any node.
            let light = Gfp {
                direct_reclaim: false,
                ..gfp
            };
            return self
                .alloc_pages_nodemask(nid, order, light, pol.nodes)
                .or_else(|| self.alloc_pages_nodemask(nid, order, gfp, all));
        }
        let pfn = self.alloc_pages_nodemask(nid, order, gfp, nodemask.unwrap_or(all))?;
        if pol.mode == MpolMode::Interleave && self.pfn_node(pfn) == nid {
            self.stat.count(Vm::NumaInterleave, 1);
        }
        Some(pfn)
    }

    /// vma_alloc_folio: a block of `order` for the folio at `vpn` of a VMA, placed by the VMA's
    /// policy (or the task's).
    pub fn vma_alloc_folio(
        &mut self,
        gfp: Gfp,
        order: u32,
        mm: u32,
        vi: usize,
        vpn: u32,
    ) -> Option<Pfn> {
        let (pol, ilx) = self.get_vma_policy(mm, vi, vpn, order);
        self.alloc_pages_mpol(gfp, order, &pol, Some(ilx))
    }

    /// folio_alloc without a VMA (the page cache): the task's policy, no interleave index.
    pub fn alloc_pages_task_policy(&mut self, gfp: Gfp, order: u32) -> Option<Pfn> {
        let pol = self.get_task_policy();
        self.alloc_pages_mpol(gfp, order, &pol, None)
    }

    /// mpol_misplaced: the node a folio at `vpn` should move to on a NUMA hint fault, or None
    /// if the policy is content with where it is. `should_migrate` is should_numa_migrate_memory
    /// for the target, asked only under MPOL_F_MORON.
    pub fn mpol_misplaced(
        &mut self,
        folio: Pfn,
        mm: u32,
        vi: usize,
        vpn: u32,
        should_migrate: impl FnOnce(&mut Kernel, u32) -> bool,
    ) -> Option<u32> {
        let curnid = self.pfn_node(folio);
        let thisnid = self.task_node();
        let order = self.mem.order(folio);
        let (pol, ilx) = self.get_vma_policy(mm, vi, vpn, order);
        if pol.flags & MPOL_F_MOF == 0 {
            return None;
        }
        let mut polnid = match pol.mode {
            MpolMode::Interleave => self.interleave_nid(&pol, ilx),
            MpolMode::Preferred => {
                if node_isset(curnid, pol.nodes) {
                    return None;
                }
                first_node(pol.nodes)
            }
            MpolMode::Local => thisnid,
            MpolMode::Bind | MpolMode::PreferredMany => {
                if pol.flags & MPOL_F_MORON != 0 {
                    // Placement among the policy's nodes is left to NUMA balancing, toward
                    // the faulting CPU's node if the policy allows it.
                    if !node_isset(thisnid, pol.nodes) {
                        return None;
                    }
                    thisnid
                } else {
                    if node_isset(curnid, pol.nodes) {
                        return None;
                    }
                    self.first_zonelist_node(thisnid, pol.nodes)?
                }
            }
        };
        if pol.flags & MPOL_F_MORON != 0 {
            polnid = thisnid;
            if !should_migrate(self, polnid) {
                return None;
            }
        }
        (curnid != polnid).then_some(polnid)
    }

    /// set_mempolicy (do_set_mempolicy) for the current task; None is MPOL_DEFAULT. An
    /// interleave policy starts from its first node.
    pub fn do_set_mempolicy(&mut self, pol: Option<Mempolicy>) {
        let task = &mut self.tasks[self.current as usize];
        task.mempolicy = pol;
        if pol.is_some_and(|p| p.mode == MpolMode::Interleave) {
            task.il_prev = MAX_NUMNODES - 1;
        }
    }

    /// mbind (do_mbind) of pages [from, to) of the VMA starting at `start`; None is
    /// MPOL_DEFAULT. Folios already present stay (see `mbind_move_folios` for MPOL_MF_MOVE).
    pub fn do_mbind(&mut self, mm: u32, start: u32, from: u32, to: u32, pol: Option<Mempolicy>) {
        let Some(vi) = self.mms[mm as usize].find_vma(start) else {
            return;
        };
        let (vstart, vend) = {
            let v = &self.mms[mm as usize].vmas[vi];
            (v.start, v.end())
        };
        let (from, to) = (vstart + from, vstart + to);
        // __split_vma: a PMD mapping that a new boundary cuts becomes PTE mappings.
        for edge in [from, to] {
            if edge == vstart || edge == vend || edge % super::vma::HPAGE_PMD_NR == 0 {
                continue;
            }
            let pte = self.mms[mm as usize].vmas[vi].ptes[(edge - vstart) as usize];
            if pt::is_present(pte) && pte & pt::PMD != 0 {
                let folio = self.mem.head_of(pt::pfn(pte));
                self.split_huge_pmd(mm, vi, folio);
            }
        }
        mbind_ranges(&mut self.mms[mm as usize].vmas[vi].policies, from, to, pol);
    }

    /// mbind's MPOL_MF_MOVE after `do_mbind` set `pol` on pages [from, to) of the VMA starting
    /// at `start`: queue_pages_range takes the folios mapped there on a node outside the policy's
    /// nodes (skipping folios mapped by other processes, as without MPOL_MF_MOVE_ALL, and those
    /// that cannot be isolated), and migrate_pages moves each to the node the policy allocates
    /// it from (alloc_migration_target_by_mpol: the interleave node of its index, the preferred
    /// node, or the first node of the mask in the local zonelist). Returns pages moved.
    pub fn mbind_move_folios(
        &mut self,
        mm: u32,
        start: u32,
        from: u32,
        to: u32,
        pol: &Mempolicy,
    ) -> u64 {
        let Some(vi) = self.mms[mm as usize].find_vma(start) else {
            return 0;
        };
        // do_mbind drains every CPU's lru_add batch first, so that it can isolate new folios.
        self.lru_add_drain_all();
        let vstart = self.mms[mm as usize].vmas[vi].start;
        let thisnid = self.task_node();
        let mask_target = self
            .first_zonelist_node(thisnid, pol.nodes)
            .unwrap_or(thisnid);
        let mut queued: Vec<(u32, Pfn)> = Vec::new();
        let mut vpn = vstart + from;
        while vpn < vstart + to {
            let pte = self.mms[mm as usize].vmas[vi].ptes[(vpn - vstart) as usize];
            if !pt::is_present(pte) {
                vpn += 1;
                continue;
            }
            let folio = self.mem.head_of(pt::pfn(pte));
            let (nr, order) = (self.mem.nr_pages(folio), self.mem.order(folio));
            // The rest of this folio's pages need no second look. (Its first page's address:
            // a page-cache folio's index is a file offset, not an address.)
            let folio_vpn = self.folio_vpn(folio, mm, vi);
            vpn = ((folio_vpn + nr as i64) as u32).max(vpn + 1);
            if node_isset(self.pfn_node(folio), pol.nodes)
                || !self.mem.test(folio, pg::LRU)
                || self.mem.test(folio, pg::SWAPCACHE)
                || self.mem.mapcount(folio) > nr
            {
                continue;
            }
            let target = match pol.mode {
                MpolMode::Interleave => {
                    let at = folio_vpn.max((vstart + from) as i64) as u32;
                    let (_, ilx) = self.get_vma_policy(mm, vi, at, order);
                    self.interleave_nid(pol, ilx)
                }
                MpolMode::Preferred => first_node(pol.nodes),
                MpolMode::Bind | MpolMode::PreferredMany => mask_target,
                MpolMode::Local => thisnid,
            };
            queued.push((target, folio));
        }
        let mut moved = 0;
        for target in 0..self.nodes.len() as u32 {
            let mut list: Vec<Pfn> = queued
                .iter()
                .filter(|&&(t, _)| t == target)
                .map(|&(_, f)| f)
                .collect();
            if list.is_empty() {
                continue;
            }
            for &f in &list {
                self.lruvec_del_folio(f);
            }
            moved += self.migrate_pages(&mut list, target, MigrateReason::MempolicyMbind);
            for f in list {
                self.folio_add_lru(f);
            }
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::folio::content;
    use crate::mm::pagetable as pt;

    /// Three DRAM nodes of 64 MiB with one CPU each, THP off. The task runs on node 0.
    fn boot(thp: &str) -> (Kernel, u32) {
        let toml = format!(
            r#"
name = "t"
[[machine.node]]
memory = "64M"
cpus = 1
[[machine.node]]
memory = "64M"
cpus = 1
[[machine.node]]
memory = "64M"
cpus = 1
[knobs]
"/sys/kernel/mm/transparent_hugepage/enabled" = "{thp}"
[[task]]
name = "t"
ops = [{{ op = "sleep", time = "1ms" }}]
"#
        );
        let (k, t) = crate::mm::boot_for_test(&toml, "v6.18");
        let mm = k.tasks[t as usize].mm.unwrap();
        (k, mm)
    }

    fn pol(s: &str) -> Option<Mempolicy> {
        Mempolicy::parse(s, 3).unwrap()
    }

    fn node_of(k: &Kernel, mm: u32, vpn: u32) -> u32 {
        let vi = k.mms[mm as usize].find_vma(vpn).unwrap();
        let v = &k.mms[mm as usize].vmas[vi];
        k.pfn_node(pt::pfn(v.ptes[(vpn - v.start) as usize]))
    }

    fn write(k: &mut Kernel, mm: u32, from: u32, n: u32) {
        for vpn in from..from + n {
            k.touch(mm, vpn, true, content::DATA_DEFAULT).unwrap();
        }
    }

    #[test]
    fn mbind_cuts_old_ranges_and_merges_equal_neighbours() {
        let mut r = Vec::new();
        let b = pol("bind:1");
        mbind_ranges(&mut r, 10, 20, b);
        mbind_ranges(&mut r, 14, 16, pol("interleave:0,1"));
        assert_eq!(
            r.iter().map(|r| (r.start, r.end)).collect::<Vec<_>>(),
            vec![(10, 14), (14, 16), (16, 20)]
        );
        mbind_ranges(&mut r, 14, 16, b);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].start, r[0].end), (10, 20));
        mbind_ranges(&mut r, 0, 12, None);
        assert_eq!((r[0].start, r[0].end), (12, 20));
        assert_eq!(policy_extent(&r, 0, 30, 5), (0, 12, None));
        assert_eq!(policy_extent(&r, 0, 30, 25), (20, 30, None));
        assert_eq!(policy_extent(&r, 0, 30, 12).0, 12);
    }

    #[test]
    fn interleave_spreads_a_vmas_pages_over_the_mask_by_offset() {
        let (mut k, mm) = boot("never");
        let start = k.mmap_anon(mm, 64);
        k.do_mbind(mm, start, 0, 64, pol("interleave:1,2"));
        // Written backwards: the node comes from the offset, not from the order of faults.
        for vpn in (start..start + 64).rev() {
            k.touch(mm, vpn, true, content::DATA_DEFAULT).unwrap();
        }
        for vpn in start..start + 64 {
            let want = if (vpn - start) % 2 == 0 { 1 } else { 2 };
            assert_eq!(node_of(&k, mm, vpn), want, "page {}", vpn - start);
        }
        assert_eq!(k.stat.get(Vm::NumaInterleave), 64);
        // Nodes 1 and 2 are not the CPU's node 0: each page is a hit on the node its zonelist
        // started from, but not local.
        assert_eq!(k.stat.get(Vm::NumaHit), 64);
        assert_eq!(k.stat.get(Vm::NumaOther), 64);
        assert_eq!(k.stat.get(Vm::NumaLocal), 0);
    }

    #[test]
    fn interleave_index_is_shifted_by_the_folio_order() {
        let (mut k, mm) = boot("never");
        k.spec.knobs.mthp_enabled[4] = crate::scenario::knobs::ThpEnabled::Always;
        let start = k.mmap_anon(mm, 512);
        k.do_mbind(mm, start, 0, 512, pol("interleave:0-2"));
        write(&mut k, mm, start, 512);
        // 64 KiB folios: folio i (ilx = start/16 + i) goes to node ilx mod 3, whole.
        for i in 0..32u32 {
            let vpn = start + 16 * i;
            let want = ((start >> 4) + i) % 3;
            for p in vpn..vpn + 16 {
                assert_eq!(node_of(&k, mm, p), want, "folio {i}");
            }
        }
    }

    #[test]
    fn a_range_is_its_own_vma_for_folio_bounds_and_interleave_base() {
        let (mut k, mm) = boot("never");
        k.spec.knobs.mthp_enabled[4] = crate::scenario::knobs::ThpEnabled::Always;
        let start = k.mmap_anon(mm, 64);
        // Pages [8, 40) interleave: no 64 KiB folio may cross its edges at 8 and 40.
        k.do_mbind(mm, start, 8, 40, pol("interleave:1,2"));
        write(&mut k, mm, start, 64);
        let vi = k.mms[mm as usize].find_vma(start).unwrap();
        let order_at = |k: &Kernel, p: u32| {
            let v = &k.mms[mm as usize].vmas[vi];
            k.mem
                .order(k.mem.head_of(pt::pfn(v.ptes[(p - start) as usize])))
        };
        assert_eq!(order_at(&k, start), 0);
        assert_eq!(order_at(&k, start + 8), 0);
        assert_eq!(order_at(&k, start + 16), 4);
        assert_eq!(order_at(&k, start + 48), 4);
        // The range's interleave base is its own start: page 8 is ilx (start + 8) mod 2.
        let first = if (start + 8) % 2 == 0 { 1 } else { 2 };
        assert_eq!(node_of(&k, mm, start + 8), first);
        assert_eq!(node_of(&k, mm, start), 0);
        assert_eq!(node_of(&k, mm, start + 63), 0);
        assert_eq!(crate::check::check(&k), Vec::<String>::new());
    }

    #[test]
    fn bind_stays_in_the_mask_reclaims_there_and_fails_when_nothing_is_left() {
        let (mut k, mm) = boot("never");
        k.do_set_mempolicy(pol("bind:1"));
        let before = [0, 2].map(|n| k.zones[n].nr_free_pages());
        // Node 1 has 64 MiB: 16384 pages, no swap, anonymous memory cannot be reclaimed.
        let start = k.mmap_anon(mm, 20_000);
        let mut killed = None;
        for vpn in start..start + 20_000 {
            if k.touch(mm, vpn, true, content::DATA_DEFAULT).is_err() {
                killed = Some(vpn - start);
                break;
            }
        }
        let n = killed.expect("bind to a full node fails instead of spilling");
        assert!(n > 15_000 && n < 16_384, "{n}");
        assert_eq!([0, 2].map(|n| k.zones[n].nr_free_pages()), before);
        assert!(
            k.stat.get(Vm::AllocstallNormal) > 0,
            "direct reclaim ran first"
        );
        assert_eq!(k.stat.get(Vm::NumaMiss), 0);
    }

    #[test]
    fn a_bind_oom_spares_tasks_bound_to_other_nodes() {
        let (mut k, _) = boot("never");
        // A second process, bigger than the one that will run out, bound to nodes 0 and 2.
        let big = k.tasks.iter().position(|t| t.is_user()).unwrap() as u32;
        let small = k.tasks.len() as u32;
        let mut t = crate::mm::task::Task::new(
            small,
            "small".into(),
            crate::mm::task::TaskKind::User,
            0,
            0,
        );
        t.mm = Some(k.mm_create(0, small));
        k.tasks.push(t);
        let big_mm = k.tasks[big as usize].mm.unwrap();
        k.do_set_mempolicy(pol("bind:0,2"));
        let start = k.mmap_anon(big_mm, 30_000);
        write(&mut k, big_mm, start, 30_000);
        // The small one, bound to node 1, fills it: it is the only candidate in that domain.
        k.current = small;
        let small_mm = k.tasks[small as usize].mm.unwrap();
        k.do_set_mempolicy(pol("bind:1"));
        let start = k.mmap_anon(small_mm, 20_000);
        let failed = (start..start + 20_000)
            .any(|vpn| k.touch(small_mm, vpn, true, content::DATA_DEFAULT).is_err());
        assert!(failed);
        assert!(k.tasks[small as usize].oom_killed);
        assert!(k.tasks[big as usize].is_running() && !k.tasks[big as usize].oom_killed);
        assert_eq!(k.stat.get(Vm::OomKill), 1);
    }

    #[test]
    fn bind_reclaims_page_cache_on_its_nodes_only() {
        let (mut k, _) = boot("never");
        let f = k.create_file(crate::mm::filemap::File::new(
            "f".into(),
            96 << 20,
            0,
            false,
        ));
        let nr = k.files[f as usize].nr_pages;
        k.do_set_mempolicy(pol("bind:1"));
        for i in 0..nr {
            k.filemap_alloc_folio(f, i, 0, Gfp::USER).unwrap();
        }
        // 96 MiB of page cache in 64 MiB: reclaim made room on node 1; nodes 0 and 2 untouched.
        assert_eq!(k.zones[0].nr_free_pages(), k.zones[0].managed_pages());
        assert_eq!(k.zones[2].nr_free_pages(), k.zones[2].managed_pages());
        assert!(k.stat.get(Vm::PgstealFile) > 0);
    }

    #[test]
    fn preferred_falls_back_to_the_zonelist_when_its_node_is_full() {
        let (mut k, mm) = boot("never");
        k.do_set_mempolicy(pol("preferred:2"));
        let start = k.mmap_anon(mm, 20_000);
        write(&mut k, mm, start, 20_000);
        assert_eq!(node_of(&k, mm, start), 2);
        // Past node 2's low watermark the rest goes to the first node of node 2's zonelist.
        assert_eq!(node_of(&k, mm, start + 19_999), 0);
        assert!(k.stat.get(Vm::NumaMiss) > 0);
        assert_eq!(k.stat.get(Vm::NumaMiss), k.stat.get(Vm::NumaForeign));
        assert_eq!(
            k.stat.get(Vm::NumaHit) + k.stat.get(Vm::NumaMiss),
            k.stat.get(Vm::NumaLocal) + k.stat.get(Vm::NumaOther)
        );
    }

    #[test]
    fn page_cache_under_an_interleave_task_policy_is_round_robin() {
        let (mut k, _) = boot("never");
        let f = k.create_file(crate::mm::filemap::File::new("f".into(), 1 << 20, 0, true));
        k.do_set_mempolicy(pol("interleave:0,2"));
        let nodes: Vec<u32> = (0..6)
            .map(|i| {
                // Folios of any order take one turn each.
                let folio = k.filemap_alloc_folio(f, i * 4, i % 3, Gfp::USER).unwrap();
                k.pfn_node(folio)
            })
            .collect();
        assert_eq!(nodes, vec![0, 2, 0, 2, 0, 2]);
        // A new interleave policy starts again from its first node.
        k.do_set_mempolicy(pol("interleave:1,2"));
        let folio = k.filemap_alloc_folio(f, 100, 0, Gfp::USER).unwrap();
        assert_eq!(k.pfn_node(folio), 1);
    }

    #[test]
    fn mpol_misplaced_follows_the_policy() {
        let (mut k, mm) = boot("never");
        let start = k.mmap_anon(mm, 4);
        let vi = k.mms[mm as usize].find_vma(start).unwrap();
        k.do_mbind(mm, start, 0, 4, pol("bind:1"));
        write(&mut k, mm, start, 4);
        let folio = |k: &Kernel, p: u32| {
            let v = &k.mms[mm as usize].vmas[vi];
            k.mem.head_of(pt::pfn(v.ptes[(p - start) as usize]))
        };
        let yes = |_: &mut Kernel, _| true;
        let f = folio(&k, start);
        assert_eq!(k.pfn_node(f), 1);
        // Without MPOL_F_MOF (no +balancing) a policy never asks for a migration.
        for p in ["bind:1", "bind:2", "interleave:0,2", "preferred:0", "local"] {
            k.do_mbind(mm, start, 0, 4, pol(p));
            assert_eq!(k.mpol_misplaced(f, mm, vi, start, yes), None, "{p}");
            assert!(!k.vma_policy_mof(mm, vi, start), "{p}");
        }
        // bind+balancing: toward the faulting CPU's node if the mask allows it, and only if
        // should_numa_migrate_memory agrees.
        k.do_mbind(mm, start, 0, 4, pol("bind+balancing:0,1"));
        assert!(k.vma_policy_mof(mm, vi, start));
        assert_eq!(k.mpol_misplaced(f, mm, vi, start, yes), Some(0));
        assert_eq!(k.mpol_misplaced(f, mm, vi, start, |_, _| false), None);
        k.do_mbind(mm, start, 0, 4, pol("bind+balancing:1,2"));
        assert_eq!(k.mpol_misplaced(f, mm, vi, start, yes), None);
        // The default policy (preferred local, MOF | MORON): the CPU's node.
        k.do_mbind(mm, start, 0, 4, None);
        assert_eq!(k.mpol_misplaced(f, mm, vi, start, yes), Some(0));
        // With MOF set, interleave and non-MORON bind answer with their own node (as with
        // MPOL_MF_LAZY in the kernel, which user space cannot set).
        let il = Mempolicy {
            flags: MPOL_F_MOF,
            ..pol("interleave:0-2").unwrap()
        };
        k.do_mbind(mm, start, 0, 4, Some(il));
        let want = ((start as u64) % 3) as u32;
        let got = k.mpol_misplaced(f, mm, vi, start, yes);
        assert_eq!(got, (want != 1).then_some(want));
        let bind = Mempolicy {
            flags: MPOL_F_MOF,
            ..pol("bind:2").unwrap()
        };
        k.do_mbind(mm, start, 0, 4, Some(bind));
        assert_eq!(k.mpol_misplaced(f, mm, vi, start, yes), Some(2));
    }

    #[test]
    fn a_forked_child_keeps_the_vma_policies() {
        let (mut k, mm) = boot("never");
        let start = k.mmap_anon(mm, 64);
        k.do_mbind(mm, start, 16, 32, pol("bind:2"));
        let child = k.fork_mm(mm, k.current);
        let vi = k.mms[child as usize].find_vma(start).unwrap();
        let (pol_at, _) = k.get_vma_policy(child, vi, start + 20, 0);
        assert_eq!(pol_at, pol("bind:2").unwrap());
        k.touch(child, start + 20, true, content::DATA_DEFAULT)
            .unwrap();
        assert_eq!(node_of(&k, child, start + 20), 2);
    }

    #[test]
    fn mbind_move_migrates_present_folios_to_the_policys_nodes() {
        let (mut k, mm) = boot("never");
        let start = k.mmap_anon(mm, 32);
        write(&mut k, mm, start, 32);
        // Bind pages [0, 16) to nodes 1-2: they move; the rest stays on node 0.
        let b = pol("bind:1-2").unwrap();
        k.do_mbind(mm, start, 0, 16, Some(b));
        // The first node of the mask in node 0's zonelist is node 1.
        assert_eq!(k.mbind_move_folios(mm, start, 0, 16, &b), 16);
        assert!((start..start + 16).all(|p| node_of(&k, mm, p) == 1));
        assert!((start + 16..start + 32).all(|p| node_of(&k, mm, p) == 0));
        assert_eq!(k.stat.get(Vm::PgmigrateSuccess), 16);
        // Folios already inside the mask are not moved again.
        assert_eq!(k.mbind_move_folios(mm, start, 0, 16, &b), 0);
        // Interleave: a folio off the mask goes to the node of its own index; one on any node
        // of the mask stays, even if not its interleave node.
        let il = pol("interleave:0,2").unwrap();
        k.do_mbind(mm, start, 0, 32, Some(il));
        assert_eq!(k.mbind_move_folios(mm, start, 0, 32, &il), 16);
        for p in start..start + 16 {
            assert_eq!(node_of(&k, mm, p), if p % 2 == 0 { 0 } else { 2 }, "{p}");
        }
        assert!((start + 16..start + 32).all(|p| node_of(&k, mm, p) == 0));
        assert_eq!(crate::check::check(&k), Vec::<String>::new());
    }

    #[test]
    fn mbind_move_leaves_folios_another_process_maps() {
        let (mut k, mm) = boot("never");
        let start = k.mmap_anon(mm, 4);
        write(&mut k, mm, start, 4);
        let _child = k.fork_mm(mm, k.current);
        let b = pol("bind:2").unwrap();
        k.do_mbind(mm, start, 0, 4, Some(b));
        assert_eq!(k.mbind_move_folios(mm, start, 0, 4, &b), 0);
        assert_eq!(node_of(&k, mm, start), 0);
    }

    #[test]
    fn mbind_splits_a_pmd_mapping_its_boundary_cuts() {
        let (mut k, mm) = boot("always");
        let start = k.mmap_anon(mm, 1024);
        write(&mut k, mm, start, 1);
        let vi = k.mms[mm as usize].find_vma(start).unwrap();
        assert!(k.mms[mm as usize].vmas[vi].ptes[0] & pt::PMD != 0);
        k.do_mbind(mm, start, 0, 512, pol("bind:0"));
        assert!(
            k.mms[mm as usize].vmas[vi].ptes[0] & pt::PMD != 0,
            "aligned edge"
        );
        k.do_mbind(mm, start, 100, 200, pol("bind:1"));
        assert_eq!(k.mms[mm as usize].vmas[vi].ptes[0] & pt::PMD, 0);
        assert_eq!(k.stat.get(Vm::ThpSplitPmd), 1);
        assert_eq!(crate::check::check(&k), Vec::<String>::new());
    }
}
