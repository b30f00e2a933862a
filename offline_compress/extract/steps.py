"""The work log: for each tool call, what the agent said, ran and learnt, verbatim and short.

A summary that records only that ``cat django/forms/models.py`` succeeded loses what the agent learnt from it.
For each call of the compressed part this keeps, verbatim (every piece a substring of the history):

said
    The agent's own sentences in that message (outside code blocks) that name something in the code: a path,
    a dotted name, a snake_case / camelCase / _private identifier, or a `backticked` span. Its reasoning about
    what it found and what it does next, without the filler.
code
    The lines of code the agent wrote in that message outside its command (code it quotes from what it read,
    or proposes) that name something in the code.
ran
    The command (or the call's arguments), its first ``MAX_RUN_LINES`` lines.
saw
    The lines of the result that the agent itself referred to afterwards: a line naming something the agent
    names in a later message (up to the end of the history the caller gives, the messages kept after the
    summary included). The line that says why a call failed. A short result (a printed value) whole.

Pure and deterministic; redaction is the caller's (merge redacts every piece before it is cut).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from ..messages import Message
from .decisions import code_lines, prose_sentences
from .events import ToolEvent
from .outcomes import Outcome

MAX_SAID_SENTENCES = 12
MAX_CODE_LINES = 24
MAX_RUN_LINES = 40
MAX_SAW_LINES = 8
SHORT_RESULT_LINES = 3
SHORT_RESULT_CHARS = 300

# Names of code: `spans`, paths, dotted names, snake_case, camelCase / PascalCase with an inner capital, _private.
_NAME = re.compile(
    r"`([^`\n]{2,80})`"
    r"|(?<![\w/.-])((?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]*\w"
    r"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"
    r"|[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+"
    r"|_{1,2}[A-Za-z]\w*"
    r"|[a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*)"
)
_OUTPUT_WRAPPER = re.compile(r"^\s*</?(?:returncode|output|warning)>.*$|^\s*<returncode>\s*-?\d+\s*</returncode>\s*$")


def code_names(text: str) -> set[str]:
    """The names of code a text mentions (see the module docstring)."""
    out: set[str] = set()
    for m in _NAME.finditer(text):
        name = (m.group(1) or m.group(2) or "").strip()
        if len(name) >= 3:
            out.add(name)
    return out


class WorkStep(BaseModel):
    """One call of the work log (all text verbatim from the history, not yet redacted or clipped)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    call_index: int
    said: str
    code: tuple[str, ...] = ()
    ran: str
    saw: tuple[str, ...]
    outcome: Outcome | None


def _ran(command: str) -> str:
    lines = command.strip("\n").splitlines()
    return "\n".join(lines[:MAX_RUN_LINES]) + ("\n…" if len(lines) > MAX_RUN_LINES else "")


def extract_steps(messages: Sequence[Message], events: Sequence[ToolEvent], *, later: Sequence[str] = ()) -> list[WorkStep]:
    """The work log of ``events`` (calls of ``messages``). ``later``: texts that come after ``messages`` (the
    recent messages kept verbatim) whose names also count as the agent referring to a result."""
    # Names the agent uses from each assistant message on: suffix unions, computed once.
    said_by = {i: code_names(m.text + "\n" + "\n".join(c.function.arguments for c in (m.tool_calls or ())))
               for i, m in enumerate(messages) if m.role == "assistant"}
    after: dict[int, set[str]] = {}
    acc: set[str] = set().union(*(code_names(t) for t in later)) if later else set()
    for i in range(len(messages) - 1, -1, -1):
        after[i] = acc
        if i in said_by:
            acc = acc | said_by[i]
    out: list[WorkStep] = []
    seen_message: set[int] = set()
    for event in events:
        i = event.call_index
        first_of_message = i not in seen_message
        seen_message.add(i)
        said, code = "", ()
        if first_of_message:  # a message with several calls says it once
            named = [s for s in prose_sentences(messages[i].text) if code_names(s)]
            said = " ".join(named[-MAX_SAID_SENTENCES:])
            code = tuple(ln for ln in code_lines(messages[i].text) if code_names(ln))[:MAX_CODE_LINES]
        saw: list[str] = []
        if event.result_index is not None:
            result = messages[event.result_index].text
            lines = [ln.strip() for ln in result.splitlines() if ln.strip() and not _OUTPUT_WRAPPER.match(ln)]
            if len(lines) <= SHORT_RESULT_LINES and sum(map(len, lines)) <= SHORT_RESULT_CHARS:
                saw = lines
            else:
                referred = after.get(event.result_index, set())
                saw = [ln for ln in dict.fromkeys(lines) if code_names(ln) & referred][:MAX_SAW_LINES]
            if event.error_line and event.error_line.strip() not in saw:
                saw.append(event.error_line.strip())
        out.append(WorkStep(call_index=i, said=said, code=code, ran=_ran(event.command), saw=tuple(saw),
                            outcome=event.outcome))
    return out


__all__ = ["WorkStep", "code_names", "extract_steps"]
