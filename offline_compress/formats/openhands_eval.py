"""OpenHands evaluation output: ``output.jsonl`` of its benchmark runs (SWE-bench and others), one
``EvalOutput`` object per instance (``evaluation/utils/shared.py`` in OpenHands V0):

``{instance_id, instruction, history, metadata, test_result, metrics, error, instance}``

* ``history`` is the agent's event list (``event_to_dict`` of each event, as in an event stream), or, in the
  older layout (``compatibility_for_eval_history_pairs``), a list of ``[action, observation]`` pairs, which
  are flattened; the null actions and observations the pairing inserts are dropped. The events then go
  through the OpenHands event importer (``openhands.py``), so the same rules apply.
* ``instruction`` is the task the run was given. It becomes the first ``user`` message (after the system
  prompt) unless the history already has it as a user message.
* ``metadata``, ``test_result`` (the final ``git_patch``), ``metrics`` and ``instance`` are not messages and
  are ignored.

A file holds one object, a JSON list of them, or JSONL (one per line). ``instances`` returns every instance's
messages; ``load_openhands_eval`` returns the messages of the only instance, or of the one named by
``instance``, and raises ``InstanceChoiceError`` (naming the ids) when there are several and none is named.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InputError
from ..history.messages import Message, parse_message
from .openai import expect, json_lines, looks_like_jsonl, parse_json
from .openhands import messages_from_data

FORMAT = "openhands-eval"


class InstanceChoiceError(InputError):
    """An evaluation output with several instances, and none named: the caller must pick one."""


def _records(text: str, source: str) -> list[tuple[str, Any]]:
    """(position for errors, record) of every object in the file: one JSON value, or JSONL."""
    if looks_like_jsonl(text):
        return [(f"line {n}", value) for n, value in json_lines(text, source)]
    data = parse_json(text, source)
    if isinstance(data, list):
        return [(f"item {i}", r) for i, r in enumerate(data)]
    return [("", data)]


def _check_record(record: Any, where: str, source: str) -> Mapping[str, Any]:
    position = where or None
    if not isinstance(record, Mapping):
        raise InputError(
            f"expected an evaluation output object, got {type(record).__name__}", source=source, position=position
        )
    if "instance_id" not in record or "history" not in record:
        missing = [k for k in ("instance_id", "history") if k not in record]
        keys = ", ".join(sorted(map(str, record))[:8]) or "none"
        raise InputError(
            f"not an OpenHands evaluation output: no {' or '.join(map(repr, missing))} (keys: {keys})",
            source=source,
            position=position,
        )
    expect(record["history"], list, "a list", "history", source, position=position, field="history")
    return record


def _events(history: list[Any]) -> list[Any]:
    """The event list: pairs flattened, the pairing's null placeholders dropped."""
    if history and all(isinstance(h, list) and len(h) == 2 for h in history):
        history = [event for pair in history for event in pair]
    return [
        e
        for e in history
        if not (isinstance(e, Mapping) and (e.get("action") == "null" or e.get("observation") == "null"))
    ]


def _with_instruction(messages: list[Message], instruction: Any, source: str) -> list[Message]:
    if not isinstance(instruction, str) or not instruction.strip():
        return messages
    task = instruction.strip()
    if any(m.role == "user" and task in m.text for m in messages):
        return messages
    lead = 0
    while lead < len(messages) and messages[lead].role in ("system", "developer"):
        lead += 1
    user = parse_message({"role": "user", "content": instruction}, index=lead, source=source)
    return [*messages[:lead], user, *messages[lead:]]


def _checked(text: str, source: str) -> list[Mapping[str, Any]]:
    records = [_check_record(record, where, source) for where, record in _records(text, source)]
    if not records:
        raise InputError("an empty list of evaluation outputs", source=source)
    return records


def instance_messages(record: Mapping[str, Any], source: str) -> list[Message]:
    """The messages of one evaluation output object (rules in the module docstring)."""
    events = _events(record["history"])
    instruction = record.get("instruction")
    if not events:
        if isinstance(instruction, str) and instruction.strip():
            return [parse_message({"role": "user", "content": instruction}, index=0, source=source)]
        raise InputError("the history is empty and there is no instruction", source=source, field="history")
    return _with_instruction(messages_from_data(events, source), instruction, source)


def instances(text: str, source: str) -> list[tuple[str, list[Message]]]:
    """(instance_id, messages) of every instance in an evaluation output file, in file order."""
    return [
        (str(r["instance_id"]), instance_messages(r, f"{source} [{r['instance_id']}]")) for r in _checked(text, source)
    ]


def load_openhands_eval(text: str, source: str, instance: str | None = None) -> list[Message]:
    """The messages of the instance named ``instance``, or of the only one in the file."""
    records = _checked(text, source)
    ids = [str(r["instance_id"]) for r in records]
    if instance is None:
        if len(records) > 1:
            shown = ", ".join(ids[:5]) + (f", … ({len(ids)} in all)" if len(ids) > 5 else "")
            raise InstanceChoiceError(
                f"holds {len(ids)} instances ({shown}); name one with --instance ID", source=source
            )
        chosen = records[0]
    else:
        if instance not in ids:
            raise InputError(
                f"no instance {instance!r} (the file holds {', '.join(ids[:5])}{', …' if len(ids) > 5 else ''})",
                source=source,
            )
        chosen = records[ids.index(instance)]
    return instance_messages(chosen, f"{source} [{chosen['instance_id']}]" if len(records) > 1 else source)
