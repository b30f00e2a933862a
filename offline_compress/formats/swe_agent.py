"""SWE-agent trajectories: ``*.traj`` files, ``{history: [...], trajectory: [...], info, ...}``.

``history`` is the message list the model saw (``trajectory`` is a per-step digest of the same run, so it is
not used). Each entry has ``role``, ``content``, ``agent``, ``thought``, ``action`` and, in function-calling
runs, ``tool_calls`` / ``tool_call_ids``. The conversion:

* entries with ``is_demo`` are dropped (they paste a whole demonstration run into the prompt);
* ``system`` and the task's ``user`` message stay as they are;
* function-calling runs: assistant ``tool_calls`` are kept, and each ``tool`` entry becomes a ``tool`` message
  whose ``tool_call_id`` is the first of its ``tool_call_ids`` (SWE-agent makes one call per turn; should an
  entry list several ids, only the first is used, and an entry without ids answers the pending call);
* text-action runs: an assistant entry with a non-empty ``action`` gets one tool call, with the id
  ``swe-agent-<history index>``, the function name = the first word of the action and the arguments
  ``{"command": <action>}``; the observation that follows it (stored as a ``user`` entry) becomes a ``tool``
  message with that id. The assistant's ``content`` is kept as is (it already shows the action in its
  fenced block, so the action text appears twice: once as the model wrote it, once as call arguments);
* a ``user`` entry that follows an assistant action is always treated as that action's output, never as the
  user: SWE-agent writes every observation with role ``user``.

The final ``submit`` action usually has no observation after it; its tool call stays without a ``tool`` reply.
Content given as a list of parts (e.g. with ``cache_control``) is kept as parts.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from ..errors import InputError
from ..history.messages import Message, call_dict, parse_message
from .openai import object_list, parse_json

FORMAT = "swe-agent"


def _check_shape(data: Any, source: str) -> list[Any]:
    history = object_list(data, "history", source)
    if "trajectory" not in data and "info" not in data:
        raise InputError("a 'history' list without 'trajectory' or 'info' (not a SWE-agent .traj)", source=source)
    for i, entry in enumerate(history):
        if not isinstance(entry, Mapping):
            raise InputError(f"history entry is a {type(entry).__name__}, expected an object", source=source, index=i)
        if "role" not in entry:
            raise InputError("history entry has no 'role'", source=source, index=i, field="role")
    return history


def messages_from_data(data: Any, source: str) -> list[Message]:
    """Convert an already-parsed ``.traj`` object into messages (see the module docstring for the rules).

    The input is deep-copied first, so the returned messages share no state with ``data``.
    """
    history = _check_shape(data, source)
    out: list[Message] = []
    pending: list[str] = []  # ids of the last assistant's tool calls that have no reply yet
    after_action = False  # the previous kept entry was an assistant action
    for i, entry in enumerate(history):
        if entry.get("is_demo"):
            continue
        role = entry["role"]
        content = copy.deepcopy(entry.get("content"))
        if role == "assistant":
            raw: dict[str, Any] = {"role": "assistant", "content": content}
            calls = entry.get("tool_calls")
            action = entry.get("action")
            if calls:
                raw["tool_calls"] = copy.deepcopy(calls)
                pending = [str(c["id"]) for c in calls if isinstance(c, Mapping) and c.get("id")]
            elif isinstance(action, str) and action.strip():
                name = (action.split() or ["action"])[0]
                call = call_dict(f"swe-agent-{i}", name, json.dumps({"command": action}, ensure_ascii=False))
                raw["tool_calls"] = [call]
                pending = [call["id"]]
            else:
                pending = []
            message = parse_message(raw, index=i, source=source)
            after_action = bool(message.tool_calls)
            out.append(message)
            continue
        if role == "tool" or (role == "user" and after_action):
            ids = entry.get("tool_call_ids") if role == "tool" else None
            if ids:
                if not isinstance(ids, list) or not isinstance(ids[0], str):
                    raise InputError(
                        "'tool_call_ids' is not a list of strings", source=source, index=i, field="tool_call_ids"
                    )
                call_id = ids[0]
            elif pending:
                call_id = pending[0]
            else:
                raise InputError(
                    "tool output with no tool call to answer", source=source, index=i, field="tool_call_ids"
                )
            if call_id in pending:
                pending.remove(call_id)
            out.append(
                parse_message({"role": "tool", "content": content, "tool_call_id": call_id}, index=i, source=source)
            )
            after_action = bool(pending)
            continue
        out.append(parse_message({"role": role, "content": content, "name": entry.get("name")}, index=i, source=source))
        after_action = False
        pending = []
    if not out:
        raise InputError("the history is empty (or holds only demonstrations)", source=source, field="history")
    return out


def load_swe_agent(text: str, source: str) -> list[Message]:
    """Parse a SWE-agent ``.traj`` file into messages; raises ``InputError`` when the text is not one."""
    return messages_from_data(parse_json(text, source), source)
