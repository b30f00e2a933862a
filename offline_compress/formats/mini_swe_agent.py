"""mini-swe-agent trajectories: ``*.traj.json`` (``{info, messages, trajectory_format?}``) or a bare list.

mini-swe-agent already stores the exact OpenAI chat messages its model saw: a ``system`` prompt, the task as a
``user`` message, ``assistant`` replies whose command is a fenced ```bash (or ```mswea_bash_command) block,
and each command's result as the next ``user`` message, which starts with ``<returncode>`` (the final
submission output may not). The importer keeps every message exactly as it is, roles and text unchanged, so the
token count is the one the model paid. Observations are deliberately *not* turned into ``tool`` messages: the
``<returncode>`` convention is how the rest of the library (the extraction module) recognises them.

Per-message extras (``extra``: raw model responses, reasoning, costs) are not part of what the model saw and
are ignored. ``info`` (exit status, submission, model stats) is not a message either; use ``read_info`` to get
it.

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
from ..history.messages import Message, parse_messages
from .openai import parse_json

FORMAT = "mini-swe-agent"

_COMMAND_BLOCK = re.compile(r"```(?:bash|mswea_bash_command)[ \t]*\r?\n")
_RETURNCODE = "<returncode>"


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
    """Convert already-parsed JSON (the ``.traj.json`` object or a bare list) into messages.

    The input is deep-copied first, so the returned messages share no state with ``data``.
    """
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
        raw = data["messages"]
        if not isinstance(raw, list):
            raise InputError(f"'messages' is a {type(raw).__name__}, expected a list", source=source, field="messages")
    elif isinstance(data, list):
        why = _looks_like_bare_list(data)
        if why:
            raise InputError(why, source=source)
        raw = data
    else:
        raise InputError(f"expected a JSON object or list, got {type(data).__name__}", source=source)
    return parse_messages(copy.deepcopy(raw), source=source)


def read_info(text: str, source: str = "<mini-swe-agent>") -> dict[str, Any]:
    """The ``info`` object of a ``.traj.json`` (exit status, submission, model stats); ``{}`` for a bare list."""
    data = parse_json(text, source)
    if isinstance(data, Mapping) and isinstance(data.get("info"), Mapping):
        return copy.deepcopy(dict(data["info"]))
    return {}


def load_mini_swe_agent(text: str, source: str) -> list[Message]:
    """Parse a mini-swe-agent ``.traj.json`` (or bare message list); messages come back exactly as stored.

    Raises ``InputError`` (with line/column for malformed JSON) when the text is not this format.
    """
    if not text.strip():
        raise InputError("the file is empty", source=source)
    return messages_from_data(parse_json(text, source), source)
