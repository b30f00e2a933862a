"""OpenHands 0.15 litellm completion logs: ``llm_completions/<instance>/<model>-<unix time>.json``, one file per LLM
call, ``{messages, response, args, kwargs: {tools, ...}, timestamp, cost}``.

``messages`` is the exact chat prompt OpenHands sent through litellm, so the last call of a run already holds the
whole history before its final turn. The run = ``messages`` + ``response.choices[0].message`` (the final assistant
turn; its ``finish`` call has no recorded result and stays unanswered). The conversion:

* content given as a list of ``text`` blocks (with or without ``cache_control``) becomes one string, the blocks
  joined by newlines (as ``Message.text`` joins parts); a list that holds other parts (images) stays a list, less
  ``cache_control``;
* ``assistant`` ``tool_calls`` are kept as they are (ids, names and the arguments string the model produced) and
  ``tool`` messages keep their ``tool_call_id`` and ``name``; long outputs are already shortened by OpenHands in
  the text (``[... Observation truncated due to length ...]``, ``<response clipped>``) and stay so;
* ``kwargs.tools`` (the tool schemas), ``usage`` and ``cost`` are not messages.

Detection: an object with a ``messages`` list, a ``response`` object, ``kwargs`` or ``args`` and a ``timestamp``
(the keys litellm's logger writes), so that other ``{messages: [...]}`` files are not taken for one.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ..errors import InputError
from ..history.messages import Message, parse_message
from .openai import expect, parse_json

FORMAT = "openhands-completions"
LOG_KEYS = ("messages", "response", "timestamp")


def _check_shape(data: Any, source: str) -> list[Any]:
    if not isinstance(data, Mapping):
        raise InputError(f"expected a JSON object (a litellm completion log), got {type(data).__name__}", source=source)
    missing = [k for k in LOG_KEYS if k not in data]
    if "kwargs" not in data and "args" not in data:
        missing.append("kwargs")
    if missing:
        raise InputError(
            f"not a litellm completion log: no {' or '.join(map(repr, missing))}", source=source, field=missing[0]
        )
    return expect(data["messages"], list, "a list", "messages", source, field="messages")


def _content(content: Any, index: int, source: str) -> Any:
    """Text blocks as one string; other part lists without ``cache_control``; anything else as it is."""
    if not isinstance(content, list):
        return copy.deepcopy(content)
    for j, part in enumerate(content):
        if not isinstance(part, Mapping):
            raise InputError(
                f"a {type(part).__name__} in 'content', expected a part object",
                source=source,
                index=index,
                field=f"content[{j}]",
            )
    if all(part.get("type") == "text" for part in content):
        texts = []
        for j, part in enumerate(content):
            texts.append(
                expect(part.get("text"), str, "a string", "text", source, index=index, field=f"content[{j}].text")
            )
        return "\n".join(texts)
    return [{k: copy.deepcopy(v) for k, v in part.items() if k != "cache_control"} for part in content]


def _message(raw: Any, index: int, source: str) -> Message:
    if not isinstance(raw, Mapping):
        raise InputError(f"expected a message object, got {type(raw).__name__}", source=source, index=index)
    fields = {k: copy.deepcopy(raw[k]) for k in ("role", "tool_calls", "tool_call_id", "name") if k in raw}
    fields["content"] = _content(raw.get("content"), index, source)
    return parse_message(fields, index=index, source=source)


def _final_message(response: Any, source: str) -> Mapping[str, Any] | None:
    """``response.choices[0].message``, or None when the call returned no choice."""
    choices = expect(response, Mapping, "an object", "response", source, field="response").get("choices")
    expect(choices, list, "a list", "choices", source, field="response.choices")
    if not choices:
        return None
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, Mapping) else None
    return expect(message, Mapping, "an object", "message", source, field="response.choices[0].message")


def messages_from_data(data: Any, source: str) -> list[Message]:
    """The messages of an already-parsed completion log (rules in the module docstring); the input is copied."""
    raw = _check_shape(data, source)
    messages = [_message(m, i, source) for i, m in enumerate(raw)]
    final = _final_message(data["response"], source)
    if final is not None and (final.get("content") or final.get("tool_calls")):
        messages.append(_message({**final, "role": final.get("role") or "assistant"}, len(messages), source))
    if not messages:
        raise InputError("the log holds no message", source=source, field="messages")
    return messages


def load_openhands_completions(text: str, source: str) -> list[Message]:
    """Parse an OpenHands litellm completion log into messages; raises ``InputError`` when it is not one."""
    return messages_from_data(parse_json(text, source), source)
