"""Every recorded run through the hook and the compressor, in strict mode (an internal error raises): issue 45's
target of 0 exceptions out of ``before_step`` / ``compress`` over ../shared and the fixtures at 8k, 16k and 32k.

    .venv/bin/python scripts/sweep_steps.py [PATH ...] [--json OUT]

Each history is stepped as an agent loop steps it (``evaluation.load.run_loop``: before each assistant message the
hook gets its own last output plus the messages recorded since), once per window, then compressed whole by
``Compressor()``. Prints the exceptions by kind with the first file of each; exits 1 if there was any. A typed
``InputError`` (a history with nothing to compress) is counted apart: it is the documented answer, not a fault."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

os.environ["OFFLINE_COMPRESS_STRICT"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation.load import run_loop  # noqa: E402
from offline_compress import CompactionHook, Compressor  # noqa: E402
from offline_compress.errors import InputError  # noqa: E402
from offline_compress.files import find_history_files  # noqa: E402
from offline_compress.formats import load_history_with_format  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
WINDOWS = (8192, 16384, 32768)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "paths", nargs="*", default=[str(REPO.parent / "shared" / "trajectories"), str(REPO / "tests" / "fixtures")]
    )
    parser.add_argument("--json", help="write the counts and every failure here")
    args = parser.parse_args()
    files = find_history_files(args.paths)
    compressor = Compressor()
    failures: list[dict[str, str]] = []
    counts: Counter[str] = Counter()
    start = time.perf_counter()
    for n, path in enumerate(files, 1):
        try:
            _, messages = load_history_with_format(path)
        except Exception as err:  # not a history (the importers' own tests cover their errors)
            counts["not a history"] += 1
            sys.stderr.write(f"skip {path}: {type(err).__name__}: {str(err)[:120]}\n")
            continue
        history = [m.to_openai() for m in messages]
        for window in WINDOWS:
            with tempfile.TemporaryDirectory() as tmp:
                hook = CompactionHook(window, archive_path=Path(tmp) / "a.sqlite3", compressor=compressor)
                loop = run_loop(hook, path.name, history)
                hook.close()
            counts["before_step runs"] += 1
            counts["steps"] += loop.steps
            counts["compactions"] += len(loop.compactions)
            if loop.error:
                failures.append({"file": str(path), "where": f"before_step at {window}", "error": loop.error})
        try:
            compressor.compress(messages)
            counts["compress runs"] += 1
        except InputError:  # a clear, typed refusal (nothing to compress in a history this short): not a fault
            counts["compress refused (InputError)"] += 1
        except Exception as err:
            failures.append({"file": str(path), "where": "compress", "error": "".join(traceback.format_exception(err))})
        sys.stderr.write(
            f"[{n}/{len(files)}] {path.name}: {len(failures)} failures so far, {time.perf_counter() - start:.0f} s\n"
        )
    kinds = Counter(f["error"].strip().splitlines()[-1][:160] for f in failures)
    print(json.dumps(dict(counts), indent=1))
    print(f"{len(failures)} exceptions in {len(files)} files x {len(WINDOWS)} windows + compress")
    for kind, k in kinds.most_common():
        first = next(f for f in failures if f["error"].strip().splitlines()[-1][:160] == kind)
        print(f"{k:4d}  {kind}  (first: {first['file']}, {first['where']})")
    if args.json:
        Path(args.json).write_text(json.dumps({"counts": counts, "failures": failures}, indent=1) + "\n", "utf-8")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
