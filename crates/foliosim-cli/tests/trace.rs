//! `foliosim trace import lackey|damo` and `foliosim trace info`: on fixtures the tests write;
//! bad input exits 2 with one line naming the file and the byte offset, and leaves no output
//! file (nor a temporary one).

use std::path::Path;
use std::process::{Command, Output};

fn foliosim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_foliosim"))
        .args(args)
        .output()
        .unwrap()
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every file name in `dir`.
fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

const LACKEY: &str = "==7== Using Valgrind-3.19.0 and LibVEX
==7== Command: ./prog 3
I  0401ab70,3
 S 1fff000758,8
I  0401ab73,5
 L 1fff000750,8
 L 00601000,8
I  0401ab78,2
 M 00602000,4
 L 00601008,8
";

fn expect_bad_input(out: &Output, starts: &str, needles: &[&str]) {
    let stderr = stderr_of(out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line expected: {stderr}");
    assert!(stderr.starts_with(starts), "{stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "{needle:?} missing from {stderr}");
    }
    assert!(out.stdout.is_empty());
}

#[test]
fn a_lackey_import_reads_back_with_info() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("lackey.txt");
    let trace = dir.path().join("t.trace");
    std::fs::write(&input, LACKEY).unwrap();
    let out = foliosim(&[
        "trace",
        "import",
        "lackey",
        input.to_str().unwrap(),
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    // two synthetic mappings and four records (the two loads of 0x601 apart, as 0x602 is between)
    assert!(
        stdout_of(&out).contains(": 6 entries"),
        "{}",
        stdout_of(&out)
    );
    assert_eq!(files_in(dir.path()), ["lackey.txt", "t.trace"]);

    let info = foliosim(&["trace", "info", trace.to_str().unwrap(), "--json"]);
    assert_eq!(info.status.code(), Some(0), "{}", stderr_of(&info));
    let json: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(json["program"], "./prog");
    assert_eq!(json["args"], serde_json::json!(["3"]));
    assert_eq!(json["recorder"], "lackey");
    assert_eq!(json["entries"], 6);
    assert_eq!(json["accesses"], 4);
    assert_eq!(json["accesses_collapsed"], 5);
    assert_eq!(json["write_records"], 2);
    assert_eq!(json["instructions"], 3);
    assert_eq!(json["events"]["mmap"], 2);
    assert_eq!(json["threads"], 1);
    assert_eq!(json["distinct_pages"], 3);
    let footprint = json["footprint"].as_array().unwrap();
    assert_eq!(
        footprint.len(),
        6,
        "one slice per entry when there are fewer than 10"
    );
    // entries: mmap, 0x1fff000, mmap, 0x601, 0x602, 0x601
    let slices: Vec<(u64, u64)> = footprint
        .iter()
        .map(|s| {
            (
                s["pages_touched"].as_u64().unwrap(),
                s["pages_so_far"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(slices, [(0, 0), (1, 1), (0, 1), (1, 2), (1, 3), (1, 3)]);

    let text = foliosim(&["trace", "info", trace.to_str().unwrap()]);
    assert_eq!(text.status.code(), Some(0));
    let text = stdout_of(&text);
    assert!(text.contains("program       ./prog 3"), "{text}");
    assert!(text.contains("3 distinct"), "{text}");
}

#[test]
fn a_damo_import_writes_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("damon.json");
    let trace = dir.path().join("t.trace");
    std::fs::write(
        &input,
        r#"[{"intervals": {"sample_us": "5000", "aggr_us": "100000", "ops_update_us": "1000000"},
            "target_id": 0, "snapshots": [{"start_time": "0", "end_time": "100000000",
            "regions": [{"start": "4096", "end": "20480", "nr_accesses": {"samples": 3}}]}]}]"#,
    )
    .unwrap();
    let out = foliosim(&[
        "trace",
        "import",
        "damo",
        input.to_str().unwrap(),
        "-o",
        trace.to_str().unwrap(),
        "--seed",
        "4",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let info = foliosim(&["trace", "info", trace.to_str().unwrap(), "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    // 4 pages, each touched in 3 of the 20 samples
    assert_eq!(json["accesses_collapsed"], 12);
    assert_eq!(json["distinct_pages"], 4);
    assert_eq!(json["recorder"], "damo");
}

#[test]
fn a_malformed_input_exits_2_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("lackey.txt");
    let trace = dir.path().join("t.trace");
    // 10,000 good lines, then a bad one: the import has begun writing when it fails
    let mut text = " L 1000,8\n S 2000,8\n".repeat(5000);
    let offset = text.len();
    text.push_str(" Q 1000,8\n");
    std::fs::write(&input, text).unwrap();
    let out = foliosim(&[
        "trace",
        "import",
        "lackey",
        input.to_str().unwrap(),
        "-o",
        trace.to_str().unwrap(),
    ]);
    expect_bad_input(
        &out,
        &format!(
            "foliosim: {}: byte {offset}: line 10001: expected",
            input.display()
        ),
        &["found \" Q 1000,8\""],
    );
    assert_eq!(files_in(dir.path()), ["lackey.txt"]);

    // an existing trace is left as it was
    std::fs::write(&trace, b"before").unwrap();
    let json = dir.path().join("damon.json");
    std::fs::write(&json, "[{\"snapshots\": [}]").unwrap();
    let out = foliosim(&[
        "trace",
        "import",
        "damo",
        json.to_str().unwrap(),
        "-o",
        trace.to_str().unwrap(),
    ]);
    expect_bad_input(
        &out,
        &format!(
            "foliosim: {}: byte 16: expected damo's record list (line 1 column 17",
            json.display()
        ),
        &[],
    );
    assert_eq!(std::fs::read(&trace).unwrap(), b"before");
    assert_eq!(
        files_in(dir.path()),
        ["damon.json", "lackey.txt", "t.trace"]
    );

    let out = foliosim(&[
        "trace",
        "import",
        "lackey",
        dir.path().join("missing.txt").to_str().unwrap(),
        "-o",
        trace.to_str().unwrap(),
    ]);
    expect_bad_input(
        &out,
        "foliosim: ",
        &["missing.txt: expected a readable file"],
    );

    let out = foliosim(&[
        "trace",
        "import",
        "lackey",
        input.to_str().unwrap(),
        "-o",
        dir.path().to_str().unwrap(),
    ]);
    expect_bad_input(
        &out,
        "foliosim: -o: ",
        &["expected a regular file or a new file name"],
    );
}

#[test]
fn a_truncated_or_foreign_trace_exits_2_with_its_byte_offset() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("lackey.txt");
    let trace = dir.path().join("t.trace");
    std::fs::write(&input, LACKEY).unwrap();
    let out = foliosim(&[
        "trace",
        "import",
        "lackey",
        input.to_str().unwrap(),
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let bytes = std::fs::read(&trace).unwrap();
    let cut = dir.path().join("cut.trace");
    std::fs::write(&cut, &bytes[..bytes.len() - 3]).unwrap();
    let out = foliosim(&["trace", "info", cut.to_str().unwrap()]);
    expect_bad_input(
        &out,
        &format!("foliosim: {}: byte ", cut.display()),
        &["truncated"],
    );

    let out = foliosim(&["trace", "info", input.to_str().unwrap()]);
    expect_bad_input(
        &out,
        &format!(
            "foliosim: {}: byte 0: expected a foliosim trace",
            input.display()
        ),
        &[],
    );
}
