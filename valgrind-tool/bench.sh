#!/usr/bin/env bash
# The recorder's cost: `foliosim trace record` against the same program run natively, with
# farm-bench (runs in turn, A B A B ..., the ratio taken pair by pair), and the trace's bytes per
# record on disk. Inputs are made with a fixed seed.
#
#   valgrind-tool/bench.sh [RUNS]        (default 3 runs each; from the repository root)
#
# Prints one line per program: native and recorded wall seconds (medians), the recorded/native
# ratios of wall and cpu time (medians of the pairs), the records and bytes of the trace.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
command -v farm-bench >/dev/null || { echo "bench.sh: farm-bench not found" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "bench.sh: valgrind not found: apt-get install valgrind" >&2; exit 2; }
cargo build --release -p foliosim-cli >&2
foliosim=$PWD/target/release/foliosim
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# a real interpreter, not a shim that execs one (the recorder follows no exec)
python=/usr/bin/python3
[ -x "$python" ] || python=$(command -v python3)

"$python" - "$work" <<'PY'
import random, sys, os
r = random.Random(15)
d = sys.argv[1]
with open(os.path.join(d, "lines.txt"), "w") as f:
    for _ in range(200_000):
        f.write("".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(r.randint(5, 40))) + "\n")
words = ["".join(r.choice("abcdefghij") for _ in range(r.randint(3, 9))) for _ in range(5000)]
with open(os.path.join(d, "text.txt"), "w") as f:
    n = 0
    while n < 1_000_000:
        w = r.choice(words) + (" " if r.random() < 0.9 else "\n")
        f.write(w)
        n += len(w)
PY

median() { # the median column of a farm-bench row
    awk -v row="$1" 'index($0, row) == 1 { print $(NF-1) }' "$2"
}

printf '%-10s %10s %10s %8s %8s %12s %12s %8s\n' program native_s record_s wall_x cpu_x records bytes B/rec
bench() {
    local name=$1; shift
    local out=$work/$name.farm
    farm-bench -n "$runs" --warmup 1 --timeout 3600 \
        --vs "$(printf '%q ' "$@")" \
        -- "$foliosim" trace record -o "$work/$name.trace" -- "$@" >"$out" 2>&1
    "$foliosim" trace record -o "$work/$name.trace" -- "$@" >/dev/null 2>"$work/$name.summary"
    local summary records bytes per
    summary=$(grep 'records (' "$work/$name.summary")
    records=$(sed -E 's/.*: ([0-9]+) records.*/\1/' <<<"$summary")
    bytes=$(sed -E 's/.*, ([0-9]+) bytes,.*/\1/' <<<"$summary")
    per=$(sed -E 's/.*, ([0-9.]+) bytes per record.*/\1/' <<<"$summary")
    printf '%-10s %10s %10s %8s %8s %12s %12s %8s\n' "$name" \
        "$(median 'B wall s' "$out")" "$(median 'A wall s' "$out")" \
        "$(median 'A/B wall' "$out")" "$(median 'A/B cpu' "$out")" "$records" "$bytes" "$per"
}

bench python-dict "$python" -c 'd = {i: str(i) for i in range(1_000_000)}'
bench sort sort "$work/lines.txt" -o "$work/sorted.txt"
bench xz-9 xz -9 -c "$work/text.txt"
