//! `foliosim report`: the HTML report of a result JSON (run, reproduce or validate `--json`),
//! written atomically next to it unless `-o` names another file.

use std::path::{Path, PathBuf};

use foliosim::InputError;

use crate::args::ReportArgs;
use crate::{output, Failure};

/// `result.json` -> `result.html`, in the same directory.
pub fn default_output(result: &Path) -> PathBuf {
    result.with_extension("html")
}

pub fn report(args: &ReportArgs) -> Result<(), Failure> {
    let input = &args.result;
    let output_path = args.output.clone().unwrap_or_else(|| default_output(input));
    let refused = |message: String| InputError {
        file: input.display().to_string(),
        key: String::new(),
        message,
    };
    if output_path == *input {
        return Err(refused("expected an output other than the result itself (-o)".into()).into());
    }
    // the place for the report is checked before the (possibly long) rendering
    output::check_output_path(&output_path).map_err(|mut e| {
        e.file = if args.output.is_some() {
            "-o".into()
        } else {
            "the report beside the result (-o to choose another)".into()
        };
        e
    })?;
    let text = std::fs::read_to_string(input).map_err(|e| {
        refused(format!(
            "expected a readable result JSON file, found {}",
            output::io_error_text(&e)
        ))
    })?;
    let html = foliosim_report::render_html(&text).map_err(refused)?;
    output::write_atomically(&output_path, html.trim_end_matches('\n'))?;
    crate::print_stdout(&format!("report written to {}\n", output_path.display()));
    Ok(())
}
