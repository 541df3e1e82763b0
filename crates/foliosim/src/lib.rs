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
pub mod workload;

pub use scenario::{InputError, RunSpec, Scenario};
pub use stats::result::RunResult;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Loading a scenario: the parser (scenario/) reads generator tasks with the workload's
/// registry of generators, which it cannot name itself.
impl Scenario {
    /// Reads and checks a scenario file. Errors name the path as given.
    pub fn load(path: &std::path::Path) -> Result<Scenario, InputError> {
        scenario::parse::load(path, &workload::Registry)
    }

    /// Parses and checks scenario text; `file` names it in errors.
    pub fn parse_str(text: &str, file: &str) -> Result<Scenario, InputError> {
        scenario::parse::parse_str(text, file, &workload::Registry)
    }
}

/// Runs one (scenario, profile, variant, seed): boot, spawn, drive, result (see run.rs).
/// `progress` is called with the fraction done.
/// Returns Err only for input the scenario validation could not catch (more than 16 TiB of memory
/// in all, a variant's `preload_node` beyond the machine's nodes); invariant violations under
/// `check` are reported as `RunError::Check`.
pub fn run(spec: &RunSpec, progress: &mut dyn FnMut(f64)) -> Result<RunResult, RunError> {
    run::Simulation::start(spec)?.run(progress)
}

#[derive(Debug)]
pub enum RunError {
    /// Bad input discovered at run time: exit status 2.
    Input(InputError),
    /// The invariant checker found a broken invariant: a simulator bug.
    Check(Vec<String>),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Input(e) => write!(f, "{e}"),
            RunError::Check(v) => write!(f, "invariant check failed:\n  {}", v.join("\n  ")),
        }
    }
}

impl From<InputError> for RunError {
    fn from(e: InputError) -> Self {
        RunError::Input(e)
    }
}
