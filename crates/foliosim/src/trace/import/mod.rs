//! Importers of traces other tools write (docs/traces.md): valgrind lackey's `--trace-mem=yes`
//! text (lackey.rs) and DAMON records as `damo record` writes them (damo.rs). Each is a source of
//! entries like TraceReader, so that one loop (`copy`) writes any of them as a trace.
//!
//! Neither tool records mmap: an importer introduces every page through a synthetic anonymous
//! mapping of the 2 MiB-aligned chunk holding it, emitted before the chunk's first access.

use std::collections::{HashSet, VecDeque};
use std::io::{self, BufRead, Read, Write};

use super::{Access, Entry, Event, Header, ThreadId, TraceError, TraceReader, TraceWriter};

pub mod damo;
pub mod lackey;

pub use damo::{DamoImport, DamoOptions};
pub use lackey::LackeyImport;

/// Anything entries are read from: a trace, or an importer's input.
pub trait EntrySource {
    fn header(&self) -> &Header;
    fn next_entry(&mut self) -> Result<Option<Entry>, TraceError>;
}

impl<R: Read> EntrySource for TraceReader<R> {
    fn header(&self) -> &Header {
        TraceReader::header(self)
    }
    fn next_entry(&mut self) -> Result<Option<Entry>, TraceError> {
        TraceReader::next_entry(self)
    }
}

/// Why a copy failed: the input is malformed, or the output cannot be written.
#[derive(Debug)]
pub enum CopyError {
    Input(TraceError),
    Output(io::Error),
}

/// Writes every entry of `source` as a trace to `out`; the number of entries.
pub fn copy<W: Write>(source: &mut dyn EntrySource, out: W) -> Result<(W, u64), CopyError> {
    let mut writer = TraceWriter::new(out, source.header()).map_err(CopyError::Output)?;
    let mut entries = 0u64;
    while let Some(entry) = source.next_entry().map_err(CopyError::Input)? {
        writer.push(&entry).map_err(CopyError::Output)?;
        entries += 1;
    }
    let out = writer.finish().map_err(CopyError::Output)?;
    Ok((out, entries))
}

/// The synthetic mappings' granularity and alignment: a PMD's span on x86-64.
pub const SYNTHETIC_MAPPING_BYTES: u64 = 2 << 20;
/// PROT_READ | PROT_WRITE.
pub const SYNTHETIC_PROT: u32 = 0x1 | 0x2;
/// MAP_PRIVATE | MAP_ANONYMOUS.
pub const SYNTHETIC_FLAGS: u32 = 0x02 | 0x20;

/// Turns an importer's page accesses into entries: collapses consecutive accesses of a thread to
/// one page into one record, and emits a synthetic mapping before a chunk's first access.
pub struct AccessCollapser {
    page_size_bytes: u64,
    current: Option<Access>,
    /// Instructions between the accesses the current record collapses, owed to the next one.
    carried_instructions: u64,
    /// (thread, chunk) pairs already mapped: a thread stands for its process here, as no
    /// imported trace has two threads in one process.
    mapped: HashSet<(ThreadId, u64)>,
    /// Entries ready to be returned, oldest first.
    pub ready: VecDeque<Entry>,
}

impl AccessCollapser {
    pub fn new(page_size_bytes: u64) -> Self {
        AccessCollapser {
            page_size_bytes,
            current: None,
            carried_instructions: 0,
            mapped: HashSet::new(),
            ready: VecDeque::new(),
        }
    }

    /// One access of `thread` to `page`, after `instructions` since its previous access.
    /// The record keeps the instructions before its first access; those between the accesses
    /// it collapses go to the next record, so that no work is lost.
    pub fn touch(&mut self, thread: ThreadId, page: u64, write: bool, instructions: u64) {
        if let Some(current) = &mut self.current {
            if current.thread == thread && current.page == page && current.count < u32::MAX {
                current.count += 1;
                current.write |= write;
                self.carried_instructions += instructions;
                return;
            }
        }
        let carried = std::mem::take(&mut self.carried_instructions);
        self.flush();
        // pages larger than the chunk get a mapping of their own size
        let pages_per_chunk = (SYNTHETIC_MAPPING_BYTES / self.page_size_bytes).max(1);
        let chunk = page / pages_per_chunk;
        if self.mapped.insert((thread, chunk)) {
            self.ready.push_back(Entry::Event(Event::Mmap {
                thread,
                addr: (chunk * pages_per_chunk).wrapping_mul(self.page_size_bytes),
                len_bytes: pages_per_chunk * self.page_size_bytes,
                prot: SYNTHETIC_PROT,
                flags: SYNTHETIC_FLAGS,
                file: None,
            }));
        }
        self.current = Some(Access {
            thread,
            page,
            write,
            count: 1,
            instructions: carried.saturating_add(instructions),
        });
    }

    /// Emits the record being collapsed.
    pub fn flush(&mut self) {
        if let Some(access) = self.current.take() {
            self.ready.push_back(Entry::Access(access));
        }
    }

    /// Adds an event after the record being collapsed.
    pub fn event(&mut self, event: Event) {
        self.flush();
        self.ready.push_back(Entry::Event(event));
    }
}

/// Reads one line into `line` (without its end of line); the bytes it took in the input, end of
/// line included, or None at the end of the input.
pub(crate) fn read_line(
    input: &mut impl BufRead,
    line: &mut Vec<u8>,
    file: &str,
    offset: u64,
) -> Result<Option<u64>, TraceError> {
    line.clear();
    let n = input.read_until(b'\n', line).map_err(|e| TraceError {
        file: file.to_string(),
        offset,
        message: format!("cannot read: {e}"),
    })?;
    if n == 0 {
        return Ok(None);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(Some(n as u64))
}

/// A line for a message: at most 60 characters, lossy UTF-8.
pub(crate) fn quote_line(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let mut quoted: String = text.chars().take(60).collect();
    if text.chars().count() > 60 {
        quoted.push('…');
    }
    format!("{quoted:?}")
}
