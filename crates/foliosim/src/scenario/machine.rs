//! The machine a scenario runs on: `[machine]` and its NUMA nodes, `[[swap]]` devices,
//! `[[cgroup]]`s with their `memory.max`, and `[[file]]`s on the machine's disk.

use std::collections::BTreeSet;
use std::path::Path;

use toml::Value;

use super::generators::DEFAULT_READ_AHEAD_KB;
use super::hardware::{load_hardware, HardwareError};
use super::knobs::{self, ShmemHuge};
use super::mempolicy::MAX_NUMNODES;
use super::parse::DEFAULT_HARDWARE;
use super::types::PAGE_SIZE;
use super::units::format_size;
use super::walker::{describe, join, unique, Node, Res};
use super::{CgroupSpec, FileSpec, MachineSpec, NodeSpec, SwapKind, SwapSpec, Tier};

/// The largest `[[file]]`: its page cache is indexed by 32-bit page numbers, and page index
/// arithmetic (index + folio size, readahead windows) must not reach 2^32 (a 16 TiB file wrapped
/// its page count to 0).
const MAX_FILE_BYTES: u64 = 8 << 40;

/// Names of the bundled hardware cost profiles (`[machine] hardware` also takes a file's path).
pub fn hardware_profile_names() -> Vec<String> {
    crate::machine::hw::profile_names()
        .iter()
        .map(|s| s.to_string())
        .collect()
}

pub(super) fn parse_machine(top: &Node) -> Res<MachineSpec> {
    let Some(table) = top.table_opt("machine")? else {
        return Err(top.missing("machine", "a [machine] table with [[machine.node]] entries"));
    };
    let machine = Node::new(top.cx, table, top.key("machine"), &["hardware", "node"])?;
    let hardware = machine
        .str_opt("hardware")?
        .unwrap_or(DEFAULT_HARDWARE)
        .to_string();
    // a profile file's path is relative to the scenario file's directory
    let base_dir = Path::new(top.cx.file).parent().unwrap_or(Path::new(""));
    let hw = load_hardware(&hardware, base_dir).map_err(|e| match e {
        HardwareError::Unknown(message) => machine.err("hardware", message),
        HardwareError::File(e) => e,
    })?;
    let mut nodes = Vec::new();
    for (path, t) in machine.tables("node")? {
        let node = Node::new(
            top.cx,
            t,
            path,
            &["memory", "cpus", "tier", ACTIVE_FILE, INACTIVE_FILE],
        )?;
        let memory_bytes = node.positive_size("memory")?;
        if memory_bytes % PAGE_SIZE != 0 {
            return Err(node.err(
                "memory",
                format!("expected a multiple of 4 KiB, found {memory_bytes} bytes"),
            ));
        }
        let cpus = node.int_opt("cpus", 0, 4096)?.unwrap_or(0) as u32;
        let tier = node
            .choice_opt("tier", &[("dram", Tier::Dram), ("cxl", Tier::Cxl)])?
            .unwrap_or(Tier::Dram);
        let (active_file_bytes, inactive_file_bytes) = parse_resident_cache(&node, memory_bytes)?;
        nodes.push(NodeSpec {
            memory_bytes,
            cpus,
            tier,
            active_file_bytes,
            inactive_file_bytes,
        });
    }
    if nodes.is_empty() {
        return Err(machine.err(
            "node",
            "expected at least one [[machine.node]] with memory and cpus",
        ));
    }
    let max_nodes = MAX_NUMNODES as usize;
    if nodes.len() > max_nodes {
        return Err(machine.err(
            "node",
            format!(
                "expected at most {max_nodes} [[machine.node]] entries, found {}",
                nodes.len()
            ),
        ));
    }
    let spec = MachineSpec {
        hardware,
        hw,
        nodes,
    };
    if spec.nr_cpus() == 0 {
        return Err(machine.err("node", "expected at least one CPU on some node, found none"));
    }
    Ok(spec)
}

/// A node's resident page cache at the start, named as the node's meminfo names it.
pub const ACTIVE_FILE: &str = "Active(file)";
pub const INACTIVE_FILE: &str = "Inactive(file)";

/// `"Active(file)"` and `"Inactive(file)"` of a `[[machine.node]]`: whole pages, together no
/// more than the node's memory.
fn parse_resident_cache(node: &Node, memory_bytes: u64) -> Res<(u64, u64)> {
    let mut sizes = [0u64; 2];
    for (size, key) in sizes.iter_mut().zip([ACTIVE_FILE, INACTIVE_FILE]) {
        let bytes = node.size_opt(key)?.unwrap_or(0);
        if bytes % PAGE_SIZE != 0 {
            return Err(node.err(
                key,
                format!("expected a multiple of 4 KiB, found {bytes} bytes"),
            ));
        }
        *size = bytes;
    }
    let [active, inactive] = sizes;
    if active.saturating_add(inactive) > memory_bytes {
        return Err(node.err(
            INACTIVE_FILE,
            format!(
                "expected Active(file) and Inactive(file) together no larger than the node's \
                 memory ({}), found {}",
                format_size(memory_bytes),
                format_size(active.saturating_add(inactive))
            ),
        ));
    }
    Ok((active, inactive))
}

const MAX_SWAP_BYTES: u64 = (1 << 27) * PAGE_SIZE;

pub(super) fn parse_swap(top: &Node) -> Res<Vec<SwapSpec>> {
    let kinds = [
        ("brd", SwapKind::Brd),
        ("zram", SwapKind::Zram),
        ("ssd", SwapKind::Ssd),
        ("hdd", SwapKind::Hdd),
        ("file", SwapKind::File),
    ];
    let mut seen = BTreeSet::new();
    let mut devices = Vec::new();
    // swapon gives devices without a priority -2, -3, ... in the order they are enabled
    let mut least_priority = -1;
    for (path, t) in top.tables("swap")? {
        let dev = Node::new(
            top.cx,
            t,
            path,
            &["name", "kind", "size", "priority", "discard"],
        )?;
        let name = dev.name("name")?;
        unique(top.cx, &mut seen, &name, &dev.key("name"), "swap device")?;
        let kind = dev.choice("kind", &kinds)?;
        let size_bytes = dev.positive_size("size")?;
        if size_bytes % PAGE_SIZE != 0 {
            return Err(dev.err(
                "size",
                format!("expected a multiple of 4 KiB, found {size_bytes} bytes"),
            ));
        }
        // Swap entries carry a 27-bit offset.
        if size_bytes > MAX_SWAP_BYTES {
            return Err(dev.err(
                "size",
                format!("expected at most 512G, found {}", format_size(size_bytes)),
            ));
        }
        if size_bytes < 2 * PAGE_SIZE {
            return Err(dev.err("size", "expected at least 8K: a header page and one slot"));
        }
        let priority = match dev.int_opt("priority", -32768, 32767)? {
            Some(p) => p as i32,
            None => {
                least_priority -= 1;
                least_priority
            }
        };
        let discard = dev.bool_opt("discard")?.unwrap_or(false);
        devices.push(SwapSpec {
            name,
            kind,
            size_bytes,
            priority,
            discard,
        });
    }
    Ok(devices)
}

pub(super) fn parse_cgroups(top: &Node, total_memory_bytes: u64) -> Res<Vec<CgroupSpec>> {
    let mut seen = BTreeSet::new();
    let mut cgroups = Vec::new();
    for (path, t) in top.tables("cgroup")? {
        // `memory.max = ...` unquoted is a nested table: say how to write it
        if let Some(Value::Table(_)) = t.get("memory") {
            return Err(top.cx.err(
                &join(&path, "memory"),
                "unknown key; expected \"memory.max\" with quotes, as in \"memory.max\" = \"1G\"",
            ));
        }
        let cg = Node::new(
            top.cx,
            t,
            path,
            &[
                "name",
                "memory.max",
                "memory.zswap.max",
                "memory.zswap.writeback",
            ],
        )?;
        let name = cg.name("name")?;
        unique(top.cx, &mut seen, &name, &cg.key("name"), "cgroup")?;
        let memory_max_bytes = match cg.table.get("memory.max") {
            None => None,
            Some(Value::String(s)) => {
                knobs::parse_memory_max(s).map_err(|m| cg.err("memory.max", m))?
            }
            Some(Value::Integer(i)) if *i > 0 => Some(*i as u64),
            Some(v) => {
                return Err(cg.err(
                    "memory.max",
                    format!(
                        "expected a size greater than 0 or \"max\", found {}",
                        describe(v)
                    ),
                ))
            }
        };
        if let Some(limit) = memory_max_bytes {
            check_limit_fits(limit, total_memory_bytes).map_err(|m| cg.err("memory.max", m))?;
        }
        let zswap_max_bytes = match cg.table.get("memory.zswap.max") {
            None => None,
            Some(Value::String(s)) if s.trim() == "max" => None,
            Some(Value::String(s)) => Some(super::units::parse_size(s).map_err(|_| {
                cg.err(
                    "memory.zswap.max",
                    format!("expected a size such as 64M, 0 or \"max\", found {s:?}"),
                )
            })?),
            Some(Value::Integer(i)) if *i >= 0 => Some(*i as u64),
            Some(v) => {
                return Err(cg.err(
                    "memory.zswap.max",
                    format!(
                        "expected a size such as 64M, 0 or \"max\", found {}",
                        describe(v)
                    ),
                ))
            }
        };
        let zswap_writeback = match cg.table.get("memory.zswap.writeback") {
            None => true,
            Some(Value::Integer(1)) => true,
            Some(Value::Integer(0)) => false,
            Some(Value::String(s)) if s.trim() == "1" => true,
            Some(Value::String(s)) if s.trim() == "0" => false,
            Some(v) => {
                return Err(cg.err(
                    "memory.zswap.writeback",
                    format!("expected 0 or 1, found {}", describe(v)),
                ))
            }
        };
        cgroups.push(CgroupSpec {
            name,
            memory_max_bytes,
            zswap_max_bytes,
            zswap_writeback,
        });
    }
    Ok(cgroups)
}

pub(super) fn check_limit_fits(limit_bytes: u64, total_memory_bytes: u64) -> Result<(), String> {
    if limit_bytes > total_memory_bytes {
        return Err(format!(
            "expected a limit no larger than the machine's memory ({}), found {}",
            format_size(total_memory_bytes),
            format_size(limit_bytes)
        ));
    }
    Ok(())
}

pub(super) fn cgroup_names(cgroups: &[CgroupSpec]) -> String {
    if cgroups.is_empty() {
        return "none defined".into();
    }
    cgroups
        .iter()
        .map(|c| c.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `[[file]]`: files on the machine's disk, for the file ops of op programs. A file's id is its
/// position here.
pub(super) fn parse_files(top: &Node) -> Res<Vec<FileSpec>> {
    let mut seen = BTreeSet::new();
    let mut files = Vec::new();
    for (path, t) in top.tables("file")? {
        let f = Node::new(
            top.cx,
            t,
            path,
            &[
                "name",
                "size",
                "read_ahead_kb",
                "large_folios",
                "fs",
                "huge",
            ],
        )?;
        let name = f.name("name")?;
        unique(top.cx, &mut seen, &name, &f.key("name"), "file")?;
        let size_bytes = f.file_size()?;
        let tmpfs = f
            .choice_opt("fs", &[("disk", false), ("tmpfs", true)])?
            .unwrap_or(false);
        let tmpfs = if tmpfs {
            for k in ["read_ahead_kb", "large_folios"] {
                if f.table.contains_key(k) {
                    return Err(f.err(
                        k,
                        "expected this key only for a file on the disk (tmpfs has no device)",
                    ));
                }
            }
            Some(
                f.choice_opt(
                    "huge",
                    &[
                        ("never", ShmemHuge::Never),
                        ("always", ShmemHuge::Always),
                        ("within_size", ShmemHuge::WithinSize),
                        ("advise", ShmemHuge::Advise),
                    ],
                )?
                .unwrap_or(ShmemHuge::Never),
            )
        } else {
            if f.table.contains_key("huge") {
                return Err(f.err("huge", "expected this key only with fs = \"tmpfs\""));
            }
            None
        };
        let (read_ahead_kb, large_folios) = f.file_device()?;
        files.push(FileSpec {
            name,
            size_bytes,
            read_ahead_kb,
            large_folios,
            tmpfs,
        });
    }
    Ok(files)
}

impl Node<'_> {
    /// A file's `read_ahead_kb` (the device's readahead maximum) and `large_folios` (the
    /// filesystem's large-folio support), with their defaults.
    pub(crate) fn file_device(&self) -> Res<(u64, bool)> {
        let read_ahead_kb = self
            .int_opt("read_ahead_kb", 0, 1 << 20)?
            .unwrap_or(DEFAULT_READ_AHEAD_KB as i64) as u64;
        Ok((
            read_ahead_kb,
            self.bool_opt("large_folios")?.unwrap_or(true),
        ))
    }

    /// The `size` of a file: greater than 0 and at most MAX_FILE_BYTES.
    pub(crate) fn file_size(&self) -> Res<u64> {
        let size_bytes = self.positive_size("size")?;
        if size_bytes > MAX_FILE_BYTES {
            return Err(self.err("size", "expected a file of at most 8 TiB"));
        }
        Ok(size_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse::test_support::*;

    #[test]
    fn machine_errors() {
        let no_cpus = "name = \"t\"\n[machine]\n[[machine.node]]\nmemory = \"1G\"\n[[task]]\nname = \"u\"\ngenerator = \"usemem\"\nsize = \"1M\"";
        let e = parse(no_cpus).unwrap_err();
        assert_eq!(e.key, "machine.node");
        let no_nodes = "name = \"t\"\n[machine]\n[[task]]\nname = \"u\"\ngenerator = \"usemem\"\nsize = \"1M\"";
        let e = parse(no_nodes).unwrap_err();
        assert_eq!(e.key, "machine.node");
        let bad_hw = MINIMAL.replace("[machine]", "[machine]\nhardware = \"vax\"");
        let e = parse(&bad_hw).unwrap_err();
        assert_eq!(e.key, "machine.hardware");
        assert!(e.message.contains("x86-server"), "{e}");
        let zero_mem = MINIMAL.replace("\"8G\"", "0");
        assert_eq!(parse(&zero_mem).unwrap_err().key, "machine.node[0].memory");
    }

    #[test]
    fn a_nodes_resident_page_cache_is_whole_pages_within_its_memory() {
        let with = |lines: &str| MINIMAL.replace("cpus = 4", &format!("cpus = 4\n{lines}"));
        let ok = parse(&with(
            "\"Active(file)\" = \"1G\"\n\"Inactive(file)\" = \"3945468K\"",
        ));
        let node = &ok.unwrap().machine.nodes[0];
        assert_eq!(node.active_file_bytes, 1 << 30);
        assert_eq!(node.inactive_file_bytes, 3945468 << 10);
        let e = parse(&with(
            "\"Active(file)\" = \"6G\"\n\"Inactive(file)\" = \"3G\"",
        ))
        .unwrap_err();
        assert_eq!(e.key, "machine.node[0].Inactive(file)");
        assert!(
            e.message
                .contains("no larger than the node's memory (8 GiB), found 9 GiB"),
            "{e}"
        );
        let e = parse(&with("\"Active(file)\" = \"6000\"")).unwrap_err();
        assert_eq!(e.key, "machine.node[0].Active(file)");
        assert!(e.message.contains("multiple of 4 KiB"), "{e}");
        let e = parse(&with("\"Inactive(file)\" = true")).unwrap_err();
        assert!(e.message.contains("expected a size"), "{e}");
    }
}
