"""Why a metric missed: the extractor's own facts, consulted only to explain a miss (``why`` in the eval's JSON),
never to score. This is the one evaluation module that imports the extractor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from offline_compress.extract.constraints import MAX_CONSTRAINTS, extract_constraints
from offline_compress.extract.facts import Facts
from offline_compress.history.messages import Message
from offline_compress.secrets.redact import redact
from offline_compress.summary import schema as S

from .scoring import norm_ws, path_names


def explain_misses(row: dict[str, Any], facts: Facts, context: S.CompressedContext, part: Sequence[Message]) -> None:
    """Say why each miss happened, from the extractor's facts (diagnosis only, never the score)."""
    unread = [m for m in row["constraints"]["missed"] if m["why"] == "not among the extractor's candidates"]
    if unread:
        unlimited = extract_constraints(part, limit=1 << 30)
        for m in unread:
            rank = next((k for k, c in enumerate(unlimited) if m["phrase"] in c.text), None)
            m["why"] = (
                f"a candidate of rank {rank + 1}, beyond the extractor's limit of {MAX_CONSTRAINTS}"
                if rank is not None
                else "the extractor does not read it as an instruction (no marker, or inside a code block/example)"
            )
    events = {e.call_index: e for e in facts.tool_events}
    fa_idx = {f.call_index for f in facts.failed_attempts}
    for miss in row["failed"]["missed"]:
        e = events.get(miss["message"])
        if e is None:
            miss["why"] = "the extractor found no call here"
        elif miss["message"] in fa_idx:
            miss["why"] = (
                f"extracted, but cut by the summary bound (newest {S.MAX_FAILED} of "
                f"{len(facts.failed_attempts)} failures kept)"
                if len(facts.failed_attempts) > S.MAX_FAILED
                else "extracted, approach text differs"
            )
        else:
            miss["why"] = f"the extractor classified the result as {e.outcome!r} (exit code {e.exit_code})"
    for miss in row["tool_calls"]["missed"]:
        e = events.get(miss["message"])
        if e is None:
            miss["why"] = "the extractor found no call here"
            continue
        miss["extracted"] = {"tool": e.tool, "target": e.target, "outcome": e.outcome}
        entry = S.ToolCallSummary(
            tool=e.tool[: S.MAX_TOOL_CHARS],
            target=norm_ws(redact(e.target))[: S.MAX_TARGET_CHARS],
            outcome=e.outcome or "partial",
        )
        if len(facts.tool_events) > S.MAX_TOOL_CALLS and entry not in context.tool_calls_summary:
            miss["why"] = (
                f"cut by the summary bound (newest {S.MAX_TOOL_CALLS} entries of {len(facts.tool_events)} calls kept)"
            )
        else:
            miss["why"] = "the extracted tool/target does not match the call's text"
    changed = set(facts.files_changed)
    cf = row["changed_files"]
    cf["missed"] = [
        {
            "file": x,
            "why": (
                f"extracted, but 'changed {x}' cut from task_state.completed (newest {S.MAX_STATE_ITEMS} items kept)"
            )
            if any(path_names(p, x) for p in changed)
            else "the extractor did not see the write",
        }
        for x in cf["missed"]
    ]
