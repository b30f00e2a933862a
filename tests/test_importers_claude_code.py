"""Claude Code session JSONL and Anthropic Messages importers, on real files (tests/fixtures/ATTRIBUTION.md).

The expectations are read from the raw files by this module's own few-line reader (``raw_records``), not by the
importer's code. When ../shared/trajectories is present, the same checks run over its 19 Claude Code files.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, SHARED_TRAJECTORIES

from offline_compress.errors import InputError
from offline_compress.formats import (
    load_history,
    load_history_report,
    load_history_with_format,
    parse_history_report,
    parse_history_with_format,
)
from offline_compress.formats.anthropic import load_anthropic
from offline_compress.formats.claude_code import load_claude_code
from offline_compress.history.messages import Message

SESSION = FIXTURES / "claude-code" / "97b0ffde-ece9-4977-91cb-5c8cdeabdf3f.jsonl.gz"  # manual /compact
SUBAGENT = FIXTURES / "claude-code" / "agent-ad31faa.jsonl.gz"  # parallel calls, 5 damaged lines
MOATLESS_INPUT = FIXTURES / "anthropic" / "moatless-django-15996-input.json"
SHARED_CLAUDE = SHARED_TRAJECTORIES / "M-Thisness__M-Claude"


def raw_lines(path: Path) -> list[str]:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8").split("\n")


def raw_records(lines: list[str]) -> tuple[list[tuple[int, dict[str, Any]]], list[int]]:
    """(line number, record) of the lines that parse, and the numbers of those that do not."""
    records, bad = [], []
    for n, line in enumerate(lines, start=1):
        if line.strip():
            try:
                records.append((n, json.loads(line)))
            except json.JSONDecodeError:
                bad.append(n)
    return records, bad


def thread(records: list[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The user/assistant records of the main thread (all of them in a sub-agent transcript), each uuid once."""
    talk = [r for _, r in records if r.get("type") in ("user", "assistant")]
    main = [r for r in talk if not r.get("isSidechain")] or talk
    out, seen = [], set()
    for r in main:
        if r["uuid"] not in seen:
            seen.add(r["uuid"])
            out.append(r)
    return out


def user_texts(records: list[dict[str, Any]]) -> list[str]:
    """The text of every user record that holds text rather than tool results."""
    out = []
    for r in records:
        if r["type"] != "user":
            continue
        content = r["message"]["content"]
        if isinstance(content, str):
            out.append(content)
        elif any(b["type"] != "tool_result" for b in content):
            out.append("\n".join(b.get("text", f"[{b['type']}]") for b in content if b["type"] != "tool_result"))
    return out


def tool_results(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        b
        for r in records
        if r["type"] == "user" and isinstance(r["message"]["content"], list)
        for b in r["message"]["content"]
        if b["type"] == "tool_result"
    ]


def raw_user_texts(path: Path) -> list[str]:
    """The user text records of a file's thread (for tests/test_formats.py)."""
    return user_texts(thread(raw_records(raw_lines(path))[0]))


def check_pairing(messages: list[Message]) -> list[str]:
    """Every tool message answers a call made before it that has no answer yet; returns the unanswered ids."""
    pending: list[str] = []
    for m in messages:
        for call in m.tool_calls or ():
            assert call.id and call.id not in pending and call.function.name
            pending.append(call.id)
        if m.role == "tool":
            assert m.tool_call_id in pending, f"tool message answers no pending call ({m.tool_call_id})"
            pending.remove(m.tool_call_id)
    return pending


def _calls(messages: list[Message]) -> list[Any]:
    return [c for m in messages for c in m.tool_calls or ()]


# --- the Claude Code fixtures ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [SESSION, SUBAGENT], ids=["session", "sub-agent"])
def test_user_turns_are_exactly_the_user_text_records(path: Path) -> None:
    records = thread(raw_records(raw_lines(path))[0])
    messages = load_history(path)
    assert [m.text for m in messages if m.role == "user"] == user_texts(records)
    # Tool results never become user messages: each one is a tool message with its call's id.
    results = tool_results(records)
    assert results
    tools = [m for m in messages if m.role == "tool"]
    # In line order, with the results of the damaged lines (all of them read: their cut lies after the message).
    lines = raw_lines(path)
    _, bad = raw_records(lines)
    ids = sorted(
        [(n, b["tool_use_id"]) for n, r in raw_records(lines)[0] for b in tool_results([r])]
        + [(n, re.search(r'"tool_use_id":"([^"]+)"', lines[n - 1]).group(1)) for n in bad]  # type: ignore[union-attr]
    )
    assert [m.tool_call_id for m in tools] == [i for _, i in ids]
    users = {m.text for m in messages if m.role == "user"}
    assert not users & {m.text for m in tools}


@pytest.mark.parametrize("path", [SESSION, SUBAGENT], ids=["session", "sub-agent"])
def test_every_tool_use_is_answered_by_its_tool_message(path: Path) -> None:
    records = thread(raw_records(raw_lines(path))[0])
    uses = [b for r in records if r["type"] == "assistant" for b in r["message"]["content"] if b["type"] == "tool_use"]
    messages = load_history(path)
    assert check_pairing(messages) == []  # all answered in these two files
    calls = {c.id: c for c in _calls(messages)}
    assert list(calls) == [b["id"] for b in uses]
    for block in uses:
        assert calls[block["id"]].function.name == block["name"]
        assert json.loads(calls[block["id"]].function.arguments) == block["input"]


def test_parallel_calls_share_one_assistant_message() -> None:
    records = thread(raw_records(raw_lines(SUBAGENT))[0])
    turns: dict[str, list[str]] = {}
    for r in records:
        if r["type"] == "assistant":
            ids = [b["id"] for b in r["message"]["content"] if b["type"] == "tool_use"]
            turns.setdefault(r["message"]["id"], []).extend(ids)
    parallel = [ids for ids in turns.values() if len(ids) > 1]
    assert len(parallel) == 13  # counted in the README of ../shared/trajectories
    messages = load_history(SUBAGENT)
    grouped = [[c.id for c in m.tool_calls] for m in messages if m.tool_calls]
    for ids in parallel:
        assert ids in grouped
    # One assistant message per API response that holds text or calls.
    assert sum(m.role == "assistant" for m in messages) == len(
        {r["message"]["id"] for r in records if r["type"] == "assistant"}
    )


def test_damaged_lines_are_counted_and_their_whole_messages_read() -> None:
    records, bad = raw_records(raw_lines(SUBAGENT))
    assert bad == [31, 50, 51, 69, 77]
    loaded = load_history_report(SUBAGENT)
    assert [s.split(":")[0] for s in loaded.skipped] == [f"line {n}" for n in bad]
    # The cut lies in the harness's toolUseResult copy: each line's tool result is still read.
    assert all("its message is whole" in s for s in loaded.skipped)
    assert len([m for m in loaded.messages if m.role == "tool"]) == len(tool_results(thread(records))) + len(bad)


def _cut(line: str, marker: str) -> str:
    """The line cut short right after ``marker`` (how the author's redaction damaged the published files)."""
    return line[: line.index(marker) + len(marker)] + " [REDACTED_RECIPIENT]"


def test_a_cut_tool_use_line_keeps_its_call_so_the_result_stays_paired() -> None:
    lines = raw_lines(SESSION)
    n, record = next(
        (n, r)
        for n, r in raw_records(lines)[0]
        if r.get("type") == "assistant" and r["message"]["content"][0]["type"] == "tool_use"
    )
    block = record["message"]["content"][0]
    lines[n - 1] = _cut(lines[n - 1], '"input":{"command":"ssh')
    loaded = parse_history_report("\n".join(lines), "cut.jsonl")
    assert loaded.format == "claude-code"
    assert loaded.skipped == (
        f"line {n}: not valid JSON: Unterminated string starting at (column {lines[n - 1].index('ssh')}); "
        f"its tool call {block['id']} ({block['name']}) is kept without arguments",
    )
    (call,) = [c for c in _calls(loaded.messages) if c.id == block["id"]]
    assert call.function.name == block["name"] and call.function.arguments == ""
    assert check_pairing(loaded.messages) == []
    assert len(loaded.messages) == len(load_history(SESSION))


def test_a_cut_tool_result_is_skipped_and_its_call_stays_unanswered() -> None:
    lines = raw_lines(SESSION)
    n, record = next(
        (n, r)
        for n, r in raw_records(lines)[0]
        if r.get("type") == "user" and isinstance(r["message"]["content"], list)
    )
    lines[n - 1] = _cut(lines[n - 1], '"content":"Exit code')
    loaded = parse_history_report("\n".join(lines), "cut.jsonl")
    assert [s.split(":")[0] for s in loaded.skipped] == [f"line {n}"]
    assert check_pairing(loaded.messages) == [record["message"]["content"][0]["tool_use_id"]]
    assert len(loaded.messages) == len(load_history(SESSION)) - 1


def test_sidechain_records_stay_out_of_the_main_thread() -> None:
    session, sub = raw_lines(SESSION), raw_lines(SUBAGENT)
    mixed = session[:40] + [line for line in sub if line.strip()] + session[40:]
    loaded = parse_history_report("\n".join(mixed), "mixed.jsonl")
    assert loaded.messages == load_history(SESSION)
    assert f"{sum(1 for line in sub if line.strip())} sub-agent records left out" in " ".join(loaded.notes)


def test_a_sub_agent_transcript_loads_as_its_own_history() -> None:
    records, _ = raw_records(raw_lines(SUBAGENT))
    assert all(r["isSidechain"] for _, r in records)
    loaded = load_history_report(SUBAGENT)
    first = loaded.messages[0]
    assert first.role == "user" and first.text == records[0][1]["message"]["content"]
    assert any("sub-agent transcript (agent ad31faa)" in note for note in loaded.notes)


def test_the_compaction_summary_stays_in_place() -> None:
    records, _ = raw_records(raw_lines(SESSION))
    boundary = next(n for n, r in records if r.get("subtype") == "compact_boundary")
    summary = next(r for _, r in records if r.get("isCompactSummary"))["message"]["content"]
    loaded = load_history_report(SESSION)
    texts = [m.text for m in loaded.messages]
    at = texts.index(summary)
    assert loaded.messages[at].role == "user"
    assert texts[at - 1].startswith("The Docker service is **running**")  # the last reply before /compact
    assert texts[0] == "ssh into my router"  # everything before the compaction is kept
    assert any(f"line {boundary}: manual, 31469 tokens before" in note for note in loaded.notes)
    assert any("7 file-history-snapshot" in note and "1 summary" in note for note in loaded.notes)


def test_error_results_say_so() -> None:
    records = thread(raw_records(raw_lines(SESSION))[0])
    errors = {b["tool_use_id"]: b["content"] for b in tool_results(records) if b.get("is_error")}
    assert len(errors) == 3
    by_id = {m.tool_call_id: m.text for m in load_history(SESSION) if m.role == "tool"}
    for call_id, text in errors.items():
        # "Exit code N" already marks the error for the outcome classifier; anything else gets "Error: ".
        expected = text if text.startswith("Exit code") else f"Error: {text}"
        assert by_id[call_id] == expected


def test_auto_detection() -> None:
    assert load_history_with_format(SESSION)[0] == "claude-code"
    assert load_history_with_format(SUBAGENT)[0] == "claude-code"
    assert load_history_with_format(MOATLESS_INPUT)[0] == "anthropic"
    # OpenAI-format histories are not taken: a plain list, a list with text parts, and JSONL.
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "text", "text": "yo"}]}]
    assert parse_history_with_format(json.dumps(plain), "x.json")[0] == "openai"
    jsonl = "\n".join(json.dumps(m) for m in plain)
    assert parse_history_with_format(jsonl, "x.jsonl")[0] == "openai"
    with pytest.raises(InputError, match="without tool_use/tool_result blocks"):
        load_anthropic(json.dumps(plain), "x.json")
    with pytest.raises(InputError, match="not a Claude Code record"):
        load_claude_code(jsonl, "x.jsonl")


def test_a_file_without_conversation_names_file_and_line(tmp_path: Path) -> None:
    summary = raw_lines(SESSION)[0]
    assert json.loads(summary)["type"] == "summary"
    path = tmp_path / "empty.jsonl"
    path.write_text(summary + "\n" + _cut(raw_lines(SESSION)[2], '"content":"ssh') + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_history(path, "claude-code")
    assert err.value.source == str(path) and err.value.position == "line 2"
    assert "no readable Claude Code conversation record" in str(err.value) and "1 summary" in str(err.value)
    with pytest.raises(InputError, match=r"claude-code: line 2: no readable Claude Code conversation"):
        load_history(path)


def test_same_input_same_messages() -> None:
    for path in (SESSION, SUBAGENT, MOATLESS_INPUT):
        first, second = load_history_report(path), load_history_report(path)
        assert first == second
        assert [json.dumps(m.to_openai()) for m in first.messages] == [
            json.dumps(m.to_openai()) for m in second.messages
        ]


def test_thinking_and_api_errors_are_left_out() -> None:
    """A turn as Claude Code writes it (one line per block, the same message.id), then a rate-limit notice."""
    base = {"isSidechain": False, "sessionId": "s", "parentUuid": None}

    def line(uuid: str, kind: str, message: dict[str, Any], **extra: Any) -> str:
        return json.dumps({**base, "type": kind, "uuid": uuid, "message": message, **extra})

    turn = {"id": "msg_1", "role": "assistant", "model": "claude-opus-4-5-20251101"}
    text = "\n".join(
        [
            line("u1", "user", {"role": "user", "content": "list the files"}),
            line("a1", "assistant", {**turn, "content": [{"type": "thinking", "thinking": "hmm", "signature": "x"}]}),
            line("a2", "assistant", {**turn, "content": [{"type": "text", "text": "Listing."}]}),
            line(
                "a3", "assistant", {**turn, "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]}
            ),
            line(
                "u2", "user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": ""}]}
            ),
            line("u2", "user", {"role": "user", "content": "a repeated uuid is read once"}),
            line(
                "a4",
                "assistant",
                {
                    "id": "msg_2",
                    "role": "assistant",
                    "model": "<synthetic>",
                    "content": [{"type": "text", "text": "limit"}],
                },
                isApiErrorMessage=True,
            ),
        ]
    )
    loaded = parse_history_report(text, "t.jsonl", "claude-code")
    assert [(m.role, m.text) for m in loaded.messages] == [
        ("user", "list the files"),
        ("assistant", "Listing."),
        ("tool", ""),
    ]
    assert [c.id for c in _calls(loaded.messages[1:2])] == ["t1"]
    notes = " ".join(loaded.notes)
    assert "1 thinking blocks left out" in notes and "1 API-error notices" in notes and "1 records repeat" in notes


# --- Anthropic Messages ------------------------------------------------------------------------------------


def test_moatless_prompt_as_anthropic_messages() -> None:
    raw = json.loads(MOATLESS_INPUT.read_text(encoding="utf-8"))
    messages = load_history(MOATLESS_INPUT, "anthropic")
    assert Counter(m.role for m in messages) == {"user": 1, "assistant": 19, "tool": 19}
    assert messages[0].text == raw[0]["content"] and messages[0].text.startswith("<task>")
    assert check_pairing(messages) == []
    for message, entry in zip(
        (m for m in messages if m.role == "assistant"), (e for e in raw if e["role"] == "assistant")
    ):
        blocks = entry["content"]
        assert message.text == "\n".join(b["text"] for b in blocks if b["type"] == "text")
        uses = [b for b in blocks if b["type"] == "tool_use"]
        assert [(c.id, c.function.name, json.loads(c.function.arguments)) for c in _calls([message])] == [
            (b["id"], b["name"], b["input"]) for b in uses
        ]
    results = [b for e in raw if isinstance(e["content"], list) for b in e["content"] if b["type"] == "tool_result"]
    assert [m.text for m in messages if m.role == "tool"] == [b["content"] for b in results]
    # The request-body shape: a system prompt in front, the same messages after it.
    body = {"model": "claude-3-5-sonnet-20241022", "system": [{"type": "text", "text": "Be brief."}], "messages": raw}
    with_system = parse_history_with_format(json.dumps(body), "body.json")
    assert with_system[0] == "anthropic"
    assert with_system[1][0] == Message(role="system", content="Be brief.") and with_system[1][1:] == messages


def test_anthropic_blocks_errors_images_and_reasoning() -> None:
    body: dict[str, Any] = {
        "system": "sys",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image", "source": {}}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "secret", "signature": "s"},
                    {"type": "tool_use", "id": "a", "name": "Read", "input": {"path": "ü.py"}},
                    {"type": "tool_use", "id": "b", "name": "Read", "input": {"path": "b.py"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "a", "content": "denied", "is_error": True},
                    {"type": "tool_result", "tool_use_id": "b", "content": [{"type": "image", "source": {}}]},
                    {"type": "tool_result", "tool_use_id": "zz", "content": "answers nothing"},
                    {"type": "text", "text": "and now?"},
                ],
            },
        ],
    }
    loaded = parse_history_report(json.dumps(body), "b.json")
    assert loaded.format == "anthropic"
    assert [(m.role, m.text) for m in loaded.messages] == [
        ("system", "sys"),
        ("user", "look\n[image]"),
        ("assistant", ""),
        ("tool", "Error: denied"),
        ("tool", "[image]"),
        ("user", "and now?"),
    ]
    assert _calls(loaded.messages)[0].function.arguments == '{"path": "ü.py"}'
    assert loaded.skipped == ("message 2: tool result for zz answers no pending call; left out",)
    assert loaded.notes == ("1 thinking blocks left out: the model's hidden reasoning, not history text",)
    body["messages"][0]["role"] = "system"
    with pytest.raises(InputError, match="not an Anthropic Messages role") as err:
        load_anthropic(json.dumps(body), "b.json")
    assert err.value.index == 0 and err.value.field == "role"


def test_server_and_mcp_tools_are_calls_with_their_results() -> None:
    """Server tools (web search, web fetch, code execution) and MCP connector tools run during the assistant's turn,
    so their call and result both sit in its content (shapes of the Messages API's content blocks). Each becomes
    a call and a tool message right after it, in words; encrypted content and base64 data are not carried; the
    text after a result starts the next assistant message."""
    body: dict[str, Any] = {
        "system": "sys",
        "messages": [
            {"role": "user", "content": "Why does the build fail? Do not upgrade numpy."},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Searching."},
                    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "np.int"}},
                    {
                        "type": "web_search_tool_result",
                        "tool_use_id": "srvtoolu_1",
                        "content": [
                            {
                                "type": "web_search_result",
                                "title": "NumPy 1.24 release notes",
                                "url": "https://numpy.org/doc/stable/release/1.24.0-notes.html",
                                "encrypted_content": "EqgfCioIARgBIiQ3YTAw",
                                "page_age": "2 years ago",
                            }
                        ],
                    },
                    {"type": "text", "text": "np.int was removed in 1.24."},
                    {
                        "type": "server_tool_use",
                        "id": "srvtoolu_2",
                        "name": "bash_code_execution",
                        "input": {"command": "python -c 'import numpy as np; np.int'"},
                    },
                    {
                        "type": "bash_code_execution_tool_result",
                        "tool_use_id": "srvtoolu_2",
                        "content": {
                            "type": "bash_code_execution_result",
                            "stdout": "",
                            "stderr": "AttributeError: module 'numpy' has no attribute 'int'",
                            "return_code": 1,
                            "content": [{"type": "bash_code_execution_output", "file_id": "file_011"}],
                        },
                    },
                    {
                        "type": "server_tool_use",
                        "id": "srvtoolu_3",
                        "name": "web_fetch",
                        "input": {"url": "https://x.org/a"},
                    },
                    {
                        "type": "web_fetch_tool_result",
                        "tool_use_id": "srvtoolu_3",
                        "content": {"type": "web_fetch_tool_result_error", "error_code": "url_not_accessible"},
                    },
                    {
                        "type": "mcp_tool_use",
                        "id": "mcptoolu_1",
                        "name": "get_issue",
                        "server_name": "tracker",
                        "input": {"id": 7},
                    },
                    {
                        "type": "mcp_tool_result",
                        "tool_use_id": "mcptoolu_1",
                        "is_error": False,
                        "content": [{"type": "text", "text": "Issue 7: pin numpy<1.24"}],
                    },
                    {"type": "text", "text": "Pinning is what the issue asks."},
                ],
            },
        ],
    }
    loaded = parse_history_report(json.dumps(body), "b.json")
    assert loaded.format == "anthropic"
    assert [(m.role, m.text, [c.function.name for c in m.tool_calls or []]) for m in loaded.messages] == [
        ("system", "sys", []),
        ("user", "Why does the build fail? Do not upgrade numpy.", []),
        ("assistant", "Searching.", ["web_search"]),
        ("tool", "NumPy 1.24 release notes\nhttps://numpy.org/doc/stable/release/1.24.0-notes.html", []),
        ("assistant", "np.int was removed in 1.24.", ["bash_code_execution"]),
        ("tool", "Exit code 1\nAttributeError: module 'numpy' has no attribute 'int'", []),
        ("assistant", "", ["web_fetch"]),
        ("tool", "Error: url_not_accessible", []),
        ("assistant", "", ["get_issue"]),
        ("tool", "Issue 7: pin numpy<1.24", []),
        ("assistant", "Pinning is what the issue asks.", []),
    ]
    assert [m.tool_call_id for m in loaded.messages if m.role == "tool"] == [
        "srvtoolu_1",
        "srvtoolu_2",
        "srvtoolu_3",
        "mcptoolu_1",
    ]
    assert check_pairing(loaded.messages) == [] and loaded.skipped == () and loaded.notes == ()

    from offline_compress.compressor import Compressor

    summary = Compressor(None, summary_tokens=None).compress(loaded.messages, keep_last=1)
    assert summary.user_constraints == ["Why does the build fail? Do not upgrade numpy."]
    assert [(f.approach, f.reason_failed) for f in summary.failed_attempts] == [
        ("python -c 'import numpy as np; np.int'", "AttributeError: module 'numpy' has no attribute 'int'"),
        ("web_fetch url=https://x.org/a", "Error: url_not_accessible"),
    ]


# --- every Claude Code file of ../shared/trajectories --------------------------------------------------------


def _shared_claude_files() -> list[Any]:
    if not SHARED_CLAUDE.is_dir():
        return [pytest.param(None, id="shared-absent", marks=pytest.mark.skip(reason=f"{SHARED_CLAUDE} is absent"))]
    return [pytest.param(p, id=p.name) for p in sorted(SHARED_CLAUDE.rglob("*.jsonl.gz"))]


@pytest.mark.parametrize("path", _shared_claude_files())
def test_shared_claude_code_session(path: Path) -> None:
    records, bad = raw_records(raw_lines(path))
    loaded = load_history_report(path)
    assert loaded.format == "claude-code"
    check_pairing(loaded.messages)
    assert [m.text for m in loaded.messages if m.role == "user"] == user_texts(thread(records))
    assert [s.split(":")[0] for s in loaded.skipped if "answers no pending call" not in s] == [f"line {n}" for n in bad]


def test_a_polling_loop_is_one_step_of_the_work_log_with_its_count() -> None:
    """The session polls a background shell dozens of times in a row (BashOutput, no text): the summary shows the
    poll once, with the count read here from the raw records (the longest run of one call with the same input,
    no text beside it, and no error result), and never two such steps in a row."""
    from offline_compress.compressor import Compressor

    records = thread(raw_records(raw_lines(SESSION))[0])
    failed = {
        b["tool_use_id"]
        for r in records
        if isinstance(r["message"]["content"], list)
        for b in r["message"]["content"]
        if b.get("type") == "tool_result" and b.get("is_error")
    }
    calls = []  # (name, input, failed) of each assistant line that is only one call
    for r in records:
        blocks = r["message"]["content"] if r["type"] == "assistant" else None
        if isinstance(blocks, list) and [b["type"] for b in blocks] == ["tool_use"]:
            b = blocks[0]
            calls.append((b["name"], json.dumps(b["input"], sort_keys=True), b["id"] in failed))
        elif r["type"] == "assistant" or not isinstance(r["message"]["content"], list):
            calls.append(None)  # text of the agent or of the user breaks a run
    longest, run = 0, 0
    for k, c in enumerate(calls):
        run = run + 1 if c is not None and k and c == calls[k - 1] else 1
        if c is not None and c[0] == "BashOutput" and not c[2]:
            longest = max(longest, run)
    assert longest >= 40

    summary = Compressor(None, summary_tokens=None).compress(load_history_report(SESSION).messages)
    polls = [s for s in summary.work_log if s.ran == "BashOutput bash_id=d66418" and s.outcome == "success"]
    assert max(s.times for s in polls) == longest
    for a, b in zip(summary.work_log, summary.work_log[1:]):
        assert not ((a.ran, a.outcome) == (b.ran, b.outcome) and not b.said and not b.code)


def test_an_error_that_introduces_its_detail_keeps_it() -> None:
    """Claude Code refused a BashOutput call: "InputValidationError: BashOutput failed due to the following
    issue:", and the issue on the next line. The failed attempt's reason holds both lines (read here from the
    session's raw records)."""
    from offline_compress.compressor import Compressor

    records = thread(raw_records(raw_lines(SESSION))[0])
    refusals = [
        b["content"]
        for r in records
        if isinstance(r["message"]["content"], list)
        for b in r["message"]["content"]
        if b.get("type") == "tool_result" and "InputValidationError" in str(b.get("content"))
    ]
    assert refusals
    first, detail = str(refusals[0]).replace("<tool_use_error>", "").split("\n")[:2]
    assert first.endswith("issue:") and detail.strip()
    summary = Compressor(None, summary_tokens=None).compress(load_history_report(SESSION).messages)
    reasons = [f.reason_failed for f in summary.failed_attempts if "InputValidationError" in f.reason_failed]
    assert reasons and detail.replace("</tool_use_error>", "") in reasons[0]
