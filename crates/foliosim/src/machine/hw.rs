//! Hardware cost profiles: what each operation the simulator charges time for costs on a given
//! machine, in integer nanoseconds (or bytes per second, or picoseconds where a field says so),
//! each value with the source it comes from.
//!
//! A profile is the machine's architecture (which TLB-maintenance model runs) and a flat table of
//! per-operation costs: a fault entry, clearing or copying a 4 KiB page, one PTE store, a local
//! or remote (IPI) TLB flush on x86, a broadcast TLBI or a DSB wait on arm64, one step of reclaim
//! or of an rmap walk, a device transfer, a memory-tier access. A field the other architecture's
//! mechanism uses is 0 and its source says so. Mechanisms in `mm/` add these up; nothing in a
//! profile knows about any scenario. A value is a published measurement where one was found (paper,
//! vendor datasheet, kernel mailing-list measurement), a stated derivation from other fields
//! (`derived:`, whose result the file states and a test checks), or an `estimate:` whose reasoning
//! is given. No value is tuned to make an experiment come out.
//!
//! Profiles are data: one TOML file per machine in the repository's `profiles/` folder (format in
//! docs/hardware.md). The bundled ones are compiled into the binary; a scenario or `--hardware`
//! may also name a file of its own, which `HwProfile::parse` checks key by key.
//!
//! Not modelled: caches (a cost is the typical cost, hot or cold as stated per field),
//! prefetching, frequency scaling and turbo, SMT, contention for memory bandwidth between cores,
//! NUMA distance within a tier, and the difference between sequential and random device transfers
//! beyond the one latency and one bandwidth per device.

use std::sync::{Arc, OnceLock};

use toml::{Table, Value};

/// The instruction-set architecture, which chooses the TLB-maintenance model (mm/tlb.rs) and
/// whether contiguous PTEs exist (mm/contpte.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    /// Local INVLPG / CR3 writes, IPIs to the other CPUs of mm_cpumask (arch/x86/mm/tlb.c).
    X86,
    /// Broadcast TLBI ...IS instructions completed by DSB ISH, and the contiguous bit
    /// (arch/arm64/include/asm/tlbflush.h, arch/arm64/mm/contpte.c).
    Arm64,
}

impl Arch {
    /// The architectures a profile's `arch` may name.
    pub const NAMES: [(&'static str, Arch); 2] = [("x86", Arch::X86), ("arm64", Arch::Arm64)];

    pub fn name(self) -> &'static str {
        match self {
            Arch::X86 => "x86",
            Arch::Arm64 => "arm64",
        }
    }
}

/// Declares `HwCosts` with one `u64` per cost, `COST_FIELDS` listing them in declaration order,
/// and the accessors by name, from one list: a cost cannot be added to one and not the others.
macro_rules! hw_costs {
    ($($(#[doc = $doc:literal])* $field:ident,)+) => {
        /// Per-operation costs of one machine. Names end in their unit.
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct HwCosts {
            pub name: String,
            pub description: String,
            pub arch: Arch,
            $($(#[doc = $doc])* pub $field: u64,)+
        }

        /// Every cost field of [`HwCosts`], in declaration order: each profile gives a value and
        /// a source for each.
        pub const COST_FIELDS: [&str; [$(stringify!($field)),+].len()] = [$(stringify!($field)),+];

        impl HwCosts {
            /// Every cost field with its value, in the order of [`COST_FIELDS`] (for listings).
            pub fn values(&self) -> [(&'static str, u64); COST_FIELDS.len()] {
                [$((stringify!($field), self.$field)),+]
            }

            /// The field called `field`, to set while parsing.
            fn value_mut(&mut self, field: &str) -> Option<&mut u64> {
                match field {
                    $(stringify!($field) => Some(&mut self.$field),)+
                    _ => None,
                }
            }

            /// A profile whose costs are all 0, filled in by the parser.
            fn empty(name: String, description: String, arch: Arch) -> HwCosts {
                HwCosts { name, description, arch, $($field: 0,)+ }
            }
        }
    };
}

hw_costs! {
    // CPU-side memory-management costs
    /// Exception entry/exit plus the handle_mm_fault walk, per fault (allocation, zeroing, memcg
    /// charge and the PTE store are charged separately).
    fault_entry_ns,
    /// Clearing one 4 KiB page (clear_page).
    zero_page_ns,
    /// Copying one 4 KiB page (copy_page / memcpy), DRAM to DRAM.
    copy_page_ns,
    /// Setting or clearing one PTE, including rmap/mapcount bookkeeping.
    pte_update_ns,
    /// Invalidating one page's translation on the local CPU (INVLPG / TLBI VALE1).
    tlb_flush_local_one_ns,
    /// A full local flush (CR3 write) plus the refills it causes, amortised.
    tlb_flush_local_all_ns,
    /// Initiator's cost of a remote flush: send the IPIs and wait for the acks.
    tlb_flush_ipi_send_ns,
    /// Cost on each CPU that receives a flush IPI.
    tlb_flush_ipi_receive_ns,
    /// arm64: issuing one broadcast TLB invalidation (TLBI VALE1IS / ASIDE1IS) without waiting.
    tlbi_broadcast_ns,
    /// arm64: one DSB ISH that waits until every TLBI issued before it has completed on every
    /// core of the inner-shareable domain.
    dsb_ish_ns,
    /// Isolate, check references and put back or free one folio in shrink_folio_list, excluding
    /// I/O and rmap.
    reclaim_scan_folio_ns,
    /// One rmap walk step (folio_referenced / try_to_unmap, per mapping).
    rmap_walk_ns,
    /// split_huge_page cost per subpage (remap, refcount, LRU insertion).
    split_subpage_ns,
    /// A split's further work for each zero-filled subpage it drops (v6.12+ maps the shared zero
    /// page in its place; `+thp_zero_split` unmaps it) beyond the zero test and the free: the
    /// PTE store, the mm counter, the memcg uncharge and the LRU removal.
    split_zero_subpage_ns,
    /// Adding a folio to, or moving it on, an LRU list (lru lock hold).
    lru_op_ns,
    /// Buddy allocation or free of one block (rmqueue from the per-CPU lists).
    page_alloc_ns,
    /// Charging one folio to a memcg.
    memcg_charge_ns,
    /// Allocating one swap slot range (cluster lock, swap_map update).
    swap_slot_alloc_ns,
    /// Dropping one swap PTE's reference to its slot (at unmap or swap-in) and, when it was the
    /// last, freeing the entry: the swap_map and cluster counts under the cluster lock, the swap
    /// cgroup record, and the device's slot-free notification (zram: the slot lock, flags and
    /// statistics, but not the free of a compressed object).
    swap_free_ns,
    /// Reclaim's work for each folio it writes to a swap device that no other cost holds: the
    /// swap cache and swap cgroup records, folio_start_writeback and folio_end_writeback with
    /// their statistics, the bio's set-up for the folio and __remove_mapping, beyond
    /// `reclaim_scan_folio_ns`, `rmap_walk_ns`, `swap_slot_alloc_ns`, `block_io_overhead_ns` and
    /// the free's `page_alloc_ns`.
    swap_writeout_ns,
    /// One streaming 8-byte store to resident memory from a user loop like usemem's, in
    /// picoseconds.
    word_write_ns_x1000,
    /// One 8-byte word of a memset (rep stosb, vector stores) into resident memory that is not
    /// in the cache, in picoseconds: bounded by the core's store bandwidth.
    memset_word_ns_x1000,
    /// The same into a page the kernel has just filled in the fault the store took (cleared,
    /// copied or swapped in), whose lines are still in the cache, in picoseconds.
    memset_word_cached_ns_x1000,
    /// One random access to a resident page: a cache miss that hits the TLB.
    touch_resident_ns,
    /// One instruction of a traced program's work between its page accesses, in picoseconds
    /// (cycles per instruction at the core's clock). Only a trace replay charges it.
    instruction_ns_x1000,
    // devices
    /// brd: copying one 4 KiB page into the RAM disk (memcpy plus the page lookup).
    brd_page_write_ns,
    /// brd: copying one 4 KiB page out of the RAM disk.
    brd_page_read_ns,
    /// NVMe 4 KiB random read latency.
    ssd_read_latency_ns,
    /// NVMe 4 KiB write latency.
    ssd_write_latency_ns,
    /// NVMe transfer bandwidth (one figure for reads and writes).
    ssd_bandwidth_bytes_per_s,
    /// Discarding (deallocating) one 2 MiB swap cluster.
    ssd_discard_ns,
    /// Average seek plus rotational latency.
    hdd_seek_ns,
    /// Sustained transfer bandwidth of a rotational disk.
    hdd_bandwidth_bytes_per_s,
    /// lzo-rle compression of one 4 KiB page of typical data.
    zram_compress_ns,
    /// lzo-rle decompression of one 4 KiB page.
    zram_decompress_ns,
    /// Detecting a same-filled page (a scan of 4 KiB) and storing it.
    zram_same_page_ns,
    /// zram's own work per 4 KiB written, besides compression and the same-filled scan: the
    /// slot lock, freeing the slot's old object, the table entry and the statistics (zram writes
    /// a large folio's bio one page at a time).
    zram_page_write_ns,
    /// zram's own work per 4 KiB read, besides decompression and the same-filled fill: the slot
    /// lock, the object lookup and the statistics.
    zram_page_read_ns,
    /// zram freeing one compressed object when its slot is freed (zs_free: the size class's
    /// lock, the zspage's fullness group, and the zspage itself once it is empty).
    zram_free_ns,
    /// bio submission plus completion, per request (not per page).
    block_io_overhead_ns,
    // memory tiers
    /// Idle load latency of local DRAM.
    dram_read_latency_ns,
    /// Single-core read bandwidth from local DRAM.
    dram_bandwidth_bytes_per_s,
    /// Load latency of a CXL memory expander.
    cxl_read_latency_ns,
    /// Single-core read bandwidth from a CXL memory expander.
    cxl_bandwidth_bytes_per_s,
    /// A data-TLB miss: the page walk, beyond the access itself.
    page_walk_ns,
    /// Translations one CPU's second-level TLB holds.
    dtlb_entries,
    /// Code pages a program refills in the iTLB after a full flush.
    itlb_code_pages,
}

/// The unit of a cost, which its name ends in, and the values the model accepts for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CostRange {
    pub unit: &'static str,
    pub min: u64,
    pub max: u64,
    /// Why `min` is above 0, when it is.
    pub why_positive: &'static str,
}

/// One second: no single operation of the model takes longer (a 7200 rpm disk's seek is 8.5 ms),
/// and the bound keeps the simulated clock, a u64 of ns, far from overflowing.
const MAX_OPERATION_NS: u64 = 1_000_000_000;

/// The unit and the accepted values of cost `field` (one of [`COST_FIELDS`]).
pub fn cost_range(field: &str) -> CostRange {
    let any = |unit, max| CostRange {
        unit,
        min: 0,
        max,
        why_positive: "",
    };
    let positive = |unit, max, why_positive| CostRange {
        unit,
        min: 1,
        max,
        why_positive,
    };
    match field {
        // memory_tiers.rs divides by them and puts the tier with the larger latency below
        "dram_read_latency_ns" | "cxl_read_latency_ns" => positive(
            "nanoseconds",
            MAX_OPERATION_NS,
            "memory has a latency, and the tiering model divides by it",
        ),
        // every transfer time is bytes / bandwidth
        f if f.ends_with("_bytes_per_s") => positive(
            "bytes per second",
            1_000_000_000_000_000,
            "transfer times divide by it",
        ),
        // a CPU without a TLB translates nothing; 16,384 is far above any current STLB and keeps
        // the per-CPU tag arrays of a 4,096-CPU machine small
        "dtlb_entries" => positive("entries", 16_384, "every CPU has a TLB"),
        "itlb_code_pages" => any("pages", 65_536),
        f if f.ends_with("_ns_x1000") => any("picoseconds", MAX_OPERATION_NS * 1000),
        _ => any("nanoseconds", MAX_OPERATION_NS),
    }
}

/// A hardware profile: the costs of one machine and where each value comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HwProfile {
    pub costs: HwCosts,
    /// The source of each cost, in the order of [`COST_FIELDS`].
    pub sources: Vec<String>,
}

/// Why a profile file was refused: its TOML does not parse, or a key is missing or wrong.
#[derive(Debug)]
pub enum ProfileError {
    Syntax(toml::de::Error),
    Key { key: String, message: String },
}

fn key_error(key: impl Into<String>, message: impl Into<String>) -> ProfileError {
    ProfileError::Key {
        key: key.into(),
        message: message.into(),
    }
}

/// How a TOML value reads in a message: strings quoted, tables and arrays by kind.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Table(_) => "a table".into(),
        Value::Array(_) => "an array".into(),
        other => other.to_string(),
    }
}

impl HwProfile {
    /// The source given for `field`, if the field exists.
    pub fn source(&self, field: &str) -> Option<&str> {
        let i = COST_FIELDS.iter().position(|f| *f == field)?;
        Some(&self.sources[i])
    }

    /// Reads a profile file's text (docs/hardware.md): `name`, `description`, `arch`, and a
    /// `[cost.NAME]` table with a `value` and a `source` for every cost of [`COST_FIELDS`].
    /// Errors name the key.
    pub fn parse(text: &str) -> Result<HwProfile, ProfileError> {
        let top: Table = toml::from_str(text).map_err(ProfileError::Syntax)?;
        const TOP_KEYS: [&str; 4] = ["name", "description", "arch", "cost"];
        if let Some(k) = top.keys().find(|k| !TOP_KEYS.contains(&k.as_str())) {
            return Err(key_error(
                k.as_str(),
                format!("expected only {}, found this key", TOP_KEYS.join(", ")),
            ));
        }
        let text_of = |key: &str| -> Result<String, ProfileError> {
            match top.get(key) {
                Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
                Some(v) => Err(key_error(
                    key,
                    format!("expected a non-empty string, found {}", shown(v)),
                )),
                None => Err(key_error(key, "expected a non-empty string, found none")),
            }
        };
        let name = text_of("name")?;
        let description = text_of("description")?;
        let arch_names: Vec<String> = Arch::NAMES.iter().map(|(n, _)| format!("{n:?}")).collect();
        let arch = match top.get("arch") {
            Some(Value::String(s)) => Arch::NAMES.iter().find(|(n, _)| n == s).map(|(_, a)| *a),
            _ => None,
        };
        let Some(arch) = arch else {
            let found = top.get("arch").map_or("none".to_string(), shown);
            return Err(key_error(
                "arch",
                format!("expected {}, found {found}", arch_names.join(" or ")),
            ));
        };
        let costs_table = match top.get("cost") {
            Some(Value::Table(t)) => t,
            Some(v) => {
                return Err(key_error(
                    "cost",
                    format!("expected [cost.NAME] tables, found {}", shown(v)),
                ))
            }
            None => {
                return Err(key_error(
                    "cost",
                    "expected a [cost.NAME] table for each cost (docs/hardware.md), found none",
                ))
            }
        };
        if let Some(k) = costs_table
            .keys()
            .find(|k| !COST_FIELDS.contains(&k.as_str()))
        {
            return Err(key_error(
                format!("cost.{k}"),
                "expected one of the model's costs (listed in docs/hardware.md), found a name \
                 the model does not use",
            ));
        }
        let mut costs = HwCosts::empty(name, description, arch);
        let mut sources = Vec::with_capacity(COST_FIELDS.len());
        for field in COST_FIELDS {
            let key = format!("cost.{field}");
            let range = cost_range(field);
            let Some(entry) = costs_table.get(field) else {
                let message = format!(
                    "expected a [{key}] table with its value ({}) and source, found none",
                    range.unit
                );
                return Err(key_error(key, message));
            };
            let Value::Table(entry) = entry else {
                return Err(key_error(
                    key,
                    format!(
                        "expected a table with value and source, found {}",
                        shown(entry)
                    ),
                ));
            };
            if let Some(k) = entry.keys().find(|k| *k != "value" && *k != "source") {
                return Err(key_error(
                    format!("{key}.{k}"),
                    "expected only value and source, found this key",
                ));
            }
            let value = parse_value(entry.get("value"), range)
                .map_err(|message| key_error(format!("{key}.value"), message))?;
            *costs.value_mut(field).expect("a cost field") = value;
            match entry.get("source") {
                Some(Value::String(s)) if !s.trim().is_empty() => sources.push(s.clone()),
                found => {
                    return Err(key_error(
                        format!("{key}.source"),
                        format!(
                            "expected a non-empty string saying where the value comes from (a \
                             paper, a datasheet, a measurement, \"derived: ...\" or \
                             \"estimate: ...\"), found {}",
                            found.map_or("none".to_string(), shown)
                        ),
                    ))
                }
            }
        }
        Ok(HwProfile { costs, sources })
    }
}

/// A cost's value: an integer within `range`.
fn parse_value(value: Option<&Value>, range: CostRange) -> Result<u64, String> {
    let expected = if range.min > 0 {
        format!(
            "a positive integer ({}; {})",
            range.unit, range.why_positive
        )
    } else {
        format!("a non-negative integer ({})", range.unit)
    };
    let found = match value {
        None => return Err(format!("expected {expected}, found none")),
        Some(Value::Integer(n)) => *n,
        Some(other) => return Err(format!("expected {expected}, found {}", shown(other))),
    };
    if found < range.min as i64 {
        return Err(format!("expected {expected}, found {found}"));
    }
    if found as u64 > range.max {
        return Err(format!(
            "expected at most {} ({}), found {found}",
            range.max, range.unit
        ));
    }
    Ok(found as u64)
}

/// The profile used when a scenario names none.
pub const DEFAULT_PROFILE: &str = "x86-server";

/// The bundled profiles' files (profiles/ at the repository's top), compiled in so that the
/// binary and the Python module find them from any directory; the default first.
const BUNDLED: [(&str, &str); 2] = [
    (
        "x86-server",
        include_str!("../../../../profiles/x86-server.toml"),
    ),
    (
        "arm64-altra",
        include_str!("../../../../profiles/arm64-altra.toml"),
    ),
];

/// The bundled profiles, parsed once.
fn bundled() -> &'static [Arc<HwProfile>] {
    static PROFILES: OnceLock<Vec<Arc<HwProfile>>> = OnceLock::new();
    PROFILES.get_or_init(|| {
        BUNDLED
            .iter()
            .map(|(name, text)| match HwProfile::parse(text) {
                // a test parses every bundled file: this cannot fail in a built binary
                Ok(p) => Arc::new(p),
                Err(e) => panic!("profiles/{name}.toml: {e:?}"),
            })
            .collect()
    })
}

/// The bundled profile called `name`, if there is one.
pub fn profile(name: &str) -> Option<Arc<HwProfile>> {
    bundled().iter().find(|p| p.costs.name == name).cloned()
}

/// Every bundled profile's name, the default first.
pub fn profile_names() -> Vec<&'static str> {
    BUNDLED.iter().map(|(name, _)| *name).collect()
}

/// The text of the bundled profile file called `name` (for listings and tests).
pub fn bundled_text(name: &str) -> Option<&'static str> {
    BUNDLED.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

#[cfg(test)]
mod tests;
