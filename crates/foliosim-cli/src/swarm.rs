//! `foliosim swarm`: random valid scenarios, each run twice with the invariant checker on
//! (foliosim::swarm). Prints each seed, a progress bar on a terminal, a summary, and writes each
//! failure's minimised scenario to `--out`. Exit 1 if any seed failed.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;
use foliosim::swarm::{self, generate::base_profile};
use foliosim::InputError;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::Failure;

#[derive(Debug, PartialEq, Args)]
#[command(args_override_self = true)]
pub struct SwarmArgs {
    /// how many seeds to run
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub seeds: u64,
    /// the first seed
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub from: u64,
    /// a directory for the minimised scenarios of failing seeds (made if missing)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// print each seed's generated scenario (to reproduce one with `foliosim run`)
    #[arg(long)]
    pub print: bool,
    /// each run of a seed stops after this many scheduler quanta, a failure "budget exceeded"
    #[arg(long, value_name = "N", default_value_t = swarm::SEED_BUDGET_QUANTA)]
    pub max_quanta: u64,
}

/// Per-profile tally: seeds run and seeds failed.
#[derive(Default)]
struct Tally {
    seeds: u64,
    failed: u64,
}

/// The seeds to run, `--from` and `--seeds` checked (the argument fuzzer's part of `swarm`:
/// `--out` is made by `swarm` itself).
pub fn seed_range(args: &SwarmArgs) -> Result<std::ops::Range<u64>, InputError> {
    let end = args
        .from
        .checked_add(args.seeds)
        .ok_or_else(|| InputError {
            file: "--seeds".into(),
            key: args.seeds.to_string(),
            message: format!("expected --from + --seeds at most {}", u64::MAX),
        })?;
    Ok(args.from..end)
}

pub fn swarm(args: &SwarmArgs) -> Result<(), Failure> {
    let seeds = seed_range(args)?;
    let end = seeds.end;
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).map_err(|e| InputError {
            file: "--out".into(),
            key: dir.display().to_string(),
            message: format!("expected a directory that can be made and written: {e}"),
        })?;
    }
    swarm::quiet_panics();
    let bar = ProgressBar::with_draw_target(Some(args.seeds), ProgressDrawTarget::hidden());
    if std::io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("swarm [{bar:30}] {pos}/{len} seeds {elapsed} {msg}")
                .expect("a valid template")
                .progress_chars("# "),
        );
    }
    let mut by_profile: std::collections::BTreeMap<String, Tally> = Default::default();
    let mut counts: std::collections::BTreeMap<&'static str, u64> = Default::default();
    let mut failures = Vec::new();
    for seed in seeds {
        let report = swarm::run_seed_with_budget(seed, args.max_quanta);
        let profile = report.scenario.profile.clone();
        let tally = by_profile
            .entry(base_profile(&profile).to_string())
            .or_default();
        tally.seeds += 1;
        *counts.entry(report.outcome.label()).or_default() += 1;
        bar.suspend(|| {
            if args.print {
                println!("{}", report.scenario.to_toml());
            }
            println!("seed {seed} {profile}: {}", report.outcome.summary())
        });
        if report.outcome.failed() {
            tally.failed += 1;
            bar.set_message(format!("{} failed", failures.len() + 1));
            let (minimal, outcome) =
                swarm::minimise_with_budget(&report.scenario, &report.outcome, args.max_quanta);
            let text = format!(
                "# foliosim swarm seed {seed}, minimised: {}\n# foliosim run FILE --seed {seed} --check\n{}",
                outcome.summary().replace('\n', " "),
                minimal.to_toml()
            );
            if let Some(dir) = &args.out {
                let path = dir.join(swarm::file_name(seed));
                std::fs::write(&path, &text)
                    .map_err(|e| Failure::Check(format!("cannot write {}: {e}", path.display())))?;
                bar.suspend(|| println!("  minimised: {}", path.display()));
            } else {
                bar.suspend(|| println!("{text}"));
            }
            failures.push((seed, outcome));
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let _ = std::panic::take_hook();
    let count = |label| counts.get(label).copied().unwrap_or(0);
    println!(
        "\nswarm: {} seeds ({}..{}): {} passed, {} panics, {} invariant violations, {} nondeterministic, {} refused, {} over budget",
        args.seeds,
        args.from,
        end,
        count("pass"),
        count("panic"),
        count("violation"),
        count("nondeterministic"),
        count("rejected"),
        count("budget exceeded"),
    );
    for (profile, t) in &by_profile {
        println!("  {profile}: {} seeds, {} failed", t.seeds, t.failed);
    }
    if failures.is_empty() {
        return Ok(());
    }
    for (seed, outcome) in &failures {
        println!("  seed {seed}: {}", outcome.summary());
    }
    Err(Failure::Check(format!(
        "the swarm found {} failing seed(s) of {}",
        failures.len(),
        args.seeds
    )))
}
