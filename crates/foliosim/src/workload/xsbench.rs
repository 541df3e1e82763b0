//! XSBench (ANL-CESAR, openmp-threading, history method, unionized grid) as an access pattern.
//!
//! Memory: the nuclide grid (isotopes x gridpoints points of 48 B), the unionized energy array
//! (isotopes x gridpoints doubles) and the index grid (one row of isotopes ints per unionized
//! energy); XSBench's default "large" problem is 355 x 11,303, 5.92 GB in all. Thread 0 writes
//! them once, in order; then THREADS threads share the particles and run LOOKUPS lookups each.
//! One lookup: a material by XSBench's distribution and an energy E, uniform; the binary search
//! of E in the unionized array; the index-grid row of E (1-2 pages); one grid point in each of
//! the material's nuclides, at the same relative position E (spec tiering.md §F.3).
//!
//! Sampling: the unionized-array and nuclide-grid reads (~69 of ~70 per lookup, on a few hundred
//! MB) are made for one lookup in `sample`, and their cost and TLB misses count `sample` times.
//! With `reads = "exact"` every lookup reads its index-grid pages; with `reads = "poisson"` the
//! reads of all three arrays are per-page Poisson processes for the kernel (young bits, hint
//! faults) at the rates the sampled lookups measure, so sampling does not make hot pages look
//! cold to reclaim. Left out: XSBench's arithmetic (the run is taken as bound by memory
//! latency), the qsorts of initialisation, CPU caches.

use super::task::{Region, Report};
use super::{params_of, Generator, Workload};
use crate::mm::folio::content;
use crate::mm::memory::Killed;
use crate::mm::pagetable as pt;
use crate::mm::vmstat::Vm;
use crate::mm::Kernel;
use crate::scenario::generators::{pages_of, arg_in_range, GeneratorDef, GeneratorParams};
use crate::scenario::units::format_size;
use crate::scenario::walker::{Node, Res};
use crate::scenario::MAX_MAPPING_BYTES;
use crate::scenario::{InputError, MachineSpec, Op, TaskSpec};
use std::rc::Rc;
use toml::Value;

/// `generator = "xsbench"`: THREADS threads sharing one address space.
pub struct XsbenchGenerator;

impl GeneratorDef for XsbenchGenerator {
    fn name(&self) -> &'static str {
        "xsbench"
    }
    fn params(&self) -> &'static [&'static str] {
        &[
            "threads",
            "particles",
            "lookups",
            "isotopes",
            "gridpoints",
            "sample",
            "reads",
        ]
    }
    fn parse(&self, task: &Node, _machine: &MachineSpec) -> Res<Box<dyn GeneratorParams>> {
        let d = Xsbench::default();
        let x = Xsbench {
            threads: task.int_opt("threads", 1, 256)?.unwrap_or(d.threads as i64) as u32,
            particles: task
                .int_opt("particles", 1, 1 << 40)?
                .unwrap_or(d.particles as i64) as u64,
            lookups: task
                .int_opt("lookups", 1, 1000)?
                .unwrap_or(d.lookups as i64) as u64,
            isotopes: task
                .int_opt("isotopes", 12, 4096)?
                .unwrap_or(d.isotopes as i64) as u64,
            gridpoints: task
                .int_opt("gridpoints", 2, 1 << 24)?
                .unwrap_or(d.gridpoints as i64) as u64,
            sample: task
                .int_opt("sample", 1, 1 << 20)?
                .unwrap_or(d.sample as i64) as u64,
            poisson_index: match task.str_opt("reads")? {
                None | Some("exact") => false,
                Some("poisson") => true,
                Some(other) => {
                    return Err(task.err(
                        "reads",
                        format!("expected exact or poisson, found {other:?}"),
                    ))
                }
            },
        };
        // the three arrays are mappings of thread 0's process: they share its address space
        let mapped_bytes = x
            .regions()
            .iter()
            .fold(0u64, |sum, &(_, bytes)| sum.saturating_add(bytes));
        if mapped_bytes > MAX_MAPPING_BYTES {
            return Err(task.err(
                "gridpoints",
                format!(
                    "expected isotopes x gridpoints to give arrays of at most {} in all (a \
                     task's address space), found {}",
                    format_size(MAX_MAPPING_BYTES),
                    format_size(mapped_bytes)
                ),
            ));
        }
        Ok(Box::new(x))
    }
}

impl GeneratorParams for Xsbench {
    fn generator(&self) -> &'static str {
        "xsbench"
    }
    fn apply_arg(&mut self, key: &str, v: &Value) -> Result<bool, String> {
        match key {
            "particles" => self.particles = arg_in_range(v, 1, 1 << 40)?,
            "sample" => self.sample = arg_in_range(v, 1, 1 << 20)?,
            "threads" => self.threads = arg_in_range(v, 1, 256)? as u32,
            "reads" => {
                self.poisson_index = match v.as_str() {
                    Some("exact") => false,
                    Some("poisson") => true,
                    _ => return Err("expected exact or poisson".to_string()),
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
    /// The three arrays, in thread 0's address space, which the other threads share.
    fn mapped_pages(&self) -> u64 {
        self.regions()
            .iter()
            .fold(0, |sum, &(_, bytes)| sum.saturating_add(pages_of(bytes)))
    }
}

impl Generator for XsbenchGenerator {
    /// Thread 0's process maps the three arrays (marking them Poisson-read with `reads =
    /// "poisson"`); the other threads share its address space.
    fn spawn(
        &self,
        params: &dyn GeneratorParams,
        w: &mut Workload,
        k: &mut Kernel,
        task: &TaskSpec,
        memcg: u16,
    ) -> Result<(), InputError> {
        let x: &Xsbench = params_of(params);
        w.xsbench = Some(*x);
        let mut mm = None;
        let mut regions = Vec::new();
        for i in 0..x.threads {
            let ops = Rc::new(x.program(i));
            let name = format!("{}-{i}", task.name);
            let id = match mm {
                None => {
                    let id = w.spawn_user(k, name, memcg, task.node, ops, Report::None);
                    let m = k.tasks[id as usize].mm.expect("user mm");
                    for (region, bytes) in x.regions() {
                        let nr_pages = bytes.div_ceil(crate::mm::PAGE_SIZE) as u32;
                        let start = k.mmap_anon(m, nr_pages);
                        if x.poisson_index {
                            super::poisson::model_reads(k, m, start, nr_pages);
                        }
                        regions.push(Region {
                            name: region.into(),
                            start,
                            nr_pages,
                        });
                    }
                    mm = Some(m);
                    id
                }
                Some(m) => w.spawn_thread(k, name, m, task.node, ops),
            };
            w.tasks[id as usize].regions = regions.clone();
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Xsbench {
    pub threads: u32,
    /// Particles in all (`-p`), shared evenly between the threads.
    pub particles: u64,
    /// Lookups per particle (`-l`).
    pub lookups: u64,
    pub isotopes: u64,
    pub gridpoints: u64,
    /// One lookup in `sample` makes the hot-array accesses, each standing for `sample`.
    pub sample: u64,
    /// `reads = "poisson"`: the arrays' reads as per-page Poisson processes (workload::poisson):
    /// the index grid's drive its young bits and hint faults, with no simulated read at all; the
    /// hot arrays' keep their pages young at their real rate, while their sampled reads give the
    /// cost. `reads = "exact"`: one simulated read per real index-grid read.
    pub poisson_index: bool,
}

impl Default for Xsbench {
    fn default() -> Self {
        Xsbench {
            threads: 16,
            particles: 500_000,
            lookups: 34,
            isotopes: 355,
            gridpoints: 11_303,
            sample: 1,
            poisson_index: false,
        }
    }
}

/// XSBench's materials: nuclides per material, and the probability of each material.
const NUM_NUCS: [usize; 12] = [321, 5, 4, 4, 27, 21, 21, 21, 21, 21, 9, 9];
const MAT_DIST: [f64; 12] = [
    0.140, 0.052, 0.275, 0.134, 0.154, 0.064, 0.066, 0.055, 0.008, 0.015, 0.025, 0.013,
];
const FUEL_SMALL: [u64; 34] = [
    58, 59, 60, 61, 40, 42, 43, 44, 45, 46, 1, 2, 3, 7, 8, 9, 10, 29, 57, 47, 48, 0, 62, 15, 33,
    34, 52, 53, 54, 55, 56, 18, 23, 41,
];
const CLADDING: [u64; 5] = [63, 64, 65, 66, 67];
const WATER: [u64; 4] = [24, 41, 4, 5];
const RPV: [u64; 27] = [
    19, 20, 21, 22, 35, 36, 37, 38, 39, 25, 27, 28, 29, 30, 31, 32, 26, 49, 50, 51, 11, 12, 13, 14,
    6, 16, 17,
];
const REFLECTOR: [u64; 21] = [
    24, 41, 4, 5, 19, 20, 21, 22, 35, 36, 37, 38, 39, 25, 49, 50, 51, 11, 12, 13, 14,
];
const FA_ENDS: [u64; 9] = [24, 41, 4, 5, 63, 64, 65, 66, 67];

pub const NUCLIDE_POINT_BYTES: u64 = 48;
pub const REGION_NUCLIDES: &str = "nuclide_grid";
pub const REGION_UNIONIZED: &str = "unionized_energy_array";
pub const REGION_INDEX: &str = "index_grid";
const PAGE: u64 = crate::mm::PAGE_SIZE;

impl Xsbench {
    pub fn union_points(&self) -> u64 {
        self.isotopes * self.gridpoints
    }

    /// (region, bytes), in allocation order.
    pub fn regions(&self) -> [(&'static str, u64); 3] {
        let n = self.union_points();
        [
            (REGION_NUCLIDES, n * NUCLIDE_POINT_BYTES),
            (REGION_UNIONIZED, n * 8),
            (REGION_INDEX, n * self.isotopes * 4),
        ]
    }

    /// The nuclides of each material, as XSBench's load_mats lists them (the fuel of the large
    /// problem adds every nuclide from 68 up); ids beyond a smaller problem wrap around.
    pub fn materials(&self) -> Vec<Vec<u64>> {
        let fuel: Vec<u64> = FUEL_SMALL.iter().copied().chain(68..355).collect();
        let lists: [&[u64]; 12] = [
            &fuel, &CLADDING, &WATER, &WATER, &RPV, &REFLECTOR, &REFLECTOR, &REFLECTOR, &REFLECTOR,
            &REFLECTOR, &FA_ENDS, &FA_ENDS,
        ];
        lists
            .iter()
            .zip(NUM_NUCS)
            .map(|(l, n)| {
                l[..n.min(l.len())]
                    .iter()
                    .map(|&i| i % self.isotopes)
                    .collect()
            })
            .collect()
    }

    /// Lookups thread `i` runs: its share of the particles times lookups per particle.
    pub fn thread_lookups(&self, i: u32) -> u64 {
        let t = self.threads as u64;
        let share = self.particles / t + ((i as u64) < self.particles % t) as u64;
        share * self.lookups
    }

    /// Thread `i`'s program. Thread 0 initialises the arrays first; all start together.
    pub fn program(&self, i: u32) -> Vec<Op> {
        let mut ops = Vec::new();
        if i == 0 {
            for (region, _) in self.regions() {
                ops.push(Op::sequential_write(
                    region,
                    0,
                    None,
                    content::DATA_DEFAULT,
                    0, // the touch charges the stores that fill each page
                ));
            }
        }
        ops.push(Op::Barrier {
            name: "xsbench:start".into(),
        });
        ops.push(Op::XsbenchLookups {
            lookups: self.thread_lookups(i),
        });
        ops.push(Op::Exit);
        ops
    }
}

/// Lookups drawn ahead of use, so that their index-grid PTEs can be prefetched.
const AHEAD: usize = 8;

/// A thread's progress through its lookups.
#[derive(Clone, Debug)]
pub struct LookupState {
    pub done: u64,
    /// Lookups drawn so far: (material, energy) of the last AHEAD wait in `ahead`.
    drawn: u64,
    ahead: [(u8, f64); AHEAD],
    pub rng: crate::sim::rng::Rng,
    /// (vma index, first vpn) of the three arrays.
    pub nuclides: (usize, u32),
    pub unionized: (usize, u32),
    pub index: (usize, u32),
    pub materials: std::rc::Rc<Vec<Vec<u64>>>,
    /// Poisson mode: the cost of one lookup, as last measured on a sampled one; the time per
    /// lookup actually taken (smoothed), and when the last sample was taken.
    lookup_ns: u64,
    pace_ns: f64,
    sampled_at_ns: u64,
    /// Poisson mode: pages read per lookup in the unionized array and the nuclide grid
    /// (smoothed over samples).
    unionized_reads: f64,
    nuclide_reads: f64,
}

impl Kernel {
    /// One read of the page at `vpn` by an XSBench thread: faults if needed, sets the young bit,
    /// goes through the TLB. Returns its latency (memory plus page walk); a sampled access
    /// (`weight` > 1) counts its TLB miss `weight` times.
    #[inline]
    fn xs_read(&mut self, mm: u32, vi: usize, vpn: u32, weight: u64) -> Result<u64, Killed> {
        let start = self.mms[mm as usize].vmas[vi].start;
        let idx = (vpn - start) as usize;
        let mut pte = self.mms[mm as usize].vmas[vi].ptes[idx];
        if !pt::is_accessible(pte) {
            self.handle_mm_fault(mm, vi, vpn, false)?;
            pte = self.mms[mm as usize].vmas[vi].ptes[idx];
        }
        let node = if pt::is_present(pte) {
            self.mms[mm as usize].vmas[vi].ptes[idx] = pte | pt::YOUNG;
            self.pfn_node(pt::pfn(pte))
        } else {
            0
        };
        let mut ns = self.node_latency_ns(node);
        let cpu = self.current_cpu as usize;
        if !self.cpu_tlbs[cpu].access(mm, vpn, pte & pt::PMD != 0, pte & pt::CONT != 0) {
            self.stat.count(Vm::DtlbLoadMisses, weight);
            ns += self.hw.page_walk_ns;
        }
        Ok(ns)
    }
}

impl super::Workload {
    /// Runs lookups of task `t` until the quantum ends. Ok(true) when all are done.
    pub fn xsbench_lookups(
        &mut self,
        k: &mut Kernel,
        t: u32,
        lookups: u64,
        quantum_end_ns: u64,
    ) -> Result<bool, Killed> {
        let mm = k.tasks[t as usize].mm.expect("user task has an mm");
        let Some(x) = self.xsbench else {
            return Ok(true);
        };
        let prog = &mut self.tasks[t as usize];
        if prog.xs.is_none() {
            let seed = k.rng.next_u64();
            let find = |name: &str| {
                let r = prog.region(name).expect("xsbench region");
                let vi = k.mms[mm as usize].find_vma(r.start).expect("mapped");
                (vi, r.start)
            };
            let st = LookupState {
                done: 0,
                drawn: 0,
                ahead: [(0, 0.0); AHEAD],
                rng: crate::sim::rng::Rng::new(seed),
                nuclides: find(REGION_NUCLIDES),
                unionized: find(REGION_UNIONIZED),
                index: find(REGION_INDEX),
                materials: std::rc::Rc::new(x.materials()),
                lookup_ns: 0,
                pace_ns: 0.0,
                sampled_at_ns: 0,
                unionized_reads: 0.0,
                nuclide_reads: 0.0,
            };
            prog.xs = Some(st);
        }
        let mut st = prog.xs.take().expect("state");
        let n_union = x.union_points();
        let row_bytes = x.isotopes * 4;
        if x.poisson_index {
            let r = k.xsbench_lookups_poisson(
                t,
                mm,
                &x,
                &mut st,
                &mut prog.lookups,
                lookups,
                quantum_end_ns,
            );
            let finished = st.done >= lookups;
            prog.xs = (!finished).then_some(st);
            return r.map(|()| finished);
        }
        let cpu = k.current_cpu as usize;
        while st.done < lookups && k.clock_ns < quantum_end_ns {
            while st.drawn < lookups && st.drawn < st.done + AHEAD as u64 {
                let (mat, e) = draw_lookup(&mut st.rng);
                st.ahead[(st.drawn % AHEAD as u64) as usize] = (mat as u8, e);
                st.drawn += 1;
                let row = ((e * n_union as f64) as u64).min(n_union - 1);
                let (vi, base) = st.index;
                let page = (row * row_bytes / PAGE) as u32;
                let v = &k.mms[mm as usize].vmas[vi];
                if let Some(pte) = v.ptes.get((base + page - v.start) as usize) {
                    super::exec::prefetch(pte);
                }
                super::exec::prefetch(k.cpu_tlbs[cpu].entry(mm, base + page));
            }
            let (mat, e) = st.ahead[(st.done % AHEAD as u64) as usize];
            let mat = mat as usize;
            let row = ((e * n_union as f64) as u64).min(n_union - 1);
            let mut ns = 0;
            // The index-grid row: one or two pages.
            let first = row * row_bytes / PAGE;
            let last = (row * row_bytes + row_bytes - 1) / PAGE;
            for page in first..=last {
                let (vi, base) = st.index;
                ns += k.xs_read(mm, vi, base + page as u32, 1)?;
            }
            if st.done % x.sample == 0 {
                let (hot, _, _) = k.xs_hot_reads(mm, &x, &mut st, mat, e, x.sample)?;
                ns += hot * x.sample;
            }
            k.spend(crate::mm::TimeKind::User, ns);
            let task = &mut k.tasks[t as usize];
            task.user_ns += ns;
            task.touches += 1;
            prog.lookups += 1;
            st.done += 1;
        }
        let finished = st.done >= lookups;
        prog.xs = (!finished).then_some(st);
        Ok(finished)
    }
}

impl Kernel {
    /// The lookup loop with Poisson index-grid reads: hint faults come as events; one lookup in
    /// `sample` draws a material and energy, makes the hot-array reads and measures the lookup's
    /// cost (its index-grid part from the nodes of a few random rows); the others cost that.
    #[allow(clippy::too_many_arguments)]
    fn xsbench_lookups_poisson(
        &mut self,
        t: u32,
        mm: u32,
        x: &Xsbench,
        st: &mut LookupState,
        lookups_done: &mut u64,
        lookups: u64,
        quantum_end_ns: u64,
    ) -> Result<(), Killed> {
        const COST_PROBES: u64 = 4;
        let n_union = x.union_points();
        let row_bytes = x.isotopes * 4;
        let (ivi, _) = st.index;
        // Pages a row spans on average: one, plus the chance that it crosses a page boundary.
        let pages_per_lookup = 1.0 + (row_bytes - 1) as f64 / PAGE as f64;
        while st.done < lookups && self.clock_ns < quantum_end_ns {
            super::poisson::take_due(self)?;
            if st.done % x.sample == 0 || st.lookup_ns == 0 {
                let w = x.sample;
                let mut index_ns = 0;
                for _ in 0..COST_PROBES {
                    let row = st.rng.below(n_union);
                    let page = (row * row_bytes / PAGE) as u32;
                    let pte = self.mms[mm as usize].vmas[ivi].ptes[page as usize];
                    let node = if pt::is_present(pte) {
                        self.pfn_node(pt::pfn(pte))
                    } else {
                        0
                    };
                    index_ns += self.node_latency_ns(node) + self.hw.page_walk_ns;
                }
                let index_ns = (index_ns as f64 / COST_PROBES as f64 * pages_per_lookup) as u64;
                self.stat
                    .count(Vm::DtlbLoadMisses, (pages_per_lookup * w as f64) as u64);
                let (mat, e) = draw_lookup(&mut st.rng);
                let (hot_ns, unionized, nuclides) = self.xs_hot_reads(mm, x, st, mat, e, w)?;
                st.lookup_ns = index_ns + hot_ns.max(1);
                let smooth = |avg: f64, v: usize| {
                    if avg == 0.0 {
                        v as f64
                    } else {
                        0.99 * avg + 0.01 * v as f64
                    }
                };
                st.unionized_reads = smooth(st.unionized_reads, unionized);
                st.nuclide_reads = smooth(st.nuclide_reads, nuclides);
                // The read rate follows the threads' measured pace (faults and interrupts
                // included), smoothed over about ten samples.
                if st.done > 0 {
                    let pace = (self.clock_ns - st.sampled_at_ns) as f64 / x.sample as f64;
                    st.pace_ns = if st.pace_ns == 0.0 {
                        pace
                    } else {
                        0.9 * st.pace_ns + 0.1 * pace
                    };
                }
                st.sampled_at_ns = self.clock_ns;
                let pace_ns = if st.pace_ns > 0.0 {
                    st.pace_ns
                } else {
                    st.lookup_ns as f64
                };
                let lookups_per_ns = x.threads as f64 / pace_ns;
                for ((vi, _), reads) in [
                    (st.index, pages_per_lookup),
                    (st.unionized, st.unionized_reads),
                    (st.nuclides, st.nuclide_reads),
                ] {
                    let pages = self.mms[mm as usize].vmas[vi].ptes.len() as f64;
                    super::poisson::set_rate(self, mm, vi, lookups_per_ns * reads / pages);
                }
            }
            // Unsampled lookups up to the next sampled one, the next hint fault or the quantum's end.
            let until =
                super::poisson::next_hint_fault(self, quantum_end_ns).unwrap_or(quantum_end_ns);
            let fit = until
                .saturating_sub(self.clock_ns)
                .div_ceil(st.lookup_ns)
                .max(1);
            let k = fit
                .min(x.sample - st.done % x.sample)
                .min(lookups - st.done);
            let ns = k * st.lookup_ns;
            self.spend(crate::mm::TimeKind::User, ns);
            let task = &mut self.tasks[t as usize];
            task.user_ns += ns;
            task.touches += k;
            *lookups_done += k;
            st.done += k;
        }
        Ok(())
    }

    /// The unionized-array binary search for energy `e` and the nuclide-grid reads of material
    /// `mat`, each read standing for `w`. Returns their latency for one lookup and the pages read
    /// in each array.
    fn xs_hot_reads(
        &mut self,
        mm: u32,
        x: &Xsbench,
        st: &mut LookupState,
        mat: usize,
        e: f64,
        w: u64,
    ) -> Result<(u64, usize, usize), Killed> {
        let n_union = x.union_points();
        let row = ((e * n_union as f64) as u64).min(n_union - 1);
        let mut hot = 0;
        let (vi, base) = st.unionized;
        let (mut lo, mut hi) = (0u64, n_union - 1);
        let mut last_page = u64::MAX;
        let mut unionized = 0;
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            let page = mid * 8 / PAGE;
            if page != last_page {
                hot += self.xs_read(mm, vi, base + page as u32, w)?;
                last_page = page;
                unionized += 1;
            }
            if row >= mid {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let (vi, base) = st.nuclides;
        let k = ((e * x.gridpoints as f64) as u64).min(x.gridpoints - 2);
        let nuclides = st.materials[mat].len();
        for j in 0..nuclides {
            let n = st.materials[mat][j];
            let page = (n * x.gridpoints + k) * NUCLIDE_POINT_BYTES / PAGE;
            hot += self.xs_read(mm, vi, base + page as u32, w)?;
        }
        Ok((hot, unionized, nuclides))
    }
}

/// A lookup's material, by XSBench's distribution, and its energy, uniform in [0, 1).
fn draw_lookup(rng: &mut crate::sim::rng::Rng) -> (usize, f64) {
    let u = rng.next_f64();
    let mut acc = 0.0;
    let mat = MAT_DIST
        .iter()
        .position(|p| {
            acc += p;
            u < acc
        })
        .unwrap_or(11);
    (mat, rng.next_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_problem_has_xsbench_sizes() {
        let x = Xsbench::default();
        assert_eq!(x.union_points(), 4_012_565);
        let [(_, nuc), (_, uni), (_, idx)] = x.regions();
        assert_eq!(nuc, 192_603_120);
        assert_eq!(uni, 32_100_520);
        assert_eq!(idx, 5_697_842_300);
        let m = x.materials();
        assert_eq!(m.iter().map(|l| l.len()).collect::<Vec<_>>(), NUM_NUCS);
        // The fuel holds 321 distinct nuclides.
        let mut fuel = m[0].clone();
        fuel.sort();
        fuel.dedup();
        assert_eq!(fuel.len(), 321);
        let mean: f64 = MAT_DIST
            .iter()
            .zip(NUM_NUCS)
            .map(|(p, n)| p * n as f64)
            .sum();
        assert!((mean - 55.7).abs() < 0.1, "{mean}");
    }

    #[test]
    fn particles_are_shared_out_evenly() {
        let x = Xsbench {
            threads: 16,
            particles: 100,
            ..Xsbench::default()
        };
        let total: u64 = (0..16).map(|i| x.thread_lookups(i)).sum();
        assert_eq!(total, 100 * 34);
        assert_eq!(x.thread_lookups(0), 7 * 34);
        assert_eq!(x.thread_lookups(15), 6 * 34);
    }
}
