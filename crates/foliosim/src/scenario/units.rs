//! Units of a scenario's values: sizes (`64K`, `1GiB`) and times (`10ms`), parsed with messages
//! that say what was expected, and sizes formatted for messages.

/// Parses a size in bytes: `4096`, `64K`, `512M`, `1G`, `2T` (binary multiples, any case), also
/// `64KiB`, `512MiB`, `1GiB` and `4096B`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let expected = || format!("expected a size such as 4096, 64K, 512M or 1GiB, found {s:?}");
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!("expected a size of at least 0, found {s:?}"));
    }
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if digits_end == 0 {
        return Err(expected());
    }
    let number: u64 = t[..digits_end]
        .parse()
        .map_err(|_| format!("expected a size below 16 EiB, found {s:?}"))?;
    let shift = match t[digits_end..].trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        "t" | "tib" => 40,
        _ => return Err(expected()),
    };
    number
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("expected a size below 16 EiB, found {s:?}"))
}

/// Parses a time in nanoseconds: `500ns`, `10us`, `1ms`, `2s`. A unit is required.
pub fn parse_time(s: &str) -> Result<u64, String> {
    let expected =
        || format!("expected a time with a unit (ns, us, ms, s) such as 10ms, found {s:?}");
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!("expected a time of at least 0, found {s:?}"));
    }
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if digits_end == 0 {
        return Err(expected());
    }
    let number: u64 = t[..digits_end]
        .parse()
        .map_err(|_| format!("expected a time below 584 years, found {s:?}"))?;
    let ns_per_unit: u64 = match t[digits_end..].trim() {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return Err(expected()),
    };
    number
        .checked_mul(ns_per_unit)
        .ok_or_else(|| format!("expected a time below 584 years, found {s:?}"))
}

/// A size for messages: "512 MiB", "1 GiB", or bytes when not a whole multiple.
pub fn format_size(bytes: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1u64 << shift && bytes.is_multiple_of(1u64 << shift) {
            return format!("{} {unit}", bytes >> shift);
        }
    }
    format!("{bytes} bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("1 G"), Ok(1 << 30));
        assert_eq!(parse_size("2T"), Ok(2 << 40));
        assert_eq!(parse_size("4096B"), Ok(4096));
        assert_eq!(parse_size("0"), Ok(0));
        for bad in [
            "",
            "M",
            "-1G",
            "1.5G",
            "12X",
            "1GB",
            "99999999999999999999",
            "16777216T",
        ] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
        assert!(parse_size("-1G").unwrap_err().contains("at least 0"));
        assert_eq!(format_size(512 << 20), "512 MiB");
        assert_eq!(format_size(4097), "4097 bytes");
    }

    #[test]
    fn times() {
        assert_eq!(parse_time("500ns"), Ok(500));
        assert_eq!(parse_time("10us"), Ok(10_000));
        assert_eq!(parse_time("1ms"), Ok(1_000_000));
        assert_eq!(parse_time("2s"), Ok(2_000_000_000));
        assert_eq!(parse_time("0ns"), Ok(0));
        for bad in ["", "10", "ms", "-1ms", "1.5ms", "1h", "99999999999s"] {
            assert!(parse_time(bad).is_err(), "{bad:?}");
        }
    }
}

/// Properties of the unit parsers, each checked against values computed here another way (the
/// multiples written out, products in u128) rather than by the parsers themselves.
#[cfg(test)]
mod properties {
    use super::*;
    use crate::scenario::parse::test_support::{parse, MINIMAL};
    use proptest::prelude::*;

    /// The size units in lower case with their multiples written out.
    const SIZE_UNITS: &[(&str, u128)] = &[
        ("", 1),
        ("b", 1),
        ("k", 1_024),
        ("kib", 1_024),
        ("m", 1_048_576),
        ("mib", 1_048_576),
        ("g", 1_073_741_824),
        ("gib", 1_073_741_824),
        ("t", 1_099_511_627_776),
        ("tib", 1_099_511_627_776),
    ];

    /// The time units (case matters) with their nanoseconds written out.
    const TIME_UNITS: &[(&str, u128)] = &[
        ("ns", 1),
        ("us", 1_000),
        ("µs", 1_000),
        ("ms", 1_000_000),
        ("s", 1_000_000_000),
    ];

    const SIZE_EXPECTED: &str = "expected a size such as 4096, 64K, 512M or 1GiB";
    const TIME_EXPECTED: &str = "expected a time with a unit (ns, us, ms, s) such as 10ms";

    /// A size unit in any mix of cases, with its multiple.
    fn size_unit() -> impl Strategy<Value = (String, u128)> {
        (0..SIZE_UNITS.len(), any::<u8>()).prop_map(|(i, case)| {
            let (unit, multiple) = SIZE_UNITS[i];
            let unit = unit
                .chars()
                .enumerate()
                .map(|(j, c)| {
                    if case & (1 << j) != 0 {
                        c.to_ascii_uppercase()
                    } else {
                        c
                    }
                })
                .collect();
            (unit, multiple)
        })
    }

    /// Decimal digits of up to 25 places (beyond u64, within u128), sometimes zero-padded.
    fn digits() -> impl Strategy<Value = String> {
        prop_oneof![
            (0u64..100_000).prop_map(|n| n.to_string()),
            any::<u64>().prop_map(|n| n.to_string()),
            "[0-9]{1,25}",
        ]
    }

    /// Whitespace the parsers allow around a value and between its number and unit.
    fn space() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec!["", " ", "  "])
    }

    /// A string of letters that is none of `units` (compared as `fold` makes them).
    fn not_a_unit(
        units: &'static [(&'static str, u128)],
        fold: fn(&str) -> String,
    ) -> impl Strategy<Value = String> {
        "[a-zA-Zµ]{1,4}".prop_filter("a unit", move |s| !units.iter().any(|(u, _)| *u == fold(s)))
    }

    proptest! {
        #[test]
        fn a_size_is_its_number_times_its_unit(
            lead in space(), n in digits(), mid in space(), (unit, multiple) in size_unit(),
            trail in space(),
        ) {
            let s = format!("{lead}{n}{mid}{unit}{trail}");
            let bytes = n.parse::<u128>().unwrap() * multiple;
            if bytes <= u64::MAX as u128 {
                prop_assert_eq!(parse_size(&s), Ok(bytes as u64));
            } else {
                prop_assert_eq!(
                    parse_size(&s),
                    Err(format!("expected a size below 16 EiB, found {s:?}"))
                );
            }
        }

        #[test]
        fn a_size_with_a_unit_is_that_multiple_of_the_bare_number(
            n in 0u64..(1 << 23), (unit, multiple) in size_unit(),
        ) {
            let bare = parse_size(&n.to_string()).unwrap();
            prop_assert_eq!(bare, n);
            prop_assert_eq!(parse_size(&format!("{n}{unit}")), Ok(bare * multiple as u64));
        }

        #[test]
        fn negative_sizes_are_refused(
            lead in space(), n in digits(), (unit, _) in size_unit(),
        ) {
            let s = format!("{lead}-{n}{unit}");
            prop_assert_eq!(
                parse_size(&s),
                Err(format!("expected a size of at least 0, found {s:?}"))
            );
        }

        #[test]
        fn sizes_without_a_number_with_a_fraction_or_another_unit_are_refused(
            n in digits(),
            rest in prop_oneof![
                ("[0-9]{1,3}", size_unit()).prop_map(|(f, (u, _))| format!(".{f}{u}")),
                not_a_unit(SIZE_UNITS, |s| s.to_lowercase()),
            ],
            (unit, _) in size_unit(),
        ) {
            let s = format!("{n}{rest}");
            // the number is read before the unit: one beyond u64 is refused as such
            let message = if n.parse::<u128>().unwrap() > u64::MAX as u128 {
                format!("expected a size below 16 EiB, found {s:?}")
            } else {
                format!("{SIZE_EXPECTED}, found {s:?}")
            };
            prop_assert_eq!(parse_size(&s), Err(message));
            prop_assert_eq!(parse_size(&unit), Err(format!("{SIZE_EXPECTED}, found {unit:?}")));
        }

        #[test]
        fn format_size_names_the_largest_whole_unit_and_parses_back(
            bytes in prop_oneof![any::<u64>(), (any::<u64>(), 0u32..64).prop_map(|(m, s)| m << s)],
        ) {
            // the largest power of 1024 dividing `bytes`, at most 1024^4
            let mut power = 0;
            while power < 4 && bytes != 0 && bytes % 1024u64.pow(power + 1) == 0 {
                power += 1;
            }
            let expected = match power {
                0 => format!("{bytes} bytes"),
                p => format!(
                    "{} {}",
                    bytes / 1024u64.pow(p),
                    ["KiB", "MiB", "GiB", "TiB"][p as usize - 1]
                ),
            };
            prop_assert_eq!(format_size(bytes), expected);
            if power > 0 {
                prop_assert_eq!(parse_size(&format_size(bytes)), Ok(bytes));
            }
        }

        #[test]
        fn a_time_is_its_number_times_its_unit(
            lead in space(), n in digits(), mid in space(),
            (unit, ns_per_unit) in prop::sample::select(TIME_UNITS.to_vec()),
            trail in space(),
        ) {
            let s = format!("{lead}{n}{mid}{unit}{trail}");
            let ns = n.parse::<u128>().unwrap() * ns_per_unit;
            if ns <= u64::MAX as u128 {
                prop_assert_eq!(parse_time(&s), Ok(ns as u64));
            } else {
                prop_assert_eq!(
                    parse_time(&s),
                    Err(format!("expected a time below 584 years, found {s:?}"))
                );
            }
        }

        #[test]
        fn times_need_a_known_unit_and_no_sign(
            n in digits(),
            unit in prop_oneof![Just(String::new()), not_a_unit(TIME_UNITS, str::to_string)],
            (known, _) in prop::sample::select(TIME_UNITS.to_vec()),
        ) {
            let s = format!("{n}{unit}");
            let message = if n.parse::<u128>().unwrap() > u64::MAX as u128 {
                format!("expected a time below 584 years, found {s:?}")
            } else {
                format!("{TIME_EXPECTED}, found {s:?}")
            };
            prop_assert_eq!(parse_time(&s), Err(message));
            prop_assert_eq!(parse_time(known), Err(format!("{TIME_EXPECTED}, found {known:?}")));
            let negative = format!("-{n}{known}");
            prop_assert_eq!(
                parse_time(&negative),
                Err(format!("expected a time of at least 0, found {negative:?}"))
            );
        }

        /// A bad size or time in a scenario is reported at its key with the parser's message.
        #[test]
        fn bad_values_name_their_key(
            n in digits(),
            bad_size in not_a_unit(SIZE_UNITS, |s| s.to_lowercase()),
            bad_time in prop_oneof![Just(String::new()), not_a_unit(TIME_UNITS, str::to_string)],
            negative in any::<bool>(),
        ) {
            let sign = if negative { "-" } else { "" };
            let size = format!("{sign}{n}{bad_size}");
            let text = format!(
                "{MINIMAL}\n[[swap]]\nname = \"s\"\nkind = \"ssd\"\nsize = \"{size}\"\n"
            );
            let e = parse(&text).unwrap_err();
            prop_assert_eq!(e.key.as_str(), "swap[0].size");
            prop_assert_eq!(Err(e.message), parse_size(&size));
            let time = format!("{sign}{n}{bad_time}");
            let e = parse(&format!("sample_interval = \"{time}\"\n{MINIMAL}")).unwrap_err();
            prop_assert_eq!(e.key.as_str(), "sample_interval");
            prop_assert_eq!(Err(e.message), parse_time(&time));
        }
    }
}
