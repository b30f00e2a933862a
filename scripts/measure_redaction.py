#!/usr/bin/env python3
"""What the redaction finds in real histories, and how long it takes.

    scripts/measure_redaction.py [PATHS ...] [--json OUT] [--reps 3] [--timing-only] [--compare-with REF]
                                 [--worst-cases CHARS]

Loads every history under PATHS (default ``../shared/trajectories``) with the project's importers, runs
``offline_compress.secrets.redact.find_secrets`` over every message text and every tool call's arguments, and prints
each find (kind, file, message, the matched text with a little context) and the time per pass (median of
``--reps``, CPU seconds of this process) over all texts and over the mini-swe-agent runs alone. With
``--compare-with REF`` the ``redact.py`` of git revision REF (a self-contained module before detect-secrets
came in) is timed too, alternating with the current one rep by rep, so both see the same machine load.
The sources hold no real credentials, so every find listed is a false positive to read and fix by rule
(docs/secrets.md). ``--worst-cases CHARS`` also times each of the reliability benchmark's worst cases
(``evaluation.bench_reliability.WORST_CASES``) at CHARS characters and reports MB/s beside the real texts'.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from offline_compress.errors import InputError  # noqa: E402
from offline_compress.formats import load_history_with_format  # noqa: E402
from offline_compress.secrets.redact import find_secrets  # noqa: E402

SKIP_NAMES = ("LICENSE", "README", "ATTRIBUTION", "results_summary")


def history_files(paths: list[Path]) -> list[Path]:
    out = []
    for p in paths:
        files = sorted(p.rglob("*")) if p.is_dir() else [p]
        out += [f for f in files if f.is_file() and not f.name.startswith(SKIP_NAMES)]
    return out


def texts_of(path: Path) -> tuple[str, list[tuple[int, str]]] | None:
    try:
        fmt, messages = load_history_with_format(path)
    except InputError:
        return None
    texts = []
    for i, m in enumerate(messages):
        texts.append((i, m.text))
        texts += [(i, c.function.arguments) for c in m.tool_calls or ()]
    return fmt, texts


Finder = Callable[[str], object]


def old_finder(ref: str) -> Finder:
    """``find_secrets`` of ``offline_compress/secrets/redact.py`` at git revision ``ref``."""
    source = subprocess.run(
        ["git", "show", f"{ref}:offline_compress/secrets/redact.py"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    module = types.ModuleType(f"redact_at_{ref}")
    exec(compile(source, f"{ref}:offline_compress/secrets/redact.py", "exec"), module.__dict__)
    return module.find_secrets


def time_passes(finders: dict[str, Finder], texts: list[str], reps: int) -> dict[str, float]:
    """Median CPU seconds of one pass over ``texts`` per finder, the finders alternating rep by rep."""
    for find in finders.values():
        find("warm up: AKIA and password=x")  # imports, plugin set-up
    runs: dict[str, list[float]] = {name: [] for name in finders}
    for _ in range(reps):
        for name, find in finders.items():
            t = time.process_time()
            for text in texts:
                find(text)
            runs[name].append(time.process_time() - t)
    return {name: round(statistics.median(r), 3) for name, r in runs.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", type=Path, default=[REPO.parent / "shared" / "trajectories"])
    ap.add_argument("--json", type=Path, help="write every find and the timings here")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--timing-only", action="store_true")
    ap.add_argument("--compare-with", metavar="REF", help="also time redact.py of this git revision (e.g. main)")
    ap.add_argument("--worst-cases", type=int, metavar="CHARS", help="also time the worst cases at CHARS characters")
    args = ap.parse_args(argv)

    loaded: dict[str, tuple[str, list[tuple[int, str]]]] = {}
    for f in history_files(args.paths):
        got = texts_of(f)
        if got is not None:
            loaded[str(f)] = got
    all_texts = [t for _, texts in loaded.values() for _, t in texts]
    mini = [t for fmt, texts in loaded.values() if fmt == "mini-swe-agent" for _, t in texts]
    mini_runs = sum(1 for fmt, _ in loaded.values() if fmt == "mini-swe-agent")
    chars = sum(map(len, all_texts))
    finds = []
    if not args.timing_only:
        for name, (fmt, texts) in loaded.items():
            for index, text in texts:
                for kind, (a, b) in find_secrets(text):
                    finds.append(
                        {
                            "file": name,
                            "format": fmt,
                            "message": index,
                            "kind": kind,
                            "match": text[a:b],
                            "context": text[max(0, a - 40) : b + 20],
                        }
                    )
    finders: dict[str, Finder] = {"current": find_secrets}
    if args.compare_with:
        finders[args.compare_with] = old_finder(args.compare_with)
    timing = {
        "files": len(loaded),
        "texts": len(all_texts),
        "chars": chars,
        "cpu_seconds_all": time_passes(finders, all_texts, args.reps),
        "mini_swe_agent_runs": mini_runs,
        "mini_swe_agent_texts": len(mini),
        "cpu_seconds_mini_swe_agent": time_passes(finders, mini, args.reps),
    }
    timing["mb_per_s_all"] = {name: round(chars / s / 1e6, 2) for name, s in timing["cpu_seconds_all"].items() if s}
    if args.worst_cases:
        from evaluation.bench_reliability import WORST_CASES

        worst = {}
        for name, make in WORST_CASES.items():
            text = make(args.worst_cases)
            seconds = time_passes({"current": find_secrets}, [text], args.reps)["current"]
            worst[name] = round(len(text) / max(seconds, 1e-6) / 1e6, 2)
        timing["mb_per_s_worst_cases"] = worst
    for f in finds:
        print(f"{f['kind']:<16} {Path(f['file']).name}:{f['message']}  {f['context']!r}")
    by_kind: dict[str, int] = {}
    for f in finds:
        by_kind[f["kind"]] = by_kind.get(f["kind"], 0) + 1
    print(json.dumps({"finds": len(finds), "by_kind": by_kind, **timing}, indent=1))
    if args.json:
        args.json.write_text(json.dumps({"timing": timing, "by_kind": by_kind, "finds": finds}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
