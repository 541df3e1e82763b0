//! `foliosim run`: every profile x variant of a scenario in the simulator, side by side; and
//! what the other commands share with it: resolving runs, running them on every core.

use foliosim::scenario::parse;
use foliosim::{InputError, RunError, RunResult, RunSpec, Scenario};

use crate::args::RunArgs;
use crate::{output, progress, scenarios, table, Failure};

pub fn run(args: &RunArgs) -> Result<(), Failure> {
    let (scenario, sets, specs) = plan(args, &Scenario::load)?;
    let runs = run_all(&scenario, &specs)?;
    if let Some(json) = &args.json {
        let document =
            output::document(&scenario, &runs).map_err(|m| crate::json_error(json, m))?;
        output::write_atomically(json, &document)?;
    }
    let mut text = header(&scenario, args.seed, &sets, args.hardware.as_deref());
    text.push_str(&table::render(&table::comparison(&scenario, &runs)));
    if args.explain_time {
        text.push_str(&crate::explain_time::render(&runs, &scenario.machine.hw));
    }
    crate::print_stdout(&text);
    Ok(())
}

/// The scenario, the `--set`s and the resolved runs of `run`: every input error surfaces here,
/// before the first (possibly long) run starts. `load` reads the scenario file the argument
/// names (the argument fuzzer reads only bundled ones).
pub fn plan(args: &RunArgs, load: &Loader) -> Result<Planned, Failure> {
    let mut scenario = load(&scenarios::find("run", &args.scenario)?)?;
    if let Some(hardware) = &args.hardware {
        scenario.set_hardware(hardware)?;
    }
    let profiles = if args.profiles.is_empty() {
        scenario.profiles.clone()
    } else {
        once_each(&args.profiles, "--profile")?
    };
    let (variants, sets) = variants_and_sets(&scenario, &args.variants, &args.sets, &args.json)?;
    let specs = resolve_all(
        &scenario, &profiles, &variants, &sets, args.seed, args.check,
    )?;
    Ok((scenario, sets, specs))
}

/// Reads a scenario file: `Scenario::load`, or the argument fuzzer's stand-in.
pub type Loader = dyn Fn(&std::path::Path) -> Result<Scenario, InputError>;

/// A command's scenario, its `--set` overrides and its runs, resolved.
pub type Planned = (Scenario, Vec<(String, String)>, Vec<RunSpec>);

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
pub fn variants_and_sets(
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
        output::check_output_path(json)?;
    }
    Ok((variants, sets))
}

/// Every variant the scenario defines, or one run without a variant when it defines none.
pub fn all_variants(scenario: &Scenario) -> Vec<Option<String>> {
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

pub fn resolve_all(
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
pub fn run_all(scenario: &Scenario, specs: &[RunSpec]) -> Result<Vec<RunResult>, Failure> {
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
            // a broken invariant (run_all sets no budget)
            Err(e) => {
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

/// `foliosim 0.1.0  scenario usemem-small  seed 1` (and the overrides, if any: `--set`s and
/// `--hardware`).
pub fn header(
    scenario: &Scenario,
    seed: u64,
    sets: &[(String, String)],
    hardware: Option<&str>,
) -> String {
    let mut line = format!(
        "foliosim {}  scenario {}  seed {seed}",
        foliosim::VERSION,
        scenario.name
    );
    if !sets.is_empty() {
        let sets: Vec<String> = sets.iter().map(|(p, v)| format!("{p}={v}")).collect();
        line.push_str(&format!("  set {}", sets.join(" ")));
    }
    if let Some(hardware) = hardware {
        line.push_str(&format!(
            "  hardware {} ({hardware})",
            scenario.machine.hw.costs.name
        ));
    }
    line.push_str("\n\n");
    line
}
