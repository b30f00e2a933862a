"""Where to cut a history into (to compress | keep): the last ``keep_last`` messages stay, and the cut never
separates an assistant tool call from its results: it moves earlier instead.

Calls and results are matched by id (``call_spans``), not only by "the next message is tool output": a Responses
history lists parallel calls as separate items (``call A, call B, result A, result B``), where a cut between the
two calls would leave result A after the cut and its call before it."""

from __future__ import annotations

from collections.abc import Sequence

from .conventions import is_harness_context, is_tool_output
from .messages import Message


def call_spans(messages: Sequence[Message]) -> list[tuple[int, int]]:
    """(first, last) message index of each tool call and a result answering it, matched by id: the call
    (``tool_calls[].id``) and a ``tool`` message with that ``tool_call_id``, in either order (a result before
    its call is read as a pair too). An id used again after its result pairs with its latest call; a result
    whose id names no call makes no span (``is_tool_output`` keeps it with the message before it)."""
    calls: dict[str, int] = {}  # id -> index of its latest call
    early: dict[str, int] = {}  # id -> index of a result seen before any call with that id
    spans: list[tuple[int, int]] = []
    for i, m in enumerate(messages):
        for call in m.tool_calls or ():
            if call.id:
                if call.id in early:
                    spans.append((early.pop(call.id), i))
                calls[call.id] = i
        if m.role == "tool" and m.tool_call_id:
            start = calls.get(m.tool_call_id)
            if start is None:
                early.setdefault(m.tool_call_id, i)
            elif start < i:
                spans.append((start, i))
    return spans


def _straddling(spans: Sequence[tuple[int, int]], boundary: int) -> list[tuple[int, int]]:
    """The spans a boundary before message ``boundary`` would split."""
    return [(a, b) for a, b in spans if a < boundary <= b]


def cut_index(messages: Sequence[Message], keep_last: int = 5) -> int:
    """Index of the first kept message; ``messages[:cut]`` are compressed. 0 means nothing can be compressed."""
    if keep_last < 0:
        raise ValueError(f"keep_last must be >= 0, got {keep_last}")
    cut = max(len(messages) - keep_last, 0)
    spans = call_spans(messages)
    while 0 < cut < len(messages):
        # A result at the cut belongs with the call before it: keep both. "Result" as the extractor defines it
        # (tool messages, and the harness output agents like mini-swe-agent send back as user messages).
        if is_tool_output(messages, cut):
            cut -= 1
            continue
        # A call before the cut answered after it (or the reverse): the cut moves to the earliest of them.
        split = _straddling(spans, cut)
        if not split:
            break
        cut = min(a for a, _ in split)
    return cut


def head_end(messages: Sequence[Message], keep_first: int | None = None, *, is_summary=None) -> int:
    """Index after the head that a compaction keeps verbatim before its summary.

    ``keep_first=None``: the leading system/developer messages and the first user message (the agent's
    instructions and its task, as OpenHands' condensers keep them), with any context a harness wrote as user
    messages before the task (``conventions.is_harness_context``: Codex's environment block); an int: that many
    first messages (extended over the results of a tool call it would otherwise separate). ``is_summary(message)``:
    the head stops before an earlier summary of ours, which is replaced, not kept."""
    if keep_first is not None and keep_first < 0:
        raise ValueError(f"keep_first must be >= 0 or None, got {keep_first}")
    stop = next((i for i, m in enumerate(messages) if is_summary(m)), len(messages)) if is_summary else len(messages)
    if keep_first is None:
        i = 0
        # the instructions, the context a harness writes before the task (Codex: its environment), the task
        while i < stop and (messages[i].role in ("system", "developer") or is_harness_context(messages[i])):
            i += 1
        if i < stop and messages[i].role == "user":
            i += 1
    else:
        i = min(keep_first, stop)
        spans = call_spans(messages)
        while 0 < i < stop:
            if is_tool_output(messages, i):
                i += 1
                continue
            split = _straddling(spans, i)  # a call in the head answered after it: the head takes the answers
            if not split:
                break
            i = min(max(b for _, b in split) + 1, stop)
    return i


def starts_with(messages: Sequence[Message], prefix: Sequence[Message]) -> bool:
    """``messages`` begins with the same messages as ``prefix`` (the same objects, or equal ones)."""
    if len(messages) < len(prefix):
        return False
    head, prefix = messages[: len(prefix)], prefix if isinstance(prefix, list) else list(prefix)
    return prefix == (head if isinstance(head, list) else list(head))  # in C: the same object, else ==, one by one


def splits_a_call(messages: Sequence[Message], head: int, cut: int) -> bool:
    """A tool message after ``cut`` answers a call made in ``[head, cut)`` (a result that came late), or the
    reverse, matched by id."""
    return any(head <= a < cut <= b for a, b in call_spans(messages))
