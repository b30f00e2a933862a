"""The summary document, ``CompressedContext``: the product's shared vocabulary with ``messages``.

Every list and string is bounded, so the largest valid document has a known size in the target's context,
and extra keys are forbidden. ``compressed_context_json_schema()`` exports the JSON Schema from the model.
"""

from __future__ import annotations

import functools
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer

# Bounds. A verbatim user constraint may be a long sentence; the rest is short by design.
MAX_CONSTRAINTS = 80
# a person's turn mid-session is kept whole up to this (extract.constraints.MAX_WHOLE_TURN_CHARS); a summary's fit
# (merge.fit) bounds the constraints' tokens by the window
MAX_CONSTRAINT_CHARS = 100_000
MAX_DECISIONS = 12
MAX_FINDINGS = 12
MAX_FAILED = 30
MAX_TOOL_CALLS = 80
MAX_STATE_ITEMS = 12
MAX_ITEM_CHARS = 300
MAX_TOOL_CHARS = 48
MAX_TARGET_CHARS = 200
MAX_NARRATIVE_CHARS = 2400
MAX_STEPS = 150
MAX_SAID_CHARS = 2000
MAX_CODE_LINES = 24
MAX_CODE_CHARS = 200
MAX_RAN_CHARS = 3000
MAX_SAW_LINES = 20
MAX_SAW_CHARS = 240
MAX_STEP_TIMES = 100_000  # a step run this many times in a row (a poll) is still one step
MAX_FILES = 40
MAX_FILE_LINES = 12

Item = Annotated[str, Field(max_length=MAX_ITEM_CHARS)]


class Strict(BaseModel):
    """Frozen, and no key the schema does not name (the model's outputs are parsed into these too)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Decision(Strict):
    decision: Item
    rationale: Item


class _Sparse(Strict):
    """A model whose fields at their default are left out of its JSON (and read back as them): a summary has
    dozens of items, and each empty key would cost it tokens."""

    @model_serializer(mode="wrap")
    def _without_empty(self, handler: Any) -> dict[str, Any]:
        defaults = _defaults(type(self))
        return {k: v for k, v in handler(self).items() if k not in defaults or v != defaults[k]}


@functools.cache
def _defaults(model: type[BaseModel]) -> dict[str, Any]:
    """A model's optional fields and their defaults, read once (every item of every summary is dumped with them)."""
    return {k: f.default for k, f in model.model_fields.items() if not f.is_required()}


class FailedAttempt(_Sparse):
    approach: Item
    reason_failed: Item
    then: Item = ""  # what the agent said next, in its own words
    resolved_by: Item = ""  # the later run of the same check that succeeded ("" : not resolved)


class FileChange(_Sparse):
    """A file the summarised messages changed, with its net change: the lines its edits added that no later edit
    removed (or the command that changed it, when the change is not shown)."""

    path: Annotated[str, Field(max_length=MAX_TARGET_CHARS)]
    change: Literal["created", "modified", "deleted"]
    now: Annotated[
        list[Annotated[str, Field(max_length=MAX_SAW_CHARS, pattern=r"^[^\n]*$")]], Field(max_length=MAX_FILE_LINES)
    ] = []  # one line each
    edits: Annotated[int, Field(ge=1)] = 1


class ToolCallSummary(Strict):
    tool: Annotated[str, Field(max_length=MAX_TOOL_CHARS)]
    target: Annotated[str, Field(max_length=MAX_TARGET_CHARS)]
    outcome: Literal["success", "error", "partial"]


class TaskState(Strict):
    completed: Annotated[list[Item], Field(max_length=MAX_STATE_ITEMS)] = []
    remaining: Annotated[list[Item], Field(max_length=MAX_STATE_ITEMS)] = []
    blockers: Annotated[list[Item], Field(max_length=MAX_STATE_ITEMS)] = []


class Step(_Sparse):
    """One call of the work log, verbatim: what the agent said about it (and code it quoted), what it ran,
    what it saw, and its outcome (success unless the document says otherwise)."""

    said: Annotated[str, Field(max_length=MAX_SAID_CHARS)] = ""
    code: Annotated[list[Annotated[str, Field(max_length=MAX_CODE_CHARS)]], Field(max_length=MAX_CODE_LINES)] = []
    ran: Annotated[str, Field(max_length=MAX_RAN_CHARS)]
    saw: Annotated[list[Annotated[str, Field(max_length=MAX_SAW_CHARS)]], Field(max_length=MAX_SAW_LINES)] = []
    outcome: Literal["success", "error", "partial"] = "success"
    # The same call run this many times in a row with this outcome (an agent polling a background job, retrying a
    # command), the later runs with nothing said: one step, not a page of identical ones (``pack.collapse_repeats``).
    times: Annotated[int, Field(ge=1, le=MAX_STEP_TIMES)] = 1


class CompressedContext(Strict):
    """Structured summary of the compressed part of a history."""

    user_constraints: Annotated[
        list[Annotated[str, Field(max_length=MAX_CONSTRAINT_CHARS)]], Field(max_length=MAX_CONSTRAINTS)
    ] = Field(default=[], description="Instructions of the user or system, word for word.")
    decisions: Annotated[list[Decision], Field(max_length=MAX_DECISIONS)] = []
    failed_attempts: Annotated[list[FailedAttempt], Field(max_length=MAX_FAILED)] = []
    tool_calls_summary: Annotated[list[ToolCallSummary], Field(max_length=MAX_TOOL_CALLS)] = []
    recent_narrative: Annotated[str, Field(max_length=MAX_NARRATIVE_CHARS)] = ""
    task_state: TaskState = TaskState()
    # Added after the seed's six fields (which stay as they were): what the agent established (written by a capable
    # model, grounded: the written-state mode), the files changed with their net change, and the verbatim work log,
    # oldest step first.
    findings: Annotated[list[Item], Field(max_length=MAX_FINDINGS)] = Field(
        default=[], description="What the agent established that still holds (the written-state mode's)."
    )
    files: Annotated[list[FileChange], Field(max_length=MAX_FILES)] = []
    work_log: Annotated[list[Step], Field(max_length=MAX_STEPS)] = Field(
        default=[], description="What the agent said, ran and saw at each step, verbatim, oldest first."
    )

    def to_json(self) -> str:
        """Canonical bytes: fixed key order, no extra whitespace, UTF-8 kept. Same document, same string. No
        ``findings`` key when there are none (only a model writes them: the extractive summary stays as it was)."""
        data = self.model_dump(mode="json", exclude=set() if self.findings else {"findings"})
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def compressed_context_json_schema() -> dict[str, Any]:
    """JSON Schema of ``CompressedContext`` (``additionalProperties: false`` everywhere)."""
    return CompressedContext.model_json_schema()
