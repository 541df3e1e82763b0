#!/usr/bin/python3
"""The recorder's cost on the corpus: `foliosim trace record` against the same command run natively.

    /usr/bin/python3 scenarios/real/record_bench.py [--runs N] [--foliosim PATH] [SCENARIO.toml ...]

For every task of the scenarios (default: scenarios/real/*.toml) that names a `command` and a
`trace`, runs the command natively and under `foliosim trace record --native-runs 0` in turn
(native, recorded, native, recorded, ...), N times each (default 3) after one warm-up of each,
with the task's `env` and `cwd` as record.py uses them, and prints one line per program: the
medians of the native and the recorded wall times, the medians of the pairwise ratios of wall
and CPU time (a recording's CPU time is valgrind's and the recorder's, which run side by side on
two CPUs), and the trace's records and bytes per record. The trace goes to a temporary folder,
not to the scenario's path. Make the inputs first (make-inputs.py) and run it on an idle
machine: the ratios are what the README's performance table quotes.
"""

import argparse
import glob
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from record import HERE, REPO, tasks_to_record

SUMMARY = re.compile(r": (\d+) records \(.*\), (\d+) bytes, ([0-9.]+) bytes per record")


def run(argv, env, cwd):
    """(wall seconds, CPU seconds of the process and its descendants, stderr, exit status)."""
    start = time.monotonic()
    child = subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    stderr = child.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return time.monotonic() - start, usage.ru_utime + usage.ru_stime, stderr, child.returncode


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--foliosim", default=os.path.join(REPO, "target/release/foliosim"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("scenarios", nargs="*")
    args = parser.parse_args()
    scenarios = args.scenarios or sorted(glob.glob(os.path.join(HERE, "*.toml")))
    print(f"{'program':<12} {'native_s':>9} {'record_s':>9} {'wall_x':>7} {'cpu_x':>7} "
          f"{'records':>12} {'B/rec':>6}", flush=True)
    failed = False
    with tempfile.TemporaryDirectory() as folder:
        for path in scenarios:
            for name, argv, env, cwd, _ in tasks_to_record(path):
                trace = os.path.join(folder, name + ".trace")
                record = [args.foliosim, "trace", "record", "--native-runs", "0", "-o", trace,
                          "--", *argv]
                pairs = []
                for i in range(args.runs + 1):
                    native = run(argv, env, cwd)
                    recorded = run(record, env, cwd)
                    if native[3] != 0 or recorded[3] != 0:
                        print(f"{path}: task {name}: exit status {native[3]} native, "
                              f"{recorded[3]} recorded: {recorded[2].strip()}", file=sys.stderr)
                        failed = True
                        break
                    if i > 0:  # the first pair warms the caches
                        pairs.append((native, recorded))
                else:
                    summary = SUMMARY.search(pairs[-1][1][2])
                    records, per = (summary.group(1), summary.group(3)) if summary else ("?", "?")
                    median = statistics.median
                    print(f"{name:<12} {median(n[0] for n, _ in pairs):>9.2f} "
                          f"{median(r[0] for _, r in pairs):>9.2f} "
                          f"{median(r[0] / n[0] for n, r in pairs):>7.1f} "
                          f"{median(r[1] / n[1] for n, r in pairs):>7.1f} "
                          f"{records:>12} {per:>6}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
