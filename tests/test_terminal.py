"""Terminal control sequences: tool output is read without them, the words of a person and the history are not
touched (history/terminal.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from offline_compress import Compressor
from offline_compress.formats import load_history
from offline_compress.history.conventions import unwrap_output
from offline_compress.history.messages import as_messages
from offline_compress.history.terminal import plain_tool_outputs, terminal_view

FIXTURES = Path(__file__).parent / "fixtures"
ESC = "\x1b"


@pytest.mark.parametrize(
    ("raw", "plain"),
    [
        ("\x1b[31mERROR\x1b[0m: boom", "ERROR: boom"),
        ("\x1b[1;3;mREDACTED\x1b[0m", "REDACTED"),
        ("\x1b[38;2;153;153;153m⛁ 19k/200k\x1b[39m", "⛁ 19k/200k"),
        ("\x1b[?2026hdone\x1b[?2026l", "done"),
        ("50%\x1b[2K\x1b[1G100%", "50%100%"),
        ("\x1b]8;;https://example.com/a\x07link\x1b]8;;\x07", "link"),
        ("\x1b]0;title\x1b\\text", "text"),
        ("\x1b(Bplain\x1b=", "plain"),
        ("cut short \x1b[3", "cut short "),
        ("ends with \x1b", "ends with "),
    ],
)
def test_terminal_sequences_are_taken_out(raw: str, plain: str) -> None:
    assert terminal_view(raw) == plain


def test_text_without_an_escape_is_the_same_string() -> None:
    text = "grep -n '[0m' log.txt  # a bracket that is not a sequence: [31m stays"
    assert terminal_view(text) is text


def test_only_tool_output_loses_its_codes_and_the_callers_messages_are_untouched() -> None:
    raw = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "keep the \x1b[1mbold\x1b[0m marker as I typed it"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "\x1b[32mPASSED\x1b[0m tests/test_a.py"},
        {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "\x1b[31mFAILED\x1b[0m x"}]},
    ]
    before = copy.deepcopy(raw)
    messages = as_messages(raw)
    out = plain_tool_outputs(messages)
    assert raw == before
    assert ESC in messages[3].text  # the parsed originals keep them too
    assert out[0] is messages[0] and out[2] is messages[2]
    assert out[1] is messages[1] and out[1].text == "keep the \x1b[1mbold\x1b[0m marker as I typed it"
    assert out[3].text == "PASSED tests/test_a.py"
    assert out[4].text == "FAILED x"


def test_a_text_protocol_result_is_tool_output_too() -> None:
    raw = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": "THOUGHT: run it\n\n```bash\npytest -x\n```"},
        {
            "role": "user",
            "content": "<returncode>1</returncode>\n<output>\n\x1b[31mE   KeyError: 'a'\x1b[0m\n</output>",
        },
    ]
    out = plain_tool_outputs(as_messages(raw))
    assert out[3].text == "<returncode>1</returncode>\n<output>\nE   KeyError: 'a'\n</output>"


def test_a_real_coloured_error_reaches_the_summary_as_words() -> None:
    """A Claude Code sub-agent ran a program that logs in colour (tests/fixtures/claude-code/agent-ad31faa,
    message 9: ``Exit code 144`` and ``\\x1b[31mERROR\\x1b[0m`` lines). The failed attempt's reason is its
    first error line as a person reads it, and no escape reaches the summary."""
    messages = load_history(FIXTURES / "claude-code" / "agent-ad31faa.jsonl.gz")[:20]
    assert messages[9].role == "tool" and ESC in messages[9].text
    kept = copy.deepcopy(messages[9].content)
    context = Compressor().compress(messages, keep_last=4)
    assert ESC not in context.model_dump_json()
    reasons = [f.reason_failed for f in context.failed_attempts if "cosmic-applet-battery --version" in f.approach]
    assert reasons and reasons[0].startswith(
        "2026-01-01T06:49:03.099650Z ERROR cosmic_settings_upower_subscription::kbdbacklight: Error listening to "
        "KbdBacklight: org.freedesktop.DBus.Error.UnknownMethod"
    )
    assert messages[9].content == kept


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("  0%  0 KiB\r 68%  34 KiB\r100%  50 KiB\nsaved", "100%  50 KiB\nsaved"),
        ("size= 256KiB  \rsize=1024KiB  \n", "size=1024KiB  \n"),
        ("Parsing 1 commits\rParsed 47\nHEAD is now at dcdbedc", "Parsed 47 commits\nHEAD is now at dcdbedc"),
        ("windows\r\nline endings\r\n", "windows\nline endings\n"),
        ("frame\r", "frame"),
        ("abcdef\r\r\rXY\r\rZ", "ZYcdef"),
    ],
)
def test_a_carriage_return_overwrites_its_line(raw: str, shown: str) -> None:
    assert terminal_view(raw) == shown


def test_a_redrawn_progress_line_is_one_line_of_the_summary() -> None:
    frames = "\r".join(f"{p:3d}% {p * 512:6d} bytes" for p in range(0, 101, 10))
    raw = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fetch the data set."},
        *[
            m
            for i in range(3)
            for m in (
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": f"c{i}",
                            "type": "function",
                            "function": {"name": "bash", "arguments": f'{{"command": "curl -O https://h/d{i}.csv"}}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": f"c{i}", "content": f"{frames}\nsaved d{i}.csv"},
            )
        ],
        {"role": "user", "content": "Now load it."},
    ]
    context = Compressor().compress(raw, keep_last=1)
    saw = [line for step in context.work_log for line in step.saw]
    assert "100%  51200 bytes" in saw and not any("\r" in line or line.startswith("10%") for line in saw)


def test_an_older_codex_output_loses_its_codes_inside_the_json_wrapper() -> None:
    """Older Codex CLI versions send a shell call's output as ``{"output": ..., "metadata": {"exit_code": n}}``,
    where the escapes and returns stand escaped; the summary reads the words, and the exit code is kept."""
    wrapped = json.dumps(
        {"output": "\x1b[1m\x1b[31mE   KeyError: 'slug'\x1b[0m\n 10%\r100%\n", "metadata": {"exit_code": 1}}
    )
    assert ESC not in wrapped
    raw = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the slug bug."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": '{"command": ["pytest"]}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": wrapped},
        {"role": "user", "content": "Go on."},
    ]
    messages = as_messages(raw)
    out = plain_tool_outputs(messages)
    assert messages[3].text == wrapped
    assert unwrap_output(out[3].text) == ("E   KeyError: 'slug'\n100%\n", 1)
    context = Compressor().compress(raw, keep_last=1)
    assert "001b" not in context.model_dump_json()
    assert [f.reason_failed for f in context.failed_attempts] == ["E KeyError: 'slug'"]


def test_a_json_output_that_is_not_the_wrapper_is_left_as_it_is() -> None:
    raw = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Read the config."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"output": 3, "colour": "\\u001b[31m"}'},
    ]
    messages = as_messages(raw)
    assert plain_tool_outputs(messages)[3] is messages[3]
