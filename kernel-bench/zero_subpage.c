/*
 * The test of the thp-zero-subpage-split seed (Yu Zhao, 2021), written for foliosim's runner:
 * SIZE bytes of MADV_HUGEPAGE memory in which the first NUM_DIRTY 4 KiB pages of every 2 MiB get
 * one 0xff byte at OFFSET, then MADV_PAGEOUT of everything and munmap. The whole program is one
 * iteration, timed from before the mmap to after the munmap, as foliosim's zero_subpage
 * generator times it. SIZE is in bytes here (the seed's test takes MiB).
 *
 * Usage: zero_subpage NAME SIZE_BYTES OFFSET NUM_DIRTY
 */
#include "bench.h"

int main(int argc, char **argv)
{
	uint64_t size, offset, num_dirty, touches = 0, start;
	char *mem;

	if (argc != 5) {
		fprintf(stderr, "usage: zero_subpage NAME SIZE_BYTES OFFSET NUM_DIRTY\n");
		return 2;
	}
	size = parse_u64(argv[2], "SIZE_BYTES");
	offset = parse_u64(argv[3], "OFFSET");
	num_dirty = parse_u64(argv[4], "NUM_DIRTY");
	if (offset >= PAGE_BYTES || num_dirty > PMD_BYTES / PAGE_BYTES || size % PAGE_BYTES) {
		fprintf(stderr, "expected OFFSET < 4096, NUM_DIRTY <= 512, SIZE a multiple of 4096\n");
		return 2;
	}

	start = now_ns();
	mem = map_aligned(size);
	if (madvise(mem, size, MADV_HUGEPAGE))
		die("madvise(MADV_HUGEPAGE)");
	for (uint64_t chunk = 0; chunk < size; chunk += PMD_BYTES) {
		for (uint64_t page = 0; page < num_dirty; page++) {
			uint64_t at = chunk + page * PAGE_BYTES;

			if (at >= size)
				break;
			mem[at + offset] = (char)0xff;
			touches++;
		}
	}
	if (madvise(mem, size, MADV_PAGEOUT))
		die("madvise(MADV_PAGEOUT)");
	unmap_aligned(mem, size);
	printf("iteration time_ns=%" PRIu64 "\n", now_ns() - start);
	report_task(argv[1], touches, "");
	return 0;
}
