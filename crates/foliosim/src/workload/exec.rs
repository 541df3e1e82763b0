//! Running the workload: spawning tasks, the scheduler loop, and each operation of a program.
//!
//! The scheduler always advances the runnable task with the smallest clock by at most one quantum
//! on the CPU of its node that frees up first, so tasks beyond the CPU count wait their turn.
//! A task holds its CPU while it waits for a device (reads, queued writes); sleeps and barriers
//! release it.

use super::task::{Region, Report, Task, TaskKind, TaskState, TOUCH_AHEAD};
use crate::mm::memory::Killed;
use crate::mm::vma::{VM_EXEC, VM_HUGEPAGE, VM_NOHUGEPAGE, VM_SHARED, VM_WRITE};
use crate::mm::vmscan::DEF_PRIORITY;
use crate::mm::Kernel;
use crate::scenario::{Access, Advice, InputError, Op, Pattern, Program};
use crate::sim::rng::{Rng, Zipf};
use crate::stats::result::RunResult;
use crate::RunError;
use std::rc::Rc;

/// How often (in scheduler steps) `--check` runs the invariant checker during a run.
const CHECK_EVERY_STEPS: u64 = 20_000;

impl Kernel {
    pub fn spawn_kernel_threads(&mut self) {
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
                Rc::new(Vec::new()),
            );
            t.state = TaskState::Blocked;
            self.tasks.push(t);
            self.nodes[node as usize].kswapd = id;
        }
    }

    pub fn spawn_workload(&mut self) -> Result<(), InputError> {
        for i in 0..self.spec.scenario.files.len() {
            let f = &self.spec.scenario.files[i];
            let file = crate::mm::filemap::File::new(
                f.name.clone(),
                f.size_bytes,
                f.read_ahead_kb,
                f.large_folios,
            );
            self.create_file(file);
        }
        let specs = self.spec.scenario.tasks.clone();
        for ts in &specs {
            let first_task = self.tasks.len();
            let memcg = match &ts.cgroup {
                None => 0,
                Some(name) => self
                    .memcgs
                    .iter()
                    .position(|c| &c.name == name)
                    .ok_or_else(|| InputError {
                        file: self.spec.scenario.file.clone(),
                        key: format!("task.{}.cgroup", ts.name),
                        message: format!("expected a defined cgroup, found {name:?}"),
                    })? as u16,
            };
            match &ts.program {
                Program::Ops(ops) => {
                    self.spawn_user(
                        ts.name.clone(),
                        memcg,
                        ts.node,
                        Rc::new(ops.clone()),
                        Report::None,
                    );
                }
                Program::ZeroSubpage {
                    size_bytes,
                    offset,
                    num_dirty,
                } => {
                    let ops = super::zero_subpage::program(*size_bytes, *offset, *num_dirty);
                    self.spawn_user(ts.name.clone(), memcg, ts.node, Rc::new(ops), Report::None);
                }
                Program::Kbuild {
                    jobs,
                    units,
                    size_min_bytes,
                    size_max_bytes,
                    passes,
                    work_ns,
                } => {
                    let k = super::kbuild::Kbuild {
                        jobs: *jobs,
                        units: *units,
                        size_min_bytes: *size_min_bytes,
                        size_max_bytes: *size_max_bytes,
                        passes: *passes,
                        work_ns: *work_ns,
                    };
                    for (i, ops) in super::kbuild::programs(&k, &mut self.rng)
                        .into_iter()
                        .enumerate()
                    {
                        self.spawn_user(
                            format!("{}-{i}", ts.name),
                            memcg,
                            ts.node,
                            Rc::new(ops),
                            Report::None,
                        );
                    }
                }
                Program::FileRead(fr) => {
                    if fr
                        .preload_node
                        .is_some_and(|n| n as usize >= self.nodes.len())
                    {
                        return Err(InputError {
                            file: self.spec.scenario.file.clone(),
                            key: format!("task.{}.preload_node", ts.name),
                            message: format!(
                                "expected a node number in 0..={}",
                                self.nodes.len() - 1
                            ),
                        });
                    }
                    let file = self.create_file(crate::mm::filemap::File::new(
                        ts.name.clone(),
                        fr.size_bytes,
                        fr.read_ahead_kb,
                        fr.large_folios,
                    ));
                    let ops = fr.program(file, ts.mempolicy);
                    self.spawn_user(ts.name.clone(), memcg, ts.node, Rc::new(ops), Report::None);
                }
                Program::ThpSwapAllocator {
                    aligned,
                    small_folios,
                    iterations,
                } => {
                    let ops =
                        super::thp_swap_allocator::program(*aligned, *small_folios, *iterations);
                    self.spawn_user(ts.name.clone(), memcg, ts.node, Rc::new(ops), Report::None);
                }
                Program::Xsbench(x) => {
                    self.xsbench = Some(*x);
                    let mut mm = None;
                    let mut regions = Vec::new();
                    for i in 0..x.threads {
                        let ops = Rc::new(x.program(i, &self.hw));
                        let name = format!("{}-{i}", ts.name);
                        let id = match mm {
                            None => {
                                let id = self.spawn_user(name, memcg, ts.node, ops, Report::None);
                                let m = self.tasks[id as usize].mm.expect("user mm");
                                for (region, bytes) in x.regions() {
                                    let nr_pages = bytes.div_ceil(crate::mm::PAGE_SIZE) as u32;
                                    let start = self.mmap_anon(m, nr_pages);
                                    if x.poisson_index {
                                        let vi =
                                            self.mms[m as usize].find_vma(start).expect("mapped");
                                        self.mms[m as usize].vmas[vi].poisson = Some(Box::new(
                                            super::poisson::PoissonPages::new(nr_pages as usize),
                                        ));
                                    }
                                    regions.push(Region {
                                        name: region.into(),
                                        start,
                                        nr_pages,
                                    });
                                }
                                mm = Some(m);
                                id
                            }
                            Some(m) => self.spawn_thread(name, m, ts.node, ops),
                        };
                        self.tasks[id as usize].regions = regions.clone();
                    }
                }
                Program::Usemem {
                    processes,
                    size_bytes,
                } => {
                    let ops = Rc::new(super::usemem::program(&ts.name, *size_bytes, &self.hw));
                    for i in 0..*processes {
                        let report = Report::Usemem {
                            size_bytes: *size_bytes,
                        };
                        self.spawn_user(
                            format!("{}-{i}", ts.name),
                            memcg,
                            ts.node,
                            ops.clone(),
                            report,
                        );
                    }
                }
            }
            // Every process and thread of the task starts with its policy (as under numactl).
            for t in &mut self.tasks[first_task..] {
                t.mempolicy = ts.mempolicy;
            }
        }
        Ok(())
    }

    fn spawn_user(
        &mut self,
        name: String,
        memcg: u16,
        node: u32,
        program: Rc<Vec<Op>>,
        report: Report,
    ) -> u32 {
        let id = self.tasks.len() as u32;
        let mut t = Task::new(id, name, TaskKind::User, memcg, node, program);
        t.report = report;
        t.numa_scan_period_ms = self.spec.knobs.numa_scan_delay_ms;
        t.mm = Some(self.mm_create(memcg, id));
        self.tasks.push(t);
        self.runq.push(0, id);
        id
    }

    /// A thread of an existing process: it shares the address space.
    fn spawn_thread(&mut self, name: String, mm: u32, node: u32, program: Rc<Vec<Op>>) -> u32 {
        let id = self.tasks.len() as u32;
        let memcg = self.mms[mm as usize].memcg;
        let mut t = Task::new(id, name, TaskKind::User, memcg, node, program);
        t.mm = Some(mm);
        t.numa_scan_period_ms = self.spec.knobs.numa_scan_delay_ms;
        self.mms[mm as usize].users += 1;
        self.tasks.push(t);
        self.runq.push(0, id);
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

    fn do_exit(&mut self, t: u32) {
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
        self.barrier_participant_left();
    }

    /// The task work on the way out of a call (or in exit_task_work): unmapping a young
    /// page-cache page marks it accessed, which with `+pagecache_promotion` may have queued it.
    fn promotion_work_pending(&mut self, t: u32) {
        if !self.tasks[t as usize].promo_list.is_empty() {
            self.task_numa_promotion_work(t);
        }
    }

    fn blocked_at_barrier(task: &Task, name: &str) -> bool {
        task.state == TaskState::Blocked
            && task.pc > 0
            && matches!(&task.program[task.pc - 1], Op::Barrier { name: n } if n == name)
    }

    /// Live tasks that wait at the barrier now or will reach it later.
    fn barrier_participants(&self, name: &str) -> Vec<u32> {
        self.tasks
            .iter()
            .filter(|o| o.is_user() && o.is_running())
            .filter(|o| {
                Self::blocked_at_barrier(o, name)
                    || o.program[o.pc..]
                        .iter()
                        .any(|op| matches!(op, Op::Barrier { name: n } if n == name))
            })
            .map(|o| o.id)
            .collect()
    }

    fn barrier_arrive(&mut self, t: u32, name: &str) {
        self.tasks[t as usize].state = TaskState::Blocked;
        self.tasks[t as usize].clock_ns = self.clock_ns;
        self.barrier_release_if_complete(name);
    }

    /// Releases everyone at the barrier, at the latest arrival's clock, once all have arrived.
    fn barrier_release_if_complete(&mut self, name: &str) {
        let group = self.barrier_participants(name);
        if group.is_empty()
            || !group
                .iter()
                .all(|&o| Self::blocked_at_barrier(&self.tasks[o as usize], name))
        {
            return;
        }
        let release = group
            .iter()
            .map(|&o| self.tasks[o as usize].clock_ns)
            .max()
            .unwrap_or(0);
        for o in group {
            let task = &mut self.tasks[o as usize];
            task.state = TaskState::Runnable;
            task.clock_ns = release;
            let pc = task.pc;
            task.op_end_ns[pc - 1] = release;
            self.runq.push(release, o);
        }
    }

    /// A task that exits can no longer hold up a barrier the others wait at.
    fn barrier_participant_left(&mut self) {
        let waiting: Vec<String> = self
            .tasks
            .iter()
            .filter(|o| o.is_user() && o.state == TaskState::Blocked && o.pc > 0)
            .filter_map(|o| match &o.program[o.pc - 1] {
                Op::Barrier { name } => Some(name.clone()),
                _ => None,
            })
            .collect();
        for name in waiting {
            self.barrier_release_if_complete(&name);
        }
    }

    /// The CPU of the task's node that frees up first (any CPU for a CPU-less node).
    /// The CPU task `t` last ran on, if nothing else ran there since and it is free by the
    /// task's clock (the scheduler keeps a task where its cache is warm); otherwise the CPU of its
    /// node that frees up first.
    fn pick_cpu(&self, node: u32, t: u32) -> u32 {
        let task = &self.tasks[t as usize];
        if let Some(c) = task.last_cpu {
            let warm = self.cpus[c as usize].node == node
                && !self.nodes[node as usize].cpus.is_empty()
                && self.cpu_tlbs[c as usize].last_task == t
                && self.cpus[c as usize].busy.busy_until_ns <= task.clock_ns;
            if warm {
                return c;
            }
        }
        let earliest = |c: &u32| (self.cpus[*c as usize].busy.busy_until_ns, *c);
        let cpus = &self.nodes[node as usize].cpus;
        if cpus.is_empty() {
            (0..self.cpus.len() as u32)
                .min_by_key(earliest)
                .unwrap_or(0)
        } else {
            cpus.iter().copied().min_by_key(earliest).unwrap_or(0)
        }
    }

    /// Page touches the user programs will make, for the progress bar.
    fn total_touches_planned(&self) -> u64 {
        let mut total = 0;
        for t in self.tasks.iter().filter(|t| t.is_user()) {
            let mut regions: Vec<(&str, u64)> = Vec::new();
            for op in t.program.iter() {
                match op {
                    Op::Mmap { region, size_bytes }
                    | Op::MmapFile {
                        region, size_bytes, ..
                    } => regions.push((region, size_bytes / crate::mm::PAGE_SIZE)),
                    Op::Touch {
                        region,
                        count,
                        len_bytes,
                        ..
                    } => {
                        let region_pages = regions
                            .iter()
                            .rev()
                            .find(|(r, _)| r == region)
                            .map_or(0, |r| r.1);
                        let range = len_bytes.map_or(region_pages, |l| l / crate::mm::PAGE_SIZE);
                        total += count.unwrap_or(range);
                    }
                    Op::XsbenchLookups { lookups } => total += lookups,
                    Op::FileRead(r) => total += r.len_bytes / crate::mm::PAGE_SIZE,
                    Op::FileWrite(w) => total += w.len_bytes / crate::mm::PAGE_SIZE,
                    _ => {}
                }
            }
        }
        total.max(1)
    }

    pub fn run(mut self, progress: &mut dyn FnMut(f64)) -> Result<RunResult, RunError> {
        let planned = self.total_touches_planned();
        let interval = self.spec.scenario.sample_interval_ns.max(1);
        let quantum_ns = self.spec.scenario.sched_quantum_ns;
        let mut series = crate::stats::report::Series::default();
        let mut next_sample_ns = 0;
        let mut steps = 0u64;
        let mut last_progress = 0.0;
        while let Some((clock, t)) = self.runq.pop() {
            let task = &self.tasks[t as usize];
            if task.state != TaskState::Runnable || task.clock_ns != clock {
                continue;
            }
            if !self.tasks.iter().any(|t| t.is_user() && t.is_running()) {
                break;
            }
            while next_sample_ns <= clock {
                series.sample(&self, next_sample_ns);
                next_sample_ns += interval;
            }
            let cpu = self.pick_cpu(task.node, t);
            self.current = t;
            self.current_cpu = cpu;
            self.switch_to(cpu, t);
            self.clock_ns = clock.max(self.cpus[cpu as usize].busy.busy_until_ns);
            let cpu_end = self.step(t, self.clock_ns + quantum_ns);
            self.cpus[cpu as usize].busy.busy_until_ns = cpu_end;
            let task = &mut self.tasks[t as usize];
            if task.state == TaskState::Runnable {
                task.clock_ns = self.clock_ns;
                self.runq.push(self.clock_ns, t);
            }
            steps += 1;
            if self.spec.check && steps % CHECK_EVERY_STEPS == 0 {
                let v = crate::check::check(&self);
                if !v.is_empty() {
                    return Err(RunError::Check(v));
                }
            }
            if steps % 256 == 0 {
                let done: u64 = self.tasks.iter().map(|t| t.touches).sum();
                let f = (done as f64 / planned as f64).min(1.0);
                if f - last_progress >= 0.01 {
                    last_progress = f;
                    progress(f);
                }
            }
        }
        series.sample(&self, next_sample_ns);
        if self.spec.check {
            let v = crate::check::check(&self);
            if !v.is_empty() {
                return Err(RunError::Check(v));
            }
        }
        progress(1.0);
        Ok(crate::stats::report::build(&self, series))
    }

    /// Runs task `t` until `quantum_end_ns`, a block, or its end. Returns when its CPU is free.
    fn step(&mut self, t: u32, quantum_end_ns: u64) -> u64 {
        let irq_ns = std::mem::take(&mut self.tasks[t as usize].pending_irq_ns);
        self.clock_ns += irq_ns;
        self.tasks[t as usize].sys_ns += irq_ns;
        if self.tasks[t as usize].is_user() {
            let itlb_ns = self.itlb_refill();
            self.clock_ns += itlb_ns;
            self.tasks[t as usize].user_ns += itlb_ns;
            let before = self.clock_ns;
            self.task_tick_numa(t);
            self.tasks[t as usize].sys_ns += self.clock_ns - before;
        }
        if let TaskKind::Kswapd { node, mut priority } = self.tasks[t as usize].kind {
            let mut busy = true;
            while busy && self.clock_ns < quantum_end_ns {
                busy = self.kswapd_round(node, &mut priority);
            }
            self.tasks[t as usize].kind = TaskKind::Kswapd { node, priority };
            if !busy {
                self.tasks[t as usize].state = TaskState::Blocked;
                self.tasks[t as usize].clock_ns = self.clock_ns;
            }
            return self.clock_ns;
        }
        if self.tasks[t as usize].kind == TaskKind::Flusher {
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
            return cpu_free;
        }
        let program = self.tasks[t as usize].program.clone();
        while self.clock_ns < quantum_end_ns {
            let pc = self.tasks[t as usize].pc;
            let Some(op) = program.get(pc) else {
                self.do_exit(t);
                return self.clock_ns;
            };
            let (clock_before, user_before) = (self.clock_ns, self.tasks[t as usize].user_ns);
            let result = self.run_op(t, op, quantum_end_ns);
            let task = &mut self.tasks[t as usize];
            task.sys_ns += (self.clock_ns - clock_before) - (task.user_ns - user_before);
            let finished = match result {
                Ok(f) => f,
                Err(Killed) => {
                    self.tasks[t as usize].oom_killed = true;
                    self.do_exit(t);
                    return self.clock_ns;
                }
            };
            if self.tasks[t as usize].state == TaskState::Exited {
                return self.clock_ns;
            }
            let sleep_ns = std::mem::take(&mut self.tasks[t as usize].sleep_ns);
            if sleep_ns > 0 {
                // The operation sleeps (io_schedule_timeout): the CPU is free meanwhile.
                let cpu_free = self.clock_ns;
                self.clock_ns += sleep_ns;
                return cpu_free;
            }
            if !finished {
                continue;
            }
            let task = &mut self.tasks[t as usize];
            task.op_end_ns[pc] = self.clock_ns;
            task.pc += 1;
            match op {
                Op::Barrier { name } => {
                    self.barrier_arrive(t, name);
                    return self.clock_ns;
                }
                Op::Sleep { ns } => {
                    let cpu_free = self.clock_ns;
                    self.clock_ns += ns;
                    self.tasks[t as usize].op_end_ns[pc] = self.clock_ns;
                    return cpu_free;
                }
                _ => {}
            }
        }
        self.clock_ns
    }

    fn region_of(&self, t: u32, name: &str) -> Result<Region, Killed> {
        // Validation guarantees the region exists; a missing one means the program was cut short.
        self.tasks[t as usize].region(name).cloned().ok_or(Killed)
    }

    /// Executes (part of) one operation. Ok(true) when the operation is complete.
    fn run_op(&mut self, t: u32, op: &Op, quantum_end_ns: u64) -> Result<bool, Killed> {
        let mm = self.tasks[t as usize].mm.expect("user task has an mm");
        match op {
            Op::Mmap { region, size_bytes } => {
                let nr_pages = size_bytes.div_ceil(crate::mm::PAGE_SIZE) as u32;
                let start = self.mmap_anon(mm, nr_pages);
                self.tasks[t as usize].set_region(region, start, nr_pages);
            }
            Op::MmapFile {
                region,
                file,
                offset_bytes,
                size_bytes,
                shared,
                write,
                exec,
            } => {
                let nr_pages = size_bytes.div_ceil(crate::mm::PAGE_SIZE) as u32;
                let pgoff = (offset_bytes / crate::mm::PAGE_SIZE) as u32;
                let mut flags = 0;
                for (on, flag) in [(*shared, VM_SHARED), (*write, VM_WRITE), (*exec, VM_EXEC)] {
                    if on {
                        flags |= flag;
                    }
                }
                let start = self.mmap_file(mm, *file, pgoff, nr_pages, flags);
                self.tasks[t as usize].set_region(region, start, nr_pages);
            }
            Op::Munmap { region } => {
                let r = self.region_of(t, region)?;
                self.munmap(mm, r.start);
                self.tasks[t as usize].regions.retain(|x| &x.name != region);
                self.promotion_work_pending(t);
            }
            Op::Madvise {
                region,
                advice,
                offset_bytes,
                len_bytes,
            } => {
                let r = self.region_of(t, region)?;
                let (from, to) = page_range(&r, *offset_bytes, *len_bytes);
                self.madvise(mm, r.start, from, to, *advice);
            }
            Op::Touch {
                region,
                access,
                pattern,
                offset_bytes,
                len_bytes,
                count,
                data,
                work_ns,
            } => {
                if !self.tasks[t as usize].touch.started {
                    let r = self.region_of(t, region)?;
                    let (from, to) = page_range(&r, *offset_bytes, *len_bytes);
                    let nr = to - from;
                    let ts = &mut self.tasks[t as usize].touch;
                    ts.started = true;
                    ts.done = 0;
                    ts.count = count.unwrap_or(nr as u64);
                    ts.base = r.start + from;
                    ts.nr_pages = nr;
                    ts.zipf = match pattern {
                        Pattern::Zipf { theta_milli } => {
                            Some(Zipf::new(nr.max(1) as u64, *theta_milli as f64 / 1000.0))
                        }
                        _ => None,
                    };
                    ts.drawn = 0;
                    let seed = self.rng.next_u64();
                    self.tasks[t as usize].touch.rng = Some(Rng::new(seed));
                }
                let write = *access == Access::Write;
                let per_touch_ns = work_ns
                    + match pattern {
                        Pattern::Sequential => 0,
                        _ => self.hw.touch_resident_ns,
                    };
                loop {
                    let ts = &self.tasks[t as usize].touch;
                    if ts.done >= ts.count || ts.nr_pages == 0 {
                        self.tasks[t as usize].touch = Default::default();
                        return Ok(true);
                    }
                    if self.clock_ns >= quantum_end_ns {
                        return Ok(false);
                    }
                    let page = match pattern {
                        Pattern::Sequential => (ts.done % ts.nr_pages as u64) as u32,
                        _ => self.next_random_page(t, mm),
                    };
                    let vpn = self.tasks[t as usize].touch.base + page;
                    self.touch(mm, vpn, write, *data)?;
                    self.clock_ns += per_touch_ns;
                    let task = &mut self.tasks[t as usize];
                    task.user_ns += per_touch_ns;
                    task.touch.done += 1;
                    task.touches += 1;
                }
            }
            Op::Fork { name, child } => {
                let id = self.tasks.len() as u32;
                let child_mm = self.fork_mm(mm, id);
                let parent = &self.tasks[t as usize];
                let mut c = Task::new(
                    id,
                    name.clone(),
                    TaskKind::User,
                    parent.memcg,
                    parent.node,
                    Rc::new(child.clone()),
                );
                c.regions = parent.regions.clone();
                // copy_process duplicates the task policy and the interleave position.
                c.mempolicy = parent.mempolicy;
                c.il_prev = parent.il_prev;
                c.mm = Some(child_mm);
                c.clock_ns = self.clock_ns;
                self.tasks.push(c);
                self.runq.push(self.clock_ns, id);
            }
            Op::XsbenchLookups { lookups } => {
                return self.xsbench_lookups(t, *lookups, quantum_end_ns);
            }
            Op::FileRead(req) => return self.file_read_op(t, req, quantum_end_ns),
            Op::SetMempolicy { policy } => self.do_set_mempolicy(*policy),
            Op::Mbind {
                region,
                policy,
                offset_bytes,
                len_bytes,
                mf_move,
            } => {
                let r = self.region_of(t, region)?;
                let (from, to) = page_range(&r, *offset_bytes, *len_bytes);
                self.do_mbind(mm, r.start, from, to, *policy);
                if let (true, Some(pol)) = (mf_move, policy) {
                    self.mbind_move_folios(mm, r.start, from, to, pol);
                }
            }
            Op::FileWrite(req) => return self.file_write_op(t, req, quantum_end_ns),
            Op::Fsync { file } => self.vfs_fsync(*file),
            Op::Sleep { .. } | Op::Barrier { .. } => {}
            Op::Exit => self.do_exit(t),
            Op::IterationStart => {
                self.tasks[t as usize].iteration_start = Some((self.clock_ns, self.stat.clone()));
            }
            Op::IterationEnd { report } => {
                if let Some((start_ns, before)) = self.tasks[t as usize].iteration_start.take() {
                    let figures = super::iteration_figures(
                        *report,
                        start_ns,
                        self.clock_ns,
                        &before,
                        &self.stat,
                    );
                    self.iterations.push(figures);
                }
            }
        }
        Ok(true)
    }

    /// The next page of a random or zipf Touch, drawn a few ahead so that their page-table
    /// entries are already in cache when they are used.
    fn next_random_page(&mut self, t: u32, mm: u32) -> u32 {
        let ts = &mut self.tasks[t as usize].touch;
        let vi = self.mms[mm as usize].find_vma(ts.base);
        let rng = ts.rng.as_mut().expect("random touch has a stream");
        while ts.drawn < ts.count && ts.drawn - ts.done < TOUCH_AHEAD as u64 {
            let page = match &ts.zipf {
                Some(z) => z.sample(rng) as u32,
                None => rng.below(ts.nr_pages as u64) as u32,
            };
            ts.ahead[(ts.drawn % TOUCH_AHEAD as u64) as usize] = page;
            ts.drawn += 1;
            if let Some(vi) = vi {
                let v = &self.mms[mm as usize].vmas[vi];
                if let Some(pte) = v.ptes.get((ts.base + page - v.start) as usize) {
                    prefetch(pte);
                }
            }
            prefetch(self.cpu_tlbs[self.current_cpu as usize].entry(mm, ts.base + page));
        }
        ts.ahead[(ts.done % TOUCH_AHEAD as u64) as usize]
    }

    /// madvise on pages [from, to) of the VMA starting at `start`.
    fn madvise(&mut self, mm: u32, start: u32, from: u32, to: u32, advice: Advice) {
        let Some(vi) = self.mms[mm as usize].find_vma(start) else {
            return;
        };
        let flags = &mut self.mms[mm as usize].vmas[vi].flags;
        match advice {
            Advice::Hugepage => *flags = (*flags | VM_HUGEPAGE) & !VM_NOHUGEPAGE,
            Advice::NoHugepage => *flags = (*flags | VM_NOHUGEPAGE) & !VM_HUGEPAGE,
            Advice::DontNeed => self.zap_range(mm, vi, from, to, false),
            Advice::Pageout | Advice::Cold => {
                self.madvise_cold_or_pageout(mm, vi, from, to, advice == Advice::Pageout)
            }
        }
    }
}

#[inline]
pub(super) fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that cannot fault; the pointer comes from a live reference.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const T as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

fn page_range(r: &Region, offset_bytes: u64, len_bytes: Option<u64>) -> (u32, u32) {
    let from = ((offset_bytes / crate::mm::PAGE_SIZE) as u32).min(r.nr_pages);
    let to = match len_bytes {
        Some(l) => (from as u64 + l.div_ceil(crate::mm::PAGE_SIZE)).min(r.nr_pages as u64) as u32,
        None => r.nr_pages,
    };
    (from, to)
}
