//! DAMON records as `damo record` writes them: its `json` file type (a JSON list of records)
//! or `json_compressed` (the same text, zlib-compressed; damo's default). A record monitors one
//! target (a process, or physical memory) and holds snapshots, one per aggregation interval:
//! the target's regions, each with `nr_accesses.samples`, the number of sampling intervals of
//! that aggregation interval in which DAMON found the region's sampled page accessed.
//!
//! Replay (docs/traces.md says what it approximates): DAMON assumes the pages of a region are
//! accessed alike, so every page of a region with n samples is touched n times in its
//! aggregation interval, the touches spread evenly over the N sampling intervals, in an order
//! scrambled by a seeded bijection (different for every region and snapshot). DAMON cannot tell
//! reads from writes: every touch is a write, so that anonymous memory is really allocated (a
//! read of a never-written page would map the zero page). Target i is thread i of process i,
//! forked from thread 0 before the first snapshot.
//!
//! The record is parsed whole (it is region-level: a few numbers per region and snapshot); the
//! page accesses it expands to are streamed.

use std::io::Read;

use serde::Deserialize;

use super::{AccessCollapser, EntrySource};
use crate::trace::{Entry, Event, Header, ThreadId, TraceError};

/// The page size DAMON records are replayed at (x86-64's).
pub const DAMO_PAGE_SIZE_BYTES: u64 = 4096;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DamoOptions {
    /// Seeds the order in which a region's pages are touched.
    pub seed: u64,
    /// A region with more pages touches only this many per pass (a seeded sample, different
    /// every snapshot), to bound the trace of a large target; None touches every page.
    pub max_pages_per_region: Option<u64>,
    /// The work, in instructions per microsecond of the sampling interval, charged to the first
    /// touch of each sampling interval; 0 leaves DAMON's time out of the trace.
    pub instructions_per_us: u64,
}

impl Default for DamoOptions {
    fn default() -> Self {
        DamoOptions {
            seed: 1,
            max_pages_per_region: None,
            instructions_per_us: 0,
        }
    }
}

pub struct DamoImport {
    header: Header,
    options: DamoOptions,
    records: Vec<Record>,
    /// (record, snapshot) in the order they are replayed: by end time, then record.
    order: Vec<(usize, usize)>,
    next_snapshot: usize,
    collapser: AccessCollapser,
    rng: SplitMix64,
    started: bool,
}

impl DamoImport {
    /// Reads and checks the whole record file (JSON, or zlib-compressed JSON).
    pub fn new(
        mut input: impl Read,
        file_name: &str,
        options: DamoOptions,
    ) -> Result<Self, TraceError> {
        let error = |offset: u64, message: String| TraceError {
            file: file_name.to_string(),
            offset,
            message,
        };
        let mut bytes = Vec::new();
        input
            .read_to_end(&mut bytes)
            .map_err(|e| error(0, format!("cannot read: {e}")))?;
        // zlib's first byte says deflate with a window of at most 32 KiB (0x78 for damo's)
        let (text, what) = if bytes.first().is_some_and(|&b| b & 0x0f == 8 && b >> 4 <= 7) {
            let mut text = Vec::new();
            flate2::read::ZlibDecoder::new(&bytes[..])
                .read_to_end(&mut text)
                .map_err(|e| {
                    error(
                        0,
                        format!("expected damo's json_compressed (zlib) data, found a corrupt or truncated stream ({e})"),
                    )
                })?;
            (text, "the decompressed JSON")
        } else {
            (bytes, "the JSON")
        };
        let records: Vec<Record> = serde_json::from_slice(&text).map_err(|e| {
            let offset = byte_offset(&text, e.line(), e.column());
            error(
                offset,
                format!(
                    "expected damo's record list (line {} column {} of {what}): {}",
                    e.line(),
                    e.column(),
                    strip_position(&e.to_string())
                ),
            )
        })?;
        if records.is_empty() {
            return Err(error(
                0,
                "expected at least one DAMON record, found an empty list".into(),
            ));
        }
        let mut order: Vec<(usize, usize)> = records
            .iter()
            .enumerate()
            .flat_map(|(r, record)| (0..record.snapshots.len()).map(move |s| (r, s)))
            .collect();
        order.sort_by_key(|&(r, s)| (records[r].snapshots[s].end_time, r));
        let target_count = records.len();
        Ok(DamoImport {
            header: Header {
                program: file_name.to_string(),
                args: Vec::new(),
                recorder: "damo".into(),
                recorder_version: format!("{target_count} target(s)"),
                page_size_bytes: DAMO_PAGE_SIZE_BYTES,
                ..Default::default()
            },
            rng: SplitMix64(options.seed),
            options,
            records,
            order,
            next_snapshot: 0,
            collapser: AccessCollapser::new(DAMO_PAGE_SIZE_BYTES),
            started: false,
        })
    }

    /// Expands the next snapshot into entries.
    fn replay_snapshot(&mut self, record_index: usize, snapshot_index: usize) {
        let record = &self.records[record_index];
        let snapshot = &record.snapshots[snapshot_index];
        let thread = record_index as ThreadId;
        // a fake snapshot (damo's marker of a record's end time) has no accesses
        let regions: Vec<&Region> = snapshot
            .regions
            .iter()
            .filter(|r| r.samples > 0 && r.end > r.start)
            .collect();
        let intervals = match &record.intervals {
            Some(i) => i.samples_per_aggregation(),
            // without the intervals, the busiest region says how many samples there were
            None => regions.iter().map(|r| r.samples).max().unwrap_or(1).max(1),
        };
        let sample_us = record.intervals.as_ref().map_or(0, |i| i.sample_us);
        // per region: its first page, its pages touched per pass, the passes, the bijection
        let plans: Vec<RegionPlan> = regions
            .iter()
            .map(|r| {
                let first_page = r.start / DAMO_PAGE_SIZE_BYTES;
                let pages = (r.end - 1) / DAMO_PAGE_SIZE_BYTES - first_page + 1;
                let touched = self
                    .options
                    .max_pages_per_region
                    .map_or(pages, |m| m.min(pages));
                RegionPlan {
                    first_page,
                    pages,
                    touched,
                    passes: r.samples.min(intervals),
                    stride: coprime_stride(pages, self.rng.next()),
                    phase: self.rng.next() % pages,
                }
            })
            .collect();
        for k in 0..intervals {
            let mut work = self.options.instructions_per_us.saturating_mul(sample_us);
            for plan in &plans {
                let total = plan.touched * plan.passes;
                let from = mul_div(total, k, intervals);
                let to = mul_div(total, k + 1, intervals);
                for t in from..to {
                    let i = t % plan.touched;
                    let page =
                        plan.first_page + mul_add_mod(i, plan.stride, plan.phase, plan.pages);
                    self.collapser
                        .touch(thread, page, true, std::mem::take(&mut work));
                }
            }
        }
    }
}

impl EntrySource for DamoImport {
    fn header(&self) -> &Header {
        &self.header
    }

    fn next_entry(&mut self) -> Result<Option<Entry>, TraceError> {
        if !self.started {
            self.started = true;
            for child in 1..self.records.len() {
                self.collapser.event(Event::Fork {
                    thread: 0,
                    child: child as ThreadId,
                });
            }
        }
        while self.collapser.ready.is_empty() {
            let Some(&(r, s)) = self.order.get(self.next_snapshot) else {
                self.collapser.flush();
                break;
            };
            self.next_snapshot += 1;
            self.replay_snapshot(r, s);
        }
        Ok(self.collapser.ready.pop_front())
    }
}

struct RegionPlan {
    first_page: u64,
    pages: u64,
    touched: u64,
    passes: u64,
    stride: u64,
    phase: u64,
}

/// A stride coprime with `pages`, so that i → (i × stride + phase) mod pages visits every page
/// once per pass.
fn coprime_stride(pages: u64, random: u64) -> u64 {
    if pages <= 2 {
        return 1;
    }
    let mut stride = random % pages;
    loop {
        if stride != 0 && gcd(stride, pages) == 1 {
            return stride;
        }
        stride = (stride + 1) % pages;
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

fn mul_add_mod(i: u64, stride: u64, phase: u64, modulus: u64) -> u64 {
    ((u128::from(i) * u128::from(stride) + u128::from(phase)) % u128::from(modulus)) as u64
}

fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    (u128::from(a) * u128::from(b) / u128::from(c)) as u64
}

/// The seeded generator (SplitMix64): small, and the same on every platform.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// The byte offset of a 1-based line and column in `text`.
fn byte_offset(text: &[u8], line: usize, column: usize) -> u64 {
    let line_start: usize = text
        .split(|&b| b == b'\n')
        .take(line.saturating_sub(1))
        .map(|l| l.len() + 1)
        .sum();
    (line_start + column.saturating_sub(1)).min(text.len()) as u64
}

/// serde_json's message without its " at line L column C" (the error says it already).
fn strip_position(message: &str) -> &str {
    message
        .find(" at line ")
        .map_or(message, |at| &message[..at])
}

/// A record of damo's list: the fields replay uses (the others are ignored).
#[derive(Deserialize)]
struct Record {
    #[serde(default)]
    intervals: Option<Intervals>,
    snapshots: Vec<Snapshot>,
}

#[derive(Deserialize)]
#[serde(try_from = "RawIntervals")]
struct Intervals {
    sample_us: u64,
    aggr_us: u64,
}

impl Intervals {
    /// N: the sampling intervals in an aggregation interval.
    fn samples_per_aggregation(&self) -> u64 {
        (self.aggr_us / self.sample_us).max(1)
    }
}

#[derive(Deserialize)]
struct RawIntervals {
    sample_us: Number,
    aggr_us: Number,
}

impl TryFrom<RawIntervals> for Intervals {
    type Error = String;
    fn try_from(raw: RawIntervals) -> Result<Self, String> {
        let (sample_us, aggr_us) = (raw.sample_us.0, raw.aggr_us.0);
        if sample_us <= 0 || aggr_us < sample_us {
            return Err(format!(
                "intervals: expected 0 < sample_us <= aggr_us, found sample_us {sample_us}, aggr_us {aggr_us}"
            ));
        }
        Ok(Intervals {
            sample_us: sample_us as u64,
            aggr_us: aggr_us as u64,
        })
    }
}

#[derive(Deserialize)]
struct Snapshot {
    end_time: Number,
    regions: Vec<Region>,
}

#[derive(Deserialize)]
#[serde(try_from = "RawRegion")]
struct Region {
    start: u64,
    end: u64,
    /// 0 for a region without an access count (or damo's fake region, -1)
    samples: u64,
}

#[derive(Deserialize)]
struct RawRegion {
    start: Number,
    end: Number,
    #[serde(default)]
    nr_accesses: Option<RawNrAccesses>,
}

#[derive(Deserialize)]
struct RawNrAccesses {
    #[serde(default)]
    samples: Option<Number>,
}

impl TryFrom<RawRegion> for Region {
    type Error = String;
    fn try_from(raw: RawRegion) -> Result<Self, String> {
        let (start, end) = (raw.start.0, raw.end.0);
        if start < 0 || end < start || end > i128::from(u64::MAX) {
            return Err(format!(
                "region: expected 0 <= start <= end < 2^64, found start {start}, end {end}"
            ));
        }
        let samples = raw.nr_accesses.and_then(|n| n.samples).map_or(0, |n| n.0);
        if samples < -1 || samples > i128::from(u32::MAX) {
            return Err(format!(
                "region: expected nr_accesses.samples from 0 to 2^32 (-1 in a fake snapshot), found {samples}"
            ));
        }
        Ok(Region {
            start: start as u64,
            end: end as u64,
            samples: samples.max(0) as u64,
        })
    }
}

/// A number as damo writes it: a JSON integer or a string of decimal digits (its "raw" form).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Number(i128);

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Number;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an integer or a string of decimal digits")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Number, E> {
                Ok(Number(v.into()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Number, E> {
                Ok(Number(v.into()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Number, E> {
                if v.fract() == 0.0 && v.abs() < 1e38 {
                    Ok(Number(v as i128))
                } else {
                    Err(E::custom(format!("expected an integer, found {v}")))
                }
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Number, E> {
                v.trim()
                    .parse::<i128>()
                    .map(Number)
                    .map_err(|_| E::custom(format!("expected an integer, found {v:?}")))
            }
        }
        d.deserialize_any(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::io::Write;

    use super::*;
    use crate::trace::Access;

    /// Two targets; N = 20000 / 5000 = 4 sampling intervals an aggregation interval. Target 0:
    /// a region of 4 pages found accessed in 2 samples, one of 2 pages never accessed; then a
    /// fake snapshot. Target 1: one page in every sample. Numbers in both of damo's forms.
    const FIXTURE: &str = r#"[
    {
        "kdamond_idx": 0, "context_idx": 0,
        "intervals": {"sample_us": "5000", "aggr_us": "20000", "ops_update_us": "1000000"},
        "scheme_idx": null, "target_id": 0, "scheme_filters": [],
        "snapshots": [
            {"start_time": "1000", "end_time": "21000", "regions": [
                {"start": "4194304", "end": "4210688",
                 "nr_accesses": {"samples": 2, "percent": null},
                 "age": {"usec": null, "aggr_intervals": 3}, "probe_hits": [], "sz_filter_passed": "0"},
                {"start": 8388608, "end": 8396800, "nr_accesses": {"samples": 0, "percent": null},
                 "age": {"usec": null, "aggr_intervals": 0}}
            ], "total_bytes": "24576", "damos_stats": null, "sample_interval_us": null},
            {"start_time": "21000", "end_time": "41000", "regions": [
                {"start": 0, "end": 0, "nr_accesses": {"samples": -1, "percent": null},
                 "age": {"usec": null, "aggr_intervals": -1}}
            ]}
        ],
        "data_source": "unknown"
    },
    {
        "intervals": {"sample_us": 5000, "aggr_us": 20000, "ops_update_us": 1000000},
        "target_id": 1,
        "snapshots": [
            {"start_time": "2000", "end_time": "22000", "regions": [
                {"start": "12288", "end": "16384", "nr_accesses": {"samples": 4}}
            ]}
        ]
    }
]"#;

    fn entries_of(bytes: &[u8], seed: u64) -> Result<Vec<Entry>, TraceError> {
        let options = DamoOptions {
            seed,
            ..DamoOptions::default()
        };
        let mut import = DamoImport::new(bytes, "damon.json", options)?;
        assert_eq!(import.header().recorder, "damo");
        let mut entries = Vec::new();
        while let Some(e) = import.next_entry()? {
            entries.push(e);
        }
        Ok(entries)
    }

    fn touches(entries: &[Entry]) -> HashMap<(ThreadId, u64), u32> {
        let mut count = HashMap::new();
        for e in entries {
            if let Entry::Access(a) = e {
                assert!(a.write);
                *count.entry((a.thread, a.page)).or_default() += a.count;
            }
        }
        count
    }

    #[test]
    fn every_page_of_a_region_is_touched_as_often_as_damon_sampled_it() {
        let entries = entries_of(FIXTURE.as_bytes(), 7).unwrap();
        assert_eq!(
            entries[0],
            Entry::Event(Event::Fork {
                thread: 0,
                child: 1
            })
        );
        let expected: HashMap<(ThreadId, u64), u32> = (1024..1028)
            .map(|page| ((0, page), 2))
            .chain([((1, 3), 4)])
            .collect();
        assert_eq!(touches(&entries), expected);
        // target 0's snapshot ended first: all its touches come before target 1's
        let threads: Vec<ThreadId> = entries
            .iter()
            .filter_map(|e| match e {
                Entry::Access(a) => Some(a.thread),
                _ => None,
            })
            .collect();
        assert!(threads.windows(2).all(|w| w[0] <= w[1]), "{threads:?}");
        // each page's chunk is mapped before the page is touched
        for (i, e) in entries.iter().enumerate() {
            if let Entry::Access(Access { thread, page, .. }) = e {
                assert!(entries[..i].iter().any(|m| matches!(m,
                    Entry::Event(Event::Mmap { thread: t, addr, len_bytes, .. })
                        if t == thread && (*addr..addr + len_bytes).contains(&(page * 4096)))));
            }
        }
    }

    #[test]
    fn the_seed_orders_the_touches_and_nothing_else() {
        let a = entries_of(FIXTURE.as_bytes(), 7).unwrap();
        assert_eq!(a, entries_of(FIXTURE.as_bytes(), 7).unwrap());
        let orders: Vec<Vec<Entry>> = (0..8)
            .map(|seed| entries_of(FIXTURE.as_bytes(), seed).unwrap())
            .collect();
        assert!(orders.iter().any(|o| *o != a), "the seed changes nothing");
        for order in &orders {
            assert_eq!(touches(order), touches(&a));
        }
    }

    #[test]
    fn json_compressed_reads_as_json() {
        let mut encoder =
            flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(FIXTURE.as_bytes()).unwrap();
        let compressed = encoder.finish().unwrap();
        assert_eq!(
            entries_of(&compressed, 3).unwrap(),
            entries_of(FIXTURE.as_bytes(), 3).unwrap()
        );
        let e = entries_of(&compressed[..compressed.len() / 2], 3).unwrap_err();
        assert!(e.message.contains("json_compressed"), "{e}");
    }

    #[test]
    fn a_page_cap_bounds_a_large_region() {
        let text = r#"[{"intervals": {"sample_us": 1, "aggr_us": 1},
            "snapshots": [{"end_time": 1, "regions": [
                {"start": 0, "end": 4096000, "nr_accesses": {"samples": 1}}]}]}]"#;
        let options = DamoOptions {
            max_pages_per_region: Some(10),
            ..DamoOptions::default()
        };
        let mut import = DamoImport::new(text.as_bytes(), "d.json", options).unwrap();
        let mut pages = std::collections::HashSet::new();
        while let Some(e) = import.next_entry().unwrap() {
            if let Entry::Access(a) = e {
                assert!(a.page < 1000);
                pages.insert(a.page);
            }
        }
        assert_eq!(pages.len(), 10);
    }

    #[test]
    fn malformed_records_name_their_line_and_byte_offset() {
        let bad_region = FIXTURE.replacen(r#""end": "4210688""#, r#""end": "4096""#, 1);
        let e = entries_of(bad_region.as_bytes(), 1).unwrap_err();
        // serde names the end of the region's object
        assert!(e.message.contains("line 11 column 16"), "{e}");
        assert!(e.message.contains("expected 0 <= start <= end"), "{e}");
        let line_11: usize = bad_region.lines().take(10).map(|l| l.len() + 1).sum();
        assert_eq!(e.offset, line_11 as u64 + 15, "{e}");

        let e = entries_of(&FIXTURE.as_bytes()[..300], 1).unwrap_err();
        assert!(e.message.contains("EOF"), "{e}");
        assert_eq!(e.offset, 299, "the last byte read");

        let bad_number = FIXTURE.replacen(r#""5000""#, r#""5k""#, 1);
        let e = entries_of(bad_number.as_bytes(), 1).unwrap_err();
        assert!(e.message.contains("line 4 column"), "{e}");

        let e = entries_of(b"[]", 1).unwrap_err();
        assert!(e.message.contains("at least one"), "{e}");
        let e = entries_of(b"{\"damon_records\": 1}", 1).unwrap_err();
        assert!(
            e.message.starts_with(
                "expected damo's record list (line 1 column 0 of the JSON): invalid type: map"
            ),
            "{e}"
        );
    }
}
