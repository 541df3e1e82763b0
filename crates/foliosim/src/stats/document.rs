//! The `--json` document of a command: `{"foliosim_version", "scenario", "runs", "published"}`,
//! pretty-printed, its keys in that order. Shared by the CLI (`foliosim run --json`) and the
//! Python package (`Result.to_json()`), so that both write the same bytes.

use crate::{RunResult, Scenario};

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
        ("foliosim_version", quote(crate::VERSION)),
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
