//! Published figures beside simulated ones, for `foliosim reproduce`.
//!
//! A bundled scenario lists its seed's figures as `[[published.figure]]` entries:
//! ```toml
//! [[published.figure]]
//! label = "64K throughput vs 4K, before the series"
//! profile = "v6.9"
//! variant = "64K"
//! metric = "relative:throughput_kbps:4K"   # see `Metric`
//! published = -13.6                          # in the metric's unit (percent here)
//! ```

use super::result::RunResult;
use serde::Serialize;
use serde_json::Value;

/// What a figure measures, parsed from its `metric` string.
#[derive(Clone, Debug, PartialEq)]
pub enum Metric {
    /// `relative:FIELD:BASE`: the sum of a per-task field over all tasks, in percent relative to
    /// the same sum in variant BASE of the same profile.
    Relative { field: String, base_variant: String },
    /// `relative_profile:FIELD:BASE`: the same sum, relative to profile BASE with the same variant.
    RelativeProfile { field: String, base_profile: String },
    /// `mthp_fallback_pct:SIZE`: swpout_fallback / (swpout + swpout_fallback) of one mTHP size.
    MthpFallbackPct(String),
    /// `iteration:N:FIELD`: one iteration's figure (1-based).
    Iteration { index: usize, field: String },
    /// `iteration_mean:FIRST:LAST:FIELD`: mean of an iteration figure over a range (1-based,
    /// inclusive).
    IterationMean {
        first: usize,
        last: usize,
        field: String,
    },
    /// `iteration_ratio:FIRST:LAST:FIELD:BASE`: mean of an iteration figure over a range
    /// (1-based, inclusive) over its mean over all iterations of variant BASE of the same
    /// profile (e.g. a cycle's time relative to a baseline configuration).
    IterationRatio {
        first: usize,
        last: usize,
        field: String,
        base_variant: String,
    },
    /// `vmstat:NAME`.
    Vmstat(String),
    /// `vmstat_relative_profile:NAME:BASE`: a counter in percent relative to profile BASE with
    /// the same variant.
    VmstatRelativeProfile { name: String, base_profile: String },
    /// `vmstat_ratio:NUM:DEN`: one counter over another.
    VmstatRatio { num: String, den: String },
    /// `vmstat_per_s:NAME`: a counter per simulated second.
    VmstatPerS(String),
    /// `sim_time_s`.
    SimTimeS,
    /// `sim_time_relative_profile:BASE`: simulated time in percent relative to profile BASE.
    SimTimeRelativeProfile(String),
}

impl Metric {
    pub fn parse(s: &str) -> Result<Metric, String> {
        let parts: Vec<&str> = s.split(':').collect();
        let num = |p: &str| {
            p.parse::<usize>()
                .map_err(|_| format!("expected a number, found {p:?}"))
        };
        Ok(match parts.as_slice() {
            ["relative", field, base] => Metric::Relative { field: field.to_string(), base_variant: base.to_string() },
            ["relative_profile", field, base] => {
                Metric::RelativeProfile { field: field.to_string(), base_profile: base.to_string() }
            }
            ["mthp_fallback_pct", size] => Metric::MthpFallbackPct(size.to_string()),
            ["iteration", n, field] => Metric::Iteration { index: num(n)?, field: field.to_string() },
            ["iteration_mean", a, b, field] => Metric::IterationMean { first: num(a)?, last: num(b)?, field: field.to_string() },
            ["iteration_ratio", a, b, field, base] => Metric::IterationRatio {
                first: num(a)?,
                last: num(b)?,
                field: field.to_string(),
                base_variant: base.to_string(),
            },
            ["vmstat", name] => Metric::Vmstat(name.to_string()),
            ["vmstat_relative_profile", name, base] => Metric::VmstatRelativeProfile {
                name: name.to_string(),
                base_profile: base.to_string(),
            },
            ["vmstat_ratio", num, den] => Metric::VmstatRatio {
                num: num.to_string(),
                den: den.to_string(),
            },
            ["vmstat_per_s", name] => Metric::VmstatPerS(name.to_string()),
            ["sim_time_s"] => Metric::SimTimeS,
            ["sim_time_relative_profile", base] => Metric::SimTimeRelativeProfile(base.to_string()),
            _ => {
                return Err(format!(
                    "expected relative:FIELD:BASE, relative_profile:FIELD:BASE, mthp_fallback_pct:SIZE, iteration:N:FIELD, iteration_mean:FIRST:LAST:FIELD, iteration_ratio:FIRST:LAST:FIELD:BASE, vmstat:NAME, vmstat_relative_profile:NAME:BASE, vmstat_ratio:NUM:DEN, vmstat_per_s:NAME, sim_time_s or sim_time_relative_profile:BASE, found {s:?}"
                ))
            }
        })
    }

    fn evaluate(&self, run: &RunResult, all: &[RunResult]) -> Option<f64> {
        let task_sum = |r: &RunResult, field: &str| -> f64 {
            r.tasks.iter().filter_map(|t| t.get(field)?.as_f64()).sum()
        };
        // A field named `..._s` is its `..._ns` counterpart in seconds.
        let iteration_of = |run: &RunResult, i: usize, field: &str| {
            let it = run.iterations.get(i.checked_sub(1)?)?;
            match field.strip_suffix("_s") {
                Some(stem) if !it.contains_key(field) => {
                    Some(it.get(&format!("{stem}_ns"))?.as_f64()? / 1e9)
                }
                _ => it.get(field)?.as_f64(),
            }
        };
        let mean = |r: &RunResult, first: usize, last: usize, field: &str| {
            let v: Vec<f64> = (first..=last)
                .filter_map(|i| iteration_of(r, i, field))
                .collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        let variant_in_profile = |variant: &str| {
            all.iter()
                .find(|r| r.profile == run.profile && r.variant.as_deref() == Some(variant))
        };
        let same_variant_in = |profile: &str| {
            all.iter()
                .find(|r| r.profile == profile && r.variant == run.variant)
        };
        match self {
            Metric::Relative {
                field,
                base_variant,
            } => {
                let base = variant_in_profile(base_variant)?;
                let b = task_sum(base, field);
                (b > 0.0).then(|| (task_sum(run, field) / b - 1.0) * 100.0)
            }
            Metric::RelativeProfile {
                field,
                base_profile,
            } => {
                let base = same_variant_in(base_profile)?;
                let b = task_sum(base, field);
                (b > 0.0).then(|| (task_sum(run, field) / b - 1.0) * 100.0)
            }
            Metric::MthpFallbackPct(size) => {
                let stats = run.mthp.get(size)?;
                let (out, fallback) = (stats["swpout"] as f64, stats["swpout_fallback"] as f64);
                (out + fallback > 0.0).then(|| fallback * 100.0 / (out + fallback))
            }
            Metric::Iteration { index, field } => iteration_of(run, *index, field),
            Metric::IterationMean { first, last, field } => mean(run, *first, *last, field),
            Metric::IterationRatio {
                first,
                last,
                field,
                base_variant,
            } => {
                let base = variant_in_profile(base_variant)?;
                let b = mean(base, 1, base.iterations.len(), field)?;
                let v = mean(run, *first, *last, field)?;
                (b > 0.0).then(|| v / b)
            }
            Metric::Vmstat(name) => run.vmstat.get(name).map(|&v| v as f64),
            Metric::VmstatRelativeProfile { name, base_profile } => {
                let base = same_variant_in(base_profile)?;
                let (v, b) = (
                    *run.vmstat.get(name)? as f64,
                    *base.vmstat.get(name)? as f64,
                );
                (b > 0.0).then(|| (v / b - 1.0) * 100.0)
            }
            Metric::VmstatRatio { num, den } => {
                let (n, d) = (*run.vmstat.get(num)? as f64, *run.vmstat.get(den)? as f64);
                (d > 0.0).then(|| n / d)
            }
            Metric::VmstatPerS(name) => {
                let (v, secs) = (*run.vmstat.get(name)? as f64, run.sim_time_ns as f64 / 1e9);
                (secs > 0.0).then(|| v / secs)
            }
            Metric::SimTimeS => Some(run.sim_time_ns as f64 / 1e9),
            Metric::SimTimeRelativeProfile(base_profile) => {
                let b = same_variant_in(base_profile)?.sim_time_ns as f64;
                (b > 0.0).then(|| (run.sim_time_ns as f64 / b - 1.0) * 100.0)
            }
        }
    }
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Figure {
    pub label: String,
    pub profile: String,
    pub variant: Option<String>,
    pub metric: String,
    pub simulated: Option<f64>,
    pub published: Value,
}

/// The published figures of a scenario with their simulated counterparts (None when the run was
/// not part of this invocation or has no such figure).
pub fn figures(published: &Value, runs: &[RunResult]) -> Result<Vec<Figure>, String> {
    let Some(list) = published.get("figure").and_then(|f| f.as_array()) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (i, f) in list.iter().enumerate() {
        let text = |k: &str| f.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let metric_text = text("metric")
            .ok_or_else(|| format!("published.figure[{i}].metric: expected a string"))?;
        let metric = Metric::parse(&metric_text)
            .map_err(|m| format!("published.figure[{i}].metric: {m}"))?;
        let profile = text("profile")
            .ok_or_else(|| format!("published.figure[{i}].profile: expected a string"))?;
        let variant = text("variant");
        let run = runs
            .iter()
            .find(|r| r.profile == profile && r.variant == variant);
        out.push(Figure {
            label: text("label").unwrap_or_else(|| metric_text.clone()),
            profile,
            variant,
            metric: metric_text,
            simulated: run.and_then(|r| metric.evaluate(r, runs)),
            published: f.get("published").cloned().unwrap_or(Value::Null),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(profile: &str, variant: &str, kbps: u64, pcts: &[f64]) -> RunResult {
        RunResult {
            profile: profile.into(),
            variant: Some(variant.into()),
            seed: 1,
            sim_time_ns: 2_000_000_000,
            vmstat: [("pswpout".to_string(), 7u64)].into_iter().collect(),
            mthp: Default::default(),
            memcg: Default::default(),
            zram: Default::default(),
            zswap: Default::default(),
            tasks: vec![
                json!({"throughput_kbps": kbps})
                    .as_object()
                    .unwrap()
                    .clone();
                2
            ],
            iterations: pcts
                .iter()
                .map(|p| json!({"fallback_pct": p}).as_object().unwrap().clone())
                .collect(),
            series: Default::default(),
            series_interval_ns: None,
        }
    }

    #[test]
    fn figures_evaluate_each_metric_against_the_right_run() {
        let runs = vec![
            run("v6.9", "4K", 100, &[]),
            run("v6.9", "64K", 80, &[50.0, 100.0, 90.0]),
            run("v6.10", "64K", 150, &[]),
        ];
        let published = json!({"figure": [
            {"label": "rel", "profile": "v6.9", "variant": "64K", "metric": "relative:throughput_kbps:4K", "published": -13.6},
            {"profile": "v6.9", "variant": "64K", "metric": "iteration_mean:2:3:fallback_pct", "published": 100},
            {"profile": "v6.9", "variant": "64K", "metric": "iteration:1:fallback_pct"},
            {"profile": "v6.9", "variant": "4K", "metric": "vmstat:pswpout"},
            {"profile": "v6.10", "variant": "64K", "metric": "relative:throughput_kbps:4K"},
            {"profile": "v6.10", "variant": "64K", "metric": "vmstat_relative_profile:pswpout:v6.9"},
            {"profile": "v6.9", "variant": "4K", "metric": "vmstat_per_s:pswpout"},
            {"profile": "v6.9", "variant": "4K", "metric": "vmstat_ratio:pswpout:pswpout"},
            {"profile": "v6.10", "variant": "64K", "metric": "sim_time_relative_profile:v6.9"},
            {"profile": "v6.9", "variant": "64K", "metric": "iteration_ratio:3:3:fallback_pct:64K"},
        ]});
        let f = figures(&published, &runs).unwrap();
        assert!((f[0].simulated.unwrap() + 20.0).abs() < 1e-9);
        assert_eq!(f[1].simulated, Some(95.0));
        assert_eq!(f[2].simulated, Some(50.0));
        assert_eq!(f[3].simulated, Some(7.0));
        assert_eq!(f[4].simulated, None, "no 4K run in v6.10");
        assert_eq!(f[5].simulated, Some(0.0));
        assert_eq!(f[6].simulated, Some(3.5));
        assert_eq!(f[7].simulated, Some(1.0));
        assert_eq!(f[8].simulated, Some(0.0));
        // Iteration 3 (90) over the mean of all of the base's iterations (80).
        assert_eq!(f[9].simulated, Some(90.0 / 80.0));
        assert_eq!(f[0].published, json!(-13.6));
    }

    #[test]
    fn bad_metrics_are_named() {
        let e = figures(
            &json!({"figure": [{"profile": "v6.9", "metric": "median:x"}]}),
            &[],
        )
        .unwrap_err();
        assert!(e.contains("published.figure[0].metric"), "{e}");
    }
}
