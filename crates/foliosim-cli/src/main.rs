//! The `foliosim` command: run scenarios under kernel profiles and compare them, reproduce the
//! bundled published experiments, play them on the running kernel, list what is available.
//!
//! Exit status: 0 success, 1 a broken simulator invariant (`--check`) or a failed live run,
//! 2 bad input or usage, 3 a live run this machine cannot do, 128+N a live run stopped by signal N.

mod args;
mod kernel_run;
mod list;
mod live;
mod output;
mod progress;
mod report;
mod reproduce;
mod run;
mod scenarios;
mod swarm;
mod table;
mod validate;

use std::io::Write;
use std::path::Path;

use args::{Cli, Command};
use clap::{CommandFactory, Parser};
use foliosim::InputError;

/// Why the command stopped.
enum Failure {
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

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => usage_error(e),
    };
    let result = match &cli.command {
        Command::Run(run_args) => run::run(run_args),
        Command::Reproduce(repro_args) => reproduce::reproduce(repro_args),
        Command::KernelRun(live_args) => kernel_run::kernel_run(live_args),
        Command::Validate(validate_args) => validate::validate(validate_args),
        Command::Swarm(swarm_args) => swarm::swarm(swarm_args),
        Command::Report(report_args) => report::report(report_args),
        Command::List => {
            list::list();
            Ok(())
        }
    };
    match result {
        Ok(()) => {}
        Err(Failure::Input(e)) => {
            eprintln!(
                "foliosim: {}",
                shorten_long_words(&one_line(&e.to_string()))
            );
            std::process::exit(2);
        }
        Err(Failure::Check(message)) => {
            eprintln!("foliosim: {message}");
            std::process::exit(1);
        }
        Err(Failure::Live { message, status } | Failure::Write { message, status }) => {
            eprintln!("foliosim: {}", shorten_long_words(&one_line(&message)));
            std::process::exit(status);
        }
    }
}

/// `--help` and `--version` print and exit 0; a usage error prints clap's reason on one line
/// and where to find the command's help (not the whole usage), and exits 2.
fn usage_error(e: clap::Error) -> ! {
    if !e.use_stderr() {
        e.exit();
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
    eprintln!(
        "foliosim: {}\nFor more information, try '{} --help'.",
        shorten_long_words(&reason),
        command.join(" ")
    );
    std::process::exit(e.exit_code());
}

/// Input errors are one line whatever text they carry.
fn one_line(text: &str) -> String {
    text.lines().collect::<Vec<_>>().join("; ")
}

/// Words (paths, names, values) longer than this many characters are echoed shortened.
const LONG_WORD_CHARS: usize = 200;
const SHOWN_WORD_CHARS: usize = 60;

/// A message with each word over LONG_WORD_CHARS characters cut to its first SHOWN_WORD_CHARS
/// and its length (`"bbbb"… (100000 characters)`, as the scenario parser shows them), so that a
/// 100,000-character argument or name is not echoed whole. (The scenario parser shortens the
/// values it quotes already; this covers every other echo.)
fn shorten_long_words(text: &str) -> String {
    let words: Vec<String> = text
        .split(' ')
        .map(|word| {
            // `key:`, `"value",`: the punctuation and quotes stay around the shortened word
            let body = word.trim_end_matches([':', ',', ';']);
            let tail = &word[body.len()..];
            let (quote, inner) = match body.strip_prefix('"') {
                Some(rest) => ("\"", rest.strip_suffix('"').unwrap_or(rest)),
                None => ("", body),
            };
            let count = inner.chars().count();
            if count <= LONG_WORD_CHARS {
                return word.to_string();
            }
            let start: String = inner.chars().take(SHOWN_WORD_CHARS).collect();
            format!("{quote}{start}{quote}… ({count} characters){tail}")
        })
        .collect();
    words.join(" ")
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
