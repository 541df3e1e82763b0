//! A virtual machine's host during a live run. Free page reporting (mm/page_reporting.c, v5.7+;
//! the `page_reporting_order` parameter v5.14+) lets a virtio balloon hand free buddy blocks of
//! at least that order back to the host a couple of seconds after they are freed; the host drops
//! them, and the guest's next touch of such a page faults on the host as well. The simulator
//! models a kernel on hardware and has no such cost, and which pages a live run is given (handed
//! back or not) changes from run to run: measured here, a first touch of 2 GiB cost 5.9 µs per
//! 4 KiB and the next one 1.2 µs (docs/calibration.md). So a run on such a VM:
//!
//! - raises `page_reporting_order` past the largest buddy order, so that nothing is reported
//!   until the session puts it back. page_reporting_process_zone walks the orders from
//!   page_reporting_order to NR_PAGE_ORDERS - 1 and page_reporting_notify_free only wakes it for
//!   a freed block of at least that order, so NR_PAGE_ORDERS reports nothing. Upstream bounds the
//!   parameter by MAX_PAGE_ORDER (param_set_uint_minmax in page_order_update_notify) and refuses
//!   NR_PAGE_ORDERS; then MAX_PAGE_ORDER is written, which still reports free blocks of that one
//!   order, and the note says so. (This VM's kernel takes NR_PAGE_ORDERS; its boot command line
//!   sets it. Its other, non-upstream parameters there — free_bitmap_enable, max_waiting_mib,
//!   min_free_ms — are left alone: their source is not public; `reported_kib` is read to check
//!   that nothing was reported during the run.)
//! - touches, then frees, as much memory as the run can be given, after its knobs are written
//!   (so that the touch takes the folio sizes the run will) and before its swap devices exist
//!   (so that it cannot push others' memory to them): the host backs it again, and the buddy allocator hands these just-freed blocks out first
//!   (they go to the head of their free lists), so the run's pages are backed on the host.

use std::path::{Path, PathBuf};
use std::time::Instant;

use foliosim::Scenario;
use serde_json::{json, Value};

use super::knobs::Change;
use super::session::Session;
use super::sys::{knob_value, read};
use super::{check_signal, LiveError};

/// Where the running kernel has the parameters (with CONFIG_PAGE_REPORTING).
pub const PARAMETERS_DIR: &str = "/sys/module/page_reporting/parameters";

/// NR_PAGE_ORDERS of x86-64 (MAX_PAGE_ORDER 10 + 1), for when /proc/buddyinfo cannot be read.
const DEFAULT_NR_PAGE_ORDERS: u32 = 11;

/// What the run did to page reporting; read again at the run's end.
pub(crate) struct Hold {
    pub(super) change: Change,
    /// Whether no order is left to report (false: the kernel refused NR_PAGE_ORDERS).
    pub(super) reports_nothing: bool,
    dir: PathBuf,
}

impl Hold {
    /// The host facts for the result: the parameter, its values, and what the kernel reported
    /// between the run's counter snapshots (`reported_kib` before and after, when it has one).
    pub(super) fn notes(&self, reported_kib_in_run: Option<u64>) -> Value {
        json!({
            "parameter": self.change.path,
            "order_before": self.change.before,
            "order_during_run": self.change.value,
            "reports_nothing": self.reports_nothing,
            "reported_kib_during_run": reported_kib_in_run,
        })
    }

    /// `reported_kib`: the KiB reported so far (a counter of this VM's kernel, not upstream's).
    pub(super) fn reported_kib(&self) -> Option<u64> {
        reported_kib(&self.dir)
    }
}

fn reported_kib(dir: &Path) -> Option<u64> {
    read(dir.join("reported_kib")).and_then(|t| t.trim().parse().ok())
}

/// NR_PAGE_ORDERS: the number of per-order counts on a line of /proc/buddyinfo
/// (`Node 0, zone   Normal  c0 c1 ... c10`).
pub(super) fn nr_page_orders(buddyinfo: &str) -> Option<u32> {
    buddyinfo
        .lines()
        .map(|l| l.split_whitespace().skip(4).count() as u32)
        .max()
        .filter(|&n| n > 0)
}

/// Raises `page_reporting_order` in `dir` to `nr_orders` (MAX_PAGE_ORDER if the kernel refuses
/// that), recorded in the session first so that cleanup puts the old value back. None when the
/// kernel has no such parameter or it already reports nothing; an error, with nothing recorded,
/// when the file cannot be opened for writing (a read-only /sys).
pub(super) fn hold_off(
    session: &mut Session,
    dir: &Path,
    nr_orders: u32,
) -> Result<Option<Hold>, String> {
    let path = dir.join("page_reporting_order");
    let Some(before) = read(&path).map(|t| knob_value(&t)) else {
        return Ok(None);
    };
    // -1 (unset, before a device registers) reports at pageblock_order once one does
    if before.parse::<i64>().is_ok_and(|o| o >= nr_orders as i64) {
        return Ok(None);
    }
    // a read-only /sys shows at open time; nothing recorded, so cleanup has nothing to undo
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let path = path.to_string_lossy().into_owned();
    let change = |order: u32| Change {
        path: path.clone(),
        before: before.clone(),
        value: order.to_string(),
    };
    let none = change(nr_orders);
    if session.set_knob(&none).is_ok() {
        return Ok(Some(Hold {
            change: none,
            reports_nothing: true,
            dir: dir.to_path_buf(),
        }));
    }
    let largest = change(nr_orders - 1);
    session.set_knob(&largest)?;
    Ok(Some(Hold {
        change: largest,
        reports_nothing: false,
        dir: dir.to_path_buf(),
    }))
}

impl Hold {
    /// One phrase for a calibrated profile's sources: the parameter and what it was raised to.
    pub(crate) fn describe(&self) -> String {
        format!(
            "free page reporting held off ({} {} -> {}{})",
            self.change.path,
            self.change.before,
            self.change.value,
            if self.reports_nothing {
                ""
            } else {
                ", blocks of the largest order still reported"
            }
        )
    }
}

/// Raises the running kernel's page reporting order for the session and prints the one-line
/// note; a run that cannot (a read-only /sys) goes on without, and says so.
pub(crate) fn hold_off_here(session: &mut Session) -> Option<Hold> {
    let nr_orders = read("/proc/buddyinfo")
        .and_then(|t| nr_page_orders(&t))
        .unwrap_or(DEFAULT_NR_PAGE_ORDERS);
    let hold = match hold_off(session, Path::new(PARAMETERS_DIR), nr_orders) {
        Ok(hold) => hold,
        Err(e) => {
            eprintln!("  free page reporting not held off: {e}");
            None
        }
    };
    if let Some(hold) = &hold {
        let what = if hold.reports_nothing {
            "the host is given back no freed memory during the run"
        } else {
            "the kernel refused a higher order: free blocks of the largest order are still reported"
        };
        eprintln!(
            "  free page reporting held off: {} {} -> {} ({what}; restored after)",
            hold.change.path, hold.change.before, hold.change.value
        );
    }
    hold
}

/// How much memory to touch before a run: what its tasks can be given. A task in a cgroup with
/// `memory.max` is held to that limit (its page cache, shmem and page tables included); one in a
/// cgroup without a limit, or in none, can use the scenario's whole machine. Memory zram takes
/// for the swapped pages is charged to no cgroup: at most the devices' sizes. The scenario's
/// machine bounds it all (preflight refuses a machine larger than this one). Capped by
/// MemAvailable less an eighth of MemTotal, so that the touch itself drops only page cache and
/// never pushes the host into reclaiming what others use.
pub fn prefault_bytes(scenario: &Scenario, mem_available_bytes: u64, mem_total_bytes: u64) -> u64 {
    let machine = scenario.machine.memory_bytes();
    let limit_of = |cgroup: &Option<String>| {
        cgroup
            .as_ref()
            .and_then(|name| scenario.cgroups.iter().find(|c| &c.name == name))
            .and_then(|c| c.memory_max_bytes)
            .unwrap_or(machine)
    };
    let mut groups: Vec<&Option<String>> = scenario.tasks.iter().map(|t| &t.cgroup).collect();
    groups.sort();
    groups.dedup();
    let tasks: u64 = groups.into_iter().map(limit_of).sum();
    let swap: u64 = scenario.swap.iter().map(|s| s.size_bytes).sum();
    let room = mem_available_bytes.saturating_sub(mem_total_bytes / 8);
    tasks.saturating_add(swap).min(machine).min(room)
}

/// MemAvailable and MemTotal from /proc/meminfo, in bytes.
fn meminfo() -> (u64, u64) {
    let text = read("/proc/meminfo").unwrap_or_default();
    let field = |name: &str| super::sys::meminfo_field(&text, name).unwrap_or(0);
    (field("MemAvailable:"), field("MemTotal:"))
}

/// Touches `prefault_bytes` of the scenario in this process and frees it; the notes say how
/// much and how long it took (about 1.2 µs per 4 KiB here when the host still backs it all,
/// about 6 µs when it backs none).
pub(super) fn prefault(scenario: &Scenario) -> Result<Value, LiveError> {
    let (available, total) = meminfo();
    let bytes = prefault_bytes(scenario, available, total) & !((2 << 20) - 1);
    if bytes == 0 {
        return Ok(json!({ "bytes": 0 }));
    }
    let start = Instant::now();
    touch_and_free(bytes, false)?;
    let elapsed_ns = start.elapsed().as_nanos() as u64;
    let per_4k_ns = elapsed_ns / (bytes / 4096);
    eprintln!(
        "  prefault: {} MiB touched and freed in {} ms ({per_4k_ns} ns per 4 KiB), so the host backs \
         the run's memory",
        bytes >> 20,
        elapsed_ns / 1_000_000
    );
    Ok(json!({
        "bytes": bytes,
        "elapsed_ns": elapsed_ns,
        "per_4k_ns": per_4k_ns,
        "mem_available_bytes": available,
    }))
}

/// Touches and frees up to `want_bytes` (in whole 2 MiB, as THPs where the THP mode gives
/// MADV_HUGEPAGE mappings them), capped as [`prefault_bytes`] caps a run's: for a calibration,
/// whose benchmarks then get pages the host backs. Returns the bytes touched and the CPU time
/// per 4 KiB (ns), or None when nothing could be.
pub(crate) fn prefault_for_calibration(want_bytes: u64) -> Result<Option<(u64, u64)>, String> {
    let (available, total) = meminfo();
    let room = available.saturating_sub(total / 8);
    let bytes = want_bytes.min(room) & !((2 << 20) - 1);
    if bytes == 0 {
        return Ok(None);
    }
    let start = Instant::now();
    touch_and_free(bytes, true).map_err(|e| match e {
        LiveError::Interrupted(sig) => format!("interrupted by {}", super::signal::name(sig)),
        LiveError::Unsupported(m) | LiveError::Failed(m) | LiveError::Dirty(m) => m,
    })?;
    let per_4k_ns = start.elapsed().as_nanos() as u64 / (bytes / 4096);
    Ok(Some((bytes, per_4k_ns)))
}

/// One private anonymous mapping (MADV_HUGEPAGE when `huge`), written page by page
/// (MADV_POPULATE_WRITE, v5.14+, faults it all in and clears each page; a store per page where
/// the kernel lacks it), then unmapped. In 256 MiB steps, so that a signal stops it.
fn touch_and_free(bytes: u64, huge: bool) -> Result<(), LiveError> {
    use rustix::mm::{madvise, mmap_anonymous, munmap, Advice, MapFlags, ProtFlags};
    const STEP_BYTES: usize = 256 << 20;
    let len = bytes as usize;
    // SAFETY: a new private anonymous mapping, not aliased, unmapped below before returning.
    let base = unsafe {
        mmap_anonymous(
            std::ptr::null_mut(),
            len,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::PRIVATE | MapFlags::NORESERVE,
        )
    }
    .map_err(|e| LiveError::Failed(format!("prefault: cannot map {len} bytes: {e}")))?;
    if huge {
        // SAFETY: the mapping made above. THP `never` refuses it: the touch is then in 4 KiB.
        let _ = unsafe { madvise(base, len, Advice::LinuxHugepage) };
    }
    let mut result = Ok(());
    for offset in (0..len).step_by(STEP_BYTES) {
        if let Err(e) = check_signal() {
            result = Err(e);
            break;
        }
        let step = STEP_BYTES.min(len - offset);
        // SAFETY: [offset, offset + step) lies inside the mapping made above.
        let chunk = unsafe { base.cast::<u8>().add(offset) };
        if unsafe { madvise(chunk.cast(), step, Advice::LinuxPopulateWrite) }.is_err() {
            for page in (0..step).step_by(4096) {
                // SAFETY: inside the mapping, writable, and no one else refers to it.
                unsafe { chunk.add(page).write_volatile(1) };
            }
        }
    }
    // SAFETY: the whole mapping made above; nothing refers to it any more.
    unsafe { munmap(base, len) }
        .map_err(|e| LiveError::Failed(format!("prefault: cannot unmap: {e}")))?;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "foliosim-page-reporting-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn the_order_is_raised_for_the_session_and_put_back_by_its_cleanup() {
        let d = dir("restore");
        let order = d.join("page_reporting_order");
        std::fs::write(&order, "9\n").unwrap();
        std::fs::write(d.join("reported_kib"), "1000\n").unwrap();
        let mut session = Session::new();
        let hold = hold_off(&mut session, &d, 11).unwrap().expect("a hold");
        assert_eq!(std::fs::read_to_string(&order).unwrap(), "11");
        assert!(hold.reports_nothing);
        assert_eq!(hold.reported_kib(), Some(1000));
        assert_eq!(hold.notes(Some(0))["order_before"], "9");
        session.cleanup().unwrap();
        assert_eq!(std::fs::read_to_string(&order).unwrap(), "9");
        // a session dropped without cleanup (an early return, a panic) restores it too
        let mut session = Session::new();
        hold_off(&mut session, &d, 11).unwrap().expect("a hold");
        drop(session);
        assert_eq!(std::fs::read_to_string(&order).unwrap(), "9");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn nothing_is_written_without_the_parameter_or_when_it_reports_nothing_already() {
        let d = dir("absent");
        let mut session = Session::new();
        assert!(hold_off(&mut session, &d, 11).unwrap().is_none());
        std::fs::write(d.join("page_reporting_order"), "11\n").unwrap();
        assert!(hold_off(&mut session, &d, 11).unwrap().is_none());
        session.cleanup().unwrap();
        assert_eq!(
            std::fs::read_to_string(d.join("page_reporting_order")).unwrap(),
            "11\n"
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn the_orders_are_counted_from_buddyinfo() {
        let text = "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 \n\
                    Node 0, zone   Normal   2021   8348   3258   3928    226    207    155     83     54     44     37 \n";
        assert_eq!(nr_page_orders(text), Some(11));
        assert_eq!(nr_page_orders(""), None);
    }

    #[test]
    fn the_prefault_covers_what_the_runs_cgroups_and_swap_can_hold_within_the_machine() {
        let scenario = |cgroups: &str, task_cgroup: &str| {
            Scenario::parse_str(
                &format!(
                    "name = \"t\"\n[machine]\n[[machine.node]]\nmemory = \"4G\"\ncpus = 1\n\
                     [[swap]]\nname = \"z\"\nkind = \"zram\"\nsize = \"1G\"\n{cgroups}\n\
                     [[task]]\nname = \"a\"\n{task_cgroup}ops = []\n\
                     [[task]]\nname = \"b\"\n{task_cgroup}ops = []\n"
                ),
                "t.toml",
            )
            .unwrap()
        };
        let gib = 1u64 << 30;
        let limited = scenario(
            "[[cgroup]]\nname = \"g\"\n\"memory.max\" = \"1G\"\n",
            "cgroup = \"g\"\n",
        );
        // two tasks in one 1 GiB cgroup, 1 GiB of zram: 2 GiB
        assert_eq!(prefault_bytes(&limited, 20 * gib, 24 * gib), 2 * gib);
        // capped by MemAvailable less an eighth of MemTotal
        assert_eq!(prefault_bytes(&limited, 4 * gib, 16 * gib), 2 * gib);
        assert_eq!(prefault_bytes(&limited, 3 * gib, 16 * gib), gib);
        assert_eq!(prefault_bytes(&limited, gib, 16 * gib), 0);
        // tasks in no cgroup can use the whole machine
        let unlimited = scenario("", "");
        assert_eq!(prefault_bytes(&unlimited, 20 * gib, 24 * gib), 4 * gib);
    }
}
