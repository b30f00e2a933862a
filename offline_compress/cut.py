"""Where to cut a history into (to compress | keep): the last ``keep_last`` messages stay, and the cut never
separates an assistant tool call from its results: it moves earlier instead."""

from __future__ import annotations

from collections.abc import Sequence

from .extract import is_tool_output
from .messages import Message


def cut_index(messages: Sequence[Message], keep_last: int = 5) -> int:
    """Index of the first kept message; ``messages[:cut]`` are compressed. 0 means nothing can be compressed."""
    if keep_last < 0:
        raise ValueError(f"keep_last must be >= 0, got {keep_last}")
    cut = max(len(messages) - keep_last, 0)
    # A result at the cut belongs with the call before it: keep both. "Result" as the extractor defines it
    # (tool messages, and the harness output agents like mini-swe-agent send back as user messages).
    while 0 < cut < len(messages) and is_tool_output(messages, cut):
        cut -= 1
    return cut
