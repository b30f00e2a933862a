"""The OpenHands SDK's own condenser tests, ported to ``OfflineCondenser`` (the drop-in ``RollingCondenser``).

Each case is one of the SDK's, named in a comment by repository, file and test: the cases about what the SDK relies
on from a condenser's inputs and outputs (``condense`` returns the ``View`` or a ``Condensation``; a SOFT
requirement without a condensation is the unchanged view, a HARD one is a reset; the forgotten range sits on the
view's manipulation indices, keeps tool calls with their observations, thinking-block tool loops and multi-action
batches whole; an earlier ``Condensation.summary`` is not lost; the window from the agent's LLM), not the internals
of ``LLMSummarizingCondenser``'s LLM summary (its prompt, retries, event-count sizing). They run on the SDK's own
classes (``View``, ``Condensation``, ``CondensationRequest``, ``MCPToolAction`` events as the SDK's tests build them,
its scripted ``TestLLM``) with the extractive compressor; no SDK object is mocked. Where our knobs differ the
translation is said in the case:

- ``max_size`` (events) and ``max_tokens``: our trigger counts tokens of ``max_tokens`` (or the agent LLM's
  window): SOFT above 60% of it, HARD above the window or on a ``CondensationRequest`` (the SDK's REQUEST reason);
- "the summarising LLM was not called": no compaction ran (``condenser.hook.metrics`` is empty);
- the SDK's tiny events ("Event 3", "Success") are kept where their structure is the point; where a summary must
  stand for them, their text is longer (a summary of a few words cannot be shorter than its JSON).

Upstream repository: OpenHands/software-agent-sdk (``UPSTREAM`` below), tests/sdk/context/... .

The SDK needs Python >= 3.12: ``test_contract_openhands.py::test_the_openhands_tests_run_in_python_312`` runs this
file in ``.venv312``; under 3.11 every case here skips."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

UPSTREAM = "OpenHands/software-agent-sdk"

try:
    from offline_compress.integrations import openhands as oh
except ImportError as err:
    oh, OH_MISSING = None, str(err)

pytestmark = pytest.mark.skipif(oh is None, reason=f"runs in .venv312 (Python 3.12): {globals().get('OH_MISSING')}")

SYSTEM = "You are OpenHands agent."
TASK = "Fix the crash in src/app.py. Do not modify the tests."


# ------------------------------------------------------------------------------------------------ the SDK's events


def message_event(content: str, role: str = "user") -> Any:
    """The SDK tests' ``message_event``."""
    from openhands.sdk.event.llm_convertible import MessageEvent
    from openhands.sdk.llm import Message, TextContent

    return MessageEvent(
        llm_message=Message(role=role, content=[TextContent(text=content)]),
        source="user" if role == "user" else "agent",
    )


def system_event() -> Any:
    from openhands.sdk.event.llm_convertible import SystemPromptEvent
    from openhands.sdk.llm import TextContent

    return SystemPromptEvent(system_prompt=TextContent(text=SYSTEM), tools=[])


def action_event(
    response: str, call: str, *, thinking: bool = False, command: str | None = None, thought: bool = True
) -> Any:
    """The SDK tests' ``create_action_event`` / ``create_action_with_thinking`` (an ``MCPToolAction``)."""
    from openhands.sdk.event.llm_convertible import ActionEvent
    from openhands.sdk.llm import MessageToolCall, TextContent, ThinkingBlock
    from openhands.sdk.mcp.definition import MCPToolAction

    arguments = json.dumps({"command": command}) if command else "{}"
    blocks = [ThinkingBlock(type="thinking", thinking="Extended thinking...", signature="sig")] if thinking else []
    return ActionEvent(
        # the SDK's own conversion wants no thought on the later actions of one response (a batch)
        thought=[TextContent(text=f"I'll run {command} next." if command else "Test thought")] if thought else [],
        thinking_blocks=blocks,
        action=MCPToolAction(data={"command": command} if command else {}),
        tool_name="test_tool",
        tool_call_id=call,
        tool_call=MessageToolCall(id=call, name="test_tool", arguments=arguments, origin="completion"),
        llm_response_id=response,
        source="agent",
    )


def observation_event(call: str, content: str = "Success") -> Any:
    """The SDK tests' ``create_observation_event``."""
    from openhands.sdk.event.llm_convertible import ObservationEvent
    from openhands.sdk.mcp.definition import MCPToolObservation

    return ObservationEvent(
        observation=MCPToolObservation.from_text(text=content, tool_name="test_tool"),
        tool_name="test_tool",
        tool_call_id=call,
        action_id="action_event_id",
        source="environment",
    )


def output(i: int, lines: int = 30) -> str:
    """What a step printed: long enough that a summary of it is shorter than it."""
    return f"# src/mod{i}.py\n" + "".join(f"value_{i}_{k} = compute({i}, {k})\n" for k in range(lines))


def step(i: int, *, thinking: bool = False, lines: int = 30) -> list[Any]:
    """One tool call and its observation (``resp_i`` / ``call_i``)."""
    return [
        action_event(f"resp_{i}", f"call_{i}", thinking=thinking, command=f"cat src/mod{i}.py"),
        observation_event(f"call_{i}", output(i, lines)),
    ]


def view_of(events: list[Any]) -> Any:
    from openhands.sdk.context.view import View

    return View.from_events(events)


def condenser(tmp_path: Path, **kwargs: Any) -> Any:
    from offline_compress import Compressor

    kwargs.setdefault("compressor", Compressor(None))
    kwargs.setdefault("max_tokens", 4000)
    return oh.OfflineCondenser(archive_path=str(tmp_path / "a.sqlite3"), **kwargs)


def tokens(view: Any) -> int:
    """The view's tokens as the condenser counts them."""
    from offline_compress.history.messages import as_messages
    from offline_compress.tokens.counter import get_counter

    return get_counter().count(as_messages(oh.view_messages(view.events)[0]))


def applied(view: Any, result: Any) -> Any:
    """The view after the SDK applies ``result``, checked as the SDK needs it: the ids are the view's, one range on
    its manipulation indices, the summary where the SDK inserts it, every call with its observation."""
    from openhands.sdk.event import ActionEvent, Condensation, CondensationSummaryEvent, ObservationEvent

    assert isinstance(result, Condensation)
    ids = [e.id for e in view.events]
    forgotten = [i for i, e in enumerate(ids) if e in result.forgotten_event_ids]
    assert forgotten and result.forgotten_event_ids <= set(ids)
    assert forgotten == list(range(forgotten[0], forgotten[-1] + 1))
    indices = view.manipulation_indices
    assert forgotten[0] in indices and forgotten[-1] + 1 in indices
    assert result.summary_offset == forgotten[0] and result.summary and result.summary.startswith("[CONTEXT_SUMMARY]")
    after = view_of([*view.events, result])
    assert isinstance(after.events[result.summary_offset], CondensationSummaryEvent)
    calls = {e.tool_call_id for e in after.events if isinstance(e, ActionEvent)}
    assert calls == {e.tool_call_id for e in after.events if isinstance(e, ObservationEvent)}
    assert not after.unhandled_condensation_request
    assert tokens(after) < tokens(view)  # a condensation always shrinks the view
    return after


def archived(c: Any, texts: list[str]) -> None:
    """The last condensation's forgotten events were archived first, these texts among them."""
    hook = c.hook
    messages = hook.archive.restore(hook.metrics[-1].compaction, session=hook.session)
    found = json.dumps(messages)
    assert all(t in found for t in texts)


def request() -> Any:
    from openhands.sdk.event import CondensationRequest

    return CondensationRequest()


# ------------------------------------------------------------------------------------------------ RollingCondenser


def test_the_view_comes_back_when_no_condensation_is_needed(tmp_path):
    # UPSTREAM tests/sdk/context/condenser/test_rolling_condenser.py::
    #   test_rolling_condenser_returns_view_when_no_condensation_needed
    # tests/sdk/context/condenser/test_llm_summarizing_condenser.py::test_should_condense (below the limit) and
    #   ::test_condense_returns_view_when_no_condensation_needed (the LLM is not called)
    from openhands.sdk.context.view import View

    view = view_of([message_event(f"Event {i}") for i in range(3)])
    c = condenser(tmp_path, max_tokens=50_000)
    assert c.condensation_requirement(view) is None
    result = c.condense(view)
    assert isinstance(result, View) and result == view and result is view
    assert c.hook is None or c.hook.metrics == []  # nothing was summarised


def test_a_condensation_comes_back_when_one_is_needed(tmp_path):
    # UPSTREAM tests/sdk/context/condenser/test_rolling_condenser.py::
    #   test_rolling_condenser_returns_condensation_when_needed (a HARD requirement)
    # tests/sdk/context/condenser/test_llm_summarizing_condenser.py::test_should_condense (above the limit)
    from openhands.sdk.context.condenser.base import CondensationRequirement

    events = [message_event(TASK), *[e for i in range(12) for e in step(i)]]
    view = view_of([*events, request()])
    c = condenser(tmp_path)
    assert c.condensation_requirement(view) == CondensationRequirement.HARD
    applied(view, c.condense(view))


def test_soft_without_room_gives_back_the_unchanged_view(tmp_path):
    # UPSTREAM tests/sdk/context/condenser/test_rolling_condenser.py::
    #   test_rolling_condenser_returns_view_on_no_condensation_available_exception (SOFT: the view, its events)
    # tests/sdk/context/test_tool_loop_condensation_edge_case.py::test_condensation_with_only_tool_loop_after_keep_first
    #   (everything after keep_first is one tool loop: no range can be forgotten without the recent events)
    from openhands.sdk.context.condenser.base import CondensationRequirement
    from openhands.sdk.context.view import View

    events = [message_event("User message"), message_event("Another user message")]
    for i in range(1, 6):
        events += step(i, thinking=i == 1)
    view = view_of(events)
    assert sorted(view.manipulation_indices) == [0, 1, 2, 12]
    c = condenser(tmp_path, keep_first=2, max_tokens=int(tokens(view) / 0.9))  # 90% of the window: SOFT
    assert c.condensation_requirement(view) == CondensationRequirement.SOFT
    result = c.condense(view)
    assert isinstance(result, View) and result == view and result.events == events
    assert c.condensation_requirement(view) is None  # and held: not tried again at every step


def test_hard_without_room_is_a_reset_not_an_error(tmp_path):
    # UPSTREAM tests/sdk/context/condenser/test_rolling_condenser.py::test_hard_context_reset_condensation_is_returned
    #   and ::test_default_hard_context_reset_raises_error (ours overrides the reset: HARD never raises while the
    #   view can shrink)
    # tests/sdk/context/test_tool_loop_condensation_edge_case.py::test_condensation_with_only_tool_loop_after_keep_first
    #   and tests/sdk/context/test_tool_loop_condensation.py::test_single_long_tool_loop_condensation (the only
    #   condensation is the whole tool loop, as one unit)
    events = [message_event("User message"), message_event("Another user message")]
    for i in range(1, 6):
        events += step(i, thinking=i == 1)
    view = view_of([*events, request()])
    c = condenser(tmp_path, keep_first=2)
    after = applied(view, c.condense(view))
    assert [e.id for e in after.events[:2]] == [e.id for e in events[:2]]  # keep_first kept
    assert len(after.events) == 3  # the whole loop went, as one unit


def test_a_single_long_tool_loop_is_condensed_whole(tmp_path):
    # UPSTREAM tests/sdk/context/test_tool_loop_condensation.py::test_single_long_tool_loop_condensation
    events = [message_event("User message")]
    for i in range(1, 11):
        events += step(i, thinking=i == 1, lines=8)
    view = view_of([*events, request()])
    assert sorted(view.manipulation_indices) == [0, 1, 21]
    c = condenser(tmp_path, keep_first=1)
    result = c.condense(view)
    after = applied(view, result)
    assert result.forgotten_event_ids == {e.id for e in events[1:]}  # all of the loop, nothing of it kept
    assert after.events[0].id == events[0].id


# ------------------------------------------------------------------------------------------------ HARD


@pytest.mark.parametrize("n", [25, 40])
def test_many_short_events_are_condensed_on_request(tmp_path, n):
    # UPSTREAM tests/sdk/context/condenser/test_llm_summarizing_condenser.py::test_condense_returns_condensation_when_needed
    #   and ::test_condense_with_request_and_events_reasons (many one-line user events and a request: a
    #   Condensation that forgets some, keep_first kept, the summary where the forgetting starts)
    keep_first = 3
    events = [message_event(f"Event {i}") for i in range(n)]
    view = view_of([*events, request()])
    c = condenser(tmp_path, keep_first=keep_first, max_tokens=2000)
    result = c.condense(view)
    after = applied(view, result)
    assert result.summary_offset == keep_first
    assert [e.id for e in after.events[:keep_first]] == [e.id for e in events[:keep_first]]
    archived(c, ["Event 3", f"Event {n - 6}"])


def test_a_few_short_events_on_request_shrink_or_stay(tmp_path):
    # UPSTREAM tests/sdk/context/condenser/test_llm_summarizing_condenser.py::test_condense_returns_condensation_when_needed
    #   (11 one-line events, keep_first=3): a summary of the 8 after keep_first cannot be shorter than they are,
    #   so the HARD request resets everything (no system prompt here), as the SDK's own hard reset does, and
    #   still shrinks the view
    events = [message_event(f"Event {i}") for i in range(11)]
    view = view_of([*events, request()])
    c = condenser(tmp_path, keep_first=3, max_tokens=2000)
    result = c.condense(view)
    after = applied(view, result)
    assert result.summary_offset in (0, 3)
    assert len(after.events) < len(view.events)
    archived(c, [f"Event {i}" for i, e in enumerate(events) if e.id in result.forgotten_event_ids])


def test_a_request_on_a_view_no_summary_can_shrink_is_acknowledged(tmp_path):
    # UPSTREAM tests/integration/tests/c02_hard_context_reset.py (HardContextResetTest: conversation.condense() on a
    #   short history must not raise; the conversation goes on; the older c02_hard_condensation_requirement.py had
    #   it raise NoCondensationAvailableException). No summary of [task, reply] is shorter than they are: the
    #   request is acknowledged by a Condensation that forgets nothing, and the view is left as it was
    from openhands.sdk.event import Condensation

    marker = "HARD_RESET_MARKER_7F3A"
    events = [
        system_event(),
        message_event(f"Reply with a short one-line acknowledgement. Include the exact token {marker} in your reply."),
        message_event(f"Acknowledged: {marker}.", role="assistant"),
    ]
    view = view_of([*events, request()])
    c = condenser(tmp_path, keep_first=4)
    result = c.condense(view)
    assert isinstance(result, Condensation) and not result.forgotten_event_ids and result.summary is None
    after = view_of([*events, request(), result])
    assert [e.id for e in after.events] == [e.id for e in events] and not after.unhandled_condensation_request


def test_condense_on_a_short_conversation_does_not_raise_and_the_run_goes_on(tmp_path):
    # UPSTREAM tests/integration/tests/c02_hard_context_reset.py (HardContextResetTest.run_instructions: a real
    #   agent turn, conversation.condense() on that short history, then the conversation goes on and finishes),
    #   in a real Conversation with the SDK's agent loop and its scripted TestLLM
    from openhands.sdk import Agent, Conversation
    from openhands.sdk.event import Condensation
    from openhands.sdk.llm import Message, TextContent
    from openhands.sdk.testing import TestLLM

    marker = "HARD_RESET_MARKER_7F3A"
    replies = [f"Acknowledged: {marker}.", "hello world"]
    llm = TestLLM.from_messages([Message(role="assistant", content=[TextContent(text=t)]) for t in replies])
    c = condenser(tmp_path, keep_first=4, max_tokens=20_000)
    conversation = Conversation(agent=Agent(llm=llm, tools=[], condenser=c), workspace=str(tmp_path), visualizer=None)
    conversation.send_message(f"Reply with a short one-line acknowledgement. Include the exact token {marker}.")
    conversation.run()
    before = [e.id for e in conversation.state.view.events]
    conversation.condense()  # must not raise
    assert isinstance(conversation.state.events[-1], Condensation)
    assert not conversation.state.view.unhandled_condensation_request
    assert [e.id for e in conversation.state.view.events] == before  # nothing a summary could shrink: kept
    conversation.send_message('Echo back "hello world".')
    conversation.run()
    assert conversation.state.execution_status.value == "finished" and llm.call_count == 2


def test_a_hard_reset_keeps_the_system_prompt_and_a_later_condensation_keeps_the_reset(tmp_path):
    # UPSTREAM tests/integration/tests/c02_hard_context_reset.py (HardContextResetTest.verify_result: an explicit
    #   condensation with no valid forgetting range past keep_first falls back to a hard reset; its summary sits
    #   right after what it keeps and the view still opens with the system prompt; the turn's marker survives; a
    #   later normal condensation (summary_offset > 0) never forgets the system prompt, and the reset's content is
    #   still there after it). Ours keeps keep_first in a reset when the view still shrinks (the SDK's forgets all
    #   after the system prompt), and merges the reset's summary into the next one (the SDK keeps it in keep_first).
    from openhands.sdk.event import CondensationSummaryEvent

    marker = "HARD_RESET_MARKER_7F3A"
    events = [system_event(), message_event(f"Run the checks. Include the exact token {marker} in your reply.")]
    events += [e for i in range(3) for e in step(i)]  # keep_first=4 and keep_last=5 leave no range: a reset
    view = view_of([*events, request()])
    c = condenser(tmp_path, keep_first=4, max_tokens=16_000)  # room for all of it: no summary cut to fit
    reset = c.condense(view)
    after = applied(view, reset)
    assert reset.summary_offset == 4 and [e.id for e in after.events[:4]] == [e.id for e in events[:4]]
    assert marker in events[1].llm_message.content[0].text and after.events[1].id == events[1].id
    assert "mod1.py" in reset.summary  # the oldest step after the kept events (fewer recent ones stay: HARD)
    later = [*events, request(), reset, *[e for i in range(3, 20) for e in step(i)]]
    view = view_of([*later, request()])
    again = c.condense(view)
    final = applied(view, again)
    assert again.summary_offset > 0 and events[0].id not in again.forgotten_event_ids
    assert [e.id for e in final.events[:4]] == [e.id for e in events[:4]]
    assert f"{reset.id}-summary" in again.forgotten_event_ids  # ours is merged into the next summary...
    summaries = [e.summary for e in final.events if isinstance(e, CondensationSummaryEvent)]
    assert len(summaries) == 1 and "mod1.py" in summaries[0]  # ...which still holds what the reset summarised


def test_keep_first_protects_a_reset_summary_among_the_first_events(tmp_path):
    # UPSTREAM tests/integration/tests/c02_hard_context_reset.py (HardContextResetTest: keep_first=4 protects
    #   [system, reset summary, user turn, action]; the normal condensation after the reset forgets none of them,
    #   protected & forgotten_event_ids is empty) and test_llm_summarizing_condenser.py's keep_first ("the first
    #   keep_first events in the conversation will never be condensed or summarized")
    events = [system_event(), message_event(TASK), *[e for i in range(10) for e in step(i)]]
    view = view_of([*events, request()])
    reset = condenser(tmp_path / "reset", keep_first=1).condense(view)  # only the system prompt kept: offset 1
    applied(view, reset)
    assert reset.summary_offset == 1
    later = [
        *events,
        request(),
        reset,
        message_event("Now run the tests."),
        *[e for i in range(10, 24) for e in step(i)],
    ]
    view = view_of([*later, request()])
    protected = [e.id for e in view.events[:4]]
    assert protected[1] == f"{reset.id}-summary"
    again = condenser(tmp_path / "again", keep_first=4).condense(view)
    after = applied(view, again)
    assert not set(protected) & again.forgotten_event_ids and again.summary_offset >= 4
    assert [e.id for e in after.events[:4]] == protected


@pytest.mark.parametrize("strict", ["1", ""], ids=["raised", "caught-by-the-hook"])
def test_a_summariser_that_fails_mid_summary_gives_the_view_for_soft_and_a_reset_for_hard(
    tmp_path, monkeypatch, strict
):
    # UPSTREAM tests/sdk/context/condenser/test_agent_reset_condenser.py::test_explicit_summary_preserves_users_and_system
    #   (a summary call that raises is recovered from, sync and async) and LLMSummarizingCondenser.hard_context_reset
    #   (a failed summary is retried, never fatal). Here the summariser raises inside the summary, after it loaded;
    #   the hook raises it (OFFLINE_COMPRESS_STRICT=1, as the test suite runs) or, as in production, answers with
    #   the history as it was and outcome "failed": the condenser must tell that from a history it kept.
    from openhands.sdk.context.condenser.base import CondensationRequirement

    from offline_compress import Compressor

    monkeypatch.setenv("OFFLINE_COMPRESS_STRICT", strict)

    class Crashing(Compressor):
        def compress_detailed(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("the model crashed while it summarised")

    events = [system_event(), message_event(TASK), *[e for i in range(14) for e in step(i)]]
    view = view_of(events)
    c = condenser(tmp_path, compressor=Crashing(None), max_tokens=int(tokens(view) / 0.9))  # over the trigger
    assert c.condensation_requirement(view) == CondensationRequirement.SOFT
    assert c.condense(view) is view  # SOFT: the agent goes on with its view
    assert c.condensation_requirement(view) is None  # and the trigger is held: no retry at every step
    hard = view_of([*events, request()])
    for result in (c.condense(hard), asyncio.run(c.acondense(hard))):  # HARD: a reset by the extractive compressor
        applied(hard, result)


def test_a_view_over_the_token_limit_is_brought_under_it(tmp_path):
    # UPSTREAM tests/sdk/context/condenser/test_llm_summarizing_condenser.py::test_condense_with_token_limit_exceeded
    #   and ::test_condense_with_request_and_tokens_reasons (TOKENS is a HARD requirement: the condensed view fits)
    from openhands.sdk.context.condenser.base import CondensationRequirement

    events = [message_event(TASK), *[e for i in range(16) for e in step(i)]]
    view = view_of(events)
    limit = int(tokens(view) * 0.9)
    c = condenser(tmp_path, max_tokens=limit)
    assert c.assess(view) == (CondensationRequirement.HARD, "context-window")
    after = applied(view, c.condense(view))
    assert tokens(after) < limit
    both = view_of([*events, request()])  # and with a request on top (REQUEST and TOKENS): it fits too
    assert tokens(applied(both, condenser(tmp_path / "r", max_tokens=limit).condense(both))) < limit


def test_the_window_comes_from_the_agents_llm_which_is_never_called(tmp_path, monkeypatch):
    # UPSTREAM tests/sdk/context/condenser/test_rolling_condenser.py::test_rolling_condenser_with_agent_llm and
    #   tests/sdk/context/condenser/test_llm_summarizing_condenser.py::test_condense_with_agent_llm (the agent's LLM
    #   is passed for its window; the condenser never calls it)
    from openhands.sdk.testing import TestLLM

    monkeypatch.setenv("ALLOW_SHORT_CONTEXT_WINDOWS", "true")  # the SDK's own switch for windows under 16k
    events = [message_event(TASK), *[e for i in range(14) for e in step(i)]]
    view = view_of(events)
    llm = TestLLM.from_messages([], max_input_tokens=int(tokens(view) / 0.9))  # over the trigger (85%)
    c = condenser(tmp_path, max_tokens=None)
    assert c.condensation_requirement(view, agent_llm=llm) is not None
    applied(view, c.condense(view, agent_llm=llm))
    assert llm.call_count == 0
    big = TestLLM.from_messages([], max_input_tokens=10 * tokens(view))
    assert c.condense(view, agent_llm=big) is view  # a larger agent window: nothing to do


def test_invalid_settings_are_refused(tmp_path):
    # UPSTREAM tests/sdk/context/condenser/test_llm_summarizing_condenser.py::test_invalid_config (a non-positive
    #   size limit, a negative keep_first: ValueError)
    for settings in ({"max_tokens": 0}, {"keep_first": -1}, {"keep_last": -1}, {"summary_fraction": 0}):
        with pytest.raises(ValueError):
            oh.OfflineCondenser(**settings)


# ------------------------------------------------------------------------------------------------ what is kept whole


def test_thinking_blocks_survive_condensation(tmp_path):
    # UPSTREAM tests/sdk/context/condenser/test_llm_summarizing_condenser.py::test_thinking_blocks_survive_condensation
    #   (batches of actions, some opened by thinking blocks: a batch is kept whole or forgotten whole, no thinking
    #   block is orphaned, the manipulation indices of the condensed view are valid)
    from openhands.sdk.context.view import View
    from openhands.sdk.event.llm_convertible import ActionEvent, ObservationEvent

    def batch(response: str, calls: list[str], thinking: bool) -> list[Any]:
        actions = [
            action_event(response, c, thinking=thinking and k == 0, command=f"cat {c}.py", thought=k == 0)
            for k, c in enumerate(calls)
        ]
        return [*actions, *[observation_event(c, output(int(c[2:]))) for c in calls]]

    events = [message_event("User message 1"), message_event("User message 2")]
    events += batch("response_1", ["tc1", "tc2", "tc3"], thinking=True)
    events += [message_event("User message 3"), message_event("User message 4")]
    events += batch("response_2", ["tc4", "tc5"], thinking=False)
    events += [message_event("User message 5"), message_event("User message 6")]
    events += batch("response_3", ["tc6", "tc7"], thinking=True)
    events += [message_event("User message 7")]
    assert len(events) == 21
    view = view_of([*events, request()])
    c = condenser(tmp_path, keep_first=2)
    after = applied(view, c.condense(view))
    assert len(after.events) < len(view.events)
    for action in [e for e in after.events if isinstance(e, ActionEvent) and e.thinking_blocks]:
        batch_actions = [
            e for e in after.events if isinstance(e, ActionEvent) and e.llm_response_id == action.llm_response_id
        ]
        ids = {a.tool_call_id for a in batch_actions}
        assert len(batch_actions) == len(
            [e for e in after.events if isinstance(e, ObservationEvent) and e.tool_call_id in ids]
        )
    indices = sorted(View(events=after.events).manipulation_indices)  # the condensed view's, computed afresh
    assert indices[0] == 0 and indices[-1] == len(after.events)


def test_a_tool_loop_between_messages_is_forgotten_whole_or_kept_whole(tmp_path):
    # UPSTREAM tests/sdk/context/test_tool_loop_condensation.py::test_tool_loop_with_prefix_and_suffix,
    #   ::test_multiple_tool_loops_condensation and ::test_cannot_partially_condense_tool_loop, and
    #   tests/sdk/context/test_tool_loop_condensation_edge_case.py::test_condensation_works_with_tool_loop_boundaries
    events = [message_event("User 1"), *step(0)]
    events += [*step(1, thinking=True), *step(2), *step(3)]  # a tool loop: 1 opens it, 2 and 3 are in it
    events += [message_event("User 2"), *step(4, thinking=True), *step(5), message_event("User 3"), *step(6)]
    view = view_of([*events, request()])
    loops = [{e.id for e in events[3:9]}, {e.id for e in events[10:14]}]
    for keep_last in (1, 3, 5, 8):
        c = condenser(tmp_path / str(keep_last), keep_first=1, keep_last=keep_last)
        result = c.condense(view)
        applied(view, result)
        for loop in loops:
            assert loop <= result.forgotten_event_ids or not loop & result.forgotten_event_ids, keep_last


# ------------------------------------------------------------------------------------------------ earlier summaries


@pytest.mark.parametrize("text", ["Previous summary content", "Summary of event 0"])
def test_an_earlier_summary_of_another_condenser_is_carried_into_ours(tmp_path, text):
    # UPSTREAM tests/sdk/context/condenser/test_llm_summarizing_condenser.py::test_get_condensation_with_previous_summary
    #   (a Condensation's summary inserted at keep_first; the next summary carries it: "Previous summary content"
    #   is in what the summariser was given, here in the summary written). Its text names no code, so it must not
    #   depend on the names a work-log line adds to survive.
    from openhands.sdk.event import Condensation

    from offline_compress.history.messages import Message
    from offline_compress.summary.message import parse_summary_message

    keep_first = 3
    events = [message_event(f"Event {i}") for i in range(3)] + [e for i in range(14) for e in step(i)]
    theirs = Condensation(
        forgotten_event_ids=[events[3].id, events[4].id],
        summary=text,
        summary_offset=keep_first,
        llm_response_id="condensation_response_1",
    )
    view = view_of(events[:keep_first] + [theirs] + events[keep_first:] + [request()])
    c = condenser(tmp_path, keep_first=keep_first)
    result = c.condense(view)
    applied(view, result)
    assert f"{theirs.id}-summary" in result.forgotten_event_ids and result.summary_offset == keep_first
    summary = parse_summary_message(Message(role="system", content=result.summary))
    assert summary is not None and text in oh.carried_text(summary)
    # and the summary after ours still carries it (ours is merged, theirs in it)
    later = [*events[:keep_first], theirs, *events[keep_first:], request(), result]
    later += [e for i in range(14, 30) for e in step(i)]
    again = condenser(tmp_path / "b", keep_first=keep_first).condense(view_of([*later, request()]))
    applied(view_of([*later, request()]), again)
    assert text in oh.carried_text(parse_summary_message(Message(role="system", content=again.summary)))


def test_several_earlier_summaries_are_all_carried(tmp_path):
    # UPSTREAM tests/sdk/context/test_view_multi_summary.py::test_multiple_summaries_at_different_offsets and
    #   ::test_summaries_preserve_order_and_content (summaries of several condensations coexist in a view; a
    #   condensation that forgets them must not lose any of them)
    from openhands.sdk.event import Condensation

    from offline_compress.history.messages import Message
    from offline_compress.summary.message import parse_summary_message

    events = [message_event(TASK), *[e for i in range(16) for e in step(i)]]
    first = Condensation(forgotten_event_ids=[], summary="Summary A", summary_offset=1, llm_response_id="cond_1")
    second = Condensation(forgotten_event_ids=[], summary="Summary B", summary_offset=6, llm_response_id="cond_2")
    view = view_of([*events[:5], first, *events[5:9], second, *events[9:], request()])
    c = condenser(tmp_path, keep_first=1)
    result = c.condense(view)
    applied(view, result)
    assert {f"{first.id}-summary", f"{second.id}-summary"} <= result.forgotten_event_ids
    carried = oh.carried_text(parse_summary_message(Message(role="system", content=result.summary)))
    assert carried.index("Summary A") < carried.index("Summary B")


def test_async_condense_is_the_same(tmp_path):
    # UPSTREAM tests/sdk/context/condenser/test_agent_reset_condenser.py::test_explicit_summary_preserves_users_and_system
    #   (its use_async parametrisation: acondense gives what condense gives)
    events = [system_event(), message_event(TASK), *[e for i in range(12) for e in step(i)]]
    view = view_of([*events, request()])
    sync = condenser(tmp_path / "s").condense(view)
    result = asyncio.run(condenser(tmp_path / "a").acondense(view))
    applied(view, result)
    assert result.forgotten_event_ids == sync.forgotten_event_ids and result.summary_offset == sync.summary_offset
    assert result.summary == sync.summary
