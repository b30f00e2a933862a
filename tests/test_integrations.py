"""Framework adapters, each run with the framework's own objects and no network: the LangChain v1 middleware
inside a real ``create_agent`` loop (its model is a scripted fake chat model from langchain-core: the agent's
model, not the thing under test), and the OpenHands SDK condenser on views built from the SDK's event classes.

What a summary must hold is read from the scripts below (the commands the agent ran, the one that failed), not
from the code that wrote the summary. The extractive compressor keeps these fast; one test per adapter runs the
real model. The OpenHands SDK needs Python >= 3.12 and is not in the ``dev`` extra: its tests skip without it."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from offline_compress import CompressedContext, Compressor
from offline_compress.history.messages import Message
from offline_compress.summary.message import SUMMARY_PREFIX, parse_summary_message
from offline_compress.tokens.counter import get_counter

try:
    from offline_compress.integrations import langchain as lc_adapter
except ImportError as err:  # the langchain extra is part of dev; without it these tests cannot run
    lc_adapter, LC_MISSING = None, str(err)
try:
    from offline_compress.integrations import openhands as oh_adapter
except ImportError as err:
    oh_adapter, OH_MISSING = None, str(err)

needs_langchain = pytest.mark.skipif(
    lc_adapter is None, reason=f"LangChain is not installed: {globals().get('LC_MISSING')}"
)
needs_openhands = pytest.mark.skipif(
    oh_adapter is None,
    reason=f"the OpenHands SDK is not installed (it needs Python >= 3.12): {globals().get('OH_MISSING')}",
)

TASK = "Fix the crash in src/app.py. Do not modify the tests."
FAILING = "python run_missing.py"
FAILURE = "python: can't open file 'run_missing.py': [Errno 2] No such file or directory"


def command(i: int) -> str:
    return FAILING if i == 2 else f"cat src/mod{i}.py"


def output(i: int) -> str:
    return FAILURE if i == 2 else f"# src/mod{i}.py\n" + f"value_{i} = compute({i})\n" * 30


def summary_of(text: str) -> CompressedContext:
    summary = parse_summary_message(Message(role="system", content=text))
    assert summary is not None, text[:200]
    return summary


def targets(summary: CompressedContext) -> set[str]:
    return {call.target for call in summary.tool_calls_summary}


@pytest.fixture(scope="module")
def extractive() -> Compressor:
    return Compressor(None)


# ------------------------------------------------------------------------------------------------ LangChain


def scripted_model(replies: list[Any]) -> Any:
    """The agent's model: replies from a script, records every prompt it was given."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    class ScriptedModel(GenericFakeChatModel):
        prompts: list[list[Any]] = []

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            self.prompts.append(list(messages))
            return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    return ScriptedModel(messages=iter(replies), prompts=[])


def tool_steps(n: int, prefix: str = "c", cmd=command) -> list[Any]:
    from langchain_core.messages import AIMessage

    return [
        AIMessage(
            f"I'll run {cmd(i)} next.", tool_calls=[{"name": "bash", "args": {"command": cmd(i)}, "id": f"{prefix}{i}"}]
        )
        for i in range(n)
    ]


def bash_tool(outputs: dict[str, str] | None = None) -> Any:
    from langchain_core.tools import tool

    table = outputs if outputs is not None else {command(i): output(i) for i in range(40)}

    @tool
    def bash(command: str) -> str:
        """Run a shell command in the repository."""
        return table.get(command, f"# {command}\n" + "x = 1\n" * 30)

    return bash


def run_agent(
    middleware: Any,
    replies: list[Any],
    *,
    thread: str = "t1",
    model: Any = None,
    checkpointer: Any = None,
    tools: list[Any] | None = None,
) -> tuple[dict[str, Any], Any]:
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    model = model or scripted_model(replies)
    agent = create_agent(
        model,
        tools or [bash_tool()],
        middleware=[middleware],
        system_prompt="You are a coding agent.",
        checkpointer=checkpointer or InMemorySaver(),
    )
    state = agent.invoke(
        {"messages": [HumanMessage(TASK, id=f"task-{thread}")]},
        {"configurable": {"thread_id": thread}, "recursion_limit": 200},
    )
    return state, model


def assert_tool_calls_paired(messages: list[Any]) -> None:
    """Every tool message answers a call made before it; every call before the last message is answered."""
    from langchain_core.messages import AIMessage, ToolMessage

    called, answered = [], set()
    for m in messages:
        if isinstance(m, AIMessage):
            called += [c["id"] for c in m.tool_calls]
        if isinstance(m, ToolMessage):
            assert m.tool_call_id in called, f"tool message {m.tool_call_id} without its call"
            answered.add(m.tool_call_id)
    last = messages[-1]
    pending = {c["id"] for c in last.tool_calls} if isinstance(last, AIMessage) else set()
    assert set(called) - answered <= pending


def compaction(compressor: Compressor, tmp_path: Any, **kwargs: Any) -> Any:
    """The middleware under test, with a window small enough that a few tool steps fill it."""
    kwargs.setdefault("summary_fraction", 1.0)  # a summary budget of the whole (small) window: nothing clipped
    kwargs.setdefault("target_fraction", 1.0)  # nor by the loop guard (no target below the window)
    return lc_adapter.OfflineCompactionMiddleware(
        2400, compressor=compressor, keep_last=3, archive_path=tmp_path / "a.sqlite3", **kwargs
    )


def the_summary(messages: list[Any]) -> CompressedContext:
    """The one summary message of a conversation, parsed."""
    summaries = [m for m in messages if lc_adapter.is_summary(m)]
    assert len(summaries) == 1
    return summary_of(summaries[0].content)


@needs_langchain
def test_langchain_middleware_compacts_inside_create_agent(extractive, tmp_path):
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    middleware = compaction(extractive, tmp_path)
    state, model = run_agent(middleware, [*tool_steps(8), AIMessage("The crash is fixed.")])
    hook = middleware.hook("thread:t1")
    assert hook.session == "langchain-t1" and hook.compactions >= 1

    messages = state["messages"]
    assert isinstance(messages[0], HumanMessage) and messages[0].content == TASK and messages[0].id == "task-t1"
    summary = the_summary(messages)
    assert lc_adapter.is_summary(messages[1]) and isinstance(messages[1], HumanMessage)
    assert "src/mod0.py" in targets(summary)  # the first command, long replaced
    assert any(f.approach == FAILING and "No such file" in f.reason_failed for f in summary.failed_attempts)
    assert messages[-1].content == "The crash is fixed."

    for prompt in model.prompts:  # what the agent's model was given at every step
        assert isinstance(prompt[0], SystemMessage) and prompt[1].content == TASK
        assert_tool_calls_paired(prompt)
    # without compaction the k-th prompt holds system + task + 2 messages per earlier step
    assert any(len(p) < 2 + 2 * k for k, p in enumerate(model.prompts))
    assert sum(lc_adapter.is_summary(m) for m in model.prompts[-1]) == 1

    # the archive holds the full history the hook was given, the first tool output included
    first = hook.archive.restore(1, session=hook.session)
    assert len(first) == next(m for m in hook.metrics if m.outcome == "compacted").messages_before
    assert any(m["role"] == "tool" and m["tool_call_id"] == "c0" and m["content"] == output(0) for m in first)
    assert all(isinstance(m, (HumanMessage, AIMessage, ToolMessage)) for m in messages)


@needs_langchain
def test_a_second_compaction_merges_the_first(extractive, tmp_path):
    from langchain_core.messages import AIMessage

    middleware = compaction(extractive, tmp_path)
    state, _ = run_agent(middleware, [*tool_steps(20), AIMessage("done")])
    hook = middleware.hook("thread:t1")
    assert hook.compactions >= 2
    summary = the_summary(state["messages"])
    # src/mod0.py was only in the first compaction's part: the second summary kept it by merging the first
    assert {"src/mod0.py", "src/mod10.py"} <= targets(summary)
    assert any(f.approach == FAILING for f in summary.failed_attempts)


@needs_langchain
def test_a_restarted_middleware_merges_the_summary_it_finds_in_the_state(extractive, tmp_path):
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver()
    first = compaction(extractive, tmp_path)
    run_agent(first, [*tool_steps(8), AIMessage("paused")], checkpointer=saver)
    assert first.hook("thread:t1").compactions >= 1
    # a new process: a new middleware, the conversation restored from the checkpointer
    later = compaction(extractive, tmp_path)
    more = [
        AIMessage("", tool_calls=[{"name": "bash", "args": {"command": f"cat lib/more{i}.py"}, "id": f"m{i}"}])
        for i in range(8)
    ]
    agent = create_agent(
        scripted_model([*more, AIMessage("done")]), [bash_tool()], middleware=[later], checkpointer=saver
    )
    state = agent.invoke({"messages": [HumanMessage("Go on.")]}, {"configurable": {"thread_id": "t1"}})
    assert later.hook("thread:t1").compactions >= 1
    # src/mod0.py was only in the first middleware's summary, which the new one found in the state
    assert {"src/mod0.py", "lib/more0.py"} <= targets(the_summary(state["messages"]))


@needs_langchain
def test_threads_never_share_a_summary(extractive, tmp_path):
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import InMemorySaver

    def alpha(i: int) -> str:
        return f"cat alpha/part{i}.py"

    def beta(i: int) -> str:
        return f"cat beta/part{i}.py"

    middleware = compaction(extractive, tmp_path)
    model = scripted_model(
        [*tool_steps(12, "a", alpha), AIMessage("a done"), *tool_steps(12, "b", beta), AIMessage("b done")]
    )
    saver = InMemorySaver()
    state_a, _ = run_agent(middleware, [], thread="A", model=model, checkpointer=saver)
    state_b, _ = run_agent(middleware, [], thread="B", model=model, checkpointer=saver)
    hook_a, hook_b = middleware.hook("thread:A"), middleware.hook("thread:B")
    assert hook_a is not hook_b and hook_a.compactions and hook_b.compactions
    summary_b = the_summary(state_b["messages"])
    assert "beta/part0.py" in targets(summary_b)
    assert not any("alpha" in t for t in targets(summary_b))
    assert not any(
        m["content"].startswith("cat alpha")
        for m in hook_b.archive.restore(1, session=hook_b.session)
        if isinstance(m.get("content"), str)
    )
    assert state_a["messages"][0].id == "task-A"


@needs_langchain
def test_recall_tool_gives_back_a_replaced_tool_output(extractive, tmp_path):
    from langchain_core.messages import AIMessage, ToolMessage

    middleware = compaction(extractive, tmp_path, recall=True)  # recall is opt-in (issue 21)
    assert [t.name for t in middleware.tools] == ["recall"]
    ask = AIMessage("", tool_calls=[{"name": "recall", "args": {"query": "value_0 compute", "k": 2}, "id": "r1"}])
    state, _ = run_agent(middleware, [*tool_steps(8), ask, AIMessage("done")])
    answer = next(m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "r1")
    assert "value_0 = compute(0)" in answer.content and "[compaction 1" in answer.content
    summary_text = next(m for m in state["messages"] if lc_adapter.is_summary(m)).content
    assert "`recall` tool" in summary_text  # the note tells the agent about the tool it has


@needs_langchain
def test_without_recall_no_tool_and_no_note(extractive, tmp_path):
    from langchain_core.messages import AIMessage

    middleware = compaction(extractive, tmp_path, recall=False, summary_role="system")
    assert middleware.tools == []
    state, _ = run_agent(middleware, [*tool_steps(8), AIMessage("done")])
    summary = next(m for m in state["messages"] if lc_adapter.is_summary(m))
    assert summary.type == "system" and "recall" not in summary.content


@needs_langchain
def test_only_the_middlewares_marked_summary_counts_as_its_summary(extractive, tmp_path):
    from langchain_core.messages import HumanMessage, SystemMessage

    text = SUMMARY_PREFIX + CompressedContext(user_constraints=["Keep the tests."]).to_json()
    assert not lc_adapter.is_summary(HumanMessage(text))  # same text, not written by the middleware
    ours = lc_adapter.summary_to_langchain({"role": "user", "content": text})
    assert isinstance(ours, HumanMessage) and lc_adapter.is_summary(ours)
    [converted] = lc_adapter.to_openai([ours])
    assert converted == {"role": "user", "content": text}
    assert isinstance(lc_adapter.summary_to_langchain({"role": "system", "content": text}), SystemMessage)


@needs_langchain
def test_short_history_is_left_alone_and_never_modified(extractive, tmp_path):
    from langchain_core.messages import HumanMessage

    middleware = lc_adapter.OfflineCompactionMiddleware(
        32_768, compressor=extractive, archive_path=tmp_path / "a.sqlite3"
    )
    messages = [HumanMessage(TASK, id="h")]
    state = {"messages": messages}
    assert middleware.before_model(state, None) is None
    assert state["messages"] is messages and messages == [HumanMessage(TASK, id="h")]
    with pytest.raises(ValueError):
        lc_adapter.OfflineCompactionMiddleware(32_768, session="s")
    with pytest.raises(ValueError):
        lc_adapter.OfflineCompactionMiddleware(0)


@needs_langchain
def test_async_agent_compacts_too(extractive, tmp_path):
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    middleware = compaction(extractive, tmp_path)
    agent = create_agent(
        scripted_model([*tool_steps(8), AIMessage("done")]),
        [bash_tool()],
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    state = asyncio.run(agent.ainvoke({"messages": [HumanMessage(TASK)]}, {"configurable": {"thread_id": "x"}}))
    assert middleware.hook("thread:x").compactions >= 1
    assert sum(lc_adapter.is_summary(m) for m in state["messages"]) == 1


@needs_langchain
def test_langchain_middleware_with_the_real_model(compressor, tmp_path):
    from langchain_core.messages import AIMessage

    middleware = compaction(compressor, tmp_path)
    state, model = run_agent(middleware, [*tool_steps(10), AIMessage("The crash is fixed.")])
    hook = middleware.hook("thread:t1")
    assert compressor.backend is not None and hook.compactions >= 1
    summary = the_summary(state["messages"])
    assert "src/mod0.py" in targets(summary)
    assert "[assistant] I'll run" in summary.recent_narrative
    for prompt in model.prompts:
        assert_tool_calls_paired(prompt)


# ------------------------------------------------------------------------------------------------ OpenHands


def oh_events(n: int, *, start: int = 0, batch_at: int | None = None, thinking_at: int | None = None) -> list[Any]:
    """System prompt, the task, then ``n`` tool steps (an action and its observation), built from the SDK's
    classes. ``batch_at``: that step is one LLM response with two tool calls; ``thinking_at``: that step's
    action carries a thinking block (it opens a tool loop the SDK must keep whole)."""
    from openhands.sdk.event import ActionEvent, MessageEvent, ObservationEvent
    from openhands.sdk.event.llm_convertible import SystemPromptEvent
    from openhands.sdk.llm import Message as OHMessage
    from openhands.sdk.llm import MessageToolCall, TextContent, ThinkingBlock
    from openhands.sdk.tool.schema import Action, Observation

    class TerminalAction(Action):
        command: str

    class TerminalObservation(Observation):
        pass

    def action(i: int, cmd: str, call: str, response: str, thinking: bool = False, thought: bool = True) -> Any:
        tool_call = MessageToolCall(
            id=call, name="terminal", arguments=json.dumps({"command": cmd}), origin="completion"
        )
        said = [TextContent(text=f"I'll run {cmd} next.")] if thought else []  # a batch's later calls have none
        return ActionEvent(
            thought=said,
            action=TerminalAction(command=cmd),
            tool_name="terminal",
            tool_call_id=call,
            tool_call=tool_call,
            llm_response_id=response,
            thinking_blocks=[ThinkingBlock(thinking="think", signature="sig")] if thinking else [],
        )

    def observation(a: Any, i: int) -> Any:
        return ObservationEvent(
            observation=TerminalObservation.from_text(output(i), is_error=i == 2),
            action_id=a.id,
            tool_name="terminal",
            tool_call_id=a.tool_call_id,
        )

    events: list[Any] = []
    if start == 0:
        events = [
            SystemPromptEvent(system_prompt=TextContent(text="You are OpenHands agent."), tools=[]),
            MessageEvent(source="user", llm_message=OHMessage(role="user", content=[TextContent(text=TASK)])),
        ]
    for i in range(start, start + n):
        if i == batch_at:
            a1 = action(i, command(i), f"call_{i}", f"resp_{i}")
            a2 = action(i, f"ls src/batch{i}", f"call_{i}b", f"resp_{i}", thought=False)
            events += [a1, a2, observation(a1, i), observation(a2, i)]
        else:
            a = action(i, command(i), f"call_{i}", f"resp_{i}", thinking=i == thinking_at)
            events += [a, observation(a, i)]
    return events


def condenser(extractive: Compressor, tmp_path: Any, **kwargs: Any) -> Any:
    kwargs.setdefault("max_tokens", 4000)
    kwargs.setdefault("summary_fraction", 1.0)  # a summary budget of the whole (small) window: nothing clipped
    kwargs.setdefault("target_fraction", 1.0)  # nor by the loop guard (no target below the window)
    return oh_adapter.OfflineCondenser(compressor=extractive, archive_path=str(tmp_path / "a.sqlite3"), **kwargs)


def assert_view_is_whole(view: Any) -> None:
    """Every observation has its action in the view, and every action its observation."""
    from openhands.sdk.event import ActionEvent, ObservationEvent

    actions = {e.tool_call_id for e in view.events if isinstance(e, ActionEvent)}
    observations = {e.tool_call_id for e in view.events if isinstance(e, ObservationEvent)}
    assert actions == observations


@needs_openhands
def test_openhands_condenser_returns_a_condensation_the_sdk_applies(extractive, tmp_path, caplog):
    from openhands.sdk.context.view import View
    from openhands.sdk.event import Condensation, CondensationSummaryEvent, MessageEvent
    from openhands.sdk.event.llm_convertible import SystemPromptEvent

    events = oh_events(12)
    view = View.from_events(events)
    c = condenser(extractive, tmp_path)
    assert c.condensation_requirement(view) is not None and c.handles_condensation_requests()
    result = c.condense(view)
    assert isinstance(result, Condensation)
    assert result.summary_offset == 2  # keep_first=2: the system prompt and the task
    assert not {events[0].id, events[1].id} & result.forgotten_event_ids
    summary = summary_of(result.summary)
    assert "src/mod0.py" in targets(summary) and "src/mod11.py" not in targets(summary)  # the last step is kept
    assert any(f.approach == FAILING for f in summary.failed_attempts)

    with caplog.at_level(logging.WARNING):
        condensed = View.from_events([*events, result])
    assert not [r for r in caplog.records if "enforced" in r.getMessage()]  # no property had to be repaired
    kinds = [type(e) for e in condensed.events]
    assert kinds[:3] == [SystemPromptEvent, MessageEvent, CondensationSummaryEvent]
    assert condensed.events[2].summary == result.summary
    kept = condensed.events[3:]
    assert [e.id for e in kept] == [e.id for e in events[len(events) - len(kept) :]]  # the recent events verbatim
    assert len(kept) >= 5
    assert_view_is_whole(condensed)
    assert c.hook.archive.restore(1, session=c.hook.session)[1]["content"] == TASK


@needs_openhands
def test_openhands_keep_first_batches_and_tool_loops_are_respected(extractive, tmp_path):
    from openhands.sdk.context.view import View

    events = oh_events(12, batch_at=9, thinking_at=6)
    view = View.from_events(events)
    result = condenser(extractive, tmp_path, keep_first=5).condense(view)
    ids = [e.id for e in events]
    assert result.summary_offset >= 5 and result.summary_offset in view.manipulation_indices
    assert not set(ids[:5]) & result.forgotten_event_ids
    forgotten = [i for i, e in enumerate(ids) if e in result.forgotten_event_ids]
    assert forgotten == list(range(forgotten[0], forgotten[-1] + 1))  # one contiguous range
    assert forgotten[-1] + 1 in view.manipulation_indices
    # the two-call batch and the thinking tool loop are either wholly forgotten or wholly kept
    batch = [i for i, e in enumerate(events) if getattr(e, "tool_call_id", "").startswith("call_9")]
    assert len({i in forgotten for i in batch}) == 1
    assert_view_is_whole(View.from_events([*events, result]))


@needs_openhands
def test_openhands_second_condensation_merges_the_first(extractive, tmp_path):
    from openhands.sdk.context.view import View

    c = condenser(extractive, tmp_path)
    events = oh_events(12)
    first = c.condense(View.from_events(events))
    events += [first, *oh_events(12, start=12)]
    view = View.from_events(events)
    second = c.condense(view)
    assert f"{first.id}-summary" in second.forgotten_event_ids  # the earlier summary is replaced, not kept
    summary = summary_of(second.summary)
    assert {"src/mod0.py", "src/mod15.py"} <= targets(summary)  # mod0 only survived in the first summary
    assert any(f.approach == FAILING for f in summary.failed_attempts)
    condensed = View.from_events([*events, second])
    assert sum(type(e).__name__ == "CondensationSummaryEvent" for e in condensed.events) == 1
    # a new condenser (a restored conversation) reads the same state from the view alone
    again = condenser(extractive, tmp_path / "other").condense(view)
    assert again.forgotten_event_ids == second.forgotten_event_ids and again.summary == second.summary


@needs_openhands
def test_openhands_soft_and_hard_requirements(extractive, tmp_path):
    from openhands.sdk.context.condenser.base import CondensationRequirement
    from openhands.sdk.context.view import View
    from openhands.sdk.event import CondensationRequest

    c = condenser(extractive, tmp_path, max_tokens=100_000)
    small = View.from_events(oh_events(3))
    assert c.condensation_requirement(small) is None and c.condense(small) is small
    assert (
        c.condensation_requirement(View.from_events([*oh_events(3), CondensationRequest()]))
        == CondensationRequirement.HARD
    )
    events = oh_events(12)
    tokens = get_counter().count(oh_adapter.view_messages(events)[0])
    assert c.assess(View.from_events(events)) == (None, "skip")
    soft = condenser(extractive, tmp_path, max_tokens=int(tokens / 0.9)).assess(View.from_events(events))
    assert soft == (CondensationRequirement.SOFT, "token-threshold")  # above 85% of the window, still fits
    hard = condenser(extractive, tmp_path, max_tokens=tokens).assess(View.from_events(events))
    assert hard == (CondensationRequirement.HARD, "context-window")  # does not fit
    with pytest.raises(ValueError, match="max_tokens"):
        oh_adapter.OfflineCondenser(compressor=extractive).condensation_requirement(small)


@needs_openhands
def test_openhands_condenser_serialises_with_the_agent(extractive):
    from openhands.sdk import LLM, Agent
    from pydantic import SecretStr

    agent = Agent(
        llm=LLM(model="openai/gpt-4o-mini", api_key=SecretStr("unused"), usage_id="agent"),
        tools=[],
        condenser=oh_adapter.OfflineCondenser(keep_first=3, model=None, max_tokens=8000),
    )
    back = Agent.model_validate_json(agent.model_dump_json())
    assert isinstance(back.condenser, oh_adapter.OfflineCondenser)
    assert (back.condenser.keep_first, back.condenser.model, back.condenser.max_tokens) == (3, None, 8000)


@needs_openhands
def test_openhands_async_condense(extractive, tmp_path):
    from openhands.sdk.context.view import View
    from openhands.sdk.event import Condensation

    result = asyncio.run(condenser(extractive, tmp_path).acondense(View.from_events(oh_events(12))))
    assert isinstance(result, Condensation) and result.summary.startswith(SUMMARY_PREFIX)


@needs_openhands
def test_openhands_condenser_with_the_real_model(compressor, tmp_path):
    from openhands.sdk.context.view import View

    events = oh_events(8)
    c = oh_adapter.OfflineCondenser(
        compressor=compressor, max_tokens=3000, archive_path=str(tmp_path / "a.sqlite3"), summary_fraction=1.0
    )
    result = c.condense(View.from_events(events))
    summary = summary_of(result.summary)
    assert compressor.backend is not None and c.hook.metrics[-1].outcome == "compacted"
    assert "src/mod0.py" in targets(summary) and "[assistant] I'll run" in summary.recent_narrative
    assert_view_is_whole(View.from_events([*events, result]))
