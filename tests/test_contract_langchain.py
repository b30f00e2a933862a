"""Our contract with LangChain v1 (written by us, not copied from LangChain): ``OfflineCompactionMiddleware`` as a
drop-in for ``SummarizationMiddleware`` inside a real ``create_agent`` loop, with langchain-core's own fake chat
model (``GenericFakeChatModel``, which takes no tools) and a subclass of it that binds tools where a run needs them.

The invariants the framework relies on: a call is never separated from its tool messages; the summary sits where
``SummarizationMiddleware`` puts its own (first after the kept head, marked ``lc_source: "summarization"``); the
state is replaced by ``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` then the new list; no compaction below the
threshold; ``keep_first`` is respected; a run completes. And the cases of issue 21: a model without tools, the
window from the model's profile, ``keep_first=0`` without a checkpointer, and the loop guard's cases."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from offline_compress import Compressor
from offline_compress.hook.shrink import CUT_NOTE

lc = pytest.importorskip("offline_compress.integrations.langchain", reason="LangChain is not installed")

TASK = "Fix the crash in src/app.py. Do not modify the tests."


@pytest.fixture(scope="module")
def extractive() -> Compressor:
    return Compressor(None)


def plain_model(replies: list[Any], **kwargs: Any) -> Any:
    """langchain-core's fake chat model as it is: ``bind_tools`` raises ``NotImplementedError``."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    return GenericFakeChatModel(messages=iter(replies), **kwargs)


def tool_model(replies: list[Any]) -> Any:
    """The fake chat model with tools bound (it ignores them) and every prompt it was given recorded."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    class ToolModel(GenericFakeChatModel):
        prompts: list[list[Any]] = []

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            self.prompts.append(list(messages))
            return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    return ToolModel(messages=iter(replies), prompts=[])


def calls(n: int, *, start: int = 0) -> list[Any]:
    from langchain_core.messages import AIMessage

    return [
        AIMessage(
            f"I'll read src/m{i}.py.", tool_calls=[{"name": "bash", "args": {"command": f"cat m{i}"}, "id": f"c{i}"}]
        )
        for i in range(start, start + n)
    ]


def bash(lines: int = 30, huge: dict[str, int] | None = None) -> Any:
    from langchain_core.tools import tool

    @tool
    def bash(command: str) -> str:
        """Run a shell command."""
        n = (huge or {}).get(command, lines)
        return f"# {command}\n" + "".join(f"value_{k} = compute({k})\n" for k in range(n))

    return bash


def paired(messages: list[Any]) -> None:
    """Every tool message answers a call made before it, and every call (but the last message's) is answered."""
    from langchain_core.messages import AIMessage, ToolMessage

    made, answered = [], set()
    for m in messages:
        if isinstance(m, AIMessage):
            made += [c["id"] for c in m.tool_calls]
        if isinstance(m, ToolMessage):
            assert m.tool_call_id in made
            answered.add(m.tool_call_id)
    last = messages[-1]
    assert set(made) - answered <= ({c["id"] for c in last.tool_calls} if isinstance(last, AIMessage) else set())


def run(middleware: Any, model: Any, tools: list[Any], *, checkpointer: Any = "memory", thread: str = "t") -> Any:
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver() if checkpointer == "memory" else checkpointer
    agent = create_agent(model, tools, middleware=[middleware], checkpointer=saver)
    config = {"configurable": {"thread_id": thread}, "recursion_limit": 300} if saver else {"recursion_limit": 300}
    return agent.invoke({"messages": [HumanMessage(TASK, id="task")]}, config)


def test_a_model_without_tools_runs_with_the_window_from_its_profile(extractive, tmp_path):
    """The drop-in: no tool is registered, so a model that takes none works; its profile gives the window."""
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    model = plain_model([AIMessage(f"Noted, part {i}.") for i in range(30)], profile={"max_input_tokens": 3000})
    middleware = lc.OfflineCompactionMiddleware(model=model, compressor=extractive, archive_path=tmp_path / "a.db")
    assert middleware.model_max_tokens == 3000 and middleware.tools == []
    agent = create_agent(model, [], middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "chat"}}
    for i in range(30):  # a chat: each turn is a human message and the model's reply
        note = f"Part {i}: src/m{i}.py defines value_{i}. " + " ".join(f"line {k} of part {i}." for k in range(20))
        state = agent.invoke({"messages": [HumanMessage(note)]}, config)
    hook = middleware.hook("thread:chat")
    assert hook.compactions >= 1 and state["messages"][-1].content == "Noted, part 29."
    summary = next(m for m in state["messages"] if lc.is_summary(m))
    assert summary.additional_kwargs["lc_source"] == "summarization"  # as SummarizationMiddleware marks its own
    assert "recall" not in summary.content  # no tool, no note about one


def test_the_window_needs_a_number_or_a_profile():
    from langchain_core.messages import AIMessage

    with pytest.raises(ValueError, match="max_input_tokens"):
        lc.OfflineCompactionMiddleware(model=plain_model([AIMessage("x")]))
    with pytest.raises(ValueError, match="max_input_tokens"):
        lc.OfflineCompactionMiddleware()
    assert lc.OfflineCompactionMiddleware(5000).model_max_tokens == 5000  # the number wins, as before


def test_the_summary_is_marked_as_summarization_middleware_marks_its_own():
    from langchain_core.messages import HumanMessage
    from langchain_core.messages.notification import get_notification_metadata

    from offline_compress import CompressedContext
    from offline_compress.summary.message import SUMMARY_PREFIX

    text = SUMMARY_PREFIX + CompressedContext(user_constraints=["Keep the tests."]).to_json()
    ours = lc.summary_to_langchain({"role": "user", "content": text}, "first:task")
    assert get_notification_metadata(ours)["source"] == "summarization"
    assert lc.is_summary(ours) and lc.summary_conversation(ours) == "first:task"
    theirs = HumanMessage(text, additional_kwargs={"lc_source": "summarization"})  # SummarizationMiddleware's
    assert not lc.is_summary(theirs) and not lc.is_summary(HumanMessage(text))
    earlier = HumanMessage(text, additional_kwargs={lc.SUMMARY_KWARG: "summary"})  # our mark before issue 21
    assert lc.is_summary(earlier)


def test_the_state_is_replaced_whole_below_and_above_the_threshold(extractive, tmp_path):
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.graph.message import REMOVE_ALL_MESSAGES

    middleware = lc.OfflineCompactionMiddleware(3000, compressor=extractive, archive_path=tmp_path / "a.db")
    short = [HumanMessage(TASK, id="task")]
    assert middleware.before_model({"messages": short}, None) is None  # no compaction below the threshold
    history: list[Any] = [HumanMessage(TASK, id="task")]
    for i, call in enumerate(calls(16)):  # over the trigger (85% of 3,000)
        history += [call, ToolMessage("# m\n" + "value = 1\n" * 30, tool_call_id=f"c{i}", id=f"r{i}")]
    update = middleware.before_model({"messages": history}, None)
    first, *new = update["messages"]
    assert first.id == REMOVE_ALL_MESSAGES  # SummarizationMiddleware's replace mechanism
    assert new[0] is history[0] and lc.is_summary(new[1])  # the head, then the summary
    assert all(any(m is h for h in history) for m in new[2:])  # the recent messages are the very same objects
    paired(new)
    assert isinstance(new[-1], ToolMessage) and new[-1] is history[-1]
    assert all(isinstance(m, (HumanMessage, AIMessage, ToolMessage)) for m in new)


def test_keep_first_is_respected_and_calls_stay_paired_in_every_prompt(extractive, tmp_path):
    from langchain_core.messages import AIMessage

    model = tool_model([*calls(16), AIMessage("Fixed.")])
    middleware = lc.OfflineCompactionMiddleware(
        3000, compressor=extractive, archive_path=tmp_path / "a.db", keep_first=1, keep_last=3
    )
    state = run(middleware, model, [bash()])
    assert state["messages"][-1].content == "Fixed." and middleware.hook("thread:t").compactions >= 2
    for prompt in model.prompts:
        paired(prompt)
        assert prompt[0].content == TASK  # keep_first=1: the task, verbatim, at every step
    summaries = [i for i, m in enumerate(state["messages"]) if lc.is_summary(m)]
    assert summaries == [1]


def test_keep_first_0_without_a_checkpointer_keeps_one_conversation(extractive, tmp_path):
    """The summary replaces the first message, so it carries the conversation: one hook, one archive session,
    and ``recall`` finds what the first compaction archived."""
    from langchain_core.messages import AIMessage, ToolMessage

    ask = AIMessage("", tool_calls=[{"name": "recall", "args": {"query": "value_3 compute m0", "k": 3}, "id": "r"}])
    model = tool_model([*calls(20), ask, AIMessage("done")])
    middleware = lc.OfflineCompactionMiddleware(
        2500, compressor=extractive, archive_path=tmp_path / "a.db", keep_first=0, keep_last=3, recall=True
    )
    state = run(middleware, model, [bash()], checkpointer=None)
    assert len(middleware._hooks) == 1  # one conversation, whatever the first message became
    (hook,) = middleware._hooks.values()
    assert hook.compactions >= 2 and lc.is_summary(state["messages"][0])
    answer = next(m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "r")
    assert "[compaction 1" in answer.content and "value_3 = compute(3)" in answer.content


def _cut_chars(text: str) -> int:
    """Characters the cut note of a message says were cut."""
    found = re.search(r"\[… ([\d,]+) characters cut here", text)
    return int(found.group(1).replace(",", "")) if found else 0


def test_one_enormous_tool_output_is_cut_to_fit_with_its_id(extractive, tmp_path):
    from langchain_core.messages import AIMessage, ToolMessage

    model = tool_model([*calls(6), AIMessage("done")])
    middleware = lc.OfflineCompactionMiddleware(3000, compressor=extractive, archive_path=tmp_path / "a.db")
    state = run(middleware, model, [bash(huge={"cat m4": 900})])
    hook = middleware.hook("thread:t")
    m = next(m for m in hook.metrics if m.shortened)
    assert m.outcome == "compacted" and "recent message" in m.harder
    cut = [x for x in state["messages"] if isinstance(x, ToolMessage) and CUT_NOTE.split("{")[0] in x.content]
    # the same message (id, call), its text cut; another output as long as the cap is cut to it too (the summary,
    # whole, takes its share of this 3,000-token window), never more than the enormous one
    (huge,) = [x for x in cut if x.tool_call_id == "c4"]
    assert huge.id and all(x.id for x in cut) and max(cut, key=lambda x: _cut_chars(x.content)) is huge
    paired(state["messages"])
    archived = hook.archive.restore(m.compaction, session=hook.session)
    assert any(x.get("tool_call_id") == "c4" and "value_899" in x["content"] for x in archived)  # archived whole
    assert all(hook.counter.count(lc.to_openai(p)) < 3000 for p in model.prompts[-2:])


def test_think_only_steps_and_a_long_task_do_not_compact_at_every_step(extractive, tmp_path):
    from langchain_core.messages import AIMessage, HumanMessage

    task = TASK + " " + " ".join(f"Rule {k}: keep file_{k}.py as it is." for k in range(90))  # a long head
    replies = [AIMessage(f"Thinking, part {i}: " + "maybe parse_config returns None here. " * 12) for i in range(40)]
    model = plain_model(replies, profile={"max_input_tokens": 4000})
    middleware = lc.OfflineCompactionMiddleware(model=model, compressor=extractive, archive_path=tmp_path / "a.db")
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    agent = create_agent(model, [], middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "think"}}
    agent.invoke({"messages": [HumanMessage(task)]}, config)
    for _ in range(39):
        agent.invoke({"messages": [HumanMessage("Go on.")]}, config)
    hook = middleware.hook("thread:think")
    fired = hook.metrics
    assert fired and len(fired) * 2 < 40  # not at every step, not every other one
    assert all(m.tokens_after <= hook.target_tokens or m.over_target for m in fired if m.outcome == "compacted")


def test_an_earlier_summary_without_a_conversation_key_still_counts(extractive, tmp_path: Path):
    from langchain_core.messages import HumanMessage

    from offline_compress import CompressedContext
    from offline_compress.summary.message import SUMMARY_PREFIX

    text = SUMMARY_PREFIX + CompressedContext(user_constraints=["Keep the tests."]).to_json()
    earlier = HumanMessage(text, id="s", additional_kwargs={lc.SUMMARY_KWARG: "summary"})
    assert lc.OfflineCompactionMiddleware.conversation_key(None, [earlier]) == "first:s"
    keyed = lc.summary_to_langchain({"role": "user", "content": text}, "first:task")
    assert lc.OfflineCompactionMiddleware.conversation_key(None, [keyed]) == "first:task"
    assert lc.OfflineCompactionMiddleware.conversation_key("t9", [keyed]) == "thread:t9"
