"""What an importer hands back besides the messages: the damaged input it skipped and what it left out on purpose.

An importer returns ``list[Message]`` when it read everything, or ``Imported`` when it skipped or left something
out. ``load_history_report`` gives both to the caller (the CLI prints a warning line for skipped input); the plain
``load_history`` logs them on the ``offline_compress.formats`` logger."""

from __future__ import annotations

from dataclasses import dataclass

from ..history.messages import Message


@dataclass(frozen=True)
class Imported:
    """The messages of a file, and what was not read into them."""

    messages: list[Message]
    skipped: tuple[str, ...] = ()  # damaged input skipped, each "line N: why" (or "record N: why")
    notes: tuple[str, ...] = ()  # what was left out on purpose, in words ("12 progress records: not model input")


@dataclass(frozen=True)
class LoadedHistory:
    """A history file read: its format, its messages, and what the importer skipped or left out."""

    format: str
    messages: list[Message]
    skipped: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


__all__ = ["Imported", "LoadedHistory"]
