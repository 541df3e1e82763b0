//! zswap: a compressed cache in front of the swap devices.
//!
//! Models mm/zswap.c (v6.9–v6.18) with its callers in mm/page_io.c: swap_writepage offers the
//! folio to zswap_store before the device (after the zeromap from v6.12), and a folio zswap
//! refuses goes to the device, or stays in memory when its memcg has memory.zswap.writeback=0;
//! swap_read_folio asks zswap_load before the device; a freed swap slot invalidates its entry.
//! zswap_store: the memcg's memory.zswap.max (over it, one entry of the memcg is written back
//! first, as shrink_memcg does), the pool limit with its hysteresis (max_pool_percent of RAM, then
//! refusals until the pool is back to accept_threshold_percent of that; zswap_is_full /
//! zswap_can_accept in v6.9, zswap_check_limits from v6.10), same-filled pages kept as a value up
//! to v6.11, large folios refused before v6.13 and stored page by page, all or nothing, after,
//! pages that do not compress below a page refused (reject_compress_poor) before v6.18 and kept
//! as they are from v6.18. The pool is zsmalloc (mm/zsmalloc.rs: size classes with the handle,
//! zspages of up to 8 pages, objects packed densely), its pages taken from the machine without
//! direct reclaim (a failed page is reject_alloc_fail). The compressed bytes are charged to the
//! folio's memcg (obj_cgroup_charge_zswap, forced, as zswap stores in reclaim). Loads are
//! exclusive for a folio read into the swap cache: the entry is freed and the folio dirtied.
//! The shrink worker is zswap_shrink_work on a kworker of its own CPU: a store refused while the
//! pool is full queues it (queue_work, which does nothing while it is pending, so one run answers
//! every refusal before it starts, and a refusal during a run queues the next one after it). A
//! run walks the memcgs round robin with mem_cgroup_iter, past every memcg of the machine (the
//! scenario's and `host_memcgs` others, dying ones included: a css step costs a DRAM miss, and
//! shrink_memcg's look at an online memcg's list a DRAM miss and the lock), and tries the oldest
//! entry of each (second chance: a referenced entry is rotated once and counts as a failure),
//! until the pool is back under the accept threshold or MAX_RECLAIM_RETRIES walks failed. Its
//! time is its own; a queued run starts when the kworker is free and is played at the first store
//! or load from then. With the VM's other memcgs (15, 3 online) a run takes ~33 us, as the
//! 35.5 us a live workqueue trace showed, so the worker rotates the LRU more slowly than the
//! read-back frees its oldest entries and writes back almost nothing, as the live kernel does.
//! Compression and decompression cost what the zram model's do (lzo, by content class); the
//! compressed length of a data page is LZO1X-1's (mm/lzo1x_compress.rs).
//! Left out: the dynamic shrinker (shrinker_enabled is accepted and played live, not simulated),
//! the kworker's wake-up latency (17 us median on the VM: where runs are short, with few memcgs,
//! the model runs the worker more often than the kernel would), v6.9's walk meeting a dying
//! memcg (it counts a failure and starts again from the root; the model passes the host's dying
//! memcgs in every generation, not knowing where they are in the tree), the folio a writeback
//! allocates in the swap cache (the entry's data goes to the device directly), zsmalloc's
//! fragmentation and compaction, compressors other than lzo / lzo-rle, and several pools after
//! a compressor change.

use std::collections::VecDeque;

use super::folio::{content, pg, FolioId, Pfn};
use super::lzo1x_compress;
use super::memory::Gfp;
use super::swap_device::{same_filled_scan_ns, zram_compress_ns, zram_compressed_bytes};
use super::vmscan::MAX_RECLAIM_RETRIES;
use super::vmstat::{Memcg, Mthp, Vm};
use super::zsmalloc::ZsPool;
use super::{Kernel, TimeKind, PAGE_SIZE};
use crate::scenario::knobs::ZswapCompressor;

/// One stored page (struct zswap_entry), kept in its slot of `SwapInfo::zswap`.
#[derive(Clone, Copy, Debug)]
pub struct ZswapEntry {
    /// Compressed bytes; 0 for a same-filled page kept as a value.
    length: u32,
    memcg: u16,
    /// Second chance: set at store, cleared when the writeback walk passes it once.
    referenced: bool,
    /// Matches the LRU item that stands for this entry (older items are stale).
    seq: u64,
}

/// debugfs /sys/kernel/debug/zswap/*, with the kernel's names.
#[derive(Clone, Copy, Debug, Default)]
pub struct ZswapStat {
    pub pool_limit_hit: u64,
    pub written_back_pages: u64,
    pub reject_reclaim_fail: u64,
    pub reject_compress_fail: u64,
    pub reject_compress_poor: u64,
    pub reject_alloc_fail: u64,
    pub reject_kmemcache_fail: u64,
    pub stored_pages: u64,
    pub same_filled_pages: u64,
    pub stored_incompressible_pages: u64,
}

/// A memcg's zswap usage (memory.stat zswap / zswapped) and the pages of it charged to the memcg.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemcgZswap {
    pub bytes: u64,
    pub pages: u64,
    charged_pages: u64,
}

#[derive(Default)]
pub struct Zswap {
    /// zswap_never_enabled() is false: large-folio swap-in is off for good (v6.12+).
    pub ever_enabled: bool,
    /// Per memcg: the list_lru, oldest first: (device, offset, seq); stale items are skipped.
    lru: Vec<VecDeque<(u32, u32, u64)>>,
    next_seq: u64,
    /// zsmalloc's classes and the objects in them.
    zs: ZsPool,
    /// The pages zsmalloc holds.
    pub pool_pages: Vec<Pfn>,
    /// zswap_pool_reached_full.
    pub reached_full: bool,
    pub stat: ZswapStat,
    pub memcg: Vec<MemcgZswap>,
    /// zswap_shrink_work is queued (WORK_STRUCT_PENDING: queue_work does nothing more), and
    /// the time its run may start: when it was queued, or when the run before it ends.
    shrink_pending: bool,
    shrink_start_ns: u64,
    /// The kworker is busy with a run until then (a run queued meanwhile waits for it).
    shrink_busy_until_ns: u64,
    /// CPU time the shrink worker took.
    pub shrink_worker_ns: u64,
    /// Times the shrink worker ran.
    pub shrink_worker_runs: u64,
    /// The memcg the shrink worker visits next (zswap_next_shrink).
    next_shrink: usize,
}

/// Why shrink_memcg wrote nothing back.
#[derive(Debug, PartialEq, Eq)]
enum ShrinkError {
    /// memory.zswap.writeback is 0.
    WritebackDisabled,
    /// The memcg has no entry.
    Empty,
    /// The entry walked was rotated or could not be written.
    Again,
}

impl MemcgZswap {
    /// Pages of the memcg's page counter that zswap's data holds.
    pub fn charged_pages(&self) -> u64 {
        self.charged_pages
    }
}

impl Zswap {
    pub fn new(enabled: bool, nr_memcgs: usize) -> Zswap {
        Zswap {
            ever_enabled: enabled,
            lru: vec![VecDeque::new(); nr_memcgs],
            memcg: vec![MemcgZswap::default(); nr_memcgs],
            ..Default::default()
        }
    }

    /// Bytes of memory the pool holds (debugfs pool_total_size).
    pub fn pool_total_size(&self) -> u64 {
        self.pool_pages.len() as u64 * PAGE_SIZE
    }
}

impl Kernel {
    /// The entry zswap holds for a slot, if any.
    fn zswap_entry(&self, dev: u32, off: u32) -> Option<&ZswapEntry> {
        self.swap[dev as usize].zswap.get(off as usize)?.as_ref()
    }

    fn totalram_pages(&self) -> u64 {
        self.zones.iter().map(|z| z.managed_pages()).sum()
    }

    /// zswap_max_pages.
    fn zswap_max_pages(&self) -> u64 {
        self.totalram_pages() * self.spec.knobs.zswap_max_pool_percent as u64 / 100
    }

    /// zswap_accept_thr_pages.
    fn zswap_accept_thr_pages(&self) -> u64 {
        self.zswap_max_pages() * self.spec.knobs.zswap_accept_threshold_percent as u64 / 100
    }

    fn zswap_total_pages(&self) -> u64 {
        self.zswap.pool_pages.len() as u64
    }

    /// Is the pool refusing stores? v6.10+ zswap_check_limits: full at the limit, accepting
    /// again at or below the threshold, every check at the limit counted. v6.9: full above the
    /// limit (counted when it becomes full), accepting again strictly below the threshold.
    fn zswap_check_limits(&mut self) -> bool {
        let cur = self.zswap_total_pages();
        let knobs = &self.spec.knobs;
        if self.generation().has_zswap_check_limits() {
            if cur >= self.zswap_max_pages() {
                self.zswap.stat.pool_limit_hit += 1;
                self.zswap.reached_full = true;
            } else if self.zswap.reached_full && cur <= self.zswap_accept_thr_pages() {
                self.zswap.reached_full = false;
            }
            return self.zswap.reached_full;
        }
        let total = self.totalram_pages();
        if self.zswap.reached_full {
            let thr = total * knobs.zswap_accept_threshold_percent as u64 / 100
                * knobs.zswap_max_pool_percent as u64
                / 100;
            if thr > cur {
                self.zswap.reached_full = false;
            } else {
                return true;
            }
        }
        if self.zswap_max_pages() < cur {
            self.zswap.stat.pool_limit_hit += 1;
            self.zswap.reached_full = true;
        }
        self.zswap.reached_full
    }

    /// Is the shrink worker done (zswap_can_accept in v6.9; at or below the threshold after)?
    fn zswap_shrink_done(&self) -> bool {
        let cur = self.zswap_total_pages();
        if self.generation().has_zswap_check_limits() {
            return cur <= self.zswap_accept_thr_pages();
        }
        let knobs = &self.spec.knobs;
        self.totalram_pages() * knobs.zswap_accept_threshold_percent as u64 / 100
            * knobs.zswap_max_pool_percent as u64
            / 100
            > cur
    }

    /// mem_cgroup_zswap_writeback_enabled: off when the memcg (flat under the root here) says 0
    /// (cgroup v1 has no such file: always on).
    pub fn zswap_writeback_enabled(&self, memcg: u16) -> bool {
        memcg == 0
            || self.spec.knobs.memory_cgroup_v1
            || self.spec.scenario.cgroups[memcg as usize - 1].zswap_writeback
    }

    /// obj_cgroup_may_zswap: the memcg's zswap usage is below its memory.zswap.max (always
    /// on cgroup v1).
    fn obj_cgroup_may_zswap(&self, memcg: u16) -> bool {
        if memcg == 0 || self.spec.knobs.memory_cgroup_v1 {
            return true;
        }
        match self.spec.scenario.cgroups[memcg as usize - 1].zswap_max_bytes {
            None => true,
            Some(0) => false,
            Some(max) => self.zswap.memcg[memcg as usize].bytes / PAGE_SIZE < max / PAGE_SIZE,
        }
    }

    /// Frees the entries of slots freed where the kernel struct was out of reach (the swap
    /// allocator's own reclaim), before anything looks at zswap.
    fn zswap_settle(&mut self) {
        for dev in 0..self.swap.len() {
            if self.swap[dev].zswap_freed.is_empty() {
                continue;
            }
            let freed = std::mem::take(&mut self.swap[dev].zswap_freed);
            for &off in &freed {
                self.zswap_entry_free(dev as u32, off);
            }
        }
    }

    /// zswap_entry_free: the pool object, the memcg charge and the counts go.
    fn zswap_entry_free(&mut self, dev: u32, off: u32) {
        let Some(e) = self.swap[dev as usize]
            .zswap
            .get_mut(off as usize)
            .and_then(Option::take)
        else {
            return;
        };
        self.zswap.stat.stored_pages -= 1;
        if e.length == 0 {
            self.zswap.stat.same_filled_pages -= 1;
        } else {
            if e.length as u64 == PAGE_SIZE {
                self.zswap.stat.stored_incompressible_pages -= 1;
            }
            let class = self.zswap.zs.class_of(e.length as u64);
            let freed = self.zswap.zs.remove(class);
            self.zswap_pool_free_pages(freed);
        }
        self.obj_cgroup_uncharge_zswap(e.memcg, e.length as u64);
    }

    /// zswap_invalidate: the slot was freed.
    pub fn zswap_invalidate(&mut self, dev: u32, off: u32) {
        if self.zswap.ever_enabled {
            self.zswap_settle();
            self.zswap_entry_free(dev, off);
        }
    }

    /// obj_cgroup_charge_zswap: charged even over memory.max (reclaim context, PF_MEMALLOC);
    /// the page counter moves by whole pages as the bytes cross them (the object stock). The
    /// memcg's zswap figures are kept on cgroup v1 too, where nothing is charged.
    fn obj_cgroup_charge_zswap(&mut self, memcg: u16, length: u64) {
        let z = &mut self.zswap.memcg[memcg as usize];
        z.bytes += length;
        z.pages += 1;
        if self.spec.knobs.memory_cgroup_v1 {
            // cgroup v1: zswap's memory is charged to no memcg
            return;
        }
        let pages = z.bytes.div_ceil(PAGE_SIZE);
        if pages > z.charged_pages {
            let more = pages - z.charged_pages;
            z.charged_pages = pages;
            let cg = &mut self.memcgs[memcg as usize];
            cg.usage_pages += more;
            cg.note_footprint();
        }
    }

    fn obj_cgroup_uncharge_zswap(&mut self, memcg: u16, length: u64) {
        let z = &mut self.zswap.memcg[memcg as usize];
        z.bytes -= length;
        z.pages -= 1;
        let pages = z.bytes.div_ceil(PAGE_SIZE);
        if pages < z.charged_pages {
            let fewer = z.charged_pages - pages;
            z.charged_pages = pages;
            self.memcgs[memcg as usize].usage_pages -= fewer;
        }
    }

    /// zsmalloc gives back the pages of a zspage that became empty.
    fn zswap_pool_free_pages(&mut self, pages: u32) {
        for _ in 0..pages {
            let pfn = self
                .zswap
                .pool_pages
                .pop()
                .expect("the pool holds the zspage");
            self.mem.clear_folio(pfn);
            self.free_pages(pfn, 0);
        }
    }

    /// zs_malloc of an object of `length` bytes: a full class first gets a new zspage, its
    /// pages allocated one by one without direct reclaim (zswap's __GFP_NORETRY |
    /// __GFP_KSWAPD_RECLAIM). False when a page cannot be had (the zspage's others go back).
    fn zswap_pool_alloc(&mut self, length: u64) -> bool {
        let class = self.zswap.zs.class_of(length);
        let pages = self.zswap.zs.pages_to_add(class);
        let gfp = Gfp {
            direct_reclaim: false,
            kswapd_reclaim: true,
            retry: false,
            noretry: false,
        };
        for got in 0..pages {
            let node = self.task_node();
            let Some(pfn) = self.alloc_pages(node, 0, gfp) else {
                self.zswap_pool_free_pages(got);
                return false;
            };
            self.mem.prep_folio(pfn, 0, 0, 0, 0);
            self.zswap.pool_pages.push(pfn);
        }
        self.zswap.zs.add(class);
        true
    }

    /// zswap_store from swap_writepage: true when zswap took the whole folio; otherwise any
    /// older entry of its slots is dropped (check_old) and the folio goes on to the device.
    pub fn zswap_store(&mut self, folio: FolioId) -> bool {
        self.zswap_settle();
        let (dev, off) = self.folio_swap_entry(folio);
        let nr = self.mem.nr_pages(folio);
        self.zswap_run_shrink_work();
        let stored = self.zswap_store_folio(folio, dev, off, nr);
        if !stored {
            if self.zswap.reached_full {
                self.zswap_queue_shrink();
            }
            for s in off..off + nr {
                self.zswap_entry_free(dev, s);
            }
        }
        stored
    }

    fn zswap_store_folio(&mut self, folio: FolioId, dev: u32, off: u32, nr: u32) -> bool {
        if nr > 1 && !self.generation().zswap_stores_large_folios() {
            return false;
        }
        if !self.spec.knobs.zswap_enabled {
            return false;
        }
        let memcg = self.mem.memcg(folio);
        if !self.obj_cgroup_may_zswap(memcg) && self.shrink_memcg(memcg).is_err() {
            return false;
        }
        if self.zswap_check_limits() {
            return false;
        }
        for i in 0..nr {
            if !self.zswap_store_page(folio + i, dev, off + i, memcg) {
                return false;
            }
        }
        self.stat.count(Vm::Zswpout, nr as u64);
        self.memcgs[memcg as usize].count(Memcg::Zswpout, nr as u64);
        if nr > 1 && self.generation().counts_mthp_zswpout() {
            self.stat.count_mthp(self.mem.order(folio), Mthp::Zswpout);
        }
        true
    }

    /// The compressor's output for a page of content class `c`: LZO1X-1's (or lzo-rle's) for a
    /// data class (mm/lzo1x_compress.rs); the zram model's estimate for the zero, same-filled
    /// and sparse classes.
    fn zswap_compressed_bytes(&self, c: u8) -> u64 {
        if c <= content::SPARSE_TAIL {
            return zram_compressed_bytes(c);
        }
        let rle = self.spec.knobs.zswap_compressor == ZswapCompressor::LzoRle;
        lzo1x_compress::compressed_bytes(lzo1x_compress::random_bytes(c), rle) as u64
    }

    /// One page: same-filled value (up to v6.11), or compressed into the pool.
    fn zswap_store_page(&mut self, page: Pfn, dev: u32, off: u32, memcg: u16) -> bool {
        let c = self.mem.pages[page as usize].content;
        let gen = self.generation();
        let mut length = 0;
        if gen.zswap_stores_same_filled_pages() {
            self.spend(TimeKind::ZeroCheck, same_filled_scan_ns(&self.hw, c));
        }
        let same_filled = gen.zswap_stores_same_filled_pages() && c <= content::SAME_FILLED;
        if !same_filled {
            self.spend(
                TimeKind::Compression,
                zram_compress_ns(self.hw.zram_compress_ns, c),
            );
            let dlen = self.zswap_compressed_bytes(c);
            length = dlen;
            if dlen >= PAGE_SIZE && gen.zswap_stores_incompressible_pages() {
                if !self.zswap_writeback_enabled(memcg) {
                    self.zswap.stat.reject_compress_fail += 1;
                    return false;
                }
                length = PAGE_SIZE;
            } else if dlen > PAGE_SIZE {
                // zs_malloc refuses an object larger than a page (-ENOSPC).
                self.zswap.stat.reject_compress_poor += 1;
                return false;
            }
            if !self.zswap_pool_alloc(length) {
                self.zswap.stat.reject_alloc_fail += 1;
                return false;
            }
        }
        // An older entry of the slot (a folio stored again) is replaced.
        self.zswap_entry_free(dev, off);
        let seq = self.zswap.next_seq;
        self.zswap.next_seq += 1;
        self.swap[dev as usize].zswap[off as usize] = Some(ZswapEntry {
            length: length as u32,
            memcg,
            referenced: true,
            seq,
        });
        self.zswap.stat.stored_pages += 1;
        if length == 0 {
            self.zswap.stat.same_filled_pages += 1;
        } else {
            self.zswap.lru[memcg as usize].push_back((dev, off, seq));
            self.zswap_lru_compact(memcg);
            if length == PAGE_SIZE {
                self.zswap.stat.stored_incompressible_pages += 1;
            }
        }
        self.obj_cgroup_charge_zswap(memcg, length);
        true
    }

    /// Drops stale LRU items once they outnumber the live ones (the kernel unlinks at free).
    fn zswap_lru_compact(&mut self, memcg: u16) {
        let live = self.zswap.memcg[memcg as usize].pages as usize;
        let lru = &self.zswap.lru[memcg as usize];
        if lru.len() < 2 * live + 1024 {
            return;
        }
        let swap = &self.swap;
        self.zswap.lru[memcg as usize].retain(|&(d, o, seq)| {
            swap[d as usize].zswap[o as usize].is_some_and(|e| e.seq == seq && e.length > 0)
        });
    }

    /// zswap_load from swap_read_folio: true when zswap held the page. A folio read into the
    /// swap cache takes the entry over (it is freed and the folio dirtied).
    pub fn zswap_load(&mut self, folio: FolioId, dev: u32, off: u32) -> bool {
        if !self.zswap.ever_enabled {
            return false;
        }
        self.zswap_settle();
        self.zswap_run_shrink_work();
        let Some(&e) = self.zswap_entry(dev, off) else {
            return false;
        };
        debug_assert_eq!(self.mem.nr_pages(folio), 1, "no large swap-in with zswap");
        let ns = match e.length as u64 {
            0 | PAGE_SIZE => self.hw.zram_same_page_ns,
            _ => self.hw.zram_decompress_ns,
        };
        self.spend(TimeKind::Compression, ns);
        self.stat.count(Vm::Zswpin, 1);
        self.memcgs[e.memcg as usize].count(Memcg::Zswpin, 1);
        if self.mem.test(folio, pg::SWAPCACHE) {
            self.zswap_entry_free(dev, off);
            self.mem.set(folio, pg::DIRTY);
        }
        true
    }

    /// queue_work(shrink_wq, &zswap_shrink_work): nothing while the work is pending (one run
    /// answers every refusal queued before it starts); otherwise it is pending from now, to run
    /// when the kworker is free. The kworker runs on another CPU (the storing task goes on).
    fn zswap_queue_shrink(&mut self) {
        if self.zswap.shrink_pending {
            return;
        }
        self.zswap.shrink_pending = true;
        self.zswap.shrink_start_ns = self.clock_ns.max(self.zswap.shrink_busy_until_ns);
    }

    /// The kworker's run of zswap_shrink_work, once its start time has come: played at the next
    /// store or load at or after it (the pool changes only there). Its time is its own: the
    /// storing task's clock and breakdown are restored; the run keeps the kworker busy, so
    /// refusals during it queue the next run after it (the pending bit is cleared as it starts).
    fn zswap_run_shrink_work(&mut self) {
        if !self.zswap.shrink_pending || self.clock_ns < self.zswap.shrink_start_ns {
            return;
        }
        self.zswap.shrink_pending = false;
        let clock_ns = self.clock_ns;
        let time = self
            .tasks
            .get(self.current as usize)
            .map(|t| t.time.clone());
        self.zswap_shrink_worker();
        let run_ns = self.clock_ns - clock_ns;
        self.zswap.shrink_busy_until_ns = self.zswap.shrink_start_ns + run_ns;
        self.zswap.shrink_worker_ns += run_ns;
        self.zswap.shrink_worker_runs += 1;
        self.clock_ns = clock_ns;
        if let Some(time) = time {
            self.tasks[self.current as usize].time = time;
        }
    }

    /// One step of the worker's mem_cgroup_iter walk: a css of the hierarchy reached and tried
    /// (css_next_descendant_pre, css_tryget, mem_cgroup_tryget_online), a pointer chase to a
    /// css that is cold by the time the walk comes round: one DRAM miss.
    fn zswap_memcg_iter_step(&mut self, steps: u64) {
        self.spend(TimeKind::Lru, steps * self.hw.dram_read_latency_ns);
    }

    /// shrink_memcg's look at a memcg's list: its list_lru_one (an xarray load, a DRAM miss)
    /// and the list's lock taken and dropped.
    fn zswap_lru_lookup_ns(&self) -> u64 {
        self.hw.dram_read_latency_ns + self.hw.lru_op_ns
    }

    /// shrink_memcg: one step of the memcg's LRU walk (nr_to_walk = 1): the oldest entry is
    /// rotated if referenced, else written back.
    fn shrink_memcg(&mut self, memcg: u16) -> Result<(), ShrinkError> {
        if !self.zswap_writeback_enabled(memcg) {
            return Err(ShrinkError::WritebackDisabled);
        }
        self.zswap_settle();
        self.spend(TimeKind::Lru, self.zswap_lru_lookup_ns());
        loop {
            let Some((dev, off, seq)) = self.zswap.lru[memcg as usize].pop_front() else {
                return Err(ShrinkError::Empty);
            };
            let Some(Some(e)) = self.swap[dev as usize].zswap.get_mut(off as usize) else {
                continue;
            };
            if e.seq != seq {
                continue;
            }
            // list_lru_walk_one: the list lock and the move to the tail, either way
            self.spend(TimeKind::Lru, self.hw.lru_op_ns);
            if std::mem::take(
                &mut self.swap[dev as usize].zswap[off as usize]
                    .as_mut()
                    .expect("checked above")
                    .referenced,
            ) {
                self.zswap.lru[memcg as usize].push_back((dev, off, seq));
                return Err(ShrinkError::Again);
            }
            if self.zswap_writeback_entry(dev, off) {
                return Ok(());
            }
            self.zswap.stat.reject_reclaim_fail += 1;
            self.zswap.lru[memcg as usize].push_back((dev, off, seq));
            return Err(ShrinkError::Again);
        }
    }

    /// zswap_writeback_entry: decompress and write to the device; refused when a folio already
    /// caches the slot (-EEXIST).
    fn zswap_writeback_entry(&mut self, dev: u32, off: u32) -> bool {
        if self.swap_cache_lookup(dev, off).is_some() {
            return false;
        }
        let e = *self.zswap_entry(dev, off).expect("the LRU item's entry");
        let ns = match e.length as u64 {
            PAGE_SIZE => self.hw.zram_same_page_ns,
            _ => self.hw.zram_decompress_ns,
        };
        self.spend(TimeKind::Compression, ns);
        self.zswap_entry_free(dev, off);
        self.stat.count(Vm::Zswpwb, 1);
        self.memcgs[e.memcg as usize].count(Memcg::Zswpwb, 1);
        self.zswap.stat.written_back_pages += 1;
        // __swap_writepage
        self.stat.count(Vm::Pswpout, 1);
        self.memcgs[e.memcg as usize].count(Memcg::Pswpout, 1);
        if self.generation().counts_per_size_swpout() {
            self.stat.count_mthp(0, Mthp::Swpout);
        }
        self.swap_device_write(dev, off, 1);
        true
    }

    /// shrink_worker: memcgs round robin (the root included), one entry each, until the pool is
    /// under the accept threshold; MAX_RECLAIM_RETRIES failed walks (a full round counts as
    /// one from v6.12 only when nothing was tried in it) end it early.
    fn zswap_shrink_worker(&mut self) {
        let mut failures = 0;
        let mut attempts = 0;
        let nr_memcgs = self.memcgs.len();
        let counts_empty = !self.generation().has_zswap_check_limits();
        // the machine's memcgs outside the scenario (other services', dying ones): the walk
        // passes them on each round trip, none holds an entry of this run's; the online ones get
        // a shrink_memcg call that finds their LRU empty
        let other_memcgs = self.spec.knobs.host_memcgs as u64;
        let other_online = (self.spec.knobs.host_memcgs_online as u64).min(other_memcgs);
        loop {
            if self.zswap.next_shrink == nr_memcgs {
                // mem_cgroup_iter returned NULL: a round trip.
                self.zswap_memcg_iter_step(other_memcgs + 1);
                self.spend(TimeKind::Lru, other_online * self.zswap_lru_lookup_ns());
                self.zswap.next_shrink = 0;
                if (counts_empty || attempts == 0) && {
                    failures += 1;
                    failures == MAX_RECLAIM_RETRIES
                } {
                    break;
                }
                attempts = 0;
            } else {
                let memcg = self.zswap.next_shrink as u16;
                self.zswap.next_shrink += 1;
                self.zswap_memcg_iter_step(1);
                match self.shrink_memcg(memcg) {
                    Ok(()) => attempts += 1,
                    Err(ShrinkError::WritebackDisabled) if counts_empty => break,
                    Err(ShrinkError::WritebackDisabled | ShrinkError::Empty) if !counts_empty => {
                        continue
                    }
                    Err(_) => {
                        attempts += 1;
                        failures += 1;
                        if failures == MAX_RECLAIM_RETRIES {
                            break;
                        }
                    }
                }
            }
            if self.zswap_shrink_done() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::pagetable as pt;
    use crate::mm::vmscan::ScanControl;

    /// A 64 MiB machine (16,384 pages: a 1% pool is 163 pages, its 90% threshold 146) with a
    /// zram device, zswap on, and the user task's mm. `extra` adds knobs and a cgroup.
    fn boot(profile: &str, knobs: &str, cgroup: &str) -> (Kernel, u32) {
        let toml = format!(
            r#"
name = "t"
[[machine.node]]
memory = "64M"
cpus = 1
[[swap]]
name = "z"
kind = "zram"
size = "64M"
{cgroup}
[knobs]
"/sys/kernel/mm/transparent_hugepage/enabled" = "never"
"/sys/module/zswap/parameters/enabled" = "Y"
"/sys/module/zswap/parameters/max_pool_percent" = "1"
{knobs}
[[task]]
name = "t"
{task_cgroup}
ops = [{{ op = "mmap", region = "a", size = "4M" }}]
"#,
            task_cgroup = if cgroup.is_empty() {
                ""
            } else {
                "cgroup = \"bench\""
            },
        );
        let (k, t) = crate::mm::boot_for_test(&toml, profile);
        let mm = k.tasks[t as usize].mm.expect("user mm");
        (k, mm)
    }

    /// Writes `nr` pages of content class `data` into a new mapping; returns its first page.
    fn write_pages(k: &mut Kernel, mm: u32, nr: u32, data: u8) -> u32 {
        let start = k.mmap_anon(mm, nr);
        for i in 0..nr {
            k.touch(mm, start + i, true, data).unwrap();
        }
        start
    }

    fn folio_at(k: &Kernel, mm: u32, vpn: u32) -> FolioId {
        let vi = k.mms[mm as usize].find_vma(vpn).unwrap();
        let v = &k.mms[mm as usize].vmas[vi];
        let pte = v.ptes[(vpn - v.start) as usize];
        assert!(pt::is_present(pte));
        k.mem.head_of(pt::pfn(pte))
    }

    fn swap_entry_at(k: &Kernel, mm: u32, vpn: u32) -> (u32, u32) {
        let vi = k.mms[mm as usize].find_vma(vpn).unwrap();
        let v = &k.mms[mm as usize].vmas[vi];
        let pte = v.ptes[(vpn - v.start) as usize];
        assert!(pt::is_swap(pte));
        (pt::swap_device(pte), pt::swap_offset(pte))
    }

    /// Reclaims the folio mapping `vpn` as shrink_folio_list would after isolating it.
    fn reclaim(k: &mut Kernel, mm: u32, vpn: u32) -> u64 {
        let folio = folio_at(k, mm, vpn);
        k.lru_add_drain();
        k.lruvec_del_folio(folio);
        let mut sc = ScanControl::new(32, false);
        sc.ignore_references = true;
        k.shrink_folio_list(&mut vec![folio], &mut sc)
    }

    #[test]
    fn a_full_pool_refuses_stores_until_it_is_back_under_the_accept_threshold() {
        let (mut k, mm) = boot("v6.18", "", "");
        let (max, thr) = (k.zswap_max_pages(), k.zswap_accept_thr_pages());
        assert_eq!((max, thr), (163, 146));
        let start = write_pages(&mut k, mm, 600, 128);
        // Half-compressible pages (2,213 bytes with lzo): zsmalloc's 2,224-byte class, 11 in a
        // zspage of 6 pages; the pool grows a zspage at a time.
        let mut stored = Vec::new();
        let mut vpn = start;
        while k.zswap_total_pages() < max {
            reclaim(&mut k, mm, vpn);
            stored.push(swap_entry_at(&k, mm, vpn));
            vpn += 1;
        }
        assert_eq!(k.stat.get(Vm::Zswpout), stored.len() as u64);
        assert_eq!(k.stat.get(Vm::Pswpout), 0);
        assert_eq!(k.zswap.stat.pool_limit_hit, 0);
        // At the limit: the next folio is refused and goes to the device.
        reclaim(&mut k, mm, vpn);
        let (dev, off) = swap_entry_at(&k, mm, vpn);
        vpn += 1;
        assert!(!k.zswap_entry(dev, off).is_some());
        assert_eq!(k.zswap.stat.pool_limit_hit, 1);
        assert_eq!(k.stat.get(Vm::Pswpout), 1);
        // The shrink work is queued, to run on the kworker: nothing written back yet.
        assert_eq!(k.stat.get(Vm::Zswpwb), 0);
        assert!(k.zswap.shrink_pending);
        assert!(k.zswap.reached_full);
        // Below the limit but above the threshold: still refused (not counted as a limit hit).
        let mut freed = stored.iter();
        while k.zswap_total_pages() >= max {
            let &(d, o) = freed.next().unwrap();
            k.zswap_invalidate(d, o);
        }
        assert!(k.zswap_total_pages() > thr);
        reclaim(&mut k, mm, vpn);
        vpn += 1;
        assert_eq!(k.stat.get(Vm::Pswpout), 2);
        assert_eq!(k.zswap.stat.pool_limit_hit, 1);
        // The worker ran before that store: it only gave the oldest entries their second chance.
        assert_eq!(k.zswap.shrink_worker_runs, 1);
        assert_eq!(k.stat.get(Vm::Zswpwb), 0);
        // At the threshold: accepted again.
        while k.zswap_total_pages() > thr {
            let &(d, o) = freed.next().unwrap();
            k.zswap_invalidate(d, o);
        }
        let zswpout = k.stat.get(Vm::Zswpout);
        reclaim(&mut k, mm, vpn);
        assert_eq!(k.stat.get(Vm::Zswpout), zswpout + 1);
        assert_eq!(k.stat.get(Vm::Pswpout), 2);
        assert!(!k.zswap.reached_full);
        assert_consistent(&k);
    }

    fn assert_consistent(k: &Kernel) {
        let v = crate::check::check(k);
        assert!(v.is_empty(), "{v:?}");
    }

    /// Fills the pool to its limit; returns the next page to reclaim.
    fn fill_pool(k: &mut Kernel, mm: u32, start: u32) -> u32 {
        let mut vpn = start;
        while k.zswap_total_pages() < k.zswap_max_pages() {
            reclaim(k, mm, vpn);
            vpn += 1;
        }
        vpn
    }

    #[test]
    fn refusals_while_the_shrink_work_is_pending_or_running_make_one_run() {
        // 400 memcgs elsewhere on the machine: each run walks past them 16 times (16 x 401 css
        // steps at 90 ns, ~0.6 ms), far longer than a refused swap-out takes.
        let (mut k, mm) = boot("v6.18", "\"host_memcgs\" = \"400\"", "");
        let start = write_pages(&mut k, mm, 1000, 128);
        let mut vpn = fill_pool(&mut k, mm, start);
        for _ in 0..100 {
            reclaim(&mut k, mm, vpn);
            vpn += 1;
        }
        assert_eq!(k.stat.get(Vm::Pswpout), 100);
        // Queued at the first refusal, run at the next store; every refusal during that run
        // queued one more, which the next store after the run's end played: a run per ~0.6 ms,
        // not one per refusal.
        let runs = k.zswap.shrink_worker_runs;
        assert!((2..20).contains(&runs), "{runs} runs for 100 refusals");
        // Each run gave 16 entries their second chance (MAX_RECLAIM_RETRIES failures), but
        // one: a run after the first starts at the end of a round trip, with nothing tried yet,
        // which counts as a failure.
        let rotated = k.swap[0]
            .zswap
            .iter()
            .flatten()
            .filter(|e| !e.referenced)
            .count() as u64;
        assert_eq!(rotated, 16 * runs - (runs - 1));
        assert_eq!(k.stat.get(Vm::Zswpwb), 0);
    }

    #[test]
    fn a_run_walks_past_every_memcg_of_the_machine() {
        let mut run_ns = Vec::new();
        for (host_memcgs, online) in [(0, 0), (100, 0), (100, 10)] {
            let knob = format!(
                "\"host_memcgs\" = \"{host_memcgs}\"\n\"host_memcgs_online\" = \"{online}\""
            );
            let (mut k, mm) = boot("v6.18", &knob, "");
            let start = write_pages(&mut k, mm, 1000, 128);
            let vpn = fill_pool(&mut k, mm, start);
            reclaim(&mut k, mm, vpn);
            reclaim(&mut k, mm, vpn + 1);
            assert_eq!(k.zswap.shrink_worker_runs, 1);
            run_ns.push(k.zswap.shrink_worker_ns);
        }
        // 16 failed walks of the root's LRU, with a round trip past the other memcgs between
        // each two: 15 x 100 more css steps of a DRAM miss (90 ns on x86-server)
        assert_eq!(run_ns[1] - run_ns[0], 15 * 100 * 90);
        // and the online ones get a look at their (empty) list: an xarray load and the lock
        assert_eq!(run_ns[2] - run_ns[1], 15 * 10 * (90 + 30));
    }

    #[test]
    fn the_shrink_worker_writes_back_the_oldest_entries_after_their_second_chance() {
        let (mut k, mm) = boot("v6.18", "", "");
        let start = write_pages(&mut k, mm, 1200, 128);
        let mut vpn = start;
        // Keep swapping out until the worker has turned over the whole LRU and written back.
        while k.stat.get(Vm::Zswpwb) == 0 {
            reclaim(&mut k, mm, vpn);
            vpn += 1;
            assert!(vpn < start + 1200, "no writeback");
        }
        // The first page stored was the first written back, to the device.
        let (dev, off) = swap_entry_at(&k, mm, start);
        assert!(!k.zswap_entry(dev, off).is_some());
        assert_eq!(k.zswap.stat.written_back_pages, k.stat.get(Vm::Zswpwb));
        // back to the threshold, give or take the zspage the store after the run took
        let zspage = k.zswap.zs.class(k.zswap.zs.class_of(2213)).pages_per_zspage as u64;
        assert!(k.zswap_total_pages() <= k.zswap_accept_thr_pages() + zspage);
        // Reading it back comes from the device; a page still in zswap comes from zswap.
        let (pswpin, zswpin) = (k.stat.get(Vm::Pswpin), k.stat.get(Vm::Zswpin));
        k.touch(mm, start, false, 0).unwrap();
        assert_eq!(k.stat.get(Vm::Pswpin), pswpin + 1);
        let in_zswap = (start..vpn)
            .rev()
            .find(|&p| {
                let (d, o) = swap_entry_at(&k, mm, p);
                k.zswap_entry(d, o).is_some()
            })
            .expect("a page still in zswap");
        let (dev, off) = swap_entry_at(&k, mm, in_zswap);
        k.touch(mm, in_zswap, false, 0).unwrap();
        assert_eq!(k.stat.get(Vm::Zswpin), zswpin + 1);
        // The slot was freed after the load: so was its entry.
        assert!(!k.zswap_entry(dev, off).is_some());
    }

    #[test]
    fn large_folios_are_stored_whole_from_v6_13_and_refused_before() {
        let knobs = r#""/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled" = "always""#;
        for (profile, stored) in [("v6.10", false), ("v6.12", false), ("v6.18", true)] {
            let (mut k, mm) = boot(profile, knobs, "");
            let start = write_pages(&mut k, mm, 16, 128);
            assert_eq!(k.mem.order(folio_at(&k, mm, start)), 4, "{profile}");
            reclaim(&mut k, mm, start);
            let (zswpout, pswpout) = (k.stat.get(Vm::Zswpout), k.stat.get(Vm::Pswpout));
            if stored {
                assert_eq!((zswpout, pswpout), (16, 0), "{profile}");
                assert_eq!(k.stat.mthp[4][Mthp::Zswpout as usize], 1);
            } else {
                assert_eq!((zswpout, pswpout), (0, 16), "{profile}");
                assert_eq!(k.stat.mthp[4][Mthp::Swpout as usize], 1);
            }
        }
    }

    #[test]
    fn same_filled_pages_are_values_up_to_v6_11_and_zero_pages_go_to_the_zeromap_after() {
        // v6.10: a zero and a same-filled page are both kept as values, without pool memory.
        let (mut k, mm) = boot("v6.10", "", "");
        let start = write_pages(&mut k, mm, 2, content::SAME_FILLED);
        k.touch(mm, start, true, content::ZERO).unwrap();
        reclaim(&mut k, mm, start);
        reclaim(&mut k, mm, start + 1);
        assert_eq!(k.stat.get(Vm::Zswpout), 2);
        assert_eq!(k.zswap.stat.same_filled_pages, 2);
        assert_eq!(k.zswap.pool_total_size(), 0);
        // v6.12: the zero page never reaches zswap; the same-filled one is compressed.
        let (mut k, mm) = boot("v6.12", "", "");
        let start = write_pages(&mut k, mm, 2, content::SAME_FILLED);
        k.touch(mm, start, true, content::ZERO).unwrap();
        reclaim(&mut k, mm, start);
        reclaim(&mut k, mm, start + 1);
        assert_eq!(k.stat.get(Vm::Zswpout), 1);
        assert_eq!(k.stat.get(Vm::Pswpout), 0);
        assert_eq!(k.zswap.stat.same_filled_pages, 0);
        assert_eq!(k.zswap.stat.stored_pages, 1);
        // a 64-byte object: the pool's first zspage of its class (80 bytes, 5 pages)
        let class = k.zswap.zs.class(k.zswap.zs.class_of(64));
        assert_eq!(class.pages_per_zspage, 5);
        assert_eq!(k.zswap.pool_total_size(), 5 * PAGE_SIZE);
    }

    #[test]
    fn incompressible_pages_are_refused_before_v6_18_and_kept_as_they_are_after() {
        let (mut k, mm) = boot("v6.12", "", "");
        let start = write_pages(&mut k, mm, 1, u8::MAX);
        reclaim(&mut k, mm, start);
        assert_eq!(k.zswap.stat.reject_compress_poor, 1);
        assert_eq!(k.stat.get(Vm::Pswpout), 1);
        let (mut k, mm) = boot("v6.18", "", "");
        let start = write_pages(&mut k, mm, 1, u8::MAX);
        reclaim(&mut k, mm, start);
        assert_eq!(k.zswap.stat.stored_incompressible_pages, 1);
        assert_eq!(k.stat.get(Vm::Zswpout), 1);
        assert_eq!(k.zswap.pool_total_size(), PAGE_SIZE);
    }

    #[test]
    fn without_memcg_writeback_refused_folios_stay_in_memory_and_nothing_is_written_back() {
        let cgroup = "[[cgroup]]\nname = \"bench\"\n\"memory.zswap.writeback\" = 0";
        let (mut k, mm) = boot("v6.18", "", cgroup);
        let start = write_pages(&mut k, mm, 1000, 128);
        let max = k.zswap_max_pages();
        let mut vpn = start;
        while k.zswap_total_pages() < max {
            assert_eq!(reclaim(&mut k, mm, vpn), 1);
            vpn += 1;
        }
        // Refused at the limit again and again: each folio is kept (activated), none reaches the
        // device, and the shrink worker writes nothing back however often it is queued.
        for _ in 0..100 {
            assert_eq!(reclaim(&mut k, mm, vpn), 0);
            // unmapped, in the swap cache, on the active list
            let (dev, off) = swap_entry_at(&k, mm, vpn);
            let (folio, _) = k
                .swap_cache_lookup(dev, off)
                .expect("kept in the swap cache");
            assert!(k.mem.test(folio, pg::ACTIVE) && k.mem.test(folio, pg::DIRTY));
            vpn += 1;
        }
        assert_eq!(k.stat.get(Vm::Pswpout), 0);
        assert_eq!(k.stat.get(Vm::Zswpwb), 0);
        // The compressed pages are charged to the memcg (cgroup v2), as whole pages.
        let z = k.zswap.memcg[1];
        assert_eq!(z.bytes, z.pages * 2213, "{z:?}");
        assert_eq!(z.charged_pages(), z.bytes.div_ceil(PAGE_SIZE));
        assert_consistent(&k);
    }

    #[test]
    fn a_memcg_at_its_zswap_max_is_refused() {
        let cgroup = "[[cgroup]]\nname = \"bench\"\n\"memory.zswap.max\" = 0";
        let (mut k, mm) = boot("v6.18", "", cgroup);
        let start = write_pages(&mut k, mm, 4, 128);
        for i in 0..4 {
            reclaim(&mut k, mm, start + i);
        }
        assert_eq!(k.stat.get(Vm::Zswpout), 0);
        assert_eq!(k.stat.get(Vm::Pswpout), 4);
    }

    #[test]
    fn on_cgroup_v1_zswap_charges_no_memcg_and_has_no_zswap_max() {
        let cgroup = "[[cgroup]]\nname = \"bench\"\n\"memory.zswap.max\" = 0";
        let (mut k, mm) = boot("v6.18", "\"memory_cgroup_v1\" = \"1\"", cgroup);
        let start = write_pages(&mut k, mm, 8, 128);
        let usage = k.memcgs[1].usage_pages;
        for i in 0..8 {
            reclaim(&mut k, mm, start + i);
        }
        assert_eq!(k.stat.get(Vm::Zswpout), 8);
        assert_eq!(k.memcgs[1].usage_pages + 8, usage);
        assert_eq!(k.zswap.memcg[1].charged_pages(), 0);
        assert_consistent(&k);
    }

    #[test]
    fn bad_zswap_settings_name_their_key() {
        let base = "name = \"t\"\n[[machine.node]]\nmemory = \"1G\"\ncpus = 1\n[[task]]\nname = \"t\"\nops = [{ op = \"mmap\", region = \"a\", size = \"4M\" }]\n";
        for (extra, key) in [
            (
                "[knobs]\n\"/sys/module/zswap/parameters/compressor\" = \"zstd\"\n",
                "compressor",
            ),
            (
                "[knobs]\n\"/sys/module/zswap/parameters/max_pool_percent\" = \"101\"\n",
                "max_pool_percent",
            ),
            (
                "[knobs]\n\"/sys/module/zswap/parameters/enabled\" = \"yes\"\n",
                "enabled",
            ),
            (
                "[[cgroup]]\nname = \"b\"\n\"memory.zswap.writeback\" = 2\n",
                "memory.zswap.writeback",
            ),
            (
                "[[cgroup]]\nname = \"b\"\n\"memory.zswap.max\" = \"lots\"\n",
                "memory.zswap.max",
            ),
        ] {
            let err = crate::Scenario::parse_str(&format!("{base}{extra}"), "t.toml")
                .err()
                .unwrap_or_else(|| panic!("accepted {extra}"));
            assert!(err.to_string().contains(key), "{err}");
        }
    }
}
