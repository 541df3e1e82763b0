//! A trace task's `warm_files` (docs/replay.md): the system files a trace names start in the
//! page cache, charged to the root memcg, so a memcg-limited replay hits them (no charge, no
//! major fault, no read from disk) and its cgroup's reclaim never takes them; without the key
//! the same trace reads them into the cgroup. Bad values are one-line errors naming the key.

mod common;
use common::{run, write_trace, Dir, MACHINE};
use foliosim::trace::{Access, Entry, Event};
use foliosim::workload::warm_files::{WarmFiles, SYSTEM_DIRS};
use foliosim::{RunResult, Scenario};
use std::path::PathBuf;

const ANON: u64 = 0x7f12_3400_0000;
const LIB: u64 = 0x7f55_0000_0000;
const LIB_PAGES: u64 = 1024;

fn access(addr: u64, write: bool) -> Entry {
    Entry::Access(Access {
        thread: 0,
        page: addr / 4096,
        write,
        count: 1,
        instructions: 0,
    })
}

fn file(id: u32, path: &str, size_bytes: u64) -> Entry {
    Entry::Event(Event::File {
        id,
        path: path.into(),
        size_bytes,
    })
}

fn read(file: u32, len_bytes: u64) -> Entry {
    Entry::Event(Event::Read {
        thread: 0,
        file,
        offset_bytes: 0,
        len_bytes,
    })
}

/// A program that maps a 4 MiB library and reads it with read(), reads 1 MiB of its own input,
/// writes a file under /etc, then writes 12 MiB of heap in an 8 MiB memcg (memcg reclaim), then
/// runs through the library again.
fn program() -> Vec<Entry> {
    let mut e = vec![
        file(0, "/usr/lib/x86_64-linux-gnu/libwarm.so", LIB_PAGES * 4096),
        file(1, "/data/input.bin", 1 << 20),
        file(2, "/etc/written.conf", 1 << 16),
        Entry::Event(Event::Mmap {
            thread: 0,
            addr: LIB,
            len_bytes: LIB_PAGES * 4096,
            prot: 0x5,  // PROT_READ | PROT_EXEC
            flags: 0x2, // MAP_PRIVATE
            file: Some((0, 0)),
        }),
    ];
    e.extend((0..LIB_PAGES).map(|p| access(LIB + p * 4096, false)));
    e.push(read(0, LIB_PAGES * 4096));
    e.push(read(1, 1 << 20));
    e.push(Entry::Event(Event::Write {
        thread: 0,
        file: 2,
        offset_bytes: 0,
        len_bytes: 1 << 16,
    }));
    let heap_pages = 3072;
    e.push(Entry::Event(Event::Mmap {
        thread: 0,
        addr: ANON,
        len_bytes: heap_pages * 4096,
        prot: 0x3,
        flags: 0x22,
        file: None,
    }));
    e.extend((0..heap_pages).map(|p| access(ANON + p * 4096, true)));
    e.extend((0..LIB_PAGES).map(|p| access(LIB + p * 4096, false)));
    e
}

fn scenario(dir: &Dir, warm: &str) -> PathBuf {
    write_trace(&dir.0.join("app.trace"), &program());
    dir.write(
        "replay.toml",
        &format!(
            "{MACHINE}[[task]]\nname = \"app\"\ncgroup = \"cg\"\ntrace = \"app.trace\"\n{warm}\n"
        ),
    )
}

#[test]
fn a_warm_library_is_hit_without_a_charge_a_major_fault_or_a_read_and_memcg_reclaim_leaves_it() {
    let dir = Dir::new("system");
    let warm = run(&scenario(&dir, "warm_files = \"system\""), "v6.18").unwrap();
    let cold = run(&scenario(&dir, ""), "v6.18").unwrap();
    let app = |r: &RunResult| r.tasks.iter().find(|t| t["name"] == "app").unwrap().clone();
    let cg = |r: &RunResult, k: &str| r.memcg["cg"][k];

    // only the library: the input is not under a system directory, /etc/written.conf is written
    assert_eq!(app(&warm)["trace_warm_files"], 1);
    assert_eq!(app(&warm)["trace_warm_pages"], LIB_PAGES);
    assert!(app(&cold).get("trace_warm_files").is_none());

    // warm: the library's faults are minor, nothing of it is read from disk (pgpgin, in KiB:
    // the 1 MiB input only; the written file is overwritten whole, not read), and memcg
    // reclaim takes only the input, the written file and the heap
    assert_eq!(cg(&warm, "pgmajfault"), 0);
    assert_eq!(warm.vmstat["pgpgin"], 1024);
    assert!(cg(&warm, "pswpout") > 0, "the heap overflows the memcg");
    let file_stolen = |r: &RunResult| r.vmstat["pgsteal_file"];
    assert!(
        file_stolen(&warm) <= 256 + 16,
        "reclaim took {} file pages: more than the input and the written file",
        file_stolen(&warm)
    );
    // the library's pages stay cached: the second pass over it faults nothing in
    assert_eq!(cg(&warm, "workingset_refault_file"), 0);

    // cold: the same trace reads the library into the memcg, with major faults; charged
    // there, its pages (mapped, so kept active by reclaim) push that much more heap to swap
    assert!(cg(&cold, "pgmajfault") > 0);
    assert!(
        cold.vmstat["pgpgin"] >= (LIB_PAGES + 256) * 4,
        "{}",
        cold.vmstat["pgpgin"]
    );
    assert!(
        cg(&cold, "pswpout") >= cg(&warm, "pswpout") + LIB_PAGES * 3 / 4,
        "swapped out: cold {}, warm {}",
        cg(&cold, "pswpout"),
        cg(&warm, "pswpout")
    );
}

/// The live harness warms what the simulator caches at spawn and drops the rest of what the
/// trace names from the page cache: `classify` splits the files the same way `select` picks.
#[test]
fn every_file_the_trace_names_is_either_warm_or_cold() {
    let dir = Dir::new("classify");
    write_trace(&dir.0.join("app.trace"), &program());
    let system = WarmFiles {
        dirs: SYSTEM_DIRS.iter().map(|d| d.to_string()).collect(),
    };
    let named: Vec<(String, bool)> = system
        .classify(&dir.0.join("app.trace"))
        .unwrap()
        .into_iter()
        .map(|(f, warm)| (f.path, warm))
        .collect();
    assert_eq!(
        named,
        [
            ("/usr/lib/x86_64-linux-gnu/libwarm.so".to_string(), true),
            ("/data/input.bin".to_string(), false),
            // under /etc, but written: it starts on disk
            ("/etc/written.conf".to_string(), false),
        ]
    );
    let warm: Vec<String> = system
        .select(&dir.0.join("app.trace"))
        .unwrap()
        .into_iter()
        .map(|f| f.path)
        .collect();
    assert_eq!(warm, ["/usr/lib/x86_64-linux-gnu/libwarm.so"]);
    // with no rule every named file is cold
    let none = WarmFiles::default()
        .classify(&dir.0.join("app.trace"))
        .unwrap();
    assert!(none.iter().all(|(_, warm)| !warm) && none.len() == 3);
}

#[test]
fn bad_warm_files_values_are_one_line_errors_naming_the_key() {
    let dir = Dir::new("bad");
    for (value, key, expected) in [
        (
            "\"all\"",
            "task[0].warm_files",
            "expected \"system\", \"none\" or a list of absolute directory paths, found",
        ),
        (
            "3",
            "task[0].warm_files",
            "expected \"system\", \"none\" or a list of absolute directory paths, found",
        ),
        (
            "[\"/usr\", \"lib\"]",
            "task[0].warm_files[1]",
            "expected an absolute path, found",
        ),
    ] {
        let toml = scenario(&dir, &format!("warm_files = {value}"));
        let e = Scenario::load(&toml).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("{}: {key}: {expected}", toml.display())),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }
    // only a trace task has files to warm
    let toml = dir.write(
        "ops.toml",
        &format!("{MACHINE}[[task]]\nname = \"a\"\nops = [{{ op = \"exit\" }}]\nwarm_files = \"system\"\n"),
    );
    let e = Scenario::load(&toml).unwrap_err().to_string();
    assert!(e.contains("task[0].warm_files: unknown key"), "{e}");
}

#[test]
fn next_event_returns_exactly_the_events_next_entry_does() {
    let dir = Dir::new("events");
    let path = dir.0.join("mixed.trace");
    // accesses of every shape (threads, long and short deltas, counts, instructions of every
    // varint length) with events among them, some 2 MiB of records: many buffer refills
    let mut entries = Vec::new();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for i in 0..400_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        entries.push(Entry::Access(Access {
            thread: (x % 3) as u32,
            page: if x & 8 == 0 { x >> 20 } else { 1000 + i % 7 },
            write: x & 16 != 0,
            count: 1 + (x >> 40) as u32 % 300,
            instructions: (x >> 5) % (1 << (x % 50)),
        }));
        if x % 997 == 0 {
            entries.push(file(i as u32, &format!("/usr/lib/f{i}"), x >> 30));
        }
    }
    entries.push(file(7, "/etc/last", 5));
    write_trace(&path, &entries);
    let expected: Vec<Event> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Event(ev) => Some(ev.clone()),
            Entry::Access(_) => None,
        })
        .collect();
    assert!(expected.len() > 100);
    let mut reader = foliosim::trace::TraceReader::open(&path).unwrap();
    let mut got = Vec::new();
    while let Some(ev) = reader.next_event().unwrap() {
        got.push(ev);
    }
    assert_eq!(got, expected);
}
