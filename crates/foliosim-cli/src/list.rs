//! `foliosim list`: the bundled scenarios, profiles, features, hardware profiles and knobs.

use foliosim::scenario::knobs::knob_table;
use foliosim::scenario::parse;
use foliosim::scenario::profile::{BASE_PROFILES, FEATURES};

use crate::print_stdout;
use crate::scenarios::{bundled_scenarios, scenario_dir, scenario_name};
use foliosim::scenario::message::one_line;

pub fn list() {
    let mut text = String::new();
    match scenario_dir() {
        Some(dir) => text.push_str(&format!("scenarios ({}):\n", dir.display())),
        None => text.push_str("scenarios: none found (no ./scenarios directory)\n"),
    }
    let rows: Vec<(String, String)> = bundled_scenarios()
        .iter()
        .map(|path| {
            let about = match foliosim::Scenario::load(path) {
                Ok(s) => s.description,
                Err(e) => format!("(invalid: {})", one_line(&e.to_string())),
            };
            (scenario_name(path), about)
        })
        .collect();
    push_aligned(&mut text, &rows);

    text.push_str("\nprofiles:\n");
    text.push_str(&format!("  {}\n", BASE_PROFILES.join("  ")));
    text.push_str("\nfeatures (add to a profile with +, e.g. v6.12+migrc):\n");
    let features: Vec<(String, String)> = FEATURES
        .iter()
        .map(|(name, about)| (format!("+{name}"), about.to_string()))
        .collect();
    push_aligned(&mut text, &features);

    text.push_str(
        "\nhardware profiles ([machine] hardware or --hardware; or a .toml file, see \
         docs/hardware.md):\n",
    );
    let hardware: Vec<(String, String)> = parse::hardware_profile_names()
        .into_iter()
        .filter_map(|name| {
            let profile = foliosim::machine::hw::profile(&name)?;
            let about = format!(
                "{} ({})",
                profile.costs.description,
                profile.costs.arch.name()
            );
            Some((name, about))
        })
        .collect();
    push_aligned(&mut text, &hardware);

    text.push_str("\nknobs (--set PATH=VALUE, or [knobs] in a scenario):\n");
    push_aligned(&mut text, &knob_table());
    print_stdout(&text);
}

/// Two columns, the first padded to its widest entry.
fn push_aligned(text: &mut String, rows: &[(String, String)]) {
    let width = rows
        .iter()
        .map(|(a, _)| a.chars().count())
        .max()
        .unwrap_or(0);
    for (a, b) in rows {
        // padded by hand: a format width over 65,535 (a scenario file's long name) panics
        let padding = " ".repeat(width - a.chars().count());
        text.push_str(format!("  {a}{padding}  {b}").trim_end());
        text.push('\n');
    }
}
