"""Append-only JSONL archive of the messages a compaction replaced, written and fsync'd before the new
history is handed back, so nothing the agent saw is ever lost."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def archive_messages(
    path: str | Path,
    messages: Sequence[Mapping[str, Any] | Any],
    *,
    compaction: int,
    first_index: int = 0,
    summary_json: str | None = None,
) -> int:
    """Append one line per message ``{"compaction", "index", "message"}`` (and one ``{"compaction",
    "summary"}`` line); returns the number of bytes written. One write, then fsync of file (and of the folder
    when the file is new), so a crash leaves either nothing or whole lines."""
    path = Path(path)
    lines = []
    for offset, message in enumerate(messages):
        raw = message.to_openai() if hasattr(message, "to_openai") else dict(message)
        lines.append(json.dumps({"compaction": compaction, "index": first_index + offset, "message": raw},
                                ensure_ascii=False, default=str))
    if summary_json is not None:
        lines.append(json.dumps({"compaction": compaction, "summary": json.loads(summary_json)}, ensure_ascii=False))
    data = ("\n".join(lines) + "\n").encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    is_new = not path.exists()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
        os.fsync(fd)
    finally:
        os.close(fd)
    if is_new:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return len(data)


def read_archive(path: str | Path) -> list[dict[str, Any]]:
    """All records of an archive, in order."""
    with Path(path).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
