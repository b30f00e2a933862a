"""What a capable model writes in the written-state mode (``Compressor(..., written=True)``): ``WrittenState``, the
parts of a summary that need judgement: what the agent established, decisions with their rationale, why attempts
failed, the task state, the narrative and the next step. Everything read exactly (user turns, files and their net
changes, errors, the work log) stays the extractor's; the model refers to a failure by its number in the prompt's
checklist instead of re-typing it.

Unlike the embedded 270M model's ``Draft`` (``draft.py``: ASCII, one item per list, bounds that set its latency),
these bounds are the summary's own: Unicode text, up to 12 decisions, items as long as ``schema.MAX_ITEM_CHARS``.
The largest valid document is over any sensible ``max_tokens`` (a character may take several tokens), so a state
cut short by ``max_tokens`` is possible: it is invalid JSON, and the compressor falls back to the extractive summary
(``Compressor._write``). How each field enters the summary: ``intake.py``.

``StateCheck`` is the same model's check of what it wrote (``Compressor(check=True)``): the state's statements,
numbered in the order of ``statements``, those it finds unsupported by its prompt; ``without`` drops them. A false
claim about names the source does hold ("`npm install bcrypt` succeeded") passes any lexical rule (``ground.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field, StringConstraints

from . import schema as S
from .draft import grammar_schema
from .ground import join_sentences, written_split

MAX_DECISIONS = 12
MAX_FAILURES = 12
MAX_STATE_ITEMS = 8
NARRATIVE_CHARS = 1500  # the merged narrative holds it, the next step and the agent's last words (MAX_NARRATIVE_CHARS)
NEXT_STEP_CHARS = 300
MAX_STATEMENTS = 160  # of a state, numbered for its check (its bounds allow about 110: 12 + 24 + 12 + 24 + sentences)

Item = Annotated[str, StringConstraints(max_length=S.MAX_ITEM_CHARS)]


class WrittenDecision(S.Strict):
    decision: Item
    rationale: Item


class WrittenFailure(S.Strict):
    """Why the failed attempt numbered ``failure`` in the prompt's checklist failed, and what it taught."""

    failure: Annotated[int, Field(ge=1, le=S.MAX_FAILED)]
    why: Item


class WrittenTaskState(S.Strict):
    completed: Annotated[list[Item], Field(max_length=MAX_STATE_ITEMS)]
    remaining: Annotated[list[Item], Field(max_length=MAX_STATE_ITEMS)]
    blockers: Annotated[list[Item], Field(max_length=MAX_STATE_ITEMS)]


class WrittenState(S.Strict):
    """All fields required (a strict ``json_schema`` needs it) and in the order a writer thinks them through."""

    findings: Annotated[list[Item], Field(max_length=S.MAX_FINDINGS)]
    decisions: Annotated[list[WrittenDecision], Field(max_length=MAX_DECISIONS)]
    failures: Annotated[list[WrittenFailure], Field(max_length=MAX_FAILURES)]
    task_state: WrittenTaskState
    narrative: Annotated[str, StringConstraints(max_length=NARRATIVE_CHARS)]
    next_step: Annotated[str, StringConstraints(max_length=NEXT_STEP_CHARS)]


def written_json_schema() -> dict[str, Any]:
    """The schema a server gets as ``json_schema`` and Outlines compiles in process: every string and list
    bounded (``draft.grammar_schema``)."""
    return grammar_schema(WrittenState)


class Unsupported(S.Strict):
    statement: Annotated[int, Field(ge=1, le=MAX_STATEMENTS)]
    why: Annotated[str, StringConstraints(max_length=200)]


class StateCheck(S.Strict):
    """The statements of a written state (numbered as ``statements`` numbers them) that its prompt does not
    support, each with why."""

    unsupported: Annotated[list[Unsupported], Field(max_length=MAX_STATEMENTS)]


def check_json_schema() -> dict[str, Any]:
    return grammar_schema(StateCheck)


def _rebuilt(state: WrittenState, keep: Callable[[str, str], bool]) -> WrittenState:
    """``state`` with each statement kept where ``keep(kind, text)`` says so, asked in one fixed order (the check's
    numbering): findings, each decision and its rationale, failures, the task state, the narrative's sentences, the
    next step's. A decision not kept takes its rationale with it."""
    findings = [x for x in state.findings if keep("finding", x)]
    decisions = []
    for d in state.decisions:
        decided = keep("decision", d.decision)
        because = keep("its rationale", d.rationale) if d.rationale.strip() else True
        if decided:
            decisions.append(WrittenDecision(decision=d.decision, rationale=d.rationale if because else ""))
    failures = [f for f in state.failures if keep(f"why failure F{f.failure} failed", f.why)]
    task = state.task_state
    kept = {k: [x for x in getattr(task, k) if keep(k, x)] for k in ("completed", "remaining", "blockers")}
    narrative = [x for x in written_split(state.narrative) if keep("narrative", x)]
    step = [x for x in written_split(state.next_step) if keep("next step", x)]
    return WrittenState(
        findings=findings,
        decisions=decisions,
        failures=failures,
        task_state=WrittenTaskState(**kept),
        narrative=join_sentences(narrative),
        next_step=join_sentences(step),
    )


def statements(state: WrittenState) -> list[tuple[str, str]]:
    """(kind, text) of each statement of ``state``, in the order its check numbers them (from 1)."""
    out: list[tuple[str, str]] = []

    def listed(kind: str, text: str) -> bool:
        out.append((kind, text))
        return True

    _rebuilt(state, listed)
    return out


def without(state: WrittenState, check: StateCheck) -> tuple[WrittenState, list[str]]:
    """``state`` less the statements ``check`` found unsupported, and those statements (each with why)."""
    refuted = {u.statement: u.why for u in check.unsupported}
    if not refuted:
        return state, []
    dropped: list[str] = []
    number = 0

    def keep(kind: str, text: str) -> bool:
        nonlocal number
        number += 1
        if number in refuted:
            dropped.append(f"{kind}: {text} (the model's check: {refuted[number]})")
        return number not in refuted

    return _rebuilt(state, keep), dropped
