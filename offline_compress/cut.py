"""Where to cut a history into (to compress | keep): the last ``keep_last`` messages stay, and the cut never
separates an assistant tool call from its results: it moves earlier instead."""

from __future__ import annotations

from collections.abc import Sequence

from .messages import Message


def is_result_message(messages: Sequence[Message], i: int) -> bool:
    """A tool result: role ``tool``, or a mini-swe-agent style observation (a ``user`` message that starts with
    ``<returncode>``) right after an assistant message."""
    message = messages[i]
    if message.role == "tool":
        return True
    return (
        message.role == "user"
        and i > 0
        and messages[i - 1].role == "assistant"
        and message.text.lstrip().startswith("<returncode>")
    )


def cut_index(messages: Sequence[Message], keep_last: int = 5) -> int:
    """Index of the first kept message; ``messages[:cut]`` are compressed. 0 means nothing can be compressed."""
    if keep_last < 0:
        raise ValueError(f"keep_last must be >= 0, got {keep_last}")
    cut = max(len(messages) - keep_last, 0)
    # A result at the cut belongs with the call before it: keep both.
    while 0 < cut < len(messages) and is_result_message(messages, cut):
        cut -= 1
    return cut
