"""Compacting harder: what the hook does when a compaction leaves the history above its target (the loop guard).

When the recent messages must be cut whatever the summary gives (with the summary at its floor the history would
still not fit the window: one enormous tool output), they are cut first, as far as getting under the trigger needs,
and the summary is kept whole: it is the agent's only memory of what came before, while a cut message keeps its
start and end, and the archive (searched by ``recall``) its whole text. Otherwise the summary is cut to a smaller
budget after the fact (``summary.merge.fit`` on the summary already written: fewer tool-call entries, work-log lines and
sentences of what the agent said, by what each adds; no second model call), down to a floor, as far as the target
needs, else as far as getting under the trigger needs (so that the next step does not fire it again), else to the
floor. Then, the last resort, when the caller allows it and the history would still not fit its window, the longest
recent messages kept verbatim are cut (``hook.shrink``: the assistant's thoughts first, then tool outputs). Each
step is kept only if the history gets smaller; what was done is said in ``Replacement.harder``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..history.messages import Message
from ..summary.merge import Budget, fit, turns_within
from ..summary.pack import names
from ..summary.plan import Plan
from ..tokens.protocol import CountsTokens
from .shrink import shorten_recent

if TYPE_CHECKING:
    from ..compressor import CompressionResult
    from ..summary.schema import CompressedContext

FLOOR_TOKENS = 256  # the summary's budget is cut down to this, no lower (unless the history must shrink)
# ...and a cut toward the target (not the trigger) keeps at least this share of the summary. 1.0: a history between
# the target and the trigger keeps its summary whole, and the hold stops the loop. Measured on the replay design
# splits (docs/replay.md): cutting toward the target to half the summary cost 9.8 points of probe recall at 8k and
# 1.4 at 16k, to three quarters 4.3 and 0.2 more. Over the trigger the summary is cut as far as needed (it would
# fire again at the next step); a HARD request that must shrink the history cuts it too (``floor=``).
KEEP_SHARE = 1.0


@dataclass(frozen=True)
class Replacement:
    """A compaction ready to commit: the summary of ``plan``'s ``[head, cut)``, its message, the new history (and
    parsed) and the token counts before and after."""

    plan: Plan
    result: CompressionResult
    message: dict[str, Any]
    history: list[Any]
    tokens_before: int
    tokens_after: int
    parsed: tuple[Message, ...] = ()
    harder: tuple[str, ...] = ()  # what compacting harder did, in order
    shortened: tuple[int, ...] = ()  # indices (in ``history``) of the recent messages that were cut
    # the summary before compacting harder cut it: what the next compaction merges (a cut fits this context; what
    # it left out of the context is not forgotten)
    uncut: CompressedContext | None = None


def refit(
    result: CompressionResult,
    budget: int,
    kept: list[Message],
    counter: CountsTokens,
    constraint_tokens: int | None = None,
) -> CompressionResult:
    """``result`` with its summary cut to ``budget`` tokens (``summary.merge.fit``); what the ``kept`` messages name
    already is not paid for twice. ``constraint_tokens``: the constraints' bound (``summary.merge.Budget``); None: they
    stay as the summary has them (a cut after the fact does not split a user's turn)."""
    known: set[str] = set().union(*(names(m.text_and_arguments) for m in kept))
    stats = result.stats.model_copy()
    context = result.context
    if constraint_tokens is not None:
        context = turns_within(context, constraint_tokens, counter, stats)
    context = fit(context, Budget(budget, counter), stats, known=known)
    return result.model_copy(update={"context": context, "stats": stats})


def compact_harder(
    r: Replacement,
    rebuild: Callable[[CompressionResult], Replacement],
    counter: CountsTokens,
    aims: Sequence[int],
    *,
    fit_within: int | None = None,
    shorten: bool = False,
    floor: int | None = None,
    keep_share: float = KEEP_SHARE,
    constraint_tokens: int | None = None,
    room: int = 0,
) -> Replacement:
    """``r`` compacted harder. When ``shorten`` and the history would hold more than ``fit_within`` even with the
    summary at ``FLOOR_TOKENS`` (no ``floor`` given), the recent messages are cut first toward the last aim (then
    the first), the summary left whole, if that gets the history under the last aim. Otherwise the summary's
    budget is cut (never below ``floor``; by default ``keep_share`` of the summary, at least ``FLOOR_TOKENS``; over
    the last aim, the trigger, only as far as getting under it needs, unless a cut down to ``keep_share`` reaches
    the first aim) as far as the first of ``aims`` (tokens of the history) that cutting it can reach, and no
    further; when none can be reached, to the floor (as close as it gets). Before the summary is cut below
    ``room`` tokens to get under the last aim (``shorten`` only), the tool outputs among the recent messages are
    cut as far as leaving it that room needs. Then, the last resort, if ``shorten`` and the history still holds
    more than ``fit_within`` (it would not fit), its recent messages are cut toward the first aim (from their
    original text). ``rebuild``: the replacement for another result of the same plan. ``constraint_tokens``: as
    for ``refit``."""
    plan, start, given = r.plan, r.plan.head + 1, r
    size = counter.count_text(r.result.context.to_json())
    if r.tokens_after <= aims[0]:
        return r
    smallest = r.tokens_after - max(0, size - FLOOR_TOKENS)  # the history with the summary at its floor
    if shorten and fit_within is not None and floor is None and smallest > fit_within:
        # the recent messages are cut whatever the summary gives (at its floor the history would still not fit):
        # they give way first, as far as getting under the trigger needs (toward the target when the cut's
        # estimate of characters per token missed), and the summary stays whole
        for aim in dict.fromkeys((aims[-1], aims[0])):  # one aim: one try
            cut_first = _shortened(r, start, aim, counter)
            if cut_first.tokens_after <= aims[-1]:
                return cut_first
    keep = min(size, room)
    if shorten and keep > FLOOR_TOKENS and floor is None and r.tokens_after - (size - keep) > aims[-1]:
        # the summary would be cut below its room to get under the trigger: the tool outputs among the recent
        # messages give way first, as far as leaving it that room needs (the agent's thoughts stay whole)
        r = _shortened(r, start, aims[-1] + size - keep, counter, thoughts=False)
        if r.tokens_after <= aims[0]:
            return r
        if r.shortened:  # a summary cut below keeps these cut messages
            rebuild = functools.partial(_with_recent, rebuild, r, counter)
    if floor is None and r.tokens_after > aims[-1]:
        # over the last aim (the trigger: it would fire again at the next step): the summary is cut as far as
        # getting under it needs, no further, unless a cut down to keep_share of it reaches the first aim
        reach = r.tokens_after - max(0, size - max(FLOOR_TOKENS, int(keep_share * size)))
        floor, aims = FLOOR_TOKENS, [aims[0] if reach <= aims[0] else aims[-1]]
    elif floor is None:  # between the target and the trigger: at most down to keep_share of the summary
        floor = max(FLOOR_TOKENS, int(keep_share * size))
    aim = next((a for a in aims if r.tokens_after - max(0, size - floor) <= a), aims[-1])
    kept = [*r.parsed[: plan.head], *r.parsed[start:]]  # the head and the recent messages
    first = r
    for _ in range(3):  # fit counts item by item, the history as a whole: correct by what was missed
        now = counter.count_text(r.result.context.to_json())
        budget = max(floor, now - (r.tokens_after - aim))
        if r.tokens_after <= aim or budget >= now:
            break
        smaller = rebuild(refit(r.result, budget, kept, counter, constraint_tokens))
        if smaller.tokens_after >= r.tokens_after:
            break
        r = smaller
    if r is not first:
        cut_to = counter.count_text(r.result.context.to_json())
        uncut = first.uncut or first.result.carried or first.result.context
        r = replace(r, harder=(*r.harder, f"summary cut from {size} to {cut_to} tokens"), uncut=uncut)
    if not shorten or fit_within is None or r.tokens_after <= fit_within:
        return r
    return _shortened(r, start, aims[0], counter, source=given)


def _with_recent(
    rebuild: Callable[[CompressionResult], Replacement],
    donor: Replacement,
    counter: CountsTokens,
    result: CompressionResult,
) -> Replacement:
    """``rebuild(result)`` with the recent messages of ``donor`` (the copies a cut made, and what it says of them)."""
    r = rebuild(result)
    history, parsed = _spliced(r, donor)
    tokens = counter.count(parsed)
    return replace(
        r, history=history, parsed=tuple(parsed), tokens_after=tokens, harder=donor.harder, shortened=donor.shortened
    )


def _spliced(r: Replacement, donor: Replacement) -> tuple[list[Any], list[Message]]:
    """``r``'s history (and parsed) up to its summary, then ``donor``'s recent messages (the same plan)."""
    start = r.plan.head + 1
    return [*r.history[:start], *donor.history[start:]], [*r.parsed[:start], *donor.parsed[start:]]


def _shortened(
    r: Replacement,
    start: int,
    aim: int,
    counter: CountsTokens,
    *,
    thoughts: bool = True,
    source: Replacement | None = None,
) -> Replacement:
    """``r`` with its recent messages (from ``start`` on) cut toward ``aim`` tokens (``shorten_recent``; the
    assistant's thoughts too, unless ``thoughts`` is false), from the recent messages of ``source`` (the ones
    before any cut; default ``r``'s own); ``r`` itself when that saves nothing."""
    history, parsed, tokens, cut = shorten_recent(*_spliced(r, source or r), start, aim, counter, thoughts=thoughts)
    if not cut or tokens >= r.tokens_after:
        return r
    what = f"{len(cut)} recent message{'s' if len(cut) > 1 else ''} cut"
    return replace(
        r, history=history, parsed=tuple(parsed), tokens_after=tokens, harder=(*r.harder, what), shortened=tuple(cut)
    )


__all__ = ["FLOOR_TOKENS", "KEEP_SHARE", "Replacement", "compact_harder", "refit"]
