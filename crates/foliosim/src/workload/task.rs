//! Tasks: user processes running a program of operations, and kernel threads (kswapd, the
//! writeback flusher).

use crate::scenario::Op;
use crate::sim::rng::{Rng, Zipf};
use std::rc::Rc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    Runnable,
    /// Waiting at a barrier, or a kernel thread asleep until woken.
    Blocked,
    Exited,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskKind {
    User,
    /// kswapd of a node, with the priority of its current balance_pgdat run.
    Kswapd {
        node: u32,
        priority: u32,
    },
    /// The writeback worker of the machine's one disk (wb_workfn, mm/page_writeback.rs).
    Flusher,
}

/// What a task reports at the end, besides the common figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Report {
    None,
    /// vm-scalability usemem: throughput of the write loop (op 2) since the start barrier (op 0).
    Usemem {
        size_bytes: u64,
    },
}

/// A mapped region of the program: name, first vpn, pages.
#[derive(Clone, Debug)]
pub struct Region {
    pub name: String,
    pub start: u32,
    pub nr_pages: u32,
}

/// Random page indices drawn ahead of use, so their PTEs can be prefetched.
pub const TOUCH_AHEAD: usize = 8;

/// Progress through the current Touch operation.
#[derive(Clone, Debug, Default)]
pub struct TouchState {
    pub started: bool,
    pub done: u64,
    pub count: u64,
    pub base: u32,
    pub nr_pages: u32,
    pub zipf: Option<Zipf>,
    /// The operation's own random stream, seeded from the run's generator when it starts.
    pub rng: Option<Rng>,
    pub ahead: [u32; TOUCH_AHEAD],
    /// Pages drawn so far (at most `count`); `drawn - done` of them wait in `ahead`.
    pub drawn: u64,
}

pub struct Task {
    pub id: u32,
    pub name: String,
    pub kind: TaskKind,
    pub state: TaskState,
    pub mm: Option<u32>,
    pub memcg: u16,
    pub node: u32,
    pub clock_ns: u64,
    pub program: Rc<Vec<Op>>,
    pub pc: usize,
    pub touch: TouchState,
    pub regions: Vec<Region>,
    /// Clock at the end of each operation of the program.
    pub op_end_ns: Vec<u64>,
    pub exit_ns: u64,
    pub oom_killed: bool,
    pub report: Report,
    pub touches: u64,
    /// CPU time in the program itself, and in the kernel on its behalf (faults, reclaim, syscalls,
    /// waits for synchronous I/O).
    pub user_ns: u64,
    pub sys_ns: u64,
    /// Time spent in, and pages freed by, reclaim this task did itself.
    pub direct_reclaim_ns: u64,
    pub direct_reclaim_pages: u64,
    /// Clock and counters at the current iteration's start.
    pub iteration_start: Option<(u64, crate::stats::VmStat)>,
    /// Interrupt handling (TLB shootdowns) owed, charged when the task next runs.
    pub pending_irq_ns: u64,
    /// The CPU the task last ran on.
    pub last_cpu: Option<u32>,
    /// NUMA balancing: scan period, CPU-time stamp of the next scan, scan sequence last placed.
    pub numa_scan_period_ms: u64,
    pub node_stamp_ns: u64,
    pub numa_scan_seq: u32,
    /// XSBench lookups done by this thread, and the loop's state while it runs.
    pub lookups: u64,
    pub xs: Option<super::xsbench::LookupState>,
    /// Progress through the current FileRead operation.
    pub file_read: crate::mm::filemap::ReadState,
    /// Readahead state of the task's open file of each file id (`struct file_ra_state`).
    pub ra: Vec<crate::mm::readahead::FileRaState>,
    /// `+pagecache_promotion`: folios isolated by promotion_candidate, migrated by the task work
    /// on return to user mode (`current->promo_list`), and their pages (`promo_count`).
    pub promo_list: Vec<crate::mm::folio::FolioId>,
    pub promo_count: u64,
    /// The task's memory policy (`current->mempolicy`; None: MPOL_DEFAULT), and the node its
    /// interleaving used last (`il_prev`).
    pub mempolicy: Option<crate::mm::mempolicy::Mempolicy>,
    pub il_prev: u32,
    /// Progress through the current FileWrite operation.
    pub file_write: crate::mm::filemap::WriteState,
    /// balance_dirty_pages_ratelimited's per-task state: pages dirtied since the last check,
    /// the count that triggers the next one, and when the task last paused.
    pub nr_dirtied: u64,
    pub nr_dirtied_pause: u64,
    pub dirty_paused_when_ns: u64,
    /// A sleep the current operation asked for (a dirty-throttling pause): the task gives up
    /// its CPU for this long before the operation goes on.
    pub sleep_ns: u64,
}

impl Task {
    pub fn new(
        id: u32,
        name: String,
        kind: TaskKind,
        memcg: u16,
        node: u32,
        program: Rc<Vec<Op>>,
    ) -> Task {
        let n = program.len();
        Task {
            id,
            name,
            kind,
            state: TaskState::Runnable,
            mm: None,
            memcg,
            node,
            clock_ns: 0,
            program,
            pc: 0,
            touch: TouchState::default(),
            regions: Vec::new(),
            op_end_ns: vec![0; n],
            exit_ns: 0,
            oom_killed: false,
            report: Report::None,
            touches: 0,
            user_ns: 0,
            sys_ns: 0,
            direct_reclaim_ns: 0,
            direct_reclaim_pages: 0,
            iteration_start: None,
            pending_irq_ns: 0,
            last_cpu: None,
            numa_scan_period_ms: 0,
            node_stamp_ns: 0,
            numa_scan_seq: 0,
            lookups: 0,
            xs: None,
            file_read: Default::default(),
            ra: Vec::new(),
            promo_list: Vec::new(),
            promo_count: 0,
            mempolicy: None,
            il_prev: crate::mm::mempolicy::MAX_NUMNODES - 1,
            file_write: Default::default(),
            nr_dirtied: 0,
            nr_dirtied_pause: crate::mm::page_writeback::DIRTY_POLL_THRESH,
            dirty_paused_when_ns: 0,
            sleep_ns: 0,
        }
    }

    /// Alive (not exited or killed): may be running, runnable or waiting.
    pub fn is_running(&self) -> bool {
        self.state != TaskState::Exited
    }

    pub fn is_user(&self) -> bool {
        self.kind == TaskKind::User
    }

    pub fn region(&self, name: &str) -> Option<&Region> {
        self.regions.iter().find(|r| r.name == name)
    }

    /// Names the pages an mmap returned: a region mapped again under the same name replaces
    /// the old entry.
    pub fn set_region(&mut self, name: &str, start: u32, nr_pages: u32) {
        self.regions.retain(|r| r.name != name);
        self.regions.push(Region {
            name: name.to_string(),
            start,
            nr_pages,
        });
    }
}
