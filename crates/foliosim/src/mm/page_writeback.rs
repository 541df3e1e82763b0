//! Dirty page cache: accounting, the dirty limits, writer throttling, and the writeback flusher.
//!
//! Models mm/page-writeback.c (v6.10–v6.18): folio_mark_dirty / folio_account_dirtied
//! (nr_dirty, nr_dirtied); global_dirtyable_memory and domain_dirty_limits (dirty_ratio or
//! dirty_bytes, dirty_background_ratio or _bytes, bg_thresh at most thresh / 2);
//! balance_dirty_pages_ratelimited (nr_dirtied_pause, 8 pages once dirty_exceeded) and
//! balance_dirty_pages: free running up to dirty_freerun_ceiling = (bg_thresh + thresh) / 2
//! (dirty_poll_interval sets the next check), above it a pause of pages_dirtied /
//! task_ratelimit, where task_ratelimit = dirty_ratelimit * pos_ratio and pos_ratio is the cubic
//! pos_ratio_polynom around the setpoint halfway between the freerun ceiling and the limit,
//! bounded by wb_max_pause and wb_min_pause (which also gives nr_dirtied_pause and the
//! dirty_paused_when credit); at or above the limit pos_ratio is 0 and the writer sleeps
//! max_pause and looks again. folio_clear_dirty_for_io, folio_start_writeback and
//! folio_end_writeback (nr_writeback, nr_written, PG_reclaim rotation to the inactive tail),
//! write_cache_pages range-cyclic from writeback_index. fs/fs-writeback.c: __mark_inode_dirty
//! (dirtied_when, wb_wakeup_delayed), wb_workfn / wb_do_writeback with wb_check_start_all
//! (reclaim's wakeup_flusher_threads), wb_check_old_data_flush (kupdate: files dirtied more than
//! dirty_expire ago, every dirty_writeback interval) and wb_check_background_flush
//! (wb_over_bg_thresh), wb_writeback in writeback_chunk_size chunks.
//!
//! Simplifications: one disk and one bdi_writeback for the machine (the per-wb thresholds equal
//! the global ones, so the per-wb control line of wb_position_ratio is left out); the kernel
//! estimates avg_write_bandwidth and dirty_ratelimit, here both are the profile's SSD bandwidth
//! (the estimate a lone dirtier converges to; several dirtiers each get that rate and the cubic
//! control alone holds them back); hard_dirty_limit is thresh. Left out: memcg dirty domains
//! (cgroup writeback), strictlimit, rt tasks' higher limits, the per-CPU bdp_ratelimits and
//! dirty_throttle_leaks, laptop mode, the b_io / b_more_io round robin (dirty files are written
//! oldest dirtied first, each up to a chunk per pass), the block layer's request limit (the
//! flusher never blocks submitting), and swap writeback in nr_writeback (only page-cache
//! writeback is counted). Times in jiffies are taken at CONFIG_HZ=1000.

use super::filemap::FileId;
use super::folio::{pg, FolioId, NIL};
use super::vmstat::Vm;
use super::{Kernel, PAGE_SIZE};
use crate::mm::task::{TaskKind, TaskState};

/// DIRTY_POLL_THRESH (128 KiB in pages): the least nr_dirtied_pause, and its initial value.
pub const DIRTY_POLL_THRESH: u64 = 32;
/// balance_dirty_pages_ratelimited checks every 32 KiB once the limit was exceeded.
const DIRTY_EXCEEDED_RATELIMIT: u64 = 8;
/// One jiffy at CONFIG_HZ=1000.
const JIFFY_NS: u64 = 1_000_000;
const NSEC_PER_SEC: u64 = 1_000_000_000;
/// MAX_PAUSE: a throttled writer sleeps at most HZ/5 at a time.
const MAX_PAUSE_NS: u64 = 200 * JIFFY_NS;
/// wb_min_pause's target pause for one dirtier, HZ/100.
const TARGET_PAUSE_NS: u64 = 10 * JIFFY_NS;
/// pos_ratio is a fixed-point number with this many fraction bits.
const RATELIMIT_CALC_SHIFT: u32 = 10;
/// writeback_chunk_size: at least 4 MiB per inode per pass, at most dirty_limit / DIRTY_SCOPE.
const MIN_WRITEBACK_PAGES: u64 = 1024;
const DIRTY_SCOPE: u64 = 8;
/// reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK) sleeps at most HZ/10.
const THROTTLE_WRITEBACK_NS: u64 = 100 * JIFFY_NS;

/// The machine's `struct bdi_writeback`.
#[derive(Clone, Debug, Default)]
pub struct BdiWriteback {
    /// The flusher task (the wb's delayed work).
    pub flusher: u32,
    /// WB_start_all: reclaim asked for all dirty pages to be written.
    pub start_all: bool,
    pub last_old_flush_ns: u64,
    pub dirty_exceeded: bool,
    /// The flusher sleeps on its dwork timer (rather than blocked with nothing to do).
    pub timer_armed: bool,
    /// When the flusher last gave up its CPU: it cannot run again before.
    pub idle_since_ns: u64,
}

/// What balance_dirty_pages asks of the writer: sleep `pause_ns`, then (with `again`) call
/// balance_dirty_pages again with the same page count before dirtying more.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirtyPause {
    pub pause_ns: u64,
    pub again: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WbReason {
    /// wb_check_start_all: everything dirty now.
    StartAll,
    /// wb_check_old_data_flush: files dirtied more than dirty_expire ago.
    Kupdate,
    /// wb_check_background_flush: until dirty is below the background threshold.
    Background,
}

/// dirty_freerun_ceiling.
pub fn dirty_freerun_ceiling(thresh: u64, bg_thresh: u64) -> u64 {
    (thresh + bg_thresh) / 2
}

/// dirty_poll_interval: the next check comes after sqrt(headroom) pages, a power of two.
fn dirty_poll_interval(dirty: u64, thresh: u64) -> u64 {
    if thresh > dirty {
        1 << (thresh - dirty).isqrt().ilog2()
    } else {
        1
    }
}

/// pos_ratio_polynom: 1 + ((setpoint - dirty) / (limit - setpoint))^3, in [0, 2], fixed point.
pub fn pos_ratio_polynom(setpoint: u64, dirty: u64, limit: u64) -> u64 {
    let x = ((setpoint as i64 - dirty as i64) << RATELIMIT_CALC_SHIFT)
        / ((limit as i64 - setpoint as i64) | 1);
    let mut pos = x;
    pos = (pos * x) >> RATELIMIT_CALC_SHIFT;
    pos = (pos * x) >> RATELIMIT_CALC_SHIFT;
    pos += 1 << RATELIMIT_CALC_SHIFT;
    pos.clamp(0, 2 << RATELIMIT_CALC_SHIFT) as u64
}

/// The dirty limits.
impl Kernel {
    /// global_dirtyable_memory: free pages above the reserves plus the file LRU pages.
    pub fn global_dirtyable_memory(&self) -> u64 {
        let free = self.nr_free_pages();
        // totalreserve_pages: each zone's high watermark (lowmem_reserve is not modelled).
        let reserve: u64 = self.zones.iter().map(|z| z.wmark_high).sum();
        let file_lru: u64 = self
            .lruvecs
            .iter()
            .map(|lv| {
                lv.lists[super::vmscan::Lru::InactiveFile as usize].nr_pages
                    + lv.lists[super::vmscan::Lru::ActiveFile as usize].nr_pages
            })
            .sum();
        free - free.min(reserve) + file_lru + 1
    }

    /// domain_dirty_limits for the global domain: (bg_thresh, thresh) in pages.
    pub fn domain_dirty_limits(&self, avail: u64) -> (u64, u64) {
        let k = &self.spec.knobs;
        // Ratios per PAGE_SIZE, for precision, as the kernel converts them.
        let ratio = k.dirty_ratio as u64 * PAGE_SIZE / 100;
        let bg_ratio = k.dirty_background_ratio as u64 * PAGE_SIZE / 100;
        let thresh = match k.dirty_bytes {
            0 => ratio * avail / PAGE_SIZE,
            b => b.div_ceil(PAGE_SIZE),
        };
        let mut bg_thresh = match k.dirty_background_bytes {
            0 => bg_ratio * avail / PAGE_SIZE,
            b => b.div_ceil(PAGE_SIZE),
        };
        if bg_thresh >= thresh {
            bg_thresh = thresh / 2;
        }
        (bg_thresh, thresh)
    }

    /// global_dirty_limits: (bg_thresh, thresh) now.
    pub fn global_dirty_limits(&self) -> (u64, u64) {
        self.domain_dirty_limits(self.global_dirtyable_memory())
    }

    /// wb_over_bg_thresh: should background writeback go on? (Pages under writeback do not
    /// count: they are on their way already.)
    pub fn wb_over_bg_thresh(&self) -> bool {
        self.stat.get(Vm::NrDirty) > self.global_dirty_limits().0
    }

    /// The disk's write bandwidth in pages per second (avg_write_bandwidth, dirty_ratelimit).
    fn write_bw_pages(&self) -> u64 {
        (self.hw.ssd_bandwidth_bytes_per_s / PAGE_SIZE).max(1)
    }

    /// wb_max_pause: about the time to write an eighth of the wb's dirty pages, at most
    /// MAX_PAUSE.
    fn wb_max_pause(&self, wb_dirty: u64) -> u64 {
        // t = wb_dirty / (1 + bw / roundup_pow_of_two(1 + HZ / 8)) jiffies, + 1.
        let t = wb_dirty * 128 * JIFFY_NS / (128 + self.write_bw_pages()) + JIFFY_NS;
        t.min(MAX_PAUSE_NS)
    }

    /// wb_min_pause: (min_pause, nr_dirtied_pause) for a writer allowed `task_ratelimit`.
    fn wb_min_pause(&self, max_pause: u64, task_ratelimit: u64) -> (u64, u64) {
        let dirty_ratelimit = self.write_bw_pages();
        let mut t = TARGET_PAUSE_NS.min(JIFFY_NS + max_pause / 2);
        let mut pages = dirty_ratelimit * t / NSEC_PER_SEC;
        if pages < DIRTY_POLL_THRESH {
            t = max_pause;
            pages = dirty_ratelimit * t / NSEC_PER_SEC;
            if pages > DIRTY_POLL_THRESH {
                pages = DIRTY_POLL_THRESH;
                t = NSEC_PER_SEC * DIRTY_POLL_THRESH / dirty_ratelimit;
            }
        }
        let pause = NSEC_PER_SEC * pages / (task_ratelimit + 1);
        if pause > max_pause {
            t = max_pause;
            pages = task_ratelimit * t / NSEC_PER_SEC;
        }
        let min_pause = if pages >= DIRTY_POLL_THRESH {
            JIFFY_NS + t / 2
        } else {
            t
        };
        (min_pause, pages)
    }
}

/// Dirtying and throttling.
impl Kernel {
    /// folio_mark_dirty: PG_dirty; for a page-cache folio also folio_account_dirtied and
    /// __mark_inode_dirty.
    pub fn folio_mark_dirty(&mut self, folio: FolioId) {
        if self.mem.test(folio, pg::DIRTY) {
            return;
        }
        self.mem.set(folio, pg::DIRTY);
        if !self.folio_is_file_lru(folio) {
            // An anonymous or shmem folio (noop_dirty_folio): swap writes it, nothing counts it.
            return;
        }
        let nr = self.mem.nr_pages(folio) as u64;
        self.stat.count(Vm::NrDirty, nr);
        self.stat.count(Vm::NrDirtied, nr);
        self.tasks[self.current as usize].nr_dirtied += nr;
        let file = self.mem.anon_vma(folio) as usize;
        self.files[file].nr_dirty += nr;
        if self.files[file].dirtied_when_ns.is_none() {
            // The inode joins b_dirty; an idle wb arms its periodic timer.
            let wakeup_bdi = !self.wb_has_dirty_io();
            self.files[file].dirtied_when_ns = Some(self.clock_ns);
            if wakeup_bdi {
                self.wb_wakeup_delayed();
            }
        }
    }

    /// folio_clear_dirty_for_io: the folio is about to be written; its mappings are cleaned and
    /// write-protected first (folio_mkclean), so a later write through them dirties it again.
    fn folio_clear_dirty_for_io(&mut self, folio: FolioId) {
        if self.mem.mapcount(folio) > 0 {
            self.folio_mkclean(folio);
        }
        self.mem.clear(folio, pg::DIRTY);
        let nr = self.mem.nr_pages(folio) as u64;
        self.stat.sub(Vm::NrDirty, nr);
        let f = &mut self.files[self.mem.anon_vma(folio) as usize];
        f.nr_dirty -= nr;
        if f.nr_dirty == 0 {
            f.dirtied_when_ns = None;
        }
    }

    /// balance_dirty_pages_ratelimited: balance_dirty_pages once the task dirtied
    /// nr_dirtied_pause pages since its last check.
    pub fn balance_dirty_pages_ratelimited(&mut self, t: u32) -> DirtyPause {
        let task = &self.tasks[t as usize];
        let mut ratelimit = task.nr_dirtied_pause;
        if self.wb.dirty_exceeded {
            ratelimit = ratelimit.min(DIRTY_EXCEEDED_RATELIMIT);
        }
        if task.nr_dirtied >= ratelimit {
            return self.balance_dirty_pages(t, task.nr_dirtied);
        }
        DirtyPause::default()
    }

    /// balance_dirty_pages (one pass of its loop): starts background writeback above the
    /// background threshold and, above the freerun ceiling, says how long the writer sleeps.
    pub fn balance_dirty_pages(&mut self, t: u32, pages_dirtied: u64) -> DirtyPause {
        self.complete_file_writeback();
        let mut now = self.clock_ns;
        let nr_reclaimable = self.stat.get(Vm::NrDirty);
        let dirty = nr_reclaimable + self.stat.get(Vm::NrWriteback);
        let (bg_thresh, thresh) = self.global_dirty_limits();
        if nr_reclaimable > bg_thresh {
            self.wb_start_background_writeback();
        }
        let freerun = dirty_freerun_ceiling(thresh, bg_thresh);
        if dirty <= freerun {
            let task = &mut self.tasks[t as usize];
            task.dirty_paused_when_ns = now;
            task.nr_dirtied = 0;
            task.nr_dirtied_pause = dirty_poll_interval(dirty, thresh);
            return DirtyPause::default();
        }
        self.wb_start_background_writeback();
        self.wb.dirty_exceeded = dirty > thresh;
        let limit = thresh;
        let pos_ratio = if dirty >= limit {
            0
        } else {
            pos_ratio_polynom((freerun + limit) / 2, dirty, limit)
        };
        let task_ratelimit = (self.write_bw_pages() * pos_ratio) >> RATELIMIT_CALC_SHIFT;
        let max_pause = self.wb_max_pause(dirty);
        let (min_pause, nr_dirtied_pause) = self.wb_min_pause(max_pause, task_ratelimit);
        let task = &mut self.tasks[t as usize];
        let pause = if task_ratelimit == 0 {
            max_pause
        } else {
            let period = NSEC_PER_SEC * pages_dirtied / task_ratelimit;
            let mut pause = period as i64;
            if task.dirty_paused_when_ns != 0 {
                pause -= now as i64 - task.dirty_paused_when_ns as i64;
            }
            if pause < min_pause as i64 {
                // Too short to sleep: the time is credited to the next period.
                if pause < -(NSEC_PER_SEC as i64) {
                    task.dirty_paused_when_ns = now;
                    task.nr_dirtied = 0;
                } else if period > 0 {
                    task.dirty_paused_when_ns += period;
                    task.nr_dirtied = 0;
                } else if task.nr_dirtied_pause <= pages_dirtied {
                    task.nr_dirtied_pause += pages_dirtied;
                }
                return DirtyPause::default();
            }
            let mut pause = pause as u64;
            if pause > max_pause {
                now += (pause - max_pause).min(max_pause);
                pause = max_pause;
            }
            pause
        };
        task.dirty_paused_when_ns = now + pause;
        task.nr_dirtied = 0;
        task.nr_dirtied_pause = nr_dirtied_pause;
        DirtyPause {
            pause_ns: pause,
            again: task_ratelimit == 0,
        }
    }
}

/// The flusher (fs/fs-writeback.c).
impl Kernel {
    /// wb_has_dirty_io: some file has dirty pages.
    pub fn wb_has_dirty_io(&self) -> bool {
        self.files.iter().any(|f| f.dirtied_when_ns.is_some())
    }

    /// dirty_writeback_interval in ns (0: no periodic writeback).
    fn dirty_writeback_interval_ns(&self) -> u64 {
        self.spec.knobs.dirty_writeback_centisecs * 10 * JIFFY_NS
    }

    /// wb_wakeup: the flusher runs now (or as soon as its CPU time allows).
    pub fn wb_wakeup(&mut self) {
        let f = self.wb.flusher;
        let at = self.clock_ns.max(self.wb.idle_since_ns);
        let task = &mut self.tasks[f as usize];
        if task.state == TaskState::Blocked {
            self.wake_task(f);
        } else if task.state == TaskState::Runnable && self.wb.timer_armed && task.clock_ns > at {
            // mod_delayed_work(.., 0): the pending timer fires now.
            task.clock_ns = at;
            self.runq.push(at, f);
        }
        self.wb.timer_armed = false;
    }

    /// wb_wakeup_delayed: the flusher runs one dirty_writeback interval from now, unless it is
    /// already due.
    fn wb_wakeup_delayed(&mut self) {
        let interval = self.dirty_writeback_interval_ns();
        let f = self.wb.flusher;
        if interval == 0 || self.tasks[f as usize].state != TaskState::Blocked {
            return;
        }
        let at = (self.clock_ns + interval).max(self.wb.idle_since_ns);
        let task = &mut self.tasks[f as usize];
        task.state = TaskState::Runnable;
        task.clock_ns = at;
        self.runq.push(at, f);
        self.wb.timer_armed = true;
    }

    /// wb_start_background_writeback.
    fn wb_start_background_writeback(&mut self) {
        self.wb_wakeup();
    }

    /// wakeup_flusher_threads(WB_REASON_VMSCAN) from reclaim: write back everything dirty.
    pub fn wakeup_flusher_threads(&mut self) {
        if !self.wb_has_dirty_io() || self.wb.start_all {
            return;
        }
        self.wb.start_all = true;
        self.wb_wakeup();
    }

    /// One run of the flusher (wb_workfn / wb_do_writeback). Returns when it should run again
    /// on its own, if ever (the dirty_writeback interval, while anything is dirty).
    pub fn wb_workfn(&mut self) -> Option<u64> {
        self.complete_file_writeback();
        if std::mem::take(&mut self.wb.start_all) {
            let nr = self.stat.get(Vm::NrDirty);
            self.wb_writeback(nr, WbReason::StartAll);
        }
        let interval = self.dirty_writeback_interval_ns();
        if interval > 0 && self.clock_ns >= self.wb.last_old_flush_ns + interval {
            self.wb.last_old_flush_ns = self.clock_ns;
            let nr = self.stat.get(Vm::NrDirty);
            self.wb_writeback(nr, WbReason::Kupdate);
        }
        if self.wb_over_bg_thresh() {
            self.wb_writeback(u64::MAX, WbReason::Background);
        }
        (self.wb_has_dirty_io() && interval > 0).then_some(self.clock_ns + interval)
    }

    /// wb_writeback: writes up to `nr_pages` from the files due for `reason`, oldest dirtied
    /// first, a chunk per file per pass.
    fn wb_writeback(&mut self, nr_pages: u64, reason: WbReason) {
        let mut left = nr_pages;
        let mut due: Vec<(u64, FileId)> = Vec::new();
        loop {
            let dirtied_before = match reason {
                WbReason::Kupdate => {
                    let expire = self.spec.knobs.dirty_expire_centisecs * 10 * JIFFY_NS;
                    self.clock_ns.saturating_sub(expire)
                }
                _ => self.clock_ns,
            };
            due.clear();
            due.extend(self.files.iter().enumerate().filter_map(|(i, f)| {
                f.dirtied_when_ns
                    .filter(|&w| w <= dirtied_before)
                    .map(|w| (w, i as FileId))
            }));
            due.sort_unstable();
            let mut progress = false;
            for &(_, file) in &due {
                if left == 0 || (reason == WbReason::Background && !self.wb_over_bg_thresh()) {
                    return;
                }
                let chunk = self.writeback_chunk_size(left);
                let wrote = self.write_cache_pages(file, chunk);
                left -= wrote.min(left);
                progress |= wrote > 0;
            }
            if !progress {
                return;
            }
        }
    }

    /// writeback_chunk_size for WB_SYNC_NONE: half a second of bandwidth, at most an eighth of
    /// the dirty limit, rounded to MIN_WRITEBACK_PAGES.
    fn writeback_chunk_size(&self, nr_pages: u64) -> u64 {
        let dirty_limit = self.global_dirty_limits().1;
        let pages = (self.write_bw_pages() / 2)
            .min(dirty_limit / DIRTY_SCOPE)
            .min(nr_pages);
        (pages + MIN_WRITEBACK_PAGES) / MIN_WRITEBACK_PAGES * MIN_WRITEBACK_PAGES
    }

    /// write_cache_pages (WB_SYNC_NONE, range-cyclic): starts writeback of the file's dirty
    /// folios from writeback_index on, wrapping once, until `nr_to_write` pages are under way.
    /// Folios already under writeback are skipped. Each run of contiguous folios is one write
    /// request. Returns the pages written.
    pub fn write_cache_pages(&mut self, file: FileId, nr_to_write: u64) -> u64 {
        let nr_pages = self.files[file as usize].nr_pages;
        let start = self.files[file as usize].writeback_index.min(nr_pages);
        let mut written = 0u64;
        let mut run: Vec<FolioId> = Vec::new();
        let mut run_end = NIL;
        let mut done_index = 0;
        'ranges: for (a, b) in [(start, nr_pages), (0, start)] {
            let mut index = a;
            while index < b {
                let folio = self.files[file as usize].cache[index as usize];
                if folio == NIL {
                    index += 1;
                    continue;
                }
                let fi = self.mem.index(folio);
                let next = fi + self.mem.nr_pages(folio);
                if !self.mem.test(folio, pg::DIRTY) || self.mem.test(folio, pg::WRITEBACK) {
                    index = next;
                    continue;
                }
                if written >= nr_to_write {
                    done_index = index;
                    break 'ranges;
                }
                if fi != run_end {
                    self.submit_write(file, &mut run);
                }
                self.folio_clear_dirty_for_io(folio);
                self.folio_start_writeback(folio);
                written += self.mem.nr_pages(folio) as u64;
                run.push(folio);
                run_end = next;
                index = next;
            }
            run_end = NIL;
        }
        self.submit_write(file, &mut run);
        self.files[file as usize].writeback_index = done_index;
        written
    }

    /// The write request of a run of contiguous folios (FIFO on the file's device, like reads).
    fn submit_write(&mut self, file: FileId, run: &mut Vec<FolioId>) {
        if run.is_empty() {
            return;
        }
        let pages: u64 = run.iter().map(|&f| self.mem.nr_pages(f) as u64).sum();
        let done = self.blk_submit(file, pages, self.hw.ssd_write_latency_ns);
        self.stat.count(Vm::Pgpgout, pages * PAGE_SIZE / 1024);
        let f = &mut self.files[file as usize];
        f.wb_inflight
            .extend(run.drain(..).map(|folio| (done, folio)));
    }

    /// folio_start_writeback.
    fn folio_start_writeback(&mut self, folio: FolioId) {
        self.mem.set(folio, pg::WRITEBACK);
        self.stat
            .count(Vm::NrWriteback, self.mem.nr_pages(folio) as u64);
    }

    /// folio_end_writeback: a folio reclaim found under writeback (PG_reclaim) goes to the
    /// inactive tail to be freed next.
    fn folio_end_writeback(&mut self, folio: FolioId) {
        if self.mem.test(folio, pg::RECLAIM) {
            self.mem.clear(folio, pg::RECLAIM);
            if !self.mem.test(folio, pg::DIRTY) {
                self.lru_move_tail(folio);
            }
        }
        self.mem.clear(folio, pg::WRITEBACK);
        let nr = self.mem.nr_pages(folio) as u64;
        self.stat.sub(Vm::NrWriteback, nr);
        self.stat.count(Vm::NrWritten, nr);
    }

    /// Ends the writeback of every folio whose write request completed by now.
    pub fn complete_file_writeback(&mut self) {
        for file in 0..self.files.len() {
            while let Some(&(done, folio)) = self.files[file].wb_inflight.front() {
                if done > self.clock_ns {
                    break;
                }
                self.files[file].wb_inflight.pop_front();
                self.folio_end_writeback(folio);
            }
        }
    }

    /// folio_wait_writeback for a page-cache folio: sleeps until its write request completes.
    pub fn folio_wait_writeback(&mut self, folio: FolioId) {
        // A page-cache folio's anon_vma field holds its file.
        let file = self.mem.anon_vma(folio);
        let done = self.files[file as usize]
            .wb_inflight
            .iter()
            .find(|&&(_, f)| f == folio)
            .map(|&(done, _)| done);
        if let Some(done) = done {
            self.wait_until(super::TimeKind::IoWait, done);
        }
        self.complete_file_writeback();
    }

    /// Waits for all of the file's write requests (filemap_fdatawait).
    fn filemap_fdatawait(&mut self, file: FileId) {
        if let Some(&(done, _)) = self.files[file as usize].wb_inflight.back() {
            self.wait_until(super::TimeKind::IoWait, done);
        }
        self.complete_file_writeback();
    }

    /// fsync (file_write_and_wait_range over the whole file, WB_SYNC_ALL): waits for the
    /// writeback under way (WB_SYNC_ALL waits on such folios before writing them again),
    /// writes every dirty folio, and waits for that too.
    pub fn vfs_fsync(&mut self, file: FileId) {
        self.spend(super::TimeKind::FaultEntry, self.hw.fault_entry_ns);
        self.filemap_fdatawait(file);
        self.files[file as usize].writeback_index = 0;
        self.write_cache_pages(file, u64::MAX);
        self.filemap_fdatawait(file);
    }

    /// The flusher's start-all work that wakeup_flusher_threads asked for. The flusher would
    /// run on another CPU while the reclaimer waits; the engine runs one task's operation at a
    /// time, so the work is done here at the waker's time, on the flusher's account.
    fn run_flusher_start_all(&mut self) {
        if !self.wb.start_all {
            return;
        }
        let (saved_clock, saved_current) = (self.clock_ns, self.current);
        let f = self.wb.flusher;
        self.clock_ns = self.clock_ns.max(self.wb.idle_since_ns);
        self.current = f;
        let start = self.sys_start(f);
        self.wb.start_all = false;
        let nr = self.stat.get(Vm::NrDirty);
        self.wb_writeback(nr, WbReason::StartAll);
        self.charge_sys(f, start);
        self.wb.idle_since_ns = self.clock_ns;
        self.clock_ns = saved_clock;
        self.current = saved_current;
    }

    /// reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK), as shrink_inactive_list calls it for a
    /// cgroup v1 reclaimer whose folios were all dirty: it sleeps until more than
    /// SWAP_CLUSTER_MAX pages have completed writeback since it began (__acct_reclaim_writeback,
    /// this reclaimer counted as the only one throttled), at most HZ/10: the whole timeout when
    /// less than that is in flight, as for the few dirty folios a small cgroup holds.
    pub fn reclaim_throttle_writeback(&mut self) {
        self.run_flusher_start_all();
        let mut inflight: Vec<(u64, u64)> = self
            .files
            .iter()
            .flat_map(|f| f.wb_inflight.iter())
            .map(|&(done, folio)| (done, self.mem.nr_pages(folio) as u64))
            .collect();
        inflight.sort_unstable();
        let mut written = 0;
        let woken = inflight.into_iter().find_map(|(done, pages)| {
            written += pages;
            (written > super::vmscan::SWAP_CLUSTER_MAX).then_some(done)
        });
        let timeout = self.clock_ns + THROTTLE_WRITEBACK_NS;
        self.wait_until(
            super::TimeKind::IoWait,
            woken.map_or(timeout, |w| w.min(timeout)),
        );
        self.complete_file_writeback();
    }

    /// The end of a reclaim that freed nothing but found dirty or writeback file folios (the
    /// simplification of shrink_node's throttling, mm/vmscan.rs): it waits for the next write
    /// request to complete, at most HZ/10.
    pub fn wait_for_next_writeback(&mut self) {
        self.run_flusher_start_all();
        let next = self
            .files
            .iter()
            .filter_map(|f| f.wb_inflight.front().map(|&(d, _)| d))
            .min();
        if let Some(done) = next {
            let until = done.min(self.clock_ns + THROTTLE_WRITEBACK_NS);
            self.wait_until(super::TimeKind::IoWait, until);
            self.complete_file_writeback();
        }
    }

    /// Creates the flusher task (asleep until something is dirtied).
    pub fn spawn_flusher(&mut self) {
        let id = self.tasks.len() as u32;
        let mut t = crate::mm::task::Task::new(id, "writeback".into(), TaskKind::Flusher, 0, 0);
        t.state = TaskState::Blocked;
        self.tasks.push(t);
        self.wb.flusher = id;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::filemap::tests::{boot, new_file, write};
    use crate::mm::vmscan::{Lru, ScanControl};

    fn no_violations(k: &Kernel) {
        let v = crate::check::check(k);
        assert!(v.is_empty(), "{v:?}");
    }

    #[test]
    fn dirty_limits_follow_the_ratio_and_bytes_knobs() {
        let mut k = boot("v6.18", false);
        // The ratios are taken per PAGE_SIZE first (20% is 819/4096), as the kernel does.
        assert_eq!(k.domain_dirty_limits(10_000), (998, 1999));
        k.spec.knobs.set("/proc/sys/vm/dirty_bytes", "8M").unwrap();
        assert_eq!(k.spec.knobs.dirty_ratio, 0);
        assert_eq!(k.domain_dirty_limits(10_000), (998, 2048));
        // A background threshold at or above the limit is halved below it.
        k.spec
            .knobs
            .set("/proc/sys/vm/dirty_background_ratio", "50")
            .unwrap();
        assert_eq!(k.domain_dirty_limits(10_000), (1024, 2048));
        k.spec.knobs.set("/proc/sys/vm/dirty_ratio", "20").unwrap();
        assert_eq!(k.spec.knobs.dirty_bytes, 0);
        assert!(k.spec.knobs.set("/proc/sys/vm/dirty_bytes", "4K").is_err());
        // Dirtyable memory: free pages above the reserves plus the file LRU.
        let before = k.global_dirtyable_memory();
        let f = new_file(&mut k, 1 << 20, 0, false);
        write(&mut k, f, 0, 1 << 20, 1 << 20);
        k.lru_add_drain();
        assert_eq!(
            k.global_dirtyable_memory(),
            before,
            "cache pages come out of free ones"
        );
        // The freerun ceiling and the cubic control: 2 at the ceiling, 1 at the setpoint, 0 at
        // the limit.
        assert_eq!(dirty_freerun_ceiling(2000, 1000), 1500);
        assert_eq!(pos_ratio_polynom(1745, 1490, 2000), 2 << 10);
        assert_eq!(pos_ratio_polynom(1745, 1745, 2000), 1 << 10);
        assert_eq!(pos_ratio_polynom(1745, 2000, 2000), 0);
    }

    #[test]
    fn background_writeback_starts_only_above_the_background_threshold() {
        let mut k = boot("v6.18", false);
        k.spec
            .knobs
            .set("/proc/sys/vm/dirty_background_bytes", "4M")
            .unwrap();
        // A 16 MiB limit makes writeback_chunk_size 4 MiB (its eighth, rounded up).
        k.spec.knobs.set("/proc/sys/vm/dirty_bytes", "16M").unwrap();
        let t = k.current;
        let flusher = k.wb.flusher as usize;
        let f = new_file(&mut k, 64 << 20, 0, true);
        write(&mut k, f, 0, 3 << 20, 1 << 20);
        // The first dirtying arms the periodic timer, no more.
        assert!(k.wb.timer_armed);
        let t0 = k.files[0].dirtied_when_ns.unwrap();
        assert_eq!(k.tasks[flusher].clock_ns, t0 + 5_000_000_000);
        assert_eq!(k.balance_dirty_pages(t, 0), DirtyPause::default());
        assert!(
            k.wb.timer_armed,
            "below the background threshold: not woken"
        );
        // Run early anyway, the flusher finds nothing to do.
        k.wb_workfn();
        assert_eq!(k.stat.get(Vm::NrWriteback), 0);
        assert_eq!(k.stat.get(Vm::Pgpgout), 0);
        // 9 MiB dirty: above the background threshold, under the freerun ceiling (10 MiB).
        write(&mut k, f, 3 << 20, 6 << 20, 1 << 20);
        assert_eq!(k.balance_dirty_pages(t, 0), DirtyPause::default());
        assert!(!k.wb.timer_armed);
        assert_eq!(k.tasks[flusher].state, TaskState::Runnable);
        assert!(
            k.tasks[flusher].clock_ns < t0 + 1_000_000_000,
            "woken, not on its timer"
        );
        k.wb_workfn();
        // Written a chunk at a time until dirty is under the threshold.
        assert_eq!(k.stat.get(Vm::NrWriteback), 2048);
        assert_eq!(k.stat.get(Vm::NrDirty), 256);
        assert_eq!(k.stat.get(Vm::Pgpgout), 8192);
        // The writes complete in time; nr_written counts them.
        k.clock_ns += 1_000_000_000;
        k.complete_file_writeback();
        assert_eq!(k.stat.get(Vm::NrWriteback), 0);
        assert_eq!(k.stat.get(Vm::NrWritten), 2048);
        no_violations(&k);
    }

    #[test]
    fn periodic_writeback_cleans_files_dirtied_more_than_dirty_expire_ago() {
        let mut k = boot("v6.18", false);
        let a = new_file(&mut k, 1 << 20, 0, true);
        let b = new_file(&mut k, 1 << 20, 0, true);
        let s = 1_000_000_000;
        write(&mut k, a, 0, 1 << 20, 1 << 20);
        let t0 = k.files[a as usize].dirtied_when_ns.unwrap();
        k.clock_ns = t0 + 20 * s;
        write(&mut k, b, 0, 1 << 20, 1 << 20);
        // Every 5 s the flusher looks; at 25 s nothing is 30 s old yet.
        k.clock_ns = t0 + 25 * s;
        assert!(k.wb_workfn().is_some());
        assert_eq!(k.stat.get(Vm::NrDirty), 512);
        k.clock_ns = t0 + 30 * s;
        let next = k.wb_workfn();
        assert_eq!(next, Some(k.clock_ns + 5 * s));
        assert_eq!(k.files[a as usize].nr_dirty, 0);
        assert_eq!(k.files[b as usize].nr_dirty, 256);
        assert_eq!(k.stat.get(Vm::NrWriteback), 256);
        // Until dirty_writeback_interval has passed, no new kupdate run.
        k.clock_ns = t0 + 52 * s;
        k.wb.last_old_flush_ns = t0 + 50 * s;
        k.wb_workfn();
        assert_eq!(k.files[b as usize].nr_dirty, 256);
        k.clock_ns = t0 + 55 * s;
        assert_eq!(
            k.wb_workfn(),
            None,
            "all clean: the timer is not armed again"
        );
        assert_eq!(k.stat.get(Vm::NrDirty), 0);
        k.clock_ns += s;
        k.complete_file_writeback();
        assert_eq!(k.stat.get(Vm::NrWritten), 512);
        no_violations(&k);
    }

    #[test]
    fn reclaim_keeps_a_dirty_file_folio_wakes_the_flusher_and_frees_it_after_writeback() {
        let mut k = boot("v6.18", false);
        let f = new_file(&mut k, 4 << 20, 0, true);
        write(&mut k, f, 0, 4 << 20, 1 << 20);
        let lv = k.lruvec_index(0, 0);
        let flusher = k.wb.flusher as usize;
        let mut sc = ScanControl::new(1 << 20, false);
        sc.priority = 0;
        k.shrink_lruvec(lv, &mut sc);
        assert_eq!(sc.nr_reclaimed, 0, "dirty folios are not freed");
        assert_eq!(k.stat.get(Vm::NrVmscanImmediateReclaim), 1024);
        assert_eq!(k.files[0].nrpages, 1024);
        let folio = k.files[0].cache[0];
        assert!(k.mem.test(folio, pg::RECLAIM) && k.mem.test(folio, pg::DIRTY));
        // Every folio taken was dirty and unqueued: the flusher is told to write everything.
        assert!(k.wb.start_all);
        assert_eq!(k.tasks[flusher].state, TaskState::Runnable);
        assert_eq!(k.stat.get(Vm::Pgpgout), 0, "reclaim itself writes nothing");
        k.wb_workfn();
        assert_eq!(k.stat.get(Vm::NrWriteback), 1024);
        // Under writeback, reclaim skips them again.
        let mut sc = ScanControl::new(1 << 20, false);
        sc.priority = 0;
        k.shrink_lruvec(lv, &mut sc);
        assert_eq!(sc.nr_reclaimed, 0);
        // Once written they rotate to the inactive tail, and the next reclaim frees them.
        k.clock_ns += 1_000_000_000;
        k.complete_file_writeback();
        assert!(!k.mem.test(folio, pg::ACTIVE) && !k.mem.test(folio, pg::RECLAIM));
        let lists = &k.lruvecs[lv].lists;
        assert_eq!(lists[Lru::InactiveFile as usize].nr_pages, 1024);
        assert_eq!(lists[Lru::ActiveFile as usize].nr_pages, 0);
        let mut sc = ScanControl::new(1 << 20, false);
        sc.priority = 0;
        k.shrink_lruvec(lv, &mut sc);
        assert_eq!(sc.nr_reclaimed, 1024);
        assert_eq!(k.files[0].nrpages, 0);
        no_violations(&k);
    }

    /// One cgroup reclaim at priority 0 over `size_bytes` of dirty page cache, with the memory
    /// controller on v1 or v2; the kernel after it, and the time it began.
    fn reclaim_dirty_file(v1: bool, size_bytes: u64) -> (Kernel, u64) {
        let mut k = boot("v6.18", false);
        k.spec.knobs.memory_cgroup_v1 = v1;
        let f = new_file(&mut k, size_bytes, 0, true);
        write(&mut k, f, 0, size_bytes, size_bytes);
        let lv = k.lruvec_index(0, 0);
        let mut sc = ScanControl::new(1 << 20, false);
        sc.cgroup_reclaim = true;
        sc.priority = 0;
        let start_ns = k.clock_ns;
        k.shrink_lruvec(lv, &mut sc);
        (k, start_ns)
    }

    #[test]
    fn a_cgroup_v1_reclaimer_waits_for_the_writeback_it_started() {
        // 128 KiB: one SWAP_CLUSTER_MAX batch.
        let reclaim_dirty = |v1: bool| reclaim_dirty_file(v1, 128 << 10);
        // v2 throttles dirtiers per cgroup: its reclaimer marks the folios, wakes the flusher
        // and goes on.
        let (k, start_ns) = reclaim_dirty(false);
        assert_eq!(k.stat.get(Vm::NrVmscanImmediateReclaim), 32);
        assert_eq!(k.stat.get(Vm::Pgpgout), 0);
        assert_eq!(k.stat.get(Vm::Pgrotated), 0);
        assert!(k.clock_ns - start_ns < k.hw.ssd_write_latency_ns);
        // v1 has no such throttling: the reclaimer sleeps until the writeback it asked for
        // completes; the written folios rotate to the inactive tail.
        let (k, start_ns) = reclaim_dirty(true);
        assert_eq!(k.stat.get(Vm::Pgpgout), 128);
        assert_eq!(k.stat.get(Vm::NrVmscanImmediateReclaim), 32);
        assert_eq!(k.stat.get(Vm::Pgrotated), 32);
        assert!(k.clock_ns - start_ns >= k.hw.ssd_write_latency_ns);
        no_violations(&k);

        // Case 3: a v1 reclaimer meeting a folio it marked, still under writeback, waits for
        // it and frees it; v2's activates it again.
        for v1 in [false, true] {
            let mut k = boot("v6.18", false);
            k.spec.knobs.memory_cgroup_v1 = v1;
            let f = new_file(&mut k, 128 << 10, 0, true);
            write(&mut k, f, 0, 128 << 10, 128 << 10);
            let lv = k.lruvec_index(0, 0);
            k.write_cache_pages(f, 32);
            let mut sc = ScanControl::new(1 << 20, false);
            sc.cgroup_reclaim = true;
            sc.priority = 0;
            k.shrink_lruvec(lv, &mut sc);
            assert_eq!(
                sc.nr_reclaimed, 0,
                "first met under writeback: marked and activated"
            );
            let folio = k.files[0].cache[0];
            assert!(k.mem.test(folio, pg::RECLAIM) && k.mem.test(folio, pg::WRITEBACK));
            let mut sc = ScanControl::new(1 << 20, false);
            sc.cgroup_reclaim = true;
            sc.priority = 0;
            k.shrink_active_list(lv, true, 32, &mut sc);
            k.shrink_lruvec(lv, &mut sc);
            assert_eq!(sc.nr_reclaimed, if v1 { 32 } else { 0 });
            assert_eq!(k.files[0].nrpages, if v1 { 0 } else { 32 });
            no_violations(&k);
        }
    }

    #[test]
    fn a_throttled_v1_reclaimer_sleeps_until_more_than_a_batch_is_written_or_hz_over_10() {
        // A cgroup v1 reclaim whose batch is all dirty: the flusher writes the file, and the
        // reclaimer sleeps in reclaim_throttle.
        let throttled_ns = |size_bytes: u64| {
            let (k, start_ns) = reclaim_dirty_file(true, size_bytes);
            no_violations(&k);
            (k.clock_ns - start_ns, k.hw.ssd_write_latency_ns)
        };
        // 32 pages written: never more than SWAP_CLUSTER_MAX, so only the timeout wakes it,
        // although the write completed long before.
        let (few_ns, latency_ns) = throttled_ns(128 << 10);
        assert!(latency_ns < THROTTLE_WRITEBACK_NS / 10);
        assert!(few_ns >= THROTTLE_WRITEBACK_NS, "{few_ns}");
        // 64 pages: woken when the write taking the count past 32 completes.
        let (many_ns, _) = throttled_ns(256 << 10);
        assert!(
            (latency_ns..THROTTLE_WRITEBACK_NS).contains(&many_ns),
            "{many_ns}"
        );
    }

    /// Writes 96 MiB to a 1 GiB machine whose disk does `bw` bytes/s, with a 16 MiB dirty
    /// limit; returns the writer's elapsed time.
    fn throttled_write_ns(bw: u64) -> u64 {
        let toml = r#"
name = "t"
[[machine.node]]
memory = "1G"
cpus = 2
[[file]]
name = "f"
size = "96M"
large_folios = true
[[task]]
name = "w"
ops = [{ op = "write", file = "f", buffer = "1M" }]
"#;
        let scenario = crate::Scenario::parse_str(toml, "test.toml").unwrap();
        let sets = [
            ("/proc/sys/vm/dirty_bytes".to_string(), "16M".to_string()),
            (
                "/proc/sys/vm/dirty_background_bytes".to_string(),
                "8M".to_string(),
            ),
        ];
        let spec =
            crate::scenario::parse::resolve(&scenario, "v6.18", None, &sets, 1, true).unwrap();
        let mut sim = crate::run::Simulation::start(&spec).unwrap();
        sim.kernel.hw.ssd_bandwidth_bytes_per_s = bw;
        let r = sim.run(&mut |_| {}).unwrap();
        assert_eq!(r.vmstat["nr_dirtied"], 96 << 8);
        r.tasks[0]["exit_ns"].as_u64().unwrap()
    }

    #[test]
    fn a_writer_above_the_dirty_limit_is_throttled_to_the_device_bandwidth() {
        let mib = 1 << 20;
        let slow = throttled_write_ns(200 * mib);
        let fast = throttled_write_ns(400 * mib);
        // Past the freerun ceiling (12 MiB) the writer goes at the disk's pace: the 84 MiB
        // left take about 84 / 200 s, or half as long on a disk twice as fast.
        let expect = 84 * 1_000_000_000 / 200;
        assert!(
            slow > expect * 9 / 10 && slow < expect * 13 / 10,
            "slow {slow} expect {expect}"
        );
        let ratio = slow as f64 / fast as f64;
        assert!((1.7..2.3).contains(&ratio), "{slow} / {fast}");
    }
}
