"""The plan of a compaction: which messages a summary replaces, and the earlier summary it merges.

``plan_compaction`` is the one place that decides it, for the hook, the compressor and every adapter:

    [0, head)        kept verbatim before the summary (the system prompt and the task, by default)
    [head, cut)      replaced by the summary; an earlier summary of ours in there (``previous_at``) is merged
    [cut, n)         kept verbatim after it (the last ``keep_last`` messages and the tool results they need;
                     fewer when they would leave the summary too little room, ``kept_tokens``)

The cut never separates an assistant tool call from its results (``history.cut``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..history.conventions import is_tool_output
from ..history.cut import cut_index, head_end
from ..history.messages import Message
from .message import find_previous_summary, is_summary_message
from .schema import CompressedContext

DEFAULT_KEEP_LAST = 5


@dataclass(frozen=True)
class Plan:
    """``[head, cut)`` is summarised; ``previous`` is the summary of ours found there (at ``previous_at``)."""

    head: int
    cut: int
    previous: CompressedContext | None = None
    previous_at: int | None = None

    @property
    def region(self) -> list[int]:
        """Indices of the messages the summary stands for (the previous summary is merged, not summarised)."""
        return [i for i in range(self.head, self.cut) if i != self.previous_at]


def plan_compaction(
    messages: Sequence[Message],
    keep_first: int | None = None,
    keep_last: int = DEFAULT_KEEP_LAST,
    *,
    counts: Sequence[int] | None = None,
    kept_tokens: int | None = None,
    strict_head: bool = False,
) -> Plan:
    """The plan for ``messages``. ``keep_first``: ``None`` keeps the leading system/developer messages and the
    first user message (the task); an int keeps that many first messages; 0 summarises from the start. The head
    stops before an earlier summary of ours, which is replaced (merged), never kept.

    ``kept_tokens`` (with ``counts``, the tokens of each message): the head and the recent messages together hold
    at most this many, as far as moving the cut allows: while they hold more, the oldest of the last
    ``keep_last`` messages are summarised too, down to the last one and the call it answers, and never past a
    user's own turn (it stays verbatim). The room this leaves is the summary's (``CompactionHook.summary_room``).
    ``strict_head``: an int ``keep_first`` is kept whole even when an earlier summary of ours stands in it (an
    adapter whose framework pins its first events: that summary stays; a later one is merged)."""
    head = head_end(messages, keep_first, is_summary=None if strict_head else is_summary_message)
    cut = cut_index(messages, keep_last)
    if counts is not None and kept_tokens is not None:
        if len(counts) != len(messages):
            raise ValueError(f"counts has {len(counts)} entries for {len(messages)} messages")
        bound, keep = kept_tokens - sum(counts[:head]), keep_last
        while keep > 1 and sum(counts[cut:]) > bound:
            keep -= 1
            later = cut_index(messages, keep)
            if any(messages[i].role == "user" and not is_tool_output(messages, i) for i in range(cut, later)):
                break
            cut = max(cut, later)
    previous, at = find_previous_summary(messages[:cut], head) if cut > head else (None, None)
    return Plan(head=head, cut=cut, previous=previous, previous_at=at)


__all__ = ["DEFAULT_KEEP_LAST", "Plan", "plan_compaction"]
