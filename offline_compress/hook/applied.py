"""The compactions a hook has handed back, and what a later history owes them.

A history that starts with the messages a recent compaction replaced (two calls that raced, an awaited step that
was cancelled, a caller that kept its uncompacted list) gets that compaction again (``reapply``), never a second
summary of the same messages.

A compaction that had to cut recent messages to fit the window handed back cut copies; the agent's history holds
those copies from then on. When a later compaction summarises them, it reads the originals instead (``uncut``): a
cut fits one context, it does not forget (as the next compaction merges the summary as it was before a cut).

Pure: the hook keeps the list of ``Applied`` records, newest last."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..history.cut import starts_with
from ..history.messages import Message

log = logging.getLogger("offline_compress.hook")
KEPT = 8  # recent compactions a history is matched against


@dataclass(frozen=True)
class Applied:
    """A compaction the hook returned: its input's first ``cut`` messages, and what replaced ``[head, cut)``."""

    prefix: list[Message]
    head: int
    cut: int
    message: dict[str, Any]
    parsed_message: Message
    number: int
    patches: tuple[tuple[int, Message, Any, Message], ...] = ()  # recent messages cut: (index, original, new, parsed)


def reapply(applied: Sequence[Applied], originals: list[Any], parsed: list[Message]) -> tuple[list[Any], list[Message]]:
    """The history as the compactions it extends left it: each ``Applied`` whose input the history starts with
    replaces its ``[head, cut)`` by its summary and its cut recent messages by their copies (in order); the
    history unchanged when it extends none. Returns ``(originals, parsed)``."""
    for a in applied:
        if starts_with(parsed, a.prefix):
            log.debug(
                "history of %d messages extends the input of compaction %d: its summary is reused",
                len(parsed),
                a.number,
            )
            h, c = a.head, a.cut
            recent, recent_parsed = list(originals[c:]), list(parsed[c:])
            for i, original, new, new_parsed in a.patches:
                if i - c < len(recent) and recent_parsed[i - c] == original:
                    recent[i - c], recent_parsed[i - c] = new, new_parsed
            originals = [*originals[:h], a.message, *recent]
            parsed = [*parsed[:h], a.parsed_message, *recent_parsed]
    return originals, parsed


def _key(m: Message) -> tuple[str, str | None, str]:
    return (m.role, m.tool_call_id, m.text)


def uncut(applied: Sequence[Applied], parsed: Sequence[Message], region: Sequence[int]) -> list[Message]:
    """``parsed`` with each message of ``region`` that is a cut copy a compaction of ``applied`` handed back
    replaced by its original (the same messages otherwise)."""
    originals = {_key(new_parsed): original for a in applied for _, original, _, new_parsed in a.patches}
    if not originals:
        return list(parsed)
    out = list(parsed)
    for i in region:
        for _ in range(KEPT):  # a copy cut again at a later compaction: back to the first original
            original = originals.get(_key(out[i]))
            if original is None:
                break
            out[i] = original
    return out


__all__ = ["KEPT", "Applied", "reapply", "uncut"]
