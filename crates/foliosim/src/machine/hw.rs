//! Hardware cost profiles: what each operation the simulator charges time for costs on a given
//! machine, in integer nanoseconds (or bytes per second, or picoseconds where a field says so),
//! each value with the source it comes from.
//!
//! A profile is the machine's architecture (which TLB-maintenance model runs) and a flat table of
//! per-operation costs: a fault entry, clearing or copying a 4 KiB page, one PTE store, a local
//! or remote (IPI) TLB flush on x86, a broadcast TLBI or a DSB wait on arm64, one step of reclaim
//! or of an rmap walk, a device transfer, a memory-tier access. A field the other architecture's
//! mechanism uses is 0 and its source says so. Mechanisms in `mm/` add these up; nothing in a
//! profile knows about any scenario. A value is a published measurement where one was found (paper,
//! vendor datasheet, kernel mailing-list measurement), a stated derivation from other fields
//! (computed in the table below, so it cannot drift), or an `estimate:` whose reasoning is given.
//! No value is tuned to make an experiment come out.
//!
//! Not modelled: caches (a cost is the typical cost, hot or cold as stated per field),
//! prefetching, frequency scaling and turbo, SMT, contention for memory bandwidth between cores,
//! NUMA distance within a tier, and the difference between sequential and random device transfers
//! beyond the one latency and one bandwidth per device.

/// The instruction-set architecture, which chooses the TLB-maintenance model (mm/tlb.rs) and
/// whether contiguous PTEs exist (mm/contpte.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    /// Local INVLPG / CR3 writes, IPIs to the other CPUs of mm_cpumask (arch/x86/mm/tlb.c).
    X86,
    /// Broadcast TLBI ...IS instructions completed by DSB ISH, and the contiguous bit
    /// (arch/arm64/include/asm/tlbflush.h, arch/arm64/mm/contpte.c).
    Arm64,
}

/// Per-operation costs of one machine. Names end in their unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HwCosts {
    pub name: &'static str,
    pub description: &'static str,
    pub arch: Arch,
    // CPU-side memory-management costs
    /// Exception entry/exit plus the handle_mm_fault walk, per fault (allocation, zeroing, memcg
    /// charge and the PTE store are charged separately).
    pub fault_entry_ns: u64,
    /// Clearing one 4 KiB page (clear_page).
    pub zero_page_ns: u64,
    /// Copying one 4 KiB page (copy_page / memcpy), DRAM to DRAM.
    pub copy_page_ns: u64,
    /// Setting or clearing one PTE, including rmap/mapcount bookkeeping.
    pub pte_update_ns: u64,
    /// Invalidating one page's translation on the local CPU (INVLPG / TLBI VALE1).
    pub tlb_flush_local_one_ns: u64,
    /// A full local flush (CR3 write) plus the refills it causes, amortised.
    pub tlb_flush_local_all_ns: u64,
    /// Initiator's cost of a remote flush: send the IPIs and wait for the acks.
    pub tlb_flush_ipi_send_ns: u64,
    /// Cost on each CPU that receives a flush IPI.
    pub tlb_flush_ipi_receive_ns: u64,
    /// arm64: issuing one broadcast TLB invalidation (TLBI VALE1IS / ASIDE1IS) without waiting.
    pub tlbi_broadcast_ns: u64,
    /// arm64: one DSB ISH that waits until every TLBI issued before it has completed on every
    /// core of the inner-shareable domain.
    pub dsb_ish_ns: u64,
    /// Isolate, check references and put back or free one folio in shrink_folio_list, excluding
    /// I/O and rmap.
    pub reclaim_scan_folio_ns: u64,
    /// One rmap walk step (folio_referenced / try_to_unmap, per mapping).
    pub rmap_walk_ns: u64,
    /// split_huge_page cost per subpage (remap, refcount, LRU insertion).
    pub split_subpage_ns: u64,
    /// Adding a folio to, or moving it on, an LRU list (lru lock hold).
    pub lru_op_ns: u64,
    /// Buddy allocation or free of one block (rmqueue from the per-CPU lists).
    pub page_alloc_ns: u64,
    /// Charging one folio to a memcg.
    pub memcg_charge_ns: u64,
    /// Allocating one swap slot range (cluster lock, swap_map update).
    pub swap_slot_alloc_ns: u64,
    /// One streaming 8-byte store to resident memory from a user loop like usemem's, in
    /// picoseconds.
    pub word_write_ns_x1000: u64,
    /// One random access to a resident page: a cache miss that hits the TLB.
    pub touch_resident_ns: u64,
    /// One instruction of a traced program's work between its page accesses, in picoseconds
    /// (cycles per instruction at the core's clock). Only a trace replay charges it.
    pub instruction_ns_x1000: u64,
    // devices
    /// brd: copying one 4 KiB page into the RAM disk (memcpy plus the page lookup).
    pub brd_page_write_ns: u64,
    /// brd: copying one 4 KiB page out of the RAM disk.
    pub brd_page_read_ns: u64,
    /// NVMe 4 KiB random read latency.
    pub ssd_read_latency_ns: u64,
    /// NVMe 4 KiB write latency.
    pub ssd_write_latency_ns: u64,
    pub ssd_bandwidth_bytes_per_s: u64,
    /// Discarding (deallocating) one 2 MiB swap cluster.
    pub ssd_discard_ns: u64,
    /// Average seek plus rotational latency.
    pub hdd_seek_ns: u64,
    pub hdd_bandwidth_bytes_per_s: u64,
    /// lzo-rle compression of one 4 KiB page of typical data.
    pub zram_compress_ns: u64,
    /// lzo-rle decompression of one 4 KiB page.
    pub zram_decompress_ns: u64,
    /// Detecting a same-filled page (a scan of 4 KiB) and storing it.
    pub zram_same_page_ns: u64,
    /// bio submission plus completion, per request (not per page).
    pub block_io_overhead_ns: u64,
    // memory tiers
    pub dram_read_latency_ns: u64,
    /// Single-core read bandwidth from local DRAM.
    pub dram_bandwidth_bytes_per_s: u64,
    pub cxl_read_latency_ns: u64,
    /// Single-core read bandwidth from a CXL memory expander.
    pub cxl_bandwidth_bytes_per_s: u64,
    /// A data-TLB miss: the page walk, beyond the access itself.
    pub page_walk_ns: u64,
    /// Translations one CPU's second-level TLB holds.
    pub dtlb_entries: u64,
    /// Code pages a program refills in the iTLB after a full flush.
    pub itlb_code_pages: u64,
}

/// Where the value of one field comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Source {
    pub field: &'static str,
    pub source: &'static str,
}

/// A named cost table and the source of every value in it.
#[derive(Debug)]
pub struct HwProfile {
    pub costs: HwCosts,
    pub sources: &'static [Source],
}

impl HwProfile {
    /// The source given for `field`, if the field exists.
    pub fn source(&self, field: &str) -> Option<&'static str> {
        self.sources
            .iter()
            .find(|s| s.field == field)
            .map(|s| s.source)
    }
}

/// The profile used when a scenario names none.
pub const DEFAULT_PROFILE: &str = "x86-server";

/// Every cost field of [`HwCosts`], in declaration order: each profile must give a source for
/// each. [`HwCosts::values`] destructures the struct exhaustively, so a new field cannot be added
/// without adding it there, and a test checks that list against this one.
pub const COST_FIELDS: [&str; 39] = [
    "fault_entry_ns",
    "zero_page_ns",
    "copy_page_ns",
    "pte_update_ns",
    "tlb_flush_local_one_ns",
    "tlb_flush_local_all_ns",
    "tlb_flush_ipi_send_ns",
    "tlb_flush_ipi_receive_ns",
    "tlbi_broadcast_ns",
    "dsb_ish_ns",
    "reclaim_scan_folio_ns",
    "rmap_walk_ns",
    "split_subpage_ns",
    "lru_op_ns",
    "page_alloc_ns",
    "memcg_charge_ns",
    "swap_slot_alloc_ns",
    "word_write_ns_x1000",
    "touch_resident_ns",
    "instruction_ns_x1000",
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
    "page_walk_ns",
    "dtlb_entries",
    "itlb_code_pages",
];

impl HwCosts {
    /// Every cost field with its value, in the order of [`COST_FIELDS`] (for listings and JSON).
    pub fn values(&self) -> [(&'static str, u64); COST_FIELDS.len()] {
        // Exhaustive on purpose: adding a field to HwCosts fails to compile until it is listed.
        let HwCosts {
            name: _,
            description: _,
            arch: _,
            fault_entry_ns,
            zero_page_ns,
            copy_page_ns,
            pte_update_ns,
            tlb_flush_local_one_ns,
            tlb_flush_local_all_ns,
            tlb_flush_ipi_send_ns,
            tlb_flush_ipi_receive_ns,
            tlbi_broadcast_ns,
            dsb_ish_ns,
            reclaim_scan_folio_ns,
            rmap_walk_ns,
            split_subpage_ns,
            lru_op_ns,
            page_alloc_ns,
            memcg_charge_ns,
            swap_slot_alloc_ns,
            word_write_ns_x1000,
            touch_resident_ns,
            instruction_ns_x1000,
            brd_page_write_ns,
            brd_page_read_ns,
            ssd_read_latency_ns,
            ssd_write_latency_ns,
            ssd_bandwidth_bytes_per_s,
            ssd_discard_ns,
            hdd_seek_ns,
            hdd_bandwidth_bytes_per_s,
            zram_compress_ns,
            zram_decompress_ns,
            zram_same_page_ns,
            block_io_overhead_ns,
            dram_read_latency_ns,
            dram_bandwidth_bytes_per_s,
            cxl_read_latency_ns,
            cxl_bandwidth_bytes_per_s,
            page_walk_ns,
            dtlb_entries,
            itlb_code_pages,
        } = *self;
        [
            ("fault_entry_ns", fault_entry_ns),
            ("zero_page_ns", zero_page_ns),
            ("copy_page_ns", copy_page_ns),
            ("pte_update_ns", pte_update_ns),
            ("tlb_flush_local_one_ns", tlb_flush_local_one_ns),
            ("tlb_flush_local_all_ns", tlb_flush_local_all_ns),
            ("tlb_flush_ipi_send_ns", tlb_flush_ipi_send_ns),
            ("tlb_flush_ipi_receive_ns", tlb_flush_ipi_receive_ns),
            ("tlbi_broadcast_ns", tlbi_broadcast_ns),
            ("dsb_ish_ns", dsb_ish_ns),
            ("reclaim_scan_folio_ns", reclaim_scan_folio_ns),
            ("rmap_walk_ns", rmap_walk_ns),
            ("split_subpage_ns", split_subpage_ns),
            ("lru_op_ns", lru_op_ns),
            ("page_alloc_ns", page_alloc_ns),
            ("memcg_charge_ns", memcg_charge_ns),
            ("swap_slot_alloc_ns", swap_slot_alloc_ns),
            ("word_write_ns_x1000", word_write_ns_x1000),
            ("touch_resident_ns", touch_resident_ns),
            ("instruction_ns_x1000", instruction_ns_x1000),
            ("brd_page_write_ns", brd_page_write_ns),
            ("brd_page_read_ns", brd_page_read_ns),
            ("ssd_read_latency_ns", ssd_read_latency_ns),
            ("ssd_write_latency_ns", ssd_write_latency_ns),
            ("ssd_bandwidth_bytes_per_s", ssd_bandwidth_bytes_per_s),
            ("ssd_discard_ns", ssd_discard_ns),
            ("hdd_seek_ns", hdd_seek_ns),
            ("hdd_bandwidth_bytes_per_s", hdd_bandwidth_bytes_per_s),
            ("zram_compress_ns", zram_compress_ns),
            ("zram_decompress_ns", zram_decompress_ns),
            ("zram_same_page_ns", zram_same_page_ns),
            ("block_io_overhead_ns", block_io_overhead_ns),
            ("dram_read_latency_ns", dram_read_latency_ns),
            ("dram_bandwidth_bytes_per_s", dram_bandwidth_bytes_per_s),
            ("cxl_read_latency_ns", cxl_read_latency_ns),
            ("cxl_bandwidth_bytes_per_s", cxl_bandwidth_bytes_per_s),
            ("page_walk_ns", page_walk_ns),
            ("dtlb_entries", dtlb_entries),
            ("itlb_code_pages", itlb_code_pages),
        ]
    }
}

const fn src(field: &'static str, source: &'static str) -> Source {
    Source { field, source }
}

/// 8-byte words in a 4 KiB page.
const WORDS_PER_PAGE: u64 = 4096 / 8;

// ---------------------------------------------------------------------------------------------
// x86-server: a current 2-socket-class Xeon core (Ice Lake-SP / Sapphire Rapids), DDR4/DDR5,
// a data-center NVMe SSD, a CXL Type-3 memory expander.
// ---------------------------------------------------------------------------------------------

const X86_ZERO_PAGE_NS: u64 = 470;
const X86_COPY_PAGE_NS: u64 = X86_ZERO_PAGE_NS * 3 / 2;
const X86_DRAM_READ_LATENCY_NS: u64 = 90;
const X86_DRAM_BANDWIDTH: u64 = 12_000_000_000;
const X86_CXL_READ_LATENCY_NS: u64 = 250;
/// brd's page lookup (xarray walk, kmap) on top of the copy; estimate.
const BRD_LOOKUP_WRITE_NS: u64 = 150;
const BRD_LOOKUP_READ_NS: u64 = 50;
/// Core clock and cycles per instruction (x1000) of a traced program's work (instruction_ns_x1000).
const X86_CLOCK_MHZ: u64 = 3_000;
const X86_CPI_X1000: u64 = 1_000;

static X86_SERVER: HwProfile = HwProfile {
    costs: HwCosts {
        name: "x86-server",
        description: "a current 2-socket-class x86-64 server core (Ice Lake-SP / Sapphire Rapids, \
                      DDR4/DDR5), a data-center NVMe SSD, a CXL Type-3 memory expander",
        arch: Arch::X86,
        fault_entry_ns: 700,
        zero_page_ns: X86_ZERO_PAGE_NS,
        copy_page_ns: X86_COPY_PAGE_NS,
        pte_update_ns: 15,
        tlb_flush_local_one_ns: 90,
        tlb_flush_local_all_ns: 1_000,
        tlb_flush_ipi_send_ns: 3_000,
        tlb_flush_ipi_receive_ns: 1_000,
        tlbi_broadcast_ns: 0,
        dsb_ish_ns: 0,
        reclaim_scan_folio_ns: 300,
        rmap_walk_ns: 150,
        split_subpage_ns: 120,
        lru_op_ns: 30,
        page_alloc_ns: 150,
        memcg_charge_ns: 50,
        swap_slot_alloc_ns: 200,
        word_write_ns_x1000: X86_ZERO_PAGE_NS * 1000 / WORDS_PER_PAGE,
        touch_resident_ns: X86_DRAM_READ_LATENCY_NS + 10,
        instruction_ns_x1000: X86_CPI_X1000 * 1000 / X86_CLOCK_MHZ,
        brd_page_write_ns: X86_COPY_PAGE_NS + BRD_LOOKUP_WRITE_NS,
        brd_page_read_ns: X86_COPY_PAGE_NS + BRD_LOOKUP_READ_NS,
        ssd_read_latency_ns: 85_000,
        ssd_write_latency_ns: 20_000,
        ssd_bandwidth_bytes_per_s: 4_300_000_000,
        ssd_discard_ns: 500_000,
        hdd_seek_ns: 8_500_000,
        hdd_bandwidth_bytes_per_s: 200_000_000,
        zram_compress_ns: 4_000,
        zram_decompress_ns: 1_500,
        zram_same_page_ns: 300,
        block_io_overhead_ns: 1_500,
        dram_read_latency_ns: X86_DRAM_READ_LATENCY_NS,
        dram_bandwidth_bytes_per_s: X86_DRAM_BANDWIDTH,
        cxl_read_latency_ns: X86_CXL_READ_LATENCY_NS,
        cxl_bandwidth_bytes_per_s: X86_DRAM_BANDWIDTH * X86_DRAM_READ_LATENCY_NS
            / X86_CXL_READ_LATENCY_NS,
        page_walk_ns: 40,
        dtlb_entries: 1536,
        itlb_code_pages: 16,
    },
    sources: &[
        src("fault_entry_ns", "estimate: exception entry/exit, VMA lookup and page-table walk of an anonymous fault, without the allocation, clearing, charge and PTE store that are charged separately. A user-space rdtsc measurement of single read faults that map the zero page on an 11th-gen Core i7 under Linux 6.6 gives min 0.58 us, median 1.0 us, including page-table allocation (ddumbying.vercel.app/experiments/pagefault-latency); 0.7 us taken"),
        src("zero_page_ns", "4096 B at 8.76 GB/s: demand-faulting 2 MiB pages cleared one 4 KiB page at a time on Ice Lake-SP (Xeon Platinum 8358, turbo off), Ankur Arora, '[PATCH 6/9] mm/clear_huge_page: use multi-page clearing', LKML 2023-04-03 (lore 20230403052233.1880567-7-ankur.a.arora@oracle.com). For comparison AMD Milan clears 4 KiB chunks at 13.7 GB/s (perf bench mem memset -k 4KB; same author, 'x86/clear_page: Introduce clear_pages()', LKML 2025-09)"),
        src("copy_page_ns", "derived: = 1.5 x zero_page_ns, since a copy reads 4 KiB and writes 4 KiB (estimate: no published per-page copy_page figure for these cores was found)"),
        src("pte_update_ns", "estimate: one PTE store plus the rmap/mapcount atomics on a cache-hot page-table line and struct folio, a few tens of cycles at ~3 GHz"),
        src("tlb_flush_local_one_ns", "~260 cycles per additional page in flush_tlb_mm_range (1 page 1276 cycles, 32 pages 9350 cycles), measured with the tlb_flush tracepoints during a kernel build by Dave Hansen, 'x86: mm: set TLB flush tunable to sane value', linux-mm 2014-02-18; ~90 ns at 3 GHz"),
        src("tlb_flush_local_all_ns", "full flushes averaged 2283 cycles (~760 ns at 3 GHz) in the same tracepoint data (Dave Hansen, linux-mm 2014-02-18), plus ~240 ns for the refills the flush causes (estimate: a handful of page walks that hit in cache; Alex Shi's x86 flush-range patch, LKML 2012-05, assumed ~100 ns per refill)"),
        src("tlb_flush_ipi_send_ns", "estimate: a shootdown to one remote CPU costs the initiator microseconds (Amit, 'Optimizing the TLB Shootdown Algorithm with Page Access Tracking', USENIX ATC 2017; Kumar et al., 'LATR', ASPLOS 2018; Amit, Tai and Wei, 'Don't shoot down TLB shootdowns!', EuroSys 2020), and each flushed PTE 'can take 100s of cycles' (Nadav Amit, 'x86/tlb: Concurrent TLB flushes' v4, LKML 2019-08). No single figure for current Xeons was found; 3 us taken"),
        src("tlb_flush_ipi_receive_ns", "estimate: interrupt entry and exit, flush_tlb_func and the acknowledgement on the receiving CPU, ~1 us (same literature as tlb_flush_ipi_send_ns)"),
        src("tlbi_broadcast_ns", "unused: x86 has no broadcast TLB invalidation; remote flushes are IPIs (tlb_flush_ipi_send_ns)"),
        src("dsb_ish_ns", "unused on x86 (see tlbi_broadcast_ns)"),
        src("reclaim_scan_folio_ns", "estimate: isolation, flag and reference checks and putback of one folio, a few hundred cycles with the lruvec lock amortised over a batch"),
        src("rmap_walk_ns", "estimate: anon_vma lock plus page_vma_mapped_walk for one mapping, mostly cache misses on the VMA and page table"),
        src("split_subpage_ns", "estimate: per subpage, split_huge_page remaps one PTE, copies flags into the tail's struct page, fixes its refcount and puts it on the LRU: a few cache misses, ~120 ns"),
        src("lru_op_ns", "estimate: a list insertion under the lruvec lock, with folio batches amortising the lock"),
        src("page_alloc_ns", "estimate: an order-0 rmqueue from the per-CPU lists. Mel Gorman's page-allocator microbenchmark reports 260 per order-0 allocation and 89 per free one at a time (mmtests pagealloc, units as printed there, in 'mm, page_alloc: add a bulk page allocator', linux-mm 2017-01); 150 ns taken"),
        src("memcg_charge_ns", "estimate: a per-CPU stock hit with occasional page_counter atomics"),
        src("swap_slot_alloc_ns", "estimate: a cluster (or si) lock plus a swap_map scan over a few slots"),
        src("word_write_ns_x1000", "derived: = zero_page_ns / 512 words (in ps): usemem stores every 8-byte word, bounded by the same single-core store bandwidth as clearing (clear_page on Ice Lake still allocates every line in the cache, per the same LKML mail, as user stores do)"),
        src("touch_resident_ns", "derived: = dram_read_latency_ns + 10 ns of cache lookups before the miss goes to memory (estimate)"),
        src("instruction_ns_x1000", "derived: = CPI / clock = 1.0 cycle per instruction at 3.0 GHz = 333 ps (estimate). 3.0 GHz is the all-core turbo class of Ice Lake-SP / Sapphire Rapids parts; a CPI of 1 sits between compute loops (SPEC CPU2017 integer runs at 1-2 instructions per cycle on Skylake-class cores) and data-center services, which retire fewer than one instruction per cycle (Kanev et al., 'Profiling a warehouse-scale computer', ISCA 2015). The simulator charges page faults and TLB misses of a replay separately, but not cache misses, which this figure includes on average"),
        src("brd_page_write_ns", "derived: = copy_page_ns + 150 ns for brd's xarray lookup and kmap (estimate); the first write to a sector also allocates brd's backing page, which is not included"),
        src("brd_page_read_ns", "derived: = copy_page_ns + 50 ns for the xarray lookup (estimate)"),
        src("ssd_read_latency_ns", "random read access latency 85 us: Intel SSD DC P4500 (PCIe 3.0 x4 NVMe, 1-2 TB) specifications, Lenovo Press product guide. The PCIe 4.0 successor below publishes no latency in the material found"),
        src("ssd_write_latency_ns", "random write access latency 20 us: Intel SSD DC P4500 specifications, Lenovo Press product guide"),
        src("ssd_bandwidth_bytes_per_s", "4300 MB/s sequential write (the swap-out direction; sequential read is 7000 MB/s and is not modelled separately): Intel D7-P5600 PCIe 4.0 NVMe announcement (AnandTech, 2020-06, as reported by geektopia.es)"),
        src("ssd_discard_ns", "estimate: an NVMe Deallocate of a 2 MiB range takes from tens of microseconds to milliseconds depending on the device's FTL; 0.5 ms is taken as typical"),
        src("hdd_seek_ns", "4.17 ms average rotational latency (half a revolution at 7200 rpm) plus ~4.3 ms average seek (estimate within the 4-9 ms that 7200 rpm datasheets quote)"),
        src("hdd_bandwidth_bytes_per_s", "estimate: ~200 MB/s sustained transfer on the outer tracks of a current 7200 rpm disk"),
        src("zram_compress_ns", "estimate: lzo1x-1 compresses the Silesia corpus at 650 MB/s (6.3 us per 4 KiB) on a Core i7-9700K (lzbench table in the zstd README); anonymous memory compresses faster (ratio ~2.7 against 2.1, and zero runs that lzo-rle encodes 1.1-4.8x faster, Dave Rodgman, 'lib/lzo: performance improvements', LKML 2018-11); 4 us taken"),
        src("zram_decompress_ns", "fio 4 KiB random reads from an lzo-rle zram device holding memory-like data (ratio 2.74) average 2235 ns each, including the syscall and the zram read path (u/VenditatioDelendaEst, tabulated in 'Zram Performance Analysis', notes.xeome.dev); ~1.5 us of that is taken as decompression (estimate)"),
        src("zram_same_page_ns", "estimate: page_same_filled reads all 4096 B of a same-filled page, ~300 ns at a single-core read bandwidth of 12-14 GB/s"),
        src("block_io_overhead_ns", "estimate: bio allocation, blk-mq submission, interrupt and completion for one request on an NVMe-class device, 1-2 us. zram and brd complete synchronously and cost less: the whole fio read of a zram page above takes 2.2 us"),
        src("dram_read_latency_ns", "estimate: ~90 ns idle latency to local DRAM on Ice Lake-SP (Sapphire Rapids' mesh adds ~10-20 ns)"),
        src("dram_bandwidth_bytes_per_s", "estimate: ~12 GB/s single-core read bandwidth, limited by the misses one core keeps in flight, not by the DIMMs"),
        src("cxl_read_latency_ns", "250 ns: within the 140-410 ns measured across four real CXL memory devices ('Dissecting CXL Memory Performance at Scale: Analysis, Modeling, and Optimization' (SupMario), arXiv 2409.14317, 2024); Pond (Li et al., ASPLOS 2023) puts a directly attached expander at local DRAM + 70-90 ns, the low end of that range"),
        src("cxl_bandwidth_bytes_per_s", "derived: = dram_bandwidth_bytes_per_s x dram_read_latency_ns / cxl_read_latency_ns: one core keeps the same number of misses in flight (Little's law), so its bandwidth falls with latency; the device's own link bandwidth is far above one core's"),
        src("page_walk_ns", "estimate: a 4-level walk whose upper levels hit in the paging-structure caches and whose leaf PTE line comes from L2/L3, ~40 ns (~120 cycles at 3 GHz); Intel's optimization manual puts an STLB miss at 'tens to hundreds of cycles', more under virtualization's two-dimensional walks"),
        src("dtlb_entries", "1536: the shared second-level TLB of Skylake-SP through Ice Lake-SP (4K/2M entries; Intel 64 and IA-32 Architectures Optimization Reference Manual, 'Cache and TLB hierarchy')"),
        src("itlb_code_pages", "estimate: the code pages a small compute kernel (such as XSBench's lookup loop plus libc) runs from, refilled after each full flush"),
    ],
};

// ---------------------------------------------------------------------------------------------
// arm64-altra: Ampere Altra (Neoverse N1, 3.0 GHz, 8 x DDR4-3200), an 8-vCPU KVM guest: the
// machine of the mTHP swap-out seed (Ryan Roberts, "Swap-out mTHP without splitting" v5).
// ---------------------------------------------------------------------------------------------

const ALTRA_ZERO_PAGE_NS: u64 = 400;
const ALTRA_COPY_PAGE_NS: u64 = ALTRA_ZERO_PAGE_NS * 3 / 2;
const ALTRA_DRAM_READ_LATENCY_NS: u64 = 85;
const ALTRA_DRAM_BANDWIDTH: u64 = 10_000_000_000;
const ALTRA_CXL_READ_LATENCY_NS: u64 = X86_CXL_READ_LATENCY_NS;
/// One broadcast TLBI plus the DSB ISH that waits for it (flush_tlb_page), and the issue cost of
/// the TLBI alone; estimates, see the sources of tlbi_broadcast_ns and dsb_ish_ns.
const ALTRA_TLBI_DSB_NS: u64 = 1_500;
const ALTRA_TLBI_BROADCAST_NS: u64 = 100;
const ALTRA_CLOCK_MHZ: u64 = 3_000;
const ALTRA_CPI_X1000: u64 = 1_000;

static ARM64_ALTRA: HwProfile = HwProfile {
    costs: HwCosts {
        name: "arm64-altra",
        description: "Ampere Altra (Neoverse N1, 3.0 GHz, DDR4-3200) in an 8-vCPU KVM guest, the \
                      machine of the mTHP swap-out seed",
        arch: Arch::Arm64,
        fault_entry_ns: 800,
        zero_page_ns: ALTRA_ZERO_PAGE_NS,
        copy_page_ns: ALTRA_COPY_PAGE_NS,
        pte_update_ns: 15,
        tlb_flush_local_one_ns: 0,
        tlb_flush_local_all_ns: 0,
        tlb_flush_ipi_send_ns: 0,
        tlb_flush_ipi_receive_ns: 0,
        tlbi_broadcast_ns: ALTRA_TLBI_BROADCAST_NS,
        dsb_ish_ns: ALTRA_TLBI_DSB_NS - ALTRA_TLBI_BROADCAST_NS,
        reclaim_scan_folio_ns: 300,
        rmap_walk_ns: 150,
        split_subpage_ns: 150,
        lru_op_ns: 30,
        page_alloc_ns: 150,
        memcg_charge_ns: 50,
        swap_slot_alloc_ns: 200,
        word_write_ns_x1000: 800,
        touch_resident_ns: ALTRA_DRAM_READ_LATENCY_NS + 10,
        instruction_ns_x1000: ALTRA_CPI_X1000 * 1000 / ALTRA_CLOCK_MHZ,
        brd_page_write_ns: ALTRA_COPY_PAGE_NS + BRD_LOOKUP_WRITE_NS,
        brd_page_read_ns: ALTRA_COPY_PAGE_NS + BRD_LOOKUP_READ_NS,
        ssd_read_latency_ns: 85_000,
        ssd_write_latency_ns: 20_000,
        ssd_bandwidth_bytes_per_s: 4_300_000_000,
        ssd_discard_ns: 500_000,
        hdd_seek_ns: 8_500_000,
        hdd_bandwidth_bytes_per_s: 200_000_000,
        zram_compress_ns: 5_000,
        zram_decompress_ns: 1_900,
        zram_same_page_ns: 350,
        block_io_overhead_ns: 1_500,
        dram_read_latency_ns: ALTRA_DRAM_READ_LATENCY_NS,
        dram_bandwidth_bytes_per_s: ALTRA_DRAM_BANDWIDTH,
        cxl_read_latency_ns: ALTRA_CXL_READ_LATENCY_NS,
        cxl_bandwidth_bytes_per_s: ALTRA_DRAM_BANDWIDTH * ALTRA_DRAM_READ_LATENCY_NS
            / ALTRA_CXL_READ_LATENCY_NS,
        page_walk_ns: 50,
        dtlb_entries: 1280,
        itlb_code_pages: 16,
    },
    sources: &[
        src("fault_entry_ns", "estimate: exception entry/exit and handle_mm_fault on Neoverse N1 (no KPTI needed on N1), slightly above x86-server for the guest's two-stage page-table walks"),
        src("zero_page_ns", "estimate: clear_page uses DC ZVA, which allocates lines without reading them; ~10 GB/s per core on Altra, so ~400 ns per 4 KiB (no published per-page figure for Altra was found)"),
        src("copy_page_ns", "derived: = 1.5 x zero_page_ns, as for x86-server (estimate)"),
        src("pte_update_ns", "estimate: as x86-server; set_ptes on arm64 also manages the contiguous bit, charged by the mechanism, not here"),
        src("tlb_flush_local_one_ns", "unused: arm64 Linux invalidates user translations only with broadcast (inner-shareable) TLBIs, see tlbi_broadcast_ns"),
        src("tlb_flush_local_all_ns", "unused: a whole-mm flush is one broadcast TLBI ASIDE1IS plus DSB ISH (tlbi_broadcast_ns, dsb_ish_ns); the refills it causes are charged as simulated TLB misses"),
        src("tlb_flush_ipi_send_ns", "unused: arm64 sends no IPIs for TLB maintenance; the initiator pays tlbi_broadcast_ns per TLBI and dsb_ish_ns per completion wait"),
        src("tlb_flush_ipi_receive_ns", "arm64 shoots down by broadcast TLBI: receiving cores take no interrupt, so nothing is charged to them"),
        src("tlbi_broadcast_ns", "estimate: issuing one TLBI ...IS posts a DVM message to every core of the inner-shareable domain through the CMN-600 mesh (in a KVM guest the whole 80-core host socket, as stage-1 TLBIs are not trapped); the core does not wait for it, but the number of DVM operations in flight is bounded, ~300 cycles at 3.0 GHz taken. 'Ampere Altra has high cost for tlbi' (Ryan Roberts, 'arm64/mm: Implement clear_ptes() to optimize exit, munmap, dontneed', linux-mm 2024-04: unfolding a contpte block, 16 extra TLBIs and one DSB per 16 pages, made per-page madvise(DONTNEED) 13% slower on Altra, while it was 1.3% faster on an Apple M2 VM). No per-instruction measurement for Neoverse N1 was found"),
        src("dsb_ish_ns", "derived: = 1.5 us for one TLBI plus its DSB ISH (the profile's estimate of a flush_tlb_page in an Altra KVM guest, kept from the IPI-based model it replaces) - tlbi_broadcast_ns. The DSB waits for every core of the domain to acknowledge; 'waiting for the completion of tlbi is a big deal in arm64' (Barry Song, 'arm64: support batched/deferred tlb shootdown during page reclamation' v3/v4 review, linux-mm 2022-09), and deferring that wait removed ptep_clear_flush's 5.36% of a single-process paging benchmark on an 8-core Snapdragon 888 (same series' cover letter). No direct measurement for Altra was found"),
        src("reclaim_scan_folio_ns", "estimate: as x86-server"),
        src("rmap_walk_ns", "estimate: as x86-server"),
        src("split_subpage_ns", "estimate: as x86-server plus the cost of a slower memory system, ~150 ns"),
        src("lru_op_ns", "estimate: as x86-server"),
        src("page_alloc_ns", "estimate: as x86-server"),
        src("memcg_charge_ns", "estimate: as x86-server"),
        src("swap_slot_alloc_ns", "estimate: as x86-server"),
        src("word_write_ns_x1000", "estimate: 8 B per store at ~10 GB/s single-core streaming-store bandwidth (user stores read lines for ownership, which DC ZVA avoids, so this is not derived from zero_page_ns)"),
        src("touch_resident_ns", "derived: = dram_read_latency_ns + 10 ns of cache lookups (estimate)"),
        src("instruction_ns_x1000", "derived: = CPI / clock = 1.0 cycle per instruction at the 3.0 GHz of Altra's Neoverse N1 cores = 333 ps (estimate, reasoning as for x86-server: N1 is a 4-wide core of the same class, and faults and TLB misses are charged separately)"),
        src("brd_page_write_ns", "derived: = copy_page_ns + 150 ns for brd's xarray lookup (estimate), as for x86-server"),
        src("brd_page_read_ns", "derived: = copy_page_ns + 50 ns for the lookup (estimate), as for x86-server"),
        src("ssd_read_latency_ns", "as x86-server (the seed used a RAM disk, not an SSD)"),
        src("ssd_write_latency_ns", "as x86-server"),
        src("ssd_bandwidth_bytes_per_s", "as x86-server"),
        src("ssd_discard_ns", "as x86-server"),
        src("hdd_seek_ns", "as x86-server"),
        src("hdd_bandwidth_bytes_per_s", "as x86-server"),
        src("zram_compress_ns", "estimate: x86-server's 4 us scaled by ~1.25 for a 3.0 GHz Neoverse N1 core"),
        src("zram_decompress_ns", "estimate: x86-server's 1.5 us scaled by ~1.25"),
        src("zram_same_page_ns", "estimate: a scan of 4 KiB at ~12 GB/s"),
        src("block_io_overhead_ns", "estimate: as x86-server"),
        src("dram_read_latency_ns", "85 ns: AnandTech measured an 81 ns structural DRAM latency (Arm quotes 83 ns with LMBench) on Graviton2, the same Neoverse N1 cores, CMN-600 mesh and 8 x DDR4-3200 as Altra ('Cloud Clash: Amazon Graviton2 Arm Against Intel and AMD', 2020)"),
        src("dram_bandwidth_bytes_per_s", "estimate: ~10 GB/s single-core read bandwidth"),
        src("cxl_read_latency_ns", "as x86-server (Altra has no CXL; kept so that every profile is complete)"),
        src("cxl_bandwidth_bytes_per_s", "derived as for x86-server: = dram_bandwidth_bytes_per_s x dram_read_latency_ns / cxl_read_latency_ns"),
        src("page_walk_ns", "estimate: as x86-server plus the stage-2 walk of a KVM guest"),
        src("dtlb_entries", "1280: the Neoverse N1 L2 TLB (Arm Neoverse N1 Technical Reference Manual, 'L2 TLB', 1280 entries, 5-way)"),
        src("itlb_code_pages", "as x86-server"),
    ],
};

static PROFILES: [&HwProfile; 2] = [&X86_SERVER, &ARM64_ALTRA];
static PROFILE_NAMES: [&str; 2] = ["x86-server", "arm64-altra"];

/// The profile called `name`, if there is one.
pub fn profile(name: &str) -> Option<&'static HwProfile> {
    PROFILES.iter().copied().find(|p| p.costs.name == name)
}

/// Every profile name, the default first.
pub fn profile_names() -> &'static [&'static str] {
    &PROFILE_NAMES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_of_every_profile_has_a_source() {
        for p in PROFILES {
            for field in COST_FIELDS {
                let s = p.source(field);
                assert!(
                    s.is_some_and(|s| !s.trim().is_empty()),
                    "{}: no source for {field}",
                    p.costs.name
                );
            }
            for s in p.sources {
                assert!(
                    COST_FIELDS.contains(&s.field),
                    "{}: source for unknown field {}",
                    p.costs.name,
                    s.field
                );
            }
            assert_eq!(
                p.sources.len(),
                COST_FIELDS.len(),
                "{}: a field has two sources",
                p.costs.name
            );
        }
    }

    #[test]
    fn field_list_matches_the_struct() {
        let names: Vec<&str> = X86_SERVER.costs.values().iter().map(|v| v.0).collect();
        assert_eq!(names, COST_FIELDS);
    }

    #[test]
    fn values_are_positive_except_documented_zeros() {
        for p in PROFILES {
            // The flush costs of the other architecture's mechanism are documented zeros.
            let unused: &[&str] = match p.costs.arch {
                Arch::X86 => &["tlbi_broadcast_ns", "dsb_ish_ns"],
                Arch::Arm64 => &[
                    "tlb_flush_local_one_ns",
                    "tlb_flush_local_all_ns",
                    "tlb_flush_ipi_send_ns",
                    "tlb_flush_ipi_receive_ns",
                ],
            };
            for (field, v) in p.costs.values() {
                let zero_ok = unused.contains(&field);
                assert!(v > 0 || zero_ok, "{}: {field} is 0", p.costs.name);
            }
        }
    }

    #[test]
    fn derived_fields_follow_their_sources() {
        let x = &X86_SERVER.costs;
        assert_eq!(x.copy_page_ns, x.zero_page_ns * 3 / 2);
        assert_eq!(x.word_write_ns_x1000, x.zero_page_ns * 1000 / 512);
        assert_eq!(x.touch_resident_ns, x.dram_read_latency_ns + 10);
        assert_eq!(x.brd_page_write_ns, x.copy_page_ns + 150);
        assert_eq!(x.brd_page_read_ns, x.copy_page_ns + 50);
        assert_eq!(x.instruction_ns_x1000, 333);
        assert_eq!(ARM64_ALTRA.costs.instruction_ns_x1000, 333);
        for c in [&X86_SERVER.costs, &ARM64_ALTRA.costs] {
            assert_eq!(
                c.cxl_bandwidth_bytes_per_s,
                c.dram_bandwidth_bytes_per_s * c.dram_read_latency_ns / c.cxl_read_latency_ns
            );
            assert!(c.cxl_read_latency_ns > c.dram_read_latency_ns);
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
        assert!(profile("").is_none());
        assert_eq!(profile_names()[0], DEFAULT_PROFILE);
        assert_eq!(profile_names().len(), PROFILES.len());
        for n in profile_names() {
            assert_eq!(profile(n).map(|p| p.costs.name), Some(*n));
        }
        assert!(profile(DEFAULT_PROFILE).is_some());
        assert!(X86_SERVER.source("no_such_field").is_none());
    }
}
