//! What each fuzz target does with its input, as plain functions: the targets in fuzz_targets/
//! call them, and a stable test (crates/foliosim-cli/tests/fuzz_seeds.rs) runs them over the
//! committed seed corpus (seeds/), so that CI exercises them without the nightly toolchain.
//! Every function must return normally on any input: a panic is a crash.

use foliosim::scenario::parse::resolve;
use foliosim::Scenario;

/// Scenario text (bytes that are not UTF-8 replaced, so that mutations keep reaching the
/// parser): parsed, and when accepted, resolved for every profile x variant it names, the step
/// before a run. Returns how many runs resolved (None: the text was refused).
pub fn scenario_text(data: &[u8]) -> Option<usize> {
    let text = String::from_utf8_lossy(data);
    let scenario = Scenario::parse_str(&text, "fuzz.toml").ok()?;
    Some(resolve_every_run(&scenario))
}

/// Resolves each profile x variant of an accepted scenario (errors are fine, panics are not);
/// returns how many resolved.
fn resolve_every_run(scenario: &Scenario) -> usize {
    let mut variants: Vec<Option<&str>> = scenario
        .variants
        .iter()
        .map(|v| Some(v.name.as_str()))
        .collect();
    if variants.is_empty() {
        variants.push(None);
    }
    let mut resolved = 0;
    for profile in &scenario.profiles {
        for variant in &variants {
            resolved += usize::from(resolve(scenario, profile, *variant, &[], 1, false).is_ok());
        }
    }
    resolved
}

/// A command line: `data` split at NUL bytes into arguments (any bytes, as the OS passes them)
/// after `foliosim`, parsed by clap, and when it parses, checked as the command checks it before
/// its first run (`foliosim_cli::dry_run`: scenario, profiles, variants, `--set`, `--json`),
/// reading only bundled scenarios and stat-ing only harmless `--json` paths. A usage error must
/// be two lines and exit 2; a refusal one line and exit 2.
pub fn cli_argv(data: &[u8]) -> Argv {
    use std::os::unix::ffi::OsStringExt;
    let argv = std::iter::once(std::ffi::OsString::from("foliosim")).chain(
        data.split(|&b| b == 0)
            .map(|arg| std::ffi::OsString::from_vec(arg.to_vec())),
    );
    let mut command = match foliosim_cli::args::Cli::try_parse_from(argv) {
        Ok(cli) => cli.command,
        Err(e) => {
            if let Some(message) = foliosim_cli::usage_message(&e) {
                assert_eq!(e.exit_code(), 2, "{message}");
                assert_eq!(message.lines().count(), 2, "{message}");
                return Argv::Usage;
            }
            return Argv::HelpOrVersion;
        }
    };
    make_paths_harmless(&mut command);
    if let Err(failure) = foliosim_cli::dry_run::check(&command, bundled_loader()) {
        let (status, message) = failure.status_and_message();
        assert!(
            matches!(failure, foliosim_cli::Failure::Input(_)),
            "a dry run can only refuse input: {message}"
        );
        assert_eq!(status, 2, "{message}");
        assert_eq!(message.lines().count(), 1, "{message}");
        return Argv::Refused(message);
    }
    Argv::Accepted
}

/// What became of a command line.
#[derive(Debug, PartialEq)]
pub enum Argv {
    /// `--help` or `--version`: clap prints, exit 0.
    HelpOrVersion,
    /// A usage error (clap): exit 2.
    Usage,
    /// Parsed, then refused by the command's checks: exit 2 with this line.
    Refused(String),
    /// Parsed and checked: the command would run.
    Accepted,
}

use clap::Parser;

type BundledLoader =
    dyn Fn(&std::path::Path) -> Result<Scenario, foliosim::InputError> + Send + Sync;

/// The bundled scenarios, read once.
fn bundled_loader() -> &'static BundledLoader {
    static LOADER: std::sync::OnceLock<Box<BundledLoader>> = std::sync::OnceLock::new();
    LOADER.get_or_init(|| Box::new(foliosim_cli::dry_run::bundled_loader()))
}

/// `--json` paths the dry run may stat: relative ones below the working directory, and the
/// special files the output-path check must refuse; any other becomes its file name.
fn make_paths_harmless(command: &mut foliosim_cli::args::Command) {
    use foliosim_cli::args::Command;
    use std::path::{Component, Path, PathBuf};
    const PROBES: &[&str] = &[
        "/dev/null",
        "/dev/full",
        "/proc/x.json",
        "/sys/x.json",
        "/sys/fs/cgroup/x.json",
        "/",
        "/tmp/",
        "/nonexistent/x.json",
    ];
    let json = match command {
        Command::Run(a) => &mut a.json,
        Command::Reproduce(a) => &mut a.json,
        Command::KernelRun(a) => &mut a.json,
        Command::Validate(a) => &mut a.live.json,
        Command::Swarm(_) | Command::Trace(_) | Command::List => return,
    };
    let Some(path) = json else {
        return;
    };
    let below = path
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if below || PROBES.iter().any(|p| path.as_os_str() == *p) {
        return;
    }
    *path = PathBuf::from(path.file_name().unwrap_or(Path::new("x.json").as_os_str()));
}
