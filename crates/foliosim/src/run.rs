//! The engine: one run from its validated spec to its result. Boot the machine (mm state only),
//! spawn the workload into it, drive the scheduler loop (sim::schedule) over both, and build the
//! result (stats::report) from the state at the end.
//!
//! The scheduler loop itself is generic (sim/, the lowest layer); this file says what one
//! quantum is here: pick the task's CPU, switch to it, let the kernel charge what it owes at the
//! switch, then run a kernel thread (mm) or a user program (workload), sampling the time series
//! on the way and running the invariant checker under `--check`.

use crate::mm::task::TaskState;
use crate::mm::Kernel;
use crate::scenario::{InputError, RunSpec};
use crate::sim::Scheduled;
use crate::stats::report::Series;
use crate::stats::result::RunResult;
use crate::workload::Workload;
use crate::RunError;

/// How often (in scheduler steps) `--check` runs the invariant checker during a run.
const CHECK_EVERY_STEPS: u64 = 20_000;

/// A booted machine with its workload spawned, ready to run.
pub struct Simulation {
    pub kernel: Kernel,
    pub workload: Workload,
}

impl Simulation {
    /// Boots the machine of `spec` and spawns its tasks. Errors only for input the scenario's
    /// validation could not catch.
    pub fn start(spec: &RunSpec) -> Result<Simulation, InputError> {
        let mut kernel = Kernel::boot(spec)?;
        let workload = crate::workload::spawn::spawn(&mut kernel)?;
        Ok(Simulation { kernel, workload })
    }

    /// Runs until every user task has ended; `progress` is called with the fraction done.
    pub fn run(self, progress: &mut dyn FnMut(f64)) -> Result<RunResult, RunError> {
        self.run_with_budget(progress, u64::MAX)
    }

    /// `run`, stopped with `RunError::BudgetExceeded` after `max_quanta` quanta.
    pub fn run_with_budget(
        self,
        progress: &mut dyn FnMut(f64),
        max_quanta: u64,
    ) -> Result<RunResult, RunError> {
        let Simulation {
            kernel: mut k,
            workload: mut w,
        } = self;
        let mut driver = Driver {
            planned: w.total_touches_planned(&k),
            quantum_ns: k.spec.scenario.sched_quantum_ns,
            max_quanta,
            series: Series::new(k.spec.scenario.sample_interval_ns),
            next_sample_ns: 0,
            last_progress: 0.0,
            progress,
            k: &mut k,
            w: &mut w,
        };
        crate::sim::schedule(&mut driver)?;
        let Driver {
            mut series,
            next_sample_ns,
            progress,
            ..
        } = driver;
        series.sample(&k, next_sample_ns);
        check(&k)?;
        progress(1.0);
        Ok(crate::stats::report::build(&k, &w, series))
    }
}

/// The invariant checker, under `--check`.
fn check(k: &Kernel) -> Result<(), RunError> {
    if k.spec.check {
        let v = crate::check::check(k);
        if !v.is_empty() {
            return Err(RunError::Check(v));
        }
    }
    Ok(())
}

/// The scheduler loop's view of a run.
struct Driver<'a, 'p> {
    k: &'a mut Kernel,
    w: &'a mut Workload,
    /// Page touches the user programs will make, for the progress fraction.
    planned: u64,
    quantum_ns: u64,
    /// The run stops with BudgetExceeded after this many quanta.
    max_quanta: u64,
    series: Series,
    next_sample_ns: u64,
    last_progress: f64,
    progress: &'p mut dyn FnMut(f64),
}

impl Scheduled for Driver<'_, '_> {
    type Stop = RunError;

    fn pop(&mut self) -> Option<(u64, u32)> {
        self.k.runq.pop()
    }

    fn is_current(&self, task: u32, clock_ns: u64) -> bool {
        let task = &self.k.tasks[task as usize];
        task.state == TaskState::Runnable && task.clock_ns == clock_ns
    }

    fn finished(&self) -> bool {
        !self.k.tasks.iter().any(|t| t.is_user() && t.is_running())
    }

    fn run_quantum(&mut self, t: u32, clock: u64) -> Result<(), RunError> {
        let k = &mut *self.k;
        while self.next_sample_ns <= clock {
            self.series.sample(k, self.next_sample_ns);
            self.next_sample_ns += self.series.interval_ns();
        }
        let cpu = k.pick_cpu(k.tasks[t as usize].node, t);
        k.current = t;
        k.current_cpu = cpu;
        k.switch_to(cpu, t);
        k.clock_ns = clock.max(k.cpus[cpu as usize].busy.busy_until_ns);
        // runnable since `clock`, the task waited for its CPU until now
        let waited_ns = k.clock_ns - clock;
        k.tasks[t as usize]
            .time
            .add(crate::mm::TimeKind::CpuWait, waited_ns);
        let quantum_end_ns = k.clock_ns + self.quantum_ns;
        k.task_tick(t);
        let cpu_end = match k.run_kernel_thread(t, quantum_end_ns) {
            Some(cpu_end) => cpu_end,
            None => self.w.step(k, t, quantum_end_ns),
        };
        if !self.w.violations.is_empty() {
            return Err(RunError::Check(std::mem::take(&mut self.w.violations)));
        }
        if let Some(e) = self.w.trace_error.take() {
            return Err(RunError::Input(e));
        }
        // Whatever the quantum ended (an OOM kill by a kernel thread's work), the workload's
        // barriers hear of it before the next task runs.
        self.w.reap_exits(k);
        k.cpus[cpu as usize].busy.busy_until_ns = cpu_end;
        let task = &mut k.tasks[t as usize];
        if task.state == TaskState::Runnable {
            task.clock_ns = k.clock_ns;
            k.runq.push(k.clock_ns, t);
        }
        Ok(())
    }

    fn after_quantum(&mut self, steps: u64) -> Result<(), RunError> {
        if steps >= self.max_quanta && !self.finished() {
            return Err(RunError::BudgetExceeded {
                quanta: steps,
                clock_ns: self.k.clock_ns,
            });
        }
        if steps % CHECK_EVERY_STEPS == 0 {
            check(self.k)?;
        }
        if steps % 256 == 0 {
            let done: u64 = self.k.tasks.iter().map(|t| t.touches).sum();
            let f = (done as f64 / self.planned as f64).min(1.0);
            if f - self.last_progress >= 0.01 {
                self.last_progress = f;
                (self.progress)(f);
            }
        }
        Ok(())
    }
}
