//! Plain values that a scenario names and mm/ works with: the base page size, the content
//! classes of pages, and the requests of the file read and write ops. They live here, below mm/,
//! so that the scenario layer needs nothing from the simulated kernel; mm/ re-exports them where
//! its code looks for them (mm::PAGE_SIZE, mm::folio::content, mm::filemap).

/// The base page (4 KiB): sizes of memory, swap and mappings are checked against it.
pub const PAGE_SIZE: u64 = 4096;

/// Coarse content of one 4 KiB page: what zram, zeromap and zero-subpage splitting look at.
pub mod content {
    pub const ZERO: u8 = 0;
    /// Every word the same non-zero value (a memset): zram stores it without compressing.
    pub const SAME_FILLED: u8 = 1;
    /// Zeros but one non-zero byte at the start: a scan for zeros stops at once.
    pub const SPARSE_HEAD: u8 = 2;
    /// Zeros but one non-zero byte at the end: a scan for zeros reads the whole page.
    pub const SPARSE_TAIL: u8 = 3;
    /// Other data; the value is a compressibility class 4..=255 (4 = compresses best).
    pub const DATA_DEFAULT: u8 = 128;

    /// The 8-byte words a program stores to give a page content `class`: one for a zero or
    /// sparse page (a single byte written), every word otherwise (a memset or its data).
    pub fn words_stored(class: u8) -> u64 {
        match class {
            ZERO | SPARSE_HEAD | SPARSE_TAIL => 1,
            _ => super::PAGE_SIZE / 8,
        }
    }
}

/// One FileRead operation: read() calls of `buffer_bytes` over a range of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadRequest {
    /// The file's id (mm::filemap::FileId): its index in the scenario's `[[file]]` list.
    pub file: u32,
    pub offset_bytes: u64,
    pub len_bytes: u64,
    pub buffer_bytes: u64,
}

/// One FileWrite operation: write() calls of `buffer_bytes` over a range of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteRequest {
    /// The file's id (mm::filemap::FileId): its index in the scenario's `[[file]]` list.
    pub file: u32,
    pub offset_bytes: u64,
    pub len_bytes: u64,
    pub buffer_bytes: u64,
    /// Content class of the data written (content::ZERO for zeros).
    pub data: u8,
}
