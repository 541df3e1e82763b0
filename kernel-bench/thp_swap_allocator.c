/*
 * The workload of tools/mm/thp_swap_allocator_test, written for foliosim's runner: a 60 MiB
 * MADV_HUGEPAGE area (64 KiB mTHPs) and, with -s, a 4 MiB MADV_NOHUGEPAGE area of small folios,
 * filled with 0x11 and paged out; then each iteration writes 16 MiB at random 4 KiB pages (64 KiB
 * chunks with -a) to swap them in, frees and rewrites 256 random 64 KiB blocks, with -s rewrites
 * 1 MiB of random small pages, and pages everything out again.
 *
 * The random picks are glibc's rand() with its default seed, taken in the tool's order, so they
 * are the tool's picks and the picks foliosim's thp_swap_allocator generator makes. Unlike the
 * tool, the areas come from map_aligned() (2 MiB-aligned mmap, as foliosim places them) rather
 * than posix_memalign(), and the iteration count is a parameter (-n, default 100).
 *
 * Usage: thp_swap_allocator NAME [-a] [-s] [-n ITERATIONS]   (NAME names the task record)
 * Prints one `iteration` record per iteration (the tool's swpout and fallback increments of the
 * 64 KiB size, and the iteration's time) and a `task` record at the end.
 */
#include "bench.h"

#define MIB (1024UL * 1024UL)
#define MEMSIZE_MTHP (60 * MIB)
#define MEMSIZE_SMALLFOLIO (4 * MIB)
#define ALIGNMENT_MTHP (64 * 1024UL)
#define ALIGNMENT_SMALLFOLIO 4096UL
#define TOTAL_DONTNEED_MTHP (16 * MIB)
#define TOTAL_DONTNEED_SMALLFOLIO (1 * MIB)

#define STATS "/sys/kernel/mm/transparent_hugepage/hugepages-64kB/stats/"

static uint64_t touches;

/* The tool's memset(0x11) of `len` bytes, counted in pages as foliosim counts touches. */
static void write_same(char *addr, size_t len)
{
	memset(addr, 0x11, len);
	touches += len / PAGE_BYTES;
}

static void random_write(char *mem, size_t mem_size, size_t align, size_t total)
{
	for (size_t i = 0; i < total / align; i++) {
		size_t offset = (size_t)(rand() % (int)(mem_size / align)) * align;

		write_same(mem + offset, align);
	}
}

static void random_dontneed(char *mem, size_t mem_size, size_t align, size_t total)
{
	for (size_t i = 0; i < total / align; i++) {
		size_t offset = (size_t)(rand() % (int)(mem_size / align)) * align;

		if (madvise(mem + offset, align, MADV_DONTNEED))
			die("madvise(MADV_DONTNEED)");
		write_same(mem + offset, align);
	}
}

static void pageout(char *mem, size_t size)
{
	if (madvise(mem, size, MADV_PAGEOUT))
		die("madvise(MADV_PAGEOUT)");
}

int main(int argc, char **argv)
{
	int aligned = 0, small = 0;
	uint64_t iterations = 100;
	char *mem1, *mem2 = NULL;
	const char *name = argc > 1 ? argv[1] : "";

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "-a"))
			aligned = 1;
		else if (!strcmp(argv[i], "-s"))
			small = 1;
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			iterations = parse_u64(argv[++i], "-n");
		else
			name = NULL;
	}
	if (!name || !*name || *name == '-') {
		fprintf(stderr, "usage: thp_swap_allocator NAME [-a] [-s] [-n ITERATIONS]\n");
		return 2;
	}

	mem1 = map_aligned(MEMSIZE_MTHP);
	if (madvise(mem1, MEMSIZE_MTHP, MADV_HUGEPAGE))
		die("madvise(MADV_HUGEPAGE)");
	if (small) {
		mem2 = map_aligned(MEMSIZE_SMALLFOLIO);
		if (madvise(mem2, MEMSIZE_SMALLFOLIO, MADV_NOHUGEPAGE))
			die("madvise(MADV_NOHUGEPAGE)");
	}

	/* warm-up: fill the swap device */
	write_same(mem1, MEMSIZE_MTHP);
	pageout(mem1, MEMSIZE_MTHP);
	if (small) {
		write_same(mem2, MEMSIZE_SMALLFOLIO);
		pageout(mem2, MEMSIZE_SMALLFOLIO);
	}

	for (uint64_t it = 0; it < iterations; it++) {
		uint64_t start = now_ns();
		unsigned long swpout = read_counter(STATS "swpout");
		unsigned long fallback = read_counter(STATS "swpout_fallback");

		random_write(mem1, MEMSIZE_MTHP, aligned ? ALIGNMENT_MTHP : ALIGNMENT_SMALLFOLIO,
			     TOTAL_DONTNEED_MTHP);
		random_dontneed(mem1, MEMSIZE_MTHP, ALIGNMENT_MTHP, TOTAL_DONTNEED_MTHP);
		if (small)
			random_write(mem2, MEMSIZE_SMALLFOLIO, ALIGNMENT_SMALLFOLIO,
				     TOTAL_DONTNEED_SMALLFOLIO);
		pageout(mem1, MEMSIZE_MTHP);
		if (small)
			pageout(mem2, MEMSIZE_SMALLFOLIO);

		swpout = read_counter(STATS "swpout") - swpout;
		fallback = read_counter(STATS "swpout_fallback") - fallback;
		printf("iteration time_ns=%" PRIu64 " swpout_inc=%lu fallback_inc=%lu\n",
		       now_ns() - start, swpout, fallback);
		fflush(stdout);
	}

	unmap_aligned(mem1, MEMSIZE_MTHP);
	if (mem2)
		unmap_aligned(mem2, MEMSIZE_SMALLFOLIO);
	report_task(name, touches, "");
	return 0;
}
