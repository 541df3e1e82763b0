//! Running the workload: each operation of a user task's program, when the scheduler gives it a
//! CPU (the scheduler loop is sim::schedule, driven by the engine in crate::run).
//!
//! A task holds its CPU while it waits for a device (reads, queued writes); sleeps and barriers
//! release it.

use super::task::{Region, TaskProgram, TOUCH_AHEAD};
use super::Workload;
use crate::mm::folio::content;
use crate::mm::memory::Killed;
use crate::mm::task::TaskState;
use crate::mm::vma::{VM_EXEC, VM_HUGEPAGE, VM_NOHUGEPAGE, VM_SHARED, VM_WRITE};
use crate::mm::Kernel;
use crate::scenario::{Access, Advice, Op, Pattern};
use crate::sim::rng::{Rng, Zipf};
use std::rc::Rc;

impl Workload {
    /// Page touches the user programs will make, for the progress bar.
    pub fn total_touches_planned(&self, k: &Kernel) -> u64 {
        let mut total = 0;
        for (_, t) in k
            .tasks
            .iter()
            .zip(&self.tasks)
            .filter(|(kt, _)| kt.is_user())
        {
            let mut regions: Vec<(&str, u64)> = Vec::new();
            for op in t.program.iter() {
                match op {
                    Op::Mmap { region, size_bytes }
                    | Op::MmapShared { region, size_bytes }
                    | Op::MmapFile {
                        region, size_bytes, ..
                    } => regions.push((region, size_bytes / crate::mm::PAGE_SIZE)),
                    Op::Touch {
                        region,
                        count,
                        len_bytes,
                        ..
                    } => {
                        let region_pages = regions
                            .iter()
                            .rev()
                            .find(|(r, _)| r == region)
                            .map_or(0, |r| r.1);
                        let range = len_bytes.map_or(region_pages, |l| l / crate::mm::PAGE_SIZE);
                        total += count.unwrap_or(range);
                    }
                    Op::XsbenchLookups { lookups } => total += lookups,
                    Op::FileRead(r) => total += r.len_bytes / crate::mm::PAGE_SIZE,
                    Op::FileWrite(w) => total += w.len_bytes / crate::mm::PAGE_SIZE,
                    _ => {}
                }
            }
        }
        total.max(1)
    }

    /// do_exit of user task `t`. Under `--check` the invariant checker runs first, so that a
    /// corruption shows as a violation rather than as a panic in the exit's teardown; if it finds
    /// one, the task does not exit and the run stops with it.
    pub(super) fn exit(&mut self, k: &mut Kernel, t: u32) {
        if k.spec.check {
            self.violations = crate::check::check(k);
            if !self.violations.is_empty() {
                return;
            }
        }
        k.do_exit(t);
    }

    /// `exit` after the task's last operation: its teardown (exit_mmap) comes after its
    /// `exit_ns` and is in neither its user nor its sys time, so it stays out of its time
    /// breakdown too (mm/cputime.rs).
    pub(super) fn exit_after_last_op(&mut self, k: &mut Kernel, t: u32) {
        let breakdown = k.tasks[t as usize].time.clone();
        self.exit(k, t);
        k.tasks[t as usize].time = breakdown;
    }

    /// A program that forked waits for its children before it exits (wait4), as kernel-bench's
    /// player does: its mm, which still maps the pages they share with it, lives until then.
    /// Returns whether the task now waits (blocked until `reap_exits` sees its last child go).
    fn wait_for_children(&mut self, k: &mut Kernel, t: u32) -> bool {
        let prog = &mut self.tasks[t as usize];
        let alive = prog
            .children
            .iter()
            .any(|&c| k.tasks[c as usize].state != TaskState::Exited);
        if alive {
            prog.waiting_since_ns.get_or_insert(k.clock_ns);
            k.tasks[t as usize].state = TaskState::Blocked;
            k.tasks[t as usize].clock_ns = k.clock_ns;
        }
        alive
    }

    /// Runs user task `t` until `quantum_end_ns`, a block, or its end. Returns when its CPU is
    /// free.
    pub fn step(&mut self, k: &mut Kernel, t: u32, quantum_end_ns: u64) -> u64 {
        if self.tasks[t as usize].replay.is_some() {
            return self.replay_step(k, t, quantum_end_ns);
        }
        let program = self.tasks[t as usize].program.clone();
        while k.clock_ns < quantum_end_ns {
            let pc = self.tasks[t as usize].pc;
            let Some(op) = program.get(pc) else {
                if self.wait_for_children(k, t) {
                    return k.clock_ns;
                }
                self.exit_after_last_op(k, t);
                if let Some(ended_ns) = self.tasks[t as usize].waiting_since_ns {
                    // the task's own figures end where its program did, as the live player
                    // reports them before it waits
                    k.tasks[t as usize].exit_ns = ended_ns;
                }
                self.reap_exits(k);
                return k.clock_ns;
            };
            let start = k.sys_start(t);
            let result = self.run_op(k, t, op, quantum_end_ns);
            if !self.violations.is_empty() {
                // The checker stopped an exit: the run ends with its findings (run.rs).
                return k.clock_ns;
            }
            // The op may have ended tasks (an OOM kill, an exit): barriers stop waiting for them.
            self.reap_exits(k);
            k.charge_sys(t, start);
            let finished = match result {
                Ok(f) => f,
                Err(Killed) => {
                    k.tasks[t as usize].oom_killed = true;
                    self.exit_after_last_op(k, t);
                    self.reap_exits(k);
                    return k.clock_ns;
                }
            };
            if k.tasks[t as usize].state == TaskState::Exited {
                return k.clock_ns;
            }
            let sleep_ns = std::mem::take(&mut k.tasks[t as usize].sleep_ns);
            if sleep_ns > 0 {
                // The operation sleeps (io_schedule_timeout): the CPU is free meanwhile.
                let cpu_free = k.clock_ns;
                k.clock_ns += sleep_ns;
                return cpu_free;
            }
            if !finished {
                continue;
            }
            let prog = &mut self.tasks[t as usize];
            prog.op_end_ns[pc] = k.clock_ns;
            prog.pc += 1;
            match op {
                Op::Barrier { name } => {
                    self.barrier_arrive(k, t, name);
                    return k.clock_ns;
                }
                Op::Sleep { ns } => {
                    let cpu_free = k.clock_ns;
                    // the parser bounds a program's sleeps (MAX_PROGRAM_TIME_NS); the clock
                    // stops at its end rather than wrapping to the start of time
                    k.clock_ns = k.clock_ns.saturating_add(*ns);
                    self.tasks[t as usize].op_end_ns[pc] = k.clock_ns;
                    return cpu_free;
                }
                _ => {}
            }
        }
        k.clock_ns
    }

    fn region_of(&self, t: u32, name: &str) -> Result<Region, Killed> {
        // Validation guarantees the region exists; a missing one means the program was cut short.
        self.tasks[t as usize].region(name).cloned().ok_or(Killed)
    }

    /// Executes (part of) one operation. Ok(true) when the operation is complete.
    fn run_op(
        &mut self,
        k: &mut Kernel,
        t: u32,
        op: &Op,
        quantum_end_ns: u64,
    ) -> Result<bool, Killed> {
        let mm = k.tasks[t as usize].mm.expect("user task has an mm");
        match op {
            Op::Mmap { region, size_bytes } => {
                let nr_pages = mapping_pages(*size_bytes);
                let start = k.mmap_anon(mm, nr_pages);
                self.tasks[t as usize].set_region(region, start, nr_pages);
            }
            Op::MmapShared { region, size_bytes } => {
                let nr_pages = mapping_pages(*size_bytes);
                let start = k.mmap_shared_anon(mm, nr_pages);
                self.tasks[t as usize].set_region(region, start, nr_pages);
            }
            Op::MmapFile {
                region,
                file,
                offset_bytes,
                size_bytes,
                shared,
                write,
                exec,
            } => {
                let nr_pages = mapping_pages(*size_bytes);
                let pgoff = mapping_pages(*offset_bytes);
                let mut flags = 0;
                for (on, flag) in [(*shared, VM_SHARED), (*write, VM_WRITE), (*exec, VM_EXEC)] {
                    if on {
                        flags |= flag;
                    }
                }
                let start = k.mmap_file(mm, *file, pgoff, nr_pages, flags);
                self.tasks[t as usize].set_region(region, start, nr_pages);
            }
            Op::Munmap { region } => {
                let r = self.region_of(t, region)?;
                k.munmap(mm, r.start);
                self.tasks[t as usize].regions.retain(|x| &x.name != region);
                k.promotion_work_pending(t);
            }
            Op::Madvise {
                region,
                advice,
                offset_bytes,
                len_bytes,
            } => {
                let r = self.region_of(t, region)?;
                let (from, to) = page_range(&r, *offset_bytes, *len_bytes);
                madvise(k, mm, r.start, from, to, *advice);
            }
            Op::Touch {
                region,
                access,
                pattern,
                offset_bytes,
                len_bytes,
                count,
                data,
                work_ns,
            } => {
                if !self.tasks[t as usize].touch.started {
                    let r = self.region_of(t, region)?;
                    let (from, to) = page_range(&r, *offset_bytes, *len_bytes);
                    let nr = to - from;
                    let ts = &mut self.tasks[t as usize].touch;
                    ts.started = true;
                    ts.done = 0;
                    ts.count = count.unwrap_or(nr as u64);
                    ts.base = r.start + from;
                    ts.nr_pages = nr;
                    ts.zipf = match pattern {
                        Pattern::Zipf { theta_milli } => {
                            Some(Zipf::new(nr.max(1) as u64, *theta_milli as f64 / 1000.0))
                        }
                        _ => None,
                    };
                    ts.drawn = 0;
                    let seed = k.rng.next_u64();
                    self.tasks[t as usize].touch.rng = Some(Rng::new(seed));
                }
                let write = *access == Access::Write;
                let access_ns = work_ns
                    + match pattern {
                        Pattern::Sequential => 0,
                        _ => k.hw.touch_resident_ns,
                    };
                let prog = &mut self.tasks[t as usize];
                loop {
                    let ts = &prog.touch;
                    if ts.done >= ts.count || ts.nr_pages == 0 {
                        prog.touch = Default::default();
                        return Ok(true);
                    }
                    if k.clock_ns >= quantum_end_ns {
                        return Ok(false);
                    }
                    let page = match pattern {
                        Pattern::Sequential => (ts.done % ts.nr_pages as u64) as u32,
                        _ => next_random_page(k, prog, mm),
                    };
                    let vpn = prog.touch.base + page;
                    if k.reclaim_before_fault(mm, vpn, write, quantum_end_ns) {
                        // the same page again once the reclaim is over
                        return Ok(false);
                    }
                    k.touch(mm, vpn, write, *data)?;
                    let per_touch_ns = access_ns + store_ns(k, mm, vpn, write, *data);
                    k.spend(crate::mm::TimeKind::User, per_touch_ns);
                    let task = &mut k.tasks[t as usize];
                    task.user_ns += per_touch_ns;
                    task.touches += 1;
                    prog.touch.done += 1;
                }
            }
            Op::Fork { name, child } => {
                let id = k.fork_task(t, name.clone());
                let mut c = TaskProgram::new(Rc::new(child.clone()), Default::default());
                c.regions = self.tasks[t as usize].regions.clone();
                self.tasks.push(c);
                self.tasks[t as usize].children.push(id);
                debug_assert_eq!(id as usize + 1, self.tasks.len());
            }
            Op::XsbenchLookups { lookups } => {
                return self.xsbench_lookups(k, t, *lookups, quantum_end_ns);
            }
            Op::FileRead(req) => return k.file_read_op(t, req, quantum_end_ns),
            Op::SetMempolicy { policy } => k.do_set_mempolicy(*policy),
            Op::Mbind {
                region,
                policy,
                offset_bytes,
                len_bytes,
                mf_move,
            } => {
                let r = self.region_of(t, region)?;
                let (from, to) = page_range(&r, *offset_bytes, *len_bytes);
                k.do_mbind(mm, r.start, from, to, *policy);
                if let (true, Some(pol)) = (mf_move, policy) {
                    k.mbind_move_folios(mm, r.start, from, to, pol);
                }
            }
            Op::FileWrite(req) => return k.file_write_op(t, req, quantum_end_ns),
            Op::Fsync { file } => k.vfs_fsync(*file),
            Op::Sleep { .. } | Op::Barrier { .. } => {}
            Op::Exit => self.exit(k, t),
            Op::IterationStart => {
                self.tasks[t as usize].iteration_start = Some((k.clock_ns, k.stat.clone()));
            }
            Op::IterationEnd { report } => {
                if let Some((start_ns, before)) = self.tasks[t as usize].iteration_start.take() {
                    let figures =
                        super::iteration_figures(*report, start_ns, k.clock_ns, &before, &k.stat);
                    self.iterations.push(figures);
                }
            }
        }
        Ok(true)
    }
}

/// The user time of the stores of a touch: a read stores nothing; a write stores the page's
/// content (kernel-bench's fill_page). A same-filled page is one memset, which runs at the
/// cache's speed into the folio the store's fault has just filled and at the store bandwidth
/// elsewhere; a data page's words come from a generator loop (xorshift), whose cost per word is
/// the same in or out of the cache (docs/calibration.md); a zero or sparse page stores one word.
fn store_ns(k: &Kernel, mm: u32, vpn: u32, write: bool, data: u8) -> u64 {
    if !write {
        return 0;
    }
    let words = content::words_stored(data);
    let ps_per_word = if data != content::SAME_FILLED {
        k.hw.word_write_ns_x1000
    } else {
        let (fault_mm, first, end) = k.tasks[k.current as usize].faulted_folio;
        if fault_mm == mm && (first..end).contains(&vpn) {
            k.hw.memset_word_cached_ns_x1000
        } else {
            k.hw.memset_word_ns_x1000
        }
    };
    words * ps_per_word / 1000
}

/// The next page of a random or zipf Touch, drawn a few ahead so that their page-table entries
/// are already in cache when they are used.
fn next_random_page(k: &Kernel, prog: &mut TaskProgram, mm: u32) -> u32 {
    let ts = &mut prog.touch;
    let vi = k.mms[mm as usize].find_vma(ts.base);
    let rng = ts.rng.as_mut().expect("random touch has a stream");
    while ts.drawn < ts.count && ts.drawn - ts.done < TOUCH_AHEAD as u64 {
        let page = match &ts.zipf {
            Some(z) => z.sample(rng) as u32,
            None => rng.below(ts.nr_pages as u64) as u32,
        };
        ts.ahead[(ts.drawn % TOUCH_AHEAD as u64) as usize] = page;
        ts.drawn += 1;
        if let Some(vi) = vi {
            let v = &k.mms[mm as usize].vmas[vi];
            if let Some(pte) = v.ptes.get((ts.base + page - v.start) as usize) {
                prefetch(pte);
            }
        }
        prefetch(k.cpu_tlbs[k.current_cpu as usize].entry(mm, ts.base + page));
    }
    ts.ahead[(ts.done % TOUCH_AHEAD as u64) as usize]
}

/// madvise on pages [from, to) of the VMA starting at `start`.
pub(super) fn madvise(k: &mut Kernel, mm: u32, start: u32, from: u32, to: u32, advice: Advice) {
    let Some(vi) = k.mms[mm as usize].find_vma(start) else {
        return;
    };
    let flags = &mut k.mms[mm as usize].vmas[vi].flags;
    match advice {
        Advice::Hugepage => *flags = (*flags | VM_HUGEPAGE) & !VM_NOHUGEPAGE,
        Advice::NoHugepage => *flags = (*flags | VM_NOHUGEPAGE) & !VM_HUGEPAGE,
        Advice::DontNeed => k.madvise_dontneed(mm, vi, from, to),
        Advice::Pageout | Advice::Cold => {
            k.madvise_cold_or_pageout(mm, vi, from, to, advice == Advice::Pageout)
        }
    }
}

#[inline]
pub(super) fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that cannot fault; the pointer comes from a live reference.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const T as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

fn page_range(r: &Region, offset_bytes: u64, len_bytes: Option<u64>) -> (u32, u32) {
    let from = ((offset_bytes / crate::mm::PAGE_SIZE) as u32).min(r.nr_pages);
    let to = match len_bytes {
        Some(l) => (from as u64 + l.div_ceil(crate::mm::PAGE_SIZE)).min(r.nr_pages as u64) as u32,
        None => r.nr_pages,
    };
    (from, to)
}

/// The pages of a mapping of `bytes` (or of an offset into a file): the parser keeps mappings
/// within MAX_MAPPING_BYTES and files within 8 TiB, so they fit a task's 32-bit page numbers.
fn mapping_pages(bytes: u64) -> u32 {
    u32::try_from(bytes.div_ceil(crate::mm::PAGE_SIZE)).expect("the parser bounds mappings")
}
