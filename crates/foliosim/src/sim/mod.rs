//! Simulation primitives: seeded randomness, FIFO servers for shared resources, the run queue
//! that always advances the task with the smallest clock, and the scheduler loop over it.

pub mod rng;

/// Asks the host kernel to back a large array of the simulator with transparent huge pages
/// (MADV_HUGEPAGE), so that random accesses to simulated page tables and page structs do not
/// also miss the host's TLB. Only a hint: nothing changes if the host ignores it.
pub fn hugepage_hint<T>(data: &[T]) {
    const HINT_MIN_BYTES: usize = 4 << 20;
    let bytes = std::mem::size_of_val(data);
    if bytes < HINT_MIN_BYTES {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const MADV_HUGEPAGE: i32 = 14;
        const PAGE: usize = 4096;
        extern "C" {
            fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
        }
        let start = (data.as_ptr() as usize).next_multiple_of(PAGE);
        let end = (data.as_ptr() as usize + bytes) & !(PAGE - 1);
        if end > start {
            // SAFETY: madvise only changes how the kernel backs these pages, which belong to a
            // live allocation of ours; it does not read or write them.
            unsafe {
                madvise(start as *mut std::ffi::c_void, end - start, MADV_HUGEPAGE);
            }
        }
    }
}

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A shared resource served in arrival order (a lock, a device queue): a request arriving at
/// `now_ns` starts when the server is free and holds it for `service_ns`.
#[derive(Clone, Copy, Debug, Default)]
pub struct FifoServer {
    pub busy_until_ns: u64,
    pub busy_total_ns: u64,
}

impl FifoServer {
    /// Returns the completion time.
    #[inline]
    pub fn serve(&mut self, now_ns: u64, service_ns: u64) -> u64 {
        let start = now_ns.max(self.busy_until_ns);
        self.busy_until_ns = start + service_ns;
        self.busy_total_ns += service_ns;
        self.busy_until_ns
    }
}

/// Runnable tasks ordered by (clock, id): ties go to the lower id, so runs are deterministic.
#[derive(Default)]
pub struct RunQueue {
    heap: BinaryHeap<Reverse<(u64, u32)>>,
}

impl RunQueue {
    pub fn push(&mut self, clock_ns: u64, task: u32) {
        self.heap.push(Reverse((clock_ns, task)));
    }
    pub fn pop(&mut self) -> Option<(u64, u32)> {
        self.heap.pop().map(|Reverse(x)| x)
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// What the scheduler loop drives. The engine (crate::run) implements it for the kernel and its
/// workload: which CPU a task gets and what it runs there are theirs; the loop only keeps
/// advancing the task with the smallest clock, by one quantum at a time, until the run is over.
pub trait Scheduled {
    /// Why a run stops early.
    type Stop;
    /// The queued (clock, task) with the smallest clock, ties to the lower id.
    fn pop(&mut self) -> Option<(u64, u32)>;
    /// The entry is current: the task is runnable at that clock (a task that blocked, or was
    /// queued again since, leaves stale entries behind).
    fn is_current(&self, task: u32, clock_ns: u64) -> bool;
    /// Nothing is left to wait for (every user task has ended).
    fn finished(&self) -> bool;
    /// Runs `task` from `clock_ns` for at most one quantum, queueing it again if it stays
    /// runnable.
    fn run_quantum(&mut self, task: u32, clock_ns: u64) -> Result<(), Self::Stop>;
    /// After each quantum, with the number run so far (periodic checks, progress).
    fn after_quantum(&mut self, quanta: u64) -> Result<(), Self::Stop>;
}

/// The scheduler loop: always advances the runnable task with the smallest clock.
pub fn schedule<S: Scheduled>(s: &mut S) -> Result<(), S::Stop> {
    let mut quanta = 0u64;
    while let Some((clock_ns, task)) = s.pop() {
        if !s.is_current(task, clock_ns) {
            continue;
        }
        if s.finished() {
            break;
        }
        s.run_quantum(task, clock_ns)?;
        quanta += 1;
        s.after_quantum(quanta)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_server_queues_overlapping_requests() {
        let mut s = FifoServer::default();
        assert_eq!(s.serve(100, 10), 110);
        // arrives while busy: waits for the first to finish
        assert_eq!(s.serve(105, 10), 120);
        // arrives after idle time: starts at once
        assert_eq!(s.serve(200, 5), 205);
        assert_eq!(s.busy_total_ns, 25);
    }

    #[test]
    fn run_queue_orders_by_clock_then_id() {
        let mut q = RunQueue::default();
        q.push(50, 3);
        q.push(10, 7);
        q.push(50, 1);
        assert_eq!(q.pop(), Some((10, 7)));
        assert_eq!(q.pop(), Some((50, 1)));
        assert_eq!(q.pop(), Some((50, 3)));
        assert_eq!(q.pop(), None);
    }
}
