"""Merge: the summary document assembled from the exact facts, the grounded part of the model's draft, and the
previous summary (a later compaction adds to it, it does not forget). Every list is bounded, and what a bound
drops is counted (``clipped_items``), never dropped silently."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from . import schema as S
from .draft import NARRATIVE_MAX_CHARS, Draft
from .extract.facts import Facts
from .ground import GroundingReport, SourceIndex, grounded_sentences, keep_grounded
from .messages import Message
from .redact import redact

BRIDGE_MESSAGES = 2
BRIDGE_CHARS = 160


class ClipCounter(Protocol):
    """Where ``merge`` counts the items its bounds drop (``CompressionStats``)."""

    clipped_items: int


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _unique(items: Sequence[Any], key: Any = None) -> list[Any]:
    """First occurrence of each item, in order."""
    seen: set[Any] = set()
    out = []
    for item in items:
        k = key(item) if key else item
        if k not in seen:
            seen.add(k)
            out.append(item)
    return out


def _latest(items: Sequence[Any], key: Any = None) -> list[Any]:
    """Last occurrence of each item, ordered by that last occurrence (a call repeated late stays, with its
    latest outcome, when a bound later keeps only the newest entries)."""
    return list(reversed(_unique(list(reversed(items)), key)))


def bridge_lines(compressed: Sequence[Message]) -> str:
    """``[assistant] first 160 chars`` of the last two assistant messages with text in the compressed part: where
    the agent stood just before the kept messages. The kept messages themselves stay verbatim after the summary,
    so repeating them here would only cost tokens."""
    said = [m for m in compressed if m.role == "assistant" and m.text.strip()][-BRIDGE_MESSAGES:]
    return "\n".join(f"[assistant] {redact(' '.join(m.text.split()))[:BRIDGE_CHARS]}" for m in said)


def _bounded(items: list[Any], limit: int, stats: ClipCounter, *, keep: str = "newest") -> list[Any]:
    """Keep the newest (or, for prioritised lists, the first) ``limit`` items; count what had to go, so nothing
    is dropped silently (``stats.clipped_items``)."""
    if len(items) > limit:
        stats.clipped_items += len(items) - limit
        return items[:limit] if keep == "first" else items[-limit:]
    return items


def merge(
    facts: Facts,
    draft: Draft,
    compressed: Sequence[Message],
    index: SourceIndex,
    report: GroundingReport,
    stats: ClipCounter,
    previous: S.CompressedContext | None = None,
) -> S.CompressedContext:
    """Assemble the document: exact facts as they are, model items only where grounded, the previous
    summary's items first (a later compaction adds, it does not forget)."""
    prev = previous or S.CompressedContext()
    constraints = _unique(list(prev.user_constraints) + [redact(c.text) for c in facts.constraint_candidates])
    constraints = [c for c in constraints if len(c) <= S.MAX_CONSTRAINT_CHARS]

    decisions = list(prev.decisions) + [
        S.Decision(decision=_clip(redact(d.decision), S.MAX_ITEM_CHARS), rationale=_clip(redact(d.rationale), S.MAX_ITEM_CHARS))
        for d in facts.decisions
    ]
    for d in draft.decisions:
        if keep_grounded([d.decision], index, report):
            rationale = keep_grounded([d.rationale], index, report)
            decisions.append(S.Decision(decision=redact(d.decision), rationale=redact(rationale[0]) if rationale else ""))
    failed = list(prev.failed_attempts) + [
        S.FailedAttempt(
            approach=_clip(redact(" ".join(f.approach.split())), S.MAX_ITEM_CHARS),
            reason_failed=_clip(redact(" ".join(f.reason_failed.split())), S.MAX_ITEM_CHARS),
        )
        for f in facts.failed_attempts
    ]
    calls = list(prev.tool_calls_summary) + [
        S.ToolCallSummary(
            tool=_clip(e.tool, S.MAX_TOOL_CHARS),
            target=_clip(redact(" ".join(e.target.split())), S.MAX_TARGET_CHARS),
            outcome=e.outcome or "partial",  # a call never answered (e.g. the final submit) did not complete
        )
        for e in facts.tool_events
    ]
    state = draft.task_state
    completed = list(prev.task_state.completed) + [_clip(f"changed {path}", S.MAX_ITEM_CHARS) for path in facts.files_changed]
    completed += [redact(x) for x in keep_grounded(state.completed, index, report)]
    task = [_clip("Task: " + redact(" ".join(facts.task.split())), S.MAX_ITEM_CHARS)] if facts.task.strip() else []
    remaining = list(prev.task_state.remaining) + task + [redact(x) for x in keep_grounded(state.remaining, index, report)]
    blockers = list(prev.task_state.blockers) + [redact(x) for x in keep_grounded(state.blockers, index, report)]

    narrative = redact(grounded_sentences(draft.recent_narrative, index, report, NARRATIVE_MAX_CHARS))
    tail = bridge_lines(compressed)
    full_narrative = "\n".join(part for part in (narrative, tail) if part)
    return S.CompressedContext(
        user_constraints=_bounded(constraints, S.MAX_CONSTRAINTS, stats, keep="first"),
        decisions=_bounded(_latest(decisions), S.MAX_DECISIONS, stats),
        failed_attempts=_bounded(_latest(failed), S.MAX_FAILED, stats),
        tool_calls_summary=_bounded(_latest(calls, key=lambda c: (c.tool, c.target)), S.MAX_TOOL_CALLS, stats),
        recent_narrative=_clip(full_narrative, S.MAX_NARRATIVE_CHARS),
        task_state=S.TaskState(
            completed=_bounded(_latest(completed), S.MAX_STATE_ITEMS, stats),
            remaining=_bounded(_unique(remaining), S.MAX_STATE_ITEMS, stats, keep="first"),
            blockers=_bounded(_latest(blockers), S.MAX_STATE_ITEMS, stats),
        ),
    )
