//! The time series is capped: a run that would take more than MAX_SERIES_ROWS rows keeps every
//! other row and doubles its interval, and says so in the result (`series_interval_ns`).

use foliosim::scenario::parse::resolve;
use foliosim::stats::report::MAX_SERIES_ROWS;
use foliosim::{RunResult, Scenario};

/// A task that sleeps `sleep`, sampled every 1 ms.
fn run_sleeping(sleep: &str) -> RunResult {
    let text = format!(
        "name = \"t\"\nsample_interval = \"1ms\"\n[[machine.node]]\nmemory = \"64M\"\ncpus = 1\n\
         [[task]]\nname = \"a\"\nops = [ {{ op = \"sleep\", time = \"{sleep}\" }} ]\n"
    );
    let scenario = Scenario::parse_str(&text, "t.toml").unwrap();
    let spec = resolve(&scenario, "v6.12", None, &[], 1, true).unwrap();
    foliosim::run(&spec, &mut |_| {}).unwrap()
}

#[test]
fn a_long_run_thins_its_series_to_an_even_grid() {
    // 250 s at 1 ms would be 250,001 rows; thinned twice (100,000 rows at 1 ms, then at 2 ms),
    // the rows are 4 ms apart
    let r = run_sleeping("250s");
    let t = &r.series["t_ns"];
    assert!(t.len() <= MAX_SERIES_ROWS, "{} rows", t.len());
    assert_eq!(r.series_interval_ns, Some(4_000_000));
    assert_eq!(t[0], 0);
    assert!(t.windows(2).all(|w| w[1] - w[0] == 4_000_000));
    assert!(*t.last().unwrap() >= 250_000_000_000 - 4_000_000);
    // every column keeps the same rows
    assert!(r.series.values().all(|c| c.len() == t.len()));
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains("\"series_interval_ns\":4000000"));
    // deterministic
    assert_eq!(json, serde_json::to_string(&run_sleeping("250s")).unwrap());
}

#[test]
fn a_short_run_keeps_every_row_and_no_interval_field() {
    let r = run_sleeping("50s");
    // a row every 1 ms to 50 s, and the last one the run takes at its end
    assert_eq!(r.series["t_ns"].len(), 50_002);
    assert_eq!(r.series_interval_ns, None);
    assert!(!serde_json::to_string(&r)
        .unwrap()
        .contains("series_interval_ns"));
}
