"""The hook for agent loops (framework-agnostic): call ``before_step(messages)`` (or ``await
abefore_step(messages)``) before each model call and use the list it returns. When the trigger fires, the older
messages are archived on disk, then replaced by one system message holding the summary. The head (the system
prompt and the task, by default) stays verbatim before the summary, and the last messages (and the tool results
they need) stay verbatim after it:

    [*head, summary, *recent]

A compaction that would not make the history smaller is not done: the history is returned as it was and the
metrics say why. A fault of the library's own never fails the step (``safe_step``).

No compaction loops: a compaction that leaves the history above ``target_fraction`` of the window holds the trigger
until the history passes it and has grown by 5% of the window (``hook.guard``), or no longer fits it, and says so
(``over_target``; a WARNING where the head alone is over it); a firing that cannot compact holds it too. Compacting
harder (``hook.harder``) and the summary's room (``summary_room``): see the class. The next compaction merges the
summary as it was before any cut (``CompressionResult.carried``) and reads a recent message that was cut whole
(``hook.applied.uncut``): a cut fits one context, it does not forget.

Background compaction (``soft_fraction``, off by default): the summary is built in a worker thread from the soft
threshold on and swapped in when the trigger fires, if still exact (``hook.background``). A step costs what is
new (``hook.trigger.RunningTrigger``); the tokenizer loads in the background from the hook's creation on.

Calls on one hook are serialised (a lock; ``abefore_step`` runs in the hook's own worker thread), and a history
that extends one the hook has already compacted (two calls that raced, an awaited step that was cancelled, a
caller that kept its uncompacted list) gets that compaction again, never a second one of the same messages.

Each compaction is logged at INFO on the ``offline_compress.hook`` logger (details at DEBUG) and passed to the
``on_compaction`` listeners."""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..archive.recall import RECALL_NOTE
from ..archive.recall import recall_tool as archive_recall_tool
from ..archive.store import Archive, RecallHit, database_path
from ..compressor import CompressionResult, Compressor, default_compressor
from ..errors import InputError
from ..history.messages import Message, MessageCache, as_messages, parse_message
from ..summary.budget import summary_budget
from ..summary.message import summary_message
from ..summary.plan import Plan, plan_compaction
from ..summary.schema import CompressedContext
from ..tokens.protocol import CountsTokens, full_counter
from .applied import KEPT, Applied, reapply, uncut
from .background import Background, Job
from .config import HookConfig
from .guard import Guard
from .harder import Replacement, compact_harder
from .metrics import CompactionMetrics, Listener, report_compaction, report_kept
from .safe_step import safely
from .trigger import CompressionDecision, RunningTrigger

log = logging.getLogger("offline_compress.hook")  # the package's one logger (users filter on it)

HEAD_NOTE = "The messages before this summary (the instructions and the task) are kept verbatim."


def _as_list(messages: Any) -> list[Any]:
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Iterable):
        raise InputError(f"expected a list of messages, got {type(messages).__name__}", source="<messages>")
    return list(messages)


class CompactionHook:
    """Keeps an agent's history inside ``model_max_tokens`` (the agent's context window), as ``config`` says
    (``HookConfig``, or a mapping of its fields: when it fires, what stays verbatim, the summary's budget, the loop
    guard, the background build).
    ``archive_path``: the SQLite archive each compaction is committed to before a new history is returned
    (``None``: ``$XDG_STATE_HOME/offline_compress/archive.sqlite3``; a ``.jsonl`` path: the ``.sqlite3`` beside it).
    ``compressor``: what writes the summary (default: the extractive ``Compressor``).
    ``counter``: the target's ``CountsTokens`` (one with only ``count`` and ``message_counts`` works too).
    ``on_compaction``: a callable or a list of callables, called with ``(metrics, summary)`` after each
    compaction is committed (in the thread that ran it); an exception in one is logged and never reaches the
    agent's step. More can be added to ``hook.listeners``.
    The caller's list and dicts are never modified; kept messages are passed through unchanged (but for the cut
    copies that are compacting harder's last resort)."""

    def __init__(
        self,
        model_max_tokens: int,
        config: HookConfig | Mapping[str, Any] | None = None,
        *,
        archive_path: str | Path | None = None,
        compressor: Compressor | None = None,
        counter: CountsTokens | None = None,
        on_compaction: Listener | Sequence[Listener] | None = None,
    ) -> None:
        # a mapping too (options read from JSON: resume-qa's --hook); pydantic says what is wrong and where
        self.config = config = HookConfig() if config is None else HookConfig.model_validate(config)
        if model_max_tokens <= 0:
            raise ValueError(f"model_max_tokens must be positive, got {model_max_tokens}")
        listeners = [] if on_compaction is None else [on_compaction] if callable(on_compaction) else list(on_compaction)
        for listener in listeners:
            if not callable(listener) or inspect.iscoroutinefunction(listener):
                raise TypeError(f"on_compaction takes plain callables (metrics, summary), got {listener!r}")
        self.model_max_tokens = model_max_tokens
        self.archive_path = database_path(archive_path)
        self._archive_arg = archive_path
        self._archive: Archive | None = None  # opened at the first compaction or recall
        self.session = config.session or uuid.uuid4().hex
        self.listeners: list[Listener] = listeners
        self._tool_offered = False
        if compressor is not None:
            self.compressor = compressor
        if counter is None:
            from ..tokens.counter import default_counter

            counter = default_counter()
        self.counter = full_counter(counter)
        if hasattr(self.counter, "preload"):
            self.counter.preload()  # the tokenizer loads off the agent's thread; the trigger decides meanwhile
        self.trigger, self.soft_fraction = config.trigger, config.soft_fraction
        soft_tokens = None if config.soft_fraction is None else config.soft_fraction * model_max_tokens
        self._running = RunningTrigger(self.counter, model_max_tokens, soft_tokens)  # the step's inputs
        self.keep_last, self.keep_first = config.keep_last, config.keep_first
        self.summary_floor_tokens, self.summary_keep_share = config.summary_floor_tokens, config.summary_keep_share
        self.constraint_tokens = int(config.summary_fraction * model_max_tokens)  # then a long user turn is split
        self.turns_since_last_compression = 0
        self.metrics: list[CompactionMetrics] = []
        self.last_decision: CompressionDecision | None = None
        self.summary: CompressedContext | None = None
        self._merged: CompressedContext | None = None  # ``summary`` before any cut (module docstring)
        self.target_fraction = config.target
        self.guard = Guard(model_max_tokens, self.target_fraction, config.trigger.token_fraction)
        self.target_tokens, self.trigger_tokens = self.guard.target_tokens, self.guard.trigger_tokens
        self.summary_room, self.room_tokens = config.room, int(config.room * model_max_tokens)
        self._messages = MessageCache()
        self._empty_summary_tokens: int | None = None
        self._lock = threading.RLock()  # one step or compaction of this hook at a time (listeners may re-enter)
        self._open_lock = threading.Lock()  # lazy archive and worker threads
        self._applied: list[Applied] = []
        self._step_worker: ThreadPoolExecutor | None = None  # runs abefore_step / acompact
        self._background_summary = Background(f"offline-compress-summary-{self.session[:8]}")

    @functools.cached_property
    def compressor(self) -> Compressor:
        """What writes the summary: the one given, else the default (made at the first compaction); may be set."""
        return default_compressor(keep_last=self.keep_last)

    @property
    def archive(self) -> Archive:
        with self._open_lock:
            if self._archive is None:
                self._archive = Archive(self._archive_arg)
            return self._archive

    def recall(self, query: str, k: int = 5) -> list[RecallHit]:
        """The archived messages of this session that best match ``query`` (redacted snippets, best first)."""
        return self.archive.recall(query, k=k, session=self.session)

    def recall_tool(self) -> tuple[dict[str, Any], Any]:
        """(OpenAI tool definition, ``handler(arguments) -> str``) for the agent to search this session's archive.
        From now on the summary tells the agent that it can recall (unless ``recall_note`` says otherwise)."""
        self._tool_offered = True
        return archive_recall_tool(self.archive, session=self.session)

    def close(self) -> None:
        """Wait for a background summary still being built (its result is dropped), stop the hook's worker
        threads and close the archive's database connection. The hook can be used again: all reopen on demand."""
        with self._open_lock:
            worker, self._step_worker = self._step_worker, None
            archive, self._archive = self._archive, None
        if worker is not None:
            worker.shutdown(wait=True, cancel_futures=True)
        self._background_summary.close()
        if archive is not None:
            archive.close()

    def __enter__(self) -> CompactionHook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def compactions(self) -> int:
        return sum(1 for m in self.metrics if m.outcome == "compacted")

    def before_step(self, messages: Sequence[Mapping[str, Any]]) -> list[Any]:
        """Return the history to send: ``messages`` itself (as a new list) or ``[*head, summary, *recent]``."""
        originals = _as_list(messages)
        with self._lock:
            return safely(self, "before_step", originals, lambda: self._step(originals))

    def _step(self, originals: list[Any]) -> list[Any]:
        parsed = self._messages.parse(originals)
        originals, parsed = reapply(self._applied, originals, parsed)
        self.last_decision = decision = self._running.decide(parsed, self.turns_since_last_compression, self.trigger)
        if not decision.should_compress or self.held(parsed, decision.estimated_tokens):
            self.turns_since_last_compression += 1
            self._background(parsed, decision.estimated_tokens)
            return originals
        return self._compact(originals, parsed, decision.reason, decision.estimated_tokens)

    def compact(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        reason: str = "manual",
        plan: Plan | None = None,
        previous: CompressedContext | None = None,
        must_shrink: bool = False,
    ) -> list[Any]:
        """Compact now, whatever the trigger (or a hold) says (a user's "compact" command, or a model that refused
        a too-long prompt). Returns ``messages`` unchanged (as a new list) when compaction cannot shrink it.

        ``plan``: what to replace, when the caller has its own boundaries (an adapter whose framework allows cuts
        only at some messages: ``summary.plan.plan_compaction``); the summary merged is the one the plan found in
        ``messages``, or ``previous`` (one the caller read itself, e.g. another condenser's), and kept messages are
        never cut. ``must_shrink``: the summary may go below ``hook.harder.FLOOR_TOKENS`` to shrink the history."""
        originals = _as_list(messages)

        def work() -> list[Any]:
            parsed = self._messages.parse(originals)
            tokens = self.counter.count(parsed)
            return self._compact(originals, parsed, reason, tokens, plan, previous=previous, must_shrink=must_shrink)

        with self._lock:
            return safely(self, "compact", originals, work)

    async def abefore_step(self, messages: Sequence[Mapping[str, Any]]) -> list[Any]:
        """``before_step`` without blocking the event loop: it runs in the hook's own worker thread (one at a
        time per hook, in call order). The list is copied when this is called, so appending to it afterwards
        changes nothing. If the awaiting task is cancelled, a compaction already under way still completes and
        the next call with the same (or a longer) history gets it."""
        return await self._in_worker(self.before_step, _as_list(messages))

    async def acompact(self, messages: Sequence[Mapping[str, Any]], *, reason: str = "manual") -> list[Any]:
        """``compact`` without blocking the event loop (see ``abefore_step``)."""
        return await self._in_worker(functools.partial(self.compact, reason=reason), _as_list(messages))

    async def _in_worker(self, call: Callable[[list[Any]], list[Any]], messages: list[Any]) -> list[Any]:
        with self._open_lock:
            if self._step_worker is None:
                self._step_worker = ThreadPoolExecutor(1, thread_name_prefix=f"offline-compress-{self.session[:8]}")
            worker = self._step_worker
        return await asyncio.get_running_loop().run_in_executor(worker, call, messages)

    def held(self, parsed: Sequence[Message], tokens: int) -> bool:
        """The trigger is held for this history (``hook.guard``): a compaction could not get it under
        ``target_tokens`` (or could not compact at all), and it has not grown past the hold's limit since."""
        return self.guard.held(parsed, tokens)

    def hold(self, parsed: Sequence[Message], tokens: int) -> int:
        """Hold the trigger for this history until it grows by the guard's ``hold_tokens`` (adapters: after a
        summariser failed); returns the limit."""
        return self.guard.set(parsed, tokens)

    def _harder(self, originals: list[Any], r: Replacement, *, shorten: bool, must_shrink: bool) -> Replacement:
        """Compact harder (``hook.harder``): the summary toward ``target_tokens``, else under the trigger; the
        recent messages (``shorten``: the hook's own plan) only if the history would not fit the window.
        ``must_shrink``: below ``tokens_before`` too, the summary down to its required items if need be."""

        def rebuild(result: CompressionResult) -> Replacement:
            return self._replacement(originals, r.plan, result, r.tokens_before)

        out = compact_harder(
            r,
            rebuild,
            self.counter,
            [self.target_tokens, self.trigger_tokens],
            fit_within=self.model_max_tokens - 1,
            shorten=shorten,
            keep_share=self.summary_keep_share,
            room=self.room_tokens,
        )
        if must_shrink and out.tokens_after >= r.tokens_before:
            # the history must shrink: a long user turn may give way to its sentences too
            out = compact_harder(out, rebuild, self.counter, [r.tokens_before - 1], floor=1, constraint_tokens=0)
        return out

    def _plan(self, parsed: list[Message]) -> Plan:
        counts = self.counter.message_counts(parsed) if self.room_tokens else None  # no room to keep: no counts needed
        kept = self.trigger_tokens - self.room_tokens
        return plan_compaction(parsed, self.keep_first, self.keep_last, counts=counts, kept_tokens=kept)

    def _why_not(self, parsed: list[Message], plan: Plan) -> str:
        """Why nothing can be compressed under ``plan``, or ""."""
        region = plan.region
        if not region:
            return "nothing to compress between the kept head and the recent messages"
        # Any summary costs at least the empty one: a region smaller than that can only grow (no model call).
        if self._empty_summary_tokens is None:
            self._empty_summary_tokens = self.counter.count([self.summary_message(CompressedContext(), 0)])
        region_tokens = sum(self.counter.message_counts([parsed[i] for i in region]))
        if region_tokens <= self._empty_summary_tokens:
            return f"the {len(region)} messages to compress hold {region_tokens} tokens, no more than an empty summary"
        return ""

    def summary_budget_for(self, parsed: Sequence[Message], plan: Plan) -> int:
        """The summary's token budget for ``plan`` (``summary/budget.py``)."""
        c = self.config
        region = sum(self.counter.message_counts(parsed[plan.head : plan.cut])) if c.summary_ratio is not None else 0
        fraction, floor, ratio = c.summary_fraction, self.summary_floor_tokens, c.summary_ratio
        return summary_budget(region, self.model_max_tokens, fraction=fraction, floor=floor, ratio=ratio)

    def _summarise(self, parsed: list[Message], plan: Plan, previous: CompressedContext | None) -> CompressionResult:
        parsed = uncut(self._applied, parsed, plan.region)  # recent messages an earlier compaction cut, whole
        budget, bound = self.summary_budget_for(parsed, plan), self.constraint_tokens
        return self.compressor.compress_detailed(
            parsed, plan=plan, previous=previous, summary_tokens=budget, counter=self.counter, constraint_tokens=bound
        )

    def summary_message(self, context: CompressedContext, head: int) -> dict[str, Any]:
        # the recall line: the given ``recall_note``, else the default once the tool is offered
        recall = self.config.recall_note
        recall = (RECALL_NOTE if self._tool_offered else "") if recall is None else recall
        note = "\n".join(x for x in (HEAD_NOTE if head else "", recall) if x)
        return summary_message(context, note, self.config.render) | {"role": self.config.summary_role}

    def _kept_as_it_was(
        self, originals: list[Any], parsed: list[Any], reason: str, tokens: int, note: str, start: float
    ) -> list[Any]:
        """Record a firing that did not compact, hold the trigger (no retry at every step), and hand the history
        back as it was."""
        self.turns_since_last_compression += 1
        limit = self.hold(parsed, tokens)
        metrics = CompactionMetrics(
            compaction=0,
            outcome="kept",
            reason=reason,
            note=note,
            tokens_before=tokens,
            tokens_after=tokens,
            messages_before=len(parsed),
            messages_after=len(parsed),
            seconds=time.perf_counter() - start,
            target_tokens=self.target_tokens,
            hold_until=limit,
        )
        self.metrics.append(metrics)
        report_kept(log, metrics)
        return originals

    def _compact(
        self,
        originals: list[Any],
        parsed: list[Message],
        reason: str,
        tokens_before: int,
        plan: Plan | None = None,
        *,
        previous: CompressedContext | None = None,  # a caller's plan merges the summary it found, or this one
        must_shrink: bool = False,
    ) -> list[Any]:
        start = time.perf_counter()
        own = plan is None
        if plan is None:
            job = self._background_summary.take()
            if job is not None:
                swapped = self._swap(job, originals, parsed, reason, tokens_before, start)
                if swapped is not None:
                    return swapped
            plan, previous = self._plan(parsed), self._merged
        why = self._why_not(parsed, plan)
        if why:
            return self._kept_as_it_was(originals, parsed, reason, tokens_before, why, start)
        replacement = self._replacement(originals, plan, self._summarise(parsed, plan, previous), tokens_before)
        if replacement.tokens_after > self.target_tokens or (must_shrink and replacement.tokens_after >= tokens_before):
            replacement = self._harder(originals, replacement, shorten=own, must_shrink=must_shrink)
        if replacement.tokens_after >= tokens_before:
            note = f"the compacted history would hold {replacement.tokens_after} tokens, not fewer than {tokens_before}"
            return self._kept_as_it_was(originals, parsed, reason, tokens_before, note, start)
        return self._commit(originals, parsed, replacement, reason, start, background=False)

    def _replacement(
        self, originals: list[Any], plan: Plan, result: CompressionResult, tokens_before: int
    ) -> Replacement:
        message = self.summary_message(result.context, plan.head)
        history = [*originals[: plan.head], message, *originals[plan.cut :]]
        parsed = as_messages(history)
        return Replacement(
            plan, result, message, history, tokens_before, self.counter.count(parsed), parsed=tuple(parsed)
        )

    def _commit(
        self,
        originals: list[Any],
        parsed: list[Message],
        r: Replacement,
        reason: str,
        start: float,
        *,
        background: bool,
    ) -> list[Any]:
        head, cut, result, message, new_history = r.plan.head, r.plan.cut, r.result, r.message, r.history
        tokens_before, tokens_after = r.tokens_before, r.tokens_after
        at = [cut + i - (head + 1) for i in r.shortened]  # where the recent messages that were cut stand in originals
        # Archive first (committed): if this raises, the caller still has its full history and nothing was replaced.
        compaction = self.archive.record_compaction(
            self.session,
            originals,
            head=head,
            cut=cut,
            reason=reason,
            summary_json=result.context.to_json(),
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            shortened=at,  # searched by recall like the replaced ones
        )
        self.summary, self._merged = result.context, r.uncut or result.carried or result.context
        self.turns_since_last_compression = 0
        patches = tuple((k, parsed[k], new_history[i], r.parsed[i]) for k, i in zip(at, r.shortened))
        applied = Applied(parsed[:cut], head, cut, message, parse_message(message, index=head), compaction, patches)
        self._applied = [*self._applied[-(KEPT - 1) :], applied]  # the oldest dropped past KEPT
        above = tokens_after > self.trigger_tokens
        over = tokens_after > self.target_tokens
        limit = self.guard.set(r.parsed, tokens_after) if over else self.guard.release()
        metrics = CompactionMetrics(
            compaction=compaction,
            outcome="compacted",
            reason=reason,
            note=f"still above the threshold ({tokens_after} tokens): this is the smallest history there is"
            if above
            else "",
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            messages_before=len(originals),
            messages_after=len(new_history),
            head=head,
            seconds=time.perf_counter() - start,
            groundedness=result.grounding.groundedness,
            above_threshold=above,
            dropped_items=result.stats.clipped_items,
            background=background,
            summary_seconds=result.stats.total_seconds,
            target_tokens=self.target_tokens,
            over_target=over,
            harder="; ".join(r.harder),
            shortened=len(r.shortened),
            hold_until=limit,
        )
        self.metrics.append(metrics)
        report_compaction(
            log,
            metrics,
            session=self.session,
            window=self.model_max_tokens,
            head_tokens=sum(self.counter.message_counts(parsed[:head])) if over else 0,
            cut=cut,
            stats=result.stats,
            context=result.context,
            listeners=self.listeners,
        )
        return new_history

    def _background(self, parsed: list[Message], tokens: int) -> None:
        """Past the soft threshold, start a summary of the current history's older part in the worker (once;
        again only when the history stopped extending the snapshot or a compaction made it stale)."""
        soft = self._running.soft_tokens
        if soft is None or tokens <= soft or self._background_summary.current(parsed, self._merged):
            return
        plan = self._plan(parsed)
        if not self._why_not(parsed, plan):
            self._background_summary.start(parsed, plan, self._merged, tokens, self._summarise)

    def _swap(
        self, job: Job, originals: list[Any], parsed: list[Message], reason: str, tokens_before: int, start: float
    ) -> list[Any] | None:
        """The history with the background summary in place of the snapshot's ``[head, cut)`` and everything
        after it kept verbatim; None (compact as usual) when that would not be exact or not enough."""
        result = job.result(parsed, self._merged)
        if result is None:
            return None
        r = self._replacement(originals, job.plan, result, tokens_before)  # as built: exactly its snapshot's summary
        if r.tokens_after >= tokens_before or r.tokens_after > self.trigger_tokens:
            log.debug(
                "background summary dropped: the swapped history would hold %d tokens (%d before), too many "
                "messages arrived since its snapshot at %d tokens",
                r.tokens_after,
                tokens_before,
                job.tokens,
            )
            return None
        return self._commit(originals, parsed, r, reason, start, background=True)
