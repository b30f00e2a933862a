#!/usr/bin/env python
"""Check that our derived target tokenizer gives llama.cpp's tokens, token for token, on real agent histories.

    python scripts/check_tokenizer_agreement.py [PATHS...] [--model GGUF] [--tokenizer SPEC] [--show N]

PATHS (files or folders; default ../shared/trajectories next to the repository): JSON / ``.traj`` files give
every string under a text-like key (content, text, message, thought, action, observation, response) anywhere in
the document; Markdown files (Aider logs) give the whole file and each paragraph. Each text is tokenised with
``special=True`` and no BOS by both tokenizers. Prints texts checked, tokens and mismatches; exits 1 on any
mismatch, showing the first few differences.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

TEXT_KEYS = frozenset({"content", "text", "message", "thought", "action", "observation", "response"})
JSON_SUFFIXES = (".json", ".traj", ".jsonl")
SKIP_PREFIXES = ("LICENSE", "README", "ATTRIBUTION")


def _strings(node: Any, key: str | None = None) -> Iterator[str]:
    """Every string under a text-like key, depth first (nested content parts included)."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _strings(v, k)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item, key)
    elif isinstance(node, str) and key in TEXT_KEYS and node:
        yield node


def texts_of_file(path: Path) -> list[str]:
    raw = path.read_text(encoding="utf-8", errors="surrogateescape")
    if path.suffix in JSON_SUFFIXES:
        if path.suffix == ".jsonl":
            docs = [json.loads(line) for line in raw.splitlines() if line.strip()]
        else:
            docs = [json.loads(raw)]
        return [s for doc in docs for s in _strings(doc)]
    if path.suffix == ".md":
        return [raw] + [p for p in raw.split("\n\n") if p.strip()]
    return []


def history_files(paths: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        candidates = sorted(p.rglob("*")) if p.is_dir() else [p]
        for f in candidates:
            if f.is_file() and f.suffix in (*JSON_SUFFIXES, ".md") and not f.name.upper().startswith(SKIP_PREFIXES):
                files.append(f)
    return files


def collect_texts(paths: Iterable[str | Path]) -> list[tuple[str, str]]:
    """(label, text) for every text of every history file under ``paths``."""
    out: list[tuple[str, str]] = []
    for f in history_files(Path(p) for p in paths):
        out.extend((f"{f}#{i}", t) for i, t in enumerate(texts_of_file(f)))
    return out


def _clean(text: str) -> bytes:
    # JSON may hold lone surrogates; send both tokenizers the same valid UTF-8.
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


def first_diff(ours: Sequence[int], theirs: Sequence[int]) -> int:
    n = min(len(ours), len(theirs))
    return next((i for i in range(n) if ours[i] != theirs[i]), n)


def compare(texts: Sequence[tuple[str, str]], tokenizer: Any, llama: Any) -> dict[str, Any]:
    """Tokenise every text with both; returns counts and the mismatches (label, text, ours, llama.cpp's)."""
    tokens = 0
    mismatches: list[tuple[str, str, list[int], list[int]]] = []
    batch = [_clean(t).decode("utf-8") for _, t in texts]
    ours_all = [e.ids for e in tokenizer.encode_batch(batch, add_special_tokens=False)] if batch else []
    for (label, _), text, ours in zip(texts, batch, ours_all):
        theirs = llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        tokens += len(theirs)
        if ours != theirs:
            mismatches.append((label, text, ours, theirs))
    return {"texts": len(texts), "tokens": tokens, "mismatches": mismatches}


def describe(mismatch: tuple[str, str, list[int], list[int]], tokenizer: Any) -> str:
    label, text, ours, theirs = mismatch
    i = first_diff(ours, theirs)
    lo = max(0, i - 3)
    show = lambda ids: [tokenizer.id_to_token(t) for t in ids[lo : i + 4]]  # noqa: E731
    return (
        f"{label}: {len(ours)} vs {len(theirs)} tokens (llama.cpp), first difference at token {i}\n"
        f"    ours:      {show(ours)}\n    llama.cpp: {show(theirs)}"
    )


def open_llama(model: Path) -> Any:
    import llama_cpp

    return llama_cpp.Llama(str(model), vocab_only=True, verbose=False)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", type=Path, default=[REPO.parent / "shared" / "trajectories"])
    ap.add_argument("--model", help="GGUF whose llama.cpp tokenisation is the reference (default: the default model)")
    ap.add_argument("--tokenizer", help="tokenizer spec to check (default: the one derived from --model)")
    ap.add_argument("--show", type=int, default=5, help="mismatches to print")
    args = ap.parse_args(argv)

    from offline_compress.model_files import resolve_model
    from offline_compress.tokens.gguf import load_target_tokenizer

    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        print(f"no such path: {', '.join(missing)}", file=sys.stderr)
        return 2
    model = resolve_model(args.model)
    start = time.perf_counter()
    tokenizer = load_target_tokenizer(args.tokenizer or model)
    loaded = time.perf_counter() - start
    llama = open_llama(model)
    texts = collect_texts(args.paths)
    start = time.perf_counter()
    result = compare(texts, tokenizer, llama)
    files = len(history_files(args.paths))
    print(
        f"files: {files}  texts checked: {result['texts']}  tokens: {result['tokens']}  "
        f"mismatches: {len(result['mismatches'])}  (tokenizer load {loaded:.1f}s, compare "
        f"{time.perf_counter() - start:.1f}s)"
    )
    for m in result["mismatches"][: args.show]:
        print(describe(m, tokenizer))
    return 1 if result["mismatches"] else 0


if __name__ == "__main__":
    sys.exit(main())
