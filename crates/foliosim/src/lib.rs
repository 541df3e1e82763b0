//! foliosim: a deterministic simulator of the Linux kernel memory manager.
//! See DESIGN.md in the repository for the architecture.

pub mod check;
pub mod machine;
pub mod mm;
pub mod run;
pub mod scenario;
pub mod sim;
pub mod stats;
pub mod swarm;
pub mod trace;
pub mod workload;

pub use scenario::{InputError, RunSpec, Scenario};
pub use stats::result::RunResult;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Loading a scenario: the parser (scenario/) reads generator tasks with the workload's
/// registry of generators, which it cannot name itself.
impl Scenario {
    /// Reads and checks a scenario file. Errors name the path as given.
    pub fn load(path: &std::path::Path) -> Result<Scenario, InputError> {
        let scenario = scenario::parse::load(path, &workload::Registry)?;
        check_published_metrics(&scenario)?;
        Ok(scenario)
    }

    /// Parses and checks scenario text; `file` names it in errors.
    pub fn parse_str(text: &str, file: &str) -> Result<Scenario, InputError> {
        let scenario = scenario::parse::parse_str(text, file, &workload::Registry)?;
        check_published_metrics(&scenario)?;
        Ok(scenario)
    }
}

/// The `metric` of each `[[published.figure]]` (whose structure the parser checked) in the
/// grammar of stats/compare.rs, with the variants and profiles it compares against defined by
/// the scenario. Checked here because stats/ is above scenario/.
fn check_published_metrics(s: &Scenario) -> Result<(), InputError> {
    use stats::compare::Metric;
    let figures = s.published.get("figure").and_then(|f| f.as_array());
    for (i, figure) in figures.into_iter().flatten().enumerate() {
        let Some(text) = figure.get("metric").and_then(|m| m.as_str()) else {
            continue;
        };
        let err = |message: String| InputError {
            file: s.file.clone(),
            key: format!("published.figure[{i}].metric"),
            message,
        };
        let (base_variant, base_profile) = match Metric::parse(text).map_err(err)? {
            Metric::Relative { base_variant, .. } | Metric::IterationRatio { base_variant, .. } => {
                (Some(base_variant), None)
            }
            Metric::RelativeProfile { base_profile, .. }
            | Metric::VmstatRelativeProfile { base_profile, .. }
            | Metric::SimTimeRelativeProfile(base_profile) => (None, Some(base_profile)),
            _ => (None, None),
        };
        if let Some(base) = base_variant {
            if !s.variants.iter().any(|v| v.name == base) {
                return Err(err(format!(
                    "expected a base variant of the scenario ({}), found {base:?}",
                    s.variants
                        .iter()
                        .map(|v| v.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
        if let Some(base) = base_profile {
            if !s.profiles.contains(&base) {
                return Err(err(format!(
                    "expected a base profile of the scenario ({}), found {base:?}",
                    s.profiles.join(", ")
                )));
            }
        }
    }
    Ok(())
}

/// Runs one (scenario, profile, variant, seed): boot, spawn, drive, result (see run.rs).
/// `progress` is called with the fraction done.
/// Returns Err only for input the scenario validation could not catch (more than 16 TiB of memory
/// in all, a variant's `preload_node` beyond the machine's nodes); invariant violations under
/// `check` are reported as `RunError::Check`.
pub fn run(spec: &RunSpec, progress: &mut dyn FnMut(f64)) -> Result<RunResult, RunError> {
    run::Simulation::start(spec)?.run(progress)
}

/// `run`, stopped with `RunError::BudgetExceeded` once it has run `max_quanta` scheduler quanta
/// without finishing: a deterministic bound on a run's work (the swarm's per-seed budget).
pub fn run_with_budget(
    spec: &RunSpec,
    progress: &mut dyn FnMut(f64),
    max_quanta: u64,
) -> Result<RunResult, RunError> {
    run::Simulation::start(spec)?.run_with_budget(progress, max_quanta)
}

#[derive(Debug)]
pub enum RunError {
    /// Bad input discovered at run time: exit status 2.
    Input(InputError),
    /// The invariant checker found a broken invariant: a simulator bug.
    Check(Vec<String>),
    /// `run_with_budget` ran its `max_quanta` quanta, to simulated time `clock_ns`, and the
    /// run had not finished.
    BudgetExceeded { quanta: u64, clock_ns: u64 },
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Input(e) => write!(f, "{e}"),
            RunError::Check(v) => write!(f, "invariant check failed:\n  {}", v.join("\n  ")),
            RunError::BudgetExceeded { quanta, clock_ns } => write!(
                f,
                "budget exceeded: {quanta} scheduler quanta run, to simulated time {clock_ns} ns, \
                 without finishing"
            ),
        }
    }
}

impl From<InputError> for RunError {
    fn from(e: InputError) -> Self {
        RunError::Input(e)
    }
}
