"""Decisions in the agent's own words: the plan and reason it stated before each change it made (verbatim)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from ..history.messages import Message
from .events import ToolEvent


class ExtractedDecision(BaseModel):
    """A decision in the agent's own words (verbatim spans of the assistant message before a change)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    decision: str
    rationale: str
    message_index: int


_DECIDE = re.compile(
    r"\b(?:I'll|I’ll|I will|I'm going to|I am going to|I need to|I should|Let's|Let me|We need to|We should|"
    r"I decided|I chose|The fix is|The solution is)\b"
)
_BECAUSE = re.compile(
    r"\b(?:because|since|so that|due to|the (?:issue|problem|bug|cause|reason) (?:is|was)|this (?:means|is why)|"
    r"which (?:means|causes))\b",
    re.I,
)
SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z`])")  # not inside "f.name" or "requests.sessions"


def extract_decisions(messages: Sequence[Message], events: Sequence[ToolEvent]) -> list[ExtractedDecision]:
    """For each tool call that changed files, the assistant's stated plan in that message (a sentence with
    "I'll / Let's / I need to …") and its reason (a sentence with "because / the issue is …"), verbatim."""
    out: list[ExtractedDecision] = []
    seen: set[int] = set()
    for event in events:
        i = event.call_index
        if not event.files_changed or i in seen:
            continue
        seen.add(i)
        sentences = [x for x in prose_sentences(messages[i].text) if len(x.split()) >= 4]
        plans = [x for x in sentences if _DECIDE.search(x) and len(x) <= 300]
        reasons = [x for x in sentences if _BECAUSE.search(x) and len(x) <= 300]
        if plans:
            decision, rationale = plans[-1], reasons[0] if reasons else ""
            out.append(ExtractedDecision(decision=decision, rationale=_reason_of(rationale, decision), message_index=i))
    return out


def _reason_of(reason: str, decision: str) -> str:
    """``reason``, or, when the plan's own sentence gives it ("Let's X because Y."), the clause from the reason's
    keyword on ("because Y."): still verbatim, and the sentence is not written twice."""
    if reason != decision:
        return reason
    match = _BECAUSE.search(reason)
    return reason[match.start() :] if match else reason


_FENCED = re.compile(r"```.*?(?:```|\Z)", re.S)


def code_lines(text: str, shell: bool = False) -> list[str]:
    """The non-blank lines of a message's fenced code blocks (without the fences); the shell blocks that are the
    agent's commands are left out unless ``shell``."""
    out: list[str] = []
    for block in _FENCED.findall(text):
        lines = block.split("\n")
        lang = lines[0].strip("`").strip().lower()
        if not shell and lang in ("bash", "sh", "shell", "zsh", "console", "mswea_bash_command"):
            continue
        out += [ln.rstrip() for ln in lines[1:] if ln.strip() and not ln.strip().startswith("```")]
    return out


def prose_sentences(text: str) -> list[str]:
    """The sentences of a message outside its code blocks, verbatim (a sentence never spans a line or a block)."""
    prose = _FENCED.sub("\n", text)
    return [x.strip() for line in prose.splitlines() for x in SENTENCE_SPLIT.split(line) if x.strip()]
