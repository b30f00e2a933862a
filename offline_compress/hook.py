"""The hook for agent loops (framework-agnostic): call ``before_step(messages)`` (or ``await
abefore_step(messages)``) before each model call and use the list it returns. When the trigger fires, the older
messages are archived on disk, then replaced by one system message holding the summary. The head (the system
prompt and the task, by default) stays verbatim before the summary, and the last messages (and the tool results
they need) stay verbatim after it:

    [*head, summary, *recent]

A compaction that would not make the history smaller is not done: the history is returned as it was and the
metrics say why.

Background compaction (``soft_fraction``, off by default): once the history passes the soft threshold, the
summary of its older part is built in a worker thread while the agent keeps stepping; when the trigger fires,
that summary is swapped in and every message that arrived meanwhile is kept verbatim after it, so the step waits
for what is left of the summary's time (often nothing) instead of all of it. The summary describes exactly the
messages it replaces (the snapshot's ``[head, cut)``): if the caller's history no longer starts with the
snapshot's messages, the background summary is thrown away and the compaction runs as usual.

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
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .archive.recall import RECALL_NOTE
from .archive.recall import recall_tool as archive_recall_tool
from .archive.store import Archive, RecallHit, database_path
from .compressor import DEFAULT_KEEP_LAST, CompressionResult, Compressor, default_compressor
from .errors import InputError
from .history.conventions import is_tool_output
from .history.cut import splits_a_call, starts_with
from .history.messages import Message, MessageCache, as_messages, parse_message
from .history.plan import Plan, plan_compaction
from .history.trigger import CompressionDecision, TriggerConfig, evaluate_compression
from .metrics import CompactionMetrics, Listener
from .summary.message import summary_message
from .summary.render import RENDERS, Render
from .summary.schema import CompressedContext
from .tokens.protocol import CountsTokens

log = logging.getLogger(__name__)

DEFAULT_SUMMARY_FRACTION = 0.35  # chosen on the replay A/B design split (docs/replay.md): binds below ~9k windows
DEFAULT_SUMMARY_MAX_TOKENS = 3072  # replay A/B (docs/replay.md): under half of what observation masking adds at 16k-32k
HEAD_NOTE = "The messages before this summary (the instructions and the task) are kept verbatim."
REPLAYABLE = 8  # recent compactions a history that extends their input is matched against


@dataclass(frozen=True)
class _Applied:
    """A compaction the hook returned: its input's first ``cut`` messages, and what replaced ``[head, cut)``."""

    prefix: list[Message]
    head: int
    cut: int
    message: dict[str, Any]
    parsed_message: Message
    number: int


@dataclass(frozen=True)
class _Job:
    """A summary being built in the background from a snapshot of the history at the soft threshold."""

    prefix: list[Message]  # the snapshot's first ``cut`` messages: the swap needs the history to start with them
    plan: Plan
    previous: CompressedContext | None  # the hook's summary it merges: a compaction since makes it stale
    future: Future[CompressionResult]
    tokens: int


@dataclass(frozen=True)
class _Replacement:
    """A compaction ready to commit: the summary of ``plan``'s ``[head, cut)``, its message, the new history and
    the token counts before and after."""

    plan: Plan
    result: CompressionResult
    message: dict[str, Any]
    history: list[Any]
    tokens_before: int
    tokens_after: int


def _as_list(messages: Any) -> list[Any]:
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Iterable):
        raise InputError(f"expected a list of messages, got {type(messages).__name__}", source="<messages>")
    return list(messages)


class CompactionHook:
    """Keeps an agent's history inside ``model_max_tokens``.

    ``archive_path``: the SQLite archive (``archive.py``) each compaction is committed to before a new history
    is returned; ``None`` (default): ``$XDG_STATE_HOME/offline_compress/archive.sqlite3``; a ``.jsonl`` path:
    the ``.sqlite3`` beside it. ``session``: this agent's id in the archive (default: a new uuid4).
    ``recall_note``: the line after the summary telling the agent it can recall archived messages; ``None``
    (default): ``recall.RECALL_NOTE`` once ``recall_tool()`` has been called (the agent has the tool), else none.
    ``summary_role``: the role of the summary message, ``"system"`` (default) or ``"user"`` for chat templates
    that drop or reject a system message after the first one (llama.cpp's llama-2/chatml formats keep only the
    first; Gemma's folds only a leading one).
    ``keep_first``: the head kept verbatim before the summary: ``None`` (default) keeps the leading
    system/developer messages and the first user message (the task); an int keeps that many first messages; 0
    summarises everything before the recent messages. ``keep_last``: recent messages kept verbatim after it.
    ``summary_fraction`` / ``summary_max_tokens``: the summary's token budget, a share of ``model_max_tokens``
    up to a cap (default 35% of the window, at most 3,072 tokens; what does not fit is dropped, the work log
    line by line by what each line adds (``pack.py``), counted in the metrics, and stays in the archive).
    ``soft_fraction``: start building the summary in a worker thread once the history uses more than this share
    of the window (below the trigger's ``token_fraction``), and swap it in when the trigger fires; ``None``
    (default): off, the summary is built when the trigger fires.
    ``render``: how the summary is written into the history: ``"json"`` (default, one line of canonical JSON)
    or ``"markdown"`` (the same fields as compact Markdown, ``render.py``); either is read back and merged.
    ``on_compaction``: a callable or a list of callables, called with ``(metrics, summary)`` after each
    compaction is committed (in the thread that ran it); an exception in one is logged and never reaches the
    agent's step. More can be added to ``hook.listeners``.
    The caller's list and dicts are never modified; kept messages are passed through unchanged."""

    def __init__(
        self,
        model_max_tokens: int,
        *,
        archive_path: str | Path | None = None,
        session: str | None = None,
        recall_note: str | None = None,
        compressor: Compressor | None = None,
        counter: CountsTokens | None = None,
        trigger: TriggerConfig = TriggerConfig(),
        keep_last: int = DEFAULT_KEEP_LAST,
        keep_first: int | None = None,
        summary_fraction: float = DEFAULT_SUMMARY_FRACTION,
        summary_max_tokens: int = DEFAULT_SUMMARY_MAX_TOKENS,
        summary_role: Literal["system", "user"] = "system",
        soft_fraction: float | None = None,
        render: Render = "json",
        on_compaction: Listener | Sequence[Listener] | None = None,
    ) -> None:
        if summary_role not in ("system", "user"):
            raise ValueError(f"summary_role must be 'system' or 'user', got {summary_role!r}")
        if not 0 < summary_fraction <= 1:
            raise ValueError(f"summary_fraction must be in (0, 1], got {summary_fraction}")
        if model_max_tokens <= 0:
            raise ValueError(f"model_max_tokens must be positive, got {model_max_tokens}")
        if keep_first is not None and keep_first < 0:
            raise ValueError(f"keep_first must be None or >= 0, got {keep_first}")
        if soft_fraction is not None and not 0 < soft_fraction < trigger.token_fraction:
            raise ValueError(
                f"soft_fraction must be None or between 0 and the trigger's token_fraction "
                f"({trigger.token_fraction}), got {soft_fraction}"
            )
        if render not in RENDERS:
            raise ValueError(f"render must be one of {', '.join(RENDERS)}, got {render!r}")
        listeners = [] if on_compaction is None else [on_compaction] if callable(on_compaction) else list(on_compaction)
        for listener in listeners:
            if not callable(listener) or inspect.iscoroutinefunction(listener):
                raise TypeError(f"on_compaction takes plain callables (metrics, summary), got {listener!r}")
        self.model_max_tokens = model_max_tokens
        self.archive_path = database_path(archive_path)
        self._archive_arg = archive_path
        self._archive: Archive | None = None  # opened at the first compaction or recall
        self.session = session or uuid.uuid4().hex
        self.recall_note = recall_note
        self.summary_role = summary_role
        self.render: Render = render
        self.soft_fraction = soft_fraction
        self.listeners: list[Listener] = listeners
        self._tool_offered = False
        self._compressor = compressor
        if counter is None:
            from .tokens.counter import default_counter

            counter = default_counter()
        self.counter = counter
        self.trigger = trigger
        self.keep_last = keep_last
        self.keep_first = keep_first
        self.summary_tokens = max(256, min(int(summary_fraction * model_max_tokens), summary_max_tokens))
        self.turns_since_last_compression = 0
        self.metrics: list[CompactionMetrics] = []
        self.last_decision: CompressionDecision | None = None
        self.summary: CompressedContext | None = None
        self._messages = MessageCache()
        self._empty_summary_tokens: int | None = None
        self._lock = threading.RLock()  # one step or compaction of this hook at a time (listeners may re-enter)
        self._open_lock = threading.Lock()  # lazy archive and worker threads
        self._applied: list[_Applied] = []
        self._job: _Job | None = None
        self._step_worker: ThreadPoolExecutor | None = None  # runs abefore_step / acompact
        self._summary_worker: ThreadPoolExecutor | None = None  # builds background summaries

    @property
    def compressor(self) -> Compressor:
        if self._compressor is None:
            self._compressor = default_compressor(keep_last=self.keep_last)
        return self._compressor

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

    @property
    def note(self) -> str:
        """The recall line after the summary: the given ``recall_note``, else the default once the tool is offered."""
        if self.recall_note is not None:
            return self.recall_note
        return RECALL_NOTE if self._tool_offered else ""

    def close(self) -> None:
        """Wait for a background summary still being built (its result is dropped), stop the hook's worker
        threads and close the archive's database connection. The hook can be used again: all reopen on demand."""
        with self._open_lock:
            workers, self._step_worker, self._summary_worker = (self._step_worker, self._summary_worker), None, None
            archive, self._archive = self._archive, None
        self._job = None
        for worker in workers:
            if worker is not None:
                worker.shutdown(wait=True, cancel_futures=True)
        if archive is not None:
            archive.close()

    def __enter__(self) -> CompactionHook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def compactions(self) -> int:
        return sum(1 for m in self.metrics if m.outcome == "compacted")

    # -------------------------------------------------------------------------------------------- the step

    def before_step(self, messages: Sequence[Mapping[str, Any]]) -> list[Any]:
        """Return the history to send: ``messages`` itself (as a new list) or ``[*head, summary, *recent]``."""
        with self._lock:
            originals = _as_list(messages)
            parsed = self._messages.parse(originals)
            originals, parsed = self._replay(originals, parsed)
            decision = evaluate_compression(
                parsed,
                self.model_max_tokens,
                self.turns_since_last_compression,
                config=self.trigger,
                counter=self.counter,
            )
            self.last_decision = decision
            if not decision.should_compress:
                self.turns_since_last_compression += 1
                if self.soft_fraction is not None:
                    self._background(parsed, decision.estimated_tokens)
                return originals
            return self._compact(originals, parsed, decision.reason, decision.estimated_tokens)

    def compact(
        self, messages: Sequence[Mapping[str, Any]], *, reason: str = "manual", plan: Plan | None = None
    ) -> list[Any]:
        """Compact now, whatever the trigger says (a user's "compact" command, or a model that refused a
        too-long prompt). Returns ``messages`` unchanged (as a new list) when compaction cannot shrink it.

        ``plan``: what to replace, when the caller has its own boundaries (an adapter whose framework allows cuts
        only at some messages: ``history.plan_compaction`` with its head and cut). The earlier summary merged is
        then the one the plan found in ``messages``, not the one this hook returned last."""
        with self._lock:
            originals = _as_list(messages)
            parsed = self._messages.parse(originals)
            return self._compact(originals, parsed, reason, self.counter.count(parsed), plan)

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

    # ------------------------------------------------------------------------------------- compaction

    def _replay(self, originals: list[Any], parsed: list[Message]) -> tuple[list[Any], list[Message]]:
        """A history that starts with the messages a recent compaction replaced gets that compaction's result
        (and so on, in order), instead of a second summary of the same messages."""
        for applied in self._applied:
            if starts_with(parsed, applied.prefix):
                log.debug(
                    "history of %d messages extends the input of compaction %d: its summary is reused",
                    len(parsed),
                    applied.number,
                )
                h, c = applied.head, applied.cut
                originals = [*originals[:h], applied.message, *originals[c:]]
                parsed = [*parsed[:h], applied.parsed_message, *parsed[c:]]
        return originals, parsed

    def _plan(self, parsed: list[Message]) -> Plan:
        return plan_compaction(parsed, self.keep_first, self.keep_last)

    def _why_not(self, parsed: list[Message], plan: Plan) -> str:
        """Why nothing can be compressed under ``plan``, or ""."""
        region = plan.region
        if not region:
            return "nothing to compress between the kept head and the recent messages"
        # Any summary costs at least the empty one: a region smaller than that can only grow (no model call).
        if self._empty_summary_tokens is None:
            self._empty_summary_tokens = self.counter.count([self._message(CompressedContext(), 0)])
        region_tokens = sum(self.counter.message_counts([parsed[i] for i in region]))
        if region_tokens <= self._empty_summary_tokens:
            return f"the {len(region)} messages to compress hold {region_tokens} tokens, no more than an empty summary"
        return ""

    def _summarise(self, parsed: list[Message], plan: Plan, previous: CompressedContext | None) -> CompressionResult:
        return self.compressor.compress_detailed(
            parsed, plan=plan, previous=previous, summary_tokens=self.summary_tokens, counter=self.counter
        )

    def _message(self, context: CompressedContext, head: int) -> dict[str, Any]:
        note = "\n".join(x for x in (HEAD_NOTE if head else "", self.note) if x)
        return summary_message(context, note, self.render) | {"role": self.summary_role}

    def _keep(
        self, originals: list[Any], parsed: list[Any], reason: str, tokens: int, note: str, start: float
    ) -> list[Any]:
        """Record a firing that did not compact, and hand the history back as it was."""
        self.turns_since_last_compression += 1
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
        )
        self.metrics.append(metrics)
        log.info(
            "trigger fired (%s, %d tokens), history kept: %s",
            reason,
            tokens,
            note,
            extra={"offline_compress": metrics.model_dump()},
        )
        return originals

    def _compact(
        self, originals: list[Any], parsed: list[Message], reason: str, tokens_before: int, plan: Plan | None = None
    ) -> list[Any]:
        start = time.perf_counter()
        previous = None  # a caller's plan merges the summary it found in the history
        if plan is None:
            job, self._job = self._job, None
            if job is not None:
                swapped = self._swap(job, originals, parsed, reason, tokens_before, start)
                if swapped is not None:
                    return swapped
            plan, previous = self._plan(parsed), self.summary
        why = self._why_not(parsed, plan)
        if why:
            return self._keep(originals, parsed, reason, tokens_before, why, start)
        replacement = self._replacement(originals, plan, self._summarise(parsed, plan, previous), tokens_before)
        if replacement.tokens_after >= tokens_before:
            return self._keep(
                originals,
                parsed,
                reason,
                tokens_before,
                f"the compacted history would hold {replacement.tokens_after} tokens, not fewer than {tokens_before}",
                start,
            )
        return self._commit(originals, parsed, replacement, reason, start, background=False)

    def _replacement(
        self, originals: list[Any], plan: Plan, result: CompressionResult, tokens_before: int
    ) -> _Replacement:
        message = self._message(result.context, plan.head)
        history = [*originals[: plan.head], message, *originals[plan.cut :]]
        return _Replacement(plan, result, message, history, tokens_before, self.counter.count(as_messages(history)))

    def _commit(
        self,
        originals: list[Any],
        parsed: list[Message],
        r: _Replacement,
        reason: str,
        start: float,
        *,
        background: bool,
    ) -> list[Any]:
        head, cut, result, message, new_history = r.plan.head, r.plan.cut, r.result, r.message, r.history
        tokens_before, tokens_after = r.tokens_before, r.tokens_after
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
        )
        self.summary = result.context
        self.turns_since_last_compression = 0
        self._applied = [
            *self._applied[-(REPLAYABLE - 1) :],
            _Applied(parsed[:cut], head, cut, message, parse_message(message, index=head), compaction),
        ]
        above = tokens_after > self.trigger.token_fraction * self.model_max_tokens
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
        )
        self.metrics.append(metrics)
        log.info(
            "compaction %d of session %s (%s): %d -> %d tokens, %d -> %d messages, %.2f s%s%s",
            compaction,
            self.session,
            reason,
            tokens_before,
            tokens_after,
            len(originals),
            len(new_history),
            metrics.seconds,
            f" (summary built in the background in {metrics.summary_seconds:.2f} s)" if background else "",
            "; still above the threshold" if above else "",
            extra={"offline_compress": metrics.model_dump()},
        )
        s = result.stats
        log.debug(
            "compaction %d: messages [%d, %d) replaced; prompt %d tokens (prefix cached: %s), %d generated, "
            "model %.2f s, groundedness %.2f, %d items dropped by the budget",
            compaction,
            head,
            cut,
            s.prompt_tokens,
            s.prefix_cached,
            s.generated_tokens,
            s.model_seconds,
            metrics.groundedness,
            metrics.dropped_items,
        )
        for listener in list(self.listeners):
            try:
                listener(metrics, result.context)
            except Exception:  # a listener's bug must not break the agent's step
                log.exception("on_compaction listener %r failed after compaction %d", listener, compaction)
        return new_history

    # ------------------------------------------------------------------------------------- background

    def _background(self, parsed: list[Message], tokens: int) -> None:
        """Past the soft threshold, start a summary of the current history's older part in the worker (once;
        again only when the history stopped extending the snapshot or a compaction made it stale)."""
        soft = self.soft_fraction * self.model_max_tokens if self.soft_fraction is not None else None
        if soft is None or tokens <= soft:
            return
        job = self._job
        if job is not None:
            if job.previous is self.summary and starts_with(parsed, job.prefix):
                return
            self._job = None
            log.debug(
                "background summary of %d messages dropped: the history no longer starts with its snapshot",
                job.plan.cut,
            )
        plan = self._plan(parsed)
        if self._why_not(parsed, plan):
            return
        with self._open_lock:
            if self._summary_worker is None:
                self._summary_worker = ThreadPoolExecutor(
                    1, thread_name_prefix=f"offline-compress-summary-{self.session[:8]}"
                )
            worker = self._summary_worker
        snapshot = list(parsed)
        future = worker.submit(self._summarise, snapshot, plan, self.summary)
        self._job = _Job(snapshot[: plan.cut], plan, self.summary, future, tokens)
        log.debug(
            "background summary started at %d tokens (soft threshold %.0f): messages [%d, %d) of %d",
            tokens,
            soft,
            plan.head,
            plan.cut,
            len(parsed),
        )

    def _swap(
        self, job: _Job, originals: list[Any], parsed: list[Message], reason: str, tokens_before: int, start: float
    ) -> list[Any] | None:
        """The history with the background summary in place of the snapshot's ``[head, cut)`` and everything
        after it kept verbatim; None (compact as usual) when that would not be exact or not enough."""
        head, cut = job.plan.head, job.plan.cut
        problem = ""
        if job.previous is not self.summary:
            problem = "a compaction happened since its snapshot"
        elif not starts_with(parsed, job.prefix):
            problem = "the history no longer starts with its snapshot"
        elif (cut < len(parsed) and is_tool_output(parsed, cut)) or splits_a_call(parsed, head, cut):
            problem = "its cut would now separate a tool call from its result"
        if problem:
            log.debug("background summary dropped: %s", problem)
            return None
        try:
            result = job.future.result()
        except Exception as err:  # the synchronous compaction that follows will say it again if it persists
            log.warning("background summary failed (%s: %s); compacting now", type(err).__name__, err)
            return None
        r = self._replacement(originals, job.plan, result, tokens_before)
        if r.tokens_after >= tokens_before or r.tokens_after > self.trigger.token_fraction * self.model_max_tokens:
            log.debug(
                "background summary dropped: the swapped history would hold %d tokens (%d before), too many "
                "messages arrived since its snapshot at %d tokens",
                r.tokens_after,
                tokens_before,
                job.tokens,
            )
            return None
        return self._commit(originals, parsed, r, reason, start, background=True)
