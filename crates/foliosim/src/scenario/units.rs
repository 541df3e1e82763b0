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
