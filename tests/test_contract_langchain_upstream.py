"""LangChain's own ``SummarizationMiddleware`` tests, ported to ``OfflineCompactionMiddleware`` (the drop-in).

Each case is one of LangChain's, named in a comment by repository, file and test: the cases about what an agent
relies on from a summarisation middleware's inputs and outputs (``before_model`` / ``abefore_model`` on an
``AgentState``, the ``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` replacement, the summary message, which messages
stay verbatim, tool-call pairs, the window from the model's profile, a custom token counter, multimodal content),
not the internals of its LLM summariser (its prompt, trimming and retries). They run against the real middleware,
with the extractive compressor and langchain-core's own fake chat model (``GenericFakeChatModel``) where LangChain
uses a fake model. Where our knobs differ from theirs the translation is said in the case:

- ``trigger=("fraction", f)`` / ``("tokens", n)``: ``TriggerConfig(token_fraction=...)`` of the window (ours
  fires when the history holds *more* than the share, theirs at or above it: the shares below sit just under
  theirs where the boundary matters);
- ``keep=("messages", k)``: ``keep(k)``, that is ``keep_last=k`` with ``keep_first=0`` (SummarizationMiddleware keeps
  no head) and ``summary_room=0`` (it never summarises one of the messages it was told to keep; ours by default
  lets the oldest of them give way to the summary's room under the trigger);
- ``token_counter=f``: ``counter=`` an object that counts as their test counters do (``PerMessage`` below; the
  protocol our adapter shipped with, ``count`` and ``message_counts`` only, is ``FirstProtocol``).

Upstream file: langchain-ai/langchain, libs/langchain_v1/tests/unit_tests/agents/middleware/implementations/
test_summarization.py (``UPSTREAM`` below)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from offline_compress import Compressor
from offline_compress.hook.trigger import TriggerConfig

lc = pytest.importorskip("offline_compress.integrations.langchain", reason="LangChain is not installed")

UPSTREAM = "langchain-ai/langchain libs/langchain_v1/tests/unit_tests/agents/middleware/implementations/"


def _text(message: Any) -> str:
    """A message's text, whether the hook hands the counter a parsed message or a dict."""
    if isinstance(message, Mapping):
        content = message.get("content")
    else:
        content = getattr(message, "text", None)
        if content is None:
            content = getattr(message, "content", "")
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return content if isinstance(content, str) else ""


class FirstProtocol:
    """A custom token counter of the protocol the adapter shipped with (``count`` and ``message_counts`` only), like
    LangChain's test counters: ``tokens`` per message, or, with ``per_char``, one token per character of its text."""

    def __init__(self, tokens: int = 0, *, per_char: bool = False) -> None:
        self.tokens, self.per_char = tokens, per_char

    def message_counts(self, messages: Sequence[Any]) -> list[int]:
        return [len(_text(m)) if self.per_char else self.tokens for m in messages]

    def count(self, messages: Sequence[Any]) -> int:
        return sum(self.message_counts(messages))


class PerMessage(FirstProtocol):
    """``FirstProtocol`` with the text counts of today's ``CountsTokens`` too (what a text adds to a message)."""

    def count_text(self, text: str) -> int:
        return len(text) if self.per_char else 0

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        return [self.count_text(t) for t in texts]


@pytest.fixture(scope="module")
def extractive() -> Compressor:
    return Compressor(None)


def middleware(tmp_path: Path, extractive: Compressor, window: int | None = 1000, **options: Any) -> Any:
    options.setdefault("archive_path", tmp_path / "a.sqlite3")
    return lc.OfflineCompactionMiddleware(window, compressor=extractive, **options)


def keep(k: int) -> dict[str, Any]:
    """SummarizationMiddleware's ``keep=("messages", k)`` in our options (module docstring)."""
    return {"keep_first": 0, "keep_last": k, "summary_room": 0}


def profile_model(max_input_tokens: Any = 1000) -> Any:
    """LangChain's ``ProfileChatModel`` (a chat model whose profile gives ``max_input_tokens``), as langchain-core's
    own fake chat model."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    return GenericFakeChatModel(messages=iter([AIMessage("Summary")]), profile={"max_input_tokens": max_input_tokens})


def runtime() -> Any:
    from langgraph.runtime import Runtime

    return Runtime()


def state(messages: list[Any]) -> Any:
    from langchain.agents import AgentState

    return AgentState(messages=messages)


def replaced(result: Any) -> list[Any]:
    """The new message list of a ``before_model`` update, after the ``RemoveMessage(REMOVE_ALL_MESSAGES)``."""
    from langchain_core.messages import RemoveMessage
    from langgraph.graph.message import REMOVE_ALL_MESSAGES

    assert result is not None and "messages" in result
    first, *new = result["messages"]
    assert isinstance(first, RemoveMessage) and first.id == REMOVE_ALL_MESSAGES
    return new


def humans(n: int) -> list[Any]:
    from langchain_core.messages import HumanMessage

    return [HumanMessage(content=str(i + 1)) for i in range(n)]


# ------------------------------------------------------------------------------------------------ the trigger


def test_no_summarization_below_the_threshold(tmp_path, extractive):
    # UPSTREAM test_summarization.py::test_summarization_middleware_no_summarization_cases
    from langchain_core.messages import AIMessage, HumanMessage

    m = middleware(tmp_path, extractive, counter=PerMessage(250))  # 500 of 1,000 tokens: under the 60% trigger
    assert m.before_model(state([HumanMessage(content="Hello"), AIMessage(content="Hi")]), runtime()) is None


def test_the_window_from_the_profile_triggers_a_summary(tmp_path, extractive):
    # UPSTREAM test_summarization.py::test_summarization_middleware_profile_inference_triggers_summary
    from langchain_core.messages import AIMessage, HumanMessage

    messages = [
        HumanMessage(content="Message 1"),
        AIMessage(content="Message 2"),
        HumanMessage(content="Message 3"),
        AIMessage(content="Message 4"),
    ]
    counter = PerMessage(200)  # 4 messages: 800 of the profile's 1,000 tokens

    def run(fraction: float, keep_last: int) -> Any:
        m = lc.OfflineCompactionMiddleware(
            model=profile_model(),
            compressor=extractive,
            archive_path=tmp_path / f"{fraction}-{keep_last}.sqlite3",
            trigger=TriggerConfig(token_fraction=fraction),
            counter=counter,
            **keep(keep_last),
        )
        assert m.model_max_tokens == 1000
        return m.before_model(state(messages), runtime())

    assert run(0.81, 2) is None  # 800 tokens, the trigger at 810: no summary
    new = replaced(run(0.79, 2))
    assert isinstance(new[0], HumanMessage) and lc.is_summary(new[0])
    assert [x.content for x in new[1:]] == ["Message 3", "Message 4"]
    assert all(x is y for x, y in zip(new[1:], messages[2:]))  # the very same messages, kept verbatim
    # their keep=("fraction", 0.6) keeps three and summarises "Message 1" alone; ours never replaces messages by a
    # summary that holds as many tokens (200 a message here, the summary too): the state is left alone
    assert run(0.79, 3) is None
    assert run(0.79, 4) is None  # every message kept: nothing to summarise, the state is left alone


def test_a_fraction_trigger_without_a_window_is_refused():
    # UPSTREAM test_summarization.py::test_summarization_middleware_missing_profile
    # (and ::test_summarization_middleware_initialization, its fractional-limit check)
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    with pytest.raises(ValueError, match="max_input_tokens"):
        lc.OfflineCompactionMiddleware(
            model=GenericFakeChatModel(messages=iter([AIMessage("x")])), trigger=TriggerConfig(token_fraction=0.5)
        )


@pytest.mark.parametrize("profile", ["invalid_profile_type", {"other_field": 100}, {"max_input_tokens": "not_an_int"}])
def test_a_profile_without_a_usable_window_is_refused(profile):
    # UPSTREAM test_summarization.py::test_summarization_middleware_profile_edge_cases (a profile that is not a
    # dict, one without max_input_tokens, one whose max_input_tokens is not an int: no limits from it)
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    class OddProfile(GenericFakeChatModel):
        def __getattribute__(self, name: str) -> Any:
            return profile if name == "profile" else super().__getattribute__(name)

    assert lc.profile_window(OddProfile(messages=iter([AIMessage("x")]))) is None
    with pytest.raises(ValueError, match="max_input_tokens"):
        lc.OfflineCompactionMiddleware(model=OddProfile(messages=iter([AIMessage("x")])))


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"trigger": {"token_fraction": 0.0}}, "token_fraction"),
        ({"trigger": {"token_fraction": 1.5}}, "token_fraction"),
        ({"keep_last": -1}, "keep_last"),
        ({"keep_first": -1}, "keep_first"),
    ],
)
def test_invalid_limits_are_refused_when_the_middleware_is_made(options, expected):
    # UPSTREAM test_summarization.py::test_summarization_middleware_validation_edge_cases (fractional trigger
    # values outside (0, 1], a negative number of messages to keep: ValueError at construction, not at a model call)
    with pytest.raises(ValueError, match=expected):
        if "trigger" in options:
            options = {"trigger": TriggerConfig(**options["trigger"])}
        lc.OfflineCompactionMiddleware(1000, **options)


def test_a_low_trigger_fraction_is_accepted_and_fires(tmp_path, extractive):
    # UPSTREAM test_summarization.py::test_summarization_middleware_token_retention_preserves_ai_tool_pairs (its
    # trigger=("fraction", 0.1): a trigger far below our default must be accepted with the other defaults) and
    # ::test_summarization_middleware_zero_and_negative_target_tokens (a tiny fraction still summarises)
    from langchain_core.messages import AIMessage, HumanMessage

    for fraction in (0.1, 0.01):
        m = middleware(tmp_path / str(fraction), extractive, trigger=TriggerConfig(token_fraction=fraction))
        assert m.model_max_tokens == 1000
        messages = [HumanMessage("H" * 300, id="h"), *[AIMessage(f"step {i}: " + "A" * 200) for i in range(6)]]
        m = middleware(
            tmp_path / f"{fraction}-run",
            extractive,
            trigger=TriggerConfig(token_fraction=fraction),
            counter=PerMessage(per_char=True),
        )
        new = replaced(m.before_model(state(messages), runtime()))
        assert any(lc.is_summary(x) for x in new)


# ------------------------------------------------------------------------------------------------ what is kept


def test_a_custom_token_counter_of_count_and_message_counts_works(tmp_path, extractive):
    # UPSTREAM test_summarization.py::test_summarization_middleware_full_workflow (a custom token counter decides;
    # ours takes the protocol the adapter shipped with, count and message_counts only, as it takes a full one)
    from langchain_core.messages import HumanMessage

    results = []
    for counter in (FirstProtocol(300), PerMessage(300)):
        messages = humans(5)
        m = middleware(tmp_path / type(counter).__name__, extractive, counter=counter, **keep(2))  # 1,500 > 600
        new = replaced(m.before_model(state(messages), runtime()))
        summary = next(x for x in new if isinstance(x, HumanMessage) and lc.is_summary(x))
        assert summary is new[0] and summary.additional_kwargs["lc_source"] == "summarization"
        assert new[1:] == messages[3:]
        results.append([x.content for x in new[1:]])
    assert results[0] == results[1] == ["4", "5"]


def test_the_async_hook_gives_the_same_replacement(tmp_path, extractive):
    # UPSTREAM test_summarization.py::test_summarization_middleware_full_workflow_async
    m = middleware(tmp_path, extractive, counter=PerMessage(300), **keep(2))
    result = asyncio.run(m.abefore_model(state(humans(5)), runtime()))
    assert [x.type for x in result["messages"]] == ["remove", "human", "human", "human"]
    assert [x.content for x in result["messages"][2:]] == ["4", "5"]
    assert lc.is_summary(result["messages"][1])


def test_the_last_messages_are_kept_as_they_arrive(tmp_path, extractive):
    # UPSTREAM test_summarization.py::test_summarization_middleware_keep_messages (five messages summarised to the
    # last two, six to the last two as well; ours fires on tokens: 200 per message against a 1,000-token window)
    m = middleware(tmp_path, extractive, counter=PerMessage(200), **keep(2))
    assert m.before_model(state(humans(3)), runtime()) is None  # 600 tokens: not over the 60% trigger
    for n, kept in ((5, ["4", "5"]), (6, ["5", "6"])):
        new = replaced(m.before_model(state(humans(n)), runtime()))
        assert [x.type for x in new] == ["human", "human", "human"]
        assert lc.is_summary(new[0]) and [x.content for x in new[1:]] == kept


def earlier_work() -> list[Any]:
    """A tool call and its long output before LangChain's own messages: something a summary can shrink (ours never
    replaces messages by a summary as long as they are, and keeps a person's words verbatim, so a region of only a
    short HumanMessage, as in their cases, is left alone)."""
    from langchain_core.messages import AIMessage, ToolMessage

    output = "".join(f"src/mod{k}.py:{k}: value_{k} = compute({k})\n" for k in range(120))
    return [
        AIMessage(content="", tool_calls=[{"name": "bash", "args": {"command": "grep -rn compute src"}, "id": "c0"}]),
        ToolMessage(content=output, tool_call_id="c0"),
    ]


def test_an_ai_message_is_kept_with_its_tool_messages(tmp_path, extractive):
    # UPSTREAM test_summarization.py::test_summarization_middleware_token_retention_preserves_ai_tool_pairs
    # (a cut that would land on the ToolMessage moves back to the AIMessage that called it; their 10% trigger)
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    messages = [
        *earlier_work(),
        HumanMessage(content="H" * 300),
        AIMessage(content="A" * 200, tool_calls=[{"name": "test", "args": {}, "id": "call-1"}]),
        ToolMessage(content="T" * 50, tool_call_id="call-1"),
        HumanMessage(content="H" * 180),
        HumanMessage(content="H" * 160),
    ]
    m = middleware(tmp_path, extractive, trigger=TriggerConfig(token_fraction=0.1), **keep(3))  # 3: at the result
    new = replaced(m.before_model(state(messages), runtime()))
    assert lc.is_summary(new[0]) and new[1:] == messages[3:]
    assert isinstance(new[1], AIMessage) and new[1].tool_calls
    assert isinstance(new[2], ToolMessage) and new[2].tool_call_id == new[1].tool_calls[0]["id"]


def test_many_parallel_tool_calls_stay_with_their_ai_message(tmp_path, extractive):
    # UPSTREAM test_summarization.py::test_summarization_middleware_many_parallel_tool_calls_safety and
    # ::test_summarization_middleware_find_safe_cutoff_preserves_ai_tool_pair (every cut inside the ToolMessages of
    # one AIMessage moves back to that AIMessage)
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    calls = [{"name": f"tool_{i}", "args": {}, "id": f"call_{i}"} for i in range(10)]
    messages = [
        *earlier_work(),
        HumanMessage(content="calling 10 tools"),
        AIMessage(content="calling 10 tools", tool_calls=calls),
        *[ToolMessage(content=f"result_{i}", tool_call_id=f"call_{i}") for i in range(10)],
    ]
    for keep_last in range(1, 11):
        m = middleware(
            tmp_path / str(keep_last), extractive, trigger=TriggerConfig(token_fraction=0.1), **keep(keep_last)
        )
        new = replaced(m.before_model(state(messages), runtime()))
        assert lc.is_summary(new[0]) and new[1:] == messages[3:], keep_last  # the AIMessage and all ten results


def test_a_tool_call_sequence_is_never_split(tmp_path, extractive):
    # UPSTREAM test_summarization.py::test_summarization_cutoff_moves_backward_to_include_ai_message and
    # ::test_summarization_middleware_cutoff_at_start_of_tool_sequence
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    # the older turns are long here (upstream: 30 words each): a person's turn of up to 2,000 characters stays whole
    # in our summary, so a summary of two short turns could not be smaller than they are
    messages = [
        HumanMessage(content="initial question " * 150),
        HumanMessage(content="msg2 " * 500),
        AIMessage(content="I'll use a tool", tool_calls=[{"name": "search", "args": {"q": "test"}, "id": "call_abc"}]),
        ToolMessage(content="search result " * 10, tool_call_id="call_abc"),
        HumanMessage(content="followup " * 10),
        HumanMessage(content="msg4 " * 10),
    ]
    for keep_last, start in ((4, 2), (3, 2)):  # 4: the cut is at the AIMessage; 3: at its ToolMessage, moved back
        m = middleware(
            tmp_path / str(keep_last),
            extractive,
            counter=PerMessage(per_char=True),
            trigger=TriggerConfig(token_fraction=0.1),
            **keep(keep_last),
        )
        new = replaced(m.before_model(state(messages), runtime()))
        assert lc.is_summary(new[0]) and new[1:] == messages[start:]


def test_no_summary_when_no_older_message_can_go(tmp_path, extractive):
    # UPSTREAM test_summarization.py::test_summarization_middleware_skips_when_no_safe_cutoff
    from langchain_core.messages import HumanMessage

    m = middleware(tmp_path, extractive, counter=PerMessage(1500), **keep(1))
    assert m.before_model(state([HumanMessage(content="Current request")]), runtime()) is None


def test_no_summary_when_no_older_message_can_go_async(tmp_path, extractive):
    # UPSTREAM test_summarization.py::test_summarization_middleware_skips_when_no_safe_cutoff_async
    from langchain_core.messages import HumanMessage

    m = middleware(tmp_path, extractive, counter=PerMessage(1500), **keep(1))
    assert asyncio.run(m.abefore_model(state([HumanMessage(content="Current request")]), runtime())) is None


def test_a_summary_is_never_more_than_the_messages_are_told(tmp_path, extractive):
    # UPSTREAM test_summarization.py::test_summarization_middleware_cutoff_at_boundary (keeping as many messages as
    # there are, or more, summarises nothing)
    m = middleware(tmp_path, extractive, counter=PerMessage(300), **keep(5))
    assert m.before_model(state(humans(5)), runtime()) is None
    m = middleware(tmp_path / "b", extractive, counter=PerMessage(300), **keep(10))
    assert m.before_model(state(humans(5)), runtime()) is None


# ------------------------------------------------------------------------------------------------ the summary


def test_the_summary_message_is_a_human_message_marked_as_summarization(tmp_path, extractive):
    # UPSTREAM test_summarization.py::test_summarization_middleware_helper_methods (_build_new_messages: one
    # HumanMessage, lc_source "summarization") and ::test_create_summary_passes_lc_source_metadata
    from langchain_core.messages import HumanMessage
    from langchain_core.messages.notification import get_notification_metadata

    m = middleware(tmp_path, extractive, counter=PerMessage(300), **keep(2))
    new = replaced(m.before_model(state(humans(5)), runtime()))
    summaries = [x for x in new if lc.is_summary(x)]
    assert len(summaries) == 1 and isinstance(summaries[0], HumanMessage)
    assert summaries[0].additional_kwargs.get("lc_source") == "summarization"
    assert get_notification_metadata(summaries[0])["source"] == "summarization"
    assert summaries[0].id  # a message id, so that a later RemoveMessage can name it


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_multimodal_content_is_summarised_with_its_image_url(tmp_path, extractive, use_async):
    # UPSTREAM test_summarization.py::test_create_summary_preserves_image_urls and
    # test_summarization_middleware.py::test_format_clean_history_multimodal (list content: its text and an image
    # URL survive into the summary)
    from langchain_core.messages import AIMessage, HumanMessage

    image_url = "https://example.com/shared-image.png"
    messages = [
        HumanMessage(
            content=[
                {"type": "text", "text": "What is in this image?"},
                {"type": "image_url", "image_url": {"url": image_url}},
            ]
        ),
        AIMessage(content="The image shows a cat."),
        *[AIMessage(content=f"Looking again, part {i}.") for i in range(3)],
    ]
    m = middleware(tmp_path, extractive, counter=PerMessage(300), **keep(1))
    result = (
        asyncio.run(m.abefore_model(state(messages), runtime())) if use_async else m.before_model(state(messages), None)
    )
    summary = replaced(result)[0]
    assert lc.is_summary(summary)
    assert "What is in this image?" in summary.content and image_url in summary.content
