//! Uniform random reads of a large region, modelled per page as Poisson processes instead of one
//! simulated access per real one.
//!
//! When a program reads pages of a region uniformly at random at a total rate R, each of its N
//! pages is read as a Poisson process of rate R/N, independently of the others (the binomial
//! split of R over N pages, for N large). The kernel only sees these reads through two things:
//! the young bit, which reclaim tests and clears, and the first read after a PTE is made
//! PROT_NONE, which takes a NUMA hint fault. So each page keeps the time of its next read, drawn
//! from the exponential distribution whenever the kernel has just cleared its young bit, installed
//! it old, or armed it; a page is young once that time has passed, and an armed page's hint fault
//! is an event at that time, taken by whichever reading thread gets there first. Per page, this
//! has exactly the distribution of the real reads; it costs nothing per read.
//! The rate is the region's current read rate, as the reading threads last measured it; a page
//! armed before the rate changes keeps the time drawn at the old rate.

use crate::mm::pagetable as pt;
use crate::mm::{Kernel, ReadModel};
use crate::sim::rng::Rng;

#[derive(Clone, Debug)]
pub struct PoissonPages {
    /// Per page: when it is next read.
    pub next_read_ns: Vec<u64>,
    /// Reads per page per nanosecond.
    pub rate_per_page_ns: f64,
}

impl PoissonPages {
    pub fn new(nr_pages: usize) -> PoissonPages {
        PoissonPages {
            next_read_ns: vec![0; nr_pages],
            rate_per_page_ns: 0.0,
        }
    }
}

/// A hint fault due: (time, mm, vpn).
pub type PoissonEvent = (u64, u32, u32);

/// Pending hint faults in buckets of `BUCKET_NS` (a timing wheel): pushing is O(1), and a bucket
/// is sorted once when its time comes, so the order of events stays exact and deterministic.
#[derive(Clone, Debug, Default)]
pub struct EventWheel {
    buckets: Vec<Vec<PoissonEvent>>,
    /// Events beyond the wheel's span, re-filed as the wheel turns.
    far: Vec<PoissonEvent>,
    /// The due bucket, sorted latest first so that the earliest pops off the end.
    ready: Vec<PoissonEvent>,
    /// Absolute index of the bucket `ready` came from.
    cur: u64,
    pub len: usize,
}

const BUCKET_NS: u64 = 1_000_000;
const WHEEL_BUCKETS: u64 = 1 << 14;

impl EventWheel {
    pub fn push(&mut self, e: PoissonEvent) {
        self.len += 1;
        if self.buckets.is_empty() {
            self.buckets = vec![Vec::new(); WHEEL_BUCKETS as usize];
        }
        let b = e.0 / BUCKET_NS;
        if b <= self.cur {
            let at = self.ready.partition_point(|x| x > &e);
            self.ready.insert(at, e);
        } else if b - self.cur < WHEEL_BUCKETS {
            self.buckets[(b % WHEEL_BUCKETS) as usize].push(e);
        } else {
            self.far.push(e);
        }
    }

    /// The earliest event if it is due by `now`.
    pub fn pop_due(&mut self, now: u64) -> Option<PoissonEvent> {
        self.next_time(now)?;
        self.len -= 1;
        self.ready.pop()
    }

    /// When the earliest event is due, if that is by `limit`.
    pub fn next_time(&mut self, limit: u64) -> Option<u64> {
        loop {
            if let Some(&e) = self.ready.last() {
                return (e.0 <= limit).then_some(e.0);
            }
            if self.len == 0 || (self.cur + 1) * BUCKET_NS > limit {
                return None;
            }
            self.cur += 1;
            let slot = (self.cur % WHEEL_BUCKETS) as usize;
            let mut bucket = std::mem::take(&mut self.buckets[slot]);
            if self.cur % WHEEL_BUCKETS == 0 {
                // A turn of the wheel: file the far events that now fit.
                for e in std::mem::take(&mut self.far) {
                    let b = e.0 / BUCKET_NS;
                    if b <= self.cur {
                        bucket.push(e);
                    } else if b - self.cur < WHEEL_BUCKETS {
                        self.buckets[(b % WHEEL_BUCKETS) as usize].push(e);
                    } else {
                        self.far.push(e);
                    }
                }
            }
            bucket.sort_unstable_by(|a, b| b.cmp(a));
            self.ready = bucket;
        }
    }
}

/// The Poisson reads of a run: per modelled VMA (by the handle in `Vma::poisson`) its pages'
/// next reads, and the hint faults due. The kernel reaches it as its `ReadModel`.
#[derive(Default)]
pub struct PoissonReads {
    pub vmas: Vec<PoissonPages>,
    /// Hint faults due in Poisson-read regions, earliest first.
    pub events: EventWheel,
}

impl ReadModel for PoissonReads {
    #[inline]
    fn read_by(&self, vma: u32, idx: usize, now_ns: u64) -> bool {
        self.vmas[vma as usize].next_read_ns[idx] <= now_ns
    }

    fn rearm(
        &mut self,
        rng: &mut Rng,
        now_ns: u64,
        vma: u32,
        idx: usize,
        hint_fault: Option<(u32, u32)>,
    ) {
        let p = &mut self.vmas[vma as usize];
        let rate = p.rate_per_page_ns;
        let gap_ns = if rate > 0.0 {
            let u = rng.next_f64();
            (-(1.0 - u).ln() / rate).min(1e18) as u64
        } else {
            u64::MAX / 2
        };
        let t = now_ns + gap_ns;
        p.next_read_ns[idx] = t;
        if let Some((mm, vpn)) = hint_fault {
            // An armed page: its next read is a hint fault.
            self.events.push((t, mm, vpn));
        }
    }

    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

/// The run's Poisson reads (installed by `model_reads`).
fn reads(k: &mut Kernel) -> &mut PoissonReads {
    k.read_model
        .as_deref_mut()
        .and_then(|m| m.as_any_mut().downcast_mut())
        .expect("Poisson reads installed")
}

/// Models the reads of the `nr_pages` VMA at `start` of `mm` as Poisson processes (rate 0 until
/// `set_rate`).
pub fn model_reads(k: &mut Kernel, mm: u32, start: u32, nr_pages: u32) {
    if k.read_model.is_none() {
        k.read_model = Some(Box::<PoissonReads>::default());
    }
    let model = reads(k);
    let handle = model.vmas.len() as u32;
    model.vmas.push(PoissonPages::new(nr_pages as usize));
    let vi = k.mms[mm as usize].find_vma(start).expect("mapped");
    k.mms[mm as usize].vmas[vi].poisson = Some(handle);
}

/// Sets the region's read rate. When reads start (the rate was 0), every page's next read is
/// drawn afresh, which the exponential distribution's lack of memory makes exact.
pub fn set_rate(k: &mut Kernel, mm: u32, vi: usize, rate_per_page_ns: f64) {
    let Some(h) = k.mms[mm as usize].vmas[vi].poisson else {
        return;
    };
    let now = k.clock_ns;
    let p = &mut reads(k).vmas[h as usize];
    let starting = p.rate_per_page_ns == 0.0 && rate_per_page_ns > 0.0;
    p.rate_per_page_ns = rate_per_page_ns;
    if starting {
        let nr = p.next_read_ns.len();
        for idx in 0..nr {
            if reads(k).vmas[h as usize].next_read_ns[idx] > now {
                k.poisson_rearm(mm, vi, idx);
            }
        }
    }
}

/// When the earliest hint fault is due, if that is by `limit`.
pub fn next_hint_fault(k: &mut Kernel, limit: u64) -> Option<u64> {
    reads(k).events.next_time(limit)
}

/// Takes every hint fault due by the current clock, in time order, as reads by the current
/// task. Events whose page was re-armed or changed since are dropped.
pub fn take_due(k: &mut Kernel) -> Result<(), crate::mm::memory::Killed> {
    loop {
        let now = k.clock_ns;
        let Some((t, mm, vpn)) = reads(k).events.pop_due(now) else {
            break;
        };
        let Some(vi) = k.mms[mm as usize].find_vma(vpn) else {
            continue;
        };
        let v = &k.mms[mm as usize].vmas[vi];
        let idx = (vpn - v.start) as usize;
        // Both loads first, so that their cache misses overlap.
        let (pte, handle) = (v.ptes[idx], v.poisson);
        let next_read_ns = handle.map(|h| reads(k).vmas[h as usize].next_read_ns[idx]);
        let armed = pt::is_present(pte) && pte & pt::PROTNONE != 0;
        if !armed || next_read_ns != Some(t) {
            continue;
        }
        k.handle_mm_fault(mm, vi, vpn, false)?;
        let p = &mut k.mms[mm as usize].vmas[vi].ptes[idx];
        if pt::is_accessible(*p) {
            *p |= pt::YOUNG;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheel_pops_in_time_order_across_turns_and_only_when_due() {
        let mut w = EventWheel::default();
        let far = (WHEEL_BUCKETS + 5) * BUCKET_NS + 7;
        for (i, t) in [far, 3_500_000, 3_100_000, 500, 3_100_000]
            .iter()
            .enumerate()
        {
            w.push((*t, 0, i as u32));
        }
        assert_eq!(w.pop_due(400), None);
        assert_eq!(w.next_time(10_000_000), Some(500));
        assert_eq!(w.pop_due(1_000), Some((500, 0, 3)));
        assert_eq!(w.pop_due(3_000_000), None);
        // Equal times come out in a fixed order.
        assert_eq!(w.pop_due(4_000_000), Some((3_100_000, 0, 2)));
        assert_eq!(w.pop_due(4_000_000), Some((3_100_000, 0, 4)));
        // Pushed behind the wheel's position: still due at once.
        w.push((10, 0, 9));
        assert_eq!(w.pop_due(4_000_000), Some((10, 0, 9)));
        assert_eq!(w.pop_due(4_000_000), Some((3_500_000, 0, 1)));
        assert_eq!(w.pop_due(far - 1), None);
        assert_eq!(w.pop_due(far), Some((far, 0, 0)));
        assert_eq!(w.len, 0);
    }
}
