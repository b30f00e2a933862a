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
