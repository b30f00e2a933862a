"""``offline-compress batch``: many histories, resumable, in one process or on Ray Data."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from ..batch import plan, run_local, run_ray
from ..errors import InputError
from ..files import check_output
from . import progress


def cmd_batch(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from ..compressor import DEFAULT_MODEL, Compressor
    from ..model_files import resolve_model

    if args.workers < 1:
        raise InputError(f"--workers must be at least 1, got {args.workers}")
    if args.workers > 1 and not args.ray:
        raise InputError("--workers needs --ray (without it one process compresses the files in turn)")
    if args.keep_last < 0:
        raise InputError(f"--keep-last must be 0 or more, got {args.keep_last}")
    Compressor(None, max_tokens=args.max_tokens)  # a budget below the largest draft: one line now, not per worker
    out_dir = Path(args.out)
    check_output(out_dir, folder=True)  # one line now, not one per file (or a traceback from plan)
    todo, skipped = plan(args.inputs, out_dir)
    model = None if args.no_model else args.model
    if model is not None:  # a missing or altered model is one error before any work, not one per file
        resolve_model(None if model == DEFAULT_MODEL else model)
    threads = args.threads
    if threads is None and args.ray and args.workers > 1:  # each worker gets its share of the cores
        threads = max(1, (os.cpu_count() or 1) // args.workers)
    stage_args = dict(
        model=model, keep_last=args.keep_last, max_tokens=args.max_tokens, n_threads=threads, fmt=args.format
    )
    progress(
        f"batch: {len(todo) + len(skipped)} files, {len(skipped)} skipped (output newer than input), "
        f"{len(todo)} to compress{' on Ray, ' + str(args.workers) + ' workers' if args.ray else ''}"
    )
    start = time.perf_counter()
    done = failed = 0
    outcomes = run_ray(todo, stage_args, args.workers) if args.ray else run_local(todo, stage_args)
    with tqdm(total=len(todo), unit="file", file=sys.stderr, disable=not todo) as bar:
        for outcome in outcomes:
            if outcome.error:
                failed += 1
                bar.write(f"offline-compress: batch: {outcome.error}", file=sys.stderr)
            else:
                done += 1
            bar.update(1)
    elapsed = time.perf_counter() - start
    rate = f"{done / elapsed * 60:.1f} files/min" if done and elapsed > 0 else "no files compressed"
    progress(f"batch: {done} compressed, {len(skipped)} skipped, {failed} failed in {elapsed:.1f} s ({rate})")
    return 2 if failed else 0


def add_parsers(subparsers: Any) -> None:
    p = subparsers.add_parser("batch", help="compress many history files into DIR/<name>.summary.json (resumable)")
    p.add_argument("inputs", nargs="+", help="history files, or folders to walk for them")
    p.add_argument("--out", required=True, help="folder for the <name>.summary.json outputs")
    p.add_argument("--format", default="auto", help="input format (as for compress; default auto)")
    p.add_argument(
        "--model",
        help="add a model draft: 'default' (the embedded Gemma), a manifest name or a .gguf path "
        "(default: none, extractive)",
    )
    p.add_argument("--no-model", action="store_true", help="extractive only (the default; kept for scripts)")
    p.add_argument("--keep-last", type=int, default=5, help="messages kept out of each summary (default 5)")
    p.add_argument("--max-tokens", type=int, default=2048, help="output token budget of the model (default 2048)")
    p.add_argument(
        "--threads",
        type=int,
        help="llama.cpp threads per worker (default: the cores available, shared among --workers)",
    )
    p.add_argument("--ray", action="store_true", help="run on Ray Data (a local Ray unless one is initialised)")
    p.add_argument("--workers", type=int, default=1, help="Ray workers, each with its own model (default 1)")
    p.set_defaults(func=cmd_batch)
