//! `foliosim reproduce`: bundled published experiments, each printed as `run` prints it and then
//! beside the published figures.

use foliosim::{RunSpec, Scenario};

use crate::args::ReproduceArgs;
use crate::run::{all_variants, header, resolve_all, run_all, Loader};
use crate::scenarios::{self, bundled_scenarios};
use crate::{output, print_stdout, table, Failure};

/// The seed's figures beside the simulated ones, then the seed's other notes.
fn published_table(scenario: &Scenario, runs: &[foliosim::RunResult]) -> Result<String, Failure> {
    use foliosim::stats::compare;
    let figures = compare::figures(&scenario.published, runs).map_err(|m| {
        Failure::Input(foliosim::InputError {
            file: scenario.file.clone(),
            key: "published".into(),
            message: m,
        })
    })?;
    let has_notes = scenario.published.get("notes").is_some();
    if figures.is_empty() && !has_notes {
        return Ok("\nno published figures: the scenario has no [published] table\n".into());
    }
    let mut text = String::from("\npublished figures beside simulated ones:\n");
    let run_of = |f: &compare::Figure| match &f.variant {
        Some(v) => format!("{}/{}", f.profile, v),
        None => f.profile.clone(),
    };
    let rows: Vec<Vec<String>> = figures
        .iter()
        .map(|f| {
            let simulated = f.simulated.map_or("-".to_string(), |v| format!("{v:.2}"));
            let published = match &f.published {
                serde_json::Value::Number(n) => format!("{:.2}", n.as_f64().unwrap_or(0.0)),
                serde_json::Value::Null => "-".to_string(),
                v => v.as_str().map_or(v.to_string(), str::to_string),
            };
            vec![f.label.clone(), run_of(f), simulated, published]
        })
        .collect();
    text.push_str(&table::render_aligned(
        &["figure", "run", "simulated", "published"],
        &rows,
        2,
        12,
    ));
    if let Some(notes) = scenario.published.get("notes").and_then(|n| n.as_array()) {
        for n in notes.iter().filter_map(|n| n.as_str()) {
            text.push_str(&format!("  note: {n}\n"));
        }
    }
    Ok(text)
}

/// The scenarios of `reproduce` and each one's resolved runs: every input error surfaces here,
/// before the first run. `load` reads a scenario file (the argument fuzzer's reads only bundled
/// ones).
pub fn plan(args: &ReproduceArgs, load: &Loader) -> Result<Vec<(Scenario, Vec<RunSpec>)>, Failure> {
    let files = match args.named() {
        Some(name) => vec![scenarios::find("reproduce", name)?],
        None => {
            let mut with_published = Vec::new();
            for path in bundled_scenarios() {
                let scenario = load(&path)?;
                if scenario
                    .published
                    .as_object()
                    .is_some_and(|o| !o.is_empty())
                {
                    with_published.push(path);
                }
            }
            with_published
        }
    };
    if files.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(json) = &args.json {
        output::check_output_path(json)?;
    }
    let mut planned = Vec::new();
    for path in &files {
        let mut scenario = load(path)?;
        if let Some(hardware) = &args.hardware {
            scenario.set_hardware(hardware)?;
        }
        let specs = resolve_all(
            &scenario,
            &scenario.profiles,
            &all_variants(&scenario),
            &[],
            args.seed,
            args.check,
        )?;
        planned.push((scenario, specs));
    }
    Ok(planned)
}

pub fn reproduce(args: &ReproduceArgs) -> Result<(), Failure> {
    let planned = plan(args, &Scenario::load)?;
    if planned.is_empty() {
        print_stdout("no bundled scenario has a [published] table\n");
        return Ok(());
    }
    let mut text = String::new();
    let mut documents = Vec::new();
    for (scenario, specs) in &planned {
        let runs = run_all(scenario, specs)?;
        if let Some(json) = &args.json {
            documents
                .push(output::document(scenario, &runs).map_err(|m| crate::json_error(json, m))?);
        }
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&header(scenario, args.seed, &[], args.hardware.as_deref()));
        text.push_str(&table::render(&table::comparison(scenario, &runs)));
        text.push_str(&published_table(scenario, &runs)?);
    }
    if let Some(json) = &args.json {
        // one scenario: the same document as `run`; several: an array of them
        let body = if args.named().is_some() && documents.len() == 1 {
            documents.remove(0)
        } else {
            output::array(&documents)
        };
        output::write_atomically(json, &body)?;
    }
    print_stdout(&text);
    Ok(())
}
