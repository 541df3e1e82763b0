//! The OOM killer: pick the task with the largest footprint and end it.
//!
//! Models mm/oom_kill.c out_of_memory / select_bad_process / oom_badness (v6.x): badness is
//! resident anonymous and file pages plus swap entries; the memcg OOM looks only at tasks in that
//! cgroup, and an OOM of an allocation limited by a memory policy to some nodes
//! (CONSTRAINT_MEMORY_POLICY) passes over tasks whose own MPOL_BIND policy shares none of them
//! (mempolicy_in_oom_domain).
//! Left out: oom_score_adj, page-table pages in the score, the OOM reaper's timing.

use super::vmstat::{Memcg, Vm};
use super::Kernel;

impl Kernel {
    /// Kills one task. `nodemask`: the nodes the failing allocation was limited to, if not all.
    /// Returns false when no task could be chosen.
    pub fn out_of_memory(
        &mut self,
        memcg: Option<u16>,
        nodemask: Option<super::mempolicy::Nodemask>,
    ) -> bool {
        let mut victim: Option<(u64, u32)> = None;
        for t in &self.tasks {
            let Some(mm) = t.mm else { continue };
            if !t.is_running() {
                continue;
            }
            let m = &self.mms[mm as usize];
            if memcg.is_some_and(|cg| cg != m.memcg) {
                continue;
            }
            if let (Some(mask), Some(pol)) = (nodemask, t.mempolicy) {
                if pol.mode == super::mempolicy::MpolMode::Bind && pol.nodes & mask == 0 {
                    continue;
                }
            }
            let points = m.rss_anon + m.rss_file + m.swapents;
            if victim.is_none_or(|(best, _)| points > best) {
                victim = Some((points, t.id));
            }
        }
        let Some((_, id)) = victim else { return false };
        self.stat.count(Vm::OomKill, 1);
        let cg = self.mms[self.tasks[id as usize].mm.unwrap() as usize].memcg;
        self.memcgs[cg as usize].count(Memcg::OomKill, 1);
        self.kill_task(id);
        true
    }
}
