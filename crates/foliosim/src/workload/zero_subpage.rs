//! The zero-subpage test of the thp-zero-subpage-split seed (Yu Zhao's test.c): SIZE of
//! MADV_HUGEPAGE memory in which NUM_DIRTY 4 KiB pages of every 2 MiB get one non-zero byte at
//! OFFSET, then MADV_PAGEOUT of everything and munmap. The whole program is one iteration, so its
//! time is the result's `iterations[0].time_ns`.

use super::{params_of, Generator, LiveProgram, Workload};
use crate::mm::folio::content;
use crate::mm::Kernel;
use crate::scenario::generators::{pages_of, arg_in_range, GeneratorDef, GeneratorParams};
use crate::scenario::walker::{Node, Res};
use crate::scenario::{Advice, InputError, IterationReport, MachineSpec, Op, TaskSpec};
use toml::Value;

/// `generator = "zero_subpage"`.
pub struct ZeroSubpageGenerator;

#[derive(Clone, Debug, PartialEq)]
pub struct ZeroSubpage {
    pub size_bytes: u64,
    pub offset: u64,
    pub num_dirty: u64,
}

impl GeneratorDef for ZeroSubpageGenerator {
    fn name(&self) -> &'static str {
        "zero_subpage"
    }
    fn params(&self) -> &'static [&'static str] {
        &["size", "offset", "num_dirty"]
    }
    fn parse(&self, task: &Node, _machine: &MachineSpec) -> Res<Box<dyn GeneratorParams>> {
        Ok(Box::new(ZeroSubpage {
            size_bytes: task.mapping_size("size")?,
            offset: task.int_opt("offset", 0, 4095)?.unwrap_or(0) as u64,
            num_dirty: task.int_opt("num_dirty", 1, 512)?.unwrap_or(1) as u64,
        }))
    }
}

impl GeneratorParams for ZeroSubpage {
    fn generator(&self) -> &'static str {
        "zero_subpage"
    }
    fn apply_arg(&mut self, key: &str, v: &Value) -> Result<bool, String> {
        match key {
            "offset" => self.offset = arg_in_range(v, 0, 4095)?,
            "num_dirty" => self.num_dirty = arg_in_range(v, 1, 512)?,
            _ => return Ok(false),
        }
        Ok(true)
    }
    fn mapped_pages(&self) -> u64 {
        pages_of(self.size_bytes)
    }
}

impl Generator for ZeroSubpageGenerator {
    fn spawn(
        &self,
        params: &dyn GeneratorParams,
        w: &mut Workload,
        k: &mut Kernel,
        task: &TaskSpec,
        memcg: u16,
    ) -> Result<(), InputError> {
        let p: &ZeroSubpage = params_of(params);
        let ops = program(p.size_bytes, p.offset, p.num_dirty);
        w.spawn_task_process(k, task, memcg, ops);
        Ok(())
    }

    fn live_program(
        &self,
        params: &dyn GeneratorParams,
        _task_name: &str,
        _seed: u64,
    ) -> Option<LiveProgram> {
        let p: &ZeroSubpage = params_of(params);
        Some(LiveProgram::Bench {
            program: "zero_subpage",
            args: vec![
                p.size_bytes.to_string(),
                p.offset.to_string(),
                p.num_dirty.to_string(),
            ],
        })
    }
}

const HPAGE_BYTES: u64 = 2 << 20;
const PAGE_BYTES: u64 = 4096;

pub fn program(size_bytes: u64, offset: u64, num_dirty: u64) -> Vec<Op> {
    // Where the byte sits decides how far a scan for zeros has to read.
    let data = if offset < PAGE_BYTES / 2 {
        content::SPARSE_HEAD
    } else {
        content::SPARSE_TAIL
    };
    let dirty = |offset_bytes, len_bytes| {
        Op::sequential_write("mem", offset_bytes, Some(len_bytes), data, 0)
    };
    let mut ops = vec![
        Op::IterationStart,
        Op::Mmap {
            region: "mem".into(),
            size_bytes,
        },
        Op::Madvise {
            region: "mem".into(),
            advice: Advice::Hugepage,
            offset_bytes: 0,
            len_bytes: None,
        },
    ];
    let per_huge = num_dirty.min(HPAGE_BYTES / PAGE_BYTES) * PAGE_BYTES;
    if per_huge == HPAGE_BYTES {
        ops.push(dirty(0, size_bytes));
    } else {
        for chunk in (0..size_bytes).step_by(HPAGE_BYTES as usize) {
            ops.push(dirty(chunk, per_huge.min(size_bytes - chunk)));
        }
    }
    ops.push(Op::Madvise {
        region: "mem".into(),
        advice: Advice::Pageout,
        offset_bytes: 0,
        len_bytes: None,
    });
    ops.push(Op::Munmap {
        region: "mem".into(),
    });
    ops.push(Op::IterationEnd {
        report: IterationReport::Time,
    });
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_and_worst_cases_dirty_the_right_pages() {
        let best = program(4 << 20, 0, 1);
        let touches: Vec<_> = best
            .iter()
            .filter_map(|o| match o {
                Op::Touch {
                    offset_bytes,
                    len_bytes,
                    data,
                    ..
                } => Some((*offset_bytes, *len_bytes, *data)),
                _ => None,
            })
            .collect();
        assert_eq!(
            touches,
            vec![
                (0, Some(4096), content::SPARSE_HEAD),
                (2 << 20, Some(4096), content::SPARSE_HEAD)
            ]
        );
        let worst = program(4 << 20, 4095, 512);
        let touches: Vec<_> = worst
            .iter()
            .filter_map(|o| match o {
                Op::Touch {
                    len_bytes, data, ..
                } => Some((*len_bytes, *data)),
                _ => None,
            })
            .collect();
        assert_eq!(touches, vec![(Some(4 << 20), content::SPARSE_TAIL)]);
    }
}
