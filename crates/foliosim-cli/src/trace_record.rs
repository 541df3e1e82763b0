//! `foliosim trace record [-o FILE] -- CMD [ARGS...]`: runs CMD under valgrind with foliotrace,
//! the project's own Valgrind tool (valgrind-tool/, built here with the system C compiler as
//! kernel-bench is), reads the tool's raw record stream from a pipe while the program runs and
//! writes it as a trace (docs/traces.md) through a temporary file renamed into place once the
//! recording is complete. The exit status is the program's own.

mod raw;

use std::io::{BufWriter, IsTerminal, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::Duration;

use foliosim::scenario::command::LiveCommand;
use foliosim::trace::{Access, Entry, Header, ThreadId, TraceWriter};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::args::RecordArgs;
use crate::live::native::{median_ns, native_command};
use crate::live::signal;
use crate::output::{check_output_path, io_error_text};
use crate::Failure;

use raw::{RawDecoder, Sink, Tally};

/// The name valgrind knows the tool by (`--tool=foliotrace`, file foliotrace-amd64-linux).
const TOOL: &str = "foliotrace";
const PAGE_SIZE_BYTES: u64 = 4096;
/// How much of the pipe is read at a time.
const READ_BYTES: usize = 1 << 16;

pub fn record(args: &RecordArgs) -> Result<(), Failure> {
    let program = &args.command[0];
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| default_output(program));
    check_output_path(&output).map_err(|mut e| {
        e.file = "-o".into();
        Failure::Input(e)
    })?;
    let valgrind = find_on_path("valgrind").ok_or_else(|| Failure::Live {
        message: "valgrind not found on PATH: `foliosim trace record` runs the program under it; \
                  install it with `apt-get install valgrind`"
            .into(),
        status: 2,
    })?;
    let tool_dir = build().map_err(|message| Failure::Live { message, status: 3 })?;
    let native_user_ns = native_user_ns(&args.command, args.native_runs)?;
    let header = Header {
        program: program.clone(),
        args: args.command[1..].to_vec(),
        recorder: TOOL.into(),
        recorder_version: foliosim::VERSION.into(),
        page_size_bytes: PAGE_SIZE_BYTES,
        native_user_ns,
        ..Default::default()
    };
    let recording = Recording::new(&output, &header, args.native_runs)?;
    let handlers = signal::Handlers::install();
    let result = recording.run(&valgrind, &tool_dir, &args.command);
    drop(handlers);
    let (status, tally, len_bytes, execs) = result?;
    if args.native_runs > 0 {
        eprintln!(
            "foliosim: {program}: native user time {:.1} ms (median of {}) over {} instructions: \
             {:.3} ns per instruction",
            native_user_ns as f64 / 1e6,
            args.native_runs,
            tally.instructions,
            native_user_ns as f64 / tally.instructions.max(1) as f64
        );
    }
    for path in execs {
        eprintln!(
            "foliosim: note: {program} exec'd {path}: what ran after the exec is not in the trace \
             (valgrind follows no exec here); record {path} itself"
        );
    }
    let records = tally.accesses + tally.events;
    eprintln!(
        "foliosim: {}: {} records ({} accesses, {} events, {} process{}), {} bytes, {:.2} bytes per record; {} {}",
        output.display(),
        records,
        tally.accesses,
        tally.events,
        tally.processes,
        if tally.processes == 1 { "" } else { "es" },
        len_bytes,
        len_bytes as f64 / records.max(1) as f64,
        program,
        describe(status)
    );
    // the summary said how the program ended; the status is its own
    match program_status(status) {
        0 => Ok(()),
        code => std::process::exit(code),
    }
}

/// Runs the program natively `runs` times (its output to /dev/null, its errors shown) and
/// returns the median of its user CPU times in ns (wait4's, its waited-for children included);
/// 0 for no runs. How the program ends is its own affair, as under valgrind.
fn native_user_ns(command: &[String], runs: u32) -> Result<u64, Failure> {
    let native = LiveCommand {
        argv: command.to_vec(),
        ..Default::default()
    };
    let mut times = Vec::new();
    for _ in 0..runs {
        let child = native_command(&native).spawn().map_err(|e| {
            recording_failure(format!(
                "cannot run {}: {}; no trace written",
                command[0],
                io_error_text(&e)
            ))
        })?;
        let (_, (user_ns, _)) = crate::live::sys::wait_with_usage(&child, true)
            .ok_or_else(|| recording_failure(format!("cannot wait for {}", command[0])))?;
        times.push(user_ns);
    }
    Ok(median_ns(&times))
}

/// `<program's file name>.trace` in the current directory.
fn default_output(program: &str) -> PathBuf {
    let name = Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "program".into());
    PathBuf::from(format!("{name}.trace"))
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .map(|m| {
                    m.is_file()
                        && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0
                })
                .unwrap_or(false)
        })
}

/// Builds the tool with the system C compiler into `<repository>/target/valgrind-tool` (beside
/// links to the stock files valgrind loads from its library directory); returns that
/// directory, for VALGRIND_LIB.
pub fn build() -> Result<PathBuf, String> {
    crate::make::build("valgrind-tool", "the valgrind tool")
}

/// The trace being written: a temporary file beside the output, removed unless `persist`ed.
struct Recording {
    output: PathBuf,
    temp: tempfile::NamedTempFile,
    writer: TraceWriter<BufWriter<std::fs::File>>,
    /// The native runs' median user time, written into the header with the instruction total
    /// once the records are counted (not at all without native runs).
    native_runs: u32,
    native_user_ns: u64,
}

impl Recording {
    fn new(output: &Path, header: &Header, native_runs: u32) -> Result<Recording, Failure> {
        let temp = crate::output::temp_file_beside(output)
            .map_err(|e| write_failure(output, "create a temporary file for", &e))?;
        let file = temp
            .as_file()
            .try_clone()
            .map_err(|e| write_failure(output, "open", &e))?;
        let writer = TraceWriter::new(BufWriter::new(file), header)
            .map_err(|e| write_failure(output, "write", &e))?;
        Ok(Recording {
            output: output.to_path_buf(),
            temp,
            writer,
            native_runs,
            native_user_ns: header.native_user_ns,
        })
    }

    /// Runs the program and records it; on success the trace is in place. Returns valgrind's
    /// exit status, what was recorded, the trace's length and the programs exec'd (not traced).
    fn run(
        mut self,
        valgrind: &Path,
        tool_dir: &Path,
        command: &[String],
    ) -> Result<(ExitStatus, Tally, u64, Vec<String>), Failure> {
        let (mut reader, writer) =
            std::io::pipe().map_err(|e| recording_failure(format!("cannot make a pipe: {e}")))?;
        // dup(2) clears close-on-exec: the copy is the one valgrind inherits
        let inherited = rustix::io::dup(&writer)
            .map_err(|e| recording_failure(format!("cannot duplicate the pipe: {e}")))?;
        let mut child = Command::new(valgrind)
            .env("VALGRIND_LIB", tool_dir)
            .arg("-q")
            .arg(format!("--tool={TOOL}"))
            .arg("--trace-children=no")
            .arg(format!("--out-fd={}", inherited.as_raw_fd()))
            .args(command)
            .spawn()
            .map_err(|e| recording_failure(format!("cannot run {}: {e}", valgrind.display())))?;
        // only valgrind and the processes it forks hold the pipe now: its end is their end
        drop(inherited);
        drop(writer);

        let progress = progress_bar();
        let mut decoder = RawDecoder::new();
        let mut buffer = vec![0u8; READ_BYTES];
        let mut sink = WriterSink {
            writer: &mut self.writer,
            error: None,
        };
        let mut stream_error: Option<String> = None;
        let mut interrupted: Option<i32> = None;
        loop {
            if interrupted.is_none() {
                if let Some(sig) = signal::pending() {
                    interrupted = Some(sig);
                    signal::kill(child.id() as i32, sig);
                }
            }
            let n = match reader.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    stream_error = Some(format!("cannot read the record stream: {e}"));
                    break;
                }
            };
            if stream_error.is_some() {
                continue; // drain, so that valgrind is not blocked on a full pipe
            }
            if let Err(e) = decoder.feed(&buffer[..n], &mut sink) {
                stream_error = Some(e.to_string());
                continue;
            }
            if let Some(e) = sink.error.take() {
                stream_error = Some(format!(
                    "{}: cannot write the trace: {}",
                    self.output.display(),
                    io_error_text(&e)
                ));
                continue;
            }
            progress.set_message(format!(
                "recording {}: {} records",
                command[0],
                decoder.tally.accesses + decoder.tally.events
            ));
        }
        progress.finish_and_clear();
        let status = child
            .wait()
            .map_err(|e| recording_failure(format!("cannot wait for valgrind: {e}")))?;
        let sig = interrupted.or_else(signal::pending);
        if let Some(sig) = sig {
            return Err(Failure::Write {
                message: format!(
                    "{}: interrupted by {} while recording; no trace written",
                    self.output.display(),
                    signal::name(sig)
                ),
                status: 128 + sig,
            });
        }
        if let Some(message) = stream_error {
            return Err(recording_failure(format!("{message}; no trace written")));
        }
        if !decoder.started() {
            return Err(Failure::Live {
                message: format!(
                    "valgrind did not run {} ({}); no trace written",
                    command[0],
                    describe(status)
                ),
                status: match program_status(status) {
                    0 => 1,
                    s => s,
                },
            });
        }
        decoder
            .finish(&mut sink)
            .map_err(|e| recording_failure(format!("{e}; no trace written")))?;
        if let Some(e) = sink.error {
            return Err(write_failure(&self.output, "write", &e));
        }
        let tally = decoder.tally;
        let mut out = self
            .writer
            .finish()
            .map_err(|e| write_failure(&self.output, "write", &e))?;
        out.flush()
            .and_then(|()| self.temp.as_file().sync_all())
            .map_err(|e| write_failure(&self.output, "write", &e))?;
        if self.native_runs > 0 {
            foliosim::trace::set_native_run(
                self.temp.path(),
                self.native_user_ns,
                tally.instructions,
            )
            .map_err(|e| write_failure(&self.output, "write", &e))?;
        }
        let len_bytes = self.temp.as_file().metadata().map(|m| m.len()).unwrap_or(0);
        self.temp
            .persist(&self.output)
            .map_err(|e| write_failure(&self.output, "rename", &e.error))?;
        Ok((status, tally, len_bytes, decoder.execs()))
    }
}

/// The trace being written, as the decoder's sink: entries go straight into it, accesses as the
/// tool encoded them, a run at a time. Its first error is kept; what follows it is dropped.
struct WriterSink<'a, W: Write> {
    writer: &'a mut TraceWriter<W>,
    error: Option<std::io::Error>,
}

impl<W: Write> Sink for WriterSink<'_, W> {
    fn entry(&mut self, entry: Entry) {
        if self.error.is_none() {
            self.error = self.writer.push(&entry).err();
        }
    }

    /// Taken whole by `encoded_accesses`.
    fn access(&mut self, _access: Access) {}

    fn encoded_accesses(&mut self, thread: ThreadId, last_page: u64, encoded: &[u8]) {
        if self.error.is_none() {
            self.error = self
                .writer
                .push_encoded_accesses(thread, last_page, encoded)
                .err();
        }
    }
}

/// A spinner with the records so far, on a terminal only.
fn progress_bar() -> ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr_with_hz(4)
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(None, target);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} {elapsed}").expect("a valid template"),
    );
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}

fn write_failure(output: &Path, what: &str, e: &std::io::Error) -> Failure {
    Failure::Write {
        message: format!(
            "-o: {}: cannot {what} the trace: {}; no trace written",
            output.display(),
            io_error_text(e)
        ),
        status: 1,
    }
}

fn recording_failure(message: String) -> Failure {
    Failure::Write { message, status: 1 }
}

/// The shell's view of a status: the exit code, or 128 + the signal that ended it.
fn program_status(status: ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(sig)) => 128 + sig,
        (None, None) => 1,
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        (None, None) => "ended".into(),
    }
}
