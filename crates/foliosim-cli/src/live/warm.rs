//! The page cache a live run starts with: the files a trace task's `warm_files` selects
//! (foliosim::workload::warm_files, the selection the simulator caches at spawn) are read twice
//! by this harness, outside the run's cgroups, after the set-up and before the counters' first
//! snapshot. A page already cached stays where it is and charged to whoever read it first; a
//! page that was not is read into this process's memcg. Two passes of read() mark every folio
//! accessed twice, so it ends on its active file list, as the simulator places it. The run's
//! tasks then hit these pages and charge nothing to their cgroup. A file the trace names that
//! is not on this machine (valgrind's preload library when valgrind is gone) is skipped and
//! named in the result's notes.

use std::io::Read;

use foliosim::scenario::RunSpec;
use foliosim::workload::warm_files;
use serde_json::{json, Value};

use super::LiveError;

/// Reads the warm files of every task of the run twice; returns the notes for the result
/// (the files read, their bytes, those missing, this process's cgroup).
pub(super) fn warm_page_cache(spec: &RunSpec) -> Result<Option<Value>, LiveError> {
    let mut read = Vec::new();
    let mut missing = Vec::new();
    let mut bytes = 0u64;
    for task in &spec.scenario.tasks {
        let Some((trace, rule)) = warm_files::of_task(task) else {
            continue;
        };
        if rule.is_empty() {
            continue;
        }
        let files = rule
            .select(trace)
            .map_err(|e| LiveError::Failed(format!("task {}: warm_files: {e}", task.name)))?;
        for file in files {
            match read_twice(&file.path) {
                Some(n) => {
                    bytes += n;
                    read.push(file.path);
                }
                None => missing.push(file.path),
            }
        }
    }
    if read.is_empty() && missing.is_empty() {
        return Ok(None);
    }
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    Ok(Some(json!({
        "files": read,
        "bytes": bytes,
        "missing": missing,
        "reader_cgroup": cgroup.lines().collect::<Vec<_>>(),
    })))
}

/// Reads the regular file at `path` to its end twice; its size, or None if it cannot be read.
fn read_twice(path: &str) -> Option<u64> {
    let mut buffer = vec![0u8; 128 * 1024];
    let mut size = 0;
    for _ in 0..2 {
        let mut file = std::fs::File::open(path).ok()?;
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        size = 0;
        loop {
            match file.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => size += n as u64,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
    }
    Some(size)
}
