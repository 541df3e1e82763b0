//! What the trace tests share: a folder per test, a synthetic trace writer, a small machine with
//! zram and an 8 MiB memcg, and a run of a scenario file.
#![allow(dead_code)] // each test binary uses its own part

use foliosim::scenario::parse::resolve;
use foliosim::trace::{Entry, Header, TraceWriter};
use foliosim::{RunError, RunResult, Scenario};
use std::path::{Path, PathBuf};

/// A folder of its own for each test, removed when the test ends.
pub struct Dir(pub PathBuf);

impl Dir {
    pub fn new(test: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("foliosim-test-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn header() -> Header {
    Header {
        program: "synthetic".into(),
        args: vec![],
        recorder: "test".into(),
        recorder_version: "0".into(),
        page_size_bytes: 4096,
        ..Default::default()
    }
}

pub fn write_trace(path: &Path, entries: &[Entry]) {
    write_trace_with(path, &header(), entries)
}

pub fn write_trace_with(path: &Path, header: &Header, entries: &[Entry]) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = TraceWriter::new(std::io::BufWriter::new(file), header).unwrap();
    for e in entries {
        w.push(e).unwrap();
    }
    w.finish().unwrap();
}

/// 1 GiB, zram swap, an 8 MiB memcg.
pub const MACHINE: &str = r#"
name = "t"
[[machine.node]]
memory = "1G"
cpus = 2
[[swap]]
name = "zram0"
kind = "zram"
size = "256M"
[[cgroup]]
name = "cg"
"memory.max" = "8M"
[knobs]
"/sys/kernel/mm/transparent_hugepage/enabled" = "never"
"#;

pub fn run(path: &Path, profile: &str) -> Result<RunResult, RunError> {
    let scenario = Scenario::load(path).unwrap_or_else(|e| panic!("{e}"));
    let spec = resolve(&scenario, profile, None, &[], 1, true).unwrap();
    foliosim::run(&spec, &mut |_| {})
}
