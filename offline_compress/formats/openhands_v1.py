"""OpenHands software-agent-sdk (V1) event streams: the SDK's persisted ``event-<NNNNN>-<uuid>.json`` files (a
folder, read in file-name order by ``read_source``) or the same events as JSONL (or a JSON list), one event object
``{"kind", "id", "timestamp", "source", ...}`` each.

The messages rebuilt are what the SDK sends the LLM (``LLMConvertibleEvent.events_to_messages`` and each event's
``to_llm_message``, SDK 1.58):

* ``SystemPromptEvent`` -> ``system`` (``system_prompt`` text, then ``dynamic_context`` when present; the tool
  schemas are not messages);
* ``MessageEvent`` -> a message of ``llm_message.role`` with its content and ``extended_content`` appended;
* ``ActionEvent`` -> an ``assistant`` message with the recorded ``tool_call`` (id, name, the arguments string as the
  model produced it) and the ``thought`` text as content; consecutive ActionEvents with the same
  ``llm_response_id`` are the parallel calls of one response: one message, the thought on the first;
* ``ObservationEvent`` -> a ``tool`` message answering ``tool_call_id`` with the observation's ``to_llm_content``:
  for the terminal (``TerminalObservation``, older ``ExecuteBashObservation``) ``prefix + output + suffix``, then
  ``[Current working directory: …]``, ``[Python interpreter: …]`` and ``[Command finished with exit code N]``; for
  every other tool its ``content``; ``[An error occurred during execution.]`` first when ``is_error``;
  ``extended_content`` after; ``UserRejectObservation`` -> ``Action rejected: <reason>``; ``AgentErrorEvent`` -> its
  ``error``. A result that answers no call gets a call synthesised for it (``openhands-v1-obs-<event id>``), so
  tool output never reads as the user.

``Condensation`` (the SDK's own compaction): the events it forgot are still in the stream, and are all read, in
order. Its summary is left out and reported in ``Imported.notes``: the SDK shows the LLM the summary *instead of*
the forgotten events (``Condensation.apply``: forgotten events removed, a ``user`` message with the summary put at
``summary_offset`` of what is left), so no place in the full history is where the LLM saw it beside them.
``load_openhands_v1_view`` gives what the LLM saw at its last call instead: every condensation applied, the summary
at its offset, and consecutive plain user messages joined into one turn as the SDK joins them.

Left out, as the LLM never sees them: ``CondensationRequest``, state updates, pauses, errors of the conversation,
token/streaming/hook/security events (counted in the notes). Not reconstructed: ``reasoning_content`` and thinking
blocks, and the SDK's truncation of command output over 30,000 characters (the stored output is kept whole).
A damaged line (not JSON, not an event, a known event missing what it needs) is skipped and reported as
``line N: why``; in a folder, line N is the N-th event file in name order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import InputError
from ..history.messages import Message, call_dict, parse_message
from .imported import Imported
from .openai import in_line_order, json_loads, readable_lines

FORMAT = "openhands-v1"

ERROR_HEADER = "[An error occurred during execution.]\n"
TERMINAL_OBSERVATIONS = frozenset({"TerminalObservation", "ExecuteBashObservation"})
OBSERVATIONS = frozenset({"ObservationEvent", "UserRejectObservation", "AgentErrorEvent"})
CONVERTIBLE = frozenset({"SystemPromptEvent", "MessageEvent", "ActionEvent", *OBSERVATIONS})
PROBE_LINES = 50
Event = tuple[int, Mapping[str, Any]]  # (line number, event object)


class _Damaged(ValueError):
    """A known event that lacks what its message needs (the line is skipped)."""


# ------------------------------------------------------------------------------------------------ reading


def read_events(text: str, source: str) -> tuple[list[Event], list[str]]:
    """The events of a JSONL stream (or a JSON list), with their line numbers, and the damaged lines skipped.
    ``InputError`` when the text is not an OpenHands V1 event stream at all."""
    if not text.strip():
        raise InputError("the file is empty", source=source)
    stripped = text.lstrip()
    records: list[tuple[int, Any]] = []
    skipped: list[str] = []
    if stripped.startswith("["):
        try:
            data = json_loads(text)
        except (json.JSONDecodeError, RecursionError):
            data = None
        if isinstance(data, list):
            records = [(i, item) for i, item in enumerate(data, start=1)]
    if not records:

        def seen_event() -> bool:  # an event among the lines read so far (else not an event stream: fail fast)
            return any(isinstance(r, Mapping) and "kind" in r for _, r in records)

        for record in readable_lines(text, skipped, PROBE_LINES, seen_event):
            records.append(record)
    events: list[Event] = []
    for lineno, record in records:
        if not isinstance(record, Mapping):
            skipped.append(f"line {lineno}: a {type(record).__name__}, not an event object")
        elif not isinstance(record.get("kind"), str):
            skipped.append(f"line {lineno}: no 'kind' (not an OpenHands V1 event)")
        else:
            events.append((lineno, record))
    if not any(event["kind"] in CONVERTIBLE for _, event in events):
        why = "no SystemPromptEvent, MessageEvent, ActionEvent or ObservationEvent"
        if not events and records and all(isinstance(r, Mapping) and "role" in r for _, r in records):
            why = "chat messages ('role'), not events ('kind')"
        raise InputError(f"not an OpenHands V1 event stream: {why}", source=source)
    return events, skipped


# ------------------------------------------------------------------------------------------ one message each


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def chat_parts(content: Any) -> list[dict[str, Any]]:
    """SDK content blocks (``TextContent``, ``ImageContent``) as chat parts."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    parts: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text":
            parts.append({"type": "text", "text": _text(block.get("text"))})
        elif block.get("type") == "image":
            urls = block.get("image_urls")
            urls = urls if isinstance(urls, list) else ()
            parts += [{"type": "image_url", "image_url": {"url": u}} for u in urls if isinstance(u, str)]
    return parts


def _content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]] | None:
    """One text part as a string, several parts as the list the SDK sends, no text at all as None."""
    if len(parts) == 1 and parts[0]["type"] == "text":
        return str(parts[0]["text"])
    if all(p["type"] == "text" and not p["text"] for p in parts):
        return None
    return parts


def terminal_text(observation: Mapping[str, Any]) -> str:
    """What the terminal tool shows the LLM (``TerminalObservation.to_llm_content``, less the error header)."""
    found = observation.get("metadata")
    meta: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    content = observation.get("content")
    if isinstance(content, list):
        output = "".join(p["text"] for p in chat_parts(content) if p["type"] == "text")
    else:
        output = _text(observation.get("output")) or _text(content)  # the older field names
    text = f"{_text(meta.get('prefix'))}{output}{_text(meta.get('suffix'))}"
    if meta.get("working_dir"):
        text += f"\n[Current working directory: {meta['working_dir']}]"
    if meta.get("py_interpreter_path"):
        text += f"\n[Python interpreter: {meta['py_interpreter_path']}]"
    exit_code = meta.get("exit_code", -1)
    if exit_code != -1 and exit_code is not None:
        text += f"\n[Command finished with exit code {exit_code}]"
    return text


def observation_parts(event: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The content of the ``tool`` message an observation event becomes."""
    kind = event["kind"]
    if kind == "UserRejectObservation":
        return [{"type": "text", "text": f"Action rejected: {_text(event.get('rejection_reason'))}"}]
    if kind == "AgentErrorEvent":
        return [{"type": "text", "text": _text(event.get("error"))}]
    observation = event.get("observation")
    if not isinstance(observation, Mapping):
        raise _Damaged("ObservationEvent without an 'observation' object")
    legacy = not isinstance(observation.get("content"), list)
    error = observation.get("is_error") is True or (legacy and observation.get("error") is True)
    parts = [{"type": "text", "text": ERROR_HEADER}] if error else []
    if _text(observation.get("kind")) in TERMINAL_OBSERVATIONS:
        parts.append({"type": "text", "text": terminal_text(observation)})
    elif not legacy:
        parts += chat_parts(observation["content"])
    else:  # older observations: an error string, else the output, content or message field
        fields = ("error", "output", "content", "message")
        text = next((observation[f] for f in fields if isinstance(observation.get(f), str) and observation[f]), "")
        parts.append({"type": "text", "text": text})
    return parts + chat_parts(event.get("extended_content"))


def _tool_call(event: Mapping[str, Any]) -> dict[str, Any]:
    call = event.get("tool_call")
    if not isinstance(call, Mapping):
        raise _Damaged("ActionEvent without a 'tool_call' object")
    call_id = call.get("id") if isinstance(call.get("id"), str) else event.get("tool_call_id")
    name = call.get("name") if isinstance(call.get("name"), str) else event.get("tool_name")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
        raise _Damaged("ActionEvent whose tool call has no id or name")
    return call_dict(call_id, name, call.get("arguments"))


def _message(event: Mapping[str, Any]) -> dict[str, Any]:
    kind = event["kind"]
    if kind == "SystemPromptEvent":
        prompt = event.get("system_prompt")
        if not isinstance(prompt, Mapping):
            raise _Damaged("SystemPromptEvent without a 'system_prompt'")
        blocks = [prompt] + ([event["dynamic_context"]] if isinstance(event.get("dynamic_context"), Mapping) else [])
        return {"role": "system", "content": _content(chat_parts(blocks)) or ""}
    if kind == "MessageEvent":
        message = event.get("llm_message")
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise _Damaged("MessageEvent without an 'llm_message' with a role")
        parts = chat_parts(message.get("content")) + chat_parts(event.get("extended_content"))
        return {"role": message["role"], "content": _content(parts) or ""}
    if kind == "ActionEvent":
        thought = _content(chat_parts(event.get("thought")))
        return {"role": "assistant", "content": thought, "tool_calls": [_tool_call(event)]}
    call_id = event.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise _Damaged(f"{kind} without a 'tool_call_id'")
    return {"role": "tool", "tool_call_id": call_id, "content": _content(observation_parts(event)) or ""}


# ---------------------------------------------------------------------------------------------- the stream


def _convertible(events: Iterable[Event], skipped: list[str], left_out: dict[str, int]) -> list[tuple[Event, dict]]:
    """Each LLM-convertible event with its raw message; damaged ones go to ``skipped``, others are counted."""
    out: list[tuple[Event, dict]] = []
    for lineno, event in events:
        kind = event["kind"]
        if kind not in CONVERTIBLE:
            left_out[kind] = left_out.get(kind, 0) + 1
            continue
        try:
            out.append(((lineno, event), _message(event)))
        except _Damaged as err:
            skipped.append(f"line {lineno}: {err}")
    return out


def _assemble(items: list[tuple[Event, dict]], *, merge_users: bool = False) -> list[dict[str, Any]]:
    """Raw messages in order: parallel calls of one response joined, orphan results given a call."""
    messages: list[dict[str, Any]] = []
    calls: set[str] = set()
    group: str | None = None  # llm_response_id of the action message last appended
    for (lineno, event), raw in items:
        response = event.get("llm_response_id") if event["kind"] == "ActionEvent" else None
        if response is not None and response == group:
            messages[-1]["tool_calls"] += raw["tool_calls"]
            calls.update(c["id"] for c in raw["tool_calls"])
            continue
        group = response if isinstance(response, str) else None
        if raw["role"] == "tool" and raw["tool_call_id"] not in calls:
            call_id = f"openhands-v1-obs-{event.get('id', lineno)}"
            name = _text(event.get("tool_name")) or event["kind"]
            synthetic = call_dict(call_id, name, "{}")
            messages.append({"role": "assistant", "content": None, "tool_calls": [synthetic]})
            raw = {**raw, "tool_call_id": call_id}
        calls.update(c["id"] for c in raw.get("tool_calls") or ())
        if merge_users and messages and _plain_user(messages[-1]) and _plain_user(raw):
            messages[-1] = {"role": "user", "content": _joined(messages[-1]["content"], raw["content"])}
            continue
        messages.append(raw)
    return messages


def _plain_user(raw: Mapping[str, Any]) -> bool:
    return raw["role"] == "user" and not raw.get("tool_calls") and not raw.get("tool_call_id")


def _joined(a: Any, b: Any) -> list[dict[str, Any]]:
    return chat_parts(a if isinstance(a, list) else [{"type": "text", "text": a or ""}]) + chat_parts(
        b if isinstance(b, list) else [{"type": "text", "text": b or ""}]
    )


def _notes(left_out: Mapping[str, int], condensations: list[str]) -> tuple[str, ...]:
    counted = [f"{n} {kind} event{'s' if n > 1 else ''}: not LLM input" for kind, n in sorted(left_out.items())]
    return tuple(counted + condensations)


def _parsed(raw: list[dict[str, Any]], source: str) -> list[Message]:
    if not raw:
        raise InputError("the event stream holds no event the LLM saw", source=source)
    return [parse_message(m, index=i, source=source) for i, m in enumerate(raw)]


def load_openhands_v1(text: str, source: str) -> Imported:
    """Every LLM-visible event of an OpenHands V1 stream, in order (rules in the module docstring)."""
    events, skipped = read_events(text, source)
    left_out: dict[str, int] = {}
    condensations = [
        f"line {n}: Condensation forgot {len(_list(e.get('forgotten_event_ids')))} earlier events and showed the LLM "
        f"a summary ({len(_text(e.get('summary')))} chars, summary_offset {e.get('summary_offset')}) in their place: "
        "the events are kept here, the summary is left out"
        for n, e in events
        if e["kind"] == "Condensation"
    ]
    items = _convertible(events, skipped, left_out)
    left_out.pop("Condensation", None)
    messages = _parsed(_assemble(items), source)
    return Imported(messages, in_line_order(skipped), _notes(left_out, condensations))


def load_openhands_v1_view(text: str, source: str) -> Imported:
    """What the LLM saw at its last call: each ``Condensation`` applied as the SDK applies it (forgotten events
    removed, the summary as a ``user`` message at ``summary_offset``), consecutive plain user messages joined."""
    events, skipped = read_events(text, source)
    left_out: dict[str, int] = {}
    view: list[tuple[Event, dict]] = []
    applied = 0
    for lineno, event in events:
        if event["kind"] != "Condensation":
            view += _convertible([(lineno, event)], skipped, left_out)
            continue
        forgotten = {str(i) for i in _list(event.get("forgotten_event_ids"))}
        view = [item for item in view if str(item[0][1].get("id")) not in forgotten]
        summary, offset = event.get("summary"), event.get("summary_offset")
        if isinstance(summary, str) and isinstance(offset, int) and offset >= 0:
            marker = {"kind": "CondensationSummaryEvent", "id": f"{event.get('id')}-summary"}
            view.insert(offset, ((lineno, marker), {"role": "user", "content": summary}))
        applied += 1
    notes = _notes(left_out, [f"{applied} condensations applied"] if applied else [])
    return Imported(_parsed(_assemble(view, merge_users=True), source), in_line_order(skipped), notes)


__all__ = ["FORMAT", "load_openhands_v1", "load_openhands_v1_view", "read_events"]
