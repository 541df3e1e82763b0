//! The per-CPU swap slot cache of v6.9–v6.14 (mm/swap_slots.c; spec swap.md §A.1, §C.4).
//!
//! Order-0 allocations take slots from this CPU's cache, refilled 64 at a time from the allocator
//! (the cached slots are already counted as used); order-0 frees are held per CPU, still marked
//! SWAP_HAS_CACHE, and released 64 at a time. The cache starts inactive, is re-evaluated only on
//! order-0 allocations, turns on when more than ncpu·320 slots are free and off, draining every
//! cache, below ncpu·128. Large folios never use it. Left out: the cache's locks and the CPU
//! hotplug paths.

use super::swapfile::SWAP_HAS_CACHE;
use super::Kernel;

pub const SWAP_SLOTS_CACHE_SIZE: usize = 64;
const THRESHOLD_ACTIVATE_PER_CPU: u64 = 5 * SWAP_SLOTS_CACHE_SIZE as u64;
const THRESHOLD_DEACTIVATE_PER_CPU: u64 = 2 * SWAP_SLOTS_CACHE_SIZE as u64;

#[derive(Clone, Debug, Default)]
pub struct CpuSlots {
    /// Allocated slots waiting to be handed out: (device, offset).
    pub slots: Vec<(u32, u32)>,
    /// Freed slots waiting to be released.
    pub slots_ret: Vec<(u32, u32)>,
}

#[derive(Clone, Debug, Default)]
pub struct SlotCache {
    pub active: bool,
    pub cpus: Vec<CpuSlots>,
}

impl SlotCache {
    pub fn new(nr_cpus: usize) -> SlotCache {
        SlotCache {
            active: false,
            cpus: vec![CpuSlots::default(); nr_cpus.max(1)],
        }
    }

    /// Is this slot held by some CPU's cache (allocated but not handed out, or freed but not
    /// released)?
    pub fn holds(&self, dev: u32, off: u32) -> bool {
        self.cpus
            .iter()
            .any(|c| c.slots.contains(&(dev, off)) || c.slots_ret.contains(&(dev, off)))
    }
}

impl Kernel {
    fn slot_cache_exists(&self) -> bool {
        self.generation().has_swap_slot_cache()
    }

    /// check_cache_active.
    fn check_cache_active(&mut self) -> bool {
        let free = self.nr_swap_pages();
        let ncpu = self.slot_cache.cpus.len() as u64;
        if !self.slot_cache.active {
            if free > ncpu * THRESHOLD_ACTIVATE_PER_CPU {
                self.slot_cache.active = true;
            }
        } else if free < ncpu * THRESHOLD_DEACTIVATE_PER_CPU {
            self.slot_cache.active = false;
            self.drain_slot_caches();
        }
        self.slot_cache.active
    }

    fn drain_slot_caches(&mut self) {
        for cpu in 0..self.slot_cache.cpus.len() {
            let c = std::mem::take(&mut self.slot_cache.cpus[cpu]);
            for (dev, off) in c.slots.into_iter().chain(c.slots_ret) {
                self.release_swap_slot(dev, off);
            }
        }
    }

    /// A slot that is exactly SWAP_HAS_CACHE with nothing behind it goes back to its device.
    fn release_swap_slot(&mut self, dev: u32, off: u32) {
        let now = self.clock_ns;
        let si = &mut self.swap[dev as usize];
        debug_assert_eq!(si.swap_map[off as usize], SWAP_HAS_CACHE);
        si.free_slots_range(off, 1, now);
        si.slot_freed(off);
        self.charge_zram_frees(dev);
    }

    /// folio_alloc_swap for an order-0 folio.
    pub fn alloc_swap_slot(&mut self) -> Option<(u32, u32)> {
        if !self.slot_cache_exists() || !self.check_cache_active() {
            return self.get_swap_pages(0);
        }
        let cpu = self.current_cpu as usize % self.slot_cache.cpus.len();
        if self.slot_cache.cpus[cpu].slots.is_empty() {
            // Refill: a batch from one device, handed out in allocation order.
            let mut batch = Vec::with_capacity(SWAP_SLOTS_CACHE_SIZE);
            while batch.len() < SWAP_SLOTS_CACHE_SIZE {
                match self.get_swap_pages(0) {
                    Some(e) if batch.first().is_none_or(|&(d, _)| d == e.0) => batch.push(e),
                    Some(e) => {
                        self.release_swap_slot(e.0, e.1);
                        break;
                    }
                    None => break,
                }
            }
            batch.reverse();
            self.slot_cache.cpus[cpu].slots = batch;
        }
        self.slot_cache.cpus[cpu]
            .slots
            .pop()
            .or_else(|| self.get_swap_pages(0))
    }

    /// free_swap_slot: the last reference to an order-0 slot went away. The slot stays marked
    /// SWAP_HAS_CACHE while this CPU's cache holds it.
    pub fn free_swap_slot(&mut self, dev: u32, off: u32) {
        self.zswap_invalidate(dev, off);
        if !self.slot_cache_exists() || !self.slot_cache.active {
            self.swap[dev as usize].swap_map[off as usize] = SWAP_HAS_CACHE;
            self.release_swap_slot(dev, off);
            return;
        }
        self.swap[dev as usize].swap_map[off as usize] = SWAP_HAS_CACHE;
        let cpu = self.current_cpu as usize % self.slot_cache.cpus.len();
        if self.slot_cache.cpus[cpu].slots_ret.len() == SWAP_SLOTS_CACHE_SIZE {
            let mut ret = std::mem::take(&mut self.slot_cache.cpus[cpu].slots_ret);
            ret.sort_unstable();
            for (d, o) in ret {
                self.release_swap_slot(d, o);
            }
        }
        self.slot_cache.cpus[cpu].slots_ret.push((dev, off));
    }
}
