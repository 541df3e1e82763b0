//! The raw record stream of the foliotrace Valgrind tool (its layout is documented at the top
//! of valgrind-tool/foliotrace.c), turned into trace entries.
//!
//! The processes a fork makes share the pipe, so chunks of several processes interleave: each
//! process has its own decoding state (current thread, previous page per thread, file serials).
//! Trace threads are numbered in the order the entries name them. A fork is written when the
//! first of its two witnesses arrives: the parent's FORK record or the child's START record.
//! Either way it lands after every record the parent wrote before the fork (the tool flushes
//! before forking) and before every record of the child.

use std::collections::{HashMap, HashSet};

use foliosim::trace::format::{
    unzigzag, ACCESS, ACCESS_COUNT, ACCESS_DELTA_MASK, ACCESS_INSTRUCTIONS, ACCESS_RESERVED,
    ACCESS_THREAD, ACCESS_WRITE, DELTA_MINUS_ONE, DELTA_PLUS_ONE, DELTA_ZERO,
};
use foliosim::trace::{Access, Entry, Event, FileId, ThreadId};

const TAG_THREAD: u8 = 1;
const TAG_START: u8 = 4;
const TAG_FORK: u8 = 5;
const TAG_CLONE: u8 = 6;
const TAG_EXIT: u8 = 7;
const TAG_MMAP: u8 = 8;
const TAG_MUNMAP: u8 = 9;
const TAG_MREMAP: u8 = 10;
const TAG_BRK: u8 = 11;
const TAG_MPROTECT: u8 = 12;
const TAG_MADVISE: u8 = 13;
const TAG_FILE: u8 = 14;
const TAG_READ: u8 = 15;
const TAG_WRITE: u8 = 16;
const TAG_END: u8 = 17;
const TAG_EXEC: u8 = 18;
const TAG_FADVISE: u8 = 19;

const CHUNK_HEADER_BYTES: usize = 8;
/// The tool writes chunks of at most 64 KiB, header included (PIPE_BUF once it forked).
const MAX_CHUNK_BYTES: usize = 65536;

/// A stream the tool cannot have written: where (byte offset in the raw stream) and why.
#[derive(Debug, PartialEq, Eq)]
pub struct RawError {
    pub offset: u64,
    pub message: String,
}

impl std::fmt::Display for RawError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the foliotrace stream, byte {}: {}",
            self.offset, self.message
        )
    }
}

/// Where the decoded entries go, in order.
pub trait Sink {
    fn entry(&mut self, entry: Entry);

    /// One access, decoded.
    fn access(&mut self, access: Access) {
        self.entry(Entry::Access(access));
    }

    /// The accesses just given to `access`, all of one thread, as the tool encoded them: the
    /// trace's own encoding without the thread field (TraceWriter::push_encoded_accesses);
    /// `last_page` is the thread's page after them.
    fn encoded_accesses(&mut self, _thread: ThreadId, _last_page: u64, _encoded: &[u8]) {}
}

impl Sink for Vec<Entry> {
    fn entry(&mut self, entry: Entry) {
        self.push(entry);
    }
}

#[derive(Default)]
struct Thread {
    id: Option<ThreadId>,
    alive: bool,
    last_page: u64,
}

#[derive(Default)]
struct Process {
    /// By serial.
    threads: Vec<Thread>,
    current: Option<u32>,
    /// File serial -> trace file.
    files: HashMap<u64, FileId>,
    /// Announced by its parent's FORK, its own START not seen yet.
    awaiting_start: bool,
    ended: bool,
    /// The program it asked execve to run, while nothing followed (a failed exec goes on).
    exec: Option<String>,
}

impl Process {
    fn thread(&mut self, serial: u32) -> &mut Thread {
        let index = serial as usize;
        if self.threads.len() <= index {
            self.threads.resize_with(index + 1, Thread::default);
        }
        &mut self.threads[index]
    }
}

/// The processes by pid, with the last one looked up remembered: a chunk's records are all of
/// one process, and hashing a pid per record would cost more than decoding it.
#[derive(Default)]
struct Processes {
    list: Vec<Process>,
    by_pid: HashMap<u32, usize>,
    last: Option<(u32, usize)>,
}

impl Processes {
    fn index(&self, pid: u32) -> Option<usize> {
        match self.last {
            Some((p, i)) if p == pid => Some(i),
            _ => self.by_pid.get(&pid).copied(),
        }
    }

    fn get(&self, pid: &u32) -> Option<&Process> {
        self.index(*pid).map(|i| &self.list[i])
    }

    fn get_mut(&mut self, pid: &u32) -> Option<&mut Process> {
        let i = self.index(*pid)?;
        self.last = Some((*pid, i));
        Some(&mut self.list[i])
    }

    /// The process `pid`, made empty if new.
    fn entry(&mut self, pid: u32) -> &mut Process {
        if self.index(pid).is_none() {
            self.insert(pid, Process::default());
        }
        self.get_mut(&pid).expect("inserted")
    }

    /// A new process under `pid` (a pid the kernel reuses names a new process).
    fn insert(&mut self, pid: u32, process: Process) {
        self.list.push(process);
        self.by_pid.insert(pid, self.list.len() - 1);
        self.last = None;
    }

    fn values_mut(&mut self) -> impl Iterator<Item = &mut Process> {
        self.list.iter_mut()
    }
}

/// Counts of what was decoded, for the progress line and the summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub accesses: u64,
    pub events: u64,
    pub processes: u64,
    /// Instructions the access records carry in all.
    pub instructions: u64,
}

/// Decodes the stream incrementally: `feed` any slice of it, take the entries it completed.
#[derive(Default)]
pub struct RawDecoder {
    /// Bytes of a chunk not complete yet.
    partial: Vec<u8>,
    /// Offset in the stream of `partial[0]`.
    offset: u64,
    processes: Processes,
    /// Children whose START wrote the Fork before their parent's FORK record arrived.
    forks_written: HashSet<u32>,
    next_thread: ThreadId,
    /// (dev, inode) -> trace file.
    files: HashMap<(u64, u64), FileId>,
    next_file: FileId,
    root_seen: bool,
    /// Processes whose last record is an EXEC.
    execs_pending: usize,
    /// The thread of the last access record, while only its accesses follow.
    hot: Option<HotThread>,
    pub tally: Tally,
}

/// Where the last access record's thread is: accesses that follow it skip the lookups.
#[derive(Clone, Copy)]
struct HotThread {
    pid: u32,
    process: usize,
    serial: usize,
    thread: ThreadId,
}

/// A cursor over one chunk's payload.
struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
    base: u64,
}

impl Fields<'_> {
    fn offset(&self) -> u64 {
        self.base + self.at as u64
    }

    fn error(&self, message: impl Into<String>) -> RawError {
        RawError {
            offset: self.offset(),
            message: message.into(),
        }
    }

    #[inline]
    fn varint(&mut self) -> Result<u64, RawError> {
        let rest = &self.bytes[self.at..];
        let mut value = 0u64;
        for (i, &byte) in rest.iter().take(10).enumerate() {
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                self.at += i + 1;
                return Ok(value);
            }
        }
        Err(self.error(if rest.len() < 10 {
            "expected a varint, found the end of the chunk"
        } else {
            "expected a varint of at most 10 bytes"
        }))
    }

    fn u32(&mut self) -> Result<u32, RawError> {
        let at = self.offset();
        let value = self.varint()?;
        u32::try_from(value).map_err(|_| RawError {
            offset: at,
            message: format!("expected a value below 2^32, found {value}"),
        })
    }

    fn bytes(&mut self, len: u64) -> Result<&[u8], RawError> {
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        if self.bytes.len() - self.at < len {
            return Err(self.error(format!("expected {len} bytes, found the end of the chunk")));
        }
        let slice = &self.bytes[self.at..self.at + len];
        self.at += len;
        Ok(slice)
    }
}

impl RawDecoder {
    pub fn new() -> RawDecoder {
        RawDecoder::default()
    }

    /// Decodes the complete chunks `bytes` finishes, handing their entries to `out` in order.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut impl Sink) -> Result<(), RawError> {
        while !bytes.is_empty() {
            // a whole chunk in `bytes` is decoded where it is, not copied first
            if self.partial.is_empty() && bytes.len() >= CHUNK_HEADER_BYTES {
                let payload_len = self.payload_len(&bytes[..CHUNK_HEADER_BYTES])?;
                let wanted = CHUNK_HEADER_BYTES + payload_len;
                if bytes.len() >= wanted {
                    self.chunk(&bytes[..wanted], out)?;
                    bytes = &bytes[wanted..];
                    continue;
                }
            }
            if self.partial.len() < CHUNK_HEADER_BYTES {
                let take = (CHUNK_HEADER_BYTES - self.partial.len()).min(bytes.len());
                self.partial.extend_from_slice(&bytes[..take]);
                bytes = &bytes[take..];
                if self.partial.len() < CHUNK_HEADER_BYTES {
                    break;
                }
            }
            let wanted =
                CHUNK_HEADER_BYTES + self.payload_len(&self.partial[..CHUNK_HEADER_BYTES])?;
            let take = (wanted - self.partial.len()).min(bytes.len());
            self.partial.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.partial.len() < wanted {
                break;
            }
            let chunk = std::mem::take(&mut self.partial);
            self.chunk(&chunk, out)?;
            self.partial = chunk;
            self.partial.clear();
        }
        Ok(())
    }

    /// The payload length a chunk header (at the stream's current offset) gives.
    fn payload_len(&self, header: &[u8]) -> Result<usize, RawError> {
        let payload_len = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes")) as usize;
        if payload_len > MAX_CHUNK_BYTES - CHUNK_HEADER_BYTES {
            return Err(RawError {
                offset: self.offset + 4,
                message: format!(
                    "expected a chunk length of at most {}, found {payload_len}",
                    MAX_CHUNK_BYTES - CHUNK_HEADER_BYTES
                ),
            });
        }
        Ok(payload_len)
    }

    /// Decodes one whole chunk, header included, at the stream's current offset.
    fn chunk(&mut self, chunk: &[u8], out: &mut impl Sink) -> Result<(), RawError> {
        let pid = u32::from_le_bytes(chunk[0..4].try_into().expect("4 bytes"));
        let mut fields = Fields {
            bytes: &chunk[CHUNK_HEADER_BYTES..],
            at: 0,
            base: self.offset + CHUNK_HEADER_BYTES as u64,
        };
        while let Some(&tag) = fields.bytes.get(fields.at) {
            // most records are accesses of the thread the previous record named
            match self.hot {
                Some(hot) if hot.pid == pid && tag & ACCESS != 0 => {
                    self.accesses(hot, &mut fields, out)?;
                }
                _ => self.record(pid, &mut fields, out)?,
            }
        }
        self.offset += chunk.len() as u64;
        Ok(())
    }

    /// The stream ended: every thread still alive exits (a process that exec'd or was killed
    /// wrote no END). Fails if the stream stopped inside a chunk.
    pub fn finish(&mut self, out: &mut impl Sink) -> Result<(), RawError> {
        if !self.partial.is_empty() {
            return Err(RawError {
                offset: self.offset + self.partial.len() as u64,
                message: "expected the rest of a chunk, found the end of the stream".into(),
            });
        }
        let mut alive: Vec<ThreadId> = self
            .processes
            .values_mut()
            .flat_map(|p| p.threads.iter_mut())
            .filter(|t| t.alive)
            .filter_map(|t| {
                t.alive = false;
                t.id
            })
            .collect();
        alive.sort_unstable();
        for thread in alive {
            self.tally.events += 1;
            out.entry(Entry::Event(Event::Exit { thread }));
        }
        Ok(())
    }

    /// The programs processes exec'd, in the order they did: what ran after is not traced.
    pub fn execs(&self) -> Vec<String> {
        self.processes
            .list
            .iter()
            .filter_map(|p| p.exec.clone())
            .collect()
    }

    /// True once the first process's START arrived: the tool ran.
    pub fn started(&self) -> bool {
        self.root_seen
    }

    fn thread_id(&mut self, pid: u32, serial: u32) -> ThreadId {
        let process = self.processes.entry(pid);
        let thread = process.thread(serial);
        match thread.id {
            Some(id) => id,
            None => {
                let id = self.next_thread;
                self.next_thread += 1;
                thread.id = Some(id);
                thread.alive = true;
                id
            }
        }
    }

    fn current(&mut self, pid: u32, fields: &Fields) -> Result<(u32, ThreadId), RawError> {
        let serial = self
            .processes
            .get(&pid)
            .and_then(|p| p.current)
            .ok_or_else(|| {
                fields.error(format!(
                    "expected a THREAD record of process {pid} before its first access or event"
                ))
            })?;
        Ok((serial, self.thread_id(pid, serial)))
    }

    fn file(
        &self,
        pid: u32,
        serial_plus_one: u64,
        fields: &Fields,
    ) -> Result<Option<FileId>, RawError> {
        if serial_plus_one == 0 {
            return Ok(None);
        }
        self.processes
            .get(&pid)
            .and_then(|p| p.files.get(&(serial_plus_one - 1)))
            .copied()
            .map(Some)
            .ok_or_else(|| {
                fields.error(format!(
                    "expected a FILE record for file {} of process {pid} before its use",
                    serial_plus_one - 1
                ))
            })
    }

    /// A new process `child` forked by (`parent`, `serial`): its state starts as a copy of
    /// its parent's files; the Fork entry is written.
    fn fork(&mut self, parent: u32, serial: u32, child: u32, out: &mut impl Sink) {
        let files = self
            .processes
            .get(&parent)
            .map(|p| p.files.clone())
            .unwrap_or_default();
        self.processes.insert(
            child,
            Process {
                files,
                ..Process::default()
            },
        );
        let thread = self.thread_id(parent, serial);
        let child = self.thread_id(child, 0);
        self.tally.events += 1;
        out.entry(Entry::Event(Event::Fork { thread, child }));
    }

    /// The access records of a known thread from `fields.at` on, up to the next other record
    /// or the chunk's end (most of a chunk): each in the trace's encoding without the thread
    /// field, its page a delta from the thread's previous one.
    fn accesses(
        &mut self,
        hot: HotThread,
        fields: &mut Fields,
        out: &mut impl Sink,
    ) -> Result<(), RawError> {
        let mut page = self.processes.list[hot.process].threads[hot.serial].last_page;
        let (mut records, mut instructions_total) = (0, 0);
        let run_start = fields.at;
        while let Some(&tag) = fields.bytes.get(fields.at) {
            if tag & ACCESS == 0 {
                break;
            }
            let start = fields.at;
            fields.at += 1;
            if tag & (ACCESS_THREAD | ACCESS_RESERVED) != 0 {
                return Err(RawError {
                    offset: fields.base + start as u64,
                    message: format!(
                        "expected an access tag without the thread and reserved bits, found {tag:#04x}"
                    ),
                });
            }
            let delta = match tag & ACCESS_DELTA_MASK {
                DELTA_ZERO => 0,
                DELTA_PLUS_ONE => 1,
                DELTA_MINUS_ONE => -1,
                _ => unzigzag(fields.varint()?),
            };
            let count = if tag & ACCESS_COUNT != 0 {
                let at = fields.offset();
                match fields.u32()? {
                    0 => {
                        return Err(RawError {
                            offset: at,
                            message: "expected a count of at least 1, found 0".into(),
                        })
                    }
                    count => count,
                }
            } else {
                1
            };
            let instructions = if tag & ACCESS_INSTRUCTIONS != 0 {
                fields.varint()?
            } else {
                0
            };
            page = page.wrapping_add_signed(delta);
            records += 1;
            instructions_total += instructions;
            out.access(Access {
                thread: hot.thread,
                page,
                write: tag & ACCESS_WRITE != 0,
                count,
                instructions,
            });
        }
        out.encoded_accesses(hot.thread, page, &fields.bytes[run_start..fields.at]);
        self.processes.list[hot.process].threads[hot.serial].last_page = page;
        self.tally.accesses += records;
        self.tally.instructions += instructions_total;
        Ok(())
    }

    fn record(
        &mut self,
        pid: u32,
        fields: &mut Fields,
        out: &mut impl Sink,
    ) -> Result<(), RawError> {
        let tag_offset = fields.offset();
        let tag = fields.bytes[fields.at];
        fields.at += 1;
        self.hot = None;
        if self.execs_pending > 0 && tag != TAG_EXEC {
            if let Some(p) = self.processes.get_mut(&pid) {
                if p.exec.take().is_some() {
                    self.execs_pending -= 1; // the exec failed: the process goes on
                }
            }
        }
        let mut event = |decoder: &mut RawDecoder, event: Event| {
            decoder.tally.events += 1;
            out.entry(Entry::Event(event));
        };
        match tag {
            TAG_THREAD => {
                let serial = fields.u32()?;
                let process = self.processes.entry(pid);
                process.thread(serial);
                process.current = Some(serial);
            }
            tag if tag & ACCESS != 0 => {
                let (serial, thread) = self.current(pid, fields)?;
                let hot = HotThread {
                    pid,
                    process: self.processes.index(pid).expect("current"),
                    serial: serial as usize,
                    thread,
                };
                fields.at -= 1; // the run starts with this record
                self.accesses(hot, fields, out)?;
                self.hot = Some(hot);
            }
            TAG_START => {
                let parent = fields.u32()?;
                let parent_serial = fields.u32()?;
                if parent == 0 {
                    if self.root_seen {
                        return Err(RawError {
                            offset: tag_offset,
                            message: format!("process {pid} starts as a second first process"),
                        });
                    }
                    self.root_seen = true;
                    self.processes.insert(pid, Process::default());
                    self.thread_id(pid, 0);
                } else if self.forks_written.contains(&pid)
                    || self.processes.get(&pid).is_some_and(|p| p.awaiting_start)
                {
                    // its parent's FORK record came first and wrote the Fork
                    self.forks_written.remove(&pid);
                    if let Some(p) = self.processes.get_mut(&pid) {
                        p.awaiting_start = false;
                    }
                } else {
                    self.fork(parent, parent_serial, pid, out);
                    self.forks_written.insert(pid);
                }
                self.tally.processes += 1;
                let process = self.processes.get_mut(&pid).expect("inserted");
                process.current = None;
            }
            TAG_FORK => {
                let child = fields.u32()?;
                let (serial, _) = self.current(pid, fields)?;
                if !self.forks_written.remove(&child) {
                    self.fork(pid, serial, child, out);
                    self.processes
                        .get_mut(&child)
                        .expect("forked")
                        .awaiting_start = true;
                    self.forks_written.insert(child);
                }
            }
            TAG_CLONE => {
                let child_serial = fields.u32()?;
                let (_, thread) = self.current(pid, fields)?;
                let process = self.processes.get_mut(&pid).expect("current");
                *process.thread(child_serial) = Thread::default();
                let child = self.thread_id(pid, child_serial);
                event(self, Event::Clone { thread, child });
            }
            TAG_EXIT => {
                let serial = fields.u32()?;
                let thread = self.thread_id(pid, serial);
                let state = self.processes.get_mut(&pid).expect("named").thread(serial);
                if state.alive {
                    state.alive = false;
                    event(self, Event::Exit { thread });
                }
            }
            TAG_MMAP => {
                let addr = fields.varint()?;
                let len_bytes = fields.varint()?;
                let prot = fields.u32()?;
                let flags = fields.u32()?;
                let file = fields.varint()?;
                let offset = fields.varint()?;
                let (_, thread) = self.current(pid, fields)?;
                let file = self.file(pid, file, fields)?.map(|id| (id, offset));
                event(
                    self,
                    Event::Mmap {
                        thread,
                        addr,
                        len_bytes,
                        prot,
                        flags,
                        file,
                    },
                );
            }
            TAG_MUNMAP => {
                let addr = fields.varint()?;
                let len_bytes = fields.varint()?;
                let (_, thread) = self.current(pid, fields)?;
                event(
                    self,
                    Event::Munmap {
                        thread,
                        addr,
                        len_bytes,
                    },
                );
            }
            TAG_MREMAP => {
                let old_addr = fields.varint()?;
                let old_len_bytes = fields.varint()?;
                let new_addr = fields.varint()?;
                let new_len_bytes = fields.varint()?;
                let flags = fields.u32()?;
                let (_, thread) = self.current(pid, fields)?;
                event(
                    self,
                    Event::Mremap {
                        thread,
                        old_addr,
                        old_len_bytes,
                        new_addr,
                        new_len_bytes,
                        flags,
                    },
                );
            }
            TAG_BRK => {
                let old_end = fields.varint()?;
                let new_end = fields.varint()?;
                let (_, thread) = self.current(pid, fields)?;
                event(
                    self,
                    Event::Brk {
                        thread,
                        old_end,
                        new_end,
                    },
                );
            }
            TAG_MPROTECT | TAG_MADVISE => {
                let addr = fields.varint()?;
                let len_bytes = fields.varint()?;
                let value = fields.u32()?;
                let (_, thread) = self.current(pid, fields)?;
                let e = if tag == TAG_MPROTECT {
                    Event::Mprotect {
                        thread,
                        addr,
                        len_bytes,
                        prot: value,
                    }
                } else {
                    Event::Madvise {
                        thread,
                        addr,
                        len_bytes,
                        advice: value,
                    }
                };
                event(self, e);
            }
            TAG_FILE => {
                let serial = fields.varint()?;
                let dev = fields.varint()?;
                let ino = fields.varint()?;
                let size_bytes = fields.varint()?;
                let len = fields.varint()?;
                let path = String::from_utf8_lossy(fields.bytes(len)?).into_owned();
                let id = match self.files.get(&(dev, ino)) {
                    Some(&id) => id,
                    None => {
                        let id = self.next_file;
                        self.next_file += 1;
                        self.files.insert((dev, ino), id);
                        event(
                            self,
                            Event::File {
                                id,
                                path,
                                size_bytes,
                            },
                        );
                        id
                    }
                };
                self.processes.entry(pid).files.insert(serial, id);
            }
            TAG_READ | TAG_WRITE => {
                let file = fields.varint()?;
                let offset_bytes = fields.varint()?;
                let len_bytes = fields.varint()?;
                let (_, thread) = self.current(pid, fields)?;
                let file = self
                    .file(pid, file + 1, fields)?
                    .expect("a serial + 1 is never 0");
                let e = if tag == TAG_READ {
                    Event::Read {
                        thread,
                        file,
                        offset_bytes,
                        len_bytes,
                    }
                } else {
                    Event::Write {
                        thread,
                        file,
                        offset_bytes,
                        len_bytes,
                    }
                };
                event(self, e);
            }
            TAG_FADVISE => {
                let file = fields.varint()?;
                let offset_bytes = fields.varint()?;
                let len_bytes = fields.varint()?;
                let advice = fields.varint()?;
                let (_, thread) = self.current(pid, fields)?;
                let file = self
                    .file(pid, file + 1, fields)?
                    .expect("a serial + 1 is never 0");
                event(
                    self,
                    Event::Fadvise {
                        thread,
                        file,
                        offset_bytes,
                        len_bytes,
                        advice: advice as u32,
                    },
                );
            }
            TAG_END => {
                let process = self.processes.entry(pid);
                process.ended = true;
                let alive: Vec<ThreadId> = process
                    .threads
                    .iter_mut()
                    .filter(|t| t.alive)
                    .filter_map(|t| {
                        t.alive = false;
                        t.id
                    })
                    .collect();
                for thread in alive {
                    event(self, Event::Exit { thread });
                }
            }
            TAG_EXEC => {
                let len = fields.varint()?;
                let path = String::from_utf8_lossy(fields.bytes(len)?).into_owned();
                let process = self.processes.entry(pid);
                if process.exec.replace(path).is_none() {
                    self.execs_pending += 1;
                }
            }
            other => {
                return Err(RawError {
                    offset: tag_offset,
                    message: format!("expected an access tag (0x80 and up) or an event tag 1 or 4..=19, found {other}"),
                })
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds raw chunks as the tool writes them.
    struct Stream(Vec<u8>);

    impl Stream {
        fn chunk(&mut self, pid: u32, records: &[&[u64]]) -> &mut Self {
            let mut payload = Vec::new();
            for record in records {
                payload.push(record[0] as u8);
                for &v in &record[1..] {
                    let mut v = v;
                    loop {
                        let byte = (v & 0x7f) as u8;
                        v >>= 7;
                        payload.push(byte | if v != 0 { 0x80 } else { 0 });
                        if v == 0 {
                            break;
                        }
                    }
                }
            }
            self.0.extend_from_slice(&pid.to_le_bytes());
            self.0
                .extend_from_slice(&(payload.len() as u32).to_le_bytes());
            self.0.extend_from_slice(&payload);
            self
        }
    }

    fn zz(v: i64) -> u64 {
        ((v << 1) ^ (v >> 63)) as u64
    }

    /// An access record as the tool encodes it: the trace's encoding without the thread field.
    fn acc(write: bool, delta: i64, count: u64, instructions: u64) -> Vec<u64> {
        let mut tag = ACCESS | if write { ACCESS_WRITE } else { 0 };
        let mut fields = Vec::new();
        match delta {
            0 => tag |= DELTA_ZERO,
            1 => tag |= DELTA_PLUS_ONE,
            -1 => tag |= DELTA_MINUS_ONE,
            d => fields.push(zz(d)),
        }
        if count != 1 {
            tag |= ACCESS_COUNT;
            fields.push(count);
        }
        if instructions != 0 {
            tag |= ACCESS_INSTRUCTIONS;
            fields.push(instructions);
        }
        [vec![u64::from(tag)], fields].concat()
    }

    fn decode(bytes: &[u8], step: usize) -> Result<Vec<Entry>, RawError> {
        let mut decoder = RawDecoder::new();
        let mut out = Vec::new();
        for piece in bytes.chunks(step) {
            decoder.feed(piece, &mut out)?;
        }
        decoder.finish(&mut out)?;
        Ok(out)
    }

    fn access(thread: ThreadId, page: u64, write: bool, count: u32, instructions: u64) -> Entry {
        Entry::Access(Access {
            thread,
            page,
            write,
            count,
            instructions,
        })
    }

    #[test]
    fn pages_are_deltas_per_thread_and_threads_are_numbered_by_first_appearance() {
        let mut s = Stream(Vec::new());
        s.chunk(
            7,
            &[
                &[4, 0, 0],
                &[1, 0],
                &acc(true, 100, 5, 10),
                &[6, 1],
                &[1, 1],
                &acc(false, 50, 1, 2),
                &[1, 0],
                &acc(false, 1, 2, 3),
                &[7, 1],
            ],
        )
        .chunk(7, &[&[17]]);
        for step in [1, 3, 1000] {
            let entries = decode(&s.0, step).unwrap();
            assert_eq!(
                entries,
                vec![
                    access(0, 100, true, 5, 10),
                    Entry::Event(Event::Clone {
                        thread: 0,
                        child: 1
                    }),
                    access(1, 50, false, 1, 2),
                    access(0, 101, false, 2, 3),
                    Entry::Event(Event::Exit { thread: 1 }),
                    Entry::Event(Event::Exit { thread: 0 }),
                ],
                "fed {step} bytes at a time"
            );
        }
    }

    #[test]
    fn a_fork_is_written_once_whichever_witness_comes_first() {
        // the parent's FORK record first
        let mut parent_first = Stream(Vec::new());
        parent_first
            .chunk(10, &[&[4, 0, 0], &[1, 0], &[5, 11]])
            .chunk(11, &[&[4, 10, 0], &[1, 0], &acc(true, 9, 1, 1), &[17]])
            .chunk(10, &[&[17]]);
        // the child's START first
        let mut child_first = Stream(Vec::new());
        child_first
            .chunk(10, &[&[4, 0, 0], &[1, 0]])
            .chunk(11, &[&[4, 10, 0], &[1, 0], &acc(true, 9, 1, 1), &[17]])
            .chunk(10, &[&[5, 11], &[17]]);
        let expected = vec![
            Entry::Event(Event::Fork {
                thread: 0,
                child: 1,
            }),
            access(1, 9, true, 1, 1),
            Entry::Event(Event::Exit { thread: 1 }),
            Entry::Event(Event::Exit { thread: 0 }),
        ];
        assert_eq!(decode(&parent_first.0, 4096).unwrap(), expected);
        assert_eq!(decode(&child_first.0, 4096).unwrap(), expected);
    }

    #[test]
    fn files_are_one_per_inode_across_processes_and_serials() {
        let path = b"/tmp/x";
        // FILE serial dev ino size path_len path (the path's bytes are raw, not varints)
        let file_record = |serial: u8, size: &[u8]| {
            let mut r = vec![14u8, serial, 5, 77];
            r.extend_from_slice(size);
            r.push(path.len() as u8);
            r.extend_from_slice(path);
            r
        };
        let mut payload = vec![4u8, 0, 0, 1, 0];
        payload.extend(file_record(0, &[0x80, 0x40])); // 8192 bytes
                                                       // mmap of file serial 0 (written 1): addr 4096, len 4096, prot 1, flags 2, offset 0
        payload.extend_from_slice(&[8, 0x80, 0x20, 0x80, 0x20, 1, 2, 1, 0]);
        // the same inode opened again as serial 3: no second File entry
        payload.extend(file_record(3, &[0]));
        payload.extend_from_slice(&[15, 3, 0, 100]);
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&9u32.to_le_bytes());
        bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&payload);
        let mut child = Stream(bytes);
        // a forked child reads through the serial it inherited
        child.chunk(10, &[&[4, 9, 0], &[1, 0], &[15, 0, 4096, 10]]);
        let entries = decode(&child.0, 4096).unwrap();
        assert_eq!(
            entries[..5],
            [
                Entry::Event(Event::File {
                    id: 0,
                    path: "/tmp/x".into(),
                    size_bytes: 8192
                }),
                Entry::Event(Event::Mmap {
                    thread: 0,
                    addr: 4096,
                    len_bytes: 4096,
                    prot: 1,
                    flags: 2,
                    file: Some((0, 0))
                }),
                Entry::Event(Event::Read {
                    thread: 0,
                    file: 0,
                    offset_bytes: 0,
                    len_bytes: 100
                }),
                Entry::Event(Event::Fork {
                    thread: 0,
                    child: 1
                }),
                Entry::Event(Event::Read {
                    thread: 1,
                    file: 0,
                    offset_bytes: 4096,
                    len_bytes: 10
                }),
            ]
        );
    }

    #[test]
    fn a_malformed_stream_names_the_byte() {
        let mut s = Stream(Vec::new());
        s.chunk(1, &[&[4, 0, 0], &[99]]);
        assert_eq!(
            decode(&s.0, 4096).unwrap_err(),
            RawError {
                offset: 11,
                message:
                    "expected an access tag (0x80 and up) or an event tag 1 or 4..=19, found 99"
                        .into()
            }
        );
        let mut cut = Stream(Vec::new());
        cut.chunk(1, &[&[4, 0, 0]]);
        cut.0.pop();
        assert_eq!(
            decode(&cut.0, 4096).unwrap_err().message,
            "expected the rest of a chunk, found the end of the stream"
        );
        let mut access_first = Stream(Vec::new());
        access_first.chunk(1, &[&[4, 0, 0], &acc(false, 0, 1, 1)]);
        assert!(decode(&access_first.0, 4096)
            .unwrap_err()
            .message
            .contains("expected a THREAD record"));
        // the thread is the THREAD record's: an access naming one is not the tool's
        let mut with_thread = Stream(Vec::new());
        let mut record = acc(false, 0, 1, 0);
        record[0] |= u64::from(ACCESS_THREAD);
        with_thread.chunk(1, &[&[4, 0, 0], &[1, 0], &record]);
        assert_eq!(
            decode(&with_thread.0, 4096).unwrap_err(),
            RawError {
                offset: 13,
                message: "expected an access tag without the thread and reserved bits, found 0xb4"
                    .into()
            }
        );
        let mut no_access = Stream(Vec::new());
        no_access.chunk(
            1,
            &[
                &[4, 0, 0],
                &[1, 0],
                &[u64::from(ACCESS | ACCESS_COUNT | DELTA_ZERO), 0],
            ],
        );
        assert_eq!(
            decode(&no_access.0, 4096).unwrap_err(),
            RawError {
                offset: 14,
                message: "expected a count of at least 1, found 0".into()
            }
        );
    }
}
