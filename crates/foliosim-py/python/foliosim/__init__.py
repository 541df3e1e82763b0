"""foliosim from Python: a deterministic simulator of the Linux kernel memory manager.

    import foliosim
    scenario = foliosim.Scenario.load("thp-swap-allocator")
    result = scenario.run(profiles=["v6.10", "v6.12"], variants=["none"])
    result.iterations          # one row per (run, iteration): a pandas DataFrame

Scenarios are loaded, resolved and run by the engine's own code (the `foliosim` CLI's), and a
result is the CLI's `--json` document: `Result.to_json()` is byte-identical to
`foliosim run --json`. Bad input raises `InputError` (a ValueError) with the CLI's message.
Sweeps over knobs, profiles, variants, generator arguments and seeds: `foliosim.sweep`.
"""

from ._native import VERSION as __version__
from ._native import CheckError, InputError
from ._result import Result
from ._scenario import Scenario
from ._sweep import sweep, summary_row

__all__ = [
    "CheckError",
    "InputError",
    "Result",
    "Scenario",
    "summary_row",
    "sweep",
    "__version__",
]
