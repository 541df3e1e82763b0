//! tools/mm/thp_swap_allocator_test, played operation by operation (spec swap.md §F).
//!
//! A 60 MiB MADV_HUGEPAGE area (64 KiB mTHPs) and, with `-s`, a 4 MiB MADV_NOHUGEPAGE area of
//! small folios are filled with 0x11 and paged out; then each of 100 iterations swaps in 16 MiB of
//! random 4 KiB pages (or, with `-a`, random aligned 64 KiB chunks), frees and rewrites 256 random
//! 64 KiB blocks, swaps in 1 MiB of the small area with `-s`, and pages everything out again. The
//! random picks come from glibc's rand() with its default seed, in the tool's call order, so they
//! are the real tool's picks.

use super::{params_of, Generator, LiveProgram, Workload};
use crate::mm::folio::content;
use crate::mm::Kernel;
use crate::scenario::generators::{pages_of, arg_bool, arg_in_range, GeneratorDef, GeneratorParams};
use crate::scenario::walker::{Node, Res};
use crate::scenario::{Advice, InputError, IterationReport, MachineSpec, Op, TaskSpec};
use crate::sim::rng::GlibcRand;
use toml::Value;

/// The most iterations a task may run: the program is unrolled (about 4,600 ops, some 140 KB of
/// host memory, per iteration), so 10,000 take about 1.4 GB; 100,000 took 14 GB.
pub const MAX_ITERATIONS: u64 = 10_000;

/// `generator = "thp_swap_allocator"`: the tool with its `-a` (aligned swap-in) and `-s` (small
/// folios) flags, for `iterations` rounds.
pub struct ThpSwapAllocatorGenerator;

#[derive(Clone, Debug, PartialEq)]
pub struct ThpSwapAllocator {
    pub aligned: bool,
    pub small_folios: bool,
    pub iterations: u32,
}

impl GeneratorDef for ThpSwapAllocatorGenerator {
    fn name(&self) -> &'static str {
        "thp_swap_allocator"
    }
    fn params(&self) -> &'static [&'static str] {
        &["aligned", "small_folios", "iterations"]
    }
    fn parse(&self, task: &Node, _machine: &MachineSpec) -> Res<Box<dyn GeneratorParams>> {
        Ok(Box::new(ThpSwapAllocator {
            aligned: task.bool_opt("aligned")?.unwrap_or(false),
            small_folios: task.bool_opt("small_folios")?.unwrap_or(false),
            iterations: task.int_opt("iterations", 1, MAX_ITERATIONS as i64)?.unwrap_or(100) as u32,
        }))
    }
}

impl GeneratorParams for ThpSwapAllocator {
    fn generator(&self) -> &'static str {
        "thp_swap_allocator"
    }
    fn apply_arg(&mut self, key: &str, v: &Value) -> Result<bool, String> {
        match key {
            "aligned" => self.aligned = arg_bool(v)?,
            "small_folios" => self.small_folios = arg_bool(v)?,
            "iterations" => self.iterations = arg_in_range(v, 1, MAX_ITERATIONS)? as u32,
            _ => return Ok(false),
        }
        Ok(true)
    }
    /// mem1, and mem2 with small_folios, for every iteration.
    fn mapped_pages(&self) -> u64 {
        let small = if self.small_folios {
            MEMSIZE_SMALLFOLIO
        } else {
            0
        };
        pages_of(MEMSIZE_MTHP + small)
    }
}

impl Generator for ThpSwapAllocatorGenerator {
    fn spawn(
        &self,
        params: &dyn GeneratorParams,
        w: &mut Workload,
        k: &mut Kernel,
        task: &TaskSpec,
        memcg: u16,
    ) -> Result<(), InputError> {
        let p: &ThpSwapAllocator = params_of(params);
        let ops = program(p.aligned, p.small_folios, p.iterations);
        w.spawn_task_process(k, task, memcg, ops);
        Ok(())
    }

    fn live_program(
        &self,
        params: &dyn GeneratorParams,
        _task_name: &str,
        _seed: u64,
    ) -> Option<LiveProgram> {
        let p: &ThpSwapAllocator = params_of(params);
        let mut args = Vec::new();
        if p.aligned {
            args.push("-a".into());
        }
        if p.small_folios {
            args.push("-s".into());
        }
        args.extend(["-n".into(), p.iterations.to_string()]);
        Some(LiveProgram::Bench {
            program: "thp_swap_allocator",
            args,
        })
    }
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const MEMSIZE_MTHP: u64 = 60 * MIB;
const MEMSIZE_SMALLFOLIO: u64 = 4 * MIB;
const ALIGNMENT_MTHP: u64 = 64 * KIB;
const ALIGNMENT_SMALLFOLIO: u64 = 4 * KIB;
const TOTAL_DONTNEED_MTHP: u64 = 16 * MIB;
const TOTAL_DONTNEED_SMALLFOLIO: u64 = MIB;
/// The mTHP size whose stats the tool reads (64 KiB = order 4).
pub const REPORT_ORDER: u32 = 4;

fn write(region: &str, offset_bytes: u64, len_bytes: u64) -> Op {
    // memset(0x11): every word the same non-zero value.
    Op::sequential_write(
        region,
        offset_bytes,
        Some(len_bytes),
        content::SAME_FILLED,
        0,
    )
}

fn madvise(region: &str, advice: Advice, offset_bytes: u64, len_bytes: Option<u64>) -> Op {
    Op::Madvise {
        region: region.into(),
        advice,
        offset_bytes,
        len_bytes,
    }
}

/// random_swapin: `total / align` writes of `align` bytes at random aligned offsets.
fn random_swapin(
    ops: &mut Vec<Op>,
    rand: &mut GlibcRand,
    region: &str,
    size: u64,
    align: u64,
    total: u64,
) {
    for _ in 0..total / align {
        let off = (rand.next() as u64 % (size / align)) * align;
        ops.push(write(region, off, align));
    }
}

pub fn program(aligned: bool, small_folios: bool, iterations: u32) -> Vec<Op> {
    let mut rand = GlibcRand::default_seeded();
    let mut ops = vec![
        Op::Mmap {
            region: "mem1".into(),
            size_bytes: MEMSIZE_MTHP,
        },
        madvise("mem1", Advice::Hugepage, 0, None),
    ];
    if small_folios {
        ops.push(Op::Mmap {
            region: "mem2".into(),
            size_bytes: MEMSIZE_SMALLFOLIO,
        });
        ops.push(madvise("mem2", Advice::NoHugepage, 0, None));
    }
    ops.push(write("mem1", 0, MEMSIZE_MTHP));
    ops.push(madvise("mem1", Advice::Pageout, 0, None));
    if small_folios {
        ops.push(write("mem2", 0, MEMSIZE_SMALLFOLIO));
        ops.push(madvise("mem2", Advice::Pageout, 0, None));
    }
    let swapin_align = if aligned {
        ALIGNMENT_MTHP
    } else {
        ALIGNMENT_SMALLFOLIO
    };
    for _ in 0..iterations {
        ops.push(Op::IterationStart);
        random_swapin(
            &mut ops,
            &mut rand,
            "mem1",
            MEMSIZE_MTHP,
            swapin_align,
            TOTAL_DONTNEED_MTHP,
        );
        for _ in 0..TOTAL_DONTNEED_MTHP / ALIGNMENT_MTHP {
            let off = (rand.next() as u64 % (MEMSIZE_MTHP / ALIGNMENT_MTHP)) * ALIGNMENT_MTHP;
            ops.push(madvise("mem1", Advice::DontNeed, off, Some(ALIGNMENT_MTHP)));
            ops.push(write("mem1", off, ALIGNMENT_MTHP));
        }
        if small_folios {
            random_swapin(
                &mut ops,
                &mut rand,
                "mem2",
                MEMSIZE_SMALLFOLIO,
                ALIGNMENT_SMALLFOLIO,
                TOTAL_DONTNEED_SMALLFOLIO,
            );
        }
        ops.push(madvise("mem1", Advice::Pageout, 0, None));
        if small_folios {
            ops.push(madvise("mem2", Advice::Pageout, 0, None));
        }
        ops.push(Op::IterationEnd {
            report: IterationReport::MthpSwpout {
                order: REPORT_ORDER,
            },
        });
    }
    ops.push(Op::Munmap {
        region: "mem1".into(),
    });
    if small_folios {
        ops.push(Op::Munmap {
            region: "mem2".into(),
        });
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_picks_follow_glibc_default_rand() {
        let ops = program(false, false, 1);
        // mmap, madvise, memset, pageout, iteration start, then the first swap-in write.
        let Op::Touch {
            offset_bytes,
            len_bytes,
            ..
        } = &ops[5]
        else {
            panic!("expected a touch")
        };
        // glibc's first rand() is 1804289383; 60 MiB / 4 KiB = 15360 pages.
        assert_eq!(*offset_bytes, (1_804_289_383u64 % 15_360) * 4096);
        assert_eq!(*len_bytes, Some(4096));
        let touches = ops.iter().filter(|o| matches!(o, Op::Touch { .. })).count();
        assert_eq!(touches, 1 + 4096 + 256);
    }

    #[test]
    fn aligned_and_small_variants_shape_the_program() {
        let ops = program(true, true, 2);
        let swapins = ops
            .iter()
            .filter(|o| matches!(o, Op::Touch { len_bytes: Some(l), .. } if *l == ALIGNMENT_MTHP))
            .count();
        // 256 aligned swap-ins and 256 rewrites per iteration.
        assert_eq!(swapins, 2 * (256 + 256));
        let ends = ops
            .iter()
            .filter(|o| matches!(o, Op::IterationEnd { .. }))
            .count();
        assert_eq!(ends, 2);
        assert!(ops.iter().any(|o| matches!(o, Op::Madvise { region, advice: Advice::NoHugepage, .. } if region == "mem2")));
    }
}
