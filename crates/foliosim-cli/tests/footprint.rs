//! A run whose generators would map more than this host can hold is refused before it starts:
//! exit 2, one line naming the key and the estimate, and no result file.

use std::process::Command;

#[test]
fn a_generator_task_bigger_than_the_host_is_refused_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    // 16,384 usemem processes of 8 TiB each: a page-table entry for each of their 2^45 pages
    // is 256 TiB, on a machine of 1 GiB (the machine's own share is 6 MiB)
    let scenario = dir.path().join("huge-usemem.toml");
    std::fs::write(
        &scenario,
        "name = \"huge-usemem\"\nprofiles = [\"v6.12\"]\n[machine]\n[[machine.node]]\n\
         memory = \"1G\"\ncpus = 2\n[[task]]\nname = \"u\"\ngenerator = \"usemem\"\n\
         processes = 16384\nsize = \"8T\"\n",
    )
    .unwrap();
    let json = dir.path().join("out.json");
    let out = Command::new(env!("CARGO_BIN_EXE_foliosim"))
        .arg("run")
        .arg(&scenario)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("huge-usemem.toml: task: "), "{stderr}");
    assert!(
        stderr.contains("expected a run that fits in this host's available memory"),
        "{stderr}"
    );
    assert!(stderr.contains("found an estimated 256.0 TiB"), "{stderr}");
    assert!(!json.exists());
}
