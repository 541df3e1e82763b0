/*
 * `foliosim calibrate`'s microbenchmarks: one measurement per invocation, printed as
 *   result name=NAME ps=N
 * (picoseconds per unit: per page, per word, per access or per call), or
 *   skip name=NAME reason=...
 * when this machine cannot take it. The runner repeats each one, takes medians and differences
 * (docs/calibration.md says which measurement gives which cost). The process pins itself to one
 * CPU so that a measurement is not split across cores.
 *
 * Usage: calibrate BENCH PAGES [CPU]
 *   read_fault   read one byte of each fresh anonymous page (THP off): maps the shared zero page
 *   write_fault  write one byte of each fresh anonymous page (THP off): allocate, zero, map
 *   thp_fault    write one byte of each 2 MiB of a MADV_HUGEPAGE mapping; ps per 4 KiB
 *   cow          write one byte of each page shared with a forked child: copy-on-write
 *   word_write   usemem's loop (fill_page, class "data") over resident memory; ps per 8 B word
 *   touch        a random pointer chase, one access per resident page of a THP mapping
 *   pageout_data / pageout_same   MADV_PAGEOUT of pages of class "data" / same-filled
 *                (needs a swap device), ps per page; then reading each page back prints
 *                swapin_data / swapin_same
 *   mprotect_local / mprotect_remote   mprotect of one resident page to read-only and back,
 *                alone, or while a thread of the same process runs on another CPU (whose TLB
 *                must then be flushed by IPI); ps per mprotect call
 */
#include "bench.h"

#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

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
	uint64_t start = now_ns();

	for (uint64_t p = 0; p < pages; p++) {
		if (write)
			mem[p * PAGE_BYTES] = 1;
		else
			sink += ((volatile char *)mem)[p * PAGE_BYTES];
	}
	result(name, now_ns() - start, pages);
	(void)sink;
}

static void thp_fault(uint64_t pages)
{
	uint64_t size = (pages * PAGE_BYTES + PMD_BYTES - 1) & ~(PMD_BYTES - 1), start, elapsed;
	char *mem;

	prewarm(size, 1);
	mem = map_aligned(size);
	if (madvise(mem, size, MADV_HUGEPAGE)) {
		skip("thp_fault", "madvise(MADV_HUGEPAGE)-failed");
		return;
	}
	start = now_ns();
	for (uint64_t off = 0; off < size; off += PMD_BYTES)
		mem[off] = 1;
	elapsed = now_ns() - start;
	if (rollup_kb("AnonHugePages") * 1024 < size) {
		skip("thp_fault", "not-every-fault-got-a-PMD-THP");
		return;
	}
	result("thp_fault", elapsed, size / PAGE_BYTES);
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
	start = now_ns();
	for (uint64_t p = 0; p < pages; p++)
		mem[p * PAGE_BYTES] = 2;
	elapsed = now_ns() - start;
	close(fds[1]);
	waitpid(child, NULL, 0);
	result("cow", elapsed, pages);
}

static void word_write(uint64_t pages)
{
	char *mem = map_small(pages);
	uint64_t start;

	populate(mem, pages);
	start = now_ns();
	for (uint64_t p = 0; p < pages; p++)
		fill_page(mem + p * PAGE_BYTES, DATA_DEFAULT, p);
	result("word_write", now_ns() - start, pages * (PAGE_BYTES / 8));
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
	/* one cycle through every page, each link at a different line of its page */
	for (uint64_t i = 0; i < n; i++) {
		uint64_t from = order[i], to = order[(i + 1) % n];

		*(uint64_t *)(mem + from * PAGE_BYTES + (from % 64) * 64) =
			to * PAGE_BYTES + (to % 64) * 64;
	}
	at = order[0] * PAGE_BYTES + (order[0] % 64) * 64;
	start = now_ns();
	for (uint64_t i = 0; i < accesses; i++)
		at = *(volatile uint64_t *)(mem + at);
	result("touch", now_ns() - start, accesses);
	free(order);
}

static void pageout(uint64_t pages, unsigned int data, const char *out_name, const char *in_name)
{
	char *mem = map_small(pages);
	volatile char sink = 0;
	uint64_t start, elapsed, swapped;

	for (uint64_t p = 0; p < pages; p++)
		fill_page(mem + p * PAGE_BYTES, data, p);
	start = now_ns();
	if (madvise(mem, pages * PAGE_BYTES, MADV_PAGEOUT)) {
		skip(out_name, "madvise(MADV_PAGEOUT)-failed");
		return;
	}
	elapsed = now_ns() - start;
	swapped = rollup_kb("Swap") / 4;
	if (swapped < pages * 95 / 100) {
		printf("skip name=%s reason=only-%" PRIu64 "-of-%" PRIu64 "-pages-swapped-out\n",
		       out_name, swapped, pages);
		return;
	}
	result(out_name, elapsed, swapped);
	start = now_ns();
	for (uint64_t p = 0; p < pages; p++)
		sink += ((volatile char *)mem)[p * PAGE_BYTES];
	result(in_name, now_ns() - start, pages);
	(void)sink;
}

static volatile int stop_spinning;
static char *shared_page;

static void *spin(void *arg)
{
	pin(*(int *)arg);
	/* stay on the other CPU in this mm: its TLB may hold the page's translation */
	while (!stop_spinning)
		(void)*(volatile char *)shared_page;
	return NULL;
}

static void mprotect_bench(const char *name, uint64_t calls, int remote_cpu)
{
	char *mem = map_small(1);
	pthread_t thread;
	uint64_t start;

	mem[0] = 1;
	shared_page = mem;
	if (remote_cpu >= 0) {
		if (pthread_create(&thread, NULL, spin, &remote_cpu))
			die("pthread_create");
		usleep(20000);
	}
	start = now_ns();
	for (uint64_t i = 0; i < calls; i++) {
		if (mprotect(mem, PAGE_BYTES, i % 2 ? PROT_READ | PROT_WRITE : PROT_READ))
			die("mprotect");
		(void)*(volatile char *)mem;
	}
	result(name, now_ns() - start, calls);
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
	else if (!strcmp(argv[1], "cow"))
		cow(pages);
	else if (!strcmp(argv[1], "word_write"))
		word_write(pages);
	else if (!strcmp(argv[1], "touch"))
		touch(pages);
	else if (!strcmp(argv[1], "pageout_data"))
		pageout(pages, DATA_DEFAULT, "pageout_data", "swapin_data");
	else if (!strcmp(argv[1], "pageout_same"))
		pageout(pages, DATA_SAME_FILLED, "pageout_same", "swapin_same");
	else if (!strcmp(argv[1], "mprotect_local"))
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
