"""What of a model's output enters the summary, and where (``merge.merge_carried`` takes ``ModelItems`` in).

The embedded 270M model's ``Draft``: each item kept when grounded word for word (``SourceIndex.grounded``), added
beside the extracted ones. A capable model's ``WrittenState`` (the written-state mode), each statement kept when
its names and quotes hold (``SourceIndex.holds``):

- findings: what the agent established, as the model states it; they replace an earlier summary's (the model is
  shown those and keeps what still holds); when none is grounded, the earlier ones stay.
- decisions: its grounded decisions replace the ones read by position (the agent's words before an edit) of the
  region it wrote about; when none is grounded, the positional ones stay. An earlier summary's decisions stay.
- failures: its reason for failure number k of the checklist becomes that failed attempt's ``then`` (the agent's
  own words after the failure stay in the work log); ``approach`` and ``reason_failed`` stay exact.
- task state: its items follow the extracted ones (the task, the agent's plan, its open items, failing checks).
- narrative and next step: ``recent_narrative``, before the agent's last words (which stay exact).

What is left to do and the next step say what the agent will do: their names must hold by trusted text (not tool
output alone), as an order's (``SourceIndex.holds``, ``directive``).

Everything read exactly (user turns, files and their net changes, errors, tool calls, the work log) is never
replaced by what a model wrote. Every model string is redacted once more (the summary gets a last pass anyway).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..secrets.redact import redact
from . import schema as S
from .draft import NARRATIVE_MAX_CHARS, Draft
from .ground import (
    GroundingReport,
    SourceIndex,
    grounded_sentences,
    keep_grounded,
    keep_written,
    written_sentences,
)
from .pack import clip
from .written import WrittenState

NEXT_STEP = "Next step: "


@dataclass(frozen=True)
class ModelItems:
    """The grounded part of a model's output, by the summary field it goes to."""

    findings: list[str] = field(default_factory=list)
    decisions: list[S.Decision] = field(default_factory=list)
    replaces_decisions: bool = False  # the region's positional decisions give way to ``decisions``
    reasons: dict[int, str] = field(default_factory=dict)  # failure number (from 1, this region's) -> why it failed
    completed: list[str] = field(default_factory=list)
    remaining: list[str] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)
    narrative: str = ""


def model_items(
    draft: Draft | WrittenState, index: SourceIndex, report: GroundingReport, failures: int = 0
) -> ModelItems:
    """``draft`` grounded against ``index`` (what was checked and dropped goes to ``report``); ``failures``: how
    many failed attempts the region's checklist numbered."""
    if isinstance(draft, WrittenState):
        return _written(draft, index, report, failures)
    decisions = []
    for d in draft.decisions:
        if keep_grounded([d.decision], index, report):
            rationale = keep_grounded([d.rationale], index, report)
            decisions.append(
                S.Decision(decision=redact(d.decision), rationale=redact(rationale[0]) if rationale else "")
            )
    drafted = draft.task_state
    completed = [redact(x) for x in keep_grounded(drafted.completed, index, report)]
    remaining = [redact(x) for x in keep_grounded(drafted.remaining, index, report)]
    blockers = [redact(x) for x in keep_grounded(drafted.blockers, index, report)]
    narrative = redact(grounded_sentences(draft.recent_narrative, index, report, NARRATIVE_MAX_CHARS))
    return ModelItems(
        decisions=decisions, completed=completed, remaining=remaining, blockers=blockers, narrative=narrative
    )


def _item(text: str) -> str:
    return clip(redact(" ".join(text.split())), S.MAX_ITEM_CHARS)


def _written(state: WrittenState, index: SourceIndex, report: GroundingReport, failures: int) -> ModelItems:
    findings = [_item(x) for x in keep_written(state.findings, index, report)]
    decisions = []
    for d in state.decisions:
        if keep_written([d.decision], index, report):
            rationale = keep_written([d.rationale], index, report)
            decisions.append(S.Decision(decision=_item(d.decision), rationale=_item(rationale[0]) if rationale else ""))
    reasons: dict[int, str] = {}
    for f in state.failures:
        if not 1 <= f.failure <= failures or f.failure in reasons:
            report.checked += 1
            report.dropped.append(f"F{f.failure} (no such failed attempt, or a second reason): {f.why}")
            continue
        kept = keep_written([f.why], index, report)
        if kept:
            reasons[f.failure] = _item(kept[0])
    drafted = state.task_state
    completed = [_item(x) for x in keep_written(drafted.completed, index, report)]
    remaining = [_item(x) for x in keep_written(drafted.remaining, index, report, directive=True)]
    blockers = [_item(x) for x in keep_written(drafted.blockers, index, report)]
    narrative = redact(written_sentences(state.narrative, index, report))
    step = redact(written_sentences(state.next_step, index, report, directive=True))
    return ModelItems(
        findings=findings,
        decisions=decisions,
        replaces_decisions=bool(decisions),
        reasons=reasons,
        completed=completed,
        remaining=remaining,
        blockers=blockers,
        narrative="\n".join(x for x in (narrative, NEXT_STEP + step if step else "") if x),
    )
