"""The OpenHands V1 (software-agent-sdk) importer on events the real SDK wrote (scripts/make_openhands_v1_fixture.py),
checked against the chat messages the SDK itself sent its LLM at each step (``llm_inputs.json.gz``)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from offline_compress.errors import InputError
from offline_compress.formats import load_history, load_history_report, parse_history_report, read_source
from offline_compress.formats.openhands_v1 import load_openhands_v1, load_openhands_v1_view

FIXTURE = Path(__file__).parent / "fixtures" / "openhands-v1"
CONVERSATION = FIXTURE / "conversation"
EVENTS_DIR = CONVERSATION / "event_service" / "events"
LLM_INPUTS = json.loads(gzip.decompress((FIXTURE / "llm_inputs.json.gz").read_bytes()))


def _events():
    """The event files (the SDK's, gzip-compressed), by the test's own reading, in file-name order."""
    return [json.loads(gzip.decompress(p.read_bytes())) for p in sorted(EVENTS_DIR.glob("event-*.json.gz"))]


def _jsonl(events):
    return "\n".join(json.dumps(e) for e in events)


def _sdk(message):
    """A chat message the SDK sent, as (role, text, calls, answers)."""
    content = message.get("content")
    text = content if isinstance(content, str) else "\n".join(p["text"] for p in content or () if p["type"] == "text")
    calls = tuple((c["id"], c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or ())
    return message["role"], text, calls, message.get("tool_call_id")


def _ours(message):
    calls = tuple((c.id, c.function.name, c.function.arguments) for c in message.tool_calls or ())
    return message.role, message.text, calls, message.tool_call_id


def _responses(events):
    """Index of the first event of each agent LLM response, in order (the SDK's calls happen just before)."""
    starts, seen = [], set()
    for i, e in enumerate(events):
        rid = e.get("llm_response_id")
        if e["kind"] in ("ActionEvent", "MessageEvent") and e["source"] == "agent" and rid not in seen:
            seen.add(rid)
            starts.append(i)
    return starts


def test_the_folder_loads_as_openhands_v1():
    loaded = load_history_report(CONVERSATION)
    assert loaded.format == "openhands-v1" and not loaded.skipped
    assert load_history(EVENTS_DIR) == loaded.messages  # the events folder itself, or the conversation above it
    assert load_history(CONVERSATION, "openhands-v1") == loaded.messages
    # The same events as JSONL, or as a JSON list, read the same.
    events = _events()
    assert parse_history_report(_jsonl(events), "events.jsonl").messages == loaded.messages
    assert parse_history_report(json.dumps(events), "events.json", "openhands-v1").messages == loaded.messages


def test_the_history_is_what_the_sdk_sent_its_llm_before_the_condensation():
    messages = load_history(CONVERSATION)
    ours = [_ours(m) for m in messages]
    condensed = next(i for i, e in enumerate(_events()) if e["kind"] == "Condensation")
    calls_before = [k for k, start in enumerate(_responses(_events())) if start < condensed]
    assert len(calls_before) == 5
    for k in calls_before:
        sent = [_sdk(m) for m in LLM_INPUTS[k]]
        assert ours[: len(sent)] == sent, k


def test_the_view_is_what_the_sdk_sent_at_every_call():
    events = _events()
    starts = _responses(events)
    assert len(starts) == len(LLM_INPUTS) == 8
    for k, start in enumerate(starts):
        view = load_openhands_v1_view(_jsonl(events[:start]), "prefix.jsonl")
        assert [_ours(m) for m in view.messages] == [_sdk(m) for m in LLM_INPUTS[k]], k
    # After the condensation the SDK showed the summary (joined to the first user turn) instead of 8 events.
    summary = next(e for e in events if e["kind"] == "Condensation")["summary"]
    assert summary in LLM_INPUTS[-1][1]["content"][1]["text"]


def test_the_condensation_summary_is_left_out_and_reported():
    loaded = load_history_report(CONVERSATION)
    condensation = next(e for e in _events() if e["kind"] == "Condensation")
    assert not any(condensation["summary"] in m.text for m in loaded.messages)
    (note,) = [n for n in loaded.notes if "Condensation forgot" in n]
    assert f"forgot {len(condensation['forgotten_event_ids'])} earlier events" in note and "left out" in note
    # The events it forgot are all still there.
    ids = {
        e["tool_call_id"]
        for e in _events()
        if e["id"] in set(condensation["forgotten_event_ids"]) and "tool_call_id" in e
    }
    answered = {m.tool_call_id for m in loaded.messages if m.role == "tool"}
    assert ids and ids <= answered


def test_user_turns_are_exactly_the_files_and_tool_output_is_never_user():
    messages = load_history(CONVERSATION)
    events = _events()
    users = [
        "\n".join(p["text"] for p in e["llm_message"]["content"])
        for e in events
        if e["kind"] == "MessageEvent" and e["source"] == "user"
    ]
    assert [m.text for m in messages if m.role == "user"] == users
    observations = [e["tool_call_id"] for e in events if e["kind"] == "ObservationEvent"]
    assert [m.tool_call_id for m in messages if m.role == "tool"] == observations


def test_calls_are_paired_by_id_and_parallel_calls_share_a_message():
    messages = load_history(CONVERSATION)
    pending = []
    for m in messages:
        pending += [c.id for c in m.tool_calls or ()]
        if m.role == "tool":
            assert m.tool_call_id in pending
            pending.remove(m.tool_call_id)
    assert not pending
    parallel = [[c.id for c in m.tool_calls] for m in messages if m.tool_calls and len(m.tool_calls) > 1]
    assert parallel == [["call_ls", "call_py"], ["call_sub", "call_view"]]
    first = next(m for m in messages if m.tool_calls)
    assert first.text == "I'll look at the workspace and the Python version at once."  # the thought, once
    # The terminal result as the SDK renders it: output, suffix, then the working directory and exit code lines.
    check = next(m for m in messages if m.role == "tool" and m.tool_call_id == "call_check")
    assert check.text.startswith("Traceback") and check.text.endswith("[Command finished with exit code 1]")


def test_damaged_event_files_are_skipped_and_counted(tmp_path):
    folder = tmp_path / "events"
    shutil.copytree(EVENTS_DIR, folder)
    files = sorted(folder.glob("event-*.json.gz"))
    assert len(files) == 24
    files[3].write_bytes(gzip.decompress(files[3].read_bytes())[:50])  # a file cut short (and not compressed)
    files[8].unlink()  # the action of call_check: its observation is left without a call
    (folder / "event-00099-not-an-event.json").write_text('{"role": "user", "content": "hi"}')
    (folder / "event-00100-empty-kind.json").write_bytes(b"\xff\xfe not utf-8")
    loaded = load_history_report(folder)
    assert loaded.format == "openhands-v1"
    assert [s.split(":")[0] for s in loaded.skipped] == ["line 4", "line 24", "line 25"]
    # The observations of the two lost actions (call_py's, cut short, and call_check's, removed) get a call each.
    orphans = [m for m in loaded.messages if m.role == "tool" and m.tool_call_id.startswith("openhands-v1-obs-")]
    assert len(orphans) == 2 and orphans[0].text.startswith("Python 3") and orphans[1].text.startswith("Traceback")
    messages = loaded.messages
    for m in orphans:
        i = messages.index(m)
        assert messages[i - 1].role == "assistant" and messages[i - 1].tool_calls[0].id == m.tool_call_id


def test_older_observation_fields_and_error_events():
    call = {"id": "c1", "name": "execute_bash", "arguments": '{"command": "false"}'}
    edit = {"id": "c2", "name": "str_replace_editor", "arguments": '{"command": "view", "path": "/x"}'}
    events = [
        {
            "kind": "SystemPromptEvent",
            "id": "0",
            "source": "agent",
            "system_prompt": {"type": "text", "text": "sys"},
            "tools": [],
        },
        {
            "kind": "MessageEvent",
            "id": "1",
            "source": "user",
            "llm_message": {"role": "user", "content": [{"type": "text", "text": "go"}]},
            "extended_content": [{"type": "text", "text": "<repo rules>"}],
        },
        {
            "kind": "ActionEvent",
            "id": "2",
            "source": "agent",
            "thought": [{"type": "text", "text": "two"}],
            "tool_call": call,
            "tool_call_id": "c1",
            "tool_name": "execute_bash",
            "llm_response_id": "r1",
        },
        {"kind": "ConversationStateUpdateEvent", "id": "2b", "source": "environment", "key": "x", "value": 1},
        {
            "kind": "ActionEvent",
            "id": "3",
            "source": "agent",
            "thought": [],
            "tool_call": edit,
            "tool_call_id": "c2",
            "tool_name": "str_replace_editor",
            "llm_response_id": "r1",
        },
        {
            "kind": "ObservationEvent",
            "id": "4",
            "source": "environment",
            "tool_call_id": "c1",
            "tool_name": "execute_bash",
            "observation": {
                "kind": "ExecuteBashObservation",
                "output": "",
                "error": False,
                "metadata": {"exit_code": 1, "prefix": "", "suffix": "\n[The command completed with exit code 1.]"},
            },
        },
        {
            "kind": "ObservationEvent",
            "id": "5",
            "source": "environment",
            "tool_call_id": "c2",
            "tool_name": "str_replace_editor",
            "observation": {"kind": "StrReplaceEditorObservation", "output": "", "error": "Invalid path /x"},
        },
        {
            "kind": "ActionEvent",
            "id": "6",
            "source": "agent",
            "thought": [],
            "tool_call": {"id": "c3", "name": "bogus", "arguments": "{}"},
            "tool_call_id": "c3",
            "tool_name": "bogus",
            "llm_response_id": "r2",
        },
        {
            "kind": "AgentErrorEvent",
            "id": "7",
            "source": "agent",
            "tool_call_id": "c3",
            "tool_name": "bogus",
            "error": "Tool 'bogus' not found.",
        },
        {
            "kind": "ActionEvent",
            "id": "8",
            "source": "agent",
            "thought": [],
            "tool_call": {"id": "c4", "name": "execute_bash", "arguments": '{"command": "rm -rf /"}'},
            "tool_call_id": "c4",
            "tool_name": "execute_bash",
            "llm_response_id": "r3",
        },
        {
            "kind": "UserRejectObservation",
            "id": "9",
            "source": "user",
            "tool_call_id": "c4",
            "tool_name": "execute_bash",
            "rejection_reason": "too risky",
        },
    ]
    loaded = parse_history_report(_jsonl(events), "old.jsonl")
    m = loaded.messages
    assert loaded.format == "openhands-v1" and [x.role for x in m] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert m[1].content == [{"type": "text", "text": "go"}, {"type": "text", "text": "<repo rules>"}]
    assert [c.id for c in m[2].tool_calls] == ["c1", "c2"]  # a state update between them changes nothing
    assert m[3].text == "\n[The command completed with exit code 1.]\n[Command finished with exit code 1]"
    assert m[4].text == "Invalid path /x"
    assert m[6].text == "Tool 'bogus' not found." and m[8].text == "Action rejected: too risky"
    assert loaded.notes == ("1 ConversationStateUpdateEvent event: not LLM input",)


def test_deterministic_and_not_other_formats():
    a, b = load_history_report(CONVERSATION), load_history_report(CONVERSATION)
    assert a == b and [m.model_dump_json() for m in a.messages] == [m.model_dump_json() for m in b.messages]
    for text in (
        '[{"role": "user", "content": "hi"}]',
        '{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "x"}',
    ):
        with pytest.raises(InputError, match="not an OpenHands V1 event stream"):
            load_openhands_v1(text, "chat.json")
    codex = next((Path(__file__).parent / "fixtures" / "codex").glob("*.jsonl"))
    with pytest.raises(InputError):
        load_openhands_v1(*read_source(codex))
    with pytest.raises(InputError, match="without OpenHands V1 event files"):
        read_source(FIXTURE.parent / "codex")
