"""Child process for tests/test_archive.py: a caller that compacts a real history through the hook (and can be
told to stop at a chosen point, to be killed there), or a writer hammering one archive at the same time as
another process.

    archive_child.py compact FIXTURE DB STATE [POINT]
        The caller saves its history to STATE, compacts it (CompactionHook, extractive compressor, session
        "crash"), then saves the new history to STATE. POINT, where it prints "paused" and waits to be killed:
          before            record_compaction is about to run
          sql:PREFIX:N      the N-th SQL statement starting with PREFIX inside record_compaction is about to run
          returned          record_compaction returned (committed); the hook has not returned yet
          saved             the new history is saved
    archive_child.py write DB SESSION LABEL COUNT GO
        Once the file GO exists, record COUNT compactions of a 20-message history (its text names LABEL) in
        SESSION; print "done".
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from offline_compress.archive import store as archive_module  # noqa: E402
from offline_compress.archive.store import Archive  # noqa: E402
from offline_compress.cli import write_atomic  # noqa: E402
from offline_compress.hook.config import HookConfig

MESSAGES_PER_WRITE = 20


def pause() -> None:
    print("paused", flush=True)
    while True:
        time.sleep(60)


def compact(fixture: str, db: str, state: str, point: str = "") -> None:
    from offline_compress import CompactionHook, Compressor
    from offline_compress.formats import load_history

    history = [m.to_openai() for m in load_history(fixture)]
    write_atomic(Path(state), json.dumps(history, ensure_ascii=False))
    recording = False
    original = Archive.record_compaction

    def record(self, *args, **kwargs):
        nonlocal recording
        if point == "before":
            pause()
        recording = True
        number = original(self, *args, **kwargs)
        recording = False
        if point == "returned":
            pause()
        return number

    Archive.record_compaction = record
    if point.startswith("sql:"):
        _, prefix, nth = point.split(":")
        seen = 0
        connect = sqlite3.connect

        def traced(*args, **kwargs):
            conn = connect(*args, **kwargs)

            def trace(statement: str) -> None:
                nonlocal seen
                if recording and statement.startswith(prefix):
                    seen += 1
                    if seen == int(nth):
                        pause()

            conn.set_trace_callback(trace)
            return conn

        archive_module.sqlite3.connect = traced  # type: ignore[attr-defined]

    hook = CompactionHook(10_000, HookConfig(session="crash"), archive_path=db, compressor=Compressor(None))
    new = hook.compact(history)
    write_atomic(Path(state), json.dumps(new, ensure_ascii=False))
    if point == "saved":
        pause()
    print("done", flush=True)


def write(db: str, session: str, label: str, count: int, go: str) -> None:
    archive = Archive(db)
    while not Path(go).exists():
        time.sleep(0.005)
    for n in range(count):
        history = [
            {"role": "user", "content": f"write {n} message {i} marker{label}"} for i in range(MESSAGES_PER_WRITE)
        ]
        archive.record_compaction(
            session, history, head=1, cut=MESSAGES_PER_WRITE - 2, reason="test", summary_json="{}"
        )
    print("done", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "compact":
        compact(*sys.argv[2:])
    else:
        write(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6])
