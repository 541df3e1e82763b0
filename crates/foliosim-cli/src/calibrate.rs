//! `foliosim calibrate`: measures this machine's values for the costs the model charges most
//! (fault entry, zeroing, copy-on-write, user stores and accesses, zram compression and
//! decompression, zram's own work per 4 KiB page, a THP split per subpage kept and dropped,
//! remote TLB flushes) with kernel-bench/calibrate.c, and writes a hardware
//! profile: each measured cost with its median and spread, the rest from a base profile.
//!
//! Every measurement is a differential where the kernel does not let one cost be timed alone
//! (docs/calibration.md gives each formula). The runs are interleaved (run 1 of every benchmark,
//! then run 2, ...) so that a drift of the machine moves both sides of a difference, and each
//! benchmark runs once unrecorded first: this machine is a VM whose fresh guest memory costs
//! host faults on first touch, which a warm-up takes out. What it changes (THP `enabled` when
//! `never`, zswap off, one zram swap device, the mTHP sizes' `enabled` for the 64 KiB swap
//! benchmark, free page reporting's order) is recorded in a live session and undone after
//! success, failure or a signal.
//!
//! Two calibrations must give the same costs within their spreads, so the conditions that move
//! them are held for the whole run: free page reporting off and the memory touched once (as
//! kernel-run and validate do, live/page_reporting.rs: on a VM, memory the host took back costs
//! host faults on the next touch), an idle machine (the load average at the start, and what
//! other tasks used of the CPUs in each round, a busy round being measured again; see
//! calibrate_load.rs), each benchmark pinned to one CPU (the flush IPI's other thread to the
//! other CPU, which must then receive an IPI for nearly every call). Each cost's source says
//! under which conditions it was measured.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use foliosim::machine::hw::{self, HwProfile};

use crate::args::CalibrateArgs;
use crate::calibrate_load::{self, cpu_ticks, others_cpus};
use crate::calibrate_profile::{profile_text, spread, Measured, Origin};
use crate::live::knobs::Change;
use crate::live::session::Session;
use crate::live::{page_reporting, signal, sys, zram};
use crate::output::write_atomically;
use crate::Failure;

/// Pages per fault benchmark (64 MiB) and per zram round trip (64 MiB).
const FAULT_PAGES: u64 = 16_384;
/// A THP-backed buffer larger than any last-level cache, for stores and the pointer chase; and
/// the munmaps of swapped-out pages, whose 64 MiB took 1-5 ms, too short to time steadily.
const RESIDENT_PAGES: u64 = 65_536;
const MPROTECT_CALLS: u64 = 100_000;
const ZRAM_BYTES: u64 = 512 << 20;
const THP_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/enabled";
/// What the benchmarks use at most at once (the 512 MiB zram device's stored pages, 256 MiB
/// resident buffers, a fault benchmark's pre-warm), with room: touched and freed once before
/// them, so that the host backs what they are given.
const PREFAULT_BYTES: u64 = 2 << 30;
/// A round during which other tasks kept more than this share of one CPU busy is measured
/// again (at most [`MAX_REDOS`] times): their turns on the CPUs and their memory traffic are
/// not this machine's costs.
const MAX_OTHERS_CPUS: f64 = 0.25;
const MAX_REDOS: u32 = 3;
/// The share of `mprotect` calls that must send a flush IPI for a run of the remote benchmark to
/// measure one: fewer means the spinning thread was off its CPU (another task ran there).
const MIN_IPIS_PER_CALL: f64 = 0.9;

/// Set to anything, calibrate behaves as on a kernel without zram (for the CLI test as root).
pub const FAKE_NO_ZRAM_ENV: &str = "FOLIOSIM_CALIBRATE_FAKE_NO_ZRAM";

fn missing(message: impl Into<String>) -> Failure {
    Failure::Live {
        message: message.into(),
        status: 2,
    }
}

fn failed(message: impl Into<String>) -> Failure {
    Failure::Live {
        message: message.into(),
        status: 1,
    }
}

/// The base profile: a bundled name, or a .toml file.
fn base_profile(value: &str) -> Result<HwProfile, Failure> {
    if let Some(p) = hw::profile(value) {
        return Ok((*p).clone());
    }
    if !value.ends_with(".toml") {
        return Err(missing(format!(
            "--base {value}: expected a bundled profile ({}) or a .toml file",
            hw::profile_names().join(", ")
        )));
    }
    let text = std::fs::read_to_string(value)
        .map_err(|e| missing(format!("{value}: cannot read: {e}")))?;
    HwProfile::parse(&text).map_err(|e| match e {
        hw::ProfileError::Syntax(e) => missing(format!("{value}: TOML syntax error: {e}")),
        hw::ProfileError::Key { key, message } => missing(format!("{value}: {key}: {message}")),
    })
}

/// Today's date (UTC) as YYYY-MM-DD, from the system clock (civil-from-days, proleptic
/// Gregorian).
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

fn host_name() -> String {
    sys::read("/proc/sys/kernel/hostname")
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "this-host".into())
}

/// One invocation of the calibrate program: its `result` lines (name -> picoseconds per unit);
/// `skip` lines are printed as notes.
fn bench(
    bin: &Path,
    name: &str,
    units: u64,
    cpu: u32,
    device: Option<&Path>,
) -> Result<BTreeMap<String, u64>, Failure> {
    let out = Command::new(bin.join("calibrate"))
        .args([name, &units.to_string(), &cpu.to_string()])
        .args(device)
        .output()
        .map_err(|e| failed(format!("cannot run kernel-bench calibrate: {e}")))?;
    if !out.status.success() {
        return Err(failed(format!(
            "kernel-bench calibrate {name} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let mut results = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let fields: BTreeMap<&str, &str> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|f| f.split_once('='))
            .collect();
        match line.split_whitespace().next() {
            Some("result") => {
                if let (Some(n), Some(ps)) = (fields.get("name"), fields.get("ps")) {
                    if let Ok(ps) = ps.parse() {
                        results.insert(n.to_string(), ps);
                    }
                }
            }
            Some("skip") => eprintln!(
                "  {}: skipped ({})",
                fields.get("name").unwrap_or(&name),
                fields.get("reason").unwrap_or(&"?").replace('-', " ")
            ),
            _ => {}
        }
    }
    Ok(results)
}

/// Runs `benches` (name, units) `runs` times, interleaved, each once before unrecorded, with
/// the zram `device` where given; returns every result name's values in picoseconds. A round
/// during which other tasks kept more than [`MAX_OTHERS_CPUS`] of a CPU busy is measured again,
/// at most [`MAX_REDOS`] times; what others used in each kept round is pushed to `others`.
fn measure(
    bin: &Path,
    benches: &[(&str, u64)],
    runs: u64,
    cpu: u32,
    device: Option<&Path>,
    others: &mut Vec<f64>,
) -> Result<BTreeMap<String, Vec<u64>>, Failure> {
    let mut all: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut redos = 0;
    let mut round = 0;
    while round <= runs {
        let before = cpu_ticks();
        let start = Instant::now();
        let mut this_round: Vec<(String, u64)> = Vec::new();
        for (name, units) in benches {
            if let Some(sig) = signal::pending() {
                return Err(Failure::Live {
                    message: format!("calibrate interrupted by {}", signal::name(sig)),
                    status: 128 + sig,
                });
            }
            this_round.extend(bench(bin, name, *units, cpu, device)?);
        }
        if round == 0 {
            round += 1;
            continue;
        }
        let used = match (before, cpu_ticks()) {
            (Some(b), Some(a)) => others_cpus(b, a, start.elapsed()),
            _ => 0.0,
        };
        if used > MAX_OTHERS_CPUS && redos < MAX_REDOS {
            redos += 1;
            eprintln!(
                "  round {round}/{runs}: other tasks used {used:.2} CPUs (more than \
                 {MAX_OTHERS_CPUS}): measured again ({redos} of at most {MAX_REDOS})"
            );
            continue;
        }
        for (k, v) in this_round {
            all.entry(k).or_default().push(v);
        }
        others.push(used);
        eprintln!("  round {round}/{runs} done (other tasks used {used:.2} CPUs)");
        round += 1;
    }
    Ok(all)
}

/// A cost from per-run picosecond values: `formula(run's values by name)` for every run where
/// all its inputs were measured, in the cost's unit; None (noted) if no run had them all or the
/// median is negative. A single negative run (noise in a difference) shows in the spread.
fn derive(
    raw: &BTreeMap<String, Vec<u64>>,
    cost: &'static str,
    inputs: &[&str],
    formula: impl Fn(&[f64]) -> f64,
    how: &str,
) -> Option<Measured> {
    let n = inputs
        .iter()
        .map(|i| raw.get(*i).map_or(0, Vec::len))
        .min()?;
    let values: Vec<i64> = (0..n)
        .map(|run| {
            let args: Vec<f64> = inputs.iter().map(|i| raw[*i][run] as f64).collect();
            formula(&args).round() as i64
        })
        .collect();
    let spread = spread(&values)?;
    if spread.median < 0 {
        eprintln!(
            "  {cost}: the median difference is negative ({}): taken from the base profile",
            spread.median
        );
        return None;
    }
    Some(Measured {
        cost,
        spread,
        how: how.to_string(),
    })
}

/// Blocks of the disk benchmark's file (64 MiB), and what a 1 MiB request moves beyond a 4 KiB
/// one (255 blocks): the difference of their times is that transfer.
const DISK_PAGES: u64 = 16_384;
const DISK_BIG_EXTRA_BYTES: f64 = 255.0 * 4096.0;

/// Pages per folio of the large-folio swap benchmarks (64 KiB).
const MTHP_PAGES: f64 = 16.0;

/// The per-4 KiB part of a cost measured per page at order 0 (`order0_ps`) and in 16-page
/// folios (`mthp_ps`): with t = per_page + per_folio / pages_per_folio at both sizes,
/// per_page = (16 t16 - t1) / 15.
fn per_page_ps(order0_ps: f64, mthp_ps: f64) -> f64 {
    (MTHP_PAGES * mthp_ps - order0_ps) / (MTHP_PAGES - 1.0)
}

/// The per-4 KiB and per-folio parts of a cost measured per 4 KiB with folios of `pages_a` and of
/// `pages_b` pages: t = per_page + per_folio / pages at both sizes.
fn page_and_folio_parts(t_a: f64, pages_a: f64, t_b: f64, pages_b: f64) -> (f64, f64) {
    let per_folio = (t_a - t_b) * pages_a * pages_b / (pages_b - pages_a);
    (t_a - per_folio / pages_a, per_folio)
}

/// The median of a raw measurement, in ns per unit.
fn median_ns(raw: &BTreeMap<String, Vec<u64>>, name: &str) -> Option<f64> {
    let v: Vec<i64> = raw.get(name)?.iter().map(|&v| v as i64).collect();
    spread(&v).map(|s| s.median as f64 / 1000.0)
}

/// Faults by folio size (not a profile cost: the model charges zeroing per 4 KiB whatever the
/// order): the per-4 KiB and per-fault parts from the 64 KiB and 2 MiB faults, and what they
/// predict for a 4 KiB fault against what it measured.
fn print_fault_scaling(raw: &BTreeMap<String, Vec<u64>>) {
    let median = |name: &str| median_ns(raw, name);
    let (Some(t64k), Some(t2m), Some(t4k)) = (
        median("mthp_fault_64k"),
        median("thp_fault"),
        median("write_fault"),
    ) else {
        return;
    };
    let (per_page, per_fault) = page_and_folio_parts(t64k, 16.0, t2m, 512.0);
    eprintln!(
        "calibrate: anonymous write faults by folio size (ns per 4 KiB, medians): \
         4 KiB {t4k:.0}, 64 KiB {t64k:.0}, 2 MiB {t2m:.0}; from 64 KiB and 2 MiB: \
         {per_page:.0} per 4 KiB (clearing, per-page PTE) and {per_fault:.0} per fault, \
         which predicts {:.0} for a 4 KiB fault",
        per_page + per_fault
    );
}

/// munmap of resident memory by folio size (not a profile cost: the model charges
/// `pte_update_ns` per page and `page_alloc_ns` per folio freed): the per-4 KiB and per-folio
/// parts from the order-0 and 64 KiB runs, beside what the profile charges.
fn print_unmap_scaling(raw: &BTreeMap<String, Vec<u64>>, profile: &HwProfile) {
    let (Some(t4k), Some(t64k)) = (
        median_ns(raw, "unmap_resident"),
        median_ns(raw, "unmap_resident_64k"),
    ) else {
        return;
    };
    let (per_page, per_folio) = page_and_folio_parts(t4k, 1.0, t64k, MTHP_PAGES);
    eprintln!(
        "calibrate: munmap of resident anonymous memory (ns per 4 KiB, medians): 4 KiB folios \
         {t4k:.0}, 64 KiB folios {t64k:.0}: {per_page:.0} per 4 KiB and {per_folio:.0} per folio, \
         where the model charges {} (pte_update_ns) and {} (page_alloc_ns)",
        profile.costs.pte_update_ns, profile.costs.page_alloc_ns
    );
}

/// The disk's read bandwidth (not a profile cost: the model has one bandwidth for both
/// directions, taken from the writes), from its 1 MiB and 4 KiB reads.
fn print_disk_reads(raw: &BTreeMap<String, Vec<u64>>) {
    let (Some(t4k), Some(t1m)) = (
        median_ns(raw, "disk_read_4k"),
        median_ns(raw, "disk_read_1m"),
    ) else {
        return;
    };
    eprintln!(
        "calibrate: disk reads (medians): {t4k:.0} ns per 4 KiB request, {:.0} MB/s in 1 MiB \
         requests; the model transfers reads at ssd_bandwidth_bytes_per_s, the writes'",
        disk_bandwidth_bytes_per_s(t4k * 1000.0, t1m * 1000.0) / 1e6
    );
}

/// A disk's bandwidth from the times of a 4 KiB and a 1 MiB request (ps): the 1 MiB one moves
/// 255 blocks more.
fn disk_bandwidth_bytes_per_s(t4k_ps: f64, t1m_ps: f64) -> f64 {
    DISK_BIG_EXTRA_BYTES * 1e12 / (t1m_ps - t4k_ps)
}

/// A disk request's latency from the same two times (ps): the 4 KiB request less its one
/// block's transfer, a 255th of the difference.
fn disk_latency_ps(t4k_ps: f64, t1m_ps: f64) -> f64 {
    t4k_ps - (t1m_ps - t4k_ps) / 255.0
}

/// The costs, from the raw measurements (ps per unit) and the base profile's costs the model
/// charges on the measured paths besides the one measured.
fn costs(raw: &BTreeMap<String, Vec<u64>>, base: &HwProfile) -> Vec<Measured> {
    let pte_ps = base.costs.pte_update_ns as f64 * 1000.0;
    // what the model charges per 4 KiB of a same-filled page's swap-out besides zram's own
    // work: the page_same_filled scan (as measured, `same_scan`), try_to_unmap's PTE clear and
    // its local flush (x86); of a read of an empty block: the fill (charged as the scan)
    let flush_one_ps = base.costs.tlb_flush_local_one_ns as f64 * 1000.0;
    // the model charges page_alloc_ns for each folio allocated and each folio freed
    let page_alloc_ps = base.costs.page_alloc_ns as f64 * 1000.0;
    let lru_ps = base.costs.lru_op_ns as f64 * 1000.0;
    let dram_ps = base.costs.dram_read_latency_ns as f64 * 1000.0;
    // what the model charges per folio a MADV_PAGEOUT swaps out besides the one measured: the
    // isolated folio's pass through shrink_folio_list, try_to_unmap's walk, the swap slot, the
    // device request and the free
    let c = &base.costs;
    let pageout_folio_ps = (c.reclaim_scan_folio_ns
        + c.rmap_walk_ns
        + c.swap_slot_alloc_ns
        + c.block_io_overhead_ns
        + c.page_alloc_ns) as f64
        * 1000.0;
    let ns = |ps: f64| ps / 1000.0;
    let candidates = [
        derive(raw, "fault_entry_ns", &["read_fault"], |v| ns(v[0] - pte_ps),
            "a read fault on a fresh anonymous page with THP off (it maps the shared zero page), 16,384 pages, minus the base profile's pte_update_ns"),
        derive(raw, "zero_page_ns", &["thp_fault"], |v| ns(v[0]),
            "a write fault on a MADV_HUGEPAGE mapping that gets a PMD THP, per 4 KiB (its allocation, charge, fault entry and PMD store amortised over 512 pages)"),
        derive(raw, "memcg_charge_ns", &["write_fault", "read_fault", "thp_fault"],
            |v| ns(v[0] - v[1] - v[2] - page_alloc_ps - lru_ps),
            "a 4 KiB write fault with THP off (16,384 pages) minus the read fault (the fault entry and PTE), minus 4 KiB of the PMD fault's clearing (zero_page_ns) and the base profile's page_alloc_ns and lru_op_ns: the new folio's charge (on cgroup v1 the commit, the statistics and the event check) with what else a write fault does that the model has no cost of its own for (the new folio's rmap and mm counter)"),
        derive(raw, "copy_page_ns", &["cow", "write_fault", "thp_fault"], |v| ns(v[0] - v[1] + v[2]),
            "copy-on-write fault after fork minus a fresh write fault plus zero_page_ns (both faults allocate, charge and map a page; one copies, the other clears)"),
        derive(raw, "word_write_ns_x1000", &["word_write"], |v| v[0],
            "usemem's store loop (fill_page of the data class) over 256 MiB of resident memory, per 8-byte word"),
        derive(raw, "memset_word_ns_x1000", &["memset_cold"], |v| v[0],
            "fill_page of the same-filled class (a memset of each page) over 256 MiB of resident memory, per 8-byte word"),
        derive(raw, "memset_word_cached_ns_x1000", &["memset_cached"], |v| v[0],
            "the same memset into one 64 KiB buffer again and again (a 64 KiB folio, inside L2, as a folio the kernel has just filled is), per 8-byte word"),
        derive(raw, "touch_resident_ns", &["touch"], |v| ns(v[0]),
            "a random pointer chase over 256 MiB of resident THP-backed memory, 4 loads per page, each of a different line (none cached)"),
        derive(raw, "zram_compress_ns", &["zram_write_data", "zram_write_same", "same_scan"],
            |v| ns(v[0] - v[1] + v[2] - dram_ps),
            "O_DIRECT writes of 16,384 4 KiB blocks to a zram device (lzo) that is not swap, of pages of the data class minus of same-filled pages, plus the measured zram_same_page_ns and minus the base profile's dram_read_latency_ns (zram's same-filled test reads a same-filled page whole and stops at a data page's first word, as the model charges): the compression, the zsmalloc object's allocation and the copy into it")
            .or_else(|| derive(raw, "zram_compress_ns", &["pageout_data", "pageout_same"], |v| ns(v[0] - v[1]),
            "MADV_PAGEOUT to zram (lzo) of pages of the data class minus of same-filled pages, which take the same path but are not compressed (the zram write benchmark could not run)")),
        derive(raw, "zram_decompress_ns", &["swapin_data", "swapin_same", "unmap_swapped_data", "unmap_swapped_same"],
            |v| ns(v[0] - v[1] - (v[2] - v[3])),
            "swap-in fault from zram of a data-class page minus of a same-filled one, minus the measured zram_free_ns (the data page's slot frees a compressed object after the swap-in)"),
        derive(raw, "zram_same_page_ns", &["same_scan"], |v| ns(v[0]),
            "zram's page_same_filled test (last word, then every word) over 64 MiB of resident same-filled pages in PMD THPs (the kernel's direct map is huge-mapped), per page; the read side's fill (memset of the page) is charged at the same cost"),
        derive(raw, "zram_page_write_ns", &["pageout_same", "pageout_same_64k", "same_scan"],
            |v| ns(per_page_ps(v[0], v[1]) - v[2] - pte_ps - flush_one_ps),
            "MADV_PAGEOUT to zram of same-filled pages in 64 KiB folios and at order 0, per 4 KiB: the part that does not fall with the folio size, (16 t64K - t4K) / 15, minus the measured zram_same_page_ns and the base profile's pte_update_ns and tlb_flush_local_one_ns (the model's other per-page charges on that path); includes any per-4 KiB work of the swap-out path the model does not charge elsewhere (swap cache, swap_map and swap_cgroup entries)"),
        derive(raw, "swap_writeout_ns", &["pageout_same", "pageout_same_64k"],
            |v| ns(page_and_folio_parts(v[0], 1.0, v[1], MTHP_PAGES).1 - pageout_folio_ps),
            "MADV_PAGEOUT to zram of same-filled pages at order 0 and in 64 KiB folios: the part that falls with the folio size, (t4K - t64K) x 16 / 15 per folio, minus the base profile's reclaim_scan_folio_ns, rmap_walk_ns, swap_slot_alloc_ns, block_io_overhead_ns and page_alloc_ns (the model's other per-folio charges on that path)"),
        derive(raw, "zram_page_read_ns", &["zram_read_4k", "zram_read_64k", "same_scan"],
            |v| ns(per_page_ps(v[0], v[1]) - v[2]),
            "O_DIRECT reads of 64 MiB of empty zram blocks (filled as same-filled pages are) as 64 KiB and as 4 KiB requests, per 4 KiB: (16 t64K - t4K) / 15, minus the measured zram_same_page_ns; includes pinning the user page for O_DIRECT, not the slot's free notification after a swap-in"),
        derive(raw, "swap_free_ns", &["unmap_swapped_same"], |v| ns(v[0] - pte_ps),
            "munmap of 64 MiB of same-filled pages swapped out to zram, per page (each PTE a swap entry, freed with its slot, whose zram flag is cleared), minus the base profile's pte_update_ns"),
        derive(raw, "zram_free_ns", &["unmap_swapped_data", "unmap_swapped_same"], |v| ns(v[0] - v[1]),
            "munmap of 64 MiB of data-class pages swapped out to zram minus of same-filled ones, per page: zs_free of each page's compressed object"),
        derive(raw, "split_subpage_ns", &["thp_split_data"], |v| ns(v[0] - 2.0 * pte_ps),
            "splits of 256 MiB of PMD THPs (each by MADV_COLD of its last 4 KiB, split_folio on the LRU) whose every subpage starts with a non-zero word, per 4 KiB, minus twice the base profile's pte_update_ns (the model's PTE clear and restore); the per-folio work (PMD split, unmap, one flush) amortised over 512"),
        derive(raw, "split_zero_subpage_ns", &["thp_split_zero", "thp_split_data", "same_scan"],
            |v| ns(v[0] - v[1] - v[2] - page_alloc_ps),
            "the same splits of zero-filled THPs (v6.12+ maps each subpage to the shared zero page and frees it) minus those of THPs whose subpages are not zero, per 4 KiB, minus the zero test (the measured zram_same_page_ns, a full-page scan) and the base profile's page_alloc_ns (the free): the zero-page PTE, the mm counter, the memcg uncharge and the LRU removal"),
        flush_ipi(raw),
        flush_ipi_received(raw),
        // the disk, as the model charges a request: its latency, then its size over the
        // bandwidth (one figure for both directions, the write one as the base profile takes)
        derive(raw, "ssd_bandwidth_bytes_per_s", &["disk_write_4k", "disk_write_1m"],
            |v| disk_bandwidth_bytes_per_s(v[0], v[1]),
            "O_DIRECT writes to a 64 MiB file on the disk measured (--disk-dir), in 1 MiB requests in order minus 4 KiB requests at random blocks: 255 blocks' transfer, over the time it took (wall clock); the write direction, as the base profile's is: the model has one bandwidth for reads and writes (calibrate prints the reads' beside it)"),
        derive(raw, "ssd_write_latency_ns", &["disk_write_4k", "disk_write_1m"],
            |v| ns(disk_latency_ps(v[0], v[1])),
            "O_DIRECT 4 KiB writes at random blocks of a 64 MiB file on the disk measured (--disk-dir), wall clock, minus one block's transfer at the measured bandwidth: the request's time to the device and back"),
        derive(raw, "ssd_read_latency_ns", &["disk_read_4k", "disk_read_1m"],
            |v| ns(disk_latency_ps(v[0], v[1])),
            "O_DIRECT 4 KiB reads at random blocks of a 64 MiB file on the disk measured (--disk-dir), wall clock, minus one block's transfer at the read bandwidth of its 1 MiB reads"),
    ];
    candidates.into_iter().flatten().collect()
}

/// `tlb_flush_ipi_send_ns` from the runs in which the other CPU received a flush IPI for at
/// least [`MIN_IPIS_PER_CALL`] of the calls (x86 flushes on every change of _PAGE_RW, so each
/// call sends one while the spinning thread is on its CPU): the difference per call divided by
/// the IPIs per call. None (noted) when no run qualifies: the other CPU was not the benchmark's.
fn flush_ipi(raw: &BTreeMap<String, Vec<u64>>) -> Option<Measured> {
    let remote = raw.get("mprotect_remote")?;
    let local = raw.get("mprotect_local")?;
    let ipis = raw.get("mprotect_remote_ipis_per_million")?;
    let runs = remote.len().min(local.len()).min(ipis.len());
    let per_call: Vec<f64> = ipis[..runs].iter().map(|&i| i as f64 / 1e6).collect();
    let values: Vec<i64> = (0..runs)
        .filter(|&r| per_call[r] >= MIN_IPIS_PER_CALL)
        .map(|r| ((remote[r] as f64 - local[r] as f64) / 1000.0 / per_call[r]).round() as i64)
        .collect();
    let shares: Vec<String> = per_call.iter().map(|p| format!("{p:.2}")).collect();
    eprintln!(
        "  flush IPIs per mprotect call, by run: {}",
        shares.join(", ")
    );
    let Some(spread) = spread(&values) else {
        eprintln!(
            "  tlb_flush_ipi_send_ns: no run sent a flush IPI for {MIN_IPIS_PER_CALL} of its \
             calls (the spinning thread was off the other CPU): taken from the base profile"
        );
        return None;
    };
    if spread.median < 0 {
        return None;
    }
    Some(Measured {
        cost: "tlb_flush_ipi_send_ns",
        spread,
        how: format!(
            "mprotect of one page (100,000 calls) while a thread of the process spins on the other \
             CPU minus without it, divided by the flush IPIs that CPU received per call \
             (/proc/interrupts' TLB row); the {} of {runs} runs in which at least {:.0} % of the \
             calls sent one: the flush IPI sent and waited for",
            spread.runs,
            MIN_IPIS_PER_CALL * 100.0
        ),
    })
}

/// `tlb_flush_ipi_receive_ns` from the same runs as [`flush_ipi`]: the time the spinning thread
/// lost per flush IPI it received (its spins against its own pace before the calls). None when
/// no run qualifies.
fn flush_ipi_received(raw: &BTreeMap<String, Vec<u64>>) -> Option<Measured> {
    let received = raw.get("mprotect_remote_received")?;
    let ipis = raw.get("mprotect_remote_ipis_per_million")?;
    let values: Vec<i64> = received
        .iter()
        .zip(ipis)
        .filter(|(_, &i)| i as f64 / 1e6 >= MIN_IPIS_PER_CALL)
        .map(|(&ps, _)| (ps as f64 / 1000.0).round() as i64)
        .collect();
    let spread = spread(&values)?;
    Some(Measured {
        cost: "tlb_flush_ipi_receive_ns",
        spread,
        how: format!(
            "the thread spinning on the other CPU during the mprotect runs above: the time it \
             lost (its spins against its pace in the 50 ms before the calls) per flush IPI it \
             received; the {} runs in which at least {:.0} % of the calls sent one: the \
             interrupt, the flush and the refill on the receiving CPU",
            spread.runs,
            MIN_IPIS_PER_CALL * 100.0
        ),
    })
}

/// `foliosim calibrate`.
pub fn calibrate(args: &CalibrateArgs) -> Result<(), Failure> {
    let base = base_profile(&args.base)?;
    if sys::effective_uid() != Some(0) {
        return Err(missing(
            "calibrate needs root: it creates a zram swap device and may set THP and zswap knobs",
        ));
    }
    if std::env::var_os(FAKE_NO_ZRAM_ENV).is_some() {
        return Err(missing(
            "calibrate needs zram: this kernel has no zram (CONFIG_ZRAM, or `modprobe zram`)",
        ));
    }
    zram::check_available().map_err(|e| missing(format!("calibrate needs zram: {e}")))?;
    if let Some(out) = &args.output {
        crate::output::check_output_path(out)?;
    }
    let bin: PathBuf =
        crate::make::build("kernel-bench", "the kernel-bench programs").map_err(failed)?;
    let (cpus, _) = sys::machine();
    let cpu = cpus.saturating_sub(1);

    let handlers = signal::Handlers::install();
    let load_at_start =
        calibrate_load::wait_until_idle(args.max_load, Duration::from_secs(args.wait_idle))?;
    let mut session = Session::new();
    let mut conditions = vec![format!("load average {load_at_start:.2} at the start")];
    let result = measure_all(&bin, args, cpu, &mut session, &mut conditions);
    let cleanup = session.cleanup();
    drop(handlers);
    if let Err(errors) = cleanup {
        return Err(failed(format!(
            "cleanup could not undo: {}; undo that by hand (see kernel-bench/README.md)",
            errors.join("; ")
        )));
    }
    let raw = result?;
    eprintln!("calibrate: raw medians (ps per page, word, access or call), min-max");
    for (name, values) in &raw {
        let v: Vec<i64> = values.iter().map(|&v| v as i64).collect();
        if let Some(s) = spread(&v) {
            eprintln!("  {name:<24} {:>10}  ({}-{})", s.median, s.min, s.max);
        }
    }
    print_fault_scaling(&raw);
    print_unmap_scaling(&raw, &base);
    print_disk_reads(&raw);
    let measured = costs(&raw, &base);
    let conditions = conditions.join(", ");
    eprintln!("calibrate: conditions: {conditions}");
    let origin = Origin {
        host: &host_name(),
        date: &today(),
        base_name: &base.costs.name,
        conditions: &conditions,
    };
    let text = profile_text(&base, &measured, &origin);
    for m in &measured {
        eprintln!(
            "  {:<24} {:>8}  ({}-{}, {} runs)",
            m.cost, m.spread.median, m.spread.min, m.spread.max, m.spread.runs
        );
    }
    match &args.output {
        Some(path) => {
            write_atomically(path, &text)?;
            eprintln!("wrote {}", path.display());
        }
        None => print!("{text}"),
    }
    Ok(())
}

/// The mTHP size of the large-folio swap benchmarks.
const MTHP_SIZE: &str = "64kB";
const THP_SYSFS: &str = "/sys/kernel/mm/transparent_hugepage";

/// Anonymous faults get folios of `size` only: its `enabled` set to `always`, every other
/// size's (PMD THP's too) to `never`, each change recorded in the session. A kernel without the
/// size keeps its settings, and the benchmark notes that it cannot run.
fn only_mthp_size(session: &mut Session, size: &str) -> Result<(), Failure> {
    let Ok(dirs) = std::fs::read_dir(THP_SYSFS) else {
        return Ok(());
    };
    let mut sizes: Vec<String> = dirs
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix("hugepages-")
                .map(String::from)
        })
        .collect();
    if !sizes.iter().any(|s| s == size) {
        return Ok(());
    }
    sizes.sort();
    for s in sizes {
        let path = format!("{THP_SYSFS}/hugepages-{s}/enabled");
        let Some(now) = sys::read(&path).map(|t| sys::knob_value(&t)) else {
            continue;
        };
        let want = if s == size { "always" } else { "never" };
        if sys::same_knob_value(&now, want) {
            continue;
        }
        let change = Change {
            path: path.into(),
            before: now,
            value: want.into(),
        };
        eprintln!("  {}: {} -> {}", change.path, change.before, change.value);
        session.set_knob(&change).map_err(failed)?;
    }
    Ok(())
}

/// The benchmarks under the session's knobs; `conditions` gets one phrase for each condition
/// held (page reporting, the pre-touch, the CPUs, what other tasks used).
fn measure_all(
    bin: &Path,
    args: &CalibrateArgs,
    cpu: u32,
    session: &mut Session,
    conditions: &mut Vec<String>,
) -> Result<BTreeMap<String, Vec<u64>>, Failure> {
    let runs = args.runs;
    // THP `never` refuses MADV_HUGEPAGE; `madvise` or `always` both give it a THP
    if let Some(now) = sys::read(THP_ENABLED).map(|t| sys::knob_value(&t)) {
        if now == "never" {
            let change = Change {
                path: THP_ENABLED.into(),
                before: now,
                value: "madvise".into(),
            };
            eprintln!("  {}: {} -> {}", change.path, change.before, change.value);
            session.set_knob(&change).map_err(failed)?;
        }
    }
    if let Some(now) = sys::read(sys::ZSWAP_ENABLED).map(|t| sys::knob_value(&t)) {
        if sys::same_knob_value(&now, "Y") {
            let change = Change {
                path: sys::ZSWAP_ENABLED.into(),
                before: now,
                value: "N".into(),
            };
            eprintln!("  {}: {} -> {}", change.path, change.before, change.value);
            session.set_knob(&change).map_err(failed)?;
        }
    }
    // after the THP knob (the touch takes THPs, so order-9 blocks come back backed) and before
    // the zram device (so that the touch cannot push others' memory to it), as kernel-run does
    if let Some(hold) = page_reporting::hold_off_here(session) {
        conditions.push(hold.describe());
    }
    if sys::virtio_balloon() {
        match page_reporting::prefault_for_calibration(PREFAULT_BYTES).map_err(failed)? {
            Some((bytes, per_4k_ns)) => {
                eprintln!(
                    "  prefault: {} MiB touched and freed ({per_4k_ns} ns per 4 KiB), so the host \
                     backs the benchmarks' memory",
                    bytes >> 20
                );
                conditions.push(format!(
                    "{} MiB touched and freed first ({per_4k_ns} ns per 4 KiB)",
                    bytes >> 20
                ));
            }
            None => eprintln!("  prefault: no memory to spare, not made"),
        }
    }
    conditions.push(format!(
        "each benchmark pinned to CPU {cpu} (sched_setaffinity; the flush IPI's spinning thread \
         to the next CPU)"
    ));
    let mut others = Vec::new();
    eprintln!("calibrate: CPU-side costs, {runs} runs after a warm-up (pinned to CPU {cpu})");
    let mut raw = measure(
        bin,
        &[
            ("read_fault", FAULT_PAGES),
            ("write_fault", FAULT_PAGES),
            ("thp_fault", RESIDENT_PAGES),
            ("cow", FAULT_PAGES),
            ("word_write", RESIDENT_PAGES),
            ("memset", RESIDENT_PAGES),
            ("touch", RESIDENT_PAGES),
            ("same_scan", FAULT_PAGES),
            ("thp_split", RESIDENT_PAGES),
            ("mprotect_local", MPROTECT_CALLS),
            ("mprotect_remote", MPROTECT_CALLS),
        ],
        runs,
        cpu,
        None,
        &mut others,
    )?;
    let (z, algorithm) = session
        .add_zram_swap(ZRAM_BYTES, 32767, false)
        .map_err(|e| failed(format!("zram swap device: {e}")))?;
    eprintln!(
        "  swap: {} ({algorithm}), priority 32767",
        z.dev().display()
    );
    only_mthp_size(session, MTHP_SIZE)?;
    eprintln!("calibrate: zram swap-out and swap-in, {runs} runs after a warm-up");
    let swap = measure(
        bin,
        &[
            ("pageout_data", FAULT_PAGES),
            ("pageout_same", FAULT_PAGES),
            ("pageout_same_64k", FAULT_PAGES),
            ("unmap_swapped_data", RESIDENT_PAGES),
            ("unmap_swapped_same", RESIDENT_PAGES),
            ("unmap_resident", FAULT_PAGES),
            ("unmap_resident_64k", FAULT_PAGES),
            ("zram_read", FAULT_PAGES),
            ("mthp_fault_64k", RESIDENT_PAGES),
        ],
        runs,
        cpu,
        Some(&z.dev()),
        &mut others,
    )?;
    raw.extend(swap);
    // compression measured apart from a swap-out: writes straight to a zram device of its own
    // (a swap device takes no writes but the kernel's)
    let (device, _) = session
        .add_zram_device(ZRAM_BYTES)
        .map_err(|e| failed(format!("zram device: {e}")))?;
    eprintln!(
        "calibrate: zram writes, {runs} runs after a warm-up ({})",
        device.dev().display()
    );
    raw.extend(measure(
        bin,
        &[("zram_write", FAULT_PAGES)],
        runs,
        cpu,
        Some(&device.dev()),
        &mut others,
    )?);
    // the disk: a file of its own in the directory given, written whole first so that its
    // blocks exist, removed after
    let file = tempfile::Builder::new()
        .prefix(".foliosim-calibrate-disk-")
        .tempfile_in(&args.disk_dir)
        .map_err(|e| failed(format!("--disk-dir {}: {e}", args.disk_dir.display())))?;
    {
        use std::io::Write;
        let mut f = file.as_file();
        let block = vec![0x5au8; 1 << 20];
        for _ in 0..DISK_PAGES * 4096 / block.len() as u64 {
            f.write_all(&block)
                .map_err(|e| failed(format!("disk file: {e}")))?;
        }
        f.sync_all()
            .map_err(|e| failed(format!("disk file: {e}")))?;
    }
    eprintln!(
        "calibrate: disk, {runs} runs after a warm-up ({}, a 64 MiB file)",
        args.disk_dir.display()
    );
    raw.extend(measure(
        bin,
        &[("disk", DISK_PAGES)],
        runs,
        cpu,
        Some(file.path()),
        &mut others,
    )?);
    let dir = args
        .disk_dir
        .canonicalize()
        .unwrap_or(args.disk_dir.clone());
    conditions.push(format!("the disk of {}", dir.display()));
    let most = others.iter().copied().fold(0.0, f64::max);
    conditions.push(format!(
        "other tasks used at most {most:.2} CPUs in a round (rounds above {MAX_OTHERS_CPUS} \
         measured again)"
    ));
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_page_part_of_a_per_folio_and_per_page_cost() {
        // 2,000 ps per page and 24,000 per folio: 26,000 a page alone, 3,500 a page in 16s
        assert_eq!(per_page_ps(26_000.0, 2_000.0 + 24_000.0 / 16.0), 2_000.0);
    }

    #[test]
    fn a_cost_splits_into_its_per_page_and_per_folio_parts() {
        // 300 ns per 4 KiB and 8,000 per folio
        let t = |pages: f64| 300.0 + 8_000.0 / pages;
        let (page, folio) = page_and_folio_parts(t(16.0), 16.0, t(512.0), 512.0);
        assert!((page - 300.0).abs() < 1e-6 && (folio - 8_000.0).abs() < 1e-6);
    }

    #[test]
    fn zram_page_costs_and_the_swap_out_per_folio_come_from_the_order_0_and_64k_round_trips() {
        let base = hw::profile("x86-server").unwrap();
        let c = &base.costs;
        // per 4 KiB: zram's own work 1,000 ns out and 700 ns in, besides the scan or fill and
        // the base's other per-page charges; per folio 3,200 ns out and 2,400 ns in
        // the page_same_filled scan measured at 120 ns
        let out_page = 1_000 + 120 + c.pte_update_ns + c.tlb_flush_local_one_ns;
        let in_page = 700 + 120;
        let ps = |page_ns: u64, folio_ns: u64, pages: u64| (page_ns + folio_ns / pages) * 1000;
        let raw = three_runs(&[
            ("pageout_same", ps(out_page, 3_200, 1)),
            ("pageout_same_64k", ps(out_page, 3_200, 16)),
            ("zram_read_4k", ps(in_page, 2_400, 1)),
            ("zram_read_64k", ps(in_page, 2_400, 16)),
            ("same_scan", 120_000),
            // large-folio swap-in is measured but derives nothing
            ("swapin_same", 4_000_000),
            ("swapin_same_64k", 3_000_000),
        ]);
        let measured = costs(&raw, &base);
        assert_eq!(spread_of(&measured, "zram_page_write_ns").median, 1_000);
        // of the 3,200 ns per folio out, the base profile's per-folio charges leave the rest
        let folio_charges = c.reclaim_scan_folio_ns
            + c.rmap_walk_ns
            + c.swap_slot_alloc_ns
            + c.block_io_overhead_ns
            + c.page_alloc_ns;
        assert_eq!(
            spread_of(&measured, "swap_writeout_ns").median,
            3_200 - folio_charges as i64
        );
        assert_eq!(spread_of(&measured, "zram_page_read_ns").median, 700);
        assert_eq!(spread_of(&measured, "zram_page_read_ns").runs, 3);
        assert_eq!(spread_of(&measured, "zram_same_page_ns").median, 120);
        // nothing else was measured
        assert_eq!(measured.len(), 4);
    }

    /// The spread `costs` derived for `cost`.
    fn spread_of(measured: &[Measured], cost: &str) -> crate::calibrate_profile::Spread {
        let m = measured.iter().find(|m| m.cost == cost);
        m.unwrap_or_else(|| panic!("{cost} was not derived")).spread
    }

    /// Three identical runs of each benchmark: `(name, ps per unit)`.
    fn three_runs(values: &[(&str, u64)]) -> BTreeMap<String, Vec<u64>> {
        values
            .iter()
            .map(|&(k, v)| (k.to_string(), vec![v, v, v]))
            .collect()
    }

    #[test]
    fn swap_free_costs_come_from_munmaps_of_swapped_pages_and_leave_decompression_without_them() {
        let base = hw::profile("x86-server").unwrap();
        let c = &base.costs;
        // a swap PTE's zap: the PTE, then 45 ns of entry free; a data page's also a 280 ns
        // zs_free, which its swap-in pays too, beside 1,900 ns of decompression
        let same_ns = c.pte_update_ns + 45;
        let raw = three_runs(&[
            ("unmap_swapped_same", same_ns * 1000),
            ("unmap_swapped_data", (same_ns + 280) * 1000),
            ("swapin_same", 3_000_000),
            ("swapin_data", (3_000 + 1_900 + 280) * 1000),
        ]);
        let measured = costs(&raw, &base);
        assert_eq!(spread_of(&measured, "swap_free_ns").median, 45);
        assert_eq!(spread_of(&measured, "zram_free_ns").median, 280);
        assert_eq!(spread_of(&measured, "zram_decompress_ns").median, 1_900);
        assert_eq!(measured.len(), 3);
    }

    #[test]
    fn compression_comes_from_writes_to_a_zram_device_or_else_from_the_pageouts() {
        let base = hw::profile("x86-server").unwrap();
        let dram = base.costs.dram_read_latency_ns;
        // a data page: 1,500 ns of compression and a one-word same-filled test; a same-filled
        // page: a 300 ns test; 2,000 ns of the write path either way
        let raw = three_runs(&[
            ("zram_write_same", (2_000 + 300) * 1000),
            ("zram_write_data", (2_000 + 1_500 + dram) * 1000),
            ("same_scan", 300_000),
            ("pageout_data", 9_000_000),
            ("pageout_same", 5_000_000),
        ]);
        let measured = costs(&raw, &base);
        assert_eq!(spread_of(&measured, "zram_compress_ns").median, 1_500);
        // without the zram device: the pageouts' difference
        let raw = three_runs(&[("pageout_data", 9_000_000), ("pageout_same", 5_000_000)]);
        let measured = costs(&raw, &base);
        assert_eq!(spread_of(&measured, "zram_compress_ns").median, 4_000);
        assert_eq!(spread_of(&measured, "zram_compress_ns").runs, 3);
    }

    #[test]
    fn the_disk_is_a_latency_then_a_transfer_per_request() {
        let base = hw::profile("x86-server").unwrap();
        // writes: 40 µs to the device and back, then 1 GB/s (4,096 ns per block); reads:
        // 100 µs, then 500 MB/s (8,192 ns per block); a 1 MiB request moves 256 blocks
        let request_ps =
            |latency_ns: u64, block_ns: u64, blocks: u64| (latency_ns + block_ns * blocks) * 1000;
        let raw = three_runs(&[
            ("disk_write_4k", request_ps(40_000, 4_096, 1)),
            ("disk_write_1m", request_ps(40_000, 4_096, 256)),
            ("disk_read_4k", request_ps(100_000, 8_192, 1)),
            ("disk_read_1m", request_ps(100_000, 8_192, 256)),
        ]);
        let measured = costs(&raw, &base);
        assert_eq!(
            spread_of(&measured, "ssd_bandwidth_bytes_per_s").median,
            1_000_000_000
        );
        assert_eq!(spread_of(&measured, "ssd_write_latency_ns").median, 40_000);
        assert_eq!(spread_of(&measured, "ssd_read_latency_ns").median, 100_000);
        assert_eq!(measured.len(), 3);
    }

    #[test]
    fn memset_costs_come_from_the_resident_and_the_cached_memsets_alone() {
        let base = hw::profile("x86-server").unwrap();
        let raw = three_runs(&[
            ("word_write", 880),
            ("memset_cold", 300),
            ("memset_cached", 77),
        ]);
        let measured = costs(&raw, &base);
        assert_eq!(spread_of(&measured, "word_write_ns_x1000").median, 880);
        assert_eq!(spread_of(&measured, "memset_word_ns_x1000").median, 300);
        assert_eq!(
            spread_of(&measured, "memset_word_cached_ns_x1000").median,
            77
        );
        assert_eq!(measured.len(), 3);
    }

    #[test]
    fn the_charge_is_what_a_write_fault_costs_beyond_the_read_fault_the_clearing_and_the_allocation(
    ) {
        let base = hw::profile("x86-server").unwrap();
        let c = &base.costs;
        // a write fault is the read fault, 330 ns of clearing, the allocation, the LRU add and
        // 280 ns more
        let read_ns = 630;
        let write_ns = read_ns + 330 + c.page_alloc_ns + c.lru_op_ns + 280;
        let raw = three_runs(&[
            ("read_fault", read_ns * 1000),
            ("write_fault", write_ns * 1000),
            ("thp_fault", 330_000),
        ]);
        let measured = costs(&raw, &base);
        assert_eq!(spread_of(&measured, "memcg_charge_ns").median, 280);
        assert_eq!(
            spread_of(&measured, "fault_entry_ns").median,
            read_ns as i64 - c.pte_update_ns as i64
        );
    }

    #[test]
    fn split_costs_come_from_splits_of_zero_filled_and_written_thps() {
        let base = hw::profile("x86-server").unwrap();
        let c = &base.costs;
        // kept: 200 ns a subpage besides the PTE clear and restore; dropped: the 150 ns scan,
        // the free, and 300 ns more
        let kept_ns = 200 + 2 * c.pte_update_ns;
        let dropped_ns = kept_ns + 150 + c.page_alloc_ns + 300;
        let raw = three_runs(&[
            ("thp_split_data", kept_ns * 1000),
            ("thp_split_zero", dropped_ns * 1000),
            ("same_scan", 150_000),
        ]);
        let measured = costs(&raw, &base);
        assert_eq!(spread_of(&measured, "split_subpage_ns").median, 200);
        assert_eq!(spread_of(&measured, "split_zero_subpage_ns").median, 300);
    }

    #[test]
    fn the_flush_ipi_comes_from_runs_where_nearly_every_call_sent_one() {
        let raw: BTreeMap<String, Vec<u64>> = [
            (
                "mprotect_local",
                vec![1_000_000, 1_000_000, 1_000_000, 1_000_000],
            ),
            (
                "mprotect_remote",
                vec![8_000_000, 7_300_000, 2_000_000, 7_000_000],
            ),
            // the third run's spinning thread was mostly off its CPU
            (
                "mprotect_remote_ipis_per_million",
                vec![1_000_000, 900_000, 150_000, 1_000_000],
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let m = flush_ipi(&raw).expect("three runs qualify");
        // 7,000, 6,300 / 0.9 = 7,000 and 6,000 ns per IPI
        assert_eq!(
            (m.spread.median, m.spread.min, m.spread.max),
            (7_000, 6_000, 7_000)
        );
        assert_eq!(m.spread.runs, 3);
        assert!(m.how.contains("3 of 4 runs"), "{}", m.how);
        let mut busy = raw.clone();
        busy.insert(
            "mprotect_remote_ipis_per_million".into(),
            vec![100_000, 80_000, 150_000, 50_000],
        );
        assert_eq!(flush_ipi(&busy), None);
        // the receiving side, from the same runs: the third (mostly off its CPU) is left out
        let mut raw = raw;
        raw.insert(
            "mprotect_remote_received".into(),
            vec![2_000_000, 2_400_000, 15_000_000, 2_200_000],
        );
        let r = flush_ipi_received(&raw).expect("three runs qualify");
        assert_eq!(r.cost, "tlb_flush_ipi_receive_ns");
        assert_eq!(
            (r.spread.median, r.spread.min, r.spread.max),
            (2_200, 2_000, 2_400)
        );
        busy.insert("mprotect_remote_received".into(), vec![9_000_000; 4]);
        assert_eq!(flush_ipi_received(&busy), None);
    }
}
