"""``python -m evaluation eval|bench|reliability|ab-replay|ab-fits|ab-contexts|ab|load-test|resume-qa``: the evaluation and the benchmarks, run from a
checkout (they read its fixtures, ``eval/`` and ``../shared``; none of it is in the wheel).

Errors in the input or the model files print one line to stderr and exit with status 2, as ``offline-compress``
does."""

from __future__ import annotations

import argparse
import sys

from offline_compress.errors import OfflineCompressError, one_line

from .ab_live import add_ab_parser
from .bench import add_bench_parser
from .bench_reliability import add_reliability_parser
from .contexts import add_ab_contexts_parser
from .fitting import add_ab_fits_parser
from .load import add_load_test_parser
from .replay import add_ab_replay_parser
from .resume_qa import add_resume_qa_parser
from .summary_eval import add_eval_parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m evaluation", description="offline_compress's evaluation and benchmarks"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    add_eval_parser(sub)
    add_bench_parser(sub)
    add_reliability_parser(sub)
    add_ab_replay_parser(sub)
    add_ab_fits_parser(sub)
    add_ab_contexts_parser(sub)
    add_ab_parser(sub)
    add_load_test_parser(sub)
    add_resume_qa_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (OfflineCompressError, ValueError) as err:
        print(f"python -m evaluation: error: {one_line(str(err))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
