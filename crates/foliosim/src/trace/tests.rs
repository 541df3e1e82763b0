//! The encoding: round trips, every malformed input an error with its offset, and the size a
//! realistic trace takes.

use proptest::prelude::*;

use super::*;

fn header() -> Header {
    Header {
        program: "/usr/bin/python3".into(),
        args: vec!["-c".into(), "print(1)".into()],
        recorder: "foliotrace".into(),
        recorder_version: "0.1.0".into(),
        page_size_bytes: 4096,
        ..Default::default()
    }
}

fn encode(header: &Header, entries: &[Entry]) -> Vec<u8> {
    let mut writer = TraceWriter::new(Vec::new(), header).unwrap();
    for entry in entries {
        writer.push(entry).unwrap();
    }
    writer.finish().unwrap()
}

fn decode(bytes: &[u8]) -> Result<(Header, Vec<Entry>), TraceError> {
    let mut reader = TraceReader::new(bytes, "t.trace")?;
    let mut entries = Vec::new();
    while let Some(entry) = reader.next_entry()? {
        entries.push(entry);
    }
    Ok((reader.header().clone(), entries))
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

/// One entry of every kind, and accesses taking every encoding of their tag.
fn every_kind() -> Vec<Entry> {
    vec![
        Entry::Event(Event::Mmap {
            thread: 0,
            addr: 0x7f00_0000_0000,
            len_bytes: 1 << 30,
            prot: 3,
            flags: 0x22,
            file: None,
        }),
        Entry::Event(Event::File {
            id: 0,
            path: "/tmp/data é".into(),
            size_bytes: 123_456_789,
        }),
        Entry::Event(Event::Mmap {
            thread: 0,
            addr: 0x7f10_0000_0000,
            len_bytes: 8192,
            prot: 1,
            flags: 0x02,
            file: Some((0, 4096)),
        }),
        access(0, 0x7_f000_0000, false, 1, 0),
        access(0, 0x7_f000_0001, true, 7, 12),
        access(0, 0x7_f000_0000, false, 1, 1 << 40),
        access(0, 0x7_f000_0000, true, u32::MAX, u64::MAX),
        access(0, 5, false, 1, 3),
        access(0, u64::MAX, false, 1, 3),
        access(0, 0, false, 1, 3),
        Entry::Event(Event::Clone {
            thread: 0,
            child: 1,
        }),
        access(1, 0x7_f000_0002, false, 2, 0),
        access(0, 0x7_f000_0001, false, 1, 0),
        access(1, 0x7_f000_0003, false, 1, 0),
        Entry::Event(Event::Fork {
            thread: 1,
            child: u32::MAX,
        }),
        access(u32::MAX, 9, true, 1, 9),
        Entry::Event(Event::Munmap {
            thread: 0,
            addr: 0x7f10_0000_0000,
            len_bytes: 8192,
        }),
        Entry::Event(Event::Mremap {
            thread: 0,
            old_addr: 0x7f00_0000_0000,
            old_len_bytes: 4096,
            new_addr: 0x7e00_0000_0000,
            new_len_bytes: 1 << 21,
            flags: 3,
        }),
        Entry::Event(Event::Brk {
            thread: 0,
            old_end: 0x55_0000,
            new_end: 0x56_0000,
        }),
        Entry::Event(Event::Mprotect {
            thread: 0,
            addr: 0x55_0000,
            len_bytes: 4096,
            prot: 0,
        }),
        Entry::Event(Event::Madvise {
            thread: 1,
            addr: 0x55_0000,
            len_bytes: 4096,
            advice: 4,
        }),
        Entry::Event(Event::Read {
            thread: 0,
            file: 0,
            offset_bytes: 0,
            len_bytes: 65536,
        }),
        Entry::Event(Event::Write {
            thread: 1,
            file: 0,
            offset_bytes: 1 << 33,
            len_bytes: 1,
        }),
        Entry::Event(Event::Fadvise {
            thread: 0,
            file: 0,
            offset_bytes: 0,
            len_bytes: 0,
            advice: 2,
        }),
        Entry::Event(Event::Exit { thread: 1 }),
        Entry::Event(Event::Exit { thread: 0 }),
    ]
}

#[test]
fn every_entry_kind_round_trips() {
    let entries = every_kind();
    let (read_header, read_entries) = decode(&encode(&header(), &entries)).unwrap();
    assert_eq!(read_header, header());
    assert_eq!(read_entries, entries);
}

#[test]
fn an_empty_trace_round_trips_and_ends_once() {
    let bytes = encode(&Header::default_with_page_size(65536), &[]);
    let mut reader = TraceReader::new(&bytes[..], "t.trace").unwrap();
    assert_eq!(reader.header().page_size_bytes, 65536);
    assert_eq!(reader.next_entry(), Ok(None));
    assert_eq!(reader.next_entry(), Ok(None));
}

#[test]
fn a_trace_reads_from_a_file() {
    let dir = tempfile_dir();
    let path = dir.join("t.trace");
    std::fs::write(&path, encode(&header(), &every_kind())).unwrap();
    let mut reader = TraceReader::open(&path).unwrap();
    let mut n = 0;
    while reader.next_entry().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, every_kind().len());
    let e = TraceReader::open(&dir.join("missing.trace")).err().unwrap();
    assert!(e.message.starts_with("cannot open"), "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "foliosim-trace-test-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

impl Header {
    fn default_with_page_size(page_size_bytes: u64) -> Header {
        Header {
            page_size_bytes,
            ..Header::default()
        }
    }
}

#[test]
fn the_writer_refuses_what_it_cannot_encode() {
    let mut writer = TraceWriter::new(Vec::new(), &header()).unwrap();
    let e = writer.push(&access(0, 1, false, 0, 0)).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    let e = TraceWriter::new(Vec::new(), &Header::default_with_page_size(3))
        .err()
        .unwrap();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
}

#[test]
fn an_unfinished_writer_leaves_a_truncated_trace() {
    let mut out = Vec::new();
    {
        let mut writer = TraceWriter::new(&mut out, &header()).unwrap();
        for i in 0..100_000u64 {
            writer
                .push(&access(0, i * 7919 % 100_003, false, 1, i))
                .unwrap();
        }
        // dropped without finish: whatever reached `out` must not read as a whole trace
    }
    assert!(decode(&out).is_err());
}

/// Every prefix of a trace is an error, never a panic, and never a shorter trace.
#[test]
fn every_truncation_is_an_error() {
    let bytes = encode(&header(), &every_kind());
    for len in 0..bytes.len() {
        let e = decode(&bytes[..len]).expect_err(&format!("a trace cut at {len} bytes reads"));
        assert_eq!(e.file, "t.trace");
        assert!(e.offset <= 16 + 64 + 1000, "cut at {len}: {e}");
    }
}

/// The preamble's bytes: a real trace's, up to its compressed stream.
fn preamble() -> Vec<u8> {
    let bytes = encode(&header(), &[]);
    let header_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    bytes[..16 + header_len].to_vec()
}

/// A trace whose decompressed records are exactly `records`.
fn with_records(records: &[u8]) -> Vec<u8> {
    let mut bytes = preamble();
    bytes.extend(zstd::encode_all(records, 3).unwrap());
    bytes
}

fn error_of(bytes: &[u8]) -> TraceError {
    decode(bytes).expect_err("malformed input reads")
}

#[test]
fn malformed_preambles_name_their_offset() {
    let good = encode(&header(), &[]);
    let e = error_of(b"PK\x03\x04 not a trace at all");
    assert_eq!(e.offset, 0);
    assert!(e.message.contains("magic"), "{e}");
    let e = error_of(&good[..5]);
    assert_eq!(e.offset, 5);
    assert!(e.message.starts_with("truncated preamble"), "{e}");
    assert_eq!(error_of(b"").offset, 0);

    let mut bad = good.clone();
    bad[8] = 4;
    let e = error_of(&bad);
    assert_eq!(
        (e.offset, e.message.as_str()),
        (8, "expected format version 1 to 3, found version 4")
    );

    let mut bad = good.clone();
    bad[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(error_of(&bad).offset, 12);

    // the header says a page size of 4096 as two varint bytes before its 16 fixed-width bytes
    // (native user time, instruction total): make it 4095
    let header_len = u32::from_le_bytes(good[12..16].try_into().unwrap()) as u64;
    let mut bad = good.clone();
    let last = (16 + header_len - 18) as usize;
    assert_eq!(&bad[last..last + 2], &[0x80, 0x20]);
    bad[last] = 0xff;
    bad[last + 1] = 0x1f;
    let e = error_of(&bad);
    assert_eq!(e.offset, 16 + header_len - 18);
    assert!(e.message.contains("power of two"), "{e}");
    assert_eq!(
        e.to_string(),
        format!(
            "t.trace: byte {}: header: expected a page size that is a power of two, found 4095",
            16 + header_len - 18
        )
    );
    // a version-3 header cut in its fixed-width fields
    let mut bad = good[..16 + header_len as usize - 4].to_vec();
    bad[12..16].copy_from_slice(&(header_len as u32 - 4).to_le_bytes());
    bad.extend(&good[16 + header_len as usize..]);
    let e = error_of(&bad);
    assert_eq!(e.offset, 16 + header_len - 8);
    assert!(e.message.contains("instruction total (8 bytes)"), "{e}");
}

#[test]
fn malformed_records_name_their_offset_in_the_records() {
    let start = preamble().len() as u64;
    let cases: &[(&[u8], u64, &str)] = &[
        (&[], 0, "truncated trace"),
        (&[0x0e], 0, "expected a record tag (0x00 to 0x0d"),
        (&[0x7f], 0, "found 0x7f"),
        (&[0xc0], 0, "reserved"),
        // count flag with a count of 0
        (&[0xb2, 0x00], 1, "count of at least 1, found 0"),
        // a delta varint over 64 bits
        (
            &[
                0x80, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02,
            ],
            1,
            "over 64 bits",
        ),
        (
            &[
                0x80, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00,
            ],
            1,
            "over 64 bits",
        ),
        // a thread over 32 bits
        (&[0x84, 0x80, 0x80, 0x80, 0x80, 0x10], 1, "over 32 bits"),
        // the record ends inside its instructions
        (
            &[0xb8, 0x88, 0x90],
            3,
            "access record (tag at byte 81): expected its instructions, found the end",
        ),
        (
            &[0xb0, 0x88],
            2,
            "access record (tag at byte 82): expected its page delta",
        ),
        (&[0x01, 0x00, 0x00], 3, "mmap record (tag at byte"),
        (&[0x0a, 0x00, 0x03, b'a'], 4, "file record"),
        (&[0x0a, 0x00, 0x02, 0xff, 0xfe, 0x00, 0x00], 2, "UTF-8"),
        // more bytes after the end record
        (&[0x00, 0x00], 1, "after the end record"),
    ];
    for &(records, offset, text) in cases {
        let e = error_of(&with_records(records));
        assert!(
            e.message.contains(text),
            "{records:02x?}: {e} lacks {text:?}"
        );
        assert_eq!(e.offset, start + offset, "{records:02x?}: {e}");
    }
}

#[test]
fn a_corrupt_compressed_stream_is_an_error() {
    let mut bytes = encode(&header(), &every_kind());
    let start = preamble().len();
    // a flipped bit anywhere in the stream is an error (the checksum catches what decodes),
    // unless zstd ignores that bit (its frame header has an unused one)
    for at in start..bytes.len() {
        for bit in 0..8 {
            bytes[at] ^= 1 << bit;
            match decode(&bytes) {
                Err(e) => assert!(e.offset >= start as u64, "{e}"),
                Ok((_, entries)) => assert_eq!(entries, every_kind(), "flip at {at}.{bit}"),
            }
            bytes[at] ^= 1 << bit;
        }
    }
    // trailing data after the stream
    bytes.extend_from_slice(b"garbage");
    assert!(decode(&bytes).is_err());
}

/// A synthetic trace with a real program's locality: four threads, each walking its own array
/// mostly page after page, with a jump every so often and a hot page revisited; small counts
/// and instruction gaps.
fn synthetic(records: usize) -> Vec<Entry> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut cursor = [0x7_f000_0000u64, 0x7_f100_0000, 0x7_f200_0000, 0x55_0000];
    let mut entries = Vec::with_capacity(records);
    let mut thread = 0usize;
    for _ in 0..records {
        let r = next();
        if r.is_multiple_of(50) {
            thread = (r >> 8) as usize % 4;
        }
        let page = match r % 16 {
            0 => {
                cursor[thread] += (r >> 20) % 4096;
                cursor[thread]
            }
            1 | 2 => 0x55_0000 + (r >> 20) % 8, // the heap's hot pages
            _ => {
                cursor[thread] += 1;
                cursor[thread]
            }
        };
        entries.push(access(
            thread as u32,
            page,
            r >> 40 & 3 == 0,
            1 + (r >> 32) as u32 % 64,
            50 + (r >> 44) % 400,
        ));
    }
    entries
}

#[test]
fn a_realistic_trace_takes_a_few_bytes_a_record() {
    let entries = synthetic(200_000);
    let bytes = encode(&header(), &entries);
    let per_record = bytes.len() as f64 / entries.len() as f64;
    println!("synthetic trace: {per_record:.2} bytes/record");
    assert!(per_record < 4.0, "{per_record} bytes/record");
    assert_eq!(decode(&bytes).unwrap().1, entries);
}

fn any_entry() -> impl Strategy<Value = Entry> {
    let thread = prop_oneof![0u32..4, any::<u32>()];
    let page = prop_oneof![0u64..64, any::<u64>()];
    let access = (thread.clone(), page, any::<bool>(), 1u32.., any::<u64>()).prop_map(
        |(thread, page, write, count, instructions)| {
            Entry::Access(Access {
                thread,
                page,
                write,
                count,
                instructions,
            })
        },
    );
    let event = (
        thread,
        any::<u64>(),
        any::<u64>(),
        any::<u32>(),
        0usize..13,
        ".{0,8}",
    )
        .prop_map(|(thread, a, b, c, kind, path)| {
            Entry::Event(match kind {
                0 => Event::Mmap {
                    thread,
                    addr: a,
                    len_bytes: b,
                    prot: c,
                    flags: c ^ 0x22,
                    file: (c % 2 == 0).then_some((c, a ^ b)),
                },
                1 => Event::Munmap {
                    thread,
                    addr: a,
                    len_bytes: b,
                },
                2 => Event::Mremap {
                    thread,
                    old_addr: a,
                    old_len_bytes: b,
                    new_addr: b,
                    new_len_bytes: a,
                    flags: c,
                },
                3 => Event::Brk {
                    thread,
                    old_end: a,
                    new_end: b,
                },
                4 => Event::Mprotect {
                    thread,
                    addr: a,
                    len_bytes: b,
                    prot: c,
                },
                5 => Event::Madvise {
                    thread,
                    addr: a,
                    len_bytes: b,
                    advice: c,
                },
                6 => Event::Fork { thread, child: c },
                7 => Event::Clone { thread, child: c },
                8 => Event::Exit { thread },
                9 => Event::File {
                    id: c,
                    path,
                    size_bytes: a,
                },
                10 => Event::Read {
                    thread,
                    file: c,
                    offset_bytes: a,
                    len_bytes: b,
                },
                11 => Event::Fadvise {
                    thread,
                    file: c,
                    offset_bytes: a,
                    len_bytes: b,
                    advice: c,
                },
                _ => Event::Write {
                    thread,
                    file: c,
                    offset_bytes: a,
                    len_bytes: b,
                },
            })
        });
    prop_oneof![3 => access, 1 => event]
}

proptest! {
    #[test]
    fn random_entry_sequences_round_trip(entries in prop::collection::vec(any_entry(), 0..200)) {
        let (read_header, read_entries) = decode(&encode(&header(), &entries)).unwrap();
        prop_assert_eq!(read_header, header());
        prop_assert_eq!(read_entries, entries);
    }

    /// Arbitrary records never panic the reader.
    #[test]
    fn arbitrary_records_never_panic(records in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = decode(&with_records(&records));
    }

    /// Arbitrary bytes after the magic never panic the reader.
    #[test]
    fn arbitrary_files_never_panic(tail in prop::collection::vec(any::<u8>(), 0..64)) {
        let mut bytes = super::format::MAGIC.to_vec();
        bytes.extend(tail);
        let _ = decode(&bytes);
    }
}

proptest! {
    /// Runs of accesses handed over as the tool encoded them make the trace `push` makes of
    /// them one by one, byte for byte, events and accesses pushed one by one (a run length of
    /// 0, which needs the pages the runs left) between them included.
    #[test]
    fn accesses_encoded_by_the_tool_make_the_same_trace(
        entries in prop::collection::vec(any_entry(), 0..200),
        run_lengths in prop::collection::vec(0..5usize, 200),
    ) {
        let entries: Vec<Entry> = entries
            .into_iter()
            .map(|e| match e {
                Entry::Access(a) => Entry::Access(Access { thread: a.thread % 3, ..a }),
                e => e,
            })
            .collect();
        let mut writer = TraceWriter::new(Vec::new(), &header()).unwrap();
        let mut last_pages = [0u64; 3];
        let mut i = 0;
        let mut runs = run_lengths.iter().cycle();
        while i < entries.len() {
            let wanted = *runs.next().unwrap();
            let Entry::Access(first) = entries[i] else {
                writer.push(&entries[i]).unwrap();
                i += 1;
                continue;
            };
            if wanted == 0 {
                writer.push(&entries[i]).unwrap();
                last_pages[first.thread as usize] = first.page;
                i += 1;
                continue;
            }
            // a run: the next accesses of the same thread, at most as many as the run length
            let mut encoded = Vec::new();
            let mut end = i;
            while let Some(Entry::Access(a)) = entries.get(end) {
                if a.thread != first.thread || end - i == wanted {
                    break;
                }
                // as the tool encodes them: without the thread field
                let last = &mut last_pages[a.thread as usize];
                super::format::put_access(&mut encoded, a, *last, false);
                *last = a.page;
                end += 1;
            }
            writer
                .push_encoded_accesses(first.thread, last_pages[first.thread as usize], &encoded)
                .unwrap();
            i = end;
        }
        prop_assert_eq!(writer.finish().unwrap(), encode(&header(), &entries));
    }
}

/// The trace rewritten as an older version's: before version 3 the header ends at the page size.
fn as_version(bytes: &[u8], version: u32) -> Vec<u8> {
    let header_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let mut out = bytes[..16 + header_len - 16].to_vec();
    out[8..12].copy_from_slice(&version.to_le_bytes());
    out[12..16].copy_from_slice(&(header_len as u32 - 16).to_le_bytes());
    out.extend(&bytes[16 + header_len..]);
    out
}

/// A version-3 header carries the native run's user time and the instruction total, written
/// into a finished trace by set_native_run; an older trace reads them as 0 (not measured).
#[test]
fn the_native_run_is_written_into_a_finished_trace_and_older_traces_read_it_as_unmeasured() {
    let dir = std::env::temp_dir().join(format!("foliosim-native-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.trace");
    let h = Header {
        native_user_ns: 12_345,
        ..header()
    };
    let entries = [Entry::Access(Access {
        thread: 0,
        page: 7,
        write: true,
        count: 2,
        instructions: 1_000,
    })];
    std::fs::write(&path, encode(&h, &entries)).unwrap();
    crate::trace::set_native_run(&path, 12_345, 1_000).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let (read, got) = decode(&bytes).unwrap();
    assert_eq!((read.native_user_ns, read.instructions), (12_345, 1_000));
    assert_eq!(got, entries);
    let (old, got) = decode(&as_version(&bytes, 2)).unwrap();
    assert_eq!((old.native_user_ns, old.instructions), (0, 0));
    assert_eq!(got, entries);
    // only a trace of this version is patched
    std::fs::write(&path, as_version(&bytes, 2)).unwrap();
    assert!(crate::trace::set_native_run(&path, 1, 1).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Version 1 had no fadvise event: a version-1 trace holding its tag is refused, and one without
/// it still reads (traces recorded before version 2 replay as they did).
#[test]
fn a_version_1_trace_reads_without_the_fadvise_tag() {
    // fadvise: thread 0, file 0, offset 0, len 0, SEQUENTIAL; then the end record
    let records = [0x0d, 0, 0, 0, 0, 2, 0x00];
    let v2 = with_records(&records);
    let (_, entries) = decode(&v2).expect("a version-2 trace with fadvise reads");
    assert_eq!(
        entries,
        vec![Entry::Event(Event::Fadvise {
            thread: 0,
            file: 0,
            offset_bytes: 0,
            len_bytes: 0,
            advice: 2,
        })]
    );
    let v1 = as_version(&v2, 1);
    let e = error_of(&v1);
    assert!(
        e.message.contains("expected a record tag (0x00 to 0x0c"),
        "{e}"
    );
    let v1_plain = as_version(&with_records(&[0x00]), 1);
    assert!(decode(&v1_plain).is_ok());
}
