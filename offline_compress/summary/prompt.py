"""The compressor's prompt: a fixed prefix (rules and one worked example, evaluated once and cached) and a
digest of the history (task, steps with outcomes, the agent's latest notes), condensed to a token budget.

The model never sees the raw history: a 20-50k-token trajectory would take minutes of prompt processing on a
laptop CPU, and what it needs to phrase a narrative is in the digest. Exact facts are extracted by code.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ..extract.facts import Facts
from ..history.messages import Message
from ..secrets.redact import redact

RULES = """You summarise the work log of a software agent so that it can continue without the full log.
Rules:
- Keep user constraints word for word (they are copied separately; do not restate them).
- Record decisions (with their rationale) and failed attempts (with why they failed) separately.
- Describe tool calls as what / where / result.
- Tell the last turns as a short narrative.
- Invent nothing: write only what the log says. Leave a list empty when the log says nothing for it."""

INSTRUCT_OPEN = "<start_of_turn>user\n"
INSTRUCT_CLOSE = "<end_of_turn>\n<start_of_turn>model\n"

_CODE_BLOCK = re.compile(r"```.*?(```|$)", re.S)


def fixed_prefix(instruct: bool) -> str:
    """The part of the prompt that never changes; its KV cache is computed once per loaded model."""
    # No worked example: the 270M base model copied an example's content verbatim instead of reading the log.
    body = f"{RULES}\n\n## Log to summarise\n"
    return INSTRUCT_OPEN + body if instruct else body


def closing(instruct: bool) -> str:
    tail = "\n### Summary JSON\n"
    return tail + INSTRUCT_CLOSE if instruct else tail


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def step_lines(facts: Facts) -> list[str]:
    lines = []
    for n, event in enumerate(facts.tool_events, start=1):
        # Redact before cutting: a key cut at the limit no longer has a shape any detector knows.
        command = _one_line(redact(event.command or event.target), 140)
        line = f"{n}. {redact(event.tool)} `{command}` -> {event.outcome or 'no result'}"
        if event.outcome in ("error", "partial") and event.error_line:
            line += f": {_one_line(redact(event.error_line), 140)}"
        lines.append(line)
    return lines


def assistant_notes(messages: Sequence[Message], count: int = 3, limit: int = 400) -> list[str]:
    """The latest assistant texts without their code blocks (the commands are already in the steps)."""
    notes = []
    for message in reversed(messages):
        if message.role != "assistant":
            continue
        text = _one_line(redact(_CODE_BLOCK.sub(" ", message.text)), limit)
        if text:
            notes.append(text)
        if len(notes) == count:
            break
    return list(reversed(notes))


def digest(
    messages: Sequence[Message],
    facts: Facts,
    *,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    previous_narrative: str = "",
    task: str | None = None,
) -> str:
    """Task, steps and notes, trimmed to ``budget_tokens``: the oldest steps go first (the newest matter most
    for a narrative of the recent turns), then the task statement shrinks."""
    task = _one_line(redact(facts.task if task is None else task), 900)
    steps = step_lines(facts)
    notes = assistant_notes(messages)

    def render(task_text: str, kept: list[str], omitted: int) -> str:
        parts = [f"### Task\n{task_text or '(not stated)'}\n"]
        if previous_narrative:
            parts.append(f"### Earlier summary\n{_one_line(redact(previous_narrative), 600)}\n")
        step_text = "\n".join(kept) if kept else "(no tool calls)"
        if omitted:
            step_text = f"({omitted} earlier steps omitted)\n" + step_text
        parts.append(f"### Steps\n{step_text}\n")
        if notes:
            parts.append("### Latest notes of the agent\n" + "\n".join(notes) + "\n")
        return "\n".join(parts)

    kept = steps
    text = render(task, kept, 0)
    # Halve the kept steps until the digest fits: a logarithmic number of tokenizer calls.
    while count_tokens(text) > budget_tokens and kept:
        kept = kept[len(kept) // 2 :] if len(kept) > 1 else []
        text = render(task, kept, len(steps) - len(kept))
    limit = len(task)
    while count_tokens(text) > budget_tokens and limit > 80:
        limit //= 2
        text = render(_one_line(task, limit), kept, len(steps) - len(kept))
    return text
