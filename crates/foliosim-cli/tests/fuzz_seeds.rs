//! The fuzz targets' functions (fuzz/src/lib.rs) over the committed seed corpus (fuzz/seeds/),
//! so that a stable `cargo test` exercises what the nightly fuzzers run: every seed must go
//! through without a panic. Inputs that once crashed a fuzzer are kept as seeds.

#[path = "../../../fuzz/src/lib.rs"]
mod targets;

use std::path::Path;

/// Each file of fuzz/seeds/<target>, sorted; at least `min` of them.
fn seeds(target: &str, min: usize) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/seeds")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(
        files.len() >= min,
        "{}: {} seeds",
        dir.display(),
        files.len()
    );
    files
        .into_iter()
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect()
}

#[test]
fn scenario_seeds_parse_and_resolve_without_panic() {
    let mut resolved = 0;
    for (name, data) in seeds("scenario", 70) {
        eprintln!("{name}");
        resolved += targets::scenario_text(&data).unwrap_or(0);
    }
    // the bundled and swarm scenarios are valid: the target reaches resolve, not only the parser
    assert!(resolved >= 100, "{resolved} runs resolved");
    // every run of every bundled scenario resolves (the host-memory estimate refuses none)
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    for entry in std::fs::read_dir(bundled).unwrap() {
        let path = entry.unwrap().path();
        // scenarios/real/ holds the real-program corpus, whose traces are recorded on the machine
        if !path.is_file() {
            continue;
        }
        let text = std::fs::read(&path).unwrap();
        let s = foliosim::Scenario::parse_str(&String::from_utf8_lossy(&text), "b.toml").unwrap();
        let runs = s.profiles.len() * s.variants.len().max(1);
        assert_eq!(
            targets::scenario_text(&text),
            Some(runs),
            "{}",
            path.display()
        );
    }
    assert_eq!(targets::scenario_text(b"name = \"x\"\n\xff"), None);
}

#[test]
fn cli_argv_seeds_are_checked_without_panic() {
    let mut outcomes = Vec::new();
    for (name, data) in seeds("cli_argv", 20) {
        let outcome = targets::cli_argv(&data);
        eprintln!("{name}: {outcome:?}");
        outcomes.push(outcome);
    }
    // each outcome is reached by some seed, so the target exercises the dry run
    for kind in ["HelpOrVersion", "Usage", "Refused", "Accepted"] {
        assert!(
            outcomes.iter().any(|o| format!("{o:?}").starts_with(kind)),
            "no seed ends {kind}: {outcomes:?}"
        );
    }
}

#[test]
fn the_argv_target_refuses_special_json_paths_and_reads_no_other_scenario() {
    use targets::Argv;
    let argv = |s: &str| targets::cli_argv(s.replace(' ', "\0").as_bytes());
    assert_eq!(argv("run usemem-small --json x.json"), Argv::Accepted);
    for path in ["/dev/null", "/proc/x.json", "/"] {
        let Argv::Refused(message) = argv(&format!("run usemem-small --json {path}")) else {
            panic!("{path} accepted")
        };
        assert!(message.starts_with("foliosim: --json: "), "{message}");
    }
    // any other scenario file is refused unread
    let Argv::Refused(message) = argv("run /dev/zero") else {
        panic!("read /dev/zero")
    };
    assert!(
        message.contains("the dry run reads no other file"),
        "{message}"
    );
    // --hardware: a bundled name, or a .toml path read only if it is a regular file
    assert_eq!(
        argv("run usemem-small --hardware arm64-altra"),
        Argv::Accepted
    );
    for (path, needle) in [
        ("/dev/zero", "expected a bundled hardware profile"),
        ("/dev/zero.toml", "cannot read"),
        ("/", "expected a bundled hardware profile"),
        ("/nonexistent/x.toml", "cannot read"),
    ] {
        let Argv::Refused(message) = argv(&format!("run usemem-small --hardware {path}")) else {
            panic!("{path} accepted")
        };
        assert!(message.contains(needle), "{message}");
    }
    // a bad --set, --variant or --profile is found before any run
    for (args, needle) in [
        ("--set nope", "--set"),
        ("--variant nope", "--variant"),
        ("--profile v1.0", "--profile"),
    ] {
        let Argv::Refused(message) = argv(&format!("run usemem-small {args}")) else {
            panic!("{args} accepted")
        };
        assert!(message.contains(needle), "{message}");
    }
}

#[test]
fn trace_seeds_read_import_and_write_back_without_panic() {
    // each seed is a valid input: read (or imported) whole, written and read back the same
    for (target, run) in [
        (
            "trace_reader",
            targets::trace_bytes as fn(&[u8]) -> Option<usize>,
        ),
        ("lackey", targets::lackey_text),
        ("damo", targets::damo_records),
    ] {
        for (name, data) in seeds(target, 3) {
            let entries = run(&data);
            eprintln!("{name}: {entries:?}");
            assert!(entries.is_some_and(|n| n > 0), "{name}: {entries:?}");
            // a truncated copy must be refused or read, never panic
            for cut in [1, data.len() / 2, data.len().saturating_sub(1)] {
                let _ = run(&data[..cut.min(data.len())]);
            }
        }
    }
}
