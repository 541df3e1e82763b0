//! Memory cgroups: charging with `memory.max`, reclaim of the cgroup's own LRUs when a charge would
//! exceed it, and the memcg OOM killer.
//!
//! Models mm/memcontrol.c try_charge_memcg (v6.9–v6.18): a charge that cannot block fails at once;
//! otherwise reclaim (try_to_free_mem_cgroup_pages) and retry, unconditionally while reclaim makes
//! progress for orders up to PAGE_ALLOC_COSTLY_ORDER, else up to MAX_RECLAIM_RETRIES times, then OOM.
//! Cgroups are flat under the root (id 0, unlimited). Left out: the per-CPU charge stock,
//! memory.high/low/min protection, swap.max, kmem, and hierarchy beyond one level.

use super::folio::FolioId;
use super::memory::Gfp;
use super::vmscan::MAX_RECLAIM_RETRIES;
use super::Kernel;
use crate::scenario::RunSpec;
use crate::stats::Memcg;

const PAGE_ALLOC_COSTLY_ORDER: u32 = 3;

pub struct MemCgroup {
    pub name: String,
    pub max_pages: u64,
    pub usage_pages: u64,
    /// Swap PTEs of the cgroup's tasks (their pages now on swap).
    pub swap_pages: u64,
    /// Highest usage plus swapped pages seen: the most the workload ever needed at once.
    pub peak_footprint_pages: u64,
    pub stat: [u64; Memcg::COUNT],
}

impl MemCgroup {
    fn new(name: String, max_pages: u64) -> MemCgroup {
        MemCgroup {
            name,
            max_pages,
            usage_pages: 0,
            swap_pages: 0,
            peak_footprint_pages: 0,
            stat: [0; Memcg::COUNT],
        }
    }

    #[inline]
    pub fn note_footprint(&mut self) {
        self.peak_footprint_pages = self
            .peak_footprint_pages
            .max(self.usage_pages + self.swap_pages);
    }

    #[inline]
    pub fn count(&mut self, item: Memcg, n: u64) {
        self.stat[item as usize] += n;
    }
}

/// The root cgroup (id 0) and the scenario's cgroups (whose limits already carry any
/// `memory.max` override, applied when the run was resolved).
pub fn build(spec: &RunSpec) -> Vec<MemCgroup> {
    let mut v = vec![MemCgroup::new("/".into(), u64::MAX)];
    for c in &spec.scenario.cgroups {
        v.push(MemCgroup::new(
            c.name.clone(),
            c.memory_max_bytes
                .map_or(u64::MAX, |b| b / super::PAGE_SIZE),
        ));
    }
    v
}

impl Kernel {
    /// mem_cgroup_charge: Err when the charge failed (the caller falls back or fails the fault).
    pub fn mem_cgroup_charge(&mut self, folio: FolioId, memcg: u16, gfp: Gfp) -> Result<(), ()> {
        let nr = self.mem.nr_pages(folio) as u64;
        self.charge_time(self.hw.memcg_charge_ns);
        self.try_charge(memcg, nr, gfp)
    }

    fn try_charge(&mut self, memcg: u16, nr: u64, gfp: Gfp) -> Result<(), ()> {
        let mut retries = MAX_RECLAIM_RETRIES;
        let mut oom_tried = false;
        loop {
            let cg = &mut self.memcgs[memcg as usize];
            if cg.usage_pages + nr <= cg.max_pages {
                cg.usage_pages += nr;
                cg.note_footprint();
                return Ok(());
            }
            cg.count(Memcg::MaxEvents, 1);
            if !gfp.direct_reclaim {
                return Err(());
            }
            let reclaimed = self.try_to_free_mem_cgroup_pages(memcg, nr);
            let cg = &self.memcgs[memcg as usize];
            if cg.usage_pages + nr <= cg.max_pages {
                continue;
            }
            if reclaimed > 0 && nr <= 1 << PAGE_ALLOC_COSTLY_ORDER {
                continue;
            }
            if retries > 0 {
                retries -= 1;
                continue;
            }
            if !gfp.retry || oom_tried {
                return Err(());
            }
            // mem_cgroup_oom: kill the biggest task in the cgroup, then try again.
            oom_tried = true;
            if !self.out_of_memory(Some(memcg), None)
                || !self.tasks[self.current as usize].is_running()
            {
                return Err(());
            }
            retries = MAX_RECLAIM_RETRIES;
        }
    }

    pub fn mem_cgroup_uncharge(&mut self, folio: FolioId) {
        let memcg = self.mem.memcg(folio) as usize;
        let nr = self.mem.nr_pages(folio) as u64;
        self.memcgs[memcg].usage_pages -= nr;
    }
}
