"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``): JSON Lines ``{"timestamp", "type",
"payload"}``.

The model-visible history is the ``response_item`` records, in order, in the OpenAI Responses-API item shape;
each is read as ``history/messages.py`` reads an item, with two changes a file allows (it has no caller objects
to map back to):

* consecutive call items (``function_call``, ``custom_tool_call``, ``local_shell_call``) are the parallel calls of
  one turn: one assistant message with several tool calls, the text of a reasoning summary just before them as
  its content;
* a ``reasoning`` item with no summary text (encrypted only) adds nothing readable and is left out (counted).

Arguments stay as the model wrote them (a ``shell`` call's ``{"command": [argv], ...}`` JSON string included) and
tool output as the model read it (the ``{"output": ..., "metadata": {"exit_code", ...}}`` JSON string of older
versions, the plain text of newer ones; the extractor reads the JSON one by what it holds,
``history.conventions.unwrap_output``). A call never answered in the file gets the ``aborted`` output Codex
itself sends the model in its place (except the file's last call: its output may still be coming); an output whose
call is not in the file gets a call synthesised for it, so it never reads as the user.

``session_meta`` gives the system prompt: ``base_instructions`` (``{"text": ...}`` or a string), else
``instructions`` (older versions, where it holds the user's AGENTS.md instructions). Left out and counted in
``Imported.notes``: ``event_msg`` (the UI stream, duplicating the history), ``turn_context``, ``ghost_snapshot``
items, and ``compacted`` records (Codex's own compaction: the items it replaced are still in the file and are all
read; its summary is not inserted). The legacy layout (a first line ``{id, timestamp, instructions}`` and bare
items after it, ``{"record_type": "state"}`` lines) is read too. A damaged line (not JSON, not a record, an item
missing what it needs) is skipped and reported as ``line N: why``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ..history.conventions import ABORTED_OUTPUT
from ..history.messages import CALLS, ITEM_TYPES, OUTPUTS, call_dict, chat_message, parse_message
from .imported import Imported
from .openai import in_line_order, readable_lines

FORMAT = "codex"

ABORTED = ABORTED_OUTPUT  # the output Codex sends for a call that never got one
RECORD_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
LEFT_OUT_ITEMS = frozenset({"ghost_snapshot", "compaction", "compaction_summary", "other"})
PROBE_LINES = 50


def _records(text: str, source: str) -> tuple[list[tuple[int, str, Any]], list[str]]:
    """(line, record type, payload) of every readable line, and the damaged lines."""
    records: list[tuple[int, str, Any]] = []
    skipped: list[str] = []
    legacy: bool | None = None  # the layout, decided by the first readable line
    for lineno, obj in readable_lines(text, skipped, PROBE_LINES, lambda: records):
        if not isinstance(obj, Mapping):
            skipped.append(f"line {lineno}: a {type(obj).__name__}, not a record")
            continue
        kind = obj.get("type") if isinstance(obj.get("type"), str) else None  # a list or dict: no known type
        if legacy is None:
            legacy = "id" in obj and "timestamp" in obj and "type" not in obj and "payload" not in obj
            if legacy:
                records.append((lineno, "session_meta", obj))
                continue
        if kind in RECORD_TYPES and "payload" in obj:
            records.append((lineno, str(kind), obj["payload"]))
        elif legacy and kind in ITEM_TYPES | LEFT_OUT_ITEMS:
            records.append((lineno, "response_item", obj))  # the legacy layout: bare items
        elif legacy and obj.get("record_type") == "state":
            records.append((lineno, "state", obj))
        else:
            skipped.append(f"line {lineno}: not a rollout record (type {kind!r})")
    if not any(kind in ("session_meta", "response_item") for _, kind, _ in records):
        raise InputError("not a Codex rollout: no session_meta or response_item record", source=source)
    return records, skipped


def system_prompt(meta: Mapping[str, Any]) -> str | None:
    """The instructions a session started with (``base_instructions``, else ``instructions``), or None."""
    base = meta.get("base_instructions")
    if isinstance(base, Mapping):
        base = base.get("text")
    if isinstance(base, str) and base.strip():
        return base
    legacy = meta.get("instructions")
    return legacy if isinstance(legacy, str) and legacy.strip() else None


def _plural(n: int, what: str) -> str:
    """``n`` and ``what`` with its noun (the first of record, item, call, output) in the plural when n != 1."""
    words = what.split(" ")
    if n != 1:
        at = next((i for i, w in enumerate(words) if w in ("record", "item", "call", "output")), len(words) - 1)
        words[at] += "s"
    return f"{n} {' '.join(words)}"


def _count(counter: dict[str, int], key: str) -> None:
    counter[key] = counter.get(key, 0) + 1


@dataclass
class _Reading:
    """What the rollout's records add up to, gathered record by record."""

    raw: list[dict[str, Any]] = field(default_factory=list)
    left_out: dict[str, int] = field(default_factory=dict)
    prompt: str | None = None
    meta_seen: bool = False
    reasoning: str = ""  # summary text waiting for the message that follows it
    calls: set[str] = field(default_factory=set)
    answered: set[str] = field(default_factory=set)
    synthesised: int = 0
    compactions: list[str] = field(default_factory=list)
    grouping: bool = False  # the last message appended is a call message more calls of the turn may join


def load_codex(text: str, source: str) -> Imported:
    """Parse a Codex CLI rollout JSONL file into messages (rules in the module docstring)."""
    if not text.strip():
        raise InputError("the file is empty", source=source)
    records, skipped = _records(text, source)
    reading = _Reading()
    for lineno, kind, payload in records:
        _read_record(reading, lineno, kind, payload, skipped, source)
    if reading.reasoning:
        reading.raw.append({"role": "assistant", "content": reading.reasoning})
    raw, aborted = _answer_aborted(reading.raw, reading.answered)
    if reading.prompt is not None:
        raw.insert(0, {"role": "system", "content": reading.prompt})
    if not raw:
        raise InputError("the rollout holds no message the model saw", source=source)
    notes = _notes(reading, aborted)
    messages = [parse_message(m, index=i, source=source) for i, m in enumerate(raw)]
    return Imported(messages, in_line_order(skipped), tuple(notes))


def _read_record(reading: _Reading, lineno: int, kind: str, payload: Any, skipped: list[str], source: str) -> None:
    """Take in one record: the system prompt, a compaction, a left-out record, or a history item."""
    if kind == "session_meta":
        if not reading.meta_seen and isinstance(payload, Mapping):
            reading.prompt = system_prompt(payload)
        reading.meta_seen = True
        return
    if kind == "compacted":
        summary = payload.get("message") if isinstance(payload, Mapping) else None
        reading.compactions.append(
            f"line {lineno}: Codex compacted the history here (a summary of {len(summary or '')} chars): the "
            "items it replaced are kept, the summary is left out"
        )
        return
    if kind != "response_item":
        _count(reading.left_out, f"{kind} record")
        return
    if not isinstance(payload, Mapping):
        skipped.append(f"line {lineno}: response_item payload is a {type(payload).__name__}, not an object")
        return
    item_type = payload.get("type") if isinstance(payload.get("type"), str) else None
    if item_type in LEFT_OUT_ITEMS:
        _count(reading.left_out, f"{item_type} item")
        return
    raw = reading.raw
    try:
        message = chat_message(payload, index=len(raw), source=source)
        parse_message(message, index=len(raw), source=source)  # validated now: a bad item is one skipped line
    except InputError as err:
        skipped.append(f"line {lineno}: {err.problem}")
        return
    _add_item(reading, item_type, message)


def _add_item(reading: _Reading, item_type: str | None, message: dict[str, Any]) -> None:
    """Add one valid item: a reasoning summary waits, a turn's calls share a message, an orphan output gets a call."""
    raw = reading.raw
    if item_type == "reasoning":
        if message["content"]:
            reading.reasoning = "\n\n".join(x for x in (reading.reasoning, message["content"]) if x)
        else:
            _count(reading.left_out, "reasoning item without summary text")
        return
    if item_type in CALLS:
        call = message["tool_calls"][0]
        reading.calls.add(call["id"])
        if reading.grouping and not reading.reasoning:
            raw[-1]["tool_calls"].append(call)  # a parallel call of the same turn
        else:
            raw.append({"role": "assistant", "content": reading.reasoning or None, "tool_calls": [call]})
            reading.reasoning, reading.grouping = "", True
        return
    reading.grouping = False
    if reading.reasoning:
        raw.append({"role": "assistant", "content": reading.reasoning})
        reading.reasoning = ""
    if item_type in OUTPUTS:
        call_id = message["tool_call_id"]
        if call_id not in reading.calls:
            name = str(item_type).removesuffix("_output")
            synthetic = call_dict(call_id, name, "")
            raw.append({"role": "assistant", "content": None, "tool_calls": [synthetic]})
            reading.calls.add(call_id)
            reading.synthesised += 1
        reading.answered.add(call_id)
    raw.append(message)


def _notes(reading: _Reading, aborted: int) -> list[str]:
    """What was left out, compacted, answered ``aborted`` or synthesised, for ``Imported.notes``."""
    notes = [f"{_plural(n, what)}: not model input" for what, n in sorted(reading.left_out.items())]
    notes += reading.compactions
    if aborted:
        notes.append(f"{_plural(aborted, 'call')} without an output in the file: answered {ABORTED!r}, as Codex does")
    if reading.synthesised:
        notes.append(
            f"{_plural(reading.synthesised, 'output')} whose call is not in the file: a call synthesised for each"
        )
    return notes


def _answer_aborted(raw: list[dict[str, Any]], answered: set[str]) -> tuple[list[dict[str, Any]], int]:
    """``raw`` with an ``aborted`` tool message for each call no output answers, after the outputs that follow
    its call message (a call in the file's last message excepted: its output may still be coming)."""
    inserts: dict[int, list[dict[str, Any]]] = {}
    for i, message in enumerate(raw[:-1]):
        missing = [c["id"] for c in message.get("tool_calls") or () if c["id"] not in answered]
        if missing:
            j = i + 1
            while j < len(raw) and raw[j]["role"] == "tool":
                j += 1
            inserts.setdefault(j, []).extend({"role": "tool", "tool_call_id": c, "content": ABORTED} for c in missing)
    out: list[dict[str, Any]] = []
    for j, message in enumerate(raw):
        out += inserts.get(j, [])
        out.append(message)
    out += inserts.get(len(raw), [])
    return out, sum(len(v) for v in inserts.values())


__all__ = ["FORMAT", "load_codex", "system_prompt"]
