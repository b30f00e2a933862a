#!/usr/bin/env bash
# One-time setup on a connected machine: a virtualenv in .venv, the package with its dependencies, and the
# default model in models/. Safe to re-run: what is already there is kept.
#
# The first run compiles llama-cpp-python from source (PyPI ships no wheel): ~15 minutes on 2 cores; pip
# caches the wheel, so later runs take seconds. For a CUDA build: CMAKE_ARGS="-DGGML_CUDA=on" scripts/setup.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$python" -m venv .venv
fi
echo "setup: installing offline_compress and its dependencies (llama-cpp-python compiles once, ~15 min)"
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[dev]"
PYTHON=.venv/bin/python scripts/download_model.sh "$@"
echo "setup: done. Try: .venv/bin/offline-compress compress tests/fixtures/mini-swe-agent/django__django-11163.traj.json"
