/*
 * vm-scalability's `usemem -n PROCESSES SIZE`, as foliosim's usemem generator plays it: PROCESSES
 * children start together, each maps SIZE bytes of private anonymous memory, writes every word of
 * it once in order, reports its throughput, unmaps it and exits. Throughput is computed as usemem
 * prints it: (SIZE/8 + SIZE) bytes * 10^6 / 1024 / usecs, usecs from the start signal to the end
 * of the write loop. The words written are foliosim's "nonzero" data (see fill_page).
 *
 * Usage: usemem NAME PROCESSES SIZE_BYTES
 * Prints a `task` record per child, named NAME-<i>; a child killed by a signal gets a record
 * with killed_by=<signal>.
 */
#include <sys/wait.h>

#include "bench.h"

static void child(const char *name, int index, uint64_t size, int start_fd)
{
	char record_name[256], extra[128], go;
	uint64_t start, end, usecs, bytes, pages = size / PAGE_BYTES;
	char *mem;

	/* the start barrier: the parent closes the pipe once every child exists */
	if (read(start_fd, &go, 1) < 0)
		die("read");
	start = now_ns();
	mem = map_aligned(size);
	for (uint64_t p = 0; p < pages; p++)
		fill_page(mem + p * PAGE_BYTES, DATA_DEFAULT, p);
	end = now_ns();
	unmap_aligned(mem, size);

	bytes = size / 8 + size;
	usecs = (end - start) / 1000;
	if (!usecs)
		usecs = 1;
	snprintf(record_name, sizeof(record_name), "%s-%d", name, index);
	snprintf(extra, sizeof(extra), "bytes=%" PRIu64 " usecs=%" PRIu64 " throughput_kbps=%" PRIu64,
		 bytes, usecs, bytes * 1000000 / 1024 / usecs);
	report_task(record_name, pages, extra);
	exit(0);
}

int main(int argc, char **argv)
{
	uint64_t processes, size;
	int pipefd[2], failed = 0;
	pid_t *pids;

	if (argc != 4) {
		fprintf(stderr, "usage: usemem NAME PROCESSES SIZE_BYTES\n");
		return 2;
	}
	processes = parse_u64(argv[2], "PROCESSES");
	size = parse_u64(argv[3], "SIZE_BYTES");
	pids = calloc(processes ? processes : 1, sizeof(*pids));
	if (!pids)
		die("calloc");
	if (pipe(pipefd))
		die("pipe");
	fflush(stdout);
	for (uint64_t i = 0; i < processes; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (pid == 0) {
			close(pipefd[1]);
			child(argv[1], (int)i, size, pipefd[0]);
		}
		pids[i] = pid;
	}
	close(pipefd[0]);
	close(pipefd[1]);

	for (uint64_t i = 0; i < processes; i++) {
		int status;
		pid_t pid = wait(&status);

		if (pid < 0)
			die("wait");
		if (WIFSIGNALED(status)) {
			uint64_t index = 0;

			while (index < processes && pids[index] != pid)
				index++;
			printf("task name=%s-%" PRIu64 " killed_by=%d\n", argv[1], index,
			       WTERMSIG(status));
			fflush(stdout);
		} else if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			failed = 1;
		}
	}
	return failed;
}
