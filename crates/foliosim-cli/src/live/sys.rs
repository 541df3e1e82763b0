//! Reading the running kernel: sysfs and procfs values, counter files, the kernel release and the
//! foliosim profile that matches it. The parsers are pure functions of the file text.

use std::collections::BTreeMap;
use std::path::Path;

use foliosim::scenario::profile::BASE_PROFILES;
use foliosim::scenario::Counters;

pub const THP_DIR: &str = "/sys/kernel/mm/transparent_hugepage";
pub const ZSWAP_ENABLED: &str = "/sys/module/zswap/parameters/enabled";

/// A file's text, or None when it does not exist or cannot be read.
pub fn read(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// Writes a knob value the way `echo VALUE > PATH` would; the error names the path.
pub fn write(path: impl AsRef<Path>, value: &str) -> Result<(), String> {
    let path = path.as_ref();
    std::fs::write(path, value).map_err(|e| {
        format!(
            "cannot write {value:?} to {}: {}",
            path.display(),
            crate::output::io_error_text(&e)
        )
    })
}

/// The value a knob file holds: the bracketed choice of a sysfs selection
/// (`always [madvise] never` -> `madvise`), else the trimmed text.
pub fn knob_value(raw: &str) -> String {
    if let (Some(open), Some(close)) = (raw.find('['), raw.find(']')) {
        if open < close {
            return raw[open + 1..close].trim().to_string();
        }
    }
    raw.trim().to_string()
}

/// Knob values compared as the kernel reads them: booleans in any spelling (`1`, `Y`, `true`)
/// are the same value.
pub fn same_knob_value(a: &str, b: &str) -> bool {
    fn normal(v: &str) -> String {
        match v.trim().to_ascii_lowercase().as_str() {
            "1" | "y" | "yes" | "true" => "1".into(),
            "0" | "n" | "no" | "false" => "0".into(),
            other => other.to_string(),
        }
    }
    normal(a) == normal(b)
}

/// `name value` lines (/proc/vmstat, memory.stat, memory.events, memory.oom_control); lines whose
/// value is not an unsigned integer are skipped.
pub fn parse_name_values(text: &str) -> Counters {
    let mut out = Counters::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if let (Some(name), Some(value), None) = (words.next(), words.next(), words.next()) {
            if let Ok(v) = value.parse::<u64>() {
                out.insert(name.to_string(), v);
            }
        }
    }
    out
}

/// Field names of zram's `mm_stat`, in file order (Documentation/admin-guide/blockdev/zram.rst).
pub const MM_STAT_FIELDS: &[&str] = &[
    "orig_data_size",
    "compr_data_size",
    "mem_used_total",
    "mem_limit",
    "mem_used_max",
    "same_pages",
    "pages_compacted",
    "huge_pages",
    "huge_pages_since",
];

/// zram's `mm_stat` line by field name; fields a kernel does not print are absent.
pub fn parse_mm_stat(text: &str) -> Counters {
    MM_STAT_FIELDS
        .iter()
        .zip(text.split_whitespace())
        .filter_map(|(name, v)| v.parse().ok().map(|v| (name.to_string(), v)))
        .collect()
}

/// Node counters whose names start with nr_ but which only grow: events, like the rest of
/// /proc/vmstat's counters that are not levels.
const NR_EVENTS: [&str; 7] = [
    "nr_dirtied",
    "nr_written",
    "nr_vmscan_write",
    "nr_vmscan_immediate_reclaim",
    "nr_throttled_written",
    "nr_foll_pin_acquired",
    "nr_foll_pin_released",
];

/// /proc/vmstat items that are levels rather than event counts: their difference over a run is
/// not a count of anything, so run deltas leave them out.
pub fn is_vmstat_level(name: &str) -> bool {
    (name.starts_with("nr_") && !name.starts_with("nr_tlb_") && !NR_EVENTS.contains(&name))
        || name == "workingset_nodes"
}

/// `after - before` for every counter in `after` (0 where a counter went down: a level).
pub fn delta(before: &Counters, after: &Counters) -> Counters {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v.saturating_sub(*before.get(k).unwrap_or(&0))))
        .collect()
}

/// The TLB shootdown IPIs received, summed over the CPUs: /proc/interrupts' `TLB:` line.
pub fn tlb_shootdowns(interrupts: &str) -> Option<u64> {
    let line = interrupts
        .lines()
        .find(|l| l.trim_start().starts_with("TLB:"))?;
    Some(
        line.split_whitespace()
            .skip(1)
            .map_while(|w| w.parse::<u64>().ok())
            .sum(),
    )
}

/// zswap's debugfs figures (/sys/kernel/debug/zswap/*), empty when debugfs is not mounted.
pub fn read_zswap_debugfs() -> Counters {
    let Ok(entries) = std::fs::read_dir("/sys/kernel/debug/zswap") else {
        return Counters::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let value = read(e.path())?.trim().parse::<u64>().ok()?;
            Some((name, value))
        })
        .collect()
}

/// zswap's debugfs figures that are levels (what the pool holds now); the rest count events.
pub const ZSWAP_LEVELS: &[&str] = &[
    "pool_total_size",
    "stored_pages",
    "same_filled_pages",
    "stored_incompressible_pages",
];

/// Every `hugepages-<size>/stats/*` counter, by size name (`64kB`).
pub fn read_mthp_stats() -> BTreeMap<String, Counters> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(THP_DIR) else {
        return out;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(size) = name.strip_prefix("hugepages-") else {
            continue;
        };
        let Ok(stats) = std::fs::read_dir(entry.path().join("stats")) else {
            continue;
        };
        let mut counters = Counters::new();
        for stat in stats.flatten() {
            if let Some(v) = read(stat.path()).and_then(|t| t.trim().parse().ok()) {
                counters.insert(stat.file_name().to_string_lossy().into_owned(), v);
            }
        }
        out.insert(size.to_string(), counters);
    }
    out
}

/// The running kernel's release (`uname -r`).
pub fn os_release() -> String {
    read("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// `major.minor` of a kernel release such as `6.18.44-fc-v782` or a profile such as `v6.12`.
pub fn major_minor(release: &str) -> Option<(u32, u32)> {
    let s = release.strip_prefix('v').unwrap_or(release);
    let mut parts = s.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// The foliosim profile that models a kernel release: the newest base profile not newer than
/// it (6.18.x -> v6.18, 6.13 -> v6.12, 7.1 -> v6.18). Releases older than every profile have none.
pub fn profile_for_release(release: &str) -> Result<String, String> {
    let wanted = major_minor(release)
        .ok_or_else(|| format!("cannot read a version from kernel release {release:?}"))?;
    BASE_PROFILES
        .iter()
        .filter_map(|p| major_minor(p).map(|v| (v, *p)))
        .filter(|(v, _)| *v <= wanted)
        .max()
        .map(|(_, p)| p.to_string())
        .ok_or_else(|| {
            format!(
                "kernel {release} is older than every foliosim profile ({})",
                BASE_PROFILES.join(", ")
            )
        })
}

/// The effective user id, from /proc/self/status.
pub fn effective_uid() -> Option<u32> {
    let status = read("/proc/self/status")?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// Active swap areas (device or file paths) from /proc/swaps.
pub fn active_swaps() -> Vec<String> {
    read("/proc/swaps")
        .map(|t| parse_proc_swaps(&t))
        .unwrap_or_default()
}

pub fn parse_proc_swaps(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// A build option from /proc/config.gz or /boot/config-<release>: Some(true) for `=y`/`=m`,
/// Some(false) when it is unset, None when no configuration can be read.
pub fn kernel_config(option: &str) -> Option<bool> {
    let text = if Path::new("/proc/config.gz").exists() {
        let out = std::process::Command::new("zcat")
            .arg("/proc/config.gz")
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        String::from_utf8_lossy(&out.stdout).into_owned()
    } else {
        read(format!("/boot/config-{}", os_release()))?
    };
    Some(config_enabled(&text, option))
}

pub fn config_enabled(config: &str, option: &str) -> bool {
    config.lines().any(|l| {
        l.strip_prefix(option)
            .and_then(|rest| rest.strip_prefix('='))
            .is_some_and(|v| v == "y" || v == "m")
    })
}

/// Online CPUs and total memory of this machine, for the notes beside a live run.
pub fn machine() -> (u32, u64) {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get() as u32);
    let mem_bytes = read("/proc/meminfo")
        .and_then(|t| meminfo_field(&t, "MemTotal:"))
        .unwrap_or(0);
    (cpus, mem_bytes)
}

/// A meminfo field in bytes: `name`'s value in kB, in /proc/meminfo ("MemTotal:  24684096 kB")
/// or a node's meminfo ("Node 0 MemTotal: ...").
pub fn meminfo_field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let mut words = line.split_whitespace().skip_while(|w| *w != name);
        words.next()?;
        words.next()?.parse::<u64>().ok().map(|kb| kb * 1024)
    })
}

/// One NUMA node's memory and page cache, in bytes, as its meminfo gives them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeMeminfo {
    pub node: u32,
    pub mem_total_bytes: u64,
    pub active_file_bytes: u64,
    pub inactive_file_bytes: u64,
}

/// Every online node's /sys/devices/system/node/nodeN/meminfo, by node id; /proc/meminfo as node
/// 0 where there are none (a kernel without NUMA). Empty if neither can be read.
pub fn node_meminfo() -> Vec<NodeMeminfo> {
    let mut nodes: Vec<NodeMeminfo> = std::fs::read_dir("/sys/devices/system/node")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let node = name.strip_prefix("node")?.parse().ok()?;
            parse_meminfo(node, &read(entry.path().join("meminfo"))?)
        })
        .collect();
    nodes.sort_by_key(|n| n.node);
    if nodes.is_empty() {
        nodes.extend(read("/proc/meminfo").and_then(|t| parse_meminfo(0, &t)));
    }
    nodes
}

/// The fields of a meminfo text ("MemTotal:  24684096 kB", or "Node 0 MemTotal: ..." in a
/// node's); None without MemTotal.
pub fn parse_meminfo(node: u32, text: &str) -> Option<NodeMeminfo> {
    let field = |name: &str| meminfo_field(text, name);
    Some(NodeMeminfo {
        node,
        mem_total_bytes: field("MemTotal:")?,
        active_file_bytes: field("Active(file):").unwrap_or(0),
        inactive_file_bytes: field("Inactive(file):").unwrap_or(0),
    })
}

/// Has zswap been enabled at any time since boot (zswap_never_enabled is a static key a user
/// cannot read)? Its first enabling runs zswap_setup, which logs "zswap: loaded using pool" and
/// makes zswap's debugfs directory; the log may have wrapped, the directory stays. When debugfs
/// is not mounted at /sys/kernel/debug, it is mounted for the look on a private temporary
/// directory and unmounted again, so that foliosim processes looking at once (validate runs in
/// parallel) never see each other's mount come or go.
pub fn zswap_was_enabled() -> bool {
    let logged = std::process::Command::new("dmesg")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("zswap: loaded using pool"))
        .unwrap_or(false);
    if logged {
        return true;
    }
    const DEBUGFS: &str = "/sys/kernel/debug";
    let dir = Path::new(DEBUGFS).join("zswap");
    if dir.exists() {
        return true;
    }
    let mount = |args: &[&str], cmd: &str| {
        std::process::Command::new(cmd)
            .args(args)
            .status()
            .is_ok_and(|s| s.success())
    };
    let Some(point) = tempfile::tempdir().ok() else {
        return false;
    };
    let Some(path) = point.path().to_str() else {
        return false;
    };
    if !mount(&["-t", "debugfs", "none", path], "mount") {
        return false;
    }
    let exists = point.path().join("zswap").exists();
    mount(&[path], "umount");
    exists
}

/// kdamond processes running a DAMON `pageout` scheme: they may page out idle memory of any
/// process to the run's swap device, adding to its swap counters.
pub fn damon_pageout_kdamonds() -> Vec<String> {
    let root = Path::new("/sys/kernel/mm/damon/admin/kdamonds");
    let Ok(kdamonds) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let dirs = |p: &Path| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(p)
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .collect()
            })
            .unwrap_or_default()
    };
    kdamonds
        .flatten()
        .map(|e| e.path())
        .filter(|k| read(k.join("state")).is_some_and(|s| s.trim() == "on"))
        .filter(|k| {
            dirs(&k.join("contexts")).iter().any(|c| {
                dirs(&c.join("schemes"))
                    .iter()
                    .any(|s| read(s.join("action")).is_some_and(|a| a.trim() == "pageout"))
            })
        })
        .map(|k| read(k.join("pid")).map_or_else(String::new, |p| p.trim().to_string()))
        .collect()
}

/// Whether a virtio balloon is bound: with free page reporting, memory the guest freed a while
/// ago goes back to the host, and the next run to touch it pays the host's faults.
pub fn virtio_balloon() -> bool {
    std::fs::read_dir("/sys/bus/virtio/drivers/virtio_balloon")
        .map(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("virtio"))
        })
        .unwrap_or(false)
}

/// Whether a program can be found in PATH (or the usual sbin directories, for root's tools).
pub fn find_program(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(Into::into))
        .map(|d: std::path::PathBuf| d.join(name))
        .find(|p| p.is_file())
}

/// Reaps the child (wait4; with `block` false only if it has exited) and returns its exit
/// status and its user and system CPU time in ns, the children it waited for included.
pub fn wait_with_usage(
    child: &std::process::Child,
    block: bool,
) -> Option<(std::process::ExitStatus, (u64, u64))> {
    use std::os::unix::process::ExitStatusExt;
    let mut status = 0;
    // SAFETY: wait4 writes only the status and the rusage passed, both owned here.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let options = if block { 0 } else { libc::WNOHANG };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, options, &mut usage) };
    if pid <= 0 {
        return None;
    }
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    Some((
        std::process::ExitStatus::from_raw(status),
        (ns(usage.ru_utime), ns(usage.ru_stime)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knob_values_read_as_the_kernel_shows_them() {
        assert_eq!(knob_value("always [madvise] never\n"), "madvise");
        assert_eq!(knob_value("[always] inherit madvise never"), "always");
        assert_eq!(
            knob_value("always defer defer+madvise [madvise] never"),
            "madvise"
        );
        assert_eq!(knob_value("511\n"), "511");
        assert_eq!(knob_value("N\n"), "N");
        assert!(same_knob_value("N", "0"));
        assert!(same_knob_value("false", "0"));
        assert!(same_knob_value("Y", "true"));
        assert!(!same_knob_value("Y", "N"));
        assert!(!same_knob_value("always", "never"));
        assert!(!same_knob_value("10", "1"));
    }

    #[test]
    fn tlb_shootdowns_are_summed_over_the_cpus_of_the_tlb_line() {
        let interrupts = "            CPU0       CPU1\n\
             CAL:   22593181   14456401   Function call interrupts\n\
             TLB:   21731502   13723752   TLB shootdowns\n\
             TRM:          0          0   Thermal event interrupts\n";
        assert_eq!(tlb_shootdowns(interrupts), Some(35_455_254));
        assert_eq!(tlb_shootdowns("CAL: 1 2 Function call interrupts\n"), None);
    }

    #[test]
    fn releases_map_to_the_newest_profile_not_newer() {
        assert_eq!(profile_for_release("6.18.44-fc-v782").unwrap(), "v6.18");
        assert_eq!(profile_for_release("6.18.0").unwrap(), "v6.18");
        assert_eq!(profile_for_release("6.12.9-arch1-1").unwrap(), "v6.12");
        assert_eq!(profile_for_release("6.13.0").unwrap(), "v6.12");
        assert_eq!(profile_for_release("6.17.1").unwrap(), "v6.12");
        assert_eq!(profile_for_release("6.11.0").unwrap(), "v6.10");
        assert_eq!(profile_for_release("6.10.3").unwrap(), "v6.10");
        assert_eq!(profile_for_release("6.9.12").unwrap(), "v6.9");
        assert_eq!(profile_for_release("7.1.0").unwrap(), "v6.18");
        // numeric, not lexical: 6.100 is newer than 6.18, 6.2 is older than 6.9
        assert_eq!(profile_for_release("6.100.0").unwrap(), "v6.18");
        assert!(profile_for_release("6.2.0").unwrap_err().contains("older"));
        assert!(profile_for_release("5.15.0").is_err());
        assert!(profile_for_release("garbage").is_err());
    }

    #[test]
    fn counter_files_parse_and_subtract() {
        let before = parse_name_values("pswpout 10\nnr_free_pages 500\nthp_swpout 1\n");
        let after =
            parse_name_values("pswpout 74\nnr_free_pages 400\nthp_swpout 1\nnew 3\nbad x\n");
        let d = delta(&before, &after);
        assert_eq!(d["pswpout"], 64);
        assert_eq!(d["thp_swpout"], 0);
        assert_eq!(
            d["nr_free_pages"], 0,
            "a level that went down is not negative"
        );
        assert_eq!(d["new"], 3);
        assert!(!d.contains_key("bad"));
        assert!(is_vmstat_level("nr_free_pages"));
        assert!(!is_vmstat_level("nr_tlb_remote_flush"));
        assert!(!is_vmstat_level("nr_vmscan_write"));
        assert!(!is_vmstat_level("nr_dirtied"));
        assert!(!is_vmstat_level("pswpin"));
    }

    #[test]
    fn mm_stat_fields_by_name() {
        let c = parse_mm_stat("  4096  62  12288  0  16384  0  0  0  0\n");
        assert_eq!(c["orig_data_size"], 4096);
        assert_eq!(c["compr_data_size"], 62);
        assert_eq!(c["mem_used_total"], 12288);
        assert_eq!(c["mem_used_max"], 16384);
        assert_eq!(c["huge_pages_since"], 0);
        // an older kernel prints fewer fields
        assert_eq!(parse_mm_stat("1 2 3 4 5 6 7").len(), 7);
    }

    #[test]
    fn proc_swaps_and_config() {
        let swaps = "Filename\tType\tSize\tUsed\tPriority\n/dev/zram1 partition 65532 0 -2\n";
        assert_eq!(parse_proc_swaps(swaps), vec!["/dev/zram1"]);
        assert!(parse_proc_swaps("Filename\tType\tSize\tUsed\tPriority\n").is_empty());
        let config = "CONFIG_THP_SWAP=y\n# CONFIG_ZSWAP is not set\nCONFIG_ZRAM=m\n";
        assert!(config_enabled(config, "CONFIG_THP_SWAP"));
        assert!(config_enabled(config, "CONFIG_ZRAM"));
        assert!(!config_enabled(config, "CONFIG_ZSWAP"));
        assert!(!config_enabled(config, "CONFIG_THP"));
    }
}
