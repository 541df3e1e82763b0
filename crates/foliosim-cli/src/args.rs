//! Command-line arguments, parsed by hand (no dependency): `run`, `reproduce`, `list`; the
//! live commands' arguments are parsed in `kernel_run`.

use std::path::PathBuf;

pub const USAGE: &str = "\
usage: foliosim run SCENARIO.toml [--profile P]... [--variant V]... [--set PATH=VALUE]... [--seed N] [--json FILE] [--check]
       foliosim reproduce [NAME|all] [--seed N] [--json FILE] [--check]
       foliosim kernel-run SCENARIO.toml [--variant V]... [--set PATH=VALUE]... [--json FILE]
       foliosim validate SCENARIO.toml [--variant V]... [--set PATH=VALUE]... [--profile P] [--seed N] [--json FILE]
       foliosim list
       foliosim --help | --version";

pub const HELP: &str = "\
foliosim: a deterministic simulator of the Linux kernel memory manager

commands:
  run SCENARIO.toml     run every profile x variant of a scenario and print a comparison table
    --profile P         kernel profile, e.g. v6.12 or v6.12+migrc (repeatable; default: the scenario's)
    --variant V         one of the scenario's variants (repeatable; default: all of them)
    --set PATH=VALUE    override a knob, e.g. /proc/sys/vm/swappiness=100 or bench/memory.max=470M
    --seed N            seed of the run (default 1)
    --json FILE         write the full results as JSON
    --check             run the invariant checker (slower)
  reproduce [NAME|all]  run bundled published experiments and print them beside the published figures
  kernel-run SCENARIO   play the scenario on the running kernel (root): sets its knobs, adds zram
                        swap and cgroups, runs kernel-bench programs, reads the kernel's counters,
                        then restores every knob and removes what it made (also on failure or ^C)
  validate SCENARIO     the simulator (profile matching the running kernel, or --profile) and the
                        live kernel side by side, with ratios
  list                  list scenarios, profiles, features and knobs";

pub const DEFAULT_SEED: u64 = 1;

#[derive(Debug, PartialEq)]
pub enum Command {
    Run(RunArgs),
    Reproduce(ReproduceArgs),
    KernelRun(crate::kernel_run::LiveArgs),
    Validate(crate::kernel_run::LiveArgs),
    List,
    Help,
    Version,
}

#[derive(Debug, PartialEq)]
pub struct RunArgs {
    pub scenario: PathBuf,
    pub profiles: Vec<String>,
    pub variants: Vec<String>,
    /// `--set` arguments as given (split and checked when resolving).
    pub sets: Vec<String>,
    pub seed: u64,
    pub json: Option<PathBuf>,
    pub check: bool,
}

#[derive(Debug, PartialEq)]
pub struct ReproduceArgs {
    /// None = all.
    pub name: Option<String>,
    pub seed: u64,
    pub json: Option<PathBuf>,
    pub check: bool,
}

/// What went wrong while reading arguments.
#[derive(Debug, PartialEq)]
pub enum ArgError {
    /// Not understood at all: print the usage.
    Usage(String),
    /// An argument with a bad value: `flag: expected ...`.
    Value {
        flag: String,
        value: String,
        message: String,
    },
}

/// Splits `--flag=value` and `--flag value` forms, one argument at a time.
struct Args {
    items: Vec<String>,
    next: usize,
}

impl Args {
    fn next(&mut self) -> Option<String> {
        let item = self.items.get(self.next).cloned();
        self.next += 1;
        item
    }

    /// The value of `flag`: the part after `=` if given inline, else the next argument.
    fn value(&mut self, flag: &str, inline: Option<String>) -> Result<String, ArgError> {
        if let Some(v) = inline {
            return Ok(v);
        }
        self.next()
            .ok_or_else(|| ArgError::Usage(format!("{flag} needs a value")))
    }
}

fn parse_seed(value: &str) -> Result<u64, ArgError> {
    value.parse().map_err(|_| ArgError::Value {
        flag: "--seed".into(),
        value: value.into(),
        message: "expected an unsigned integer".into(),
    })
}

pub fn parse(items: Vec<String>) -> Result<Command, ArgError> {
    // `--help` anywhere wins, as with most tools
    if items.iter().any(|a| a == "--help" || a == "-h") {
        return Ok(Command::Help);
    }
    let mut args = Args { items, next: 0 };
    let command = match args.next() {
        None => return Err(ArgError::Usage("missing command".into())),
        Some(c) => c,
    };
    match command.as_str() {
        "-h" | "--help" | "help" => Ok(Command::Help),
        "-V" | "--version" | "version" => Ok(Command::Version),
        "list" => {
            if let Some(extra) = args.next() {
                return Err(ArgError::Usage(format!("unexpected argument {extra:?}")));
            }
            Ok(Command::List)
        }
        "run" => parse_run(&mut args).map(Command::Run),
        "reproduce" => parse_reproduce(&mut args).map(Command::Reproduce),
        "kernel-run" => {
            crate::kernel_run::parse_args(&args.items[args.next..], false).map(Command::KernelRun)
        }
        "validate" => {
            crate::kernel_run::parse_args(&args.items[args.next..], true).map(Command::Validate)
        }
        other => Err(ArgError::Usage(format!("unknown command {other:?}"))),
    }
}

/// A flag split from its inline value: `--seed=3` -> ("--seed", Some("3")).
pub(crate) fn split_flag(arg: &str) -> (String, Option<String>) {
    match arg.split_once('=') {
        Some((flag, value)) if arg.starts_with("--") => (flag.to_string(), Some(value.to_string())),
        _ => (arg.to_string(), None),
    }
}

fn parse_run(args: &mut Args) -> Result<RunArgs, ArgError> {
    let mut scenario = None;
    let mut run = RunArgs {
        scenario: PathBuf::new(),
        profiles: Vec::new(),
        variants: Vec::new(),
        sets: Vec::new(),
        seed: DEFAULT_SEED,
        json: None,
        check: false,
    };
    while let Some(arg) = args.next() {
        let (flag, inline) = split_flag(&arg);
        match flag.as_str() {
            "--profile" => run.profiles.push(args.value(&flag, inline)?),
            "--variant" => run.variants.push(args.value(&flag, inline)?),
            "--set" => run.sets.push(args.value(&flag, inline)?),
            "--seed" => run.seed = parse_seed(&args.value(&flag, inline)?)?,
            "--json" => run.json = Some(PathBuf::from(args.value(&flag, inline)?)),
            "--check" if inline.is_none() => run.check = true,
            _ if arg.starts_with('-') && arg != "-" => {
                return Err(ArgError::Usage(format!("unknown option {arg:?}")))
            }
            _ if scenario.is_none() => scenario = Some(PathBuf::from(arg)),
            _ => return Err(ArgError::Usage(format!("unexpected argument {arg:?}"))),
        }
    }
    run.scenario = scenario.ok_or_else(|| ArgError::Usage("run needs a SCENARIO.toml".into()))?;
    Ok(run)
}

fn parse_reproduce(args: &mut Args) -> Result<ReproduceArgs, ArgError> {
    let mut repro = ReproduceArgs {
        name: None,
        seed: DEFAULT_SEED,
        json: None,
        check: false,
    };
    let mut named = false;
    while let Some(arg) = args.next() {
        let (flag, inline) = split_flag(&arg);
        match flag.as_str() {
            "--seed" => repro.seed = parse_seed(&args.value(&flag, inline)?)?,
            "--json" => repro.json = Some(PathBuf::from(args.value(&flag, inline)?)),
            "--check" if inline.is_none() => repro.check = true,
            _ if arg.starts_with('-') => {
                return Err(ArgError::Usage(format!("unknown option {arg:?}")))
            }
            _ if !named => {
                named = true;
                repro.name = (arg != "all").then_some(arg);
            }
            _ => return Err(ArgError::Usage(format!("unexpected argument {arg:?}"))),
        }
    }
    Ok(repro)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn run_flags_in_both_forms() {
        let Ok(Command::Run(r)) = parse(args(
            "run s.toml --profile v6.9 --profile=v6.12+migrc --variant 4K --set a=b --seed=7 --json out.json --check",
        )) else {
            panic!("expected run")
        };
        assert_eq!(r.scenario, PathBuf::from("s.toml"));
        assert_eq!(r.profiles, vec!["v6.9", "v6.12+migrc"]);
        assert_eq!(r.variants, vec!["4K"]);
        assert_eq!(r.sets, vec!["a=b"]);
        assert_eq!(r.seed, 7);
        assert_eq!(r.json, Some(PathBuf::from("out.json")));
        assert!(r.check);
    }

    #[test]
    fn set_value_keeps_its_own_equals_sign() {
        let Ok(Command::Run(r)) = parse(args("run s.toml --set=memory.max=1G")) else {
            panic!()
        };
        assert_eq!(r.sets, vec!["memory.max=1G"]);
    }

    #[test]
    fn usage_errors() {
        assert!(matches!(parse(args("")), Err(ArgError::Usage(_))));
        assert!(matches!(parse(args("frobnicate")), Err(ArgError::Usage(_))));
        assert!(matches!(parse(args("run")), Err(ArgError::Usage(_))));
        assert!(matches!(
            parse(args("run s.toml --bogus")),
            Err(ArgError::Usage(_))
        ));
        assert!(matches!(
            parse(args("run s.toml --profile")),
            Err(ArgError::Usage(_))
        ));
        assert!(matches!(
            parse(args("run a.toml b.toml")),
            Err(ArgError::Usage(_))
        ));
        assert!(matches!(
            parse(args("run s.toml --seed x")),
            Err(ArgError::Value { .. })
        ));
        assert_eq!(parse(args("--help")), Ok(Command::Help));
        assert_eq!(parse(args("run s.toml --help")), Ok(Command::Help));
    }

    #[test]
    fn reproduce_defaults_to_all() {
        assert_eq!(
            parse(args("reproduce")),
            Ok(Command::Reproduce(ReproduceArgs {
                name: None,
                seed: 1,
                json: None,
                check: false
            }))
        );
        let Ok(Command::Reproduce(r)) = parse(args("reproduce usemem-small --seed 3")) else {
            panic!()
        };
        assert_eq!((r.name.as_deref(), r.seed), (Some("usemem-small"), 3));
        let Ok(Command::Reproduce(r)) = parse(args("reproduce all")) else {
            panic!()
        };
        assert_eq!(r.name, None);
    }
}
