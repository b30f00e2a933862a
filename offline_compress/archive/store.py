"""The archive: every history a compaction replaced, in a SQLite database, so nothing the agent saw is lost.

One compaction writes, in one transaction committed before the hook hands back the new history: a row for the
compaction (when, why, tokens before/after, the summary, the head and cut indices) and a row per message of the
history it was given (position, role, whether it was replaced, and the message's JSON by content hash, stored
once however often it recurs: a system prompt kept at every compaction costs one copy). The replaced messages
(not our own summary messages) are indexed for full-text search (FTS5, BM25).

The file is created with mode 0600 before SQLite opens it (its -wal and -shm files take the same mode); WAL
journal, ``synchronous=FULL`` and a busy timeout let several agents and processes write one database at once.
A killed writer leaves the last committed state: a compaction is all there or not there.

A ``.jsonl`` path (the archive's earlier format) means the database beside it with the suffix ``.sqlite3``;
the JSONL file is imported into it once (``import_jsonl``) and never written again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel

from ..errors import InputError, OfflineCompressError
from ..history.messages import Message, parse_message, plain_json
from ..secrets.redact import redact

SCHEMA_VERSION = 1
APPLICATION_ID = 0x6F634172  # "ocAr": marks the file as ours (PRAGMA application_id)
BUSY_TIMEOUT_S = 30.0
SNIPPET_CHARS = 300
MAX_QUERY_TERMS = 32

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    source TEXT  -- 'jsonl sha256:<hex>' for an imported JSONL archive, else NULL
);
CREATE TABLE IF NOT EXISTS contents (  -- message JSON exactly as archived, once per distinct text
    hash TEXT PRIMARY KEY,  -- sha256 of the UTF-8 bytes
    json TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS compactions (
    session TEXT NOT NULL REFERENCES sessions(id),
    number INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    reason TEXT NOT NULL,
    tokens_before INTEGER,
    tokens_after INTEGER,
    summary TEXT NOT NULL,
    head INTEGER NOT NULL,  -- messages [0, head) were kept before the summary
    cut INTEGER NOT NULL,   -- messages [head, cut) were replaced by it
    history INTEGER,        -- messages in the history it was given, NULL when imported (only [head, cut) known)
    PRIMARY KEY (session, number)
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY,  -- also the rowid of its full-text row
    session TEXT NOT NULL,
    compaction INTEGER NOT NULL,
    idx INTEGER NOT NULL,    -- position in the history the compaction was given
    role TEXT NOT NULL,
    replaced INTEGER NOT NULL,
    hash TEXT NOT NULL REFERENCES contents(hash),
    UNIQUE (session, compaction, idx),
    FOREIGN KEY (session, compaction) REFERENCES compactions(session, number)
);
CREATE VIRTUAL TABLE IF NOT EXISTS message_text USING fts5(text, tokenize = 'unicode61 remove_diacritics 2');
"""

_TERM = re.compile(r"[^\W_]+")  # what FTS5's unicode61 tokenizer calls a token: letters and digits


class _Row(NamedTuple):
    """One message of a compaction, ready to insert."""

    index: int  # type: ignore[assignment]  # the field is named as the column; tuple.index is not used
    role: str
    replaced: bool
    json: str
    search: str | None  # the text to index, None when not searchable


class ArchiveError(OfflineCompressError, ValueError):
    """The archive cannot be opened, read or written; the message names the file and what went wrong."""


class CompactionRecord(BaseModel):
    """One compaction as the archive holds it."""

    session: str
    compaction: int
    created_at: str  # UTC, ISO 8601
    reason: str
    tokens_before: int | None
    tokens_after: int | None
    summary: str  # the CompressedContext JSON
    head: int
    cut: int
    history: int | None  # messages in the history before it; None: imported from JSONL, not restorable


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class RecallHit(BaseModel):
    """One archived message that matches a recall query; the snippet is redacted."""

    session: str
    compaction: int
    index: int  # position in the history before that compaction
    role: str
    snippet: str
    score: float  # BM25 relevance, higher is better


def default_archive_path() -> Path:
    """``$XDG_STATE_HOME/offline_compress/archive.sqlite3`` (default ``~/.local/state/...``): per user and
    outside the agent's working tree, where an agent's ``git add -A`` cannot pick it up."""
    state = os.environ.get("XDG_STATE_HOME", "")
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"  # the spec ignores relative
    return base / "offline_compress" / "archive.sqlite3"


def database_path(path: str | Path | None) -> Path:
    """The database a path names: ``None``: the default; ``x.jsonl``: ``x.sqlite3`` beside it; else the path."""
    if path is None:
        return default_archive_path()
    path = Path(path)
    return path.with_suffix(".sqlite3") if path.suffix == ".jsonl" else path


def message_json(message: Mapping[str, Any] | Any) -> str:
    """The JSON a message is archived as: a dict as given; a ``Message`` as ``to_openai()``; another pydantic
    model (an OpenAI SDK message) as its JSON dump. A value JSON cannot hold is stored as its ``str()``."""
    if hasattr(message, "to_openai"):
        raw = message.to_openai()
    elif hasattr(message, "model_dump"):
        raw = message.model_dump(mode="json", exclude_none=True)
    else:
        raw = dict(message)
    try:
        return json.dumps(raw, ensure_ascii=False, default=str)
    except (TypeError, ValueError):  # a tuple key, an int too long for decimal: as the message model reads them
        return json.dumps(plain_json(raw), ensure_ascii=False)


def search_text(message: Message) -> str:
    """What full-text search sees of a message: its text, then each tool call's name and arguments."""
    calls = [f"{c.function.name} {c.function.arguments}" for c in message.tool_calls or ()]
    return "\n".join([message.text, *calls])


def fts_query(query: str) -> str:
    """User text as an FTS5 query that cannot be a syntax error: every term quoted, any term may match (BM25
    ranks messages with more and rarer terms first), and the terms in order as a phrase, so a message holding
    the exact sequence (a path, an identifier) ranks above one holding its words apart. "" when no term."""
    terms = _TERM.findall(query)[:MAX_QUERY_TERMS]
    unique = list(dict.fromkeys(t.casefold() for t in terms))
    parts = [f'"{t}"' for t in unique]
    if len(terms) > 1:
        parts.insert(0, '"' + " ".join(terms) + '"')
    return " OR ".join(parts)


def snippet(text: str, query: str, width: int = SNIPPET_CHARS) -> str:
    """At most ``width`` characters of ``text`` (secrets redacted first, so none is cut past recognition;
    whitespace runs as one space) around the query: its exact occurrence if there is one, else the window
    holding the most distinct query terms."""
    flat = " ".join(redact(text).split())
    if len(flat) <= width:
        return flat
    phrase = " ".join(query.split())
    exact = re.search(re.escape(phrase), flat, re.I) if phrase else None
    if exact:
        a, b = exact.span()
    else:
        a, b = _densest(flat, _TERM.findall(query), width)
    start = a if b - a >= width else max(0, min(a - (width - (b - a)) // 2, len(flat) - width))
    out = flat[start : start + width]
    return ("…" if start > 0 else "") + out + ("…" if start + width < len(flat) else "")


def _densest(text: str, terms: Sequence[str], width: int) -> tuple[int, int]:
    """Span of the matches of ``terms`` (whole tokens, any case) that covers the most distinct terms within
    ``width`` characters; (0, 0) when none occurs."""
    hits = sorted(
        (m.start(), m.end(), t.casefold())
        for t in dict.fromkeys(terms)
        for m in re.finditer(rf"(?<![^\W_]){re.escape(t)}(?![^\W_])", text, re.I)
    )
    best, span, j = 0, (0, 0), 0
    for i, (a, _, _) in enumerate(hits):
        j = max(j, i)
        while j + 1 < len(hits) and hits[j + 1][1] - a <= width:
            j += 1
        found = len({h[2] for h in hits[i : j + 1]})
        if found > best:
            best, span = found, (a, hits[j][1])
    return span


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _create_private(path: Path) -> None:
    """Create the database file with mode 0600 (and its folder 0700) before SQLite opens it."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(FileExistsError):  # another process created it first
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


class Archive:
    """A SQLite archive of compactions. ``path``: the database (``None``: ``default_archive_path()``; a
    ``.jsonl`` path: the ``.sqlite3`` beside it, importing that JSONL once). ``create=False``: a missing
    archive is an error instead of a new file. Safe to share between threads; one per process and file."""

    def __init__(
        self, path: str | Path | None = None, *, create: bool = True, busy_timeout: float = BUSY_TIMEOUT_S
    ) -> None:
        given = Path(path) if path is not None else None
        self.path = database_path(path)
        legacy = given if given is not None and given.suffix == ".jsonl" and given.is_file() else None
        if not self.path.exists():
            if not create and legacy is None:
                raise ArchiveError(f"{given or self.path}: no archive there")
            try:
                _create_private(self.path)
            except OSError as err:
                raise ArchiveError(f"{self.path}: cannot create the archive ({err.strerror})") from None
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as err:
            raise ArchiveError(f"{self.path}: cannot open the archive ({err})") from None
        try:
            self._setup_retrying(busy_timeout)
        except sqlite3.DatabaseError as err:
            self._conn.close()
            raise ArchiveError(f"{self.path}: not an offline_compress archive ({err})") from None
        except BaseException:
            self._conn.close()
            raise
        if legacy is not None:
            self.import_jsonl(legacy)

    def _setup_retrying(self, busy_timeout: float) -> None:
        """``_setup``, again while another connection holds the lock. Switching a new file to WAL, and a lock
        upgrade that would deadlock, return "database is locked" at once without waiting for the busy timeout,
        so two hooks opening one new archive at the same moment would otherwise fail (seen under load)."""
        deadline = time.monotonic() + busy_timeout
        pause = 0.01
        while True:
            try:
                self._setup(busy_timeout)
                return
            except sqlite3.OperationalError as err:
                contended = "locked" in str(err) or "busy" in str(err)
                if not contended or time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.5)

    def _setup(self, busy_timeout: float) -> None:
        c = self._conn
        c.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        c.execute("PRAGMA journal_mode = WAL")
        c.execute("PRAGMA synchronous = FULL")
        c.execute("PRAGMA foreign_keys = ON")
        with self._transaction():
            version = c.execute("PRAGMA user_version").fetchone()[0]
            app = c.execute("PRAGMA application_id").fetchone()[0]
            tables = c.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0]
            if version == 0 and app == 0 and tables == 0:
                for statement in _SCHEMA.split(";"):  # not executescript: it would commit the transaction
                    if statement.strip():
                        c.execute(statement)
                c.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                c.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            elif app != APPLICATION_ID:
                raise ArchiveError(f"{self.path}: a SQLite database of another application, not an archive")
            elif version != SCHEMA_VERSION:
                raise ArchiveError(
                    f"{self.path}: archive schema version {version}; this version reads {SCHEMA_VERSION}"
                )

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` (the write lock up front, waiting up to the busy timeout) ... ``COMMIT``, or
        ``ROLLBACK`` on any exception."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---------------------------------------------------------------------------------------------- writing

    def record_compaction(
        self,
        session: str,
        history: Sequence[Mapping[str, Any] | Any],
        *,
        head: int,
        cut: int,
        reason: str,
        summary_json: str,
        tokens_before: int | None = None,
        tokens_after: int | None = None,
        shortened: Sequence[int] = (),
    ) -> int:
        """Archive one compaction of ``history`` (``history[head:cut]`` replaced by ``summary_json``) in one
        transaction, committed (and synced) when this returns; returns its number in ``session`` (1, 2, ...).
        ``shortened``: indices of kept messages the compaction cut to fit the window; they are searched like the
        replaced ones (``recall`` finds what the cut left out). Raises ``ArchiveError`` when it cannot be written,
        with nothing of it in the database."""
        n = len(history)
        if not 0 <= head <= cut <= n:
            raise ValueError(f"need 0 <= head <= cut <= {n}, got head={head}, cut={cut}")
        if any(not cut <= i < n for i in shortened):
            raise ValueError(f"shortened messages must be kept ones, in [{cut}, {n}): got {list(shortened)}")
        cut_ones = set(shortened)
        rows = [self._message_row(m, i, head <= i < cut, i in cut_ones) for i, m in enumerate(history)]
        try:
            with self._lock, self._transaction():
                number = self._next_number(session)
                row = (session, number, _now(), reason, tokens_before, tokens_after, summary_json, head, cut, n)
                self._conn.execute("INSERT INTO compactions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
                self._insert_messages(session, number, rows)
        except sqlite3.Error as err:
            raise ArchiveError(f"{self.path}: could not archive the compaction ({err}); nothing was written") from None
        return number

    def _message_row(
        self, message: Any, index: int, replaced: bool, shortened: bool = False, source: str = "<messages>"
    ) -> _Row:
        text = message_json(message)
        raw = json.loads(text)
        parsed = parse_message(raw, index=index, source=source)
        from ..summary.message import is_summary_message  # our own summaries are not searched: the new one holds them

        searchable = (replaced or shortened) and not is_summary_message(parsed)
        return _Row(index, parsed.role, replaced, text, search_text(parsed) if searchable else None)

    def _next_number(self, session: str, source: str | None = None) -> int:
        self._conn.execute("INSERT OR IGNORE INTO sessions VALUES (?, ?, ?)", (session, _now(), source))
        row = self._conn.execute("SELECT max(number) FROM compactions WHERE session = ?", (session,)).fetchone()
        return (row[0] or 0) + 1

    def _insert_messages(self, session: str, number: int, rows: Sequence[_Row]) -> None:
        c = self._conn
        for row in rows:
            # A lone surrogate (valid in JSON: a text cut inside a UTF-16 pair) cannot be stored as UTF-8: it is
            # kept as its JSON escape, which reads back as the same string.
            text = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", row.json)
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            c.execute("INSERT OR IGNORE INTO contents VALUES (?, ?)", (digest, text))
            rowid = c.execute(
                "INSERT INTO messages (session, compaction, idx, role, replaced, hash) VALUES (?, ?, ?, ?, ?, ?)",
                (session, number, row.index, row.role, int(row.replaced), digest),
            ).lastrowid
            if row.search is not None:
                c.execute(
                    "INSERT INTO message_text (rowid, text) VALUES (?, ?)",
                    (rowid, _LONE_SURROGATE.sub("\ufffd", row.search)),
                )

    # ---------------------------------------------------------------------------------------------- reading

    def sessions(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._conn.execute("SELECT id FROM sessions ORDER BY created_at, id")]

    def compactions(self, session: str | None = None) -> list[CompactionRecord]:
        """Every compaction (of ``session``), oldest first."""
        where, params = (" WHERE session = ?", (session,)) if session is not None else ("", ())
        sql = f"SELECT * FROM compactions{where} ORDER BY created_at, session, number"  # columns as the record's fields
        with self._lock:
            rows = self._conn.execute(sql, params).fetchall()
        return [CompactionRecord(**dict(zip(CompactionRecord.model_fields, r))) for r in rows]

    def _record(self, compaction: int, session: str | None) -> CompactionRecord:
        found = [r for r in self.compactions(session) if r.compaction == compaction]
        if not found:
            where = f"session {session!r}" if session is not None else "any session"
            raise ArchiveError(f"{self.path}: no compaction {compaction} in {where}")
        if len(found) > 1:
            names = ", ".join(r.session for r in found)
            raise ArchiveError(f"{self.path}: compaction {compaction} exists in several sessions ({names}): name one")
        return found[0]

    def _messages(self, record: CompactionRecord, replaced_only: bool) -> list[tuple[int, Any]]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT m.idx, c.json FROM messages m JOIN contents c ON c.hash = m.hash "
                "WHERE m.session = ? AND m.compaction = ?"
                + (" AND m.replaced" if replaced_only else "")
                + " ORDER BY m.idx",
                (record.session, record.compaction),
            ).fetchall()
        return [(i, json.loads(text)) for i, text in rows]

    def restore(self, compaction: int, session: str | None = None) -> list[Any]:
        """The history exactly as it was given to compaction ``compaction`` (of ``session``; may be left out when
        only one session has that number): the same messages, as JSON (a ``Message`` comes back as a dict)."""
        record = self._record(compaction, session)
        if record.history is None:
            raise ArchiveError(
                f"{self.path}: compaction {compaction} of session {record.session!r} was imported "
                "from JSONL, which holds only the replaced messages: it cannot be restored"
            )
        messages = self._messages(record, replaced_only=False)
        if [i for i, _ in messages] != list(range(record.history)):
            raise ArchiveError(f"{self.path}: compaction {compaction} of session {record.session!r} is incomplete")
        return [m for _, m in messages]

    def replaced(self, compaction: int, session: str | None = None) -> list[tuple[int, Any]]:
        """(index, message) of the messages compaction ``compaction`` replaced by its summary."""
        return self._messages(self._record(compaction, session), replaced_only=True)

    def recall(
        self, query: str, k: int = 5, session: str | None = None, *, snippet_chars: int = SNIPPET_CHARS
    ) -> list[RecallHit]:
        """The ``k`` archived messages (of ``session``) that best match ``query`` (BM25), best first, each with a
        redacted snippet around the match. Any text is a valid query; one without letters or digits finds
        nothing."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        match = fts_query(query)
        if not match:
            return []
        sql = (
            "SELECT m.session, m.compaction, m.idx, m.role, t.text, bm25(message_text) AS rank "
            "FROM message_text t JOIN messages m ON m.id = t.rowid WHERE message_text MATCH ?"
            + (" AND m.session = ?" if session is not None else "")
            + " ORDER BY rank, m.id LIMIT ?"
        )
        params = (match, session, k) if session is not None else (match, k)
        with self._lock:
            try:
                rows = self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as err:
                raise ArchiveError(f"{self.path}: recall failed ({err})") from None
        return [
            RecallHit(
                session=s, compaction=n, index=i, role=role, snippet=snippet(text, query, snippet_chars), score=-rank
            )
            for s, n, i, role, text, rank in rows
        ]

    # ---------------------------------------------------------------------------------------- JSONL in and out

    def import_jsonl(self, path: str | Path, session: str | None = None) -> str:
        """Import an archive of the earlier JSONL format (lines ``{"compaction", "index", "message"}`` and
        ``{"compaction", "summary"}``) as one session; returns its id (default ``jsonl-<sha256 prefix>``).
        Each run of message lines closed by a summary line (or by a change of compaction number) becomes one
        compaction, numbered 1, 2, ... in file order. A file imported before (same bytes) is not imported
        again: the id of its session is returned."""
        path = Path(path)
        try:
            data = path.read_bytes()
        except OSError as err:
            raise ArchiveError(f"{path}: cannot read ({err.strerror})") from None
        digest = hashlib.sha256(data).hexdigest()
        source = f"jsonl sha256:{digest}"
        with self._lock:
            known = self._conn.execute("SELECT id FROM sessions WHERE source = ?", (source,)).fetchone()
        if known:
            return known[0]
        session = session or f"jsonl-{digest[:12]}"
        groups = list(_jsonl_groups(data, str(path)))
        rows = [[self._message_row(m, i, True, source=str(path)) for i, m in messages] for messages, _ in groups]
        try:
            with self._lock, self._transaction():
                if self._conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session,)).fetchone():
                    raise ArchiveError(f"{self.path}: session {session!r} exists already")
                for (messages, summary), group_rows in zip(groups, rows):
                    number = self._next_number(session, source)
                    indices = [i for i, _ in messages]
                    head, cut = (min(indices), max(indices) + 1) if indices else (0, 0)
                    self._conn.execute(
                        "INSERT INTO compactions VALUES (?, ?, ?, ?, NULL, NULL, ?, ?, ?, NULL)",
                        (session, number, _now(), f"imported from {path.name}", summary, head, cut),
                    )
                    self._insert_messages(session, number, group_rows)
                self._next_number(session, source)  # an empty file still records its session
        except sqlite3.Error as err:
            raise ArchiveError(f"{self.path}: could not import {path} ({err}); nothing was written") from None
        return session

    def export_jsonl(self, session: str | None = None) -> Iterator[str]:
        """Lines (without newline) of the JSONL format ``import_jsonl`` reads: the replaced messages of each
        compaction, then its summary. ``session`` may be left out when the archive holds one."""
        sessions = self.sessions()
        if session is None:
            if len(sessions) > 1:
                raise ArchiveError(f"{self.path}: several sessions ({', '.join(sessions)}): name one")
            session = sessions[0] if sessions else None
        elif session not in sessions:
            raise ArchiveError(f"{self.path}: no session {session!r}")
        for record in self.compactions(session) if session is not None else []:
            for index, message in self._messages(record, replaced_only=True):
                yield json.dumps(
                    {"compaction": record.compaction, "index": index, "message": message}, ensure_ascii=False
                )
            yield json.dumps(
                {"compaction": record.compaction, "summary": json.loads(record.summary)}, ensure_ascii=False
            )


def _jsonl_groups(data: bytes, source: str) -> Iterator[tuple[list[tuple[int, Any]], str]]:
    """(messages as (index, message), summary JSON) per compaction of a JSONL archive, in file order."""
    from ..formats.openai import decode_text, parse_json

    messages: list[tuple[int, Any]] = []
    current: Any = None
    for number, line in enumerate(decode_text(data, source).splitlines(), 1):
        if not line.strip():
            continue
        record = parse_json(line, f"{source} (line {number})")
        if (
            not isinstance(record, dict)
            or "compaction" not in record
            or ("message" not in record and "summary" not in record)
        ):
            raise InputError(
                'expected {"compaction", "index", "message"} or {"compaction", "summary"}',
                source=source,
                position=f"line {number}",
            )
        if messages and record["compaction"] != current:
            yield messages, "{}"  # a run without its summary line
            messages = []
        current = record["compaction"]
        if "summary" in record:
            yield messages, json.dumps(record["summary"], ensure_ascii=False, separators=(",", ":"))
            messages, current = [], None
        elif not isinstance(record.get("index"), int) or not isinstance(record["message"], dict):
            raise InputError(
                "a message line needs an integer 'index' and an object 'message'",
                source=source,
                position=f"line {number}",
            )
        else:
            messages.append((record["index"], record["message"]))
    if messages:
        yield messages, "{}"
