//! The `foliosim` command: run scenarios under kernel profiles and compare them, reproduce the
//! bundled published experiments, play them on the running kernel, list what is available.
//! The commands are in the library (lib.rs); exit statuses are listed there.

use clap::Parser;
use foliosim_cli::args::Cli;

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => match foliosim_cli::usage_message(&e) {
            None => e.exit(),
            Some(message) => {
                eprintln!("{message}");
                std::process::exit(e.exit_code());
            }
        },
    };
    if let Err(failure) = foliosim_cli::execute(&cli.command) {
        let (status, message) = failure.status_and_message();
        eprintln!("{message}");
        std::process::exit(status);
    }
}
