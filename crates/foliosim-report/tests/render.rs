//! The report of small hand-made results: which charts it draws, that it loads nothing from
//! anywhere, that it is byte-stable, and how it refuses what is not a foliosim result.

use foliosim_report::{parse, render_html};
use serde_json::{json, Value};

fn run(profile: &str, variant: &str, live: bool, scale: u64) -> Value {
    let mut run = json!({
        "profile": profile,
        "variant": variant,
        "seed": 1,
        "sim_time_ns": 3_000_000 * scale,
        "vmstat": {"pswpout": 10 * scale, "pswpin": 4, "pgfault": 100},
        "mthp": {"64kB": {"swpout": 3, "swpout_fallback": 1}},
        "memcg": {"bench": {"usage_pages": 50}},
        "zram": {},
        "tasks": [{"name": "t", "exit_ns": 3_000_000}],
        "iterations": [
            {"fallback_pct": 20.0 * scale as f64, "time_ns": 1_000_000},
            {"fallback_pct": 50.0, "time_ns": 2_000_000},
            {"fallback_pct": null, "time_ns": 1_500_000},
        ],
        "series": {
            "t_ns": [0, 1_000_000, 2_000_000, 3_000_000],
            "nr_free_pages": [1000, 900, 800, 850],
            "pswpout": [0, 2, 6, 10 * scale],
            "pswpin": [0, 0, 2, 4],
            "pgfault": [0, 40, 80, 100],
            "pgscan_kswapd": [0, 5, 10, 20],
            "oom_kill": [0, 0, 0, 0],
            "memcg:bench:usage_pages": [0, 30, 50, 50],
        }
    });
    if live {
        run["live"] = json!({"cgroup": "/foliosim-1"});
    }
    run
}

fn document(runs: Vec<Value>, figures: Value) -> Value {
    json!({
        "foliosim_version": "0.1.0",
        "scenario": "fixture",
        "runs": runs,
        "published": {"figure": figures, "source": "a <cover> letter", "notes": ["a note"]},
    })
}

fn reproduce() -> Value {
    document(
        vec![run("v6.10", "64K", false, 1), run("v6.12", "64K", false, 2)],
        json!([
            {"label": "first fallback", "profile": "v6.10", "variant": "64K",
             "metric": "iteration:1:fallback_pct", "published": 40},
            {"label": "pswpout", "profile": "v6.12", "variant": "64K",
             "metric": "vmstat:pswpout", "published": 25},
        ]),
    )
}

/// The titles of the page's charts, in order.
fn chart_titles(html: &str) -> Vec<String> {
    html.split("<figure class=\"chart\"")
        .skip(1)
        .map(|f| {
            let start = f.find("data-title=\"").unwrap() + "data-title=\"".len();
            let end = start + f[start..].find('"').unwrap();
            f[start..end].to_string()
        })
        .collect()
}

/// Whether an SVG text element says exactly `text`.
fn drawn(svg: &str, text: &str) -> bool {
    svg.contains(&format!(">\n{text}\n</text>"))
}

fn assert_self_contained(html: &str) {
    for attribute in ["src=", "href="] {
        for (at, _) in html.match_indices(attribute) {
            let value = &html[at + attribute.len()..];
            assert!(
                value.starts_with("\"#"),
                "{attribute} that is not a link within the page: {}",
                &value[..value.len().min(60)]
            );
        }
    }
    assert!(!html.contains("<script"), "the report needs no script");
    assert!(!html.contains("@import") && !html.contains("url("));
}

#[test]
fn a_reproduce_result_has_figures_iterations_and_each_runs_series() {
    let html = render_html(&reproduce().to_string()).unwrap();
    assert_eq!(
        chart_titles(&html),
        vec![
            "fixture: published and simulated (percent)",
            "fixture: published and simulated (pswpout)",
            "fixture: simulated / published",
            "fixture: fallback_pct per iteration",
            "fixture: time_ns per iteration",
            "fixture v6.10/64K: memory",
            "fixture v6.10/64K: swap traffic",
            "fixture v6.10/64K: page faults and reclaim scans",
            "fixture v6.12/64K: memory",
            "fixture v6.12/64K: swap traffic",
            "fixture v6.12/64K: page faults and reclaim scans",
        ]
    );
    // every chart is an SVG with its title drawn in it
    for title in chart_titles(&html) {
        let figure = html
            .split(&format!("data-title=\"{title}\""))
            .nth(1)
            .unwrap();
        let svg = &figure[..figure.find("</figure>").unwrap()];
        assert!(
            svg.trim_start_matches(">\n").starts_with("<svg "),
            "{title}"
        );
        assert!(drawn(svg, &title), "{title}: title not drawn");
    }
    // simulated 20 (iteration 1 of v6.10) against published 40, and 20 pswpout against 25
    assert!(
        html.contains("<td>40.00</td><td>20.00</td><td class=\"off\">0.500</td>")
            || html.contains("<td>40.00</td><td>20.00</td><td>0.500</td>"),
        "{html}"
    );
    assert!(html.contains("<td>25.00</td><td>20.00</td><td>0.800</td>"));
    // axes carry their units; the time axis is in ms for a 3 ms run
    assert!(html.contains("simulated time (ms)"));
    assert!(drawn(&html, "MiB"));
    assert!(html.contains("time (ms)"));
    // the legend names the lines; oom_kill, never counted, is not drawn
    assert!(drawn(&html, "memcg bench usage") && drawn(&html, "free memory"));
    assert!(drawn(&html, "pgscan_kswapd") && !drawn(&html, "oom_kill"));
    // text from the result is escaped
    assert!(html.contains("a &lt;cover&gt; letter"));
    assert_self_contained(&html);
}

#[test]
fn the_same_result_gives_the_same_bytes() {
    let text = reproduce().to_string();
    assert_eq!(render_html(&text).unwrap(), render_html(&text).unwrap());
    let pretty = serde_json::to_string_pretty(&reproduce()).unwrap();
    assert_eq!(render_html(&text).unwrap(), render_html(&pretty).unwrap());
}

#[test]
fn a_validate_result_shows_simulated_beside_live() {
    let doc = document(
        vec![
            run("v6.12", "4K", false, 1),
            run("live-6.12.3", "4K", true, 2),
        ],
        json!([]),
    );
    let html = render_html(&doc.to_string()).unwrap();
    let titles = chart_titles(&html);
    let pair = "fixture v6.12/4K vs live-6.12.3/4K";
    for expected in [
        format!("{pair}: simulated / live"),
        format!("{pair}: memory"),
        format!("{pair}: swap traffic"),
        "fixture: fallback_pct per iteration".into(),
    ] {
        assert!(titles.contains(&expected), "{expected} not in {titles:?}");
    }
    // no chart of a run on its own: the pair is drawn together
    assert!(
        !titles.iter().any(|t| t == "fixture v6.12/4K: memory"),
        "{titles:?}"
    );
    assert!(drawn(&html, "simulated pswpout") && drawn(&html, "live pswpout"));
    // pswpout 10 simulated against 20 live
    assert!(html.contains("<td>pswpout</td><td>10.00</td><td>20.00</td><td>0.500</td>"));
    assert!(html.contains("validate ·"));
    assert_self_contained(&html);
}

#[test]
fn reproduce_all_is_an_array_of_documents() {
    let mut second = reproduce();
    second["scenario"] = json!("second");
    let all = json!([reproduce(), second]);
    let html = render_html(&all.to_string()).unwrap();
    assert!(html.contains("<a href=\"#scenario-0\">fixture</a>"));
    assert!(html.contains("<a href=\"#scenario-1\">second</a>"));
    assert!(chart_titles(&html).contains(&"second: simulated / published".to_string()));
    assert_eq!(parse(&all.to_string()).unwrap().len(), 2);
}

#[test]
fn what_is_not_a_foliosim_result_is_refused_in_one_line() {
    let cases = [
        ("{\"runs\": [", "found malformed JSON"),
        ("[]", "found an empty array"),
        ("42", "found a number"),
        ("{\"name\": \"x\"}", "found an object without \"foliosim_version\""),
        (
            "{\"foliosim_version\": \"0.1.0\", \"scenario\": \"s\", \"runs\": {}}",
            "runs: expected a foliosim result",
        ),
        (
            "{\"foliosim_version\": \"0.1.0\", \"scenario\": \"s\", \"runs\": [{\"profile\": \"v6.12\"}]}",
            "runs[0]: expected a foliosim result",
        ),
        ("[{\"foliosim_version\": 1}]", "[0]: foliosim_version"),
    ];
    for (text, expected) in cases {
        let e = render_html(text).unwrap_err();
        assert!(e.contains(expected), "{text}: {e}");
        assert!(!e.contains('\n'), "{text}: {e}");
    }
    // a run without a required field is named
    let mut doc = reproduce();
    doc["runs"][1].as_object_mut().unwrap().remove("series");
    let e = render_html(&doc.to_string()).unwrap_err();
    assert!(e.contains("runs[1]") && e.contains("series"), "{e}");
    // a published figure the engine cannot read is named
    let mut doc = reproduce();
    doc["published"]["figure"][0]["metric"] = json!("median:x");
    let e = render_html(&doc.to_string()).unwrap_err();
    assert!(e.contains("published.figure[0].metric"), "{e}");
}
