"""Merge: the summary document assembled from the exact facts and the working state (``extract.state``), the work
log, the grounded part of the model's draft, and the previous summary (a later compaction adds to it):

- decisions: the agent's words before each edit (its first sentence, then its reason);
- failed attempts: what failed and why, what the agent said next, and the later run of the same check that passed;
- the task state: completed = the agent's to-do items done and the failures a later run resolved; remaining = the
  task (unless a constraint holds its turn whole), the to-do list's open items and the list in the agent's last words to
  the user; blockers = the newest failures no later run got past (never a read that found nothing);
- files: each file changed with its net change; the narrative ends with the agent's last words.
A newer to-do list replaces the previous summary's items of an older one.

What is kept when there is too much: previous constraints are never dropped (new ones follow them up to the
schema's bound); a user turn kept whole past ``MAX_TURN_CHARS`` gives way to its instruction sentences only when
the constraints outgrow their own bound (``Budget.constraint_tokens``, ``turns_within``).
Everything else is bounded by the schema's list lengths and, when the caller gives one, by a
token budget (``fit``): the tool-call entries keep the newest distinct ones that fit in their share of the
budget (``TOOL_CALLS_SHARE``) and the oldest decisions go first (in the written-state mode the model's decisions
stay, and go only with the completed items); then the work log is packed into the room left,
line by line, by the names each line adds (``pack.py``); only if the rest alone is over the budget, the older
failures and files lose their detail, then failed attempts, completed items, files and the remaining tool calls go
(oldest first). Every item a bound drops is counted (``clipped_items``); all of them stay in the archive of replaced
messages. Before any of that, a call repeated in a row with nothing said (a poll) becomes one step of the work log
with its count (``pack.collapse_repeats``), the previous summary's last step included, so a run that goes on
across compactions keeps counting."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..extract.calls import todo_line
from ..extract.constraints import MAX_TURN_CHARS, turn_sentences
from ..extract.facts import Facts
from ..extract.steps import names
from ..secrets.redact import redact
from ..tokens.protocol import CountsTokens
from . import schema as S
from .draft import Draft
from .ground import GroundingReport, SourceIndex
from .intake import ModelItems, model_items
from .pack import Material, clip, collapse_repeats, pack, read, redacted
from .written import WrittenState


class ClipCounter(Protocol):
    """Where ``merge`` counts the items its bounds drop (``CompressionStats``)."""

    clipped_items: int


def _unique(items: Sequence[Any], key: Callable[[Any], Any] = lambda item: item) -> list[Any]:
    """First occurrence of each item, in order."""
    first: dict[Any, Any] = {}
    for item in items:
        first.setdefault(key(item), item)
    return list(first.values())


def _latest(items: Sequence[Any], key: Callable[[Any], Any] = lambda item: item) -> list[Any]:
    """Last occurrence of each item, ordered by that last occurrence (a call repeated late stays, with its
    latest outcome, when a bound later keeps only the newest entries)."""
    return list(reversed(_unique(list(reversed(items)), key)))


TOLD = 3  # under a tight budget, the newest failures and files that keep their detail
BLOCKERS = 3  # the newest unresolved failures a task state names as blockers (across compactions)


def _failures(facts: Facts) -> list[S.FailedAttempt]:
    """The failed calls of the summarised part: what was tried, the line that says why, what the agent said next
    and the later run of the same check that succeeded (``extract.state``)."""
    after = {f.call_index: f for f in facts.state.failures}
    out = []
    for f in facts.failed_attempts:
        seen = after.get(f.call_index)
        out.append(
            S.FailedAttempt(
                approach=redacted(" ".join(f.approach.split())),
                reason_failed=redacted(" ".join(f.reason_failed.split())),
                then=redacted(" ".join(seen.then.split())) if seen else "",
                resolved_by=redacted(seen.resolved_by) if seen else "",
            )
        )
    return out


def _resolved(previous: list[S.FailedAttempt], facts: Facts) -> list[S.FailedAttempt]:
    """An earlier summary's failures, each marked resolved when the same command succeeded since."""
    ok = {" ".join(e.command.split()) for e in facts.tool_events if e.outcome == "success"}
    return [
        f.model_copy(update={"resolved_by": redacted(f.approach)})
        if not f.resolved_by and " ".join(f.approach.split()) in ok
        else f
        for f in previous
    ]


def _resolved_item(blocker: str, facts: Facts) -> bool:
    """An earlier blocker whose failure a run of the same check has since resolved."""
    return any(f.resolved_by and " ".join(f.error.split()) == blocker for f in facts.state.failures)


def _files(previous: Sequence[S.FileChange], changed: Sequence[Any]) -> list[S.FileChange]:
    """The earlier summary's files, updated with the net changes of the part summarised now (``FileState``)."""
    out = {f.path: f for f in previous}
    for f in changed:
        old = out.pop(f.path, None)
        now = [redacted(x, S.MAX_SAW_CHARS) for x in f.now]
        change = f.change
        if old is not None:
            now = [*old.now, *now] if f.change == "modified" else now
            change = "created" if old.change == "created" and change != "deleted" else change
        out[f.path] = S.FileChange(
            path=redacted(f.path, S.MAX_TARGET_CHARS),
            change=change,
            now=now[-S.MAX_FILE_LINES :],
            edits=f.edits + (old.edits if old else 0),
        )
    return list(out.values())


def _bounded(items: list[Any], limit: int, stats: ClipCounter, *, keep: str = "newest") -> list[Any]:
    """Keep the newest (or, for prioritised lists, the first) ``limit`` items; count what had to go, so nothing
    is dropped silently (``stats.clipped_items``)."""
    if len(items) > limit:
        stats.clipped_items += len(items) - limit
        return items[:limit] if keep == "first" else items[-limit:]
    return items


@dataclass(frozen=True)
class Sources:
    """What a summary is assembled from: the exact facts of the messages it replaces, the index its model items
    are grounded against, the previous summary it adds to, and the texts of the messages kept verbatim around it
    (what they name is not paid for twice)."""

    facts: Facts
    index: SourceIndex
    previous: S.CompressedContext | None = None
    kept_texts: Sequence[str] = ()


TOOL_CALLS_SHARE = 0.05  # of the budget, kept for the newest distinct tool calls (chosen on the replay design split)


@dataclass(frozen=True)
class Budget:
    """A summary's token budget, counted by the target's counter on the canonical JSON. ``tool_calls_share``: the
    share of it the newest distinct (tool, target, outcome) entries may keep before anything else is cut."""

    tokens: int
    counter: CountsTokens
    tool_calls_share: float | None = None  # None: TOOL_CALLS_SHARE
    # The most tokens the user's constraints may take before a turn kept whole past MAX_TURN_CHARS gives way to its
    # instruction sentences (the hook: the summary's share of the window). None: ``tokens``.
    constraint_tokens: int | None = None


DONE_STATUSES = frozenset({"completed", "complete", "done", "finished"})
_PLAN_ITEM = re.compile(r"\[[\w -]{1,24}\] ")  # an item ``todo_line`` wrote: "[in_progress] write the test"


def todo_items(todo: Sequence[tuple[str, str]] | None) -> tuple[list[str], list[str]]:
    """(completed, remaining) task-state items of the agent's latest to-do list (``Facts.todo``), each as the work log
    shows it (``todo_line``): its items marked done, and the others, in the list's order."""
    done: list[str] = []
    left: list[str] = []
    for status, text in todo or ():
        (done if status.lower() in DONE_STATUSES else left).append(redacted(todo_line(status, text)))
    return done, left


def _from_a_todo_list(item: str) -> bool:
    return _PLAN_ITEM.match(item) is not None


def merge(
    sources: Sources,
    draft: Draft | WrittenState,
    report: GroundingReport,
    stats: ClipCounter,
    budget: Budget | None = None,
) -> S.CompressedContext:
    """Assemble the document: exact facts as they are, model items only where grounded, the previous
    summary's items first (a later compaction adds, it does not forget), then fit it to ``budget``."""
    return merge_carried(sources, draft, report, stats, budget)[0]


def merge_carried(
    sources: Sources,
    draft: Draft | WrittenState,
    report: GroundingReport,
    stats: ClipCounter,
    budget: Budget | None = None,
) -> tuple[S.CompressedContext, S.CompressedContext]:
    """``merge``'s document, and the one a later compaction merges instead (``carried``): fitted to the same budget,
    but a work-log line whose names only the messages kept verbatim or the narrative show stays in it. Those go:
    the kept messages are summarised at the next compaction, from their own lines, and its narrative is new; a
    line left out for them would be lost for good (docs/replay.md, "What a later compaction merges")."""
    facts, index = sources.facts, sources.index
    prev = sources.previous or S.CompressedContext()
    constraints = _constraints(prev, facts)
    # the model's part, grounded (intake.py says where each of its fields goes)
    model = model_items(draft, index, report, len(facts.failed_attempts))
    decisions = _decisions(prev, facts, model)
    failed = _failed(prev, facts, model)
    calls = _tool_calls(prev, facts)
    completed, remaining = _progress(prev, facts, model)
    blockers = _blockers(prev, facts, model)
    material = _work_material(prev, facts, stats)
    narrative = _narrative(model.narrative, facts.state.last_words)
    doc = S.CompressedContext(
        user_constraints=_bounded(constraints, S.MAX_CONSTRAINTS, stats, keep="first"),
        decisions=_bounded(_latest(decisions), S.MAX_DECISIONS, stats),
        failed_attempts=_bounded(_latest(failed), S.MAX_FAILED, stats),
        tool_calls_summary=_bounded(_latest(calls, key=lambda c: (c.tool, c.target)), S.MAX_TOOL_CALLS, stats),
        recent_narrative=narrative,
        task_state=S.TaskState(
            completed=_bounded(_latest(completed), S.MAX_STATE_ITEMS, stats),
            remaining=_bounded(_unique(remaining), S.MAX_STATE_ITEMS, stats, keep="first"),
            blockers=_bounded(_latest(blockers), S.MAX_STATE_ITEMS, stats),
        ),
        findings=_bounded(model.findings or list(prev.findings), S.MAX_FINDINGS, stats),
        files=_bounded(_files(prev.files, facts.state.files), S.MAX_FILES, stats),
        work_log=[m.whole() for m in material],
    )
    if budget is None:
        return doc, doc
    return _fitted(doc, sources, draft, budget, stats, material)


def _constraints(prev: S.CompressedContext, facts: Facts) -> list[str]:
    """The user's constraints: the previous summary's first (a bound keeps them), then the new ones that fit."""
    new = [c for c in (redact(c.text) for c in facts.constraint_candidates) if len(c) <= S.MAX_CONSTRAINT_CHARS]
    return _unique(list(prev.user_constraints) + new)  # previous first: a bound keeps them


def _decisions(prev: S.CompressedContext, facts: Facts, model: ModelItems) -> list[S.Decision]:
    """Earlier decisions, the agent's words before each edit (unless the model's replace them), the model's."""
    positional = () if model.replaces_decisions else facts.state.decisions
    ours = [S.Decision(decision=redacted(d.decision), rationale=redacted(d.rationale)) for d in positional]
    return [*prev.decisions, *ours, *model.decisions]


def _failed(prev: S.CompressedContext, facts: Facts, model: ModelItems) -> list[S.FailedAttempt]:
    """The previous summary's failures (marked resolved since), then this part's with the model's reasons."""
    failures = [
        f.model_copy(update={"then": model.reasons[n]}) if n in model.reasons else f
        for n, f in enumerate(_failures(facts), start=1)
    ]
    return _resolved(list(prev.failed_attempts), facts) + failures


def _tool_calls(prev: S.CompressedContext, facts: Facts) -> list[S.ToolCallSummary]:
    """The previous summary's tool-call entries, then one per call of the summarised part."""
    return list(prev.tool_calls_summary) + [
        S.ToolCallSummary(
            tool=redacted(e.tool, S.MAX_TOOL_CHARS),
            target=redacted(" ".join(e.target.split()), S.MAX_TARGET_CHARS),
            outcome=e.outcome or "partial",  # a call never answered (e.g. the final submit) did not complete
        )
        for e in facts.tool_events
    ]


def _progress(prev: S.CompressedContext, facts: Facts, model: ModelItems) -> tuple[list[str], list[str]]:
    """(completed, remaining) items of the task state: the previous summary's, the task, the to-do list's, the
    model's."""
    done, left = todo_items(facts.todo)
    superseded = _from_a_todo_list if facts.todo is not None else lambda _: False  # a newer list replaces the older one
    completed = [x for x in prev.task_state.completed if not superseded(x)] + done + model.completed
    remaining = [x for x in prev.task_state.remaining if not superseded(x)] + _task_item(facts) + left
    remaining += [redacted(x) for x in facts.state.open_items] + model.remaining
    return completed, remaining


def _task_item(facts: Facts) -> list[str]:
    """The task as a remaining item, unless the constraints hold its turn whole already."""
    task = facts.task.strip()
    if not task or any(c.message_index == facts.task_index and task in c.text for c in facts.constraint_candidates):
        return []
    return [clip("Task: " + redact(" ".join(facts.task.split())), S.MAX_ITEM_CHARS)]


def _blockers(prev: S.CompressedContext, facts: Facts, model: ModelItems) -> list[str]:
    """The newest failures whose check no later run got past (not a failed read), then the model's."""
    open_failures = [f for f in facts.state.failures if not f.passed and not f.probe and f.error]
    blockers = [x for x in prev.task_state.blockers if not _resolved_item(x, facts)]
    blockers += [redacted(" ".join(f.error.split())) for f in open_failures]
    return _latest(blockers)[-BLOCKERS:] + model.blockers


def _work_material(prev: S.CompressedContext, facts: Facts, stats: ClipCounter) -> list[Material]:
    """The work log before any budget: earlier steps then this part's, repeats collapsed, within the schema's bound."""
    steps = [Material.of_step(s) for s in prev.work_log] + [Material.of_step(s) for s in facts.steps]
    return _bounded(_latest(collapse_repeats(steps), key=Material.key), S.MAX_STEPS, stats)


def _narrative(narrative: str, words: Sequence[str]) -> str:
    """The model's narrative, then the agent's last words, within the schema's bound."""
    last_words = "\n".join(f"[assistant] {redact(' '.join(w.split()))}" for w in words)
    full_narrative = "\n".join(part for part in (narrative, last_words) if part)
    return clip(full_narrative, S.MAX_NARRATIVE_CHARS)


def _fitted(
    doc: S.CompressedContext,
    sources: Sources,
    draft: Draft | WrittenState,
    budget: Budget,
    stats: ClipCounter,
    material: list[Material],
) -> tuple[S.CompressedContext, S.CompressedContext]:
    """The document shown and the one carried, each fitted to ``budget`` (the long turns split first)."""
    bound = budget.tokens if budget.constraint_tokens is None else budget.constraint_tokens
    doc = turns_within(doc, bound, budget.counter, stats)
    known = set().union(*(names(t) for t in sources.kept_texts)) if sources.kept_texts else set()
    # a capable model's decisions are what it was asked for: the work log gives way to them (docs/resume.md, round 8)
    first = not isinstance(draft, WrittenState)
    shown = fit(doc, budget, stats, known=known, material=material, decisions_first=first)
    carried = fit(doc, budget, _Uncounted(), material=material, lasting=True, decisions_first=first)
    return shown, carried


@dataclass
class _Uncounted:
    """Where the carried document's cuts are counted: not in the stats (they describe the summary shown)."""

    clipped_items: int = 0


def _cost(count_text: Any, item: Any) -> int:
    """Tokens of one item of a list of the document (its JSON and a separator)."""
    return count_text(item.model_dump_json() if hasattr(item, "model_dump_json") else json.dumps(item)) + 1


def fit(
    doc: S.CompressedContext,
    budget: Budget,
    stats: ClipCounter,
    *,
    known: set[str] | frozenset[str] = frozenset(),
    material: Sequence[Material] | None = None,
    lasting: bool = False,
    decisions_first: bool = True,
) -> S.CompressedContext:
    """Cut ``doc`` to ``budget.tokens`` (see the module docstring for the order); a ``doc`` within it keeps the
    lines of its work log that add a name (``pack.py``) and all else. Over it: the tool-call entries keep the
    newest that fit in their share of the budget, the oldest decisions go first (``decisions_first``; off in the
    written-state mode, whose decisions then go with the completed items); then the work log is packed into
    the room left (``pack.py``: its pieces by the names they add, newest steps first); then failed attempts,
    completed items and the remaining tool calls go, oldest first. ``material``: the
    work log before any cut (default: ``doc``'s own).
    Constraints and the remaining task are never dropped (``turns_within`` is what may split a long user turn,
    before this), so a document can stay above the budget; the caller measures it. Every item dropped is counted.
    ``lasting``: the narrative does not count among what shows a name (the next compaction writes it anew;
    ``merge_carried``, which gives no ``known`` either)."""

    budget_tokens, count_text = budget.tokens, budget.counter.count_text
    steps = list(material) if material is not None else [Material.of_step(s) for s in doc.work_log]
    total = count_text(doc.to_json())
    if total <= budget_tokens:
        # Under the budget the work log keeps what adds a name, by the packer's own rule: a line whose names the
        # rest of the summary, the lines taken before it or the messages kept verbatim show already is not paid
        # for twice (chosen on the design splits, docs/replay.md "Lines that add no name").
        known = _shown(doc.model_copy(update={"work_log": []}), known, lasting)
        work_log = pack(read(steps, budget.counter), budget_tokens, budget.counter, known=known)
        stats.clipped_items += len(steps) - len(work_log)
        return doc.model_copy(update={"work_log": work_log})
    cut = _Cut(doc, budget_tokens, count_text, stats)
    # The tool calls wait: they are chosen after the work log, among the calls it no longer shows.
    calls = cut.lists["tool_calls_summary"]
    cut.lists["tool_calls_summary"] = []
    share = TOOL_CALLS_SHARE if budget.tool_calls_share is None else budget.tool_calls_share
    reserve = int(share * budget_tokens) if calls else 0
    total = count_text(cut.build(list(doc.work_log)).to_json())
    # the decisions go first (the work log says the same words with what was done; measured on resume-qa,
    # docs/resume.md), then the work log fills the room the rest leaves; when the rest alone is over, the oldest
    # completed items, failures and files go
    if cut.drop_oldest(("decisions",) if decisions_first else (), total) <= budget_tokens - reserve:
        work_log = list(doc.work_log)
    else:
        cut.make_room(reserve, decisions_first)
        known = _shown(cut.build([]), known, lasting)  # what the rest of the document says is not paid twice
        work_log = _packed(read(steps, budget.counter), budget_tokens - reserve, budget, known, cut.build)
    stats.clipped_items += len(steps) - len(work_log)
    cut.lists["tool_calls_summary"] = cut.uncovered_calls(calls, work_log)
    return cut.build(work_log)


_CUT = ("tool_calls_summary", "decisions", "findings", "failed_attempts", "files")  # and the completed items


class _Cut:
    """The lists ``fit`` cuts from a document over its budget, and the document they make with a work log."""

    def __init__(
        self, doc: S.CompressedContext, budget_tokens: int, count_text: Callable[[str], int], stats: ClipCounter
    ) -> None:
        self.doc, self.budget_tokens, self.count_text, self.stats = doc, budget_tokens, count_text, stats
        self.cost = functools.partial(_cost, count_text)
        self.lists: dict[str, list[Any]] = {k: list(getattr(doc, k)) for k in _CUT}
        self.lists["completed"] = list(doc.task_state.completed)

    def build(self, work_log: list[S.Step]) -> S.CompressedContext:
        """The document with the lists as cut so far and ``work_log``."""
        task_state = self.doc.task_state.model_copy(update={"completed": self.lists["completed"]})
        update = {k: self.lists[k] for k in _CUT} | {"work_log": work_log, "task_state": task_state}
        return self.doc.model_copy(update=update)

    def drop_oldest(self, keys: tuple[str, ...], total: int) -> int:
        """Drop (and count) the oldest items of these lists, in order, while ``total`` is over the budget."""
        for name in keys:
            items = self.lists[name]
            item_costs = [self.cost(x) for x in items]
            while total > self.budget_tokens and items:
                total -= item_costs.pop(0)
                items.pop(0)
                self.stats.clipped_items += 1
        return total

    def make_room(self, reserve: int, decisions_first: bool) -> None:
        """When the rest alone is over the budget less its ``reserve``: less detail, then fewer items (``fit``)."""
        base = self.count_text(self.build([]).to_json())
        if base > self.budget_tokens - reserve:
            # the rest alone is over (a small window, a long run): the older failures and files say less first
            # (what failed and why, which file changed how; the rest is in the archive), then the oldest go
            failed, files = self.lists["failed_attempts"], self.lists["files"]
            lean = {"then": "", "resolved_by": ""}
            self.lists["failed_attempts"] = [f.model_copy(update=lean) for f in failed[:-TOLD]] + failed[-TOLD:]
            self.lists["files"] = [f.model_copy(update={"now": []}) for f in files[:-TOLD]] + files[-TOLD:]
            base = self.count_text(self.build([]).to_json())
            # what the first cut left of the decisions stays; a model's findings, then its decisions, go after the
            # completed items
            written = () if decisions_first else ("findings", "decisions")
            self.drop_oldest(("completed", *written, "failed_attempts", "files"), base + reserve)

    def uncovered_calls(self, calls: list[S.ToolCallSummary], work_log: list[S.Step]) -> list[S.ToolCallSummary]:
        """The newest distinct calls whose target the kept work log does not show (what the agent did in the steps
        the budget left out), as many as fit in what the budget has left; the others are counted as dropped."""
        shown = "\n".join(step.ran for step in work_log)
        candidates = [c for c in calls if not c.target or c.target not in shown]
        self.stats.clipped_items += len(calls) - len(candidates)
        room = self.budget_tokens - self.count_text(self.build(work_log).to_json())
        kept: list[S.ToolCallSummary] = []
        for call in reversed(candidates):
            c = self.cost(call)
            if c > room:
                break
            kept.append(call)
            room -= c
        self.stats.clipped_items += len(candidates) - len(kept)
        return kept[::-1]


def _shown(rest: S.CompressedContext, known: set[str] | frozenset[str], lasting: bool) -> set[str]:
    """The names a work-log line need not add: those of ``known`` and of ``rest`` (``lasting``: not of its narrative,
    which the next compaction writes anew)."""
    if lasting:
        rest = rest.model_copy(update={"recent_narrative": ""})
    return set(known) | names(rest.to_json())


def turns_within(
    doc: S.CompressedContext, bound: int, counter: CountsTokens, stats: ClipCounter
) -> S.CompressedContext:
    """``doc`` with its constraints within ``bound`` tokens where the long turns allow it: while they are over it,
    the longest turn kept whole past ``MAX_TURN_CHARS`` gives way to its instruction sentences (``turn_sentences``,
    verbatim, after the other constraints: the schema's bound on their number then drops pieces, never a whole
    turn). A user's words are never dropped otherwise: constraints within the bound, or with no long turn left,
    stay as they are."""
    constraints = list(doc.user_constraints)
    # a bound of 0 (a history that must shrink: ``CompactionHook.compact(must_shrink=True)``, the last resort) lets
    # a turn of any length give way; the turns stay in the archive
    whole = 0 if bound <= 0 else MAX_TURN_CHARS
    if not any(len(c) > whole for c in constraints):
        return doc  # the common case: nothing to give way
    costs: dict[str, int] = {}  # each item is counted once, however many turns are split

    def tokens(items: list[str]) -> int:
        for c in items:
            if c not in costs:
                costs[c] = _cost(counter.count_text, c)
        return sum(costs[c] for c in items)

    pieces: list[str] = []
    # only what the schema's bound on their number keeps is counted (the rest is dropped below)
    while tokens(constraints) + tokens(pieces[: max(0, S.MAX_CONSTRAINTS - len(constraints))]) > bound:
        long = [k for k, c in enumerate(constraints) if len(c) > whole]
        if not long:
            break
        k = max(long, key=lambda k: (len(constraints[k]), -k))  # the longest (the oldest of equal ones)
        turn = constraints.pop(k)
        present = set(constraints) | set(pieces)
        pieces += [p for p in turn_sentences(turn) if p not in present]
        stats.clipped_items += 1
    kept = _bounded(constraints + pieces, S.MAX_CONSTRAINTS, stats, keep="first")
    return doc.model_copy(update={"user_constraints": kept})


def _packed(pieces: Any, target: int, budget: Budget, known: set[str], build: Any) -> list[S.Step]:
    """The fullest work log whose document fits in ``target`` tokens. pack's costs are per piece, so the exact
    total differs a little: pack again with the room corrected by what the exact count says."""
    count_text = budget.counter.count_text
    room = target - count_text(build([]).to_json())
    work_log: list[S.Step] = []
    best = -1
    for _ in range(4):
        if room <= 0:
            break
        packed = pack(pieces, room, budget.counter, known=known)
        exact = count_text(build(packed).to_json())
        if exact <= target and exact > best:
            work_log, best = packed, exact
        if target - 16 <= exact <= target:
            break
        room += target - exact - (8 if exact > target else 0)
    return work_log
