//! Turning the kernel's state at the end of a run (and the workload's per-task reports and
//! iterations) into a `RunResult`, and the time series.

use super::result::RunResult;
use crate::mm::vmstat::{
    Vm, MEMCG_NAMES, MTHP_NAMES, SHMEM_MTHP, SHMEM_VM, VM_NAMES, ZSWAP_MEMCG, ZSWAP_MTHP, ZSWAP_VM,
};
use crate::mm::Kernel;
use crate::scenario::knobs::{order_size_name, ANON_ORDERS, SHMEM_ORDERS};
use crate::scenario::Counters;
use crate::workload::task::Report;
use crate::workload::Workload;
use serde_json::{json, Map};
use std::collections::BTreeMap;

/// Columns sampled over simulated time.
const SERIES_VM: &[Vm] = &[
    Vm::Pgfault,
    Vm::Pswpout,
    Vm::Pswpin,
    Vm::PgscanDirect,
    Vm::PgscanKswapd,
    Vm::OomKill,
];

/// The most rows the time series holds. A run that reaches it (a long simulated time at a short
/// `sample_interval`) keeps every other row and doubles the interval, as often as needed, so a
/// run's series stays within this many rows, at an interval that depends only on the run: still
/// deterministic. The bundled scenarios' longest series has 17,434 rows.
pub const MAX_SERIES_ROWS: usize = 100_000;

/// The time series: one row of counters every `interval_ns` of simulated time, from 0.
pub struct Series {
    cols: BTreeMap<String, Vec<u64>>,
    /// The scenario's `sample_interval`, doubled each time the series was thinned.
    interval_ns: u64,
    max_rows: usize,
    thinned: bool,
}

impl Series {
    /// An empty series sampled every `interval_ns`, thinned at MAX_SERIES_ROWS.
    pub fn new(interval_ns: u64) -> Series {
        Series::with_max_rows(interval_ns, MAX_SERIES_ROWS)
    }

    /// `new` with another (even) cap on the rows.
    pub fn with_max_rows(interval_ns: u64, max_rows: usize) -> Series {
        debug_assert!(max_rows >= 2 && max_rows % 2 == 0);
        Series {
            cols: BTreeMap::new(),
            interval_ns: interval_ns.max(1),
            max_rows,
            thinned: false,
        }
    }

    /// The simulated time between rows now: the next row is due this long after the last.
    pub fn interval_ns(&self) -> u64 {
        self.interval_ns
    }

    /// The interval the rows ended at, when the series was thinned (None: the scenario's).
    pub fn thinned_interval_ns(&self) -> Option<u64> {
        self.thinned.then_some(self.interval_ns)
    }

    /// Takes the row due at `t_ns` (a multiple of the interval).
    pub fn sample(&mut self, k: &Kernel, t_ns: u64) {
        self.make_room();
        let mut push = |name: &str, v: u64| self.cols.entry(name.to_string()).or_default().push(v);
        push("t_ns", t_ns);
        push("nr_free_pages", k.nr_free_pages());
        for &item in SERIES_VM {
            push(item.name(), k.stat.get(item));
        }
        for cg in k.memcgs.iter().skip(1) {
            push(&format!("memcg:{}:usage_pages", cg.name), cg.usage_pages);
        }
        for (si, pages) in k
            .swap
            .iter()
            .zip(&k.zram_pages)
            .filter(|(s, _)| s.kind == crate::scenario::SwapKind::Zram)
        {
            push(
                &format!("zram:{}:mem_used_total", si.name),
                pages.len() as u64 * crate::mm::PAGE_SIZE,
            );
        }
        if k.zswap.ever_enabled {
            push("zswap:pool_total_size", k.zswap.pool_total_size());
        }
    }

    /// Before a row is added to a full series: keeps the rows at even multiples of the interval
    /// (0, 2i, 4i, ...) and doubles it. The row being added is due at max_rows x i, an even
    /// multiple, so the rows stay evenly spaced from 0.
    fn make_room(&mut self) {
        let rows = self.cols.get("t_ns").map_or(0, Vec::len);
        if rows < self.max_rows {
            return;
        }
        for col in self.cols.values_mut() {
            let mut index = 0;
            col.retain(|_| {
                index += 1;
                index % 2 == 1
            });
        }
        self.interval_ns = self.interval_ns.saturating_mul(2);
        self.thinned = true;
    }
}

pub fn build(k: &Kernel, w: &Workload, series: Series) -> RunResult {
    // zswap's counters only where zswap was in play, so that other results keep their shape.
    let zswap_on = k.zswap.ever_enabled;
    // shmem's likewise, where the run has a tmpfs file or shared anonymous memory
    let shmem_on = k.has_shmem();
    let mut vmstat: Counters = VM_NAMES
        .iter()
        .zip(k.stat.vm.iter())
        .filter(|(n, _)| zswap_on || !ZSWAP_VM.iter().any(|z| z.name() == **n))
        .filter(|(n, _)| shmem_on || !SHMEM_VM.iter().any(|z| z.name() == **n))
        .map(|(n, v)| (n.to_string(), *v))
        .collect();
    let (nr_shmem, nr_shmem_hugepages, shmem_per_memcg) = k.shmem_stats();
    if shmem_on {
        vmstat.insert("nr_shmem".into(), nr_shmem);
        vmstat.insert("nr_shmem_hugepages".into(), nr_shmem_hugepages);
    }
    // a gauge read from the caches, as the kernel keeps it on its shadow-node list
    vmstat.insert("workingset_nodes".into(), k.workingset_nodes());
    let mut mthp = BTreeMap::new();
    // 8 KiB has a directory for file and shmem folios only
    let orders = if shmem_on { SHMEM_ORDERS } else { ANON_ORDERS };
    for order in orders {
        let c: Counters = MTHP_NAMES
            .iter()
            .zip(k.stat.mthp[order].iter())
            .filter(|(n, _)| zswap_on || !ZSWAP_MTHP.iter().any(|z| z.name() == **n))
            .filter(|(n, _)| shmem_on || !SHMEM_MTHP.iter().any(|z| z.name() == **n))
            .map(|(n, v)| (n.to_string(), *v))
            .collect();
        mthp.insert(order_size_name(order), c);
    }
    let mut memcg = BTreeMap::new();
    for (id, cg) in k.memcgs.iter().enumerate().skip(1) {
        let mut c: Counters = MEMCG_NAMES
            .iter()
            .zip(cg.stat.iter())
            .filter(|(n, _)| zswap_on || !ZSWAP_MEMCG.iter().any(|z| z.name() == **n))
            .map(|(n, v)| (n.to_string(), *v))
            .collect();
        c.insert("usage_pages".into(), cg.usage_pages);
        c.insert("peak_footprint_pages".into(), cg.peak_footprint_pages);
        if shmem_on {
            // memory.stat shmem, in bytes
            c.insert("shmem".into(), shmem_per_memcg[id] * crate::mm::PAGE_SIZE);
        }
        if zswap_on {
            // memory.stat zswap (compressed bytes) and zswapped (bytes of the pages stored)
            let z = &k.zswap.memcg[id];
            c.insert("zswap".into(), z.bytes);
            c.insert("zswapped".into(), z.pages * crate::mm::PAGE_SIZE);
        }
        memcg.insert(cg.name.clone(), c);
    }
    let mut zram = BTreeMap::new();
    for (dev, si) in k
        .swap
        .iter()
        .enumerate()
        .filter(|(_, s)| s.kind == crate::scenario::SwapKind::Zram)
    {
        let mut c = Counters::new();
        c.insert(
            "orig_data_size".into(),
            si.zram.pages_stored * crate::mm::PAGE_SIZE,
        );
        c.insert("compr_data_size".into(), si.zram.compr_data_size);
        c.insert("same_pages".into(), si.zram.same_pages);
        c.insert("pages_stored".into(), si.zram.pages_stored);
        c.insert(
            "mem_used_total".into(),
            k.zram_pages[dev].len() as u64 * crate::mm::PAGE_SIZE,
        );
        zram.insert(si.name.clone(), c);
    }
    let mut zswap = Counters::new();
    if zswap_on {
        let st = &k.zswap.stat;
        for (name, v) in [
            ("pool_total_size", k.zswap.pool_total_size()),
            ("stored_pages", st.stored_pages),
            ("same_filled_pages", st.same_filled_pages),
            (
                "stored_incompressible_pages",
                st.stored_incompressible_pages,
            ),
            ("pool_limit_hit", st.pool_limit_hit),
            ("written_back_pages", st.written_back_pages),
            ("reject_reclaim_fail", st.reject_reclaim_fail),
            ("reject_compress_fail", st.reject_compress_fail),
            ("reject_compress_poor", st.reject_compress_poor),
            ("reject_alloc_fail", st.reject_alloc_fail),
            ("reject_kmemcache_fail", st.reject_kmemcache_fail),
        ] {
            zswap.insert(name.into(), v);
        }
    }
    let mut tasks = Vec::new();
    let mut sim_time_ns = 0;
    for (t, prog) in k.tasks.iter().zip(&w.tasks).filter(|(t, _)| t.is_user()) {
        sim_time_ns = sim_time_ns.max(t.exit_ns);
        let mut m = Map::new();
        m.insert("name".into(), json!(t.name));
        m.insert("exit_ns".into(), json!(t.exit_ns));
        m.insert("oom_killed".into(), json!(t.oom_killed));
        m.insert("touches".into(), json!(t.touches));
        m.insert("user_ns".into(), json!(t.user_ns));
        m.insert("sys_ns".into(), json!(t.sys_ns));
        m.insert("direct_reclaim_ns".into(), json!(t.direct_reclaim_ns));
        m.insert("direct_reclaim_pages".into(), json!(t.direct_reclaim_pages));
        // where the task's time went (mm/cputime.rs): all but the waits (cpu_wait, io_wait) add up to user + sys
        let breakdown: Map<String, serde_json::Value> = t
            .time
            .iter()
            .map(|(kind, ns)| (kind.name().to_string(), json!(ns)))
            .collect();
        m.insert(
            "time_breakdown_ns".into(),
            serde_json::Value::Object(breakdown),
        );
        if let Report::Usemem { size_bytes } = prog.report {
            use crate::workload::usemem::{throughput, START_OP, WRITE_OP};
            if !t.oom_killed {
                let (bytes, usecs, kbps) = throughput(
                    size_bytes,
                    prog.op_end_ns[START_OP],
                    prog.op_end_ns[WRITE_OP],
                );
                m.insert("bytes".into(), json!(bytes));
                m.insert("usecs".into(), json!(usecs));
                m.insert("throughput_kbps".into(), json!(kbps));
            }
        }
        if let Report::Trace(counters) = &prog.report {
            counters.insert_into(&mut m);
        }
        tasks.push(m);
    }
    RunResult {
        profile: k.spec.profile.name.clone(),
        variant: k.spec.variant.clone(),
        seed: k.spec.seed,
        sim_time_ns,
        vmstat,
        mthp,
        memcg,
        zram,
        zswap,
        tasks,
        iterations: w.iterations.clone(),
        series_interval_ns: series.thinned_interval_ns(),
        series: series.cols,
    }
}
