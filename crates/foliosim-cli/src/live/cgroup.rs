//! Memory cgroups for live runs, on cgroup v2 or the v1 memory controller, whichever holds the
//! memory controller. A run's cgroups are created next to (v2) or below (v1) the cgroup this
//! process is in, so the run stays inside whatever confines this process; they are named
//! `foliosim-<pid>-<name>` and only those are ever removed.

use std::path::{Path, PathBuf};

use foliosim::scenario::Counters;

use super::sys::{parse_name_values, read, write};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// Where a run's cgroups go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hierarchy {
    pub version: Version,
    /// The directory new cgroups are made in.
    pub parent: PathBuf,
}

/// The cgroup mounts in /proc/self/mountinfo: (the v1 hierarchy with the memory controller, the
/// v2 mount), each if present.
pub fn parse_mountinfo(text: &str) -> (Option<PathBuf>, Option<PathBuf>) {
    let mut v1 = None;
    let mut v2 = None;
    for line in text.lines() {
        // ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS
        let Some((head, tail)) = line.split_once(" - ") else {
            continue;
        };
        let Some(mount_point) = head.split_whitespace().nth(4) else {
            continue;
        };
        let mut tail = tail.split_whitespace();
        let fstype = tail.next().unwrap_or("");
        let super_options = tail.nth(1).unwrap_or("");
        match fstype {
            "cgroup" if super_options.split(',').any(|o| o == "memory") => {
                v1.get_or_insert_with(|| PathBuf::from(mount_point));
            }
            "cgroup2" => {
                v2.get_or_insert_with(|| PathBuf::from(mount_point));
            }
            _ => {}
        }
    }
    (v1, v2)
}

/// This process's cgroup paths from /proc/self/cgroup: (the v1 memory cgroup, the v2 cgroup).
pub fn parse_proc_cgroup(text: &str) -> (Option<String>, Option<String>) {
    let mut v1 = None;
    let mut v2 = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if id == "0" && controllers.is_empty() {
            v2 = Some(path.to_string());
        } else if controllers.split(',').any(|c| c == "memory") {
            v1 = Some(path.to_string());
        }
    }
    (v1, v2)
}

/// The memory controller's cgroups from /proc/cgroups (its num_cgroups: the root, every
/// descendant, and the dying ones not yet freed, all of which mem_cgroup_iter walks).
pub fn parse_memory_cgroups(text: &str) -> Option<u32> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.first() == Some(&"memory"))
        .and_then(|f| f.get(2)?.parse().ok())
}

/// The host's memory cgroups besides the root (which the simulator has): what the scenario's
/// `host_memcgs` stands for, before the run adds its own.
pub fn host_memcgs() -> Option<u32> {
    parse_memory_cgroups(&read("/proc/cgroups")?).map(|n| n.saturating_sub(1))
}

/// The host's online memory cgroups besides the root: the directories under the memory
/// hierarchy's mount (v1's memory mount, or the v2 mount), counted before the run makes its own.
pub fn host_memcgs_online() -> Option<u32> {
    let mountinfo = read("/proc/self/mountinfo")?;
    let (v1, v2) = parse_mountinfo(&mountinfo);
    let root = v1.or(v2)?;
    fn subdirs(dir: &Path) -> u32 {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return 0;
        };
        entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| 1 + subdirs(&e.path()))
            .sum()
    }
    Some(subdirs(&root))
}

fn has_word(file: &Path, word: &str) -> bool {
    read(file).is_some_and(|t| t.split_whitespace().any(|w| w == word))
}

/// Finds where this process can make memory cgroups, or says why it cannot.
pub fn detect() -> Result<Hierarchy, String> {
    let mountinfo = read("/proc/self/mountinfo").unwrap_or_default();
    let own = read("/proc/self/cgroup").unwrap_or_default();
    let (v1_mount, v2_mount) = parse_mountinfo(&mountinfo);
    let (v1_path, v2_path) = parse_proc_cgroup(&own);
    if let Some(mount) = &v2_mount {
        if has_word(&mount.join("cgroup.controllers"), "memory") {
            // v2 puts processes only in leaves: go up from our own cgroup to the nearest one
            // that hands the memory controller to its children, and make ours beside us
            let mut dir = mount.join(v2_path.unwrap_or_default().trim_start_matches('/'));
            loop {
                if has_word(&dir.join("cgroup.subtree_control"), "memory") {
                    return Ok(Hierarchy {
                        version: Version::V2,
                        parent: dir,
                    });
                }
                if dir == *mount || !dir.pop() {
                    break;
                }
            }
            if v1_mount.is_none() {
                return Err(format!(
                    "no cgroup at or above this process's under {} enables the memory controller for its children",
                    mount.display()
                ));
            }
        }
    }
    if let Some(mount) = v1_mount {
        let dir = mount.join(v1_path.unwrap_or_default().trim_start_matches('/'));
        if dir.is_dir() {
            return Ok(Hierarchy {
                version: Version::V1,
                parent: dir,
            });
        }
    }
    Err("no memory cgroup controller is mounted (cgroup v2 with memory, or the v1 memory hierarchy)".into())
}

/// A cgroup's memory.zswap.max (None = max) and memory.zswap.writeback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZswapLimits {
    pub max_bytes: Option<u64>,
    pub writeback: bool,
}

impl Default for ZswapLimits {
    fn default() -> Self {
        ZswapLimits {
            max_bytes: None,
            writeback: true,
        }
    }
}

impl Hierarchy {
    /// Makes an empty cgroup `name` in the parent directory.
    pub fn make(&self, name: &str) -> Result<PathBuf, String> {
        let dir = self.parent.join(name);
        std::fs::create_dir(&dir)
            .map_err(|e| format!("cannot create cgroup {}: {e}", dir.display()))?;
        Ok(dir)
    }

    /// Sets a cgroup's memory limit (None = no limit) and, on v1, the swappiness its reclaim
    /// uses (a v1 cgroup inherits its parent's, not /proc/sys/vm/swappiness; v2 uses the global).
    pub fn configure(
        &self,
        dir: &Path,
        limit_bytes: Option<u64>,
        swappiness: u32,
        zswap: &ZswapLimits,
    ) -> Result<(), String> {
        match self.version {
            Version::V2 => {
                if let Some(limit) = limit_bytes {
                    write(dir.join("memory.max"), &limit.to_string())?;
                }
                if let Some(max) = zswap.max_bytes {
                    write(dir.join("memory.zswap.max"), &max.to_string())?;
                }
                if !zswap.writeback {
                    write(dir.join("memory.zswap.writeback"), "0")?;
                }
            }
            Version::V1 if *zswap != ZswapLimits::default() => {
                return Err(format!(
                    "cgroup v1 has no memory.zswap.max or memory.zswap.writeback, which {} needs",
                    dir.display()
                ));
            }
            Version::V1 => {
                if let Some(limit) = limit_bytes {
                    write(dir.join("memory.limit_in_bytes"), &limit.to_string())?;
                }
                write(dir.join("memory.swappiness"), &swappiness.to_string())?;
            }
        }
        Ok(())
    }

    pub fn procs_file(&self, dir: &Path) -> PathBuf {
        dir.join("cgroup.procs")
    }

    /// memory.stat (v1: the cgroup's own lines, without `total_` and limit lines) plus the event
    /// counts foliosim reports beside them: v2 memory.events, v1 oom_kill and failcnt; and the
    /// largest memory plus swap footprint as `peak_footprint_pages`.
    pub fn stats(&self, dir: &Path) -> Counters {
        let mut out: Counters =
            parse_name_values(&read(dir.join("memory.stat")).unwrap_or_default())
                .into_iter()
                .filter(|(k, _)| !k.starts_with("total_") && !k.starts_with("hierarchical_"))
                .collect();
        let number = |file: &str| read(dir.join(file)).and_then(|t| t.trim().parse::<u64>().ok());
        match self.version {
            Version::V2 => {
                out.extend(parse_name_values(
                    &read(dir.join("memory.events")).unwrap_or_default(),
                ));
                if let Some(peak) = number("memory.peak") {
                    // the two peaks may come at different times: an upper bound
                    let swap_peak = number("memory.swap.peak").unwrap_or(0);
                    out.insert("peak_footprint_pages".into(), (peak + swap_peak) / 4096);
                }
            }
            Version::V1 => {
                let oom =
                    parse_name_values(&read(dir.join("memory.oom_control")).unwrap_or_default());
                if let Some(v) = oom.get("oom_kill") {
                    out.insert("oom_kill".into(), *v);
                }
                if let Some(v) = number("memory.failcnt") {
                    out.insert("failcnt".into(), v);
                }
                if let Some(peak) = number("memory.memsw.max_usage_in_bytes") {
                    out.insert("peak_footprint_pages".into(), peak / 4096);
                }
            }
        }
        out.insert("usage_pages".into(), self.usage_pages(dir));
        out
    }

    /// Memory charged to the cgroup now, in pages.
    pub fn usage_pages(&self, dir: &Path) -> u64 {
        let file = match self.version {
            Version::V2 => "memory.current",
            Version::V1 => "memory.usage_in_bytes",
        };
        read(dir.join(file))
            .and_then(|t| t.trim().parse::<u64>().ok())
            .unwrap_or(0)
            / 4096
    }

    /// The cgroup's OOM kills so far.
    pub fn oom_kills(&self, dir: &Path) -> u64 {
        let file = match self.version {
            Version::V2 => "memory.events",
            Version::V1 => "memory.oom_control",
        };
        parse_name_values(&read(dir.join(file)).unwrap_or_default())
            .get("oom_kill")
            .copied()
            .unwrap_or(0)
    }

    /// Kills whatever still runs in the cgroup, waits for it to empty and removes it.
    pub fn remove(&self, dir: &Path) -> Result<(), String> {
        if !dir.exists() {
            return Ok(());
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let pids = pids(&self.procs_file(dir));
            if pids.is_empty() {
                break;
            }
            if std::time::Instant::now() > deadline {
                return Err(format!(
                    "cgroup {} still has processes {pids:?} after SIGKILL",
                    dir.display()
                ));
            }
            if self.version == Version::V2 && dir.join("cgroup.kill").exists() {
                let _ = write(dir.join("cgroup.kill"), "1");
            } else {
                for pid in pids {
                    super::signal::kill(pid, super::signal::SIGKILL);
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // the last exits may still be uncharging: retry briefly
        let mut last = None;
        for _ in 0..100 {
            match std::fs::remove_dir(dir) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => last = Some(e),
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Err(format!(
            "cannot remove cgroup {}: {}",
            dir.display(),
            last.map_or_else(String::new, |e| e.to_string())
        ))
    }
}

fn pids(procs: &Path) -> Vec<i32> {
    read(procs)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_cgroups_are_counted_from_proc_cgroups() {
        let text = "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpuset\t3\t1\t1\nmemory\t4\t28\t1\npids\t8\t1\t1\n";
        assert_eq!(parse_memory_cgroups(text), Some(28));
        assert_eq!(
            parse_memory_cgroups("#subsys_name\nmemory\t0\tx\t1\n"),
            None
        );
    }

    #[test]
    fn mountinfo_finds_the_memory_hierarchies() {
        let text = "\
30 25 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 30 0:31 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu
37 30 0:33 / /sys/fs/cgroup/memory rw,relatime shared:11 - cgroup cgroup rw,memory
42 30 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
        let (v1, v2) = parse_mountinfo(text);
        assert_eq!(v1, Some(PathBuf::from("/sys/fs/cgroup/memory")));
        assert_eq!(v2, Some(PathBuf::from("/sys/fs/cgroup/unified")));
        let (v1, v2) =
            parse_mountinfo("28 22 0:25 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n");
        assert_eq!((v1, v2), (None, Some(PathBuf::from("/sys/fs/cgroup"))));
    }

    #[test]
    fn proc_cgroup_gives_our_own_groups() {
        let text = "9:name=systemd:/\n4:memory:/process_api/abc\n1:cpu,cpuacct:/\n0::/user.slice\n";
        assert_eq!(
            parse_proc_cgroup(text),
            (Some("/process_api/abc".into()), Some("/user.slice".into()))
        );
        assert_eq!(parse_proc_cgroup("0::/\n"), (None, Some("/".into())));
    }
}
