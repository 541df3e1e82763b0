//! valgrind lackey's `--trace-mem=yes` output, read line by line: `I  ADDR,SIZE` for an
//! instruction fetched, ` L`, ` S` and ` M` for a data load, store and modify (a load and a store
//! of one location), the address in hex and the size in bytes in decimal. Valgrind's own lines
//! (`==PID== ...`, `--PID-- ...`) are skipped; the `Command:` line names the program.
//!
//! Instructions count the work between data accesses; their fetches are not page accesses.
//! Lackey says nothing of threads: everything is thread 0. A data access straddling two pages
//! touches both. A modify is a write.

use std::io::BufRead;

use super::{quote_line, read_line, AccessCollapser, EntrySource};
use crate::trace::{Entry, Header, TraceError};

/// The page size lackey traces are imported at (x86-64's).
pub const LACKEY_PAGE_SIZE_BYTES: u64 = 4096;

pub struct LackeyImport<R: BufRead> {
    input: R,
    file: String,
    header: Header,
    line: Vec<u8>,
    /// True when `line` holds a line read but not yet parsed (the first after the preamble).
    line_pending: bool,
    line_number: u64,
    /// The byte offset of `line` in the input, and of the line after it.
    line_offset: u64,
    next_offset: u64,
    instructions: u64,
    collapser: AccessCollapser,
    ended: bool,
}

impl<R: BufRead> LackeyImport<R> {
    /// Reads valgrind's preamble (for the command line) up to the first trace line.
    pub fn new(input: R, file_name: &str) -> Result<Self, TraceError> {
        let mut import = LackeyImport {
            input,
            file: file_name.to_string(),
            header: Header {
                program: file_name.to_string(),
                args: Vec::new(),
                recorder: "lackey".into(),
                recorder_version: String::new(),
                page_size_bytes: LACKEY_PAGE_SIZE_BYTES,
                ..Default::default()
            },
            line: Vec::new(),
            line_pending: false,
            line_number: 0,
            line_offset: 0,
            next_offset: 0,
            instructions: 0,
            collapser: AccessCollapser::new(LACKEY_PAGE_SIZE_BYTES),
            ended: false,
        };
        while import.next_line()? {
            let Some(text) = valgrind_message(&import.line) else {
                import.line_pending = true;
                break;
            };
            let text = String::from_utf8_lossy(text);
            if let Some(command) = text.strip_prefix("Command: ") {
                let mut words = split_command(command).into_iter();
                if let Some(program) = words.next() {
                    import.header.program = program;
                    import.header.args = words.collect();
                }
            } else if let Some(at) = text.find("Using Valgrind-") {
                let version = &text[at + "Using Valgrind-".len()..];
                import.header.recorder_version =
                    version.split_whitespace().next().unwrap_or("").to_string();
            }
        }
        Ok(import)
    }

    fn next_line(&mut self) -> Result<bool, TraceError> {
        self.line_offset = self.next_offset;
        let Some(len) = read_line(
            &mut self.input,
            &mut self.line,
            &self.file,
            self.line_offset,
        )?
        else {
            return Ok(false);
        };
        self.line_number += 1;
        self.next_offset = self.line_offset + len;
        Ok(true)
    }

    /// Parses lines until an entry is ready or the input ends.
    fn fill(&mut self) -> Result<(), TraceError> {
        while self.collapser.ready.is_empty() && !self.ended {
            if self.line_pending {
                self.line_pending = false;
            } else if !self.next_line()? {
                self.collapser.flush();
                self.ended = true;
                break;
            }
            self.parse_line()?;
        }
        Ok(())
    }

    fn parse_line(&mut self) -> Result<(), TraceError> {
        let line = &self.line[..];
        if line.is_empty() || valgrind_message(line).is_some() {
            return Ok(());
        }
        let (kind, rest) = match line.get(..3) {
            Some(b"I  ") => (b'I', &line[3..]),
            Some(b" L ") => (b'L', &line[3..]),
            Some(b" S ") => (b'S', &line[3..]),
            Some(b" M ") => (b'M', &line[3..]),
            _ => return Err(self.malformed()),
        };
        let Some((addr, size)) = parse_addr_size(rest) else {
            return Err(self.malformed());
        };
        if kind == b'I' {
            self.instructions += 1;
            return Ok(());
        }
        let write = kind != b'L';
        let first = addr / LACKEY_PAGE_SIZE_BYTES;
        let last = addr.saturating_add(size.max(1) - 1) / LACKEY_PAGE_SIZE_BYTES;
        let instructions = std::mem::take(&mut self.instructions);
        self.collapser.touch(0, first, write, instructions);
        if last != first {
            self.collapser.touch(0, last, write, 0);
        }
        Ok(())
    }

    fn malformed(&self) -> TraceError {
        TraceError {
            file: self.file.clone(),
            offset: self.line_offset,
            message: format!(
                "line {}: expected \"I  ADDR,SIZE\", \" L ADDR,SIZE\", \" S ADDR,SIZE\" or \" M ADDR,SIZE\" (a hex address, a decimal size), found {}",
                self.line_number,
                quote_line(&self.line)
            ),
        }
    }
}

impl<R: BufRead> EntrySource for LackeyImport<R> {
    fn header(&self) -> &Header {
        &self.header
    }

    fn next_entry(&mut self) -> Result<Option<Entry>, TraceError> {
        self.fill()?;
        Ok(self.collapser.ready.pop_front())
    }
}

/// The text of a line valgrind itself wrote (`==PID== text`, `--PID-- text`), None for others.
fn valgrind_message(line: &[u8]) -> Option<&[u8]> {
    let marker = match line.first() {
        Some(b'=') => b"==",
        Some(b'-') => b"--",
        _ => return None,
    };
    let rest = line.strip_prefix(marker)?;
    let end = rest.windows(2).position(|w| w == marker)?;
    let text = &rest[end + 2..];
    Some(text.strip_prefix(b" ").unwrap_or(text))
}

/// valgrind's `Command:` line: argv joined by spaces, a space inside an argument escaped as
/// `\ ` (and a backslash as `\\`).
fn split_command(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => word.extend(chars.next()),
            ' ' => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            _ => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// "04016f10,3" → (0x4016f10, 3).
fn parse_addr_size(text: &[u8]) -> Option<(u64, u64)> {
    let comma = text.iter().position(|&b| b == b',')?;
    let (addr, size) = (&text[..comma], &text[comma + 1..]);
    if addr.is_empty() || size.is_empty() || addr.len() > 16 || size.len() > 19 {
        return None;
    }
    let mut address = 0u64;
    for &b in addr {
        address = address << 4 | char::from(b).to_digit(16)? as u64;
    }
    let mut bytes = 0u64;
    for &b in size {
        bytes = bytes * 10 + char::from(b).to_digit(10)? as u64;
    }
    Some((address, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Access, Event};

    const FIXTURE: &str = "==3877== Lackey, an example Valgrind tool
==3877== Using Valgrind-3.19.0 and LibVEX; rerun with -h for copyright info
==3877== Command: /bin/prog -x data.bin
==3877== 
I  0401ab70,3
I  0401ab73,5
 S 1fff000758,8
I  0401b770,1
 L 1fff000750,8
 M 1fff000010,4
I  0401b771,7
I  0401b778,7
 L 00600ffe,4
--3877-- a warning valgrind printed
 L 00601000,8
==3877== Counted 0 calls to main()
";

    fn entries_of(text: &str) -> Result<(Header, Vec<Entry>), TraceError> {
        let mut import = LackeyImport::new(text.as_bytes(), "lackey.txt")?;
        let mut entries = Vec::new();
        while let Some(e) = import.next_entry()? {
            entries.push(e);
        }
        Ok((import.header().clone(), entries))
    }

    fn mmap(addr: u64) -> Entry {
        Entry::Event(Event::Mmap {
            thread: 0,
            addr,
            len_bytes: 2 << 20,
            prot: 3,
            flags: 0x22,
            file: None,
        })
    }

    fn access(page: u64, write: bool, count: u32, instructions: u64) -> Entry {
        Entry::Access(Access {
            thread: 0,
            page,
            write,
            count,
            instructions,
        })
    }

    #[test]
    fn a_lackey_trace_becomes_collapsed_page_records() {
        let (header, entries) = entries_of(FIXTURE).unwrap();
        assert_eq!(header.program, "/bin/prog");
        assert_eq!(header.args, ["-x", "data.bin"]);
        assert_eq!(header.recorder, "lackey");
        assert_eq!(header.recorder_version, "3.19.0");
        assert_eq!(header.page_size_bytes, 4096);
        assert_eq!(
            entries,
            [
                mmap(0x1fff000000),
                // the store, the load after 1 instruction and the modify: one page, a write,
                // with the instructions before the first
                access(0x1fff000, true, 3, 2),
                mmap(0x600000),
                // 4 bytes at 0x600ffe straddle two pages; the next load is on the second. The
                // instruction between the collapsed store and load counts here: 1 + 2
                access(0x600, false, 1, 3),
                access(0x601, false, 2, 0),
            ]
        );
    }

    #[test]
    fn the_command_line_keeps_escaped_spaces() {
        assert_eq!(
            split_command(r"/usr/bin/python3 -c d=1;\ print(d)  x\\y"),
            ["/usr/bin/python3", "-c", "d=1; print(d)", r"x\y"]
        );
    }

    #[test]
    fn work_between_collapsed_accesses_goes_to_the_next_record() {
        let text = " L 1000,8\nI  400000,4\nI  400004,4\n L 1008,8\nI  400008,4\n S 2000,8\n";
        let (_, entries) = entries_of(text).unwrap();
        assert_eq!(
            entries[1..],
            [access(1, false, 2, 0), access(2, true, 1, 3)]
        );
    }

    #[test]
    fn a_malformed_line_names_its_line_and_byte_offset() {
        let text = "==1== Command: x\n L 1000,8\n X 1000,8\n";
        let e = entries_of(text).unwrap_err();
        assert_eq!(e.file, "lackey.txt");
        assert_eq!(e.offset, 27);
        assert!(e.message.starts_with("line 3: expected"), "{e}");
        assert!(e.message.contains("found \" X 1000,8\""), "{e}");
        for bad in [
            " L 10g0,8",
            " L 1000",
            " L ,8",
            " L 1000,",
            " L 1000,8x",
            "I 1000,8",
        ] {
            let e = entries_of(&format!(" S 0,1\n{bad}\n")).unwrap_err();
            assert_eq!((e.offset, &e.message[..7]), (7, "line 2:"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_trace_without_data_accesses_has_no_entries() {
        assert_eq!(entries_of("I  400000,4\n").unwrap().1, []);
        assert_eq!(entries_of("").unwrap().1, []);
    }
}
