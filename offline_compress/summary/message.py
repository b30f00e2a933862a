"""The summary message: how a ``CompressedContext`` stands in a history and is found there again.

A system (or user) message whose text starts with ``SUMMARY_PREFIX`` and holds the summary after it, as canonical
JSON on one line or as the Markdown rendering (``render.py``). ``find_previous_summary`` is how a later compaction
finds the summary it merges: a marker inside tool output is never believed (a planted fake)."""

from __future__ import annotations

from collections.abc import Sequence

from ..history.conventions import is_tool_output
from ..history.messages import Message
from . import schema as S
from .render import Render, parse_body, render_body

SUMMARY_PREFIX = "[CONTEXT_SUMMARY]\n"


def summary_message(context: S.CompressedContext, note: str = "", render: Render = "json") -> dict[str, str]:
    """The system message that stands for the compressed part of a history: the marker, the summary (canonical
    JSON on one line, or Markdown closed by its end marker: ``render.py``), and an optional note for the agent
    on the lines after it (e.g. how to recall what was archived)."""
    return {"role": "system", "content": SUMMARY_PREFIX + render_body(context, render) + (f"\n{note}" if note else "")}


def parse_summary_message(message: Message) -> S.CompressedContext | None:
    """The summary of one of our summary messages: a system, developer or user message that starts with the
    marker and holds a valid summary after it (either rendering); else None."""
    if message.role not in ("system", "developer", "user") or not message.text.startswith(SUMMARY_PREFIX):
        return None
    return parse_body(message.text[len(SUMMARY_PREFIX) :])


def is_summary_message(message: Message) -> bool:
    return parse_summary_message(message) is not None


def find_previous_summary(messages: Sequence[Message], start: int = 0) -> tuple[S.CompressedContext | None, int | None]:
    """The last summary message of ours at or after ``start`` (anywhere in the history, not only first):
    (that summary, its index), else (None, None). A marker in tool output (a ``tool`` message, or a user message
    that answers an agent's action) is text, never a summary: a planted fake is not believed."""
    for i in range(len(messages) - 1, start - 1, -1):
        if messages[i].role == "user" and is_tool_output(messages, i):
            continue
        summary = parse_summary_message(messages[i])
        if summary is not None:
            return summary, i
    return None, None
