"""LangChain v1 agent middleware: compacts the agent's messages with offline_compress before each model call.

    from langchain.agents import create_agent
    from offline_compress.integrations.langchain import OfflineCompactionMiddleware

    agent = create_agent(model, tools, middleware=[OfflineCompactionMiddleware(model_max_tokens=32_768)])

A drop-in for LangChain's ``SummarizationMiddleware``: it works in ``before_model`` and replaces the whole message
list (``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` then the new list); its summary is a ``HumanMessage`` marked as
``SummarizationMiddleware`` marks its own (``additional_kwargs["lc_source"] == "summarization"``, our own marks in
``lc_data``); it registers no tool unless asked (``recall=True``), so a model that takes no tools works; and
``model=`` (the agent's chat model) gives the window from the model's profile (``max_input_tokens``). But the
trigger, the cut and the summary are ``CompactionHook``'s: exact token counts, the head (the task) kept verbatim, an
AI message with tool calls never separated from its tool messages, the summary a grounded ``CompressedContext``
written offline, the replaced messages archived first, and no compaction loops (the hook's target and hold). Kept
messages are passed through as the same objects (ids, metadata and all); one cut to fit the window (the hook's
last resort) is a copy with the same id. The web URL of an image in a summarised message stays in the summary
(``readable``), as ``SummarizationMiddleware`` keeps it for the agent to fetch the image again.

Each conversation gets its own hook, so two threads never share a summary: the conversation is the
checkpointer's ``thread_id``, or, without a checkpointer, the id of the first message (the head keeps it; with
``keep_first=0`` the summary, first, carries the conversation on). ``recall=True`` offers a ``recall`` tool that
searches the conversation's archived messages, and the summary says so. Install with
``pip install "offline_compress[langchain]"``."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, Literal

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState
    from langchain.tools import ToolRuntime
    from langchain_core.messages import (
        AnyMessage,
        BaseMessage,
        HumanMessage,
        RemoveMessage,
        SystemMessage,
        convert_to_openai_messages,
    )
    from langchain_core.tools import BaseTool, StructuredTool
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
    from langgraph.runtime import Runtime
except ImportError as err:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        f"offline_compress.integrations.langchain needs LangChain v1 ({err}); install it with: "
        'pip install "offline_compress[langchain]"'
    ) from None

from ..archive.recall import RECALL_NOTE, RECALL_TOOL_NAME, recall_handler, tool_definition
from ..errors import InputError
from ..history.messages import parse_message
from ..hook.compaction_hook import CompactionHook
from ..hook.config import HookConfig
from ..summary.message import parse_summary_message

# How the summary message we add is marked, in its ``additional_kwargs``: ``lc_source`` as SummarizationMiddleware
# marks its own (langchain-core's notification metadata: integrations do not send it to the model), our own mark in
# ``lc_data`` (a user's own text that happens to start with the summary marker is never taken for a summary), with
# the conversation the summary belongs to. ``SUMMARY_KWARG`` alone marked it before (still read).
LC_SOURCE = "summarization"
SUMMARY_KWARG = "offline_compress"
MAX_CONVERSATIONS = 256  # hooks kept (least recently used dropped: its summary still lives in the messages)


def to_openai(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages as OpenAI chat dicts, by langchain-core's own conversion, one dict per message."""
    converted = convert_to_openai_messages(list(messages))
    if len(converted) != len(messages):  # one dict per message, or the identity mapping back breaks
        raise InputError(f"langchain-core converted {len(messages)} messages into {len(converted)}")
    return converted


IMAGE_TEXT = "[image_url] "  # how an image's URL reads to the summariser (``readable``)


def readable(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` (an OpenAI chat dict) with the web URL of each image part readable as that part's text, so that
    the summary of a message that showed an image still names it (SummarizationMiddleware keeps image URLs in its
    summary prompt for the agent to fetch again). A new dict when something was added; the token count is the same
    (the target's template renders an image part by its type, never its text); ``data:`` URLs are left alone."""
    content = message.get("content")
    if not isinstance(content, list):
        return message
    parts, changed = [], False
    for part in content:
        image = part.get("image_url") if isinstance(part, dict) and part.get("type") == "image_url" else None
        url = image.get("url") if isinstance(image, dict) else image
        if isinstance(url, str) and url.startswith(("http://", "https://")) and "text" not in part:
            part, changed = {**part, "text": IMAGE_TEXT + url}, True
        parts.append(part)
    return {**message, "content": parts} if changed else message


def _unreadable(content: Any) -> Any:
    """``content`` without the text ``readable`` gave its image parts (a recent message the hook cut goes back to
    the agent as LangChain content)."""
    if not isinstance(content, list):
        return content
    return [
        {k: v for k, v in part.items() if k != "text"}
        if isinstance(part, dict)
        and part.get("type") == "image_url"
        and str(part.get("text", "")).startswith(IMAGE_TEXT)
        else part
        for part in content
    ]


def summary_to_langchain(summary: dict[str, Any], conversation: str | None = None) -> BaseMessage:
    """The hook's summary message (role user or system) as a LangChain message, marked as ours (and as
    SummarizationMiddleware marks its summary), carrying the ``conversation`` key it belongs to."""
    cls = HumanMessage if summary["role"] == "user" else SystemMessage
    data = {SUMMARY_KWARG: "summary"} | ({"conversation": conversation} if conversation else {})
    kwargs = {"lc_source": LC_SOURCE, "lc_data": data}
    return cls(content=summary["content"], id=str(uuid.uuid4()), additional_kwargs=kwargs)


def _mark(message: BaseMessage) -> dict[str, Any] | None:
    data = message.additional_kwargs.get("lc_data")
    if message.additional_kwargs.get("lc_source") == LC_SOURCE and isinstance(data, dict):
        return data if data.get(SUMMARY_KWARG) == "summary" else None
    return {} if message.additional_kwargs.get(SUMMARY_KWARG) == "summary" else None  # the earlier mark


def is_summary(message: BaseMessage) -> bool:
    """A summary message this middleware added (and still holding a valid summary)."""
    if _mark(message) is None or not isinstance(message.content, str):
        return False
    return parse_summary_message(parse_message({"role": "system", "content": message.content}, index=0)) is not None


def summary_conversation(message: BaseMessage) -> str | None:
    """The conversation key a summary of ours carries (None: not one of ours, or from before keys were carried)."""
    mark = _mark(message)
    key = mark.get("conversation") if mark else None
    return key if isinstance(key, str) and is_summary(message) else None


def profile_window(model: Any) -> int | None:
    """``max_input_tokens`` of a chat model's profile (langchain-core's ``BaseChatModel.profile``), if it has one."""
    profile = getattr(model, "profile", None)
    tokens = profile.get("max_input_tokens") if isinstance(profile, Mapping) else None
    return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0 else None


_HOOK_ARGS = ("archive_path", "compressor", "counter", "on_compaction")  # the rest: HookConfig's fields


class OfflineCompactionMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Compacts the conversation before a model call when ``CompactionHook``'s trigger fires.

    ``model_max_tokens``: the agent model's context window; ``None`` (default): the ``max_input_tokens`` of
    ``model``'s profile (the agent's chat model, or a name for ``init_chat_model``, as ``SummarizationMiddleware``
    takes it; it is never called). ``summary_role``: the summary is a ``HumanMessage`` (default; as
    ``SummarizationMiddleware`` does, since some providers accept system messages only first) or a
    ``SystemMessage``. ``recall``: offer the ``recall`` tool (default off: a model that takes no tools must work,
    and ``SummarizationMiddleware`` offers none). ``session_prefix``: archive sessions are ``session_prefix +
    thread_id``. Other keyword arguments go to each ``CompactionHook``: ``archive_path``, ``compressor``,
    ``counter`` and ``on_compaction`` as they are, the rest as fields of its ``HookConfig`` (``keep_last``,
    ``keep_first``, ``trigger``, ``summary_fraction``, ``summary_floor_tokens``, ``target_fraction``,
    ``summary_room``, ...)."""

    def __init__(
        self,
        model_max_tokens: int | None = None,
        *,
        model: Any = None,
        summary_role: Literal["human", "system"] = "human",
        recall: bool = False,
        session_prefix: str = "langchain-",
        **hook_options: Any,
    ) -> None:
        super().__init__()
        if model_max_tokens is None:
            if isinstance(model, str):
                from langchain.chat_models import init_chat_model

                model = init_chat_model(model)
            model_max_tokens = profile_window(model)
            if model_max_tokens is None:
                raise ValueError(
                    "OfflineCompactionMiddleware needs model_max_tokens=, or model= whose profile gives "
                    f"max_input_tokens (got model={type(model).__name__}, profile={getattr(model, 'profile', None)!r})"
                )
        if summary_role not in ("human", "system"):
            raise ValueError(f"summary_role must be 'human' or 'system', got {summary_role!r}")
        for forbidden in ("session", "recall_note"):
            if forbidden in hook_options:
                raise ValueError(f"{forbidden}= is set by the middleware (per conversation; recall=)")
        # The summary tells the agent about the recall tool exactly when the middleware offers it.
        hook_options |= {
            "recall_note": RECALL_NOTE if recall else "",
            "summary_role": "user" if summary_role == "human" else "system",
        }
        self._hook_args = {k: hook_options.pop(k) for k in _HOOK_ARGS if k in hook_options}
        self._config = HookConfig.model_validate(hook_options)  # bad options fail here, not at the first model call
        CompactionHook(model_max_tokens, self._config, **self._hook_args)
        self.model_max_tokens = model_max_tokens
        self.summary_role = summary_role
        self.session_prefix = session_prefix
        self.recall_enabled = recall
        self._hooks: OrderedDict[str, CompactionHook] = OrderedDict()
        self._lock = threading.Lock()
        self.tools: list[BaseTool] = [self._recall_tool()] if recall else []

    # ------------------------------------------------------------------------------------------ conversations

    @staticmethod
    def conversation_key(thread_id: str | None, messages: Sequence[BaseMessage]) -> str | None:
        """``thread:<id>`` with a checkpointer; else ``first:<id of the first message>``, or the key a summary of
        ours carries when it is first (``keep_first=0``: the summary replaced the first message)."""
        if thread_id is not None:
            return f"thread:{thread_id}"
        if not messages:
            return None
        return summary_conversation(messages[0]) or (f"first:{messages[0].id}" if messages[0].id else None)

    def hook(self, key: str | None) -> CompactionHook:
        """The hook of one conversation (created on first use; ``None``: a new hook each time)."""
        with self._lock:
            if key is not None and key in self._hooks:
                self._hooks.move_to_end(key)
                return self._hooks[key]
            thread = key.removeprefix("thread:") if key and key.startswith("thread:") else None
            session = f"{self.session_prefix}{thread}" if thread is not None else None  # None: a new uuid
            config = self._config.model_copy(update={"session": session})
            hook = CompactionHook(self.model_max_tokens, config, **self._hook_args)
            if key is not None:
                self._hooks[key] = hook
                while len(self._hooks) > MAX_CONVERSATIONS:
                    self._hooks.popitem(last=False)
            return hook

    # ------------------------------------------------------------------------------------------ the hook point

    def compact(
        self, messages: Sequence[AnyMessage], hook: CompactionHook, key: str | None = None
    ) -> list[BaseMessage] | None:
        """The new message list, or None when the hook keeps the history as it is. ``key``: the conversation the
        summary carries on."""
        converted = [readable(d) for d in to_openai(messages)]
        new = hook.before_step(converted)
        if len(new) == len(converted) and all(a is b for a, b in zip(new, converted)):
            return None
        original = {id(d): m for d, m in zip(converted, messages)}
        out: list[BaseMessage] = []
        summary_added = False  # [*head, summary, *recent]: the first message that is not one of ours is the summary
        for i, d in enumerate(new):
            if id(d) in original:
                out.append(original[id(d)])
            elif not summary_added:
                out.append(summary_to_langchain(d, key))
                summary_added = True
            else:  # a recent message the hook cut to fit the window: the same message (id and all), its text cut
                source = messages[len(messages) - (len(new) - i)]
                out.append(source.model_copy(update={"content": _unreadable(d["content"])}))
        return out

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        messages = state["messages"]
        if not messages:
            return None
        info = getattr(runtime, "execution_info", None)
        key = self.conversation_key(getattr(info, "thread_id", None), messages)
        new = self.compact(messages, self.hook(key), key)
        return None if new is None else {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *new]}

    async def abefore_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        # The compressor blocks (llama.cpp): keep the event loop free.
        return await asyncio.to_thread(self.before_model, state, runtime)

    # ------------------------------------------------------------------------------------------ recall

    def _recall_tool(self) -> BaseTool:
        definition = tool_definition()["function"]

        def recall(query: str, runtime: ToolRuntime, k: int = 5) -> str:
            thread_id = (runtime.config or {}).get("configurable", {}).get("thread_id")
            hook = self.hook(self.conversation_key(thread_id, runtime.state.get("messages", [])))
            return recall_handler(hook.archive, session=hook.session)({"query": query, "k": k})

        return StructuredTool.from_function(recall, name=RECALL_TOOL_NAME, description=definition["description"])
