"""The Codex CLI rollout importer on its fixture (hand-made from the published schema: see
tests/fixtures/ATTRIBUTION.md), on damaged input, and against the other formats' files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from offline_compress.errors import InputError
from offline_compress.formats import load_history, load_history_report, parse_history_report
from offline_compress.formats.codex import ABORTED, load_codex
from offline_compress.history.conventions import is_tool_output

FIXTURES = Path(__file__).parent / "fixtures"
(ROLLOUT,) = (FIXTURES / "codex").glob("rollout-*.jsonl")


def _items(path=ROLLOUT):
    """The file's response_item payloads, by the test's own reading."""
    records = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return [r["payload"] for r in records if r.get("type") == "response_item"]


def _text(item):
    return "\n".join(part["text"] for part in item["content"])


def _assert_paired(messages):
    """Every tool message answers a call made before it; every call is answered once."""
    pending = []
    for m in messages:
        pending += [c.id for c in m.tool_calls or ()]
        if m.role == "tool":
            assert m.tool_call_id in pending, m.tool_call_id
            pending.remove(m.tool_call_id)
    assert not pending


def test_the_rollout_loads_as_codex():
    loaded = load_history_report(ROLLOUT)
    assert loaded.format == "codex"
    assert load_history(ROLLOUT, "codex") == loaded.messages
    messages = loaded.messages
    meta = json.loads(ROLLOUT.read_text(encoding="utf-8").split("\n")[0])["payload"]
    assert messages[0].role == "system" and messages[0].content == meta["base_instructions"]["text"]
    assert messages[1].role == "developer"
    _assert_paired(messages)


def test_user_turns_are_exactly_the_files_and_no_tool_output_is_user():
    messages = load_history(ROLLOUT)
    items = _items()
    users = [_text(i) for i in items if i.get("type") == "message" and i["role"] == "user"]
    assert [m.text for m in messages if m.role == "user"] == users
    assert not [i for i, m in enumerate(messages) if m.role == "user" and is_tool_output(messages, i)]
    outputs = [i["output"] for i in items if i.get("type") in ("function_call_output", "custom_tool_call_output")]
    tool_texts = [m.text for m in messages if m.role == "tool" and m.text != ABORTED]
    assert tool_texts == outputs  # the output strings the model read, unchanged (Codex's JSON wrapper included)


def test_calls_are_paired_by_id_and_parallel_calls_share_a_message():
    messages = load_history(ROLLOUT)
    items = _items()
    calls = [i for i in items if i.get("type") in ("function_call", "custom_tool_call")]
    made = [c for m in messages for c in m.tool_calls or ()]
    assert [c.id for c in made] == [c["call_id"] for c in calls]
    # Arguments as the model wrote them: the shell argv JSON string, the raw patch of apply_patch.
    assert [c.function.arguments for c in made] == [c.get("arguments", c.get("input")) for c in calls]
    first = next(m for m in messages if m.tool_calls)
    assert [c.id for c in first.tool_calls] == ["call_L1st4Fil3s", "call_R34dS1ug"]
    assert first.text.startswith("**Locating the slug code**")  # the reasoning summary before the calls
    answers = [m.tool_call_id for m in messages[messages.index(first) + 1 :][:2]]
    assert answers == ["call_L1st4Fil3s", "call_R34dS1ug"]
    patch = next(c for c in made if c.function.name == "apply_patch")
    assert patch.type == "custom"


def test_a_call_without_output_is_answered_aborted_before_the_next_turn():
    messages = load_history(ROLLOUT)
    (i,) = [i for i, m in enumerate(messages) if m.role == "tool" and m.text == ABORTED]
    assert messages[i - 1].tool_calls[0].id == messages[i].tool_call_id == "call_V13wT3st"
    assert messages[i + 1].role == "user" and messages[i + 1].text.startswith("Stop reading the test")


def test_what_is_left_out_is_reported():
    loaded = load_history_report(ROLLOUT)
    assert len(loaded.skipped) == 1 and loaded.skipped[0].startswith("line 22: not JSON")
    notes = " | ".join(loaded.notes)
    for expected in ("event_msg records", "turn_context record", "ghost_snapshot item", "reasoning item"):
        assert expected in notes
    assert "compacted the history" in notes and "1 call without an output" in notes
    assert not any("ghost" in m.text or "gAAAA" in m.text for m in loaded.messages)


def test_damaged_lines_are_skipped_and_counted_never_raised():
    lines = [
        json.dumps({"type": "session_meta", "payload": {"id": "s", "instructions": "Be brief."}}),
        '{"type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "inp',
        "[1, 2]",
        json.dumps({"type": "response_item", "payload": {"type": "function_call", "name": "shell", "arguments": "{}"}}),
        json.dumps({"type": "response_item", "payload": "not an object"}),
        json.dumps({"type": "response_item", "payload": {"type": "mcp_call", "name": "x"}}),
        json.dumps({"type": "something_new", "payload": {}}),
        json.dumps({"type": "response_item", "payload": {"type": "message", "role": "user", "content": "hi"}}),
        json.dumps(
            {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "lost", "output": "x"}}
        ),
    ]
    loaded = parse_history_report("\n".join(lines), "damaged.jsonl", "codex")
    assert [s.split(":")[0] for s in loaded.skipped] == ["line 2", "line 3", "line 4", "line 5", "line 6", "line 7"]
    assert "call_id" in loaded.skipped[2] and "'mcp_call'" in loaded.skipped[4]
    roles = [m.role for m in loaded.messages]
    assert roles == ["system", "user", "assistant", "tool"]  # the orphan output got a call, so it is not the user
    assert loaded.messages[2].tool_calls[0].id == "lost" and any("synthesised" in n for n in loaded.notes)


def test_the_legacy_layout_is_read():
    lines = [
        json.dumps({"id": "0199", "timestamp": "2025-08-01T10:00:00Z", "instructions": "Use the shell."}),
        json.dumps({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]}),
        json.dumps({"record_type": "state"}),
        json.dumps(
            {
                "type": "local_shell_call",
                "call_id": "c1",
                "status": "completed",
                "action": {"type": "exec", "command": ["ls"]},
            }
        ),
        json.dumps({"type": "function_call_output", "call_id": "c1", "output": "a.py"}),
    ]
    loaded = parse_history_report("\n".join(lines), "legacy.jsonl")
    assert loaded.format == "codex" and [m.role for m in loaded.messages] == ["system", "user", "assistant", "tool"]
    call = loaded.messages[2].tool_calls[0]
    assert call.function.name == "local_shell" and json.loads(call.function.arguments)["command"] == ["ls"]


def test_deterministic():
    a, b = load_history_report(ROLLOUT), load_history_report(ROLLOUT)
    assert a == b
    assert [m.model_dump_json() for m in a.messages] == [m.model_dump_json() for m in b.messages]


def _other_fixture_files():
    return sorted(
        p
        for p in FIXTURES.rglob("*")
        if p.is_file() and p.parent.name != "codex" and not p.name.upper().startswith("LICENSE") and p.suffix != ".md"
    )


@pytest.mark.parametrize("path", _other_fixture_files(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_the_codex_reader_takes_no_other_formats_file(path):
    from offline_compress.formats import read_source

    text, source = read_source(path)
    with pytest.raises(InputError):
        load_codex(text, source)


def test_the_summary_reads_the_rollout_as_codex_wrote_it():
    """What the summary says of the rollout, against the file read here: the task is the person's first message,
    not Codex's <environment_context>; a shell call's outcome is its exit code from the JSON the older Codex
    wraps its output in; a freeform apply_patch changed the files its patch names; the call Codex answered
    'aborted' did not run."""
    from offline_compress.compressor import Compressor
    from offline_compress.history.cut import head_end

    items = _items()
    users = [_text(i) for i in items if i.get("type") == "message" and i["role"] == "user"]
    assert users[0].startswith("<environment_context>")
    task = users[1]
    calls = {i["call_id"]: i for i in items if i.get("type") in ("function_call", "custom_tool_call")}
    codes = []  # (command, exit code) of each wrapped shell output, in order
    for i in items:
        if i.get("type") == "function_call_output" and i["output"].startswith("{"):
            command = json.loads(calls[i["call_id"]]["arguments"])["command"][-1]
            codes.append((command, json.loads(i["output"])["metadata"]["exit_code"]))
    patched = [
        line.split(": ", 1)[1]
        for i in calls.values()
        if i["name"] == "apply_patch"
        for line in i["input"].split("\n")
        if line.startswith("*** Update File: ")
    ]
    assert ("python -m pytest -q", 1) in codes and ("python -m pytest -q", 0) in codes and patched

    messages = load_history(ROLLOUT)
    assert messages[head_end(messages) - 1].text == task  # the head keeps the task too, after Codex's context
    summary = Compressor(None, summary_tokens=None).compress(messages, keep_last=0)
    assert task in summary.user_constraints  # the person's turn whole, not Codex's context
    assert [f.path for f in summary.files] == patched and all(f.change == "modified" for f in summary.files)
    shell = [s for s in summary.work_log if s.ran.startswith("shell: ") and s.saw != [ABORTED]]
    assert [s.ran.removeprefix("shell: ") for s in shell] == [c for c, _ in codes]
    for step, (command, code) in zip(shell, codes):
        assert (step.outcome == "success") == (code == 0), command
    failing = [c for c, code in codes if code]
    assert [f.approach for f in summary.failed_attempts] == failing
    # every line it saw of a wrapped output is a line the tool printed, not a piece of the JSON around it
    for s in summary.work_log:
        assert not any(line.startswith('{"output"') for line in s.saw)
    aborted = [s for s in summary.work_log if s.saw == [ABORTED]]
    assert aborted and all(s.outcome == "partial" for s in aborted)
