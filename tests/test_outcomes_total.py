"""The outcome classifier is total (issue 45): every output, empty or not, with or without an exit code, in every
harness's wrapping, gives an outcome and an error line that is a substring of the output or None. A real Codex
session's ``rg`` that found nothing (``{"output":"","metadata":{"exit_code":1,...}}``) named ``(no output)`` as its
error line, and the invariant, checked by an ``AssertionError`` on user data, failed the agent's step."""

from __future__ import annotations

import json
import random
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from offline_compress.extract.events import extract_tool_events
from offline_compress.extract.outcomes import classify_result
from offline_compress.formats import load_history_with_format
from offline_compress.history.conventions import unwrap_output
from offline_compress.history.messages import as_messages

FIXTURES = Path(__file__).parent / "fixtures"

# Pieces real outputs are made of: the markers the classifier reads, and the wrappings harnesses put around them.
PIECES = [
    "",
    " ",
    "\n",
    "\r\n",
    "ok",
    "Traceback (most recent call last):",
    '  File "/repo/x.py", line 3, in <module>',
    "    assert x == 1",
    "AssertionError",
    "ValueError: bad value",
    "E   assert 1 == 2",
    "bash: foo: command not found",
    "rg: x: No such file or directory",
    "error: something",
    "Error:",
    "fatal: not a git repository",
    "FAILED tests/test_x.py::test_y - AssertionError",
    "========== 1 failed, 2 passed in 0.1s ==========",
    "===== 3 passed in 0.01s =====",
    "FAILED (failures=1)",
    "<returncode>1</returncode>",
    "<returncode>0</returncode>",
    "<output>",
    "</output>",
    "<output_head>",
    "</output_tail>",
    "<elided_chars>12 characters elided</elided_chars>",
    "Exit code: 2",
    "[Command finished with exit code 1]",
    "Process exited with code 127",
    "aborted",
    "String 'x' not found in a/b.py.",
    "No changes were made.",
    "make: *** [all] Error 2",
    "認証エラー: トークンが無効です",
    "😀",
    "\t",
    ":",
]


def _outputs(rng: random.Random) -> str:
    text = "\n".join(rng.choice(PIECES) for _ in range(rng.randint(0, 8)))
    if rng.random() < 0.3:  # Codex's structured output: the text and its exit code as JSON
        code = rng.choice([0, 1, 2, 127, None])
        text = json.dumps({"output": text, "metadata": {"exit_code": code, "duration_seconds": 0.1}})
    return text


def _check(text: str, read_only: bool, exit_code: int | None) -> None:
    body, wrapped = unwrap_output(text)
    outcome, code, line = classify_result(
        body, read_only=read_only, exit_code=wrapped if wrapped is not None else exit_code
    )
    assert outcome in ("success", "error", "partial")
    assert code is None or isinstance(code, int)
    assert line is None or (line and line in body), (text, line)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=40)), max_size=10),
    st.booleans(),
    st.one_of(st.none(), st.integers(-255, 255)),
)
def test_every_output_gives_an_outcome_and_a_verbatim_line(
    pieces: list[str], read_only: bool, code: int | None
) -> None:
    _check("\n".join(pieces), read_only, code)


def test_ten_thousand_generated_outputs_through_the_events() -> None:
    """10,000 outputs (seeded), each the result of a shell call in a function-calling history, read into events as
    the hook reads them: an outcome for each, and an error line that stands in its output."""
    rng = random.Random(45)
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    for k in range(10_000):
        call = {
            "id": f"c{k}",
            "type": "function",
            "function": {"name": "shell", "arguments": '{"command": ["rg", "x"]}'},
        }
        history += [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{k}", "content": _outputs(rng)},
        ]
    messages = as_messages(history)
    events = extract_tool_events(messages)
    assert len(events) == 10_000
    for e in events:
        assert e.outcome in ("success", "error", "partial")
        body, _ = unwrap_output(messages[e.result_index].text)  # type: ignore[index]
        assert e.error_line is None or e.error_line in body


def test_codex_search_that_finds_nothing() -> None:
    """The record that crashed the hook: an ``rg`` with no match, as a Codex CLI rollout holds it."""
    out = json.dumps({"output": "", "metadata": {"exit_code": 1, "duration_seconds": 0.0}})
    body, code = unwrap_output(out)
    assert classify_result(body, read_only=True, exit_code=code) == ("error", 1, None)


def test_every_fixture_record() -> None:
    """The real Claude Code and OpenHands V1 records, the Codex rollout and every other fixture: each event's error
    line stands in its result."""
    seen = 0
    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file() or path.name.upper().startswith(("LICENSE", "ATTRIBUTION", "README")):
            continue
        try:
            _, messages = load_history_with_format(path)
        except Exception:  # not a history (a licence, a phrase list, a fuzz seed): other tests read those
            continue
        for e in extract_tool_events(messages):
            if e.result_index is not None and e.error_line is not None:
                body, _ = unwrap_output(messages[e.result_index].text)
                assert e.error_line in body, (path.name, e.command)
                seen += 1
    assert seen > 50
