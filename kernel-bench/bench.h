/*
 * Helpers shared by the kernel-bench programs: PMD-aligned anonymous mappings (foliosim places
 * every anonymous mapping on a 2 MiB boundary, as the kernel does for PMD-sized lengths since
 * v6.7), page contents by foliosim's content class, monotonic time, sysfs counters, and the
 * records the runner (`foliosim kernel-run`) reads from stdout.
 *
 * Records are one line each: a kind, then space-separated key=value pairs, e.g.
 *   iteration time_ns=81234567 swpout_inc=233 fallback_inc=0
 *   task name=usemem-0 user_ns=... sys_ns=... touches=131072
 * Anything else a program has to say goes to stderr.
 */
#ifndef KERNEL_BENCH_H
#define KERNEL_BENCH_H

#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define PAGE_BYTES 4096UL
#define PMD_BYTES (2UL << 20)

/* foliosim's content classes (crates/foliosim/src/mm/folio.rs, `content`). */
#define DATA_ZERO 0
#define DATA_SAME_FILLED 1
#define DATA_SPARSE_HEAD 2
#define DATA_SPARSE_TAIL 3
#define DATA_DEFAULT 128

static inline void die(const char *what)
{
	fprintf(stderr, "%s: %s\n", what, strerror(errno));
	exit(1);
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * An anonymous private mapping of `size` bytes starting on a 2 MiB boundary, with an unmapped
 * gap after it so that the next mapping cannot merge with it.
 */
static inline char *map_aligned(size_t size)
{
	size_t span = size + 2 * PMD_BYTES;
	char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *start;
	size_t head, tail;

	if (raw == MAP_FAILED)
		die("mmap");
	start = (char *)(((uintptr_t)raw + PMD_BYTES - 1) & ~(PMD_BYTES - 1));
	head = (size_t)(start - raw);
	tail = span - head - size;
	if (head)
		munmap(raw, head);
	/* keep the gap: unmap only beyond one page past the end */
	if (tail > PAGE_BYTES)
		munmap(start + size + PAGE_BYTES, tail - PAGE_BYTES);
	/* the page in the gap must not be usable memory either */
	mprotect(start + size, PAGE_BYTES, PROT_NONE);
	return start;
}

static inline void unmap_aligned(char *start, size_t size)
{
	munmap(start, size + PAGE_BYTES);
}

static inline uint64_t xorshift64(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

/*
 * Writes one page with content class `data`. Classes 4..255 are compressibility classes: foliosim
 * takes a class-c page to compress to 4096 * c / 255 bytes, so that many bytes are pseudo-random
 * (varied by `seed`) and the rest zeros, which LZO and LZ4 reduce to almost nothing.
 */
static inline void fill_page(char *page, unsigned int data, uint64_t seed)
{
	switch (data) {
	case DATA_ZERO:
		/* a write fault on a page that stays zero-filled */
		*(volatile char *)page = 0;
		return;
	case DATA_SAME_FILLED:
		memset(page, 0x11, PAGE_BYTES);
		return;
	case DATA_SPARSE_HEAD:
		page[0] = (char)0xff;
		return;
	case DATA_SPARSE_TAIL:
		page[PAGE_BYTES - 1] = (char)0xff;
		return;
	}
	size_t random_bytes = (PAGE_BYTES * data / 255) & ~7UL;
	uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 1;

	if (random_bytes < 8)
		random_bytes = 8;
	for (size_t i = 0; i < random_bytes; i += 8) {
		/* never a zero word, so the page is neither zero- nor same-filled */
		uint64_t v = xorshift64(&s) | 1;

		memcpy(page + i, &v, 8);
	}
	memset(page + random_bytes, 0, PAGE_BYTES - random_bytes);
}

/* Reads one unsigned counter from a sysfs or procfs file; 0 when it cannot. */
static inline unsigned long read_counter(const char *path)
{
	FILE *f = fopen(path, "r");
	unsigned long v = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%lu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

static inline uint64_t timeval_ns(struct timeval tv)
{
	return (uint64_t)tv.tv_sec * 1000000000ULL + (uint64_t)tv.tv_usec * 1000ULL;
}

/*
 * The `task` record of this process: its name, CPU time in user space and in the kernel,
 * and `extra` (more key=value pairs, or "").
 */
static inline void report_task(const char *name, uint64_t touches, const char *extra)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	printf("task name=%s user_ns=%" PRIu64 " sys_ns=%" PRIu64 " touches=%" PRIu64
	       " maxrss_kb=%ld%s%s\n",
	       name, timeval_ns(ru.ru_utime), timeval_ns(ru.ru_stime), touches, ru.ru_maxrss,
	       *extra ? " " : "", extra);
	fflush(stdout);
}

/* Parses a non-negative decimal argument or exits with a usage error. */
static inline uint64_t parse_u64(const char *arg, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-') {
		fprintf(stderr, "expected a non-negative integer for %s, found \"%s\"\n", what, arg);
		exit(2);
	}
	return v;
}

#endif
