//! What `foliosim calibrate` makes of its measurements: the median and spread of repeated runs,
//! and the hardware profile file (docs/hardware.md's format) that gives each measured cost with
//! its median and spread, and every other cost from a base profile, marked so.

use foliosim::machine::hw::{HwProfile, COST_FIELDS};

/// The median and the range of a cost's repeated measurements, in the cost's unit. A cost
/// measured as a difference can come out negative in a noisy run: the range shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spread {
    pub median: i64,
    pub min: i64,
    pub max: i64,
    pub runs: usize,
}

/// The median (the mean of the middle two for an even count, rounded down) and min-max of
/// `values`; None when there are none.
pub fn spread(values: &[i64]) -> Option<Spread> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let n = sorted.len();
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]).div_euclid(2)
    };
    Some(Spread {
        median,
        min: sorted[0],
        max: sorted[n - 1],
        runs: n,
    })
}

/// One cost this machine measured: its spread (a non-negative median) and how it was measured
/// (one phrase).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measured {
    pub cost: &'static str,
    pub spread: Spread,
    pub how: String,
}

/// Where and when the measurements were made.
pub struct Origin<'a> {
    pub host: &'a str,
    pub date: &'a str,
    pub base_name: &'a str,
    /// What held the measurements' conditions (page reporting, the pre-touch, the machine's
    /// load, the CPUs): appended to every measured cost's source.
    pub conditions: &'a str,
}

/// A TOML basic string: JSON's string escapes are all valid in TOML.
fn toml_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// The profile file: `measured` costs with their medians and sources, every other cost from
/// `base` with its source prefixed "from base profile NAME: ". Panics if a measured cost is not
/// one of the model's (the caller names them from [`COST_FIELDS`]) or its median is negative.
pub fn profile_text(base: &HwProfile, measured: &[Measured], origin: &Origin) -> String {
    for m in measured {
        assert!(COST_FIELDS.contains(&m.cost), "unknown cost {}", m.cost);
        assert!(m.spread.median >= 0, "{}: negative median", m.cost);
    }
    let mut text = format!(
        "# Written by `foliosim calibrate` on {host}, {date}: the costs it measured here, and \
         the others\n# from the base profile {base}. docs/calibration.md says how each is \
         measured.\n\nname = {name}\ndescription = {description}\narch = {arch}\n",
        host = origin.host,
        date = origin.date,
        base = origin.base_name,
        name = toml_string(&format!("calibrated-{}", origin.host)),
        description = toml_string(&format!(
            "{} as measured by foliosim calibrate on {}, {}; unmeasured costs from {}",
            origin.host, origin.host, origin.date, origin.base_name
        )),
        arch = toml_string(base.costs.arch.name()),
    );
    for (field, base_value) in base.costs.values() {
        let (value, source) = match measured.iter().find(|m| m.cost == field) {
            Some(m) => (
                m.spread.median as u64,
                format!(
                    "measured by foliosim calibrate on {}, {}, median of {}, spread {}-{}: {}{}",
                    origin.host,
                    origin.date,
                    m.spread.runs,
                    m.spread.min,
                    m.spread.max,
                    m.how,
                    if origin.conditions.is_empty() {
                        String::new()
                    } else {
                        format!("; conditions: {}", origin.conditions)
                    }
                ),
            ),
            None => (
                base_value,
                format!(
                    "from base profile {}: {}",
                    origin.base_name,
                    base.source(field).unwrap_or("")
                ),
            ),
        };
        text.push_str(&format!(
            "\n[cost.{field}]\nvalue = {value}\nsource = {}\n",
            toml_string(&source)
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use foliosim::machine::hw;

    #[test]
    fn median_and_spread() {
        let s = spread(&[30, 10, 20, 50, 40]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.runs), (30, 10, 50, 5));
        let s = spread(&[7, 1, 4, 100]).unwrap();
        assert_eq!((s.median, s.min, s.max), (5, 1, 100));
        let s = spread(&[-148, 600, 700]).unwrap();
        assert_eq!((s.median, s.min, s.max), (600, -148, 700));
        assert_eq!(spread(&[9]).unwrap().median, 9);
        assert_eq!(spread(&[]), None);
    }

    #[test]
    fn a_written_profile_parses_back_with_measured_and_base_values() {
        let base = hw::profile("x86-server").unwrap();
        let measured = vec![
            Measured {
                cost: "zero_page_ns",
                spread: spread(&[333, 340, 329]).unwrap(),
                how: "a \"THP\" fault per 4 KiB\nwith a backslash \\".into(),
            },
            Measured {
                cost: "word_write_ns_x1000",
                spread: spread(&[880, 890]).unwrap(),
                how: "usemem's loop".into(),
            },
        ];
        let origin = Origin {
            host: "box",
            date: "2026-11-24",
            base_name: "x86-server",
            conditions: "page reporting held off",
        };
        let text = profile_text(&base, &measured, &origin);
        let p = HwProfile::parse(&text).expect("the written profile parses");
        assert_eq!(p.costs.name, "calibrated-box");
        assert_eq!(p.costs.arch, base.costs.arch);
        assert_eq!(p.costs.zero_page_ns, 333);
        assert_eq!(p.costs.word_write_ns_x1000, 885);
        assert_eq!(
            p.source("zero_page_ns").unwrap(),
            "measured by foliosim calibrate on box, 2026-11-24, median of 3, spread 329-340: \
             a \"THP\" fault per 4 KiB\nwith a backslash \\; conditions: page reporting held off"
        );
        // every cost not measured keeps the base's value, its source marked
        for (field, value) in p.costs.values() {
            if field == "zero_page_ns" || field == "word_write_ns_x1000" {
                continue;
            }
            let base_value = base
                .costs
                .values()
                .iter()
                .find(|(f, _)| *f == field)
                .unwrap()
                .1;
            assert_eq!(value, base_value, "{field}");
            assert_eq!(
                p.source(field).unwrap(),
                format!(
                    "from base profile x86-server: {}",
                    base.source(field).unwrap()
                ),
                "{field}"
            );
        }
    }
}
