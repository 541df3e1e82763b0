//! `foliosim trace import lackey|damo INPUT -o FILE` and `foliosim trace info FILE`
//! (docs/traces.md). An import streams into a temporary file beside FILE, renamed over it only
//! once the whole input has been read: a malformed input (exit 2), a failed write (exit 1) or a
//! signal (128 + N) leaves no file.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::Path;

use foliosim::trace::import::{
    self, CopyError, DamoImport, DamoOptions, EntrySource, LackeyImport,
};
use foliosim::trace::{Entry, Event, TraceError, TraceReader};
use foliosim::InputError;

use crate::args::{ImportCommand, TraceCommand, TraceInfoArgs};
use crate::live::signal;
use crate::output::{check_output_path, io_error_text, temp_file_beside};
use crate::{print_stdout, Failure};

pub fn trace(command: &TraceCommand) -> Result<(), Failure> {
    match command {
        TraceCommand::Record(args) => crate::trace_record::record(args),
        TraceCommand::Import(ImportCommand::Lackey(args)) => {
            import_to(&args.input, &args.output, |file, name| {
                Ok(Box::new(LackeyImport::new(BufReader::new(file), name)?))
            })
        }
        TraceCommand::Import(ImportCommand::Damo(args)) => {
            let options = DamoOptions {
                seed: args.seed,
                max_pages_per_region: args.max_pages_per_region,
                instructions_per_us: args.instructions_per_us,
            };
            import_to(&args.import.input, &args.import.output, |file, name| {
                Ok(Box::new(DamoImport::new(
                    BufReader::new(file),
                    name,
                    options,
                )?))
            })
        }
        TraceCommand::Info(args) => info(args),
    }
}

/// A malformed trace or input: `FILE: byte N: message`, exit 2.
fn input_failure(e: TraceError) -> Failure {
    Failure::Input(InputError {
        file: e.file,
        key: format!("byte {}", e.offset),
        message: e.message,
    })
}

fn open_input(path: &Path) -> Result<File, Failure> {
    File::open(path).map_err(|e| {
        Failure::Input(InputError {
            file: path.display().to_string(),
            key: String::new(),
            message: format!("expected a readable file, found {}", io_error_text(&e)),
        })
    })
}

type Source = Box<dyn EntrySource>;

fn import_to(
    input: &Path,
    output: &Path,
    open: impl FnOnce(File, &str) -> Result<Source, TraceError>,
) -> Result<(), Failure> {
    check_output_path(output).map_err(|e| {
        Failure::Input(InputError {
            file: "-o".into(),
            ..e
        })
    })?;
    let file = open_input(input)?;
    let mut source = open(file, &input.display().to_string()).map_err(input_failure)?;
    let failed = |what: &str, e: &std::io::Error| Failure::Write {
        message: format!(
            "-o: {}: cannot {what} the trace: {}; no trace written",
            output.display(),
            io_error_text(e)
        ),
        status: 1,
    };
    let handlers = signal::Handlers::install();
    // dropped, the temporary file is removed: every early return leaves nothing behind
    let temp = temp_file_beside(output).map_err(|e| failed("create a temporary file for", &e))?;
    let (entries, bytes) = {
        let out = BufWriter::with_capacity(1 << 20, temp.as_file());
        let (out, entries) = match import::copy(source.as_mut(), out) {
            Ok(done) => done,
            Err(CopyError::Input(e)) => return Err(input_failure(e)),
            Err(CopyError::Output(e)) => return Err(failed("write", &e)),
        };
        let file = out.into_inner().map_err(|e| failed("write", e.error()))?;
        file.sync_all().map_err(|e| failed("write", &e))?;
        let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
        (entries, bytes)
    };
    if let Some(sig) = signal::pending() {
        drop(temp);
        return Err(Failure::Write {
            message: format!(
                "-o: {}: interrupted by {} while writing the trace; no trace written",
                output.display(),
                signal::name(sig)
            ),
            status: 128 + sig,
        });
    }
    temp.persist(output)
        .map_err(|e| failed("rename", &e.error))?;
    drop(handlers);
    print_stdout(&format!(
        "{}: {entries} entries, {bytes} bytes ({:.2} bytes/entry)\n",
        output.display(),
        bytes as f64 / entries.max(1) as f64
    ));
    Ok(())
}

/// How many slices of the trace the footprint is reported for.
const FOOTPRINT_SLICES: u64 = 10;

/// The pages touched, as one 512-bit bitmap per 2 MiB-aligned chunk of 4 KiB pages (of 512
/// pages whatever the page size) per process: 64 bytes and a hash entry per chunk touched.
#[derive(Default)]
struct PageSet {
    chunks: HashMap<(u32, u64), [u64; 8]>,
    len: u64,
}

impl PageSet {
    fn insert(&mut self, process: u32, page: u64) {
        let bits = self.chunks.entry((process, page / 512)).or_default();
        let (word, bit) = ((page % 512 / 64) as usize, page % 64);
        if bits[word] & 1 << bit == 0 {
            bits[word] |= 1 << bit;
            self.len += 1;
        }
    }

    fn memory_bytes(&self) -> u64 {
        // a hash entry: the key, the bitmap, hashbrown's control byte
        self.chunks.capacity() as u64 * (16 + 64 + 1)
    }
}

#[derive(Default)]
struct Figures {
    entries: u64,
    accesses: u64,
    accesses_collapsed: u64,
    writes: u64,
    instructions: u64,
    events: BTreeMap<&'static str, u64>,
    /// thread → process (0 for the first; a fork's child starts a new one)
    threads: BTreeMap<u32, u32>,
    processes: u32,
    pages: PageSet,
    /// per slice: distinct pages touched in it, and in the trace so far at its end
    slices: Vec<(u64, u64)>,
    page_set_bytes: u64,
}

fn event_kind(event: &Event) -> &'static str {
    match event {
        Event::Mmap { .. } => "mmap",
        Event::Munmap { .. } => "munmap",
        Event::Mremap { .. } => "mremap",
        Event::Brk { .. } => "brk",
        Event::Mprotect { .. } => "mprotect",
        Event::Madvise { .. } => "madvise",
        Event::Fork { .. } => "fork",
        Event::Clone { .. } => "clone",
        Event::Exit { .. } => "exit",
        Event::File { .. } => "file",
        Event::Read { .. } => "read",
        Event::Write { .. } => "write",
        Event::Fadvise { .. } => "fadvise",
    }
}

impl Figures {
    /// The process of a thread the trace names; a thread no fork or clone introduced counts
    /// in process 0 (the first thread's).
    fn process_of(&mut self, thread: u32) -> u32 {
        *self.threads.entry(thread).or_insert(0)
    }
}

fn info(args: &TraceInfoArgs) -> Result<(), Failure> {
    // two passes: the first counts the entries, so that the second can cut the trace in slices
    let mut reader = TraceReader::open(&args.trace).map_err(input_failure)?;
    let mut total = 0u64;
    while reader.next_entry().map_err(input_failure)?.is_some() {
        total += 1;
    }
    let mut reader = TraceReader::open(&args.trace).map_err(input_failure)?;
    let header = reader.header().clone();
    let mut f = Figures {
        processes: 1,
        ..Figures::default()
    };
    f.threads.insert(0, 0);
    let mut slice = PageSet::default();
    // fewer slices than entries in a short trace, so that each slice holds some
    let slices = total.min(FOOTPRINT_SLICES);
    let mut slice_end = if slices == 0 {
        0
    } else {
        total.div_ceil(slices)
    };
    while let Some(entry) = reader.next_entry().map_err(input_failure)? {
        f.entries += 1;
        match entry {
            Entry::Access(a) => {
                f.accesses += 1;
                f.accesses_collapsed += u64::from(a.count);
                f.writes += u64::from(a.write);
                f.instructions = f.instructions.saturating_add(a.instructions);
                let process = f.process_of(a.thread);
                f.pages.insert(process, a.page);
                slice.insert(process, a.page);
            }
            Entry::Event(event) => {
                *f.events.entry(event_kind(&event)).or_default() += 1;
                match event {
                    Event::Fork { thread, child } => {
                        f.process_of(thread);
                        f.threads.insert(child, f.processes);
                        f.processes += 1;
                    }
                    Event::Clone { thread, child } => {
                        let process = f.process_of(thread);
                        f.threads.insert(child, process);
                    }
                    _ => {}
                }
            }
        }
        if f.entries == slice_end {
            f.slices.push((slice.len, f.pages.len));
            f.page_set_bytes = f.page_set_bytes.max(slice.memory_bytes());
            slice = PageSet::default();
            slice_end = (total * (f.slices.len() as u64 + 1)).div_ceil(slices);
        }
    }
    f.page_set_bytes += f.pages.memory_bytes();
    let file_bytes = std::fs::metadata(&args.trace).map(|m| m.len()).unwrap_or(0);
    let text = if args.json {
        info_json(args, &header, &f, file_bytes)
    } else {
        info_text(args, &header, &f, file_bytes)
    };
    print_stdout(&text);
    Ok(())
}

fn info_json(
    args: &TraceInfoArgs,
    header: &foliosim::trace::Header,
    f: &Figures,
    file_bytes: u64,
) -> String {
    let json = serde_json::json!({
        "file": args.trace.display().to_string(),
        "file_bytes": file_bytes,
        "format_version": foliosim::trace::FORMAT_VERSION,
        "program": header.program,
        "args": header.args,
        "recorder": header.recorder,
        "recorder_version": header.recorder_version,
        "page_size_bytes": header.page_size_bytes,
        "native_user_ns": header.native_user_ns,
        "threads": f.threads.len(),
        "processes": f.processes,
        "entries": f.entries,
        "accesses": f.accesses,
        "accesses_collapsed": f.accesses_collapsed,
        "write_records": f.writes,
        "instructions": f.instructions,
        "events": f.events,
        "distinct_pages": f.pages.len,
        "distinct_bytes": f.pages.len.saturating_mul(header.page_size_bytes),
        "footprint": f.slices.iter().enumerate().map(|(i, (touched, so_far))| serde_json::json!({
            "until_percent": (i as u64 + 1) * 100 / f.slices.len() as u64,
            "pages_touched": touched,
            "pages_so_far": so_far,
        })).collect::<Vec<_>>(),
        "page_set_bytes": f.page_set_bytes,
    });
    format!(
        "{}\n",
        serde_json::to_string_pretty(&json).unwrap_or_default()
    )
}

fn info_text(
    args: &TraceInfoArgs,
    header: &foliosim::trace::Header,
    f: &Figures,
    file_bytes: u64,
) -> String {
    let mut out = String::new();
    let mut line = |key: &str, value: String| out.push_str(&format!("{key:<14}{value}\n"));
    line(
        "trace",
        format!(
            "{} ({file_bytes} bytes, format version {}, {:.2} bytes/entry)",
            args.trace.display(),
            foliosim::trace::FORMAT_VERSION,
            file_bytes as f64 / f.entries.max(1) as f64
        ),
    );
    let mut command = vec![header.program.clone()];
    command.extend(header.args.iter().cloned());
    line("program", command.join(" "));
    line(
        "recorder",
        format!("{} {}", header.recorder, header.recorder_version),
    );
    line("page size", format!("{} bytes", header.page_size_bytes));
    if header.native_user_ns > 0 {
        line(
            "native run",
            format!(
                "{:.1} ms of user time, {:.3} ns per instruction",
                header.native_user_ns as f64 / 1e6,
                header.native_user_ns as f64 / header.instructions.max(1) as f64
            ),
        );
    }
    line(
        "threads",
        format!("{} in {} process(es)", f.threads.len(), f.processes),
    );
    line(
        "entries",
        format!(
            "{} ({} access records collapsing {} accesses, {} writing; {} events)",
            f.entries,
            f.accesses,
            f.accesses_collapsed,
            f.writes,
            f.entries - f.accesses
        ),
    );
    line("instructions", f.instructions.to_string());
    let events: Vec<String> = f.events.iter().map(|(k, n)| format!("{k} {n}")).collect();
    line(
        "events",
        if events.is_empty() {
            "none".into()
        } else {
            events.join(", ")
        },
    );
    line(
        "pages",
        format!(
            "{} distinct ({:.1} MiB)",
            f.pages.len,
            f.pages.len.saturating_mul(header.page_size_bytes) as f64 / (1 << 20) as f64
        ),
    );
    line(
        "footprint",
        format!(
            "per {}% of the entries: pages touched in it / distinct so far",
            100 / f.slices.len().max(1)
        ),
    );
    for (i, (touched, so_far)) in f.slices.iter().enumerate() {
        out.push_str(&format!(
            "{:>14}{:>12} / {}\n",
            format!("{}%  ", (i as u64 + 1) * 100 / f.slices.len() as u64),
            touched,
            so_far
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_set_counts_each_page_of_each_process_once() {
        let mut set = PageSet::default();
        for page in [0, 1, 511, 512, 1 << 40, 1] {
            set.insert(0, page);
        }
        set.insert(1, 0);
        assert_eq!(set.len, 6);
        assert_eq!(set.chunks.len(), 4);
    }
}
