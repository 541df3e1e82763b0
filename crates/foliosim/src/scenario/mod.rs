//! Scenarios: the TOML a user writes (machine, swap, cgroups, knobs, tasks, variants), kernel
//! profiles, and the sysfs/procfs knob table. `parse` turns a file into a checked `Scenario`
//! (with `units`, `walker`, `machine`, `ops`, `generators` and `resolve`); nothing past this
//! module sees malformed input. `types` and `mempolicy` hold the plain values mm/ works with,
//! kept here so that this layer needs nothing from mm/.

pub mod command;
mod footprint;
pub mod generation;
pub mod generators;
mod hardware;
pub mod knobs;
mod machine;
pub mod mempolicy;
pub mod message;
mod ops;
pub mod parse;
pub mod profile;
mod resolve;
pub mod types;
pub mod units;
pub(crate) mod walker;

use std::collections::BTreeMap;

use mempolicy::Mempolicy;
use types::{ReadRequest, WriteRequest};

pub use knobs::Knobs;
pub use profile::Profile;
pub use walker::MAX_MAPPING_BYTES;

/// The most simulated time one task's program may spend in sleeps and touch work (about 95
/// years): the simulated clock is a u64 of ns, and this leaves it room for everything else.
pub const MAX_PROGRAM_TIME_NS: u64 = 3_000_000_000 * 1_000_000_000;
/// The most samples the time series may be asked for by a program's own sleeps and work: a
/// program may spend at most this many `sample_interval`s (each sample is one row of counters).
pub const MAX_SERIES_SAMPLES: u64 = 1_000_000;
/// The shortest `sample_interval`: the series takes a row per interval of simulated time, so
/// shorter intervals grow it without bound (1 ms gives 1,000 rows per simulated second).
pub const MIN_SAMPLE_INTERVAL_NS: u64 = 1_000_000;

/// A user-facing error: names the file, the key, and what was expected. Exit status 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub file: String,
    pub key: String,
    pub message: String,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.key, self.message)
        }
    }
}

impl std::error::Error for InputError {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    Dram,
    Cxl,
}

#[derive(Clone, Debug)]
pub struct NodeSpec {
    pub memory_bytes: u64,
    /// CPUs that belong to this node (0 for a CPU-less memory node).
    pub cpus: u32,
    pub tier: Tier,
    /// Clean page cache of programs outside the scenario, resident when the run starts and
    /// charged to the root cgroup, on the node's active and inactive file lists (the node's
    /// `Active(file)` and `Inactive(file)` of /sys/devices/system/node/nodeN/meminfo); 0 by
    /// default (mm/resident_cache.rs).
    pub active_file_bytes: u64,
    pub inactive_file_bytes: u64,
}

#[derive(Clone, Debug)]
pub struct MachineSpec {
    /// The hardware cost profile as the scenario (or `--hardware`) names it: a bundled profile's
    /// name or a path to a profile file (see `machine::hw`, docs/hardware.md).
    pub hardware: String,
    /// That profile, read and checked.
    pub hw: std::sync::Arc<crate::machine::hw::HwProfile>,
    pub nodes: Vec<NodeSpec>,
}

impl MachineSpec {
    pub fn nr_cpus(&self) -> u32 {
        self.nodes.iter().map(|n| n.cpus).sum()
    }

    /// The memory of all nodes (saturating: an impossible machine is reported, not wrapped).
    pub fn memory_bytes(&self) -> u64 {
        self.nodes
            .iter()
            .fold(0u64, |sum, n| sum.saturating_add(n.memory_bytes))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwapKind {
    /// brd-like RAM disk: synchronous, non-rotational block device.
    Brd,
    /// Compressed RAM disk: synchronous, non-rotational.
    Zram,
    /// Non-rotational block device with a queue.
    Ssd,
    /// Rotational block device.
    Hdd,
    /// A swap file on a filesystem on an SSD: not a block device, so no large allocations.
    File,
}

#[derive(Clone, Debug)]
pub struct SwapSpec {
    pub name: String,
    pub kind: SwapKind,
    pub size_bytes: u64,
    /// swapon priority; higher is used first. Default -2, -3, ... in file order, as swapon does.
    pub priority: i32,
    pub discard: bool,
}

#[derive(Clone, Debug)]
pub struct CgroupSpec {
    pub name: String,
    /// `memory.max`; None is "max".
    pub memory_max_bytes: Option<u64>,
    /// `memory.zswap.max` (v5.19+); None is "max" (the default).
    pub zswap_max_bytes: Option<u64>,
    /// `memory.zswap.writeback` (v6.8+; default 1): 0 keeps the cgroup's pages out of the swap
    /// device: zswap never writes them back, and what zswap refuses stays in memory.
    pub zswap_writeback: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advice {
    Hugepage,
    NoHugepage,
    Pageout,
    Cold,
    DontNeed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    Sequential,
    Random,
    /// Zipf over the pages of the range with the given exponent (x1000).
    Zipf {
        theta_milli: u32,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// One operation of a task's program. Regions are named by the program; offsets and lengths are
/// bytes within the region (`len_bytes` None = to the end).
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Mmap {
        region: String,
        size_bytes: u64,
    },
    /// mmap of `size_bytes` of file `file` from byte `offset_bytes` (page-aligned): MAP_SHARED
    /// when `shared`, else MAP_PRIVATE; PROT_READ plus PROT_WRITE / PROT_EXEC.
    MmapFile {
        region: String,
        file: u32,
        offset_bytes: u64,
        size_bytes: u64,
        shared: bool,
        write: bool,
        exec: bool,
    },
    /// mmap(MAP_SHARED | MAP_ANONYMOUS): shared anonymous memory, backed by an shmem object of
    /// the mapping's size that forked children share.
    MmapShared {
        region: String,
        size_bytes: u64,
    },
    Munmap {
        region: String,
    },
    Madvise {
        region: String,
        advice: Advice,
        offset_bytes: u64,
        len_bytes: Option<u64>,
    },
    Touch {
        region: String,
        access: Access,
        pattern: Pattern,
        offset_bytes: u64,
        len_bytes: Option<u64>,
        /// Number of page touches; None = each page of the range once (sequential) or as many
        /// touches as the range has pages (random, zipf).
        count: Option<u64>,
        /// Content class written (content::ZERO for zeros); ignored for reads.
        data: u8,
        /// CPU time per touch beyond the memory access itself (the program's own work).
        work_ns: u64,
    },
    /// The child runs `child` in a copy of this address space and then exits.
    Fork {
        name: String,
        child: Vec<Op>,
    },
    Sleep {
        ns: u64,
    },
    /// Waits until every task that names this barrier has reached it.
    Barrier {
        name: String,
    },
    Exit,
    /// Start of one iteration of a generator's loop: counters and time are noted.
    IterationStart,
    /// End of that iteration: its figures go into the result's `iterations`.
    IterationEnd {
        report: IterationReport,
    },
    /// XSBench's lookup loop: this thread's share of the lookups (see workload::xsbench).
    XsbenchLookups {
        lookups: u64,
    },
    /// Linear read() calls of `buffer_bytes` each over bytes [offset, offset + len) of a file
    /// of the `file_read` generator (see mm/filemap.rs). The task's memory policy places the
    /// page cache it allocates.
    FileRead(ReadRequest),
    /// set_mempolicy: the task's memory policy from now on (None: MPOL_DEFAULT).
    SetMempolicy {
        policy: Option<Mempolicy>,
    },
    /// mbind of a range of a region (None: MPOL_DEFAULT); with `mf_move` (MPOL_MF_MOVE) the
    /// folios already there move to the policy's nodes.
    Mbind {
        region: String,
        policy: Option<Mempolicy>,
        offset_bytes: u64,
        len_bytes: Option<u64>,
        mf_move: bool,
    },
    /// Linear write() calls of `buffer_bytes` each over bytes [offset, offset + len) of a
    /// `[[file]]`, writing pages of content class `data` (see mm/filemap.rs file_write_op).
    FileWrite(WriteRequest),
    /// fsync(): writes back the file's dirty folios and waits for its writeback I/O.
    Fsync {
        file: u32,
    },
}

impl Op {
    /// A write of every page of `len_bytes` (None: to the region's end) from `offset_bytes`, in
    /// order, once: how the generators fill their memory.
    pub fn sequential_write(
        region: &str,
        offset_bytes: u64,
        len_bytes: Option<u64>,
        data: u8,
        work_ns: u64,
    ) -> Op {
        Op::Touch {
            region: region.into(),
            access: Access::Write,
            pattern: Pattern::Sequential,
            offset_bytes,
            len_bytes,
            count: None,
            data,
            work_ns,
        }
    }
}

/// What one iteration reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IterationReport {
    /// Its simulated time only (`time_ns`).
    Time,
    /// thp_swap_allocator_test's line for one mTHP size: `swpout_inc`, `fallback_inc`,
    /// `fallback_pct`.
    MthpSwpout { order: u32 },
}

/// What a task runs: an explicit list of operations, or a benchmark generator.
#[derive(Clone, Debug, PartialEq)]
pub enum Program {
    Ops(Vec<Op>),
    /// A built-in generator (workload/<name>.rs, listed in workload/mod.rs) with the
    /// parameters it parsed.
    Generator(Box<dyn generators::GeneratorParams>),
    /// Nothing to simulate: the task names only a `command`, which kernel-run plays live.
    LiveOnly,
}

/// A file on the machine's disk (`[[file]]`), with an empty page cache at the start.
#[derive(Clone, Debug)]
pub struct FileSpec {
    pub name: String,
    pub size_bytes: u64,
    /// The backing device's read_ahead_kb.
    pub read_ahead_kb: u64,
    /// The filesystem supports large page-cache folios.
    pub large_folios: bool,
    /// A file on a tmpfs mount (`fs = "tmpfs"`) with this `huge=` option; None: on the disk.
    /// It starts as a hole of `size` bytes (ftruncate), its pages allocated as they are written
    /// or faulted.
    pub tmpfs: Option<knobs::ShmemHuge>,
}

#[derive(Clone, Debug)]
pub struct TaskSpec {
    pub name: String,
    pub cgroup: Option<String>,
    /// Node the task's CPUs belong to.
    pub node: u32,
    /// The memory policy the task starts with (`mempolicy`; None: MPOL_DEFAULT).
    pub mempolicy: Option<Mempolicy>,
    pub program: Program,
    /// The real program played live instead of `program` (see command.rs).
    pub command: Option<command::LiveCommand>,
}

#[derive(Clone, Debug)]
pub struct Variant {
    pub name: String,
    /// Knob settings by kernel path, applied after the scenario's own knobs.
    pub knobs: Vec<(String, String)>,
    /// Generator parameters that override those of every generator task (e.g. `aligned = true`).
    pub args: toml::Table,
    /// The swap devices this variant swaps on (by name); None = all of the scenario's.
    pub swapon: Option<Vec<String>>,
}

#[derive(Clone, Debug)]
pub struct Scenario {
    /// Path as given by the user, for messages.
    pub file: String,
    pub name: String,
    pub description: String,
    pub machine: MachineSpec,
    pub swap: Vec<SwapSpec>,
    /// Files of `[[file]]`, created in this order (a file's id is its index) before any task's.
    pub files: Vec<FileSpec>,
    pub cgroups: Vec<CgroupSpec>,
    /// Knob settings by kernel path, in file order.
    pub knobs: Vec<(String, String)>,
    /// Profiles run when the command line names none.
    pub profiles: Vec<String>,
    pub variants: Vec<Variant>,
    pub tasks: Vec<TaskSpec>,
    /// Interval of the time series, in simulated ns.
    pub sample_interval_ns: u64,
    /// How long a task runs before the scheduler looks again (`sched_quantum`).
    pub sched_quantum_ns: u64,
    /// The seed's published figures, carried to `reproduce` output unchanged.
    pub published: serde_json::Value,
}

/// Everything one run needs, resolved: scenario, profile, knobs with overrides applied.
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub scenario: Scenario,
    pub profile: Profile,
    pub variant: Option<String>,
    pub knobs: Knobs,
    pub seed: u64,
    pub check: bool,
}

/// Ordered map used in results so that output is deterministic.
pub type Counters = BTreeMap<String, u64>;
