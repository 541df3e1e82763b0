/*
 * Plays a foliosim task program (a scenario's `ops = [...]`, or a generator expanded to
 * operations) on the running kernel, one operation after another, the way foliosim's engine
 * executes it (crates/foliosim/src/workload/exec.rs): regions are anonymous private mappings
 * (2 MiB-aligned), shared anonymous mappings or mappings of a file the runner made (placed so that
 * address and file offset agree modulo 2 MiB, as thp_get_unmapped_area places them), touches
 * visit pages, a write fills each page with the operation's content class, a read loads one word
 * of each page. File reads and writes are pread/pwrite calls of the operation's buffer size.
 *
 * Usage: ops_player [--join PROCS_FILE] NAME OPS_FILE
 *
 * With --join, the player writes its pid to PROCS_FILE (the task's cgroup.procs) once it has
 * started: its own memory (the program, libc, its stack and heap, the operation list and one
 * scratch area for the I/O buffers and zipf tables, all faulted in first) and its start-up
 * faults stay outside the task's cgroup, which then counts the scenario's operations only, as
 * the simulator does (it has no such memory). Forked children write to the scratch area
 * copy-on-write, in the cgroup.
 *
 * OPS_FILE has one operation per line (written by `foliosim kernel-run`); "-" is "to the end"
 * for a length and "the default" for a count:
 *   file ID PATH         a file the runner made (on a tmpfs; PATH without white space), named
 *                        by ID in the operations below; only before the first operation,
 *                        opened O_RDWR at the start and inherited by forked children
 *   mmap REGION SIZE_BYTES                      MAP_PRIVATE | MAP_ANONYMOUS
 *   mmap_shared REGION SIZE_BYTES               MAP_SHARED | MAP_ANONYMOUS (shmem)
 *   mmap_file REGION ID OFFSET SIZE_BYTES shared|private r|rw|rx|rwx
 *   read ID OFFSET LEN BUFFER_BYTES             pread calls of BUFFER_BYTES over the range
 *   write ID OFFSET LEN BUFFER_BYTES DATA       pwrite calls, each buffer page filled with
 *                                               content class DATA (as touch writes fill pages)
 *   fsync ID
 *   munmap REGION
 *   madvise REGION hugepage|nohugepage|pageout|cold|dontneed OFFSET LEN
 *   touch REGION read|write sequential|random|zipf THETA_MILLI OFFSET LEN COUNT DATA WORK_NS
 *   fork NAME            the child's operations follow, up to a line "end"
 *   sleep NS
 *   barrier NAME         prints a `barrier` record, then waits for a line on stdin
 *   exit
 *   iteration_start
 *   iteration_end time|mthp ORDER
 *
 * Random touches draw pages from a generator of their own (xorshift, seeded by the task's name;
 * a forked child mixes in its own name and its place among its parent's children), and zipf touches rank pages by an exact cumulative table: the distributions are
 * foliosim's, the sequences are not.
 */
#include <fcntl.h>
#include <math.h>
#include <sys/wait.h>

#include "bench.h"

#define MAX_REGIONS 64
#define MAX_FILES 256
#define MAX_TOKENS 12
#define NR_ORDERS 10
#define THP_DIR "/sys/kernel/mm/transparent_hugepage"

enum op_kind {
	OP_MMAP, OP_MMAP_SHARED, OP_MMAP_FILE, OP_READ, OP_WRITE, OP_FSYNC, OP_MUNMAP, OP_MADVISE, OP_TOUCH, OP_FORK, OP_SLEEP, OP_BARRIER, OP_EXIT,
	OP_ITERATION_START, OP_ITERATION_END,
};

struct op {
	enum op_kind kind;
	char name[64];		/* region, fork child or barrier */
	int advice;
	int write, pattern;	/* pattern: 0 sequential, 1 random, 2 zipf */
	uint64_t size, offset, len, count, theta_milli, data, work_ns, ns;
	int has_len, has_count;
	int report_order;	/* iteration_end: -1 time only, else the mTHP order */
	int file;		/* mmap_file, read, write, fsync: the file's ID */
	int shared, prot;	/* mmap_file */
	uint64_t buffer;	/* read, write: bytes per call */
	struct op *child;	/* fork: the child's program */
	size_t nr_child;
};

struct region {
	char name[64];
	char *start;
	uint64_t size;
};

static struct region regions[MAX_REGIONS];
static char *file_paths[MAX_FILES];
static int file_fds[MAX_FILES];
static uint64_t touches;
static uint64_t iteration_start_ns;
static unsigned long iteration_swpout[NR_ORDERS], iteration_fallback[NR_ORDERS];
static volatile uint64_t read_sink;
/* the I/O buffers and zipf tables of every operation, one after another (see scratch_bytes) */
static char *scratch;
static size_t scratch_size;
static char stdout_buffer[BUFSIZ];

static void fail(const char *file, int line, const char *message)
{
	fprintf(stderr, "%s:%d: %s\n", file, line, message);
	exit(2);
}

static uint64_t number(const char *token, const char *file, int line)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(token, &end, 10);
	if (errno || end == token || *end || token[0] == '-')
		fail(file, line, "expected a non-negative integer");
	return v;
}

/* A file ID declared by an earlier `file` line. */
static int file_id(const char *token, const char *file, int line)
{
	uint64_t id = number(token, file, line);

	if (id >= MAX_FILES || !file_paths[id])
		fail(file, line, "file ID not declared by a \"file\" line");
	return (int)id;
}

/* Parses operations up to "end" or end of file into a new array. */
static struct op *parse(FILE *f, const char *file, int *line, size_t *nr, int nested)
{
	struct op *ops = NULL;
	size_t cap = 0;
	char buf[512];

	*nr = 0;
	while (fgets(buf, sizeof(buf), f)) {
		char *tok[MAX_TOKENS], *save = NULL, *p;
		int n = 0;
		struct op op = { .report_order = -1 };

		(*line)++;
		for (p = strtok_r(buf, " \t\n", &save); p && n < MAX_TOKENS;
		     p = strtok_r(NULL, " \t\n", &save))
			tok[n++] = p;
		if (!n)
			continue;
		if (!strcmp(tok[0], "end")) {
			if (!nested)
				fail(file, *line, "\"end\" outside a fork");
			return ops;
		}
		if (n > 1) {
			if (strlen(tok[1]) >= sizeof(op.name))
				fail(file, *line, "name too long");
			strcpy(op.name, tok[1]);
		}
		if (!strcmp(tok[0], "file") && n == 3) {
			uint64_t id = number(tok[1], file, *line);

			if (nested || *nr)
				fail(file, *line, "\"file\" lines come before the first operation");
			if (id >= MAX_FILES || file_paths[id])
				fail(file, *line, "file ID out of range or declared twice");
			file_paths[id] = strdup(tok[2]);
			if (!file_paths[id])
				die("strdup");
			continue;
		}
		if (!strcmp(tok[0], "mmap") && n == 3) {
			op.kind = OP_MMAP;
			op.size = number(tok[2], file, *line);
		} else if (!strcmp(tok[0], "mmap_shared") && n == 3) {
			op.kind = OP_MMAP_SHARED;
			op.size = number(tok[2], file, *line);
		} else if (!strcmp(tok[0], "mmap_file") && n == 7) {
			op.kind = OP_MMAP_FILE;
			op.file = file_id(tok[2], file, *line);
			op.offset = number(tok[3], file, *line);
			op.size = number(tok[4], file, *line);
			if (op.offset % PAGE_BYTES || !op.size)
				fail(file, *line, "expected a page-aligned offset and a size");
			if (!strcmp(tok[5], "shared"))
				op.shared = 1;
			else if (strcmp(tok[5], "private"))
				fail(file, *line, "expected shared or private");
			if (!strcmp(tok[6], "r"))
				op.prot = PROT_READ;
			else if (!strcmp(tok[6], "rw"))
				op.prot = PROT_READ | PROT_WRITE;
			else if (!strcmp(tok[6], "rx"))
				op.prot = PROT_READ | PROT_EXEC;
			else if (!strcmp(tok[6], "rwx"))
				op.prot = PROT_READ | PROT_WRITE | PROT_EXEC;
			else
				fail(file, *line, "expected r, rw, rx or rwx");
		} else if ((!strcmp(tok[0], "read") && n == 5) || (!strcmp(tok[0], "write") && n == 6)) {
			op.kind = tok[0][0] == 'r' ? OP_READ : OP_WRITE;
			op.file = file_id(tok[1], file, *line);
			op.offset = number(tok[2], file, *line);
			op.len = number(tok[3], file, *line);
			op.buffer = number(tok[4], file, *line);
			if (!op.buffer)
				fail(file, *line, "expected a buffer of at least one byte");
			if (op.kind == OP_WRITE) {
				op.data = number(tok[5], file, *line);
				if (op.data > 255)
					fail(file, *line, "expected a content class 0..255");
			}
		} else if (!strcmp(tok[0], "fsync") && n == 2) {
			op.kind = OP_FSYNC;
			op.file = file_id(tok[1], file, *line);
		} else if (!strcmp(tok[0], "munmap") && n == 2) {
			op.kind = OP_MUNMAP;
		} else if (!strcmp(tok[0], "madvise") && n == 5) {
			op.kind = OP_MADVISE;
			if (!strcmp(tok[2], "hugepage"))
				op.advice = MADV_HUGEPAGE;
			else if (!strcmp(tok[2], "nohugepage"))
				op.advice = MADV_NOHUGEPAGE;
			else if (!strcmp(tok[2], "pageout"))
				op.advice = MADV_PAGEOUT;
			else if (!strcmp(tok[2], "cold"))
				op.advice = MADV_COLD;
			else if (!strcmp(tok[2], "dontneed"))
				op.advice = MADV_DONTNEED;
			else
				fail(file, *line, "unknown advice");
			op.offset = number(tok[3], file, *line);
			op.has_len = strcmp(tok[4], "-") != 0;
			op.len = op.has_len ? number(tok[4], file, *line) : 0;
		} else if (!strcmp(tok[0], "touch") && n == 10) {
			op.kind = OP_TOUCH;
			if (strcmp(tok[2], "read") && strcmp(tok[2], "write"))
				fail(file, *line, "expected read or write");
			op.write = !strcmp(tok[2], "write");
			if (!strcmp(tok[3], "sequential"))
				op.pattern = 0;
			else if (!strcmp(tok[3], "random"))
				op.pattern = 1;
			else if (!strcmp(tok[3], "zipf"))
				op.pattern = 2;
			else
				fail(file, *line, "unknown pattern");
			op.theta_milli = number(tok[4], file, *line);
			op.offset = number(tok[5], file, *line);
			op.has_len = strcmp(tok[6], "-") != 0;
			op.len = op.has_len ? number(tok[6], file, *line) : 0;
			op.has_count = strcmp(tok[7], "-") != 0;
			op.count = op.has_count ? number(tok[7], file, *line) : 0;
			op.data = number(tok[8], file, *line);
			op.work_ns = number(tok[9], file, *line);
		} else if (!strcmp(tok[0], "fork") && n == 2) {
			op.kind = OP_FORK;
			op.child = parse(f, file, line, &op.nr_child, 1);
		} else if (!strcmp(tok[0], "sleep") && n == 2) {
			op.kind = OP_SLEEP;
			op.ns = number(tok[1], file, *line);
		} else if (!strcmp(tok[0], "barrier") && n == 2) {
			op.kind = OP_BARRIER;
		} else if (!strcmp(tok[0], "exit") && n == 1) {
			op.kind = OP_EXIT;
		} else if (!strcmp(tok[0], "iteration_start") && n == 1) {
			op.kind = OP_ITERATION_START;
		} else if (!strcmp(tok[0], "iteration_end") && n >= 2) {
			op.kind = OP_ITERATION_END;
			if (!strcmp(tok[1], "mthp") && n == 3)
				op.report_order = (int)number(tok[2], file, *line);
			else if (strcmp(tok[1], "time") || n != 2)
				fail(file, *line, "expected iteration_end time or iteration_end mthp ORDER");
			if (op.report_order >= NR_ORDERS)
				fail(file, *line, "order out of range");
		} else {
			fail(file, *line, "unknown operation or wrong number of fields");
		}
		if (*nr == cap) {
			cap = cap ? 2 * cap : 16;
			ops = realloc(ops, cap * sizeof(*ops));
			if (!ops)
				die("realloc");
		}
		ops[(*nr)++] = op;
	}
	if (nested)
		fail(file, *line, "fork without \"end\"");
	return ops;
}

static struct region *region(const char *name)
{
	for (int i = 0; i < MAX_REGIONS; i++)
		if (regions[i].start && !strcmp(regions[i].name, name))
			return &regions[i];
	fprintf(stderr, "region %s is not mapped\n", name);
	exit(1);
}

/* Pages [from, to) of a region for an offset and optional length, as foliosim's page_range. */
static void page_range(const struct region *r, const struct op *op, uint64_t *from, uint64_t *to)
{
	uint64_t nr = r->size / PAGE_BYTES;

	*from = op->offset / PAGE_BYTES;
	if (*from > nr)
		*from = nr;
	*to = nr;
	if (op->has_len) {
		uint64_t end = *from + (op->len + PAGE_BYTES - 1) / PAGE_BYTES;

		*to = end < nr ? end : nr;
	}
}

static uint64_t rng_state;

/* Mixes a task name into the generator's state (FNV-1a steps), never leaving it zero. */
static void seed_with_name(const char *name)
{
	for (const char *c = name; *c; c++)
		rng_state = (rng_state ^ (unsigned char)*c) * 0x100000001b3ULL;
	if (!rng_state)
		rng_state = 1;
}

static uint64_t below(uint64_t n)
{
	return xorshift64(&rng_state) % n;
}

static void spin(uint64_t ns)
{
	uint64_t until = now_ns() + ns;

	while (now_ns() < until)
		;
}

static void touch(const struct op *op)
{
	struct region *r = region(op->name);
	uint64_t from, to, nr, count;
	double *cdf = NULL;

	page_range(r, op, &from, &to);
	nr = to - from;
	count = op->has_count ? op->count : nr;
	if (!nr)
		return;
	if (op->pattern == 2) {
		/* cumulative weights of ranks 0..nr-1, weight 1/(rank+1)^theta */
		double theta = op->theta_milli / 1000.0, sum = 0;

		cdf = (double *)scratch;
		for (uint64_t k = 0; k < nr; k++) {
			sum += pow((double)(k + 1), -theta);
			cdf[k] = sum;
		}
	}
	for (uint64_t i = 0; i < count; i++) {
		uint64_t page;
		char *addr;

		if (op->pattern == 0) {
			page = i % nr;
		} else if (op->pattern == 1) {
			page = below(nr);
		} else {
			double u = (double)(xorshift64(&rng_state) >> 11) / 9007199254740992.0 *
				   cdf[nr - 1];
			uint64_t lo = 0, hi = nr - 1;

			while (lo < hi) {
				uint64_t mid = (lo + hi) / 2;

				if (cdf[mid] <= u)
					lo = mid + 1;
				else
					hi = mid;
			}
			page = lo;
		}
		addr = r->start + (from + page) * PAGE_BYTES;
		if (op->write)
			fill_page(addr, (unsigned int)op->data, from + page + i);
		else
			read_sink += *(volatile uint64_t *)addr;
		touches++;
		if (op->work_ns)
			spin(op->work_ns);
	}
}

/*
 * A mapping of `size` bytes (a multiple of the page size) whose address agrees with `offset`
 * modulo 2 MiB, as the kernel places shmem and file mappings that may hold PMD folios
 * (shmem_get_unmapped_area, thp_get_unmapped_area), with the same unmapped guard page after it as
 * map_aligned leaves: a PROT_NONE reservation first, the mapping placed over it with MAP_FIXED.
 */
static char *map_placed(size_t size, int prot, int flags, int fd, uint64_t offset)
{
	size_t span = size + 2 * PMD_BYTES;
	char *raw = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *start, *end;

	if (raw == MAP_FAILED)
		die("mmap");
	start = (char *)((((uintptr_t)raw + PMD_BYTES - 1) & ~(PMD_BYTES - 1)) +
			 offset % PMD_BYTES);
	if (mmap(start, size, prot, flags | MAP_FIXED, fd, (off_t)offset) == MAP_FAILED)
		die("mmap");
	if (start > raw)
		munmap(raw, (size_t)(start - raw));
	/* the reservation's page after the end stays, PROT_NONE; the rest goes */
	end = start + size + PAGE_BYTES;
	if (raw + span > end)
		munmap(end, (size_t)(raw + span - end));
	return start;
}

static int file_fd(int id)
{
	return file_fds[id];
}

/* pread calls of the operation's buffer size over [offset, offset + len), until end of file. */
static void file_read(const struct op *op)
{
	char *buf = scratch;
	uint64_t pos = op->offset, end = op->offset + op->len;

	while (pos < end) {
		size_t n = end - pos < op->buffer ? (size_t)(end - pos) : (size_t)op->buffer;
		ssize_t got = pread(file_fd(op->file), buf, n, (off_t)pos);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			die(file_paths[op->file]);
		if (got == 0)
			break;
		read_sink += (unsigned char)buf[0];
		pos += (uint64_t)got;
	}
}

/*
 * pwrite calls of the operation's buffer size over [offset, offset + len); each page of the
 * buffer holds content class `data`, seeded by the file page it starts at, as touch writes fill
 * the pages of a region.
 */
static void file_write(const struct op *op)
{
	char *buf = scratch;
	uint64_t pos = op->offset, end = op->offset + op->len;

	while (pos < end) {
		size_t n = end - pos < op->buffer ? (size_t)(end - pos) : (size_t)op->buffer;
		size_t done = 0;

		/* classes that set a byte or two leave the rest of the page zero */
		memset(buf, 0, (n + PAGE_BYTES - 1) & ~(PAGE_BYTES - 1));
		if (op->data != DATA_ZERO)
			for (size_t off = 0; off < n; off += PAGE_BYTES)
				fill_page(buf + off, (unsigned int)op->data,
					  (pos + off) / PAGE_BYTES);
		while (done < n) {
			ssize_t put = pwrite(file_fd(op->file), buf + done, n - done,
					     (off_t)(pos + done));

			if (put < 0 && errno == EINTR)
				continue;
			if (put <= 0)
				die(file_paths[op->file]);
			done += (size_t)put;
		}
		pos += n;
	}
}

static void read_mthp_counters(unsigned long *swpout, unsigned long *fallback)
{
	char path[256];

	for (int order = 0; order < NR_ORDERS; order++) {
		snprintf(path, sizeof(path), THP_DIR "/hugepages-%lukB/stats/swpout",
			 4UL << order);
		swpout[order] = read_counter(path);
		snprintf(path, sizeof(path), THP_DIR "/hugepages-%lukB/stats/swpout_fallback",
			 4UL << order);
		fallback[order] = read_counter(path);
	}
}

static void run(const char *name, const struct op *ops, size_t nr);

static pid_t children[4096];
static int nr_children;

static void play(const char *name, const struct op *op)
{
	switch (op->kind) {
	case OP_MMAP:
	case OP_MMAP_SHARED:
	case OP_MMAP_FILE: {
		int free_slot = -1;
		size_t size;

		for (int i = 0; i < MAX_REGIONS; i++) {
			if (regions[i].start && !strcmp(regions[i].name, op->name)) {
				/* mapping a name again replaces it, as in foliosim */
				unmap_aligned(regions[i].start, regions[i].size);
				regions[i].start = NULL;
			}
			if (!regions[i].start && free_slot < 0)
				free_slot = i;
		}
		if (free_slot < 0) {
			fprintf(stderr, "more than %d regions\n", MAX_REGIONS);
			exit(1);
		}
		strcpy(regions[free_slot].name, op->name);
		size = (op->size + PAGE_BYTES - 1) & ~(PAGE_BYTES - 1);
		regions[free_slot].size = size;
		if (op->kind == OP_MMAP)
			regions[free_slot].start = map_aligned(size);
		else if (op->kind == OP_MMAP_SHARED)
			regions[free_slot].start = map_placed(size, PROT_READ | PROT_WRITE,
							      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		else
			regions[free_slot].start =
				map_placed(size, op->prot, op->shared ? MAP_SHARED : MAP_PRIVATE,
					   file_fd(op->file), op->offset);
		break;
	}
	case OP_READ:
		file_read(op);
		break;
	case OP_WRITE:
		file_write(op);
		break;
	case OP_FSYNC:
		if (fsync(file_fd(op->file)))
			die(file_paths[op->file]);
		break;
	case OP_MUNMAP: {
		struct region *r = region(op->name);

		unmap_aligned(r->start, r->size);
		r->start = NULL;
		break;
	}
	case OP_MADVISE: {
		struct region *r = region(op->name);
		uint64_t from, to;

		page_range(r, op, &from, &to);
		if (to > from &&
		    madvise(r->start + from * PAGE_BYTES, (to - from) * PAGE_BYTES, op->advice))
			die("madvise");
		break;
	}
	case OP_TOUCH:
		touch(op);
		break;
	case OP_FORK: {
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			/* each child its own stream (its name and its place among its parent's
			 * children): children forked one after another from the same state would
			 * otherwise draw the same pages */
			rng_state ^= 0x5851f42d4c957f2dULL * (uint64_t)(nr_children + 1);
			seed_with_name(op->name);
			nr_children = 0;
			touches = 0;
			run(op->name, op->child, op->nr_child);
			exit(0);
		}
		if (nr_children == (int)(sizeof(children) / sizeof(children[0]))) {
			fprintf(stderr, "too many forks\n");
			exit(1);
		}
		children[nr_children++] = pid;
		break;
	}
	case OP_SLEEP: {
		struct timespec ts = { .tv_sec = (time_t)(op->ns / 1000000000ULL),
				       .tv_nsec = (long)(op->ns % 1000000000ULL) };

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		break;
	}
	case OP_BARRIER: {
		char line[64];

		printf("barrier name=%s task=%s\n", op->name, name);
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin)) {
			fprintf(stderr, "barrier %s: no release on stdin\n", op->name);
			exit(1);
		}
		break;
	}
	case OP_EXIT:
		break;
	case OP_ITERATION_START:
		read_mthp_counters(iteration_swpout, iteration_fallback);
		iteration_start_ns = now_ns();
		break;
	case OP_ITERATION_END: {
		uint64_t time_ns = now_ns() - iteration_start_ns;

		if (op->report_order < 0) {
			printf("iteration time_ns=%" PRIu64 "\n", time_ns);
		} else {
			unsigned long swpout[NR_ORDERS], fallback[NR_ORDERS];
			int o = op->report_order;

			read_mthp_counters(swpout, fallback);
			printf("iteration time_ns=%" PRIu64 " swpout_inc=%lu fallback_inc=%lu\n",
			       time_ns, swpout[o] - iteration_swpout[o],
			       fallback[o] - iteration_fallback[o]);
		}
		fflush(stdout);
		break;
	}
	}
}

/* Runs a program, reports the task and waits for the children it forked. */
static void run(const char *name, const struct op *ops, size_t nr)
{
	for (size_t i = 0; i < nr && ops[i].kind != OP_EXIT; i++)
		play(name, &ops[i]);
	report_task(name, touches, "");
	for (int i = 0; i < nr_children; i++) {
		int status;

		if (waitpid(children[i], &status, 0) < 0)
			die("waitpid");
		if (WIFSIGNALED(status)) {
			printf("killed pid=%d killed_by=%d\n", (int)children[i], WTERMSIG(status));
			fflush(stdout);
		}
	}
}

/*
 * The scratch area the program needs: its largest read/write buffer and, if it has zipf
 * touches, the cumulative table of its largest mapping (8 bytes a page; a touch covers at most a
 * region). Operations run one at a time in a process, so they share it.
 */
static size_t scratch_bytes(const struct op *ops, size_t nr, size_t *largest_region, int *zipf)
{
	size_t need = 0;

	for (size_t i = 0; i < nr; i++) {
		const struct op *op = &ops[i];

		if (op->kind == OP_READ || op->kind == OP_WRITE)
			need = op->buffer > need ? op->buffer : need;
		if ((op->kind == OP_MMAP || op->kind == OP_MMAP_SHARED || op->kind == OP_MMAP_FILE) &&
		    op->size > *largest_region)
			*largest_region = op->size;
		if (op->kind == OP_TOUCH && op->pattern == 2)
			*zipf = 1;
		if (op->kind == OP_FORK) {
			size_t child = scratch_bytes(op->child, op->nr_child, largest_region, zipf);

			need = child > need ? child : need;
		}
	}
	return need;
}

/*
 * Every page of the player's own mappings present, its code included, so that in the cgroup it
 * takes no fault but its operations': each page of every readable mapping is read, and written
 * back unchanged where the mapping is private and writable (a copy-on-write page then has its
 * copy). Not mlock or MADV_POPULATE_*: they mark the pages accessed, and the machine-wide
 * pgactivate would count the player's libc.
 */
static void fault_in_own_pages(void)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[512];

	if (!maps)
		die("/proc/self/maps");
	while (fgets(line, sizeof(line), maps)) {
		unsigned long start, end;
		char perms[5];

		if (sscanf(line, "%lx-%lx %4s", &start, &end, perms) != 3 || perms[0] != 'r' ||
		    strstr(line, "[vvar") || strstr(line, "[vsyscall]"))
			continue;
		for (unsigned long a = start; a < end; a += PAGE_BYTES) {
			volatile char *p = (volatile char *)a;
			char c = *p;

			if (perms[1] == 'w' && perms[3] == 'p')
				*p = c;
		}
	}
	fclose(maps);
}

static void join_cgroup(const char *procs_file)
{
	FILE *f = fopen(procs_file, "w");

	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f))
		die(procs_file);
}

int main(int argc, char **argv)
{
	const char *procs_file = NULL;
	size_t largest_region = 0;
	struct op *ops;
	size_t nr;
	int line = 0, zipf = 0;
	FILE *f;

	if (argc == 5 && !strcmp(argv[1], "--join")) {
		procs_file = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: ops_player [--join PROCS_FILE] NAME OPS_FILE\n");
		return 2;
	}
	f = fopen(argv[2], "r");
	if (!f)
		die(argv[2]);
	ops = parse(f, argv[2], &line, &nr, 0);
	fclose(f);
	scratch_size = scratch_bytes(ops, nr, &largest_region, &zipf);
	if (zipf && largest_region / PAGE_BYTES * sizeof(double) > scratch_size)
		scratch_size = largest_region / PAGE_BYTES * sizeof(double);
	scratch_size = (scratch_size + PAGE_BYTES - 1) & ~(size_t)(PAGE_BYTES - 1);
	if (scratch_size) {
		/* touched now, before the player joins its cgroup */
		scratch = mmap(NULL, scratch_size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (scratch == MAP_FAILED)
			die("mmap");
	}
	for (int id = 0; id < MAX_FILES; id++) {
		if (!file_paths[id])
			continue;
		file_fds[id] = open(file_paths[id], O_RDWR);
		if (file_fds[id] < 0)
			die(file_paths[id]);
	}
	if (procs_file) {
		/* stdio would allocate stdout's buffer at the first record, in the cgroup */
		setvbuf(stdout, stdout_buffer, _IOFBF, sizeof(stdout_buffer));
		fault_in_own_pages();
		join_cgroup(procs_file);
	}
	rng_state = 0x9e3779b97f4a7c15ULL;
	seed_with_name(argv[1]);
	run(argv[1], ops, nr);
	return 0;
}
