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

impl Generation {
    // mm: memory, vmscan, huge_memory, madvise, memcontrol

    /// v6.10 (MADV_PAGEOUT/MADV_COLD without split): a fully covered PTE-mapped large folio is
    /// paged out whole; before, only a PMD-mapped one was.
    pub fn madv_pageout_large_folio_whole(self) -> bool {
        self >= Generation::V6_10
    }

    /// v6.10 (shrink_folio_list without split): reclaim splits only partially mapped large
    /// folios before swap-out; before, every folio that was not PMD-mapped.
    pub fn splits_only_partially_mapped_for_swapout(self) -> bool {
        self >= Generation::V6_10
    }

    /// v6.10 (per-order mTHP swap-out counters): swpout_fallback is counted per folio size.
    pub fn counts_mthp_swpout_fallback(self) -> bool {
        self >= Generation::V6_10
    }

    /// v6.12 (split underused THPs): PMD THPs are queued at fault for the deferred-split
    /// shrinker, which may split those that are mostly zero.
    pub fn has_thp_underused_shrinker(self) -> bool {
        self >= Generation::V6_12
    }

    /// v6.12 (large folio swap-in for synchronous devices): a swap-in that bypasses the swap
    /// cache may allocate a large folio; before, always order 0.
    pub fn swaps_in_large_folios(self) -> bool {
        self >= Generation::V6_12
    }

    /// v6.12 (per-order split counters and the partially-mapped flag): splits and deferred
    /// splits are counted per folio size, a deferred split once per folio; before, thp_split_page
    /// for every split and thp_deferred_split_page at each queueing.
    pub fn counts_per_size_split(self) -> bool {
        self >= Generation::V6_12
    }

    /// v6.12 (remap unused subpages to the shared zero page): a split of an anonymous folio maps
    /// its zero-filled subpages to the zero page and frees them; before, they stayed as pages.
    pub fn remaps_zero_subpages_on_split(self) -> bool {
        self >= Generation::V6_12
    }

    /// v6.12 (Yu Zhao's "free zapped tail pages when splitting isolated thp", in the series that
    /// remaps zero-filled subpages): the split of an isolated folio (reclaim's) frees the tails
    /// nothing maps any more. v6.18 does not: on 6.18.44, MADV_PAGEOUT of THPs whose subpages
    /// are zero but the first sends every subpage through pageout (nr_vmscan_write counts all of
    /// them), so the tails stay on reclaim's list and go when it lets them go.
    pub fn frees_unmapped_tails_of_isolated_split(self) -> bool {
        self == Generation::V6_12
    }

    /// After v6.12 (per-order swpin_fallback counters; v6.18 here): a large swap-in that falls
    /// back to order 0 is counted per size.
    pub fn counts_mthp_swpin_fallback(self) -> bool {
        self >= Generation::V6_18
    }

    /// v6.16 ("mm/readahead: Store folio order in struct file_ra_state"; v6.18 here): a
    /// sequential read's page-cache folio order is kept in ra->order and grows by 2 per window,
    /// whose end is cut to that order's alignment, so folios reach the PMD order; before, each
    /// window took the marker folio's order plus 2, and a window starting off that alignment
    /// (start 20, 84, 340, ... of a read from 0) stayed at order 4. mmap read-around asks for
    /// order 0 from then (it was 2). Seen on 6.18.44: a dd of a 16 MiB file with 4 KiB reads
    /// adds order 0, 2, 4, 6, 8, then 9 folios (tracefs mm_filemap_add_to_page_cache).
    pub fn has_readahead_order_state(self) -> bool {
        self >= Generation::V6_18
    }

    /// v6.14 ("mm: pgtable: reclaim empty PTE page in madvise(MADV_DONTNEED)", x86 only up to
    /// v6.19): MADV_DONTNEED frees the PTE tables it empties (mm/pt_reclaim.c); before, only
    /// munmap and exit freed page tables.
    pub fn has_pt_reclaim(self) -> bool {
        self >= Generation::V6_18
    }

    /// After v6.12 (multi-memcg per-CPU charge stock; v6.18 here): each CPU caches charges for
    /// several memcgs (NR_MEMCG_STOCK); before, for one.
    pub fn has_multi_memcg_stock(self) -> bool {
        self >= Generation::V6_18
    }

    // shmem

    /// v6.11 (mTHP for shared anonymous memory): per-size hugepages-<size>kB/shmem_enabled
    /// knobs; before, shared anonymous memory had PMD-sized folios only.
    pub fn has_shmem_mthp_knobs(self) -> bool {
        self >= Generation::V6_12
    }

    /// v6.11: finish_fault maps a large folio of shared anonymous memory whole.
    pub fn maps_anon_shmem_folios_whole(self) -> bool {
        self >= Generation::V6_12
    }

    /// v6.14 (large folios for tmpfs): a tmpfs write gets folios as large as the write allows
    /// under huge=always/within_size; before, PMD-sized ones only. v6.18 here.
    pub fn tmpfs_sizes_folios_by_write(self) -> bool {
        self >= Generation::V6_18
    }

    /// v6.14: finish_fault maps a large tmpfs folio whole. v6.18 here.
    pub fn maps_tmpfs_folios_whole(self) -> bool {
        self >= Generation::V6_18
    }

    /// v6.12 (shmem large folio swap-out): shmem_writeout swaps a large folio out whole;
    /// before, it split it first.
    pub fn shmem_swaps_out_large_folios(self) -> bool {
        self >= Generation::V6_12
    }

    /// v6.14+ (large folio swap-in for shmem from a synchronous device, shmem_swap_alloc_folio;
    /// v6.18 here): a swapped large entry comes back as one folio; before, page by page.
    pub fn swaps_in_large_shmem_folios(self) -> bool {
        self >= Generation::V6_18
    }

    // swap: swapfile, swap_alloc, swap_state, swap_slots

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

    /// The swap cache is an xarray per 64 MiB of swap (its shadow-only nodes count in
    /// workingset_nodes) until v6.18 makes it the swap table, a flat array per cluster.
    pub fn swap_cache_in_xarray(self) -> bool {
        self < Generation::V6_18
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

    // zswap

    /// v6.13 (mTHP zswap store): zswap_store takes a large folio page by page, all or nothing;
    /// before, it refused every large folio, which went to the swap device whole.
    pub fn zswap_stores_large_folios(self) -> bool {
        self >= Generation::V6_18
    }

    /// v6.10 (zswap_check_limits, with the pool counted in pages): the pool is full at its
    /// limit, accepts again at or below the threshold, and pool_limit_hit counts every refusal
    /// at the limit; the shrink worker skips memcgs without entries from v6.12 here (v6.11's
    /// shrink_worker fixes), which before counted as failures. v6.9: full above the limit,
    /// accepting strictly below the threshold, pool_limit_hit counted once per filling.
    pub fn has_zswap_check_limits(self) -> bool {
        self >= Generation::V6_10
    }

    /// v6.13: hugepages-<size>/stats/zswpout counts large folios stored in zswap.
    pub fn counts_mthp_zswpout(self) -> bool {
        self >= Generation::V6_18
    }

    /// Up to v6.11 zswap keeps a same-filled page as a value, without compressing it; v6.12
    /// ("mm: remove code to handle same filled pages", with the swap zeromap) dropped that: a
    /// zero-filled folio never reaches zswap, any other page is compressed.
    pub fn zswap_stores_same_filled_pages(self) -> bool {
        self < Generation::V6_12
    }

    /// v6.18 ("mm/zswap: store <PAGE_SIZE compression failed page as-is"): a page that does
    /// not compress below a page is kept uncompressed (unless the memcg's zswap writeback is
    /// off); before, it was rejected (reject_compress_poor) and written to the device.
    pub fn zswap_stores_incompressible_pages(self) -> bool {
        self >= Generation::V6_18
    }

    // x86 TLB (arch/x86/mm/tlb.c)

    /// v6.14 ("x86/mm/tlb: Update mm_cpumask lazily", "Only trim the mm_cpumask once a
    /// second"): a CPU stays in an mm's cpumask when it switches away and leaves at the first
    /// flush IPI for that mm it receives without running it; flushes for an mm IPI only the
    /// CPUs running it (all of the mask once a second, to trim it), a batched unmap's flush
    /// every busy CPU of the mask. Before, the CPU left at the switch and every flush IPIed
    /// every busy CPU of the mask.
    pub fn updates_mm_cpumask_lazily(self) -> bool {
        self >= Generation::V6_18
    }
}
