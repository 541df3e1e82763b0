//! TraceWriter: the preamble, then the entries encoded as records (format.rs) into one zstd
//! stream. Entries are encoded into a small buffer handed to the compressor in blocks, so that
//! the writer holds a few hundred KiB whatever the trace's length.

use std::io::{self, Write};

use super::format::*;
use super::{Access, Entry, Event, Header, ThreadId, FORMAT_VERSION};

/// Encoded records are handed to zstd once this many bytes are buffered.
const BLOCK_BYTES: usize = 64 * 1024;

pub struct TraceWriter<W: Write> {
    encoder: zstd::stream::write::Encoder<'static, W>,
    block: Vec<u8>,
    pages: ThreadPages,
}

impl<W: Write> TraceWriter<W> {
    /// Writes the preamble (magic, version, header) and starts the compressed stream. A header
    /// whose page size is not a power of two is refused (InvalidInput).
    pub fn new(mut out: W, header: &Header) -> io::Result<Self> {
        if !header.page_size_bytes.is_power_of_two() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "trace header: page size {} is not a power of two",
                    header.page_size_bytes
                ),
            ));
        }
        let encoded = encode_header(header);
        let header_len = u32::try_from(encoded.len())
            .ok()
            .filter(|&n| n <= MAX_HEADER_BYTES)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "trace header: {} bytes, at most {MAX_HEADER_BYTES}",
                        encoded.len()
                    ),
                )
            })?;
        out.write_all(&MAGIC)?;
        out.write_all(&FORMAT_VERSION.to_le_bytes())?;
        out.write_all(&header_len.to_le_bytes())?;
        out.write_all(&encoded)?;
        let mut encoder = zstd::stream::write::Encoder::new(out, ZSTD_LEVEL)?;
        // a flipped bit in the records is caught at the end instead of replayed
        encoder.include_checksum(true)?;
        Ok(TraceWriter {
            encoder,
            block: Vec::with_capacity(BLOCK_BYTES + 64 * 1024),
            pages: ThreadPages::default(),
        })
    }

    /// Appends one entry. An access with a count of 0 is refused (InvalidInput): a record
    /// collapses at least one access.
    pub fn push(&mut self, entry: &Entry) -> io::Result<()> {
        match entry {
            Entry::Access(access) => self.push_access(access)?,
            Entry::Event(event) => self.push_event(event)?,
        }
        self.hand_over_full_block()
    }

    /// Appends accesses of one thread that are already encoded as this writer would encode
    /// them, but for the thread field: `encoded` holds whole access records without it (the T
    /// bit clear), the first one's page a delta from `thread`'s previous access, as the
    /// recorder's Valgrind tool writes them; `last_page` is the page of the last one. They are
    /// copied as they are, the thread added to the first where the thread changes.
    pub fn push_encoded_accesses(
        &mut self,
        thread: ThreadId,
        last_page: u64,
        encoded: &[u8],
    ) -> io::Result<()> {
        let Some((&first_tag, rest)) = encoded.split_first() else {
            return Ok(());
        };
        debug_assert!(first_tag & ACCESS != 0 && first_tag & ACCESS_THREAD == 0);
        if thread == self.pages.thread {
            self.block.extend_from_slice(encoded);
        } else {
            self.pages.switch_to(thread);
            self.block.push(first_tag | ACCESS_THREAD);
            put_varint(&mut self.block, thread.into());
            self.block.extend_from_slice(rest);
        }
        self.pages.last_page = last_page;
        self.hand_over_full_block()
    }

    /// Hands the encoded records to the compressor once a block's worth is buffered.
    #[inline]
    fn hand_over_full_block(&mut self) -> io::Result<()> {
        if self.block.len() >= BLOCK_BYTES {
            self.encoder.write_all(&self.block)?;
            self.block.clear();
        }
        Ok(())
    }

    /// Writes the end record, ends the compressed stream and returns the output. A writer
    /// dropped without `finish` leaves a trace the reader refuses as truncated.
    pub fn finish(mut self) -> io::Result<W> {
        self.block.push(TAG_END);
        self.encoder.write_all(&self.block)?;
        let mut out = self.encoder.finish()?;
        out.flush()?;
        Ok(out)
    }

    fn push_access(&mut self, access: &Access) -> io::Result<()> {
        if access.count == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "trace access: a count of 0 (a record collapses at least one access)",
            ));
        }
        let with_thread = access.thread != self.pages.thread;
        self.pages.switch_to(access.thread);
        put_access(&mut self.block, access, self.pages.last_page, with_thread);
        self.pages.last_page = access.page;
        Ok(())
    }

    fn push_event(&mut self, event: &Event) -> io::Result<()> {
        let out = &mut self.block;
        match *event {
            Event::Mmap {
                thread,
                addr,
                len_bytes,
                prot,
                flags,
                file,
            } => {
                out.push(TAG_MMAP);
                put_varints(
                    out,
                    &[thread.into(), addr, len_bytes, prot.into(), flags.into()],
                );
                match file {
                    None => put_varint(out, 0),
                    Some((id, offset_bytes)) => {
                        put_varint(out, u64::from(id) + 1);
                        put_varint(out, offset_bytes);
                    }
                }
            }
            Event::Munmap {
                thread,
                addr,
                len_bytes,
            } => {
                out.push(TAG_MUNMAP);
                put_varints(out, &[thread.into(), addr, len_bytes]);
            }
            Event::Mremap {
                thread,
                old_addr,
                old_len_bytes,
                new_addr,
                new_len_bytes,
                flags,
            } => {
                out.push(TAG_MREMAP);
                put_varints(
                    out,
                    &[
                        thread.into(),
                        old_addr,
                        old_len_bytes,
                        new_addr,
                        new_len_bytes,
                        flags.into(),
                    ],
                );
            }
            Event::Brk {
                thread,
                old_end,
                new_end,
            } => {
                out.push(TAG_BRK);
                put_varints(out, &[thread.into(), old_end, new_end]);
            }
            Event::Mprotect {
                thread,
                addr,
                len_bytes,
                prot,
            } => {
                out.push(TAG_MPROTECT);
                put_varints(out, &[thread.into(), addr, len_bytes, prot.into()]);
            }
            Event::Madvise {
                thread,
                addr,
                len_bytes,
                advice,
            } => {
                out.push(TAG_MADVISE);
                put_varints(out, &[thread.into(), addr, len_bytes, advice.into()]);
            }
            Event::Fork { thread, child } => {
                out.push(TAG_FORK);
                put_varints(out, &[thread.into(), child.into()]);
            }
            Event::Clone { thread, child } => {
                out.push(TAG_CLONE);
                put_varints(out, &[thread.into(), child.into()]);
            }
            Event::Exit { thread } => {
                out.push(TAG_EXIT);
                put_varint(out, thread.into());
            }
            Event::File {
                id,
                ref path,
                size_bytes,
            } => {
                if path.len() as u64 > MAX_STRING_BYTES {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!(
                            "trace file event: a path of {} bytes, at most {MAX_STRING_BYTES}",
                            path.len()
                        ),
                    ));
                }
                out.push(TAG_FILE);
                put_varint(out, id.into());
                put_string(out, path);
                put_varint(out, size_bytes);
            }
            Event::Read {
                thread,
                file,
                offset_bytes,
                len_bytes,
            } => {
                out.push(TAG_READ);
                put_varints(out, &[thread.into(), file.into(), offset_bytes, len_bytes]);
            }
            Event::Write {
                thread,
                file,
                offset_bytes,
                len_bytes,
            } => {
                out.push(TAG_WRITE);
                put_varints(out, &[thread.into(), file.into(), offset_bytes, len_bytes]);
            }
            Event::Fadvise {
                thread,
                file,
                offset_bytes,
                len_bytes,
                advice,
            } => {
                out.push(TAG_FADVISE);
                put_varints(
                    out,
                    &[
                        thread.into(),
                        file.into(),
                        offset_bytes,
                        len_bytes,
                        advice.into(),
                    ],
                );
            }
        }
        Ok(())
    }
}

fn put_varints(out: &mut Vec<u8>, values: &[u64]) {
    for &value in values {
        put_varint(out, value);
    }
}

fn put_string(out: &mut Vec<u8>, text: &str) {
    put_varint(out, text.len() as u64);
    out.extend_from_slice(text.as_bytes());
}

/// The header's fields in order: program, the number of arguments and each argument, recorder,
/// recorder version (strings as a varint length and UTF-8 bytes), page size (varint).
fn encode_header(header: &Header) -> Vec<u8> {
    let mut out = Vec::new();
    put_string(&mut out, &header.program);
    put_varint(&mut out, header.args.len() as u64);
    for arg in &header.args {
        put_string(&mut out, arg);
    }
    put_string(&mut out, &header.recorder);
    put_string(&mut out, &header.recorder_version);
    put_varint(&mut out, header.page_size_bytes);
    // fixed-width, the header's last bytes, so that the recorder can write them once the
    // records are counted (set_native_run)
    out.extend_from_slice(&header.native_user_ns.to_le_bytes());
    out.extend_from_slice(&header.instructions.to_le_bytes());
    out
}
