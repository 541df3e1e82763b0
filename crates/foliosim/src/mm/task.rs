//! Tasks as the kernel sees them: the mm-relevant part of `struct task_struct`
//! (include/linux/sched.h), the kernel side of exit (kernel/exit.c do_exit: the mm is dropped and
//! the parent notified), waking a kernel thread (wake_up_process), the scheduler-tick work done
//! for a task that gets its CPU, and running the kernel threads (kswapd, the writeback flusher).
//!
//! What a user task runs (its program, its place in it) belongs to the workload, which keeps it
//! per task id; the kernel tells it of exits through `exit_notify_pending`.
//! Left out: everything of task_struct the memory manager does not read (credentials, signals,
//! the scheduler's own accounting beyond the task's clock and CPU times).

use super::vmscan::DEF_PRIORITY;
use super::Kernel;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    Runnable,
    /// Waiting at a barrier, or a kernel thread asleep until woken.
    Blocked,
    Exited,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskKind {
    User,
    /// kswapd of a node, with the priority of its current balance_pgdat run.
    Kswapd {
        node: u32,
        priority: u32,
    },
    /// The writeback worker of the machine's one disk (wb_workfn, mm/page_writeback.rs).
    Flusher,
}

pub struct Task {
    pub id: u32,
    pub name: String,
    pub kind: TaskKind,
    pub state: TaskState,
    pub mm: Option<u32>,
    pub memcg: u16,
    pub node: u32,
    pub clock_ns: u64,
    pub exit_ns: u64,
    pub oom_killed: bool,
    /// Pages (or lookups, or pages read) the task's program has touched so far.
    pub touches: u64,
    /// The program's user time is its own measured one (a replay with `user_time = "native"`),
    /// which includes its page walks: a TLB miss of its accesses costs no time of its own.
    pub page_walks_in_user_time: bool,
    /// CPU time in the program itself, and in the kernel on its behalf (faults, reclaim, syscalls,
    /// waits for synchronous I/O).
    pub user_ns: u64,
    pub sys_ns: u64,
    /// The same time by mechanism (mm/cputime.rs), and the time it waited for a CPU.
    pub time: super::cputime::TimeBreakdown,
    /// Time spent in, and pages freed by, reclaim this task did itself.
    pub direct_reclaim_ns: u64,
    pub direct_reclaim_pages: u64,
    /// Interrupt handling (TLB shootdowns) owed, charged when the task next runs.
    pub pending_irq_ns: u64,
    /// The CPU the task last ran on.
    pub last_cpu: Option<u32>,
    /// The pages (mm, first and end virtual page) of the folio the task's last fault mapped:
    /// the kernel has just written them (cleared, copied or swapped them in), so the program's
    /// stores into them hit the cache.
    pub faulted_folio: (u32, u32, u32),
    /// NUMA balancing: scan period, CPU-time stamp of the next scan, scan sequence last placed.
    pub numa_scan_period_ms: u64,
    pub node_stamp_ns: u64,
    pub numa_scan_seq: u32,
    /// Progress through the current FileRead operation.
    pub file_read: super::filemap::ReadState,
    /// Readahead state of the task's open file of each file id (`struct file_ra_state`).
    pub ra: Vec<super::readahead::FileRaState>,
    /// `+pagecache_promotion`: folios isolated by promotion_candidate, migrated by the task work
    /// on return to user mode (`current->promo_list`), and their pages (`promo_count`).
    pub promo_list: Vec<super::folio::FolioId>,
    pub promo_count: u64,
    /// The task's memory policy (`current->mempolicy`; None: MPOL_DEFAULT), and the node its
    /// interleaving used last (`il_prev`).
    pub mempolicy: Option<super::mempolicy::Mempolicy>,
    pub il_prev: u32,
    /// Progress through the current FileWrite operation.
    pub file_write: super::filemap::WriteState,
    /// balance_dirty_pages_ratelimited's per-task state: pages dirtied since the last check,
    /// the count that triggers the next one, and when the task last paused.
    pub nr_dirtied: u64,
    pub nr_dirtied_pause: u64,
    pub dirty_paused_when_ns: u64,
    /// A sleep the current operation asked for (a dirty-throttling pause): the task gives up
    /// its CPU for this long before the operation goes on.
    pub sleep_ns: u64,
    /// A reclaim of the task's memcg that its next fault has to wait for, run a priority pass
    /// at a time so that other tasks run (and reclaim) meanwhile (mm/memcontrol.rs).
    pub memcg_reclaim: Option<Box<super::memcontrol::PendingReclaim>>,
    /// That reclaim is over: the next access faults, and its charges see the memcg as the
    /// kernel did when it made them, full (try_charge).
    pub fault_after_reclaim: bool,
}

/// Where a stretch of a task's clock began (`Kernel::sys_start`), for `Kernel::charge_sys`.
#[derive(Clone, Copy)]
pub struct SysStart {
    clock_ns: u64,
    off_sys_ns: u64,
}

impl Task {
    /// Its user time and its time asleep on a device so far: a stretch of its clock less what
    /// these grew by is its system time (a task waiting for I/O uses no CPU, and wait4's
    /// ru_stime, which the live side reports, does not count it).
    fn off_sys_ns(&self) -> u64 {
        self.user_ns + self.time.get(super::TimeKind::IoWait)
    }

    pub fn new(id: u32, name: String, kind: TaskKind, memcg: u16, node: u32) -> Task {
        Task {
            id,
            name,
            kind,
            state: TaskState::Runnable,
            mm: None,
            memcg,
            node,
            clock_ns: 0,
            exit_ns: 0,
            oom_killed: false,
            touches: 0,
            page_walks_in_user_time: false,
            user_ns: 0,
            sys_ns: 0,
            time: Default::default(),
            direct_reclaim_ns: 0,
            direct_reclaim_pages: 0,
            pending_irq_ns: 0,
            last_cpu: None,
            faulted_folio: (0, 0, 0),
            numa_scan_period_ms: 0,
            node_stamp_ns: 0,
            numa_scan_seq: 0,
            file_read: Default::default(),
            ra: Vec::new(),
            promo_list: Vec::new(),
            promo_count: 0,
            mempolicy: None,
            il_prev: super::mempolicy::MAX_NUMNODES - 1,
            file_write: Default::default(),
            nr_dirtied: 0,
            nr_dirtied_pause: super::page_writeback::DIRTY_POLL_THRESH,
            dirty_paused_when_ns: 0,
            sleep_ns: 0,
            memcg_reclaim: None,
            fault_after_reclaim: false,
        }
    }

    /// Alive (not exited or killed): may be running, runnable or waiting.
    pub fn is_running(&self) -> bool {
        self.state != TaskState::Exited
    }

    pub fn is_user(&self) -> bool {
        self.kind == TaskKind::User
    }
}

impl Kernel {
    /// A stretch of task `t`'s clock begins now.
    pub fn sys_start(&self, t: u32) -> SysStart {
        SysStart {
            clock_ns: self.clock_ns,
            off_sys_ns: self.tasks[t as usize].off_sys_ns(),
        }
    }

    /// The stretch of task `t`'s clock since `start`, less its user time and its waits for a
    /// device in it, is system time.
    pub fn charge_sys(&mut self, t: u32, start: SysStart) {
        let task = &mut self.tasks[t as usize];
        task.sys_ns += (self.clock_ns - start.clock_ns) - (task.off_sys_ns() - start.off_sys_ns);
    }

    /// kswapd_run for every node: one kswapd each, asleep until woken.
    pub fn spawn_kswapd_threads(&mut self) {
        for node in 0..self.nodes.len() as u32 {
            let id = self.tasks.len() as u32;
            let mut t = Task::new(
                id,
                format!("kswapd{node}"),
                TaskKind::Kswapd {
                    node,
                    priority: DEF_PRIORITY,
                },
                0,
                node,
            );
            t.state = TaskState::Blocked;
            self.tasks.push(t);
            self.nodes[node as usize].kswapd = id;
        }
    }

    /// A new process with its own address space, runnable at time 0.
    pub fn spawn_process(&mut self, name: String, memcg: u16, node: u32) -> u32 {
        let id = self.tasks.len() as u32;
        let mut t = Task::new(id, name, TaskKind::User, memcg, node);
        t.numa_scan_period_ms = self.spec.knobs.numa_scan_delay_ms;
        t.mm = Some(self.mm_create(memcg, id));
        self.tasks.push(t);
        self.runq.push(0, id);
        id
    }

    /// A thread of an existing process: it shares the address space.
    pub fn spawn_thread(&mut self, name: String, mm: u32, node: u32) -> u32 {
        let id = self.tasks.len() as u32;
        let memcg = self.mms[mm as usize].memcg;
        let mut t = Task::new(id, name, TaskKind::User, memcg, node);
        t.mm = Some(mm);
        t.numa_scan_period_ms = self.spec.knobs.numa_scan_delay_ms;
        self.mms[mm as usize].users += 1;
        self.tasks.push(t);
        self.runq.push(0, id);
        id
    }

    /// fork by task `parent` (copy_process): a child with a copy of its address space, runnable
    /// now.
    pub fn fork_task(&mut self, parent: u32, name: String) -> u32 {
        let id = self.tasks.len() as u32;
        let mm = self.tasks[parent as usize].mm.expect("user task has an mm");
        let child_mm = self.fork_mm(mm, id);
        let parent = &self.tasks[parent as usize];
        let mut c = Task::new(id, name, TaskKind::User, parent.memcg, parent.node);
        // copy_process duplicates the task policy and the interleave position.
        c.mempolicy = parent.mempolicy;
        c.il_prev = parent.il_prev;
        // the same program: timed the same way
        c.page_walks_in_user_time = parent.page_walks_in_user_time;
        c.mm = Some(child_mm);
        c.clock_ns = self.clock_ns;
        self.tasks.push(c);
        self.runq.push(self.clock_ns, id);
        id
    }

    /// Wakes a blocked kernel thread at the current time.
    pub fn wake_task(&mut self, t: u32) {
        let now = self.clock_ns;
        let task = &mut self.tasks[t as usize];
        if task.state == TaskState::Blocked && !task.is_user() {
            task.state = TaskState::Runnable;
            task.clock_ns = task.clock_ns.max(now);
            self.runq.push(task.clock_ns, t);
        }
    }

    pub fn kill_task(&mut self, t: u32) {
        self.tasks[t as usize].oom_killed = true;
        self.do_exit(t);
    }

    /// The task ends: its address space goes when its last user does, its pending task work
    /// runs, and the workload learns of it (`exit_notify_pending`).
    pub fn do_exit(&mut self, t: u32) {
        if self.tasks[t as usize].state == TaskState::Exited {
            return;
        }
        let clock = if t == self.current {
            self.clock_ns
        } else {
            self.tasks[t as usize].clock_ns
        };
        let task = &mut self.tasks[t as usize];
        task.state = TaskState::Exited;
        task.exit_ns = clock;
        if let Some(mm) = task.mm {
            self.mms[mm as usize].users -= 1;
            if self.mms[mm as usize].users == 0 {
                self.exit_mmap(mm);
                self.tlb_exit_mm(mm);
            }
        }
        self.promotion_work_pending(t);
        self.exit_notify_pending = true;
    }

    /// The task work on the way out of a call (or in exit_task_work): unmapping a young
    /// page-cache page marks it accessed, which with `+pagecache_promotion` may have queued it.
    pub fn promotion_work_pending(&mut self, t: u32) {
        if !self.tasks[t as usize].promo_list.is_empty() {
            self.task_numa_promotion_work(t);
        }
    }

    /// What the kernel does for task `t` as it gets its CPU: interrupt work owed to it, and for
    /// a user task the instruction-TLB refill and the NUMA-balancing tick.
    pub fn task_tick(&mut self, t: u32) {
        let irq_ns = std::mem::take(&mut self.tasks[t as usize].pending_irq_ns);
        self.spend(super::TimeKind::TlbShootdownReceive, irq_ns);
        self.tasks[t as usize].sys_ns += irq_ns;
        if self.tasks[t as usize].is_user() {
            let itlb_ns = self.itlb_refill();
            self.spend(super::TimeKind::TlbMiss, itlb_ns);
            self.tasks[t as usize].user_ns += itlb_ns;
            let start = self.sys_start(t);
            self.task_tick_numa(t);
            self.charge_sys(t, start);
        }
    }

    /// Runs kernel thread `t` until `quantum_end_ns` or until it sleeps. Returns when its CPU is
    /// free, or None for a user task (the workload runs those).
    pub fn run_kernel_thread(&mut self, t: u32, quantum_end_ns: u64) -> Option<u64> {
        match self.tasks[t as usize].kind {
            TaskKind::User => None,
            TaskKind::Kswapd { node, mut priority } => {
                let mut busy = true;
                while busy && self.clock_ns < quantum_end_ns {
                    busy = self.kswapd_round(node, &mut priority);
                }
                self.tasks[t as usize].kind = TaskKind::Kswapd { node, priority };
                if !busy {
                    self.tasks[t as usize].state = TaskState::Blocked;
                    self.tasks[t as usize].clock_ns = self.clock_ns;
                }
                Some(self.clock_ns)
            }
            TaskKind::Flusher => {
                let next = self.wb_workfn();
                let cpu_free = self.clock_ns;
                self.wb.idle_since_ns = cpu_free;
                self.wb.timer_armed = next.is_some();
                match next {
                    // Asleep on its timer: runnable again at the next dirty_writeback interval.
                    Some(at) => self.clock_ns = at,
                    None => {
                        self.tasks[t as usize].state = TaskState::Blocked;
                        self.tasks[t as usize].clock_ns = cpu_free;
                    }
                }
                Some(cpu_free)
            }
        }
    }

    /// The CPU task `t` runs on, as per-CPU runqueues place it (kernel/sched/fair.c): a task
    /// stays on the CPU it last ran on and waits there while that CPU is busy, unless a CPU of its
    /// node is idle when it becomes runnable (idle balancing pulls it) or its CPU has at least two
    /// more runnable tasks than another (the load balancer moves one). A task that has not run
    /// yet, or whose CPU is on another node, starts on the CPU of its node that frees up first
    /// (any CPU for a CPU-less node). Left out: wake-affine placement, SMT and cache domains, and
    /// the balancer's periods: it acts at once.
    pub fn pick_cpu(&self, node: u32, t: u32) -> u32 {
        let task = &self.tasks[t as usize];
        let all: Vec<u32>;
        let cpus: &[u32] = if self.nodes[node as usize].cpus.is_empty() {
            all = (0..self.cpus.len() as u32).collect();
            &all
        } else {
            &self.nodes[node as usize].cpus
        };
        let idle = |c: u32| self.cpus[c as usize].busy.busy_until_ns <= task.clock_ns;
        let earliest = |c: &u32| (self.cpus[*c as usize].busy.busy_until_ns, *c);
        let Some(own) = task.last_cpu.filter(|c| cpus.contains(c)) else {
            return cpus.iter().copied().min_by_key(earliest).unwrap_or(0);
        };
        if idle(own) {
            return own;
        }
        if let Some(&c) = cpus.iter().find(|&&c| idle(c)) {
            return c;
        }
        let mut queued = vec![0usize; self.cpus.len()];
        for o in self.tasks.iter().filter(|o| o.state == TaskState::Runnable) {
            if let Some(c) = o.last_cpu {
                queued[c as usize] += 1;
            }
        }
        let own_queued = queued[own as usize];
        let (least, least_queued) = cpus
            .iter()
            .map(|&c| (c, queued[c as usize]))
            .min_by_key(|&(c, n)| (n, c))
            .unwrap_or((own, own_queued));
        if own_queued >= least_queued + 2 {
            least
        } else {
            own
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two CPUs and four processes that have each run once: p0 and p1 on CPU 0, p2 and p3 on
    /// CPU 1, all runnable, both CPUs busy until 100 µs.
    fn four_on_two() -> Kernel {
        let toml = r#"
name = "t"
[[machine.node]]
memory = "256M"
cpus = 2
"#
        .to_string()
            + &(0..4)
                .map(|i| format!("[[task]]\nname = \"p{i}\"\nops = [{{ op = \"mmap\", region = \"a\", size = \"1M\" }}]\n"))
                .collect::<String>();
        let (mut k, first) = crate::mm::boot_for_test(&toml, "v6.18");
        for (i, t) in (first..first + 4).enumerate() {
            k.tasks[t as usize].last_cpu = Some(i as u32 / 2);
            k.tasks[t as usize].clock_ns = 50_000;
        }
        for c in 0..2 {
            k.cpus[c].busy.busy_until_ns = 100_000;
        }
        k
    }

    #[test]
    fn a_task_waits_on_its_own_busy_cpu_unless_another_is_idle_or_much_less_loaded() {
        let mut k = four_on_two();
        let first = k.tasks.iter().position(|t| t.is_user()).unwrap() as u32;
        // both busy, two runnable on each: stays where it ran (a global queue took the first
        // CPU to free up, and so spread every task over every CPU)
        k.cpus[1].busy.busy_until_ns = 90_000;
        assert_eq!(k.pick_cpu(0, first), 0);
        // CPU 1 idle when the task became runnable: idle balancing pulls it
        k.cpus[1].busy.busy_until_ns = 40_000;
        assert_eq!(k.pick_cpu(0, first), 1);
        // both busy, but CPU 0 has all four runnable tasks: the balancer moves one
        k.cpus[1].busy.busy_until_ns = 100_000;
        for t in first..first + 4 {
            k.tasks[t as usize].last_cpu = Some(0);
        }
        assert_eq!(k.pick_cpu(0, first), 1);
        // three against one: moving one evens them out
        k.tasks[first as usize + 3].last_cpu = Some(1);
        assert_eq!(k.pick_cpu(0, first), 1);
        // two against one: moving one would only swap the imbalance, so it stays
        k.tasks[first as usize + 2].state = TaskState::Blocked;
        assert_eq!(k.pick_cpu(0, first), 0);
    }
}
