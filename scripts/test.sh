#!/usr/bin/env bash
# The one test command: the Rust tests, then the Python package's tests (the API, sweeps on
# processes and on a local Ray instance, the browser test of the report), in a venv under target/.
#   FOLIOSIM_PYTHON   the interpreter to make the venv with (default: python3)
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace --locked
# the Python results are compared with the CLI's
cargo build --release --locked -p foliosim-cli

venv=target/venv
# the browser test's own requirements (it opens the system's /usr/bin/chromium)
requirements=python/requirements-test.txt
browser_requirements=python/requirements-browser.txt
if [ ! -x "$venv/bin/python" ]; then
    "${FOLIOSIM_PYTHON:-python3}" -m venv "$venv"
fi
# reinstall only when the pinned requirements changed
stamp="$venv/.requirements-installed"
wanted="$(cat "$requirements" "$browser_requirements" 2>/dev/null)"
if [ "$wanted" != "$(cat "$stamp" 2>/dev/null)" ]; then
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet -r "$requirements" \
        $([ -f "$browser_requirements" ] && echo -r "$browser_requirements")
    printf '%s' "$wanted" >"$stamp"
fi
(cd crates/foliosim-py && VIRTUAL_ENV="$PWD/../../$venv" PATH="$PWD/../../$venv/bin:$PATH" \
    maturin develop --release --locked --quiet)
FOLIOSIM_BIN="$PWD/target/release/foliosim" "$venv/bin/python" -m pytest -q python/tests
