"""The contexts a checkout's own hook builds at the compaction points of an ``ab-replay`` result, for
``python -m evaluation ab-contexts`` (a like-for-like comparison of two versions of the hook: the same points,
the same horizons, today's probes).

Run it from the root of the checkout whose hook is to be measured (any commit since the evaluation moved to
``evaluation/``, 2026-12-01), with this project's virtualenv; that checkout's package and evaluation are imported,
not the installed ones:

    git worktree add ../old a8571fa   # beside the checkout, so that ../shared is the same
    (cd ../old && OFFLINE_COMPRESS_MODEL_DIR=$OLDPWD/models $OLDPWD/.venv/bin/python \\
        $OLDPWD/scripts/contexts_at_points.py $OLDPWD/RESULT.json /tmp/old_contexts.json.gz)
    python -m evaluation ab-contexts RESULT.json /tmp/old_contexts.json.gz --name hook-2026-12-01

The hook compacts (``CompactionHook.compact`` through ``HookReplay.run(steps=...)``) at exactly the result's points
of each trajectory and window, with its own defaults; the contexts are written as OpenAI messages, gzipped JSON
``{"<trajectory>|<window>": {"messages": N, "contexts": {"<step>": [message, ...]}}}``. The trajectory paths in the
result are read relative to the working directory (``../shared`` must be reachable from the checkout's root)."""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: contexts_at_points.py RESULT.json[.gz] OUT.json.gz", file=sys.stderr)
        return 2
    sys.path.insert(0, os.getcwd())  # the checkout run from: its own package and evaluation, not the installed one
    from evaluation.replay import load_trajectory
    from evaluation.strategies import HookReplay
    from offline_compress.compressor import Compressor
    from offline_compress.tokens.counter import get_counter

    raw = Path(argv[0]).read_bytes()
    result = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    counter = get_counter()
    compressor = Compressor(None, keep_last=result.get("keep_last", 5))
    out: dict[str, dict[str, object]] = {}
    trajectories = [t for t in result["trajectories"] if t.get("points")]
    for k, t in enumerate(trajectories, 1):
        messages = load_trajectory(Path(t["path"]))
        steps: dict[int, list[int]] = {}
        for p in t["points"]:
            steps.setdefault(p["window"], []).append(p["step"])
        for window, at in steps.items():
            replay = HookReplay(compressor, window, counter, result.get("keep_last", 5))
            contexts = replay.run(messages, sorted(at))
            out[f"{t['name']}|{window}"] = {
                "messages": len(messages),
                "contexts": {str(s): [m.to_openai() for m in c.messages] for s, c in contexts.items() if not c.failed},
            }
        print(f"[{k}/{len(trajectories)}] {t['name']}", file=sys.stderr)
    with gzip.open(argv[1], "wt", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
