/*
 * `foliosim calibrate`'s microbenchmarks: one measurement per invocation, printed as
 *   result name=NAME ps=N
 * (picoseconds per unit: per page, per word, per access or per call), or
 *   skip name=NAME reason=...
 * when this machine cannot take it. The runner repeats each one, takes medians and differences
 * (docs/calibration.md says which measurement gives which cost). The process pins itself to one
 * CPU so that a measurement is not split across cores, and times itself by its thread's CPU time.
 *
 * Usage: calibrate BENCH PAGES [CPU [DEVICE]]
 *   read_fault   read one byte of each fresh anonymous page (THP off): maps the shared zero page
 *   write_fault  write one byte of each fresh anonymous page (THP off): allocate, zero, map
 *   thp_fault    write one byte of each 2 MiB of a MADV_HUGEPAGE mapping; ps per 4 KiB
 *   mthp_fault_64k   write one byte of each 64 KiB of a mapping while 64 KiB is the only
 *                anonymous mTHP size enabled (checked with its anon_fault_alloc); ps per 4 KiB
 *   cow          write one byte of each page shared with a forked child: copy-on-write
 *   word_write   usemem's loop (fill_page, class "data") over resident memory; ps per 8 B word
 *   memset       fill_page of class "same" (a memset) over resident memory, ps per 8 B word: as
 *                memset_cold; and over one 64 KiB buffer again and again (in the cache, as a
 *                page the kernel has just filled is), as memset_cached
 *   touch        a random pointer chase over the lines of a resident THP mapping, each load a
 *                different line (a cache miss that hits the TLB)
 *   pageout_data / pageout_same   MADV_PAGEOUT of pages of class "data" / same-filled
 *                (needs a swap device), ps per page; then reading each page back prints
 *                swapin_data / swapin_same
 *   unmap_swapped_data / unmap_swapped_same   MADV_PAGEOUT of pages of class "data" /
 *                same-filled, then munmap of them all while swapped out (every PTE a swap
 *                entry, freed with its zram slot); ps per page of the munmap
 *   unmap_resident   munmap of written resident pages (THP off); ps per page
 *   unmap_resident_64k   the same in 64 KiB folios (hugepages-64kB/enabled "always", checked
 *                with its anon_fault_alloc); ps per 4 KiB page
 *   pageout_same_64k   the same for same-filled pages in 64 KiB folios (needs
 *                hugepages-64kB/enabled "always" and no larger size enabled; checked with the
 *                size's stats): pageout_same_64k and swapin_same_64k, ps per 4 KiB page
 *   same_scan    zram's page_same_filled test (first word against the last, then every word)
 *                over resident same-filled pages; ps per page
 *   zram_read    O_DIRECT reads of PAGES 4 KiB blocks of the zram device DEVICE (4th argument)
 *                that hold nothing (zram fills them as it fills a same-filled page), as 4 KiB
 *                requests (zram_read_4k) and as 64 KiB requests (zram_read_64k); ps per 4 KiB
 *   zram_write   O_DIRECT writes of PAGES 4 KiB blocks to the zram device DEVICE (4th argument; one
 *                that is not swap), each from a page of its own, the blocks discarded first
 *                (empty slots, as a swap-out finds them): same-filled pages (zram_write_same),
 *                then pages of class "data" (zram_write_data); ps per page
 *   disk         O_DIRECT requests to the file FILE (4th argument) of at least PAGES 4 KiB blocks,
 *                on the disk to measure, timed by the wall clock (a request waits for the
 *                device): 4 KiB reads at pseudo-random blocks (disk_read_4k, ps per request),
 *                the file in 1 MiB reads (disk_read_1m, ps per request), then the same writes
 *                (disk_write_4k, disk_write_1m)
 *   mprotect_local / mprotect_remote   mprotect of one resident page to read-only and back,
 *                alone, or while a thread of the same process runs on another CPU (whose TLB
 *                must then be flushed by IPI); ps per mprotect call, and for the remote one
 *                mprotect_remote_ipis_per_million: flush IPIs that CPU received per 10^6 calls,
 *                and mprotect_remote_received: ps the spinning thread lost per IPI it received
 *                (its spins against its pace in 50 ms before the calls)
 *   thp_split    splits PAGES 4 KiB of PMD THPs, each by MADV_COLD of its last 4 KiB (a range
 *                that does not cover the PMD splits the folio, madvise_cold_or_pageout_pte_range),
 *                once with every subpage zero-filled (v6.12+ maps each to the shared zero page
 *                and frees it: thp_split_zero) and once with every subpage's first word written
 *                (each stays mapped: thp_split_data); ps per 4 KiB
 */
#include "bench.h"

#include <fcntl.h>
#include <pthread.h>
#include <linux/fs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

/*
 * The calling thread's CPU time (user + system): on a shared machine a timed loop is preempted
 * by other tasks, and wall-clock time would count their turns as this benchmark's cost. A
 * task's sys time on the live kernel, which the calibrated costs are compared with, excludes
 * them too.
 */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void result(const char *name, uint64_t elapsed_ns, uint64_t units)
{
	printf("result name=%s ps=%" PRIu64 "\n", name, elapsed_ns * 1000 / (units ? units : 1));
}

static void skip(const char *name, const char *reason)
{
	printf("skip name=%s reason=%s\n", name, reason);
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

/* The kB a field of /proc/self/smaps_rollup shows ("AnonHugePages", "Swap"). */
static uint64_t rollup_kb(const char *field)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	size_t len = strlen(field);
	uint64_t kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, len) && line[len] == ':')
			kb = strtoull(line + len + 1, NULL, 10);
	fclose(f);
	return kb;
}

static char *map_small(uint64_t pages)
{
	char *mem = map_aligned(pages * PAGE_BYTES);

	if (madvise(mem, pages * PAGE_BYTES, MADV_NOHUGEPAGE))
		die("madvise(MADV_NOHUGEPAGE)");
	return mem;
}

static void populate(char *mem, uint64_t pages)
{
	for (uint64_t p = 0; p < pages; p++)
		mem[p * PAGE_BYTES] = 1;
}

/*
 * Touches and frees `bytes` of memory (as THPs when `huge`), so that the timed allocations that
 * follow get pages the allocator just freed: in a VM, a guest page never touched before costs a
 * fault on the host as well (several microseconds per 4 KiB here), which is not the cost measured.
 */
static void prewarm(uint64_t bytes, int huge)
{
	char *mem = map_aligned(bytes);

	madvise(mem, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	for (uint64_t off = 0; off < bytes; off += PAGE_BYTES)
		mem[off] = 1;
	unmap_aligned(mem, bytes);
}

static void fault(const char *name, uint64_t pages, int write)
{
	char *mem;

	prewarm(pages * PAGE_BYTES, 0);
	mem = map_small(pages);
	volatile char sink = 0;
	uint64_t start = cpu_ns();

	for (uint64_t p = 0; p < pages; p++) {
		if (write)
			mem[p * PAGE_BYTES] = 1;
		else
			sink += ((volatile char *)mem)[p * PAGE_BYTES];
	}
	result(name, cpu_ns() - start, pages);
	(void)sink;
}

/* A PMD-aligned MADV_HUGEPAGE mapping for benchmark `name`; NULL (skipped) if refused. */
static char *map_huge(uint64_t size, const char *name)
{
	char *mem = map_aligned(size);

	if (madvise(mem, size, MADV_HUGEPAGE)) {
		skip(name, "madvise(MADV_HUGEPAGE)-failed");
		return NULL;
	}
	return mem;
}

/* Whether every fault of benchmark `name` on its `size` bytes got a PMD THP; if not, skipped. */
static int all_huge(uint64_t size, const char *name)
{
	if (rollup_kb("AnonHugePages") * 1024 < size) {
		skip(name, "not-every-fault-got-a-PMD-THP");
		return 0;
	}
	return 1;
}

static void thp_fault(uint64_t pages)
{
	uint64_t size = (pages * PAGE_BYTES + PMD_BYTES - 1) & ~(PMD_BYTES - 1), start, elapsed;
	char *mem;

	prewarm(size, 1);
	mem = map_huge(size, "thp_fault");
	if (!mem)
		return;
	start = cpu_ns();
	for (uint64_t off = 0; off < size; off += PMD_BYTES)
		mem[off] = 1;
	elapsed = cpu_ns() - start;
	if (!all_huge(size, "thp_fault"))
		return;
	result("thp_fault", elapsed, size / PAGE_BYTES);
}

static uint64_t mthp_stat(unsigned int size_kb, const char *stat);

/* thp_fault for 64 KiB folios: with order 0 and 9, how zeroing and the per-fault work scale */
static void mthp_fault(uint64_t pages, unsigned int size_kb, const char *name)
{
	uint64_t folio_bytes = size_kb * 1024ULL, size = pages * PAGE_BYTES, start, elapsed, got;
	char *mem;

	size -= size % folio_bytes;
	prewarm(size, 0);
	mem = map_aligned(size);
	got = mthp_stat(size_kb, "anon_fault_alloc");
	start = cpu_ns();
	for (uint64_t off = 0; off < size; off += folio_bytes)
		mem[off] = 1;
	elapsed = cpu_ns() - start;
	got = mthp_stat(size_kb, "anon_fault_alloc") - got;
	if (got < size / folio_bytes * 95 / 100) {
		printf("skip name=%s reason=fewer-than-95%%-of-faults-got-%ukB-folios\n", name,
		       size_kb);
		return;
	}
	result(name, elapsed, size / PAGE_BYTES);
}

static void cow(uint64_t pages)
{
	char *mem;

	/* the copies go to pages the allocator just freed, as the fresh write faults' do */
	prewarm(2 * pages * PAGE_BYTES, 0);
	mem = map_small(pages);
	int fds[2];
	pid_t child;
	uint64_t start, elapsed;
	char go;

	populate(mem, pages);
	if (pipe(fds))
		die("pipe");
	child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		close(fds[1]);
		/* keep the pages shared until the parent is done */
		if (read(fds[0], &go, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(fds[0]);
	start = cpu_ns();
	for (uint64_t p = 0; p < pages; p++)
		mem[p * PAGE_BYTES] = 2;
	elapsed = cpu_ns() - start;
	close(fds[1]);
	waitpid(child, NULL, 0);
	result("cow", elapsed, pages);
}

/*
 * `pages` fills of class `data` into the resident buffer `mem`, the p-th into its page p & mask
 * (every page, or again and again the first few); ps per 8 B word.
 */
static void fill_resident(char *mem, uint64_t pages, uint64_t mask, unsigned int data,
			  const char *name)
{
	uint64_t start = cpu_ns();

	for (uint64_t p = 0; p < pages; p++)
		fill_page(mem + (p & mask) * PAGE_BYTES, data, p);
	result(name, cpu_ns() - start, pages * (PAGE_BYTES / 8));
}

static void word_write(uint64_t pages)
{
	char *mem = map_small(pages);

	populate(mem, pages);
	fill_resident(mem, pages, UINT64_MAX, DATA_DEFAULT, "word_write");
}

static void memset_bench(uint64_t pages)
{
	char *mem = map_small(pages);

	populate(mem, pages);
	fill_resident(mem, pages, UINT64_MAX, DATA_SAME_FILLED, "memset_cold");
	/* 16 pages: the folio of a 64 KiB mTHP fault, well inside L2 */
	fill_resident(mem, pages, 15, DATA_SAME_FILLED, "memset_cached");
}

/* the byte offset of the k-th link of touch()'s cycle */
static uint64_t chase_offset(const uint64_t *order, uint64_t n, uint64_t k)
{
	uint64_t page = order[k % n];

	return page * PAGE_BYTES + ((page + k / n) % 64) * 64;
}

static void touch(uint64_t pages)
{
	uint64_t size = (pages * PAGE_BYTES + PMD_BYTES - 1) & ~(PMD_BYTES - 1), n = size / PAGE_BYTES;
	char *mem = map_aligned(size);
	uint64_t *order = malloc(n * sizeof(*order)), s = 88172645463325252ULL, start, at;
	uint64_t accesses = 4 * n;

	if (!order)
		die("malloc");
	madvise(mem, size, MADV_HUGEPAGE);
	for (uint64_t i = 0; i < n; i++)
		order[i] = i;
	for (uint64_t i = n - 1; i > 0; i--) {
		uint64_t j = xorshift64(&s) % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	/*
	 * One cycle through every line of the buffer: 64 laps of the pages in a random order, lap l
	 * at line (page + l) % 64 of each page. The 4 laps timed load 4 lines of each page, none
	 * twice, 16 MiB in all: each load misses the caches (the set-up wrote the first laps' lines
	 * first, and 256 MiB after them), whatever the host's other guests leave of the L3. A cycle of
	 * one line per page (4 MiB, loaded 4 times) hit in the L3 in some runs and not in others.
	 */
	for (uint64_t k = 0; k < 64 * n; k++) {
		uint64_t next = (k + 1) % (64 * n);

		*(uint64_t *)(mem + chase_offset(order, n, k)) = chase_offset(order, n, next);
	}
	at = chase_offset(order, n, 0);
	start = cpu_ns();
	for (uint64_t i = 0; i < accesses; i++)
		at = *(volatile uint64_t *)(mem + at);
	result("touch", cpu_ns() - start, accesses);
	free(order);
}

static void pageout(uint64_t pages, unsigned int data, const char *out_name, const char *in_name)
{
	char *mem = map_small(pages);
	volatile char sink = 0;
	uint64_t start, elapsed, swapped;

	for (uint64_t p = 0; p < pages; p++)
		fill_page(mem + p * PAGE_BYTES, data, p);
	start = cpu_ns();
	if (madvise(mem, pages * PAGE_BYTES, MADV_PAGEOUT)) {
		skip(out_name, "madvise(MADV_PAGEOUT)-failed");
		return;
	}
	elapsed = cpu_ns() - start;
	swapped = rollup_kb("Swap") / 4;
	if (swapped < pages * 95 / 100) {
		printf("skip name=%s reason=only-%" PRIu64 "-of-%" PRIu64 "-pages-swapped-out\n",
		       out_name, swapped, pages);
		return;
	}
	result(out_name, elapsed, swapped);
	start = cpu_ns();
	for (uint64_t p = 0; p < pages; p++)
		sink += ((volatile char *)mem)[p * PAGE_BYTES];
	result(in_name, cpu_ns() - start, pages);
	(void)sink;
}

/*
 * munmap of `pages` pages swapped out by MADV_PAGEOUT: zap_pte_range finds a swap entry in each
 * PTE and frees it (free_swap_and_cache_nr), which tells the device (zram_slot_free_notify:
 * zs_free of a compressed object, a flag for a same-filled slot).
 */
static void unmap_swapped(uint64_t pages, unsigned int data, const char *name)
{
	char *mem = map_small(pages);
	uint64_t start, elapsed, swapped;

	for (uint64_t p = 0; p < pages; p++)
		fill_page(mem + p * PAGE_BYTES, data, p);
	if (madvise(mem, pages * PAGE_BYTES, MADV_PAGEOUT)) {
		skip(name, "madvise(MADV_PAGEOUT)-failed");
		return;
	}
	swapped = rollup_kb("Swap") / 4;
	if (swapped < pages * 95 / 100) {
		printf("skip name=%s reason=only-%" PRIu64 "-of-%" PRIu64 "-pages-swapped-out\n",
		       name, swapped, pages);
		return;
	}
	start = cpu_ns();
	unmap_aligned(mem, pages * PAGE_BYTES);
	elapsed = cpu_ns() - start;
	result(name, elapsed, swapped);
}

/*
 * munmap of `pages` written resident pages, in folios of `size_kb` (4: THP off; 64: checked with
 * the size's anon_fault_alloc): the PTEs cleared, the folios' mappings dropped, the folios
 * uncharged and freed, and the page tables freed.
 */
static void unmap_resident(uint64_t pages, unsigned int size_kb, const char *name)
{
	uint64_t folios = pages / (size_kb / 4), before = mthp_stat(size_kb, "anon_fault_alloc");
	char *mem = size_kb == 4 ? map_small(pages) : map_aligned(pages * PAGE_BYTES);
	uint64_t start, elapsed;

	populate(mem, pages);
	if (size_kb != 4 && mthp_stat(size_kb, "anon_fault_alloc") - before < folios * 95 / 100) {
		printf("skip name=%s reason=fewer-than-95%%-of-faults-got-%ukB-folios\n", name,
		       size_kb);
		return;
	}
	start = cpu_ns();
	unmap_aligned(mem, pages * PAGE_BYTES);
	elapsed = cpu_ns() - start;
	result(name, elapsed, pages);
}

/*
 * page_same_filled's test, as drivers/block/zram does it: the last word first, then the rest.
 * Not inlined, and 64-byte aligned, so that its loop sits in the same place in every build: as
 * inlined code the scan took 150 or 290 ns a page from one build of this file to the next, by
 * where the loop fell.
 */
static __attribute__((noinline, aligned(64))) int same_filled(const uint64_t *page)
{
	const unsigned int last = PAGE_BYTES / sizeof(*page) - 1;
	uint64_t v = page[0];

	if (v != page[last])
		return 0;
	for (unsigned int i = 1; i < last; i++)
		if (page[i] != v)
			return 0;
	return 1;
}

/* The scan zram makes of each page it stores (64 MiB, beyond most last-level caches). */
static void same_scan(uint64_t pages)
{
	/*
	 * THP-backed: zram scans the page through the kernel's direct map, which huge pages map. In
	 * 4 KiB pages the scan took 150 or 290 ns a page here, by the phase of the host (the TLB
	 * misses' walks through its page tables), and 150 in THPs in both.
	 */
	char *mem = map_huge(pages * PAGE_BYTES, "same_scan");
	uint64_t start, elapsed, same = 0;

	if (!mem)
		return;
	for (uint64_t p = 0; p < pages; p++)
		fill_page(mem + p * PAGE_BYTES, DATA_SAME_FILLED, p);
	if (!all_huge(pages * PAGE_BYTES, "same_scan"))
		return;
	start = cpu_ns();
	for (uint64_t p = 0; p < pages; p++)
		same += same_filled((const uint64_t *)(mem + p * PAGE_BYTES));
	elapsed = cpu_ns() - start;
	if (same != pages)
		die("same_scan: a same-filled page was not found same-filled");
	result("same_scan", elapsed, pages);
}

/* A counter of one mTHP size (/sys/kernel/mm/transparent_hugepage/hugepages-64kB/stats/swpout) */
static uint64_t mthp_stat(unsigned int size_kb, const char *stat)
{
	char path[128];
	FILE *f;
	unsigned long long v = 0;

	snprintf(path, sizeof(path),
		 "/sys/kernel/mm/transparent_hugepage/hugepages-%ukB/stats/%s", size_kb, stat);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/*
 * pageout() for same-filled pages in folios of `size_kb`: each folio is one bio, which zram
 * stores one 4 KiB page at a time, so against order 0 this separates zram's per-page work from
 * the per-folio (per-bio, per-fault, per-reclaim) work. Each step is checked with the size's
 * counters: faults that got folios of that size, swap-outs and swap-ins of whole folios.
 */
static void pageout_mthp(uint64_t pages, unsigned int size_kb, const char *out_name,
			 const char *in_name)
{
	uint64_t per_folio = size_kb / 4, folios = pages / per_folio, start, elapsed, swapped, before;
	char *mem = map_aligned(pages * PAGE_BYTES);
	volatile char sink = 0;

	before = mthp_stat(size_kb, "anon_fault_alloc");
	for (uint64_t p = 0; p < pages; p++)
		fill_page(mem + p * PAGE_BYTES, DATA_SAME_FILLED, p);
	if (mthp_stat(size_kb, "anon_fault_alloc") - before < folios * 95 / 100) {
		printf("skip name=%s reason=fewer-than-95%%-of-faults-got-%ukB-folios\n", out_name,
		       size_kb);
		return;
	}
	before = mthp_stat(size_kb, "swpout");
	start = cpu_ns();
	if (madvise(mem, pages * PAGE_BYTES, MADV_PAGEOUT)) {
		skip(out_name, "madvise(MADV_PAGEOUT)-failed");
		return;
	}
	elapsed = cpu_ns() - start;
	swapped = rollup_kb("Swap") / 4;
	if (swapped < pages * 95 / 100 || mthp_stat(size_kb, "swpout") - before < folios * 95 / 100) {
		printf("skip name=%s reason=fewer-than-95%%-of-%ukB-folios-swapped-out-whole\n",
		       out_name, size_kb);
		return;
	}
	result(out_name, elapsed, swapped);
	before = mthp_stat(size_kb, "swpin");
	start = cpu_ns();
	for (uint64_t p = 0; p < pages; p++)
		sink += ((volatile char *)mem)[p * PAGE_BYTES];
	elapsed = cpu_ns() - start;
	(void)sink;
	if (mthp_stat(size_kb, "swpin") - before < folios * 95 / 100) {
		/* v6.12+: none once zswap was enabled since boot (zswap_never_enabled) */
		printf("skip name=%s reason=fewer-than-95%%-of-%ukB-folios-swapped-in-whole-"
		       "(zswap-on-since-boot?)\n", in_name, size_kb);
		return;
	}
	result(in_name, elapsed, pages);
}

/* The benchmark device opened for O_DIRECT, or -1 after a skip line naming `name`. */
static int open_device(const char *dev, int flags, const char *name)
{
	int fd;

	if (!dev) {
		skip(name, "no-device-given");
		return -1;
	}
	fd = open(dev, flags | O_DIRECT);
	if (fd < 0)
		skip(name, "cannot-open-the-device-with-O_DIRECT");
	return fd;
}

/*
 * zram_bio_read takes a request apart into 4 KiB pages, each read through its own slot: reading
 * the same blocks as 4 KiB and as 64 KiB requests separates zram's work per page from the
 * request's. The blocks start 1 MiB into the device, past a swap header; blocks that hold
 * nothing are filled like same-filled ones (zram_read_page: no handle or ZRAM_SAME).
 */
static void zram_read(uint64_t pages, const char *dev)
{
	const uint64_t skip_bytes = 1 << 20, request_pages = 16;
	uint64_t start, elapsed;
	char *buf;
	int fd;

	fd = open_device(dev, O_RDONLY, "zram_read_4k");
	if (fd < 0)
		return;
	/* each block is read into a page of its own, as a swap-in fills a page of its own */
	pages -= pages % request_pages;
	buf = map_small(pages);
	populate(buf, pages);
	start = cpu_ns();
	for (uint64_t p = 0; p < pages; p++)
		if (pread(fd, (char *)buf + p * PAGE_BYTES, PAGE_BYTES,
			  skip_bytes + p * PAGE_BYTES) != PAGE_BYTES)
			die("pread 4 KiB");
	elapsed = cpu_ns() - start;
	result("zram_read_4k", elapsed, pages);
	start = cpu_ns();
	for (uint64_t p = 0; p < pages; p += request_pages)
		if (pread(fd, (char *)buf + p * PAGE_BYTES, request_pages * PAGE_BYTES,
			  skip_bytes + p * PAGE_BYTES) != (ssize_t)(request_pages * PAGE_BYTES))
			die("pread 64 KiB");
	elapsed = cpu_ns() - start;
	result("zram_read_64k", elapsed, pages);
	close(fd);
}

/*
 * zram_write_page compresses a page only when it is not same-filled, and stores the result in a
 * zsmalloc object: writing the same blocks with same-filled pages and with pages of the data class
 * differs by the compression, the object's allocation and copy, and the same-filled test's scan
 * of the whole page (a data page stops at its first word). Written straight to the device, the
 * difference is not buried in a swap-out's other work, as pageout_data - pageout_same is.
 */
static void zram_write(uint64_t pages, const char *dev)
{
	const unsigned int classes[] = { DATA_SAME_FILLED, DATA_DEFAULT };
	const char *names[] = { "zram_write_same", "zram_write_data" };
	uint64_t range[2] = { 0, pages * PAGE_BYTES }, start, elapsed;
	char *buf;
	int fd;

	fd = open_device(dev, O_RDWR, "zram_write_same");
	if (fd < 0)
		return;
	buf = map_small(pages);
	for (int c = 0; c < 2; c++) {
		for (uint64_t p = 0; p < pages; p++)
			fill_page(buf + p * PAGE_BYTES, classes[c], p);
		if (ioctl(fd, BLKDISCARD, range)) {
			skip(names[c], "BLKDISCARD-failed");
			break;
		}
		start = cpu_ns();
		for (uint64_t p = 0; p < pages; p++)
			if (pwrite(fd, buf + p * PAGE_BYTES, PAGE_BYTES, p * PAGE_BYTES) != PAGE_BYTES)
				die("pwrite 4 KiB");
		elapsed = cpu_ns() - start;
		result(names[c], elapsed, pages);
	}
	if (ioctl(fd, BLKDISCARD, range))
		die("BLKDISCARD");
	close(fd);
	munmap(buf, pages * PAGE_BYTES);
}

/* The wall-clock time: a request to a disk waits for the device, which CPU time leaves out. */
static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * A disk's latency and bandwidth as the model charges a request (the latency, then its size over
 * the bandwidth): O_DIRECT, so that the page cache is not what is timed. Small requests at
 * pseudo-random blocks (a fixed xorshift sequence) give the latency plus one block's transfer,
 * 1 MiB requests in order the latency plus 256 blocks'.
 */
static void disk(uint64_t pages, const char *file)
{
	const uint64_t big_pages = 256;
	const char *names[2][2] = { { "disk_read_4k", "disk_read_1m" },
				    { "disk_write_4k", "disk_write_1m" } };
	uint64_t start, x = 0x9e3779b97f4a7c15ULL, blocks;
	char *buf;
	int fd;

	fd = open_device(file, O_RDWR, "disk_read_4k");
	if (fd < 0)
		return;
	blocks = pages - pages % big_pages;
	buf = map_small(big_pages);
	for (uint64_t p = 0; p < big_pages; p++)
		fill_page(buf + p * PAGE_BYTES, DATA_DEFAULT, p);
	for (int w = 0; w < 2; w++) {
		/* as many small requests as the big ones cover blocks, a sixteenth of them */
		uint64_t small = blocks / 16;

		start = wall_ns();
		for (uint64_t i = 0; i < small; i++) {
			uint64_t block;
			ssize_t n;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			block = x % blocks;
			n = w ? pwrite(fd, buf, PAGE_BYTES, block * PAGE_BYTES)
			      : pread(fd, buf, PAGE_BYTES, block * PAGE_BYTES);
			if (n != PAGE_BYTES)
				die(w ? "pwrite 4 KiB" : "pread 4 KiB");
		}
		result(names[w][0], wall_ns() - start, small);
		start = wall_ns();
		for (uint64_t b = 0; b < blocks; b += big_pages) {
			ssize_t n = w ? pwrite(fd, buf, big_pages * PAGE_BYTES, b * PAGE_BYTES)
				      : pread(fd, buf, big_pages * PAGE_BYTES, b * PAGE_BYTES);

			if (n != (ssize_t)(big_pages * PAGE_BYTES))
				die(w ? "pwrite 1 MiB" : "pread 1 MiB");
		}
		result(names[w][1], wall_ns() - start, blocks / big_pages);
	}
	close(fd);
	munmap(buf, big_pages * PAGE_BYTES);
}

/*
 * The splits of thp_split: PMD THPs faulted in (their subpages left zero-filled, or `data`: each
 * subpage's first word written, so that a zero test stops at once), then each split by MADV_COLD
 * of its last 4 KiB, timed by this thread's CPU time (the split runs in the caller). Checked with
 * smaps_rollup: every 2 MiB a THP before and none after, and for zero-filled subpages, less than
 * 5 % left anonymous (the rest mapped to the shared zero page).
 */
static void thp_split_one(uint64_t pages, int data, const char *name)
{
	uint64_t size = (pages * PAGE_BYTES + PMD_BYTES - 1) & ~(PMD_BYTES - 1), start, elapsed;
	char *mem;

	prewarm(size, 1);
	mem = map_aligned(size);
	if (madvise(mem, size, MADV_HUGEPAGE)) {
		skip(name, "madvise(MADV_HUGEPAGE)-failed");
		return;
	}
	for (uint64_t off = 0; off < size; off += PMD_BYTES)
		mem[off] = 0;
	if (data)
		for (uint64_t off = 0; off < size; off += PAGE_BYTES)
			*(uint64_t *)(mem + off) = off + 1;
	if (rollup_kb("AnonHugePages") * 1024 < size) {
		skip(name, "not-every-fault-got-a-PMD-THP");
		return;
	}
	start = cpu_ns();
	for (uint64_t off = PMD_BYTES - PAGE_BYTES; off < size; off += PMD_BYTES)
		if (madvise(mem + off, PAGE_BYTES, MADV_COLD)) {
			skip(name, "madvise(MADV_COLD)-failed");
			return;
		}
	elapsed = cpu_ns() - start;
	if (rollup_kb("AnonHugePages") > 0) {
		skip(name, "a-THP-was-not-split");
		return;
	}
	if (!data && rollup_kb("Anonymous") * 1024 > size / 20) {
		skip(name, "zero-filled-subpages-stayed-mapped-(no-zero-page-remap-before-v6.12)");
		return;
	}
	result(name, elapsed, size / PAGE_BYTES);
	unmap_aligned(mem, size);
}

/* Flush IPIs CPU `cpu` has received: its column of the TLB row of /proc/interrupts (x86). */
static int64_t tlb_ipis(int cpu)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char line[4096];
	int64_t n = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;

		while (*p == ' ')
			p++;
		if (strncmp(p, "TLB:", 4))
			continue;
		p += 4;
		for (int c = 0; c <= cpu; c++) {
			long long v = strtoll(p, &end, 10);

			if (end == p)
				break;
			if (c == cpu)
				n = v;
			p = end;
		}
	}
	fclose(f);
	return n;
}

static volatile int stop_spinning;
static volatile uint64_t spins;
static char *shared_page;

static void *spin(void *arg)
{
	pin(*(int *)arg);
	/* stay on the other CPU in this mm: its TLB may hold the page's translation */
	while (!stop_spinning) {
		(void)*(volatile char *)shared_page;
		spins++;
	}
	return NULL;
}

static void mprotect_bench(const char *name, uint64_t calls, int remote_cpu)
{
	char *mem = map_small(1);
	pthread_t thread;
	uint64_t start, wall_start = 0, spins_start = 0;
	int64_t ipis = 0;
	double spins_per_ns = 0;

	mem[0] = 1;
	shared_page = mem;
	if (remote_cpu >= 0) {
		if (pthread_create(&thread, NULL, spin, &remote_cpu))
			die("pthread_create");
		usleep(20000);
		/* the spinning thread's pace while nothing interrupts it */
		wall_start = wall_ns();
		spins_start = spins;
		usleep(50000);
		spins_per_ns = (double)(spins - spins_start) / (double)(wall_ns() - wall_start);
		ipis = tlb_ipis(remote_cpu);
		wall_start = wall_ns();
		spins_start = spins;
	}
	start = cpu_ns();
	for (uint64_t i = 0; i < calls; i++) {
		if (mprotect(mem, PAGE_BYTES, i % 2 ? PROT_READ | PROT_WRITE : PROT_READ))
			die("mprotect");
		(void)*(volatile char *)mem;
	}
	result(name, cpu_ns() - start, calls);
	/*
	 * A flush IPI goes out only while the spinning thread runs on its CPU (and, in a KVM guest,
	 * its vCPU runs on the host): on a shared machine many calls send none. The IPIs that CPU
	 * received per million calls are printed (in the ps field) for the reader to judge the
	 * difference by; the runner does not divide by them (see docs/calibration.md).
	 */
	if (remote_cpu >= 0 && ipis >= 0 && tlb_ipis(remote_cpu) >= ipis) {
		int64_t received = tlb_ipis(remote_cpu) - ipis;
		/*
		 * The receiving side: the time the spinning thread lost to the IPIs, its pace before
		 * against the spins it made while they came, per IPI received.
		 */
		double lost_ns = (double)(wall_ns() - wall_start) -
				 (double)(spins - spins_start) / spins_per_ns;

		printf("result name=%s_ipis_per_million ps=%" PRId64 "\n", name,
		       received * 1000000 / (int64_t)calls);
		if (received > 0 && lost_ns > 0)
			printf("result name=%s_received ps=%" PRIu64 "\n", name,
			       (uint64_t)(lost_ns * 1000.0 / (double)received));
	}
	if (remote_cpu >= 0) {
		stop_spinning = 1;
		pthread_join(thread, NULL);
	}
}

int main(int argc, char **argv)
{
	uint64_t pages;
	int cpu = 0, ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);

	if (argc < 3) {
		fprintf(stderr, "usage: calibrate BENCH PAGES [CPU]\n");
		return 2;
	}
	pages = strtoull(argv[2], NULL, 0);
	if (argc > 3)
		cpu = atoi(argv[3]);
	pin(cpu);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "read_fault"))
		fault("read_fault", pages, 0);
	else if (!strcmp(argv[1], "write_fault"))
		fault("write_fault", pages, 1);
	else if (!strcmp(argv[1], "thp_fault"))
		thp_fault(pages);
	else if (!strcmp(argv[1], "mthp_fault_64k"))
		mthp_fault(pages, 64, "mthp_fault_64k");
	else if (!strcmp(argv[1], "cow"))
		cow(pages);
	else if (!strcmp(argv[1], "word_write"))
		word_write(pages);
	else if (!strcmp(argv[1], "memset"))
		memset_bench(pages);
	else if (!strcmp(argv[1], "touch"))
		touch(pages);
	else if (!strcmp(argv[1], "pageout_data"))
		pageout(pages, DATA_DEFAULT, "pageout_data", "swapin_data");
	else if (!strcmp(argv[1], "pageout_same"))
		pageout(pages, DATA_SAME_FILLED, "pageout_same", "swapin_same");
	else if (!strcmp(argv[1], "unmap_swapped_data"))
		unmap_swapped(pages, DATA_DEFAULT, "unmap_swapped_data");
	else if (!strcmp(argv[1], "unmap_swapped_same"))
		unmap_swapped(pages, DATA_SAME_FILLED, "unmap_swapped_same");
	else if (!strcmp(argv[1], "unmap_resident"))
		unmap_resident(pages, 4, "unmap_resident");
	else if (!strcmp(argv[1], "unmap_resident_64k"))
		unmap_resident(pages, 64, "unmap_resident_64k");
	else if (!strcmp(argv[1], "same_scan"))
		same_scan(pages);
	else if (!strcmp(argv[1], "zram_read"))
		zram_read(pages, argc > 4 ? argv[4] : NULL);
	else if (!strcmp(argv[1], "zram_write"))
		zram_write(pages, argc > 4 ? argv[4] : NULL);
	else if (!strcmp(argv[1], "disk"))
		disk(pages, argc > 4 ? argv[4] : NULL);
	else if (!strcmp(argv[1], "pageout_same_64k"))
		pageout_mthp(pages, 64, "pageout_same_64k", "swapin_same_64k");
	else if (!strcmp(argv[1], "thp_split")) {
		thp_split_one(pages, 0, "thp_split_zero");
		thp_split_one(pages, 1, "thp_split_data");
	} else if (!strcmp(argv[1], "mprotect_local"))
		mprotect_bench("mprotect_local", pages, -1);
	else if (!strcmp(argv[1], "mprotect_remote")) {
		if (ncpu < 2) {
			skip("mprotect_remote", "one-CPU");
			return 0;
		}
		mprotect_bench("mprotect_remote", pages, (cpu + 1) % ncpu);
	} else {
		fprintf(stderr, "calibrate: unknown benchmark %s\n", argv[1]);
		return 2;
	}
	return 0;
}
