"""debug-gym run logs: the JSON object a debug-gym agent writes per problem (``{problem, config, tools, log, ...}``;
the viewer's sample upload is called ``.jsonl`` but holds one pretty-printed object).

``log[i] = {step_id, action: {id, name, arguments}, obs, prompt_response_pairs: [{prompt, tool, token_usage}]}``.
The per-step ``prompt`` is not the run's history: debug-gym rebuilds it every step from a state blob (task,
instructions, directory tree, breakpoints, code in view, last evaluation output), a window of the last
``memory_size`` calls and a closing instruction, and resets the window after a rewrite. The whole run is the log
itself, so the conversion is:

* the task: the leading ``system`` messages and the first ``user`` message of the first logged prompt (the state
  blob, which states the task and the instructions). The prompt's other framing lines ("History of command and
  terminal outputs…", the closing instruction) are rebuilt every step and left out;
* each step with an ``action`` -> an ``assistant`` message with that one tool call (the log keeps no assistant
  text) and its ``obs`` -> the ``tool`` result. ``action.arguments`` is an object, serialised as JSON; a string is
  kept when it is JSON and read as a Python literal when it is one (the prompt history writes arguments as Python
  ``repr``), anything else is an ``InputError``. A step without an ``obs`` leaves its call without a result;
* the step without an action (step 0: the environment's reset, an initial evaluation) is left out when its
  ``obs`` is already in the task message (the blob's "Last evaluation output"); otherwise it becomes the result of
  a call named ``reset`` (id ``debug-gym-step-<step_id>``), so that it never reads as the user.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from typing import Any

from ..errors import InputError
from ..history.messages import Message, call_dict, parse_message
from .imported import Imported
from .openai import expect, json_loads, object_list, parse_json

FORMAT = "debug-gym"


def _check_shape(data: Any, source: str) -> list[Mapping[str, Any]]:
    log = object_list(data, "log", source, kind=": not a debug-gym run log", items=" of steps")
    for i, step in enumerate(log):
        if not isinstance(step, Mapping):
            raise InputError(
                f"step is a {type(step).__name__}, expected an object", source=source, position=f"step {i}"
            )
        if "step_id" not in step or "action" not in step:
            missing = " or ".join(repr(k) for k in ("step_id", "action") if k not in step)
            raise InputError(f"not a debug-gym step: no {missing}", source=source, position=f"step {i}")
    return log


def _first_prompt(log: list[Mapping[str, Any]], source: str) -> tuple[int, list[Any]] | None:
    """(step index, messages) of the first prompt the log recorded, if any."""
    for i, step in enumerate(log):
        pairs = step.get("prompt_response_pairs")
        if pairs is None:
            continue
        field = "prompt_response_pairs"
        expect(pairs, list, "a list", field, source, position=f"step {i}", field=field)
        if not pairs:
            continue
        pair = pairs[0]
        prompt = pair.get("prompt") if isinstance(pair, Mapping) else None
        if not isinstance(prompt, list):
            raise InputError(
                f"the prompt is a {type(prompt).__name__}, expected a list of messages",
                source=source,
                position=f"step {i}",
                field="prompt_response_pairs[0].prompt",
            )
        return i, prompt
    return None


def _task_messages(log: list[Mapping[str, Any]], source: str) -> list[Message]:
    found = _first_prompt(log, source)
    if found is None:
        return []
    step, prompt = found
    out: list[Message] = []
    for j, raw in enumerate(prompt):
        if not isinstance(raw, Mapping):
            raise InputError(
                f"a {type(raw).__name__} in the prompt, expected a message",
                source=source,
                position=f"step {step}",
                field=f"prompt_response_pairs[0].prompt[{j}]",
            )
        role = raw.get("role")
        if role in ("system", "developer") or (role == "user" and not any(m.role == "user" for m in out)):
            try:
                out.append(parse_message({"role": role, "content": raw.get("content")}, index=len(out), source=source))
            except InputError as err:
                raise InputError(
                    err.problem,
                    source=source,
                    position=f"step {step}",
                    field=f"prompt_response_pairs[0].prompt[{j}].{err.field or 'content'}",
                ) from None
        if role == "user":
            break
    return out


def arguments_json(value: Any, source: str, where: str) -> str:
    """Tool-call arguments as a JSON string: an object serialised; a string kept when it is JSON, converted when
    it is a Python literal (``{'path': 'a.py'}``)."""
    if value is None:
        return "{}"
    if isinstance(value, Mapping):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, str):
        try:
            json_loads(value)
            return value
        except json.JSONDecodeError:
            pass
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            parsed = None
        if isinstance(parsed, dict):
            return json.dumps(parsed, ensure_ascii=False)
    raise InputError(
        f"'arguments' is {_describe(value)}, expected an object",
        source=source,
        position=where,
        field="action.arguments",
    )


def _describe(value: Any) -> str:
    return "a string that is neither JSON nor a Python dict" if isinstance(value, str) else f"a {type(value).__name__}"


def _obs(step: Mapping[str, Any], source: str, where: str) -> str | None:
    return expect(step.get("obs"), (str, type(None)), "a string", "obs", source, position=where, field="obs")


def _call(step: Mapping[str, Any], source: str, where: str) -> dict[str, Any]:
    action = expect(step["action"], Mapping, "an object", "action", source, position=where, field="action")
    name = action.get("name")
    if not isinstance(name, str) or not name:
        raise InputError("the action has no string 'name'", source=source, position=where, field="action.name")
    call_id = action.get("id")
    if call_id is None:
        call_id = f"debug-gym-step-{step['step_id']}"
    expect(call_id, str, "a string", "id", source, position=where, field="action.id")
    arguments = arguments_json(action.get("arguments"), source, where)
    return call_dict(call_id, name, arguments)


def import_data(data: Any, source: str) -> Imported:
    """The messages of an already-parsed debug-gym log and what was left out (rules in the module docstring).
    Dicts are built fresh, so the messages share no state with ``data``."""
    log = _check_shape(data, source)
    messages = _task_messages(log, source)
    notes: list[str] = []
    if not any(m.role == "user" for m in messages):
        notes.append("the log records no prompt: the task message is missing")
    task_text = "\n".join(m.text for m in messages)
    for i, step in enumerate(log):
        where = f"step {i}"
        obs = _obs(step, source, where)
        if step["action"] is None:
            if not obs or not obs.strip():
                continue
            if obs in task_text:
                notes.append(f"step {step['step_id']}: the output without an action is in the task message already")
                continue
            call = call_dict(f"debug-gym-step-{step['step_id']}", "reset", "{}")
        else:
            call = _call(step, source, where)
        messages.append(
            parse_message(
                {"role": "assistant", "content": None, "tool_calls": [call]}, index=len(messages), source=source
            )
        )
        if obs is not None:
            messages.append(
                parse_message(
                    {"role": "tool", "tool_call_id": call["id"], "content": obs}, index=len(messages), source=source
                )
            )
    if not messages:
        raise InputError("the log holds no prompt, action or output", source=source, field="log")
    return Imported(messages, notes=tuple(notes))


def load_debug_gym(text: str, source: str) -> Imported:
    """Parse a debug-gym run log into messages; raises ``InputError`` when the text is not one."""
    return import_data(parse_json(text, source), source)
