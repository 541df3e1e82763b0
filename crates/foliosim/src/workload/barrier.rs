//! Barriers between tasks: a task that reaches a barrier op waits until every live task that
//! still has that barrier in its program has reached it too; all go on at the latest arrival's
//! clock. A task that exits no longer holds the others up.

use super::task::TaskProgram;
use super::Workload;
use crate::mm::task::{Task, TaskState};
use crate::mm::Kernel;
use crate::scenario::Op;

fn blocked_at_barrier(task: &Task, prog: &TaskProgram, name: &str) -> bool {
    task.state == TaskState::Blocked
        && prog.waiting_since_ns.is_none()
        && prog.pc > 0
        && matches!(&prog.program[prog.pc - 1], Op::Barrier { name: n } if n == name)
}

impl Workload {
    /// Live tasks that wait at the barrier now or will reach it later.
    fn barrier_participants(&self, k: &Kernel, name: &str) -> Vec<u32> {
        k.tasks
            .iter()
            .zip(&self.tasks)
            .filter(|(o, _)| o.is_user() && o.is_running())
            .filter(|(o, p)| {
                blocked_at_barrier(o, p, name)
                    || p.program[p.pc..]
                        .iter()
                        .any(|op| matches!(op, Op::Barrier { name: n } if n == name))
            })
            .map(|(o, _)| o.id)
            .collect()
    }

    /// Task `t` reached the barrier `name` at the current clock.
    pub fn barrier_arrive(&mut self, k: &mut Kernel, t: u32, name: &str) {
        k.tasks[t as usize].state = TaskState::Blocked;
        k.tasks[t as usize].clock_ns = k.clock_ns;
        self.barrier_release_if_complete(k, name);
    }

    /// Releases everyone at the barrier, at the latest arrival's clock, once all have arrived.
    fn barrier_release_if_complete(&mut self, k: &mut Kernel, name: &str) {
        let group = self.barrier_participants(k, name);
        if group.is_empty()
            || !group
                .iter()
                .all(|&o| blocked_at_barrier(&k.tasks[o as usize], &self.tasks[o as usize], name))
        {
            return;
        }
        let release = group
            .iter()
            .map(|&o| k.tasks[o as usize].clock_ns)
            .max()
            .unwrap_or(0);
        for o in group {
            let task = &mut k.tasks[o as usize];
            task.state = TaskState::Runnable;
            task.clock_ns = release;
            let prog = &mut self.tasks[o as usize];
            let pc = prog.pc;
            prog.op_end_ns[pc - 1] = release;
            k.runq.push(release, o);
        }
    }

    /// Tasks that exited (the kernel's exit_notify) can no longer hold up a barrier the others
    /// wait at. Called after each stretch of kernel work that may have ended a task.
    pub fn reap_exits(&mut self, k: &mut Kernel) {
        if !std::mem::take(&mut k.exit_notify_pending) {
            return;
        }
        let waiting: Vec<String> = k
            .tasks
            .iter()
            .zip(&self.tasks)
            .filter(|(o, p)| {
                o.is_user()
                    && o.state == TaskState::Blocked
                    && p.waiting_since_ns.is_none()
                    && p.pc > 0
            })
            .filter_map(|(_, p)| match &p.program[p.pc - 1] {
                Op::Barrier { name } => Some(name.clone()),
                _ => None,
            })
            .collect();
        for name in waiting {
            self.barrier_release_if_complete(k, &name);
        }
        // parents waiting for their children (wait4) go on once the last one has exited
        for t in 0..self.tasks.len() {
            let prog = &self.tasks[t];
            if prog.waiting_since_ns.is_none() || k.tasks[t].state != TaskState::Blocked {
                continue;
            }
            let children = prog.children.iter().map(|&c| &k.tasks[c as usize]);
            if children.clone().all(|c| c.state == TaskState::Exited) {
                let wake_ns = children
                    .map(|c| c.exit_ns)
                    .fold(k.tasks[t].clock_ns, u64::max);
                k.tasks[t].state = TaskState::Runnable;
                k.tasks[t].clock_ns = wake_ns;
                k.runq.push(wake_ns, t as u32);
            }
        }
    }
}
