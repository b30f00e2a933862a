#!/usr/bin/env bash
# One-time setup on a connected machine: a virtualenv in .venv, the package with its dependencies, and the
# default model in models/. Safe to re-run: what is already there is kept.
#
#   scripts/setup.sh            # everything: the in-process model, the dev tools and the tests' packages
#   scripts/setup.sh --light    # the package and the default model's tokenizer only: the extractive default,
#                               # nothing compiled (about a minute; docs/install.md)
#
# The full setup compiles llama-cpp-python from source (PyPI ships no wheel): ~15-30 minutes on 2 cores; pip
# caches the wheel, so later runs take seconds. For a CUDA build: CMAKE_ARGS="-DGGML_CUDA=on" scripts/setup.sh
#
# On x86-64 the default build targets the AVX2 baseline (x86-64-v3), not the build machine's own CPU
# (-march=native): a native build on a CPU that advertises Intel AMX used AMX tile instructions, which fault
# (SIGILL) in virtual machines that do not enable them, and a native build also fails on an older CPU when the
# folder is carried to an air-gapped host. Set CMAKE_ARGS yourself to choose another build.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
python="${PYTHON:-python3}"
light=0
if [ "${1:-}" = "--light" ]; then light=1; shift; fi
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$python" -m venv .venv
fi
if [ -z "${CMAKE_ARGS:-}" ] && [ "$(uname -m)" = "x86_64" ]; then
  export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
fi
.venv/bin/python -m pip install --quiet --upgrade pip
if [ "$light" = 1 ]; then
  echo "setup: installing offline_compress (the extractive default: nothing to compile)"
  .venv/bin/python -m pip install --quiet -e .
else
  echo "setup: installing offline_compress and its dependencies (llama-cpp-python compiles once, ~15-30 min)"
  .venv/bin/python -m pip install --quiet -e ".[dev]"
fi
# The model: the extractive default counts tokens with the tokenizer derived from it (~25 s, once).
PYTHON=.venv/bin/python scripts/download_model.sh "$@"
# The OpenHands SDK needs Python >= 3.12: its tests run in .venv312 (no llama.cpp there; a no-op when up to date,
# skipped when the machine has no Python 3.12).
[ "$light" = 1 ] || scripts/setup_py312.sh
echo "setup: done. Try: .venv/bin/offline-compress compress tests/fixtures/mini-swe-agent/django__django-11163.traj.json"
