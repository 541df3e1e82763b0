//! Command-line arguments, declared for clap: `run`, `reproduce`, `kernel-run`, `validate`,
//! `list`, `swarm`, `trace`. Every command that takes a scenario takes a path or a bundled scenario's name
//! (resolved in `scenarios`).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub const DEFAULT_SEED: u64 = 1;

#[derive(Debug, Parser)]
#[command(
    name = "foliosim",
    version = foliosim::VERSION,
    about = "foliosim: a deterministic simulator of the Linux kernel memory manager"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, PartialEq, Subcommand)]
pub enum Command {
    /// run every profile x variant of a scenario and print a comparison table
    Run(RunArgs),
    /// run bundled published experiments and print them beside the published figures
    Reproduce(ReproduceArgs),
    /// play the scenario on the running kernel (root): sets its knobs, adds zram swap and
    /// cgroups, runs kernel-bench programs, reads the kernel's counters, then restores every knob
    /// and removes what it made (also on failure or ^C)
    KernelRun(LiveArgs),
    /// the simulator (profile matching the running kernel, or --profile) and the live kernel
    /// side by side, with ratios
    Validate(ValidateArgs),
    /// measure this machine's costs with kernel-bench microbenchmarks (root, zram) and write a
    /// hardware profile: measured costs with median and spread, the rest from a base profile
    Calibrate(CalibrateArgs),
    /// list scenarios, profiles, features and knobs
    List,
    /// run random valid scenarios twice each with the invariant checker, minimise failures
    Swarm(crate::swarm::SwarmArgs),
    /// record, import and inspect traces of real programs (docs/traces.md)
    #[command(subcommand)]
    Trace(TraceCommand),
    /// write a self-contained HTML report with charts of a result JSON (run, reproduce or
    /// validate --json)
    Report(ReportArgs),
}

/// `foliosim trace ...`: one variant per command.
#[derive(Debug, PartialEq, Subcommand)]
pub enum TraceCommand {
    /// run a program under valgrind (the foliotrace tool) and record its page accesses and
    /// memory syscalls as a trace
    Record(RecordArgs),
    /// convert another tool's trace into a foliosim trace
    #[command(subcommand)]
    Import(ImportCommand),
    /// what a trace holds: header, threads, records, events, pages touched, footprint over time
    Info(TraceInfoArgs),
}

#[derive(Debug, PartialEq, Subcommand)]
pub enum ImportCommand {
    /// valgrind lackey's output: valgrind --tool=lackey --trace-mem=yes --log-file=INPUT CMD
    Lackey(ImportArgs),
    /// a DAMON record written by `damo record` (json or json_compressed), replayed as page
    /// accesses by a seeded sampler
    Damo(DamoImportArgs),
}

#[derive(Debug, PartialEq, Args)]
#[command(args_override_self = true)]
pub struct ImportArgs {
    /// the file to import
    pub input: PathBuf,
    /// the trace to write (replaced only once the whole import has succeeded)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
}

#[derive(Debug, PartialEq, Args)]
#[command(args_override_self = true)]
pub struct DamoImportArgs {
    #[command(flatten)]
    pub import: ImportArgs,
    /// seed of the order in which a region's pages are touched
    #[arg(long, value_name = "N", default_value_t = DEFAULT_SEED, value_parser = parse_seed)]
    pub seed: u64,
    /// touch at most this many pages of a region per pass (a seeded sample; default: all)
    #[arg(long, value_name = "N", value_parser = parse_positive)]
    pub max_pages_per_region: Option<u64>,
    /// instructions per microsecond of DAMON's sampling interval charged between samples
    /// (default 0: no work between accesses)
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = parse_seed)]
    pub instructions_per_us: u64,
}

#[derive(Debug, PartialEq, Args)]
#[command(args_override_self = true)]
pub struct TraceInfoArgs {
    /// a foliosim trace
    pub trace: PathBuf,
    /// print the figures as one JSON object instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, PartialEq, Args)]
pub struct RecordArgs {
    /// the trace to write (default: the program's name with .trace, in this directory)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// run the program natively N times first and store the median user CPU time in the trace,
    /// for `user_time = "native"` (0: do not)
    #[arg(long = "native-runs", value_name = "N", default_value_t = 3)]
    pub native_runs: u32,
    /// the program and its arguments, after `--`
    #[arg(required = true, last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, PartialEq, Args)]
#[command(args_override_self = true)]
pub struct ReportArgs {
    /// the JSON written by run, reproduce or validate --json
    #[arg(value_name = "RESULT.json")]
    pub result: PathBuf,
    /// the HTML file to write (default: the result's name with .html, beside it)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, PartialEq, Args)]
#[command(args_override_self = true)]
pub struct RunArgs {
    /// a scenario file, or a bundled scenario's name (see `foliosim list`)
    pub scenario: String,
    /// kernel profile, e.g. v6.12 or v6.12+migrc (repeatable; default: the scenario's)
    #[arg(long = "profile", value_name = "P")]
    pub profiles: Vec<String>,
    /// one of the scenario's variants (repeatable; default: all of them)
    #[arg(long = "variant", value_name = "V")]
    pub variants: Vec<String>,
    /// override a knob, e.g. /proc/sys/vm/swappiness=100 or bench/memory.max=470M (repeatable)
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,
    /// seed of the run
    #[arg(long, value_name = "N", default_value_t = DEFAULT_SEED, value_parser = parse_seed)]
    pub seed: u64,
    /// write the full results as JSON
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// run the invariant checker (slower)
    #[arg(long)]
    pub check: bool,
    /// hardware cost profile: a bundled one's name (see `foliosim list`) or a profile file
    /// (.toml, docs/hardware.md); default: the scenario's [machine] hardware
    #[arg(long, value_name = "NAME|FILE")]
    pub hardware: Option<String>,
    /// after the table, each task's time by mechanism with the profile costs behind it
    #[arg(long)]
    pub explain_time: bool,
}

#[derive(Debug, PartialEq, Args)]
#[command(args_override_self = true)]
pub struct ReproduceArgs {
    /// a bundled scenario (or a scenario file), or `all`: every bundled one with a
    /// [published] table
    #[arg(value_name = "NAME|all", default_value = "all")]
    pub name: String,
    /// seed of the runs
    #[arg(long, value_name = "N", default_value_t = DEFAULT_SEED, value_parser = parse_seed)]
    pub seed: u64,
    /// write the full results as JSON (an array of documents for several scenarios)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// run the invariant checker (slower)
    #[arg(long)]
    pub check: bool,
    /// hardware cost profile: a bundled one's name (see `foliosim list`) or a profile file
    /// (.toml, docs/hardware.md); default: the scenario's [machine] hardware
    #[arg(long, value_name = "NAME|FILE")]
    pub hardware: Option<String>,
}

impl ReproduceArgs {
    /// The scenario named, or None for all of them.
    pub fn named(&self) -> Option<&str> {
        (self.name != "all").then_some(self.name.as_str())
    }
}

/// Arguments of `kernel-run` (and, with `--profile`, of `validate`).
#[derive(Debug, PartialEq, Args)]
#[command(args_override_self = true)]
pub struct LiveArgs {
    /// a scenario file, or a bundled scenario's name (see `foliosim list`)
    pub scenario: String,
    /// one of the scenario's variants (repeatable; default: all of them)
    #[arg(long = "variant", value_name = "V")]
    pub variants: Vec<String>,
    /// override a knob, e.g. /proc/sys/vm/swappiness=100 or bench/memory.max=470M (repeatable)
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,
    /// seed of the run
    #[arg(long, value_name = "N", default_value_t = DEFAULT_SEED, value_parser = parse_seed)]
    pub seed: u64,
    /// write the full results as JSON
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

#[derive(Debug, PartialEq, Args)]
#[command(args_override_self = true)]
pub struct ValidateArgs {
    #[command(flatten)]
    pub live: LiveArgs,
    /// the simulator's kernel profile (default: the one matching the running kernel)
    #[arg(long, value_name = "P")]
    pub profile: Option<String>,
    /// live runs of each variant: the table shows their median and min-max
    #[arg(long = "live-runs", value_name = "N", default_value_t = 1, value_parser = parse_positive)]
    pub live_runs: u64,
    /// hardware cost profile: a bundled one's name (see `foliosim list`) or a profile file
    /// (.toml, docs/hardware.md); default: the scenario's [machine] hardware
    #[arg(long, value_name = "NAME|FILE")]
    pub hardware: Option<String>,
    /// only the simulated side, as validate simulates it on this machine (its CPUs, memory,
    /// cgroup version and zswap history), without live runs
    #[arg(long = "sim-only")]
    pub sim_only: bool,
    /// play live first, then simulate each live run with the memcg statistics flusher's phase
    /// it recorded (`memcg_stats_flush_first_us`): the table shows the simulated median and
    /// min-max beside the live ones
    #[arg(long, conflicts_with = "sim_only")]
    pub paired: bool,
}

/// Arguments of `calibrate`.
#[derive(Debug, PartialEq, Args)]
#[command(args_override_self = true)]
pub struct CalibrateArgs {
    /// write the profile to FILE (default: print it)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// the profile the costs not measured here come from: a bundled name or a .toml file
    #[arg(long, value_name = "NAME|FILE", default_value = "x86-server")]
    pub base: String,
    /// runs of each microbenchmark (after one warm-up run): the profile gives their median and
    /// min-max. 21 runs take about four minutes, long enough to sample the slower changes of a
    /// shared host, so that a second calibration's medians fall inside the first's min-max
    #[arg(long, value_name = "N", default_value_t = 21, value_parser = parse_positive)]
    pub runs: u64,
    /// start only when the 1-minute load average is at most this (other tasks' load changes
    /// the costs)
    #[arg(long, value_name = "LOAD", default_value_t = 0.5)]
    pub max_load: f64,
    /// how long to wait for the load average to fall before refusing (exit 2)
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    pub wait_idle: u64,
    /// a directory on the disk whose latency and bandwidth the profile's ssd_* costs take (a
    /// 64 MiB file is written there and removed)
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub disk_dir: PathBuf,
}

fn parse_seed(value: &str) -> Result<u64, String> {
    value
        .parse()
        .map_err(|_| "expected an unsigned integer".to_string())
}

fn parse_positive(value: &str) -> Result<u64, String> {
    match value.parse() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("expected a positive integer".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(s: &str) -> Result<Command, clap::Error> {
        Cli::try_parse_from(std::iter::once("foliosim").chain(s.split_whitespace()))
            .map(|c| c.command)
    }

    fn usage_error(s: &str) -> bool {
        parse(s).is_err_and(|e| e.exit_code() == 2)
    }

    #[test]
    fn declarations_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_flags_in_both_forms() {
        let Ok(Command::Run(r)) = parse(
            "run s.toml --profile v6.9 --profile=v6.12+migrc --variant 4K --set a=b --seed=7 --json out.json --check",
        ) else {
            panic!("expected run")
        };
        assert_eq!(r.scenario, "s.toml");
        assert_eq!(r.profiles, vec!["v6.9", "v6.12+migrc"]);
        assert_eq!(r.variants, vec!["4K"]);
        assert_eq!(r.sets, vec!["a=b"]);
        assert_eq!(r.seed, 7);
        assert_eq!(r.json, Some(PathBuf::from("out.json")));
        assert!(r.check);
        assert_eq!(r.hardware, None);
        assert!(!r.explain_time);
    }

    #[test]
    fn hardware_on_run_reproduce_and_validate() {
        let Ok(Command::Run(r)) = parse("run s.toml --hardware my.toml") else {
            panic!()
        };
        assert_eq!(r.hardware.as_deref(), Some("my.toml"));
        let Ok(Command::Reproduce(r)) = parse("reproduce --hardware=arm64-altra") else {
            panic!()
        };
        assert_eq!(r.hardware.as_deref(), Some("arm64-altra"));
        let Ok(Command::Validate(v)) = parse("validate s.toml --hardware m.toml") else {
            panic!()
        };
        assert_eq!(v.hardware.as_deref(), Some("m.toml"));
        // kernel-run plays the live kernel only: no simulated hardware
        assert!(usage_error("kernel-run s.toml --hardware m.toml"));
        assert!(usage_error("run s.toml --hardware"));
    }

    #[test]
    fn set_value_keeps_its_own_equals_sign() {
        let Ok(Command::Run(r)) = parse("run s.toml --set=memory.max=1G") else {
            panic!()
        };
        assert_eq!(r.sets, vec!["memory.max=1G"]);
    }

    #[test]
    fn a_repeated_single_flag_keeps_the_last() {
        let Ok(Command::Run(r)) = parse("run s.toml --seed 3 --seed 4") else {
            panic!()
        };
        assert_eq!(r.seed, 4);
    }

    #[test]
    fn usage_errors() {
        assert!(usage_error(""));
        assert!(usage_error("frobnicate"));
        assert!(usage_error("run"));
        assert!(usage_error("run s.toml --bogus"));
        assert!(usage_error("run s.toml --profile"));
        assert!(usage_error("run a.toml b.toml"));
        assert!(usage_error("run s.toml --seed x"));
        assert!(usage_error("list extra"));
        // help and version are not errors: they exit 0
        for s in ["--help", "run s.toml --help", "--version"] {
            assert_eq!(parse(s).map_err(|e| e.exit_code()).unwrap_err(), 0, "{s}");
        }
    }

    #[test]
    fn reproduce_defaults_to_all() {
        let Ok(Command::Reproduce(r)) = parse("reproduce") else {
            panic!()
        };
        assert_eq!(
            (r.named(), r.seed, &r.json, r.check),
            (None, 1, &None, false)
        );
        let Ok(Command::Reproduce(r)) = parse("reproduce usemem-small --seed 3") else {
            panic!()
        };
        assert_eq!((r.named(), r.seed), (Some("usemem-small"), 3));
        let Ok(Command::Reproduce(r)) = parse("reproduce all") else {
            panic!()
        };
        assert_eq!(r.named(), None);
    }

    #[test]
    fn live_flags_in_both_forms() {
        let Ok(Command::KernelRun(a)) =
            parse("kernel-run s.toml --variant 4K --variant=2M --set a=b --seed=3 --json out.json")
        else {
            panic!()
        };
        assert_eq!(a.scenario, "s.toml");
        assert_eq!(a.variants, vec!["4K", "2M"]);
        assert_eq!(a.sets, vec!["a=b"]);
        assert_eq!(a.seed, 3);
        assert_eq!(a.json, Some(PathBuf::from("out.json")));
        let Ok(Command::Validate(v)) = parse("validate s.toml --profile v6.12") else {
            panic!()
        };
        assert_eq!(v.profile.as_deref(), Some("v6.12"));
        assert_eq!(v.live.scenario, "s.toml");
    }

    #[test]
    fn trace_commands() {
        let Ok(Command::Trace(TraceCommand::Import(ImportCommand::Lackey(a)))) =
            parse("trace import lackey lk.txt -o t.trace")
        else {
            panic!()
        };
        assert_eq!(
            (a.input, a.output),
            (PathBuf::from("lk.txt"), PathBuf::from("t.trace"))
        );
        let Ok(Command::Trace(TraceCommand::Import(ImportCommand::Damo(d)))) = parse(
            "trace import damo damon.data --output=t.trace --seed 5 --max-pages-per-region 64",
        ) else {
            panic!()
        };
        assert_eq!(
            (d.seed, d.max_pages_per_region, d.instructions_per_us),
            (5, Some(64), 0)
        );
        let Ok(Command::Trace(TraceCommand::Info(i))) = parse("trace info t.trace --json") else {
            panic!()
        };
        assert_eq!((i.trace, i.json), (PathBuf::from("t.trace"), true));
        assert!(usage_error("trace"));
        assert!(usage_error("trace import"));
        assert!(usage_error("trace import lackey lk.txt"));
        assert!(usage_error("trace import perf x -o y"));
        assert!(usage_error("trace import lackey lk.txt -o t --seed 3"));
        assert!(usage_error(
            "trace import damo d -o t --max-pages-per-region 0"
        ));
        assert!(usage_error("trace info"));
    }

    #[test]
    fn live_usage_errors() {
        assert!(usage_error("kernel-run"));
        // only validate has a simulator profile
        assert!(usage_error("kernel-run s.toml --profile v6.12"));
        assert!(usage_error("validate s.toml --variant"));
        assert!(usage_error("validate a.toml b.toml"));
        assert!(usage_error("validate s.toml --seed x"));
    }
}
