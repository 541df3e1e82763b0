"""The README's example: thp-swap-allocator's per-iteration 64K fallback under v6.10 and v6.12
as a DataFrame, and its plot."""

import matplotlib

matplotlib.use("Agg")


def test_the_readme_example(tmp_path):
    # --- the README's example, as printed there ---
    import foliosim

    scenario = foliosim.Scenario.load("thp-swap-allocator")
    result = scenario.run(profiles=["v6.10", "v6.12"], variants="none")
    fallback = result.iterations.pivot(index="iteration", columns="profile", values="fallback_pct")
    ax = fallback.plot(title="thp_swap_allocator_test: 64K mTHP swap-out fallback")
    ax.set_xlabel("iteration")
    ax.set_ylabel("fallback (%)")
    ax.figure.savefig(tmp_path / "fallback.png")
    # --- end of the example ---

    assert fallback.shape == (100, 2)
    assert list(fallback.columns) == ["v6.10", "v6.12"]
    runs = {r["profile"]: r for r in result.runs}
    assert fallback["v6.12"].tolist() == [i["fallback_pct"] for i in runs["v6.12"]["iterations"]]
    # the seed's figures: without the series (v6.10) about 100% after the first iteration;
    # with it (v6.12) 0% in the first
    assert fallback.loc[2:, "v6.10"].mean() > 95
    assert fallback.loc[1, "v6.12"] == 0
    png = (tmp_path / "fallback.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
