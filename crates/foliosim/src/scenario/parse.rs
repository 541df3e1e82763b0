//! Reads a scenario TOML file into a checked `Scenario`, and resolves a scenario, a profile, a
//! variant and command-line overrides into a `RunSpec`.
//!
//! The TOML is walked by hand rather than with serde derive so that every error names the exact
//! dotted key (`task[1].ops[2].sise`) and what was expected. Unknown keys are errors at every
//! level. Nothing here panics on any input.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use toml::{Table, Value};

use super::knobs::{self, Knobs};
use super::profile::Profile;
use super::{
    Access, Advice, CgroupSpec, FileSpec, InputError, MachineSpec, NodeSpec, Op, Pattern, Program,
    RunSpec, Scenario, SwapKind, SwapSpec, TaskSpec, Tier, Variant,
};
use crate::mm::filemap::{ReadRequest, WriteRequest};
use crate::mm::mempolicy::Mempolicy;

const PAGE_SIZE: u64 = 4096;
/// Longest stretch a task runs before the scheduler looks again.
pub const DEFAULT_SCHED_QUANTUM_NS: u64 = 100_000;
/// Time-series interval when the scenario names none.
pub const DEFAULT_SAMPLE_INTERVAL_NS: u64 = 10_000_000;
/// Hardware cost profile when `[machine]` names none.
pub const DEFAULT_HARDWARE: &str = "x86-server";
/// Profile run when neither the scenario nor the command line names one (current mainline).
pub const DEFAULT_PROFILE: &str = "v6.18";
/// Zipf exponent of a touch that names none (YCSB's 0.99), in thousandths.
pub const DEFAULT_ZIPF_THETA_MILLI: u32 = 990;
/// Content class written by `data = "zero"` and `data = "nonzero"`.
const DATA_ZERO: u8 = crate::mm::folio::content::ZERO;
const DATA_NONZERO: u8 = crate::mm::folio::content::DATA_DEFAULT;
/// Built-in workload generators a task can name.
pub const GENERATORS: &[&str] = &[
    "usemem",
    "thp_swap_allocator",
    "kbuild",
    "zero_subpage",
    "xsbench",
    "file_read",
];
/// Forks nested deeper than this are refused (keeps recursion bounded).
const MAX_FORK_DEPTH: usize = 16;
const MAX_FILE_BYTES: u64 = 1 << 44;
use crate::workload::file_read::{
    DEFAULT_BUFFER_BYTES as DEFAULT_READ_BUFFER_BYTES, DEFAULT_READ_AHEAD_KB,
};

/// Names of the hardware cost profiles `[machine] hardware` accepts.
pub fn hardware_profile_names() -> Vec<String> {
    crate::machine::hw::profile_names()
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// Reads and checks a scenario file. Errors name the path as given.
pub fn load(path: &Path) -> Result<Scenario, InputError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| InputError {
        file: file.clone(),
        key: String::new(),
        message: format!("cannot read: {}", io_error_text(&e)),
    })?;
    let text = String::from_utf8(bytes).map_err(|_| InputError {
        file: file.clone(),
        key: String::new(),
        message: "expected UTF-8 text".into(),
    })?;
    parse_str(&text, &file)
}

/// The io::Error text without the "(os error N)" tail.
fn io_error_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// Parses and checks scenario text; `file` names it in errors.
pub fn parse_str(text: &str, file: &str) -> Result<Scenario, InputError> {
    let cx = Cx { file };
    let table: Table = toml::from_str(text).map_err(|e| syntax_error(&cx, text, &e))?;
    parse_scenario(&cx, &table)
}

fn syntax_error(cx: &Cx, text: &str, e: &toml::de::Error) -> InputError {
    let key = match e.span() {
        Some(span) => {
            let start = span.start.min(text.len());
            // a span may in principle start inside a UTF-8 sequence; step back to a boundary
            let mut at = start;
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            let before = &text[..at];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("line {line}, column {column}")
        }
        None => String::new(),
    };
    let message = e
        .message()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    cx.err(&key, format!("TOML syntax error: {message}"))
}

// ---------------------------------------------------------------------------------------------
// Values: sizes and times

/// Parses a size in bytes: `4096`, `64K`, `512M`, `1G`, `2T` (binary multiples, any case), also
/// `64KiB`, `512MiB`, `1GiB` and `4096B`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let expected = || format!("expected a size such as 4096, 64K, 512M or 1GiB, found {s:?}");
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!("expected a size of at least 0, found {s:?}"));
    }
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if digits_end == 0 {
        return Err(expected());
    }
    let number: u64 = t[..digits_end]
        .parse()
        .map_err(|_| format!("expected a size below 16 EiB, found {s:?}"))?;
    let shift = match t[digits_end..].trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        "t" | "tib" => 40,
        _ => return Err(expected()),
    };
    number
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("expected a size below 16 EiB, found {s:?}"))
}

/// Parses a time in nanoseconds: `500ns`, `10us`, `1ms`, `2s`. A unit is required.
pub fn parse_time(s: &str) -> Result<u64, String> {
    let expected =
        || format!("expected a time with a unit (ns, us, ms, s) such as 10ms, found {s:?}");
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!("expected a time of at least 0, found {s:?}"));
    }
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if digits_end == 0 {
        return Err(expected());
    }
    let number: u64 = t[..digits_end]
        .parse()
        .map_err(|_| format!("expected a time below 584 years, found {s:?}"))?;
    let ns_per_unit: u64 = match t[digits_end..].trim() {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return Err(expected()),
    };
    number
        .checked_mul(ns_per_unit)
        .ok_or_else(|| format!("expected a time below 584 years, found {s:?}"))
}

/// A size for messages: "512 MiB", "1 GiB", or bytes when not a whole multiple.
pub fn format_size(bytes: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1u64 << shift && bytes.is_multiple_of(1u64 << shift) {
            return format!("{} {unit}", bytes >> shift);
        }
    }
    format!("{bytes} bytes")
}

// ---------------------------------------------------------------------------------------------
// Walking TOML tables with exact key paths

type Res<T> = Result<T, InputError>;

struct Cx<'a> {
    file: &'a str,
}

impl Cx<'_> {
    fn err(&self, key: &str, message: impl Into<String>) -> InputError {
        InputError {
            file: self.file.to_string(),
            key: key.to_string(),
            message: message.into(),
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// A value as a message shows it after "found".
fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Integer(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Boolean(b) => b.to_string(),
        Value::Datetime(_) => "a datetime".into(),
        Value::Array(_) => "an array".into(),
        Value::Table(_) => "a table".into(),
    }
}

/// Whether a name can be used for a task, cgroup, swap device, variant, region or barrier.
/// `/` and `=` are excluded because `--set <cgroup>/memory.max=...` splits on them.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+'))
}

/// One TOML table at a known path, with typed accessors whose errors name `path.key`.
struct Node<'a> {
    cx: &'a Cx<'a>,
    table: &'a Table,
    path: String,
}

impl<'a> Node<'a> {
    /// Wraps `table`, refusing keys outside `allowed`.
    fn new(cx: &'a Cx<'a>, table: &'a Table, path: String, allowed: &[&str]) -> Res<Node<'a>> {
        for key in table.keys() {
            if !allowed.contains(&key.as_str()) {
                return Err(cx.err(
                    &join(&path, key),
                    format!("unknown key; expected one of {}", allowed.join(", ")),
                ));
            }
        }
        Ok(Node { cx, table, path })
    }

    fn key(&self, k: &str) -> String {
        join(&self.path, k)
    }

    fn err(&self, k: &str, message: impl Into<String>) -> InputError {
        self.cx.err(&self.key(k), message)
    }

    fn missing(&self, k: &str, expected: &str) -> InputError {
        self.err(k, format!("missing key; expected {expected}"))
    }

    fn str_opt(&self, k: &str) -> Res<Option<&'a str>> {
        match self.table.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(v) => Err(self.err(k, format!("expected a string, found {}", describe(v)))),
        }
    }

    /// A required name: non-empty, of letters, digits and `._-+`.
    fn name(&self, k: &str) -> Res<String> {
        let name = self.str_opt(k)?.ok_or_else(|| self.missing(k, "a name"))?;
        if !valid_name(name) {
            return Err(self.err(
                k,
                format!("expected a non-empty name of letters, digits and ._-+, found {name:?}"),
            ));
        }
        Ok(name.to_string())
    }

    fn int_opt(&self, k: &str, min: i64, max: i64) -> Res<Option<i64>> {
        match self.table.get(k) {
            None => Ok(None),
            Some(Value::Integer(i)) if (min..=max).contains(i) => Ok(Some(*i)),
            Some(v) => Err(self.err(
                k,
                format!(
                    "expected an integer in {min}..={max}, found {}",
                    describe(v)
                ),
            )),
        }
    }

    /// A memory policy string (see `Mempolicy::parse`) over the machine's `nr_nodes`; the outer
    /// None: the key is absent, the inner one: "default".
    fn mempolicy_opt(&self, k: &str, nr_nodes: u32) -> Res<Option<Option<Mempolicy>>> {
        match self.str_opt(k)? {
            None => Ok(None),
            Some(s) => Mempolicy::parse(s, nr_nodes)
                .map(Some)
                .map_err(|m| self.err(k, m)),
        }
    }

    fn bool_opt(&self, k: &str) -> Res<Option<bool>> {
        match self.table.get(k) {
            None => Ok(None),
            Some(Value::Boolean(b)) => Ok(Some(*b)),
            Some(v) => Err(self.err(k, format!("expected true or false, found {}", describe(v)))),
        }
    }

    /// A size in bytes, from a string (`"512M"`) or an integer (bytes). Zero is allowed here.
    fn size_opt(&self, k: &str) -> Res<Option<u64>> {
        match self.table.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => parse_size(s).map(Some).map_err(|m| self.err(k, m)),
            Some(Value::Integer(i)) => u64::try_from(*i)
                .map(Some)
                .map_err(|_| self.err(k, format!("expected a size of at least 0, found {i}"))),
            Some(v) => Err(self.err(
                k,
                format!(
                    "expected a size such as 4096, 64K, 512M or 1GiB, found {}",
                    describe(v)
                ),
            )),
        }
    }

    /// A size that must be given and greater than zero.
    fn positive_size(&self, k: &str) -> Res<u64> {
        self.positive_size_opt(k)?
            .ok_or_else(|| self.missing(k, "a size such as 512M"))
    }

    /// An optional size that, when given, is greater than 0.
    fn positive_size_opt(&self, k: &str) -> Res<Option<u64>> {
        match self.size_opt(k)? {
            Some(0) => Err(self.err(k, "expected a size greater than 0, found 0")),
            bytes => Ok(bytes),
        }
    }

    /// A file's `read_ahead_kb` (the device's readahead maximum) and `large_folios` (the
    /// filesystem's large-folio support), with their defaults.
    fn file_device(&self) -> Res<(u64, bool)> {
        let read_ahead_kb = self
            .int_opt("read_ahead_kb", 0, 1 << 20)?
            .unwrap_or(DEFAULT_READ_AHEAD_KB as i64) as u64;
        Ok((
            read_ahead_kb,
            self.bool_opt("large_folios")?.unwrap_or(true),
        ))
    }

    /// The `size` of a file: greater than 0 and at most MAX_FILE_BYTES.
    fn file_size(&self) -> Res<u64> {
        let size_bytes = self.positive_size("size")?;
        if size_bytes > MAX_FILE_BYTES {
            return Err(self.err("size", "expected a file of at most 16 TiB"));
        }
        Ok(size_bytes)
    }

    /// A time in ns, from a string with a unit (`"10ms"`).
    fn time_opt(&self, k: &str) -> Res<Option<u64>> {
        match self.table.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => parse_time(s).map(Some).map_err(|m| self.err(k, m)),
            Some(v) => Err(self.err(
                k,
                format!(
                    "expected a time string such as \"10ms\" (units ns, us, ms, s), found {}",
                    describe(v)
                ),
            )),
        }
    }

    fn table_opt(&self, k: &str) -> Res<Option<&'a Table>> {
        match self.table.get(k) {
            None => Ok(None),
            Some(Value::Table(t)) => Ok(Some(t)),
            Some(v) => Err(self.err(k, format!("expected a table, found {}", describe(v)))),
        }
    }

    fn array_opt(&self, k: &str) -> Res<Option<&'a Vec<Value>>> {
        match self.table.get(k) {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a)),
            Some(v) => Err(self.err(k, format!("expected an array, found {}", describe(v)))),
        }
    }

    /// `[[k]]` entries with their paths `k[i]`; a missing key is an empty list.
    fn tables(&self, k: &str) -> Res<Vec<(String, &'a Table)>> {
        let items = match self.table.get(k) {
            None => return Ok(Vec::new()),
            Some(Value::Array(a)) => a,
            Some(v) => {
                return Err(self.err(
                    k,
                    format!(
                        "expected an array of tables ([[{k}]]), found {}",
                        describe(v)
                    ),
                ))
            }
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let path = format!("{}[{i}]", self.key(k));
            match item {
                Value::Table(t) => out.push((path, t)),
                v => {
                    return Err(self
                        .cx
                        .err(&path, format!("expected a table, found {}", describe(v))))
                }
            }
        }
        Ok(out)
    }

    /// A string that must be one of `choices`.
    fn choice_opt<T: Copy>(&self, k: &str, choices: &[(&str, T)]) -> Res<Option<T>> {
        let Some(s) = self.str_opt(k)? else {
            return Ok(None);
        };
        match choices.iter().find(|(name, _)| *name == s) {
            Some((_, v)) => Ok(Some(*v)),
            None => Err(self.err(
                k,
                format!("expected one of {}, found {s:?}", choice_names(choices)),
            )),
        }
    }

    fn choice<T: Copy>(&self, k: &str, choices: &[(&str, T)]) -> Res<T> {
        self.choice_opt(k, choices)?
            .ok_or_else(|| self.missing(k, &format!("one of {}", choice_names(choices))))
    }
}

fn choice_names<T>(choices: &[(&str, T)]) -> String {
    choices
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Records `name` in `seen`, or names the duplicate.
fn unique(cx: &Cx, seen: &mut BTreeSet<String>, name: &str, key: &str, what: &str) -> Res<()> {
    if !seen.insert(name.to_string()) {
        return Err(cx.err(
            key,
            format!("expected a unique {what} name, found {name:?} a second time"),
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The scenario

const TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "profiles",
    "sample_interval",
    "sched_quantum",
    "machine",
    "swap",
    "file",
    "cgroup",
    "knobs",
    "variant",
    "task",
    "published",
];

fn parse_scenario(cx: &Cx, table: &Table) -> Res<Scenario> {
    let top = Node::new(cx, table, String::new(), TOP_KEYS)?;
    let name = top.name("name")?;
    let description = top.str_opt("description")?.unwrap_or("").to_string();
    let profiles = parse_profiles(&top)?;
    let sample_interval_ns = top
        .time_opt("sample_interval")?
        .unwrap_or(DEFAULT_SAMPLE_INTERVAL_NS);
    if sample_interval_ns == 0 {
        return Err(top.err("sample_interval", "expected a time greater than 0"));
    }
    let sched_quantum_ns = top
        .time_opt("sched_quantum")?
        .unwrap_or(DEFAULT_SCHED_QUANTUM_NS);
    if !(1_000..=100_000_000).contains(&sched_quantum_ns) {
        return Err(top.err("sched_quantum", "expected a time from 1us to 100ms"));
    }
    let machine = parse_machine(&top)?;
    let total_memory_bytes = machine.memory_bytes();
    let swap = parse_swap(&top)?;
    let cgroups = parse_cgroups(&top, total_memory_bytes)?;
    let limits = Limits {
        cgroups: &cgroups,
        total_memory_bytes,
    };
    let knobs = match top.table_opt("knobs")? {
        Some(t) => parse_knob_table(cx, t, &top.key("knobs"), &limits)?,
        None => Vec::new(),
    };
    let variants = parse_variants(&top, &limits)?;
    let files = parse_files(&top)?;
    let tasks = parse_tasks(&top, &machine, &cgroups, &files)?;
    let published = match top.table_opt("published")? {
        Some(t) => toml_to_json(&Value::Table(t.clone())),
        None => serde_json::Value::Null,
    };
    Ok(Scenario {
        file: cx.file.to_string(),
        name,
        description,
        machine,
        swap,
        files,
        cgroups,
        knobs,
        profiles,
        variants,
        tasks,
        sample_interval_ns,
        sched_quantum_ns,
        published,
    })
}

fn parse_profiles(top: &Node) -> Res<Vec<String>> {
    let Some(items) = top.array_opt("profiles")? else {
        return Ok(vec![DEFAULT_PROFILE.to_string()]);
    };
    if items.is_empty() {
        return Err(top.err("profiles", "expected at least one profile, found []"));
    }
    let mut seen = BTreeSet::new();
    let mut profiles = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let key = format!("{}[{i}]", top.key("profiles"));
        let Value::String(name) = item else {
            return Err(top.cx.err(
                &key,
                format!("expected a profile name string, found {}", describe(item)),
            ));
        };
        Profile::parse(name).map_err(|m| top.cx.err(&key, m))?;
        unique(top.cx, &mut seen, name, &key, "profile")?;
        profiles.push(name.clone());
    }
    Ok(profiles)
}

fn parse_machine(top: &Node) -> Res<MachineSpec> {
    let Some(table) = top.table_opt("machine")? else {
        return Err(top.missing("machine", "a [machine] table with [[machine.node]] entries"));
    };
    let machine = Node::new(top.cx, table, top.key("machine"), &["hardware", "node"])?;
    let hardware = machine
        .str_opt("hardware")?
        .unwrap_or(DEFAULT_HARDWARE)
        .to_string();
    let names = hardware_profile_names();
    if !names.contains(&hardware) {
        return Err(machine.err(
            "hardware",
            format!(
                "expected a hardware profile, one of {}, found {hardware:?}",
                names.join(", ")
            ),
        ));
    }
    let mut nodes = Vec::new();
    for (path, t) in machine.tables("node")? {
        let node = Node::new(top.cx, t, path, &["memory", "cpus", "tier"])?;
        let memory_bytes = node.positive_size("memory")?;
        if memory_bytes % PAGE_SIZE != 0 {
            return Err(node.err(
                "memory",
                format!("expected a multiple of 4 KiB, found {memory_bytes} bytes"),
            ));
        }
        let cpus = node.int_opt("cpus", 0, 4096)?.unwrap_or(0) as u32;
        let tier = node
            .choice_opt("tier", &[("dram", Tier::Dram), ("cxl", Tier::Cxl)])?
            .unwrap_or(Tier::Dram);
        nodes.push(NodeSpec {
            memory_bytes,
            cpus,
            tier,
        });
    }
    if nodes.is_empty() {
        return Err(machine.err(
            "node",
            "expected at least one [[machine.node]] with memory and cpus",
        ));
    }
    let max_nodes = crate::mm::mempolicy::MAX_NUMNODES as usize;
    if nodes.len() > max_nodes {
        return Err(machine.err(
            "node",
            format!(
                "expected at most {max_nodes} [[machine.node]] entries, found {}",
                nodes.len()
            ),
        ));
    }
    let spec = MachineSpec { hardware, nodes };
    if spec.nr_cpus() == 0 {
        return Err(machine.err("node", "expected at least one CPU on some node, found none"));
    }
    Ok(spec)
}

const MAX_SWAP_BYTES: u64 = (1 << 27) * PAGE_SIZE;

fn parse_swap(top: &Node) -> Res<Vec<SwapSpec>> {
    let kinds = [
        ("brd", SwapKind::Brd),
        ("zram", SwapKind::Zram),
        ("ssd", SwapKind::Ssd),
        ("hdd", SwapKind::Hdd),
        ("file", SwapKind::File),
    ];
    let mut seen = BTreeSet::new();
    let mut devices = Vec::new();
    // swapon gives devices without a priority -2, -3, ... in the order they are enabled
    let mut least_priority = -1;
    for (path, t) in top.tables("swap")? {
        let dev = Node::new(
            top.cx,
            t,
            path,
            &["name", "kind", "size", "priority", "discard"],
        )?;
        let name = dev.name("name")?;
        unique(top.cx, &mut seen, &name, &dev.key("name"), "swap device")?;
        let kind = dev.choice("kind", &kinds)?;
        let size_bytes = dev.positive_size("size")?;
        if size_bytes % PAGE_SIZE != 0 {
            return Err(dev.err(
                "size",
                format!("expected a multiple of 4 KiB, found {size_bytes} bytes"),
            ));
        }
        // Swap entries carry a 27-bit offset.
        if size_bytes > MAX_SWAP_BYTES {
            return Err(dev.err(
                "size",
                format!("expected at most 512G, found {}", format_size(size_bytes)),
            ));
        }
        if size_bytes < 2 * PAGE_SIZE {
            return Err(dev.err("size", "expected at least 8K: a header page and one slot"));
        }
        let priority = match dev.int_opt("priority", -32768, 32767)? {
            Some(p) => p as i32,
            None => {
                least_priority -= 1;
                least_priority
            }
        };
        let discard = dev.bool_opt("discard")?.unwrap_or(false);
        devices.push(SwapSpec {
            name,
            kind,
            size_bytes,
            priority,
            discard,
        });
    }
    Ok(devices)
}

fn parse_cgroups(top: &Node, total_memory_bytes: u64) -> Res<Vec<CgroupSpec>> {
    let mut seen = BTreeSet::new();
    let mut cgroups = Vec::new();
    for (path, t) in top.tables("cgroup")? {
        // `memory.max = ...` unquoted is a nested table: say how to write it
        if let Some(Value::Table(_)) = t.get("memory") {
            return Err(top.cx.err(
                &join(&path, "memory"),
                "unknown key; expected \"memory.max\" with quotes, as in \"memory.max\" = \"1G\"",
            ));
        }
        let cg = Node::new(top.cx, t, path, &["name", "memory.max"])?;
        let name = cg.name("name")?;
        unique(top.cx, &mut seen, &name, &cg.key("name"), "cgroup")?;
        let memory_max_bytes = match cg.table.get("memory.max") {
            None => None,
            Some(Value::String(s)) => {
                knobs::parse_memory_max(s).map_err(|m| cg.err("memory.max", m))?
            }
            Some(Value::Integer(i)) if *i > 0 => Some(*i as u64),
            Some(v) => {
                return Err(cg.err(
                    "memory.max",
                    format!(
                        "expected a size greater than 0 or \"max\", found {}",
                        describe(v)
                    ),
                ))
            }
        };
        if let Some(limit) = memory_max_bytes {
            check_limit_fits(limit, total_memory_bytes).map_err(|m| cg.err("memory.max", m))?;
        }
        cgroups.push(CgroupSpec {
            name,
            memory_max_bytes,
        });
    }
    Ok(cgroups)
}

fn check_limit_fits(limit_bytes: u64, total_memory_bytes: u64) -> Result<(), String> {
    if limit_bytes > total_memory_bytes {
        return Err(format!(
            "expected a limit no larger than the machine's memory ({}), found {}",
            format_size(total_memory_bytes),
            format_size(limit_bytes)
        ));
    }
    Ok(())
}

/// What a memory.max knob is checked against.
struct Limits<'a> {
    cgroups: &'a [CgroupSpec],
    total_memory_bytes: u64,
}

/// Sets one knob, checking memory.max forms against the scenario's cgroups and memory.
fn apply_knob(knobs: &mut Knobs, path: &str, value: &str, limits: &Limits) -> Result<(), String> {
    if let Some(cgroup) = knobs::memory_max_cgroup(path) {
        match cgroup {
            Some(name) if !limits.cgroups.iter().any(|c| c.name == name) => {
                return Err(format!(
                    "expected a cgroup defined by [[cgroup]] ({}), found {name:?}",
                    cgroup_names(limits.cgroups)
                ));
            }
            None if limits.cgroups.is_empty() => {
                return Err("expected a scenario with a [[cgroup]] to limit, found none".into());
            }
            _ => {}
        }
        if let Some(limit) = knobs::parse_memory_max(value)? {
            check_limit_fits(limit, limits.total_memory_bytes)?;
        }
    }
    knobs.set(path, value)
}

fn cgroup_names(cgroups: &[CgroupSpec]) -> String {
    if cgroups.is_empty() {
        return "none defined".into();
    }
    cgroups
        .iter()
        .map(|c| c.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A `[knobs]`-style table: kernel path -> value (string, integer or boolean), each checked.
fn parse_knob_table(
    cx: &Cx,
    table: &Table,
    path: &str,
    limits: &Limits,
) -> Res<Vec<(String, String)>> {
    let mut settings = Vec::new();
    let mut scratch = Knobs::default();
    for (knob, value) in table {
        let key = join(path, knob);
        let value = match value {
            Value::String(s) => s.clone(),
            Value::Integer(i) => i.to_string(),
            Value::Boolean(b) => b.to_string(),
            v => {
                return Err(cx.err(
                    &key,
                    format!(
                        "expected a string, an integer or a boolean, found {}",
                        describe(v)
                    ),
                ))
            }
        };
        apply_knob(&mut scratch, knob, &value, limits).map_err(|m| cx.err(&key, m))?;
        settings.push((knob.clone(), value));
    }
    // Tables come back sorted by key; a bare memory.max must go first so that a
    // `<cgroup>/memory.max` in the same table refines it rather than being overwritten.
    settings.sort_by_key(|(knob, _)| knob != "memory.max");
    Ok(settings)
}

fn parse_variants(top: &Node, limits: &Limits) -> Res<Vec<Variant>> {
    let mut seen = BTreeSet::new();
    let mut variants = Vec::new();
    for (path, t) in top.tables("variant")? {
        let v = Node::new(top.cx, t, path, &["name", "knobs", "args", "swapon"])?;
        let name = v.name("name")?;
        unique(top.cx, &mut seen, &name, &v.key("name"), "variant")?;
        let knobs = match v.table_opt("knobs")? {
            Some(t) => parse_knob_table(top.cx, t, &v.key("knobs"), limits)?,
            None => Vec::new(),
        };
        let args = v.table_opt("args")?.cloned().unwrap_or_default();
        let swapon = match v.array_opt("swapon")? {
            None => None,
            Some(list) => Some(
                list.iter()
                    .map(|d| {
                        d.as_str()
                            .map(str::to_string)
                            .ok_or_else(|| v.err("swapon", "expected a list of swap device names"))
                    })
                    .collect::<Res<Vec<String>>>()?,
            ),
        };
        variants.push(Variant {
            name,
            knobs,
            args,
            swapon,
        });
    }
    Ok(variants)
}

// ---------------------------------------------------------------------------------------------
// Tasks and their programs

const TASK_KEYS: &[&str] = &["name", "cgroup", "node", "mempolicy", "generator", "ops"];

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

/// `[[file]]`: files on the machine's disk, for the file ops of op programs. A file's id is its
/// position here.
fn parse_files(top: &Node) -> Res<Vec<FileSpec>> {
    let mut seen = BTreeSet::new();
    let mut files = Vec::new();
    for (path, t) in top.tables("file")? {
        let f = Node::new(
            top.cx,
            t,
            path,
            &["name", "size", "read_ahead_kb", "large_folios"],
        )?;
        let name = f.name("name")?;
        unique(top.cx, &mut seen, &name, &f.key("name"), "file")?;
        let size_bytes = f.file_size()?;
        let (read_ahead_kb, large_folios) = f.file_device()?;
        files.push(FileSpec {
            name,
            size_bytes,
            read_ahead_kb,
            large_folios,
        });
    }
    Ok(files)
}

fn parse_tasks(
    top: &Node,
    machine: &MachineSpec,
    cgroups: &[CgroupSpec],
    files: &[FileSpec],
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
        let mut allowed: Vec<&str> = TASK_KEYS.to_vec();
        if let Some(g) = generator {
            let params = generator_params(g).ok_or_else(|| {
                top.cx.err(
                    &join(&path, "generator"),
                    format!("expected one of {}, found {g:?}", GENERATORS.join(", ")),
                )
            })?;
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
        let program = match (generator, task.array_opt("ops")?) {
            (Some(_), Some(_)) => {
                return Err(task.err("ops", "expected either generator or ops, not both"))
            }
            (None, None) => {
                return Err(task.missing(
                    "generator",
                    &format!("a generator ({}) or an ops list", GENERATORS.join(", ")),
                ))
            }
            (Some(g), None) => {
                let program = parse_generator(&task, g)?;
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
                };
                Program::Ops(parse_ops(
                    &cx,
                    ops,
                    &path,
                    &mut regions,
                    &mut BTreeSet::new(),
                    &mut names,
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
        });
    }
    Ok(tasks)
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
                        regions.insert(region.clone(), size_bytes);
                        if !write {
                            readonly.insert(region);
                        }
                    }
                    op
                } else {
                    for k in ["offset", "shared", "prot"] {
                        if node.table.contains_key(k) {
                            return Err(node.err(
                                k,
                                "expected this key only in an mmap of a file (with file = \"NAME\")",
                            ));
                        }
                    }
                    let size_bytes = node.positive_size("size")?;
                    regions.insert(region.clone(), size_bytes);
                    Op::Mmap { region, size_bytes }
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
                let child = parse_ops(
                    ocx,
                    child_items,
                    &node.key("ops"),
                    &mut child_regions,
                    &mut child_readonly,
                    names,
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

/// `[published]` as JSON: tables become objects (sorted keys), datetimes strings, and floats that
/// JSON cannot hold (nan, inf) strings.
fn toml_to_json(v: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        Value::String(s) => J::String(s.clone()),
        Value::Integer(i) => J::from(*i),
        Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(J::Number)
            .unwrap_or_else(|| J::String(f.to_string())),
        Value::Boolean(b) => J::Bool(*b),
        Value::Datetime(d) => J::String(d.to_string()),
        Value::Array(a) => J::Array(a.iter().map(toml_to_json).collect()),
        Value::Table(t) => J::Object(
            t.iter()
                .map(|(k, v)| (k.clone(), toml_to_json(v)))
                .collect(),
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// Resolving one run

/// Builds the spec of one run: the kernel defaults, then the scenario's knobs, then the variant's,
/// then the `--set` overrides, in that order. A `memory.max` override is also written into the
/// spec's copy of the cgroups, so either place reads the same limit.
///
/// Errors about the profile name the file `--profile`, about the variant `--variant`, and about an
/// override `--set` with the knob path as key.
pub fn resolve(
    scenario: &Scenario,
    profile: &str,
    variant: Option<&str>,
    sets: &[(String, String)],
    seed: u64,
    check: bool,
) -> Result<RunSpec, InputError> {
    let arg_err = |file: &str, key: &str, message: String| InputError {
        file: file.to_string(),
        key: key.to_string(),
        message,
    };
    let profile = Profile::parse(profile).map_err(|m| arg_err("--profile", profile, m))?;
    let variant = match variant {
        None => None,
        Some(name) => Some(
            scenario
                .variants
                .iter()
                .find(|v| v.name == name)
                .ok_or_else(|| arg_err("--variant", name, variant_expectation(scenario, name)))?,
        ),
    };
    let total_memory_bytes = scenario.machine.memory_bytes();
    let limits = Limits {
        cgroups: &scenario.cgroups,
        total_memory_bytes,
    };
    let mut knobs = Knobs::default();
    for (path, value) in &scenario.knobs {
        apply_knob(&mut knobs, path, value, &limits)
            .map_err(|m| arg_err(&scenario.file, &join("knobs", path), m))?;
    }
    if let Some(v) = variant {
        let index = scenario
            .variants
            .iter()
            .position(|x| x.name == v.name)
            .unwrap_or(0);
        for (path, value) in &v.knobs {
            apply_knob(&mut knobs, path, value, &limits).map_err(|m| {
                arg_err(&scenario.file, &format!("variant[{index}].knobs.{path}"), m)
            })?;
        }
    }
    for (path, value) in sets {
        apply_knob(&mut knobs, path, value, &limits).map_err(|m| arg_err("--set", path, m))?;
    }
    let mut scenario = scenario.clone();
    if let Some(v) = variant {
        if let Some(names) = &v.swapon {
            if let Some(bad) = names
                .iter()
                .find(|n| !scenario.swap.iter().any(|s| &s.name == *n))
            {
                return Err(arg_err(
                    &scenario.file,
                    &format!("variant.{}.swapon", v.name),
                    format!("expected a [[swap]] name, found {bad:?}"),
                ));
            }
            scenario.swap.retain(|s| names.contains(&s.name));
        }
        for task in scenario.tasks.iter_mut() {
            apply_generator_args(&mut task.program, &v.args).map_err(|(k, m)| {
                arg_err(&scenario.file, &format!("variant.{}.args.{k}", v.name), m)
            })?;
        }
    }
    for (cgroup, limit) in &knobs.memory_max {
        for cg in scenario.cgroups.iter_mut() {
            if cgroup.as_deref().is_none_or(|name| name == cg.name) {
                cg.memory_max_bytes = *limit;
            }
        }
    }
    Ok(RunSpec {
        scenario,
        profile,
        variant: variant.map(|v| v.name.clone()),
        knobs,
        seed,
        check,
    })
}

/// Overrides a generator task's parameters with a variant's `args`; tasks that are op lists are
/// left alone. Errors name the argument.
fn apply_generator_args(program: &mut Program, args: &toml::Table) -> Result<(), (String, String)> {
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

fn variant_expectation(scenario: &Scenario, name: &str) -> String {
    if scenario.variants.is_empty() {
        return format!(
            "expected no --variant, as {} defines no [[variant]]",
            scenario.file
        );
    }
    format!(
        "expected one of {}, found {name:?}",
        scenario
            .variants
            .iter()
            .map(|v| v.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Splits a `--set PATH=VALUE` argument at the first `=`.
pub fn parse_set(arg: &str) -> Result<(String, String), InputError> {
    match arg.split_once('=') {
        Some((path, value)) if !path.is_empty() => Ok((path.to_string(), value.to_string())),
        _ => Err(InputError {
            file: "--set".into(),
            key: arg.to_string(),
            message: "expected PATH=VALUE, e.g. /proc/sys/vm/swappiness=100".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
name = "t"
[machine]
[[machine.node]]
memory = "8G"
cpus = 4
[[task]]
name = "u"
generator = "usemem"
size = "1M"
"#;

    fn parse(text: &str) -> Result<Scenario, InputError> {
        parse_str(text, "t.toml")
    }

    /// Parses MINIMAL with `extra` appended, expecting an error at `key` whose message contains
    /// `needle`.
    fn expect_err(extra: &str, key: &str, needle: &str) -> InputError {
        // top-level keys must come before the first table header
        let text = if extra.starts_with('[') {
            format!("{MINIMAL}\n{extra}")
        } else {
            format!("{extra}\n{MINIMAL}")
        };
        let e = parse(&text).expect_err("expected an error");
        assert_eq!(e.file, "t.toml");
        assert_eq!(e.key, key, "{e}");
        assert!(e.message.contains(needle), "{e}");
        assert!(!e.to_string().contains('\n'), "one line: {e}");
        e
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("1 G"), Ok(1 << 30));
        assert_eq!(parse_size("2T"), Ok(2 << 40));
        assert_eq!(parse_size("4096B"), Ok(4096));
        assert_eq!(parse_size("0"), Ok(0));
        for bad in [
            "",
            "M",
            "-1G",
            "1.5G",
            "12X",
            "1GB",
            "99999999999999999999",
            "16777216T",
        ] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
        assert!(parse_size("-1G").unwrap_err().contains("at least 0"));
        assert_eq!(format_size(512 << 20), "512 MiB");
        assert_eq!(format_size(4097), "4097 bytes");
    }

    #[test]
    fn times() {
        assert_eq!(parse_time("500ns"), Ok(500));
        assert_eq!(parse_time("10us"), Ok(10_000));
        assert_eq!(parse_time("1ms"), Ok(1_000_000));
        assert_eq!(parse_time("2s"), Ok(2_000_000_000));
        assert_eq!(parse_time("0ns"), Ok(0));
        for bad in ["", "10", "ms", "-1ms", "1.5ms", "1h", "99999999999s"] {
            assert!(parse_time(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn defaults() {
        let s = parse(&format!(
            "{MINIMAL}\n[[swap]]\nname = \"a\"\nkind = \"ssd\"\nsize = \"1G\"\n\
             [[swap]]\nname = \"b\"\nkind = \"zram\"\nsize = \"1G\"\npriority = 5\n\
             [[swap]]\nname = \"c\"\nkind = \"brd\"\nsize = \"1G\"\n"
        ))
        .unwrap();
        let priorities: Vec<i32> = s.swap.iter().map(|d| d.priority).collect();
        // like swapon: only devices without a priority take -2, -3, ...
        assert_eq!(priorities, vec![-2, 5, -3]);
        assert!(s.swap.iter().all(|d| !d.discard));
        assert_eq!(s.profiles, vec![DEFAULT_PROFILE.to_string()]);
        assert_eq!(s.sample_interval_ns, DEFAULT_SAMPLE_INTERVAL_NS);
        assert_eq!(s.machine.hardware, DEFAULT_HARDWARE);
        assert_eq!(s.machine.nodes[0].tier, Tier::Dram);
        assert_eq!(s.tasks[0].node, 0);
        assert_eq!(
            s.tasks[0].program,
            Program::Usemem {
                processes: 1,
                size_bytes: 1 << 20
            }
        );
        assert_eq!(s.published, serde_json::Value::Null);
        assert_eq!(s.description, "");
    }

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
                mode: crate::mm::mempolicy::MpolMode::Bind,
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
            &mmap("size = \"4K\", shared = true"),
            "task[1].ops[0].shared",
            "only in an mmap of a file",
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
    fn errors_name_the_key() {
        expect_err("bogus = 1", "bogus", "unknown key");
        expect_err(
            "[[swap]]\nname = \"s\"\nkind = \"brd\"\nsize = 0",
            "swap[0].size",
            "greater than 0",
        );
        expect_err(
            "[[swap]]\nname = \"s\"\nkind = \"brd\"\nsize = \"0\"",
            "swap[0].size",
            "greater than 0",
        );
        expect_err(
            "[[swap]]\nname = \"s\"\nkind = \"brd\"\nsize = \"-4G\"",
            "swap[0].size",
            "at least 0",
        );
        expect_err(
            "[[swap]]\nname = \"s\"\nkind = \"brd\"\nsize = -4",
            "swap[0].size",
            "at least 0",
        );
        expect_err(
            "[[swap]]\nname = \"s\"\nkind = \"tape\"\nsize = \"1G\"",
            "swap[0].kind",
            "brd, zram, ssd, hdd",
        );
        expect_err("[[swap]]\nname = \"s\"\nkind = \"brd\"\nsize = \"1G\"\n[[swap]]\nname = \"s\"\nkind = \"brd\"\nsize = \"1G\"", "swap[1].name", "unique");
        expect_err(
            "[[cgroup]]\nname = \"c\"\n\"memory.max\" = \"9G\"",
            "cgroup[0].memory.max",
            "no larger than the machine's memory (8 GiB)",
        );
        expect_err(
            "[[cgroup]]\nname = \"c\"\nmemory.max = \"1G\"",
            "cgroup[0].memory",
            "quotes",
        );
        expect_err(
            "[knobs]\n\"/sys/kernel/mm/nope\" = 1",
            "knobs./sys/kernel/mm/nope",
            "unknown knob",
        );
        expect_err(
            "[knobs]\n\"/proc/sys/vm/swappiness\" = 300",
            "knobs./proc/sys/vm/swappiness",
            "0..=200",
        );
        expect_err(
            "[knobs]\n\"/sys/kernel/mm/transparent_hugepage/enabled\" = \"sometimes\"",
            "knobs./sys/kernel/mm/transparent_hugepage/enabled",
            "always|madvise|never",
        );
        expect_err(
            "[knobs]\n\"nope/memory.max\" = \"1G\"",
            "knobs.nope/memory.max",
            "expected a cgroup",
        );
        expect_err(
            "[[variant]]\nname = \"v\"\nknobs = { \"/proc/sys/vm/swappiness\" = \"x\" }",
            "variant[0].knobs./proc/sys/vm/swappiness",
            "0..=200",
        );
        expect_err(
            "[[variant]]\nname = \"v\"\nsise = 1",
            "variant[0].sise",
            "unknown key",
        );
        expect_err(
            "profiles = [\"v6.9\", \"v7.0\"]",
            "profiles[1]",
            "v6.9|v6.10|v6.12|v6.18",
        );
        expect_err("profiles = [\"v6.9\", \"v6.9\"]", "profiles[1]", "unique");
        expect_err("sample_interval = \"10\"", "sample_interval", "unit");
        expect_err("sample_interval = 10", "sample_interval", "time string");
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

    #[test]
    fn machine_errors() {
        let no_cpus = "name = \"t\"\n[machine]\n[[machine.node]]\nmemory = \"1G\"\n[[task]]\nname = \"u\"\ngenerator = \"usemem\"\nsize = \"1M\"";
        let e = parse(no_cpus).unwrap_err();
        assert_eq!(e.key, "machine.node");
        let no_nodes = "name = \"t\"\n[machine]\n[[task]]\nname = \"u\"\ngenerator = \"usemem\"\nsize = \"1M\"";
        let e = parse(no_nodes).unwrap_err();
        assert_eq!(e.key, "machine.node");
        let bad_hw = MINIMAL.replace("[machine]", "[machine]\nhardware = \"vax\"");
        let e = parse(&bad_hw).unwrap_err();
        assert_eq!(e.key, "machine.hardware");
        assert!(e.message.contains("x86-server"), "{e}");
        let zero_mem = MINIMAL.replace("\"8G\"", "0");
        assert_eq!(parse(&zero_mem).unwrap_err().key, "machine.node[0].memory");
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let e = parse("name = \"t\"\n[machine\n").unwrap_err();
        assert_eq!(e.file, "t.toml");
        assert!(e.key.starts_with("line 2"), "{e}");
        assert!(!e.to_string().contains('\n'), "{e}");
        let e = parse("name = \"t\"\nname = \"u\"\n").unwrap_err();
        assert!(e.key.starts_with("line 2"), "{e}");
    }

    #[test]
    fn load_reports_missing_file() {
        let e = load(Path::new("/nonexistent/foliosim/x.toml")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/nonexistent/foliosim/x.toml: cannot read: No such file or directory"
        );
    }

    #[test]
    fn published_becomes_json() {
        let s = parse(&format!(
            "{MINIMAL}\n[published]\nunit = \"s\"\nfigures = [{{ a = 1, b = 2.5 }}]\n"
        ))
        .unwrap();
        assert_eq!(
            s.published,
            serde_json::json!({"unit": "s", "figures": [{"a": 1, "b": 2.5}]})
        );
    }

    #[test]
    fn resolve_applies_scenario_then_variant_then_set() {
        let swappiness = "/proc/sys/vm/swappiness";
        let s = parse(&format!(
            "{MINIMAL}\n[[cgroup]]\nname = \"bench\"\n\"memory.max\" = \"1G\"\n\
             [knobs]\n\"{swappiness}\" = 10\n\"/proc/sys/vm/page-cluster\" = 0\n\
             \"/sys/kernel/mm/transparent_hugepage/enabled\" = \"never\"\n\
             [[variant]]\nname = \"v\"\nknobs = {{ \"{swappiness}\" = 20, \"/proc/sys/vm/page-cluster\" = 1 }}\n"
        ))
        .unwrap();
        let base = resolve(&s, "v6.12", None, &[], 7, false).unwrap();
        assert_eq!(base.knobs.swappiness, 10);
        assert_eq!(base.knobs.page_cluster, 0);
        assert_eq!(base.knobs.thp_enabled, knobs::ThpEnabled::Never);
        assert_eq!(base.variant, None);
        assert_eq!(base.seed, 7);
        let with_variant = resolve(&s, "v6.12", Some("v"), &[], 1, true).unwrap();
        assert_eq!(with_variant.knobs.swappiness, 20);
        assert_eq!(with_variant.knobs.page_cluster, 1);
        assert_eq!(with_variant.knobs.thp_enabled, knobs::ThpEnabled::Never);
        assert_eq!(with_variant.variant.as_deref(), Some("v"));
        assert!(with_variant.check);
        let sets = vec![
            (swappiness.to_string(), "30".to_string()),
            ("bench/memory.max".to_string(), "470M".to_string()),
        ];
        let with_set = resolve(&s, "v6.12+migrc", Some("v"), &sets, 1, false).unwrap();
        assert_eq!(with_set.knobs.swappiness, 30);
        assert_eq!(with_set.knobs.page_cluster, 1);
        assert!(with_set.profile.migrc);
        assert_eq!(
            with_set.knobs.memory_max,
            vec![(Some("bench".to_string()), Some(470 << 20))]
        );
        assert_eq!(
            with_set.scenario.cgroups[0].memory_max_bytes,
            Some(470 << 20)
        );
        // the scenario itself is untouched
        assert_eq!(s.cgroups[0].memory_max_bytes, Some(1 << 30));
    }

    #[test]
    fn resolve_errors_name_their_source() {
        let s = parse(&format!("{MINIMAL}\n[[cgroup]]\nname = \"bench\"\n")).unwrap();
        let set = |p: &str, v: &str| vec![(p.to_string(), v.to_string())];
        let e = resolve(&s, "v6.12", None, &set("/proc/sys/vm/nope", "1"), 1, false).unwrap_err();
        assert_eq!(
            (e.file.as_str(), e.key.as_str()),
            ("--set", "/proc/sys/vm/nope")
        );
        let e = resolve(&s, "v6.12", None, &set("memory.max", "9G"), 1, false).unwrap_err();
        assert_eq!((e.file.as_str(), e.key.as_str()), ("--set", "memory.max"));
        assert!(e.message.contains("8 GiB"), "{e}");
        let e = resolve(&s, "v6.12", None, &set("other/memory.max", "1G"), 1, false).unwrap_err();
        assert!(e.message.contains("bench"), "{e}");
        let e = resolve(&s, "v5.0", None, &[], 1, false).unwrap_err();
        assert_eq!((e.file.as_str(), e.key.as_str()), ("--profile", "v5.0"));
        let e = resolve(&s, "v6.12", Some("x"), &[], 1, false).unwrap_err();
        assert_eq!((e.file.as_str(), e.key.as_str()), ("--variant", "x"));
        let all = resolve(&s, "v6.12", None, &set("memory.max", "2G"), 1, false).unwrap();
        assert_eq!(all.scenario.cgroups[0].memory_max_bytes, Some(2 << 30));
        assert!(parse_set("novalue").is_err());
        assert_eq!(
            parse_set("a=b=c").unwrap(),
            ("a".to_string(), "b=c".to_string())
        );
    }

    #[test]
    fn never_panics_on_odd_input() {
        let inputs = [
            "",
            "=",
            "name = 1",
            "name = \"\"",
            "[machine]\nnode = 3",
            "name = \"t\"\nmachine = []",
            "name = \"t\"\n[machine]\n[[machine.node]]\nmemory = \"1G\"\ncpus = -1",
            "name = \"t\"\n[[task]]\nops = 1",
            "\u{feff}name = \"t\"",
            "name = \"é\"\n[x\u{e9}",
            "task = [1, 2]",
            "swap = [[]]",
        ];
        for text in inputs {
            let _ = parse(text);
        }
        let mut text = String::from(MINIMAL);
        text.push_str("[[task]]\nname = \"deep\"\nops = ");
        for i in 0..20 {
            text.push_str(&format!("[{{ op = \"fork\", name = \"f{i}\", ops = "));
        }
        text.push_str("[]");
        for _ in 0..20 {
            text.push_str("}]");
        }
        let e = parse(&text).unwrap_err();
        assert!(e.message.contains("nested"), "{e}");
    }
}
