"""Where to cut a history into (to compress | keep): the last ``keep_last`` messages stay, and the cut never
separates an assistant tool call from its results: it moves earlier instead."""

from __future__ import annotations

from collections.abc import Sequence

from .conventions import is_tool_output
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


def head_end(messages: Sequence[Message], keep_first: int | None = None, *, is_summary=None) -> int:
    """Index after the head that a compaction keeps verbatim before its summary.

    ``keep_first=None``: the leading system/developer messages and the first user message (the agent's
    instructions and its task, as OpenHands' condensers keep them); an int: that many first messages (extended
    over the results of a tool call it would otherwise separate). ``is_summary(message)``: the head stops before
    an earlier summary of ours, which is replaced, not kept."""
    if keep_first is not None and keep_first < 0:
        raise ValueError(f"keep_first must be >= 0 or None, got {keep_first}")
    stop = len(messages)
    if is_summary is not None:
        stop = next((i for i, m in enumerate(messages) if is_summary(m)), len(messages))
    if keep_first is None:
        i = 0
        while i < stop and messages[i].role in ("system", "developer"):
            i += 1
        if i < stop and messages[i].role == "user":
            i += 1
    else:
        i = min(keep_first, stop)
        while 0 < i < stop and is_tool_output(messages, i):
            i += 1
    return i


def starts_with(messages: Sequence[Message], prefix: Sequence[Message]) -> bool:
    """``messages`` begins with the same messages as ``prefix`` (the same objects, or equal ones)."""
    if len(messages) < len(prefix):
        return False
    return all(a is b or a == b for a, b in zip(messages, prefix))


def splits_a_call(messages: Sequence[Message], head: int, cut: int) -> bool:
    """A tool message after ``cut`` answers a call made in ``[head, cut)`` (a result that came late)."""
    ids = {c.id for m in messages[head:cut] for c in m.tool_calls or () if c.id}
    return bool(ids) and any(m.role == "tool" and m.tool_call_id in ids for m in messages[cut:])
