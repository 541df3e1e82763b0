//! How much host memory a run will take, estimated before anything is allocated, so that a
//! scenario too big for this host is refused with the figure (exit 2) instead of aborting
//! half-way through boot. The figures are the engine's per-page state (README, Performance).

use std::collections::BTreeMap;

use super::types::PAGE_SIZE;
use super::units::format_size;
use super::{InputError, Op, Program, Scenario};

/// The `struct page`-like record of each simulated 4 KiB page of memory.
const STRUCT_PAGE_BYTES: u64 = 24;
/// One page-table entry per page of every mapping (allocated at mmap).
const PTE_BYTES: u64 = 8;
/// The page cache's index of a file: one folio id and one shadow entry per page.
const FILE_INDEX_BYTES: u64 = 12;
/// A swap slot's count, cache entry, shadow entry, content class and zeromap bit.
const SWAP_SLOT_BYTES: u64 = 16;
/// The simulator itself, the result and the time series of a short run.
const BASE_BYTES: u64 = 64 << 20;
/// Runs above this much memory are refused at boot with their own message.
const MAX_MACHINE_BYTES: u64 = 16 << 40;

/// The estimated host memory of a run, by the key that asks for it, largest first.
pub(crate) fn estimate(scenario: &Scenario) -> Vec<(&'static str, u64)> {
    let memory_pages = scenario.machine.memory_bytes() / PAGE_SIZE;
    let mapped_pages: u64 = scenario
        .tasks
        .iter()
        .map(|t| match &t.program {
            Program::Ops(ops) => program_pages(ops, &mut BTreeMap::new()),
            Program::Generator(params) => params.mapped_pages(),
            // played live only: the simulator maps nothing for it
            Program::LiveOnly => 0,
        })
        .fold(0, u64::saturating_add);
    let generator_file_pages = scenario.tasks.iter().map(|t| match &t.program {
        Program::Generator(params) => params.file_pages(),
        Program::Ops(_) | Program::LiveOnly => 0,
    });
    // the page cache the nodes start with is indexed as files too (mm/resident_cache.rs)
    let resident_cache_pages = scenario
        .machine
        .nodes
        .iter()
        .map(|n| (n.active_file_bytes + n.inactive_file_bytes) / PAGE_SIZE);
    let file_pages: u64 = scenario
        .files
        .iter()
        .map(|f| f.size_bytes.div_ceil(PAGE_SIZE))
        .chain(generator_file_pages)
        .chain(resident_cache_pages)
        .fold(0, u64::saturating_add);
    let swap_slots: u64 = scenario.swap.iter().map(|s| s.size_bytes / PAGE_SIZE).sum();
    let mut parts = vec![
        (
            "machine.node",
            memory_pages.saturating_mul(STRUCT_PAGE_BYTES),
        ),
        ("task", mapped_pages.saturating_mul(PTE_BYTES)),
        ("file", file_pages.saturating_mul(FILE_INDEX_BYTES)),
        ("swap", swap_slots.saturating_mul(SWAP_SLOT_BYTES)),
    ];
    parts.sort_by_key(|&(_, bytes)| std::cmp::Reverse(bytes));
    parts
}

/// Pages of page-table entries one program allocates: every mapping it makes, and in a fork
/// child a copy of the parent's mappings at the fork. `live` maps regions to their pages.
fn program_pages(ops: &[Op], live: &mut BTreeMap<String, u64>) -> u64 {
    let mut total: u64 = live.values().sum();
    for op in ops {
        match op {
            Op::Mmap { region, size_bytes }
            | Op::MmapShared { region, size_bytes }
            | Op::MmapFile {
                region, size_bytes, ..
            } => {
                let pages = size_bytes.div_ceil(PAGE_SIZE);
                live.insert(region.clone(), pages);
                total = total.saturating_add(pages);
            }
            Op::Munmap { region } => {
                live.remove(region);
            }
            Op::Fork { child, .. } => {
                total = total.saturating_add(program_pages(child, &mut live.clone()));
            }
            _ => {}
        }
    }
    total
}

/// Refuses a run whose estimate exceeds `available_bytes` (None: unknown, nothing refused).
pub(crate) fn check_fits(
    scenario: &Scenario,
    available_bytes: Option<u64>,
) -> Result<(), InputError> {
    let Some(available_bytes) = available_bytes else {
        return Ok(());
    };
    if scenario.machine.memory_bytes() > MAX_MACHINE_BYTES {
        return Ok(());
    }
    let parts = estimate(scenario);
    let total = parts
        .iter()
        .map(|&(_, b)| b)
        .fold(BASE_BYTES, u64::saturating_add);
    if total <= available_bytes {
        return Ok(());
    }
    let (key, _) = parts[0];
    Err(InputError {
        file: scenario.file.clone(),
        key: key.to_string(),
        message: format!(
            "expected a run that fits in this host's available memory ({}), found an estimated \
             {} (24 B per page of machine memory, 8 B per mapped page, 4 B per file page, 8 B \
             per swap slot)",
            format_approx(available_bytes),
            format_approx(total)
        ),
    })
}

/// MemAvailable of /proc/meminfo in bytes; None where it cannot be read.
pub(crate) fn host_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb.saturating_mul(1024))
}

/// A size for an estimate: one decimal in the largest unit (exact sizes use format_size).
fn format_approx(bytes: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB")] {
        if bytes >= 1u64 << shift {
            return format!("{:.1} {unit}", bytes as f64 / (1u64 << shift) as f64);
        }
    }
    format_size(bytes)
}

#[cfg(test)]
mod tests {
    use super::super::parse::test_support::*;
    use super::*;

    #[test]
    fn a_run_bigger_than_the_host_is_refused_with_the_figure() {
        // 2 TiB of machine memory: 512 Mi pages of 24 B, 12 GiB before any mapping
        let s = parse(&MINIMAL.replace("\"8G\"", "\"2T\"")).unwrap();
        assert!(check_fits(&s, Some(64 << 30)).is_ok());
        let e = check_fits(&s, Some(8 << 30)).unwrap_err();
        assert_eq!(e.key, "machine.node");
        assert!(e.message.contains("(8.0 GiB)"), "{e}");
        assert!(e.message.contains("estimated 12.1 GiB"), "{e}");
        assert!(check_fits(&s, None).is_ok());
    }

    #[test]
    fn mappings_count_their_page_tables_and_forks_copy_them() {
        let s = parse(&MINIMAL.replace(
            "generator = \"usemem\"\nsize = \"1M\"",
            "ops = [\n{ op = \"mmap\", region = \"a\", size = \"4T\" },\n\
             { op = \"fork\", name = \"c\", ops = [] },\n]",
        ))
        .unwrap();
        let task = estimate(&s)[0];
        // 1 Gi pages in the parent and a copy in the child, 8 B each
        assert_eq!(task, ("task", 16 << 30));
        assert_eq!(check_fits(&s, Some(8 << 30)).unwrap_err().key, "task");
    }

    /// The "task" part of the estimate of MINIMAL's task made a generator with `params`.
    fn generator_task_bytes(params: &str) -> u64 {
        let s = parse(&MINIMAL.replace("generator = \"usemem\"\nsize = \"1M\"", params))
            .unwrap_or_else(|e| panic!("{e}"));
        let parts = estimate(&s);
        parts.iter().find(|(key, _)| *key == "task").unwrap().1
    }

    #[test]
    fn generators_count_what_they_map() {
        const GIB_PTES: u64 = (1 << 30) / PAGE_SIZE * PTE_BYTES;
        // usemem: SIZE in each process
        let usemem = "generator = \"usemem\"\nprocesses = 8\nsize = \"1G\"";
        assert_eq!(generator_task_bytes(usemem), 8 * GIB_PTES);
        // fork_cow: the parent's buffer and each child's copy of its page table
        let fork_cow = "generator = \"fork_cow\"\nsize = \"1G\"\nchildren = 3";
        assert_eq!(generator_task_bytes(fork_cow), 4 * GIB_PTES);
        // kbuild: one heap of at most size_max per job slot at a time
        let kbuild = "generator = \"kbuild\"\njobs = 4\nunits = 100\nsize_min = \"1M\"\n\
                      size_max = \"1G\"";
        assert_eq!(generator_task_bytes(kbuild), 4 * GIB_PTES);
        let zero_subpage = "generator = \"zero_subpage\"\nsize = \"1G\"";
        assert_eq!(generator_task_bytes(zero_subpage), GIB_PTES);
        // thp_swap_allocator: its 60 MiB and 4 MiB regions
        let thp = "generator = \"thp_swap_allocator\"\nsmall_folios = true";
        assert_eq!(
            generator_task_bytes(thp),
            (64 << 20) / PAGE_SIZE * PTE_BYTES
        );
    }

    #[test]
    fn a_generator_task_over_the_host_is_refused_naming_the_task() {
        let s =
            parse(&MINIMAL.replace("size = \"1M\"", "processes = 16384\nsize = \"8T\"")).unwrap();
        let e = check_fits(&s, Some(64 << 30)).unwrap_err();
        assert_eq!(e.key, "task");
        assert!(e.message.contains("estimated 256.0 TiB"), "{e}");
    }

    #[test]
    fn a_file_read_task_counts_its_file() {
        let s = parse(&MINIMAL.replace(
            "generator = \"usemem\"\nsize = \"1M\"",
            "generator = \"file_read\"\nsize = \"8T\"",
        ))
        .unwrap();
        let file = estimate(&s)
            .into_iter()
            .find(|(k, _)| *k == "file")
            .unwrap();
        assert_eq!(file.1, (8u64 << 40) / PAGE_SIZE * FILE_INDEX_BYTES);
    }
}
