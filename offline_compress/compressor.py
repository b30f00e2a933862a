"""The compressor: history in, ``CompressedContext`` out.

    cut -> extract (exact facts, no model) -> digest -> model draft (grammar-constrained, temperature 0)
        -> ground (drop what the source does not support) -> merge (previous summary + facts + draft, merge.py)
        -> redact

Two model modes. The default draft (``Draft``) is made for the embedded 270M base model: a digest of the history
and a tiny ASCII schema. The written-state mode (``written=True``) is for a capable model (the agent's own, on a
server): it reads the compacted region itself, rendered for reading (``summary/reading.py``) with the extracted facts
as a checklist, split into parts that fit its window, each part's state carried into the next part's prompt, and
writes decisions, failure reasons, the task state, the narrative and the next step (``summary/written.py``). Either
way what is read exactly stays exact, what the model wrote is grounded, and a model that fails (invalid or cut
JSON, a prompt over its window) leaves the extractive summary, said in ``CompressionStats.fallback``.

Build a ``Compressor`` once (it loads the model and compiles the grammar) and call it many times, as with an
Outlines ``Generator``. ``compress_context`` does the same with a shared default compressor.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .engine import Backend, Generation, PromptTooLongError
from .engine.llamacpp import LlamaCppBackend, LlamaSettings
from .errors import EmptyHistoryError
from .extract.calls import parse_arguments
from .extract.facts import Facts, extract_facts
from .extract.task import extract_task
from .history.conventions import is_tool_output
from .history.messages import Message, as_messages
from .history.terminal import plain_tool_outputs
from .model_files import resolve_model
from .secrets.redact import redact_messages
from .summary import schema as S
from .summary.draft import Draft, DraftTaskState, draft_json_schema, worst_case_tokens
from .summary.ground import GroundingReport, SourceIndex
from .summary.merge import Budget, Sources, merge_carried
from .summary.message import parse_summary_message
from .summary.plan import DEFAULT_KEEP_LAST, Plan, plan_compaction
from .summary.prompt import closing, digest, fixed_prefix
from .summary.reading import blocks, split
from .summary.redaction import redact_summary
from .summary.written import StateCheck, WrittenState, check_json_schema, statements, without, written_json_schema
from .summary.written_prompt import check_suffix, checklist, failure_labels, written_prefix, written_suffix
from .tokens.counter import default_counter
from .tokens.protocol import CountsTokens

log = logging.getLogger(__name__)

DEFAULT_MODEL = "default"  # the embedded model (manifest default), opt-in: ``model=None`` (the default) is extractive
DEFAULT_MAX_TOKENS = 2048
DEFAULT_SUMMARY_TOKENS = 2048  # token budget of a summary when the caller names none (the hook: a share of its window)
DRAFT_ATTEMPTS = 2  # a draft that fails validation is asked for once more, then the summary goes without one
MIN_PART_TOKENS = 256  # the least room a part of the region may have in the written-state mode's prompt


_Out = TypeVar("_Out", Draft, WrittenState, StateCheck)


class CompressionStats(BaseModel):
    """Measurements of one compression (for metrics, the eval and the benchmark)."""

    messages_in: int
    messages_compressed: int  # index of the first kept recent message: messages [head, this) were summarised
    head: int = 0  # messages [0, head) kept verbatim before the summary
    prompt_tokens: int = 0
    prefix_tokens: int = 0
    prefix_cached: bool = False
    generated_tokens: int = 0
    forced_tokens: int = 0
    prompt_seconds: float = 0.0
    generation_seconds: float = 0.0
    grammar_seconds: float = 0.0
    model_seconds: float = 0.0
    total_seconds: float = 0.0
    draft_valid: bool = True
    clipped_items: int = 0
    threads: int = 0  # llama.cpp threads the model ran with (chosen per call unless fixed)
    backend: str = ""  # what wrote the draft (Backend.name); "" without a model
    attempts: int = 0  # generations asked for (a draft that fails validation is asked for once more)
    fallback: str | None = None  # why the summary went without the model's draft (then the extractive summary)
    parts: int = 0  # the written-state mode: parts the region was written in (prompt_tokens adds theirs up)
    refuted: int = 0  # the written-state mode with its check: statements the model found unsupported (dropped)


class CompressionResult(BaseModel):
    context: S.CompressedContext
    facts: Facts
    grounding: GroundingReport
    stats: CompressionStats
    # what a hook's next compaction merges instead of ``context`` (``merge.merge_carried``); None: ``context``
    carried: S.CompressedContext | None = None


@dataclass(frozen=True)
class PreparedPrompt:
    """``Compressor.prepare``'s result: what the model is asked about, before any model call."""

    messages_in: int
    cut: int  # messages [head, cut) are compressed
    target: list[Message]  # the compressed messages, an earlier summary left out
    previous: S.CompressedContext | None  # the earlier summary (given or embedded), merged into the new one
    facts: Facts
    suffix: str  # the prompt after ``Compressor.prefix``
    head: int = 0  # messages [0, head) are kept verbatim before the summary (not summarised)
    kept_texts: tuple[str, ...] = ()  # texts of the messages kept verbatim around the summary (head and recent)
    parts: tuple[str, ...] = ()  # written-state mode: the region rendered, in parts that fit (``suffix``: the first)
    checklist: str = ""  # the written-state mode: the facts read exactly, as every part's prompt shows them


# No model (or no valid draft): nothing written (constructed, not validated: the grammar requires "The agent ").
NO_DRAFT = Draft.model_construct(
    recent_narrative="", decisions=[], task_state=DraftTaskState(completed=[], remaining=[], blockers=[])
)


class Compressor:
    """Loads the model and compiles the draft grammar once; ``compress`` may then be called many times.

    ``model``: ``None`` (the default) compresses without a model (extractive: the exact facts only, no model
    narrative or items), which loads nothing and takes milliseconds; ``"default"`` is the embedded Gemma, or a
    manifest name or a ``.gguf`` path. The replay A/B found the 270M model's draft added nothing the agent later
    used at 6-18 s per compaction (docs/replay.md, "What the model is for"), so it is opt-in.
    ``llama``: how the in-process model runs (``engine.llamacpp.LlamaSettings``: window, threads, GPU layers, flash
    attention, decoder, the model file's check), apart from what the summary is.
    ``backend``: any ``offline_compress.engine.Backend`` instead
    (e.g. ``OpenAIServerBackend`` for a model server); ``model`` and ``llama`` are then unused.
    ``written``: the written-state mode, for a capable model (an instruct model of some billions of parameters,
    such as the agent's own on its server): it reads the region and writes the state (module docstring). Off by
    default and never chosen for you: the embedded 270M base model cannot write, and a backend cannot tell how
    capable its model is. ``max_tokens`` (the output room, also what an earlier part's state may take in the next
    part's prompt) defaults to 2048 either way; ``repeat_penalty`` to 1.3 for the draft (a small model loops) and
    1.0 written (a penalty hurts a capable model copying names). ``check`` (written mode only): the model checks
    the state it wrote against the same prompt, one more request per part (``summary/written.py``, ``StateCheck``);
    the statements it finds unsupported are dropped, and a check that fails leaves the summary extractive."""

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        written: bool = False,
        check: bool = True,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        keep_last: int = DEFAULT_KEEP_LAST,
        prompt_budget: int = 1536,
        repeat_penalty: float | None = None,
        llama: LlamaSettings | Mapping[str, Any] | None = None,
        backend: Backend | None = None,
        summary_tokens: int | None = DEFAULT_SUMMARY_TOKENS,
        counter: CountsTokens | None = None,
    ) -> None:
        if summary_tokens is not None and summary_tokens <= 0:
            raise ValueError(f"summary_tokens must be positive or None, got {summary_tokens}")
        self.summary_tokens = summary_tokens  # None: only the schema's list bounds
        self._counter = counter
        if written and backend is None and model is None:
            raise ValueError("written=True needs a model to write: backend=... (a server) or a model name or path")
        self.written = written
        self.check = written and check
        self.check_schema = check_json_schema() if self.check else {}
        self.schema = written_json_schema() if written else draft_json_schema()
        # a written state has no bound in tokens below any sensible max_tokens: one cut short falls back
        worst = 0 if written else worst_case_tokens(self.schema)
        if worst > max_tokens:
            raise ValueError(f"max_tokens={max_tokens} is below the largest valid draft ({worst} tokens)")
        self.max_tokens = max_tokens
        self.keep_last = keep_last
        self.prompt_budget = prompt_budget
        self.repeat_penalty = repeat_penalty if repeat_penalty is not None else 1.0 if written else 1.3
        settings = llama if isinstance(llama, LlamaSettings) else LlamaSettings.model_validate(llama or {})
        if backend is None and model is not None:
            backend = LlamaCppBackend(
                resolve_model(None if model == DEFAULT_MODEL else model, verify=settings.verify_model),
                **settings.model_dump(exclude={"verify_model"}),
            )
        self.backend = backend
        # one llama.cpp context: one generation at a time, per backend object (without one: a lock of its own)
        self._lock = generation_lock(backend)
        self.instruct, self.prefix = False, ""  # no model: no prompt
        if backend is None:
            return
        self.instruct = backend.instruct
        self.prefix = written_prefix(self.instruct) if written else fixed_prefix(self.instruct)
        room = backend.n_ctx - self.max_tokens - backend.count(self.prefix) - 64
        if room < 256:
            raise ValueError(f"n_ctx={backend.n_ctx} leaves no room for a prompt after max_tokens={max_tokens}")
        self.prompt_budget = min(self.prompt_budget, room)

    @property
    def counter(self) -> CountsTokens:
        """The counter the summary's budget is counted with (the default target's unless one was given)."""
        if self._counter is None:
            self._counter = default_counter()
        return self._counter

    def compress(
        self,
        messages: Sequence[Message | Mapping[str, Any]],
        *,
        keep_last: int | None = None,
        previous: S.CompressedContext | None = None,
        keep_first: int | None = 0,
        summary_tokens: int | None = None,
        plan: Plan | None = None,
    ) -> S.CompressedContext:
        return self.compress_detailed(
            messages,
            keep_last=keep_last,
            previous=previous,
            keep_first=keep_first,
            summary_tokens=summary_tokens,
            plan=plan,
        ).context

    __call__ = compress

    def prepare(
        self,
        messages: Sequence[Message | Mapping[str, Any]],
        *,
        keep_last: int | None = None,
        previous: S.CompressedContext | None = None,
        keep_first: int | None = 0,
        plan: Plan | None = None,
    ) -> PreparedPrompt:
        """Everything before the model: the cut, the exact facts and the prompt suffix the model is given after
        ``self.prefix`` (the benchmark decodes these very prompts). Raises ``EmptyHistoryError`` as ``compress``.

        ``plan``: what to replace (``summary.plan.plan_compaction``; the hook and the adapters make it once and pass
        it). Without one it is planned here from ``keep_first`` and ``keep_last``. ``keep_first``: messages at the
        start kept verbatim by the caller and so not summarised: 0 (default) summarises from the start; ``None``
        leaves out the head (leading system messages and the task), as the hook does; an int leaves out that many.
        An earlier summary of ours anywhere after the head is merged, not summarised again; ``previous`` replaces
        it."""
        # Redact first: every cut after this (error-line windows, clipped targets, the prompt) sees no secret.
        # Tool output is read as a terminal shows it (history/terminal.py), before the secret scan too.
        parsed = redact_messages(plain_tool_outputs(as_messages(messages)))
        if plan is None:
            plan = plan_compaction(parsed, keep_first, self.keep_last if keep_last is None else keep_last)
        head, cut, at = plan.head, plan.cut, plan.previous_at
        if cut <= head:
            raise EmptyHistoryError(
                f"nothing to compress: the history has {len(parsed)} messages; the first {head} and the last "
                f"{len(parsed) - cut} (with any tool results they need) are kept as they are"
            )
        # the previous summary as the redacted history holds it (a plan may have been made before redaction)
        embedded = parse_summary_message(parsed[at]) if at is not None else None
        previous = previous or embedded
        target = [parsed[i] for i in plan.region]
        if not target:
            raise EmptyHistoryError("nothing to compress: only the previous summary precedes the kept messages")
        # with a previous summary, the region's first user turn follows the exchange it summarised: mid-session
        facts = extract_facts([*parsed[:head], *target], start=head, summarised_before=previous is not None)
        # what the reader has verbatim around the summary (its tool-call arguments too): not paid for twice
        kept = tuple(m.text_and_arguments for m in [*parsed[:head], *parsed[cut:]])
        suffix, listed = "", ""  # no model: no prompt
        parts: tuple[str, ...] = ()
        if self.backend is not None and self.written:
            listed = checklist(facts, previous, facts.task or extract_task(parsed[:head])[0])
            parts = self._parts(target, plan.region, listed)
            suffix = written_suffix(listed, parts[0], 1, len(parts), None, self.instruct) if parts else ""
        elif self.backend is not None:
            suffix = digest(
                target,
                facts,
                budget_tokens=self.prompt_budget,
                count_tokens=self.backend.count,
                previous_narrative=previous.recent_narrative if previous else "",
                task=facts.task or extract_task(parsed[:head])[0],  # a task kept in the head still guides the model
            ) + closing(self.instruct)
        return PreparedPrompt(
            messages_in=len(parsed),
            cut=cut,
            target=target,
            previous=previous,
            facts=facts,
            suffix=suffix,
            head=head,
            kept_texts=kept,
            parts=parts,
            checklist=listed,
        )

    def _parts(self, target: list[Message], numbers: list[int], listed: str) -> tuple[str, ...]:
        """The region rendered for reading, in parts that fit the backend's window with the prefix, the checklist
        and the output room (and, when there are several, an earlier part's state, at most the output room too).
        Empty when the window leaves a part less than ``MIN_PART_TOKENS`` (the compression then falls back)."""
        backend = self.backend
        assert backend is not None
        frame = backend.count(written_suffix(listed, "", 9, 9, None, self.instruct))
        room = backend.n_ctx - self.max_tokens - backend.count(self.prefix) - frame - 64
        if self.check:  # its prompt holds the part, the statements (about the state's size), then the verdicts
            room -= self.max_tokens + backend.count(check_suffix(listed, "", 9, 9, None, [], self.instruct)) - frame
        rendered = blocks(target, numbers)
        if room < MIN_PART_TOKENS:
            return ()
        parts = split(rendered, room, backend.count)
        if len(parts) > 1:  # a state written from the parts before goes into each later part's prompt
            room -= self.max_tokens + 64
            parts = split(rendered, room, backend.count) if room >= MIN_PART_TOKENS else []
        return tuple(parts)

    def compress_detailed(
        self,
        messages: Sequence[Message | Mapping[str, Any]],
        *,
        keep_last: int | None = None,
        previous: S.CompressedContext | None = None,
        keep_first: int | None = 0,
        summary_tokens: int | None = None,
        plan: Plan | None = None,
        counter: CountsTokens | None = None,
        constraint_tokens: int | None = None,
    ) -> CompressionResult:
        """``summary_tokens``: the summary's token budget for this call (default: the compressor's), counted by
        ``counter`` (default: the compressor's, the default target's). ``constraint_tokens``: the most the user's
        constraints may take before a turn kept whole past ``extract.MAX_TURN_CHARS`` gives way to its sentences
        (default: the budget; the hook gives the summary's share of its window). ``plan`` as for ``prepare``."""
        start = time.perf_counter()
        tokens = self.summary_tokens if summary_tokens is None else summary_tokens
        count = counter or self.counter
        budget = None if tokens is None else Budget(tokens, count, constraint_tokens=constraint_tokens)
        prepared = self.prepare(messages, keep_last=keep_last, previous=previous, keep_first=keep_first, plan=plan)
        stats = CompressionStats(messages_in=prepared.messages_in, messages_compressed=prepared.cut, head=prepared.head)
        if self.backend is None:
            return self._finish(start, prepared, NO_DRAFT, stats, budget)
        refuted: list[str] = []  # what the model's check of its written state dropped
        draft: Draft | WrittenState | None = (
            self._write(prepared, stats, refuted) if self.written else self._draft(prepared.suffix, stats, Draft)
        )
        return self._finish(start, prepared, draft or NO_DRAFT, stats, budget, refuted)

    def _write(self, prepared: PreparedPrompt, stats: CompressionStats, refuted: list[str]) -> WrittenState | None:
        """The written state of the region: its parts written in turn, each part's prompt holding the state written
        from the parts before it, which the part's own state replaces (the last one covers the whole region); with
        ``check``, each part's state checked before it goes on (``refuted`` gets what the check dropped). Any part
        without a valid state or check leaves the whole compression extractive (``stats.fallback`` says which)."""
        backend = self.backend
        assert backend is not None  # only called with a model
        stats.backend = backend.name
        if not prepared.parts:
            stats.draft_valid = False
            stats.fallback = (
                f"{backend.name}: the prompt does not fit the model's window (n_ctx={backend.n_ctx} leaves a part of "
                f"the region under {MIN_PART_TOKENS} tokens after the brief, the checklist and max_tokens="
                f"{self.max_tokens})"
            )
            return None
        state: WrittenState | None = None
        parts = len(prepared.parts)
        for number, part in enumerate(prepared.parts, start=1):
            before = state
            suffix = (
                prepared.suffix
                if number == 1
                else written_suffix(prepared.checklist, part, number, parts, before, self.instruct)
            )
            state = self._draft(suffix, stats, WrittenState)
            stats.parts = number
            listed = statements(state) if state is not None and self.check else []
            if state is not None and listed:  # a state that says nothing has nothing to check
                check = self._draft(
                    check_suffix(prepared.checklist, part, number, parts, before, listed, self.instruct),
                    stats,
                    StateCheck,
                )
                if check is None:
                    stats.fallback = f"the check of the written state: {stats.fallback}"
                    state = None
                else:
                    state, dropped = without(state, check)
                    stats.refuted += len(dropped)
                    refuted.extend(dropped)
            if state is None:
                if parts > 1:
                    stats.fallback = f"part {number} of {parts}: {stats.fallback}"
                return None
        return state

    def _draft(self, suffix: str, stats: CompressionStats, model: type[_Out]) -> _Out | None:
        """The model's output, validated against ``model`` whatever the backend promised (a server may answer 200
        with unconstrained text when its grammar failed, or ignore a field it does not know). An invalid one is
        asked for once more; then the summary goes without it, as with ``model=None`` (the exact facts stand on
        their own), and ``stats.fallback`` says why; so does a prompt over the model's window
        (``PromptTooLongError``). Any other ``BackendError`` (unreachable server, timeout, HTTP error)
        propagates: one line, never a silent fallback."""
        backend = self.backend
        assert backend is not None  # only called with a model
        stats.backend = backend.name
        problem = ""
        for _ in range(DRAFT_ATTEMPTS):
            try:
                with self._lock:  # one llama.cpp context (or one connection's worth of work) at a time
                    generation = backend.generate(
                        self.prefix,
                        suffix,
                        self.check_schema if model is StateCheck else self.schema,
                        self.max_tokens,
                        self.repeat_penalty,
                    )
            except PromptTooLongError as err:
                stats.draft_valid = False
                stats.fallback = f"{backend.name}: the prompt does not fit the model's window ({err})"
                return None
            _add_generation(stats, generation, written=self.written)
            stats.attempts += 1
            try:
                return model.model_validate_json(generation.text)
            except ValidationError as err:
                first = err.errors()[0]
                where = ".".join(str(x) for x in first["loc"]) or "document"
                problem = (
                    f"{where}: {first['msg']} ({len(generation.text)} characters, {generation.generated_tokens} tokens)"
                )
        stats.draft_valid = False
        stats.fallback = f"{stats.backend}: no valid draft in {DRAFT_ATTEMPTS} attempts, last: {problem}"
        return None

    def _finish(
        self,
        start: float,
        prepared: PreparedPrompt,
        draft: Draft | WrittenState,
        stats: CompressionStats,
        budget: Budget | None,
        refuted: Sequence[str] = (),
    ) -> CompressionResult:
        """Ground the draft and merge it with the facts, the work log and the previous summary (``refuted``: what
        the model's own check dropped, reported beside what grounding drops)."""
        previous, facts = prepared.previous, prepared.facts
        # nothing to ground without a draft
        index = (
            SourceIndex([]) if draft is NO_DRAFT else source_index(prepared, written=isinstance(draft, WrittenState))
        )
        report = GroundingReport(checked=len(refuted), dropped=list(refuted))
        sources = Sources(facts, index, previous, prepared.kept_texts)
        context, carried = merge_carried(sources, draft, report, stats, budget)
        context = redact_summary(context)  # one last pass over every string, tool names and paths included
        # the carried document is never shown: what of it a later summary holds gets that summary's last pass
        stats.total_seconds = time.perf_counter() - start
        log.debug(
            "compressed messages [%d, %d) of %d in %.2f s (model %.2f s, %d prompt and %d generated tokens, "
            "%d unsupported items dropped)",
            stats.head,
            stats.messages_compressed,
            stats.messages_in,
            stats.total_seconds,
            stats.model_seconds,
            stats.prompt_tokens,
            stats.generated_tokens,
            len(report.dropped),
        )
        return CompressionResult(
            context=context, facts=facts, grounding=report, stats=stats, carried=None if budget is None else carried
        )


def source_index(prepared: PreparedPrompt, *, written: bool = False) -> SourceIndex:
    """What a model's output about ``prepared`` is grounded against. Tool output may support what the model says,
    but never an instruction it gives (prompt injection). ``written``: a written state's, which also read the head's
    texts (kept verbatim before the summary: the system prompt and the task, trusted), the checklist's failure
    numbers, the calls' argument values decoded (a written file as the model read it, not as a JSON string) and
    the calls' tool names."""
    target, previous = prepared.target, prepared.previous
    output = [i for i in range(len(target)) if is_tool_output(target, i)]
    outputs = set(output)
    calls = [c for m in target for c in (m.tool_calls or ())]
    # the checklist's failure numbers are the prompt's own names for the failed attempts ("failed (F2)")
    head = [*prepared.kept_texts[: prepared.head], failure_labels(prepared.facts)] if written else []
    trusted = [*head, *(m.text for i, m in enumerate(target) if i not in outputs)]
    trusted += [c.function.arguments for c in calls]
    if written:
        trusted += [v for c in calls for v in _argument_values(c.function.arguments)]
        trusted += [c.function.name for c in calls]  # "searched with Grep"
    if previous is not None:
        trusted.append(previous.to_json())
    return SourceIndex(trusted, untrusted=[target[i].text for i in output])


def _argument_values(raw: str) -> list[str]:
    """The string values of a call's arguments, decoded (``extract.calls.parse_arguments``)."""
    out: list[str] = []
    pending = [parse_arguments(raw)]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return out


def _add_generation(stats: CompressionStats, generation: Generation, *, written: bool = False) -> None:
    """Count one generation into the stats (a retried draft costs twice: the seconds add up; written, the prompt
    tokens of each part and attempt add up too)."""
    stats.prompt_tokens = stats.prompt_tokens + generation.prompt_tokens if written else generation.prompt_tokens
    stats.prefix_tokens = generation.prefix_tokens
    stats.prefix_cached = generation.prefix_cached
    stats.threads = generation.threads
    stats.generated_tokens += generation.generated_tokens
    stats.prompt_seconds += generation.prompt_seconds
    stats.model_seconds += generation.total_seconds
    stats.generation_seconds += generation.generation_seconds
    stats.grammar_seconds += getattr(generation, "mask_seconds", 0.0)
    stats.forced_tokens += getattr(generation, "forced_tokens", 0)


_default: dict[str, Compressor] = {}
_default_lock = threading.Lock()
_backend_locks: weakref.WeakKeyDictionary[Any, threading.Lock] = weakref.WeakKeyDictionary()
# Its own lock, not _default_lock: default_compressor builds a Compressor (which calls generation_lock) while
# holding _default_lock, and a second acquire of that non-reentrant lock would deadlock.
_backend_locks_lock = threading.Lock()


def generation_lock(backend: Any = None) -> threading.Lock:
    """The lock a compressor holds while its backend generates: a new one for a backend of its own (``None``),
    else the one lock of that backend object, so two compressors given one loaded model never run it at once
    (a llama.cpp context is not thread-safe)."""
    if backend is None:
        return threading.Lock()
    with _backend_locks_lock:
        return _backend_locks.setdefault(backend, threading.Lock())


def default_compressor(model: str | Path | None = None, **kwargs: Any) -> Compressor:
    """A process-wide compressor per model, loaded on first use (``None``: the extractive one, unless
    ``OFFLINE_COMPRESS_RECORDED`` names recorded completions: then the written-state mode on them, for an
    evaluation that builds its own hooks; ``engine/recorded.py``)."""
    from .engine.recorded import EXPORT_ENV, N_CTX_ENV, RECORDED_ENV, from_environment

    recorded = tuple(os.environ.get(k, "") for k in (RECORDED_ENV, EXPORT_ENV, N_CTX_ENV)) if model is None else ()
    key = str(model) + ("|" + "|".join(recorded) if any(recorded) else "")
    with _default_lock:
        if key not in _default:
            backend = from_environment() if any(recorded) else None
            if backend is not None:
                _default[key] = Compressor(backend=backend, written=True, **kwargs)
            else:
                _default[key] = Compressor(model, **kwargs)
        return _default[key]


def compress_context(
    messages: Sequence[Message | Mapping[str, Any]],
    *,
    compressor: Compressor | None = None,
    keep_last: int = DEFAULT_KEEP_LAST,
    previous: S.CompressedContext | None = None,
    model: str | Path | None = None,
) -> S.CompressedContext:
    """Summarise everything but the last ``keep_last`` messages into a ``CompressedContext``.

    Raises ``EmptyHistoryError`` when nothing is left to compress, ``InputError`` for malformed messages."""
    compressor = compressor or default_compressor(model)
    return compressor.compress(messages, keep_last=keep_last, previous=previous)
