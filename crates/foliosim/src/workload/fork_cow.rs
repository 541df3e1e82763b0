//! Copy-on-write after fork: a parent writes SIZE of private anonymous memory, then forks
//! CHILDREN children that each write WRITES random pages of it (every first write to a shared
//! page copies it, do_wp_page), while the parent rewrites the same number of random pages.
//! Under a memcg limit this is the fork + COW + reclaim mix of real pre-forking servers.

use super::{params_of, Generator, LiveProgram, Workload};
use crate::mm::folio::content;
use crate::mm::Kernel;
use crate::scenario::generators::{pages_of, arg_in_range, arg_mapping_size, GeneratorDef, GeneratorParams};
use crate::scenario::walker::{Node, Res};
use crate::scenario::{Access, InputError, MachineSpec, Op, Pattern, TaskSpec};
use toml::Value;

/// `generator = "fork_cow"`.
pub struct ForkCowGenerator;

#[derive(Clone, Debug, PartialEq)]
pub struct ForkCow {
    pub size_bytes: u64,
    pub children: u64,
    /// Random page writes by each child (and by the parent after the forks).
    pub writes: u64,
}

impl GeneratorDef for ForkCowGenerator {
    fn name(&self) -> &'static str {
        "fork_cow"
    }
    fn params(&self) -> &'static [&'static str] {
        &["size", "children", "writes"]
    }
    fn parse(&self, task: &Node, _machine: &MachineSpec) -> Res<Box<dyn GeneratorParams>> {
        Ok(Box::new(ForkCow {
            size_bytes: task.mapping_size("size")?,
            children: task.int_opt("children", 1, 64)?.unwrap_or(2) as u64,
            writes: task.int_opt("writes", 1, 1 << 32)?.unwrap_or(10_000) as u64,
        }))
    }
}

impl GeneratorParams for ForkCow {
    fn generator(&self) -> &'static str {
        "fork_cow"
    }
    fn apply_arg(&mut self, key: &str, v: &Value) -> Result<bool, String> {
        match key {
            "size" => self.size_bytes = arg_mapping_size(v)?,
            "children" => self.children = arg_in_range(v, 1, 64)?,
            "writes" => self.writes = arg_in_range(v, 1, 1 << 32)?,
            _ => return Ok(false),
        }
        Ok(true)
    }
    /// The buffer in the parent and a copy of its page table in each child.
    fn mapped_pages(&self) -> u64 {
        pages_of(self.size_bytes).saturating_mul(self.children.saturating_add(1))
    }
}

impl Generator for ForkCowGenerator {
    fn spawn(
        &self,
        params: &dyn GeneratorParams,
        w: &mut Workload,
        k: &mut Kernel,
        task: &TaskSpec,
        memcg: u16,
    ) -> Result<(), InputError> {
        w.spawn_task_process(k, task, memcg, program(params_of(params)));
        Ok(())
    }

    /// The same program for kernel-bench's ops player, which forks as the simulator does.
    fn live_program(
        &self,
        params: &dyn GeneratorParams,
        task_name: &str,
        _seed: u64,
    ) -> Option<LiveProgram> {
        let ops = program(params_of(params));
        Some(LiveProgram::Ops(vec![(task_name.to_string(), ops)]))
    }
}

fn random_writes(count: u64) -> Op {
    Op::Touch {
        region: "buf".into(),
        access: Access::Write,
        pattern: Pattern::Random,
        offset_bytes: 0,
        len_bytes: None,
        count: Some(count),
        data: content::DATA_DEFAULT,
        work_ns: 0,
    }
}

pub fn program(p: &ForkCow) -> Vec<Op> {
    let mut ops = vec![
        Op::Mmap {
            region: "buf".into(),
            size_bytes: p.size_bytes,
        },
        Op::sequential_write("buf", 0, None, content::DATA_DEFAULT, 0),
    ];
    for i in 0..p.children {
        ops.push(Op::Fork {
            name: format!("child-{i}"),
            child: vec![random_writes(p.writes)],
        });
    }
    ops.push(random_writes(p.writes));
    ops.push(Op::Exit);
    ops
}
