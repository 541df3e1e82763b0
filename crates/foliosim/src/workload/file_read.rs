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

use super::{params_of, Generator, Workload};
use crate::mm::filemap::ReadRequest;
use crate::mm::mempolicy::{Mempolicy, MpolMode};
use crate::mm::Kernel;
use crate::scenario::generators::{pages_of, arg_in_range, GeneratorDef, GeneratorParams};
use crate::scenario::walker::{Node, Res};
use crate::scenario::{InputError, IterationReport, MachineSpec, Op, TaskSpec};
use toml::Value;

/// `generator = "file_read"`.
pub struct FileReadGenerator;

impl GeneratorDef for FileReadGenerator {
    fn name(&self) -> &'static str {
        "file_read"
    }
    fn params(&self) -> &'static [&'static str] {
        &[
            "size",
            "buffer",
            "cycles",
            "preload_node",
            "preload_reads",
            "read_ahead_kb",
            "large_folios",
        ]
    }
    fn parse(&self, task: &Node, machine: &MachineSpec) -> Res<Box<dyn GeneratorParams>> {
        let d = FileRead::default();
        let size_bytes = task.file_size()?;
        let buffer_bytes = task.positive_size_opt("buffer")?.unwrap_or(d.buffer_bytes);
        let cycles = task.int_opt("cycles", 1, 100_000)?.unwrap_or(1) as u32;
        let preload_node = task.int_opt("preload_node", 0, 1023)?.map(|n| n as u32);
        let preload_reads = task.int_opt("preload_reads", 1, 1000)?.unwrap_or(1) as u32;
        let (read_ahead_kb, large_folios) = task.file_device()?;
        if let Some(n) = preload_node {
            if n as usize >= machine.nodes.len() {
                return Err(task.err(
                    "preload_node",
                    format!(
                        "expected a node number in 0..={}, found {n}",
                        machine.nodes.len() - 1
                    ),
                ));
            }
        }
        Ok(Box::new(FileRead {
            size_bytes,
            buffer_bytes,
            cycles,
            preload_node,
            preload_reads,
            read_ahead_kb,
            large_folios,
        }))
    }
}

impl GeneratorParams for FileRead {
    fn generator(&self) -> &'static str {
        "file_read"
    }
    fn apply_arg(&mut self, key: &str, v: &Value) -> Result<bool, String> {
        match key {
            "preload_node" => {
                self.preload_node = Some(
                    v.as_integer()
                        .filter(|i| (0..1024).contains(i))
                        .ok_or_else(|| "expected a node number".to_string())?
                        as u32,
                )
            }
            "cycles" => self.cycles = arg_in_range(v, 1, 100_000)? as u32,
            "preload_reads" => self.preload_reads = arg_in_range(v, 1, 1000)? as u32,
            _ => return Ok(false),
        }
        Ok(true)
    }
    /// The read() buffer.
    fn mapped_pages(&self) -> u64 {
        pages_of(self.buffer_bytes)
    }
    /// The file it reads, made for it.
    fn file_pages(&self) -> u64 {
        pages_of(self.size_bytes)
    }
}

impl Generator for FileReadGenerator {
    /// The task's file (named after it), then the reader.
    fn spawn(
        &self,
        params: &dyn GeneratorParams,
        w: &mut Workload,
        k: &mut Kernel,
        task: &TaskSpec,
        memcg: u16,
    ) -> Result<(), InputError> {
        let fr: &FileRead = params_of(params);
        // The only check of a variant's preload_node against the machine (the parser checks the
        // scenario's own).
        if fr.preload_node.is_some_and(|n| n as usize >= k.nodes.len()) {
            return Err(InputError {
                file: k.spec.scenario.file.clone(),
                key: format!("task.{}.preload_node", task.name),
                message: format!("expected a node number in 0..={}", k.nodes.len() - 1),
            });
        }
        let file = k.create_file(crate::mm::filemap::File::new(
            task.name.clone(),
            fr.size_bytes,
            fr.read_ahead_kb,
            fr.large_folios,
        ));
        let ops = fr.program(file, task.mempolicy);
        w.spawn_task_process(k, task, memcg, ops);
        Ok(())
    }
}

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

pub use crate::scenario::generators::{
    DEFAULT_READ_AHEAD_KB, DEFAULT_READ_BUFFER_BYTES as DEFAULT_BUFFER_BYTES,
};

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

    /// Moved here from scenario/generators.rs with the parsing it tests.
    #[test]
    fn file_read_generator_parameters_are_checked() {
        const MINIMAL: &str = "name = \"t\"\n[machine]\n[[machine.node]]\nmemory = \"8G\"\n\
                               cpus = 4\n[[task]]\nname = \"u\"\ngenerator = \"usemem\"\n\
                               size = \"1M\"\n";
        let task = |extra: &str| {
            format!("{MINIMAL}\n[[task]]\nname = \"r\"\ngenerator = \"file_read\"\nsize = \"1G\"\n{extra}")
        };
        let expect_err = |extra: &str, key: &str, needle: &str| {
            let e = crate::Scenario::parse_str(&task(extra), "t.toml").expect_err("an error");
            assert_eq!(e.file, "t.toml");
            assert_eq!(e.key, key, "{e}");
            assert!(e.message.contains(needle), "{e}");
        };
        expect_err("buffer = 0", "task[1].buffer", "greater than 0");
        expect_err("preload_node = 1", "task[1].preload_node", "0..=0");
        expect_err("cycles = 0", "task[1].cycles", "1..=100000");
        expect_err("large_folios = 1", "task[1].large_folios", "true or false");
        expect_err("bogus = 1", "task[1].bogus", "unknown key");
        let s = crate::Scenario::parse_str(&task("buffer = \"2M\"\ncycles = 5"), "t.toml").unwrap();
        let crate::scenario::Program::Generator(p) = &s.tasks[1].program else {
            panic!("expected a generator");
        };
        let f: &FileRead = params_of(&**p);
        assert_eq!(
            (f.size_bytes, f.buffer_bytes, f.cycles),
            (1 << 30, 2 << 20, 5)
        );
        assert_eq!(
            (f.preload_node, f.read_ahead_kb, f.large_folios),
            (None, 128, true)
        );
    }

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
