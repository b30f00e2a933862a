"""Render a history as the target model sees it, one text segment per message (for incremental counting).

A template gives ``segments(messages) -> list[str]``: one segment per message, whose concatenation is the full
rendering, plus ``bos_tokens``, the tokens the model gets before the text (the BOS, counted as a token rather
than rendered as text). Token counts can then be summed per segment because every Gemma turn starts and ends
with a special token (``<start_of_turn>`` ... ``<end_of_turn>`` ``\\n``), so no token spans two segments.

Gemma 3 (default, ``Gemma3Template``): Google's official Gemma 3 chat template (``tests/gemma3_reference.py`` holds it):
``<start_of_turn>{user|model}\\n{content|trim}<end_of_turn>\\n`` per message, ``assistant`` -> ``model``, the
leading system message folded into the first user turn as ``system + "\\n\\n" + user content``, no generation
prompt. Content parts render as the official template does: text parts trimmed and concatenated, ``image``
parts as ``<start_of_image>``, other parts as nothing. Where the official template cannot express a history
(it raises on anything but alternating user/assistant after one optional system message) we render:

- system and developer messages anywhere: folded into the next turn rendered as ``user`` (text + ``"\\n\\n"``,
  untrimmed, as the official first-user prefix); their own segment is empty and their text is in that turn's
  segment. When no user turn follows before an assistant turn (or the end), the message is its own ``user``
  turn, ``<start_of_turn>user\\n{text|trim}<end_of_turn>\\n``;
- tool results: a ``user`` turn whose first line is a header naming the tool and call,
  ``[tool result name=NAME id=CALL_ID]`` (missing parts left out), then the trimmed content;
- assistant tool calls: inside the ``model`` turn, after the trimmed content (separated by ``\\n``), one JSON
  line per call, ``{"id": ..., "name": ..., "arguments": ...}`` (arguments parsed from JSON when they are
  JSON, else the raw string; ``id`` left out when absent);
- consecutive messages of one role: each is its own turn (no merging).

Hugging Face model folder (``HFChatTemplate``): the folder's own chat template, applied with
``transformers.AutoTokenizer.apply_chat_template(..., tokenize=False)`` (offline; transformers is imported
only here). Segment ``i`` is the text that rendering ``messages[:i+1]`` adds to rendering ``messages[:i]``
(cut at the longest common prefix with the full rendering, so the segments always concatenate to it); text
the template puts before the first message (such as a BOS written as text) belongs to segment 0 and
``bos_tokens`` is 0. Summing per-segment token counts is exact only where the template separates messages with
special tokens; it costs one rendering per prefix.
"""

from __future__ import annotations

import json
import os
from collections.abc import Hashable, Mapping, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any, NamedTuple, Protocol, runtime_checkable

from ..errors import TokenizerError
from ..history.messages import ROLES, Message, ToolCall, parse_message, parse_messages

MessageLike = Message | Mapping[str, Any]


@runtime_checkable
class ChatTemplate(Protocol):
    name: str
    bos_tokens: int

    def segments(self, messages: Sequence[MessageLike]) -> list[str]: ...


def render(template: ChatTemplate, messages: Sequence[MessageLike]) -> str:
    """The full rendering as text (without what ``bos_tokens`` counts)."""
    return "".join(template.segments(messages))


# --- Gemma 3 -----------------------------------------------------------------------------------------------

_START, _END = "<start_of_turn>", "<end_of_turn>\n"
_PLAIN_ROLES = frozenset(ROLES)


class PlainMessage(NamedTuple):
    """A dict message of the common shape (string content, no tool calls): validated by ``_light`` without
    pydantic, which would cost more than counting an unchanged 128k-token history."""

    role: str
    content: str
    tool_calls: None = None
    tool_call_id: str | None = None
    name: str | None = None


_Light = Message | PlainMessage
_new_tuple = tuple.__new__  # builds NamedTuples without their Python-level __new__ (hot path: every message)


def _light(raw: Any, index: int) -> _Light:
    if type(raw) is dict:  # exact type check first: isinstance against Mapping/Message is slow (ABC checks)
        get = raw.get
        if get("tool_calls") is None:
            role, content, call_id, name = get("role"), get("content"), get("tool_call_id"), get("name")
            if (
                role in _PLAIN_ROLES
                and type(content) is str
                and (call_id is None or type(call_id) is str)
                and (name is None or type(name) is str)
            ):
                return _new_tuple(PlainMessage, (role, content, None, call_id, name))
    elif isinstance(raw, Message):
        return raw
    return parse_message(raw, index=index)


def _gemma_content(content: str | list[dict[str, Any]] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content.strip()
    out = []
    for item in content:
        if item.get("type") == "image":
            out.append("<start_of_image>")
        elif item.get("type") == "text":
            out.append(str(item.get("text", "")).strip())
    return "".join(out)


def _system_prefix(message: _Light) -> str:
    # Official: the system content untrimmed (first part's text for part lists), then a blank line.
    content = message.content
    if isinstance(content, list):
        text = str(content[0].get("text", "")) if content else ""
    else:
        text = content or ""
    return text + "\n\n"


def _tool_call_line(call: ToolCall) -> str:
    record: dict[str, Any] = {"id": call.id} if call.id else {}
    name, raw = call.function.name, call.function.arguments
    try:
        return json.dumps({**record, "name": name, "arguments": json.loads(raw) if raw else {}}, ensure_ascii=False)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than Python parses: the text as it is
        return json.dumps({**record, "name": name, "arguments": raw}, ensure_ascii=False)


def _tool_header(message: _Light) -> str:
    parts = ["[tool result"]
    if message.name:
        parts.append(f"name={message.name}")
    if message.tool_call_id:
        parts.append(f"id={message.tool_call_id}")
    return " ".join(parts) + "]"


class Turn(NamedTuple):
    """What one message renders as: ``kind`` is "" (folded into a later turn), "user" or "model"; ``prefix``
    the system/developer messages folded into it."""

    kind: str
    message: _Light
    prefix: tuple[_Light, ...] = ()


def render_turn(turn: Turn) -> str:
    kind, message, prefix = turn
    if not kind:
        return ""
    head = _START + kind + "\n" + "".join(_system_prefix(p) for p in prefix)
    if kind == "model":
        lines = [_gemma_content(message.content)] if message.content else []
        lines += [_tool_call_line(c) for c in message.tool_calls or ()]
        return head + "\n".join(line for line in lines if line) + _END
    body = _gemma_content(message.content)
    if message.role == "tool":
        body = _tool_header(message) + ("\n" + body if body else "")
    return head + body + _END


def _key_part(message: _Light) -> tuple[Any, ...] | None:
    content = message.content
    if content is not None and not isinstance(content, str):
        return None  # content parts are unhashable lists: such a turn is keyed by its rendered text instead
    return (message.role, content, message.tool_calls, message.tool_call_id, message.name)


def turn_key(turn: Turn) -> Hashable | None:
    """A hashable value that determines the turn's text (its strings themselves, whose hash Python caches),
    or None when some part is unhashable. Equal keys render equal text."""
    if type(turn.message) is PlainMessage and all(type(p) is PlainMessage for p in turn.prefix):
        return turn  # a tuple of strings: hashing and comparing it is cheap
    parts = [_key_part(turn.message)] + [_key_part(p) for p in turn.prefix]
    if any(p is None for p in parts):
        return None
    return (turn.kind, *parts)


class Gemma3Template:
    """Google's Gemma 3 chat template, per message, with the extensions documented in the module docstring."""

    name = "gemma3"
    bos_tokens = 1

    def turns(self, messages: Sequence[MessageLike]) -> list[Turn]:
        out: list[Turn] = []
        pending: list[_Light] = []  # system/developer messages waiting for the next user turn
        for i, raw in enumerate(messages):
            m = _light(raw, i)
            role = m.role
            if role == "user" or role == "tool":
                out.append(_new_tuple(Turn, ("user", m, tuple(pending) if pending else ())))
                pending.clear()
            elif role == "assistant":
                if pending:  # no user turn follows: each waiting system message is a user turn of its own
                    out[-len(pending) :] = [Turn("user", p) for p in pending]
                    pending.clear()
                out.append(_new_tuple(Turn, ("model", m, ())))
            else:
                pending.append(m)
                out.append(_new_tuple(Turn, ("", m, ())))
        if pending:
            out[-len(pending) :] = [Turn("user", p) for p in pending]
        return out

    def segments(self, messages: Sequence[MessageLike]) -> list[str]:
        return [render_turn(t) for t in self.turns(messages)]


# --- Hugging Face model folder ------------------------------------------------------------------------------


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # binary search on equal prefixes: O(n log n) char compares in C, not a Python loop
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class HFChatTemplate:
    """The chat template of a local Hugging Face model folder, applied with transformers (offline)."""

    bos_tokens = 0

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.name = f"hf:{self.folder}"
        # Never reach the Hub from this library, whatever the caller's environment says.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from transformers import AutoTokenizer
        except ImportError as err:
            raise TokenizerError(f"rendering the chat template of {self.folder} needs transformers ({err})") from None
        try:
            self._tokenizer = AutoTokenizer.from_pretrained(str(self.folder), local_files_only=True)
        except (OSError, ValueError) as err:
            raise TokenizerError(f"{self.folder}: cannot load a tokenizer from this folder ({err})") from None
        if not getattr(self._tokenizer, "chat_template", None):
            raise TokenizerError(f"{self.folder}: the tokenizer has no chat template")

    def render(self, messages: Sequence[MessageLike]) -> str:
        msgs = [m.to_openai() for m in parse_messages(list(messages), allow_empty=True)]
        try:
            return str(self._tokenizer.apply_chat_template(msgs, tokenize=False))
        except Exception as err:  # jinja2 TemplateError from raise_exception, or a template bug
            raise TokenizerError(f"chat template of {self.folder} failed: {err}") from None

    def segments(self, messages: Sequence[MessageLike]) -> list[str]:
        msgs = parse_messages(list(messages), allow_empty=True)  # Messages pass through untouched
        if not msgs:
            return []
        renders = [self.render(msgs[: i + 1]) for i in range(len(msgs))]
        full = renders[-1]
        # segment i ends where every longer rendering still agrees with the full one
        bounds = list(accumulate((_common_prefix(r, full) for r in reversed(renders)), min))[::-1]
        starts = [0] + bounds[:-1]
        return [full[s:e] for s, e in zip(starts, bounds)]


# --- choosing a template ------------------------------------------------------------------------------------


def resolve_template(spec: ChatTemplate | str | Path | None = None) -> ChatTemplate:
    """None or ``"gemma3"``: Gemma 3; a Hugging Face model folder: its chat template; a template: itself."""
    if spec is None or (isinstance(spec, str) and spec.lower() in ("gemma3", "gemma-3")):
        return Gemma3Template()
    if isinstance(spec, (str, Path)):
        if Path(spec).is_dir():
            return HFChatTemplate(spec)
        raise TokenizerError(f"unknown chat template {str(spec)!r} (expected 'gemma3' or a Hugging Face model folder)")
    if isinstance(spec, ChatTemplate):
        return spec
    raise TokenizerError(f"not a chat template: {type(spec).__name__}")
