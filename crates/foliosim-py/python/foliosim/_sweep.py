"""`sweep`: every combination of a grid of parameters, run on local processes or a Ray cluster,
gathered into one DataFrame.

Grid keys:
- `"profile"`, `"variant"`, `"seed"`: the run's kernel profile, variant and seed;
- `"args.NAME"`: the generator argument NAME, set in every generator task (`"args.size"`);
- anything else: a knob path, as `--set` takes it (`"/proc/sys/vm/swappiness"`,
  `"bench/memory.max"`).

The frame has one row per run: a column per grid key (named as the key), then `profile`,
`variant`, `seed` (when not grid keys already), `error` (None, or why the run failed), then the
run's summary (see `summary_row`). A grid point that leaves the profile or the variant open runs
the scenario's own, one row each. Rows are in the grid's order (the product of the keys' values,
the first key slowest), then the scenario's profile x variant order: the frame does not depend on
the backend, the number of workers or the order in which runs finish. Each run is one task (a
worker process's, or a Ray task).
"""

from __future__ import annotations

import concurrent.futures
import itertools
import multiprocessing
import os
import warnings
from typing import Any, Mapping, Optional, Sequence

import pandas as pd

from ._scenario import Scenario

RUN_PARAMETERS = ("profile", "variant", "seed")


def summary_row(run: Mapping[str, Any]) -> dict:
    """One run of a result document as flat columns: `sim_time_ns`; every vmstat counter by its
    name; `hugepages-<size>/<counter>` per mTHP size (the CLI table's names);
    `memcg:<cgroup>:<counter>`; `zram:<device>:<field>`; `zswap:<field>` (runs with zswap on);
    `task:<name>:<field>` for each task's
    numeric fields; `iterations`, the number of iterations."""
    row = {"sim_time_ns": run["sim_time_ns"]}
    row.update(run["vmstat"])
    for size, counters in run["mthp"].items():
        row.update({f"hugepages-{size}/{k}": v for k, v in counters.items()})
    for group, counters in run["memcg"].items():
        row.update({f"memcg:{group}:{k}": v for k, v in counters.items()})
    for device, fields in run["zram"].items():
        row.update({f"zram:{device}:{k}": v for k, v in fields.items()})
    row.update({f"zswap:{k}": v for k, v in run.get("zswap", {}).items()})
    for task in run["tasks"]:
        row.update(
            {
                f"task:{task['name']}:{k}": v
                for k, v in task.items()
                if k != "name" and isinstance(v, (int, float))
            }
        )
    row["iterations"] = len(run["iterations"])
    return row


def run_one(toml: str, file: str, run: dict, base_set: dict):
    """Runs one run of a sweep (in a worker): `run` holds its profile, variant (None for a
    scenario without variants), seed, `args.NAME`s and knob paths. Returns (summary, None), or
    (None, why it failed)."""
    args = {k[len("args.") :]: v for k, v in run.items() if k.startswith("args.")}
    knobs = {
        k: v for k, v in run.items() if k not in RUN_PARAMETERS and not k.startswith("args.")
    }
    try:
        scenario = Scenario.from_toml(toml, file)
        if args:
            scenario = scenario.with_args(args)
        result = scenario.run(
            profiles=[run["profile"]],
            variants=None if run["variant"] is None else [run["variant"]],
            set={**base_set, **knobs},
            seed=run["seed"],
            threads=1,
        )
    except Exception as error:  # a failed run is a row, not a lost sweep
        return None, f"{type(error).__name__}: {error}"
    return summary_row(result.runs[0]), None


def _points(grid: Mapping[str, Sequence[Any]]) -> list:
    keys = list(grid)
    for key in keys:
        if isinstance(grid[key], (str, bytes)) or not hasattr(grid[key], "__iter__"):
            raise TypeError(f"grid[{key!r}]: expected a list of values, found {grid[key]!r}")
    return [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]


def _local(tasks, workers: Optional[int]):
    """Yields (index, outcome) as runs finish, on worker processes."""
    workers = workers or os.cpu_count() or 1
    # forkserver: workers never inherit the threads of the caller (Ray's, a notebook's)
    context = multiprocessing.get_context("forkserver")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        futures = {pool.submit(run_one, *task): i for i, task in enumerate(tasks)}
        for future in concurrent.futures.as_completed(futures):
            yield futures[future], _outcome(future.exception, future.result)


def _ray(tasks, workers: Optional[int], address: Optional[str]):
    """Yields (index, outcome) as runs finish, each run a Ray task."""
    import ray

    if not ray.is_initialized():
        if address is None:
            ray.init(num_cpus=workers or 2, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=address, log_to_driver=False)
    remote = ray.remote(num_cpus=1, max_retries=0)(run_one)
    pending = {remote.remote(*task): i for i, task in enumerate(tasks)}
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            index = pending.pop(ref)

            def failure(ref=ref):
                try:
                    ray.get(ref)
                except Exception as error:
                    return error
                return None

            yield index, _outcome(failure, lambda ref=ref: ray.get(ref))


def _outcome(exception, result):
    """The worker's (summary, error), or an error when the worker itself died (a crashed
    process, a lost Ray node)."""
    error = exception()
    if error is None:
        return result()
    return None, f"{type(error).__name__}: {error}"


def sweep(
    scenario,
    grid: Mapping[str, Sequence[Any]],
    backend: str = "local",
    workers: Optional[int] = None,
    address: Optional[str] = None,
    progress: bool = True,
    profiles=None,
    variants=None,
    set: Optional[Mapping[str, Any]] = None,
    seed: int = 1,
) -> pd.DataFrame:
    """Runs `scenario` (a Scenario, a path or a bundled name) at every point of `grid`
    (`{key: [values]}`, see the module's doc) and returns one DataFrame, a row per run.
    `profiles`, `variants`, `set` and `seed` apply where the grid does not say.

    backend: "local" (worker processes, `workers` of them, default one per core, started with
    forkserver: a script calling sweep needs the `if __name__ == "__main__":` guard) or "ray"
    (a Ray task per run: on the cluster at `address`, or on a local Ray instance with
    `workers` CPUs, default 2; the cluster's nodes need this package installed).
    A failed run becomes a row with its parameters and an `error`, and a warning; the other
    runs are kept."""
    if not isinstance(scenario, Scenario):
        scenario = Scenario.load(scenario)
    points = _points(grid)
    profiles = [profiles] if isinstance(profiles, str) else profiles
    variants = [variants] if isinstance(variants, str) else variants
    # every grid point expands into its runs: one task, one row each
    runs = []
    for point in points:
        for profile in [point["profile"]] if "profile" in point else profiles or scenario.profiles:
            variants_here = variants or scenario.variants or [None]
            for variant in [point["variant"]] if "variant" in point else variants_here:
                run = {**point, "profile": profile, "variant": variant, "seed": point.get("seed", seed)}
                runs.append((point, run))
    tasks = [(scenario.toml, scenario.file, run, dict(set or {})) for _, run in runs]
    if backend == "local":
        finished = _local(tasks, workers)
    elif backend == "ray":
        finished = _ray(tasks, workers, address)
    else:
        raise ValueError(f"backend: expected \"local\" or \"ray\", found {backend!r}")

    from tqdm.auto import tqdm

    outcomes = [None] * len(tasks)
    with tqdm(
        total=len(tasks), desc=f"{scenario.name} sweep", unit="run", disable=not progress
    ) as bar:
        for index, outcome in finished:
            outcomes[index] = outcome
            bar.update(1)

    rows = []
    for (point, run), (summary, error) in zip(runs, outcomes):
        if error is not None:
            warnings.warn(f"foliosim.sweep: run {run} failed: {error}", stacklevel=2)
        run_key = {k: run[k] for k in RUN_PARAMETERS if k not in point}
        rows.append({**point, **run_key, "error": error, **(summary or {})})
    columns = list(grid) + [k for k in RUN_PARAMETERS if k not in grid] + ["error"]
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    return pd.DataFrame(rows, columns=columns)
