//! Reads a scenario TOML file into a checked `Scenario`, and resolves a scenario, a profile, a
//! variant and command-line overrides into a `RunSpec`.
//!
//! The TOML is walked by hand rather than with serde derive so that every error names the exact
//! dotted key (`task[1].ops[2].sise`) and what was expected. Unknown keys are errors at every
//! level. Nothing here panics on any input.
//!
//! The pieces live beside this file: `units` (sizes and times), `walker` (the key-tracking TOML
//! walker and its errors), `machine` (machine, swap, cgroups, files), `ops` (tasks and their op
//! programs), `generators` (the built-in generators' parameters) and `resolve` (knobs, variants
//! and one run's `RunSpec`).

use std::collections::BTreeSet;
use std::path::Path;

use toml::{Table, Value};

use super::generators::GeneratorRegistry;
use super::machine::{parse_cgroups, parse_files, parse_machine, parse_swap};
use super::ops::parse_tasks;
use super::profile::Profile;
use super::resolve::{parse_knob_table, parse_variants, Limits};
use super::walker::{describe, syntax_error, unique, Cx, Node, Res};
use super::{InputError, Program, Scenario, TaskSpec, Variant, MIN_SAMPLE_INTERVAL_NS};

pub use super::machine::hardware_profile_names;
pub use super::resolve::{parse_set, resolve};
pub use super::units::{format_size, parse_size, parse_time};

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

/// Reads and checks a scenario file, its generator tasks by `generators` (the engine's
/// `Scenario::load` passes the workload's registry). Errors name the path as given.
pub(crate) fn load(
    path: &Path,
    generators: &dyn GeneratorRegistry,
) -> Result<Scenario, InputError> {
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
    parse_str(&text, &file, generators)
}

/// The io::Error text without the "(os error N)" tail.
pub(crate) fn io_error_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// Parses and checks scenario text; `file` names it in errors.
pub(crate) fn parse_str(
    text: &str,
    file: &str,
    generators: &dyn GeneratorRegistry,
) -> Result<Scenario, InputError> {
    let cx = Cx { file, generators };
    let table: Table = toml::from_str(text).map_err(|e| syntax_error(&cx, text, &e))?;
    parse_scenario(&cx, &table)
}

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
    if sample_interval_ns < MIN_SAMPLE_INTERVAL_NS {
        return Err(top.err(
            "sample_interval",
            format!(
                "expected a time of at least 1ms (the time series takes a row per interval), \
                 found {sample_interval_ns}ns"
            ),
        ));
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
    let tasks = parse_tasks(&top, &machine, &cgroups, &files, sample_interval_ns)?;
    check_variant_args(&top, &variants, &tasks)?;
    let published = match top.table_opt("published")? {
        Some(t) => {
            check_published(&top, t, &profiles, &variants)?;
            toml_to_json(&Value::Table(t.clone()))
        }
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

/// A variant's `args` override generator parameters: a scenario without a generator task has
/// nothing for them to apply to.
fn check_variant_args(top: &Node, variants: &[Variant], tasks: &[TaskSpec]) -> Res<()> {
    let has_generator = tasks
        .iter()
        .any(|t| matches!(t.program, Program::Generator(_)));
    if has_generator {
        return Ok(());
    }
    match variants.iter().position(|v| !v.args.is_empty()) {
        Some(i) => Err(top.cx.err(
            &format!("variant[{i}].args"),
            "expected args only in a scenario with a generator task (no [[task]] names a \
             generator, and op lists take no args)",
        )),
        None => Ok(()),
    }
}

/// `[published]`: `source`, `notes` and `[[published.figure]]` entries, each naming a run of
/// this scenario (one of its `profiles`, one of its variants) and a `metric` (whose grammar the
/// engine checks at load, see lib.rs), with the seed's figure as `published`.
fn check_published(
    top: &Node,
    table: &Table,
    profiles: &[String],
    variants: &[Variant],
) -> Res<()> {
    let published = Node::new(
        top.cx,
        table,
        top.key("published"),
        &["source", "notes", "figure"],
    )?;
    published.str_opt("source")?;
    if let Some(notes) = published.array_opt("notes")? {
        for (i, note) in notes.iter().enumerate() {
            if !note.is_str() {
                return Err(top.cx.err(
                    &format!("{}[{i}]", published.key("notes")),
                    format!("expected a string, found {}", describe(note)),
                ));
            }
        }
    }
    for (path, t) in published.tables("figure")? {
        let figure = Node::new(
            top.cx,
            t,
            path,
            &["label", "profile", "variant", "metric", "published"],
        )?;
        figure.str_opt("label")?;
        let profile = figure
            .str_opt("profile")?
            .ok_or_else(|| figure.missing("profile", "one of the scenario's profiles"))?;
        if !profiles.iter().any(|p| p == profile) {
            return Err(figure.err(
                "profile",
                format!(
                    "expected one of the scenario's profiles ({}), found {profile:?}",
                    profiles.join(", ")
                ),
            ));
        }
        if let Some(variant) = figure.str_opt("variant")? {
            if !variants.iter().any(|v| v.name == variant) {
                let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
                return Err(figure.err(
                    "variant",
                    format!(
                        "expected a variant of the scenario ({}), found {variant:?}",
                        if names.is_empty() {
                            "none defined".to_string()
                        } else {
                            names.join(", ")
                        }
                    ),
                ));
            }
        }
        figure
            .str_opt("metric")?
            .ok_or_else(|| figure.missing("metric", "a metric such as \"sim_time_s\""))?;
        match figure.table.get("published") {
            // a string says why there is no figure ("not published")
            None | Some(Value::Integer(_) | Value::Float(_) | Value::String(_)) => {}
            Some(v) => {
                return Err(figure.err(
                    "published",
                    format!(
                        "expected a number (or a string saying why there is none), found {}",
                        describe(v)
                    ),
                ))
            }
        }
    }
    Ok(())
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

/// What the tests of the scenario parser share: a minimal valid scenario and error checks.
#[cfg(test)]
pub(super) mod test_support {
    pub use super::*;

    pub const MINIMAL: &str = r#"
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

    /// Parsed with the workload's generators, as the engine's `Scenario::parse_str` does.
    pub fn parse(text: &str) -> Result<Scenario, InputError> {
        crate::Scenario::parse_str(text, "t.toml")
    }

    /// Parses MINIMAL with `extra` appended, expecting an error at `key` whose message contains
    /// `needle`.
    pub fn expect_err(extra: &str, key: &str, needle: &str) -> InputError {
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
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use crate::scenario::Tier;

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
        // The generator's own parameter type lives in workload/usemem.rs.
        assert_eq!(
            format!("{:?}", s.tasks[0].program),
            "Generator(Usemem { processes: 1, size_bytes: 1048576 })"
        );
        assert_eq!(s.published, serde_json::Value::Null);
        assert_eq!(s.description, "");
    }

    #[test]
    fn top_level_errors_name_the_key() {
        expect_err("bogus = 1", "bogus", "unknown key");
        expect_err(
            "profiles = [\"v6.9\", \"v7.0\"]",
            "profiles[1]",
            "v6.9|v6.10|v6.12|v6.18",
        );
        expect_err("profiles = [\"v6.9\", \"v6.9\"]", "profiles[1]", "unique");
        expect_err("sample_interval = \"10\"", "sample_interval", "unit");
        expect_err("sample_interval = 10", "sample_interval", "time string");
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
        let e = crate::Scenario::load(Path::new("/nonexistent/foliosim/x.toml")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/nonexistent/foliosim/x.toml: cannot read: No such file or directory"
        );
    }

    #[test]
    fn published_becomes_json() {
        let s = parse(&format!(
            "{MINIMAL}\n[published]\nsource = \"s\"\n[[published.figure]]\nprofile = \"v6.18\"\nmetric = \"sim_time_s\"\npublished = 2.5\n"
        ))
        .unwrap();
        assert_eq!(
            s.published,
            serde_json::json!({"source": "s", "figure": [{"profile": "v6.18", "metric": "sim_time_s", "published": 2.5}]})
        );
    }

    #[test]
    fn published_is_checked_against_the_scenario() {
        let figure = |body: &str| {
            parse(&format!(
                "{MINIMAL}\n[[variant]]\nname = \"a\"\n[published]\n[[published.figure]]\n{body}\n"
            ))
        };
        assert!(figure("profile = \"v6.18\"\nvariant = \"a\"\nmetric = \"sim_time_s\"").is_ok());
        for (body, key, words) in [
            (
                "profile = \"v6.9\"\nmetric = \"sim_time_s\"",
                "published.figure[0].profile",
                "v6.18",
            ),
            (
                "profile = \"v6.18\"\nvariant = \"b\"\nmetric = \"sim_time_s\"",
                "published.figure[0].variant",
                "(a)",
            ),
            (
                "profile = \"v6.18\"",
                "published.figure[0].metric",
                "missing",
            ),
            (
                "profile = \"v6.18\"\nmetric = \"sim_time_s\"\nlabl = \"x\"",
                "published.figure[0].labl",
                "unknown key",
            ),
            (
                "profile = \"v6.18\"\nmetric = \"sim_time_s\"\npublished = true",
                "published.figure[0].published",
                "number",
            ),
        ] {
            let e = figure(body).unwrap_err();
            assert_eq!(e.key, key, "{e}");
            assert!(e.message.contains(words), "{e}");
        }
        let e = parse(&format!("{MINIMAL}\n[published]\nunit = \"s\"\n")).unwrap_err();
        assert_eq!(e.key, "published.unit");
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
