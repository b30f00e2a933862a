#!/usr/bin/env bash
# The checks that run before the tests (README command 2, .ci/run): ruff's lint and format check over the
# repository, and mypy over the package (both configured in pyproject.toml).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
