//! Files that start in the page cache, charged elsewhere (a trace task's `warm_files`,
//! docs/replay.md): the one selection both sides of a comparison use. The simulator caches
//! these files' pages at spawn, charged to the root memcg (`Kernel::filemap_warm`); `kernel-run`
//! and `validate` read the same files twice from the harness, outside the run's cgroups, before
//! the run starts (crates/foliosim-cli/src/live/warm.rs).
//!
//! On a real machine a program's shared libraries and an interpreter's modules are usually in
//! the page cache before it starts, read by whoever used them first and charged to that
//! task's memcg (mem_cgroup_charge in filemap_add_folio); a later reader in another cgroup hits
//! them and charges nothing, and its cgroup's reclaim never sees them. A trace replayed with
//! every file cold instead reads them into the run's memcg, where they compete with its heap.
//!
//! The selection: the files the trace names (its `File` events) whose path is under one of the
//! rule's directories and that the trace never writes (no `Write` event, no shared writable
//! mapping). `"system"` is the directories of the installed system (`SYSTEM_DIRS`: libraries,
//! interpreters' modules, configuration), never a program's own inputs and outputs; a list
//! names directories (or files) of its own. Paths are compared as the trace has them; only
//! absolute paths can match.

use crate::scenario::walker::{describe, Node, Res};
use crate::trace::{Event, TraceError, TraceReader};
use std::collections::BTreeMap;
use std::path::Path;

/// `warm_files = "system"`: the directories of the installed system.
pub const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc",
];

/// A task's `warm_files`: the directories whose files start cached (empty: none, the default).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WarmFiles {
    pub dirs: Vec<String>,
}

/// A file that starts in the page cache: its path as the trace names it, its size at its first
/// open.
#[derive(Clone, Debug, PartialEq)]
pub struct WarmFile {
    pub path: String,
    pub size_bytes: u64,
}

impl WarmFiles {
    /// `warm_files`: `"system"`, `"none"`, or a list of absolute paths.
    pub(crate) fn parse(task: &Node) -> Res<WarmFiles> {
        const EXPECTED: &str = "\"system\", \"none\" or a list of absolute directory paths";
        let Some(value) = task.table.get("warm_files") else {
            return Ok(WarmFiles::default());
        };
        let dirs = match value {
            toml::Value::String(s) if s == "system" => {
                SYSTEM_DIRS.iter().map(|d| d.to_string()).collect()
            }
            toml::Value::String(s) if s == "none" => Vec::new(),
            toml::Value::Array(items) => {
                let mut dirs = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match item.as_str() {
                        Some(d) if d.starts_with('/') => {
                            dirs.push(d.trim_end_matches('/').to_string())
                        }
                        _ => {
                            return Err(task.err(
                                &format!("warm_files[{i}]"),
                                format!("expected an absolute path, found {}", describe(item)),
                            ))
                        }
                    }
                }
                dirs
            }
            v => {
                return Err(task.err(
                    "warm_files",
                    format!("expected {EXPECTED}, found {}", describe(v)),
                ))
            }
        };
        Ok(WarmFiles { dirs })
    }

    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty()
    }

    /// Whether `path` is one of the directories or under one ("/" matches every absolute path).
    pub fn covers(&self, path: &str) -> bool {
        self.dirs.iter().any(|d| {
            path.strip_prefix(d.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
    }

    /// The files of the trace at `trace` that start cached: those it names under the
    /// directories and never writes, in the order it first names them.
    pub fn select(&self, trace: &Path) -> Result<Vec<WarmFile>, TraceError> {
        if self.is_empty() {
            return Ok(Vec::new());
        }
        let files = self.classify(trace)?;
        Ok(files
            .into_iter()
            .filter(|(_, warm)| *warm)
            .map(|(f, _)| f)
            .collect())
    }

    /// Every file the trace at `trace` names, in the order it first names them, and whether it
    /// starts cached (`select`'s); the others start on disk only. Reads the trace's events once
    /// (its access records skipped: about as fast as zstd decompresses).
    pub fn classify(&self, trace: &Path) -> Result<Vec<(WarmFile, bool)>, TraceError> {
        const MAP_SHARED: u32 = 0x01;
        const PROT_WRITE: u32 = 0x2;
        let mut reader = TraceReader::open(trace)?;
        // by path: (first-open order, size at the first open, written)
        let mut files: BTreeMap<String, (usize, u64, bool)> = BTreeMap::new();
        let mut path_of: Vec<Option<String>> = Vec::new();
        let written = |path_of: &[Option<String>],
                       files: &mut BTreeMap<String, (usize, u64, bool)>,
                       id: u32| {
            if let Some(Some(path)) = path_of.get(id as usize) {
                if let Some(f) = files.get_mut(path) {
                    f.2 = true;
                }
            }
        };
        while let Some(event) = reader.next_event()? {
            match event {
                Event::File {
                    id,
                    path,
                    size_bytes,
                } => {
                    if path_of.len() <= id as usize {
                        path_of.resize(id as usize + 1, None);
                    }
                    let order = files.len();
                    files
                        .entry(path.clone())
                        .or_insert((order, size_bytes, false));
                    path_of[id as usize] = Some(path);
                }
                Event::Write { file, .. } => written(&path_of, &mut files, file),
                Event::Mmap {
                    prot,
                    flags,
                    file: Some((file, _)),
                    ..
                } if flags & MAP_SHARED != 0 && prot & PROT_WRITE != 0 => {
                    written(&path_of, &mut files, file)
                }
                _ => {}
            }
        }
        let mut named: Vec<(usize, (WarmFile, bool))> = files
            .into_iter()
            .map(|(path, (order, size_bytes, written))| {
                let warm = !written && self.covers(&path);
                (order, (WarmFile { path, size_bytes }, warm))
            })
            .collect();
        named.sort_by_key(|(order, _)| *order);
        Ok(named.into_iter().map(|(_, f)| f).collect())
    }
}

/// The trace and the warm-file rule of a task that replays a trace (None for any other task),
/// for the live harness.
pub fn of_task(task: &crate::scenario::TaskSpec) -> Option<(&Path, &WarmFiles)> {
    let crate::scenario::Program::Generator(params) = &task.program else {
        return None;
    };
    let replay = (params.as_ref() as &dyn std::any::Any)
        .downcast_ref::<super::trace_replay::TraceReplay>()?;
    Some((replay.path.as_path(), &replay.warm_files))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_covers_itself_and_what_is_under_it_only() {
        let w = WarmFiles {
            dirs: vec!["/usr/lib".into()],
        };
        assert!(w.covers("/usr/lib/x.so"));
        assert!(w.covers("/usr/lib"));
        assert!(!w.covers("/usr/libexec/x"));
        assert!(!w.covers("lib/x.so"));
        let system = WarmFiles {
            dirs: SYSTEM_DIRS.iter().map(|d| d.to_string()).collect(),
        };
        assert!(system.covers("/lib/x86_64-linux-gnu/libc.so.6"));
        assert!(system.covers("/usr/lib/python3.11/os.py"));
        assert!(!system.covers("inputs/text.txt"));
        assert!(!system.covers("/work/target/real/inputs/rows.csv"));
        let root = WarmFiles {
            dirs: vec!["".into()],
        };
        assert!(root.covers("/anything"));
    }
}
