"""Shared fixtures: the repository, and the `foliosim` binary the Python results are compared to
(scripts/test.sh builds it; FOLIOSIM_BIN names another)."""

import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cli():
    binary = os.environ.get("FOLIOSIM_BIN") or str(REPO / "target" / "release" / "foliosim")
    if not os.path.exists(binary):
        pytest.fail(f"{binary}: not built; run `cargo build --release -p foliosim-cli` first")

    def run(*args, cwd=REPO):
        return subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True)

    return run
