//! The `--json` document, written atomically: to a temporary file beside the target, renamed
//! into place only once everything has succeeded.

use std::path::{Path, PathBuf};

use foliosim::{InputError, RunResult, Scenario};

/// `{"foliosim_version", "scenario", "runs", "published"}` in that key order, pretty-printed.
/// serde_json's own maps sort their keys, so the top level is assembled by hand.
pub fn document(scenario: &Scenario, runs: &[RunResult]) -> Result<String, String> {
    let runs = runs
        .iter()
        .map(|r| run_json(r, None))
        .collect::<Result<Vec<_>, _>>()?;
    document_of(scenario, &runs)
}

/// The document from runs already encoded, each a pretty-printed JSON object.
pub fn document_of(scenario: &Scenario, runs: &[String]) -> Result<String, String> {
    let fields = [
        ("foliosim_version", quote(foliosim::VERSION)),
        ("scenario", quote(&scenario.name)),
        ("runs", array(runs)),
        (
            "published",
            serde_json::to_string_pretty(&scenario.published).map_err(|e| e.to_string())?,
        ),
    ];
    let body: Vec<String> = fields
        .iter()
        .map(|(key, value)| format!("  {}: {}", quote(key), indent(value)))
        .collect();
    Ok(format!("{{\n{}\n}}", body.join(",\n")))
}

/// One run as a pretty-printed object, its fields in their declared order, with an `extra`
/// field appended (a live run's notes).
pub fn run_json(
    run: &RunResult,
    extra: Option<(&str, &serde_json::Value)>,
) -> Result<String, String> {
    let text = serde_json::to_string_pretty(run).map_err(|e| e.to_string())?;
    let Some((key, value)) = extra else {
        return Ok(text);
    };
    let value = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    // a pretty object ends in "\n}": the new field goes before that line
    let body = text.strip_suffix("\n}").ok_or("unexpected JSON layout")?;
    Ok(format!("{body},\n  {}: {}\n}}", quote(key), indent(&value)))
}

/// Several documents as one JSON array (`reproduce all`).
pub fn array(documents: &[String]) -> String {
    if documents.is_empty() {
        return "[]".into();
    }
    let items: Vec<String> = documents
        .iter()
        .map(|d| format!("  {}", indent(d)))
        .collect();
    format!("[\n{}\n]", items.join(",\n"))
}

fn quote(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// Indents every line but the first by two spaces, to nest a pretty-printed value.
fn indent(text: &str) -> String {
    text.replace('\n', "\n  ")
}

/// Writes `text` and a trailing newline to `path` via `path.tmp` and a rename.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), InputError> {
    let file = path.display().to_string();
    let fail = |message: String| InputError {
        file: file.clone(),
        key: String::new(),
        message,
    };
    let tmp = temp_path(path);
    let result =
        std::fs::write(&tmp, format!("{text}\n")).and_then(|_| std::fs::rename(&tmp, path));
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(format!("cannot write: {}", io_error_text(&e))));
    }
    Ok(())
}

/// Refuses an output path whose directory does not exist, before any run starts.
pub fn check_writable_dir(path: &Path) -> Result<(), InputError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(InputError {
            file: path.display().to_string(),
            key: String::new(),
            message: format!("cannot write: no directory {}", dir.display()),
        });
    }
    if path.is_dir() {
        return Err(InputError {
            file: path.display().to_string(),
            key: String::new(),
            message: "cannot write: is a directory".into(),
        });
    }
    Ok(())
}

fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

pub fn io_error_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}
