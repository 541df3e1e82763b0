//! `foliosim report`: one self-contained HTML page from the JSON that `foliosim run --json`,
//! `reproduce --json` (one document, or an array of them for `reproduce all`) and `validate
//! --json` write. Charts are inline SVG drawn by plotters; the page loads nothing (no script, no
//! font, no image from anywhere), and the same JSON always gives the same bytes.

mod charts;
mod sections;

use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

pub use charts::{short_number, BarChart, Line, LineChart};

/// One run as the result JSON holds it. A live run (`validate`) also has a `live` field.
#[derive(Clone, Debug, Deserialize)]
pub struct RunJson {
    pub profile: String,
    pub variant: Option<String>,
    pub seed: u64,
    pub sim_time_ns: u64,
    pub vmstat: BTreeMap<String, u64>,
    pub mthp: BTreeMap<String, BTreeMap<String, u64>>,
    pub memcg: BTreeMap<String, BTreeMap<String, u64>>,
    pub zram: BTreeMap<String, BTreeMap<String, u64>>,
    #[serde(default)]
    pub zswap: BTreeMap<String, u64>,
    pub tasks: Vec<Map<String, Value>>,
    pub iterations: Vec<Map<String, Value>>,
    pub series: BTreeMap<String, Vec<u64>>,
    #[serde(default)]
    pub live: Option<Value>,
}

impl RunJson {
    /// `v6.10/64K`, as the tables label a run.
    pub fn label(&self) -> String {
        match &self.variant {
            Some(v) => format!("{}/{v}", self.profile),
            None => self.profile.clone(),
        }
    }

    pub fn is_live(&self) -> bool {
        self.live.is_some()
    }

    /// The engine's result, for the published-figure metrics.
    fn to_run_result(&self) -> foliosim::RunResult {
        foliosim::RunResult {
            profile: self.profile.clone(),
            variant: self.variant.clone(),
            seed: self.seed,
            sim_time_ns: self.sim_time_ns,
            vmstat: self.vmstat.clone(),
            mthp: self.mthp.clone(),
            memcg: self.memcg.clone(),
            zram: self.zram.clone(),
            zswap: self.zswap.clone(),
            tasks: self.tasks.clone(),
            iterations: self.iterations.clone(),
            series: self.series.clone(),
            // Not needed by the published-figure metrics (the samples carry their times).
            series_interval_ns: None,
        }
    }
}

/// One `--json` document: a scenario's runs and its published table.
#[derive(Clone, Debug)]
pub struct Document {
    pub foliosim_version: String,
    pub scenario: String,
    pub runs: Vec<RunJson>,
    pub published: Value,
}

const EXPECTED: &str = "expected a foliosim result (the JSON of `foliosim run`, `reproduce` or \
                        `validate --json`: an object with foliosim_version, scenario, runs and \
                        published, or an array of them)";

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn document_of(value: &Value, at: &str) -> Result<Document, String> {
    let Value::Object(object) = value else {
        return Err(format!("{at}{EXPECTED}, found {}", describe(value)));
    };
    let text = |key: &str| match object.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!(
            "{at}{key}: {EXPECTED}; expected a string, found {}",
            describe(other)
        )),
        None => Err(format!("{at}{EXPECTED}, found an object without {key:?}")),
    };
    let foliosim_version = text("foliosim_version")?;
    let scenario = text("scenario")?;
    let runs = match object.get("runs") {
        Some(Value::Array(runs)) => runs
            .iter()
            .enumerate()
            .map(|(i, run)| {
                RunJson::deserialize(run).map_err(|e| format!("{at}runs[{i}]: {EXPECTED}; {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(other) => {
            return Err(format!(
                "{at}runs: {EXPECTED}; expected an array, found {}",
                describe(other)
            ))
        }
        None => return Err(format!("{at}{EXPECTED}, found an object without \"runs\"")),
    };
    Ok(Document {
        foliosim_version,
        scenario,
        runs,
        published: object.get("published").cloned().unwrap_or(Value::Null),
    })
}

/// The documents of a result: one, or an array of them (`reproduce all`).
pub fn parse(result_json: &str) -> Result<Vec<Document>, String> {
    let value: Value = serde_json::from_str(result_json)
        .map_err(|e| format!("{EXPECTED}, found malformed JSON: {e}"))?;
    match &value {
        Value::Array(items) if items.is_empty() => Err(format!("{EXPECTED}, found an empty array")),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| document_of(item, &format!("[{i}]: ")))
            .collect(),
        _ => Ok(vec![document_of(&value, "")?]),
    }
}

/// The report of a result JSON, as one HTML page.
pub fn render_html(result_json: &str) -> Result<String, String> {
    let documents = parse(result_json)?;
    let mut body = String::new();
    let mut contents = String::new();
    let mut chart_count = 0;
    for (index, document) in documents.iter().enumerate() {
        let anchor = format!("scenario-{index}");
        let section = sections::document(document, &anchor, &mut chart_count)?;
        contents.push_str(&format!(
            "<li><a href=\"#{anchor}\">{}</a> <span class=\"kind\">{}</span></li>\n",
            escape(&document.scenario),
            escape(section.kind),
        ));
        body.push_str(&section.html);
    }
    let title = match documents.as_slice() {
        [one] => format!("foliosim report: {}", one.scenario),
        many => format!("foliosim report: {} scenarios", many.len()),
    };
    let version = &documents[0].foliosim_version;
    Ok(format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n\
         <h1>{title}</h1>\n<p class=\"meta\">foliosim {version} · {chart_count} charts · \
         counters are cumulative from the start of the run; memory in MiB (4 KiB pages)</p>\n\
         <nav><ol>\n{contents}</ol></nav>\n{body}</body>\n</html>\n",
        title = escape(&title),
        version = escape(version),
    ))
}

const STYLE: &str =
    "body { font-family: sans-serif; margin: 1.5em; color: #222; background: #fafafa; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 2px solid #1f77b4; }
h3 { margin-top: 1.5em; color: #444; }
.meta, .kind, .note { color: #666; font-size: 0.9em; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
figure.chart { margin: 0; background: white; border: 1px solid #ddd; }
figure.chart svg { display: block; max-width: 100%; height: auto; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; background: white; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
td.off { color: #b00; }
";

/// Text for HTML: `&`, `<`, `>` and quotes escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
