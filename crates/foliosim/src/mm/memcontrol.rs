//! Memory cgroups: charging with `memory.max` through the per-CPU charge stock, reclaim of the
//! cgroup's own LRUs when a charge would exceed it, and the memcg OOM killer.
//!
//! Models mm/memcontrol.c try_charge_memcg (v6.9–v6.18): a charge of up to MEMCG_CHARGE_BATCH
//! pages is first taken from this CPU's stock without looking at the limit; otherwise the counter
//! is charged a whole batch and the rest refills the stock, then just the pages asked for; a
//! charge that cannot block fails at once; otherwise reclaim (try_to_free_mem_cgroup_pages), drain
//! every CPU's stock once, and retry; then a __GFP_NORETRY charge (readahead, large page-cache
//! folios) fails; others retry unconditionally while reclaim makes progress for orders up to
//! PAGE_ALLOC_COSTLY_ORDER, else up to MAX_RECLAIM_RETRIES times, then OOM. The stock holds one
//! memcg per CPU before v6.16 and NR_MEMCG_STOCK from v6.16 ("memcg: multi-memcg percpu charge
//! cache"). When other tasks share the memcg, an anonymous fault's order-0 charge that must
//! reclaim does so before the fault, a priority pass at a time with other tasks running between
//! (`reclaim_before_fault`), so that tasks reaching the limit together reclaim together, as they
//! do live; other charges, and a task alone in its memcg, reclaim inside the fault. Cgroups are
//! flat under the root (id 0, unlimited, never stocked).
//! Left out: drain_all_stock runs every CPU's drain at once (the kernel queues work on the other
//! CPUs), memory.high/low/min protection, swap.max, kernel memory other than page tables
//! (mm/pgalloc.rs charges those through try_charge) and the object stocks, hierarchy beyond one
//! level, and reclaimers taking turns at each SWAP_CLUSTER_MAX batch (here at each priority
//! pass, which at low priorities is a large part of the list). Uncharges go straight to the
//! counter, but a page table's, which refills the stock.
//!
//! Statistics (v6.8+ rstat with flush thresholds): what reclaim and refault detection read of a
//! memcg's lruvec (lruvec_page_state: the LRU sizes and the workingset activations) is the state
//! as of the last flush, hierarchical; flush_memcg_stats_dwork flushes every FLUSH_TIME (2 s) and
//! the ratelimited flush in reclaim and workingset_refault only when it is a whole period late,
//! so those decisions see numbers up to 2 s old. The flusher's phase against the workload is
//! drawn from the seed, or given by `memcg_stats_flush_first_us` (live it is the phase of a
//! 2 s timer against the program's start, which `kernel-run` reports from the memcg_flush_stats
//! tracepoint). Left out: flushes by
//! readers of memory.stat and the flush-on-threshold of other callers; the flush is taken at the
//! first read after it is due rather than at its exact time.

use super::folio::FolioId;
use super::memory::Gfp;
use super::vmscan::{ScanControl, MAX_RECLAIM_RETRIES};
use super::vmstat::Memcg;
use super::Kernel;
use crate::scenario::RunSpec;

const PAGE_ALLOC_COSTLY_ORDER: u32 = 3;
/// FLUSH_TIME: the period of the memcg statistics flusher.
pub const FLUSH_TIME_NS: u64 = 2_000_000_000;

/// A memcg reclaim a task began for its next fault and goes on with when it runs again
/// (`Kernel::reclaim_before_fault`).
pub struct PendingReclaim {
    sc: ScanControl,
    start_ns: u64,
}

/// When the statistics flusher first runs after the run starts: the `memcg_stats_flush_first_us`
/// knob (a live run's observed phase), else a phase in [0, FLUSH_TIME) drawn from the run's seed
/// by a generator of its own (the run's random stream is not disturbed).
pub fn first_stats_flush_ns(spec: &RunSpec) -> u64 {
    match spec.knobs.memcg_stats_flush_first_us {
        Some(us) => us * 1000,
        None => crate::sim::rng::Rng::new(spec.seed ^ 0x6d65_6d63_675f_7374).below(FLUSH_TIME_NS),
    }
}

/// A lruvec's statistics as of the last flush (lruvec_page_state), hierarchical.
#[derive(Clone, Debug, Default)]
pub struct LruvecStats {
    /// NR_INACTIVE_ANON .. NR_ACTIVE_FILE, by `Lru`.
    pub lru: [u64; super::vmscan::NR_LRU_LISTS],
    /// WORKINGSET_ACTIVATE_ANON / _FILE.
    pub workingset_activate: [u64; 2],
}
/// Pages one page-counter charge takes at once for the stock (64 since v6.1).
pub const MEMCG_CHARGE_BATCH: u64 = 64;
/// Memcgs one CPU's stock holds from v6.16.
const NR_MEMCG_STOCK: usize = 7;

pub struct MemCgroup {
    pub name: String,
    pub max_pages: u64,
    /// The page counter: charged folios plus the pages the CPUs' stocks hold for this cgroup.
    pub usage_pages: u64,
    /// Swap PTEs of the cgroup's tasks (their pages now on swap).
    pub swap_pages: u64,
    /// Highest usage plus swapped pages seen: the most the workload ever needed at once.
    pub peak_footprint_pages: u64,
    pub stat: [u64; Memcg::COUNT],
}

impl MemCgroup {
    fn new(name: String, max_pages: u64) -> MemCgroup {
        MemCgroup {
            name,
            max_pages,
            usage_pages: 0,
            swap_pages: 0,
            peak_footprint_pages: 0,
            stat: [0; Memcg::COUNT],
        }
    }

    #[inline]
    pub fn note_footprint(&mut self) {
        self.peak_footprint_pages = self
            .peak_footprint_pages
            .max(self.usage_pages + self.swap_pages);
    }

    #[inline]
    pub fn count(&mut self, item: Memcg, n: u64) {
        self.stat[item as usize] += n;
    }

    /// mem_cgroup_margin: pages that can still be charged before the limit.
    fn margin(&self) -> u64 {
        self.max_pages.saturating_sub(self.usage_pages)
    }
}

/// memcg_stock_pcp: pages already charged to a memcg and not yet handed out, on one CPU.
#[derive(Clone, Debug, Default)]
pub struct MemcgStock {
    /// (memcg, pages) per slot; memcg 0 is an empty slot.
    pub slots: Vec<(u16, u64)>,
}

/// The root cgroup (id 0) and the scenario's cgroups (whose limits already carry any
/// `memory.max` override, applied when the run was resolved).
pub fn build(spec: &RunSpec) -> Vec<MemCgroup> {
    let mut v = vec![MemCgroup::new("/".into(), u64::MAX)];
    for c in &spec.scenario.cgroups {
        v.push(MemCgroup::new(
            c.name.clone(),
            c.memory_max_bytes
                .map_or(u64::MAX, |b| b / super::PAGE_SIZE),
        ));
    }
    v
}

/// One empty stock per CPU, with the generation's number of slots.
pub fn build_stocks(spec: &RunSpec, nr_cpus: usize) -> Vec<MemcgStock> {
    let slots = if spec.profile.generation.has_multi_memcg_stock() {
        NR_MEMCG_STOCK
    } else {
        1
    };
    vec![
        MemcgStock {
            slots: vec![(0, 0); slots]
        };
        nr_cpus
    ]
}

impl Kernel {
    /// mem_cgroup_flush_stats_ratelimited as reclaim and refault detection call it: the
    /// periodic flusher has run (each due flush is taken here, at the first read after it).
    pub fn memcg_stats_flush_due(&mut self) {
        if self.clock_ns < self.memcg_stats_next_flush_ns {
            return;
        }
        while self.memcg_stats_next_flush_ns <= self.clock_ns {
            self.memcg_stats_next_flush_ns += FLUSH_TIME_NS;
        }
        self.memcg_stats_flush();
    }

    /// The flush (cgroup_rstat_flush of the whole tree): each lruvec's statistics as they are
    /// now.
    pub fn memcg_stats_flush(&mut self) {
        use super::vmscan::Lru;
        for lv in 0..self.lruvecs.len() {
            let lru = [
                Lru::InactiveAnon,
                Lru::ActiveAnon,
                Lru::InactiveFile,
                Lru::ActiveFile,
            ]
            .map(|l| self.lru_size_hier(lv, l));
            let workingset_activate = self.lruvecs[lv].workingset.activate;
            self.lruvecs[lv].flushed = LruvecStats {
                lru,
                workingset_activate,
            };
        }
    }

    /// A block fresh from the allocator made a folio (`mapping` and `index` as prep_folio takes
    /// them) and charged to `memcg`; when the charge fails the pages go back to the allocator
    /// and the result is false.
    pub fn charge_new_folio(
        &mut self,
        pfn: FolioId,
        order: u32,
        mapping: u32,
        memcg: u16,
        index: u32,
        gfp: Gfp,
    ) -> bool {
        self.mem.prep_folio(pfn, order, mapping, memcg, index);
        if self.mem_cgroup_charge(pfn, memcg, gfp).is_ok() {
            return true;
        }
        self.mem.clear_folio(pfn);
        self.free_pages(pfn, order);
        false
    }

    /// mem_cgroup_charge: Err when the charge failed (the caller falls back or fails the fault).
    pub fn mem_cgroup_charge(&mut self, folio: FolioId, memcg: u16, gfp: Gfp) -> Result<(), ()> {
        let nr = self.mem.nr_pages(folio) as u64;
        self.spend(super::TimeKind::MemcgCharge, self.hw.memcg_charge_ns);
        if memcg == 0 {
            self.memcgs[0].usage_pages += nr;
            return Ok(());
        }
        self.try_charge(memcg, nr, gfp)
    }

    pub(super) fn try_charge(&mut self, memcg: u16, nr: u64, gfp: Gfp) -> Result<(), ()> {
        // The fault after reclaim_before_fault: when the kernel made this charge the memcg
        // was full, and one that may not reclaim failed (a large folio falls back).
        if !gfp.direct_reclaim && self.tasks[self.current as usize].fault_after_reclaim {
            return Err(());
        }
        let mut batch = nr.max(MEMCG_CHARGE_BATCH);
        let mut retries = MAX_RECLAIM_RETRIES;
        let mut drained = false;
        let mut oom_tried = false;
        loop {
            if self.consume_stock(memcg, nr) {
                return Ok(());
            }
            let cg = &mut self.memcgs[memcg as usize];
            if cg.margin() >= batch {
                cg.usage_pages += batch;
                cg.note_footprint();
                if batch > nr {
                    self.refill_stock(memcg, batch - nr);
                }
                return Ok(());
            }
            // Never reclaim for the stock's extra pages: try again for just these.
            if batch > nr {
                batch = nr;
                continue;
            }
            if !gfp.direct_reclaim {
                return Err(());
            }
            cg.count(Memcg::MaxEvents, 1);
            let reclaimed = self.try_to_free_mem_cgroup_pages(memcg, nr);
            if self.memcgs[memcg as usize].margin() >= nr {
                continue;
            }
            if !drained {
                self.drain_all_stock(memcg);
                drained = true;
                continue;
            }
            if gfp.noretry {
                return Err(());
            }
            if reclaimed > 0 && nr <= 1 << PAGE_ALLOC_COSTLY_ORDER {
                continue;
            }
            if retries > 0 {
                retries -= 1;
                continue;
            }
            if !gfp.retry || oom_tried {
                return Err(());
            }
            // mem_cgroup_oom: kill the biggest task in the cgroup, then try again.
            oom_tried = true;
            if !self.out_of_memory(Some(memcg), None)
                || !self.tasks[self.current as usize].is_running()
            {
                return Err(());
            }
            retries = MAX_RECLAIM_RETRIES;
        }
    }

    /// try_charge_memcg's reclaim, run before the fault that needs it. In the kernel a task
    /// whose charge finds its memcg at memory.max reclaims SWAP_CLUSTER_MAX folios at a time,
    /// and every task that charges meanwhile reclaims beside it from the same LRU lists: live,
    /// four usemem processes at a 1 GiB limit share the first pass over a list of young pages
    /// (tracefs mm_vmscan_lru_shrink_inactive, 56-74 thousand pages each). The model runs an
    /// operation whole, so a reclaim inside a fault would be done at once by whichever task
    /// came first. So when the current task's access at `vpn` will charge a page its memcg has
    /// no room for, the reclaim runs here first, one priority pass at a time until
    /// `quantum_end_ns`, and true asks the caller to give up the CPU and retry the access later;
    /// false lets the access go on (and its fault charges). Charges the fault makes anyway
    /// (large folios, the page cache), and those of a task alone in its memcg, still reclaim
    /// inside it.
    #[inline]
    pub fn reclaim_before_fault(
        &mut self,
        mm: u32,
        vpn: u32,
        write: bool,
        quantum_end_ns: u64,
    ) -> bool {
        // the common case, checked first: no reclaim under way and room in the memcg
        let task = &self.tasks[self.current as usize];
        if task.memcg_reclaim.is_none() && !task.fault_after_reclaim {
            let memcg = self.mms[mm as usize].memcg;
            if memcg == 0 || self.memcgs[memcg as usize].margin() > 0 {
                return false;
            }
        }
        self.reclaim_before_fault_slow(mm, vpn, write, quantum_end_ns)
    }

    #[inline(never)]
    fn reclaim_before_fault_slow(
        &mut self,
        mm: u32,
        vpn: u32,
        write: bool,
        quantum_end_ns: u64,
    ) -> bool {
        let t = self.current as usize;
        let mut pending = match self.tasks[t].memcg_reclaim.take() {
            Some(pending) => pending,
            None => {
                if self.tasks[t].fault_after_reclaim {
                    // kept for the fault it was for, unless the access no longer faults
                    self.tasks[t].fault_after_reclaim = self.anon_fault_charges(mm, vpn, write);
                    return false;
                }
                let memcg = self.mms[mm as usize].memcg;
                if memcg == 0
                    || !self.charge_must_reclaim(memcg, 1)
                    || !self.anon_fault_charges(mm, vpn, write)
                    || !self.memcg_has_other_tasks(memcg)
                {
                    return false;
                }
                self.memcgs[memcg as usize].count(Memcg::MaxEvents, 1);
                Box::new(PendingReclaim {
                    sc: ScanControl::memcg_reclaim(memcg, 1),
                    start_ns: self.clock_ns,
                })
            }
        };
        loop {
            if self.memcg_reclaim_priority(&mut pending.sc) {
                self.memcg_reclaim_done(&pending.sc, pending.start_ns);
                self.tasks[t].fault_after_reclaim = true;
                return self.clock_ns >= quantum_end_ns;
            }
            if self.clock_ns >= quantum_end_ns {
                self.tasks[t].memcg_reclaim = Some(pending);
                return true;
            }
        }
    }

    /// Another live task charges `memcg` and could reclaim beside the current one; alone, a
    /// task reclaims inside its fault, in the kernel's order (after the fault's allocations).
    fn memcg_has_other_tasks(&self, memcg: u16) -> bool {
        let current = self.current as usize;
        self.tasks
            .iter()
            .enumerate()
            .any(|(i, t)| i != current && t.is_user() && t.is_running() && t.memcg == memcg)
    }

    /// A charge of `nr` pages to `memcg` by the current CPU would have to reclaim first: this
    /// CPU's stock cannot serve it and the counter has no room (try_charge_memcg).
    fn charge_must_reclaim(&self, memcg: u16, nr: u64) -> bool {
        self.memcgs[memcg as usize].margin() < nr
            && !self.memcg_stocks[self.current_cpu as usize]
                .slots
                .iter()
                .any(|s| s.0 == memcg && s.1 >= nr)
    }

    /// consume_stock: take `nr` pages from this CPU's stock of `memcg`, if it holds that many.
    fn consume_stock(&mut self, memcg: u16, nr: u64) -> bool {
        if nr > MEMCG_CHARGE_BATCH {
            return false;
        }
        let stock = &mut self.memcg_stocks[self.current_cpu as usize];
        match stock.slots.iter_mut().find(|s| s.0 == memcg) {
            Some(slot) if slot.1 >= nr => {
                slot.1 -= nr;
                true
            }
            _ => false,
        }
    }

    /// refill_stock: keep `nr` charged pages in this CPU's stock; a stock grown past a batch
    /// goes back to the counter. A memcg without a slot takes an empty one, else evicts one.
    pub(super) fn refill_stock(&mut self, memcg: u16, nr: u64) {
        let cpu = self.current_cpu as usize;
        let slots = &self.memcg_stocks[cpu].slots;
        let i = match slots.iter().position(|s| s.0 == memcg) {
            Some(i) => i,
            None => {
                let i = match slots.iter().position(|s| s.0 == 0) {
                    Some(i) => i,
                    None => (self.rng.next_u64() % slots.len() as u64) as usize,
                };
                self.drain_stock(cpu, i);
                self.memcg_stocks[cpu].slots[i].0 = memcg;
                i
            }
        };
        self.memcg_stocks[cpu].slots[i].1 += nr;
        if self.memcg_stocks[cpu].slots[i].1 > MEMCG_CHARGE_BATCH {
            self.drain_stock(cpu, i);
        }
    }

    /// drain_stock: return one slot's pages to its memcg's counter and free the slot.
    fn drain_stock(&mut self, cpu: usize, slot: usize) {
        let (memcg, pages) = std::mem::take(&mut self.memcg_stocks[cpu].slots[slot]);
        if pages > 0 {
            self.memcgs[memcg as usize].usage_pages -= pages;
        }
    }

    /// drain_all_stock: every CPU holding stock of `memcg` drains its whole stock.
    pub fn drain_all_stock(&mut self, memcg: u16) {
        for cpu in 0..self.memcg_stocks.len() {
            let slots = &self.memcg_stocks[cpu].slots;
            if slots.iter().any(|&(m, pages)| m == memcg && pages > 0) {
                for slot in 0..slots.len() {
                    self.drain_stock(cpu, slot);
                }
            }
        }
    }

    /// Pages the CPUs' stocks hold for `memcg` (charged, in no folio).
    pub fn stocked_pages(&self, memcg: u16) -> u64 {
        self.memcg_stocks
            .iter()
            .flat_map(|s| &s.slots)
            .filter(|s| s.0 == memcg)
            .map(|s| s.1)
            .sum()
    }

    pub fn mem_cgroup_uncharge(&mut self, folio: FolioId) {
        let memcg = self.mem.memcg(folio) as usize;
        let nr = self.mem.nr_pages(folio) as u64;
        self.memcgs[memcg].usage_pages -= nr;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOWAIT: Gfp = Gfp {
        direct_reclaim: false,
        kswapd_reclaim: false,
        retry: false,
        noretry: false,
    };

    /// Two CPUs, no swap, cgroups "a" and "b" of `max_pages` each; CPU 0 current.
    fn boot(profile: &str, max_pages: u64) -> Kernel {
        let toml = format!(
            r#"
name = "t"
[[machine.node]]
memory = "64M"
cpus = 2
[[cgroup]]
name = "a"
"memory.max" = "{kb}K"
[[cgroup]]
name = "b"
"memory.max" = "{kb}K"
[[task]]
name = "t"
ops = [{{ op = "sleep", time = "1ms" }}]
"#,
            kb = max_pages * 4
        );
        crate::mm::boot_for_test(&toml, profile).0
    }

    #[test]
    fn a_charge_takes_a_batch_and_later_ones_come_from_this_cpus_stock() {
        let mut k = boot("v6.12", 1024);
        k.try_charge(1, 1, Gfp::USER).unwrap();
        assert_eq!(k.memcgs[1].usage_pages, MEMCG_CHARGE_BATCH);
        assert_eq!(k.stocked_pages(1), MEMCG_CHARGE_BATCH - 1);
        for _ in 0..MEMCG_CHARGE_BATCH - 1 {
            k.try_charge(1, 1, Gfp::USER).unwrap();
        }
        assert_eq!(
            k.memcgs[1].usage_pages, MEMCG_CHARGE_BATCH,
            "all from the stock"
        );
        assert_eq!(k.stocked_pages(1), 0);
        k.current_cpu = 1;
        k.try_charge(1, 16, Gfp::USER).unwrap();
        assert_eq!(k.memcgs[1].usage_pages, 2 * MEMCG_CHARGE_BATCH);
        assert_eq!(k.memcg_stocks[1].slots[0], (1, MEMCG_CHARGE_BATCH - 16));
        assert_eq!(k.memcg_stocks[0].slots[0], (1, 0));
    }

    #[test]
    fn a_charge_that_cannot_block_is_served_from_the_stock_even_at_the_limit() {
        let mut k = boot("v6.12", 64);
        k.try_charge(1, 16, NOWAIT).unwrap();
        assert_eq!(k.memcgs[1].usage_pages, 64, "the cgroup is at its limit");
        for _ in 0..3 {
            k.try_charge(1, 16, NOWAIT).unwrap();
        }
        assert!(k.try_charge(1, 16, NOWAIT).is_err(), "stock used up");
        k.current_cpu = 1;
        assert!(k.try_charge(1, 1, NOWAIT).is_err(), "CPU 1 has no stock");
        assert_eq!(k.memcgs[1].usage_pages, 64);
        assert_eq!(
            k.memcgs[1].stat[Memcg::MaxEvents as usize],
            0,
            "no reclaim tried"
        );
    }

    #[test]
    fn reclaim_that_frees_nothing_drains_every_cpus_stock_before_giving_up() {
        let mut k = boot("v6.12", 100);
        k.current_cpu = 1;
        k.try_charge(1, 1, Gfp::USER).unwrap();
        k.try_charge(1, 32, Gfp::USER).unwrap();
        assert_eq!(k.memcgs[1].usage_pages, 64);
        assert_eq!(k.stocked_pages(1), 31);
        // CPU 0 needs 40 pages: 36 of margin, nothing reclaimable, 31 stocked on CPU 1.
        k.current_cpu = 0;
        k.try_charge(1, 40, Gfp::USER).unwrap();
        assert_eq!(k.stocked_pages(1), 0);
        assert_eq!(k.memcgs[1].usage_pages, 33 + 40);
        assert_eq!(k.memcgs[1].stat[Memcg::MaxEvents as usize], 1);
    }

    #[test]
    fn a_noretry_charge_gives_up_after_the_drain_and_a_costly_one_after_the_retries() {
        let mut k = boot("v6.18", 64);
        k.try_charge(1, 64, Gfp::USER).unwrap();
        // Nothing to reclaim: reclaim, drain, reclaim again, and __GFP_NORETRY fails there.
        let noretry = Gfp {
            retry: false,
            noretry: true,
            ..Gfp::USER
        };
        assert!(k.try_charge(1, 1, noretry).is_err());
        assert_eq!(k.memcgs[1].stat[Memcg::MaxEvents as usize], 2);
        // A costly order without it (a madvised THP) goes on for MAX_RECLAIM_RETRIES more.
        let costly = Gfp {
            retry: false,
            ..Gfp::USER
        };
        assert!(k.try_charge(1, 512, costly).is_err());
        assert_eq!(
            k.memcgs[1].stat[Memcg::MaxEvents as usize],
            2 + 2 + MAX_RECLAIM_RETRIES as u64
        );
    }

    #[test]
    fn a_cpu_stocks_one_memcg_before_v6_16_and_seven_after() {
        for (profile, a_usage) in [("v6.12", 1), ("v6.18", MEMCG_CHARGE_BATCH)] {
            let mut k = boot(profile, 1024);
            k.try_charge(1, 1, Gfp::USER).unwrap();
            k.try_charge(2, 1, Gfp::USER).unwrap();
            assert_eq!(k.memcgs[1].usage_pages, a_usage, "{profile}");
            assert_eq!(k.memcgs[2].usage_pages, MEMCG_CHARGE_BATCH, "{profile}");
        }
    }

    #[test]
    fn the_flusher_first_runs_when_the_run_says_then_every_flush_time() {
        let toml = |knob: &str| {
            format!(
                "name = \"t\"\n[[machine.node]]\nmemory = \"64M\"\ncpus = 1\n[knobs]\n{knob}\n\
                 [[task]]\nname = \"t\"\nops = [{{ op = \"sleep\", time = \"1ms\" }}]\n"
            )
        };
        let (mut k, _) = crate::mm::boot_for_test(
            &toml("\"memcg_stats_flush_first_us\" = \"250000\""),
            "v6.18",
        );
        assert_eq!(k.memcg_stats_next_flush_ns, 250_000_000);
        k.clock_ns = 249_999_999;
        k.memcg_stats_flush_due();
        assert_eq!(k.memcg_stats_next_flush_ns, 250_000_000, "not due yet");
        k.clock_ns = 250_000_000;
        k.memcg_stats_flush_due();
        assert_eq!(k.memcg_stats_next_flush_ns, 250_000_000 + FLUSH_TIME_NS);
        // without the knob the seed draws it, below one period
        let (k, _) = crate::mm::boot_for_test(&toml(""), "v6.18");
        assert!(k.memcg_stats_next_flush_ns < FLUSH_TIME_NS);
        assert_ne!(k.memcg_stats_next_flush_ns, 250_000_000);
    }
}
