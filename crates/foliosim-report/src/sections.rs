//! What the report shows of one document: published figures beside simulated ones (reproduce),
//! simulated runs beside live ones (validate), per-iteration figures, and each run's time
//! series.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::charts::{bar_chart_svg, line_chart_svg, BarChart, BarRow, Line, LineChart};
use crate::{escape, Document, RunJson};

pub struct Section {
    /// "run", "reproduce" or "validate".
    pub kind: &'static str,
    pub html: String,
}

const PAGE_BYTES: f64 = 4096.0;
const MIB: f64 = 1048576.0;
/// Rows of a validate ratio chart; the table below it has them all.
const MAX_RATIO_BARS: usize = 40;

/// Charts are numbered across the whole page (their ids).
struct Charts<'a> {
    count: &'a mut usize,
}

impl Charts<'_> {
    fn figure(&mut self, title: &str, svg: String) -> String {
        *self.count += 1;
        format!(
            "<figure class=\"chart\" id=\"chart-{}\" data-title=\"{}\">\n{svg}\n</figure>\n",
            self.count,
            escape(title)
        )
    }
    fn line(&mut self, chart: &LineChart) -> Result<String, String> {
        Ok(self.figure(&chart.title, line_chart_svg(chart)?))
    }
    fn bars(&mut self, chart: &BarChart) -> Result<String, String> {
        Ok(self.figure(&chart.title, bar_chart_svg(chart)?))
    }
}

pub fn document(
    document: &Document,
    anchor: &str,
    chart_count: &mut usize,
) -> Result<Section, String> {
    let mut charts = Charts { count: chart_count };
    let scenario = &document.scenario;
    let (live, simulated): (Vec<&RunJson>, Vec<&RunJson>) =
        document.runs.iter().partition(|r| r.is_live());
    let figures = published_figures(document, &simulated)?;
    let kind = if !live.is_empty() {
        "validate"
    } else if !figures.is_empty() {
        "reproduce"
    } else {
        "run"
    };
    let seeds: BTreeSet<u64> = document.runs.iter().map(|r| r.seed).collect();
    let seeds: Vec<String> = seeds.iter().map(u64::to_string).collect();
    let labels: Vec<String> = document.runs.iter().map(RunJson::label).collect();
    let mut html = format!(
        "<section class=\"document\">\n<h2 id=\"{anchor}\">{}</h2>\n<p class=\"meta\">{kind} · \
         {} runs: {} · seed {}</p>\n",
        escape(scenario),
        document.runs.len(),
        escape(&labels.join(", ")),
        seeds.join(", "),
    );
    if !figures.is_empty() {
        html.push_str(&published_section(
            scenario,
            &document.published,
            &figures,
            &mut charts,
        )?);
    }
    if !live.is_empty() {
        html.push_str(&validate_section(scenario, &simulated, &live, &mut charts)?);
    }
    html.push_str(&iterations_section(scenario, &document.runs, &mut charts)?);
    if live.is_empty() {
        for run in &simulated {
            let title = format!("{scenario} {}", run.label());
            let chart_html = series_charts(&title, &[("", run)], &mut charts)?;
            if !chart_html.is_empty() {
                html.push_str(&format!(
                    "<h3>{}: time series</h3>\n<div class=\"charts\">\n{chart_html}</div>\n",
                    escape(&run.label())
                ));
            }
        }
    }
    html.push_str("</section>\n");
    Ok(Section { kind, html })
}

/// The published figures with their simulated counterparts, computed by the engine's metrics.
fn published_figures(
    document: &Document,
    simulated: &[&RunJson],
) -> Result<Vec<foliosim::stats::compare::Figure>, String> {
    let runs: Vec<foliosim::RunResult> = simulated.iter().map(|r| r.to_run_result()).collect();
    foliosim::stats::compare::figures(&document.published, &runs)
        .map_err(|m| format!("{}: {m}", document.scenario))
}

fn number_cell(value: Option<f64>) -> String {
    match value {
        Some(v) if v.abs() >= 1e4 => format!("{v:.0}"),
        Some(v) => format!("{v:.2}"),
        None => "-".into(),
    }
}

fn published_section(
    scenario: &str,
    published: &Value,
    figures: &[foliosim::stats::compare::Figure],
    charts: &mut Charts,
) -> Result<String, String> {
    let mut rows = String::new();
    let mut ratio_rows = Vec::new();
    // figures in different units get different charts
    let mut by_unit: Vec<(String, Vec<BarRow>)> = Vec::new();
    for figure in figures {
        let run = match &figure.variant {
            Some(v) => format!("{}/{v}", figure.profile),
            None => figure.profile.clone(),
        };
        let published_number = figure.published.as_f64();
        let ratio = match (figure.simulated, published_number) {
            (Some(s), Some(p)) if p != 0.0 => Some(s / p),
            _ => None,
        };
        let published_text = match &figure.published {
            Value::Number(_) => number_cell(published_number),
            Value::String(s) => escape(s),
            Value::Null => "-".into(),
            other => escape(&other.to_string()),
        };
        // a figure further than a factor of 2 from the published one is marked
        let off = ratio.is_some_and(|r| !(0.5..=2.0).contains(&r));
        rows.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{published_text}</td><td>{}</td><td{}>{}</td></tr>\n",
            escape(&figure.label),
            escape(&run),
            number_cell(figure.simulated),
            if off { " class=\"off\"" } else { "" },
            ratio.map_or("-".into(), |r| format!("{r:.3}")),
        ));
        let label = format!("{run}: {}", figure.label);
        if let Some(r) = ratio {
            ratio_rows.push((label.clone(), vec![Some(r)]));
        }
        if published_number.is_some() || figure.simulated.is_some() {
            let unit = metric_unit(&figure.metric);
            let group = match by_unit.iter_mut().find(|(u, _)| *u == unit) {
                Some(group) => group,
                None => {
                    by_unit.push((unit, Vec::new()));
                    by_unit.last_mut().expect("just pushed")
                }
            };
            group
                .1
                .push((label, vec![published_number, figure.simulated]));
        }
    }
    let mut html = String::from("<h3>Published figures beside simulated ones</h3>\n");
    if let Some(source) = published.get("source").and_then(Value::as_str) {
        html.push_str(&format!(
            "<p class=\"note\">source: {}</p>\n",
            escape(source)
        ));
    }
    html.push_str("<div class=\"charts\">\n");
    for (unit, rows) in by_unit {
        html.push_str(&charts.bars(&BarChart {
            title: format!("{scenario}: published and simulated ({unit})"),
            x_label: unit,
            series: vec!["published".into(), "simulated".into()],
            rows,
            reference: None,
        })?);
    }
    if !ratio_rows.is_empty() {
        html.push_str(&charts.bars(&BarChart {
            title: format!("{scenario}: simulated / published"),
            x_label: "simulated / published (dashed line: 1, agreement)".into(),
            series: vec!["simulated / published".into()],
            rows: ratio_rows,
            reference: Some(1.0),
        })?);
    }
    html.push_str("</div>\n");
    html.push_str(&format!(
        "<table>\n<tr><th>figure</th><th>run</th><th>published</th><th>simulated</th>\
         <th>simulated / published</th></tr>\n{rows}</table>\n"
    ));
    if let Some(notes) = published.get("notes").and_then(Value::as_array) {
        for note in notes.iter().filter_map(Value::as_str) {
            html.push_str(&format!("<p class=\"note\">note: {}</p>\n", escape(note)));
        }
    }
    Ok(html)
}

/// The unit of a published figure's metric (see foliosim::stats::compare::Metric), so that
/// only figures in the same unit share an axis.
fn metric_unit(metric: &str) -> String {
    let parts: Vec<&str> = metric.split(':').collect();
    match parts.as_slice() {
        [kind, ..] if kind.starts_with("relative") || kind.ends_with("relative_profile") => {
            "percent".into()
        }
        ["mthp_fallback_pct", ..] => "percent".into(),
        ["iteration_ratio", ..] | ["vmstat_ratio", ..] => "ratio".into(),
        ["iteration", _, field] | ["iteration_mean", _, _, field] => {
            if field.ends_with("_pct") {
                "percent".into()
            } else if field.ends_with("_s") {
                "seconds".into()
            } else {
                field.replace('_', " ")
            }
        }
        ["vmstat", name] => name.to_string(),
        ["vmstat_per_s", name] => format!("{name} per second"),
        ["sim_time_s"] => "seconds".into(),
        _ => metric.to_string(),
    }
}

/// One line of a simulated-vs-live comparison.
struct Comparison {
    label: String,
    simulated: f64,
    live: f64,
}

fn iteration_mean(run: &RunJson, key: &str) -> Option<f64> {
    let values: Vec<f64> = run
        .iterations
        .iter()
        .filter_map(|m| m.get(key).and_then(Value::as_f64))
        .collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// What both sides have: run time, iteration means, then the counters either side counted.
fn comparisons(sim: &RunJson, live: &RunJson) -> Vec<Comparison> {
    let mut rows = vec![Comparison {
        label: "run time (ms)".into(),
        simulated: sim.sim_time_ns as f64 / 1e6,
        live: live.sim_time_ns as f64 / 1e6,
    }];
    for key in iteration_keys(&[sim, live]) {
        if let (Some(s), Some(l)) = (iteration_mean(sim, &key), iteration_mean(live, &key)) {
            let (label, scale) = iteration_axis(&key);
            rows.push(Comparison {
                label: format!("iteration mean {label}"),
                simulated: s * scale,
                live: l * scale,
            });
        }
    }
    let mut counters = |label: String, s: u64, l: u64| {
        if s != 0 || l != 0 {
            rows.push(Comparison {
                label,
                simulated: s as f64,
                live: l as f64,
            });
        }
    };
    for (name, &s) in &sim.vmstat {
        if let Some(&l) = live.vmstat.get(name) {
            counters(name.clone(), s, l);
        }
    }
    for (size, stats) in &sim.mthp {
        for (name, &s) in stats {
            if let Some(&l) = live.mthp.get(size).and_then(|m| m.get(name)) {
                counters(format!("hugepages-{size}/{name}"), s, l);
            }
        }
    }
    for (group, stats) in &sim.memcg {
        for (name, &s) in stats {
            if let Some(&l) = live.memcg.get(group).and_then(|m| m.get(name)) {
                counters(format!("memcg:{group}:{name}"), s, l);
            }
        }
    }
    rows
}

fn validate_section(
    scenario: &str,
    simulated: &[&RunJson],
    live: &[&RunJson],
    charts: &mut Charts,
) -> Result<String, String> {
    let mut html = String::new();
    let mut used = vec![false; live.len()];
    for sim in simulated {
        // the live run of the same variant (validate writes them in the same order)
        let Some(index) = (0..live.len()).find(|&i| !used[i] && live[i].variant == sim.variant)
        else {
            continue;
        };
        used[index] = true;
        let live_run = live[index];
        let pair = format!("{} vs {}", sim.label(), live_run.label());
        let rows = comparisons(sim, live_run);
        let bars: Vec<BarRow> = rows
            .iter()
            .filter(|r| r.live != 0.0)
            .take(MAX_RATIO_BARS)
            .map(|r| (r.label.clone(), vec![Some(r.simulated / r.live)]))
            .collect();
        html.push_str(&format!(
            "<h3>Simulated beside live: {}</h3>\n<div class=\"charts\">\n",
            escape(&pair)
        ));
        if !bars.is_empty() {
            html.push_str(&charts.bars(&BarChart {
                title: format!("{scenario} {pair}: simulated / live"),
                x_label: "simulated / live (dashed line: 1, agreement)".into(),
                series: vec!["simulated / live".into()],
                rows: bars,
                reference: Some(1.0),
            })?);
        }
        let prefix = format!("{scenario} {pair}");
        html.push_str(&series_charts(
            &prefix,
            &[("simulated ", sim), ("live ", live_run)],
            charts,
        )?);
        html.push_str("</div>\n<table>\n<tr><th>figure</th><th>simulated</th><th>live</th><th>simulated / live</th></tr>\n");
        for r in &rows {
            let ratio = (r.live != 0.0).then(|| r.simulated / r.live);
            let off = ratio.is_some_and(|x| !(0.5..=2.0).contains(&x));
            html.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td{}>{}</td></tr>\n",
                escape(&r.label),
                number_cell(Some(r.simulated)),
                number_cell(Some(r.live)),
                if off { " class=\"off\"" } else { "" },
                ratio.map_or("-".into(), |x| format!("{x:.3}")),
            ));
        }
        html.push_str("</table>\n");
    }
    Ok(html)
}

/// The numeric per-iteration fields of these runs, in name order.
fn iteration_keys(runs: &[&RunJson]) -> Vec<String> {
    let keys: BTreeSet<&String> = runs
        .iter()
        .flat_map(|r| r.iterations.iter())
        .flat_map(|m| m.iter().filter(|(_, v)| v.is_number()).map(|(k, _)| k))
        .collect();
    keys.into_iter().cloned().collect()
}

/// An iteration field's axis label and the factor to its unit (`time_ns` in ms).
fn iteration_axis(key: &str) -> (String, f64) {
    match key {
        "fallback_pct" => ("fallback (% of mTHP swap-outs)".into(), 1.0),
        "fallback_inc" => ("swap-out fallbacks in the iteration".into(), 1.0),
        "swpout_inc" => ("mTHP swap-outs in the iteration".into(), 1.0),
        _ => match key.strip_suffix("_ns") {
            Some(stem) => (format!("{} (ms)", stem.replace('_', " ")), 1e-6),
            None => (key.replace('_', " "), 1.0),
        },
    }
}

fn iterations_section(
    scenario: &str,
    runs: &[RunJson],
    charts: &mut Charts,
) -> Result<String, String> {
    let all: Vec<&RunJson> = runs.iter().collect();
    let keys = iteration_keys(&all);
    if keys.is_empty() {
        return Ok(String::new());
    }
    let mut html = String::from("<h3>Per-iteration figures</h3>\n<div class=\"charts\">\n");
    for key in keys {
        let (y_label, scale) = iteration_axis(&key);
        let lines: Vec<Line> = runs
            .iter()
            .filter_map(|run| {
                let points: Vec<(f64, f64)> = run
                    .iterations
                    .iter()
                    .enumerate()
                    .filter_map(|(i, m)| Some(((i + 1) as f64, m.get(&key)?.as_f64()? * scale)))
                    .collect();
                (!points.is_empty()).then(|| Line {
                    label: run.label(),
                    points,
                    dashed: run.is_live(),
                })
            })
            .collect();
        html.push_str(&charts.line(&LineChart {
            title: format!("{scenario}: {key} per iteration"),
            x_label: "iteration".into(),
            y_label,
            lines,
            markers: true,
        })?);
    }
    html.push_str("</div>\n");
    Ok(html)
}

/// Which chart a series column goes to, its legend label and its factor to the chart's unit.
fn column_chart(column: &str) -> Option<(usize, String, f64)> {
    let parts: Vec<&str> = column.split(':').collect();
    Some(match parts.as_slice() {
        ["t_ns"] => return None,
        ["nr_free_pages"] => (0, "free memory".into(), PAGE_BYTES / MIB),
        ["memcg", name, "usage_pages"] => (0, format!("memcg {name} usage"), PAGE_BYTES / MIB),
        ["zram", name, "mem_used_total"] => (0, format!("zram {name} memory used"), 1.0 / MIB),
        ["pswpout" | "pswpin"] => (1, column.to_string(), 1.0),
        ["pgfault" | "pgscan_direct" | "pgscan_kswapd" | "oom_kill"] => {
            (2, column.to_string(), 1.0)
        }
        _ => (3, column.to_string(), 1.0),
    })
}

const SERIES_CHARTS: [(&str, &str); 4] = [
    ("memory", "MiB"),
    ("swap traffic", "pages swapped (cumulative)"),
    ("page faults and reclaim scans", "count (cumulative)"),
    ("other counters", "count"),
];

/// The time-series charts of one run, or of runs drawn together (a simulated and a live one,
/// each line's label prefixed by its run's).
fn series_charts(
    title: &str,
    runs: &[(&str, &RunJson)],
    charts: &mut Charts,
) -> Result<String, String> {
    let max_ns = runs
        .iter()
        .filter_map(|(_, r)| r.series.get("t_ns")?.last().copied())
        .max()
        .unwrap_or(0);
    let (unit, ns_per_unit) = if max_ns >= 2_000_000_000 {
        ("s", 1e9)
    } else if max_ns >= 2_000_000 {
        ("ms", 1e6)
    } else {
        ("µs", 1e3)
    };
    let mut lines: [Vec<Line>; 4] = Default::default();
    for (prefix, run) in runs {
        let Some(times) = run.series.get("t_ns") else {
            continue;
        };
        for (column, values) in &run.series {
            let Some((chart, label, scale)) = column_chart(column) else {
                continue;
            };
            // oom_kill is drawn only when something was killed
            if values.len() < 2 || (column == "oom_kill" && values.iter().all(|&v| v == 0)) {
                continue;
            }
            let points = times
                .iter()
                .zip(values)
                .map(|(&t, &v)| (t as f64 / ns_per_unit, v as f64 * scale))
                .collect();
            lines[chart].push(Line {
                label: format!("{prefix}{label}"),
                points,
                dashed: prefix.starts_with("live"),
            });
        }
    }
    let mut html = String::new();
    for (chart_lines, (name, y_label)) in lines.into_iter().zip(SERIES_CHARTS) {
        if chart_lines.is_empty() {
            continue;
        }
        html.push_str(&charts.line(&LineChart {
            title: format!("{title}: {name}"),
            x_label: format!("simulated time ({unit})"),
            y_label: y_label.into(),
            lines: chart_lines,
            markers: false,
        })?);
    }
    Ok(html)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::short_number;

    #[test]
    fn series_columns_go_to_their_charts_in_their_units() {
        assert_eq!(column_chart("t_ns"), None);
        assert_eq!(
            column_chart("nr_free_pages"),
            Some((0, "free memory".into(), 4096.0 / MIB))
        );
        assert_eq!(
            column_chart("memcg:bench:usage_pages").map(|c| c.1),
            Some("memcg bench usage".into())
        );
        assert_eq!(
            column_chart("zram:zram0:mem_used_total"),
            Some((0, "zram zram0 memory used".into(), 1.0 / MIB))
        );
        assert_eq!(column_chart("pswpin").map(|c| c.0), Some(1));
        assert_eq!(column_chart("pgscan_kswapd").map(|c| c.0), Some(2));
        assert_eq!(column_chart("nr_something_new").map(|c| c.0), Some(3));
    }

    #[test]
    fn figures_share_an_axis_only_in_the_same_unit() {
        assert_eq!(metric_unit("relative:throughput_kbps:4K"), "percent");
        assert_eq!(
            metric_unit("vmstat_relative_profile:pswpout:v6.9"),
            "percent"
        );
        assert_eq!(metric_unit("mthp_fallback_pct:64kB"), "percent");
        assert_eq!(metric_unit("iteration_mean:2:10:fallback_pct"), "percent");
        assert_eq!(metric_unit("iteration:1:time_s"), "seconds");
        assert_eq!(metric_unit("iteration_ratio:1:5:time_s:base"), "ratio");
        assert_eq!(metric_unit("vmstat:pswpout"), "pswpout");
        assert_eq!(metric_unit("sim_time_s"), "seconds");
    }

    #[test]
    fn iteration_times_are_drawn_in_milliseconds() {
        assert_eq!(iteration_axis("time_ns"), ("time (ms)".to_string(), 1e-6));
        assert_eq!(iteration_axis("fallback_pct").1, 1.0);
    }

    #[test]
    fn short_number_is_used_for_table_cells_too() {
        assert_eq!(number_cell(Some(123456.7)), "123457");
        assert_eq!(number_cell(Some(-13.6)), "-13.60");
        assert_eq!(number_cell(None), "-");
        assert_eq!(short_number(2048.0), "2048");
    }
}
