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


def emit(document: Any, out: str | None) -> None:
    text = document if isinstance(document, str) else json.dumps(document, ensure_ascii=False)
    write_output(text + "\n", out)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="offline-compress", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    from .archive import add_archive_parsers
    from .batch import add_batch_parser
    from .contradictions import add_contradictions_parser
    from .download import add_download_parser
    from .history_commands import add_history_parsers

    add_history_parsers(sub)
    add_batch_parser(sub)
    add_archive_parsers(sub)
    add_contradictions_parser(sub)
    add_download_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    context = getattr(args, "context", None)
    if isinstance(context, int) and context <= 0:
        print("offline-compress: error: --context must be a positive number of tokens", file=sys.stderr)
        return 2
    try:
        if getattr(args, "output", None):
            check_output(args.output)  # now, not after minutes of compressing
        return args.func(args)
    except (OfflineCompressError, ValueError) as err:
        print(f"offline-compress: error: {one_line(str(err))}", file=sys.stderr)
        return 2
    except RecursionError:  # only input can nest this deep; the readers turn what they meet into InputErrors
        print("offline-compress: error: the input is nested too deeply to process", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except OSError as err:  # the system refused (a model folder, a file the library writes): says which and why
        print(f"offline-compress: error: {one_line(str(err))}", file=sys.stderr)
        return 2
    except Exception as err:  # a bug of ours: one line that says so, not a traceback
        if strict_mode():
            raise
        what = f"{type(err).__name__}: {one_line(str(err))}" if str(err) else type(err).__name__
        print(
            f"offline-compress: internal error: {what} (rerun with OFFLINE_COMPRESS_STRICT=1 for the traceback)",
            file=sys.stderr,
        )
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
