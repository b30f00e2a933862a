"""Bounds: the model's draft can never be cut by max_tokens; the summary schema forbids extra keys."""

import json

import pytest
from pydantic import ValidationError

from offline_compress.summary.draft import Draft, draft_json_schema, worst_case_tokens
from offline_compress.summary.schema import MAX_CONSTRAINTS, CompressedContext, compressed_context_json_schema


def _all_objects(node):
    if isinstance(node, dict):
        if node.get("type") == "object":
            yield node
        for value in node.values():
            yield from _all_objects(value)
    elif isinstance(node, list):
        for value in node:
            yield from _all_objects(value)


def test_draft_worst_case_fits_default_budget():
    schema = draft_json_schema()
    assert worst_case_tokens(schema) <= 2048
    assert schema["x-guidance"] == {"whitespace_flexible": False}
    for obj in _all_objects(schema):
        assert obj["additionalProperties"] is False


def test_draft_rejects_quotes_and_overlong_text():
    base = {
        "recent_narrative": "The agent ok",
        "decisions": [],
        "task_state": {"completed": [], "remaining": [], "blockers": []},
    }
    Draft.model_validate(base)
    with pytest.raises(ValidationError):
        Draft.model_validate({**base, "recent_narrative": 'The agent said "hi"'})
    with pytest.raises(ValidationError):
        Draft.model_validate({**base, "recent_narrative": "The agent " + "x" * 1000})
    with pytest.raises(ValidationError):
        Draft.model_validate({**base, "extra": 1})


def test_compressed_context_schema_is_strict_and_bounded():
    schema = compressed_context_json_schema()
    for obj in _all_objects(schema):
        assert obj["additionalProperties"] is False
    with pytest.raises(ValidationError):
        CompressedContext.model_validate({"user_constraints": ["a"] * (MAX_CONSTRAINTS + 1)})
    with pytest.raises(ValidationError):
        CompressedContext.model_validate({"surprise": 1})
    doc = CompressedContext(user_constraints=["Ünïcode stays"])
    assert json.loads(doc.to_json())["user_constraints"] == ["Ünïcode stays"]
    assert CompressedContext.model_validate_json(doc.to_json()) == doc
