//! The page cache a live run starts with: the files a trace task's `warm_files` selects
//! (foliosim::workload::warm_files, the selection the simulator caches at spawn) are read twice
//! by this harness, outside the run's cgroups, after the set-up and before the counters' first
//! snapshot. A page already cached stays where it is and charged to whoever read it first; a
//! page that was not is read into this process's memcg. Two passes of read() mark every folio
//! accessed twice, so it ends on its active file list, as the simulator places it. The run's
//! tasks then hit these pages and charge nothing to their cgroup. A file the trace names that
//! is not on this machine (valgrind's preload library when valgrind is gone) is skipped and
//! named in the result's notes.
//!
//! Every other file the trace names starts on disk only in the simulator, so before warming,
//! the harness drops those that exist here from the page cache (written back, then
//! POSIX_FADV_DONTNEED, which leaves mapped and dirty pages alone): an earlier run, or the native
//! runs after it (live/native.rs), read the program's input into the cache, charged to another
//! cgroup, and a run finding it there would never charge or reclaim it. A relative path is the
//! program's, resolved from its command's `cwd`.

use std::io::Read;

use foliosim::scenario::RunSpec;
use foliosim::workload::warm_files;
use serde_json::{json, Value};

use super::LiveError;

/// The page cache the run starts with, as the simulator's: of the files each trace task names
/// (its trace's events read once), the cold ones are dropped from the cache, then the warm ones
/// are read twice. Returns the notes for the result: `warm_files` (the files read, their bytes,
/// those missing, this process's cgroup) and `cold_files_dropped`, each None when empty.
pub(super) fn prepare_page_cache(
    spec: &RunSpec,
) -> Result<(Option<Value>, Option<Value>), LiveError> {
    let (mut read, mut missing, mut dropped) = (Vec::new(), Vec::new(), Vec::new());
    let mut bytes = 0u64;
    for task in &spec.scenario.tasks {
        let Some((trace, rule)) = warm_files::of_task(task) else {
            continue;
        };
        let files = rule
            .classify(trace)
            .map_err(|e| LiveError::Failed(format!("task {}: warm_files: {e}", task.name)))?;
        let cwd = task.command.as_ref().and_then(|c| c.cwd.as_deref());
        for (file, _) in files.iter().filter(|(_, warm)| !warm) {
            let path = match cwd {
                Some(dir) => std::path::Path::new(dir).join(&file.path),
                None => std::path::PathBuf::from(&file.path),
            };
            if drop_cached(&path) {
                dropped.push(path.display().to_string());
            }
        }
        for (file, _) in files.into_iter().filter(|(_, warm)| *warm) {
            match read_twice(&file.path) {
                Some(n) => {
                    bytes += n;
                    read.push(file.path);
                }
                None => missing.push(file.path),
            }
        }
    }
    let warmed = (!read.is_empty() || !missing.is_empty()).then(|| {
        let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        json!({
            "files": read,
            "bytes": bytes,
            "missing": missing,
            "reader_cgroup": cgroup.lines().collect::<Vec<_>>(),
        })
    });
    Ok((warmed, (!dropped.is_empty()).then(|| json!(dropped))))
}

/// Writes back and drops the cached pages of the regular file at `path`; false if there is
/// none (a file the program creates, or one of another machine's).
fn drop_cached(path: &std::path::Path) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    // dirty pages are not dropped: write them first
    let _ = file.sync_all();
    // SAFETY: a plain advice call on a file descriptor this function owns.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) == 0 }
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

#[cfg(test)]
mod tests {
    use super::*;
    use foliosim::scenario::parse::resolve;
    use foliosim::trace::{Entry, Event, Header, TraceWriter};
    use foliosim::Scenario;

    #[test]
    fn the_harness_reads_the_selected_files_drops_the_others_and_names_those_missing_here() {
        let dir = std::env::temp_dir().join(format!("foliosim-live-warm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let header = Header {
            program: "p".into(),
            args: vec![],
            recorder: "test".into(),
            recorder_version: "0".into(),
            page_size_bytes: 4096,
            ..Default::default()
        };
        let file = std::fs::File::create(dir.join("t.trace")).unwrap();
        let mut w = TraceWriter::new(file, &header).unwrap();
        for (id, path) in [
            "/etc/passwd",
            "/usr/lib/foliosim-no-such-library.so",
            "inputs/own.txt",
        ]
        .iter()
        .enumerate()
        {
            w.push(&Entry::Event(Event::File {
                id: id as u32,
                path: path.to_string(),
                size_bytes: 4096,
            }))
            .unwrap();
        }
        w.finish().unwrap();
        let toml = dir.join("s.toml");
        std::fs::write(
            &toml,
            "name = \"s\"\n[machine]\n[[machine.node]]\nmemory = \"1G\"\ncpus = 1\n\
             [[task]]\nname = \"p\"\ntrace = \"t.trace\"\nwarm_files = \"system\"\n\
             command = [\"/bin/true\"]\ncwd = \".\"\n",
        )
        .unwrap();
        std::fs::create_dir_all(dir.join("inputs")).unwrap();
        std::fs::write(dir.join("inputs/own.txt"), "input").unwrap();
        let scenario = Scenario::load(&toml).unwrap();
        let spec = resolve(&scenario, "v6.18", None, &[], 1, true).unwrap();
        let (notes, dropped) = prepare_page_cache(&spec).unwrap();
        let notes = notes.expect("files to warm");
        // the program's own input, found from its command's cwd, starts uncached like the
        // replay's; the warm and the missing files are not dropped
        let dropped = dropped.expect("a file to drop");
        assert_eq!(
            dropped,
            json!([dir.join("./inputs/own.txt").display().to_string()])
        );
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(notes["files"], json!(["/etc/passwd"]));
        assert_eq!(
            notes["missing"],
            json!(["/usr/lib/foliosim-no-such-library.so"])
        );
        let size = std::fs::metadata("/etc/passwd").unwrap().len();
        assert_eq!(notes["bytes"], json!(size));
    }
}
