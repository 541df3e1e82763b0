use super::*;

fn bundled_profile(name: &str) -> Arc<HwProfile> {
    profile(name).unwrap_or_else(|| panic!("no bundled profile {name}"))
}

#[test]
fn bundled_files_parse_and_are_named_after_their_file() {
    for name in profile_names() {
        let p = HwProfile::parse(bundled_text(name).unwrap()).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(p.costs.name, name);
        assert_eq!(p.sources.len(), COST_FIELDS.len());
        for field in COST_FIELDS {
            assert!(p.source(field).is_some_and(|s| !s.trim().is_empty()));
        }
    }
}

#[test]
fn values_are_positive_except_documented_zeros() {
    for name in profile_names() {
        let p = bundled_profile(name);
        // The flush costs of the other architecture's mechanism are documented zeros.
        let unused: &[&str] = match p.costs.arch {
            Arch::X86 => &["tlbi_broadcast_ns", "dsb_ish_ns"],
            Arch::Arm64 => &[
                "tlb_flush_local_one_ns",
                "tlb_flush_local_all_ns",
                "tlb_flush_ipi_send_ns",
                "tlb_flush_ipi_receive_ns",
            ],
        };
        for (field, v) in p.costs.values() {
            // not separated from split_subpage_ns, or from the other per-folio reclaim costs,
            // in the bundled profiles
            let zero_ok = unused.contains(&field)
                || field == "split_zero_subpage_ns"
                || field == "swap_writeout_ns";
            assert!(v > 0 || zero_ok, "{name}: {field} is 0");
            if v == 0 {
                assert!(
                    p.source(field).unwrap().starts_with("unused")
                        || p.source(field).unwrap().contains("nothing is charged"),
                    "{name}: {field}"
                );
            }
        }
    }
}

/// Values whose source says `derived:` are stated in the files; they must still be what the
/// derivation gives.
#[test]
fn derived_fields_follow_their_sources() {
    let x = &bundled_profile("x86-server").costs;
    let a = &bundled_profile("arm64-altra").costs;
    for c in [x, a] {
        assert_eq!(c.copy_page_ns, c.zero_page_ns * 3 / 2);
        assert_eq!(c.touch_resident_ns, c.dram_read_latency_ns + 10);
        assert_eq!(c.brd_page_write_ns, c.copy_page_ns + 150);
        assert_eq!(c.brd_page_read_ns, c.copy_page_ns + 50);
        // 1.0 cycle per instruction at 3.0 GHz
        assert_eq!(c.instruction_ns_x1000, 1000 * 1000 / 3000);
        assert_eq!(
            c.cxl_bandwidth_bytes_per_s,
            c.dram_bandwidth_bytes_per_s * c.dram_read_latency_ns / c.cxl_read_latency_ns
        );
        assert!(c.cxl_read_latency_ns > c.dram_read_latency_ns);
    }
    assert_eq!(x.word_write_ns_x1000, x.zero_page_ns * 1000 / 512);
    assert_eq!(x.memset_word_ns_x1000, x.zero_page_ns * 1000 / 512);
    // one TLBI plus its DSB: 1.5 us in an Altra KVM guest
    assert_eq!(a.tlbi_broadcast_ns + a.dsb_ish_ns, 1_500);
    assert_eq!(a.cxl_read_latency_ns, x.cxl_read_latency_ns);
    for name in profile_names() {
        let p = bundled_profile(name);
        let derived: Vec<&str> = COST_FIELDS
            .iter()
            .copied()
            .filter(|f| p.source(f).unwrap().starts_with("derived"))
            .collect();
        // every derivation stated in a source is checked above
        for f in &derived {
            assert!(
                [
                    "copy_page_ns",
                    "word_write_ns_x1000",
                    "memset_word_ns_x1000",
                    "touch_resident_ns",
                    "instruction_ns_x1000",
                    "brd_page_write_ns",
                    "brd_page_read_ns",
                    "cxl_bandwidth_bytes_per_s",
                    "dsb_ish_ns",
                ]
                .contains(f),
                "{name}: {f} is derived but not checked"
            );
        }
    }
}

#[test]
fn lookup_by_name() {
    assert_eq!(bundled_profile("x86-server").costs.name, "x86-server");
    assert_eq!(bundled_profile("x86-server").costs.arch, Arch::X86);
    let altra = bundled_profile("arm64-altra");
    assert_eq!(altra.costs.arch, Arch::Arm64);
    assert_eq!(altra.costs.tlb_flush_ipi_receive_ns, 0);
    assert_eq!(altra.costs.dtlb_entries, 1280);
    assert!(profile("pdp-11").is_none());
    assert!(profile("").is_none());
    assert_eq!(profile_names()[0], DEFAULT_PROFILE);
    assert_eq!(profile_names().len(), BUNDLED.len());
    assert!(bundled_profile("x86-server")
        .source("no_such_field")
        .is_none());
    assert!(bundled_profile("x86-server")
        .source("zero_page_ns")
        .unwrap()
        .contains("8.76 GB/s"));
}

/// x86-server's file with `edit` applied to its text.
fn edited(from: &str, to: &str) -> Result<HwProfile, ProfileError> {
    let text = bundled_text("x86-server").unwrap();
    assert!(text.contains(from), "{from}");
    HwProfile::parse(&text.replacen(from, to, 1))
}

/// The key and message of a refused profile.
fn refused(from: &str, to: &str) -> (String, String) {
    match edited(from, to) {
        Err(ProfileError::Key { key, message }) => (key, message),
        other => panic!("expected a key error, got {other:?}"),
    }
}

#[test]
fn a_changed_value_is_read() {
    let p = edited("value = 700\n", "value = 850\n").unwrap();
    assert_eq!(p.costs.fault_entry_ns, 850);
    assert_eq!(
        p.costs,
        HwCosts {
            fault_entry_ns: 850,
            ..bundled_profile("x86-server").costs.clone()
        }
    );
}

#[test]
fn bad_costs_name_the_key() {
    let (key, message) = refused("value = 700\n", "value = -3\n");
    assert_eq!(key, "cost.fault_entry_ns.value");
    assert_eq!(
        message,
        "expected a non-negative integer (nanoseconds), found -3"
    );
    let (key, message) = refused("value = 700\n", "value = 700.5\n");
    assert_eq!(key, "cost.fault_entry_ns.value");
    assert!(message.ends_with("found 700.5"), "{message}");
    let (_, message) = refused("value = 700\n", "value = \"700\"\n");
    assert!(message.ends_with("found \"700\""), "{message}");
    let (key, message) = refused("value = 700\n", "");
    assert_eq!(key, "cost.fault_entry_ns.value");
    assert!(message.ends_with("found none"), "{message}");
    let (key, message) = refused("[cost.fault_entry_ns]", "[cost.fault_entry_us]");
    assert_eq!(key, "cost.fault_entry_us");
    assert!(message.contains("the model does not use"), "{message}");
    // a cost left out: the first missing one is named
    let text = bundled_text("x86-server").unwrap();
    let start = text.find("[cost.zero_page_ns]").unwrap();
    let end = text.find("[cost.copy_page_ns]").unwrap();
    let without = format!("{}{}", &text[..start], &text[end..]);
    match HwProfile::parse(&without) {
        Err(ProfileError::Key { key, message }) => {
            assert_eq!(key, "cost.zero_page_ns");
            assert!(message.contains("nanoseconds"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let (key, _) = refused("value = 700\n", "value = 700\nunit = \"ns\"\n");
    assert_eq!(key, "cost.fault_entry_ns.unit");
    let (key, message) = refused("value = 700\n", "value = 1000000001\n");
    assert_eq!(key, "cost.fault_entry_ns.value");
    assert_eq!(
        message,
        "expected at most 1000000000 (nanoseconds), found 1000000001"
    );
}

#[test]
fn a_missing_or_empty_source_names_the_key() {
    let text = bundled_text("x86-server").unwrap();
    let start = text.find("[cost.pte_update_ns]").unwrap();
    let source_at = start + text[start..].find("source = ").unwrap();
    let next = source_at + text[source_at..].find("\n\n").unwrap();
    let without = format!("{}{}", &text[..source_at], &text[next..]);
    match HwProfile::parse(&without) {
        Err(ProfileError::Key { key, message }) => {
            assert_eq!(key, "cost.pte_update_ns.source");
            assert!(message.ends_with("found none"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let (key, _) = refused(
        "source = \"unused on x86 (see tlbi_broadcast_ns)\"",
        "source = \" \"",
    );
    assert_eq!(key, "cost.dsb_ish_ns.source");
}

#[test]
fn an_impossible_machine_is_refused() {
    let (key, message) = refused("value = 1536\n", "value = 0\n");
    assert_eq!(key, "cost.dtlb_entries.value");
    assert_eq!(
        message,
        "expected a positive integer (entries; every CPU has a TLB), found 0"
    );
    let (key, message) = refused("value = 4300000000\n", "value = 0\n");
    assert_eq!(key, "cost.ssd_bandwidth_bytes_per_s.value");
    assert!(message.contains("transfer times divide by it"), "{message}");
    let dram = "[cost.dram_read_latency_ns]\n# Idle load latency of local DRAM.\nvalue = ";
    let (key, _) = refused(&format!("{dram}90"), &format!("{dram}0"));
    assert_eq!(key, "cost.dram_read_latency_ns.value");
    let (key, _) = refused("value = 1536\n", "value = 1000000\n");
    assert_eq!(key, "cost.dtlb_entries.value");
}

#[test]
fn bad_top_level_keys_are_named() {
    let (key, message) = refused("arch = \"x86\"", "arch = \"riscv\"");
    assert_eq!(key, "arch");
    assert_eq!(message, "expected \"x86\" or \"arm64\", found \"riscv\"");
    let (key, message) = refused("arch = \"x86\"", "");
    assert_eq!(key, "arch");
    assert!(message.ends_with("found none"));
    let (key, _) = refused("name = \"x86-server\"", "name = \"\"");
    assert_eq!(key, "name");
    let (key, _) = refused("arch = \"x86\"", "arch = \"x86\"\nclock_mhz = 3000");
    assert_eq!(key, "clock_mhz");
    let minimal = "name = \"x\"\ndescription = \"d\"\narch = \"x86\"\n";
    match HwProfile::parse(&format!("{minimal}cost = 3")) {
        Err(ProfileError::Key { key, message }) => {
            assert_eq!(key, "cost");
            assert_eq!(message, "expected [cost.NAME] tables, found 3");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        HwProfile::parse("name = \"x\"\n[cost"),
        Err(ProfileError::Syntax(_))
    ));
    let (key, _) = match HwProfile::parse(minimal) {
        Err(ProfileError::Key { key, message }) => (key, message),
        other => panic!("{other:?}"),
    };
    assert_eq!(key, "cost");
}

#[test]
fn units_follow_the_name() {
    assert_eq!(cost_range("fault_entry_ns").unit, "nanoseconds");
    assert_eq!(cost_range("word_write_ns_x1000").unit, "picoseconds");
    assert_eq!(
        cost_range("dram_bandwidth_bytes_per_s").unit,
        "bytes per second"
    );
    assert_eq!(cost_range("dtlb_entries").unit, "entries");
    assert_eq!(cost_range("itlb_code_pages").unit, "pages");
    for field in COST_FIELDS {
        let r = cost_range(field);
        assert!(r.min <= 1 && r.max > r.min, "{field}");
        assert_eq!(r.min == 1, !r.why_positive.is_empty(), "{field}");
    }
}

/// docs/hardware.md documents every cost with its unit and the bundled values.
#[test]
fn the_docs_list_every_cost() {
    let docs = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/hardware.md"),
    )
    .unwrap();
    let x = bundled_profile("x86-server");
    let a = bundled_profile("arm64-altra");
    let thousands = |v: u64| {
        let digits = v.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    };
    for (i, field) in COST_FIELDS.iter().enumerate() {
        let row = docs
            .lines()
            .find(|l| l.starts_with(&format!("| `{field}` |")))
            .unwrap_or_else(|| panic!("docs/hardware.md: no row for {field}"));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let unit = match cost_range(field).unit {
            "nanoseconds" => "ns",
            "picoseconds" => "ps",
            "bytes per second" => "B/s",
            other => other,
        };
        assert_eq!(cells[2], unit, "{field}");
        assert_eq!(cells[4], thousands(x.costs.values()[i].1), "{field}");
        assert_eq!(cells[5], thousands(a.costs.values()[i].1), "{field}");
    }
}

/// The profiles kept in profiles-local/ (calibrations of the project's machine that docs quote,
/// and what-if profiles) stay readable as the model gains costs.
#[test]
fn local_profiles_parse() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../profiles-local");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(&path).unwrap();
            HwProfile::parse(&text).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
            files += 1;
        }
    }
    assert!(files >= 2, "{}", dir.display());
}
