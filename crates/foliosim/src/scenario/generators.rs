//! The built-in workload generators a task can name (`generator = "..."`): their names, the
//! parameters each takes, how a generator task is parsed and checked, and how a variant's `args`
//! override them.

use toml::Value;

use super::units::{parse_size, parse_time};
use super::walker::{join, Cx, Node, Res};
use super::{MachineSpec, Program};

/// Built-in workload generators a task can name.
pub const GENERATORS: &[&str] = &[
    "usemem",
    "thp_swap_allocator",
    "kbuild",
    "zero_subpage",
    "xsbench",
    "file_read",
];
pub(super) use crate::workload::file_read::{
    DEFAULT_BUFFER_BYTES as DEFAULT_READ_BUFFER_BYTES, DEFAULT_READ_AHEAD_KB,
};

/// Parameters each generator takes, besides the task keys.
fn generator_params(generator: &str) -> Option<&'static [&'static str]> {
    match generator {
        "usemem" => Some(&["processes", "size"]),
        "thp_swap_allocator" => Some(&["aligned", "small_folios", "iterations"]),
        "kbuild" => Some(&["jobs", "units", "size_min", "size_max", "passes", "work"]),
        "zero_subpage" => Some(&["size", "offset", "num_dirty"]),
        "file_read" => Some(&[
            "size",
            "buffer",
            "cycles",
            "preload_node",
            "preload_reads",
            "read_ahead_kb",
            "large_folios",
        ]),
        "xsbench" => Some(&[
            "threads",
            "particles",
            "lookups",
            "isotopes",
            "gridpoints",
            "sample",
            "reads",
        ]),
        _ => None,
    }
}

/// The keys a task with `generator = generator` takes besides the task keys; an unknown
/// generator is an error at `path.generator`.
pub(super) fn generator_task_keys(cx: &Cx, path: &str, g: &str) -> Res<&'static [&'static str]> {
    generator_params(g).ok_or_else(|| {
        cx.err(
            &join(path, "generator"),
            format!("expected one of {}, found {g:?}", GENERATORS.join(", ")),
        )
    })
}

/// The program of a task with `generator = g`, checked against the machine.
pub(super) fn parse_generator_task(task: &Node, g: &str, machine: &MachineSpec) -> Res<Program> {
    let program = parse_generator(task, g)?;
    if let Program::FileRead(fr) = &program {
        if let Some(n) = fr.preload_node {
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
    }
    Ok(program)
}

fn parse_generator(task: &Node, generator: &str) -> Res<Program> {
    match generator {
        "usemem" => {
            let processes = task.int_opt("processes", 1, 65536)?.unwrap_or(1) as u32;
            let size_bytes = task.positive_size("size")?;
            Ok(Program::Usemem {
                processes,
                size_bytes,
            })
        }
        "file_read" => {
            let d = crate::workload::file_read::FileRead::default();
            let size_bytes = task.file_size()?;
            let buffer_bytes = task.positive_size_opt("buffer")?.unwrap_or(d.buffer_bytes);
            let cycles = task.int_opt("cycles", 1, 100_000)?.unwrap_or(1) as u32;
            let preload_node = task.int_opt("preload_node", 0, 1023)?.map(|n| n as u32);
            let preload_reads = task.int_opt("preload_reads", 1, 1000)?.unwrap_or(1) as u32;
            let (read_ahead_kb, large_folios) = task.file_device()?;
            Ok(Program::FileRead(crate::workload::file_read::FileRead {
                size_bytes,
                buffer_bytes,
                cycles,
                preload_node,
                preload_reads,
                read_ahead_kb,
                large_folios,
            }))
        }
        "zero_subpage" => Ok(Program::ZeroSubpage {
            size_bytes: task.positive_size("size")?,
            offset: task.int_opt("offset", 0, 4095)?.unwrap_or(0) as u64,
            num_dirty: task.int_opt("num_dirty", 1, 512)?.unwrap_or(1) as u64,
        }),
        "kbuild" => {
            let size_min_bytes = task.positive_size("size_min")?;
            let size_max_bytes = task.positive_size("size_max")?;
            if size_max_bytes < size_min_bytes {
                return Err(task.err("size_max", "expected a size at least size_min"));
            }
            Ok(Program::Kbuild {
                jobs: task.int_opt("jobs", 1, 4096)?.unwrap_or(32) as u32,
                units: task.int_opt("units", 1, 1_000_000)?.unwrap_or(1000) as u32,
                size_min_bytes,
                size_max_bytes,
                passes: task.int_opt("passes", 0, 1000)?.unwrap_or(4) as u32,
                work_ns: match task.str_opt("work")? {
                    Some(t) => parse_time(t).map_err(|m| task.err("work", m))?,
                    None => 0,
                },
            })
        }
        "xsbench" => {
            let d = crate::workload::xsbench::Xsbench::default();
            Ok(Program::Xsbench(crate::workload::xsbench::Xsbench {
                threads: task.int_opt("threads", 1, 256)?.unwrap_or(d.threads as i64) as u32,
                particles: task
                    .int_opt("particles", 1, 1 << 40)?
                    .unwrap_or(d.particles as i64) as u64,
                lookups: task
                    .int_opt("lookups", 1, 1000)?
                    .unwrap_or(d.lookups as i64) as u64,
                isotopes: task
                    .int_opt("isotopes", 12, 4096)?
                    .unwrap_or(d.isotopes as i64) as u64,
                gridpoints: task
                    .int_opt("gridpoints", 2, 1 << 24)?
                    .unwrap_or(d.gridpoints as i64) as u64,
                sample: task
                    .int_opt("sample", 1, 1 << 20)?
                    .unwrap_or(d.sample as i64) as u64,
                poisson_index: match task.str_opt("reads")? {
                    None | Some("exact") => false,
                    Some("poisson") => true,
                    Some(other) => {
                        return Err(task.err(
                            "reads",
                            format!("expected exact or poisson, found {other:?}"),
                        ))
                    }
                },
            }))
        }
        "thp_swap_allocator" => Ok(Program::ThpSwapAllocator {
            aligned: task.bool_opt("aligned")?.unwrap_or(false),
            small_folios: task.bool_opt("small_folios")?.unwrap_or(false),
            iterations: task.int_opt("iterations", 1, 100_000)?.unwrap_or(100) as u32,
        }),
        // parse_tasks only lets names with generator_params through
        g => Err(task.err(
            "generator",
            format!("expected one of {}, found {g:?}", GENERATORS.join(", ")),
        )),
    }
}

/// Overrides a generator task's parameters with a variant's `args`; tasks that are op lists are
/// left alone. Errors name the argument.
pub(super) fn apply_generator_args(
    program: &mut Program,
    args: &toml::Table,
) -> Result<(), (String, String)> {
    let boolean = |k: &str, v: &Value| {
        v.as_bool()
            .ok_or_else(|| (k.to_string(), "expected true or false".to_string()))
    };
    let integer = |k: &str, v: &Value| {
        v.as_integer()
            .filter(|&i| i > 0)
            .map(|i| i as u64)
            .ok_or_else(|| (k.to_string(), "expected a positive integer".to_string()))
    };
    for (k, v) in args {
        match (&mut *program, k.as_str()) {
            (Program::ThpSwapAllocator { aligned, .. }, "aligned") => *aligned = boolean(k, v)?,
            (Program::ThpSwapAllocator { small_folios, .. }, "small_folios") => {
                *small_folios = boolean(k, v)?
            }
            (Program::ThpSwapAllocator { iterations, .. }, "iterations") => {
                *iterations = integer(k, v)? as u32
            }
            (Program::Usemem { processes, .. }, "processes") => *processes = integer(k, v)? as u32,
            (Program::FileRead(f), "preload_node") => {
                f.preload_node = Some(
                    v.as_integer()
                        .filter(|i| (0..1024).contains(i))
                        .ok_or_else(|| (k.clone(), "expected a node number".to_string()))?
                        as u32,
                )
            }
            (Program::FileRead(f), "cycles") => f.cycles = integer(k, v)?.min(100_000) as u32,
            (Program::FileRead(f), "preload_reads") => {
                f.preload_reads = integer(k, v)?.min(1000) as u32
            }
            (Program::Xsbench(x), "particles") => x.particles = integer(k, v)?,
            (Program::Xsbench(x), "sample") => x.sample = integer(k, v)?,
            (Program::Xsbench(x), "threads") => x.threads = integer(k, v)?.min(256) as u32,
            (Program::Xsbench(x), "reads") => {
                x.poisson_index = match v.as_str() {
                    Some("exact") => false,
                    Some("poisson") => true,
                    _ => return Err((k.clone(), "expected exact or poisson".to_string())),
                }
            }
            (Program::ZeroSubpage { offset, .. }, "offset") => *offset = integer(k, v)?.min(4095),
            (Program::ZeroSubpage { num_dirty, .. }, "num_dirty") => {
                *num_dirty = integer(k, v)?.min(512)
            }
            (Program::Usemem { size_bytes, .. }, "size") => {
                *size_bytes = v
                    .as_str()
                    .ok_or_else(|| (k.clone(), "expected a size string".to_string()))
                    .and_then(|t| parse_size(t).map_err(|m| (k.clone(), m)))?
            }
            (Program::Ops(_), _) => {}
            _ => {
                return Err((
                    k.clone(),
                    "expected a parameter of the scenario's generator".to_string(),
                ))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::parse::test_support::*;
    use super::*;

    #[test]
    fn file_read_generator_parameters_are_checked() {
        let task = |extra: &str| {
            format!("[[task]]\nname = \"r\"\ngenerator = \"file_read\"\nsize = \"1G\"\n{extra}")
        };
        expect_err(&task("buffer = 0"), "task[1].buffer", "greater than 0");
        expect_err(&task("preload_node = 1"), "task[1].preload_node", "0..=0");
        expect_err(&task("cycles = 0"), "task[1].cycles", "1..=100000");
        expect_err(
            &task("large_folios = 1"),
            "task[1].large_folios",
            "true or false",
        );
        expect_err(&task("bogus = 1"), "task[1].bogus", "unknown key");
        let s = parse(&format!(
            "{MINIMAL}\n{}",
            task("buffer = \"2M\"\ncycles = 5")
        ))
        .unwrap();
        let Program::FileRead(f) = &s.tasks[1].program else {
            panic!("expected file_read");
        };
        assert_eq!(
            (f.size_bytes, f.buffer_bytes, f.cycles),
            (1 << 30, 2 << 20, 5)
        );
        assert_eq!(
            (f.preload_node, f.read_ahead_kb, f.large_folios),
            (None, 128, true)
        );
    }
}
