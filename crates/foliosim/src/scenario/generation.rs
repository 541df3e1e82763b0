//! Kernel generations. mm/ never compares generations: where the kernel's behaviour changed
//! between them, it asks one of the named predicates below (or, for the swap-slot allocator,
//! uses the generation's own type chosen at swapon).

/// A mainline kernel generation, oldest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Generation {
    V6_9,
    V6_10,
    V6_12,
    V6_18,
}

// Swap: predicates used by swapfile, swap_state, swap_slots
impl Generation {
    /// v6.10: the swap allocator hands out mTHP-sized ranges from per-CPU, per-order cluster
    /// cursors (before, mTHPs were split and only PMD-sized folios got a whole cluster).
    pub fn has_per_order_swap_cursors(self) -> bool {
        self >= Generation::V6_10
    }

    /// v6.10: hugepages-<size>/stats/swpout counts swap-outs per folio size.
    pub fn counts_per_size_swpout(self) -> bool {
        self >= Generation::V6_10
    }

    /// v6.12: swap clusters sit on free / nonfull[order] / frag[order] / full lists, and a
    /// partly freed cluster goes back to nonfull of its order.
    pub fn has_cluster_order_lists(self) -> bool {
        self >= Generation::V6_12
    }

    /// v6.12: the allocator's cache-only reclaim frees the slots at once, not through the slot
    /// cache (TTRS_DIRECT).
    pub fn reclaims_swap_cache_directly(self) -> bool {
        self >= Generation::V6_12
    }

    /// v6.12: put_swap_folio frees a large folio's slots as one range, skipping the slot cache
    /// (v6.10 only did so for a whole PMD cluster).
    pub fn frees_mthp_swap_as_range(self) -> bool {
        self >= Generation::V6_12
    }

    /// v6.12: the swap zeromap; a zero-filled folio is not written, and reads back as zeros.
    pub fn has_zeromap(self) -> bool {
        self >= Generation::V6_12
    }

    /// v6.13: swpout_zero / swpin_zero count the I/O the zeromap saved.
    pub fn counts_swap_zero_io(self) -> bool {
        self >= Generation::V6_18
    }

    /// v6.14: rotational devices use swap clusters too (and may take large folios).
    pub fn hdd_uses_clusters(self) -> bool {
        self >= Generation::V6_18
    }

    /// The per-CPU swap slot cache (mm/swap_slots.c): v6.9 to v6.14, removed in v6.15.
    pub fn has_swap_slot_cache(self) -> bool {
        self <= Generation::V6_12
    }

    /// v6.15: folio_alloc_swap tries a per-CPU {device, offset} cache first (swap_alloc_fast),
    /// over v6.14's slow path that isolates each cluster it scans, then relocates it.
    pub fn has_swap_alloc_fast(self) -> bool {
        self >= Generation::V6_18
    }

    /// Up to v6.17 swapon lists the free clusters column by column over 64 MiB swap address
    /// spaces, so that CPUs start far apart; the swap table (v6.18) dropped the shuffle.
    pub fn swapon_interleaves_free_clusters(self) -> bool {
        self < Generation::V6_18
    }
}
