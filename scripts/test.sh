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
requirements=python/requirements-test.txt
if [ ! -x "$venv/bin/python" ]; then
    "${FOLIOSIM_PYTHON:-python3}" -m venv "$venv"
fi
# reinstall only when the pinned requirements changed
stamp="$venv/.requirements-installed"
if ! cmp -s "$requirements" "$stamp"; then
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet -r "$requirements"
    cp "$requirements" "$stamp"
fi
# The browser test needs Chromium: the system's (FOLIOSIM_CHROMIUM, .ci/run installs it with
# apt-get) when there is one, else Playwright's own build.
if [ -z "${FOLIOSIM_CHROMIUM:-}" ]; then
    for candidate in chromium chromium-browser google-chrome; do
        if command -v "$candidate" >/dev/null 2>&1; then
            FOLIOSIM_CHROMIUM="$(command -v "$candidate")"
            break
        fi
    done
fi
if [ -z "${FOLIOSIM_CHROMIUM:-}" ]; then
    "$venv/bin/python" -m playwright install chromium >/dev/null
fi
export FOLIOSIM_CHROMIUM="${FOLIOSIM_CHROMIUM:-}"

(cd crates/foliosim-py && VIRTUAL_ENV="$PWD/../../$venv" PATH="$PWD/../../$venv/bin:$PATH" \
    maturin develop --release --locked --quiet)
FOLIOSIM_BIN="$PWD/target/release/foliosim" "$venv/bin/python" -m pytest -q python/tests
