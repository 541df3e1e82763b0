//! `file_read`: linear read() calls of a whole file into a user buffer, `cycles` times, each
//! cycle timed (the page-cache promotion seed's microbenchmark, spec tiering.md §D.4).
//!
//! The program maps the buffer and writes it once (so it is resident before the timed part, as
//! the seed leaves the buffer's setup out of its times), optionally reads the file
//! `preload_reads` times with its page cache bound to `preload_node` (the seed places the CXL
//! case with mbind before the runs; here a task policy of MPOL_BIND around these reads, as
//! `numactl --membind` gives; they are not timed and give the folios their LRU history), then
//! runs the cycles. Each read() call asks for `buffer` bytes at the
//! current position; a cycle is `size / buffer` calls. Without a preload the file starts on disk
//! and the first cycle reads it through readahead.

use crate::mm::filemap::ReadRequest;
use crate::mm::mempolicy::{Mempolicy, MpolMode};
use crate::scenario::{IterationReport, Op};

#[derive(Clone, Debug, PartialEq)]
pub struct FileRead {
    /// The file's size.
    pub size_bytes: u64,
    /// Bytes asked for by each read() call (the buffer's size).
    pub buffer_bytes: u64,
    pub cycles: u32,
    /// Read the file first with its page cache bound to this node (untimed).
    pub preload_node: Option<u32>,
    /// How many untimed reads that is (the file's access history before the cycles).
    pub preload_reads: u32,
    /// The backing device's read_ahead_kb (the bdi's ra_pages; io_pages is taken equal).
    pub read_ahead_kb: u64,
    /// The filesystem supports large folios in the page cache (xfs, ext4 on v6.11+, ...).
    pub large_folios: bool,
}

pub const DEFAULT_BUFFER_BYTES: u64 = 1 << 20;
pub const DEFAULT_READ_AHEAD_KB: u64 = 128;

impl Default for FileRead {
    fn default() -> Self {
        FileRead {
            size_bytes: 1 << 30,
            buffer_bytes: DEFAULT_BUFFER_BYTES,
            cycles: 1,
            preload_node: None,
            preload_reads: 1,
            read_ahead_kb: DEFAULT_READ_AHEAD_KB,
            large_folios: true,
        }
    }
}

pub const REGION_BUFFER: &str = "buffer";

impl FileRead {
    /// The program of the reading task, for the file with id `file`; `mempolicy` is the task's
    /// own policy, restored after the preload.
    pub fn program(&self, file: u32, mempolicy: Option<Mempolicy>) -> Vec<Op> {
        let mut ops = vec![
            Op::Mmap {
                region: REGION_BUFFER.into(),
                size_bytes: self.buffer_bytes,
            },
            Op::sequential_write(
                REGION_BUFFER,
                0,
                None,
                crate::mm::folio::content::DATA_DEFAULT,
                0,
            ),
        ];
        let read = Op::FileRead(ReadRequest {
            file,
            offset_bytes: 0,
            len_bytes: self.size_bytes,
            buffer_bytes: self.buffer_bytes,
        });
        if let Some(node) = self.preload_node {
            // numactl --membind for the preload, then back to the task's policy.
            ops.push(Op::SetMempolicy {
                policy: Some(Mempolicy {
                    mode: MpolMode::Bind,
                    nodes: 1 << node,
                    flags: 0,
                }),
            });
            for _ in 0..self.preload_reads {
                ops.push(read.clone());
            }
            ops.push(Op::SetMempolicy { policy: mempolicy });
        }
        for _ in 0..self.cycles {
            ops.push(Op::IterationStart);
            ops.push(read.clone());
            ops.push(Op::IterationEnd {
                report: IterationReport::Time,
            });
        }
        ops
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preload_runs_under_a_bind_policy_and_restores_the_tasks_own() {
        let fr = FileRead {
            preload_node: Some(1),
            preload_reads: 2,
            ..Default::default()
        };
        let own = Mempolicy::parse("interleave:0-1", 2).unwrap();
        let ops = fr.program(0, own);
        let bind = Mempolicy::parse("bind:1", 2).unwrap();
        assert_eq!(ops[2], Op::SetMempolicy { policy: bind });
        assert!(matches!(ops[3], Op::FileRead(_)) && matches!(ops[4], Op::FileRead(_)));
        assert_eq!(ops[5], Op::SetMempolicy { policy: own });
        // Without a preload the program sets no policy at all.
        let plain = FileRead::default().program(0, None);
        assert!(!plain.iter().any(|op| matches!(op, Op::SetMempolicy { .. })));
    }
}
