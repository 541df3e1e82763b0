//! TLBs and TLB shootdowns: per-CPU TLBs, the flushes of each architecture, the batched unmap
//! flush and its pending generation.
//!
//! x86 (the x86-server profile) models arch/x86/mm/tlb.c (v6.7 era: flush_tlb_mm_range with
//! tlb_single_page_flush_ceiling, native_flush_tlb_multi with the lazy-TLB condition,
//! flush_tlb_func, arch_tlbbatch_flush, the four DEBUG_TLBFLUSH counters). mm_cpumask follows
//! v6.7 up to v6.12: a CPU joins when it switches to the mm, leaves when it switches to another
//! user mm, and stays (lazy) under a kernel thread. From v6.14 (v6.18 here) it is updated
//! lazily: a CPU stays when it switches away and leaves at the first flush IPI for the mm it
//! receives while running another; should_flush_tlb then IPIs, for a flush of an mm, only the
//! CPUs running it (every CPU of the mask once a second, should_trim_cpumask), and for a
//! batched unmap's flush (no mm) every CPU of the mask that is not lazy.
//! arm64 (arm64-altra) models arch/arm64/include/asm/tlbflush.h (v6.9-v6.12): every user flush
//! is broadcast by the initiator, one TLBI ...IS per page (__flush_tlb_range, flush_tlb_page) or
//! one TLBI ASIDE1IS for MAX_DVM_OPS pages or more (flush_tlb_mm), then one DSB ISH; no IPI, no
//! cost on the other CPUs, and none of the nr_tlb_* counters (only arch/x86 counts them).
//! Batched unmap always defers (arch_tlbbatch_should_defer: Altra needs no REPEAT_TLBI
//! workaround), issues the TLBI when the PTE is cleared (arch_tlbbatch_add_pending) and waits
//! once at arch_tlbbatch_flush; arch_flush_tlb_batched_pending is a DSB.
//! The batch helpers of mm/rmap.c (should_defer_flush, set_tlb_ubc_flush_pending,
//! try_to_unmap_flush[_dirty], flush_tlb_batched_pending) are shared.
//! Each CPU's TLB is one direct-mapped array of 4K, 64K-contiguous (arm64 contpte) and 2M
//! translations tagged by mm; a full flush invalidates it all, a page flush one page. A PTE's
//! accessed bit is set by the page walk that fills it (mm/memory.rs touch), so while x86 keeps a
//! translation that reclaim aged without a flush (ptep_clear_flush_young), the page looks unused.
//! Left out: what moves a task between CPUs besides the modelled tasks (other threads of the
//! machine put its mm in more CPUs' masks, so that reclaim's batched flushes empty whole TLBs),
//! PCID/ASID recycling, KVM's paravirtual flush
//! (preempted vCPUs skipped), arm64 range TLBIs (FEAT_TLBIRANGE, which Neoverse N1 lacks), PMD-
//! stride flushes (a PMD's range is flushed as 512 pages), the iTLB beyond a fixed number of
//! code pages refilled after a full flush, and flushes of kernel mappings.

use super::vmstat::Vm;
use super::Kernel;
use crate::machine::hw::Arch;

pub const MAX_CPUS: usize = 256;
/// Above this many pages a range flush becomes a full flush (tlb_single_page_flush_ceiling).
pub const TLB_SINGLE_PAGE_FLUSH_CEILING: u64 = 33;
/// arm64: from this many pages a range flush becomes one ASID flush on cores without range
/// TLBIs (PTRS_PER_PTE: MAX_TLBI_OPS in v6.9, later renamed MAX_DVM_OPS).
pub const MAX_DVM_OPS: u64 = 512;
pub const NO_MM: u32 = u32::MAX;
/// How often a flush IPIs every CPU of an mm's cpumask to trim it (HZ jiffies).
pub const TRIM_CPUMASK_INTERVAL_NS: u64 = 1_000_000_000;

/// A set of CPUs (struct cpumask).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuMask([u64; MAX_CPUS / 64]);

impl CpuMask {
    #[inline]
    pub fn set(&mut self, cpu: u32) {
        self.0[cpu as usize / 64] |= 1 << (cpu % 64);
    }
    #[inline]
    pub fn clear(&mut self, cpu: u32) {
        self.0[cpu as usize / 64] &= !(1 << (cpu % 64));
    }
    #[inline]
    pub fn test(&self, cpu: u32) -> bool {
        self.0[cpu as usize / 64] & (1 << (cpu % 64)) != 0
    }
    pub fn or(&mut self, other: &CpuMask) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a |= b;
        }
    }
    /// Removes `other`'s CPUs; true if any CPU is left (arch_tlbbatch_done).
    pub fn andnot(&mut self, other: &CpuMask) -> bool {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a &= !b;
        }
        !self.is_empty()
    }
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }
    /// Does the mask hold a CPU other than `cpu`?
    pub fn has_other_than(&self, cpu: u32) -> bool {
        let mut m = *self;
        m.clear(cpu);
        !m.is_empty()
    }
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &bits)| {
            (0..64u32)
                .filter(move |b| bits & (1 << b) != 0)
                .map(move |b| w as u32 * 64 + b)
        })
    }
}

/// One CPU's address-space and TLB state.
pub struct CpuTlb {
    /// The user mm whose page tables are loaded (kept under a kernel thread: lazy TLB).
    pub loaded_mm: u32,
    pub lazy: bool,
    /// The task last run here, which pays for interrupts this CPU receives.
    pub last_task: u32,
    /// After a full flush the code's translations must be refilled.
    pub itlb_cold: bool,
    /// A flush skipped this CPU while lazy: it flushes when it switches back (tlb_gen check).
    pub stale: bool,
    /// Other mms whose flushes this CPU missed while running another (v6.14+): each one's
    /// translations go when the CPU switches back to it (tlb_gen check).
    pub stale_mms: Vec<u32>,
    gen: u64,
    tags: Vec<u64>,
}

const TAG_INVALID: u64 = u64::MAX;
const TAG_CONT: u64 = 1 << 55;
const TAG_HUGE: u64 = 1 << 56;
/// A tag is the vpn (bits 0-31), the mm (32-54), the contiguous bit (55), the huge bit (56) and
/// the flush generation (57-63): a full flush bumps the generation instead of clearing every
/// entry.
const MM_MASK: u64 = 0x7f_ffff;
const GEN_SHIFT: u32 = 57;
const GEN_MASK: u64 = (1 << (64 - GEN_SHIFT)) - 1;
/// Pages one contpte TLB entry covers (CONT_PTES with 4K pages).
const CONT_PAGES_SHIFT: u32 = 4;

#[inline]
fn tag_of(mm: u32, vpn: u32, huge: bool, cont: bool) -> u64 {
    let mm = (mm as u64 & MM_MASK) << 32;
    if huge {
        TAG_HUGE | mm | (vpn >> 9) as u64
    } else if cont {
        TAG_CONT | mm | (vpn >> CONT_PAGES_SHIFT) as u64
    } else {
        mm | vpn as u64
    }
}

impl CpuTlb {
    pub fn new(entries: usize) -> CpuTlb {
        CpuTlb {
            loaded_mm: NO_MM,
            lazy: true,
            last_task: u32::MAX,
            itlb_cold: true,
            stale: false,
            stale_mms: Vec::new(),
            gen: 0,
            tags: vec![TAG_INVALID; entries.max(1)],
        }
    }

    #[inline]
    fn slot(&self, tag: u64) -> usize {
        // Fibonacci hashing spreads neighbouring pages over the sets, as the STLB's index bits do;
        // multiply-shift maps the hash onto the entries without a division.
        let hash = tag.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((hash as u128 * self.tags.len() as u128) >> 64) as usize
    }

    /// Looks up and fills the translation (`cont`: of a contpte block, one entry for its 16
    /// pages); true on a hit.
    #[inline]
    pub fn access(&mut self, mm: u32, vpn: u32, huge: bool, cont: bool) -> bool {
        let tag = tag_of(mm, vpn, huge, cont);
        let s = self.slot(tag);
        let tag = tag | self.gen << GEN_SHIFT;
        let hit = self.tags[s] == tag;
        self.tags[s] = tag;
        hit
    }

    /// Where a translation would sit, for prefetching.
    #[inline]
    pub fn entry(&self, mm: u32, vpn: u32) -> &u64 {
        &self.tags[self.slot(tag_of(mm, vpn, false, false))]
    }

    /// A flush of `mm` this CPU, running another mm, does not do now.
    fn note_stale(&mut self, mm: u32) {
        if !self.stale_mms.contains(&mm) {
            self.stale_mms.push(mm);
        }
    }

    pub fn flush_all(&mut self) {
        self.stale_mms.clear();
        self.gen = (self.gen + 1) & GEN_MASK;
        if self.gen == 0 {
            self.tags.fill(TAG_INVALID);
        }
        self.itlb_cold = true;
    }

    pub fn flush_one(&mut self, mm: u32, vpn: u32) {
        for (huge, cont) in [(false, false), (true, false), (false, true)] {
            let tag = tag_of(mm, vpn, huge, cont);
            let s = self.slot(tag);
            if self.tags[s] == tag | self.gen << GEN_SHIFT {
                self.tags[s] = TAG_INVALID;
            }
        }
    }

    /// Invalidates every translation of `mm` (TLBI ASIDE1IS), leaving other mms' entries.
    pub fn flush_mm(&mut self, mm: u32) {
        let mm = mm as u64 & MM_MASK;
        for t in self.tags.iter_mut() {
            if *t != TAG_INVALID && *t >> GEN_SHIFT == self.gen && (*t >> 32) & MM_MASK == mm {
                *t = TAG_INVALID;
            }
        }
        if self.loaded_mm as u64 & MM_MASK == mm {
            self.itlb_cold = true;
        }
    }
}

/// Pending flush of PTEs cleared under TTU_BATCH_FLUSH (struct tlbflush_unmap_batch).
#[derive(Default, Clone, Copy, Debug)]
pub struct TlbBatch {
    pub flush_required: bool,
    /// A cleared PTE was dirty: flush before writing the folio out.
    pub writable: bool,
    pub cpumask: CpuMask,
}

impl TlbBatch {
    /// fold_ubc: moves `src`'s pending flush into `self`.
    pub fn fold(&mut self, src: &mut TlbBatch) {
        if src.flush_required {
            self.cpumask.or(&src.cpumask);
            self.writable |= src.writable;
            self.flush_required = true;
        }
        *src = TlbBatch::default();
    }
}

/// What a flush covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushRange {
    All,
    /// Up to tlb_single_page_flush_ceiling pages of one mm, flushed one by one (INVLPG).
    Pages {
        mm: u32,
        vpn: u32,
        nr: u32,
    },
}

impl Kernel {
    /// switch_mm_irqs_off / enter_lazy_tlb: task `t` starts running on `cpu`. A CPU the task
    /// ran on last and left goes idle, keeping its mm lazily.
    pub fn switch_to(&mut self, cpu: u32, t: u32) {
        if let Some(prev) = self.tasks[t as usize].last_cpu.replace(cpu) {
            let other = &mut self.cpu_tlbs[prev as usize];
            if prev != cpu && other.last_task == t {
                other.lazy = true;
                other.last_task = u32::MAX;
            }
        }
        let mm = self.tasks[t as usize].mm;
        let c = &mut self.cpu_tlbs[cpu as usize];
        c.last_task = t;
        match mm {
            None => c.lazy = true,
            Some(mm) => {
                let prev = c.loaded_mm;
                if std::mem::take(&mut c.stale) {
                    c.flush_all();
                }
                if let Some(i) = c.stale_mms.iter().position(|&m| m == mm) {
                    c.stale_mms.swap_remove(i);
                    c.flush_mm(mm);
                }
                c.loaded_mm = mm;
                c.lazy = false;
                if prev != mm {
                    let lazily = self.generation().updates_mm_cpumask_lazily();
                    if prev != NO_MM && !lazily {
                        self.mms[prev as usize].cpumask.clear(cpu);
                    }
                    self.mms[mm as usize].cpumask.set(cpu);
                }
            }
        }
    }

    /// A task's mm goes away: no CPU keeps it loaded.
    pub fn tlb_exit_mm(&mut self, mm: u32) {
        for c in self.cpu_tlbs.iter_mut() {
            if c.loaded_mm == mm {
                c.loaded_mm = NO_MM;
                c.lazy = true;
            }
            c.stale_mms.retain(|&m| m != mm);
        }
        self.mms[mm as usize].cpumask = CpuMask::default();
    }

    /// A data access through the current CPU's TLB: None on a hit, else the page walk's cost
    /// beyond the memory access.
    #[inline]
    pub fn tlb_access(
        &mut self,
        mm: u32,
        vpn: u32,
        huge: bool,
        cont: bool,
        write: bool,
    ) -> Option<u64> {
        let cpu = self.current_cpu as usize;
        if self.cpu_tlbs[cpu].access(mm, vpn, huge, cont) {
            return None;
        }
        self.stat.count(
            if write {
                Vm::DtlbStoreMisses
            } else {
                Vm::DtlbLoadMisses
            },
            1,
        );
        Some(self.hw.page_walk_ns)
    }

    /// The program's code translations, refilled on the first run after a full flush.
    pub fn itlb_refill(&mut self) -> u64 {
        let cpu = self.current_cpu as usize;
        if !std::mem::take(&mut self.cpu_tlbs[cpu].itlb_cold) {
            return 0;
        }
        let n = self.hw.itlb_code_pages;
        self.stat.count(Vm::ItlbLoadMisses, n);
        n * self.hw.page_walk_ns
    }

    /// flush_tlb_func on `cpu` for a flush of `mm` (None: a batched unmap's) from the current
    /// CPU. Counts and charges it.
    fn flush_tlb_func(&mut self, cpu: u32, range: FlushRange, mm: Option<u32>) {
        let local = cpu == self.current_cpu;
        let c = &mut self.cpu_tlbs[cpu as usize];
        if !local {
            self.stat.count(Vm::NrTlbRemoteFlushReceived, 1);
            let t = c.last_task;
            if let Some(task) = self.tasks.get_mut(t as usize) {
                task.pending_irq_ns += self.hw.tlb_flush_ipi_receive_ns;
            }
            // Another mm runs here: nothing is flushed now, the mm's translations go when the
            // CPU switches back (tlb_gen). From v6.14 the CPU leaves the mask.
            if let Some(m) = mm.filter(|&m| self.cpu_tlbs[cpu as usize].loaded_mm != m) {
                self.cpu_tlbs[cpu as usize].note_stale(m);
                if self.generation().updates_mm_cpumask_lazily() {
                    self.mms[m as usize].cpumask.clear(cpu);
                }
                return;
            }
        }
        let c = &mut self.cpu_tlbs[cpu as usize];
        if c.loaded_mm == NO_MM {
            return;
        }
        match range {
            FlushRange::Pages { mm, vpn, nr } => {
                for i in 0..nr {
                    c.flush_one(mm, vpn + i);
                }
                if local {
                    self.stat.count(Vm::NrTlbLocalFlushOne, nr as u64);
                    self.spend(
                        super::TimeKind::TlbFlushLocal,
                        nr as u64 * self.hw.tlb_flush_local_one_ns,
                    );
                }
            }
            FlushRange::All => {
                c.flush_all();
                if local {
                    self.stat.count(Vm::NrTlbLocalFlushAll, 1);
                    self.spend(
                        super::TimeKind::TlbFlushLocal,
                        self.hw.tlb_flush_local_all_ns,
                    );
                }
            }
        }
    }

    /// native_flush_tlb_multi: an IPI to each CPU of `mask` that is not lazy (or to all with
    /// `freed_tables`), from v6.14 only to those running `mm` unless it is a batched unmap's
    /// flush (`mm` None) or `trim_cpumask`; the initiator runs the flush itself when it is in
    /// the mask.
    fn flush_tlb_multi(
        &mut self,
        mask: &CpuMask,
        range: FlushRange,
        freed_tables: bool,
        mm: Option<u32>,
        trim_cpumask: bool,
    ) {
        self.stat.count(Vm::NrTlbRemoteFlush, 1);
        let lazily = self.generation().updates_mm_cpumask_lazily();
        let mut interrupted = false;
        for cpu in mask.iter() {
            let c = &self.cpu_tlbs[cpu as usize];
            // should_flush_tlb (v6.14+), tlb_is_not_lazy before
            let flush = freed_tables
                || (!c.lazy
                    && (!lazily || mm.is_none() || mm == Some(c.loaded_mm) || trim_cpumask));
            if flush {
                interrupted |= cpu != self.current_cpu;
                self.flush_tlb_func(cpu, range, mm);
            } else if c.lazy {
                self.cpu_tlbs[cpu as usize].stale = true;
            } else if let Some(m) = mm {
                // busy with another mm: its translations of `m` go at the switch back
                self.cpu_tlbs[cpu as usize].note_stale(m);
            }
        }
        if interrupted {
            // The initiator sends the IPIs and waits for every receiver to acknowledge.
            self.spend(
                super::TimeKind::TlbShootdownSend,
                self.hw.tlb_flush_ipi_send_ns,
            );
        }
    }

    /// flush_tlb_mm_range over `nr_pages` pages from `vpn` of `mm` (`freed_tables`: page tables
    /// went too), as the architecture does it.
    pub fn flush_tlb_mm_range(&mut self, mm: u32, vpn: u32, nr_pages: u64, freed_tables: bool) {
        match self.hw.arch {
            Arch::X86 => self.x86_flush_tlb_mm_range(mm, vpn, nr_pages, freed_tables),
            // A freed table only changes which TLBI is used (VAE1IS, not VALE1IS), not how many.
            Arch::Arm64 => self.arm64_flush_tlb_range(mm, vpn, nr_pages),
        }
    }

    /// arm64 __flush_tlb_range: a TLBI per page and one DSB, or flush_tlb_mm (one ASID TLBI and
    /// the DSB) from MAX_DVM_OPS pages.
    fn arm64_flush_tlb_range(&mut self, mm: u32, vpn: u32, nr_pages: u64) {
        if nr_pages >= MAX_DVM_OPS {
            self.tlbi_aside1is(mm);
        } else {
            self.tlbi_vale1is(mm, vpn, nr_pages as u32);
        }
        self.dsb_ish();
    }

    /// x86 flush_tlb_mm_range: INVLPGs up to the ceiling, else a full flush; IPIs to the other
    /// CPUs of mm_cpumask.
    fn x86_flush_tlb_mm_range(&mut self, mm: u32, vpn: u32, nr_pages: u64, freed_tables: bool) {
        let range = if nr_pages <= TLB_SINGLE_PAGE_FLUSH_CEILING && !freed_tables {
            FlushRange::Pages {
                mm,
                vpn,
                nr: nr_pages as u32,
            }
        } else {
            FlushRange::All
        };
        let mask = self.mms[mm as usize].cpumask;
        let cpu = self.current_cpu;
        if mask.has_other_than(cpu) {
            let trim = self.should_trim_cpumask(mm);
            self.flush_tlb_multi(&mask, range, freed_tables, Some(mm), trim);
        } else if self.cpu_tlbs[cpu as usize].loaded_mm == mm {
            self.flush_tlb_func(cpu, range, Some(mm));
        }
    }

    /// should_trim_cpumask (v6.14+): once a second a flush of `mm` goes to every CPU of its
    /// mask, so that those no longer running it leave.
    fn should_trim_cpumask(&mut self, mm: u32) -> bool {
        if !self.generation().updates_mm_cpumask_lazily() {
            return false;
        }
        let m = &mut self.mms[mm as usize];
        if self.clock_ns > m.next_trim_cpumask_ns {
            m.next_trim_cpumask_ns = self.clock_ns + TRIM_CPUMASK_INTERVAL_NS;
            return true;
        }
        false
    }

    /// flush_tlb_mm: everything of `mm`, page tables included.
    pub fn flush_tlb_mm(&mut self, mm: u32) {
        self.flush_tlb_mm_range(mm, 0, u64::MAX, true);
    }

    /// should_defer_flush for a TTU_BATCH_FLUSH unmap (arch_tlbbatch_should_defer): on x86 only
    /// when the mm may be live on another CPU; on arm64 always.
    pub fn should_defer_flush(&self, mm: u32) -> bool {
        match self.hw.arch {
            Arch::X86 => self.mms[mm as usize]
                .cpumask
                .has_other_than(self.current_cpu),
            Arch::Arm64 => true,
        }
    }

    /// arm64: one broadcast TLBI VALE1IS per page from `vpn`, not waited for. Every CPU's TLB
    /// drops the pages (the hardware broadcast reaches them all without interrupting them).
    pub fn tlbi_vale1is(&mut self, mm: u32, vpn: u32, nr: u32) {
        for c in self.cpu_tlbs.iter_mut() {
            for i in 0..nr {
                c.flush_one(mm, vpn + i);
            }
        }
        self.spend(
            super::TimeKind::TlbShootdownSend,
            nr as u64 * self.hw.tlbi_broadcast_ns,
        );
    }

    /// arm64: one broadcast TLBI ASIDE1IS: every translation of `mm` on every CPU.
    fn tlbi_aside1is(&mut self, mm: u32) {
        for c in self.cpu_tlbs.iter_mut() {
            c.flush_mm(mm);
        }
        self.spend(super::TimeKind::TlbShootdownSend, self.hw.tlbi_broadcast_ns);
    }

    /// arm64: DSB ISH, waiting until the TLBIs issued so far have completed everywhere.
    pub fn dsb_ish(&mut self) {
        self.spend(super::TimeKind::TlbShootdownSend, self.hw.dsb_ish_ns);
    }

    /// The flush for one PTE cleared by an unmap (`pte` is its old value): deferred into the
    /// task's batch, or done now as ptep_clear_flush does. Nothing for an inaccessible PTE.
    pub fn unmap_flush_pte(&mut self, mm: u32, vpn: u32, pte: super::pagetable::Pte) {
        use super::pagetable as pt;
        if !pt::is_accessible(pte) {
            return;
        }
        if self.should_defer_flush(mm) {
            let dirty = pte & pt::DIRTY != 0;
            let mask = self.mms[mm as usize].cpumask;
            let b = self.migrc_hook_defer_batch(pte);
            b.cpumask.or(&mask);
            b.flush_required = true;
            b.writable |= dirty;
            self.mms[mm as usize].tlb_flush_batched_pending += 1;
            if self.hw.arch == Arch::Arm64 {
                // arch_tlbbatch_add_pending: the TLBI goes out now; only the wait is deferred.
                self.tlbi_vale1is(mm, vpn, 1);
            }
        } else {
            self.flush_tlb_mm_range(mm, vpn, 1, false);
        }
    }

    /// arch_tlbbatch_flush of a batch (the mask is left for the caller, as MIGRC needs it). On
    /// arm64 the TLBIs are out already: one DSB waits for them all.
    pub fn arch_tlbbatch_flush(&mut self, batch: &TlbBatch) {
        let cpu = self.current_cpu;
        match self.hw.arch {
            Arch::X86 if batch.cpumask.has_other_than(cpu) => {
                self.flush_tlb_multi(&batch.cpumask, FlushRange::All, false, None, false)
            }
            Arch::X86 if batch.cpumask.test(cpu) => self.flush_tlb_func(cpu, FlushRange::All, None),
            Arch::X86 => {}
            Arch::Arm64 => self.dsb_ish(),
        }
    }

    /// try_to_unmap_flush: one flush for every PTE deferred since the last one. With MIGRC the
    /// flushed CPUs also retire pending migrations.
    pub fn try_to_unmap_flush(&mut self) {
        let b = std::mem::take(&mut self.tlb_batch);
        if !b.flush_required {
            return;
        }
        self.arch_tlbbatch_flush(&b);
        self.migrc_flush_end(&b.cpumask);
    }

    /// try_to_unmap_flush_dirty: flush before writeback if a dirty PTE was cleared.
    pub fn try_to_unmap_flush_dirty(&mut self) {
        if self.tlb_batch.writable {
            self.try_to_unmap_flush();
        }
    }

    /// flush_tlb_batched_pending: the first page-table change after a batched unmap of `mm`
    /// flushes the whole mm, once per generation (arch_flush_tlb_batched_pending: on arm64 a
    /// DSB for the TLBIs already issued).
    pub fn flush_tlb_batched_pending(&mut self, mm: u32) {
        let m = &mut self.mms[mm as usize];
        if m.tlb_flush_batched_pending != m.tlb_flush_batched_flushed {
            m.tlb_flush_batched_flushed = m.tlb_flush_batched_pending;
            match self.hw.arch {
                Arch::X86 => self.flush_tlb_mm(mm),
                Arch::Arm64 => self.dsb_ish(),
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::mm::pagetable as pt;

    /// A kernel on `hardware` with 8 CPUs, 64K mTHP always (PMD THP never) and one task whose mm
    /// runs on CPU 0 and was loaded on CPU 1 (as if a second thread ran there). Returns the
    /// kernel, the mm and the start of a 512-page anonymous mapping.
    pub(crate) fn boot(hardware: &str) -> (Kernel, u32, u32) {
        let toml = format!(
            r#"
name = "t"
[machine]
hardware = "{hardware}"
[[machine.node]]
memory = "256M"
cpus = 8
[knobs]
"/sys/kernel/mm/transparent_hugepage/enabled" = "never"
"/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled" = "always"
[[task]]
name = "t"
ops = [{{ op = "mmap", region = "a", size = "2M" }}]
"#
        );
        let (mut k, t) = crate::mm::boot_for_test(&toml, "v6.10");
        let mm = k.tasks[t as usize].mm.unwrap();
        k.cpu_tlbs[1].loaded_mm = mm;
        k.cpu_tlbs[1].lazy = false;
        k.cpu_tlbs[1].last_task = t;
        k.mms[mm as usize].cpumask.set(1);
        let start = k.mmap_anon(mm, 512);
        (k, mm, start)
    }

    fn tlb_counters(k: &Kernel) -> [u64; 4] {
        [
            Vm::NrTlbRemoteFlush,
            Vm::NrTlbRemoteFlushReceived,
            Vm::NrTlbLocalFlushOne,
            Vm::NrTlbLocalFlushAll,
        ]
        .map(|c| k.stat.get(c))
    }

    #[test]
    fn arm64_flush_is_a_broadcast_tlbi_and_a_dsb_without_ipi_or_counter() {
        let (mut k, mm, vpn) = boot("arm64-altra");
        // Only CPU 0 runs the mm: x86 would flush locally; arm64 still broadcasts.
        k.mms[mm as usize].cpumask.clear(1);
        assert!(!k.cpu_tlbs[1].access(mm, vpn, false, false));
        let t0 = k.clock_ns;
        k.flush_tlb_mm_range(mm, vpn, 1, false);
        assert_eq!(k.clock_ns - t0, k.hw.tlbi_broadcast_ns + k.hw.dsb_ish_ns);
        // The other core lost the entry without being interrupted; arm64 counts nothing.
        assert!(!k.cpu_tlbs[1].access(mm, vpn, false, false));
        assert!(k.tasks.iter().all(|t| t.pending_irq_ns == 0));
        assert_eq!(tlb_counters(&k), [0; 4]);
        // A range of 3 pages is 3 TLBIs and one wait.
        let t0 = k.clock_ns;
        k.flush_tlb_mm_range(mm, vpn, 3, false);
        assert_eq!(
            k.clock_ns - t0,
            3 * k.hw.tlbi_broadcast_ns + k.hw.dsb_ish_ns
        );
    }

    #[test]
    fn arm64_flush_of_max_dvm_ops_pages_is_one_asid_tlbi() {
        let (mut k, mm, vpn) = boot("arm64-altra");
        let other = k.mm_create(0, 0);
        for c in [0, 1] {
            k.cpu_tlbs[c].access(mm, vpn + 7, false, false);
            k.cpu_tlbs[c].access(other, vpn + 7, false, false);
        }
        let t0 = k.clock_ns;
        k.flush_tlb_mm_range(mm, vpn, MAX_DVM_OPS, false);
        assert_eq!(k.clock_ns - t0, k.hw.tlbi_broadcast_ns + k.hw.dsb_ish_ns);
        for c in [0, 1] {
            assert!(!k.cpu_tlbs[c].access(mm, vpn + 7, false, false));
            // TLBI ASIDE1IS leaves other address spaces alone.
            assert!(k.cpu_tlbs[c].access(other, vpn + 7, false, false));
        }
        // One page less is a TLBI per page.
        let t0 = k.clock_ns;
        k.flush_tlb_mm_range(mm, vpn, MAX_DVM_OPS - 1, false);
        let n = MAX_DVM_OPS - 1;
        assert_eq!(
            k.clock_ns - t0,
            n * k.hw.tlbi_broadcast_ns + k.hw.dsb_ish_ns
        );
    }

    #[test]
    fn arm64_batched_unmap_issues_a_tlbi_per_page_and_one_dsb() {
        let (mut k, mm, vpn) = boot("arm64-altra");
        k.mms[mm as usize].cpumask.clear(1);
        // arch_tlbbatch_should_defer: always, even for an mm no other CPU runs.
        assert!(k.should_defer_flush(mm));
        let n = 5;
        let t0 = k.clock_ns;
        for i in 0..n {
            k.unmap_flush_pte(mm, vpn + i, pt::mk_present(1000 + i, pt::WRITE));
        }
        assert_eq!(k.clock_ns - t0, n as u64 * k.hw.tlbi_broadcast_ns);
        let t0 = k.clock_ns;
        k.try_to_unmap_flush();
        assert_eq!(k.clock_ns - t0, k.hw.dsb_ish_ns);
        // Nothing pending: no second wait. The next page-table change of the mm waits once.
        k.try_to_unmap_flush();
        k.flush_tlb_batched_pending(mm);
        k.flush_tlb_batched_pending(mm);
        assert_eq!(k.clock_ns - t0, 2 * k.hw.dsb_ish_ns);
        assert_eq!(tlb_counters(&k), [0; 4]);
    }

    #[test]
    fn x86_flushes_are_unchanged() {
        let (mut k, mm, vpn) = boot("x86-server");
        // Another CPU runs the mm: the unmap is batched and flushed by IPI, and counted.
        assert!(k.should_defer_flush(mm));
        k.unmap_flush_pte(mm, vpn, pt::mk_present(1000, pt::WRITE));
        let t0 = k.clock_ns;
        k.try_to_unmap_flush();
        assert_eq!(
            k.clock_ns - t0,
            k.hw.tlb_flush_local_all_ns + k.hw.tlb_flush_ipi_send_ns
        );
        assert_eq!(tlb_counters(&k), [1, 1, 0, 1]);
        // Alone on its CPU: no batching, a local INVLPG.
        k.mms[mm as usize].cpumask.clear(1);
        assert!(!k.should_defer_flush(mm));
        let t0 = k.clock_ns;
        k.unmap_flush_pte(mm, vpn, pt::mk_present(1000, pt::WRITE));
        assert_eq!(k.clock_ns - t0, k.hw.tlb_flush_local_one_ns);
        assert_eq!(tlb_counters(&k), [1, 1, 1, 1]);
    }

    #[test]
    fn from_v6_14_a_cpu_stays_in_the_mask_of_an_mm_it_left_until_a_flush_finds_it_elsewhere() {
        let toml = "name = \"t\"\n[[machine.node]]\nmemory = \"256M\"\ncpus = 2\n\
                    [[task]]\nname = \"t\"\nops = [{ op = \"exit\" }]\n";
        for (profile, stays) in [("v6.12", false), ("v6.18", true)] {
            let (mut k, t) = crate::mm::boot_for_test(toml, profile);
            let mm = k.tasks[t as usize].mm.unwrap();
            let vpn = k.mmap_anon(mm, 16);
            // the process ran on CPU 1, which then switched to another process
            k.switch_to(1, t);
            let other = k.mm_create(0, t);
            k.tasks[t as usize].mm = Some(other);
            k.switch_to(1, t);
            k.tasks[t as usize].mm = Some(mm);
            assert_eq!(k.mms[mm as usize].cpumask.test(1), stays, "{profile}");
            // it runs on CPU 0 again
            k.current_cpu = 0;
            k.cpu_tlbs[0].loaded_mm = mm;
            k.cpu_tlbs[0].lazy = false;
            k.mms[mm as usize].cpumask.set(0);
            let received = |k: &Kernel| k.stat.get(Vm::NrTlbRemoteFlushReceived);
            // a batched unmap's flush names no mm: every busy CPU of the mask is sent an IPI
            k.unmap_flush_pte(mm, vpn, pt::mk_present(1000, pt::WRITE));
            k.try_to_unmap_flush();
            assert_eq!(received(&k), stays as u64, "{profile}");
            // a flush of the mm goes only where it runs, until the trim second is up; then the
            // IPI finds CPU 1 running another mm, which takes it out of the mask
            k.flush_tlb_mm_range(mm, vpn, 1, false);
            assert_eq!(received(&k), stays as u64, "{profile}");
            k.clock_ns += TRIM_CPUMASK_INTERVAL_NS + 1;
            k.flush_tlb_mm_range(mm, vpn, 1, false);
            assert_eq!(received(&k), 2 * stays as u64, "{profile}");
            assert!(!k.mms[mm as usize].cpumask.test(1), "{profile}");
        }
    }

    #[test]
    fn cpumask_set_ops() {
        let mut a = CpuMask::default();
        a.set(3);
        a.set(70);
        assert!(a.test(3) && a.test(70) && !a.test(4));
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![3, 70]);
        assert!(a.has_other_than(3));
        let mut b = CpuMask::default();
        b.set(70);
        assert!(a.andnot(&b));
        assert!(!a.has_other_than(3));
        assert!(!a.andnot(&a.clone()));
    }

    /// x86 reclaim clears a young bit without a flush (ptep_clear_flush_young): while the
    /// translation stays cached the page's accesses hit the TLB and leave the bit clear, so the
    /// next scan finds it unreferenced. arm64 flushes as it clears, and MADV_COLD's mmu_gather
    /// flushes what it made old, on both: the next access walks and sets the bit again.
    #[test]
    fn a_young_bit_cleared_without_a_flush_stays_clear_while_the_tlb_holds_the_page() {
        use crate::mm::folio::content::DATA_DEFAULT;
        for (hardware, young_again) in [("x86-server", false), ("arm64-altra", true)] {
            let (mut k, mm, start) = boot(hardware);
            let vi = k.mms[mm as usize].find_vma(start).unwrap();
            let folio_at =
                |k: &Kernel, i: usize| k.mem.head_of(pt::pfn(k.mms[mm as usize].vmas[vi].ptes[i]));
            k.touch(mm, start, true, DATA_DEFAULT).unwrap();
            let folio = folio_at(&k, 0);
            assert_eq!(k.folio_referenced(folio).0, 1, "{hardware}");
            k.touch(mm, start, false, DATA_DEFAULT).unwrap();
            assert_eq!(k.folio_referenced(folio).0 == 1, young_again, "{hardware}");
            // Once the translation is flushed, the next access walks and sets the bit.
            k.flush_tlb_mm_range(mm, start, 16, false);
            k.touch(mm, start, false, DATA_DEFAULT).unwrap();
            assert_eq!(k.folio_referenced(folio).0, 1, "{hardware}");
            // MADV_COLD flushes the PTEs it makes old.
            k.touch(mm, start + 16, true, DATA_DEFAULT).unwrap();
            k.lru_add_drain();
            k.madvise_cold_or_pageout(mm, vi, 16, 32, false);
            let cold = folio_at(&k, 16);
            assert_eq!(k.folio_referenced(cold).0, 0, "{hardware}");
            k.touch(mm, start + 16, false, DATA_DEFAULT).unwrap();
            assert_eq!(k.folio_referenced(cold).0, 1, "{hardware}");
        }
    }

    #[test]
    fn tlb_hits_after_fill_and_misses_after_flush() {
        let mut t = CpuTlb::new(64);
        assert!(!t.access(1, 100, false, false));
        assert!(t.access(1, 100, false, false));
        // Another mm's page at the same address is a different translation.
        assert!(!t.access(2, 100, false, false));
        t.flush_one(1, 100);
        assert!(!t.access(1, 100, false, false));
        t.flush_all();
        assert!(!t.access(1, 100, false, false));
        // A 2M translation covers all of its pages, a contpte one its 16.
        assert!(!t.access(1, 512, true, false));
        assert!(t.access(1, 1000, true, false));
        assert!(!t.access(1, 32, false, true));
        assert!(t.access(1, 47, false, true));
        assert!(!t.access(1, 48, false, true));
        // Flushing one page of a contpte block drops the block's entry.
        t.flush_one(1, 40);
        assert!(!t.access(1, 33, false, true));
    }
}
