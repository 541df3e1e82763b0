//! Hardware cost profiles: the cost of each operation the simulator charges time for, in integer
//! nanoseconds (or bytes per second), each with the source of its value.
//!
//! A value is a published measurement where one was found, otherwise an estimate whose reasoning
//! is stated; no value is tuned to make an experiment come out. Not modelled: caches beyond the
//! per-access figures, prefetching, frequency scaling, SMT, and memory-bandwidth saturation.

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HwCosts {
    pub name: &'static str,
    pub description: &'static str,
    pub fault_entry_ns: u64,
    pub zero_page_ns: u64,
    pub copy_page_ns: u64,
    pub pte_update_ns: u64,
    pub tlb_flush_local_one_ns: u64,
    pub tlb_flush_local_all_ns: u64,
    pub tlb_flush_ipi_send_ns: u64,
    pub tlb_flush_ipi_receive_ns: u64,
    pub reclaim_scan_folio_ns: u64,
    pub rmap_walk_ns: u64,
    pub split_subpage_ns: u64,
    pub lru_op_ns: u64,
    pub page_alloc_ns: u64,
    pub memcg_charge_ns: u64,
    pub swap_slot_alloc_ns: u64,
    /// One streaming 8-byte store, in picoseconds.
    pub word_write_ns_x1000: u64,
    pub touch_resident_ns: u64,
    pub brd_page_write_ns: u64,
    pub brd_page_read_ns: u64,
    pub ssd_read_latency_ns: u64,
    pub ssd_write_latency_ns: u64,
    pub ssd_bandwidth_bytes_per_s: u64,
    /// Discarding (deallocating) one 2 MiB swap cluster.
    pub ssd_discard_ns: u64,
    pub hdd_seek_ns: u64,
    pub hdd_bandwidth_bytes_per_s: u64,
    pub zram_compress_ns: u64,
    pub zram_decompress_ns: u64,
    pub zram_same_page_ns: u64,
    pub block_io_overhead_ns: u64,
    pub dram_read_latency_ns: u64,
    pub dram_bandwidth_bytes_per_s: u64,
    pub cxl_read_latency_ns: u64,
    pub cxl_bandwidth_bytes_per_s: u64,
}

pub struct HwProfile {
    pub costs: HwCosts,
    /// (field, source) for every cost field.
    pub sources: &'static [(&'static str, &'static str)],
}

/// Every cost field, so tests can insist each profile gives a source for each.
pub const COST_FIELDS: &[&str] = &[
    "fault_entry_ns",
    "zero_page_ns",
    "copy_page_ns",
    "pte_update_ns",
    "tlb_flush_local_one_ns",
    "tlb_flush_local_all_ns",
    "tlb_flush_ipi_send_ns",
    "tlb_flush_ipi_receive_ns",
    "reclaim_scan_folio_ns",
    "rmap_walk_ns",
    "split_subpage_ns",
    "lru_op_ns",
    "page_alloc_ns",
    "memcg_charge_ns",
    "swap_slot_alloc_ns",
    "word_write_ns_x1000",
    "touch_resident_ns",
    "brd_page_write_ns",
    "brd_page_read_ns",
    "ssd_read_latency_ns",
    "ssd_write_latency_ns",
    "ssd_bandwidth_bytes_per_s",
    "ssd_discard_ns",
    "hdd_seek_ns",
    "hdd_bandwidth_bytes_per_s",
    "zram_compress_ns",
    "zram_decompress_ns",
    "zram_same_page_ns",
    "block_io_overhead_ns",
    "dram_read_latency_ns",
    "dram_bandwidth_bytes_per_s",
    "cxl_read_latency_ns",
    "cxl_bandwidth_bytes_per_s",
];

static X86_SERVER: HwProfile = HwProfile {
    costs: HwCosts {
        name: "x86-server",
        description: "a current x86-64 server core (Ice Lake / Sapphire Rapids class, DDR4/DDR5), NVMe SSD, CXL Type-3 expander",
        fault_entry_ns: 700,
        zero_page_ns: 350,
        copy_page_ns: 450,
        pte_update_ns: 15,
        tlb_flush_local_one_ns: 80,
        tlb_flush_local_all_ns: 500,
        tlb_flush_ipi_send_ns: 3_000,
        tlb_flush_ipi_receive_ns: 1_000,
        reclaim_scan_folio_ns: 300,
        rmap_walk_ns: 150,
        split_subpage_ns: 120,
        lru_op_ns: 30,
        page_alloc_ns: 150,
        memcg_charge_ns: 50,
        swap_slot_alloc_ns: 200,
        word_write_ns_x1000: 700,
        touch_resident_ns: 100,
        brd_page_write_ns: 600,
        brd_page_read_ns: 500,
        ssd_read_latency_ns: 80_000,
        ssd_write_latency_ns: 20_000,
        ssd_bandwidth_bytes_per_s: 3_000_000_000,
        ssd_discard_ns: 500_000,
        hdd_seek_ns: 8_500_000,
        hdd_bandwidth_bytes_per_s: 200_000_000,
        zram_compress_ns: 4_000,
        zram_decompress_ns: 1_300,
        zram_same_page_ns: 300,
        block_io_overhead_ns: 1_500,
        dram_read_latency_ns: 90,
        dram_bandwidth_bytes_per_s: 12_000_000_000,
        cxl_read_latency_ns: 250,
        cxl_bandwidth_bytes_per_s: 8_000_000_000,
    },
    sources: &[
        ("fault_entry_ns", "estimate: lmbench lat_pagefault-style figures of 0.5-1 us per minor fault on recent Xeons, without the page clearing (charged separately)"),
        ("zero_page_ns", "4096 B at ~11.7 GB/s single-core clear_page (rep stosb), as measured in Ankur Arora's 'x86/clear_huge_page' LKML series (2023) on Icelake/Skylake-class cores"),
        ("copy_page_ns", "4096 B at ~9 GB/s single-core memcpy of cold data (estimate from STREAM-copy per-core figures on DDR4/DDR5 Xeons)"),
        ("pte_update_ns", "estimate: one PTE store plus rmap/mapcount atomics, a few tens of cycles at ~3 GHz"),
        ("tlb_flush_local_one_ns", "INVLPG costs ~100-250 cycles (Amit et al., 'Don't shoot down TLB shootdowns!', EuroSys 2020)"),
        ("tlb_flush_local_all_ns", "estimate: a CR3-write full flush (~150 ns) plus the TLB refills it causes, amortised (Amit et al. 2020 discuss the refill cost)"),
        ("tlb_flush_ipi_send_ns", "a remote shootdown costs the initiator several microseconds (Kumar et al., 'LATR', ASPLOS 2018: 1.5-6 us; Amit et al. 2020)"),
        ("tlb_flush_ipi_receive_ns", "interrupt entry, INVLPG/flush and ack on the receiving core, ~1 us (Amit et al. 2020)"),
        ("reclaim_scan_folio_ns", "estimate: isolation, flag checks and putback per folio; kswapd scans 1-3 M pages/s per core in vmstat traces"),
        ("rmap_walk_ns", "estimate: anon_vma lock plus page_vma_mapped_walk for one mapping"),
        ("split_subpage_ns", "estimate: split_huge_page of a 2 MiB THP takes tens of microseconds (~60 us for 512 pages, i.e. ~120 ns per subpage) in split microbenchmarks discussed on linux-mm"),
        ("lru_op_ns", "estimate: lru_lock plus a list insertion, folio batches amortise the lock"),
        ("page_alloc_ns", "estimate: rmqueue from the per-CPU lists, ~100-200 ns in page allocator microbenchmarks (Mel Gorman's pcp series)"),
        ("memcg_charge_ns", "estimate: per-CPU stock hit with occasional page_counter atomics"),
        ("swap_slot_alloc_ns", "estimate: si->lock or cluster lock plus a swap_map scan over a few slots"),
        ("word_write_ns_x1000", "8 B per store at ~11 GB/s single-core streaming-write bandwidth (STREAM per-core figures on DDR4/DDR5 Xeons)"),
        ("touch_resident_ns", "one DRAM access missing the caches, ~90-100 ns loaded latency on 2-socket Xeons (Intel MLC)"),
        ("brd_page_write_ns", "memcpy of 4 KiB (copy_page_ns) plus brd's xarray lookup"),
        ("brd_page_read_ns", "memcpy of 4 KiB from the RAM disk, warm xarray"),
        ("ssd_read_latency_ns", "data-center NVMe 4K random read at QD1, ~77-90 us (Intel P4510 / Samsung PM983 datasheets)"),
        ("ssd_write_latency_ns", "data-center NVMe 4K write at QD1 into the device's write buffer, ~18-25 us (same datasheets)"),
        ("ssd_bandwidth_bytes_per_s", "~3 GB/s sequential (PCIe 3.0 x4 NVMe datasheets)"),
        ("ssd_discard_ns", "estimate: an NVMe Deallocate of a 2 MiB range takes from tens of microseconds to milliseconds depending on the device's FTL; 0.5 ms is taken as typical"),
        ("hdd_seek_ns", "7200 rpm disk: ~4.2 ms average rotational latency plus ~4.3 ms average seek (datasheets)"),
        ("hdd_bandwidth_bytes_per_s", "~200 MB/s sustained on the outer tracks of a current 7200 rpm disk (datasheets)"),
        ("zram_compress_ns", "lzo-rle compresses ~1 GB/s per core on typical data (zram/zstd/lz4 comparisons on LKML, 2019-2020), so ~4 us per 4 KiB"),
        ("zram_decompress_ns", "lzo-rle decompresses ~3 GB/s per core (same comparisons), ~1.3 us per 4 KiB"),
        ("zram_same_page_ns", "a full scan of 4 KiB for page_same_filled at ~14 GB/s, ~300 ns"),
        ("block_io_overhead_ns", "estimate: bio allocation, submission and completion for one request, 1-2 us"),
        ("dram_read_latency_ns", "~90 ns idle local DRAM latency on current Xeons (Intel MLC)"),
        ("dram_bandwidth_bytes_per_s", "~12 GB/s single-core read bandwidth (STREAM per-core)"),
        ("cxl_read_latency_ns", "CXL Type-3 memory ~2.2-2.5x local DRAM latency, ~214-271 ns (Sun et al., 'Demystifying CXL Memory', MICRO 2023)"),
        ("cxl_bandwidth_bytes_per_s", "single-core sequential read from a CXL expander, ~8 GB/s (Sun et al., MICRO 2023, per-thread figures)"),
    ],
};

static ARM64_ALTRA: HwProfile = HwProfile {
    costs: HwCosts {
        name: "arm64-altra",
        description: "Ampere Altra (Neoverse N1, 3.0 GHz, DDR4-3200) in a KVM guest, the machine of the mTHP swap-out seed",
        fault_entry_ns: 800,
        zero_page_ns: 400,
        copy_page_ns: 500,
        pte_update_ns: 15,
        tlb_flush_local_one_ns: 60,
        tlb_flush_local_all_ns: 400,
        tlb_flush_ipi_send_ns: 1_500,
        tlb_flush_ipi_receive_ns: 0,
        reclaim_scan_folio_ns: 300,
        rmap_walk_ns: 150,
        split_subpage_ns: 150,
        lru_op_ns: 30,
        page_alloc_ns: 150,
        memcg_charge_ns: 50,
        swap_slot_alloc_ns: 200,
        word_write_ns_x1000: 800,
        touch_resident_ns: 110,
        brd_page_write_ns: 650,
        brd_page_read_ns: 550,
        ssd_read_latency_ns: 80_000,
        ssd_write_latency_ns: 20_000,
        ssd_bandwidth_bytes_per_s: 3_000_000_000,
        ssd_discard_ns: 500_000,
        hdd_seek_ns: 8_500_000,
        hdd_bandwidth_bytes_per_s: 200_000_000,
        zram_compress_ns: 5_000,
        zram_decompress_ns: 1_600,
        zram_same_page_ns: 350,
        block_io_overhead_ns: 1_500,
        dram_read_latency_ns: 100,
        dram_bandwidth_bytes_per_s: 10_000_000_000,
        cxl_read_latency_ns: 250,
        cxl_bandwidth_bytes_per_s: 8_000_000_000,
    },
    sources: &[
        ("fault_entry_ns", "estimate: exception entry/exit and handle_mm_fault on Neoverse N1, comparable to x86 without KPTI"),
        ("zero_page_ns", "4096 B with DC ZVA at ~10 GB/s per core on Altra (estimate from per-core STREAM figures)"),
        ("copy_page_ns", "4096 B at ~8 GB/s per-core copy on Altra (per-core STREAM-copy estimate)"),
        ("pte_update_ns", "estimate: as x86-server"),
        ("tlb_flush_local_one_ns", "estimate: a non-broadcast TLBI VALE1 plus DSB NSH"),
        ("tlb_flush_local_all_ns", "estimate: TLBI VMALLE1 plus refills"),
        ("tlb_flush_ipi_send_ns", "estimate: a broadcast TLBI plus DSB ISH waits for every core of the inner-shareable domain; ~1-2 us inside a KVM guest. R5 (Ryan Roberts, mTHP swap-out v5 4/6) names these TLBIs the bottleneck of splitting"),
        ("tlb_flush_ipi_receive_ns", "arm64 shoots down by broadcast TLBI: receiving cores take no interrupt"),
        ("reclaim_scan_folio_ns", "estimate: as x86-server"),
        ("rmap_walk_ns", "estimate: as x86-server"),
        ("split_subpage_ns", "estimate: as x86-server, slower memory"),
        ("lru_op_ns", "estimate: as x86-server"),
        ("page_alloc_ns", "estimate: as x86-server"),
        ("memcg_charge_ns", "estimate: as x86-server"),
        ("swap_slot_alloc_ns", "estimate: as x86-server"),
        ("word_write_ns_x1000", "8 B per store at ~10 GB/s single-core streaming writes on Altra (per-core STREAM)"),
        ("touch_resident_ns", "~100-110 ns DRAM latency on Altra (Anandtech Altra review latency sweep)"),
        ("brd_page_write_ns", "copy_page_ns plus brd's xarray lookup"),
        ("brd_page_read_ns", "4 KiB copy from the RAM disk"),
        ("ssd_read_latency_ns", "as x86-server"),
        ("ssd_write_latency_ns", "as x86-server"),
        ("ssd_bandwidth_bytes_per_s", "as x86-server"),
        ("ssd_discard_ns", "as x86-server"),
        ("hdd_seek_ns", "as x86-server"),
        ("hdd_bandwidth_bytes_per_s", "as x86-server"),
        ("zram_compress_ns", "lzo-rle on Neoverse N1, ~0.8 GB/s per core (estimate scaled from x86 figures)"),
        ("zram_decompress_ns", "~2.5 GB/s per core (estimate scaled from x86 figures)"),
        ("zram_same_page_ns", "scan of 4 KiB at ~12 GB/s"),
        ("block_io_overhead_ns", "estimate: as x86-server"),
        ("dram_read_latency_ns", "~100 ns (Anandtech Altra review)"),
        ("dram_bandwidth_bytes_per_s", "~10 GB/s single-core read (per-core STREAM)"),
        ("cxl_read_latency_ns", "as x86-server (Altra has no CXL; kept for completeness)"),
        ("cxl_bandwidth_bytes_per_s", "as x86-server"),
    ],
};

static PROFILES: [&HwProfile; 2] = [&X86_SERVER, &ARM64_ALTRA];

pub fn profile(name: &str) -> Option<&'static HwProfile> {
    PROFILES.iter().copied().find(|p| p.costs.name == name)
}

pub fn profile_names() -> &'static [&'static str] {
    &["x86-server", "arm64-altra"]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_of_every_profile_has_a_source() {
        for p in PROFILES {
            for field in COST_FIELDS {
                let src = p.sources.iter().find(|(f, _)| f == field);
                assert!(
                    src.is_some_and(|(_, s)| !s.is_empty()),
                    "{}: no source for {field}",
                    p.costs.name
                );
            }
            assert_eq!(
                p.sources.len(),
                COST_FIELDS.len(),
                "{}: a source names no field",
                p.costs.name
            );
        }
    }

    #[test]
    fn lookup_by_name() {
        assert_eq!(profile("x86-server").unwrap().costs.name, "x86-server");
        assert_eq!(
            profile("arm64-altra")
                .unwrap()
                .costs
                .tlb_flush_ipi_receive_ns,
            0
        );
        assert!(profile("pdp-11").is_none());
        assert!(profile_names().iter().all(|n| profile(n).is_some()));
    }
}
