//! The byte layout shared by the writer and the reader (specified in docs/traces.md): the
//! preamble's magic, the record tags and their flag bits, varints, zigzag deltas, and the
//! per-thread state the page deltas are taken against.

use std::collections::HashMap;

use super::{Access, ThreadId};

/// The first bytes of every trace. The high byte first catches a file taken for text (as PNG's
/// does); the newline catches a line-ending conversion.
pub const MAGIC: [u8; 8] = *b"\x89FTRACE\n";

/// Bytes before the header: the magic, the version (u32 LE) and the header's length (u32 LE).
pub const PREAMBLE_FIXED_BYTES: u64 = 16;

/// A header longer than this is refused before it is read (it holds a path and arguments).
pub const MAX_HEADER_BYTES: u32 = 1 << 20;

/// A string in a record (a file's path) longer than this is refused before it is read.
pub const MAX_STRING_BYTES: u64 = 1 << 16;

/// The zstd level the writer compresses at: level 3 is zstd's default, fast enough for a
/// recorder to keep up; higher levels gain little on records this compact (docs/traces.md).
pub const ZSTD_LEVEL: i32 = 3;

// Record tags. A tag with the high bit set is an access; its low bits are flags. The other
// tags name an event; 0 ends the trace.
pub const TAG_END: u8 = 0x00;
pub const TAG_MMAP: u8 = 0x01;
pub const TAG_MUNMAP: u8 = 0x02;
pub const TAG_MREMAP: u8 = 0x03;
pub const TAG_BRK: u8 = 0x04;
pub const TAG_MPROTECT: u8 = 0x05;
pub const TAG_MADVISE: u8 = 0x06;
pub const TAG_FORK: u8 = 0x07;
pub const TAG_CLONE: u8 = 0x08;
pub const TAG_EXIT: u8 = 0x09;
pub const TAG_FILE: u8 = 0x0a;
pub const TAG_READ: u8 = 0x0b;
pub const TAG_WRITE: u8 = 0x0c;
/// Version 2 on.
pub const TAG_FADVISE: u8 = 0x0d;

pub const ACCESS: u8 = 0x80;
/// The access wrote.
pub const ACCESS_WRITE: u8 = 0x01;
/// A count varint follows (absent: the count is 1).
pub const ACCESS_COUNT: u8 = 0x02;
/// A thread varint follows (absent: the thread of the previous access).
pub const ACCESS_THREAD: u8 = 0x04;
/// An instructions varint follows (absent: 0 instructions).
pub const ACCESS_INSTRUCTIONS: u8 = 0x08;
/// Two bits: how the page follows from the thread's previous page.
pub const ACCESS_DELTA_MASK: u8 = 0x30;
/// A zigzag delta varint follows.
pub const DELTA_VARINT: u8 = 0x00;
pub const DELTA_PLUS_ONE: u8 = 0x10;
pub const DELTA_MINUS_ONE: u8 = 0x20;
pub const DELTA_ZERO: u8 = 0x30;
/// Bits no version-1 access sets; a reader refuses them.
pub const ACCESS_RESERVED: u8 = 0x40;

/// The name of an event tag, for messages.
pub fn tag_name(tag: u8) -> &'static str {
    match tag {
        TAG_END => "end",
        TAG_MMAP => "mmap",
        TAG_MUNMAP => "munmap",
        TAG_MREMAP => "mremap",
        TAG_BRK => "brk",
        TAG_MPROTECT => "mprotect",
        TAG_MADVISE => "madvise",
        TAG_FORK => "fork",
        TAG_CLONE => "clone",
        TAG_EXIT => "exit",
        TAG_FILE => "file",
        TAG_READ => "read",
        TAG_WRITE => "write",
        TAG_FADVISE => "fadvise",
        t if t & ACCESS != 0 => "access",
        _ => "unknown",
    }
}

/// Appends `value` as an unsigned LEB128 varint (7 bits a byte, low bits first).
#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Maps a signed delta to an unsigned one, small magnitudes to small numbers.
#[inline]
pub fn zigzag(delta: i64) -> u64 {
    ((delta << 1) ^ (delta >> 63)) as u64
}

#[inline]
pub fn unzigzag(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

/// Appends one access record: its page a delta from `last_page` (its thread's previous page),
/// the thread field only with `with_thread` (the T bit; the thread changed). The writer and the
/// recorder's Valgrind tool, which leaves the thread out, encode alike.
#[inline]
pub fn put_access(out: &mut Vec<u8>, access: &Access, last_page: u64, with_thread: bool) {
    let mut tag = ACCESS;
    if access.write {
        tag |= ACCESS_WRITE;
    }
    if access.count != 1 {
        tag |= ACCESS_COUNT;
    }
    if access.instructions != 0 {
        tag |= ACCESS_INSTRUCTIONS;
    }
    if with_thread {
        tag |= ACCESS_THREAD;
    }
    let delta = access.page.wrapping_sub(last_page) as i64;
    tag |= match delta {
        0 => DELTA_ZERO,
        1 => DELTA_PLUS_ONE,
        -1 => DELTA_MINUS_ONE,
        _ => DELTA_VARINT,
    };
    out.push(tag);
    if with_thread {
        put_varint(out, access.thread.into());
    }
    if tag & ACCESS_DELTA_MASK == DELTA_VARINT {
        put_varint(out, zigzag(delta));
    }
    if tag & ACCESS_COUNT != 0 {
        put_varint(out, access.count.into());
    }
    if tag & ACCESS_INSTRUCTIONS != 0 {
        put_varint(out, access.instructions);
    }
}

/// The last page each thread touched, which its next access's page is a delta from (0 before
/// its first access). The current thread's page is kept apart: most records continue the
/// current thread, and a switch is one lookup.
#[derive(Default)]
pub struct ThreadPages {
    pub thread: ThreadId,
    pub last_page: u64,
    /// Small thread ids (every real trace's) index a vector; a huge id a map, so that a
    /// corrupt id cannot make the reader allocate gigabytes.
    dense: Vec<u64>,
    sparse: HashMap<ThreadId, u64>,
}

const DENSE_THREADS: u32 = 1 << 16;

impl ThreadPages {
    /// Makes `thread` current, saving the current thread's last page.
    pub fn switch_to(&mut self, thread: ThreadId) {
        if thread == self.thread {
            return;
        }
        let (old, page) = (self.thread, self.last_page);
        *self.slot(old) = page;
        self.thread = thread;
        self.last_page = *self.slot(thread);
    }

    fn slot(&mut self, thread: ThreadId) -> &mut u64 {
        if thread < DENSE_THREADS {
            let i = thread as usize;
            if i >= self.dense.len() {
                self.dense.resize(i + 1, 0);
            }
            &mut self.dense[i]
        } else {
            self.sparse.entry(thread).or_insert(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_maps_small_deltas_to_small_numbers_and_back() {
        for (delta, code) in [(0, 0), (-1, 1), (1, 2), (-2, 3), (2, 4)] {
            assert_eq!(zigzag(delta), code);
            assert_eq!(unzigzag(code), delta);
        }
        for delta in [i64::MIN, i64::MAX, -123_456_789, 987_654_321] {
            assert_eq!(unzigzag(zigzag(delta)), delta);
        }
    }

    #[test]
    fn varints_take_seven_bits_a_byte() {
        let mut out = Vec::new();
        put_varint(&mut out, 127);
        assert_eq!(out, [0x7f]);
        out.clear();
        put_varint(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
        out.clear();
        put_varint(&mut out, u64::MAX);
        assert_eq!(out.len(), 10);
        assert_eq!(out[9], 0x01);
    }

    #[test]
    fn each_thread_keeps_its_own_last_page() {
        let mut pages = ThreadPages {
            last_page: 10,
            ..ThreadPages::default()
        };
        pages.switch_to(3);
        assert_eq!(pages.last_page, 0);
        pages.last_page = 30;
        pages.switch_to(1 << 30);
        pages.last_page = 99;
        pages.switch_to(0);
        assert_eq!(pages.last_page, 10);
        pages.switch_to(3);
        assert_eq!(pages.last_page, 30);
        pages.switch_to(1 << 30);
        assert_eq!(pages.last_page, 99);
    }
}
