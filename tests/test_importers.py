"""Issue 11, item 6: OpenHands evaluation output, gzip-compressed files of every format, OpenAI SDK objects."""

from __future__ import annotations

import copy
import gzip
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Literal

import pytest
from conftest import FIXTURES, REPO, SHARED_TRAJECTORIES, fixture_files
from pydantic import BaseModel

from offline_compress.cli import main
from offline_compress.errors import InputError
from offline_compress.formats import load_history, load_history_with_format, parse_history_with_format, read_source
from offline_compress.formats.openhands_eval import InstanceChoiceError, instances
from offline_compress.history.messages import Message, MessageCache, as_messages, parse_message

EVAL = FIXTURES / "openhands" / "eval_output.jsonl"
FLASK, TOY = "pallets__flask-4045", "toy__utils-7"


def _records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in EVAL.read_text(encoding="utf-8").splitlines()]


# --- OpenHands evaluation output ---------------------------------------------------------------------------


def test_eval_output_instances_become_histories() -> None:
    got = dict(instances(*read_source(EVAL)))
    assert list(got) == [FLASK, TOY]
    flask = got[FLASK]
    assert [m.role for m in flask[:2]] == ["system", "user"]
    assert flask[1].text == _records()[0]["instruction"]  # already in the history: not added twice
    assert sum(m.role == "user" for m in flask) == 1
    calls = [c.function.name for m in flask for c in m.tool_calls or ()]
    assert calls == ["recall", "execute_bash", "str_replace_editor", "execute_bash", "finish"]
    assert "exit code 1" in flask[-2].text and flask[-2].role == "tool"
    # The older pair layout: flattened, null placeholders gone, the instruction (absent) put first.
    toy = got[TOY]
    assert toy[0].role == "user" and toy[0].text == _records()[1]["instruction"]
    assert Counter(m.role for m in toy) == {"user": 1, "assistant": 3, "tool": 1}


@pytest.mark.parametrize("layout", ["object", "list", "jsonl"])
def test_eval_output_layouts(tmp_path: Path, layout: str) -> None:
    records = _records()
    if layout == "object":
        text, expect = json.dumps(records[0]), FLASK
    elif layout == "list":
        text, expect = json.dumps(records), None
    else:
        text, expect = "\n".join(json.dumps(r) for r in records) + "\n", None
    path = tmp_path / "output.jsonl"
    path.write_text(text, encoding="utf-8")
    reference = dict(instances(*read_source(EVAL)))
    if expect is None:
        with pytest.raises(InstanceChoiceError, match=f"holds 2 instances \\({FLASK}, {TOY}\\)"):
            load_history(path)
        assert load_history(path, instance=TOY) == reference[TOY]
    else:
        fmt, messages = load_history_with_format(path)
        assert (fmt, messages) == ("openhands-eval", reference[FLASK])


def test_eval_output_bad_input_names_the_problem(tmp_path: Path) -> None:
    path = tmp_path / "output.jsonl"
    with pytest.raises(InputError, match="no instance 'nope'"):
        load_history(EVAL, instance="nope")
    with pytest.raises(InputError, match="--instance applies to OpenHands evaluation output"):
        load_history(FIXTURES / "mini-swe-agent" / "github_issue.traj.json", "mini-swe-agent", instance="x")
    broken = _records()[0]
    broken["history"] = "not a list"
    path.write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(InputError, match="'history' is a str"):
        parse_history_with_format(path.read_text(), str(path), "openhands-eval")


def test_cli_reads_one_instance(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compress", str(EVAL), "--instance", FLASK, "--no-model", "--keep-last", "2"]) == 0
    summary = json.loads(capsys.readouterr().out)
    edit = {
        "tool": "str_replace_editor",
        "target": "/workspace/pallets__flask__2.3/src/flask/blueprints.py",
        "outcome": "success",
    }
    assert edit in summary["tool_calls_summary"]
    assert main(["count", str(EVAL)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("offline-compress: error:") and "--instance" in err[0]


# --- gzip ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", fixture_files() + [EVAL], ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_fixture_loads_the_same_gzipped(tmp_path: Path, path: Path) -> None:
    """Detected by the magic number, whatever the name: the same messages and format as the plain file."""
    instance = FLASK if path == EVAL else None
    for name in (path.name + ".gz", path.name):  # a gzip stream under the plain file's name, too
        packed = tmp_path / name
        packed.write_bytes(gzip.compress(path.read_bytes(), mtime=0))
        assert load_history_with_format(packed, instance=instance) == load_history_with_format(path, instance=instance)


def test_committed_gz_fixture() -> None:
    plain = FIXTURES / "mini-swe-agent" / "github_issue.traj.json"
    assert load_history_with_format(plain.with_name(plain.name + ".gz")) == load_history_with_format(plain)


def test_broken_gzip_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = gzip.compress((FIXTURES / "mini-swe-agent" / "github_issue.traj.json").read_bytes())
    cut = tmp_path / "run.traj.json.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="not a readable gzip file") as err:
        load_history(cut)
    assert err.value.source == str(cut)
    assert main(["count", str(cut)]) == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith(f"offline-compress: error: {cut}") and "\n" not in line


def test_gzip_on_stdin() -> None:
    data = gzip.compress((FIXTURES / "mini-swe-agent" / "github_issue.traj.json").read_bytes())
    out = subprocess.run(
        [sys.executable, "-m", "offline_compress.cli", "compress", "-", "--no-model"],
        input=data,
        capture_output=True,
        cwd=REPO,
        check=False,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr.decode()
    assert json.loads(out.stdout)["user_constraints"]


def test_every_mini_swe_agent_run_in_shared_loads() -> None:
    runs = SHARED_TRAJECTORIES / "gruckion__mini-swe-agent"
    if not runs.is_dir():
        pytest.skip(f"{runs} is absent")
    files = sorted(runs.rglob("*.traj.json*"))
    assert len(files) == 163 and sum(f.suffix == ".gz" for f in files) == 150
    for f in files:
        fmt, messages = load_history_with_format(f)
        assert fmt == "mini-swe-agent" and messages[0].role == "system", f


# --- OpenAI SDK message objects -----------------------------------------------------------------------------


class _Function(BaseModel):
    name: str
    arguments: str


class _ToolCall(BaseModel):
    id: str
    type: Literal["function"] = "function"
    function: _Function


class _SdkLikeMessage(BaseModel):
    """The shape of openai.types.chat.ChatCompletionMessage (used when the SDK is not installed)."""

    role: Literal["assistant"]
    content: str | None = None
    refusal: str | None = None
    tool_calls: list[_ToolCall] | None = None


def _sdk_objects(kind: str) -> tuple[Any, Any]:
    """(assistant message with a tool call, a tool call object) from the real SDK or the same-shape model."""
    if kind == "openai":
        openai_chat = pytest.importorskip("openai.types.chat")
        from openai.types.chat.chat_completion_message_function_tool_call import (
            ChatCompletionMessageFunctionToolCall,
            Function,
        )

        call = ChatCompletionMessageFunctionToolCall(
            id="call_1", type="function", function=Function(name="bash", arguments='{"command": "ls"}')
        )
        return openai_chat.ChatCompletionMessage(role="assistant", content=None, tool_calls=[call]), call
    call = _ToolCall(id="call_1", function=_Function(name="bash", arguments='{"command": "ls"}'))
    return _SdkLikeMessage(role="assistant", content=None, tool_calls=[call]), call


@pytest.mark.parametrize("kind", ["openai", "same-shape"])
def test_sdk_message_objects_are_messages(kind: str) -> None:
    message, call = _sdk_objects(kind)
    parsed = parse_message(message, index=0)
    assert parsed.role == "assistant" and parsed.content is None
    assert parsed.tool_calls[0].id == "call_1" and parsed.tool_calls[0].function.name == "bash"
    # A typed-dict param holding SDK objects, mixed with plain dicts.
    history = [
        {"role": "user", "content": "list the files"},
        message,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.py"},
    ]
    before = copy.deepcopy(history)
    parsed_all = as_messages(history)
    assert [m.role for m in parsed_all] == ["user", "assistant", "assistant", "tool"]
    assert parsed_all[2].tool_calls == parsed.tool_calls
    assert history == before and message.tool_calls[0] is call  # nothing was changed in place


@pytest.mark.parametrize("kind", ["openai", "same-shape"])
def test_sdk_objects_in_the_cache_and_compressor(kind: str) -> None:
    from offline_compress.compressor import Compressor

    message, _ = _sdk_objects(kind)
    history: list[Any] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the bug. Do not modify tests."},
    ]
    for i in range(4):
        history += [message, {"role": "tool", "tool_call_id": "call_1", "content": f"out {i}"}]
    cache = MessageCache()
    assert cache.parse(history) == as_messages(history)
    assert cache.parse(history) == as_messages(history)  # a second step: served from the cache
    summary = Compressor(model=None).compress(history, keep_last=2)
    # the SDK objects' tool calls reached the extractor: `ls` ran, and succeeded
    assert [(c.target, c.outcome) for c in summary.tool_calls_summary] == [(".", "success")]


def test_a_model_dump_that_fails_is_an_input_error() -> None:
    class Broken:
        def model_dump(self, **_: Any) -> dict[str, Any]:
            raise TypeError("no")

    with pytest.raises(InputError, match="message 3: cannot read a Broken object"):
        parse_message(Broken(), index=3)


def test_message_objects_pass_through() -> None:
    m = Message(role="user", content="hi")
    assert parse_message(m, index=0) is m
