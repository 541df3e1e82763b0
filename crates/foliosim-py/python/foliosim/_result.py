"""`Result`: the runs of one `Scenario.run`, as the CLI's JSON document and as DataFrames.

Every frame starts with the columns `profile`, `variant` (None for a scenario without variants)
and `seed`, then:
- `vmstat`: one row per run: `sim_time_ns` and every /proc/vmstat counter;
- `mthp`: one row per (run, mTHP size): `size` ("64kB") and the size's counters;
- `memcg`: one row per (run, cgroup): `cgroup` and its counters;
- `zram`: one row per (run, zram device): `device` and its mm_stat fields;
- `zswap`: one row per run with zswap enabled: zswap's debugfs figures (`pool_total_size`,
  `stored_pages`, `written_back_pages`, `pool_limit_hit`, `reject_*`);
- `tasks`: one row per (run, task): the task's fields (`name`, `exit_ns`, ...), its
  `time_breakdown_ns` as one column per category (`time_zeroing_ns`, ...; docs/hardware.md);
- `iterations`: one row per (run, iteration): `iteration` (from 1) and the generator's fields;
- `series`: one row per (run, sample): `t_ns` and the sampled counters.
"""

from __future__ import annotations

import json
import os
import tempfile
from functools import cached_property

import pandas as pd

RUN_KEYS = ["profile", "variant", "seed"]


def _write_atomically(path, text: str) -> None:
    """`text` into a temporary file beside `path`, renamed over it once complete: a failure
    leaves no partial file."""
    path = os.fspath(path)
    directory = os.path.dirname(path) or "."
    handle, temporary = tempfile.mkstemp(
        prefix=os.path.basename(path) + ".", suffix=".tmp", dir=directory
    )
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _task_row(task: dict) -> dict:
    """A task's fields, its time breakdown flattened to `time_<category>_ns` columns."""
    row = {k: v for k, v in task.items() if k != "time_breakdown_ns"}
    for kind, ns in task.get("time_breakdown_ns", {}).items():
        row[f"time_{kind}_ns"] = ns
    return row


class Result:
    def __init__(self, document: str):
        # the CLI's document, without the newline its file ends with
        self._document = document

    def to_json(self) -> str:
        """The text `foliosim run --json FILE` writes into FILE, byte for byte."""
        return self._document + "\n"

    def save_json(self, path) -> None:
        """Writes `to_json()` to `path` atomically: a temporary file beside it, renamed over it."""
        _write_atomically(path, self.to_json())

    @cached_property
    def data(self) -> dict:
        """The document, parsed: `{"foliosim_version", "scenario", "runs", "published"}`."""
        return json.loads(self._document)

    @property
    def runs(self) -> list:
        return self.data["runs"]

    @property
    def scenario(self) -> str:
        return self.data["scenario"]

    @property
    def published(self):
        return self.data["published"]

    def _frame(self, rows_of) -> pd.DataFrame:
        rows = []
        for run in self.runs:
            key = {k: run[k] for k in RUN_KEYS}
            rows.extend({**key, **row} for row in rows_of(run))
        # without rows (a scenario with no iterations) the key columns are still there
        return pd.DataFrame(rows) if rows else pd.DataFrame(columns=RUN_KEYS)

    @cached_property
    def vmstat(self) -> pd.DataFrame:
        return self._frame(lambda r: [{"sim_time_ns": r["sim_time_ns"], **r["vmstat"]}])

    @cached_property
    def mthp(self) -> pd.DataFrame:
        return self._frame(lambda r: [{"size": s, **c} for s, c in r["mthp"].items()])

    @cached_property
    def memcg(self) -> pd.DataFrame:
        return self._frame(lambda r: [{"cgroup": g, **c} for g, c in r["memcg"].items()])

    @cached_property
    def zram(self) -> pd.DataFrame:
        return self._frame(lambda r: [{"device": d, **c} for d, c in r["zram"].items()])

    @cached_property
    def zswap(self) -> pd.DataFrame:
        return self._frame(lambda r: [r["zswap"]] if r.get("zswap") else [])

    @cached_property
    def tasks(self) -> pd.DataFrame:
        return self._frame(lambda r: [_task_row(t) for t in r["tasks"]])

    @cached_property
    def iterations(self) -> pd.DataFrame:
        return self._frame(
            lambda r: [{"iteration": i, **it} for i, it in enumerate(r["iterations"], start=1)]
        )

    @cached_property
    def series(self) -> pd.DataFrame:
        def samples(run):
            columns = run["series"]
            count = len(columns.get("t_ns", []))
            # t_ns first, then the counters in the document's order
            names = ["t_ns"] + [n for n in columns if n != "t_ns"]
            return [{n: columns[n][i] for n in names} for i in range(count)]

        return self._frame(samples)

    def report(self, path) -> None:
        """The HTML report of these runs (the page `foliosim report RESULT.json -o FILE`
        writes: one self-contained file, charts inline), written atomically to `path`."""
        from ._native import render_report

        _write_atomically(path, render_report(self.to_json()))

    def __repr__(self) -> str:
        labels = [
            f"{r['profile']}/{r['variant']}" if r["variant"] is not None else r["profile"]
            for r in self.runs
        ]
        return f"Result({self.scenario!r}, runs={labels})"
