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
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from . import schema as S

MAX_DECISIONS = 12
MAX_FAILURES = 12
MAX_STATE_ITEMS = 8
NARRATIVE_CHARS = 1500  # the merged narrative holds it, the next step and the agent's last words (MAX_NARRATIVE_CHARS)
NEXT_STEP_CHARS = 300

Item = Annotated[str, StringConstraints(max_length=S.MAX_ITEM_CHARS)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WrittenDecision(_Strict):
    decision: Item
    rationale: Item


class WrittenFailure(_Strict):
    """Why the failed attempt numbered ``failure`` in the prompt's checklist failed, and what it taught."""

    failure: Annotated[int, Field(ge=1, le=S.MAX_FAILED)]
    why: Item


class WrittenTaskState(_Strict):
    completed: Annotated[list[Item], Field(max_length=MAX_STATE_ITEMS)]
    remaining: Annotated[list[Item], Field(max_length=MAX_STATE_ITEMS)]
    blockers: Annotated[list[Item], Field(max_length=MAX_STATE_ITEMS)]


class WrittenState(_Strict):
    """All fields required (a strict ``json_schema`` needs it) and in the order a writer thinks them through."""

    findings: Annotated[list[Item], Field(max_length=S.MAX_FINDINGS)]
    decisions: Annotated[list[WrittenDecision], Field(max_length=MAX_DECISIONS)]
    failures: Annotated[list[WrittenFailure], Field(max_length=MAX_FAILURES)]
    task_state: WrittenTaskState
    narrative: Annotated[str, StringConstraints(max_length=NARRATIVE_CHARS)]
    next_step: Annotated[str, StringConstraints(max_length=NEXT_STEP_CHARS)]


def written_json_schema() -> dict[str, Any]:
    """The schema a server gets as ``json_schema`` and Outlines compiles in process: strict keys, every field
    required, every string and list bounded; no flexible whitespace in process (a model may otherwise pad)."""
    schema = WrittenState.model_json_schema()
    schema["x-guidance"] = {"whitespace_flexible": False}
    return schema
