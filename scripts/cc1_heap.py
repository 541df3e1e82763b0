"""Peak anonymous memory of gcc's cc1 on kernel compiles: where kbuild-like's heap sizes come from.

Usage (in a configured, built kernel tree, e.g. `make defconfig && make mm/ kernel/ fs/ext4/`):
    python3 scripts/cc1_heap.py TREE OBJECTS_LIST N

Recompiles N objects drawn (seed 1) from OBJECTS_LIST (one `dir/file.o` per line) with the
command kbuild saved for each (`dir/.file.o.cmd`), output to /tmp, and samples every cc1's
RssAnon and RssFile in /proc every 5 ms. Prints each object's peaks (KiB) and the distribution.
"""
import os
import random
import re
import statistics
import subprocess
import sys
import time


def cc1_rss():
    """(RssAnon, RssFile) in KiB of each running cc1."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = open(f"/proc/{pid}/status").read()
        except OSError:
            continue
        anon = re.search(r"RssAnon:\s+(\d+)", status)
        if "Name:\tcc1\n" in status and anon:
            found.append((int(anon.group(1)), int(re.search(r"RssFile:\s+(\d+)", status).group(1))))
    return found


def main():
    tree, objects_list, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    random.seed(1)
    objects = random.sample([line.strip() for line in open(objects_list)], n)
    peaks = []
    for obj in objects:
        directory, name = os.path.split(obj)
        with open(os.path.join(tree, directory, f".{name}.cmd")) as f:
            command = f.readline().split(":=", 1)[1].strip().replace(f"-o {obj}", "-o /tmp/cc1_heap.o")
        compile_ = subprocess.Popen(["sh", "-c", command], cwd=tree)
        anon_kib = file_kib = 0
        while compile_.poll() is None:
            for anon, file in cc1_rss():
                anon_kib, file_kib = max(anon_kib, anon), max(file_kib, file)
            time.sleep(0.005)
        peaks.append(anon_kib)
        print(anon_kib, file_kib, obj, flush=True)
    peaks.sort()
    print(f"RssAnon KiB: n {len(peaks)} min {peaks[0]} p10 {peaks[len(peaks) // 10]} "
          f"median {statistics.median(peaks):.0f} p90 {peaks[len(peaks) * 9 // 10]} max {peaks[-1]} "
          f"mean {statistics.mean(peaks):.0f}")


if __name__ == "__main__":
    main()
