"""The compacted region rendered for a capable model to read (the written-state mode), and split into parts that
fit its window.

Each message is a block: a ``### [i] role`` heading, its text, its tool calls (``-> name`` and the arguments as
``key: value`` lines), with tool output marked as such (a user message that answers a call is output, not a
person). Long texts are cut to their first and last lines (``cut_lines``): the model needs what happened, and what
must stay exact comes from the extractor anyway. When the blocks do not fit the room, they are split into
consecutive parts, each within it; a block over the room alone is cut harder. Tokens are counted by the backend,
the whole region once and each part to check it (a server counts over HTTP: few calls, not one per message).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from ..history.conventions import is_tool_output
from ..history.messages import Message
from .pack import clip

OUTPUT_LINES = (30, 10)  # a tool output's first and last lines kept
TEXT_LINES = (60, 20)  # the agent's and the people's texts: longer, they are what the model reads for judgement
ARGUMENT_LINES = (20, 5)  # a file written through a call
LINE_CHARS = 400


def cut_lines(text: str, head: int, tail: int) -> str:
    """``text`` with its middle lines out (a marker says how many) and each line cut to ``LINE_CHARS``."""
    lines = [clip(ln, LINE_CHARS) for ln in text.rstrip().split("\n")]
    if len(lines) > head + tail + 1:
        lines = [*lines[:head], f"[… {len(lines) - head - tail} lines cut …]", *lines[len(lines) - tail :]]
    return "\n".join(lines)


def _arguments(raw: str) -> str:
    """A call's arguments as a person reads them: ``key: value`` lines (a long value cut), else the raw text."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return cut_lines(raw, *ARGUMENT_LINES)
    if not isinstance(value, dict):
        return cut_lines(json.dumps(value, ensure_ascii=False), *ARGUMENT_LINES)
    out = []
    for key, item in value.items():
        text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
        body = cut_lines(text, *ARGUMENT_LINES)
        out.append(f"{key}: {body}" if "\n" not in body else f"{key}:\n{body}")
    return "\n".join(out)


def blocks(messages: Sequence[Message], numbers: Sequence[int]) -> list[str]:
    """One block of text per message, headed by its number (``numbers``: their indices in the history)."""
    out = []
    for k, m in enumerate(messages):
        output = is_tool_output(messages, k)
        role = "tool output" if output else m.role
        head = f"### [{numbers[k]}] {role}"
        head += f" (result of {m.tool_call_id})" if m.tool_call_id else ""
        parts = [head]
        if m.text.strip():
            parts.append(cut_lines(m.text, *(OUTPUT_LINES if output else TEXT_LINES)))
        for c in m.tool_calls or ():
            args = _arguments(c.function.arguments)
            parts.append(f"-> {c.function.name}" + (f" ({c.id})" if c.id else "") + (f"\n{args}" if args else ""))
        out.append("\n".join(parts) + "\n")
    return out


def _cut_to(block: str, room: int, count: Callable[[str], int]) -> str:
    """A block over the room alone: its characters halved until it fits (the heading stays)."""
    text = block
    while count(text) > room and len(text) > 200:
        keep = len(text) // 2
        text = text[: keep // 2] + "\n[… cut to fit the window …]\n" + text[len(text) - keep // 2 :]
    return text


def split(parts: list[str], room: int, count: Callable[[str], int]) -> list[str]:
    """The blocks joined into consecutive parts of at most ``room`` tokens each (in the backend's tokens)."""
    whole = "".join(parts)
    total = count(whole)
    if total <= room:
        return [whole]
    per_char = total / max(1, len(whole))
    out: list[str] = []
    pending: list[str] = []
    size = 0.0
    for block in parts:
        estimate = len(block) * per_char
        if pending and size + estimate > room * 0.9:  # estimated: checked below
            out.append("".join(pending))
            pending, size = [], 0.0
        if estimate > room * 0.9:
            block = _cut_to(block, int(room * 0.9), count)
            estimate = count(block)
        pending.append(block)
        size += estimate
    if pending:
        out.append("".join(pending))
    return [piece for part in out for piece in _checked(part, room, count)]


def _checked(part: str, room: int, count: Callable[[str], int]) -> list[str]:
    """``part`` as it is when it fits, else halved at a block boundary (and so on)."""
    if count(part) <= room:
        return [part]
    cut = part.rfind("\n### [", 0, len(part) // 2 + 1)
    if cut <= 0:
        cut = part.find("\n### [", len(part) // 2)
    if cut <= 0:
        return [_cut_to(part, room, count)]
    return _checked(part[: cut + 1], room, count) + _checked(part[cut + 1 :], room, count)
