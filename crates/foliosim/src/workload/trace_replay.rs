//! Replaying a trace of a real program (`trace = "FILE"` on a task; docs/replay.md, the format
//! in docs/traces.md): the traced process becomes the task's process, its threads become threads
//! of it, its forks become child processes, and every record goes through the same mm paths as
//! the ops do.
//!
//! - **Accesses.** Each record is one `Kernel::touch` of its page (fault, TLB and reclaim paths
//!   as a `touch` op), whatever the number of accesses it collapses (counted in
//!   `trace_accesses`); writes store `content::DATA_DEFAULT`. The instructions since the thread's
//!   previous record are charged first, as user time, at the hardware profile's
//!   `instruction_ns_x1000` (picoseconds carried between records). A page no mapping covers is
//!   counted in `trace_unmapped_accesses` and skipped.
//! - **Placement.** mm picks a task's virtual pages itself and keeps them below 2^32, so a trace
//!   address is translated: each process keeps the trace's mapped page ranges sorted, each with
//!   the offset to its simulated VMA. A simulated VMA starts at a page congruent to the trace's
//!   modulo 512, so a 2 MiB-aligned trace region stays 2 MiB-aligned (THP faults happen where
//!   they would). File mappings are placed by `mmap_file` (which aligns file offsets as the
//!   kernel does).
//! - **Address-space events.** mmap: anonymous (shared anonymous memory too, as private: there
//!   is no shmem) or of a file the trace declared; it first unmaps what it overlaps (MAP_FIXED).
//!   munmap: a whole simulated VMA is unmapped, a part of one is zapped (its pages freed; mm has
//!   no VMA splitting). mremap: the pages keep their simulated VMA and only their trace
//!   addresses move (as the kernel moves page tables, nothing is copied or faulted); a shrink
//!   zaps the tail, a growth maps the new tail as a new anonymous VMA. brk: the heap grows into
//!   a reservation that reaches the next 2 MiB boundary of the trace's addresses, so that the
//!   heap can take huge pages, and replaces what the trace mapped where it grows (valgrind's
//!   own page at the initial break); a shrink zaps. madvise: DONTNEED, HUGEPAGE, NOHUGEPAGE,
//!   COLD and PAGEOUT as the `madvise` op does them (flags apply to the whole simulated VMA); other
//!   advice (FREE, WILLNEED, ...) and mprotect (mm has no protections) are counted in
//!   `trace_ignored_events` and skipped.
//! - **Files.** A `File` event names a scenario `[[file]]` by its path or its last component;
//!   else a file the task's `warm_files` cached at spawn (workload/warm_files.rs: in the page
//!   cache, charged to the root memcg); otherwise a file of the size the trace gives is created
//!   on disk. Both are on a device with the task's `read_ahead_kb` (default 128) and
//!   `large_folios` (default true), so read()/write() go through the page-cache paths of the
//!   `read`/`write` ops. A write past the file's end extends it, as write() does (a temporary
//!   file starts at size 0 and grows); a read stops at the end. posix_fadvise SEQUENTIAL
//!   doubles the task's readahead window on the file, NORMAL restores it (generic_fadvise);
//!   other advice is counted in `trace_ignored_events`.
//! - **Threads and processes.** Thread 0 is the task's process. `Clone` starts a thread of the
//!   parent's process at the parent's clock, `Fork` a child process (the `fork` op's COW fork),
//!   `Exit` ends a thread (the process when its last thread ends); a thread whose records end
//!   without `Exit` ends at the end of the trace. A thread the trace names without a `Clone` or
//!   `Fork` becomes a thread of the first process when it is first named.
//!
//! **Interleaving.** The trace is one order of entries across threads; each simulated thread
//! replays its own entries in that order, at its own simulated pace, on the CPU the scheduler
//! gives it (threads run in parallel as on the live machine). One reader streams the trace for
//! all threads: a thread that needs its next entry reads on, queueing the other threads'
//! entries, until it finds one. At most `MAX_QUEUED_ENTRIES` wait in those queues; a thread that
//! would need more waits (`trace_waits`), sleeping `QUEUE_WAIT_NS` at a time, until the threads
//! behind it have caught up. So no thread runs more than that many entries ahead of the trace's
//! order, which keeps a thread from using memory another thread maps before that mapping
//! replays (roughly: the bound is in entries, not time). A `File` event applies when it is read.
//!
//! A trace that turns out malformed after its header stops the run with the reader's one-line
//! error (`Workload::trace_error`, exit 2).

use super::task::{Report, TaskProgram};
use super::warm_files::{WarmFile, WarmFiles};
use super::{params_of, Generator, Workload};
use crate::mm::memory::Killed;
use crate::mm::task::TaskState;
use crate::mm::vma::{RecentHits, HPAGE_PMD_NR, VM_EXEC, VM_SHARED, VM_WRITE};
use crate::mm::Kernel;
use crate::scenario::generators::{
    GeneratorDef, GeneratorParams, TRACE_REPLAY_GENERATOR,
};
use crate::scenario::types::{content, ReadRequest, WriteRequest, PAGE_SIZE};
use crate::scenario::walker::{Node, Res};
use crate::scenario::knobs::{NATIVE_USER_NS, NATIVE_USER_NS_VALUES, NOT_NATIVE_TIMED};
use crate::scenario::{Advice, InputError, MachineSpec, Program, TaskSpec};
use crate::trace::{Entry, Event, Header, ThreadId, TraceError, TraceReader};
use serde_json::{json, Map, Value};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};

/// Entries read ahead for threads other than the one reading, at most.
pub const MAX_QUEUED_ENTRIES: usize = 1 << 16;
/// Entries read from the trace at a time: the reading thread's own accesses among them have
/// their page-table entries prefetched before they replay.
const READ_BATCH: usize = 16;
/// How long a thread that must wait for the others sleeps before it looks again.
pub const QUEUE_WAIT_NS: u64 = 20_000;

// Linux x86-64 values of the flags the replay reads.
const PROT_WRITE: u32 = 0x2;
const PROT_EXEC: u32 = 0x4;
const MAP_TYPE: u32 = 0x3;
const MAP_PRIVATE: u32 = 0x2;
const MADV_DONTNEED: u32 = 4;
const MADV_HUGEPAGE: u32 = 14;
const MADV_NOHUGEPAGE: u32 = 15;
const MADV_COLD: u32 = 20;
const MADV_PAGEOUT: u32 = 21;
const POSIX_FADV_NORMAL: u32 = 0;
const POSIX_FADV_SEQUENTIAL: u32 = 2;

/// `trace = "..."` (or `generator = "trace_replay"`).
pub struct TraceReplayGenerator;

/// The trace a task replays: its path (relative ones resolved against the scenario's folder)
/// and its header, read when the scenario loads.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceReplay {
    pub path: PathBuf,
    pub header: Header,
    /// The files the trace names that start in the page cache, charged to the root memcg
    /// (`warm_files`, workload/warm_files.rs).
    pub warm_files: WarmFiles,
    /// The device of the files the trace names and no `[[file]]` declares: its readahead
    /// maximum (`read_ahead_kb`) and the filesystem's large folios (`large_folios`), as a
    /// `[[file]]` takes them.
    pub read_ahead_kb: u64,
    pub large_folios: bool,
    /// `user_time = "native"`: the user time of an instruction is the program's own on the
    /// recording machine (the header's native user time over its instruction total), in ps;
    /// None (`"profile"`, the default): the hardware profile's `instruction_ns_x1000`.
    pub instruction_ps: Option<u64>,
}

impl GeneratorDef for TraceReplayGenerator {
    fn name(&self) -> &'static str {
        TRACE_REPLAY_GENERATOR
    }
    fn params(&self) -> &'static [&'static str] {
        &["trace", "warm_files", "read_ahead_kb", "large_folios", "user_time"]
    }
    fn parse(&self, task: &Node, _machine: &MachineSpec) -> Res<Box<dyn GeneratorParams>> {
        let Some(given) = task.str_opt("trace")? else {
            return Err(task.missing("trace", "the path of a trace file"));
        };
        let folder = Path::new(task.cx.file).parent().unwrap_or(Path::new(""));
        let path = folder.join(given);
        let source = open(&path).map_err(|e| task.err("trace", e.to_string()))?;
        let header = source.header().clone();
        check_header(&header).map_err(|message| task.err("trace", message))?;
        let warm_files = WarmFiles::parse(task)?;
        let (read_ahead_kb, large_folios) = task.file_device()?;
        let instruction_ps = match task.str_opt("user_time")? {
            None | Some("profile") => None,
            // a program too short to time has a native user time of 0: that is what it took
            Some("native") if header.instructions > 0 => Some(native_instruction_ps(
                header.native_user_ns,
                header.instructions,
            )),
            Some("native") => {
                return Err(task.err(
                    "user_time",
                    format!(
                        "expected a trace with its native run's user time and instruction total \
                         (foliosim trace record with --native-runs 1 or more), found none in {}",
                        path.display()
                    ),
                ))
            }
            Some(other) => {
                return Err(task.err(
                    "user_time",
                    format!("expected \"profile\" or \"native\", found {other:?}"),
                ))
            }
        };
        Ok(Box::new(TraceReplay {
            path,
            header,
            warm_files,
            read_ahead_kb,
            large_folios,
            instruction_ps,
        }))
    }
}

/// The user time of an instruction of a program whose native run took `user_ns` over
/// `instructions` (at least 1), in ps.
fn native_instruction_ps(user_ns: u64, instructions: u64) -> u64 {
    (u128::from(user_ns) * 1000 / u128::from(instructions.max(1))).max(1) as u64
}

/// The native user time in the trace's header, in ns, of a task replaying a trace at its
/// program's native speed (`user_time = "native"`): a task that a live run times natively and
/// `<task>/native_user_ns` re-times. None for any other task.
pub fn recorded_native_user_ns(task: &TaskSpec) -> Option<u64> {
    match &task.program {
        Program::Generator(p) if p.generator() == TRACE_REPLAY_GENERATOR => {
            let replay = params_of::<TraceReplay>(p.as_ref());
            replay.instruction_ps.map(|_| replay.header.native_user_ns)
        }
        _ => None,
    }
}

/// What a replay can read: the header, then the entries, a batch at a time (one dynamic call
/// per batch, so that a reader's decoding loop can be inlined into it).
pub trait EntrySource {
    fn header(&self) -> &Header;
    /// Appends up to `max` entries to `out`. Ok(false) once the trace has ended; on an error,
    /// the entries read before it are in `out`.
    fn read_entries(&mut self, out: &mut Vec<Entry>, max: usize) -> Result<bool, TraceError>;
}

/// Entries made in memory (tests, benchmarks).
pub struct MemorySource<I> {
    pub header: Header,
    pub entries: I,
}

impl<I: Iterator<Item = Result<Entry, TraceError>>> EntrySource for MemorySource<I> {
    fn header(&self) -> &Header {
        &self.header
    }
    fn read_entries(&mut self, out: &mut Vec<Entry>, max: usize) -> Result<bool, TraceError> {
        for _ in 0..max {
            match self.entries.next() {
                Some(e) => out.push(e?),
                None => return Ok(false),
            }
        }
        Ok(true)
    }
}

/// A trace file's reader: its decoding loop runs a batch at a time.
impl<R: std::io::Read> EntrySource for TraceReader<R> {
    fn header(&self) -> &Header {
        TraceReader::header(self)
    }
    fn read_entries(&mut self, out: &mut Vec<Entry>, max: usize) -> Result<bool, TraceError> {
        for _ in 0..max {
            match self.next_entry()? {
                Some(e) => out.push(e),
                None => return Ok(false),
            }
        }
        Ok(true)
    }
}

/// Opens a trace file and reads its header.
pub fn open(path: &Path) -> Result<Box<dyn EntrySource>, TraceError> {
    Ok(Box::new(TraceReader::open(path)?))
}

/// What the replay needs of a header: pages of the simulator's size.
fn check_header(h: &Header) -> Result<(), String> {
    if h.page_size_bytes != PAGE_SIZE {
        return Err(format!(
            "expected a trace of {PAGE_SIZE}-byte pages, found page_size_bytes = {}",
            h.page_size_bytes
        ));
    }
    Ok(())
}

impl GeneratorParams for TraceReplay {
    fn generator(&self) -> &'static str {
        TRACE_REPLAY_GENERATOR
    }
    /// `native_user_ns` (from a `<task>/native_user_ns` knob): a native run's user time, timed
    /// since the recording, replaces the header's.
    fn apply_arg(&mut self, key: &str, v: &toml::Value) -> Result<bool, String> {
        if key != NATIVE_USER_NS {
            return Ok(false);
        }
        let ns = v
            .as_integer()
            .filter(|ns| *ns > 0)
            .ok_or_else(|| format!("expected {NATIVE_USER_NS_VALUES}, found {v}"))?;
        if self.instruction_ps.is_none() {
            return Err(NOT_NATIVE_TIMED.to_string());
        }
        self.instruction_ps = Some(native_instruction_ps(ns as u64, self.header.instructions));
        Ok(true)
    }
    /// What a trace maps is known only as it is read (the header does not say), so the
    /// host-memory estimate leaves it out; the page tables of a replay grow with its mmaps.
    fn mapped_pages(&self) -> u64 {
        0
    }
}

impl Generator for TraceReplayGenerator {
    fn spawn(
        &self,
        params: &dyn GeneratorParams,
        w: &mut Workload,
        k: &mut Kernel,
        task: &TaskSpec,
        memcg: u16,
    ) -> Result<(), InputError> {
        let p: &TraceReplay = params_of(params);
        let key = trace_key(k, &task.name);
        let input_error = |e: TraceError| InputError {
            file: k.spec.scenario.file.clone(),
            key: key.clone(),
            message: e.to_string(),
        };
        let source = open(&p.path).map_err(input_error)?;
        let warm = p.warm_files.select(&p.path).map_err(input_error)?;
        let device = (p.read_ahead_kb, p.large_folios);
        w.spawn_replay(k, task, memcg, source, key, device, p.instruction_ps);
        w.warm_replay_files(k, &warm, task.node);
        Ok(())
    }
}

/// `task[i].trace` of the task called `name`.
fn trace_key(k: &Kernel, name: &str) -> String {
    let i = k.spec.scenario.tasks.iter().position(|t| t.name == name);
    format!("task[{}].trace", i.unwrap_or(0))
}

/// What a replayed thread reports (per task in the result).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceCounters {
    /// Access records replayed, and the accesses they collapse.
    pub records: u64,
    pub accesses: u64,
    /// Records of pages no mapping covered.
    pub unmapped_accesses: u64,
    /// Instructions charged as user time.
    pub instructions: u64,
    /// Address-space, thread and file events replayed, and those counted and skipped.
    pub events: u64,
    pub ignored_events: u64,
    /// Times the thread waited for the others (the read-ahead queues were full).
    pub waits: u64,
    /// Files that started in the page cache and their pages (`warm_files`; thread 0 only).
    pub warm_files: u64,
    pub warm_pages: u64,
}

impl TraceCounters {
    /// The counters as fields of the task's result.
    pub fn insert_into(&self, m: &mut Map<String, Value>) {
        for (name, v) in [
            ("trace_records", self.records),
            ("trace_accesses", self.accesses),
            ("trace_unmapped_accesses", self.unmapped_accesses),
            ("trace_instructions", self.instructions),
            ("trace_events", self.events),
            ("trace_ignored_events", self.ignored_events),
            ("trace_waits", self.waits),
        ] {
            m.insert(name.into(), json!(v));
        }
        if self.warm_files > 0 {
            m.insert("trace_warm_files".into(), json!(self.warm_files));
            m.insert("trace_warm_pages".into(), json!(self.warm_pages));
        }
    }
}

/// A thread's place in a replay: which replay, which trace thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayThread {
    pub replay: u32,
    pub thread: ThreadId,
}

/// Trace pages [lo, hi) mapped at simulated pages lo + delta.. (wrapping), inside the simulated
/// VMA starting at `vma`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Region {
    lo: u64,
    hi: u64,
    delta: u64,
    vma: u32,
}

impl Region {
    fn vpn(&self, page: u64) -> u32 {
        page.wrapping_add(self.delta) as u32
    }
}

/// The heap's simulated VMA: it reserves trace pages [lo, hi) (up to a 2 MiB boundary), of
/// which the program break has mapped a prefix.
#[derive(Clone, Copy, Debug)]
struct Heap {
    lo: u64,
    hi: u64,
    delta: u64,
    vma: u32,
}

/// One traced process: its simulated mm and the translation of its trace addresses.
#[derive(Clone, Debug, Default)]
struct Space {
    mm: u32,
    /// Sorted by `lo`, not overlapping.
    regions: Vec<Region>,
    heap: Option<Heap>,
    /// The regions the last translations found (hints: checked before use). A program's
    /// consecutive records go back and forth between a few regions (its stack, heap and data):
    /// with the last one alone, 85% of sqlite3's translations searched.
    recent: RecentHits,
}

impl Space {
    #[inline]
    fn translate(&mut self, page: u64) -> Option<u32> {
        let regions = &self.regions;
        if let Some(i) = self
            .recent
            .find(|i| regions.get(i).is_some_and(|r| page >= r.lo && page < r.hi))
        {
            return Some(regions[i].vpn(page));
        }
        let i = self.regions.partition_point(|r| r.hi <= page);
        let r = self.regions.get(i)?;
        if page < r.lo {
            return None;
        }
        self.recent.remember(i);
        Some(r.vpn(page))
    }

    /// Adds a region (its range unmapped before), merging it with a neighbour in the same VMA.
    fn insert(&mut self, r: Region) {
        let i = self.regions.partition_point(|x| x.lo < r.lo);
        debug_assert!(
            (i == 0 || self.regions[i - 1].hi <= r.lo)
                && self.regions.get(i).is_none_or(|x| r.hi <= x.lo),
            "trace region {r:x?} overlaps another"
        );
        if i > 0 {
            let left = &mut self.regions[i - 1];
            if left.hi == r.lo && left.vma == r.vma && left.delta == r.delta {
                left.hi = r.hi;
                return;
            }
        }
        self.regions.insert(i, r);
    }

    /// Takes the parts of regions inside [lo, hi) out of the translation.
    fn cut(&mut self, lo: u64, hi: u64) -> Vec<Region> {
        let mut cut = Vec::new();
        let mut i = self.regions.partition_point(|r| r.hi <= lo);
        while i < self.regions.len() && self.regions[i].lo < hi {
            let r = self.regions[i];
            let (a, b) = (r.lo.max(lo), r.hi.min(hi));
            cut.push(Region { lo: a, hi: b, ..r });
            let mut keep = Vec::with_capacity(2);
            if r.lo < a {
                keep.push(Region { hi: a, ..r });
            }
            if b < r.hi {
                keep.push(Region { lo: b, ..r });
            }
            let n = keep.len();
            self.regions.splice(i..i + 1, keep);
            i += n;
        }
        cut
    }
}

/// A pending read() or write() that spans quanta.
#[derive(Clone, Copy, Debug)]
enum FileIo {
    Read(ReadRequest),
    Write(WriteRequest),
}

#[derive(Debug, Default)]
struct ThreadState {
    /// Its simulated task once its Clone or Fork has replayed.
    task: Option<u32>,
    /// Its process (an index of `spaces`).
    space: usize,
    /// The thread whose Clone or Fork creates it.
    creator: Option<ThreadId>,
    queue: VecDeque<Entry>,
    exited: bool,
    /// Picoseconds of work not yet charged (under a nanosecond).
    carry_ps: u64,
    pending: Option<FileIo>,
    /// An access (page, write) waiting for the reclaim its fault needs
    /// (`Kernel::reclaim_before_fault`).
    fault_pending: Option<(u32, bool)>,
    counters: TraceCounters,
}

/// The next entry for a thread.
enum Next {
    Entry(Entry),
    /// The queues are full: wait for the other threads.
    Wait,
    /// No more entries for it.
    End,
}

/// One trace being replayed: its reader, its threads and their processes.
pub struct Replay {
    source: Box<dyn EntrySource>,
    ended: bool,
    threads: Vec<ThreadState>,
    spaces: Vec<Space>,
    /// Entries waiting in the threads' queues.
    queued: usize,
    /// The simulated file of each trace file id.
    files: Vec<Option<u32>>,
    /// The files that started in the page cache, by the trace's path (`warm_files`).
    warm: Vec<(String, u32)>,
    /// The read_ahead_kb and large_folios of the files it creates.
    file_device: (u64, bool),
    /// The user time of an instruction when the trace's own (`user_time = "native"`), in ps.
    instruction_ps: Option<u64>,
    /// For messages and names: the scenario file, `task[i].trace`, the task's name.
    scenario_file: String,
    key: String,
    name: String,
    node: u32,
    /// Entries read so far (for messages).
    entries_read: u64,
    /// The batch being read (empty between reads; kept for its allocation).
    batch: Vec<Entry>,
}

/// What a step of a thread ended with.
enum Outcome {
    /// The quantum is over (or the thread must sleep: `Kernel::tasks[t].sleep_ns`).
    Yield,
    /// The thread waits for the others.
    Wait,
    /// The thread's entries ended or it exited.
    Exit,
    Killed,
    Error(String),
}

impl Workload {
    /// Spawns the process of a task replaying `source` (its thread 0).
    pub fn spawn_replay(
        &mut self,
        k: &mut Kernel,
        task: &TaskSpec,
        memcg: u16,
        source: Box<dyn EntrySource>,
        key: String,
        file_device: (u64, bool),
        instruction_ps: Option<u64>,
    ) {
        let replay = self.replays.len() as u32;
        let t = k.spawn_process(task.name.clone(), memcg, task.node);
        k.tasks[t as usize].page_walks_in_user_time = instruction_ps.is_some();
        self.tasks.push(replay_program(replay, 0));
        let mm = k.tasks[t as usize].mm.expect("a process has an mm");
        self.replays.push(Some(Box::new(Replay {
            source,
            ended: false,
            threads: vec![ThreadState {
                task: Some(t),
                ..Default::default()
            }],
            spaces: vec![Space {
                mm,
                ..Default::default()
            }],
            queued: 0,
            files: Vec::new(),
            warm: Vec::new(),
            file_device,
            instruction_ps,
            scenario_file: k.spec.scenario.file.clone(),
            key,
            name: task.name.clone(),
            node: task.node,
            entries_read: 0,
            batch: Vec::with_capacity(READ_BATCH),
        })));
    }

    /// Creates the files of the replay spawned last that start in the page cache (`warm_files`,
    /// already selected) and caches them on `node`, charged to the root memcg
    /// (`Kernel::filemap_warm`); the trace's `File` events of those paths then name them. A
    /// path the scenario declares as a `[[file]]` is that file, left as the scenario has it.
    pub fn warm_replay_files(&mut self, k: &mut Kernel, files: &[WarmFile], node: u32) {
        let r = self
            .replays
            .last_mut()
            .and_then(|r| r.as_mut())
            .expect("a replay was spawned");
        for wf in files {
            if declared_file(k, &wf.path).is_some() {
                continue;
            }
            let file = r.create_file(k, &wf.path, wf.size_bytes);
            let pages = k.filemap_warm(file, node, crate::mm::vmscan::Lru::ActiveFile);
            r.warm.push((wf.path.clone(), file));
            r.threads[0].counters.warm_files += 1;
            r.threads[0].counters.warm_pages += pages;
        }
    }

    /// Runs replaying thread `t` until `quantum_end_ns`, a wait, or its end. Returns when its
    /// CPU is free (as `step`).
    pub(super) fn replay_step(&mut self, k: &mut Kernel, t: u32, quantum_end_ns: u64) -> u64 {
        let rt = self.tasks[t as usize].replay.expect("a replaying task");
        let mut r = self.replays[rt.replay as usize]
            .take()
            .expect("one thread of a replay runs at a time");
        let start = k.sys_start(t);
        let outcome = r.run(self, k, t, rt.thread, quantum_end_ns);
        let th = &r.threads[rt.thread as usize];
        self.tasks[t as usize].report = Report::Trace(Box::new(th.counters.clone()));
        let (scenario_file, key) = (r.scenario_file.clone(), r.key.clone());
        self.replays[rt.replay as usize] = Some(r);
        k.charge_sys(t, start);
        match outcome {
            Outcome::Yield => {
                let sleep_ns = std::mem::take(&mut k.tasks[t as usize].sleep_ns);
                let cpu_free = k.clock_ns;
                k.clock_ns += sleep_ns;
                cpu_free
            }
            Outcome::Wait => {
                let cpu_free = k.clock_ns;
                k.clock_ns += QUEUE_WAIT_NS;
                cpu_free
            }
            Outcome::Exit | Outcome::Killed => {
                if matches!(outcome, Outcome::Killed) {
                    k.tasks[t as usize].oom_killed = true;
                }
                self.exit_after_last_op(k, t);
                self.reap_exits(k);
                k.clock_ns
            }
            Outcome::Error(message) => {
                self.trace_error = Some(InputError {
                    file: scenario_file,
                    key,
                    message,
                });
                k.clock_ns
            }
        }
    }
}

/// The (empty) program of a replaying task, with its place in the replay.
fn replay_program(replay: u32, thread: ThreadId) -> TaskProgram {
    let mut p = TaskProgram::new(Default::default(), Report::Trace(Box::default()));
    p.replay = Some(ReplayThread { replay, thread });
    p
}

/// Trace pages [lo, hi) of the byte range [addr, addr + len).
fn page_range(addr: u64, len_bytes: u64) -> (u64, u64) {
    (
        addr / PAGE_SIZE,
        addr.saturating_add(len_bytes).div_ceil(PAGE_SIZE),
    )
}

impl Replay {
    fn run(
        &mut self,
        w: &mut Workload,
        k: &mut Kernel,
        t: u32,
        th: ThreadId,
        quantum_end_ns: u64,
    ) -> Outcome {
        let ti = th as usize;
        let instruction_ps = self.instruction_ps.unwrap_or(k.hw.instruction_ns_x1000);
        let mm = self.spaces[self.threads[ti].space].mm;
        if let Some(io) = self.threads[ti].pending {
            match self.file_io(k, t, th, io, quantum_end_ns) {
                Ok(true) => {}
                Ok(false) => return Outcome::Yield,
                Err(Killed) => return Outcome::Killed,
            }
        }
        loop {
            if k.clock_ns >= quantum_end_ns {
                return Outcome::Yield;
            }
            if let Some((vpn, write)) = self.threads[ti].fault_pending {
                if k.reclaim_before_fault(mm, vpn, write, quantum_end_ns) {
                    return Outcome::Yield;
                }
                self.threads[ti].fault_pending = None;
                if k.touch(mm, vpn, write, content::DATA_DEFAULT).is_err() {
                    return Outcome::Killed;
                }
                continue;
            }
            let entry = match self.next_for(w, k, th) {
                Ok(Next::Entry(e)) => e,
                Ok(Next::Wait) => {
                    self.threads[ti].counters.waits += 1;
                    return Outcome::Wait;
                }
                Ok(Next::End) => return Outcome::Exit,
                Err(message) => return Outcome::Error(message),
            };
            match entry {
                Entry::Access(a) => {
                    let state = &mut self.threads[ti];
                    let ps = a.instructions * instruction_ps + state.carry_ps;
                    let ns = ps / 1000;
                    state.carry_ps = ps % 1000;
                    let c = &mut state.counters;
                    c.records += 1;
                    c.accesses += a.count as u64;
                    c.instructions += a.instructions;
                    k.spend(crate::mm::TimeKind::User, ns);
                    let task = &mut k.tasks[t as usize];
                    task.user_ns += ns;
                    task.touches += 1;
                    let space = state.space;
                    let Some(vpn) = self.spaces[space].translate(a.page) else {
                        self.threads[ti].counters.unmapped_accesses += 1;
                        continue;
                    };
                    if k.reclaim_before_fault(mm, vpn, a.write, quantum_end_ns) {
                        self.threads[ti].fault_pending = Some((vpn, a.write));
                        return Outcome::Yield;
                    }
                    if k.touch(mm, vpn, a.write, content::DATA_DEFAULT).is_err() {
                        return Outcome::Killed;
                    }
                }
                Entry::Event(ev) => {
                    self.threads[ti].counters.events += 1;
                    match self.event(w, k, t, th, ev, quantum_end_ns) {
                        Ok(EventEnd::Done) => {}
                        Ok(EventEnd::Pending) => return Outcome::Yield,
                        Ok(EventEnd::Exit) => return Outcome::Exit,
                        Err(Killed) => return Outcome::Killed,
                    }
                    if k.tasks[t as usize].state == TaskState::Exited {
                        return Outcome::Exit;
                    }
                    if k.tasks[t as usize].sleep_ns > 0 {
                        return Outcome::Yield;
                    }
                }
            }
        }
    }

    /// The next entry of thread `th`: from its queue, or read on, queueing the other threads'.
    #[inline]
    fn next_for(&mut self, w: &mut Workload, k: &mut Kernel, th: ThreadId) -> Result<Next, String> {
        loop {
            if let Some(e) = self.threads[th as usize].queue.pop_front() {
                self.queued -= 1;
                return Ok(Next::Entry(e));
            }
            if self.ended {
                return Ok(Next::End);
            }
            if self.queued >= MAX_QUEUED_ENTRIES {
                self.purge(k);
                if self.queued >= MAX_QUEUED_ENTRIES {
                    return Ok(Next::Wait);
                }
            }
            self.read_batch(w, k, th)?;
        }
    }

    /// Reads a batch of entries into their threads' queues; the reading thread `th`'s accesses
    /// get their page-table entries and TLB sets prefetched.
    fn read_batch(&mut self, w: &mut Workload, k: &mut Kernel, th: ThreadId) -> Result<(), String> {
        let mut batch = std::mem::take(&mut self.batch);
        let read = self.source.read_entries(&mut batch, READ_BATCH);
        let mut result = Ok(());
        for entry in batch.drain(..) {
            self.entries_read += 1;
            if let Err(e) = self.route(w, k, th, entry) {
                result = Err(e);
                break;
            }
        }
        self.batch = batch;
        result?;
        match read {
            Ok(more) => self.ended = !more,
            Err(e) => return Err(e.to_string()),
        }
        Ok(())
    }

    /// Puts an entry read into its thread's queue (a File event applies now).
    #[inline]
    fn route(
        &mut self,
        w: &mut Workload,
        k: &mut Kernel,
        th: ThreadId,
        entry: Entry,
    ) -> Result<(), String> {
        let owner = match &entry {
            Entry::Access(a) => {
                if a.thread == th {
                    let ts = &mut self.threads[th as usize];
                    if let Some(vpn) = self.spaces[ts.space].translate(a.page) {
                        prefetch_page(k, self.spaces[ts.space].mm, vpn);
                    }
                    ts.queue.push_back(entry);
                    self.queued += 1;
                    return Ok(());
                }
                a.thread
            }
            Entry::Event(ev) => match ev_thread(ev) {
                Some(owner) => owner,
                None => {
                    self.file_event(k, ev);
                    return Ok(());
                }
            },
        };
        self.admit(w, k, owner)?;
        if let Entry::Event(Event::Clone { child, .. } | Event::Fork { child, .. }) = &entry {
            self.name_child(owner, *child, matches!(entry, Entry::Event(Event::Fork { .. })))?;
        }
        let state = &mut self.threads[owner as usize];
        if !state.exited {
            state.queue.push_back(entry);
            self.queued += 1;
        }
        Ok(())
    }

    /// Makes sure thread `owner` exists: a thread first named by its own entry (no Clone or
    /// Fork named it) becomes a thread of the first process now.
    fn admit(&mut self, w: &mut Workload, k: &mut Kernel, owner: ThreadId) -> Result<(), String> {
        let n = self.threads.len();
        if (owner as usize) < n {
            return Ok(());
        }
        if owner as usize != n {
            return Err(self.unnumbered(owner));
        }
        self.threads.push(ThreadState::default());
        let parent = self.threads[0].task.expect("thread 0 runs from the start");
        self.start_thread(w, k, parent, owner, 0);
        Ok(())
    }

    fn unnumbered(&self, thread: ThreadId) -> String {
        format!(
            "entry {}: expected threads numbered in the order the trace first names them, found \
             thread {thread} after {} threads",
            self.entries_read,
            self.threads.len()
        )
    }

    /// A Clone or Fork read ahead names its child: the child's entries queue until it runs.
    fn name_child(&mut self, parent: ThreadId, child: ThreadId, fork: bool) -> Result<(), String> {
        if child as usize != self.threads.len() {
            return Err(self.unnumbered(child));
        }
        let space = if fork {
            self.spaces.push(Space::default());
            self.spaces.len() - 1
        } else {
            self.threads[parent as usize].space
        };
        self.threads.push(ThreadState {
            space,
            creator: Some(parent),
            ..Default::default()
        });
        Ok(())
    }

    /// Drops the queued entries of threads that will never run them: exited (or killed)
    /// threads, and threads whose creator ended before creating them.
    fn purge(&mut self, k: &Kernel) {
        loop {
            let mut changed = false;
            for i in 0..self.threads.len() {
                let dead = match (self.threads[i].task, self.threads[i].creator) {
                    (Some(task), _) => k.tasks[task as usize].state == TaskState::Exited,
                    (None, Some(c)) => self.threads[c as usize].exited,
                    (None, None) => false,
                };
                if dead && !self.threads[i].exited {
                    self.threads[i].exited = true;
                    changed = true;
                }
                if self.threads[i].exited {
                    self.queued -= self.threads[i].queue.len();
                    self.threads[i].queue = VecDeque::new();
                }
            }
            if !changed {
                return;
            }
        }
    }

    /// Starts trace thread `thread` as a thread of `parent`'s process (or of `space`'s), at the
    /// current clock.
    fn start_thread(
        &mut self,
        w: &mut Workload,
        k: &mut Kernel,
        parent: u32,
        thread: ThreadId,
        space: usize,
    ) -> u32 {
        let mm = self.spaces[space].mm;
        let name = format!("{}.{thread}", self.name);
        let id = k.spawn_thread(name, mm, self.node);
        k.tasks[id as usize].page_walks_in_user_time = self.instruction_ps.is_some();
        let (policy, il_prev) = {
            let p = &k.tasks[parent as usize];
            (p.mempolicy, p.il_prev)
        };
        let now = k.clock_ns;
        let c = &mut k.tasks[id as usize];
        c.mempolicy = policy;
        c.il_prev = il_prev;
        c.clock_ns = now;
        // spawn_thread queued it at time 0; that entry goes stale (its clock moved)
        k.runq.push(now, id);
        let replay = w.tasks[parent as usize].replay.map_or(0, |r| r.replay);
        w.tasks.push(replay_program(replay, thread));
        debug_assert_eq!(w.tasks.len(), k.tasks.len());
        let st = &mut self.threads[thread as usize];
        st.task = Some(id);
        st.space = space;
        id
    }

    /// A file the trace names and the scenario does not declare, on the task's device.
    fn create_file(&self, k: &mut Kernel, path: &str, size_bytes: u64) -> u32 {
        k.create_file(crate::mm::filemap::File::new(
            path.to_string(),
            size_bytes.min(crate::scenario::MAX_MAPPING_BYTES),
            self.file_device.0,
            self.file_device.1,
        ))
    }

    fn file_event(&mut self, k: &mut Kernel, ev: &Event) {
        let Event::File {
            id,
            path,
            size_bytes,
        } = ev
        else {
            return;
        };
        let warm = self.warm.iter().find(|(p, _)| p == path).map(|&(_, f)| f);
        let file = match (declared_file(k, path), warm) {
            (Some(i), _) => i as u32,
            (None, Some(f)) => f,
            (None, None) => self.create_file(k, path, *size_bytes),
        };
        let i = *id as usize;
        if self.files.len() <= i {
            self.files.resize(i + 1, None);
        }
        self.files[i] = Some(file);
    }
}

/// The scenario's `[[file]]` a path of the trace names: the one of that name or base name.
fn declared_file(k: &Kernel, path: &str) -> Option<usize> {
    let base = Path::new(path).file_name().and_then(|n| n.to_str());
    k.spec
        .scenario
        .files
        .iter()
        .position(|f| f.name == path || Some(f.name.as_str()) == base)
}

/// How an event ended.
enum EventEnd {
    Done,
    /// A read or write goes on in the next quantum.
    Pending,
    Exit,
}

/// The thread an event belongs to (None: a File event, which belongs to none).
fn ev_thread(ev: &Event) -> Option<ThreadId> {
    Some(match ev {
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
        | Event::Fadvise { thread, .. } => *thread,
        Event::File { .. } => return None,
    })
}

impl Replay {
    fn event(
        &mut self,
        w: &mut Workload,
        k: &mut Kernel,
        t: u32,
        th: ThreadId,
        ev: Event,
        quantum_end_ns: u64,
    ) -> Result<EventEnd, Killed> {
        let space = self.threads[th as usize].space;
        match ev {
            Event::Mmap {
                addr,
                len_bytes,
                prot,
                flags,
                file,
                ..
            } => {
                let (lo, hi) = page_range(addr, len_bytes);
                self.unmap(k, t, space, lo, hi);
                let file = file.and_then(|(f, off)| {
                    let sim = self.files.get(f as usize).copied().flatten()?;
                    Some((sim, off))
                });
                if !self.map(k, space, lo, hi, prot, flags, file) {
                    self.threads[th as usize].counters.ignored_events += 1;
                }
            }
            Event::Munmap {
                addr, len_bytes, ..
            } => {
                let (lo, hi) = page_range(addr, len_bytes);
                self.unmap(k, t, space, lo, hi);
            }
            Event::Mremap {
                old_addr,
                old_len_bytes,
                new_addr,
                new_len_bytes,
                ..
            } => self.mremap(k, t, th, old_addr, old_len_bytes, new_addr, new_len_bytes),
            Event::Brk {
                old_end, new_end, ..
            } => self.brk(k, t, th, old_end, new_end),
            Event::Mprotect { .. } => self.threads[th as usize].counters.ignored_events += 1,
            Event::Madvise {
                addr,
                len_bytes,
                advice,
                ..
            } => {
                let advice = match advice {
                    MADV_DONTNEED => Advice::DontNeed,
                    MADV_HUGEPAGE => Advice::Hugepage,
                    MADV_NOHUGEPAGE => Advice::NoHugepage,
                    MADV_COLD => Advice::Cold,
                    MADV_PAGEOUT => Advice::Pageout,
                    _ => {
                        self.threads[th as usize].counters.ignored_events += 1;
                        return Ok(EventEnd::Done);
                    }
                };
                let (lo, hi) = page_range(addr, len_bytes);
                let sp = &self.spaces[space];
                let i = sp.regions.partition_point(|r| r.hi <= lo);
                let pieces: Vec<Region> = sp.regions[i..]
                    .iter()
                    .take_while(|r| r.lo < hi)
                    .copied()
                    .collect();
                for r in pieces {
                    let (a, b) = (r.lo.max(lo), r.hi.min(hi));
                    let (from, to) = (r.vpn(a) - r.vma, r.vpn(b - 1) + 1 - r.vma);
                    super::exec::madvise(k, sp.mm, r.vma, from, to, advice);
                }
            }
            Event::Fork { child, .. } => {
                let name = format!("{}.{child}", self.name);
                let id = k.fork_task(t, name);
                w.tasks.push(replay_program(
                    w.tasks[t as usize].replay.expect("a replaying task").replay,
                    child,
                ));
                debug_assert_eq!(w.tasks.len(), k.tasks.len());
                let child_space = self.threads[child as usize].space;
                let mut sp = self.spaces[space].clone();
                sp.mm = k.tasks[id as usize].mm.expect("a process has an mm");
                self.spaces[child_space] = sp;
                self.threads[child as usize].task = Some(id);
            }
            Event::Clone { child, .. } => {
                self.start_thread(w, k, t, child, space);
            }
            Event::Exit { .. } => {
                self.threads[th as usize].exited = true;
                self.queued -= self.threads[th as usize].queue.len();
                self.threads[th as usize].queue.clear();
                return Ok(EventEnd::Exit);
            }
            Event::File { .. } => {}
            Event::Fadvise { file, advice, .. } => {
                let Some(sim) = self.files.get(file as usize).copied().flatten() else {
                    self.threads[th as usize].counters.ignored_events += 1;
                    return Ok(EventEnd::Done);
                };
                // generic_fadvise: NORMAL gives the open file the device's readahead maximum,
                // SEQUENTIAL twice it; the other advice is not modelled.
                let ra_pages = match advice {
                    POSIX_FADV_NORMAL => None,
                    POSIX_FADV_SEQUENTIAL => Some(k.files[sim as usize].ra_pages.saturating_mul(2)),
                    _ => {
                        self.threads[th as usize].counters.ignored_events += 1;
                        return Ok(EventEnd::Done);
                    }
                };
                let ra = &mut k.tasks[t as usize].ra;
                if ra.len() <= sim as usize {
                    ra.resize(sim as usize + 1, Default::default());
                }
                ra[sim as usize].ra_pages = ra_pages;
            }
            Event::Read {
                file,
                offset_bytes,
                len_bytes,
                ..
            }
            | Event::Write {
                file,
                offset_bytes,
                len_bytes,
                ..
            } => {
                let Some(sim) = self.files.get(file as usize).copied().flatten() else {
                    self.threads[th as usize].counters.ignored_events += 1;
                    return Ok(EventEnd::Done);
                };
                if len_bytes == 0 {
                    return Ok(EventEnd::Done);
                }
                let io = if matches!(ev, Event::Read { .. }) {
                    FileIo::Read(ReadRequest {
                        file: sim,
                        offset_bytes,
                        len_bytes,
                        buffer_bytes: len_bytes,
                    })
                } else {
                    FileIo::Write(WriteRequest {
                        file: sim,
                        offset_bytes,
                        len_bytes,
                        buffer_bytes: len_bytes,
                        data: content::DATA_DEFAULT,
                    })
                };
                if !self.file_io(k, t, th, io, quantum_end_ns)? {
                    return Ok(EventEnd::Pending);
                }
            }
        }
        Ok(EventEnd::Done)
    }

    /// Runs a read() or write() through the page cache; Ok(false) if it goes on next quantum.
    fn file_io(
        &mut self,
        k: &mut Kernel,
        t: u32,
        th: ThreadId,
        io: FileIo,
        quantum_end_ns: u64,
    ) -> Result<bool, Killed> {
        let done = match &io {
            FileIo::Read(req) => k.file_read_op(t, req, quantum_end_ns)?,
            FileIo::Write(req) => k.file_write_op(t, req, quantum_end_ns)?,
        };
        self.threads[th as usize].pending = (!done).then_some(io);
        Ok(done)
    }

    /// Maps trace pages [lo, hi) (already unmapped); false if it cannot (too large for what is
    /// left of the task's simulated address space, or a file offset beyond mm's files).
    #[allow(clippy::too_many_arguments)]
    fn map(
        &mut self,
        k: &mut Kernel,
        space: usize,
        lo: u64,
        hi: u64,
        prot: u32,
        flags: u32,
        file: Option<(u32, u64)>,
    ) -> bool {
        if hi <= lo {
            return true;
        }
        let mm = self.spaces[space].mm;
        let nr = hi - lo;
        let next = k.mms[mm as usize].next_vpn as u64;
        if next + nr + 2 * HPAGE_PMD_NR as u64 >= u32::MAX as u64 {
            return false;
        }
        let shared = flags & MAP_TYPE != MAP_PRIVATE;
        let start = match file {
            Some((sim, off)) => {
                let Ok(pgoff) = u32::try_from(off / PAGE_SIZE) else {
                    return false;
                };
                let mut vm = 0;
                for (on, flag) in [
                    (shared, VM_SHARED),
                    (prot & PROT_WRITE != 0, VM_WRITE),
                    (prot & PROT_EXEC != 0, VM_EXEC),
                ] {
                    if on {
                        vm |= flag;
                    }
                }
                k.mmap_file(mm, sim, pgoff, nr as u32, vm)
            }
            None => {
                let start = aligned_start(next, lo);
                k.mmap_anon_at(mm, start, nr as u32);
                start
            }
        };
        place_tables_at(k, mm, start, lo);
        self.spaces[space].insert(Region {
            lo,
            hi,
            delta: (start as u64).wrapping_sub(lo),
            vma: start,
        });
        true
    }

    /// Unmaps trace pages [lo, hi): a simulated VMA none of whose pages stay mapped goes
    /// (munmap), the pages of one that keeps others are zapped.
    fn unmap(&mut self, k: &mut Kernel, t: u32, space: usize, lo: u64, hi: u64) {
        if hi <= lo {
            return;
        }
        let cut = self.spaces[space].cut(lo, hi);
        self.release(k, t, space, cut);
    }

    /// Frees the simulated pages of regions taken out of the translation.
    fn release(&mut self, k: &mut Kernel, t: u32, space: usize, cut: Vec<Region>) {
        if cut.is_empty() {
            return;
        }
        let sp = &mut self.spaces[space];
        let mm = sp.mm;
        for r in cut {
            // the heap's reservation stays for the break to grow into again
            let still_used = sp.regions.iter().any(|x| x.vma == r.vma)
                || sp.heap.is_some_and(|h| h.vma == r.vma);
            if still_used {
                if let Some(vi) = k.mms[mm as usize].find_vma(r.vma) {
                    let (from, to) = (r.vpn(r.lo) - r.vma, r.vpn(r.hi - 1) + 1 - r.vma);
                    k.zap_range(mm, vi, from, to, false);
                    k.free_pgtables_of_range(mm, vi, from, to);
                }
            } else {
                k.munmap(mm, r.vma);
                k.promotion_work_pending(t);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn mremap(
        &mut self,
        k: &mut Kernel,
        t: u32,
        th: ThreadId,
        old_addr: u64,
        old_len_bytes: u64,
        new_addr: u64,
        new_len_bytes: u64,
    ) {
        let space = self.threads[th as usize].space;
        let (old_lo, old_hi) = page_range(old_addr, old_len_bytes);
        let (new_lo, new_hi) = page_range(new_addr, new_len_bytes);
        let kept = (old_hi - old_lo).min(new_hi.saturating_sub(new_lo));
        // a shrink frees the tail, while the rest still holds its VMA
        self.unmap(k, t, space, old_lo + kept, old_hi);
        // the destination loses what it held, the source excepted
        let dest: [(u64, u64); 2] = [
            (new_lo, new_hi.min(old_lo)),
            (new_lo.max(old_hi), new_hi),
        ];
        for (lo, hi) in dest {
            self.unmap(k, t, space, lo, hi);
        }
        let moved = self.spaces[space].cut(old_lo, old_lo + kept);
        let shift = new_lo.wrapping_sub(old_lo);
        for r in moved {
            self.spaces[space].insert(Region {
                lo: r.lo.wrapping_add(shift),
                hi: r.hi.wrapping_add(shift),
                delta: r.delta.wrapping_sub(shift),
                vma: r.vma,
            });
        }
        if new_lo + kept < new_hi && !self.map(k, space, new_lo + kept, new_hi, 0, MAP_PRIVATE, None)
        {
            self.threads[th as usize].counters.ignored_events += 1;
        }
    }

    fn brk(&mut self, k: &mut Kernel, t: u32, th: ThreadId, old_end: u64, new_end: u64) {
        let space = self.threads[th as usize].space;
        let (old_page, new_page) = (old_end.div_ceil(PAGE_SIZE), new_end.div_ceil(PAGE_SIZE));
        if new_page < old_page {
            self.unmap(k, t, space, new_page, old_page);
            return;
        }
        // The break's new pages are the heap's, whatever the trace mapped there before (under
        // valgrind, the first page at the break is an anonymous mapping of its own, recorded
        // with the initial mappings): as with MAP_FIXED, the old mapping goes, so that regions
        // never overlap and every heap page translates.
        self.unmap(k, t, space, old_page, new_page);
        let mut lo = old_page;
        if let Some(h) = self.spaces[space].heap {
            if lo >= h.lo && lo < h.hi {
                let hi = new_page.min(h.hi);
                self.spaces[space].insert(Region {
                    lo,
                    hi,
                    delta: h.delta,
                    vma: h.vma,
                });
                lo = hi;
            }
        }
        if lo >= new_page {
            return;
        }
        // a new reservation, up to the next 2 MiB boundary of the trace's addresses
        let reserve_hi = new_page.next_multiple_of(HPAGE_PMD_NR as u64);
        let mm = self.spaces[space].mm;
        let next = k.mms[mm as usize].next_vpn as u64;
        let nr = reserve_hi - lo;
        if next + nr + 2 * HPAGE_PMD_NR as u64 >= u32::MAX as u64 {
            self.threads[th as usize].counters.ignored_events += 1;
            return;
        }
        let start = aligned_start(next, lo);
        k.mmap_anon_at(mm, start, nr as u32);
        place_tables_at(k, mm, start, lo);
        let delta = (start as u64).wrapping_sub(lo);
        self.spaces[space].heap = Some(Heap {
            lo,
            hi: reserve_hi,
            delta,
            vma: start,
        });
        self.spaces[space].insert(Region {
            lo,
            hi: new_page,
            delta,
            vma: start,
        });
    }
}

/// Prefetches the page-table entry of `vpn` and the current CPU's TLB set for it, so that they
/// are in cache when the access replays.
#[inline]
fn prefetch_page(k: &Kernel, mm: u32, vpn: u32) {
    let m = &k.mms[mm as usize];
    if let Some(vi) = m.find_vma(vpn) {
        let v = &m.vmas[vi];
        super::exec::prefetch(&v.ptes[(vpn - v.start) as usize]);
    }
    super::exec::prefetch(k.cpu_tlbs[k.current_cpu as usize].entry(mm, vpn));
}

/// The page tables of the simulated VMA at `start` are those of the trace's addresses from
/// `lo`: the simulated mappings lie elsewhere (and apart), the tables number as the program's.
fn place_tables_at(k: &mut Kernel, mm: u32, start: u32, lo: u64) {
    if let Some(vi) = k.mms[mm as usize].find_vma(start) {
        k.mms[mm as usize].vmas[vi].table_vpn_offset = lo.wrapping_sub(start as u64);
    }
}

/// The first simulated page at or after `next` congruent to trace page `lo` modulo a PMD.
fn aligned_start(next: u64, lo: u64) -> u32 {
    let pmd = HPAGE_PMD_NR as u64;
    (next + (lo % pmd + pmd - next % pmd) % pmd) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::generators::DEFAULT_READ_AHEAD_KB;
    use crate::run::Simulation;
    use crate::scenario::{parse::resolve, Program};
    use crate::trace::Access;
    use crate::{RunError, RunResult, Scenario};

    const BASE: u64 = 0x7f12_3400_0000;

    /// 1 GiB, a zram swap device and an 8 MiB memcg; PMD THP as `thp`.
    fn machine(thp: &str) -> String {
        format!(
            r#"
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
"/sys/kernel/mm/transparent_hugepage/enabled" = "{thp}"
"#
        )
    }

    fn header() -> Header {
        Header {
            program: "test".into(),
            args: vec![],
            recorder: "test".into(),
            recorder_version: "0".into(),
            page_size_bytes: 4096,
            ..Default::default()
        }
    }

    fn access(thread: ThreadId, addr: u64, write: bool) -> Entry {
        Entry::Access(Access {
            thread,
            page: addr / 4096,
            write,
            count: 1,
            instructions: 0,
        })
    }

    fn mmap(thread: ThreadId, addr: u64, len_bytes: u64) -> Entry {
        Entry::Event(Event::Mmap {
            thread,
            addr,
            len_bytes,
            prot: 3,
            flags: 0x22,
            file: None,
        })
    }

    fn ev(e: Event) -> Entry {
        Entry::Event(e)
    }

    fn start(machine: &str, extra_tasks: &str) -> Simulation {
        // the idle task comes first, so that the replayed and the ops process get the same mm
        let text = format!(
            "{machine}\n[[task]]\nname = \"idle\"\nops = [{{ op = \"exit\" }}]\n{extra_tasks}"
        );
        let scenario = Scenario::parse_str(&text, "test.toml").expect("scenario parses");
        let spec = resolve(&scenario, "v6.12", None, &[], 1, true).expect("resolves");
        Simulation::start(&spec).expect("starts")
    }

    fn replay_source(
        machine: &str,
        entries: impl Iterator<Item = Result<Entry, TraceError>> + 'static,
    ) -> Result<RunResult, RunError> {
        let mut sim = start(machine, "");
        let task = TaskSpec {
            name: "replay".into(),
            cgroup: Some("cg".into()),
            node: 0,
            mempolicy: None,
            program: Program::Ops(vec![]),
            command: None,
        };
        let memcg = sim.kernel.memcgs.iter().position(|c| c.name == "cg").unwrap() as u16;
        let source = MemorySource {
            header: header(),
            entries,
        };
        sim.workload.spawn_replay(
            &mut sim.kernel,
            &task,
            memcg,
            Box::new(source),
            "task[2].trace".into(),
            (DEFAULT_READ_AHEAD_KB, true),
            None,
        );
        sim.run(&mut |_| {})
    }

    fn replay(machine: &str, entries: Vec<Entry>) -> RunResult {
        replay_source(machine, entries.into_iter().map(Ok)).expect("replay runs")
    }

    fn ops(machine: &str, ops: &str) -> RunResult {
        let sim = start(machine, &format!("[[task]]\nname = \"ops\"\ncgroup = \"cg\"\nops = [\n{ops}]\n"));
        sim.run(&mut |_| {}).expect("ops run")
    }

    fn task<'a>(r: &'a RunResult, name: &str) -> &'a Map<String, Value> {
        r.tasks.iter().find(|t| t["name"] == name).expect("the task")
    }

    /// Pages of a fixed pseudo-random sequence below `n`.
    fn random_pages(n: u64, count: usize) -> Vec<u64> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..count)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % n
            })
            .collect()
    }

    #[test]
    fn a_trace_replays_to_the_counters_of_the_equivalent_ops_under_memcg_pressure() {
        let m = machine("never");
        let pages = 4096; // 16 MiB in an 8 MiB memcg
        let reads = random_pages(pages, 3000);
        let mut entries = vec![mmap(0, BASE, pages * 4096)];
        entries.extend((0..pages).map(|p| access(0, BASE + p * 4096, true)));
        entries.extend(reads.iter().map(|p| access(0, BASE + p * 4096, false)));
        let mut program = String::from(
            "{ op = \"mmap\", region = \"a\", size = \"16M\" },\n\
             { op = \"touch\", region = \"a\", access = \"write\", pattern = \"sequential\" },\n",
        );
        for p in &reads {
            program.push_str(&format!(
                "{{ op = \"touch\", region = \"a\", access = \"read\", pattern = \"sequential\", offset = {}, len = 4096 }},\n",
                p * 4096
            ));
        }
        let a = replay(&m, entries);
        let b = ops(&m, &program);
        assert!(a.vmstat["pswpout"] > 2000, "{:?}", a.vmstat);
        assert!(a.vmstat["pswpin"] > 1000);
        assert_eq!(a.vmstat, b.vmstat);
        assert_eq!(a.memcg, b.memcg);
        let t = task(&a, "replay");
        assert_eq!(t["trace_records"], pages + 3000);
        assert_eq!(t["touches"], pages + 3000);
        assert_eq!(t["trace_unmapped_accesses"], 0);
    }

    #[test]
    fn instructions_are_charged_as_user_time_at_the_profile_cost() {
        let m = machine("never");
        let mut entries = vec![mmap(0, BASE, 4096)];
        for i in 0..3 {
            entries.push(Entry::Access(Access {
                thread: 0,
                page: BASE / 4096,
                write: i == 0,
                count: 5,
                instructions: 1000,
            }));
        }
        let without: Vec<Entry> = entries
            .iter()
            .map(|e| match e {
                Entry::Access(a) => Entry::Access(Access {
                    instructions: 0,
                    ..*a
                }),
                e => e.clone(),
            })
            .collect();
        let r = replay(&m, entries);
        let t = task(&r, "replay");
        let base = replay(&m, without);
        // 3000 instructions at 333 ps (the rest is the iTLB refill of the first tick)
        let user = |r: &RunResult| task(r, "replay")["user_ns"].as_u64().unwrap();
        assert_eq!(user(&r) - user(&base), 999);
        assert_eq!(t["trace_instructions"], 3000);
        assert_eq!(t["trace_accesses"], 15);
        assert_eq!(r.vmstat["pgfault"], 1);
    }

    #[test]
    fn pages_no_mapping_covers_are_counted_and_skipped() {
        let m = machine("never");
        let entries = vec![
            mmap(0, BASE, 8192),
            access(0, BASE, true),
            access(0, BASE + 8192, true),
            ev(Event::Munmap {
                thread: 0,
                addr: BASE,
                len_bytes: 8192,
            }),
            access(0, BASE, true),
        ];
        let r = replay(&m, entries);
        let t = task(&r, "replay");
        assert_eq!(t["trace_unmapped_accesses"], 2);
        assert_eq!(r.vmstat["pgfault"], 1);
    }

    #[test]
    fn fork_in_a_trace_shares_pages_until_written() {
        let m = machine("never");
        let mut entries = vec![mmap(0, BASE, 64 * 4096)];
        entries.extend((0..64).map(|p| access(0, BASE + p * 4096, true)));
        entries.push(ev(Event::Fork {
            thread: 0,
            child: 1,
        }));
        // the child writes every page (each copies, as the parent still maps them), the parent
        // reads them (no fault) with 10 ms of work between each
        entries.extend((0..64).map(|p| access(1, BASE + p * 4096, true)));
        entries.extend((0..64).map(|p| {
            Entry::Access(Access {
                thread: 0,
                page: BASE / 4096 + p,
                write: false,
                count: 1,
                instructions: 30_000_000,
            })
        }));
        let r = replay(&m, entries);
        assert_eq!(r.vmstat["pgfault"], 64 + 64);
        // 64 first touches and 64 copies
        assert_eq!(r.vmstat["pgalloc_normal"], 128);
        let child = task(&r, "replay.1");
        assert_eq!(child["trace_records"], 64);
        // the same as the fork op
        let o = ops(
            &m,
            "{ op = \"mmap\", region = \"a\", size = \"256K\" },\n\
             { op = \"touch\", region = \"a\", access = \"write\", pattern = \"sequential\" },\n\
             { op = \"fork\", name = \"c\", ops = [ { op = \"touch\", region = \"a\", access = \"write\", pattern = \"sequential\" } ] },\n\
             { op = \"sleep\", time = \"10ms\" },\n\
             { op = \"touch\", region = \"a\", access = \"read\", pattern = \"sequential\" },\n",
        );
        assert_eq!(r.vmstat["pgfault"], o.vmstat["pgfault"]);
        assert_eq!(r.vmstat["pgalloc_normal"], o.vmstat["pgalloc_normal"]);
    }

    #[test]
    fn threads_share_their_process_memory() {
        let m = machine("never");
        let mut entries = vec![mmap(0, BASE, 32 * 4096)];
        entries.extend((0..32).map(|p| access(0, BASE + p * 4096, true)));
        entries.push(ev(Event::Clone {
            thread: 0,
            child: 1,
        }));
        entries.extend((0..32).map(|p| access(1, BASE + p * 4096, true)));
        entries.push(ev(Event::Exit { thread: 1 }));
        entries.push(access(1, BASE, true)); // after its exit: dropped
        let r = replay(&m, entries);
        assert_eq!(r.vmstat["pgfault"], 32, "the thread finds the pages mapped");
        assert_eq!(task(&r, "replay.1")["trace_records"], 32);
    }

    #[test]
    fn a_2mib_aligned_trace_region_gets_huge_pages_and_an_unaligned_one_fewer() {
        let m = machine("always");
        let run = |addr: u64| {
            let mut entries = vec![mmap(0, addr, 4 << 20)];
            entries.extend((0..1024).map(|p| access(0, addr + p * 4096, true)));
            replay(&m, entries).vmstat["thp_fault_alloc"]
        };
        assert_eq!(run(BASE), 2);
        assert_eq!(run(BASE + 4096), 1);
    }

    #[test]
    fn mremap_moves_pages_without_faults_and_a_growth_maps_a_new_tail() {
        let m = machine("never");
        let new = BASE + (1 << 30);
        let mut entries = vec![mmap(0, BASE, 16 * 4096)];
        entries.extend((0..16).map(|p| access(0, BASE + p * 4096, true)));
        entries.push(ev(Event::Mremap {
            thread: 0,
            old_addr: BASE,
            old_len_bytes: 16 * 4096,
            new_addr: new,
            new_len_bytes: 32 * 4096,
            flags: 3,
        }));
        entries.extend((0..32).map(|p| access(0, new + p * 4096, true)));
        entries.push(access(0, BASE, false));
        let r = replay(&m, entries);
        assert_eq!(r.vmstat["pgfault"], 16 + 16);
        assert_eq!(task(&r, "replay")["trace_unmapped_accesses"], 1);
    }

    #[test]
    fn brk_grows_and_shrinks_the_heap() {
        let m = machine("never");
        let heap = BASE + 0x1234_5000;
        let mut entries = vec![ev(Event::Brk {
            thread: 0,
            old_end: heap,
            new_end: heap + 8 * 4096,
        })];
        entries.extend((0..8).map(|p| access(0, heap + p * 4096, true)));
        entries.push(access(0, heap + 8 * 4096, true)); // past the break
        entries.push(ev(Event::Brk {
            thread: 0,
            old_end: heap + 8 * 4096,
            new_end: heap + 12 * 4096,
        }));
        entries.extend((0..12).map(|p| access(0, heap + p * 4096, true)));
        entries.push(ev(Event::Brk {
            thread: 0,
            old_end: heap + 12 * 4096,
            new_end: heap + 4 * 4096,
        }));
        entries.extend((0..12).map(|p| access(0, heap + p * 4096, true)));
        let r = replay(&m, entries);
        // 8 + 4 new pages; after the shrink the first 4 stay resident
        assert_eq!(r.vmstat["pgfault"], 12);
        assert_eq!(task(&r, "replay")["trace_unmapped_accesses"], 1 + 8);
    }

    /// Under valgrind the first page at the break is mapped before the program runs (an
    /// anonymous page recorded with the initial mappings); the heap the break then grows over
    /// it must translate every page, that one included.
    #[test]
    fn the_heap_grows_over_a_page_mapped_at_the_break() {
        let m = machine("never");
        let heap = BASE + 0x1234_5000;
        let mut entries = vec![mmap(0, heap, 4096), access(0, heap, true)];
        entries.push(ev(Event::Brk {
            thread: 0,
            old_end: heap,
            new_end: heap + 32 * 4096,
        }));
        for _ in 0..2 {
            entries.extend((0..32).map(|p| access(0, heap + p * 4096, true)));
        }
        let r = replay(&m, entries);
        assert_eq!(task(&r, "replay")["trace_unmapped_accesses"], 0);
        // the page mapped first, then the heap's 32
        assert_eq!(r.vmstat["pgfault"], 1 + 32);
    }

    #[test]
    fn madvise_dontneed_frees_and_unsupported_advice_is_counted() {
        let m = machine("never");
        let mut entries = vec![mmap(0, BASE, 8 * 4096)];
        entries.extend((0..8).map(|p| access(0, BASE + p * 4096, true)));
        for advice in [MADV_DONTNEED, 8 /* MADV_FREE */] {
            entries.push(ev(Event::Madvise {
                thread: 0,
                addr: BASE,
                len_bytes: 4 * 4096,
                advice,
            }));
        }
        entries.push(ev(Event::Mprotect {
            thread: 0,
            addr: BASE,
            len_bytes: 4096,
            prot: 1,
        }));
        entries.extend((0..8).map(|p| access(0, BASE + p * 4096, true)));
        let r = replay(&m, entries);
        assert_eq!(r.vmstat["pgfault"], 8 + 4);
        assert_eq!(task(&r, "replay")["trace_ignored_events"], 2);
    }

    #[test]
    fn file_reads_go_through_the_page_cache() {
        let m = machine("never");
        let entries = vec![
            ev(Event::File {
                id: 0,
                path: "/data/input.bin".into(),
                size_bytes: 1 << 20,
            }),
            ev(Event::Read {
                thread: 0,
                file: 0,
                offset_bytes: 0,
                len_bytes: 1 << 20,
            }),
            ev(Event::Read {
                thread: 0,
                file: 0,
                offset_bytes: 0,
                len_bytes: 1 << 20,
            }),
        ];
        let r = replay(&m, entries);
        assert_eq!(r.vmstat["pgpgin"], 1024, "read once from disk, then from the cache");
        assert_eq!(task(&r, "replay")["trace_events"], 2);
    }

    /// A temporary file starts empty: write() extends it (new pages are zeroed, not read, even
    /// when a write covers them in part), and a read after the writes finds all of it: under the
    /// 8 MiB memcg, 16 MiB written then read back come from disk again, and the pages reclaim
    /// evicted refault.
    #[test]
    fn writes_extend_a_file_that_reads_then_find_again() {
        let m = machine("never");
        let file_bytes: u64 = 16 << 20;
        let write_bytes: u64 = 3000; // not page-aligned: every page is first written in part
        let mut entries = vec![ev(Event::File {
            id: 0,
            path: "/tmp/sortXXXXXX".into(),
            size_bytes: 0,
        })];
        let mut offset = 0;
        while offset < file_bytes {
            let len_bytes = write_bytes.min(file_bytes - offset);
            entries.push(ev(Event::Write {
                thread: 0,
                file: 0,
                offset_bytes: offset,
                len_bytes,
            }));
            offset += len_bytes;
        }
        let written = replay(&m, entries.clone());
        assert_eq!(written.vmstat["pgpgin"], 0, "pages past the end are not read");
        entries.extend((0..file_bytes / (64 << 10)).map(|i| {
            ev(Event::Read {
                thread: 0,
                file: 0,
                offset_bytes: i * (64 << 10),
                len_bytes: 64 << 10,
            })
        }));
        let reread = replay(&m, entries);
        let pgpgin_kb = reread.vmstat["pgpgin"];
        assert!(pgpgin_kb >= 8 << 10, "read back from disk: {pgpgin_kb} KiB");
        let refaults = reread.vmstat["workingset_refault_file"];
        assert!(refaults >= 1024, "refaults: {refaults}");
    }

    /// posix_fadvise(SEQUENTIAL) doubles the file's readahead window (mm/fadvise.c): reading
    /// the first MiB of a file in 16 KiB calls reads ahead up to two windows of 32 pages past
    /// the reads on the default 128 KiB device, of 64 after the advice.
    #[test]
    fn fadvise_sequential_doubles_the_readahead_window() {
        let m = machine("never");
        let pgpgin_kb = |advice: Option<u32>| {
            let mut entries = vec![ev(Event::File {
                id: 0,
                path: "/data/input.txt".into(),
                size_bytes: 16 << 20,
            })];
            if let Some(advice) = advice {
                entries.push(ev(Event::Fadvise {
                    thread: 0,
                    file: 0,
                    offset_bytes: 0,
                    len_bytes: 0,
                    advice,
                }));
            }
            entries.extend((0..64).map(|i| {
                ev(Event::Read {
                    thread: 0,
                    file: 0,
                    offset_bytes: i * (16 << 10),
                    len_bytes: 16 << 10,
                })
            }));
            let r = replay(&m, entries);
            let ignored = task(&r, "replay")["trace_ignored_events"].as_u64().unwrap();
            (r.vmstat["pgpgin"], ignored)
        };
        let (plain, _) = pgpgin_kb(None);
        let (sequential, ignored) = pgpgin_kb(Some(POSIX_FADV_SEQUENTIAL));
        assert_eq!(ignored, 0);
        // the window and the next one started at its PG_readahead folio
        assert!((1024..=1024 + 2 * 32 * 4).contains(&plain), "{plain} KiB");
        assert!(
            sequential > 1024 + 2 * 32 * 4 && sequential <= 1024 + 2 * 64 * 4,
            "{sequential} KiB"
        );
        // WILLNEED and the others are counted as ignored, and change nothing
        let (willneed, ignored) = pgpgin_kb(Some(3));
        assert_eq!((willneed, ignored), (plain, 1));
    }

    #[test]
    fn a_thread_runs_at_most_the_queue_bound_ahead_of_the_others() {
        let m = machine("never");
        let other = (MAX_QUEUED_ENTRIES + 1000) as u64;
        let mut entries = vec![
            mmap(0, BASE, 4096),
            ev(Event::Clone {
                thread: 0,
                child: 1,
            }),
        ];
        entries.extend((0..other).map(|_| {
            Entry::Access(Access {
                thread: 1,
                page: BASE / 4096,
                write: true,
                count: 1,
                instructions: 100,
            })
        }));
        entries.push(access(0, BASE, false));
        let r = replay(&m, entries);
        assert!(task(&r, "replay")["trace_waits"].as_u64().unwrap() > 0);
        assert_eq!(task(&r, "replay.1")["trace_records"], other);
    }

    #[test]
    fn a_malformed_entry_stops_the_run_with_the_reader_message() {
        let m = machine("never");
        let entries = vec![
            Ok(mmap(0, BASE, 4096)),
            Err(TraceError {
                file: "t.trace".into(),
                offset: 42,
                message: "expected a record tag".into(),
            }),
        ];
        let e = replay_source(&m, entries.into_iter()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "test.toml: task[2].trace: t.trace: byte 42: expected a record tag"
        );
        let bad = vec![Ok(access(5, BASE, true))];
        let e = replay_source(&m, bad.into_iter()).unwrap_err();
        assert!(e.to_string().contains("found thread 5 after 1 threads"), "{e}");
    }

    #[test]
    fn the_same_trace_gives_the_same_result() {
        let m = machine("never");
        let entries = || {
            let mut e = vec![mmap(0, BASE, 4096 * 4096)];
            e.extend(random_pages(4096, 5000).iter().map(|p| access(0, BASE + p * 4096, p % 3 == 0)));
            e
        };
        let a = serde_json::to_string(&replay(&m, entries())).unwrap();
        let b = serde_json::to_string(&replay(&m, entries())).unwrap();
        assert_eq!(a, b);
    }
}
