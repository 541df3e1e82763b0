"""`Scenario`: a checked scenario, loaded from a file, a bundled name or a dict."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional, Union

from . import _native
from ._result import Result

# what errors name a scenario given as a dict (a file would be named by its path)
DICT_FILE = "<dict>"


def _names(values: Union[None, str, Iterable[str]]) -> Optional[list]:
    """None (the scenario's own), one name, or several."""
    if values is None:
        return None
    if isinstance(values, str):
        return [values]
    return [str(v) for v in values]


def set_arguments(overrides: Optional[Mapping[str, Any]]) -> list:
    """`{path: value}` as the CLI's `--set PATH=VALUE` arguments (booleans as TOML writes them)."""
    arguments = []
    for path, value in (overrides or {}).items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        arguments.append(f"{path}={value}")
    return arguments


class Scenario:
    """A scenario, checked as `foliosim run` checks it. Picklable (it travels as its TOML text)."""

    def __init__(self, native: "_native.NativeScenario"):
        self._native = native

    @classmethod
    def load(cls, path_or_name: str) -> "Scenario":
        """A scenario file, or a bundled scenario's name (`scenarios/NAME.toml`), found as the
        CLI finds its SCENARIO argument."""
        return cls(_native.NativeScenario.load(str(path_or_name)))

    @classmethod
    def from_dict(cls, table: Mapping[str, Any], file: str = DICT_FILE) -> "Scenario":
        """A dict in the scenario TOML's shape (`{"name": ..., "machine": {...}, "task": [...]}`);
        `file` names it in error messages."""
        return cls(_native.NativeScenario.from_dict(dict(table), file))

    @classmethod
    def from_toml(cls, text: str, file: str = "<toml>") -> "Scenario":
        return cls(_native.NativeScenario.parse(text, file))

    def with_args(self, args: Mapping[str, Any]) -> "Scenario":
        """This scenario with generator arguments (`{"size": "128M"}`) set in every generator
        task, as if written in the file."""
        return Scenario(self._native.with_args(dict(args)))

    name = property(lambda self: self._native.name)
    file = property(lambda self: self._native.file)
    description = property(lambda self: self._native.description)
    profiles = property(lambda self: list(self._native.profiles))
    variants = property(lambda self: list(self._native.variants))
    toml = property(lambda self: self._native.text, doc="the scenario's TOML text")

    def run(
        self,
        profiles: Union[None, str, Iterable[str]] = None,
        variants: Union[None, str, Iterable[str]] = None,
        set: Optional[Mapping[str, Any]] = None,
        seed: int = 1,
        check: bool = False,
        threads: Optional[int] = None,
        hardware: Optional[str] = None,
    ) -> Result:
        """Every profile x variant (the scenario's own when None), with knob overrides
        (`{"/proc/sys/vm/swappiness": 100, "bench/memory.max": "470M"}`), like
        `foliosim run --profile ... --variant ... --set PATH=VALUE --seed N`. Runs on up to
        `threads` threads (default: every core) with the GIL released. `hardware` names a
        bundled hardware profile or a profile .toml file (docs/hardware.md), like `--hardware`."""
        document = self._native.run(
            _names(profiles),
            _names(variants),
            set_arguments(set),
            int(seed),
            check,
            threads,
            None if hardware is None else str(hardware),
        )
        return Result(document)

    def __reduce__(self):
        return (Scenario.from_toml, (self.toml, self.file))

    def __repr__(self) -> str:
        return f"Scenario({self.name!r}, file={self.file!r})"
