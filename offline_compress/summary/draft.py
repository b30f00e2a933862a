"""What the model writes: ``Draft``, the parts of a summary that need phrasing (narrative, decisions, task
state). Everything that can be read exactly (constraints, tool calls, failures, files) is extracted by code.

The draft's grammar bounds every string and list and admits only printable ASCII without quote or backslash
inside strings, so one token covers at least one character and the largest valid draft has a known token
count: ``worst_case_tokens`` proves at build time that ``max_tokens`` can never cut a draft short.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, Field, StringConstraints

from .schema import Strict

# Printable ASCII except '"' (0x22) and '\\' (0x5C): no escapes, so characters == JSON characters.
SAFE_TEXT = r"^[ !#-\[\]-~]*$"


# Tight bounds on purpose: the 270M model tends to write until a bound stops it, so the bounds set its
# latency (measured: most of what it writes fails grounding; the extracted facts carry the summary).
Text80 = Annotated[str, StringConstraints(max_length=80, pattern=SAFE_TEXT)]
Text100 = Annotated[str, StringConstraints(max_length=100, pattern=SAFE_TEXT)]


class DraftDecision(Strict):
    decision: Text80
    rationale: Text100


class DraftTaskState(Strict):
    completed: Annotated[list[Text80], Field(max_length=1)]
    remaining: Annotated[list[Text80], Field(max_length=1)]
    blockers: Annotated[list[Text80], Field(max_length=1)]


# The narrative starts with words the grammar forces: a small base model continues prose far better than it
# starts a JSON string from nothing.
NARRATIVE_START = "The agent "
NARRATIVE_MAX_CHARS = 200


class Draft(Strict):
    recent_narrative: Annotated[
        str, StringConstraints(max_length=NARRATIVE_MAX_CHARS, pattern=rf"^{NARRATIVE_START}[ !#-\[\]-~]*$")
    ]
    decisions: Annotated[list[DraftDecision], Field(max_length=1)]
    task_state: DraftTaskState


def grammar_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema as llguidance gets it: strict keys, no flexible whitespace (a model may otherwise emit
    whitespace until max_tokens), all fields required so the key order is fixed. A server gets the same."""
    schema = model.model_json_schema()
    schema["x-guidance"] = {"whitespace_flexible": False}
    return schema


def draft_json_schema() -> dict[str, Any]:
    return grammar_schema(Draft)


def _largest(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    if "$ref" in schema:
        return _largest(defs[schema["$ref"].split("/")[-1]], defs)
    kind = schema.get("type")
    if kind == "object":
        return {key: _largest(sub, defs) for key, sub in schema["properties"].items()}
    if kind == "array":
        return [_largest(schema["items"], defs)] * schema["maxItems"]
    if kind == "string":
        return "x" * schema["maxLength"]
    raise ValueError(f"unbounded or unsupported schema node: {schema}")


def worst_case_tokens(schema: dict[str, Any]) -> int:
    """Upper bound of the tokens a valid document can take: its length in characters when every string and
    list is at its maximum (one token is at least one character here), plus one end-of-sequence token."""
    largest = _largest(schema, schema.get("$defs", {}))
    return len(json.dumps(largest, separators=(",", ":"))) + 1
