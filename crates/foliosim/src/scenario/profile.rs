//! Kernel profiles: a base kernel generation plus out-of-tree features (`v6.12+migrc`).

use super::generation::Generation;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// As written, e.g. "v6.12+migrc".
    pub name: String,
    pub generation: Generation,
    pub migrc: bool,
    pub pagecache_promotion: bool,
    pub thp_zero_split: bool,
}

/// Base kernel generations, oldest first.
pub const BASE_PROFILES: &[&str] = &["v6.9", "v6.10", "v6.12", "v6.18"];

/// Out-of-tree features that a profile can add with `+name`, with one line each for `list`.
pub const FEATURES: &[(&str, &str)] = &[
    (
        "migrc",
        "Migration Read Copy: keep migrated folios' source pages until a batched TLB flush (2024 series)",
    ),
    (
        "pagecache_promotion",
        "promote unmapped page-cache folios from slow tiers on folio_mark_accessed (2025 RFC)",
    ),
    (
        "thp_zero_split",
        "drop zero-filled subpages when splitting a THP for reclaim or migration (2021 series)",
    ),
];

impl Profile {
    /// Parses `v6.12`, `v6.12+migrc`, `v6.9+thp_zero_split+migrc`, ... Each feature at most once.
    /// The error says what was expected.
    pub fn parse(name: &str) -> Result<Profile, String> {
        let mut parts = name.split('+');
        let base = parts.next().unwrap_or("");
        let generation = match base {
            "v6.9" => Generation::V6_9,
            "v6.10" => Generation::V6_10,
            "v6.12" => Generation::V6_12,
            "v6.18" => Generation::V6_18,
            _ => {
                return Err(format!(
                    "expected a kernel profile {} with optional {}, found {name:?}",
                    BASE_PROFILES.join("|"),
                    feature_list()
                ))
            }
        };
        let mut profile = Profile {
            name: name.to_string(),
            generation,
            migrc: false,
            pagecache_promotion: false,
            thp_zero_split: false,
        };
        for feature in parts {
            let flag = match feature {
                "migrc" => &mut profile.migrc,
                "pagecache_promotion" => &mut profile.pagecache_promotion,
                "thp_zero_split" => &mut profile.thp_zero_split,
                _ => {
                    return Err(format!(
                        "expected features among {}, found {:?} in {name:?}",
                        feature_list(),
                        format!("+{feature}")
                    ))
                }
            };
            if *flag {
                return Err(format!(
                    "expected each feature at most once, found +{feature} twice in {name:?}"
                ));
            }
            *flag = true;
        }
        Ok(profile)
    }
}

fn feature_list() -> String {
    FEATURES
        .iter()
        .map(|(f, _)| format!("+{f}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bases_and_features() {
        for (i, base) in BASE_PROFILES.iter().enumerate() {
            let p = Profile::parse(base).unwrap();
            assert_eq!(p.name, *base);
            assert_eq!(p.generation as usize, i);
            assert!(!p.migrc && !p.pagecache_promotion && !p.thp_zero_split);
        }
        let p = Profile::parse("v6.12+thp_zero_split+migrc").unwrap();
        assert_eq!(p.generation, Generation::V6_12);
        assert!(p.migrc && p.thp_zero_split && !p.pagecache_promotion);
        assert_eq!(p.name, "v6.12+thp_zero_split+migrc");
    }

    #[test]
    fn rejects_unknown_and_repeated() {
        assert!(Profile::parse("v7.0").unwrap_err().contains("v6.9|v6.10"));
        assert!(Profile::parse("").is_err());
        assert!(Profile::parse("v6.12+").is_err());
        assert!(Profile::parse("v6.12+foo").unwrap_err().contains("+foo"));
        assert!(Profile::parse("v6.12+migrc+migrc")
            .unwrap_err()
            .contains("twice"));
    }
}
