"""What the library asks of a token counter (``counter.TokenCounter`` is the real one)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class CountsTokens(Protocol):
    """Exact token counts for one target: of a history as the target renders it, of each message's share of that
    rendering, and of plain texts (no BOS)."""

    def count(self, messages: Sequence[Any]) -> int: ...

    def message_counts(self, messages: Sequence[Any]) -> list[int]: ...

    def count_text(self, text: str) -> int: ...

    def count_texts(self, texts: Sequence[str]) -> list[int]: ...


class _TextsAsMessages:
    """A counter of the first protocol (``count`` and ``message_counts`` only, as adapters took it at first) with
    the text counts read through it: a text's tokens are those it adds as a user message's content."""

    def __init__(self, counter: Any) -> None:
        self.counter = counter
        self._empty = counter.count([{"role": "user", "content": ""}])

    def count(self, messages: Sequence[Any]) -> int:
        return int(self.counter.count(messages))

    def message_counts(self, messages: Sequence[Any]) -> list[int]:
        return list(self.counter.message_counts(messages))

    def count_text(self, text: str) -> int:
        return max(0, self.counter.count([{"role": "user", "content": text}]) - self._empty)

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        return [self.count_text(t) for t in texts]


def full_counter(counter: Any) -> CountsTokens:
    """``counter`` itself when it has the whole protocol; one of the first protocol (``count``, ``message_counts``)
    with text counts derived from it; else a ``TypeError`` that names what it lacks."""
    missing = [name for name in ("count", "message_counts") if not callable(getattr(counter, name, None))]
    if missing:
        raise TypeError(f"counter {type(counter).__name__} has no {' or '.join(missing)} method (CountsTokens)")
    if callable(getattr(counter, "count_text", None)) and callable(getattr(counter, "count_texts", None)):
        return counter
    return _TextsAsMessages(counter)
