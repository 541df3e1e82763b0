//! Tasks and their op programs: `[[task]]` entries (name, cgroup, node, memory policy) and the
//! op lists they run, checked op by op against the regions mapped at that point of the program.

use std::collections::{BTreeMap, BTreeSet};

use toml::Value;

use super::command::{parse_command, COMMAND_KEYS};
use super::generators::{
    generator_names, generator_task_keys, parse_generator_task, DEFAULT_READ_BUFFER_BYTES,
    TRACE_REPLAY_GENERATOR,
};
use super::machine::cgroup_names;
use super::mempolicy::Mempolicy;
use super::parse::DEFAULT_ZIPF_THETA_MILLI;
use super::types::{content, ReadRequest, WriteRequest, PAGE_SIZE};
use super::units::format_size;
use super::walker::{describe, join, unique, Cx, Node, Res, MAX_MAPPING_BYTES};
use super::{Access, Advice, CgroupSpec, FileSpec, MachineSpec, Op, Pattern, Program, TaskSpec};
use super::{MAX_PROGRAM_TIME_NS, MAX_SERIES_SAMPLES};

/// Content class written by `data = "zero"` and `data = "nonzero"`.
const DATA_ZERO: u8 = content::ZERO;
const DATA_NONZERO: u8 = content::DATA_DEFAULT;
/// Forks nested deeper than this are refused (keeps recursion bounded).
const MAX_FORK_DEPTH: usize = 16;
/// Address space an mmap takes besides its pages: up to 511 pages of alignment to a PMD, as many
/// again for a file's page offset, and a guard page (mm/vma.rs).
const MMAP_OVERHEAD_BYTES: u64 = 1024 * PAGE_SIZE;

/// What one program has used up so far of what the model can count: the address space of its
/// mmaps (virtual page numbers never come back after a munmap) and its sleeps and touch work on
/// the simulated clock. A fork child starts from a copy of its parent's.
#[derive(Clone, Copy, Default)]
struct ProgramUse {
    mapped_bytes: u64,
    time_ns: u64,
}

impl ProgramUse {
    /// Adds one mapping of `size_bytes`, or names the limit at `size`.
    fn map(&mut self, node: &Node, size_bytes: u64) -> Res<()> {
        let total = self
            .mapped_bytes
            .saturating_add(size_bytes.div_ceil(PAGE_SIZE) * PAGE_SIZE)
            .saturating_add(MMAP_OVERHEAD_BYTES);
        if total > MAX_MAPPING_BYTES + MMAP_OVERHEAD_BYTES {
            return Err(node.err(
                "size",
                format!(
                    "expected the task's mappings to total at most {} (a task's address space: \
                     32-bit page numbers from 1 TiB), found {} with this one",
                    format_size(MAX_MAPPING_BYTES),
                    format_size(total.saturating_sub(MMAP_OVERHEAD_BYTES))
                ),
            ));
        }
        self.mapped_bytes = total;
        Ok(())
    }

    /// Adds `ns` of sleep or work, or names the limit (`max_time_ns`) at `key`.
    fn spend(&mut self, node: &Node, key: &str, ns: u64, max_time_ns: u64) -> Res<()> {
        match self.time_ns.checked_add(ns) {
            Some(total) if total <= max_time_ns => {
                self.time_ns = total;
                Ok(())
            }
            total => Err(node.err(
                key,
                format!(
                    "expected the task's sleeps and touch work to total at most {} of simulated \
                     time ({MAX_SERIES_SAMPLES} sample_intervals, and at most {}), found {}",
                    format_time(max_time_ns),
                    format_time(MAX_PROGRAM_TIME_NS),
                    total.map_or("more than 584 years".to_string(), format_time)
                ),
            )),
        }
    }
}

/// A time for messages: whole seconds when it is at least one, else ns.
fn format_time(ns: u64) -> String {
    if ns >= 1_000_000_000 && ns.is_multiple_of(1_000_000_000) {
        format!("{} s", ns / 1_000_000_000)
    } else if ns >= 1_000_000_000 {
        format!("{:.3} s", ns as f64 / 1e9)
    } else {
        format!("{ns} ns")
    }
}

const TASK_KEYS: &[&str] = &["name", "cgroup", "node", "mempolicy", "generator", "ops"];

pub(super) fn parse_tasks(
    top: &Node,
    machine: &MachineSpec,
    cgroups: &[CgroupSpec],
    files: &[FileSpec],
    sample_interval_ns: u64,
) -> Res<Vec<TaskSpec>> {
    let entries = top.tables("task")?;
    if entries.is_empty() {
        return Err(top.missing("task", "at least one [[task]]"));
    }
    // task names and fork names share one space, as they name the tasks in results
    let mut names = BTreeSet::new();
    let mut tasks = Vec::new();
    for (path, t) in entries {
        // the generator decides which further keys are allowed, so read it first
        let generator = match t.get("generator") {
            Some(Value::String(g)) => Some(g.as_str()),
            Some(v) => {
                return Err(top.cx.err(
                    &join(&path, "generator"),
                    format!("expected a generator name string, found {}", describe(v)),
                ))
            }
            None => None,
        };
        // `trace = "..."` makes the task a replay of that trace, a generator of its own
        let generator = generator.or(t.contains_key("trace").then_some(TRACE_REPLAY_GENERATOR));
        let mut allowed: Vec<&str> = TASK_KEYS.to_vec();
        allowed.extend_from_slice(COMMAND_KEYS);
        if let Some(g) = generator {
            let params = generator_task_keys(top.cx, &path, g)?;
            allowed.extend_from_slice(params);
        }
        let task = Node::new(top.cx, t, path, &allowed)?;
        let name = task.name("name")?;
        unique(top.cx, &mut names, &name, &task.key("name"), "task")?;
        let cgroup = match task.str_opt("cgroup")? {
            Some(c) if cgroups.iter().any(|cg| cg.name == c) => Some(c.to_string()),
            Some(c) => {
                return Err(task.err(
                    "cgroup",
                    format!(
                        "expected a cgroup defined by [[cgroup]] ({}), found {c:?}",
                        cgroup_names(cgroups)
                    ),
                ))
            }
            None => None,
        };
        let nr_nodes = machine.nodes.len() as i64;
        let node = match task.table.get("node") {
            None => 0,
            Some(Value::Integer(n)) if (0..nr_nodes).contains(n) => *n as u32,
            Some(v) => {
                return Err(task.err(
                    "node",
                    format!(
                        "expected a node number in 0..={}, found {}",
                        nr_nodes - 1,
                        describe(v)
                    ),
                ))
            }
        };
        if machine.nodes[node as usize].cpus == 0 {
            return Err(task.err(
                "node",
                format!("expected a node with CPUs to run on, found node {node} with none"),
            ));
        }
        let command = parse_command(&task)?;
        let program = match (generator, task.array_opt("ops")?) {
            (Some(_), Some(_)) => {
                return Err(task.err("ops", "expected either generator or ops, not both"))
            }
            (None, None) if command.is_some() => Program::LiveOnly,
            (None, None) => {
                return Err(task.missing(
                    "generator",
                    &format!(
                        "a generator ({}), an ops list or a command",
                        generator_names(top.cx)
                    ),
                ))
            }
            (Some(g), None) => {
                let mut program = parse_generator_task(&task, g, machine)?;
                if let Program::Generator(params) = &mut program {
                    params.resolve(files).map_err(|(k, m)| task.err(&k, m))?;
                }
                program
            }
            (None, Some(ops)) => {
                let mut regions = BTreeMap::new();
                let path = task.key("ops");
                let nr_nodes = machine.nodes.len() as u32;
                let cx = OpsCx {
                    cx: top.cx,
                    nr_nodes,
                    files,
                    max_time_ns: sample_interval_ns
                        .saturating_mul(MAX_SERIES_SAMPLES)
                        .min(MAX_PROGRAM_TIME_NS),
                };
                Program::Ops(parse_ops(
                    &cx,
                    ops,
                    &path,
                    &mut regions,
                    &mut BTreeSet::new(),
                    &mut names,
                    &mut ProgramUse::default(),
                    0,
                )?)
            }
        };
        let mempolicy = task
            .mempolicy_opt("mempolicy", machine.nodes.len() as u32)?
            .flatten();
        tasks.push(TaskSpec {
            name,
            cgroup,
            node,
            mempolicy,
            program,
            command,
        });
    }
    Ok(tasks)
}

/// Keys each op accepts (besides `op`).
fn op_keys(op: &str) -> Option<&'static [&'static str]> {
    Some(match op {
        "mmap" => &["op", "region", "size", "file", "offset", "shared", "prot"],
        "munmap" => &["op", "region"],
        "madvise" => &["op", "region", "advice", "offset", "len"],
        "touch" => &[
            "op", "region", "access", "pattern", "theta", "offset", "len", "count", "work", "data",
        ],
        "sleep" => &["op", "time"],
        "barrier" => &["op", "name"],
        "fork" => &["op", "name", "ops"],
        "exit" => &["op"],
        "read" => &["op", "file", "offset", "len", "buffer"],
        "set_mempolicy" => &["op", "mode"],
        "mbind" => &["op", "region", "mode", "offset", "len", "move"],
        "write" => &["op", "file", "offset", "len", "buffer", "data"],
        "fsync" => &["op", "file"],
        _ => return None,
    })
}

const OP_NAMES: &str =
    "mmap, munmap, madvise, touch, sleep, barrier, fork, exit, read, write, fsync, set_mempolicy, mbind";

/// What op lists are checked against besides the file: the machine's node count.
struct OpsCx<'a> {
    cx: &'a Cx<'a>,
    nr_nodes: u32,
    files: &'a [FileSpec],
    /// The most sleep and touch work one program may add up to.
    max_time_ns: u64,
}

/// An op's required `mode`, a memory policy.
fn op_mempolicy(node: &Node, nr_nodes: u32) -> Res<Option<Mempolicy>> {
    node.mempolicy_opt("mode", nr_nodes)?.ok_or_else(|| {
        node.missing(
            "mode",
            "a memory policy such as \"bind:0,1\", \"interleave:0-1\" or \"default\"",
        )
    })
}

/// Parses an op list. `regions` maps each mapped region to its size at this point of the
/// program, `readonly` names those mapped without write permission; a fork child starts from a
/// copy of its parent's.
#[allow(clippy::too_many_arguments)]
fn parse_ops(
    ocx: &OpsCx,
    items: &[Value],
    path: &str,
    regions: &mut BTreeMap<String, u64>,
    readonly: &mut BTreeSet<String>,
    names: &mut BTreeSet<String>,
    used: &mut ProgramUse,
    depth: usize,
) -> Res<Vec<Op>> {
    let cx = ocx.cx;
    let files = ocx.files;
    let mut ops = Vec::with_capacity(items.len());
    let mut exited_at: Option<usize> = None;
    for (i, item) in items.iter().enumerate() {
        let op_path = format!("{path}[{i}]");
        let Value::Table(t) = item else {
            return Err(cx.err(
                &op_path,
                format!(
                    "expected an op table such as {{ op = \"mmap\", region = \"a\", size = \"64M\" }}, found {}",
                    describe(item)
                ),
            ));
        };
        if let Some(at) = exited_at {
            return Err(cx.err(
                &op_path,
                format!("expected no operation after the exit at {path}[{at}]"),
            ));
        }
        let op_name = match t.get("op") {
            Some(Value::String(s)) => s.as_str(),
            Some(v) => {
                return Err(cx.err(
                    &join(&op_path, "op"),
                    format!("expected one of {OP_NAMES}, found {}", describe(v)),
                ))
            }
            None => {
                return Err(cx.err(
                    &join(&op_path, "op"),
                    format!("missing key; expected one of {OP_NAMES}"),
                ))
            }
        };
        let keys = op_keys(op_name).ok_or_else(|| {
            cx.err(
                &join(&op_path, "op"),
                format!("expected one of {OP_NAMES}, found {op_name:?}"),
            )
        })?;
        let node = Node::new(cx, t, op_path, keys)?;
        let op = match op_name {
            "mmap" => {
                let region = node.name("region")?;
                if regions.contains_key(&region) {
                    return Err(node.err(
                        "region",
                        format!(
                            "expected a region not mapped yet, found {region:?} already mapped"
                        ),
                    ));
                }
                readonly.remove(&region);
                if node.table.contains_key("file") {
                    let op = parse_mmap_file(&node, region.clone(), files)?;
                    if let Op::MmapFile {
                        size_bytes, write, ..
                    } = op
                    {
                        used.map(&node, size_bytes)?;
                        regions.insert(region.clone(), size_bytes);
                        if !write {
                            readonly.insert(region);
                        }
                    }
                    op
                } else {
                    for k in ["offset", "prot"] {
                        if node.table.contains_key(k) {
                            return Err(node.err(
                                k,
                                "expected this key only in an mmap of a file (with file = \"NAME\")",
                            ));
                        }
                    }
                    let size_bytes = node.positive_size("size")?;
                    used.map(&node, size_bytes)?;
                    regions.insert(region.clone(), size_bytes);
                    if node.bool_opt("shared")?.unwrap_or(false) {
                        Op::MmapShared { region, size_bytes }
                    } else {
                        Op::Mmap { region, size_bytes }
                    }
                }
            }
            "munmap" => {
                let region = mapped_region(&node, regions)?.0;
                regions.remove(&region);
                readonly.remove(&region);
                Op::Munmap { region }
            }
            "madvise" => {
                let (region, region_bytes) = mapped_region(&node, regions)?;
                let advice = node.choice(
                    "advice",
                    &[
                        ("hugepage", Advice::Hugepage),
                        ("nohugepage", Advice::NoHugepage),
                        ("pageout", Advice::Pageout),
                        ("cold", Advice::Cold),
                        ("dontneed", Advice::DontNeed),
                    ],
                )?;
                let (offset_bytes, len_bytes) = parse_range(&node, &region, region_bytes)?;
                Op::Madvise {
                    region,
                    advice,
                    offset_bytes,
                    len_bytes,
                }
            }
            "touch" => {
                let op = parse_touch(&node, regions)?;
                if let Op::Touch {
                    work_ns,
                    count,
                    len_bytes,
                    offset_bytes,
                    region,
                    ..
                } = &op
                {
                    // each touch charges its work: count touches, or one per page of the range
                    let touches = count.unwrap_or_else(|| {
                        len_bytes
                            .unwrap_or(regions[region].saturating_sub(*offset_bytes))
                            .div_ceil(PAGE_SIZE)
                    });
                    used.spend(
                        &node,
                        "work",
                        work_ns.saturating_mul(touches),
                        ocx.max_time_ns,
                    )?;
                }
                if let Op::Touch {
                    region,
                    access: Access::Write,
                    ..
                } = &op
                {
                    if readonly.contains(region) {
                        return Err(node.err(
                            "access",
                            format!(
                                "expected \"read\": region {region:?} maps a file without write \
                                 permission (its prot has no \"w\")"
                            ),
                        ));
                    }
                }
                op
            }
            "sleep" => {
                let ns = node
                    .time_opt("time")?
                    .ok_or_else(|| node.missing("time", "a time such as \"1ms\""))?;
                used.spend(&node, "time", ns, ocx.max_time_ns)?;
                Op::Sleep { ns }
            }
            "barrier" => Op::Barrier {
                name: node.name("name")?,
            },
            "fork" => {
                let name = node.name("name")?;
                unique(cx, names, &name, &node.key("name"), "task")?;
                if depth >= MAX_FORK_DEPTH {
                    return Err(node.err(
                        "ops",
                        format!("expected forks nested at most {MAX_FORK_DEPTH} deep"),
                    ));
                }
                let child_items = node
                    .array_opt("ops")?
                    .ok_or_else(|| node.missing("ops", "the child's op list"))?;
                let mut child_regions = regions.clone();
                let mut child_readonly = readonly.clone();
                let mut child_used = *used;
                let child = parse_ops(
                    ocx,
                    child_items,
                    &node.key("ops"),
                    &mut child_regions,
                    &mut child_readonly,
                    names,
                    &mut child_used,
                    depth + 1,
                )?;
                Op::Fork { name, child }
            }
            "exit" => {
                exited_at = Some(i);
                Op::Exit
            }
            "read" | "write" => {
                let file = named_file(&node, files)?.0;
                let (offset_bytes, len_bytes) = parse_file_range(&node, &files[file as usize])?;
                let buffer_bytes = node
                    .positive_size_opt("buffer")?
                    .unwrap_or(DEFAULT_READ_BUFFER_BYTES);
                if op_name == "read" {
                    Op::FileRead(ReadRequest {
                        file,
                        offset_bytes,
                        len_bytes,
                        buffer_bytes,
                    })
                } else {
                    Op::FileWrite(WriteRequest {
                        file,
                        offset_bytes,
                        len_bytes,
                        buffer_bytes,
                        data: parse_data(&node)?,
                    })
                }
            }
            "set_mempolicy" => Op::SetMempolicy {
                policy: op_mempolicy(&node, ocx.nr_nodes)?,
            },
            "mbind" => {
                let (region, region_bytes) = mapped_region(&node, regions)?;
                let policy = op_mempolicy(&node, ocx.nr_nodes)?;
                let (offset_bytes, len_bytes) = parse_range(&node, &region, region_bytes)?;
                let mf_move = node.bool_opt("move")?.unwrap_or(false);
                let names_nodes = policy.is_some_and(|p| p.nodes != 0);
                if mf_move && !names_nodes {
                    return Err(node.err(
                        "move",
                        "expected move = true only with a policy that names nodes (bind, \
                         preferred, interleave, preferred_many)",
                    ));
                }
                Op::Mbind {
                    region,
                    policy,
                    offset_bytes,
                    len_bytes,
                    mf_move,
                }
            }
            "fsync" => Op::Fsync {
                file: named_file(&node, files)?.0,
            },
            _ => unreachable!("op_keys accepted {op_name}"),
        };
        ops.push(op);
    }
    Ok(ops)
}

/// The content class an op writes: `data` = zero, nonzero (the default) or a class 1..=255.
fn parse_data(node: &Node) -> Res<u8> {
    match node.table.get("data") {
        None => Ok(DATA_NONZERO),
        Some(Value::String(s)) if s == "zero" => Ok(DATA_ZERO),
        Some(Value::String(s)) if s == "nonzero" => Ok(DATA_NONZERO),
        Some(Value::Integer(i)) if (1..=255).contains(i) => Ok(*i as u8),
        Some(v) => Err(node.err(
            "data",
            format!(
                "expected zero, nonzero or a content class 1..=255, found {}",
                describe(v)
            ),
        )),
    }
}

/// `{ op = "mmap", region, file, offset, size, shared, prot }`: a file VMA. `offset` is
/// page-aligned inside the file; `size` defaults to the rest of the file and may reach the end
/// of its last page; `prot` is "r", "rw" (default) or "rx"; `shared` selects MAP_SHARED.
fn parse_mmap_file(node: &Node, region: String, files: &[FileSpec]) -> Res<Op> {
    let (file, file_bytes) = named_file(node, files)?;
    let name = &files[file as usize].name;
    let file_pages_bytes = file_bytes.div_ceil(PAGE_SIZE) * PAGE_SIZE;
    let offset_bytes = node.size_opt("offset")?.unwrap_or(0);
    if offset_bytes % PAGE_SIZE != 0 || offset_bytes >= file_bytes {
        return Err(node.err(
            "offset",
            format!(
                "expected a multiple of 4K inside file {name:?} ({}), found {}",
                format_size(file_bytes),
                format_size(offset_bytes)
            ),
        ));
    }
    let size_bytes = match node.positive_size_opt("size")? {
        None => file_bytes - offset_bytes,
        Some(size) if offset_bytes.saturating_add(size) > file_pages_bytes => {
            return Err(node.err(
                "size",
                format!(
                    "expected offset + size within file {name:?} ({}), found {}",
                    format_size(file_bytes),
                    format_size(offset_bytes.saturating_add(size))
                ),
            ))
        }
        Some(size) => size,
    };
    let (write, exec) = node
        .choice_opt(
            "prot",
            &[
                ("r", (false, false)),
                ("rw", (true, false)),
                ("rx", (false, true)),
            ],
        )?
        .unwrap_or((true, false));
    Ok(Op::MmapFile {
        region,
        file,
        offset_bytes,
        size_bytes,
        shared: node.bool_opt("shared")?.unwrap_or(false),
        write,
        exec,
    })
}

/// The op's `region`, which must be mapped at this point; returns it with its size.
fn mapped_region(node: &Node, regions: &BTreeMap<String, u64>) -> Res<(String, u64)> {
    let region = node
        .str_opt("region")?
        .ok_or_else(|| node.missing("region", "the name of a region mapped by an earlier mmap"))?;
    match regions.get(region) {
        Some(size) => Ok((region.to_string(), *size)),
        None => {
            let mapped = if regions.is_empty() {
                "none is mapped".to_string()
            } else {
                format!(
                    "mapped: {}",
                    regions.keys().cloned().collect::<Vec<_>>().join(", ")
                )
            };
            Err(node.err(
                "region",
                format!("expected a region mapped by an earlier mmap ({mapped}), found {region:?}"),
            ))
        }
    }
}

/// The `file` key of a file op: a file of `[[file]]`. Returns its id and size.
fn named_file(node: &Node, files: &[FileSpec]) -> Res<(u32, u64)> {
    let name = node.name("file")?;
    match files.iter().position(|f| f.name == name) {
        Some(id) => Ok((id as u32, files[id].size_bytes)),
        None => Err(node.err(
            "file",
            format!(
                "expected a file defined by [[file]] ({}), found {name:?}",
                if files.is_empty() {
                    "none defined".to_string()
                } else {
                    files
                        .iter()
                        .map(|f| f.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ),
        )),
    }
}

/// `offset` and `len` of a file op: bytes inside the file (`len` defaults to the rest of it).
fn parse_file_range(node: &Node, f: &FileSpec) -> Res<(u64, u64)> {
    let offset_bytes = node.size_opt("offset")?.unwrap_or(0);
    if offset_bytes >= f.size_bytes {
        return Err(node.err(
            "offset",
            format!(
                "expected an offset inside file {:?} ({}), found {}",
                f.name,
                format_size(f.size_bytes),
                format_size(offset_bytes)
            ),
        ));
    }
    let len_bytes = node.size_opt("len")?;
    match len_bytes {
        Some(0) => Err(node.err("len", "expected a length greater than 0, found 0")),
        Some(len) if offset_bytes.saturating_add(len) > f.size_bytes => Err(node.err(
            "len",
            format!(
                "expected offset + len within file {:?} ({}), found {}",
                f.name,
                format_size(f.size_bytes),
                format_size(offset_bytes.saturating_add(len))
            ),
        )),
        Some(len) => Ok((offset_bytes, len)),
        None => Ok((offset_bytes, f.size_bytes - offset_bytes)),
    }
}

/// `offset` and `len` within a region of `region_bytes`, both page-aligned.
fn parse_range(node: &Node, region: &str, region_bytes: u64) -> Res<(u64, Option<u64>)> {
    // the mapping covers whole pages, as mmap rounds the length up
    let mapped_bytes = region_bytes.div_ceil(PAGE_SIZE).saturating_mul(PAGE_SIZE);
    let offset_bytes = node.size_opt("offset")?.unwrap_or(0);
    let len_bytes = node.size_opt("len")?;
    for (key, bytes) in [("offset", Some(offset_bytes)), ("len", len_bytes)] {
        if let Some(b) = bytes {
            if b % PAGE_SIZE != 0 {
                return Err(node.err(
                    key,
                    format!("expected a multiple of 4 KiB, found {b} bytes"),
                ));
            }
        }
    }
    if offset_bytes >= mapped_bytes {
        return Err(node.err(
            "offset",
            format!(
                "expected an offset inside region {region:?} ({}), found {}",
                format_size(mapped_bytes),
                format_size(offset_bytes)
            ),
        ));
    }
    if let Some(len) = len_bytes {
        if len == 0 {
            return Err(node.err("len", "expected a length greater than 0, found 0"));
        }
        if offset_bytes.saturating_add(len) > mapped_bytes {
            return Err(node.err(
                "len",
                format!(
                    "expected offset + len within region {region:?} ({}), found {} + {}",
                    format_size(mapped_bytes),
                    format_size(offset_bytes),
                    format_size(len)
                ),
            ));
        }
    }
    Ok((offset_bytes, len_bytes))
}

#[derive(Clone, Copy, PartialEq)]
enum PatternName {
    Sequential,
    Random,
    Zipf,
}

fn parse_touch(node: &Node, regions: &BTreeMap<String, u64>) -> Res<Op> {
    let (region, region_bytes) = mapped_region(node, regions)?;
    let access = node.choice(
        "access",
        &[("read", Access::Read), ("write", Access::Write)],
    )?;
    let pattern_name = node
        .choice_opt(
            "pattern",
            &[
                ("sequential", PatternName::Sequential),
                ("random", PatternName::Random),
                ("zipf", PatternName::Zipf),
            ],
        )?
        .unwrap_or(PatternName::Sequential);
    let theta_milli = match node.table.get("theta") {
        None => DEFAULT_ZIPF_THETA_MILLI,
        Some(_) if pattern_name != PatternName::Zipf => {
            return Err(node.err("theta", "expected theta only with pattern = \"zipf\""))
        }
        Some(v) => {
            let theta = match v {
                Value::Float(f) => *f,
                Value::Integer(i) => *i as f64,
                _ => f64::NAN,
            };
            if !(theta > 0.0 && theta <= 10.0) || (theta * 1000.0).round() < 1.0 {
                return Err(node.err(
                    "theta",
                    format!(
                        "expected a zipf exponent in 0.001..=10, found {}",
                        describe(v)
                    ),
                ));
            }
            (theta * 1000.0).round() as u32
        }
    };
    let pattern = match pattern_name {
        PatternName::Sequential => Pattern::Sequential,
        PatternName::Random => Pattern::Random,
        PatternName::Zipf => Pattern::Zipf { theta_milli },
    };
    let (offset_bytes, len_bytes) = parse_range(node, &region, region_bytes)?;
    let count = node.int_opt("count", 1, i64::MAX)?.map(|c| c as u64);
    let work_ns = node.time_opt("work")?.unwrap_or(0);
    if access == Access::Read && node.table.contains_key("data") {
        return Err(node.err("data", "expected data only with access = \"write\""));
    }
    let data = parse_data(node)?;
    Ok(Op::Touch {
        region,
        access,
        pattern,
        offset_bytes,
        len_bytes,
        count,
        data,
        work_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::super::parse::test_support::*;
    use super::*;

    #[test]
    fn ops_parse_with_defaults_and_fork_inherits_regions() {
        let s = parse(
            r#"
name = "ops"
[machine]
[[machine.node]]
memory = "1G"
cpus = 1
[[task]]
name = "custom"
ops = [
  { op = "mmap", region = "a", size = "64M" },
  { op = "madvise", region = "a", advice = "hugepage", offset = "2M", len = "2M" },
  { op = "touch", region = "a", access = "write" },
  { op = "touch", region = "a", access = "read", pattern = "zipf", count = 10, work = "10ns" },
  { op = "touch", region = "a", access = "write", pattern = "random", data = "zero" },
  { op = "sleep", time = "1ms" },
  { op = "barrier", name = "b1" },
  { op = "fork", name = "child", ops = [ { op = "touch", region = "a", access = "write", data = 7 } ] },
  { op = "munmap", region = "a" },
  { op = "exit" },
]
"#,
        )
        .unwrap();
        let Program::Ops(ops) = &s.tasks[0].program else {
            panic!("expected ops")
        };
        assert_eq!(ops.len(), 10);
        assert_eq!(
            ops[1],
            Op::Madvise {
                region: "a".into(),
                advice: Advice::Hugepage,
                offset_bytes: 2 << 20,
                len_bytes: Some(2 << 20)
            }
        );
        assert_eq!(
            ops[2],
            Op::Touch {
                region: "a".into(),
                access: Access::Write,
                pattern: Pattern::Sequential,
                offset_bytes: 0,
                len_bytes: None,
                count: None,
                data: DATA_NONZERO,
                work_ns: 0
            }
        );
        let Op::Touch {
            pattern,
            count,
            work_ns,
            ..
        } = &ops[3]
        else {
            panic!()
        };
        assert_eq!(*pattern, Pattern::Zipf { theta_milli: 990 });
        assert_eq!((*count, *work_ns), (Some(10), 10));
        assert!(matches!(
            ops[4],
            Op::Touch {
                data: DATA_ZERO,
                ..
            }
        ));
        assert_eq!(ops[5], Op::Sleep { ns: 1_000_000 });
        let Op::Fork { name, child } = &ops[7] else {
            panic!()
        };
        assert_eq!(name, "child");
        assert!(matches!(child[0], Op::Touch { data: 7, .. }));
    }

    #[test]
    fn files_and_read_ops_are_checked() {
        let file = "[[file]]\nname = \"data\"\nsize = \"64M\"\n";
        let reader = |op: &str| format!("{file}[[task]]\nname = \"r\"\nops = [{op}]");
        expect_err(
            &reader("{ op = \"read\", file = \"other\" }"),
            "task[1].ops[0].file",
            "defined by [[file]] (data)",
        );
        expect_err(
            &reader("{ op = \"read\", file = \"data\", offset = \"64M\" }"),
            "task[1].ops[0].offset",
            "inside file \"data\"",
        );
        expect_err(
            &reader("{ op = \"read\", file = \"data\", offset = \"32M\", len = \"33M\" }"),
            "task[1].ops[0].len",
            "within file",
        );
        expect_err(&format!("{file}{file}"), "file[1].name", "unique");
        expect_err(
            "[[file]]\nname = \"d\"\nsize = 0",
            "file[0].size",
            "greater than 0",
        );
        // tmpfs files: the mount's huge= option, and no device keys
        let tmpfs = "[[file]]\nname = \"t\"\nsize = \"1M\"\nfs = \"tmpfs\"\n";
        expect_err(
            &format!("{tmpfs}huge = \"sometimes\""),
            "file[0].huge",
            "one of never, always, within_size, advise",
        );
        expect_err(
            &format!("{tmpfs}read_ahead_kb = 128"),
            "file[0].read_ahead_kb",
            "only for a file on the disk",
        );
        expect_err(
            &format!("{file}huge = \"always\""),
            "file[0].huge",
            "only with fs = \"tmpfs\"",
        );
        expect_err(
            "[[file]]\nname = \"t\"\nsize = \"1M\"\nfs = \"ext4\"",
            "file[0].fs",
            "one of disk, tmpfs",
        );
        let s = parse(&format!("{MINIMAL}\n{tmpfs}huge = \"within_size\"")).unwrap();
        assert_eq!(
            s.files[0].tmpfs,
            Some(crate::scenario::knobs::ShmemHuge::WithinSize)
        );
        let s = parse(&format!(
            "{MINIMAL}\n{}",
            reader("{ op = \"read\", file = \"data\", offset = \"4M\", buffer = \"2M\" }")
        ))
        .unwrap();
        assert_eq!(
            (s.files[0].size_bytes, s.files[0].read_ahead_kb),
            (64 << 20, 128)
        );
        let Program::Ops(ops) = &s.tasks[1].program else {
            panic!("expected ops");
        };
        assert_eq!(
            ops[0],
            Op::FileRead(ReadRequest {
                file: 0,
                offset_bytes: 4 << 20,
                len_bytes: 60 << 20,
                buffer_bytes: 2 << 20,
            })
        );
    }

    #[test]
    fn memory_policies_parse_and_name_their_nodes() {
        let text = |task_policy: &str, mode: &str| {
            format!(
                r#"
name = "p"
[machine]
[[machine.node]]
memory = "1G"
cpus = 1
[[machine.node]]
memory = "1G"
[[task]]
name = "a"
mempolicy = "{task_policy}"
ops = [
  {{ op = "mmap", region = "r", size = "8M" }},
  {{ op = "mbind", region = "r", mode = "{mode}", offset = "4M", len = "2M" }},
  {{ op = "set_mempolicy", mode = "default" }},
]
"#
            )
        };
        let s = parse(&text("bind:0-1", "interleave:0,1")).unwrap();
        let task = &s.tasks[0];
        assert_eq!(
            task.mempolicy,
            Some(Mempolicy {
                mode: crate::scenario::mempolicy::MpolMode::Bind,
                nodes: 0b11,
                flags: 0
            })
        );
        let Program::Ops(ops) = &task.program else {
            panic!("expected ops")
        };
        assert_eq!(
            ops[1],
            Op::Mbind {
                region: "r".into(),
                policy: Mempolicy::parse("interleave:0,1", 2).unwrap(),
                offset_bytes: 4 << 20,
                len_bytes: Some(2 << 20),
                mf_move: false,
            }
        );
        assert_eq!(ops[2], Op::SetMempolicy { policy: None });
        // Nodes must exist; the message names the key and the expected form.
        let e = parse(&text("bind:2", "local")).unwrap_err();
        assert_eq!(e.key, "task[0].mempolicy", "{e}");
        assert!(e.message.contains("found node 2"), "{e}");
        let e = parse(&text("local", "spread:0")).unwrap_err();
        assert_eq!(e.key, "task[0].ops[1].mode", "{e}");
        assert!(e.message.contains("\"bind:0,1\""), "{e}");
        let e = parse(&text("local", "bind")).unwrap_err();
        assert!(e.message.contains("node list"), "{e}");
        let moving = text("local", "local").replace("len = \"2M\"", "len = \"2M\", move = true");
        let e = parse(&moving).unwrap_err();
        assert_eq!(e.key, "task[0].ops[1].move", "{e}");
        let moving = text("local", "bind:1").replace("len = \"2M\"", "len = \"2M\", move = true");
        let s = parse(&moving).unwrap();
        let Program::Ops(ops) = &s.tasks[0].program else {
            panic!("expected ops")
        };
        assert!(matches!(ops[1], Op::Mbind { mf_move: true, .. }));
        expect_err(
            "[[task]]\nname = \"b\"\nmempolicy = 1\nops = [{ op = \"exit\" }]",
            "task[1].mempolicy",
            "expected a string",
        );
        expect_err(
            "[[task]]\nname = \"b\"\nops = [{ op = \"set_mempolicy\" }]",
            "task[1].ops[0].mode",
            "missing key",
        );
    }

    #[test]
    fn write_and_fsync_ops_are_checked() {
        let file = "[[file]]\nname = \"data\"\nsize = \"64M\"\n";
        let writer = |op: &str| format!("{file}[[task]]\nname = \"w\"\nops = [{op}]");
        expect_err(
            &writer("{ op = \"write\", file = \"data\", data = \"blue\" }"),
            "task[1].ops[0].data",
            "zero, nonzero or a content class",
        );
        expect_err(
            &writer("{ op = \"write\", file = \"data\", buffer = 0 }"),
            "task[1].ops[0].buffer",
            "greater than 0",
        );
        expect_err(
            &writer("{ op = \"write\", file = \"data\", len = \"65M\" }"),
            "task[1].ops[0].len",
            "within file",
        );
        expect_err(
            &writer("{ op = \"fsync\", file = \"nope\" }"),
            "task[1].ops[0].file",
            "defined by [[file]] (data)",
        );
        expect_err(
            &writer("{ op = \"fsync\", file = \"data\", len = 1 }"),
            "task[1].ops[0].len",
            "unknown key",
        );
        expect_err(
            "[knobs]\n\"/proc/sys/vm/dirty_ratio\" = 101",
            "knobs./proc/sys/vm/dirty_ratio",
            "0..=100",
        );
        expect_err(
            "[knobs]\n\"/proc/sys/vm/dirty_bytes\" = \"4K\"",
            "knobs./proc/sys/vm/dirty_bytes",
            ">= 8K",
        );
        let s = parse(&format!(
            "{MINIMAL}\n{}",
            writer("{ op = \"write\", file = \"data\", offset = \"4M\", data = \"zero\" }, { op = \"fsync\", file = \"data\" }")
        ))
        .unwrap();
        let Program::Ops(ops) = &s.tasks[1].program else {
            panic!("expected ops");
        };
        assert_eq!(
            ops[..],
            [
                Op::FileWrite(WriteRequest {
                    file: 0,
                    offset_bytes: 4 << 20,
                    len_bytes: 60 << 20,
                    buffer_bytes: DEFAULT_READ_BUFFER_BYTES,
                    data: DATA_ZERO,
                }),
                Op::Fsync { file: 0 }
            ]
        );
    }

    #[test]
    fn mmap_of_a_file_is_parsed_and_checked() {
        let file = "[[file]]\nname = \"data\"\nsize = \"10001\"\n";
        let prog = |ops: &str| format!("{file}[[task]]\nname = \"m\"\nops = [{ops}]");
        let s = parse(&format!(
            "{MINIMAL}\n{}",
            prog(
                "{ op = \"mmap\", region = \"a\", file = \"data\" },
                 { op = \"mmap\", region = \"b\", file = \"data\", offset = \"4K\", size = 8192, shared = true, prot = \"rx\" },
                 { op = \"touch\", region = \"a\", access = \"write\" }"
            )
        ))
        .unwrap();
        let Program::Ops(ops) = &s.tasks[1].program else {
            panic!("expected ops");
        };
        assert_eq!(
            ops[0],
            Op::MmapFile {
                region: "a".into(),
                file: 0,
                offset_bytes: 0,
                size_bytes: 10001,
                shared: false,
                write: true,
                exec: false
            }
        );
        assert_eq!(
            ops[1],
            Op::MmapFile {
                region: "b".into(),
                file: 0,
                offset_bytes: 4096,
                size_bytes: 8192,
                shared: true,
                write: false,
                exec: true
            }
        );
        let mmap = |keys: &str| prog(&format!("{{ op = \"mmap\", region = \"a\", {keys} }}"));
        expect_err(
            &mmap("file = \"nope\""),
            "task[1].ops[0].file",
            "defined by [[file]] (data)",
        );
        expect_err(
            &mmap("file = \"data\", offset = 100"),
            "task[1].ops[0].offset",
            "multiple of 4K",
        );
        expect_err(
            &mmap("file = \"data\", offset = \"12K\""),
            "task[1].ops[0].offset",
            "inside file",
        );
        // The mapping may reach the end of the file's last page, not past it.
        assert!(parse(&format!(
            "{MINIMAL}\n{}",
            mmap("file = \"data\", size = \"12K\"")
        ))
        .is_ok());
        expect_err(
            &mmap("file = \"data\", size = \"13K\""),
            "task[1].ops[0].size",
            "within file",
        );
        expect_err(
            &mmap("file = \"data\", size = 0"),
            "task[1].ops[0].size",
            "greater than 0",
        );
        expect_err(
            &mmap("file = \"data\", prot = \"w\""),
            "task[1].ops[0].prot",
            "one of r, rw, rx",
        );
        expect_err(
            &mmap("file = \"data\", shared = 1"),
            "task[1].ops[0].shared",
            "true or false",
        );
        expect_err(
            &mmap("size = \"4K\", prot = \"r\""),
            "task[1].ops[0].prot",
            "only in an mmap of a file",
        );
        // shared without a file: shared anonymous memory
        let s = parse(&format!(
            "{MINIMAL}\n{}",
            mmap("size = \"4K\", shared = true")
        ))
        .unwrap();
        let Program::Ops(ops) = &s.tasks[1].program else {
            panic!("expected ops");
        };
        assert_eq!(
            ops[0],
            Op::MmapShared {
                region: "a".into(),
                size_bytes: 4096
            }
        );
        // A mapping without write permission cannot be written, in a fork child either.
        let ro = "{ op = \"mmap\", region = \"a\", file = \"data\", prot = \"r\" }";
        expect_err(
            &prog(&format!(
                "{ro}, {{ op = \"touch\", region = \"a\", access = \"write\" }}"
            )),
            "task[1].ops[1].access",
            "without write permission",
        );
        expect_err(
            &prog(&format!(
                "{ro}, {{ op = \"fork\", name = \"c\", ops = [{{ op = \"touch\", region = \"a\", access = \"write\" }}] }}"
            )),
            "task[1].ops[1].ops[0].access",
            "without write permission",
        );
    }

    #[test]
    fn task_and_op_errors_name_the_key() {
        expect_err(
            "[[task]]\nname = \"u\"\ngenerator = \"usemem\"\nsize = \"1M\"",
            "task[1].name",
            "unique",
        );
        expect_err(
            "[[task]]\nname = \"x\"\ngenerator = \"stream\"",
            "task[1].generator",
            "usemem",
        );
        expect_err(
            "[[task]]\nname = \"x\"\ngenerator = \"usemem\"\nsize = \"1M\"\ncount = 3",
            "task[1].count",
            "processes, size",
        );
        expect_err(
            "[[task]]\nname = \"x\"\ngenerator = \"usemem\"\nsize = \"1M\"\nnode = 1",
            "task[1].node",
            "0..=0",
        );
        expect_err(
            "[[task]]\nname = \"x\"\ngenerator = \"usemem\"\nsize = \"1M\"\ncgroup = \"nope\"",
            "task[1].cgroup",
            "none defined",
        );
        expect_err("[[task]]\nname = \"x\"", "task[1].generator", "missing");
        expect_err(
            "[[task]]\nname = \"x\"\nops = [{ op = \"touch\", region = \"a\", access = \"read\" }]",
            "task[1].ops[0].region",
            "none is mapped",
        );
        expect_err(
            "[[task]]\nname = \"x\"\nops = [{ op = \"mmap\", region = \"a\", size = \"4K\" }, { op = \"munmap\", region = \"a\" }, { op = \"munmap\", region = \"a\" }]",
            "task[1].ops[2].region",
            "earlier mmap",
        );
        expect_err(
            "[[task]]\nname = \"x\"\nops = [{ op = \"mmap\", region = \"a\", sise = \"4K\" }]",
            "task[1].ops[0].sise",
            "unknown key",
        );
        expect_err(
            "[[task]]\nname = \"x\"\nops = [{ op = \"jump\" }]",
            "task[1].ops[0].op",
            "mmap, munmap",
        );
        expect_err(
            "[[task]]\nname = \"x\"\nops = [{ op = \"exit\" }, { op = \"exit\" }]",
            "task[1].ops[1]",
            "after the exit",
        );
        expect_err(
            "[[task]]\nname = \"x\"\nops = [{ op = \"mmap\", region = \"a\", size = \"8K\" }, { op = \"touch\", region = \"a\", access = \"write\", offset = \"4K\", len = \"8K\" }]",
            "task[1].ops[1].len",
            "within region",
        );
        expect_err(
            "[[task]]\nname = \"x\"\nops = [{ op = \"mmap\", region = \"a\", size = \"8K\" }, { op = \"touch\", region = \"a\", access = \"read\", data = \"zero\" }]",
            "task[1].ops[1].data",
            "write",
        );
        expect_err(
            "[[task]]\nname = \"x\"\nops = [{ op = \"mmap\", region = \"a\", size = \"8K\" }, { op = \"touch\", region = \"a\", access = \"write\", theta = 0.5 }]",
            "task[1].ops[1].theta",
            "zipf",
        );
        // a region mapped only by a fork child is not mapped in the parent
        expect_err(
            "[[task]]\nname = \"x\"\nops = [{ op = \"fork\", name = \"c\", ops = [{ op = \"mmap\", region = \"b\", size = \"8K\" }] }, { op = \"munmap\", region = \"b\" }]",
            "task[1].ops[1].region",
            "earlier mmap",
        );
        expect_err(
            "[[task]]\nname = \"x\"\nops = [{ op = \"fork\", name = \"u\", ops = [] }]",
            "task[1].ops[0].name",
            "unique",
        );
    }
}
