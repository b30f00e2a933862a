"""The work log: for each tool call, what the agent said, ran and learnt, verbatim and short.

A summary that records only that ``cat django/forms/models.py`` succeeded loses what the agent learnt from it.
For each call of the compressed part this keeps, verbatim (every piece a substring of the history it is given; the
compressor gives it tool output as a terminal shows it, ``history/terminal.py``):

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
    The lines of the result that name something in the code (a definition, a grep hit with file:line, a
    traceback line), the first ``MAX_SAW_LINES`` distinct ones, and the line that says why a call failed; not a
    numbered line with no letter or digit of its own (a viewer's blank line, a grep context line's separator),
    whose number is all it names. A short result (a printed value) whole.

This is the material: a summary's token budget then keeps, line by line, what adds most (``pack.py``). On the
replay A/B design split, offering every named line of a result did better than offering only the lines whose
names the agent used again before the cut (a bonus for those did worse: the agent's own messages already say
them).

Pure and deterministic; redaction is the caller's (merge redacts every piece before it is cut).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..history.conventions import unwrap_output
from ..history.messages import Message
from .events import Frozen, ToolEvent
from .outcomes import Outcome
from .prose import code_lines, prose_sentences

# Bounds of what is read; the summary's budget then keeps the pieces that add most (pack.py).
MAX_SAID_SENTENCES = 40
MAX_CODE_LINES = 80
MAX_RUN_LINES = 400
MAX_SAW_LINES = 40
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
# A `span` drawn with box-drawing characters is a rule, not a name (Claude Code's explanatory style frames its notes
# in `★ Insight ─────` … `─────`)
_RULE = re.compile(r"[\u2500-\u259f]{3}")
# A numbered line with no letter or digit of its own (`cat -n`'s "198<tab>", Claude Code's "198→", SWE-agent's
# "198:", a grep context line's "198-"; or only a bracket, quotes, a rule): its number is all it names, and the
# agent learnt nothing from it
_BLANK_NUMBERED = re.compile(r"^\s*\d+(?:\t|→|:|-)[\W_]*$")
_OUTPUT_WRAPPER = re.compile(r"^\s*</?(?:returncode|output|warning)>.*$|^\s*<returncode>\s*-?\d+\s*</returncode>\s*$")


_NUMBER = re.compile(r"(?<![\w.])(?:\d+\.\d+(?:\.\d+)*|\d{3,})(?![\w])")  # values, versions, line numbers
_MIXED = re.compile(r"(?<![\w./-])(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z0-9]{4,}(?![\w/-])")  # mmx64, sha256, a806f3


def names(text: str) -> set[str]:
    """What a text names that an agent may reuse: names of code, numbers (values, versions, line numbers) and
    words that mix letters and digits (hosts, hashes, versions). Ops and scripting sessions name things by these
    as much as code does (chosen on the function-calling design split, docs/replay.md)."""
    return code_names(text) | set(_NUMBER.findall(text)) | set(_MIXED.findall(text))


def code_names(text: str) -> set[str]:
    """The names of code a text mentions (see the module docstring)."""
    found = ((m.group(1) or m.group(2) or "").strip() for m in _NAME.finditer(text))
    return {name for name in found if len(name) >= 3 and not _RULE.search(name)}  # only a `span` can be a rule


class WorkStep(Frozen):
    """One call of the work log (all text verbatim from the history, not yet redacted or clipped)."""

    call_index: int
    said: str
    code: tuple[str, ...] = ()
    ran: str
    saw: tuple[str, ...]
    outcome: Outcome | None


def _ran(command: str) -> str:
    lines = command.strip("\n").splitlines()
    return "\n".join(lines[:MAX_RUN_LINES]) + ("\n…" if len(lines) > MAX_RUN_LINES else "")


def extract_steps(messages: Sequence[Message], events: Sequence[ToolEvent]) -> list[WorkStep]:
    """The work log of ``events`` (calls of ``messages``)."""
    out: list[WorkStep] = []
    seen_message: set[int] = set()
    for event in events:
        i = event.call_index
        said, code = "", tuple[str, ...]()
        if i not in seen_message:  # a message with several calls says it once
            seen_message.add(i)
            named = [s for s in prose_sentences(messages[i].text) if code_names(s)]
            said = " ".join(named[-MAX_SAID_SENTENCES:])
            code = tuple(ln for ln in code_lines(messages[i].text) if code_names(ln))[:MAX_CODE_LINES]
        saw: list[str] = []
        if event.result_index is not None:
            result = unwrap_output(messages[event.result_index].text)[0]  # older Codex: the JSON-wrapped text
            raw = [ln for ln in result.splitlines() if ln.strip() and not _OUTPUT_WRAPPER.match(ln)]
            lines = [ln.strip() for ln in raw]
            if len(lines) <= SHORT_RESULT_LINES and sum(map(len, lines)) <= SHORT_RESULT_CHARS:
                saw = lines
            else:
                of_own = (ln.strip() for ln in raw if not _BLANK_NUMBERED.match(ln))
                saw = [ln for ln in dict.fromkeys(of_own) if names(ln)][:MAX_SAW_LINES]
            for line in (event.error_line or "").splitlines():  # a bare exception comes with its statement
                if line.strip() and line.strip() not in saw:
                    saw.append(line.strip())
        ran = _ran(event.shown or event.command)
        out.append(WorkStep(call_index=i, said=said, code=code, ran=ran, saw=tuple(saw), outcome=event.outcome))
    return out


__all__ = ["WorkStep", "code_names", "extract_steps", "names"]
