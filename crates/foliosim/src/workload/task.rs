//! A task's program and its progress through it: the workload's side of a task. The kernel's
//! side (clock, CPU, mm, memory policy, ...) is `mm::task::Task`, under the same task id.

use crate::scenario::Op;
use crate::sim::rng::{Rng, Zipf};
use std::rc::Rc;

/// What a task reports at the end, besides the common figures.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Report {
    #[default]
    None,
    /// vm-scalability usemem: throughput of the write loop (op 2) since the start barrier (op 0).
    Usemem { size_bytes: u64 },
    /// A replayed trace's thread: its counters (workload/trace_replay.rs).
    Trace(Box<super::trace_replay::TraceCounters>),
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

/// The program of one task (kernel threads have an empty one) and where it is.
#[derive(Default)]
pub struct TaskProgram {
    pub program: Rc<Vec<Op>>,
    pub pc: usize,
    pub touch: TouchState,
    pub regions: Vec<Region>,
    /// Clock at the end of each operation of the program.
    pub op_end_ns: Vec<u64>,
    pub report: Report,
    /// Clock and counters at the current iteration's start.
    pub iteration_start: Option<(u64, crate::mm::vmstat::VmStat)>,
    /// XSBench lookups done by this thread, and the loop's state while it runs.
    pub lookups: u64,
    pub xs: Option<super::xsbench::LookupState>,
    /// The thread of a trace this task replays (its program is then empty).
    pub replay: Option<super::trace_replay::ReplayThread>,
    /// The tasks its `fork` ops made, and when its program ended if it is waiting for them
    /// (wait4) before it exits.
    pub children: Vec<u32>,
    pub waiting_since_ns: Option<u64>,
}

impl TaskProgram {
    pub fn new(program: Rc<Vec<Op>>, report: Report) -> TaskProgram {
        let n = program.len();
        TaskProgram {
            program,
            op_end_ns: vec![0; n],
            report,
            ..Default::default()
        }
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
