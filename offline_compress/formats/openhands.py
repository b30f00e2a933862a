"""OpenHands (V0) event streams: a JSON list of events, each an action or an observation.

Events look like ``{id, source, action, args, tool_call_metadata?}`` or
``{id, source, observation, content, extras, cause, tool_call_metadata?}``. The conversion rebuilds the
messages the agent's model saw:

* ``system`` actions -> a ``system`` message (``args.content``);
* ``message`` actions -> ``user`` (source ``user``) or ``assistant`` (any other source) with ``args.content``;
  ``args.image_urls`` become ``image_url`` parts;
* every other action (``run``, ``read``, ``edit``, ``write``, ``browse``, ``run_ipython``, ``think``,
  ``finish``, ...) -> an ``assistant`` message with a tool call. With ``tool_call_metadata`` the call uses its
  ``tool_call_id``, and when ``model_response`` holds that call, the function name and the exact arguments
  string the model produced, and the response's text as the message content; actions from one model response
  (parallel tool calls) share one assistant message. Without metadata (older or user-initiated actions) the id
  is ``openhands-<event id>``, the name the action type, the arguments the JSON of ``args`` (less
  ``thought``), and the content ``args.thought``. A user-initiated command (source ``user``) is represented
  the same way, so its output stays tool output;
* observations -> ``tool`` messages answering the call they belong to (``tool_call_metadata.tool_call_id``,
  else the action named by ``cause``). Command output (``run``) is ``prefix + content + suffix`` from
  ``extras.metadata`` (the suffix carries the exit-code line); newer OpenHands versions also append working
  directory / interpreter lines, which are not reconstructed. An observation with content that answers no
  action (e.g. an error raised by the environment) gets a synthesised call named after its type
  (``openhands-obs-<event id>``), again so that it never reads as the user.

Dropped, because the model never sees them: environment bookkeeping (``change_agent_state``,
``agent_state_changed``, ``null`` observations, ``recall`` requests), any observation with empty content that
answers no action, and ``condensation`` markers (a condensed history cannot be reconstructed from the stream;
the events it replaced are kept). Each event's display ``message`` string is UI text, not model input.
Not reconstructed: the system prompt and tool definitions when the stream has no ``system`` action, and the
``extras`` of ``recall`` observations (repository instructions, microagent knowledge) that newer versions show
the model.
A ``finish`` call has no observation and stays without a ``tool`` reply.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ..history.messages import Message, call_dict, parse_message
from .openai import expect, parse_json

FORMAT = "openhands"

DROPPED_ACTIONS = frozenset({"change_agent_state", "null", "recall", "condensation", "condensation_request"})
DROPPED_OBSERVATIONS = frozenset({"agent_state_changed", "null"})


def _check_shape(data: Any, source: str) -> list[Mapping[str, Any]]:
    if not isinstance(data, list):
        raise InputError(f"expected a JSON list of events, got {type(data).__name__}", source=source)
    if not data:
        raise InputError("the event list is empty", source=source)
    for i, event in enumerate(data):
        if not isinstance(event, Mapping):
            raise InputError(f"event is a {type(event).__name__}, expected an object", source=source, index=i)
        if "action" not in event and "observation" not in event:
            why = (
                "it has a 'role' (a chat message, not an event)"
                if "role" in event
                else "neither 'action' nor 'observation'"
            )
            raise InputError(f"not an OpenHands event: {why}", source=source, index=i)
        if "source" not in event:
            raise InputError("event has no 'source'", source=source, index=i, field="source")
    return data


def _response_message(meta: Mapping[str, Any]) -> Mapping[str, Any]:
    response = meta.get("model_response")
    if isinstance(response, Mapping):
        choices = response.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
            message = choices[0].get("message")
            if isinstance(message, Mapping):
                return message
    return {}


def _args_json(args: Mapping[str, Any]) -> str:
    return json.dumps({k: v for k, v in args.items() if k != "thought"}, ensure_ascii=False, sort_keys=True)


def _observation_text(event: Mapping[str, Any]) -> str:
    content = event.get("content")
    text = content if isinstance(content, str) else ("" if content is None else json.dumps(content, ensure_ascii=False))
    extras = event.get("extras")
    if (
        event.get("observation") == "run"
        and isinstance(extras, Mapping)
        and isinstance(extras.get("metadata"), Mapping)
    ):
        meta = extras["metadata"]
        text = f"{meta.get('prefix') or ''}{text}{meta.get('suffix') or ''}"
    return text


def _event_key(value: Any, default: int) -> Any:
    """An event id as a dictionary key (ids are ints or strings; anything else cannot name an event)."""
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else default


def _user_content(args: Mapping[str, Any], event: Mapping[str, Any]) -> str | list[dict[str, Any]]:
    text = args.get("content")
    if not isinstance(text, str):
        message = event.get("message")
        text = message if isinstance(message, str) else ""
    images = args.get("image_urls")
    if isinstance(images, list) and images:
        return [{"type": "text", "text": text}] + [{"type": "image_url", "image_url": {"url": str(u)}} for u in images]
    return text


@dataclass
class _Stream:
    """The raw messages built so far, and what later events look up in them."""

    out: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # (event index, raw message)
    by_response: dict[str, dict[str, Any]] = field(default_factory=dict)  # model_response id -> its assistant message
    call_for_event: dict[Any, str] = field(default_factory=dict)  # action event id -> tool call id
    answered: set[str] = field(default_factory=set)
    all_calls: set[str] = field(default_factory=set)


def messages_from_data(data: Any, source: str) -> list[Message]:
    """Convert an already-parsed OpenHands event list into messages (rules in the module docstring).

    Raw dicts are built fresh (contents copied), so the returned messages share no state with ``data``.
    """
    events = _check_shape(data, source)
    # Build plain dicts first: a later action may add a tool call to an earlier assistant message.
    stream = _Stream()
    for i, event in enumerate(events):
        args: Mapping[str, Any] = event["args"] if isinstance(event.get("args"), Mapping) else {}
        meta: Mapping[str, Any] = (
            event["tool_call_metadata"] if isinstance(event.get("tool_call_metadata"), Mapping) else {}
        )
        if "action" in event:
            _read_action(stream, i, event, args, meta, source)
        else:
            _read_observation(stream, i, event, meta, source)

    if not stream.out:
        raise InputError("the event stream holds no message, action or observation the model saw", source=source)
    return [parse_message(raw, index=i, source=source) for i, raw in stream.out]


def _read_action(
    stream: _Stream, i: int, event: Mapping[str, Any], args: Mapping[str, Any], meta: Mapping[str, Any], source: str
) -> None:
    """An action: a system or chat message, or a tool call (joining its model response's message if any)."""
    action = expect(event["action"], str, "a string", "action", source, index=i, field="action")
    if action in DROPPED_ACTIONS:
        return
    if action == "system":
        stream.out.append((i, {"role": "system", "content": _user_content(args, event)}))
        return
    if action == "message":
        role = "user" if event["source"] == "user" else "assistant"
        stream.out.append((i, {"role": role, "content": _user_content(args, event)}))
        return
    thought = args.get("thought") if isinstance(args.get("thought"), str) else ""
    tool_call, response = _tool_call(i, event, action, args, meta)
    call_id = tool_call["id"]
    stream.call_for_event[_event_key(event.get("id"), i)] = call_id
    stream.all_calls.add(call_id)
    response_id = meta.get("model_response", {}).get("id") if isinstance(meta.get("model_response"), Mapping) else None
    if isinstance(response_id, str) and response_id in stream.by_response:
        stream.by_response[response_id]["tool_calls"].append(tool_call)
        return
    if response:
        content = response.get("content")
        content = copy.deepcopy(content) if content else None
    else:
        content = thought or None
    message = {"role": "assistant", "content": content, "tool_calls": [tool_call]}
    if isinstance(response_id, str):
        stream.by_response[response_id] = message
    stream.out.append((i, message))


def _tool_call(
    i: int, event: Mapping[str, Any], action: str, args: Mapping[str, Any], meta: Mapping[str, Any]
) -> tuple[dict[str, Any], Mapping[str, Any]]:
    """An action's tool call (from its model response when that holds it, else from the event) and that response."""
    call_id = meta.get("tool_call_id") if isinstance(meta.get("tool_call_id"), str) else None
    response = _response_message(meta) if call_id else {}
    name, arguments = None, None
    calls = response.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, Mapping) and call.get("id") == call_id and isinstance(call.get("function"), Mapping):
            name = call["function"].get("name")
            arguments = call["function"].get("arguments")
    if not call_id:
        call_id = f"openhands-{event.get('id', i)}"
    if not isinstance(name, str) or not name:
        name = meta.get("function_name") if isinstance(meta.get("function_name"), str) else str(action)
    if arguments is None:
        arguments = _args_json(args)
    return call_dict(call_id, name, copy.deepcopy(arguments)), response


def _read_observation(stream: _Stream, i: int, event: Mapping[str, Any], meta: Mapping[str, Any], source: str) -> None:
    """An observation: a tool message answering its call (a call synthesised when it answers none)."""
    kind = expect(event["observation"], str, "a string", "observation", source, index=i, field="observation")
    call_id = meta.get("tool_call_id") if isinstance(meta.get("tool_call_id"), str) else None
    if call_id not in stream.all_calls:
        cause = event.get("cause")
        call_id = stream.call_for_event.get(_event_key(cause, -1)) if cause is not None else None
    text = _observation_text(event)
    if call_id is None or call_id in stream.answered:
        if kind in DROPPED_OBSERVATIONS or not text.strip():
            return
        call_id = f"openhands-obs-{event.get('id', i)}"
        call = call_dict(call_id, str(kind), "{}")
        stream.out.append((i, {"role": "assistant", "content": None, "tool_calls": [call]}))
    stream.answered.add(call_id)
    stream.out.append((i, {"role": "tool", "content": text, "tool_call_id": call_id}))


def load_openhands(text: str, source: str) -> list[Message]:
    """Parse an OpenHands V0 event-stream JSON file into messages; raises ``InputError`` when it is not one."""
    return messages_from_data(parse_json(text, source), source)
