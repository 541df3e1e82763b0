//! Which kernel knobs a live run writes: every knob of foliosim's table, at the value the
//! resolved run uses (the simulator runs with the kernel's defaults for what a scenario leaves
//! unset; the live kernel may have been booted or configured otherwise), the zswap module
//! parameters included (so zswap is off unless the run turns it on). A knob already at its value
//! is not written; a missing file is refused unless the run wants the kernel default there.

use foliosim::scenario::knobs::{knob_paths, NOT_FILES};
use foliosim::scenario::Knobs;

use super::sys::same_knob_value;

/// The build option a scenario can name as a knob; it is checked, never written.
pub const THP_SWAP_OPTION: &str = "CONFIG_THP_SWAP";

/// One knob write: what the file held before, what the run writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub before: String,
    pub value: String,
}

/// (path, value) of every knob file a run wants, in table order. `min_free_kbytes` is left to
/// the kernel unless the run sets it, as foliosim computes it at boot like the kernel does.
pub fn wanted(knobs: &Knobs) -> Vec<(String, String)> {
    knob_paths()
        .into_iter()
        .filter(|p| p != THP_SWAP_OPTION && !NOT_FILES.contains(&p.as_str()))
        .filter(|p| p != "/proc/sys/vm/min_free_kbytes" || knobs.min_free_kbytes.is_some())
        .filter_map(|p| knobs.get(&p).map(|v| (p, v)))
        .collect()
}

/// The writes that take the kernel from its current values (`read` gives a file's value, None
/// when the kernel has no such file) to `wanted`. A missing file is an error unless the value
/// wanted there is foliosim's default (zswap off, say, on a kernel without zswap).
pub fn plan(
    wanted: &[(String, String)],
    read: impl Fn(&str) -> Option<String>,
) -> Result<Vec<Change>, String> {
    let defaults = Knobs::default();
    let mut changes = Vec::new();
    for (path, value) in wanted {
        match read(path) {
            None => {
                let is_default = defaults
                    .get(path)
                    .is_some_and(|d| same_knob_value(&d, value));
                if !is_default {
                    return Err(format!(
                        "this kernel has no {path}, which the run sets to {value}"
                    ));
                }
            }
            Some(current) if same_knob_value(&current, value) => {}
            Some(current) => changes.push(Change {
                path: path.clone(),
                before: current,
                value: value.clone(),
            }),
        }
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const THP: &str = "/sys/kernel/mm/transparent_hugepage";
    use crate::live::sys::ZSWAP_ENABLED;

    #[test]
    fn wanted_covers_every_knob_at_the_runs_value() {
        let mut knobs = Knobs::default();
        knobs
            .set(&format!("{THP}/hugepages-64kB/enabled"), "always")
            .unwrap();
        knobs.set(&format!("{THP}/enabled"), "never").unwrap();
        let w: BTreeMap<String, String> = wanted(&knobs).into_iter().collect();
        assert_eq!(w[&format!("{THP}/hugepages-64kB/enabled")], "always");
        assert_eq!(w[&format!("{THP}/hugepages-16kB/enabled")], "never");
        assert_eq!(w[&format!("{THP}/hugepages-2048kB/enabled")], "inherit");
        assert_eq!(w[&format!("{THP}/enabled")], "never");
        assert_eq!(w["/proc/sys/vm/swappiness"], "60");
        assert_eq!(w[ZSWAP_ENABLED], "N");
        assert!(
            !w.contains_key(THP_SWAP_OPTION),
            "a build option is not written"
        );
        for property in NOT_FILES {
            assert!(!w.contains_key(property), "{property} is not a file");
        }
        assert!(!w.contains_key("/proc/sys/vm/min_free_kbytes"));
        knobs.set("/proc/sys/vm/min_free_kbytes", "65536").unwrap();
        let w: BTreeMap<String, String> = wanted(&knobs).into_iter().collect();
        assert_eq!(w["/proc/sys/vm/min_free_kbytes"], "65536");
    }

    #[test]
    fn shmem_knobs_are_written_and_planned_from_the_kernels_bracketed_value() {
        let mut knobs = Knobs::default();
        knobs
            .set(&format!("{THP}/hugepages-64kB/shmem_enabled"), "always")
            .unwrap();
        let w: BTreeMap<String, String> = wanted(&knobs).into_iter().collect();
        // the defaults are written too, so a kernel set otherwise is put at the simulator's
        assert_eq!(w[&format!("{THP}/shmem_enabled")], "never");
        assert_eq!(w[&format!("{THP}/hugepages-64kB/shmem_enabled")], "always");
        assert_eq!(
            w[&format!("{THP}/hugepages-2048kB/shmem_enabled")],
            "inherit"
        );
        assert_eq!(w[&format!("{THP}/hugepages-16kB/shmem_enabled")], "never");
        // as the kernel shows them: every value, the current one in brackets
        let kernel = |p: &str| {
            let raw = if p.ends_with("2048kB/shmem_enabled") {
                "always [inherit] within_size advise never"
            } else if p.ends_with("kB/shmem_enabled") {
                "always inherit within_size advise [never]"
            } else {
                "always within_size advise [never] deny force"
            };
            Some(crate::live::sys::knob_value(raw))
        };
        let shmem: Vec<(String, String)> = w
            .into_iter()
            .filter(|(p, _)| p.ends_with("shmem_enabled"))
            .collect();
        assert_eq!(
            plan(&shmem, kernel).unwrap(),
            vec![Change {
                path: format!("{THP}/hugepages-64kB/shmem_enabled"),
                before: "never".into(),
                value: "always".into()
            }]
        );
    }

    #[test]
    fn plan_writes_only_what_differs_and_remembers_the_old_value() {
        let kernel: BTreeMap<&str, &str> = [
            ("/a/enabled", "madvise"),
            ("/b/swappiness", "60"),
            ("/c/zswap", "Y"),
            ("/d/bool", "1"),
        ]
        .into_iter()
        .collect();
        let read = |p: &str| kernel.get(p).map(|v| v.to_string());
        let wanted = vec![
            ("/a/enabled".to_string(), "always".to_string()),
            ("/b/swappiness".to_string(), "60".to_string()),
            ("/c/zswap".to_string(), "N".to_string()),
            ("/d/bool".to_string(), "true".to_string()),
        ];
        let changes = plan(&wanted, read).unwrap();
        assert_eq!(
            changes,
            vec![
                Change {
                    path: "/a/enabled".into(),
                    before: "madvise".into(),
                    value: "always".into()
                },
                Change {
                    path: "/c/zswap".into(),
                    before: "Y".into(),
                    value: "N".into()
                },
            ]
        );
    }

    #[test]
    fn plan_refuses_a_missing_knob_set_away_from_its_default() {
        let none = |_: &str| None;
        let shrink = "/sys/kernel/mm/transparent_hugepage/shrink_underused";
        // the default on a kernel that predates the knob: nothing to do
        assert_eq!(plan(&[(shrink.into(), "1".into())], none).unwrap(), vec![]);
        let e = plan(&[(shrink.into(), "0".into())], none).unwrap_err();
        assert!(e.contains(shrink), "{e}");
        // a kernel without zswap has it off already
        assert_eq!(
            plan(&[(ZSWAP_ENABLED.into(), "N".into())], none).unwrap(),
            vec![]
        );
    }
}
