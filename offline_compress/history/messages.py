"""The canonical message: OpenAI chat format (role, content as text or parts, tool_calls, tool_call_id, name).

Every importer produces these and every other module consumes them. The Python API takes dicts (the SDK's
typed-dict params are dicts) or message objects of the OpenAI SDK and similar pydantic models
(``ChatCompletionMessage``, litellm's ``Message``): those are read through ``model_dump(exclude_none=True)``.
Unknown keys are ignored on the way in; the caller's own dicts and objects are never modified (we validate
copies).

What comes in is made safe to encode here, once, so that nothing downstream (the summary's schema, JSON output,
the tokenizer, the archive) fails on one bad byte from a tool: a lone surrogate in any text (content, content
parts, names, ids, tool-call arguments, and the ``\\ud800`` escapes inside JSON arguments) becomes U+FFFD; an
arguments *object* (some agents keep a dict) is written as JSON with its non-string keys stringified
(``plain_json``). Nothing that is only odd is refused: a wrong *type* (a role that is not a role, content that is
a number) is an ``InputError`` naming the message and the field.

OpenAI Responses-API items are read too, one item to one message. Agents on the Responses API (Codex CLI;
mini-swe-agent's ``*_response`` models) keep a history of *items*, not chat messages; the hook maps ``parsed[i]``
back to the caller's ``originals[i]``, so an item is never dropped or merged here (an importer reading a file may
group them):

* ``message`` -> a message of its role; ``input_text`` / ``output_text`` parts become ``text`` parts, a
  ``refusal`` its text, ``input_image`` an ``image_url`` part; other parts are kept as they are;
* ``function_call`` -> an assistant message with one tool call (id = ``call_id``, the arguments string as the
  model wrote it); ``custom_tool_call`` likewise, of type ``custom``, the raw ``input`` as its arguments;
  ``local_shell_call`` too, its ``action`` object as JSON;
* ``function_call_output`` / ``custom_tool_call_output`` / ``local_shell_call_output`` -> a tool message
  answering ``call_id``; the output text as it is (Codex's ``{"output": ..., "metadata": ...}`` JSON string is
  what the model read, so it stays that string); an output given as content parts becomes those parts;
* ``reasoning`` -> an assistant message whose content is the summary text, ``""`` when the summary is empty
  (encrypted-only reasoning): an empty string, not ``None``, so the rule "content is None and no tool_calls" is
  not broken and the item keeps its message;
* ``web_search_call`` (a hosted tool: no output item follows) -> an assistant message naming the search as a
  person reads it (``web search: QUERY``).

Any other item ``type`` (``item_reference``, ``compaction``, hosted tools such as ``computer_call``, ...) is an
``InputError`` naming the index and the type: its content cannot be read offline.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError, field_validator

from ..errors import InputError

Role = Literal["system", "developer", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("system", "developer", "user", "assistant", "tool")


def valid_utf8(text: str) -> str:
    """``text`` with each lone surrogate (JSON allows ``"\\ud800"``, UTF-8 does not) replaced by U+FFFD, as a
    UTF-8 client would send it; surrogate pairs are joined. Everything downstream (the tokenizer, the summary,
    files) needs text that encodes."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


# A JSON escape of a lone surrogate (a high one not followed by a low one, or a low one alone), preceded by an even
# number of backslashes so that it is an escape and not an escaped backslash followed by "u".
_SURROGATE_ESCAPE = re.compile(
    r"(?<!\\)((?:\\\\)*)\\u(?:([dD][89abAB][0-9a-fA-F]{2})(\\u[dD][c-fC-F][0-9a-fA-F]{2})?|[dD][c-fC-F][0-9a-fA-F]{2})"
)


def _escape_fixed(match: re.Match[str]) -> str:
    if match.group(2) and match.group(3):  # a high and a low surrogate: a pair, one valid character
        return match.group(0)
    return match.group(1) + "\\ufffd"


def valid_json_text(text: str) -> str:
    """``valid_utf8(text)``, and each ``\\uD800``-style escape of a lone surrogate replaced by ``\\ufffd``: tool-call
    arguments are JSON that the summary, the redactor and the token counter parse, and what they parse must
    encode as UTF-8 too."""
    text = valid_utf8(text)
    if "\\u" not in text:
        return text
    return _SURROGATE_ESCAPE.sub(_escape_fixed, text)


PART_DEPTH = 100  # a content part nested deeper is refused: pydantic's serialiser stops near 255 levels
_MAX_INT_BITS = 14_000  # about 4,200 digits: below Python's limit on int <-> str conversion (4,300)


def plain_json(value: Any, depth: int | None = None) -> Any:
    """``value`` as data that ``json.dumps`` writes and UTF-8 encodes, deterministically: keys that are not
    strings (tuples, ints, None) stringified, strings with lone surrogates repaired, tuples and sets as lists
    (sets sorted), an integer too long to write in decimal in hex, anything else as its ``str``. A new object.

    Stringified, not refused: an agent's arguments are read only to be summarised, and one odd key must not stop
    the agent's step. Keys are written as ``json.dumps`` writes them (``1`` -> ``"1"``, ``None`` -> ``"null"``);
    two keys that read the same keep the later value. ``depth``: a ValueError if ``value`` nests deeper."""
    if depth is not None and depth < 0:
        raise ValueError("nested too deeply")
    deeper = None if depth is None else depth - 1
    if isinstance(value, str):
        return valid_utf8(value)
    if isinstance(value, (bool, float)) or value is None:
        return value  # NaN and infinities: json.dumps writes NaN / Infinity, which json.loads reads back
    if isinstance(value, int):
        return value if value.bit_length() <= _MAX_INT_BITS else hex(value)
    if isinstance(value, Mapping):
        return {_plain_key(k): plain_json(v, deeper) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_json(v, deeper) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((plain_json(v, deeper) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, (bytes, bytearray)):
        return valid_utf8(str(bytes(value)))
    return valid_utf8(str(value))


def _plain_key(key: Any) -> str:
    if isinstance(key, str):
        return valid_utf8(key)
    if isinstance(key, (bool, int, float)) or key is None:
        plain = plain_json(key)
        return plain if isinstance(plain, str) else json.dumps(plain)
    return valid_utf8(str(key))


# A string that encodes as UTF-8: a lone surrogate (from a JSON \ud800 escape) is replaced.
Text = Annotated[str, AfterValidator(valid_utf8)]


class FunctionCall(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    name: Text
    arguments: str = ""

    @field_validator("arguments", mode="before")
    @classmethod
    def _arguments_as_text(cls, value: Any) -> str:
        # Some agents store arguments as a dict instead of the JSON string OpenAI sends.
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        return json.dumps(plain_json(value), ensure_ascii=False, sort_keys=True)

    @field_validator("arguments", mode="after")
    @classmethod
    def _encodable_json(cls, value: str) -> str:
        return valid_json_text(value)


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    id: Text | None = None
    type: Text = "function"
    function: FunctionCall


class Message(BaseModel):
    """One chat message. ``text`` gives the content as plain text whatever its shape."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    role: Role
    content: str | list[dict[str, Any]] | None = None
    tool_calls: tuple[ToolCall, ...] | None = None
    tool_call_id: Text | None = None
    name: Text | None = None

    @field_validator("role", mode="before")
    @classmethod
    def _encodable_role(cls, value: Any) -> Any:
        # So that a role with a lone surrogate is an unknown role, not an undecodable string.
        return valid_utf8(value) if isinstance(value, str) else value

    @field_validator("content", mode="before")
    @classmethod
    def _encodable_content(cls, value: Any) -> Any:
        if isinstance(value, str):
            return valid_utf8(value)
        if isinstance(value, (list, tuple)):  # parts as plain JSON: keys stringified, text repaired (plain_json)
            try:
                return [plain_json(part, PART_DEPTH) if isinstance(part, Mapping) else part for part in value]
            except ValueError:  # pydantic cannot serialise what nests much deeper (its limit is near 255)
                raise ValueError(f"a content part nested more than {PART_DEPTH} levels deep") from None
        return value

    @property
    def text(self) -> str:
        """Content as text: string content as is, text parts joined by newlines, other parts named."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(
            str(p.get("text", "")) if p.get("type") == "text" or "text" in p else f"[{p.get('type', 'part')}]"
            for p in self.content
        )

    @property
    def text_and_arguments(self) -> str:
        """``text`` and, a line each, the arguments of its tool calls: all a reader of the message sees."""
        return self.text + "".join("\n" + c.function.arguments for c in (self.tool_calls or ()))

    def with_text(self, change: Callable[[str], str]) -> Message:
        """This message with ``change`` applied to its content's text (a string, or each text part); the same
        object when nothing changed (a copy otherwise: a message is never modified in place)."""
        content = self.content
        if isinstance(content, str):
            new: Any = change(content)
        elif isinstance(content, list):
            new = [{**p, "text": change(p["text"])} if isinstance(p.get("text"), str) else p for p in content]
        else:
            return self
        return self if new == content else self.model_copy(update={"content": new})

    def to_openai(self) -> dict[str, Any]:
        """Plain dict in OpenAI chat format, without empty optional keys."""
        return self.model_dump(mode="json", exclude_none=True)


# --------------------------------------------------------------------------------- Responses-API items

CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})
ITEM_TYPES = frozenset({"message", "reasoning", "web_search_call", *CALLS, *OUTPUTS})
_TEXT_PARTS = frozenset({"input_text", "output_text", "text", "summary_text", "reasoning_text"})


def answered_tool(messages: Sequence[Message], i: int) -> str | None:
    """The name of the tool whose call ``tool`` message ``i`` answers: its own ``name`` when it has one, else the
    call with its ``tool_call_id`` in the turn before it (the assistant messages with calls and the results between
    them: some harnesses write each call of a turn as a message of its own), else (a result without an id answers
    in order) the only call of the assistant message before the results. None for any other message, or when no
    call is found. The look back stops at the turn's start (at most ``_TURN_SCAN`` messages): asked for every
    result of a history whose ids match no call, it stays linear."""
    m = messages[i]
    if m.role != "tool":
        return None
    if m.name:
        return m.name
    if m.tool_call_id:
        for k in range(i - 1, max(-1, i - 1 - _TURN_SCAN), -1):
            if messages[k].role == "tool":
                continue  # results of the same turn's other calls
            if messages[k].role != "assistant" or not messages[k].tool_calls:
                return None
            for call in messages[k].tool_calls or ():
                if call.id == m.tool_call_id:
                    return call.function.name
        return None
    k = i - 1
    while k >= 0 and messages[k].role == "tool":
        k -= 1
    calls = messages[k].tool_calls if k >= 0 else None
    return calls[0].function.name if calls and len(calls) == 1 else None


_TURN_SCAN = 256  # messages looked back for the call a result answers


def is_item(raw: Mapping[str, Any]) -> bool:
    """``raw`` is a Responses item rather than a chat message: a known item ``type``, or a ``type`` and no
    ``role`` (a chat message with an unexpected ``type`` key still reads as the chat message it is)."""
    kind = raw.get("type")
    return isinstance(kind, str) and (kind in ITEM_TYPES or "role" not in raw)


def chat_parts(parts: list[Any]) -> list[dict[str, Any]]:
    """Responses content parts as chat parts (new dicts; the caller's are not touched)."""
    out: list[dict[str, Any]] = []
    for part in parts:
        if not isinstance(part, Mapping):
            out.append({"type": "text", "text": str(part)})
            continue
        kind = part.get("type") if isinstance(part.get("type"), str) else None
        if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
            out.append({"type": "text", "text": part["text"]})
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            out.append({"type": "text", "text": part["refusal"]})
        elif kind == "input_image" and isinstance(part.get("image_url"), str):
            out.append({"type": "image_url", "image_url": {"url": part["image_url"]}})
        else:
            out.append(dict(part))
    return out


def _text_of(parts: Any) -> str:
    """The text of a list of text parts (a reasoning summary), joined by blank lines."""
    if not isinstance(parts, list):
        return ""
    texts = [p["text"] for p in parts if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
    return "\n\n".join(t for t in texts if t)


def _string(item: Mapping[str, Any], key: str, index: int, source: str, *, id_too: bool = False) -> str:
    """The item's non-empty string ``key`` (``id_too``: else its ``id``), or an ``InputError``."""
    value = item.get(key)
    if (not isinstance(value, str) or not value) and id_too:
        value = item.get("id")
    if not isinstance(value, str) or not value:
        raise InputError(f"{item.get('type')} item has no {key!r} string", source=source, index=index, field=key)
    return value


def _output(value: Any) -> str | list[dict[str, Any]]:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return chat_parts(value)
    if isinstance(value, Mapping) and isinstance(value.get("content"), str):
        return str(value["content"])  # Codex's older failure shape {"content": ..., "success": false}
    return "" if value is None else json.dumps(value, ensure_ascii=False, default=str)


def call_dict(call_id: Any, name: Any, arguments: Any, kind: str = "function") -> dict[str, Any]:
    """A tool call as the plain dict of a chat message (checked when the message is parsed)."""
    return {"id": call_id, "type": kind, "function": {"name": name, "arguments": arguments}}


def chat_message(item: Mapping[str, Any], *, index: int, source: str = "<messages>") -> dict[str, Any]:
    """One Responses item as the plain dict of one chat message (rules in the module docstring)."""
    kind = item.get("type") if isinstance(item.get("type"), str) else None  # a list or dict: no known type
    if kind == "message":
        if "role" not in item:
            raise InputError("message item has no 'role'", source=source, index=index, field="role")
        content = item.get("content")
        return {"role": item["role"], "content": chat_parts(content) if isinstance(content, list) else content}
    if kind in CALLS:
        if kind == "local_shell_call":
            action = item.get("action")
            arguments = json.dumps(action, ensure_ascii=False) if action is not None else ""
            call = call_dict(_string(item, "call_id", index, source, id_too=True), "local_shell", arguments)
        else:  # a custom call's freeform input as it is (a patch): FunctionCall keeps a string and dumps anything else
            custom = kind == "custom_tool_call"
            call_id, name = _string(item, "call_id", index, source), _string(item, "name", index, source)
            given = item.get("input" if custom else "arguments")
            call = call_dict(call_id, name, given, "custom" if custom else "function")
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if kind in OUTPUTS:
        call_id = _string(item, "call_id", index, source, id_too=kind == "local_shell_call_output")
        return {"role": "tool", "tool_call_id": call_id, "content": _output(item.get("output"))}
    if kind == "reasoning":
        return {"role": "assistant", "content": _text_of(item.get("summary"))}
    if kind == "web_search_call":
        return {"role": "assistant", "content": _web_search(item.get("action"))}
    raise InputError(
        f"unknown Responses item type {kind!r} (read: {', '.join(sorted(ITEM_TYPES))})",
        source=source,
        index=index,
        field="type",
    )


def _web_search(action: Any) -> str:
    """A hosted web search as a person reads it (``web search: QUERY``), never a bare JSON object."""
    if not isinstance(action, Mapping):
        return "web search"
    what = action.get("type")
    # The Responses actions: search {query}, open_page {url}, find {pattern, url}; any other, its scalar values
    if what == "search" and action.get("query"):
        return f"web search: {action['query']}"
    if what == "open_page" and action.get("url"):
        return f"web search: open {action['url']}"
    if what == "find" and action.get("pattern"):
        where = f" in {action['url']}" if action.get("url") else ""
        return f"web search: find {action['pattern']!r}{where}"
    values = [str(v) for k, v in action.items() if k != "type" and isinstance(v, (str, int, float)) and str(v)]
    kind = [str(what)] if what else []
    return " ".join(["web search:", *kind, *values]) if values else " ".join(["web search", *kind])


def is_response(raw: Mapping[str, Any]) -> bool:
    """``raw`` is a whole Responses-API response (``{"object": "response", "output": [items], ...}``), the way
    mini-swe-agent's Responses models keep each reply in the history."""
    return raw.get("object") == "response" and isinstance(raw.get("output"), list) and "role" not in raw


def response_message(response: Mapping[str, Any], *, index: int, source: str = "<messages>") -> dict[str, Any]:
    """A whole Responses-API response as the plain dict of one assistant chat message: the text of its message and
    reasoning items, then its calls as ``tool_calls``, in order (the items of one reply, read as one message)."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for k, item in enumerate(response["output"]):
        if not isinstance(item, Mapping):
            raise InputError(f"output[{k}] is not an object", source=source, index=index, field="output")
        chat = chat_message(item, index=index, source=source)
        if chat["role"] != "assistant":
            raise InputError(
                f"output[{k}] is a {item.get('type')!r} item, not the model's own",
                source=source,
                index=index,
                field="output",
            )
        calls += chat.get("tool_calls") or []
        content = chat.get("content")
        if isinstance(content, list):
            content = "\n".join(p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
        if content:
            texts.append(content)
    text = "\n\n".join(texts)
    return {"role": "assistant", "content": text if text or not calls else None, "tool_calls": calls or None}


def _describe_validation_error(err: ValidationError) -> tuple[str, str | None]:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ())) or None
    if first.get("type") == "literal_error" and loc == "role":
        return f"unknown role {first.get('input')!r} (expected one of {', '.join(ROLES)})", "role"
    if first.get("type") == "missing":
        return "missing required key", loc
    if loc == "content.str":  # no branch of the union fits: say why the list branch failed, for a list
        value = first.get("input")
        part = next((e["loc"] for e in err.errors() if e["loc"][:1] == ("content",) and len(e["loc"]) > 2), None)
        if isinstance(value, list) and part is not None:
            deeper = next(e for e in err.errors() if e["loc"] == part)
            return f"content part {part[2]}: {deeper['msg']}", f"content.{part[2]}"
        return f"content is of type {type(value).__name__}, expected a string, a list of parts or null", "content"
    return str(first.get("msg", "invalid message")).removeprefix("Value error, "), loc


def _dumped(value: Any) -> Any:
    """A pydantic model (an OpenAI SDK object) as the plain data it serialises to; anything else as it is."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, (Message, type)):
        try:
            return dump(exclude_none=True)
        except (TypeError, ValueError) as err:  # a model_dump that is not pydantic's, or one that fails
            raise InputError(f"cannot read a {type(value).__name__} object as a message ({err})") from None
    return value


def plain_message(raw: Any) -> Any:
    """``raw`` as plain data: an SDK message object dumped, and SDK objects inside a dict's ``tool_calls`` or
    ``content`` list dumped too (a typed-dict param may hold them). A new dict; ``raw`` is not touched."""
    raw = _dumped(raw)
    if not isinstance(raw, Mapping):
        return raw
    out = dict(raw)
    for key in ("tool_calls", "content", "output", "summary"):  # the last two: Responses items
        value = out.get(key)
        if isinstance(value, (list, tuple)):
            out[key] = [_dumped(item) for item in value]
    return out


def parse_message(raw: Any, *, index: int, source: str = "<messages>") -> Message:
    """Validate one raw message (a mapping, an SDK message object or a Message); errors name the source, index
    and field."""
    if isinstance(raw, Message):
        return raw
    try:
        raw = plain_message(raw)
    except InputError as err:
        raise InputError(err.problem, source=source, index=index) from None
    if not isinstance(raw, Mapping):
        raise InputError(f"expected a JSON object, got {type(raw).__name__}", source=source, index=index)
    if is_response(raw):
        raw = response_message(raw, index=index, source=source)
    elif is_item(raw):
        raw = chat_message(raw, index=index, source=source)
    if "role" not in raw:
        raise InputError("message has no 'role'", source=source, index=index, field="role")
    try:
        message = Message.model_validate(raw)
    except ValidationError as err:
        problem, field = _describe_validation_error(err)
        raise InputError(problem, source=source, index=index, field=field) from None
    except RecursionError:
        raise InputError("nested too deeply", source=source, index=index) from None
    if message.content is None and not message.tool_calls:
        raise InputError("content is None and there are no tool_calls", source=source, index=index, field="content")
    return message


def parse_messages(raw: Any, *, source: str = "<messages>", allow_empty: bool = False) -> list[Message]:
    """Validate a whole history. Accepts a list of messages or an object with a ``messages`` list."""
    if isinstance(raw, Mapping) and "messages" in raw:
        raw = raw["messages"]
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
        raise InputError(
            f"expected a list of messages (or an object with a 'messages' list), got {type(raw).__name__}",
            source=source,
        )
    if not raw and not allow_empty:
        raise InputError("the history is empty", source=source)
    return [parse_message(item, index=i, source=source) for i, item in enumerate(raw)]


def as_messages(messages: Iterable[Message | Mapping[str, Any]], *, source: str = "<messages>") -> list[Message]:
    """Public entry points accept dicts, SDK message objects or Messages; this turns them into validated
    Messages. Something that is not a list of messages is an ``InputError`` too, not a ``TypeError``."""
    if isinstance(messages, (Mapping, str, bytes)):
        return parse_messages(messages, source=source)
    try:
        items = list(messages)
    except TypeError:
        raise InputError(f"expected a list of messages, got {type(messages).__name__}", source=source) from None
    return parse_messages(items, source=source)


_CHAT_FIELDS = ("role", "content", "tool_calls", "tool_call_id", "name")
_ITEM_FIELDS = ("type", "arguments", "call_id", "output", "input", "summary")  # Responses items' own
_FIELDS = _CHAT_FIELDS + _ITEM_FIELDS  # replacing any of them on an SDK object is noticed by the cache


def _field(raw: Any, key: str) -> Any:
    return raw.get(key) if isinstance(raw, Mapping) else getattr(raw, key, None)


class _Fields:
    """An object that is not a mapping (an SDK message) as the cache saw it: equal to it while it is the same object
    holding the same field objects."""

    __slots__ = ("raw", "fields")

    def __init__(self, raw: Any) -> None:
        self.raw, self.fields = raw, [_field(raw, k) for k in _FIELDS]

    def __eq__(self, other: object) -> bool:
        return other is self.raw and all(_field(other, k) is v for k, v in zip(_FIELDS, self.fields))

    __hash__ = None  # type: ignore[assignment]


def _snapshot(raw: Any) -> Any:
    """What a message was when it was parsed, to compare it with later: a ``Message`` itself (immutable), a shallow
    copy of a mapping (equal while its keys hold equal values), else ``_Fields``."""
    if isinstance(raw, Message):
        return raw
    return dict(raw) if isinstance(raw, Mapping) else _Fields(raw)


class MessageCache:
    """Validates a growing history incrementally: a message equal to the one at the same position last time (by
    its content: a copy of its keys and values is kept) is not validated again, and ``validated`` says how many
    were at the last call.

    Agent loops append to their history; re-validating every message at every step would cost more than the
    exact token count itself. The check is one list comparison in C (about 40 ns a message, against 3 us to
    validate one): replacing a message or the list, or a key of a message (``m["content"] = ...``, or an
    attribute of an SDK message object), is noticed; a change made inside a nested list in place (content parts,
    tool calls) is not."""

    def __init__(self) -> None:
        self._seen: list[Any] = []  # _snapshot of each message last time
        self._parsed: list[Message] = []
        self.validated = 0

    def parse(self, messages: Sequence[Message | Mapping[str, Any]], *, source: str = "<messages>") -> list[Message]:
        raw = messages if type(messages) is list else list(messages)
        if not raw:
            raise InputError("the history is empty", source=source)
        seen, k = self._seen, min(len(self._seen), len(raw))
        if k == len(seen) and seen == raw[:k]:  # our snapshots on the left: their __eq__ decides
            same = k
        else:
            same = next((i for i in range(k) if not seen[i] == raw[i]), k)
        new = [parse_message(raw[i], index=i, source=source) for i in range(same, len(raw))]
        del seen[same:], self._parsed[same:]
        seen += [_snapshot(m) for m in raw[same:]]
        self._parsed += new
        self.validated = len(new)
        return list(self._parsed)
