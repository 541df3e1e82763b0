//! `foliosim report`: the HTML file beside the result or at -o, written whole or not at all;
//! what is not a foliosim result refused with exit 2 and one line naming the file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn foliosim(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_foliosim"))
        .args(args)
        .output()
        .unwrap()
}

fn report(result: &Path, output: Option<&Path>) -> Output {
    let mut args = vec![std::ffi::OsStr::new("report"), result.as_os_str()];
    if let Some(output) = output {
        args.extend([std::ffi::OsStr::new("-o"), output.as_os_str()]);
    }
    foliosim(&args)
}

/// A one-run result with series and iterations, as `run --json` writes it.
const RESULT: &str = r#"{
  "foliosim_version": "0.1.0",
  "scenario": "cli-report",
  "runs": [
    {
      "profile": "v6.12",
      "variant": "64K",
      "seed": 1,
      "sim_time_ns": 3000000,
      "vmstat": {"pswpout": 10},
      "mthp": {},
      "memcg": {},
      "zram": {},
      "tasks": [],
      "iterations": [{"fallback_pct": 12.5}, {"fallback_pct": 50.0}],
      "series": {
        "t_ns": [0, 1000000, 3000000],
        "nr_free_pages": [100, 80, 90],
        "pswpout": [0, 4, 10],
        "pgfault": [0, 7, 9]
      }
    }
  ],
  "published": {}
}"#;

fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn the_report_goes_beside_the_result_by_default() {
    let dir = temp_dir();
    let result = write(dir.path(), "result.json", RESULT);
    let out = report(&result, None);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(dir.path().join("result.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
    for title in [
        "cli-report: fallback_pct per iteration",
        "cli-report v6.12/64K: memory",
        "cli-report v6.12/64K: swap traffic",
        "cli-report v6.12/64K: page faults and reclaim scans",
    ] {
        assert!(html.contains(&format!("data-title=\"{title}\"")), "{title}");
    }
    assert_eq!(html.matches("<figure class=\"chart\"").count(), 4);
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("result.html"));
    // the same result, the same bytes
    let again = dir.path().join("again.html");
    assert!(report(&result, Some(&again)).status.success());
    assert_eq!(std::fs::read_to_string(again).unwrap(), html);
}

#[test]
fn dash_o_names_the_report_and_replaces_an_old_one() {
    let dir = temp_dir();
    let result = write(dir.path(), "result.json", RESULT);
    let target = write(dir.path(), "out.html", "old");
    let out = report(&result, Some(&target));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::read_to_string(&target)
        .unwrap()
        .contains("cli-report"));
    assert_eq!(files_in(dir.path()), vec!["out.html", "result.json"]);
}

/// Exit 2, one line on stderr containing `expected`, and no file left but the inputs.
fn assert_refused(out: &Output, dir: &Path, inputs: &[&str], expected: &[&str]) {
    assert_eq!(out.status.code(), Some(2), "{}", stderr(out));
    let text = stderr(out);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with("foliosim: "), "{text}");
    for e in expected {
        assert!(text.contains(e), "{e:?} not in {text}");
    }
    let mut inputs: Vec<String> = inputs.iter().map(|s| s.to_string()).collect();
    inputs.sort();
    assert_eq!(files_in(dir), inputs);
}

#[test]
fn what_is_not_a_foliosim_result_is_refused_with_its_name() {
    let dir = temp_dir();
    let cases = [
        (
            "truncated.json",
            &RESULT[..RESULT.len() / 2],
            "found malformed JSON",
        ),
        (
            "other.json",
            "{\"name\": \"not a result\"}",
            "without \"foliosim_version\"",
        ),
        ("list.json", "[1, 2]", "[0]: expected a foliosim result"),
        ("empty.json", "", "found malformed JSON"),
    ];
    for (name, text, expected) in cases {
        let path = write(dir.path(), name, text);
        let out = report(&path, None);
        let names: Vec<&str> = cases
            .iter()
            .map(|c| c.0)
            .take_while(|n| *n != name)
            .collect();
        let mut inputs = names.clone();
        inputs.push(name);
        assert_refused(
            &out,
            dir.path(),
            &inputs,
            &[
                &path.display().to_string(),
                "expected a foliosim result",
                expected,
            ],
        );
    }
}

#[test]
fn a_missing_result_or_a_bad_output_is_refused_before_anything_is_written() {
    let dir = temp_dir();
    let missing = dir.path().join("missing.json");
    let out = report(&missing, None);
    assert_refused(
        &out,
        dir.path(),
        &[],
        &[
            "missing.json",
            "expected a readable result JSON file, found No such file",
        ],
    );
    let result = write(dir.path(), "result.json", RESULT);
    // a directory, a path in a missing directory, the result itself
    let out = report(&result, Some(dir.path()));
    assert_refused(
        &out,
        dir.path(),
        &["result.json"],
        &["-o: ", "found a directory"],
    );
    let out = report(&result, Some(&dir.path().join("no/such/dir/r.html")));
    assert_refused(
        &out,
        dir.path(),
        &["result.json"],
        &["-o: ", "in an existing directory"],
    );
    let out = report(&result, Some(&result));
    assert_refused(
        &out,
        dir.path(),
        &["result.json"],
        &["expected an output other than the result"],
    );
    assert_eq!(std::fs::read_to_string(&result).unwrap(), RESULT);
}

#[test]
fn report_usage_errors() {
    let out = foliosim(&["report".as_ref()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("RESULT.json"), "{}", stderr(&out));
}
