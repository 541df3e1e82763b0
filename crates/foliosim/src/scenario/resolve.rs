//! Knob settings (`[knobs]` and each variant's), the `[[variant]]`s, and resolving one run: a
//! scenario, a profile, a variant and the `--set` overrides into a `RunSpec`.

use std::collections::BTreeSet;

use toml::{Table, Value};

use super::footprint::{check_fits, host_available_bytes};
use super::generators::apply_generator_args;
use super::knobs::{self, Knobs, NATIVE_USER_NS, NOT_NATIVE_TIMED};
use super::machine::{cgroup_names, check_limit_fits};
use super::profile::Profile;
use super::walker::{describe, join, unique, Cx, Node, Res};
use super::{CgroupSpec, InputError, RunSpec, Scenario, Variant};

/// What a memory.max knob is checked against.
pub(super) struct Limits<'a> {
    pub(super) cgroups: &'a [CgroupSpec],
    pub(super) total_memory_bytes: u64,
}

/// Sets one knob, checking memory.max forms against the scenario's cgroups and memory.
pub(super) fn apply_knob(
    knobs: &mut Knobs,
    path: &str,
    value: &str,
    limits: &Limits,
) -> Result<(), String> {
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

/// A `[knobs]`-style table: kernel path -> value (string, integer or boolean), each checked.
pub(super) fn parse_knob_table(
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

pub(super) fn parse_variants(top: &Node, limits: &Limits) -> Res<Vec<Variant>> {
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
        if let Some(names) = &swapon {
            let mut listed = BTreeSet::new();
            for name in names {
                unique(top.cx, &mut listed, name, &v.key("swapon"), "swap device")?;
            }
        }
        variants.push(Variant {
            name,
            knobs,
            args,
            swapon,
        });
    }
    Ok(variants)
}

/// Replays the trace of task `name` at the speed of a native run of `user_ns` of user time.
fn retime_native(scenario: &mut Scenario, name: &str, user_ns: u64) -> Result<(), String> {
    let Some(index) = scenario.tasks.iter().position(|t| t.name == name) else {
        let names: Vec<&str> = scenario.tasks.iter().map(|t| t.name.as_str()).collect();
        return Err(format!(
            "expected the name of a [[task]] ({}), found {name:?}",
            names.join(", ")
        ));
    };
    let task = &mut scenario.tasks[index];
    let super::Program::Generator(params) = &mut task.program else {
        return Err(NOT_NATIVE_TIMED.to_string());
    };
    match params.apply_arg(NATIVE_USER_NS, &Value::Integer(user_ns as i64))? {
        true => Ok(()),
        false => Err(NOT_NATIVE_TIMED.to_string()),
    }
}

impl RunSpec {
    /// `<task>/native_user_ns`: replays the trace of task `name` at the speed of a native run of
    /// `user_ns` of user time (what a live run measured beside it).
    pub fn retime_native(&mut self, name: &str, user_ns: u64) -> Result<(), String> {
        retime_native(&mut self.scenario, name, user_ns)?;
        self.knobs
            .set(&format!("{name}/{NATIVE_USER_NS}"), &user_ns.to_string())
    }
}

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
        let files = scenario.files.clone();
        for task in scenario.tasks.iter_mut() {
            apply_generator_args(&mut task.program, &v.args, &files).map_err(|(k, m)| {
                arg_err(&scenario.file, &format!("variant.{}.args.{k}", v.name), m)
            })?;
        }
    }
    // a native user time re-times the trace replay of the task it names
    for (name, ns) in &knobs.native_user_ns {
        retime_native(&mut scenario, name, *ns).map_err(|m| {
            let path = format!("{name}/{NATIVE_USER_NS}");
            match sets.iter().any(|(p, _)| *p == path) {
                true => arg_err("--set", &path, m),
                false => arg_err(&scenario.file, &join("knobs", &path), m),
            }
        })?;
    }
    for (cgroup, limit) in &knobs.memory_max {
        for cg in scenario.cgroups.iter_mut() {
            if cgroup.as_deref().is_none_or(|name| name == cg.name) {
                cg.memory_max_bytes = *limit;
            }
        }
    }
    // the run as resolved (the variant's swap devices) must fit in this host's memory
    check_fits(&scenario, host_available_bytes())?;
    Ok(RunSpec {
        scenario,
        profile,
        variant: variant.map(|v| v.name.clone()),
        knobs,
        seed,
        check,
    })
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
    use super::super::parse::test_support::*;
    use super::*;

    #[test]
    fn knob_and_variant_errors_name_the_key() {
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
}
