//! Spawning a run's tasks into a booted kernel: kswapd on each node, the scenario's files, the
//! processes and threads of each task with their programs (built by the generators), then the
//! writeback flusher. Task ids follow that order.

use super::task::{Region, Report, TaskProgram};
use super::Workload;
use crate::mm::Kernel;
use crate::scenario::{InputError, Op, Program};
use std::rc::Rc;

/// Spawns every task of the run's scenario. Errors only for input the scenario's validation
/// cannot see (a variant's `preload_node` beyond the machine's nodes).
pub fn spawn(k: &mut Kernel) -> Result<Workload, InputError> {
    let mut w = Workload::default();
    k.spawn_kswapd_threads();
    w.add_kernel_threads(k);
    for i in 0..k.spec.scenario.files.len() {
        let f = &k.spec.scenario.files[i];
        let file = crate::mm::filemap::File::new(
            f.name.clone(),
            f.size_bytes,
            f.read_ahead_kb,
            f.large_folios,
        );
        k.create_file(file);
    }
    let specs = k.spec.scenario.tasks.clone();
    for ts in &specs {
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
            Program::Ops(ops) => {
                w.spawn_user(
                    k,
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
                w.spawn_user(
                    k,
                    ts.name.clone(),
                    memcg,
                    ts.node,
                    Rc::new(ops),
                    Report::None,
                );
            }
            Program::Kbuild {
                jobs,
                units,
                size_min_bytes,
                size_max_bytes,
                passes,
                work_ns,
            } => {
                let kb = super::kbuild::Kbuild {
                    jobs: *jobs,
                    units: *units,
                    size_min_bytes: *size_min_bytes,
                    size_max_bytes: *size_max_bytes,
                    passes: *passes,
                    work_ns: *work_ns,
                };
                for (i, ops) in super::kbuild::programs(&kb, &mut k.rng)
                    .into_iter()
                    .enumerate()
                {
                    w.spawn_user(
                        k,
                        format!("{}-{i}", ts.name),
                        memcg,
                        ts.node,
                        Rc::new(ops),
                        Report::None,
                    );
                }
            }
            Program::FileRead(fr) => {
                // The only check of a variant's preload_node against the machine (parse checks
                // the scenario's own).
                if fr.preload_node.is_some_and(|n| n as usize >= k.nodes.len()) {
                    return Err(InputError {
                        file: k.spec.scenario.file.clone(),
                        key: format!("task.{}.preload_node", ts.name),
                        message: format!("expected a node number in 0..={}", k.nodes.len() - 1),
                    });
                }
                let file = k.create_file(crate::mm::filemap::File::new(
                    ts.name.clone(),
                    fr.size_bytes,
                    fr.read_ahead_kb,
                    fr.large_folios,
                ));
                let ops = fr.program(file, ts.mempolicy);
                w.spawn_user(
                    k,
                    ts.name.clone(),
                    memcg,
                    ts.node,
                    Rc::new(ops),
                    Report::None,
                );
            }
            Program::ThpSwapAllocator {
                aligned,
                small_folios,
                iterations,
            } => {
                let ops = super::thp_swap_allocator::program(*aligned, *small_folios, *iterations);
                w.spawn_user(
                    k,
                    ts.name.clone(),
                    memcg,
                    ts.node,
                    Rc::new(ops),
                    Report::None,
                );
            }
            Program::Xsbench(x) => {
                w.xsbench = Some(*x);
                let mut mm = None;
                let mut regions = Vec::new();
                for i in 0..x.threads {
                    let ops = Rc::new(x.program(i, &k.hw));
                    let name = format!("{}-{i}", ts.name);
                    let id = match mm {
                        None => {
                            let id = w.spawn_user(k, name, memcg, ts.node, ops, Report::None);
                            let m = k.tasks[id as usize].mm.expect("user mm");
                            for (region, bytes) in x.regions() {
                                let nr_pages = bytes.div_ceil(crate::mm::PAGE_SIZE) as u32;
                                let start = k.mmap_anon(m, nr_pages);
                                if x.poisson_index {
                                    super::poisson::model_reads(k, m, start, nr_pages);
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
                        Some(m) => w.spawn_thread(k, name, m, ts.node, ops),
                    };
                    w.tasks[id as usize].regions = regions.clone();
                }
            }
            Program::Usemem {
                processes,
                size_bytes,
            } => {
                let ops = Rc::new(super::usemem::program(&ts.name, *size_bytes, &k.hw));
                for i in 0..*processes {
                    let report = Report::Usemem {
                        size_bytes: *size_bytes,
                    };
                    w.spawn_user(
                        k,
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
