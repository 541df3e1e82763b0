"""Sweeps: the same DataFrame on local processes and on a local Ray instance, whatever the
number of workers; a failed run is a row with its error."""

import pandas as pd
import pytest

import foliosim

# usemem-small scaled down (4 x 64 MiB tasks) so that 120 runs stay quick; the memcg limits
# still force swapping
GRID = {
    "profile": ["v6.9", "v6.10", "v6.12", "v6.18"],
    "bench/memory.max": ["96M", "128M", "192M"],
    "seed": list(range(1, 11)),
}
BASE = dict(variants="64K", set={"/proc/sys/vm/swappiness": 60})


def usemem():
    return foliosim.Scenario.load("usemem-small").with_args({"size": "64M"})


@pytest.fixture(scope="module")
def local_sweep():
    return foliosim.sweep(usemem(), GRID, backend="local", workers=2, progress=False, **BASE)


def test_the_frame_has_a_row_per_run_in_the_grids_order(local_sweep):
    frame = local_sweep
    assert len(frame) == 4 * 3 * 10
    assert list(frame.columns[:5]) == ["profile", "bench/memory.max", "seed", "variant", "error"]
    assert frame["error"].isna().all()
    assert frame["variant"].eq("64K").all()
    assert frame[["profile", "bench/memory.max", "seed"]].drop_duplicates().shape[0] == 120
    assert frame["profile"].tolist()[:30] == ["v6.9"] * 30
    assert frame["seed"].tolist()[:10] == list(range(1, 11))
    # a tighter limit swaps more
    by_limit = frame.groupby("bench/memory.max")["pswpout"].mean()
    assert by_limit["96M"] > by_limit["128M"] > by_limit["192M"] > 0


def test_a_row_equals_a_single_run(local_sweep):
    row = local_sweep.iloc[45]
    result = usemem().run(
        profiles=row["profile"],
        variants="64K",
        set={"/proc/sys/vm/swappiness": 60, "bench/memory.max": row["bench/memory.max"]},
        seed=int(row["seed"]),
    )
    expected = foliosim.summary_row(result.runs[0])
    assert {k: row[k] for k in expected} == expected


def test_worker_count_does_not_change_the_frame(local_sweep):
    grid = {**GRID, "seed": [1, 2]}
    one = foliosim.sweep(usemem(), grid, workers=1, progress=False, **BASE)
    expected = local_sweep[local_sweep["seed"].isin([1, 2])].reset_index(drop=True)
    pd.testing.assert_frame_equal(one, expected)


def test_ray_gives_the_same_frame(local_sweep):
    pytest.importorskip("ray")
    on_ray = foliosim.sweep(usemem(), GRID, backend="ray", workers=2, progress=False, **BASE)
    pd.testing.assert_frame_equal(on_ray, local_sweep)


def test_a_failed_run_keeps_the_others():
    grid = {"bench/memory.max": ["128M", "lots"], "args.processes": [1, 2]}
    with pytest.warns(UserWarning, match="lots"):
        frame = foliosim.sweep(usemem(), grid, profiles="v6.12", progress=False, **{"variants": "4K"})
    assert len(frame) == 4
    failed = frame[frame["error"].notna()]
    assert failed["bench/memory.max"].tolist() == ["lots", "lots"]
    assert failed["error"].str.startswith("InputError: --set: bench/memory.max").all()
    ok = frame[frame["error"].isna()]
    assert ok["args.processes"].tolist() == [1, 2]
    assert ok["task:usemem-0:bytes"].notna().all()
    assert ok["task:usemem-1:bytes"].isna().tolist() == [True, False]


def test_a_bad_grid_is_refused():
    with pytest.raises(TypeError, match="seed"):
        foliosim.sweep(usemem(), {"seed": 3}, progress=False)
    with pytest.raises(ValueError, match="backend"):
        foliosim.sweep(usemem(), {"seed": [1]}, backend="dask", progress=False)


def test_a_point_that_leaves_the_variant_open_runs_each():
    frame = foliosim.sweep(usemem(), {"seed": [1, 2]}, profiles="v6.12", progress=False)
    assert frame[["seed", "profile", "variant"]].values.tolist() == [
        [1, "v6.12", "4K"], [1, "v6.12", "64K"], [2, "v6.12", "4K"], [2, "v6.12", "64K"],
    ]
    # 64K folios fault in fewer times than 4K pages
    assert frame.loc[1, "pgfault"] < frame.loc[0, "pgfault"]
