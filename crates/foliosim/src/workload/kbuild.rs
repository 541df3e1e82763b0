//! A kernel-build-like mix: `jobs` workers (make -jN) each run a share of `units` compile jobs in
//! turn. A compile job is a short-lived process: it maps an anonymous heap of a random size,
//! writes it, works on it with skewed reads and random writes, then exits.
//!
//! This is a synthetic stand-in for the seed's kernel build (which ran on tmpfs): the sizes and
//! the per-page work are parameters (scenarios/kbuild-like.toml draws its sizes from cc1's
//! measured peak anonymous memory, scripts/cc1_heap.py). A build on tmpfs:
//! with `sources` naming a tmpfs `[[file]]`, the first worker writes that tree whole before the
//! build starts (the checkout, in the build's memcg; the others wait at a barrier) and each job
//! first reads its `source_read` bytes of it; with `objects` naming one, each job then writes its
//! object file there (`object_size` bytes at its own offset). Reads and writes go in 8 KiB
//! calls (glibc's BUFSIZ). So the build's tree is shmem charged to its memcg and swapped out
//! beside the compilers' heaps. The headers every job rereads are not modelled.

use super::task::Report;
use super::{params_of, Generator, LiveProgram, TaskMetric, Workload};
use crate::mm::folio::content;
use crate::mm::Kernel;
use crate::scenario::generators::{
    arg_mapping_size, arg_size, pages_of, GeneratorDef, GeneratorParams,
};
use crate::scenario::units::parse_time;
use crate::scenario::walker::{Node, Res};
use crate::scenario::types::{ReadRequest, WriteRequest};
use crate::scenario::{Access, FileSpec, InputError, MachineSpec, Op, Pattern, TaskSpec};
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
    /// The tmpfs `[[file]]` holding the source tree (None: none).
    pub sources: Option<String>,
    /// Bytes of it each job reads.
    pub source_read_bytes: u64,
    /// The tmpfs `[[file]]` the jobs write their objects to (None: no output).
    pub objects: Option<String>,
    /// Bytes each job writes there.
    pub object_size_bytes: u64,
    /// The two files' (id, size), once resolved (resolve).
    pub sources_file: Option<(u32, u64)>,
    pub objects_file: Option<(u32, u64)>,
}

/// The read() and write() size of the jobs' file I/O (glibc's BUFSIZ).
const FILE_IO_BYTES: u64 = 8192;
/// The barrier the workers wait at until the tree is checked out.
const CHECKOUT_BARRIER: &str = "kbuild-checkout";

impl GeneratorDef for KbuildGenerator {
    fn name(&self) -> &'static str {
        "kbuild"
    }
    fn params(&self) -> &'static [&'static str] {
        &[
            "jobs",
            "units",
            "size_min",
            "size_max",
            "passes",
            "work",
            "sources",
            "source_read",
            "objects",
            "object_size",
        ]
    }
    fn parse(&self, task: &Node, _machine: &MachineSpec) -> Res<Box<dyn GeneratorParams>> {
        let size_min_bytes = task.mapping_size("size_min")?;
        let size_max_bytes = task.mapping_size("size_max")?;
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
            sources: task.str_opt("sources")?.map(str::to_string),
            source_read_bytes: task.positive_size_opt("source_read")?.unwrap_or(512 * 1024),
            objects: task.str_opt("objects")?.map(str::to_string),
            object_size_bytes: task.positive_size_opt("object_size")?.unwrap_or(512 * 1024),
            sources_file: None,
            objects_file: None,
        }))
    }
}

impl GeneratorParams for Kbuild {
    fn generator(&self) -> &'static str {
        "kbuild"
    }
    /// A variant may build on tmpfs: `sources` / `objects` name tmpfs files, `source_read` /
    /// `object_size` the bytes per job; and give its jobs other sizes (`size_min`, `size_max`).
    fn apply_arg(&mut self, key: &str, v: &Value) -> Result<bool, String> {
        let name = || {
            v.as_str()
                .map(str::to_string)
                .ok_or("expected the name of a tmpfs [[file]]".to_string())
        };
        let positive = |bytes: u64| {
            if bytes == 0 {
                Err("expected a size above 0".to_string())
            } else {
                Ok(bytes)
            }
        };
        match key {
            "sources" => self.sources = Some(name()?),
            "objects" => self.objects = Some(name()?),
            "source_read" => self.source_read_bytes = arg_size(v)?.max(1),
            "object_size" => self.object_size_bytes = arg_size(v)?.max(1),
            "size_min" => self.size_min_bytes = positive(arg_mapping_size(v)?)?,
            "size_max" => self.size_max_bytes = positive(arg_mapping_size(v)?)?,
            _ => return Ok(false),
        }
        Ok(true)
    }
    /// `sources` and `objects` must name tmpfs [[file]]s; a variant's sizes keep size_min at
    /// most size_max.
    fn resolve(&mut self, files: &[FileSpec]) -> Result<(), (String, String)> {
        if self.size_max_bytes < self.size_min_bytes {
            return Err((
                "size_max".into(),
                "expected a size at least size_min".into(),
            ));
        }
        self.sources_file = tmpfs_file(files, "sources", self.sources.as_deref())?;
        self.objects_file = tmpfs_file(files, "objects", self.objects.as_deref())?;
        Ok(())
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

/// The (id, size) of the tmpfs [[file]] `name` (parameter `key`), if one is named.
fn tmpfs_file(
    files: &[FileSpec],
    key: &str,
    name: Option<&str>,
) -> Result<Option<(u32, u64)>, (String, String)> {
    let Some(name) = name else {
        return Ok(None);
    };
    let err = |m: String| (key.to_string(), m);
    let id = files
        .iter()
        .position(|f| f.name == name)
        .ok_or_else(|| err(format!("expected the name of a [[file]], found {name:?}")))?;
    if files[id].tmpfs.is_none() {
        return Err(err(format!(
            "expected a tmpfs file (fs = \"tmpfs\"), found {name:?} on the disk"
        )));
    }
    Ok(Some((id as u32, files[id].size_bytes)))
}

/// The job's slot in a file of `file_bytes` cut into slots of `slot_bytes` (wrapping around a
/// file smaller than the whole build's share): the byte offset.
fn slot_offset(index: u64, slot_bytes: u64, file_bytes: u64) -> u64 {
    (index % (file_bytes / slot_bytes).max(1)) * slot_bytes
}

/// The program of one compile job (`index` of the build): its sources read, its heap written
/// and worked on, its object written.
fn unit(rng: &mut Rng, k: &Kbuild, index: u64) -> Vec<Op> {
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
    let mut ops = Vec::new();
    if let Some((file, file_bytes)) = k.sources_file {
        ops.push(Op::FileRead(ReadRequest {
            file,
            offset_bytes: slot_offset(index, k.source_read_bytes, file_bytes),
            len_bytes: k.source_read_bytes,
            buffer_bytes: FILE_IO_BYTES,
        }));
    }
    ops.extend([
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
    ]);
    if let Some((file, file_bytes)) = k.objects_file {
        ops.push(Op::FileWrite(WriteRequest {
            file,
            offset_bytes: slot_offset(index, k.object_size_bytes, file_bytes),
            len_bytes: k.object_size_bytes,
            buffer_bytes: FILE_IO_BYTES,
            data: content::DATA_DEFAULT,
        }));
    }
    ops.push(Op::Munmap {
        region: "heap".into(),
    });
    ops
}

/// One program per worker (a make job slot): its compile jobs one after another. A job's munmap
/// frees what its exit would.
pub fn programs(k: &Kbuild, rng: &mut Rng) -> Vec<Vec<Op>> {
    (0..k.jobs)
        .map(|w| {
            let mut ops = Vec::new();
            if let Some((file, file_bytes)) = k.sources_file {
                // the checkout: the first worker writes the tree, the others wait for it
                if w == 0 {
                    ops.push(Op::FileWrite(WriteRequest {
                        file,
                        offset_bytes: 0,
                        len_bytes: file_bytes,
                        buffer_bytes: FILE_IO_BYTES,
                        data: content::DATA_DEFAULT,
                    }));
                }
                ops.push(Op::Barrier {
                    name: CHECKOUT_BARRIER.into(),
                });
            }
            for index in (w..k.units).step_by(k.jobs.max(1) as usize) {
                ops.extend(unit(rng, k, index as u64));
            }
            ops
        })
        .collect()
}
