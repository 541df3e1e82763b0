//! Workloads: the programs tasks run, the interpreter of their operations, and benchmark
//! generators. The workload spawns its tasks into a booted kernel (spawn.rs) and runs their
//! programs (exec.rs) when the scheduler gives them a CPU; barriers between tasks are in
//! barrier.rs.

pub mod barrier;
pub mod exec;
pub mod poisson;
pub mod spawn;
pub mod task;
pub mod warm_files;

use crate::mm::vmstat::{Mthp, VmStat};
use crate::mm::Kernel;
use crate::scenario::generators::{GeneratorDef, GeneratorParams, GeneratorRegistry};
use crate::scenario::{InputError, IterationReport, Op, Program, TaskSpec};
use serde_json::{json, Map, Value};
use task::TaskProgram;

/// Declares each generator's module (workload/<module>.rs) and lists its `Generator` in
/// GENERATORS, so that a generator is one file and one line of `generators!`.
macro_rules! generators {
    ($($module:ident::$generator:ident),* $(,)?) => {
        $(pub mod $module;)*
        /// The built-in generators, in the order messages list them.
        pub(crate) static GENERATORS: &[&dyn Generator] = &[$(&$module::$generator),*];
    };
}

generators! {
    usemem::UsememGenerator,
    thp_swap_allocator::ThpSwapAllocatorGenerator,
    kbuild::KbuildGenerator,
    zero_subpage::ZeroSubpageGenerator,
    xsbench::XsbenchGenerator,
    file_read::FileReadGenerator,
    fork_cow::ForkCowGenerator,
    trace_replay::TraceReplayGenerator,
}

/// A built-in generator: its name, parameters and parser (`GeneratorDef`, what the scenario
/// parser asks for), how it spawns its tasks, the figure the comparison table shows for it, and
/// its program on a live kernel. `params` is always the generator's own type (as its `parse`
/// made it).
pub(crate) trait Generator: GeneratorDef {
    /// Spawns the processes and threads of `task` (in cgroup `memcg`) into the kernel.
    fn spawn(
        &self,
        params: &dyn GeneratorParams,
        w: &mut Workload,
        k: &mut Kernel,
        task: &TaskSpec,
        memcg: u16,
    ) -> Result<(), InputError>;

    /// The per-task figure of the comparison table.
    fn task_metric(&self) -> TaskMetric {
        TaskMetric::EXIT
    }

    /// What kernel-bench runs for the task on a live kernel (None: no program yet). `seed`
    /// feeds generators that draw their programs, as in the simulator.
    fn live_program(
        &self,
        _params: &dyn GeneratorParams,
        _task_name: &str,
        _seed: u64,
    ) -> Option<LiveProgram> {
        None
    }
}

/// The generator's own parameters behind `params`.
pub(crate) fn params_of<T: 'static>(params: &dyn GeneratorParams) -> &T {
    (params as &dyn std::any::Any)
        .downcast_ref()
        .expect("the generator's own parameters")
}

fn generator_of(params: &dyn GeneratorParams) -> &'static dyn Generator {
    let name = params.generator();
    *GENERATORS
        .iter()
        .find(|g| g.name() == name)
        .expect("a registered generator")
}

/// The registry as the scenario parser sees it.
pub(crate) struct Registry;

impl GeneratorRegistry for Registry {
    fn find(&self, name: &str) -> Option<&dyn GeneratorDef> {
        GENERATORS
            .iter()
            .find(|g| g.name() == name)
            .map(|g| *g as &dyn GeneratorDef)
    }
    fn names(&self) -> Vec<&'static str> {
        GENERATORS.iter().map(|g| g.name()).collect()
    }
}

/// The figure a comparison table shows for a task: a per-task field of the result, summed over
/// the task's processes or the largest of them, and its row label after the task's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskMetric {
    pub field: &'static str,
    pub sum: bool,
    pub label: &'static str,
}

impl TaskMetric {
    /// When the task (the last of its processes) exited.
    pub const EXIT: TaskMetric = TaskMetric {
        field: "exit_ns",
        sum: false,
        label: "exit (ms)",
    };
}

/// The comparison table's figure for a task running `program`.
pub fn task_metric(program: &Program) -> TaskMetric {
    match program {
        Program::Ops(_) | Program::LiveOnly => TaskMetric::EXIT,
        Program::Generator(params) => generator_of(&**params).task_metric(),
    }
}

/// A task's program on a live kernel.
#[derive(Clone, Debug, PartialEq)]
pub enum LiveProgram {
    /// A kernel-bench program, run as `PROGRAM TASK-NAME ARGS...`.
    Bench {
        program: &'static str,
        args: Vec<String>,
    },
    /// Op lists for kernel-bench's ops player, one process each, with their names.
    Ops(Vec<(String, Vec<Op>)>),
}

/// What kernel-bench runs for task `task_name` running `program` (None: its generator has no
/// kernel-bench program).
pub fn live_program(program: &Program, task_name: &str, seed: u64) -> Option<LiveProgram> {
    match program {
        Program::Ops(ops) => Some(LiveProgram::Ops(vec![(task_name.to_string(), ops.clone())])),
        Program::Generator(params) => {
            generator_of(&**params).live_program(&**params, task_name, seed)
        }
        // a task's command is played instead (scenario/command.rs)
        Program::LiveOnly => None,
    }
}

/// The workload of one run: per task id (kernel threads included, with empty programs) the
/// program and its progress, and what the generators keep for the whole run.
#[derive(Default)]
pub struct Workload {
    pub tasks: Vec<TaskProgram>,
    /// Figures of generator iterations, in the order they ended.
    pub iterations: Vec<Map<String, Value>>,
    /// The XSBench generator's parameters, when a task runs it.
    pub xsbench: Option<xsbench::Xsbench>,
    /// What the invariant checker found before a task's exit (under `--check`).
    pub violations: Vec<String>,
    /// The traces tasks replay (one at a time is out while its thread runs).
    pub replays: Vec<Option<Box<trace_replay::Replay>>>,
    /// A trace that turned out malformed during the run: the run stops with it.
    pub trace_error: Option<InputError>,
}

/// The figures of one iteration, from the counters at its start and end.
pub fn iteration_figures(
    report: IterationReport,
    start_ns: u64,
    end_ns: u64,
    before: &VmStat,
    after: &VmStat,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("time_ns".into(), json!(end_ns - start_ns));
    if let IterationReport::MthpSwpout { order } = report {
        let inc = |item: Mthp| {
            after.mthp[order as usize][item as usize] - before.mthp[order as usize][item as usize]
        };
        let (swpout, fallback) = (inc(Mthp::Swpout), inc(Mthp::SwpoutFallback));
        m.insert("swpout_inc".into(), json!(swpout));
        m.insert("fallback_inc".into(), json!(fallback));
        // The tool prints nan for 0/0; JSON has no nan, so that case is null.
        let pct = (swpout + fallback > 0)
            .then(|| (fallback as f64 * 10_000.0 / (swpout + fallback) as f64).round() / 100.0);
        m.insert("fallback_pct".into(), json!(pct));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_lists_each_generator_once_in_the_documented_order() {
        let names = Registry.names();
        assert_eq!(
            names,
            [
                "usemem",
                "thp_swap_allocator",
                "kbuild",
                "zero_subpage",
                "xsbench",
                "file_read",
                "fork_cow",
                "trace_replay"
            ]
        );
        for name in names {
            assert_eq!(Registry.find(name).map(|g| g.name()), Some(name));
        }
        assert!(Registry.find("stream").is_none());
    }
}
