"""The archive of replaced histories: a SQLite store (``store``: every compaction's messages before they were
replaced, exact restore, full-text search) and the ``recall`` tool an agent can be given to read them back."""

from __future__ import annotations

from .recall import RECALL_NOTE, recall_tool
from .store import Archive, ArchiveError, CompactionRecord, RecallHit, database_path

__all__ = ["RECALL_NOTE", "Archive", "ArchiveError", "CompactionRecord", "RecallHit", "database_path", "recall_tool"]
