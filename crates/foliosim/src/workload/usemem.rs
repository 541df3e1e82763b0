//! vm-scalability `usemem`: N processes start together, each mmaps SIZE of private anonymous
//! memory, writes every 8-byte word once in order, reports its throughput, munmaps and exits.
//!
//! Throughput is computed as usemem prints it: (SIZE/8 + SIZE) bytes · 10^6 / 1024 / Δt_us KB/s,
//! with Δt from the start signal to the end of the child's write loop (spec swap.md §G).

use super::task::Report;
use super::{params_of, Generator, LiveProgram, TaskMetric, Workload};
use crate::mm::folio::content;
use crate::mm::Kernel;
use crate::scenario::generators::{pages_of, arg_in_range, arg_mapping_size, GeneratorDef, GeneratorParams};
use crate::scenario::walker::{Node, Res};
use crate::scenario::{InputError, MachineSpec, Op, TaskSpec};
use std::rc::Rc;
use toml::Value;

/// The most processes one usemem task may start. Each is a task with its own mm, and the
/// engine's per-quantum work over all tasks grows with their number faster than linearly: on the
/// project's CI machine 16,384 processes of 64 KiB run in 6 s, 65,536 took almost 4 minutes.
pub const MAX_PROCESSES: u64 = 16_384;

/// `generator = "usemem"`: `usemem -n PROCESSES SIZE` (anonymous, private, write once).
pub struct UsememGenerator;

#[derive(Clone, Debug, PartialEq)]
pub struct Usemem {
    pub processes: u32,
    pub size_bytes: u64,
}

impl GeneratorDef for UsememGenerator {
    fn name(&self) -> &'static str {
        "usemem"
    }
    fn params(&self) -> &'static [&'static str] {
        &["processes", "size"]
    }
    fn parse(&self, task: &Node, _machine: &MachineSpec) -> Res<Box<dyn GeneratorParams>> {
        let processes = task.int_opt("processes", 1, MAX_PROCESSES as i64)?.unwrap_or(1) as u32;
        let size_bytes = task.mapping_size("size")?;
        Ok(Box::new(Usemem {
            processes,
            size_bytes,
        }))
    }
}

impl GeneratorParams for Usemem {
    fn generator(&self) -> &'static str {
        "usemem"
    }
    fn apply_arg(&mut self, key: &str, v: &Value) -> Result<bool, String> {
        match key {
            "processes" => self.processes = arg_in_range(v, 1, MAX_PROCESSES)? as u32,
            "size" => self.size_bytes = arg_mapping_size(v)?,
            _ => return Ok(false),
        }
        Ok(true)
    }
    /// SIZE in each process.
    fn mapped_pages(&self) -> u64 {
        pages_of(self.size_bytes).saturating_mul(self.processes as u64)
    }
}

impl Generator for UsememGenerator {
    fn spawn(
        &self,
        params: &dyn GeneratorParams,
        w: &mut Workload,
        k: &mut Kernel,
        task: &TaskSpec,
        memcg: u16,
    ) -> Result<(), InputError> {
        let p: &Usemem = params_of(params);
        let ops = Rc::new(program(&task.name, p.size_bytes));
        for i in 0..p.processes {
            let report = Report::Usemem {
                size_bytes: p.size_bytes,
            };
            w.spawn_user(
                k,
                format!("{}-{i}", task.name),
                memcg,
                task.node,
                ops.clone(),
                report,
            );
        }
        Ok(())
    }

    /// usemem's throughput adds up over its processes.
    fn task_metric(&self) -> TaskMetric {
        TaskMetric {
            field: "throughput_kbps",
            sum: true,
            label: "throughput_kbps",
        }
    }

    fn live_program(
        &self,
        params: &dyn GeneratorParams,
        _task_name: &str,
        _seed: u64,
    ) -> Option<LiveProgram> {
        let p: &Usemem = params_of(params);
        Some(LiveProgram::Bench {
            program: "usemem",
            args: vec![p.processes.to_string(), p.size_bytes.to_string()],
        })
    }
}

/// Index of the write loop in the program; its end time is the end of Δt.
pub const WRITE_OP: usize = 2;
/// Index of the start barrier; its release time is the start of Δt.
pub const START_OP: usize = 0;

pub fn program(task_name: &str, size_bytes: u64) -> Vec<Op> {
    vec![
        Op::Barrier {
            name: format!("{task_name}:start"),
        },
        Op::Mmap {
            region: "buf".into(),
            size_bytes,
        },
        Op::sequential_write(
            "buf",
            0,
            None,
            content::DATA_DEFAULT,
            0, // the touch charges the stores that fill each page
        ),
        Op::Munmap {
            region: "buf".into(),
        },
        Op::Exit,
    ]
}

/// usemem's reported figures: (bytes, usecs, KB/s).
pub fn throughput(size_bytes: u64, start_ns: u64, end_ns: u64) -> (u64, u64, u64) {
    let bytes = size_bytes / 8 + size_bytes;
    let usecs = ((end_ns.saturating_sub(start_ns)) / 1000).max(1);
    (bytes, usecs, bytes * 1_000_000 / 1024 / usecs)
}

#[cfg(test)]
mod tests {
    #[test]
    fn throughput_matches_usemem_arithmetic() {
        // 1 GiB in 2 s: (1 GiB/8 + 1 GiB) * 1e6 / 1024 / 2e6 us
        let (bytes, usecs, kbps) = super::throughput(1 << 30, 0, 2_000_000_000);
        assert_eq!(bytes, 1_207_959_552);
        assert_eq!(usecs, 2_000_000);
        assert_eq!(kbps, 589_824);
    }
}
