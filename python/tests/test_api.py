"""The Python API against the CLI: the same scenarios, the same JSON bytes, the same messages."""

import json
import tomllib

import pandas as pd
import pytest

import foliosim
from conftest import REPO

# small enough to be quick, large enough to swap: 4 tasks x 128 MiB in a 200 MiB memcg
SMALL_SET = {"bench/memory.max": "200M"}


def small_usemem():
    return foliosim.Scenario.load("usemem-small").with_args({"size": "128M"})


def test_load_by_name_and_by_path_give_the_same_scenario():
    by_name = foliosim.Scenario.load("usemem-small")
    by_path = foliosim.Scenario.load(REPO / "scenarios" / "usemem-small.toml")
    assert by_name.name == by_path.name == "usemem-small"
    assert by_name.profiles == ["v6.9", "v6.10", "v6.12", "v6.18"]
    assert by_name.variants == ["4K", "64K"]
    assert by_name.toml == by_path.toml


def test_to_json_is_byte_identical_to_the_cli(cli, tmp_path):
    out = tmp_path / "cli.json"
    args = ["--profile", "v6.9", "--profile", "v6.12", "--set", "bench/memory.max=300M", "--seed", "3"]
    done = cli("run", "usemem-small", *args, "--json", str(out))
    assert done.returncode == 0, done.stderr
    result = foliosim.Scenario.load("usemem-small").run(
        profiles=["v6.9", "v6.12"], set={"bench/memory.max": "300M"}, seed=3
    )
    assert result.to_json().encode() == out.read_bytes()
    saved = tmp_path / "py.json"
    result.save_json(saved)
    assert saved.read_bytes() == out.read_bytes()


def test_from_dict_runs_like_the_file():
    table = tomllib.loads((REPO / "scenarios" / "usemem-small.toml").read_text())
    from_dict = foliosim.Scenario.from_dict(table).with_args({"size": "128M"})
    kwargs = dict(profiles="v6.12", variants="64K", set=SMALL_SET, seed=2)
    assert from_dict.run(**kwargs).to_json() == small_usemem().run(**kwargs).to_json()


def test_frames_hold_the_documents_values():
    result = small_usemem().run(profiles=["v6.10", "v6.12"], set=SMALL_SET, seed=5)
    runs = result.runs
    assert [(r["profile"], r["variant"]) for r in runs] == [
        ("v6.10", "4K"), ("v6.10", "64K"), ("v6.12", "4K"), ("v6.12", "64K"),
    ]
    vmstat = result.vmstat
    assert len(vmstat) == 4
    assert list(vmstat.columns[:4]) == ["profile", "variant", "seed", "sim_time_ns"]
    assert (vmstat["seed"] == 5).all()
    assert vmstat["pswpout"].tolist() == [r["vmstat"]["pswpout"] for r in runs]
    assert vmstat["pswpout"].gt(0).all(), "the memcg limit makes every run swap"

    mthp = result.mthp
    assert len(mthp) == 4 * len(runs[0]["mthp"])
    row = mthp[(mthp["profile"] == "v6.12") & (mthp["variant"] == "64K") & (mthp["size"] == "64kB")]
    assert row["anon_fault_alloc"].item() == runs[3]["mthp"]["64kB"]["anon_fault_alloc"] > 0

    memcg = result.memcg
    assert memcg["cgroup"].unique().tolist() == ["bench"]
    assert memcg["max"].tolist() == [r["memcg"]["bench"]["max"] for r in runs]

    tasks = result.tasks
    assert len(tasks) == 4 * 4
    assert tasks["name"].tolist()[:4] == [t["name"] for t in runs[0]["tasks"]]
    # args.size scaled every task: a quarter of the bytes the bundled 512M writes (603979776)
    assert tasks["bytes"].eq(603979776 // 4).all()
    # the time breakdown as columns: all but the waits (for a CPU, a device) add up to user + sys
    waits = ("time_cpu_wait_ns", "time_io_wait_ns")
    time_columns = [c for c in tasks.columns if c.startswith("time_") and c not in waits]
    assert "time_zeroing_ns" in time_columns and "time_breakdown_ns" not in tasks.columns
    assert (tasks[time_columns].sum(axis=1) == tasks["user_ns"] + tasks["sys_ns"]).all()

    series = result.series
    assert len(series) == sum(len(r["series"]["t_ns"]) for r in runs)
    first = series[(series["profile"] == "v6.10") & (series["variant"] == "4K")]
    assert first["pswpout"].tolist() == runs[0]["series"]["pswpout"]
    assert first["t_ns"].is_monotonic_increasing

    # usemem has no iterations: the frame is empty but keeps its key columns
    assert result.iterations.empty
    assert list(result.iterations.columns) == ["profile", "variant", "seed"]


def test_a_scenario_without_variants_has_none_as_variant():
    table = tomllib.loads((REPO / "scenarios" / "usemem-small.toml").read_text())
    del table["variant"]
    scenario = foliosim.Scenario.from_dict(table).with_args({"size": "64M"})
    result = scenario.run(profiles="v6.12")
    assert result.vmstat["variant"].tolist() == [None]


def cli_message(done):
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("foliosim: ")
    return done.stderr.removeprefix("foliosim: ").rstrip("\n")


def test_an_unknown_knob_raises_the_clis_message(cli):
    done = cli("run", "usemem-small", "--set", "/sys/kernel/mm/nope=1")
    with pytest.raises(foliosim.InputError) as caught:
        foliosim.Scenario.load("usemem-small").run(set={"/sys/kernel/mm/nope": 1})
    assert str(caught.value) == cli_message(done)
    assert caught.value.key == "/sys/kernel/mm/nope"
    assert caught.value.file == "--set"
    assert isinstance(caught.value, ValueError)


def test_an_unknown_profile_variant_and_scenario_raise(cli):
    scenario = foliosim.Scenario.load("usemem-small")
    with pytest.raises(foliosim.InputError, match="v9.99") as caught:
        scenario.run(profiles="v9.99")
    assert str(caught.value) == cli_message(cli("run", "usemem-small", "--profile", "v9.99"))
    with pytest.raises(foliosim.InputError) as caught:
        scenario.run(variants="2M")
    assert caught.value.key == "2M"
    with pytest.raises(foliosim.InputError) as caught:
        foliosim.Scenario.load("no-such-scenario")
    assert str(caught.value) == cli_message(cli("run", "no-such-scenario"))


def test_a_malformed_scenario_raises_naming_the_key(cli, tmp_path):
    bad = tmp_path / "bad.toml"
    text = (REPO / "scenarios" / "usemem-small.toml").read_text()
    bad.write_text(text.replace('processes = 4', 'processes = "four"'))
    with pytest.raises(foliosim.InputError) as caught:
        foliosim.Scenario.load(str(bad))
    assert str(caught.value) == cli_message(cli("run", str(bad)))
    assert "processes" in caught.value.key

    table = tomllib.loads(text)
    table["machine"]["hardwar"] = "x86-server"
    with pytest.raises(foliosim.InputError) as caught:
        foliosim.Scenario.from_dict(table)
    assert caught.value.key == "machine.hardwar"
    assert caught.value.file == "<dict>"

    with pytest.raises(foliosim.InputError) as caught:
        foliosim.Scenario.load("usemem-small").with_args({"nonsense": 1})
    assert "nonsense" in caught.value.key

    with pytest.raises(TypeError, match="knobs"):
        foliosim.Scenario.from_dict({**table, "knobs": {"x": object()}})


def test_scenarios_pickle_as_their_text():
    import pickle

    scenario = small_usemem()
    copy = pickle.loads(pickle.dumps(scenario))
    assert copy.toml == scenario.toml and copy.name == scenario.name


def test_report_is_the_clis_page(cli, tmp_path):
    result = small_usemem().run(profiles="v6.12", set=SMALL_SET)
    result.save_json(tmp_path / "result.json")
    done = cli("report", str(tmp_path / "result.json"), "-o", str(tmp_path / "cli.html"))
    assert done.returncode == 0, done.stderr
    result.report(tmp_path / "py.html")
    page = (tmp_path / "py.html").read_bytes()
    assert page == (tmp_path / "cli.html").read_bytes()
    assert page.count(b"<svg") >= 2


def test_a_hardware_profile_file_runs_like_the_cli(cli, tmp_path):
    mine = tmp_path / "mine.toml"
    text = (REPO / "profiles" / "x86-server.toml").read_text()
    mine.write_text(text.replace("value = 470\n", "value = 940\n", 1))
    out = tmp_path / "cli.json"
    args = ["--profile", "v6.12", "--variant", "64K", "--set", "bench/memory.max=200M"]
    done = cli("run", "usemem-small", *args, "--hardware", str(mine), "--json", str(out))
    assert done.returncode == 0, done.stderr
    scenario = foliosim.Scenario.load("usemem-small")
    kwargs = dict(profiles="v6.12", variants="64K", set=SMALL_SET)
    result = scenario.run(**kwargs, hardware=str(mine))
    assert result.to_json().encode() == out.read_bytes()
    # the bundled profile by name is the default; the doubled zeroing cost is slower
    default = scenario.run(**kwargs, hardware="x86-server")
    assert default.to_json() == scenario.run(**kwargs).to_json()
    assert result.runs[0]["sim_time_ns"] > default.runs[0]["sim_time_ns"]

    mine.write_text(text.replace("value = 470\n", "value = -1\n", 1))
    with pytest.raises(foliosim.InputError) as caught:
        scenario.run(**kwargs, hardware=str(mine))
    assert caught.value.key == "cost.zero_page_ns.value"
    assert caught.value.file == str(mine)
    assert str(caught.value) == cli_message(cli("run", "usemem-small", "--hardware", str(mine)))
