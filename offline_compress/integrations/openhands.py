"""OpenHands SDK condenser: the agent's history condensed offline, through ``CompactionHook``.

    from openhands.sdk import Agent
    from offline_compress.integrations.openhands import OfflineCondenser

    agent = Agent(llm=llm, tools=tools, condenser=OfflineCondenser(keep_first=2, session=conversation_id))

It is a ``RollingCondenser``: before each agent step the SDK hands it the ``View`` (the events the LLM would get).
When condensation is needed it returns the SDK's own ``Condensation`` event (the ids of the forgotten events,
the summary, and the offset where the SDK inserts it), and the SDK applies it to every later view.

- Requirement: an unhandled ``CondensationRequest`` (a user's or the agent's) or a view that no longer fits the
  window is HARD; our trigger firing (85% of the window by default; a heavy tool or a turn limit when set) is SOFT, so
  when no condensation is possible (no room between the kept head and the last ``keep_last`` messages, or no
  summary shorter than what it would replace) the agent just goes on with the unchanged view. A summariser that
  fails (a model that cannot load, or fails while it summarises) is a ``NoCondensationAvailableException`` for a
  SOFT requirement and a hard context reset with the extractive compressor for a HARD one: the conversation never
  crashes on it. A HARD one always shrinks the view: fewer recent messages, then the summary down to its
  required items, then (as the SDK's own reset does) everything after the system prompt, ``keep_first``
  included, is summarised. Only when no summary can be shorter than the events it would replace (a request on
  a short history) is a request answered by a ``Condensation`` that forgets nothing, the view left as it is
  (under the trigger; over it the SDK raises, as nothing can help).
- No condensation loops (``CompactionHook``'s guard): a condensation aims at half the window; when the summary
  at its floor cannot get there, the trigger is held until the view has grown by a tenth of the window, and when
  the view would not even fit the window, fewer recent messages are kept.
- What is kept follows the SDK's conventions: the ``SystemPromptEvent`` and the first ``keep_first`` events
  are never forgotten (an earlier summary of ours among them included); every boundary is one of the view's
  manipulation indices (tool calls with their observations, multi-action batches and thinking-block tool loops
  stay whole); the last ``keep_last`` messages stay verbatim. Between them everything is forgotten, and only
  what the summary covers.
- The summary is ``CompactionHook``'s: a ``[CONTEXT_SUMMARY]`` JSON document written offline (grounded facts,
  the embedded model's narrative), the replaced events archived first. An earlier summary of ours in the forgotten
  range is merged into the next one and forgotten with the events around it; every summary written by another
  condenser there (the SDK's ``LLMSummarizingCondenser`` on a resumed conversation) is carried into ours among
  the user's constraints, marked ``[earlier summary]``, its text word for word (redacted), never dropped.
- The view is the only state: a conversation restored from its events condenses as the live one would.

Install with ``pip install "offline_compress[openhands]"`` (the SDK needs Python >= 3.12)."""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr

# Importing the SDK imports litellm, which fetches its model-cost map from GitHub unless told to use its bundled
# copy, and the SDK prints a banner. The user's own settings win.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")

try:
    from openhands.sdk.context.condenser.base import (
        CondensationRequirement,
        NoCondensationAvailableException,
        RollingCondenser,
    )
    from openhands.sdk.context.view import View
    from openhands.sdk.event import ActionEvent, Condensation, CondensationSummaryEvent, LLMConvertibleEvent
    from openhands.sdk.event.llm_convertible import SystemPromptEvent
    from openhands.sdk.llm import LLM
except ImportError as err:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        f"offline_compress.integrations.openhands needs the OpenHands SDK ({err}); install it with: "
        'pip install "offline_compress[openhands]" (Python >= 3.12)'
    ) from None

from ..compressor import Compressor, default_compressor
from ..extract.constraints import MAX_TURN_CHARS
from ..history.cut import cut_index
from ..history.messages import Message, as_messages
from ..hook.compaction_hook import CompactionHook
from ..hook.config import DEFAULT_SUMMARY_FLOOR_TOKENS, DEFAULT_SUMMARY_FRACTION, HookConfig
from ..hook.harder import FLOOR_TOKENS
from ..hook.trigger import TriggerConfig, evaluate_compression
from ..secrets.redact import redact
from ..summary import schema as S
from ..summary.message import is_summary_message
from ..summary.plan import Plan, plan_compaction

log = logging.getLogger(__name__)
CARRIED = "[earlier summary]"  # the mark of another condenser's summary carried among the constraints


def view_messages(events: Sequence[LLMConvertibleEvent]) -> tuple[list[dict[str, Any]], list[int]]:
    """The events as OpenAI chat dicts, through the SDK's own conversion, and the index of each message's first
    event (plus ``len(events)`` at the end). Actions of one LLM response become one assistant message, as the SDK
    sends them; an earlier summary of ours becomes the system message the hook looks for."""
    messages: list[dict[str, Any]] = []
    starts: list[int] = []
    i = 0
    while i < len(events):
        j = i + 1
        if isinstance(events[i], ActionEvent):
            while (
                j < len(events)
                and isinstance(events[j], ActionEvent)
                and events[j].llm_response_id == events[i].llm_response_id
            ):
                j += 1
        [message] = LLMConvertibleEvent.events_to_messages(list(events[i:j]))
        converted = message.to_chat_dict(
            cache_enabled=False,
            vision_enabled=False,
            function_calling_enabled=True,
            force_string_serializer=True,
            send_reasoning_content=False,
        )
        if isinstance(events[i], CondensationSummaryEvent):
            as_system = {"role": "system", "content": events[i].summary}
            if is_summary_message(Message.model_validate(as_system)):
                converted = as_system
        messages.append(converted)
        starts.append(i)
        i = j
    starts.append(len(events))
    return messages, starts


def carried_summary(text: str) -> S.CompressedContext:
    """A summary written by another condenser as a previous summary of ours: its text, redacted and word for word,
    among the user's constraints, marked ``CARRIED`` (what a summary never drops: the work log's packer keeps a line
    for the names it adds, and a summary in prose names little), in pieces cut at line ends, each short enough
    that no budget splits it (``extract.constraints.MAX_TURN_CHARS``). The next summary merges them as it merges
    our own constraints."""
    room = MAX_TURN_CHARS - len(CARRIED) - 1
    pieces: list[str] = []
    for line in redact(text).splitlines():
        line = line.rstrip()
        while line.strip():
            if pieces and len(pieces[-1]) + 1 + len(line[:room]) <= room:
                pieces[-1] += "\n" + line[:room]
            else:
                pieces.append(line[:room])
            line = line[room:]
    return S.CompressedContext(user_constraints=[f"{CARRIED} {piece}" for piece in pieces][: S.MAX_CONSTRAINTS])


def carried_text(summary: S.CompressedContext | None) -> str:
    """The text of other condensers' summaries that ``summary`` carries (``carried_summary``)."""
    prefix = CARRIED + " "
    return "\n".join(c[len(prefix) :] for c in (summary.user_constraints if summary else ()) if c.startswith(prefix))


def turns_since_summary(messages: Sequence[Message]) -> int:
    """Agent turns after our last summary (all of them when there is none): the hook's turn count, read from
    the view instead of kept in memory."""
    last = max((i for i, m in enumerate(messages) if is_summary_message(m)), default=-1)
    return sum(1 for m in messages[last + 1 :] if m.role == "assistant")


class OfflineCondenser(RollingCondenser):
    """Condenses an OpenHands conversation with offline_compress (no LLM calls).

    ``max_tokens``: the window the trigger works against; default (None) the agent LLM's
    ``effective_max_input_tokens`` (the smaller of the two when both are known). ``keep_first``: events at the
    start never condensed (the SDK's convention; the system prompt is always kept; a HARD reset that cannot
    shrink otherwise summarises them too). ``keep_last``: messages kept verbatim at the end. ``model``: the
    compressor's model (manifest name or ``.gguf`` path; None: extractive, no model; loaded at the first
    condensation, and a model that cannot load fails that condensation, not the conversation). ``archive_path``,
    ``session``: where the replaced events are archived (``CompactionHook``; default a new session id per
    condenser). ``summary_fraction``, ``summary_floor_tokens``, ``target_fraction``: the summary's token budget and
    the loop guard's target (``HookConfig``'s). ``compressor=``: an already loaded ``Compressor`` to share
    (not serialised)."""

    max_tokens: int | None = Field(default=None, gt=0)
    keep_first: int = Field(default=2, ge=0)
    keep_last: int = Field(default=5, ge=0)
    model: str | None = None  # None: extractive (the default); "default": the embedded Gemma, or a path
    archive_path: str | None = None
    session: str | None = None
    trigger: TriggerConfig = TriggerConfig()
    summary_fraction: float = Field(default=DEFAULT_SUMMARY_FRACTION, gt=0, le=1)
    summary_floor_tokens: int = Field(default=DEFAULT_SUMMARY_FLOOR_TOKENS, gt=0)
    target_fraction: float | None = Field(default=None, gt=0, le=1)  # None: the hook's default

    _compressor: Compressor | None = PrivateAttr(default=None)
    _hook: CompactionHook | None = PrivateAttr(default=None)
    _session: str = PrivateAttr(default_factory=lambda: uuid.uuid4().hex)

    def __init__(self, *, compressor: Compressor | None = None, **data: Any) -> None:
        super().__init__(**data)
        self._compressor = compressor

    def handles_condensation_requests(self) -> bool:
        return True

    def hook_for(self, window: int) -> CompactionHook:
        """The hook that writes and archives the summaries, for a window of ``window`` tokens (its summary
        budget is a share of the window). Created on first use, again if the window changes, same session."""
        if self._hook is None or self._hook.model_max_tokens != window:
            archive = Path(self.archive_path) if self.archive_path else None
            # recall_note="": a condenser cannot offer the agent a tool, so the summary must not mention one. The
            # compressor is set at each condensation (``summariser``): loading a model may fail, and must fail there.
            # Unset, the target is the hook's own (half the window; scaled down under a trigger set lower).
            config = HookConfig(
                session=self.session or self._session,
                trigger=self.trigger,
                recall_note="",
                summary_fraction=self.summary_fraction,
                summary_floor_tokens=self.summary_floor_tokens,
                target_fraction=self.target_fraction,
            )
            self._hook = CompactionHook(window, config, archive_path=archive, compressor=Compressor(None))
        return self._hook

    def summariser(self) -> Compressor:
        """The compressor of the summaries: ``compressor=``, else ``model``'s (loaded on first use; may raise)."""
        return self._compressor or default_compressor(self.model)

    @property
    def hook(self) -> CompactionHook | None:
        """The hook of the last condensation (None before the first)."""
        return self._hook

    def window(self, agent_llm: LLM | None) -> int:
        limits = [x for x in (self.max_tokens, agent_llm.effective_max_input_tokens if agent_llm else None) if x]
        if not limits:
            raise ValueError("OfflineCondenser needs max_tokens= or an agent LLM whose max_input_tokens is known")
        return min(limits)

    def assess(self, view: View, agent_llm: LLM | None = None) -> tuple[CondensationRequirement | None, str]:
        """(requirement, reason): HARD for a request or a view over the window, SOFT when our trigger fires."""
        if view.unhandled_condensation_request:
            return CondensationRequirement.HARD, "request"
        limit = self.window(agent_llm)
        parsed = as_messages(view_messages(view.events)[0])
        hook = self.hook_for(limit)
        decision = evaluate_compression(
            parsed, limit, turns_since_summary(parsed), config=self.trigger, counter=hook.counter
        )
        if decision.estimated_tokens >= limit:
            return CondensationRequirement.HARD, "context-window"
        if decision.should_compress and not hook.held(parsed, decision.estimated_tokens):
            return CondensationRequirement.SOFT, decision.reason
        return None, "skip"

    def condensation_requirement(self, view: View, agent_llm: LLM | None = None) -> CondensationRequirement | None:
        return self.assess(view, agent_llm)[0]

    def get_condensation(self, view: View, agent_llm: LLM | None = None) -> Condensation:
        """The condensation of the view; ``NoCondensationAvailableException`` when there is none, or when the
        summariser failed (the SDK then goes on with the view for a SOFT requirement, resets for a HARD one)."""
        try:
            return self._condense(view, agent_llm, self.keep_last)
        except NoCondensationAvailableException:
            raise
        except Exception as err:  # a summariser that failed must not end the conversation
            log.warning("offline_compress could not condense: %s: %s", type(err).__name__, err, exc_info=True)
            if self._hook is not None:  # no retry at every step: the trigger is held until the view grows
                parsed = as_messages(view_messages(view.events)[0])
                self._hook.hold(parsed, self._hook.counter.count(parsed))
            raise NoCondensationAvailableException(
                f"offline_compress could not condense the view: {type(err).__name__}: {err}"
            ) from err

    def hard_context_reset(self, view: View, agent_llm: LLM | None = None) -> Condensation | None:
        """Everything after the kept head, the recent messages included, becomes the summary, small enough that the
        view shrinks; if it cannot, everything after the system prompt (the SDK's own reset). A summariser that
        fails is replaced by the extractive compressor, which loads no model. When no summary can shrink the view:
        for a request on a view under the trigger (a person's, on a short history), a ``Condensation`` that forgets
        nothing (the request is answered, the view stays as it is); else None (the SDK raises: nothing can help)."""
        for fallback in (False, True):
            try:
                for keep_first in (None, 0):
                    try:
                        return self._condense(
                            view, agent_llm, 0, must_shrink=True, keep_first=keep_first, fallback=fallback
                        )
                    except NoCondensationAvailableException as err:
                        log.info("hard context reset (keep_first=%s): %s", keep_first, err)
                return self.acknowledgement(view, agent_llm)
            except Exception as err:
                if fallback:
                    raise
                log.warning(
                    "hard context reset: the summariser failed (%s: %s); resetting with the extractive compressor",
                    type(err).__name__,
                    err,
                )
        return None

    def acknowledgement(self, view: View, agent_llm: LLM | None) -> Condensation | None:
        """The answer to a request that no summary can meet because the view is already as small as one would make
        it: a ``Condensation`` that forgets nothing, which marks the request handled and leaves the view as it is.
        None for a view over the trigger (the request may come from a window the view does not fit: answering it
        with nothing would only bring it back)."""
        if not view.unhandled_condensation_request:
            return None
        parsed = as_messages(view_messages(view.events)[0])
        hook = self.hook_for(self.window(agent_llm))
        tokens = hook.counter.count(parsed)
        if tokens > hook.trigger_tokens:
            return None
        log.info("condensation requested on a view of %d tokens that no summary can shrink: nothing forgotten", tokens)
        return Condensation(
            forgotten_event_ids=set(), llm_response_id=f"offline_compress:{hook.session}:nothing-to-condense"
        )

    async def aget_condensation(self, view: View, agent_llm: LLM | None = None) -> Condensation:
        # The compressor blocks (llama.cpp): keep the event loop free.
        return await asyncio.to_thread(self.get_condensation, view, agent_llm)

    async def ahard_context_reset(self, view: View, agent_llm: LLM | None = None) -> Condensation | None:
        return await asyncio.to_thread(self.hard_context_reset, view, agent_llm)

    # ---------------------------------------------------------------------------------------------- the range

    def forgotten_range(
        self,
        view: View,
        parsed: Sequence[Message],
        starts: Sequence[int],
        keep_last: int,
        keep_first: int | None = None,
    ) -> Plan:
        """The plan whose ``[head, cut)`` (in messages) is summarised and forgotten. Both boundaries are
        manipulation indices of the view, and both are where ``plan_compaction`` itself puts them (so the summary
        covers exactly the forgotten events): the head moves later and the cut earlier until the two agree. The
        first ``keep_first`` events are never forgotten, an earlier summary of ours among them included (it stays
        where it is; the new summary covers what follows). ``keep_first``: instead of the condenser's (the system
        prompt is kept whatever it says)."""
        events = view.events
        first_event = {e: m for m, e in enumerate(starts)}
        safe = sorted(i for i in view.manipulation_indices if i in first_event)  # event indices that start a message
        system = next((i for i, e in enumerate(events) if isinstance(e, SystemPromptEvent)), None)
        first = self.keep_first if keep_first is None else keep_first
        protected = max(first, system + 1 if system is not None else 0)

        def at_or_after(event: int) -> int | None:
            return next((i for i in safe if i >= event), None)

        def at_or_before(event: int) -> int | None:
            return next((i for i in reversed(safe) if i <= event), None)

        n = len(parsed)
        head_event = at_or_after(protected)
        cut_event = at_or_before(starts[cut_index(parsed, keep_last)])
        for _ in range(2 * n + 2):  # the head only moves later (or once, to an earlier summary), the cut earlier
            if head_event is None or cut_event is None or head_event >= cut_event:
                break
            # a summary of ours inside the kept events stays there (strict_head); a later one is merged
            plan = plan_compaction(parsed, first_event[head_event], n - first_event[cut_event], strict_head=True)
            head, cut = plan.head, plan.cut
            new_head, new_cut = at_or_after(starts[head]), at_or_before(starts[cut])
            if (new_head, new_cut) == (head_event, cut_event) and (head, cut) == (
                first_event[head_event],
                first_event[cut_event],
            ):
                return plan
            head_event, cut_event = new_head, new_cut
        raise NoCondensationAvailableException(
            f"no room to condense: the first {protected} events are kept and the last {keep_last} messages too, "
            "and no boundary between them keeps tool calls with their observations"
        )

    def fitting_range(
        self,
        view: View,
        parsed: Sequence[Message],
        starts: Sequence[int],
        hook: CompactionHook,
        keep_first: int | None,
        *,
        soft: bool,
    ) -> Plan:
        """``forgotten_range`` with ``keep_last``, or, when even a summary at its floor would leave a view that does
        not fit the window, with fewer recent messages: the most that reach the hook's target, else the window.
        ``soft`` (a SOFT requirement: the view fits): never fewer recent messages because ``keep_last`` leaves no
        room (the agent goes on with its view, ``NoCondensationAvailableException``), only because the condensed
        view would not fit."""
        counts = hook.counter.message_counts(parsed)

        def estimate(plan: Plan) -> int:  # the condensed view, its summary at the floor
            return sum(counts[: plan.head]) + FLOOR_TOKENS + sum(counts[plan.cut :])

        plans = []
        for k in range(self.keep_last, -1, -1):
            try:
                plans.append(self.forgotten_range(view, parsed, starts, k, keep_first))
            except NoCondensationAvailableException:
                if k == self.keep_last and soft:
                    raise
                continue
            if k == self.keep_last and estimate(plans[0]) < hook.model_max_tokens:
                return plans[0]
        if not plans:
            return self.forgotten_range(view, parsed, starts, 0, keep_first)  # raises, saying why
        for limit in (hook.target_tokens, hook.model_max_tokens - 1):
            plan = next((p for p in plans if estimate(p) <= limit), None)
            if plan is not None:
                return plan
        return plans[-1]

    def foreign_summary(self, view: View, parsed: Sequence[Message], starts: Sequence[int], plan: Plan) -> Plan:
        """``plan`` with the summaries other condensers wrote in its range carried (``carried_summary``) instead of
        summarised as messages: with ours (the plan's previous summary), or alone, as the previous summary that
        the new one merges, in the order they stand in the view."""
        foreign = {
            m: event.summary
            for m in range(plan.head, plan.cut)
            if isinstance(event := view.events[starts[m]], CondensationSummaryEvent)
            and not is_summary_message(parsed[m])
        }
        if not foreign:
            return plan
        base = plan.previous or S.CompressedContext()
        constraints: list[str] = []
        for m in sorted({*foreign, *([] if plan.previous_at is None else [plan.previous_at])}):
            constraints += carried_summary(foreign[m]).user_constraints if m in foreign else base.user_constraints
        previous = base.model_copy(update={"user_constraints": list(dict.fromkeys(constraints))[: S.MAX_CONSTRAINTS]})
        at = plan.previous_at if plan.previous_at is not None else max(foreign)
        return Carrying(plan.head, plan.cut, previous, at, frozenset(foreign) - {at})

    def _condense(
        self,
        view: View,
        agent_llm: LLM | None,
        keep_last: int,
        *,
        must_shrink: bool = False,
        keep_first: int | None = None,
        fallback: bool = False,
    ) -> Condensation:
        requirement, reason = self.assess(view, agent_llm)
        messages, starts = view_messages(view.events)
        parsed = as_messages(messages)
        hook = self.hook_for(self.window(agent_llm))
        if keep_last == self.keep_last and not must_shrink:
            soft = requirement == CondensationRequirement.SOFT
            try:
                plan = self.fitting_range(view, parsed, starts, hook, keep_first, soft=soft)
            except NoCondensationAvailableException:
                if soft:  # no retry at every step: a boundary needs new events (the trigger is held until then)
                    hook.hold(parsed, hook.counter.count(parsed))
                raise
        else:
            plan = self.forgotten_range(view, parsed, starts, keep_last, keep_first)
        plan = self.foreign_summary(view, parsed, starts, plan)
        head, cut = plan.head, plan.cut
        # the extractive compressor loads no model: it is what a hard reset falls back on when the summariser failed
        hook.compressor = Compressor(None) if fallback else self.summariser()
        # the plan's previous summary is the one in the view (ours, others' carried in it), never the hook's memory
        previous = plan.previous if isinstance(plan, Carrying) else None
        why = reason if requirement is not None else "request"
        done = len(hook.metrics)
        new = hook.compact(messages, reason=why, plan=plan, previous=previous, must_shrink=must_shrink)
        if len(hook.metrics) == done:
            raise RuntimeError("the hook recorded no outcome for the condensation")
        metrics = hook.metrics[-1]
        if metrics.outcome == "failed":  # the hook caught a fault of its own (a summariser that failed)
            raise SummaryFailed(metrics.note)
        if metrics.outcome != "compacted":
            raise NoCondensationAvailableException(f"offline_compress kept the history: {metrics.note}")
        if metrics.head != head or len(new) != head + 1 + len(messages) - cut:  # a fault of ours: never the view's
            raise SummaryFailed(
                f"the hook cut at {metrics.head}..{len(messages) - (len(new) - head - 1)}, "
                f"not at the view's boundaries {head}..{cut}"
            )
        forgotten = view.events[starts[head] : starts[cut]]
        return Condensation(
            forgotten_event_ids={event.id for event in forgotten},
            summary=new[head]["content"],
            summary_offset=starts[head],
            llm_response_id=f"offline_compress:{hook.session}:{metrics.compaction}",
        )


class SummaryFailed(RuntimeError):
    """The hook caught a fault while it summarised (it answered with the history as it was, ``outcome="failed"``):
    for the condenser, a summariser that failed."""


@dataclass(frozen=True)
class Carrying(Plan):
    """A plan whose range holds summaries of other condensers: they are carried in ``previous`` (with ours, if any),
    so the region leaves them out (``skip``) as it leaves out the previous summary itself."""

    skip: frozenset[int] = frozenset()

    @property
    def region(self) -> list[int]:
        return [i for i in super().region if i not in self.skip]
