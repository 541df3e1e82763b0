//! TraceReader: checks the preamble, then decodes the records of the zstd stream one entry at a
//! time. The decompressed bytes go through a buffer of its own, so that an access costs a few
//! byte loads and no allocation; only a file event allocates (its path).
//!
//! Offsets in errors (docs/traces.md): bytes of the preamble are counted as in the file; bytes
//! of a record as if the records followed the preamble uncompressed (the preamble's length plus
//! the offset in the decompressed stream).

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

use super::format::*;
use super::{Access, Entry, Event, Header, TraceError, FORMAT_VERSION, OLDEST_FORMAT_VERSION};

/// Decompressed bytes are decoded from a buffer this large.
const BUFFER_BYTES: usize = 128 * 1024;

pub struct TraceReader<R: Read> {
    file: String,
    header: Header,
    /// The format version of the preamble (which tags are known).
    version: u32,
    decoder: zstd::stream::read::Decoder<'static, BufReader<R>>,
    buffer: Box<[u8]>,
    /// The next byte to decode and the end of the valid bytes in `buffer`.
    pos: usize,
    len: usize,
    /// The offset (as errors count them) of `buffer[0]`.
    buffer_offset: u64,
    pages: ThreadPages,
    /// Set once the end record is read, or after an error (returned again).
    done: Option<Result<(), TraceError>>,
}

impl TraceReader<BufReader<File>> {
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        let name = path.display().to_string();
        let file = File::open(path).map_err(|e| TraceError {
            file: name.clone(),
            offset: 0,
            message: format!("cannot open: {}", io_text(&e)),
        })?;
        TraceReader::new(BufReader::new(file), &name)
    }
}

impl<R: Read> TraceReader<R> {
    /// Reads and checks the preamble and the header; the records are read by `next_entry`.
    pub fn new(mut input: R, file_name: &str) -> Result<Self, TraceError> {
        let error = |offset: u64, message: String| TraceError {
            file: file_name.to_string(),
            offset,
            message,
        };
        let mut fixed = [0u8; PREAMBLE_FIXED_BYTES as usize];
        let got = read_fully(&mut input, &mut fixed)
            .map_err(|e| error(0, format!("cannot read: {}", io_text(&e))))?;
        if got < MAGIC.len() && fixed[..got] == MAGIC[..got] && got > 0 {
            return Err(error(
                got as u64,
                format!("truncated preamble: expected the 8 magic bytes, found {got}"),
            ));
        }
        if got < MAGIC.len() || fixed[..MAGIC.len()] != MAGIC {
            return Err(error(
                0,
                "expected a foliosim trace (magic bytes 89 46 54 52 41 43 45 0a), found other data"
                    .into(),
            ));
        }
        if got < 12 {
            return Err(error(
                got as u64,
                "truncated preamble: expected the format version (4 bytes)".into(),
            ));
        }
        let version = u32::from_le_bytes(fixed[8..12].try_into().unwrap());
        if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(error(
                8,
                format!(
                    "expected format version {OLDEST_FORMAT_VERSION} to {FORMAT_VERSION}, found \
                     version {version}"
                ),
            ));
        }
        if got < 16 {
            return Err(error(
                got as u64,
                "truncated preamble: expected the header length (4 bytes)".into(),
            ));
        }
        let header_len = u32::from_le_bytes(fixed[12..16].try_into().unwrap());
        if header_len > MAX_HEADER_BYTES {
            return Err(error(
                12,
                format!(
                    "expected a header length of at most {MAX_HEADER_BYTES}, found {header_len}"
                ),
            ));
        }
        let mut encoded = vec![0u8; header_len as usize];
        let got = read_fully(&mut input, &mut encoded)
            .map_err(|e| error(16, format!("cannot read: {}", io_text(&e))))?;
        if got < encoded.len() {
            return Err(error(
                PREAMBLE_FIXED_BYTES + got as u64,
                format!("truncated header: expected {header_len} bytes, found {got}"),
            ));
        }
        let header = HeaderCursor {
            bytes: &encoded,
            pos: 0,
            version,
        }
        .header()
        .map_err(|(pos, message)| error(PREAMBLE_FIXED_BYTES + pos as u64, message))?;
        let preamble_bytes = PREAMBLE_FIXED_BYTES + u64::from(header_len);
        let decoder = zstd::stream::read::Decoder::new(input).map_err(|e| {
            error(
                preamble_bytes,
                format!("cannot start decompressing: {}", io_text(&e)),
            )
        })?;
        Ok(TraceReader {
            file: file_name.to_string(),
            header,
            version,
            decoder,
            buffer: vec![0u8; BUFFER_BYTES].into_boxed_slice(),
            pos: 0,
            len: 0,
            buffer_offset: preamble_bytes,
            pages: ThreadPages::default(),
            done: None,
        })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The next entry, `None` after the end record. A malformed record is an error, returned
    /// again by every later call.
    #[inline]
    pub fn next_entry(&mut self) -> Result<Option<Entry>, TraceError> {
        if let Some(done) = &self.done {
            return done.clone().map(|()| None);
        }
        let result = self.decode();
        if let Err(e) = &result {
            self.done = Some(Err(e.clone()));
        }
        result
    }

    /// The next event, skipping the access records before it; `None` after the end record.
    /// Events are decoded and checked as by `next_entry`; an access record is only framed (its
    /// varints skipped, not checked against their fields' ranges) and its page is not tracked,
    /// so a reader read with this must not go on with `next_entry`. About as fast as zstd
    /// decompresses: for a pass over a trace that wants only its events (the files a trace
    /// names, docs/replay.md's `warm_files`).
    pub fn next_event(&mut self) -> Result<Option<Event>, TraceError> {
        loop {
            if self.done.is_none() {
                self.skip_accesses();
            }
            match self.next_entry()? {
                None => return Ok(None),
                Some(Entry::Event(e)) => return Ok(Some(e)),
                Some(Entry::Access(_)) => {}
            }
        }
    }

    /// Skips the well-framed access records wholly in the buffer, up to the first event, the
    /// buffer's last bytes, or a record `decode` must look at (a reserved bit, an overlong
    /// varint), where `next_entry` takes over.
    #[inline]
    fn skip_accesses(&mut self) {
        // a tag and four varints of at most 10 bytes each
        const LONGEST_ACCESS: usize = 41;
        let (buffer, len) = (&self.buffer[..], self.len);
        let mut pos = self.pos;
        'records: while len - pos >= LONGEST_ACCESS {
            let tag = buffer[pos];
            if tag & ACCESS == 0 || tag & ACCESS_RESERVED != 0 {
                break;
            }
            let varints = u8::from(tag & ACCESS_THREAD != 0)
                + u8::from(tag & ACCESS_DELTA_MASK == DELTA_VARINT)
                + u8::from(tag & ACCESS_COUNT != 0)
                + u8::from(tag & ACCESS_INSTRUCTIONS != 0);
            let mut at = pos + 1;
            for _ in 0..varints {
                let Some(used) = buffer[at..at + 10].iter().position(|&b| b < 0x80) else {
                    break 'records;
                };
                at += used + 1;
            }
            pos = at;
        }
        self.pos = pos;
    }

    /// The offset, as errors count it, of the next byte to decode.
    pub fn offset(&self) -> u64 {
        self.buffer_offset + self.pos as u64
    }

    #[inline]
    fn decode(&mut self) -> Result<Option<Entry>, TraceError> {
        let tag_offset = self.offset();
        let Some(tag) = self.byte()? else {
            return Err(self.error_at(
                tag_offset,
                "truncated trace: expected a record or the end record, found the end of the records (was the writer finished?)"
                    .into(),
            ));
        };
        if tag & ACCESS != 0 {
            return self.access(tag, tag_offset).map(|a| Some(Entry::Access(a)));
        }
        let field = Field { tag, tag_offset };
        let event = match tag {
            TAG_END => {
                let at = self.offset();
                if self.byte()?.is_some() {
                    return Err(self.error_at(
                        at,
                        "expected the end of the records after the end record, found more bytes"
                            .into(),
                    ));
                }
                self.done = Some(Ok(()));
                return Ok(None);
            }
            TAG_MMAP => {
                let thread = self.u32(field, "thread")?;
                let addr = self.varint(field, "address")?;
                let len_bytes = self.varint(field, "length")?;
                let prot = self.u32(field, "prot")?;
                let flags = self.u32(field, "flags")?;
                let at = self.offset();
                let file = match self.varint(field, "file id + 1")? {
                    0 => None,
                    id_plus_one => {
                        let id = u32::try_from(id_plus_one - 1).map_err(|_| {
                            self.error_at(
                                at,
                                format!(
                                    "mmap record (tag at byte {tag_offset}): expected a file id + 1 of at most 2^32, found {id_plus_one}"
                                ),
                            )
                        })?;
                        Some((id, self.varint(field, "file offset")?))
                    }
                };
                Event::Mmap {
                    thread,
                    addr,
                    len_bytes,
                    prot,
                    flags,
                    file,
                }
            }
            TAG_MUNMAP => Event::Munmap {
                thread: self.u32(field, "thread")?,
                addr: self.varint(field, "address")?,
                len_bytes: self.varint(field, "length")?,
            },
            TAG_MREMAP => Event::Mremap {
                thread: self.u32(field, "thread")?,
                old_addr: self.varint(field, "old address")?,
                old_len_bytes: self.varint(field, "old length")?,
                new_addr: self.varint(field, "new address")?,
                new_len_bytes: self.varint(field, "new length")?,
                flags: self.u32(field, "flags")?,
            },
            TAG_BRK => Event::Brk {
                thread: self.u32(field, "thread")?,
                old_end: self.varint(field, "old end")?,
                new_end: self.varint(field, "new end")?,
            },
            TAG_MPROTECT => Event::Mprotect {
                thread: self.u32(field, "thread")?,
                addr: self.varint(field, "address")?,
                len_bytes: self.varint(field, "length")?,
                prot: self.u32(field, "prot")?,
            },
            TAG_MADVISE => Event::Madvise {
                thread: self.u32(field, "thread")?,
                addr: self.varint(field, "address")?,
                len_bytes: self.varint(field, "length")?,
                advice: self.u32(field, "advice")?,
            },
            TAG_FORK => Event::Fork {
                thread: self.u32(field, "thread")?,
                child: self.u32(field, "child thread")?,
            },
            TAG_CLONE => Event::Clone {
                thread: self.u32(field, "thread")?,
                child: self.u32(field, "child thread")?,
            },
            TAG_EXIT => Event::Exit {
                thread: self.u32(field, "thread")?,
            },
            TAG_FILE => Event::File {
                id: self.u32(field, "file id")?,
                path: self.string(field, "path")?,
                size_bytes: self.varint(field, "size")?,
            },
            TAG_READ => Event::Read {
                thread: self.u32(field, "thread")?,
                file: self.u32(field, "file id")?,
                offset_bytes: self.varint(field, "file offset")?,
                len_bytes: self.varint(field, "length")?,
            },
            TAG_WRITE => Event::Write {
                thread: self.u32(field, "thread")?,
                file: self.u32(field, "file id")?,
                offset_bytes: self.varint(field, "file offset")?,
                len_bytes: self.varint(field, "length")?,
            },
            TAG_FADVISE if self.version >= 2 => Event::Fadvise {
                thread: self.u32(field, "thread")?,
                file: self.u32(field, "file id")?,
                offset_bytes: self.varint(field, "file offset")?,
                len_bytes: self.varint(field, "length")?,
                advice: self.u32(field, "advice")?,
            },
            _ => {
                return Err(self.error_at(
                    tag_offset,
                    format!(
                        "expected a record tag (0x00 to 0x{:02x}, or 0x80 to 0xbf for an access), \
                         found 0x{tag:02x}",
                        if self.version >= 2 {
                            TAG_FADVISE
                        } else {
                            TAG_WRITE
                        }
                    ),
                ))
            }
        };
        Ok(Some(Entry::Event(event)))
    }

    #[inline]
    fn access(&mut self, tag: u8, tag_offset: u64) -> Result<Access, TraceError> {
        let field = Field { tag, tag_offset };
        if tag & ACCESS_RESERVED != 0 {
            return Err(self.error_at(
                tag_offset,
                format!("expected an access tag without bit 0x40 (reserved), found 0x{tag:02x}"),
            ));
        }
        if tag & ACCESS_THREAD != 0 {
            let thread = self.u32(field, "thread")?;
            self.pages.switch_to(thread);
        }
        let page = match tag & ACCESS_DELTA_MASK {
            DELTA_ZERO => self.pages.last_page,
            DELTA_PLUS_ONE => self.pages.last_page.wrapping_add(1),
            DELTA_MINUS_ONE => self.pages.last_page.wrapping_sub(1),
            _ => {
                let delta = unzigzag(self.varint(field, "page delta")?);
                self.pages.last_page.wrapping_add(delta as u64)
            }
        };
        self.pages.last_page = page;
        let count = if tag & ACCESS_COUNT != 0 {
            let at = self.offset();
            let count = self.u32(field, "count")?;
            if count == 0 {
                return Err(self.error_at(
                    at,
                    format!("access record (tag at byte {tag_offset}): expected a count of at least 1, found 0"),
                ));
            }
            count
        } else {
            1
        };
        let instructions = if tag & ACCESS_INSTRUCTIONS != 0 {
            self.varint(field, "instructions")?
        } else {
            0
        };
        Ok(Access {
            thread: self.pages.thread,
            page,
            write: tag & ACCESS_WRITE != 0,
            count,
            instructions,
        })
    }

    /// The next decompressed byte, `None` at the end of the stream.
    #[inline(always)]
    fn byte(&mut self) -> Result<Option<u8>, TraceError> {
        if self.pos < self.len {
            let b = self.buffer[self.pos];
            self.pos += 1;
            return Ok(Some(b));
        }
        self.byte_after_refill()
    }

    #[cold]
    fn byte_after_refill(&mut self) -> Result<Option<u8>, TraceError> {
        if !self.refill()? {
            return Ok(None);
        }
        let b = self.buffer[0];
        self.pos = 1;
        Ok(Some(b))
    }

    /// Replaces the buffer's bytes by the next decompressed ones; false at the end of the stream.
    fn refill(&mut self) -> Result<bool, TraceError> {
        self.buffer_offset += self.len as u64;
        self.pos = 0;
        self.len = 0;
        loop {
            match self.decoder.read(&mut self.buffer) {
                Ok(n) => {
                    self.len = n;
                    return Ok(n > 0);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(self.error_at(
                        self.buffer_offset,
                        format!(
                            "expected more records, found a corrupt or truncated compressed stream ({})",
                            io_text(&e)
                        ),
                    ))
                }
            }
        }
    }

    /// An unsigned LEB128 varint of at most 10 bytes that fits in 64 bits.
    #[inline(always)]
    fn varint(&mut self, field: Field, name: &'static str) -> Result<u64, TraceError> {
        // fast path: a one-byte varint (most deltas, counts and instruction gaps)
        if self.pos < self.len {
            let b = self.buffer[self.pos];
            if b < 0x80 {
                self.pos += 1;
                return Ok(b.into());
            }
            // a longer one wholly in the buffer: decoded from the slice, without refills
            if self.len - self.pos >= 10 {
                if let Some((value, used)) = varint_in(&self.buffer[self.pos..self.pos + 10]) {
                    self.pos += used;
                    return Ok(value);
                }
            }
        }
        self.long_varint(field, name)
    }

    fn long_varint(&mut self, field: Field, name: &'static str) -> Result<u64, TraceError> {
        let start = self.offset();
        let mut value = 0u64;
        for i in 0..10 {
            let at = self.offset();
            let Some(b) = self.byte()? else {
                return Err(self.field_error(
                    field,
                    at,
                    name,
                    "found the end of the records".into(),
                ));
            };
            if i == 9 && b > 1 {
                return Err(self.field_error(
                    field,
                    start,
                    name,
                    "found a varint over 64 bits".into(),
                ));
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(value);
            }
        }
        Err(self.field_error(
            field,
            start,
            name,
            "found a varint longer than 10 bytes".into(),
        ))
    }

    #[inline]
    fn u32(&mut self, field: Field, name: &'static str) -> Result<u32, TraceError> {
        let start = self.offset();
        let value = self.varint(field, name)?;
        u32::try_from(value).map_err(|_| {
            self.field_error(field, start, name, format!("found {value}, over 32 bits"))
        })
    }

    fn string(&mut self, field: Field, name: &'static str) -> Result<String, TraceError> {
        let start = self.offset();
        let len = self.varint(field, name)?;
        if len > MAX_STRING_BYTES {
            return Err(self.field_error(
                field,
                start,
                name,
                format!("found a length of {len} bytes, over {MAX_STRING_BYTES}"),
            ));
        }
        let mut bytes = Vec::with_capacity(len as usize);
        for _ in 0..len {
            let at = self.offset();
            match self.byte()? {
                Some(b) => bytes.push(b),
                None => {
                    return Err(self.field_error(
                        field,
                        at,
                        name,
                        "found the end of the records".into(),
                    ))
                }
            }
        }
        String::from_utf8(bytes).map_err(|_| {
            self.field_error(field, start, name, "found bytes that are not UTF-8".into())
        })
    }

    fn field_error(&self, field: Field, at: u64, name: &str, found: String) -> TraceError {
        self.error_at(
            at,
            format!(
                "{} record (tag at byte {}): expected its {name}, {found}",
                tag_name(field.tag),
                field.tag_offset
            ),
        )
    }

    fn error_at(&self, offset: u64, message: String) -> TraceError {
        TraceError {
            file: self.file.clone(),
            offset,
            message,
        }
    }
}

/// The varint at the start of `bytes` (10 of them) and its length; `None` if it is over 64
/// bits (the slow path then says so).
#[inline]
fn varint_in(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(9) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Some((value, i + 1));
        }
    }
    match bytes[9] {
        b @ 0..=1 => Some((value | u64::from(b) << 63, 10)),
        _ => None,
    }
}

/// The record a field belongs to, for messages.
#[derive(Clone, Copy)]
struct Field {
    tag: u8,
    tag_offset: u64,
}

/// Reads until `buf` is full or the input ends; the number of bytes read.
fn read_fully(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn io_text(e: &io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// Decodes the header's fields (write.rs's encode_header) from its bytes; an error is the
/// offset in the header and the message.
struct HeaderCursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    version: u32,
}

impl HeaderCursor<'_> {
    fn header(mut self) -> Result<Header, (usize, String)> {
        let program = self.string("program")?;
        let arg_count = self.varint("number of arguments")?;
        // each argument takes at least a byte: a count over the bytes left is corrupt
        if arg_count > (self.bytes.len() - self.pos) as u64 {
            return Err((
                self.pos,
                format!("header: expected a number of arguments, found {arg_count}, more than the header's bytes"),
            ));
        }
        let args = (0..arg_count)
            .map(|_| self.string("argument"))
            .collect::<Result<Vec<_>, _>>()?;
        let recorder = self.string("recorder")?;
        let recorder_version = self.string("recorder version")?;
        let at = self.pos;
        let page_size_bytes = self.varint("page size")?;
        if !page_size_bytes.is_power_of_two() {
            return Err((
                at,
                format!(
                    "header: expected a page size that is a power of two, found {page_size_bytes}"
                ),
            ));
        }
        let (native_user_ns, instructions) = if self.version >= 3 {
            (
                self.fixed_u64("native user time")?,
                self.fixed_u64("instruction total")?,
            )
        } else {
            (0, 0)
        };
        if self.pos != self.bytes.len() {
            let last = if self.version >= 3 {
                "instruction total"
            } else {
                "page size"
            };
            return Err((
                self.pos,
                format!(
                    "header: expected its end after the {last}, found {} more bytes",
                    self.bytes.len() - self.pos
                ),
            ));
        }
        Ok(Header {
            program,
            args,
            recorder,
            recorder_version,
            page_size_bytes,
            native_user_ns,
            instructions,
        })
    }

    fn fixed_u64(&mut self, name: &str) -> Result<u64, (usize, String)> {
        let Some(bytes) = self.bytes.get(self.pos..self.pos + 8) else {
            return Err((
                self.pos,
                format!("header: expected its {name} (8 bytes), found the header's end"),
            ));
        };
        self.pos += 8;
        Ok(u64::from_le_bytes(bytes.try_into().unwrap()))
    }

    fn varint(&mut self, name: &str) -> Result<u64, (usize, String)> {
        let start = self.pos;
        let mut value = 0u64;
        for i in 0..10 {
            let Some(&b) = self.bytes.get(self.pos) else {
                return Err((
                    self.pos,
                    format!("header: expected its {name}, found the header's end"),
                ));
            };
            self.pos += 1;
            if i == 9 && b > 1 {
                break;
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(value);
            }
        }
        Err((
            start,
            format!("header: expected its {name}, found a varint over 64 bits"),
        ))
    }

    fn string(&mut self, name: &str) -> Result<String, (usize, String)> {
        let start = self.pos;
        let len = self.varint(name)?;
        let left = (self.bytes.len() - self.pos) as u64;
        if len > left {
            return Err((
                start,
                format!("header: expected its {name} of {len} bytes, found {left} bytes left"),
            ));
        }
        let bytes = &self.bytes[self.pos..self.pos + len as usize];
        self.pos += len as usize;
        String::from_utf8(bytes.to_vec()).map_err(|_| {
            (
                start,
                format!("header: expected its {name} in UTF-8, found other bytes"),
            )
        })
    }
}
