//! Building the project's C programs (kernel-bench/, valgrind-tool/) with the system compiler:
//! `make -C DIR OUT=<repository>/target/DIR`, from a checkout's working directory or the
//! repository this binary was built from.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds the C sources in folder `dir` (which has a Makefile) into `<repository>/target/<dir>`
/// and returns that directory; `what` names them in messages.
pub fn build(dir: &str, what: &str) -> Result<PathBuf, String> {
    let src = [
        PathBuf::from(dir),
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(dir),
    ]
    .into_iter()
    .find(|d| d.join("Makefile").is_file())
    .ok_or_else(|| format!("no {dir}/ directory with a Makefile found"))?;
    let src = src
        .canonicalize()
        .map_err(|e| format!("{}: {e}", src.display()))?;
    let out = src
        .parent()
        .unwrap_or(Path::new("."))
        .join("target")
        .join(dir);
    let result = Command::new("make")
        .arg("-s")
        .arg("-C")
        .arg(&src)
        .arg(format!("OUT={}", out.display()))
        .output()
        .map_err(|e| format!("cannot run make (needed to build {what}): {e}"))?;
    if !result.status.success() {
        return Err(format!(
            "building {what} failed:\n{}{}",
            String::from_utf8_lossy(&result.stdout),
            String::from_utf8_lossy(&result.stderr)
        ));
    }
    Ok(out)
}
