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

from collections.abc import Iterable
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
from .pack import redacted
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
    many failed attempts the region's checklist numbered. The items are checked in one order (the report's)."""
    written = isinstance(draft, WrittenState)
    form = _item if written else redact  # a capable model's item is also clipped to the schema's bound

    def kept(items: Iterable[str], directive: bool = False) -> list[str]:
        if written:
            return keep_written(items, index, report, directive=directive)
        return keep_grounded(items, index, report)  # the small model's rule: every content word in the source

    findings = [form(x) for x in kept(draft.findings)] if isinstance(draft, WrittenState) else []
    decisions = []
    for d in draft.decisions:
        if kept([d.decision]):
            rationale = kept([d.rationale])
            decisions.append(S.Decision(decision=form(d.decision), rationale=form(rationale[0]) if rationale else ""))
    reasons: dict[int, str] = {}
    for f in draft.failures if isinstance(draft, WrittenState) else ():
        if not 1 <= f.failure <= failures or f.failure in reasons:
            report.checked += 1
            report.dropped.append(f"F{f.failure} (no such failed attempt, or a second reason): {f.why}")
        elif reason := kept([f.why]):
            reasons[f.failure] = form(reason[0])
    drafted = draft.task_state
    completed = [form(x) for x in kept(drafted.completed)]
    remaining = [form(x) for x in kept(drafted.remaining, directive=True)]
    blockers = [form(x) for x in kept(drafted.blockers)]
    if isinstance(draft, WrittenState):
        narrative = redact(written_sentences(draft.narrative, index, report))
        step = redact(written_sentences(draft.next_step, index, report, directive=True))
        narrative = "\n".join(x for x in (narrative, NEXT_STEP + step if step else "") if x)
    else:
        narrative = redact(grounded_sentences(draft.recent_narrative, index, report, NARRATIVE_MAX_CHARS))
    return ModelItems(
        findings=findings,
        decisions=decisions,
        replaces_decisions=written and bool(decisions),
        reasons=reasons,
        completed=completed,
        remaining=remaining,
        blockers=blockers,
        narrative=narrative,
    )


def _item(text: str) -> str:
    return redacted(" ".join(text.split()))
