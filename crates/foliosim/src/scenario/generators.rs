//! Generator tasks (`generator = "..."`) as the scenario sees them. Each built-in generator is
//! one file of workload/ that declares its name, its parameters and how it parses them (with
//! the walker's typed accessors). Their registry (GENERATORS in workload/mod.rs) reaches the
//! parser through `Cx` (the engine's `Scenario::load` passes it in), so this layer never names a
//! generator. A parsed task keeps its generator's parameters as a `GeneratorParams` object, which
//! also applies a variant's `args` to itself.

use std::any::Any;
use std::fmt::Debug;

use toml::Value;

use super::units::{format_size, parse_size};
use super::walker::{describe, join, Cx, Node, Res, MAX_MAPPING_BYTES};
use super::{MachineSpec, Program};

/// The backing device's read_ahead_kb when a file names none (the kernel's default bdi
/// readahead, VM_READAHEAD_PAGES).
pub const DEFAULT_READ_AHEAD_KB: u64 = 128;
/// The generator a task naming a `trace` runs (workload/trace_replay.rs): the one generator
/// this layer names, because its key selects it.
pub const TRACE_REPLAY_GENERATOR: &str = "trace_replay";
/// Bytes a read() asks for when a read op or the file_read generator names no buffer.
pub const DEFAULT_READ_BUFFER_BYTES: u64 = 1 << 20;

/// A generator as the parser sees it: its name, the keys it takes and how it reads them.
pub(crate) trait GeneratorDef: Sync {
    /// The name a task gives as `generator = "..."`.
    fn name(&self) -> &'static str;
    /// The keys a task running it takes besides the task keys.
    fn params(&self) -> &'static [&'static str];
    /// Reads and checks the task's parameters (against the machine where they name nodes).
    fn parse(&self, task: &Node, machine: &MachineSpec) -> Res<Box<dyn GeneratorParams>>;
}

/// The generators a scenario may name (implemented by the registry in workload/mod.rs).
pub(crate) trait GeneratorRegistry {
    fn find(&self, name: &str) -> Option<&dyn GeneratorDef>;
    /// Every name, in the order messages list them.
    fn names(&self) -> Vec<&'static str>;
}

/// A generator task's parameters, as its generator parsed them.
pub trait GeneratorParams: Any + Debug + Send + Sync + DynParams {
    /// The generator they are for.
    fn generator(&self) -> &'static str;
    /// Overrides parameter `key` with a variant's `args` value. Ok(false): the generator takes
    /// no such argument; Err: what was expected.
    fn apply_arg(&mut self, key: &str, value: &Value) -> Result<bool, String>;
    /// The most pages the generator's processes have mapped at once, in all of them (a fork
    /// child copies its parent's page tables): the engine keeps a page-table entry for each, so
    /// the host-memory estimate (footprint.rs) counts them before the run.
    fn mapped_pages(&self) -> u64;
    /// Pages of the file the generator reads, if it makes one (its page-cache index).
    fn file_pages(&self) -> u64 {
        0
    }
    /// Resolves parameters that name a scenario's `[[file]]` and checks those that depend on
    /// each other, once the task's and the variant's values are known. Err: (parameter, what
    /// was expected).
    fn resolve(&mut self, _files: &[super::FileSpec]) -> Result<(), (String, String)> {
        Ok(())
    }
}

/// Pages of a mapping of `bytes`.
pub fn pages_of(bytes: u64) -> u64 {
    bytes.div_ceil(super::types::PAGE_SIZE)
}

/// Cloning and comparing parameters behind `dyn` (implemented for every `GeneratorParams`).
pub trait DynParams {
    fn clone_box(&self) -> Box<dyn GeneratorParams>;
    fn eq_dyn(&self, other: &dyn GeneratorParams) -> bool;
}

impl<T: GeneratorParams + Clone + PartialEq> DynParams for T {
    fn clone_box(&self) -> Box<dyn GeneratorParams> {
        Box::new(self.clone())
    }
    fn eq_dyn(&self, other: &dyn GeneratorParams) -> bool {
        (other as &dyn Any).downcast_ref::<T>() == Some(self)
    }
}

impl Clone for Box<dyn GeneratorParams> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

impl PartialEq for Box<dyn GeneratorParams> {
    fn eq(&self, other: &Self) -> bool {
        self.eq_dyn(&**other)
    }
}

/// A variant argument that must be true or false.
pub fn arg_bool(v: &Value) -> Result<bool, String> {
    v.as_bool()
        .ok_or_else(|| "expected true or false".to_string())
}

/// A variant argument that must be a positive integer.
pub fn arg_positive(v: &Value) -> Result<u64, String> {
    v.as_integer()
        .filter(|&i| i > 0)
        .map(|i| i as u64)
        .ok_or_else(|| "expected a positive integer".to_string())
}

/// A variant argument that must be an integer in `min..=max` (the range its generator's key
/// takes in the task, so an override cannot reach what the task itself may not).
pub fn arg_in_range(v: &Value, min: u64, max: u64) -> Result<u64, String> {
    let out_of_range = || {
        format!(
            "expected an integer in {min}..={max}, found {}",
            describe(v)
        )
    };
    // below 1 keeps the message it always had
    let n = if min >= 1 {
        arg_positive(v)?
    } else {
        v.as_integer()
            .and_then(|i| u64::try_from(i).ok())
            .ok_or_else(out_of_range)?
    };
    if (min..=max).contains(&n) {
        Ok(n)
    } else {
        Err(out_of_range())
    }
}

/// A variant argument that must be a size string.
pub fn arg_size(v: &Value) -> Result<u64, String> {
    v.as_str()
        .ok_or_else(|| "expected a size string".to_string())
        .and_then(parse_size)
}

/// A variant argument that must be the size of one mapping: a size string of at most
/// MAX_MAPPING_BYTES (what a task's 32-bit page numbers can address).
pub fn arg_mapping_size(v: &Value) -> Result<u64, String> {
    let bytes = arg_size(v)?;
    if bytes > MAX_MAPPING_BYTES {
        return Err(format!(
            "expected a size of at most {}, found {}",
            format_size(MAX_MAPPING_BYTES),
            format_size(bytes)
        ));
    }
    Ok(bytes)
}

/// "expected one of usemem, ...": the registry's names.
fn expected_one_of(cx: &Cx, g: &str) -> String {
    format!(
        "expected one of {}, found {g:?}",
        cx.generators.names().join(", ")
    )
}

/// The names of every generator, for messages.
pub(super) fn generator_names(cx: &Cx) -> String {
    cx.generators.names().join(", ")
}

/// The keys a task with `generator = generator` takes besides the task keys; an unknown
/// generator is an error at `path.generator`.
pub(super) fn generator_task_keys(cx: &Cx, path: &str, g: &str) -> Res<&'static [&'static str]> {
    match cx.generators.find(g) {
        Some(def) => Ok(def.params()),
        None => Err(cx.err(&join(path, "generator"), expected_one_of(cx, g))),
    }
}

/// The program of a task with `generator = g`, checked against the machine.
pub(super) fn parse_generator_task(task: &Node, g: &str, machine: &MachineSpec) -> Res<Program> {
    match task.cx.generators.find(g) {
        Some(def) => Ok(Program::Generator(def.parse(task, machine)?)),
        // parse_tasks only lets names of the registry through
        None => Err(task.err("generator", expected_one_of(task.cx, g))),
    }
}

/// Overrides a generator task's parameters with a variant's `args`; tasks that are op lists are
/// left alone. Errors name the argument.
pub(super) fn apply_generator_args(
    program: &mut Program,
    args: &toml::Table,
    files: &[super::FileSpec],
) -> Result<(), (String, String)> {
    // a scenario whose variants give args has a generator task (checked at parse time);
    // its op-list tasks take none
    let Program::Generator(params) = program else {
        return Ok(());
    };
    for (k, v) in args {
        match params.apply_arg(k, v) {
            Ok(true) => {}
            Ok(false) => {
                return Err((
                    k.clone(),
                    "expected a parameter of the scenario's generator".to_string(),
                ))
            }
            Err(m) => return Err((k.clone(), m)),
        }
    }
    params.resolve(files)
}
