"""``offline-compress contradictions``: each history's actions checked against its constraints."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..contradictions import ContradictionReport, count_contradictions
from ..errors import OfflineCompressError, one_line
from ..files import write_output


def _report_json(path: str, report: ContradictionReport) -> dict[str, Any]:
    return {
        "file": path,
        "contradictions": [c.model_dump(mode="json") for c in report.contradictions],
        "unchecked": report.unchecked,
    }


def cmd_contradictions(args: argparse.Namespace) -> int:
    from ..formats import load_history

    failed = False
    documents = []
    for path in args.files:
        try:
            messages = load_history(path, args.format)
            report = count_contradictions(messages)
        except (OfflineCompressError, ValueError) as err:
            print(f"offline-compress: error: {one_line(str(err))}", file=sys.stderr, flush=True)
            failed = True
            continue
        document = _report_json(path, report)
        if args.json:
            documents.append(document)
        else:
            write_output(json.dumps(document, ensure_ascii=False) + "\n", None)
    if args.json:
        write_output(json.dumps(documents, ensure_ascii=False, indent=2) + "\n", None)
    return 2 if failed else 0


def add_contradictions_parser(subparsers: Any) -> argparse.ArgumentParser:
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
    return p


__all__ = ["add_contradictions_parser", "cmd_contradictions"]
