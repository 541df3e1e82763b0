//! The swarm's fast slice: every generated scenario parses, and a few hundred seeds run twice with
//! the invariant checker on without a panic, a violation or a difference between the runs.
//! `foliosim swarm --seeds N` runs any number (docs/reliability.md).

use foliosim::swarm::{self, Outcome, SwarmScenario};

/// Seeds of the fast slice.
const FAST_SEEDS: std::ops::Range<u64> = 0..300;

/// Seeds of the fast slice that fail today, each an engine bug the swarm found and kept as a
/// minimised scenario in tests/swarm-found/ (docs/reliability.md lists them). Remove a seed here
/// once its bug is fixed; the slice then checks it again.
const KNOWN_FAILING_SEEDS: &[u64] = &[
    // fork_cow: "folio N: mapcount 255 but 0 PTEs map it" after forked children exit
    // (tests/swarm-found/swarm-226.toml; the item 2, an 8-bit mapcount gone below zero).
    226,
];

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
        if KNOWN_FAILING_SEEDS.contains(&seed) {
            continue;
        }
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
