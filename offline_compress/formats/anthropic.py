"""Anthropic Messages histories, and the content-block mapping the Claude Code importer shares.

Two shapes are read: the request body ``{"system": str | [text blocks], "messages": [...], ...}`` and a bare
list of messages. Each message is ``{"role": "user" | "assistant", "content": str | [blocks]}``. Blocks map to
OpenAI chat messages like this:

* ``text`` -> the message's text. Several text blocks of one message join with a line break.
* ``image`` and ``document`` (and any other block in a user turn or a tool result) -> the text ``[image]``,
  ``[document]``, ``[<type>]``. The base64 data is not carried.
* ``tool_use`` {id, name, input} -> a tool call of the assistant message: ``id``, ``function.name``, and
  ``function.arguments`` = ``json.dumps(input, ensure_ascii=False)``. Parallel calls of one turn therefore sit in
  one assistant message, as in OpenAI format. A ``tool_use`` without ``input`` keeps ``arguments`` empty
  (unknown).
* ``tool_result`` {tool_use_id, content, is_error} -> a ``tool`` message with ``tool_call_id`` = ``tool_use_id``.
  Its content is the result's text (a string, or its text and image blocks as above). OpenAI format has no
  ``is_error`` flag, so an error result shows it in its text. Its text gets a leading ``Error: `` unless it
  already starts with one of the two markers the outcome classifier reads (``Error: ``, or Claude Code's
  ``Exit code N`` with N other than 0). Tool results come first in a user turn (the API requires it). Text
  that comes with them in the same turn follows them as a ``user`` message.
* Server tools and MCP connector tools, which run during the assistant's turn, so that their call and their
  result both sit in the assistant's content: ``server_tool_use`` / ``mcp_tool_use`` {id, name, input} -> a tool
  call as for ``tool_use``; the result block that answers it (``web_search_tool_result``,
  ``web_fetch_tool_result``, ``code_execution_tool_result``, ``bash_code_execution_tool_result``,
  ``text_editor_code_execution_tool_result``, ``mcp_tool_result``, any ``*_tool_result`` with a
  ``tool_use_id``) -> a ``tool`` message right after the assistant message that made the call, and the blocks
  after it start a new assistant message. The result's text is what it holds in words: a search hit's title and
  URL, a fetched page's URL and text, a run's stdout and stderr (``Exit code N`` first when N is not 0), an MCP
  result's text; an error object reads ``Error: <error_code>``. Encrypted content, base64 data and file ids are
  not carried.
* ``thinking`` / ``redacted_thinking`` -> left out. This is the model's hidden reasoning, not history text; the
  API does not show it to the model again after the turn. Other assistant blocks (a container upload, for
  example) are left out too. Both are counted in ``Imported.notes``.

A tool result must answer a call made before it (``history/cut.py`` keeps a call and its results together by
that order). A result whose ``tool_use_id`` answers no pending call is left out and reported in
``Imported.skipped``. A call with no result stays unanswered.

``system`` becomes a ``system`` message in front. Other keys of a request body (``model``, ``tools``,
``max_tokens``...) are not history, and tool schemas are not read.

Detection: this importer must not take OpenAI-format files, so it only accepts an object with both top-level
``system`` and ``messages``, or a list or ``messages`` whose messages hold ``tool_use`` / ``tool_result`` (or
``server_tool_use`` / ``mcp_tool_use``) blocks. Every role must be ``user`` or ``assistant``. Anything else
raises ``InputError``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InputError
from ..history.messages import Message, call_dict, parse_message
from .imported import Imported
from .openai import expect, parse_json

FORMAT = "anthropic"

ROLES = ("user", "assistant")
CALL_BLOCKS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
TOOL_BLOCKS = CALL_BLOCKS | {"tool_result"}  # no OpenAI message holds one of these
# Fields of a server tool's result that hold no words: encrypted pages and output, ids, types, dates.
_NOT_WORDS = frozenset(
    {"type", "encrypted_content", "encrypted_stdout", "file_id", "media_type", "page_age", "retrieved_at"}
    | {"citations", "tool_use_id", "file_type", "caller"}
)
HIDDEN_REASONING = frozenset({"thinking", "redacted_thinking"})
# An error result whose text already begins like this needs no added "Error: " line (see outcomes.py).
_ERROR_MARKED = re.compile(r"\A(?:Error: |Exit code -?0*[1-9]\d*\b)")


class BlockError(Exception):
    """A content block that cannot be read: ``problem`` in words, ``field`` the key at fault."""

    def __init__(self, problem: str, field: str = "content") -> None:
        super().__init__(problem)
        self.problem = problem
        self.field = field


def _blocks(content: Any, field: str = "content") -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise BlockError(f"'{field}' is a {type(content).__name__}, expected a string or a list of blocks", field)
    for k, block in enumerate(content):
        if not isinstance(block, Mapping):
            raise BlockError(f"block {k} of '{field}' is a {type(block).__name__}, expected an object", field)
        if not isinstance(block.get("type"), str):
            raise BlockError(f"block {k} of '{field}' has no 'type'", field)
    return content


def block_text(block: Mapping[str, Any], field: str = "content") -> str:
    """A text block's text; any other block (image, document...) named ``[<type>]``."""
    if block["type"] == "text":
        text = block.get("text")
        if not isinstance(text, str):
            raise BlockError(f"a text block of '{field}' has no 'text' string", field)
        return text
    return f"[{block['type']}]"


def tool_call(block: Mapping[str, Any]) -> dict[str, Any]:
    """A ``tool_use`` (or server / MCP tool use) block as an OpenAI tool call."""
    call_id, name = block.get("id"), block.get("name")
    if not isinstance(call_id, str) or not call_id:
        raise BlockError(f"a {block['type']} block has no 'id' string", "id")
    if not isinstance(name, str) or not name:
        raise BlockError(f"{block['type']} {call_id} has no 'name' string", "name")
    arguments = json.dumps(block["input"], ensure_ascii=False) if "input" in block else ""
    return call_dict(call_id, name, arguments)


def tool_result_text(block: Mapping[str, Any]) -> str:
    """A ``tool_result`` block's content as text, with ``is_error`` made visible (module docstring)."""
    content = block.get("content")
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    else:
        text = "\n".join(block_text(b, "tool_result.content") for b in _blocks(content, "tool_result.content"))
    if block.get("is_error") is True and not _ERROR_MARKED.match(text):
        text = f"Error: {text}" if text else "Error: (no output)"
    return text


def is_server_result(block: Mapping[str, Any]) -> bool:
    """A block in the assistant's content that answers a server or MCP tool call made in the same turn."""
    return block["type"] != "tool_result" and block["type"].endswith("_tool_result") and "tool_use_id" in block


def _words(value: Any) -> list[str]:
    """The text of a server tool's result, in order: its strings, ``Error: <error_code>`` for an error object,
    ``Exit code N`` before a run's output when N is not 0; nothing of encrypted fields or base64 data."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [w for v in value for w in _words(v)]
    if not isinstance(value, Mapping):
        return []
    kind = value.get("type")
    if isinstance(kind, str) and kind.endswith("_error"):
        return [f"Error: {value.get('error_code') or kind}"]
    if kind == "base64":
        return []
    code = value.get("return_code")
    failed = [f"Exit code {code}"] if isinstance(code, int) and not isinstance(code, bool) and code != 0 else []
    return failed + [w for k, v in value.items() if k not in _NOT_WORDS for w in _words(v)]


def server_result_text(block: Mapping[str, Any]) -> str:
    """A server or MCP tool's result block as the text of a ``tool`` message (module docstring)."""
    if block["type"] == "mcp_tool_result":  # the shape of a tool_result
        return tool_result_text(block)
    return "\n".join(_words(block.get("content")))


class Thread:
    """Canonical messages built from Anthropic content, in order, with every tool result after its call.

    ``where`` labels (``"line 12"``, ``"message 3"``) name the input in ``skipped`` and in errors. A method
    raises ``BlockError`` before changing anything, so a caller can skip a bad record and go on.

    A call whose id repeats an earlier call's is left out (reported in ``skipped``). With ``reuse_answered_ids``
    an id may recur once the earlier call has its result: Moatless gives an identical repeated call the same id."""

    def __init__(self, source: str, *, reuse_answered_ids: bool = False) -> None:
        self.source = source
        self.reuse_answered_ids = reuse_answered_ids
        self.raws: list[tuple[str, dict[str, Any]]] = []
        self.skipped: list[str] = []
        self.left_out: Counter[str] = Counter()  # block type -> count
        self._pending: set[str] = set()
        self._call_ids: set[str] = set()
        self._turn: str | None = None  # the API message id of the assistant message last added

    def assistant(self, content: Any, where: str, *, turn: str | None = None) -> None:
        """An assistant message. Blocks of one API message (``turn``) added one after another join the same
        message: Claude Code writes each block of a response on a line of its own. A server tool's result in the
        content ends the message there: the result follows as a ``tool`` message, the blocks after it start the
        next assistant message."""
        parts: list[tuple[list[str], list[dict[str, Any]], tuple[str, str] | None]] = []
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        dropped: Counter[str] = Counter()
        for block in _blocks(content):  # read whole before anything changes (a BlockError leaves no trace)
            kind = block["type"]
            if kind == "text":
                if text := block_text(block):
                    texts.append(text)
            elif kind in CALL_BLOCKS:
                calls.append(tool_call(block))
            elif is_server_result(block):
                if not isinstance(block["tool_use_id"], str):
                    raise BlockError(f"a {kind} block has no 'tool_use_id' string", "tool_use_id")
                parts.append((texts, calls, (block["tool_use_id"], server_result_text(block))))
                texts, calls = [], []
            else:
                dropped[kind] += 1
        parts.append((texts, calls, None))
        self.left_out.update(dropped)
        for texts, calls, result in parts:
            self._assistant(texts, calls, where, turn)
            if result is not None:
                self._result(*result, where)

    def _assistant(self, texts: list[str], calls: list[dict[str, Any]], where: str, turn: str | None) -> None:
        fresh = []
        for call in calls:
            if call["id"] in (self._pending if self.reuse_answered_ids else self._call_ids):
                self.skipped.append(f"{where}: tool call {call['id']} repeats the id of an earlier call; left out")
            else:
                fresh.append(call)
                self._call_ids.add(call["id"])
                self._pending.add(call["id"])
        if not texts and not fresh:
            return
        last = self.raws[-1][1] if self.raws else None
        if turn is not None and turn == self._turn and last is not None and last["role"] == "assistant":
            if texts:
                last["content"] = "\n".join([last["content"], *texts] if last["content"] else texts)
            if fresh:
                last.setdefault("tool_calls", []).extend(fresh)
            return
        raw: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) if texts else None}
        if fresh:
            raw["tool_calls"] = fresh
        self.raws.append((where, raw))
        self._turn = turn

    def _result(self, call_id: str, text: str, where: str) -> bool:
        """A ``tool`` message answering the pending call ``call_id``; False (left out, and said) when none is."""
        if call_id not in self._pending:
            self.skipped.append(f"{where}: tool result for {call_id} answers no pending call; left out")
            return False
        self._pending.discard(call_id)
        self.raws.append((where, {"role": "tool", "content": text, "tool_call_id": call_id}))
        return True

    def user(self, content: Any, where: str) -> int:
        """A user turn: its tool results as ``tool`` messages, then its other blocks as one ``user`` message.
        Returns the number of ``user`` messages added (0 or 1)."""
        blocks = _blocks(content)
        results = [(b, tool_result_text(b)) for b in blocks if b["type"] == "tool_result"]
        for block, _ in results:
            if not isinstance(block.get("tool_use_id"), str):
                raise BlockError("a tool_result block has no 'tool_use_id' string", "tool_use_id")
        texts = [block_text(b) for b in blocks if b["type"] != "tool_result"]
        for block, text in results:
            if self._result(block["tool_use_id"], text, where):
                self._turn = None
        if not texts:
            return 0
        self.raws.append((where, {"role": "user", "content": "\n".join(texts)}))
        self._turn = None
        return 1

    def system(self, text: str, where: str) -> None:
        self.raws.append((where, {"role": "system", "content": text}))
        self._turn = None

    def block_notes(self) -> list[str]:
        """What was left out of the assistant messages, in words."""
        notes = []
        thinking = sum(self.left_out[k] for k in HIDDEN_REASONING)
        if thinking:
            notes.append(f"{thinking} thinking blocks left out: the model's hidden reasoning, not history text")
        other = sorted((k, n) for k, n in self.left_out.items() if k not in HIDDEN_REASONING)
        if other:
            listed = ", ".join(f"{n} {k}" for k, n in other)
            notes.append(f"assistant blocks of other types left out ({listed}): not read by this importer")
        return notes

    def messages(self) -> list[Message]:
        out = []
        for k, (where, raw) in enumerate(self.raws):
            try:
                out.append(parse_message(raw, index=k, source=self.source))
            except InputError as err:
                raise InputError(err.problem, source=self.source, index=k, field=err.field, position=where) from None
        return out


def holds_tool_blocks(messages: Sequence[Any]) -> bool:
    """Some message's content holds a ``tool_use`` or ``tool_result`` block (no OpenAI message does)."""
    return any(
        isinstance(m, Mapping)
        and isinstance(m.get("content"), list)
        and any(
            isinstance(b, Mapping) and isinstance(b.get("type"), str) and b["type"] in TOOL_BLOCKS for b in m["content"]
        )
        for m in messages
    )


def _system_text(system: Any, source: str) -> str:
    try:
        return "\n".join(block_text(b, "system") for b in _blocks(system, "system"))
    except BlockError as err:
        raise InputError(err.problem, source=source, field="system") from None


def messages_from_data(data: Any, source: str) -> list[Message] | Imported:
    """Convert an already-parsed Anthropic Messages body or message list (rules in the module docstring)."""
    system = None
    if isinstance(data, Mapping):
        if "messages" not in data:
            keys = ", ".join(sorted(map(str, data))[:8]) or "none"
            raise InputError(f"no 'messages' list (keys: {keys})", source=source, field="messages")
        messages, system = expect(data["messages"], list, "a list", "messages", source), data.get("system")
        if "system" not in data and not holds_tool_blocks(messages):
            raise InputError(
                "an object with 'messages' but no top-level 'system' and no tool_use/tool_result blocks "
                "(an OpenAI-format history, not Anthropic Messages)",
                source=source,
            )
    elif isinstance(data, list):
        messages = data
        if not holds_tool_blocks(messages):
            raise InputError(
                "a list of messages without tool_use/tool_result blocks (read as OpenAI format)", source=source
            )
    else:
        raise InputError(f"expected a JSON object or list, got {type(data).__name__}", source=source)
    thread = Thread(source)
    if system is not None:
        thread.system(_system_text(system, source), "system")
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise InputError(f"message is a {type(message).__name__}, expected an object", source=source, index=i)
        role = message.get("role")
        if role not in ROLES:
            raise InputError(
                f"role {role!r} is not an Anthropic Messages role (user, assistant)",
                source=source,
                index=i,
                field="role",
            )
        try:
            if role == "assistant":
                thread.assistant(message.get("content"), f"message {i}")
            else:
                thread.user(message.get("content"), f"message {i}")
        except BlockError as err:
            raise InputError(err.problem, source=source, index=i, field=err.field) from None
    out = thread.messages()
    if not out:
        raise InputError("the history is empty", source=source, field="messages")
    notes = tuple(thread.block_notes())
    if thread.skipped or notes:
        return Imported(out, tuple(thread.skipped), notes)
    return out


def load_anthropic(text: str, source: str) -> list[Message] | Imported:
    """Parse an Anthropic Messages request body or message list; raises ``InputError`` when it is not one."""
    return messages_from_data(parse_json(text, source), source)
