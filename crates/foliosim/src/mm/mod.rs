//! The simulated kernel: one `Kernel` holds the machine's memory-management state, and the files
//! of this module add its mechanisms, each named after the kernel file it models.

pub mod contpte;
pub mod cputime;
pub use cputime::TimeKind;
pub mod features;
pub mod filemap;
pub mod folio;
pub mod huge_memory;
pub mod lzo1x_compress;
pub mod madvise;
pub mod memcontrol;
pub mod memory;
pub mod memory_tiers;
pub mod mempolicy;
pub mod migrate;
pub mod numa_balancing;
pub mod oom_kill;
pub mod page_alloc;
pub mod page_writeback;
pub mod pagetable;
pub mod pgalloc;
pub mod readahead;
pub mod resident_cache;
pub mod rmap;
pub mod shmem;
pub mod swap;
pub mod swap_alloc;
pub mod swap_cluster;
pub mod swap_device;
pub mod swap_slots;
pub mod swap_state;
pub mod swapfile;
pub mod task;
pub mod tlb;
pub mod vma;
pub mod vmscan;
pub mod vmstat;
pub mod workingset;
pub mod zsmalloc;
pub mod zswap;

use crate::machine::hw::HwCosts;
use crate::scenario::{InputError, RunSpec, Tier};
use crate::sim::rng::Rng;
use crate::sim::{FifoServer, RunQueue};

use folio::{MemMap, Pfn};
use memcontrol::MemCgroup;
use page_alloc::Zone;
use swapfile::SwapInfo;
use task::Task;
use vma::{AnonVma, Mm};
use vmscan::Lruvec;
use vmstat::{Vm, VmStat};

pub use crate::scenario::types::PAGE_SIZE;
/// Node ranges start on a max-order boundary so buddy blocks never straddle nodes.
const NODE_ALIGN_PAGES: u64 = 1 << page_alloc::MAX_PAGE_ORDER;

pub struct Node {
    pub id: u32,
    pub tier: Tier,
    pub cpus: Vec<u32>,
    pub kswapd: u32,
}

pub struct Cpu {
    pub node: u32,
    pub busy: FifoServer,
}

pub struct Kernel {
    pub spec: RunSpec,
    pub hw: HwCosts,
    pub mem: MemMap,
    pub zones: Vec<Zone>,
    pub nodes: Vec<Node>,
    pub cpus: Vec<Cpu>,
    pub memcgs: Vec<MemCgroup>,
    /// memcg_stock, per CPU.
    pub memcg_stocks: Vec<memcontrol::MemcgStock>,
    /// One per (memcg, node): index `memcg * nodes + node`.
    pub lruvecs: Vec<Lruvec>,
    pub mms: Vec<Mm>,
    pub anon_vmas: Vec<AnonVma>,
    pub swap: Vec<SwapInfo>,
    /// Devices in swap_avail_heads order: by priority, equal priorities rotating.
    pub swap_avail: Vec<u32>,
    pub tasks: Vec<Task>,
    pub runq: RunQueue,
    pub stat: VmStat,
    pub rng: Rng,
    /// Clock of the task being run; mechanisms add their cost to it.
    pub clock_ns: u64,
    /// The task being run.
    pub current: u32,
    /// CPU the current task runs on.
    pub current_cpu: u32,
    /// PTEs cleared under TTU_BATCH_FLUSH whose TLB entries are not flushed yet.
    pub tlb_batch: tlb::TlbBatch,
    /// Per CPU: the loaded mm and the TLB.
    pub cpu_tlbs: Vec<tlb::CpuTlb>,
    pub migrc: migrate::Migrc,
    pub migrate_scratch: migrate::MigrateScratch,
    /// The rmap walks' list of mappings, kept between calls (rmap.rs folio_mappings).
    pub rmap_scratch: Vec<(u32, usize)>,
    pub memory_tiers: memory_tiers::MemoryTiers,
    /// Per node: NUMA-balancing promotion state.
    pub pgdat_numa: Vec<numa_balancing::NumaPgdat>,
    /// The model of the user reads not simulated one by one, if the workload has one (see
    /// `ReadModel`).
    pub read_model: Option<Box<dyn ReadModel>>,
    /// A task exited since the workload last looked (exit_notify: the parent learns of it
    /// later; here the workload's barriers stop waiting for it).
    pub exit_notify_pending: bool,
    /// How many times in a row the current write fault's copy lost its page to the reclaim its
    /// own charge ran (memory.rs do_wp_page).
    pub cow_lost_races: u32,
    /// Per node, per frame of a lower-tier node: the folio's last NUMA scan time in ms (kept in
    /// last_cpupid by the kernel; top-tier nodes keep none, as they never use it).
    pub access_time_ms: Vec<Vec<u32>>,
    /// Reused list of isolated folios, so reclaim does not allocate.
    pub reclaim_scratch: Vec<folio::FolioId>,
    /// Per CPU: new folios not yet on their LRU list (mm/swap.rs).
    pub lru_add_batches: Vec<Vec<folio::FolioId>>,
    /// Large folios waiting for the deferred-split shrinker (with stale entries skipped on scan).
    pub deferred_split_queue: std::collections::VecDeque<folio::FolioId>,
    /// The per-CPU swap slot cache (v6.9–v6.12).
    pub slot_cache: swap_slots::SlotCache,
    /// Per device, per slot: the zeromap bit (v6.12+): the slot's page was zero-filled, not written.
    pub zeromap: Vec<Vec<bool>>,
    /// Pages holding each zram device's compressed data (empty for other devices).
    pub zram_pages: Vec<Vec<folio::Pfn>>,
    /// Files and their page caches, by file id.
    pub files: Vec<filemap::File>,
    /// The disk's writeback state and flusher.
    pub wb: page_writeback::BdiWriteback,
    /// The zswap pool in front of the swap devices.
    pub zswap: zswap::Zswap,
    /// When the periodic memcg statistics flush is due next (memcontrol.rs).
    pub memcg_stats_next_flush_ns: u64,
}

impl Kernel {
    /// Builds the machine described by `spec`: nodes, zones and watermarks, memcgs, swap devices.
    /// No task runs yet: the workload spawns the kernel threads and its own tasks
    /// (workload/spawn.rs).
    pub fn boot(spec: &RunSpec) -> Result<Kernel, InputError> {
        let sc = &spec.scenario;
        // The scenario's parser read and checked the profile.
        let hw = sc.machine.hw.costs.clone();

        let mut node_ranges = Vec::new();
        let mut next_pfn = 0u64;
        for n in &sc.machine.nodes {
            let pages = n.memory_bytes / PAGE_SIZE;
            node_ranges.push((next_pfn, pages));
            next_pfn += pages.div_ceil(NODE_ALIGN_PAGES) * NODE_ALIGN_PAGES;
        }
        if next_pfn > u32::MAX as u64 {
            return Err(InputError {
                file: sc.file.clone(),
                key: "machine.node".into(),
                message: "expected at most 16 TiB of memory in all".into(),
            });
        }
        let mut mem = MemMap::new(next_pfn as usize);
        let mut zones = Vec::new();
        let mut nodes = Vec::new();
        let mut cpus = Vec::new();
        for (i, n) in sc.machine.nodes.iter().enumerate() {
            let (start, pages) = node_ranges[i];
            zones.push(Zone::new(i as u32, start as Pfn, pages as u32, &mut mem));
            let mut node_cpus = Vec::new();
            for _ in 0..n.cpus {
                node_cpus.push(cpus.len() as u32);
                cpus.push(Cpu {
                    node: i as u32,
                    busy: FifoServer::default(),
                });
            }
            nodes.push(Node {
                id: i as u32,
                tier: n.tier,
                cpus: node_cpus,
                kswapd: 0,
            });
        }
        let total_pages: u64 = zones.iter().map(|z| z.managed_pages()).sum();
        let min_free_kbytes = spec
            .knobs
            .min_free_kbytes
            .unwrap_or_else(|| page_alloc::calculate_min_free_kbytes(total_pages));
        page_alloc::setup_per_zone_wmarks(
            &mut zones,
            min_free_kbytes,
            spec.knobs.watermark_scale_factor,
        );

        let memcgs = memcontrol::build(spec);
        let memcg_stocks = memcontrol::build_stocks(spec, cpus.len());
        let lru_add_batches = vec![Vec::new(); cpus.len()];
        let lruvecs = (0..memcgs.len() * nodes.len())
            .map(|_| Lruvec::default())
            .collect();
        let swap = swapfile::swapon_all(spec, &hw);
        let tier_nodes: Vec<(Tier, bool)> =
            nodes.iter().map(|n| (n.tier, !n.cpus.is_empty())).collect();
        let memory_tiers = memory_tiers::MemoryTiers::build(&tier_nodes, &hw);
        let cpu_tlbs = (0..cpus.len())
            .map(|_| tlb::CpuTlb::new(hw.dtlb_entries as usize))
            .collect();

        // zswap_never_enabled() is false once zswap was on, now or at any time since boot
        let zswap = zswap::Zswap::new(
            spec.knobs.zswap_enabled || spec.knobs.zswap_enabled_since_boot,
            memcgs.len(),
        );
        let mut k = Kernel {
            spec: spec.clone(),
            hw,
            mem,
            zones,
            nodes,
            cpus,
            memcgs,
            memcg_stocks,
            lruvecs,
            mms: Vec::new(),
            anon_vmas: Vec::new(),
            swap_avail: (0..swap.len() as u32).collect(),
            swap,
            tasks: Vec::new(),
            runq: RunQueue::default(),
            stat: VmStat::default(),
            rng: Rng::new(spec.seed),
            clock_ns: 0,
            current: 0,
            current_cpu: 0,
            tlb_batch: tlb::TlbBatch::default(),
            cpu_tlbs,
            migrc: migrate::Migrc::default(),
            migrate_scratch: migrate::MigrateScratch::default(),
            rmap_scratch: Vec::new(),
            memory_tiers,
            pgdat_numa: vec![numa_balancing::NumaPgdat::default(); sc.machine.nodes.len()],
            access_time_ms: Vec::new(),
            read_model: None,
            exit_notify_pending: false,
            cow_lost_races: 0,
            reclaim_scratch: Vec::new(),
            lru_add_batches,
            files: Vec::new(),
            wb: Default::default(),
            zswap,
            memcg_stats_next_flush_ns: memcontrol::first_stats_flush_ns(spec),
            zram_pages: Vec::new(),
            zeromap: Vec::new(),
            deferred_split_queue: std::collections::VecDeque::new(),
            slot_cache: swap_slots::SlotCache::new(spec.scenario.machine.nr_cpus() as usize),
        };
        k.zram_pages = vec![Vec::new(); k.swap.len()];
        k.access_time_ms = (0..k.nodes.len() as u32)
            .map(|n| match k.memory_tiers.node_is_toptier(n) {
                true => Vec::new(),
                false => vec![0; k.zones[n as usize].nr_pages as usize],
            })
            .collect();
        k.zeromap = k.swap.iter().map(|s| vec![false; s.max as usize]).collect();
        if k.spec.knobs.zswap_enabled {
            for si in &mut k.swap {
                si.zswap = vec![None; si.max as usize];
            }
        }
        Ok(k)
    }

    #[inline]
    pub fn lruvec_index(&self, memcg: u16, node: u32) -> usize {
        memcg as usize * self.nodes.len() + node as usize
    }

    #[inline]
    pub fn pfn_node(&self, pfn: Pfn) -> u32 {
        // Zones are few and sorted: a linear scan beats a binary search here.
        let mut node = 0;
        for (i, z) in self.zones.iter().enumerate() {
            if pfn >= z.start_pfn {
                node = i as u32;
            }
        }
        node
    }

    pub fn nr_free_pages(&self) -> u64 {
        self.zones.iter().map(|z| z.nr_free_pages()).sum()
    }

    /// Swap slots free on all devices (`nr_swap_pages`).
    pub fn nr_swap_pages(&self) -> u64 {
        self.swap.iter().map(|s| s.free_slots()).sum()
    }

    pub fn generation(&self) -> crate::scenario::generation::Generation {
        self.spec.profile.generation
    }
}

/// All nodes of a machine of `nr_nodes`.
pub fn node_mask_all(nr_nodes: usize) -> mempolicy::Nodemask {
    debug_assert!(nr_nodes <= mempolicy::MAX_NUMNODES as usize);
    u64::MAX >> (64 - nr_nodes)
}

/// The allocation entry (`__alloc_pages` of mm/page_alloc.c): the zonelist walk with the low
/// watermark, the slow path that wakes kswapd, tries the min watermark, reclaims directly and in
/// the end calls the OOM killer, over the nodes a memory policy allows (mm/mempolicy.rs), with
/// zone_statistics' NUMA counters. The buddy allocator itself is `page_alloc::Zone`.
impl Kernel {
    /// Node of the current task's CPU (`numa_node_id()`).
    pub fn task_node(&self) -> u32 {
        self.cpus[self.current_cpu as usize].node
    }

    /// The k-th node in fallback order from `node`: itself, then the others by distance (by id
    /// here).
    fn zonelist_at(node: u32, k: usize) -> usize {
        let node = node as usize;
        match k {
            0 => node,
            k if k <= node => k - 1,
            k => k,
        }
    }

    /// zone_statistics: an allocation from `node` whose zonelist started at `preferred` counts
    /// as a hit or a miss (and a foreign allocation of the preferred node), and as local or
    /// other by the node of the CPU that asked.
    fn zone_statistics(&mut self, preferred: u32, node: u32) {
        if node == preferred {
            self.stat.count(Vm::NumaHit, 1);
        } else {
            self.stat.count(Vm::NumaMiss, 1);
            self.stat.count(Vm::NumaForeign, 1);
        }
        let local = if node == self.task_node() {
            Vm::NumaLocal
        } else {
            Vm::NumaOther
        };
        self.stat.count(local, 1);
    }

    /// get_page_from_freelist: the first node of `node`'s zonelist, among `nodemask`, that is
    /// above its low (or min) watermark.
    fn alloc_from_zonelist(
        &mut self,
        node: u32,
        order: u32,
        low: bool,
        nodemask: mempolicy::Nodemask,
    ) -> Option<folio::Pfn> {
        let mut preferred = None;
        for k in 0..self.zones.len() {
            let z = Self::zonelist_at(node, k);
            if !mempolicy::node_isset(z as u32, nodemask) {
                continue;
            }
            let preferred = *preferred.get_or_insert(z as u32);
            let zone = &self.zones[z];
            let mark = if low { zone.wmark_low } else { zone.wmark_min };
            let mut ok = zone.watermark_ok(order, mark);
            if zone.migrc_pending_nr > 0 && (!ok || zone.nr_free_pages() < 1 << order) {
                // MIGRC: flush and free the kept folios, then look again (also when only the
                // kept folios keep the zone above its watermark and the buddy lists are empty).
                self.migrc_flush_free_folios();
                let zone = &self.zones[z];
                ok = zone.watermark_ok(order, mark);
            }
            if ok {
                let pfn = self.zones[z].alloc(&mut self.mem, order)?;
                self.stat.count(Vm::Pgalloc, 1 << order);
                self.zone_statistics(preferred, z as u32);
                self.spend(TimeKind::PageAlloc, self.hw.page_alloc_ns);
                return Some(pfn);
            }
        }
        None
    }

    /// An allocation from `node`'s zonelist, any node.
    pub fn alloc_pages(&mut self, node: u32, order: u32, gfp: memory::Gfp) -> Option<folio::Pfn> {
        let all = node_mask_all(self.nodes.len());
        self.alloc_pages_nodemask(node, order, gfp, all)
    }

    /// __alloc_pages: an allocation from the nodes of `nodemask`, in the order of `node`'s
    /// zonelist; kswapd and direct reclaim work on those nodes only.
    pub fn alloc_pages_nodemask(
        &mut self,
        node: u32,
        order: u32,
        gfp: memory::Gfp,
        nodemask: mempolicy::Nodemask,
    ) -> Option<folio::Pfn> {
        if let Some(pfn) = self.alloc_from_zonelist(node, order, true, nodemask) {
            return Some(pfn);
        }
        if gfp.kswapd_reclaim {
            for k in 0..self.zones.len() {
                let n = Self::zonelist_at(node, k) as u32;
                if mempolicy::node_isset(n, nodemask) {
                    self.wakeup_kswapd(n);
                }
            }
        }
        if let Some(pfn) = self.alloc_from_zonelist(node, order, false, nodemask) {
            return Some(pfn);
        }
        if !gfp.direct_reclaim {
            return None;
        }
        if self.spec.profile.migrc {
            // Very high pressure: MIGRC pauses and gives back what it keeps.
            self.migrc.pause_cnt += 1;
            self.migrc_flush_free_folios();
            let pfn = self.alloc_pages_slowpath(node, order, gfp, nodemask);
            self.migrc.pause_cnt -= 1;
            return pfn;
        }
        self.alloc_pages_slowpath(node, order, gfp, nodemask)
    }

    /// The direct-reclaim part of the slow path, ending in the OOM killer.
    fn alloc_pages_slowpath(
        &mut self,
        node: u32,
        order: u32,
        gfp: memory::Gfp,
        nodemask: mempolicy::Nodemask,
    ) -> Option<Pfn> {
        if let Some(pfn) = self.alloc_from_zonelist(node, order, false, nodemask) {
            return Some(pfn);
        }
        let mut no_progress_loops = 0;
        loop {
            self.stat.count(Vm::AllocstallNormal, 1);
            let reclaimed = self.try_to_free_pages(node, nodemask);
            if let Some(pfn) = self.alloc_from_zonelist(node, order, false, nodemask) {
                return Some(pfn);
            }
            if !gfp.retry {
                return None;
            }
            no_progress_loops = if reclaimed == 0 {
                no_progress_loops + 1
            } else {
                0
            };
            if no_progress_loops > vmscan::MAX_RECLAIM_RETRIES {
                // constrained_alloc: a policy's nodemask short of all nodes limits the victims.
                let all = node_mask_all(self.nodes.len());
                let constraint = (nodemask != all).then_some(nodemask);
                if !self.out_of_memory(None, constraint)
                    || !self.tasks[self.current as usize].is_running()
                {
                    return None;
                }
                no_progress_loops = 0;
            }
        }
    }

    /// An allocation from one node only, without reclaim (__GFP_THISNODE, no __GFP_RECLAIM but
    /// optionally waking kswapd), as migration targets are allocated.
    pub fn alloc_pages_thisnode(
        &mut self,
        node: u32,
        order: u32,
        wake_kswapd: bool,
    ) -> Option<Pfn> {
        for low in [true, false] {
            let zone = &self.zones[node as usize];
            let mark = if low { zone.wmark_low } else { zone.wmark_min };
            let mut ok = zone.watermark_ok(order, mark);
            if zone.migrc_pending_nr > 0 && (!ok || zone.nr_free_pages() < 1 << order) {
                self.migrc_flush_free_folios();
                let zone = &self.zones[node as usize];
                ok = zone.watermark_ok(order, mark);
            }
            if ok {
                if let Some(pfn) = self.zones[node as usize].alloc(&mut self.mem, order) {
                    self.stat.count(Vm::Pgalloc, 1 << order);
                    self.zone_statistics(node, node);
                    self.spend(TimeKind::PageAlloc, self.hw.page_alloc_ns);
                    return Some(pfn);
                }
            }
            if low && wake_kswapd {
                self.wakeup_kswapd(node);
            }
        }
        None
    }

    pub fn free_pages(&mut self, pfn: folio::Pfn, order: u32) {
        let node = self.pfn_node(pfn) as usize;
        self.zones[node].free(&mut self.mem, pfn, order);
        self.stat.count(Vm::Pgfree, 1 << order);
    }

    /// Frees a folio nothing maps any more: off the LRU, uncharged, back to the buddy allocator.
    pub fn free_folio(&mut self, folio: folio::FolioId) {
        debug_assert!(!self.mem.test(folio, folio::pg::SWAPCACHE));
        if self.mem.test(folio, folio::pg::LRU) {
            self.lruvec_del_folio(folio);
        } else if self.folio_in_lru_add_batch(folio) {
            self.lru_add_batch_remove(folio);
        }
        let order = self.mem.order(folio);
        if order > 1 {
            self.folio_unqueue_deferred_split(folio);
        }
        self.mem_cgroup_uncharge(folio);
        self.mem.clear_folio(folio);
        self.free_pages(folio, order);
        self.spend(TimeKind::PageAlloc, self.hw.page_alloc_ns);
    }
}

/// User reads that the simulator does not make one by one but models per page (the workload's
/// Poisson reads, workload/poisson.rs). The kernel sees reads only through the young bit and
/// through the hint fault of a page armed PROT_NONE, so it asks the model whether a page was read
/// before it tests the page's young bit, and tells it whenever it clears the bit, replaces the
/// PTE or arms it. A VMA under the model holds its handle in `Vma::poisson`. Only pages of such
/// VMAs pay for the call.
pub trait ReadModel {
    /// Page `idx` of the VMA with handle `vma` has been read by `now_ns`.
    fn read_by(&self, vma: u32, idx: usize, now_ns: u64) -> bool;
    /// Page `idx` of the VMA with handle `vma` was just made old, replaced or armed: draws its
    /// next read. `hint_fault`: (mm, vpn) of an armed page, whose next read is a hint fault.
    fn rearm(
        &mut self,
        rng: &mut Rng,
        now_ns: u64,
        vma: u32,
        idx: usize,
        hint_fault: Option<(u32, u32)>,
    );
    /// The model itself, for the workload that drives it.
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any;
}

/// The hook points of the read model.
impl Kernel {
    /// The page was read if the model says so: sets the young bit before a reader of it
    /// (reclaim, migration) looks.
    #[inline]
    pub fn poisson_advance(&mut self, mm: u32, vi: usize, idx: usize) {
        let now = self.clock_ns;
        let v = &mut self.mms[mm as usize].vmas[vi];
        let Some(h) = v.poisson else { return };
        // The PTE's load first, then the model's: both (usually cache misses) are then in
        // flight at once.
        let pte = v.ptes[idx];
        if let Some(model) = self.read_model.as_deref() {
            if model.read_by(h, idx, now) & pagetable::is_accessible(pte) {
                v.ptes[idx] = pte | pagetable::YOUNG;
            }
        }
    }

    /// The page's young bit was cleared, or its PTE replaced or armed (PROT_NONE) now: the model
    /// draws its next read (nothing outside a modelled VMA).
    pub fn poisson_rearm(&mut self, mm: u32, vi: usize, idx: usize) {
        let v = &self.mms[mm as usize].vmas[vi];
        let Some(h) = v.poisson else { return };
        let armed = v.ptes[idx] & pagetable::PROTNONE != 0;
        let hint_fault = armed.then(|| (mm, v.start + idx as u32));
        if let Some(model) = self.read_model.as_deref_mut() {
            model.rearm(&mut self.rng, self.clock_ns, h, idx, hint_fault);
        }
    }
}

/// A machine booted from scenario text under `profile`, its workload spawned and its first user
/// task current on CPU 0; returns it and that task (unit tests). The engine (crate::run) does the
/// spawning: mm itself never calls up into the workload.
#[cfg(test)]
pub(crate) fn boot_for_test(toml: &str, profile: &str) -> (Kernel, u32) {
    let scenario = crate::Scenario::parse_str(toml, "test.toml").unwrap();
    let spec = crate::scenario::parse::resolve(&scenario, profile, None, &[], 1, true).unwrap();
    let mut k = crate::run::Simulation::start(&spec).unwrap().kernel;
    let t = k.tasks.iter().position(|t| t.is_user()).unwrap() as u32;
    k.current = t;
    k.current_cpu = 0;
    k.switch_to(0, t);
    (k, t)
}

/// One node of 1 GiB with one CPU, a 1 GiB zram device, one task with `knobs` (lines of a
/// `[knobs]` table), in a cgroup "cg" of that `memory.max` if one is given; the task's mm.
#[cfg(test)]
pub(crate) fn boot_zram_for_test(
    profile: &str,
    memory_max: Option<&str>,
    knobs: &str,
) -> (Kernel, u32) {
    let (cgroup, in_cgroup) = match memory_max {
        Some(max) => (
            format!("[[cgroup]]\nname = \"cg\"\n\"memory.max\" = \"{max}\"\n"),
            "cgroup = \"cg\"\n",
        ),
        None => (String::new(), ""),
    };
    let toml = format!(
        r#"
name = "t"
[[machine.node]]
memory = "1G"
cpus = 1
[[swap]]
name = "z"
kind = "zram"
size = "1G"
{cgroup}[knobs]
{knobs}
[[task]]
name = "t"
{in_cgroup}ops = [{{ op = "sleep", time = "1ms" }}]
"#
    );
    let (k, t) = boot_for_test(&toml, profile);
    let mm = k.tasks[t as usize].mm.expect("user mm");
    (k, mm)
}
