//! `foliosim trace record`: a small C program, compiled here, recorded under valgrind with the
//! foliotrace tool; the trace must hold what the program did (its mappings and the pages it
//! wrote in them, a thread, a fork and its child's writes, a file read and the kernel's copy into
//! the read's buffer, the exits). Skipped,
//! with the reason, on a machine without valgrind or a C compiler.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use foliosim::trace::{Access, Entry, Event, Header, ThreadId, TraceReader};

fn foliosim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_foliosim"))
}

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
}

/// Why this machine cannot record, if it cannot.
fn cannot_record() -> Option<&'static str> {
    if !on_path("valgrind") {
        Some("valgrind is not installed (apt-get install valgrind)")
    } else if !on_path("cc") {
        Some("no C compiler (cc)")
    } else if !on_path("make") {
        Some("no make")
    } else {
        None
    }
}

const MAPPED_PAGES: u64 = 64;
const CHILD_PAGES: u64 = 16;
const FILE_BYTES: u64 = 3 * 4096 + 100;

/// Maps MAPPED_PAGES pages and writes each, unmaps them; starts a thread that writes a page;
/// reads a file; maps CHILD_PAGES pages, forks a child that writes each of them; exits with
/// the status given as its second argument.
const PROGRAM: &str = r#"
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static char *thread_page;
static void *thread_main(void *arg) { thread_page[0] = 1; return arg; }

int main(int argc, char **argv) {
    long page = 4096;
    char *p = mmap(0, MAPPED_PAGES * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 100;
    for (long i = 0; i < MAPPED_PAGES; i++) p[i * page + 8] = (char)i;
    munmap(p, MAPPED_PAGES * page);

    thread_page = mmap(0, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    pthread_t t;
    if (pthread_create(&t, 0, thread_main, 0) != 0) return 101;
    pthread_join(t, 0);

    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) return 102;
    static char buf[FILE_BYTES];
    if (read(fd, buf, sizeof buf) != (long)sizeof buf) return 103;
    close(fd);

    char *q = mmap(0, CHILD_PAGES * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    pid_t child = fork();
    if (child == 0) {
        for (long i = 0; i < CHILD_PAGES; i++) q[i * page] = 2;
        _exit(0);
    }
    int status;
    waitpid(child, &status, 0);
    return atoi(argv[2]);
}
"#;

/// The program, compiled into `dir`, and the file it reads.
fn build_program(dir: &Path) -> (PathBuf, PathBuf) {
    let source = dir.join("program.c");
    std::fs::write(&source, PROGRAM).unwrap();
    let program = dir.join("program");
    let status = Command::new("cc")
        .args(["-O1", "-pthread", "-o"])
        .arg(&program)
        .arg(&source)
        .arg(format!("-DMAPPED_PAGES={MAPPED_PAGES}"))
        .arg(format!("-DCHILD_PAGES={CHILD_PAGES}"))
        .arg(format!("-DFILE_BYTES={FILE_BYTES}"))
        .status()
        .unwrap();
    assert!(status.success(), "cc failed");
    let input = dir.join("input.bin");
    std::fs::write(&input, vec![7u8; FILE_BYTES as usize]).unwrap();
    (program, input)
}

fn record(trace: &Path, command: &[&std::ffi::OsStr]) -> Output {
    foliosim()
        .args(["trace", "record", "-o"])
        .arg(trace)
        .arg("--")
        .args(command)
        .output()
        .unwrap()
}

fn read_trace(path: &Path) -> (Header, Vec<Entry>) {
    let mut reader = TraceReader::open(path).unwrap();
    let header = reader.header().clone();
    let mut entries = Vec::new();
    while let Some(entry) = reader.next_entry().unwrap() {
        entries.push(entry);
    }
    (header, entries)
}

fn thread_of(entry: &Entry) -> Option<ThreadId> {
    match entry {
        Entry::Access(a) => Some(a.thread),
        Entry::Event(
            Event::Mmap { thread, .. }
            | Event::Munmap { thread, .. }
            | Event::Mremap { thread, .. }
            | Event::Brk { thread, .. }
            | Event::Mprotect { thread, .. }
            | Event::Madvise { thread, .. }
            | Event::Fork { thread, .. }
            | Event::Clone { thread, .. }
            | Event::Exit { thread }
            | Event::Read { thread, .. }
            | Event::Write { thread, .. }
            | Event::Fadvise { thread, .. },
        ) => Some(*thread),
        Entry::Event(Event::File { .. }) => None,
    }
}

/// The pages of [addr, addr + len_bytes) that `thread` wrote between entries `from` and `to`.
fn written_pages(
    entries: &[Entry],
    thread: ThreadId,
    addr: u64,
    len_bytes: u64,
    from: usize,
    to: usize,
) -> BTreeSet<u64> {
    entries[from..to]
        .iter()
        .filter_map(|e| match e {
            Entry::Access(Access {
                thread: t,
                page,
                write: true,
                ..
            }) if *t == thread && (addr / 4096..(addr + len_bytes) / 4096).contains(page) => {
                Some(*page)
            }
            _ => None,
        })
        .collect()
}

fn position(entries: &[Entry], wanted: impl Fn(&Entry) -> bool) -> usize {
    entries
        .iter()
        .position(wanted)
        .expect("the trace holds the entry")
}

#[test]
fn a_recorded_program_shows_its_mappings_writes_thread_fork_file_and_exits() {
    if let Some(reason) = cannot_record() {
        eprintln!("skipped: {reason}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (program, input) = build_program(dir.path());
    let trace = dir.path().join("program.trace");
    let out = record(
        &trace,
        &[program.as_os_str(), input.as_os_str(), "0".as_ref()],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("exited with status 0"), "{stderr}");

    let (header, entries) = read_trace(&trace);
    assert_eq!(header.program, program.to_string_lossy());
    assert_eq!(header.args, [input.to_string_lossy().as_ref(), "0"]);
    assert_eq!(header.recorder, "foliotrace");
    assert_eq!(header.page_size_bytes, 4096);

    // threads are numbered 0, 1, 2, ... in order of first appearance
    let mut seen: Vec<ThreadId> = Vec::new();
    for entry in &entries {
        let mut named = thread_of(entry).into_iter().collect::<Vec<_>>();
        if let Entry::Event(Event::Fork { child, .. } | Event::Clone { child, .. }) = entry {
            named.push(*child);
        }
        for t in named {
            if !seen.contains(&t) {
                assert_eq!(t as usize, seen.len(), "thread {t} appears out of order");
                seen.push(t);
            }
        }
    }

    // the mapping of MAPPED_PAGES pages, each written, then unmapped
    let len = MAPPED_PAGES * 4096;
    let mapped = position(&entries, |e| {
        matches!(e, Entry::Event(Event::Mmap { thread: 0, len_bytes, prot: 3, flags, file: None, .. })
            if *len_bytes == len && flags & 0x20 != 0)
    });
    let Entry::Event(Event::Mmap { addr, .. }) = entries[mapped] else {
        unreachable!()
    };
    let unmapped = position(
        &entries,
        |e| matches!(e, Entry::Event(Event::Munmap { thread: 0, addr: a, len_bytes }) if *a == addr && *len_bytes == len),
    );
    assert!(mapped < unmapped);
    let pages = written_pages(&entries, 0, addr, len, mapped, unmapped);
    assert_eq!(pages.len() as u64, MAPPED_PAGES, "pages written: {pages:?}");

    // a thread, which writes its page and exits
    let cloned = position(&entries, |e| {
        matches!(e, Entry::Event(Event::Clone { thread: 0, .. }))
    });
    let Entry::Event(Event::Clone { child: thread, .. }) = entries[cloned] else {
        unreachable!()
    };
    let thread_exit = position(
        &entries,
        |e| matches!(e, Entry::Event(Event::Exit { thread: t }) if *t == thread),
    );
    assert!(cloned < thread_exit);
    assert!(entries[cloned..thread_exit].iter().any(
        |e| matches!(e, Entry::Access(Access { thread: t, write: true, .. }) if *t == thread)
    ));

    // the file read: its File entry (path, size) and a read of all of it
    let file = position(&entries, |e| {
        matches!(e, Entry::Event(Event::File { path, size_bytes, .. })
            if Path::new(path) == input && *size_bytes == FILE_BYTES)
    });
    let Entry::Event(Event::File { id, .. }) = entries[file] else {
        unreachable!()
    };
    let read = position(&entries, |e| {
        matches!(e, Entry::Event(Event::Read { thread: 0, file, offset_bytes: 0, len_bytes })
            if *file == id && *len_bytes == FILE_BYTES)
    });
    assert!(file < read);
    // the kernel's copy into the buffer (never touched by the program itself) writes each of
    // its pages: recorded as the thread's accesses beside the read
    let copied: BTreeSet<u64> = entries[read.saturating_sub(8)..(read + 8).min(entries.len())]
        .iter()
        .filter_map(|e| match e {
            Entry::Access(Access {
                thread: 0,
                page,
                write: true,
                ..
            }) => Some(*page),
            _ => None,
        })
        .collect();
    assert!(
        copied.len() as u64 >= FILE_BYTES / 4096 + 1,
        "pages written by the read: {copied:?}"
    );

    // the fork: the child writes each of the CHILD_PAGES pages mapped before it, then exits
    let child_len = CHILD_PAGES * 4096;
    let child_mapped = position(
        &entries,
        |e| matches!(e, Entry::Event(Event::Mmap { thread: 0, len_bytes, .. }) if *len_bytes == child_len),
    );
    let Entry::Event(Event::Mmap {
        addr: child_addr, ..
    }) = entries[child_mapped]
    else {
        unreachable!()
    };
    let forked = position(&entries, |e| {
        matches!(e, Entry::Event(Event::Fork { thread: 0, .. }))
    });
    let Entry::Event(Event::Fork { child, .. }) = entries[forked] else {
        unreachable!()
    };
    assert!(child_mapped < forked);
    assert!(
        entries[..forked]
            .iter()
            .all(|e| thread_of(e) != Some(child)),
        "the child appears before its fork"
    );
    let child_exit = position(
        &entries,
        |e| matches!(e, Entry::Event(Event::Exit { thread }) if *thread == child),
    );
    let child_pages = written_pages(&entries, child, child_addr, child_len, forked, child_exit);
    assert_eq!(child_pages.len() as u64, CHILD_PAGES, "{child_pages:?}");

    // every thread exits once, the first thread last of its process's
    let exits: Vec<ThreadId> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Event(Event::Exit { thread }) => Some(*thread),
            _ => None,
        })
        .collect();
    assert_eq!(
        exits.iter().copied().collect::<HashSet<_>>().len(),
        exits.len()
    );
    assert_eq!(
        exits.len(),
        seen.len(),
        "exits {exits:?} of threads {seen:?}"
    );
    assert!(matches!(
        entries.last(),
        Some(Entry::Event(Event::Exit { thread: 0 }))
    ));

    // instructions are counted: the program ran many between its records
    let instructions: u64 = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Access(a) => Some(a.instructions),
            _ => None,
        })
        .sum();
    assert!(instructions > 10_000, "{instructions} instructions");
    // the header carries the total, beside the native runs' user time
    assert_eq!(header.instructions, instructions);
}

#[test]
fn the_exit_status_is_the_programs_and_the_trace_is_written() {
    if let Some(reason) = cannot_record() {
        eprintln!("skipped: {reason}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (program, input) = build_program(dir.path());
    let trace = dir.path().join("seven.trace");
    let out = record(
        &trace,
        &[program.as_os_str(), input.as_os_str(), "7".as_ref()],
    );
    assert_eq!(out.status.code(), Some(7));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("exited with status 7"), "{stderr}");
    let (_, entries) = read_trace(&trace);
    assert!(entries.len() > 100);
}

#[test]
fn a_program_valgrind_cannot_run_leaves_no_trace() {
    if let Some(reason) = cannot_record() {
        eprintln!("skipped: {reason}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("none.trace");
    let out = record(&trace, &["/nonexistent/program".as_ref()]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no trace written"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "files left: {left:?}");
}

#[test]
fn without_valgrind_it_says_how_to_install_it_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.trace");
    let out = foliosim()
        .env("PATH", dir.path())
        .args(["trace", "record", "-o"])
        .arg(&trace)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("valgrind not found"), "{stderr}");
    assert!(stderr.contains("apt-get install valgrind"), "{stderr}");
    assert!(!trace.exists());
}

#[test]
fn a_command_is_required() {
    let out = foliosim().args(["trace", "record"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_program_that_execs_is_traced_up_to_the_exec_and_says_so() {
    if let Some(reason) = cannot_record() {
        eprintln!("skipped: {reason}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("sh.trace");
    // a failed exec first (the shell goes on), then one that replaces it
    let out = record(
        &trace,
        &[
            "/bin/sh".as_ref(),
            "-c".as_ref(),
            "/nonexistent/x 2>/dev/null; exec /bin/true".as_ref(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("exec'd /bin/true: what ran after the exec is not in the trace"),
        "{stderr}"
    );
    assert!(!stderr.contains("/nonexistent"), "{stderr}");
    let (_, entries) = read_trace(&trace);
    assert!(matches!(
        entries.last(),
        Some(Entry::Event(Event::Exit { thread: 0 }))
    ));
}
