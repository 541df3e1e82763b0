//! Walking TOML tables with exact key paths: each table is wrapped in a `Node` that knows its
//! dotted path, refuses keys it does not expect, and reads typed values whose errors name
//! `path.key` and what was expected. Every `InputError` of the scenario file is made here.

use std::collections::BTreeSet;

use toml::{Table, Value};

use super::generators::GeneratorRegistry;
use super::mempolicy::Mempolicy;
use super::units::{format_size, parse_size, parse_time};
use super::InputError;

pub(crate) type Res<T> = Result<T, InputError>;

/// The most one task may map in all, counting every mmap of its program (and of its parent's
/// before a fork): a task's virtual page numbers are 32-bit and start at 1 TiB, so 15 TiB is
/// what they can address. One mapping may take all of it.
pub const MAX_MAPPING_BYTES: u64 = 15 << 40;

pub(crate) struct Cx<'a> {
    pub(crate) file: &'a str,
    /// The generators a task may name (see generators.rs).
    pub(crate) generators: &'a dyn GeneratorRegistry,
}

impl Cx<'_> {
    pub(crate) fn err(&self, key: &str, message: impl Into<String>) -> InputError {
        InputError {
            file: self.file.to_string(),
            key: key.to_string(),
            message: message.into(),
        }
    }
}

pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// A value as a message shows it after "found".
pub(crate) fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => quoted(s),
        Value::Integer(i) => i.to_string(),
        Value::Float(f) => float_text(*f),
        Value::Boolean(b) => b.to_string(),
        Value::Datetime(_) => "a datetime".into(),
        Value::Array(_) => "an array".into(),
        Value::Table(_) => "a table".into(),
    }
}

/// Strings longer than this many characters are echoed by their start and their length, so a
/// message stays one readable line whatever the input holds.
const ECHOED_CHARS: usize = 60;

/// A string as a message echoes it: quoted, and shortened to its first ECHOED_CHARS characters
/// and its length when longer (`"aaaa"… (100000 characters)`).
pub(crate) fn quoted(s: &str) -> String {
    let count = s.chars().count();
    if count <= ECHOED_CHARS {
        return format!("{s:?}");
    }
    let start: String = s.chars().take(ECHOED_CHARS).collect();
    format!("{start:?}… ({count} characters)")
}

/// A float as TOML writes it: `2.0` (not `2`, which would read as the integer expected),
/// `1e30` (not 31 digits), `nan`, `inf`.
fn float_text(f: f64) -> String {
    if f.is_nan() {
        "nan".into()
    } else if f.is_infinite() {
        if f > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        // Debug keeps the ".0" of a whole number and switches to an exponent for large ones
        format!("{f:?}")
    }
}

/// Whether a name can be used for a task, cgroup, swap device, variant, region or barrier.
/// `/` and `=` are excluded because `--set <cgroup>/memory.max=...` splits on them.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+'))
}

/// One TOML table at a known path, with typed accessors whose errors name `path.key`.
pub(crate) struct Node<'a> {
    pub(crate) cx: &'a Cx<'a>,
    pub(crate) table: &'a Table,
    pub(crate) path: String,
}

impl<'a> Node<'a> {
    /// Wraps `table`, refusing keys outside `allowed`.
    pub(crate) fn new(
        cx: &'a Cx<'a>,
        table: &'a Table,
        path: String,
        allowed: &[&str],
    ) -> Res<Node<'a>> {
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

    pub(crate) fn key(&self, k: &str) -> String {
        join(&self.path, k)
    }

    pub(crate) fn err(&self, k: &str, message: impl Into<String>) -> InputError {
        self.cx.err(&self.key(k), message)
    }

    pub(crate) fn missing(&self, k: &str, expected: &str) -> InputError {
        self.err(k, format!("missing key; expected {expected}"))
    }

    pub(crate) fn str_opt(&self, k: &str) -> Res<Option<&'a str>> {
        match self.table.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(v) => Err(self.err(k, format!("expected a string, found {}", describe(v)))),
        }
    }

    /// A required name: non-empty, of letters, digits and `._-+`.
    pub(crate) fn name(&self, k: &str) -> Res<String> {
        let name = self.str_opt(k)?.ok_or_else(|| self.missing(k, "a name"))?;
        if !valid_name(name) {
            return Err(self.err(
                k,
                format!(
                    "expected a non-empty name of letters, digits and ._-+, found {}",
                    quoted(name)
                ),
            ));
        }
        Ok(name.to_string())
    }

    pub(crate) fn int_opt(&self, k: &str, min: i64, max: i64) -> Res<Option<i64>> {
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
    pub(crate) fn mempolicy_opt(&self, k: &str, nr_nodes: u32) -> Res<Option<Option<Mempolicy>>> {
        match self.str_opt(k)? {
            None => Ok(None),
            Some(s) => Mempolicy::parse(s, nr_nodes)
                .map(Some)
                .map_err(|m| self.err(k, m)),
        }
    }

    pub(crate) fn bool_opt(&self, k: &str) -> Res<Option<bool>> {
        match self.table.get(k) {
            None => Ok(None),
            Some(Value::Boolean(b)) => Ok(Some(*b)),
            Some(v) => Err(self.err(k, format!("expected true or false, found {}", describe(v)))),
        }
    }

    /// A size in bytes, from a string (`"512M"`) or an integer (bytes). Zero is allowed here.
    pub(crate) fn size_opt(&self, k: &str) -> Res<Option<u64>> {
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
    pub(crate) fn positive_size(&self, k: &str) -> Res<u64> {
        self.positive_size_opt(k)?
            .ok_or_else(|| self.missing(k, "a size such as 512M"))
    }

    /// The size of one mapping a generator makes: given, greater than 0 and at most
    /// MAX_MAPPING_BYTES.
    pub(crate) fn mapping_size(&self, k: &str) -> Res<u64> {
        let bytes = self.positive_size(k)?;
        if bytes > MAX_MAPPING_BYTES {
            return Err(self.err(
                k,
                format!(
                    "expected a size of at most {} (a task's address space), found {}",
                    format_size(MAX_MAPPING_BYTES),
                    format_size(bytes)
                ),
            ));
        }
        Ok(bytes)
    }

    /// An optional size that, when given, is greater than 0.
    pub(crate) fn positive_size_opt(&self, k: &str) -> Res<Option<u64>> {
        match self.size_opt(k)? {
            Some(0) => Err(self.err(k, "expected a size greater than 0, found 0")),
            bytes => Ok(bytes),
        }
    }

    /// A time in ns, from a string with a unit (`"10ms"`).
    pub(crate) fn time_opt(&self, k: &str) -> Res<Option<u64>> {
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

    pub(crate) fn table_opt(&self, k: &str) -> Res<Option<&'a Table>> {
        match self.table.get(k) {
            None => Ok(None),
            Some(Value::Table(t)) => Ok(Some(t)),
            Some(v) => Err(self.err(k, format!("expected a table, found {}", describe(v)))),
        }
    }

    pub(crate) fn array_opt(&self, k: &str) -> Res<Option<&'a Vec<Value>>> {
        match self.table.get(k) {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a)),
            Some(v) => Err(self.err(k, format!("expected an array, found {}", describe(v)))),
        }
    }

    /// `[[k]]` entries with their paths `k[i]`; a missing key is an empty list.
    pub(crate) fn tables(&self, k: &str) -> Res<Vec<(String, &'a Table)>> {
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
    pub(crate) fn choice_opt<T: Copy>(&self, k: &str, choices: &[(&str, T)]) -> Res<Option<T>> {
        let Some(s) = self.str_opt(k)? else {
            return Ok(None);
        };
        match choices.iter().find(|(name, _)| *name == s) {
            Some((_, v)) => Ok(Some(*v)),
            None => Err(self.err(
                k,
                format!(
                    "expected one of {}, found {}",
                    choice_names(choices),
                    quoted(s)
                ),
            )),
        }
    }

    pub(crate) fn choice<T: Copy>(&self, k: &str, choices: &[(&str, T)]) -> Res<T> {
        self.choice_opt(k, choices)?
            .ok_or_else(|| self.missing(k, &format!("one of {}", choice_names(choices))))
    }
}

pub(crate) fn choice_names<T>(choices: &[(&str, T)]) -> String {
    choices
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Records `name` in `seen`, or names the duplicate.
pub(crate) fn unique(
    cx: &Cx,
    seen: &mut BTreeSet<String>,
    name: &str,
    key: &str,
    what: &str,
) -> Res<()> {
    if !seen.insert(name.to_string()) {
        return Err(cx.err(
            key,
            format!(
                "expected a unique {what} name, found {} a second time",
                quoted(name)
            ),
        ));
    }
    Ok(())
}

pub(crate) fn syntax_error(cx: &Cx, text: &str, e: &toml::de::Error) -> InputError {
    toml_syntax_error(cx.file, text, e)
}

/// A TOML syntax error in `file` (a scenario or a hardware profile): the key names the line and
/// column, the message is the parser's on one line.
pub(crate) fn toml_syntax_error(file: &str, text: &str, e: &toml::de::Error) -> InputError {
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
    InputError {
        file: file.to_string(),
        key,
        message: format!("TOML syntax error: {message}"),
    }
}
