//! A kernel-build-like mix: `jobs` workers (make -jN) each run a share of `units` compile jobs in
//! turn. A compile job is a short-lived process: it maps an anonymous heap of a random size,
//! writes it, works on it with skewed reads and random writes, then exits.
//!
//! This is a synthetic stand-in for the seed's kernel build (which ran on tmpfs): the sizes and
//! the per-page work are parameters, not measurements of a real compiler. The page cache and
//! shmem of a real build are not modelled; everything is anonymous memory.

use super::task::Report;
use super::{params_of, Generator, LiveProgram, TaskMetric, Workload};
use crate::mm::folio::content;
use crate::mm::Kernel;
use crate::scenario::generators::{pages_of, GeneratorDef, GeneratorParams};
use crate::scenario::units::parse_time;
use crate::scenario::walker::{Node, Res};
use crate::scenario::{Access, InputError, MachineSpec, Op, Pattern, TaskSpec};
use crate::sim::rng::Rng;
use std::rc::Rc;
use toml::Value;

/// `generator = "kbuild"`.
pub struct KbuildGenerator;

#[derive(Clone, Debug, PartialEq)]
pub struct Kbuild {
    pub jobs: u32,
    pub units: u32,
    pub size_min_bytes: u64,
    pub size_max_bytes: u64,
    /// Random touches per page of the heap after it is written.
    pub passes: u32,
    /// The compiler's own work per touch.
    pub work_ns: u64,
}

impl GeneratorDef for KbuildGenerator {
    fn name(&self) -> &'static str {
        "kbuild"
    }
    fn params(&self) -> &'static [&'static str] {
        &["jobs", "units", "size_min", "size_max", "passes", "work"]
    }
    fn parse(&self, task: &Node, _machine: &MachineSpec) -> Res<Box<dyn GeneratorParams>> {
        let size_min_bytes = task.mapping_size("size_min")?;
        let size_max_bytes = task.mapping_size("size_max")?;
        if size_max_bytes < size_min_bytes {
            return Err(task.err("size_max", "expected a size at least size_min"));
        }
        Ok(Box::new(Kbuild {
            jobs: task.int_opt("jobs", 1, 4096)?.unwrap_or(32) as u32,
            units: task.int_opt("units", 1, 1_000_000)?.unwrap_or(1000) as u32,
            size_min_bytes,
            size_max_bytes,
            passes: task.int_opt("passes", 0, 1000)?.unwrap_or(4) as u32,
            work_ns: match task.str_opt("work")? {
                Some(t) => parse_time(t).map_err(|m| task.err("work", m))?,
                None => 0,
            },
        }))
    }
}

impl GeneratorParams for Kbuild {
    fn generator(&self) -> &'static str {
        "kbuild"
    }
    /// No parameter can be varied.
    fn apply_arg(&mut self, _key: &str, _v: &Value) -> Result<bool, String> {
        Ok(false)
    }
    /// Each job slot maps one heap at a time (a unit's munmap frees it): at most size_max in
    /// each of min(jobs, units) processes.
    fn mapped_pages(&self) -> u64 {
        pages_of(self.size_max_bytes).saturating_mul(self.jobs.min(self.units) as u64)
    }
}

impl Generator for KbuildGenerator {
    /// One process per compile job, drawn from the run's random stream.
    fn spawn(
        &self,
        params: &dyn GeneratorParams,
        w: &mut Workload,
        k: &mut Kernel,
        task: &TaskSpec,
        memcg: u16,
    ) -> Result<(), InputError> {
        let kb: &Kbuild = params_of(params);
        for (i, ops) in programs(kb, &mut k.rng).into_iter().enumerate() {
            w.spawn_user(
                k,
                format!("{}-{i}", task.name),
                memcg,
                task.node,
                Rc::new(ops),
                Report::None,
            );
        }
        Ok(())
    }

    /// The build's CPU time in the kernel, over all its jobs.
    fn task_metric(&self) -> TaskMetric {
        TaskMetric {
            field: "sys_ns",
            sum: true,
            label: "sys_ns",
        }
    }

    /// The same jobs (the same seed) for the ops player.
    fn live_program(
        &self,
        params: &dyn GeneratorParams,
        task_name: &str,
        seed: u64,
    ) -> Option<LiveProgram> {
        let kb: &Kbuild = params_of(params);
        let mut rng = Rng::new(seed);
        let jobs = programs(kb, &mut rng)
            .into_iter()
            .enumerate()
            .map(|(i, ops)| (format!("{task_name}-{i}"), ops))
            .collect();
        Some(LiveProgram::Ops(jobs))
    }
}

/// The program of one compile job.
fn unit(rng: &mut Rng, k: &Kbuild) -> Vec<Op> {
    let span = k.size_max_bytes.saturating_sub(k.size_min_bytes);
    let size = (k.size_min_bytes + rng.below(span + 1)).next_multiple_of(4096);
    let pages = size / 4096;
    let touch = |access, pattern, count| Op::Touch {
        region: "heap".into(),
        access,
        pattern,
        offset_bytes: 0,
        len_bytes: None,
        count,
        data: content::DATA_DEFAULT,
        work_ns: k.work_ns,
    };
    vec![
        Op::Mmap {
            region: "heap".into(),
            size_bytes: size,
        },
        touch(Access::Write, Pattern::Sequential, None),
        touch(
            Access::Read,
            Pattern::Zipf { theta_milli: 900 },
            Some(pages * k.passes as u64 / 2),
        ),
        touch(
            Access::Write,
            Pattern::Random,
            Some(pages * k.passes as u64 / 2),
        ),
        Op::Munmap {
            region: "heap".into(),
        },
    ]
}

/// One program per worker (a make job slot): its compile jobs one after another. A job's munmap
/// frees what its exit would.
pub fn programs(k: &Kbuild, rng: &mut Rng) -> Vec<Vec<Op>> {
    (0..k.jobs)
        .map(|w| {
            let mine = (w..k.units).step_by(k.jobs.max(1) as usize).count();
            (0..mine).flat_map(|_| unit(rng, k)).collect()
        })
        .collect()
}
