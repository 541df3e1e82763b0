//! The `foliosim` command: run scenarios under kernel profiles and compare them, reproduce the
//! bundled published experiments, list what is available.
//!
//! Exit status: 0 success, 1 a broken simulator invariant (`--check`) or a failed live run,
//! 2 bad input or usage, 3 a live run this machine cannot do, 128+N a live run stopped by signal N.

mod args;
mod kernel_run;
mod live;
mod output;
mod progress;
mod table;
mod validate;

use std::io::Write;
use std::path::{Path, PathBuf};

use args::{ArgError, Command, ReproduceArgs, RunArgs};
use foliosim::scenario::knobs::knob_table;
use foliosim::scenario::parse;
use foliosim::scenario::profile::{BASE_PROFILES, FEATURES};
use foliosim::{InputError, RunError, RunResult, RunSpec, Scenario};

/// Why the command stopped.
enum Failure {
    /// Bad input: one line naming the file and key. Exit 2.
    Input(InputError),
    /// The invariant checker fired: a simulator bug. Exit 1.
    Check(String),
    /// A live run could not be done (status 3), failed (1) or was interrupted (128 + signal).
    Live { message: String, status: i32 },
}

impl From<InputError> for Failure {
    fn from(e: InputError) -> Self {
        Failure::Input(e)
    }
}

fn main() {
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let result = match args::parse(argv) {
        Ok(Command::Help) => {
            print_stdout(&format!("{}\n\n{}\n", args::USAGE, args::HELP));
            Ok(())
        }
        Ok(Command::Version) => {
            print_stdout(&format!("foliosim {}\n", foliosim::VERSION));
            Ok(())
        }
        Ok(Command::List) => {
            list();
            Ok(())
        }
        Ok(Command::Run(run_args)) => run(&run_args),
        Ok(Command::Reproduce(repro_args)) => reproduce(&repro_args),
        Ok(Command::KernelRun(live_args)) => kernel_run::kernel_run(&live_args),
        Ok(Command::Validate(live_args)) => validate::validate(&live_args),
        Err(ArgError::Usage(message)) => {
            eprintln!("foliosim: {message}\n{}", args::USAGE);
            std::process::exit(2);
        }
        Err(ArgError::Value {
            flag,
            value,
            message,
        }) => Err(Failure::Input(InputError {
            file: flag,
            key: value,
            message,
        })),
    };
    match result {
        Ok(()) => {}
        Err(Failure::Input(e)) => {
            eprintln!("foliosim: {}", one_line(&e.to_string()));
            std::process::exit(2);
        }
        Err(Failure::Check(message)) => {
            eprintln!("foliosim: {message}");
            std::process::exit(1);
        }
        Err(Failure::Live { message, status }) => {
            eprintln!("foliosim: {}", one_line(&message));
            std::process::exit(status);
        }
    }
}

/// Input errors are one line whatever text they carry.
fn one_line(text: &str) -> String {
    text.lines().collect::<Vec<_>>().join("; ")
}

/// Writes to stdout, ignoring a closed pipe (`foliosim list | head`).
fn print_stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

// ---------------------------------------------------------------------------------------------
// run

fn run(args: &RunArgs) -> Result<(), Failure> {
    let scenario = Scenario::load(&args.scenario)?;
    let profiles = if args.profiles.is_empty() {
        scenario.profiles.clone()
    } else {
        once_each(&args.profiles, "--profile")?
    };
    let (variants, sets) = variants_and_sets(&scenario, &args.variants, &args.sets, &args.json)?;
    // every input error surfaces before the first (possibly long) run starts
    let specs = resolve_all(
        &scenario, &profiles, &variants, &sets, args.seed, args.check,
    )?;
    let runs = run_all(&scenario, &specs)?;
    if let Some(json) = &args.json {
        let document = output::document(&scenario, &runs).map_err(|m| json_error(json, m))?;
        output::write_atomically(json, &document)?;
    }
    let mut text = header(&scenario, args.seed, &sets);
    text.push_str(&table::render(&table::comparison(&scenario, &runs)));
    print_stdout(&text);
    Ok(())
}

fn json_error(path: &Path, message: String) -> Failure {
    Failure::Input(InputError {
        file: path.display().to_string(),
        key: String::new(),
        message: format!("cannot encode JSON: {message}"),
    })
}

/// The values of a repeatable flag, refusing repeats (they would only duplicate columns).
fn once_each(values: &[String], flag: &str) -> Result<Vec<String>, InputError> {
    let mut seen = Vec::new();
    for v in values {
        if seen.contains(v) {
            return Err(InputError {
                file: flag.to_string(),
                key: v.clone(),
                message: "expected each value once, found it twice".into(),
            });
        }
        seen.push(v.clone());
    }
    Ok(seen)
}

/// The variants a command names (all of the scenario's when it names none) and its `--set`s,
/// after checking that its `--json` file can be written.
fn variants_and_sets(
    scenario: &Scenario,
    variants: &[String],
    sets: &[String],
    json: &Option<std::path::PathBuf>,
) -> Result<(Vec<Option<String>>, Vec<(String, String)>), Failure> {
    let variants = if variants.is_empty() {
        all_variants(scenario)
    } else {
        once_each(variants, "--variant")?
            .into_iter()
            .map(Some)
            .collect()
    };
    let sets = sets
        .iter()
        .map(|s| parse::parse_set(s))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(json) = json {
        output::check_writable_dir(json)?;
    }
    Ok((variants, sets))
}

/// Every variant the scenario defines, or one run without a variant when it defines none.
fn all_variants(scenario: &Scenario) -> Vec<Option<String>> {
    if scenario.variants.is_empty() {
        vec![None]
    } else {
        scenario
            .variants
            .iter()
            .map(|v| Some(v.name.clone()))
            .collect()
    }
}

fn resolve_all(
    scenario: &Scenario,
    profiles: &[String],
    variants: &[Option<String>],
    sets: &[(String, String)],
    seed: u64,
    check: bool,
) -> Result<Vec<RunSpec>, InputError> {
    let mut specs = Vec::new();
    for profile in profiles {
        for variant in variants {
            specs.push(parse::resolve(
                scenario,
                profile,
                variant.as_deref(),
                sets,
                seed,
                check,
            )?);
        }
    }
    Ok(specs)
}

/// The memmaps of the runs played at once stay within this (see run_all).
const MEMMAP_BUDGET_BYTES: u64 = 7 << 30;

/// Runs every spec, as many at once as the machine has cores (each run is deterministic on its
/// own, so the results do not depend on how they were spread). Results keep the specs' order.
fn run_all(scenario: &Scenario, specs: &[RunSpec]) -> Result<Vec<RunResult>, Failure> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let label = format!("{} ({} runs)", scenario.name, specs.len());
    let bar = Mutex::new(progress::Progress::new(label));
    let fractions = Mutex::new(vec![0.0; specs.len()]);
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<Result<RunResult, RunError>>>> =
        specs.iter().map(|_| Mutex::new(None)).collect();
    // Runs at once are also limited so that their memmaps (24 bytes per simulated 4 KiB page)
    // stay within MEMMAP_BUDGET_BYTES: a 1 TiB machine's is 6 GiB, so such runs go one by one.
    let memmap_bytes = specs
        .iter()
        .map(|s| s.scenario.machine.memory_bytes() / 4096 * 24)
        .max()
        .unwrap_or(0);
    let by_memory = (MEMMAP_BUDGET_BYTES / memmap_bytes.max(1)).max(1) as usize;
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(specs.len())
        .min(by_memory)
        .max(1);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(spec) = specs.get(index) else {
                    break;
                };
                let result = foliosim::run(spec, &mut |fraction| {
                    let mut f = fractions.lock().unwrap_or_else(|e| e.into_inner());
                    f[index] = fraction;
                    let mean = f.iter().sum::<f64>() / f.len() as f64;
                    drop(f);
                    bar.lock().unwrap_or_else(|e| e.into_inner()).update(mean);
                });
                *results[index].lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
            });
        }
    });
    bar.into_inner().unwrap_or_else(|e| e.into_inner()).finish();
    let mut runs = Vec::with_capacity(specs.len());
    for (spec, result) in specs.iter().zip(results) {
        let result = result.into_inner().unwrap_or_else(|e| e.into_inner());
        match result.expect("every spec was run") {
            Ok(r) => runs.push(r),
            Err(RunError::Input(e)) => return Err(Failure::Input(e)),
            Err(e @ RunError::Check(_)) => {
                let label = match &spec.variant {
                    Some(v) => format!("{} {}/{v}", scenario.name, spec.profile.name),
                    None => format!("{} {}", scenario.name, spec.profile.name),
                };
                return Err(Failure::Check(format!(
                    "{}: {label} seed {}: {e}",
                    scenario.file, spec.seed
                )));
            }
        }
    }
    Ok(runs)
}

/// `foliosim 0.1.0  scenario usemem-small  seed 1` (and the overrides, if any).
fn header(scenario: &Scenario, seed: u64, sets: &[(String, String)]) -> String {
    let mut line = format!(
        "foliosim {}  scenario {}  seed {seed}",
        foliosim::VERSION,
        scenario.name
    );
    if !sets.is_empty() {
        let sets: Vec<String> = sets.iter().map(|(p, v)| format!("{p}={v}")).collect();
        line.push_str(&format!("  set {}", sets.join(" ")));
    }
    line.push_str("\n\n");
    line
}

// ---------------------------------------------------------------------------------------------
// reproduce

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
    let label_width = figures
        .iter()
        .map(|f| f.label.len())
        .max()
        .unwrap_or(0)
        .max(6);
    let run_of = |f: &compare::Figure| match &f.variant {
        Some(v) => format!("{}/{}", f.profile, v),
        None => f.profile.clone(),
    };
    let run_width = figures
        .iter()
        .map(|f| run_of(f).len())
        .max()
        .unwrap_or(0)
        .max(3);
    text.push_str(&format!(
        "  {:<label_width$}  {:<run_width$}  {:>12}  {:>12}\n",
        "figure", "run", "simulated", "published"
    ));
    for f in &figures {
        let run = run_of(f);
        let simulated = f.simulated.map_or("-".to_string(), |v| format!("{v:.2}"));
        let published = match &f.published {
            serde_json::Value::Number(n) => format!("{:.2}", n.as_f64().unwrap_or(0.0)),
            serde_json::Value::Null => "-".to_string(),
            v => v.as_str().map_or(v.to_string(), str::to_string),
        };
        text.push_str(&format!(
            "  {:<label_width$}  {run:<run_width$}  {simulated:>12}  {published:>12}\n",
            f.label
        ));
    }
    if let Some(notes) = scenario.published.get("notes").and_then(|n| n.as_array()) {
        for n in notes.iter().filter_map(|n| n.as_str()) {
            text.push_str(&format!("  note: {n}\n"));
        }
    }
    Ok(text)
}

fn reproduce(args: &ReproduceArgs) -> Result<(), Failure> {
    let files = match &args.name {
        Some(name) => vec![find_bundled(name)?],
        None => {
            let mut with_published = Vec::new();
            for path in bundled_scenarios() {
                let scenario = Scenario::load(&path)?;
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
        print_stdout("no bundled scenario has a [published] table\n");
        return Ok(());
    }
    if let Some(json) = &args.json {
        output::check_writable_dir(json)?;
    }
    let mut text = String::new();
    let mut documents = Vec::new();
    for path in &files {
        let scenario = Scenario::load(path)?;
        let specs = resolve_all(
            &scenario,
            &scenario.profiles,
            &all_variants(&scenario),
            &[],
            args.seed,
            args.check,
        )?;
        let runs = run_all(&scenario, &specs)?;
        if let Some(json) = &args.json {
            documents.push(output::document(&scenario, &runs).map_err(|m| json_error(json, m))?);
        }
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&header(&scenario, args.seed, &[]));
        text.push_str(&table::render(&table::comparison(&scenario, &runs)));
        text.push_str(&published_table(&scenario, &runs)?);
    }
    if let Some(json) = &args.json {
        // one scenario: the same document as `run`; several: an array of them
        let body = if args.name.is_some() && documents.len() == 1 {
            documents.remove(0)
        } else {
            output::array(&documents)
        };
        output::write_atomically(json, &body)?;
    }
    print_stdout(&text);
    Ok(())
}

/// Where bundled scenarios live: `./scenarios`, else the repository this binary was built from.
fn scenario_dir() -> Option<PathBuf> {
    let candidates = [
        PathBuf::from("scenarios"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios"),
    ];
    candidates.into_iter().find(|d| d.is_dir())
}

/// Every `*.toml` in the scenario directory, sorted by name.
fn bundled_scenarios() -> Vec<PathBuf> {
    let Some(dir) = scenario_dir() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml") && p.is_file())
        .collect();
    files.sort();
    files
}

fn scenario_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn find_bundled(name: &str) -> Result<PathBuf, InputError> {
    let files = bundled_scenarios();
    if let Some(path) = files.iter().find(|p| scenario_name(p) == name) {
        return Ok(path.clone());
    }
    let names: Vec<String> = files.iter().map(|p| scenario_name(p)).collect();
    Err(InputError {
        file: "reproduce".into(),
        key: name.into(),
        message: if names.is_empty() {
            "expected a bundled scenario, but no scenarios/ directory was found".into()
        } else {
            format!("expected a bundled scenario, one of {}", names.join(", "))
        },
    })
}

// ---------------------------------------------------------------------------------------------
// list

fn list() {
    let mut text = String::new();
    match scenario_dir() {
        Some(dir) => text.push_str(&format!("scenarios ({}):\n", dir.display())),
        None => text.push_str("scenarios: none found (no ./scenarios directory)\n"),
    }
    let rows: Vec<(String, String)> = bundled_scenarios()
        .iter()
        .map(|path| {
            let about = match Scenario::load(path) {
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

    text.push_str("\nhardware profiles ([machine] hardware):\n");
    text.push_str(&format!(
        "  {}\n",
        parse::hardware_profile_names().join("  ")
    ));

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
        text.push_str(format!("  {a:width$}  {b}").trim_end());
        text.push('\n');
    }
}
