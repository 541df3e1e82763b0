//! Spawning a run's tasks into a booted kernel: kswapd on each node, the scenario's files, the
//! page cache the machine starts with, the processes and threads of each task with their
//! programs (built by the generators), then the writeback flusher. Task ids follow that order.

use super::task::{Report, TaskProgram};
use super::Workload;
use crate::mm::Kernel;
use crate::scenario::{InputError, Op, Program, TaskSpec};
use std::rc::Rc;

/// Spawns every task of the run's scenario, a generator's by the generator. Errors only for
/// input the scenario's validation cannot see (a variant's `preload_node` beyond the machine's
/// nodes, see file_read.rs).
pub fn spawn(k: &mut Kernel) -> Result<Workload, InputError> {
    let mut w = Workload::default();
    k.spawn_kswapd_threads();
    w.add_kernel_threads(k);
    for i in 0..k.spec.scenario.files.len() {
        let f = &k.spec.scenario.files[i];
        let file = match f.tmpfs {
            Some(huge) => {
                crate::mm::filemap::File::shmem(f.name.clone(), f.size_bytes, huge, false)
            }
            None => crate::mm::filemap::File::new(
                f.name.clone(),
                f.size_bytes,
                f.read_ahead_kb,
                f.large_folios,
            ),
        };
        k.create_file(file);
    }
    // the page cache the machine holds before the run (mm/resident_cache.rs), after the
    // scenario's files so that their ids do not depend on it
    k.warm_resident_page_cache();
    let specs = k.spec.scenario.tasks.clone();
    for (index, ts) in specs.iter().enumerate() {
        let first_task = k.tasks.len();
        // The scenario's parser checked that the cgroup is defined.
        let memcg = match &ts.cgroup {
            None => 0,
            Some(name) => k
                .memcgs
                .iter()
                .position(|c| &c.name == name)
                .expect("a defined cgroup") as u16,
        };
        match &ts.program {
            Program::Ops(ops) => w.spawn_task_process(k, ts, memcg, ops.clone()),
            Program::Generator(params) => {
                super::generator_of(&**params).spawn(&**params, &mut w, k, ts, memcg)?
            }
            Program::LiveOnly => {
                return Err(InputError {
                    file: k.spec.scenario.file.clone(),
                    key: format!("task[{index}].trace"),
                    message: format!(
                        "missing key; task {:?} names only a command, which is played live \
                         (kernel-run) but cannot be simulated: expected a trace recorded from \
                         it (foliosim trace record -o FILE -- COMMAND)",
                        ts.name
                    ),
                })
            }
        }
        // Every process and thread of the task starts with its policy (as under numactl).
        for t in &mut k.tasks[first_task..] {
            t.mempolicy = ts.mempolicy;
        }
    }
    // After the workload's tasks, so that their ids do not depend on it.
    k.spawn_flusher();
    w.add_kernel_threads(k);
    Ok(w)
}

impl Workload {
    /// Empty programs for the kernel threads spawned since, so that task ids index both sides.
    fn add_kernel_threads(&mut self, k: &Kernel) {
        while self.tasks.len() < k.tasks.len() {
            self.tasks.push(TaskProgram::default());
        }
    }

    /// A new process running `program`.
    pub fn spawn_user(
        &mut self,
        k: &mut Kernel,
        name: String,
        memcg: u16,
        node: u32,
        program: Rc<Vec<Op>>,
        report: Report,
    ) -> u32 {
        let id = k.spawn_process(name, memcg, node);
        self.tasks.push(TaskProgram::new(program, report));
        debug_assert_eq!(self.tasks.len(), k.tasks.len());
        id
    }

    /// The task's one process, named after it, running `ops` (an op list, or a generator that
    /// runs as a single process).
    pub fn spawn_task_process(
        &mut self,
        k: &mut Kernel,
        task: &TaskSpec,
        memcg: u16,
        ops: Vec<Op>,
    ) {
        let name = task.name.clone();
        self.spawn_user(k, name, memcg, task.node, Rc::new(ops), Report::None);
    }

    /// A thread of process `mm` running `program`.
    pub fn spawn_thread(
        &mut self,
        k: &mut Kernel,
        name: String,
        mm: u32,
        node: u32,
        program: Rc<Vec<Op>>,
    ) -> u32 {
        let id = k.spawn_thread(name, mm, node);
        self.tasks.push(TaskProgram::new(program, Report::None));
        debug_assert_eq!(self.tasks.len(), k.tasks.len());
        id
    }
}
