"""Typed errors. Each one says what was wrong and where (file, message index, field)."""

from __future__ import annotations

import os

STRICT_ENV = "OFFLINE_COMPRESS_STRICT"


def strict_mode() -> bool:
    """``OFFLINE_COMPRESS_STRICT=1``: an internal error is raised (tests, development) instead of being logged and
    answered with the caller's history (the hook) or one line on stderr (the CLI)."""
    return os.environ.get(STRICT_ENV, "").strip().lower() not in ("", "0", "false", "no")


class OfflineCompressError(Exception):
    """Base class for every error this library raises on purpose."""


class InputError(OfflineCompressError, ValueError):
    """A history (file, stdin or list) that cannot be read as messages.

    ``source`` names the file (or ``<stdin>`` / ``<messages>``), ``index`` the message,
    ``field`` the offending key, ``position`` a byte/line position in a malformed file.
    """

    def __init__(
        self,
        problem: str,
        *,
        source: str | None = None,
        index: int | None = None,
        field: str | None = None,
        position: str | None = None,
    ) -> None:
        self.problem = problem
        self.source = source
        self.index = index
        self.field = field
        self.position = position
        at = (source, position, f"message {index}" if index is not None else "", f"field {field!r}" if field else "")
        where = ", ".join(part for part in at if part)
        super().__init__(f"{where}: {problem}" if where else problem)


class EmptyHistoryError(InputError):
    """There is nothing to compress (an empty list, or everything falls in the kept tail)."""


class ModelFileError(OfflineCompressError, FileNotFoundError):
    """The model file is missing, unreadable, or its sha256 does not match the manifest."""


class TokenizerError(OfflineCompressError):
    """The target tokenizer could not be built or loaded."""


class BackendError(OfflineCompressError, RuntimeError):
    """The inference backend (llama.cpp / Outlines) is missing or failed."""


def one_line(text: str) -> str:
    """``text`` with every character that is not printable (line breaks, form feeds, U+2028, control codes, lone
    surrogates from a file's JSON) written as its escape, so that an error quoting the input stays one line."""
    if text.isprintable():
        return text
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape", "backslashreplace").decode("ascii") for ch in text
    )
