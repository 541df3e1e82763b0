//! `--json FILE` on every command: the path is checked before any run (a regular file or a new
//! name in a writable directory; never a device, FIFO, directory, empty path, /proc or /sys),
//! and a write that fails or is interrupted leaves neither a result nor a temporary file.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn foliosim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_foliosim"))
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A bundled scenario of 8 runs: seconds of work, so a refusal that comes at once came first.
fn long_scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/usemem-small.toml")
}

/// Whether this process runs as root (permissions do not stop it; it may mount).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

/// The names in `dir` ending in `.tmp`: temporary files left behind.
fn temporary_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

/// Checks the refusal of an output path: exit 2, one line `foliosim: --json: PATH: expected ...`
/// holding each of `needles`, and nothing on stdout (the runs' table never came).
fn expect_refused(out: &Output, path: &str, needles: &[&str]) {
    let stderr = stderr_of(out);
    assert_eq!(out.status.code(), Some(2), "{path}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line expected: {stderr}");
    assert!(
        stderr.starts_with(&format!("foliosim: --json: {path}: expected ")),
        "{stderr}"
    );
    for needle in needles {
        assert!(stderr.contains(needle), "{needle:?} missing from: {stderr}");
    }
    assert!(out.stdout.is_empty(), "the runs ran before the refusal");
}

/// `foliosim run usemem-small --json PATH`, refused before the run.
fn expect_run_refused(path: &Path, needles: &[&str]) {
    let out = foliosim()
        .arg("run")
        .arg(long_scenario())
        .arg("--json")
        .arg(path)
        .output()
        .unwrap();
    expect_refused(&out, &path.display().to_string(), needles);
}

fn is_char_device(path: &str) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_char_device())
}

#[test]
fn a_device_is_refused_before_the_run() {
    for device in ["/dev/full", "/dev/null"] {
        expect_run_refused(Path::new(device), &["found a character device"]);
        assert!(is_char_device(device), "{device} is no longer a device");
    }
    assert!(temporary_files(Path::new("/dev")).is_empty());
}

#[test]
fn as_root_dev_null_is_refused_and_stays_a_device() {
    if !is_root() {
        println!("skipped: only root could replace /dev/null (run the tests as root)");
        return;
    }
    // as root a rename over /dev/null succeeds: the check is all that keeps the device
    expect_run_refused(Path::new("/dev/null"), &["found a character device"]);
    let meta = std::fs::symlink_metadata("/dev/null").unwrap();
    assert!(meta.file_type().is_char_device(), "/dev/null was replaced");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(meta.rdev(), (1 << 8) | 3, "/dev/null is device 1:3");
    assert!(temporary_files(Path::new("/dev")).is_empty());
}

#[test]
fn every_command_checks_its_json_before_running() {
    let scenario = long_scenario().display().to_string();
    // kernel-run and validate get a knob the resolver refuses: a check come too late would
    // stop there, before anything is played on this kernel (even as root)
    let unknown_knob = "/sys/kernel/mm/transparent_hugepage/nonexistent=1";
    let commands: [&[&str]; 4] = [
        &["run", &scenario],
        &["reproduce", "usemem-small"],
        &["kernel-run", &scenario, "--set", unknown_knob],
        &[
            "validate",
            &scenario,
            "--profile",
            "v6.12",
            "--set",
            unknown_knob,
        ],
    ];
    for args in commands {
        let out = foliosim()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(args)
            .args(["--json", "/dev/full"])
            .output()
            .unwrap();
        expect_refused(&out, "/dev/full", &["found a character device"]);
    }
}

#[test]
fn a_fifo_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("out.json");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo failed");
    // before the check, the FIFO was replaced by the result after the run
    expect_run_refused(&fifo, &["found a FIFO"]);
    let meta = std::fs::symlink_metadata(&fifo).unwrap();
    assert!(meta.file_type().is_fifo(), "the FIFO was replaced");
    assert!(temporary_files(dir.path()).is_empty());
}

#[test]
fn a_directory_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    expect_run_refused(dir.path(), &["found a directory"]);
    let with_slash = PathBuf::from(format!("{}/new/", dir.path().display()));
    expect_run_refused(&with_slash, &["found a directory path"]);
    expect_run_refused(
        &dir.path().join("missing/out.json"),
        &["in an existing directory", "No such file or directory"],
    );
}

#[test]
fn proc_and_sys_are_refused_before_the_run() {
    for path in ["/proc/x.json", "/sys/x.json", "/proc/self/comm"] {
        let top = if path.starts_with("/proc") {
            "/proc"
        } else {
            "/sys"
        };
        expect_run_refused(Path::new(path), &[&format!("outside {top}")]);
    }
    assert!(!Path::new("/proc/x.json").exists() && !Path::new("/sys/x.json").exists());
}

#[test]
fn an_empty_path_is_a_usage_error() {
    let out = foliosim()
        .arg("run")
        .arg(long_scenario())
        .args(["--json", ""])
        .output()
        .unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("foliosim: "), "{stderr}");
    assert!(stderr.contains("'--json <FILE>'"), "{stderr}");
    assert!(out.stdout.is_empty());
}

/// A tmpfs mounted for a test (root only), unmounted on drop.
struct Mount(tempfile::TempDir);

impl Mount {
    /// Mounts a tmpfs with `options`, or says why it cannot.
    fn tmpfs(options: &str) -> Result<Mount, String> {
        if !is_root() {
            return Err("mounting a tmpfs needs root".into());
        }
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!("mount failed: {}", stderr_of(&out).trim()));
        }
        Ok(Mount(dir))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn a_read_only_directory_is_refused_before_the_run() {
    if is_root() {
        // root ignores permission bits: a read-only mount refuses it too
        match Mount::tmpfs("ro,size=64k") {
            Ok(mount) => expect_run_refused(
                &mount.0.path().join("out.json"),
                &[
                    "expected a directory this user can write to",
                    "Read-only file system",
                ],
            ),
            Err(why) => println!("skipped: running as root, {why}"),
        }
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let read_only = dir.path().join("ro");
    std::fs::create_dir(&read_only).unwrap();
    std::fs::set_permissions(&read_only, std::fs::Permissions::from_mode(0o555)).unwrap();
    expect_run_refused(
        &read_only.join("out.json"),
        &[
            "expected a directory this user can write to",
            "Permission denied",
        ],
    );
}

#[test]
fn a_directory_where_a_fixed_temporary_name_would_be_does_not_matter() {
    // the temporary file has a unique name (out.json.XXXXXX.tmp), so out.json.tmp is left alone
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("out.json.tmp")).unwrap();
    let json = dir.path().join("out.json");
    let out = foliosim()
        .arg("run")
        .arg(long_scenario())
        .args(["--profile", "v6.12", "--variant", "64K", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["scenario"], "usemem-small");
    assert!(dir.path().join("out.json.tmp").is_dir());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}

/// Checks a failed write: exit 1, one line naming the path and `reason`, no result, no temporary.
fn expect_write_failed(out: &Output, json: &Path, reason: &str) {
    let stderr = stderr_of(out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line expected: {stderr}");
    assert!(
        stderr.starts_with(&format!(
            "foliosim: --json: {}: cannot write",
            json.display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains(reason), "{reason:?} missing from: {stderr}");
    assert!(!json.exists(), "a result was left");
    assert!(temporary_files(json.parent().unwrap()).is_empty());
    assert!(out.stdout.is_empty());
}

#[test]
fn a_full_disk_exits_1_and_leaves_no_file() {
    // the result (about 16 KB) does not fit in 8 KB, though the directory check passes
    let mount = match Mount::tmpfs("size=8k") {
        Ok(mount) => mount,
        Err(why) => {
            println!("skipped: {why}");
            return;
        }
    };
    let json = mount.0.path().join("out.json");
    let out = foliosim()
        .arg("run")
        .arg(long_scenario())
        .args(["--profile", "v6.12", "--variant", "64K", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    expect_write_failed(&out, &json, "No space left on device");
}

#[test]
fn a_file_size_limit_exits_1_and_leaves_no_file() {
    // any user can meet a write error: a file size limit of 1 block (EFBIG; SIGXFSZ ignored)
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -f 1 && trap '' XFSZ && exec \"$@\"")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_foliosim"))
        .arg("run")
        .arg(long_scenario())
        .args(["--profile", "v6.12", "--variant", "64K", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    expect_write_failed(&out, &json, "File too large");
}

#[test]
fn a_signal_during_a_run_leaves_no_temporary_file() {
    // wherever SIGTERM lands (the run, the write), the result is whole or absent, and no
    // temporary file stays
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let child = foliosim()
        .arg("run")
        .arg(long_scenario())
        .arg("--json")
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait_with_output().unwrap().status;
    assert!(temporary_files(dir.path()).is_empty());
    if status.success() {
        // the signal came too late to matter
        let text = std::fs::read_to_string(&json).unwrap();
        serde_json::from_str::<serde_json::Value>(&text).unwrap();
    } else {
        assert!(sent.success());
        assert!(!json.exists(), "a result was left after {status}");
    }
}
