//! A kernel-build-like mix: `jobs` workers (make -jN) each run a share of `units` compile jobs in
//! turn. A compile job is a short-lived process: it maps an anonymous heap of a random size,
//! writes it, works on it with skewed reads and random writes, then exits.
//!
//! This is a synthetic stand-in for the seed's kernel build (which ran on tmpfs): the sizes and
//! the per-page work are parameters, not measurements of a real compiler. The page cache and
//! shmem of a real build are not modelled; everything is anonymous memory.

use crate::mm::folio::content;
use crate::scenario::{Access, Op, Pattern};
use crate::sim::rng::Rng;

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
