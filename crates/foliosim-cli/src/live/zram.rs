//! zram devices for live runs: a new one from /sys/class/zram-control/hot_add, or else an unused
//! one (no disk size, not swapped on); set up with a compression algorithm and a disk size,
//! mkswap'd and swapped on (or carrying an ext4 file system with a swap file); afterwards swapped
//! off, unmounted, reset and, when added, removed again.

use std::path::{Path, PathBuf};
use std::process::Command;

use foliosim::scenario::Counters;

use super::sys::{active_swaps, find_program, knob_value, parse_mm_stat, read, write};

const HOT_ADD: &str = "/sys/class/zram-control/hot_add";
const HOT_REMOVE: &str = "/sys/class/zram-control/hot_remove";

/// The compression algorithm of tools/mm/thp_swap_allocator_test's setup; where a kernel lacks
/// it, the device keeps its default.
pub const PREFERRED_ALGORITHM: &str = "lzo";

/// A zram device a run owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Zram {
    pub id: u32,
    /// Made by hot_add (so removed by hot_remove), or an idle device that existed before.
    pub hot_added: bool,
    /// An idle device's algorithm before the run, restored after its reset.
    pub algorithm_before: Option<String>,
}

impl Zram {
    pub fn name(&self) -> String {
        format!("zram{}", self.id)
    }
    pub fn sys(&self) -> PathBuf {
        PathBuf::from(format!("/sys/block/zram{}", self.id))
    }
    pub fn dev(&self) -> PathBuf {
        PathBuf::from(format!("/dev/zram{}", self.id))
    }
    pub fn mm_stat(&self) -> Counters {
        parse_mm_stat(&read(self.sys().join("mm_stat")).unwrap_or_default())
    }
}

/// Why zram cannot be used here, if it cannot.
pub fn check_available() -> Result<(), String> {
    if Path::new(HOT_ADD).exists() || idle_device().is_some() {
        Ok(())
    } else if Path::new("/sys/block/zram0").exists() {
        Err("no idle zram device and no /sys/class/zram-control/hot_add to add one".into())
    } else {
        Err("this kernel has no zram (CONFIG_ZRAM, or `modprobe zram`)".into())
    }
}

/// A zram device that nothing uses: no disk size, not swapped on, no holders.
fn idle_device() -> Option<u32> {
    let swaps = active_swaps();
    let mut ids: Vec<u32> = std::fs::read_dir("/sys/block")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("zram")?.parse().ok())
        .collect();
    ids.sort();
    ids.into_iter().find(|id| {
        let sys = PathBuf::from(format!("/sys/block/zram{id}"));
        let disksize: u64 = read(sys.join("disksize"))
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(1);
        let holders = std::fs::read_dir(sys.join("holders")).map_or(1, |d| d.count());
        disksize == 0 && holders == 0 && !swaps.contains(&format!("/dev/zram{id}"))
    })
}

/// Takes a device: adds one, or claims an idle one. The caller records it for removal before
/// anything else can fail.
pub fn take() -> Result<Zram, String> {
    if Path::new(HOT_ADD).exists() {
        let id = read(HOT_ADD)
            .and_then(|t| t.trim().parse().ok())
            .ok_or_else(|| format!("cannot add a zram device: reading {HOT_ADD} failed"))?;
        return Ok(Zram {
            id,
            hot_added: true,
            algorithm_before: None,
        });
    }
    let id = idle_device().ok_or("no idle zram device")?;
    let algorithm_before =
        read(format!("/sys/block/zram{id}/comp_algorithm")).map(|t| knob_value(&t));
    Ok(Zram {
        id,
        hot_added: false,
        algorithm_before,
    })
}

/// Sets the algorithm (when the kernel has it) and the disk size; returns the algorithm used.
pub fn configure(z: &Zram, size_bytes: u64) -> Result<String, String> {
    let sys = z.sys();
    let algorithms = read(sys.join("comp_algorithm")).unwrap_or_default();
    let has_preferred = algorithms
        .split_whitespace()
        .any(|a| a.trim_matches(|c| c == '[' || c == ']') == PREFERRED_ALGORITHM);
    if has_preferred {
        write(sys.join("comp_algorithm"), PREFERRED_ALGORITHM)?;
    }
    write(sys.join("disksize"), &size_bytes.to_string())?;
    Ok(knob_value(
        &read(sys.join("comp_algorithm")).unwrap_or_default(),
    ))
}

/// Runs a program to completion; Err with its stderr when it fails.
pub(super) fn run(program: &str, args: &[&str]) -> Result<(), String> {
    let path = find_program(program).ok_or_else(|| format!("{program} not found"))?;
    let out = Command::new(&path)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Waits for the device node, which devtmpfs makes shortly after hot_add.
fn wait_for_node(z: &Zram) -> String {
    let dev = z.dev();
    for _ in 0..100 {
        if dev.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    dev.to_string_lossy().into_owned()
}

/// mkswap, then swapon with a priority when it is one swapon(2) accepts (0..=32767); negative
/// priorities are the kernel's own, given in swapon order, as foliosim gives them in file order.
pub fn swapon(path: &str, priority: i32, discard: bool) -> Result<(), String> {
    run("mkswap", &[path])?;
    let priority_text = priority.to_string();
    let mut args = vec![];
    if priority >= 0 {
        args.extend(["-p", priority_text.as_str()]);
    }
    if discard {
        args.push("--discard");
    }
    args.push(path);
    run("swapon", &args)
}

/// The device swapped on itself.
pub fn swapon_device(z: &Zram, priority: i32, discard: bool) -> Result<(), String> {
    swapon(&wait_for_node(z), priority, discard)
}

/// ext4 on the device, mounted on `dir` (which must exist and be empty).
pub fn mount_ext4(z: &Zram, dir: &Path) -> Result<(), String> {
    let dev = wait_for_node(z);
    run("mkfs.ext4", &["-q", "-F", &dev])?;
    run("mount", &[&dev, &dir.to_string_lossy()])
}

/// A swap file of `size_bytes` written out in full (a swap file may have no holes).
pub fn make_swap_file(path: &Path, size_bytes: u64) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let chunk = vec![0u8; 1 << 20];
    let mut left = size_bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n])
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        left -= n as u64;
    }
    f.sync_all()
        .map_err(|e| format!("cannot sync {}: {e}", path.display()))?;
    // swap I/O goes to the file's blocks directly (swap extents), never through its page cache:
    // the clean copy the writes left (12 GiB for thp-zero-subpage) would otherwise sit in memory
    // the simulated machine has free, and the run would pay direct reclaim to get it back
    rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed)
        .map_err(|e| format!("cannot drop the page cache of {}: {e}", path.display()))
}

pub fn is_swapped_on(path: &str) -> bool {
    active_swaps().iter().any(|s| s == path)
}

pub fn swapoff(path: &str) -> Result<(), String> {
    if !is_swapped_on(path) {
        return Ok(());
    }
    run("swapoff", &[path])
}

/// Unmounts `dir` if something is mounted there, then removes it.
pub fn unmount(dir: &Path) -> Result<(), String> {
    let text = dir.to_string_lossy();
    let mounted = read("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(&*text));
    if mounted {
        run("umount", &[&text])?;
    }
    match std::fs::remove_dir(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("cannot remove {}: {e}", dir.display()))
        }
        _ => Ok(()),
    }
}

/// Resets the device and removes it if the run added it (else restores its algorithm).
pub fn release(z: &Zram) -> Result<(), String> {
    let sys = z.sys();
    if !sys.exists() {
        return Ok(());
    }
    // a reset can meet a device still closing after swapoff: retry briefly
    let mut result = Ok(());
    for _ in 0..50 {
        result = write(sys.join("reset"), "1");
        if result.is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    result?;
    if z.hot_added {
        write(HOT_REMOVE, &z.id.to_string())
    } else {
        match &z.algorithm_before {
            Some(a) => write(sys.join("comp_algorithm"), a),
            None => Ok(()),
        }
    }
}
