"""``offline-compress contradictions``: each history's actions checked against its constraints."""

from __future__ import annotations

import argparse
from typing import Any

from ..contradictions import count_contradictions
from ..errors import OfflineCompressError, one_line
from . import emit, fail


def cmd_contradictions(args: argparse.Namespace) -> int:
    from ..formats import load_history

    status, documents = 0, []
    for path in args.files:
        try:
            report = count_contradictions(load_history(path, args.format))
        except (OfflineCompressError, ValueError) as err:  # one line for this file; the others are still checked
            status = fail(one_line(str(err)))
            continue
        contradictions = [c.model_dump(mode="json") for c in report.contradictions]
        document = {"file": path, "contradictions": contradictions, "unchecked": report.unchecked}
        if args.json:
            documents.append(document)
        else:
            emit(document, None)
    if args.json:
        emit(documents, None, indent=2)
    return status


def add_parsers(subparsers: Any) -> None:
    """Register ``contradictions`` on the CLI's subparsers (``func`` is set)."""
    p = subparsers.add_parser(
        "contradictions",
        help="actions that break the user's constraints (one JSON object per file)",
        description="Check each history's actions against its constraints. Prints one JSON line per file "
        "({file, contradictions, unchecked}); --json prints one indented JSON array instead.",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="history files (any supported format; - for stdin)")
    p.add_argument(
        "--format", default="auto", help="auto (default), openai, mini-swe-agent, swe-agent, openhands, aider"
    )
    p.add_argument("--json", action="store_true", help="one indented JSON array of all files instead of JSON lines")
    p.set_defaults(func=cmd_contradictions)
