//! Trace decoding speed: `cargo bench -p foliosim --bench trace` (criterion).
//!
//! A synthetic trace of 2 M accesses with a program's locality (four threads each walking its
//! own array page after page, a jump every 16 records, a few hot heap pages; counts 1 to 64 and
//! 50 to 450 instructions between records) is encoded once in memory; criterion measures
//! decoding it whole with TraceReader (decompression included) as Throughput::Elements, i.e.
//! records/s. Target: well over 20 M records/s, so that replay (>= 10 M records/s) spends
//! under half its time decoding. The encoded size (bytes/record) is printed first.

use criterion::{Criterion, Throughput};
use foliosim::trace::{Access, Entry, Header, TraceReader, TraceWriter};

const RECORDS: usize = 2_000_000;

fn synthetic_trace() -> Vec<u8> {
    let header = Header {
        program: "synthetic".into(),
        args: Vec::new(),
        recorder: "bench".into(),
        recorder_version: "1".into(),
        page_size_bytes: 4096,
        ..Default::default()
    };
    let mut writer = TraceWriter::new(Vec::new(), &header).unwrap();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut cursor = [0x7_f000_0000u64, 0x7_f100_0000, 0x7_f200_0000, 0x55_0000];
    let mut thread = 0usize;
    for _ in 0..RECORDS {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let r = state;
        if r.is_multiple_of(50) {
            thread = (r >> 8) as usize % 4;
        }
        let page = match r % 16 {
            0 => {
                cursor[thread] += (r >> 20) % 4096;
                cursor[thread]
            }
            1 | 2 => 0x55_0000 + (r >> 20) % 8,
            _ => {
                cursor[thread] += 1;
                cursor[thread]
            }
        };
        writer
            .push(&Entry::Access(Access {
                thread: thread as u32,
                page,
                write: r >> 40 & 3 == 0,
                count: 1 + (r >> 32) as u32 % 64,
                instructions: 50 + (r >> 44) % 400,
            }))
            .unwrap();
    }
    writer.finish().unwrap()
}

fn main() {
    let bytes = synthetic_trace();
    println!(
        "synthetic trace: {} records, {} bytes, {:.2} bytes/record",
        RECORDS,
        bytes.len(),
        bytes.len() as f64 / RECORDS as f64
    );
    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("trace");
    group.throughput(Throughput::Elements(RECORDS as u64));
    group.sample_size(20);
    group.bench_function("decode", |b| {
        b.iter(|| {
            let mut reader = TraceReader::new(&bytes[..], "bench").unwrap();
            let mut pages = 0u64;
            while let Some(entry) = reader.next_entry().unwrap() {
                if let Entry::Access(a) = entry {
                    pages = pages.wrapping_add(a.page);
                }
            }
            pages
        })
    });
    // the share of zstd alone: the records decompressed into a sink
    let header_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let stream = &bytes[16 + header_len..];
    group.bench_function("decompress_only", |b| {
        b.iter(|| zstd::stream::copy_decode(stream, std::io::sink()).unwrap())
    });
    group.finish();
    c.final_summary();
}
