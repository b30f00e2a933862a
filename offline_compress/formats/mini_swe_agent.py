"""mini-swe-agent trajectories: ``*.traj.json`` (``{info, messages, trajectory_format?}``) or a bare list.

mini-swe-agent already stores the exact OpenAI chat messages its model saw, and the importer keeps every message
exactly as it is, roles and text unchanged, so the token count is the one the model paid. Two protocols:

* text (1.x and the text configs of 2.x): a ``system`` prompt, the task as a ``user`` message, ``assistant``
  replies whose command is a fenced ```bash (or ```mswea_bash_command) block, and each command's result as the
  next ``user`` message, which starts with ``<returncode>`` (the final submission output may not). Observations
  are deliberately *not* turned into ``tool`` messages: the ``<returncode>`` convention is how the rest of the
  library (the extraction module) recognises them.
* tool calling (2.x, ``trajectory_format: "mini-swe-agent-1.1"``): ``assistant`` messages with ``tool_calls``
  (one ``bash`` tool, arguments ``{"command": ...}``) answered by ``tool`` messages (``tool_call_id``). Both are
  kept as they are: a ``tool`` message's content is what the model saw, so an output shortened by the harness
  keeps its ``<output_head>`` / ``<elided_chars>`` / ``<output_tail>`` form (``extra.raw_output``, the full
  text, was never shown to the model). The run ends with a pseudo-message ``{"role": "exit", "content": <the
  submitted patch>, "extra": {exit_status, submission}}``: it is not model input and is dropped (the patch is
  ``info.submission``, see ``read_info``), so the final submit call (``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT
  ...``) stays without a ``tool`` reply.

Per-message extras (``extra``: raw model responses, raw outputs, costs), ``reasoning_content`` (the reasoner's
thinking, returned beside the content) and ``provider_specific_fields`` are not
content and are ignored. ``info`` (exit status, submission, model stats) is not a message either; use
``read_info`` to get it.

Detection: an object with a ``messages`` list and an ``info`` object (or a ``trajectory_format`` that names
mini-swe-agent), or a bare list of messages in which some assistant message holds a ```bash /
```mswea_bash_command block and some user message starts with ``<returncode>``. Everything else raises
``InputError`` saying why, so ``auto`` can report it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InputError
from ..history.messages import Message, parse_message
from .imported import Imported
from .openai import expect, parse_json

FORMAT = "mini-swe-agent"

_COMMAND_BLOCK = re.compile(r"```(?:bash|mswea_bash_command)[ \t]*\r?\n")
_RETURNCODE = "<returncode>"
EXIT_ROLE = "exit"  # the last record of a 2.x run: the submission, not a chat message


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def _looks_like_bare_list(raw: Sequence[Any]) -> str | None:
    """None when ``raw`` looks like a mini-swe-agent message list, else the reason it does not."""
    if not raw:
        return "the list is empty"
    has_command = has_returncode = False
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping) or "role" not in item:
            return f"item {i} is not a message object with a 'role'"
        text = _text_of(item.get("content"))
        if item["role"] == "assistant" and _COMMAND_BLOCK.search(text):
            has_command = True
        elif item["role"] == "user" and text.lstrip().startswith(_RETURNCODE):
            has_returncode = True
    if not has_command:
        return "a list of messages, but no assistant message holds a ```bash / ```mswea_bash_command block"
    if not has_returncode:
        return "a list of messages, but no user message starts with <returncode>"
    return None


def messages_from_data(data: Any, source: str) -> list[Message]:
    """Convert already-parsed JSON (the ``.traj.json`` object or a bare list) into messages; ``exit`` records
    are dropped (errors still give the index a message has in the file).

    The input is deep-copied first, so the returned messages share no state with ``data``.
    """
    raw = _raw_messages(data, source)
    return [
        parse_message(copy.deepcopy(item), index=i, source=source) for i, item in enumerate(raw) if not _is_exit(item)
    ]


def _raw_messages(data: Any, source: str) -> list[Any]:
    if isinstance(data, Mapping):
        fmt = data.get("trajectory_format")
        if "messages" not in data:
            raise InputError("an object without a 'messages' list (not a mini-swe-agent trajectory)", source=source)
        named = isinstance(fmt, str) and fmt.startswith("mini-swe-agent")
        if not named and not isinstance(data.get("info"), Mapping):
            raise InputError(
                "an object with 'messages' but no 'info' object or mini-swe-agent 'trajectory_format'",
                source=source,
                field="info",
            )
        raw = expect(data["messages"], list, "a list", "messages", source, field="messages")
    elif isinstance(data, list):
        why = _looks_like_bare_list(data)
        if why:
            raise InputError(why, source=source)
        raw = data
    else:
        raise InputError(f"expected a JSON object or list, got {type(data).__name__}", source=source)
    if not any(not _is_exit(item) for item in raw):
        raise InputError("the history is empty", source=source, field="messages")
    return raw


def _is_exit(item: Any) -> bool:
    """The pseudo-message a 2.x run ends with (its content is the submitted patch, never model input)."""
    return isinstance(item, Mapping) and item.get("role") == EXIT_ROLE


def read_info(text: str, source: str = "<mini-swe-agent>") -> dict[str, Any]:
    """The ``info`` object of a ``.traj.json`` (exit status, submission, model stats); ``{}`` for a bare list."""
    data = parse_json(text, source)
    if isinstance(data, Mapping) and isinstance(data.get("info"), Mapping):
        return copy.deepcopy(dict(data["info"]))
    return {}


def load_mini_swe_agent(text: str, source: str) -> list[Message] | Imported:
    """Parse a mini-swe-agent ``.traj.json`` (or bare message list); messages come back exactly as stored, less
    the ``exit`` record of a 2.x run (reported in the notes).

    Raises ``InputError`` (with line/column for malformed JSON) when the text is not this format.
    """
    data = parse_json(text, source)
    messages = messages_from_data(data, source)
    exits = sum(1 for item in _raw_messages(data, source) if _is_exit(item))
    if not exits:
        return messages
    return Imported(
        messages,
        notes=(
            f"{exits} 'exit' record{'s' if exits > 1 else ''} (the submitted patch, info.submission): not model input",
        ),
    )
