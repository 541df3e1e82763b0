//! What a command checks before its first run, without running it: the argument fuzzer's view of
//! the command line (fuzz/). Each command's `plan` is the code the command itself runs first
//! (finding and loading its scenario, `--profile`, `--variant`, `--set`, `--json`, resolving
//! every run); nothing here writes a file, plays a live run or starts a simulation.

use std::path::Path;

use foliosim::{InputError, Scenario};

use crate::args::Command;
use crate::run::Loader;
use crate::{kernel_run, reproduce, run, swarm, validate, Failure};

/// Runs `command`'s checks with `load` reading its scenario files.
pub fn check(command: &Command, load: &Loader) -> Result<(), Failure> {
    match command {
        Command::Run(args) => run::plan(args, load).map(drop),
        Command::Reproduce(args) => reproduce::plan(args, load).map(drop),
        Command::KernelRun(args) => kernel_run::plan(args, load).map(drop),
        Command::Validate(args) => validate::plan(args, load).map(drop),
        Command::Swarm(args) => swarm::seed_range(args).map(drop).map_err(Failure::Input),
        // trace and report commands read their input files first, calibrate measures before it
        // writes: nothing to check before that
        Command::Trace(_) | Command::Report(_) | Command::Calibrate(_) | Command::List => Ok(()),
    }
}

/// A loader that reads only the bundled scenarios (scenarios/*.toml), each parsed once, and
/// refuses any other path without opening it: a fuzzed path may name a device or a FIFO.
pub fn bundled_loader() -> impl Fn(&Path) -> Result<Scenario, InputError> + Send + Sync {
    let bundled: Vec<(std::path::PathBuf, Result<Scenario, InputError>)> =
        crate::scenarios::bundled_scenarios()
            .into_iter()
            .map(|path| {
                let scenario = Scenario::load(&path);
                (path, scenario)
            })
            .collect();
    move |path: &Path| match bundled.iter().find(|(p, _)| p == path) {
        Some((_, scenario)) => scenario.clone(),
        None => Err(InputError {
            file: path.display().to_string(),
            key: String::new(),
            message: "expected a bundled scenario (the dry run reads no other file)".into(),
        }),
    }
}
