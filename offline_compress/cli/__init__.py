"""``offline-compress``: keep agent histories inside their context window, offline.

count / check / compress / batch / the archive / contradictions / download-model, on history files or stdin,
JSON out. (The evaluation and the benchmarks are ``python -m evaluation``, beside the
package in a checkout.)

Errors in the input, the model files or an output print one line to stderr and exit with status 2; nothing is
written. So does a bug of ours (``internal error: ...``); ``OFFLINE_COMPRESS_STRICT=1`` raises it instead, with its
traceback."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import OfflineCompressError, one_line, strict_mode
from ..files import check_output, write_output
from ..files import write_atomic as write_atomic  # tests/archive_child.py imports it from here


def progress(message: str) -> None:
    print(f"offline-compress: {message}", file=sys.stderr, flush=True)


def fail(problem: str) -> int:
    """One error line on stderr; returns the exit status of a command that failed."""
    print(f"offline-compress: error: {problem}", file=sys.stderr, flush=True)
    return 2


def emit(document: Any, out: str | None, indent: int | None = None) -> None:
    text = document if isinstance(document, str) else json.dumps(document, ensure_ascii=False, indent=indent)
    write_output(text + "\n", out)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="offline-compress", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    from . import archive, batch, contradictions, download, history_commands

    for commands in (history_commands, batch, archive, contradictions, download):  # the order of the help
        commands.add_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    context = getattr(args, "context", None)
    if isinstance(context, int) and context <= 0:
        return fail("--context must be a positive number of tokens")
    try:
        if getattr(args, "output", None):
            check_output(args.output)  # now, not after minutes of compressing
        return args.func(args)
    # OSError: the system refused (a model folder, a file the library writes); its message says which and why
    except (OfflineCompressError, ValueError, OSError) as err:
        return fail(one_line(str(err)))
    except RecursionError:  # only input can nest this deep; the readers turn what they meet into InputErrors
        return fail("the input is nested too deeply to process")
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # a bug of ours: one line that says so, not a traceback
        if strict_mode():
            raise
        what = f"{type(err).__name__}: {one_line(str(err))}" if str(err) else type(err).__name__
        print(
            f"offline-compress: internal error: {what} (rerun with OFFLINE_COMPRESS_STRICT=1 for the traceback)",
            file=sys.stderr,
        )
        return 2
