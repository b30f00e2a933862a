"""``recall``, ``show``, ``restore`` and ``archive export|import``: the archive from the command line."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from ..archive.recall import format_hits
from ..archive.store import Archive, ArchiveError, CompactionRecord
from ..files import write_output
from . import emit, progress


def _show_text(records: Sequence[CompactionRecord]) -> str:
    blocks = []
    for r in records:
        tokens = (
            f"{r.tokens_before} -> {r.tokens_after} tokens" if r.tokens_before is not None else "tokens not recorded"
        )
        kept = f"of {r.history} replaced" if r.history is not None else "replaced (imported; not restorable)"
        blocks.append(
            f"session {r.session}  compaction {r.compaction}  {r.created_at}  {r.reason}  {tokens}  "
            f"messages {r.head}..{r.cut - 1} {kept}\n{r.summary}"
        )
    return "\n\n".join(blocks) or "no compactions"


def cmd_recall(args: argparse.Namespace) -> int:
    if args.k < 1:
        raise ValueError("--k must be at least 1")
    with Archive(args.archive, create=False) as archive:
        hits = archive.recall(args.query, k=args.k, session=args.session)
    emit([h.model_dump() for h in hits] if args.json else format_hits(hits, args.query), None, indent=1)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    with Archive(args.archive, create=False) as archive:
        if args.session is not None and args.session not in archive.sessions():
            raise ArchiveError(f"{archive.path}: no session {args.session!r}")
        records = archive.compactions(args.session)
    if args.json:
        emit([{**r.model_dump(), "summary": json.loads(r.summary)} for r in records], None, indent=1)
    else:
        emit(_show_text(records), None)
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    with Archive(args.archive, create=False) as archive:
        history = archive.restore(args.compaction, session=args.session)
    emit(history, args.output, indent=1)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    with Archive(args.archive, create=False) as archive:
        lines = list(archive.export_jsonl(args.session))
    write_output("".join(line + "\n" for line in lines), args.output)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    if not Path(args.jsonl).is_file():
        raise ArchiveError(f"{args.jsonl}: no such file")
    with Archive(args.archive) as archive:
        session = archive.import_jsonl(args.jsonl, session=args.session)
        count = len(archive.compactions(session))
    progress(f"{args.jsonl}: {count} compactions in session {session} of {archive.path}")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """``recall``, ``show``, ``restore`` and ``archive export|import``."""
    path_help = "the archive database (a .jsonl path: the .sqlite3 beside it, importing the JSONL once)"
    session_help = "only this session (needed when several sessions hold what is asked for)"

    p = sub.add_parser("recall", help="search the archived messages (BM25), redacted snippets")
    p.add_argument("archive", help=path_help)
    p.add_argument("query", help="words to look for (any text; FTS syntax is not interpreted)")
    p.add_argument("--k", type=int, default=5, help="how many messages (default 5)")
    p.add_argument("--session", help=session_help)
    p.add_argument("--json", action="store_true", help="the hits as JSON")
    p.set_defaults(func=cmd_recall)

    p = sub.add_parser("show", help="list the compactions of an archive: when, why, tokens, the summary")
    p.add_argument("archive", help=path_help)
    p.add_argument("--session", help=session_help)
    p.add_argument("--json", action="store_true", help="as JSON")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser(
        "restore",
        help="the full history as it was before a compaction (undo), as a JSON list",
        description="The full history as it was given to a compaction (undo), as a JSON list: exactly what "
        "Archive.restore returns. UTF-8, but for a lone surrogate (text cut inside an emoji, as real logs "
        "hold), which is written as its JSON escape (\\ud83d), as json.dumps writes it with ensure_ascii.",
    )
    p.add_argument("archive", help=path_help)
    p.add_argument("--compaction", type=int, required=True, help="its number (see show)")
    p.add_argument("--session", help=session_help)
    p.add_argument("-o", "--output", help="write here (atomically) instead of stdout")
    p.set_defaults(func=cmd_restore)

    p = sub.add_parser("archive", help="move an archive in or out of the JSONL format")
    verbs = p.add_subparsers(dest="verb", required=True)
    q = verbs.add_parser(
        "export",
        help="the replaced messages and summaries as JSONL",
        description="The replaced messages and summaries as JSONL (what archive import reads): exactly what "
        "Archive.export_jsonl gives. UTF-8, but for a lone surrogate (text cut inside an emoji), which is written "
        "as its JSON escape (\\ud83d), as json.dumps writes it with ensure_ascii.",
    )
    q.add_argument("archive", help=path_help)
    q.add_argument("--session", help="the session to export (needed when there are several)")
    q.add_argument("-o", "--output", help="write here (atomically) instead of stdout")
    q.set_defaults(func=cmd_export)
    q = verbs.add_parser("import", help="import a JSONL archive as one session")
    q.add_argument("jsonl", help="the JSONL archive")
    q.add_argument("archive", help="the database to import into (created when missing)")
    q.add_argument("--session", help="session id (default jsonl-<sha256 prefix>)")
    q.set_defaults(func=cmd_import)
