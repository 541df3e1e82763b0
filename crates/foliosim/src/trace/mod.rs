//! Traces of real programs (docs/traces.md): page-granular accesses per thread and the
//! address-space events mm cares about, as recorded by `foliosim trace record` (a Valgrind tool)
//! or imported from lackey and DAMON. Streamed: the reader and the writer never hold a whole
//! trace in memory. This layer names nothing of mm, workload or stats: it is input, like
//! scenario/.
//!
//! The encoding (read.rs, write.rs) and the importers (import/) fill in the API below; the
//! replay is workload/trace_replay.rs.

use std::fmt;

pub mod format;
pub mod import;
mod read;
#[cfg(test)]
mod tests;
mod write;

pub use read::TraceReader;
pub use write::TraceWriter;

/// The format version this build writes; it reads this one and every earlier one.
pub const FORMAT_VERSION: u32 = 3;
/// The oldest format version this build reads (version 2 added `Event::Fadvise`, version 3 the
/// header's native user time and instruction total).
pub const OLDEST_FORMAT_VERSION: u32 = 1;

/// What a trace says about itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// The program traced (argv[0] as given), or the importer's input file.
    pub program: String,
    /// Its arguments after argv[0].
    pub args: Vec<String>,
    /// Who wrote the trace: "foliotrace" (the Valgrind tool), "lackey", "damo".
    pub recorder: String,
    pub recorder_version: String,
    /// The page size the records' page numbers are in.
    pub page_size_bytes: u64,
    /// The program's user CPU time run natively on the recording machine (the median of the
    /// recorder's native runs), and the instructions the trace's records carry in all: their
    /// ratio is the program's own time per instruction there. 0 when not measured (format
    /// versions before 3, importers).
    pub native_user_ns: u64,
    pub instructions: u64,
}

/// A thread of the traced program, numbered from 0 (the first thread of the first process) in
/// the order the trace first names them.
pub type ThreadId = u32;

/// A file the trace names, by the id its `Event::File` gave it.
pub type FileId = u32;

/// Consecutive accesses of one thread to one page, collapsed into a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub thread: ThreadId,
    /// Virtual page number: the address divided by the header's page size.
    pub page: u64,
    /// True if any of the collapsed accesses wrote.
    pub write: bool,
    /// How many accesses the record collapses (at least 1).
    pub count: u32,
    /// Instructions the thread retired since its previous record (its work between accesses).
    pub instructions: u64,
}

/// An address-space or file event, with the Linux x86-64 values of its flags (PROT_*, MAP_*,
/// MREMAP_*, MADV_*), so that a trace reads like the syscalls it records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// mmap returned `addr`; `file` is set for a file mapping (its id and offset).
    Mmap {
        thread: ThreadId,
        addr: u64,
        len_bytes: u64,
        prot: u32,
        flags: u32,
        file: Option<(FileId, u64)>,
    },
    Munmap {
        thread: ThreadId,
        addr: u64,
        len_bytes: u64,
    },
    /// mremap moved or resized [old_addr, +old_len_bytes) to [new_addr, +new_len_bytes).
    Mremap {
        thread: ThreadId,
        old_addr: u64,
        old_len_bytes: u64,
        new_addr: u64,
        new_len_bytes: u64,
        flags: u32,
    },
    /// The program break moved from `old_end` to `new_end`.
    Brk {
        thread: ThreadId,
        old_end: u64,
        new_end: u64,
    },
    Mprotect {
        thread: ThreadId,
        addr: u64,
        len_bytes: u64,
        prot: u32,
    },
    Madvise {
        thread: ThreadId,
        addr: u64,
        len_bytes: u64,
        advice: u32,
    },
    /// `thread` forked a new process whose first thread is `child`.
    Fork {
        thread: ThreadId,
        child: ThreadId,
    },
    /// `thread` started thread `child` in its own process (clone with CLONE_VM).
    Clone {
        thread: ThreadId,
        child: ThreadId,
    },
    Exit {
        thread: ThreadId,
    },
    /// A file the program opened: the id later events use, its path and its size at open.
    File {
        id: FileId,
        path: String,
        size_bytes: u64,
    },
    /// read()/pread() of a file (page-cache use).
    Read {
        thread: ThreadId,
        file: FileId,
        offset_bytes: u64,
        len_bytes: u64,
    },
    /// write()/pwrite() of a file.
    Write {
        thread: ThreadId,
        file: FileId,
        offset_bytes: u64,
        len_bytes: u64,
    },
    /// posix_fadvise() of a file (POSIX_FADV_NORMAL 0, RANDOM 1, SEQUENTIAL 2, WILLNEED 3,
    /// DONTNEED 4, NOREUSE 5); `len_bytes` 0 means to the end of the file. Version 2 on.
    Fadvise {
        thread: ThreadId,
        file: FileId,
        offset_bytes: u64,
        len_bytes: u64,
        advice: u32,
    },
}

/// One entry of a trace, in the order the program did them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    Access(Access),
    Event(Event),
}

/// A malformed or truncated trace: the file, the byte offset where reading failed (in the file
/// for the preamble; for a record, the preamble's length plus the offset in the decompressed
/// records, as docs/traces.md says) and what was expected there. Displays as one line. The
/// importers use it too, with the byte offset in their input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    pub file: String,
    pub offset: u64,
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: byte {}: {}", self.file, self.offset, self.message)
    }
}

impl std::error::Error for TraceError {}

// The API the encoding provides (read.rs and write.rs), for the recorder, the importers and the
// replay to build on:
//
//   pub struct TraceWriter<W: std::io::Write>;
//   impl<W: Write> TraceWriter<W> {
//       pub fn new(out: W, header: &Header) -> std::io::Result<Self>;
//       pub fn push(&mut self, entry: &Entry) -> std::io::Result<()>;
//       pub fn finish(self) -> std::io::Result<W>;   // flushes the compressed stream
//   }
//   pub struct TraceReader<R: std::io::Read>;
//   impl TraceReader<std::io::BufReader<std::fs::File>> {
//       pub fn open(path: &std::path::Path) -> Result<Self, TraceError>;
//   }
//   impl<R: Read> TraceReader<R> {
//       pub fn new(input: R, file_name: &str) -> Result<Self, TraceError>; // reads the header
//       pub fn header(&self) -> &Header;
//       pub fn next_entry(&mut self) -> Result<Option<Entry>, TraceError>;
//   }

/// Writes a finished trace's native user time and instruction total into its header (the
/// header's last 16 bytes, fixed-width for this): the recorder knows the total only once every
/// record is written. The file must be a trace of this format version.
pub fn set_native_run(
    path: &std::path::Path,
    native_user_ns: u64,
    instructions: u64,
) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)?;
    let mut fixed = [0u8; 16];
    file.read_exact(&mut fixed)?;
    let version = u32::from_le_bytes(fixed[8..12].try_into().unwrap());
    if fixed[..8] != format::MAGIC || version != FORMAT_VERSION {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("expected a trace of format version {FORMAT_VERSION}"),
        ));
    }
    let header_len = u64::from(u32::from_le_bytes(fixed[12..16].try_into().unwrap()));
    file.seek(SeekFrom::Start(16 + header_len - 16))?;
    file.write_all(&native_user_ns.to_le_bytes())?;
    file.write_all(&instructions.to_le_bytes())?;
    file.sync_all()
}
