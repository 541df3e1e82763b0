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
use crate::mm::Kernel;

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

impl Kernel {
    /// The page was read if its next read time has passed: sets the young bit before a reader of
    /// it (reclaim, migration) looks.
    #[inline]
    pub fn poisson_advance(&mut self, mm: u32, vi: usize, idx: usize) {
        let now = self.clock_ns;
        let v = &mut self.mms[mm as usize].vmas[vi];
        if let Some(p) = &v.poisson {
            // `&`, not `&&`: both loads (usually cache misses) can then be in flight at once.
            if (p.next_read_ns[idx] <= now) & pt::is_accessible(v.ptes[idx]) {
                v.ptes[idx] |= pt::YOUNG;
            }
        }
    }

    /// The page's young bit was cleared, or its PTE replaced or armed (PROT_NONE) now: draws its
    /// next read, which is a hint fault for an armed page. Returns that time (None outside a
    /// Poisson region).
    pub fn poisson_rearm(&mut self, mm: u32, vi: usize, idx: usize) -> Option<u64> {
        let rate = self.mms[mm as usize].vmas[vi]
            .poisson
            .as_ref()?
            .rate_per_page_ns;
        let gap_ns = if rate > 0.0 {
            let u = self.rng.next_f64();
            (-(1.0 - u).ln() / rate).min(1e18) as u64
        } else {
            u64::MAX / 2
        };
        let t = self.clock_ns + gap_ns;
        let v = &mut self.mms[mm as usize].vmas[vi];
        v.poisson.as_mut()?.next_read_ns[idx] = t;
        if v.ptes[idx] & pt::PROTNONE != 0 {
            // An armed page: its next read is a hint fault.
            let vpn = v.start + idx as u32;
            self.poisson_events.push((t, mm, vpn));
        }
        Some(t)
    }

    /// Sets the region's read rate. When reads start (the rate was 0), every page's next read is
    /// drawn afresh, which the exponential distribution's lack of memory makes exact.
    pub fn poisson_set_rate(&mut self, mm: u32, vi: usize, rate_per_page_ns: f64) {
        let Some(p) = self.mms[mm as usize].vmas[vi].poisson.as_mut() else {
            return;
        };
        let starting = p.rate_per_page_ns == 0.0 && rate_per_page_ns > 0.0;
        p.rate_per_page_ns = rate_per_page_ns;
        if starting {
            let now = self.clock_ns;
            let nr = p.next_read_ns.len();
            for idx in 0..nr {
                let pending = self.mms[mm as usize].vmas[vi]
                    .poisson
                    .as_ref()
                    .is_some_and(|p| p.next_read_ns[idx] > now);
                if pending {
                    self.poisson_rearm(mm, vi, idx);
                }
            }
        }
    }

    /// Takes every hint fault due by the current clock, in time order, as reads by the current
    /// task. Events whose page was re-armed or changed since are dropped.
    pub fn poisson_take_due(&mut self) -> Result<(), crate::mm::memory::Killed> {
        while let Some((t, mm, vpn)) = self.poisson_events.pop_due(self.clock_ns) {
            let Some(vi) = self.mms[mm as usize].find_vma(vpn) else {
                continue;
            };
            let idx = (vpn - self.mms[mm as usize].vmas[vi].start) as usize;
            let v = &self.mms[mm as usize].vmas[vi];
            // Both loads first, so that their cache misses overlap.
            let (pte, next_read_ns) =
                (v.ptes[idx], v.poisson.as_ref().map(|p| p.next_read_ns[idx]));
            let armed = pt::is_present(pte) && pte & pt::PROTNONE != 0;
            if !armed || next_read_ns != Some(t) {
                continue;
            }
            self.handle_mm_fault(mm, vi, vpn, false)?;
            let p = &mut self.mms[mm as usize].vmas[vi].ptes[idx];
            if pt::is_accessible(*p) {
                *p |= pt::YOUNG;
            }
        }
        Ok(())
    }
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
