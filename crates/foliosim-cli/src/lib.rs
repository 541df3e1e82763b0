//! The `foliosim` command as a library: main.rs parses the command line and calls `execute`;
//! the argument fuzzer (fuzz/) calls `usage_message` and `dry_run::check` the same way, without
//! running anything.
//!
//! Exit status: 0 success, 1 a broken simulator invariant (`--check`) or a failed live run,
//! 2 bad input or usage, 3 a live run this machine cannot do, 128+N a live run stopped by signal N.

pub mod args;
mod calibrate;
mod calibrate_load;
mod calibrate_profile;
pub mod dry_run;
mod explain_time;
mod kernel_run;
mod list;
mod live;
mod make;
mod output;
mod progress;
mod report;
mod reproduce;
mod run;
mod scenarios;
mod swarm;
mod table;
mod trace;
mod trace_record;
mod validate;

use foliosim::scenario::message::{one_line, shorten_long_words};
use std::io::Write;
use std::path::Path;

use args::{Cli, Command};
use clap::CommandFactory;
use foliosim::InputError;

/// Why the command stopped.
#[derive(Debug)]
pub enum Failure {
    /// Bad input: one line naming the file and key. Exit 2.
    Input(InputError),
    /// The invariant checker fired: a simulator bug. Exit 1.
    Check(String),
    /// A live run could not be done (status 3), failed (1) or was interrupted (128 + signal).
    Live { message: String, status: i32 },
    /// The result file could not be written (status 1) or its write was interrupted
    /// (128 + signal); no result file was left.
    Write { message: String, status: i32 },
}

impl From<InputError> for Failure {
    fn from(e: InputError) -> Self {
        Failure::Input(e)
    }
}

impl Failure {
    /// The exit status and the one line printed on stderr.
    pub fn status_and_message(&self) -> (i32, String) {
        match self {
            Failure::Input(e) => (
                2,
                format!(
                    "foliosim: {}",
                    shorten_long_words(&one_line(&e.to_string()))
                ),
            ),
            Failure::Check(message) => (1, format!("foliosim: {message}")),
            Failure::Live { message, status } | Failure::Write { message, status } => (
                *status,
                format!("foliosim: {}", shorten_long_words(&one_line(message))),
            ),
        }
    }
}

/// Runs a parsed command.
pub fn execute(command: &Command) -> Result<(), Failure> {
    match command {
        Command::Run(run_args) => run::run(run_args),
        Command::Reproduce(repro_args) => reproduce::reproduce(repro_args),
        Command::KernelRun(live_args) => kernel_run::kernel_run(live_args),
        Command::Validate(validate_args) => validate::validate(validate_args),
        Command::Calibrate(calibrate_args) => calibrate::calibrate(calibrate_args),
        Command::Swarm(swarm_args) => swarm::swarm(swarm_args),
        Command::Trace(trace_command) => trace::trace(trace_command),
        Command::Report(report_args) => report::report(report_args),
        Command::List => {
            list::list();
            Ok(())
        }
    }
}

/// What a command-line error prints: None for `--help` and `--version` (clap prints them and
/// exits 0); for a usage error, clap's reason on one line and where to find the command's help
/// (not the whole usage), to print before exiting with `e.exit_code()` (2).
pub fn usage_message(e: &clap::Error) -> Option<String> {
    if !e.use_stderr() {
        return None;
    }
    let text = e.render().to_string();
    let reason = if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let commands: Vec<String> = Cli::command()
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect();
        format!("missing command ({})", commands.join(", "))
    } else {
        // the first paragraph: "error: ..." and, for missing arguments, the list of them
        let paragraph: Vec<&str> = text
            .lines()
            .take_while(|l| !l.trim().is_empty())
            .map(str::trim)
            .collect();
        let reason = paragraph.join(" ");
        reason
            .strip_prefix("error: ")
            .unwrap_or(&reason)
            .to_string()
    };
    // "Usage: foliosim run [OPTIONS] <SCENARIO>" names the command whose help to read
    let command: Vec<&str> = text
        .lines()
        .find_map(|l| l.strip_prefix("Usage: "))
        .unwrap_or("foliosim")
        .split_whitespace()
        .take_while(|w| !w.starts_with(['[', '<']))
        .collect();
    Some(format!(
        "foliosim: {}\nFor more information, try '{} --help'.",
        shorten_long_words(&reason),
        command.join(" ")
    ))
}

/// Writes to stdout, ignoring a closed pipe (`foliosim list | head`).
fn print_stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

fn json_error(path: &Path, message: String) -> Failure {
    Failure::Input(InputError {
        file: path.display().to_string(),
        key: String::new(),
        message: format!("cannot encode JSON: {message}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_words_are_shortened_with_their_punctuation() {
        let long = "b".repeat(1000);
        assert_eq!(
            shorten_long_words(&format!("--variant: {long}: found \"{long}\", or")),
            format!(
                "--variant: {}… (1000 characters): found \"{}\"… (1000 characters), or",
                &long[..60],
                &long[..60]
            )
        );
        let short = "/a/path/of/some/length.json: expected";
        assert_eq!(shorten_long_words(short), short);
    }
}
