#!/usr/bin/env bash
# The Python 3.12 virtualenv .venv312, where the OpenHands adapter's tests run (openhands-sdk needs Python >= 3.12;
# tests/test_contract_openhands.py runs them there through a subprocess). It holds the package installed
# editable with --no-deps, its light dependencies (pyproject.toml's list without the model path's compiled
# packages: llama-cpp-python is never built here, the extractive path does not need it), the frameworks and
# pytest. Safe to re-run: a stamp of what was installed makes a second run a no-op (well under a second).
#
#   scripts/setup_py312.sh                   # uses $PYTHON312, else pyenv's 3.12.1, else python3.12 on PATH
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

python312="${PYTHON312:-}"
if [ -n "$python312" ] && [ ! -x "$python312" ]; then
  echo "setup_py312: PYTHON312=$python312 is not an executable Python" >&2
  exit 1
fi
if [ -z "$python312" ]; then
  for candidate in "$HOME/.pyenv/versions/3.12.1/bin/python" "$(command -v python3.12 || true)"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then python312="$candidate"; break; fi
  done
fi
if [ -z "$python312" ]; then
  echo "setup_py312: no Python 3.12 on this machine (set PYTHON312=...); the OpenHands tests will skip"
  exit 0
fi

# The model path only (engine/): compiled or heavy, never imported by Compressor() without a model.
heavy='llama-cpp-python|outlines|llguidance|numba'
light="$("$python312" - "$heavy" <<'EOF'
import re, sys, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
heavy = re.compile(rf"^({sys.argv[1]})\b", re.I)
print(" ".join(d for d in deps if not heavy.match(d)))
EOF
)"
frameworks='openhands-sdk>=1.58 pytest>=8'  # the OpenHands tests import no other framework
stamp=.venv312/.offline_compress-setup
want="$(printf '%s\n' "$python312" "$light" "$frameworks" | sha256sum | cut -d' ' -f1)"
if [ -x .venv312/bin/python ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "setup_py312: .venv312 is up to date"
  exit 0
fi
if [ ! -x .venv312/bin/python ]; then
  echo "setup_py312: creating .venv312 with $python312"
  "$python312" -m venv .venv312
fi
echo "setup_py312: installing offline_compress (--no-deps), $light, $frameworks"
.venv312/bin/python -m pip install --quiet --upgrade pip
# shellcheck disable=SC2086  # the lists are words on purpose
.venv312/bin/python -m pip install --quiet $light $frameworks
.venv312/bin/python -m pip install --quiet --no-deps -e .
# The package must import and compress extractively without llama.cpp: Compressor() loads no model.
.venv312/bin/python - <<'EOF'
import importlib.util
from offline_compress import Compressor
from offline_compress.integrations.openhands import OfflineCondenser
assert importlib.util.find_spec("llama_cpp") is None, "llama-cpp-python must not be installed in .venv312"
c = Compressor()
assert c.backend is None
c.compress([{"role": "user", "content": "Fix the bug."}, {"role": "assistant", "content": "Looking."}] * 3)
EOF
echo "$want" > "$stamp"
echo "setup_py312: done"
