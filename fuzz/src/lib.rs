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
        Command::Swarm(_)
        | Command::Trace(_)
        | Command::Report(_)
        | Command::Calibrate(_)
        | Command::List => return,
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

use foliosim::trace::import::{DamoImport, DamoOptions, EntrySource, LackeyImport};
use foliosim::trace::{Entry, Header, TraceReader, TraceWriter};

/// Most entries a trace target decodes from one input: a few bytes of zstd or a DAMON region of
/// terabytes stand for millions of records, which are not more interesting than the first ones.
const MAX_ENTRIES: usize = 100_000;

/// A trace file (`TraceReader`): the preamble, then every entry. An error must be returned
/// again by the next call; a trace read whole (up to MAX_ENTRIES) must write back
/// (`TraceWriter`) to a trace that reads as the same header and entries. Returns how many
/// entries were read (None: the input was refused).
pub fn trace_bytes(data: &[u8]) -> Option<usize> {
    let mut reader = TraceReader::new(data, "fuzz.trace").ok()?;
    drain(&mut reader, true)
}

/// valgrind lackey's `--trace-mem=yes` text, imported (`LackeyImport`), as `trace_bytes`.
pub fn lackey_text(data: &[u8]) -> Option<usize> {
    let mut import = LackeyImport::new(data, "fuzz.lackey").ok()?;
    drain(&mut import, false)
}

/// DAMON records (damo's JSON, or zlib-compressed JSON), imported (`DamoImport`) with a cap on
/// the pages touched per region, as `trace_bytes`.
pub fn damo_records(data: &[u8]) -> Option<usize> {
    let options = DamoOptions {
        seed: 1,
        max_pages_per_region: Some(64),
        instructions_per_us: 1,
    };
    let mut import = DamoImport::new(data, "fuzz.damo", options).ok()?;
    drain(&mut import, false)
}

/// Reads `source` to its end, an error or MAX_ENTRIES; a complete read is written back and
/// read again. `errors_repeat`: the source promises to return an error again (TraceReader
/// does; the importers end after one, which `copy` never asks past).
fn drain(source: &mut dyn EntrySource, errors_repeat: bool) -> Option<usize> {
    let mut entries = Vec::new();
    loop {
        match source.next_entry() {
            Ok(Some(entry)) if entries.len() + 1 < MAX_ENTRIES => entries.push(entry),
            Ok(Some(_)) => return Some(MAX_ENTRIES),
            Ok(None) => break,
            Err(e) => {
                if errors_repeat {
                    assert_eq!(source.next_entry(), Err(e), "an error is returned again");
                }
                return None;
            }
        }
    }
    assert_eq!(source.next_entry(), Ok(None), "the end is returned again");
    let count = entries.len();
    let header = source.header().clone();
    assert_eq!(read_back(&write(&header, &entries)), (header, entries));
    Some(count)
}

fn write(header: &Header, entries: &[Entry]) -> Vec<u8> {
    let mut writer = TraceWriter::new(Vec::new(), header).expect("a header read can be written");
    for entry in entries {
        writer.push(entry).expect("an entry read can be written");
    }
    writer.finish().expect("writing to memory")
}

fn read_back(bytes: &[u8]) -> (Header, Vec<Entry>) {
    let mut reader = TraceReader::new(bytes, "written.trace").expect("a written trace reads");
    let mut entries = Vec::new();
    while let Some(entry) = reader.next_entry().expect("a written trace reads") {
        entries.push(entry);
    }
    (reader.header().clone(), entries)
}
