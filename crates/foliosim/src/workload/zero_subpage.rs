//! The zero-subpage test of the thp-zero-subpage-split seed (Yu Zhao's test.c): SIZE of
//! MADV_HUGEPAGE memory in which NUM_DIRTY 4 KiB pages of every 2 MiB get one non-zero byte at
//! OFFSET, then MADV_PAGEOUT of everything and munmap. The whole program is one iteration, so its
//! time is the result's `iterations[0].time_ns`.

use crate::mm::folio::content;
use crate::scenario::{Advice, IterationReport, Op};

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
