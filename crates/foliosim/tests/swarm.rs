//! The swarm's fast slice: every generated scenario parses, and a few hundred seeds run twice with
//! the invariant checker on without a panic, a violation or a difference between the runs.
//! `foliosim swarm --seeds N` runs any number (docs/reliability.md).

use foliosim::swarm::{self, Outcome, SwarmScenario};

/// Seeds of the fast slice.
const FAST_SEEDS: std::ops::Range<u64> = 0..300;

/// Every failure the swarm found, minimised (tests/swarm-found/swarm-SEED.toml), runs with the
/// invariant checker on: each was an engine bug (docs/reliability.md lists them).
#[test]
fn the_swarm_s_past_failures_pass() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/swarm-found");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 60, "the corpus is there");
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let seed: u64 = name.trim_start_matches("swarm-").parse().unwrap();
        let scenario = foliosim::Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
        for profile in &scenario.profiles {
            let spec =
                foliosim::scenario::parse::resolve(&scenario, profile, None, &[], seed, true)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
            if let Err(e) = foliosim::run(&spec, &mut |_| {}) {
                panic!("{name} {profile}: {e}");
            }
        }
    }
}

#[test]
fn every_generated_scenario_parses() {
    for seed in 0..500 {
        let s = SwarmScenario::generate(seed);
        let text = s.to_toml();
        if let Err(e) = foliosim::Scenario::parse_str(&text, &swarm::file_name(seed)) {
            panic!("seed {seed}: {e}\n{text}");
        }
    }
}

#[test]
fn generation_is_deterministic() {
    for seed in [0, 1, 7, 12345] {
        assert_eq!(
            SwarmScenario::generate(seed).to_toml(),
            SwarmScenario::generate(seed).to_toml()
        );
    }
}

#[test]
fn fast_slice_passes() {
    swarm::quiet_panics();
    let mut failures = Vec::new();
    for seed in FAST_SEEDS {
        let report = swarm::run_seed(seed);
        if report.outcome.failed() {
            failures.push(format!("seed {seed}: {}", report.outcome.summary()));
        }
    }
    let _ = std::panic::take_hook();
    assert!(
        failures.is_empty(),
        "the swarm failed (run `foliosim swarm --from SEED --seeds 1 --out DIR` for the minimised \
         scenario):\n  {}",
        failures.join("\n  ")
    );
}

#[test]
fn minimising_keeps_the_failure_and_drops_the_rest() {
    // A knob value the parser refuses makes every run fail the same way ("rejected" at that
    // key); the minimiser must keep that knob and cut away what does not matter.
    let mut s = SwarmScenario::generate(5);
    s.knobs
        .push(("/proc/sys/vm/swappiness".into(), "999".into()));
    let outcome = swarm::check_scenario(&s.to_toml(), "bad.toml", 5);
    assert!(matches!(outcome, Outcome::Rejected(_)), "{outcome:?}");
    let (min, min_outcome) = swarm::minimise(&s, &outcome);
    assert_eq!(min_outcome.label(), "rejected");
    assert_eq!(
        min.knobs,
        vec![("/proc/sys/vm/swappiness".to_string(), "999".to_string())]
    );
    assert_eq!(min.tasks.len(), 1);
    assert!(min.swaps.is_empty() && min.files.is_empty() && min.cgroups.is_empty());
}

#[test]
fn a_seed_over_its_budget_fails_deterministically_and_minimises() {
    // seed 4's scenario, generous budget: passes; 50 quanta: each run stops at the 50th quantum,
    // at the same simulated time every time, and the seed fails as "budget exceeded"
    let s = SwarmScenario::generate(4);
    let text = s.to_toml();
    assert_eq!(swarm::check_scenario(&text, "s.toml", 4), Outcome::Pass);
    let over = swarm::check_scenario_with_budget(&text, "s.toml", 4, 50);
    let Outcome::BudgetExceeded(message) = &over else {
        panic!("{over:?}")
    };
    assert!(
        message.starts_with("seed 4: budget exceeded: 50 scheduler quanta run, to simulated time "),
        "{message}"
    );
    assert!(over.failed());
    assert_eq!(over.label(), "budget exceeded");
    assert_eq!(
        swarm::check_scenario_with_budget(&text, "s.toml", 4, 50),
        over
    );
    // the minimiser keeps the failure under the same budget
    let (_, min_outcome) = swarm::minimise_with_budget(&s, &over, 50);
    assert_eq!(min_outcome.label(), "budget exceeded");
}

#[test]
fn the_fast_slice_stays_well_inside_the_budget() {
    // a fiftieth of the budget is enough for every seed of the fast slice, so the budget only
    // stops a seed thousands of times slower than these
    for seed in FAST_SEEDS.step_by(10) {
        let outcome = swarm::run_seed_with_budget(seed, swarm::SEED_BUDGET_QUANTA / 50).outcome;
        assert_eq!(outcome, Outcome::Pass, "seed {seed}");
    }
}
