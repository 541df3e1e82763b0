#!/usr/bin/python3
"""Records the traces of the real-program corpus on this machine.

    /usr/bin/python3 scenarios/real/record.py [--foliosim PATH] [SCENARIO.toml ...]

For every task of the scenarios (default: scenarios/real/*.toml) that names both a `command`
and a `trace`, runs the command once natively (for its run time) and once under
`foliosim trace record -o TRACE -- COMMAND...`, with the task's `env` and `cwd` as kernel-run
uses them (relative `cwd` and `trace` paths are in the scenario's folder), then prints the
slowdown and `foliosim trace info` of the trace. `trace record` also times three native runs
for the trace's header (the scenarios' `user_time = "native"`): record on an idle machine, since
other busy CPUs inflate a memory-bound program's user time (xz: 914 ms idle, 1,369 ms beside two
simulations). Make the inputs first (scenarios/real/make-inputs.py). Traces are large and are
not committed (target/real/).
"""

import argparse
import glob
import os
import subprocess
import sys
import time
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def tasks_to_record(scenario_path):
    """(task name, argv, env, cwd, trace path) of each task naming a command and a trace."""
    with open(scenario_path, "rb") as f:
        scenario = tomllib.load(f)
    folder = os.path.dirname(os.path.abspath(scenario_path))
    for task in scenario.get("task", []):
        if "command" not in task or "trace" not in task:
            continue
        env = dict(os.environ)
        env.update(task.get("env", {}))
        cwd = os.path.join(folder, task["cwd"]) if "cwd" in task else os.getcwd()
        trace = os.path.join(folder, task["trace"])
        yield task["name"], task["command"], env, os.path.normpath(cwd), os.path.normpath(trace)


def timed(argv, env, cwd):
    start = time.monotonic()
    done = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL)
    return done.returncode, time.monotonic() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--foliosim", default=os.path.join(REPO, "target/release/foliosim"))
    parser.add_argument("scenarios", nargs="*")
    args = parser.parse_args()
    scenarios = args.scenarios or sorted(glob.glob(os.path.join(HERE, "*.toml")))
    failed = False
    for path in scenarios:
        for name, argv, env, cwd, trace in tasks_to_record(path):
            os.makedirs(os.path.dirname(trace), exist_ok=True)
            status, native_s = timed(argv, env, cwd)
            if status != 0:
                print(f"{path}: task {name}: the command exited with {status}", file=sys.stderr)
                failed = True
                continue
            record = [args.foliosim, "trace", "record", "-o", trace, "--", *argv]
            status, record_s = timed(record, env, cwd)
            if status != 0:
                print(f"{path}: task {name}: recording exited with {status}", file=sys.stderr)
                failed = True
                continue
            size = os.path.getsize(trace)
            print(
                f"{os.path.basename(path)} {name}: native {native_s:.2f} s, recorded in "
                f"{record_s:.1f} s ({record_s / native_s:.0f}x), {trace}: {size / 2**20:.1f} MiB",
                flush=True,
            )
            subprocess.run([args.foliosim, "trace", "info", trace])
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
