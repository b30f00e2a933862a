"""Bad input never becomes a traceback (issue 11, item 8): property-based tests over generated histories, valid
and broken, through count, check, compress and the hook, on files (the CLI, in-process) and lists (the API).

The contract: the CLI exits 0 with valid JSON on stdout, or 2 with exactly one stderr line starting
``offline-compress: error:``; the Python API returns a schema-valid summary or raises an
``OfflineCompressError``; the caller's list and dicts are never changed. 1,000 histories run through the
extractive compressor (``Compressor(model=None)``), ten more through the real model. ``PROP_N=200`` runs fewer
(a quick local check), ``PROP_NOSHRINK=1`` skips shrinking a failure (when exploring).
"""

from __future__ import annotations

import copy
import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from offline_compress.cli import main
from offline_compress.compressor import Compressor
from offline_compress.errors import OfflineCompressError
from offline_compress.hook.compaction_hook import CompactionHook
from offline_compress.hook.config import HookConfig
from offline_compress.hook.trigger import evaluate_compression
from offline_compress.summary.schema import CompressedContext

ERROR_PREFIX = "offline-compress: error:"
SUMMARY_MARK = "[CONTEXT_SUMMARY]"

# --- values --------------------------------------------------------------------------------------------------

# Text with what agents really produce: code, unicode, control characters, lone surrogates (JSON allows them).
odd_text = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "\ud800",
        "\udfff x",
        "é\u0301",
        "\u202e",
        "```",
        "<returncode>1</returncode>",
        "[CONTEXT_SUMMARY]\n{}",
        '[CONTEXT_SUMMARY]\n{"user_constraints": 5}',
    ]
)
text = st.one_of(st.text(max_size=120), odd_text, st.integers(0, 300).map(lambda n: "ab " * n))
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=30))
json_values = st.recursive(
    scalars, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4), max_leaves=25
)
# Nested objects as deep as a test can still copy and compare (deeper nesting comes as file text, below).
deep = st.integers(20, 200).map(lambda n: _nested(n))


def _nested(n: int) -> Any:
    value: Any = "bottom"
    for i in range(n):
        value = [value] if i % 2 else {"k": value}
    return value


def _deep_text(n: int) -> str:
    return "[" * n + "]" * n


arguments = st.one_of(
    json_values.map(lambda v: json.dumps({"command": v})),
    st.text(max_size=60),  # not JSON
    st.sampled_from(["", "{", "null", "[1, 2]", '{"command": "ls -la"}', '{"path": "/etc/passwd", "content": "x"}']),
    st.integers(100, 5000).map(_deep_text),  # JSON nested past the parser's recursion limit
    json_values,  # a dict or anything instead of a string
)
good_call = st.fixed_dictionaries(
    {
        "id": st.text(min_size=1, max_size=8),
        "type": st.just("function"),
        "function": st.fixed_dictionaries(
            {
                "name": st.one_of(
                    st.text(min_size=1, max_size=20), st.sampled_from(["bash", "str_replace_editor", "search_codebase"])
                ),
                "arguments": arguments,
            }
        ),
    }
)
bad_call = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {
            "id": st.one_of(st.integers(), st.none()),
            "type": st.sampled_from(["function", "custom"]),
            "function": json_values,
        }
    ),
    st.fixed_dictionaries(
        {"type": st.just("custom"), "custom": st.fixed_dictionaries({"name": st.text(max_size=5), "input": text})}
    ),
)
parts = st.lists(
    st.one_of(
        st.fixed_dictionaries({"type": st.just("text"), "text": text}),
        st.fixed_dictionaries(
            {"type": st.just("image_url"), "image_url": st.fixed_dictionaries({"url": st.text(max_size=20)})}
        ),
        st.dictionaries(st.text(max_size=8), json_values, max_size=3),
        deep.map(lambda d: {"nested": d}),
    ),
    max_size=4,
)
content = st.one_of(text, parts)

valid_message = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["system", "developer", "user"]), "content": content}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": text}),
    st.fixed_dictionaries(
        {
            "role": st.just("assistant"),
            "content": st.one_of(text, st.none()),
            "tool_calls": st.lists(good_call, min_size=1, max_size=3),
        }
    ),
    st.fixed_dictionaries({"role": st.just("tool"), "content": content, "tool_call_id": st.text(max_size=8)}),
    # mini-swe-agent's convention: a fenced command, then its output as the next user message
    st.text(max_size=60).map(lambda cmd: {"role": "assistant", "content": f"THOUGHT: try\n\n```bash\n{cmd}\n```"}),
    st.tuples(st.integers(-2, 130), st.text(max_size=200)).map(
        lambda t: {"role": "user", "content": f"<returncode>{t[0]}</returncode>\n<output>\n{t[1]}\n</output>"}
    ),
)
broken_message = st.one_of(
    json_values,
    st.fixed_dictionaries({"content": content}),  # no role
    st.fixed_dictionaries({"role": st.one_of(st.text(max_size=10), st.integers(), st.none()), "content": content}),
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool"]), "content": st.none()}),
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": json_values}),
    st.fixed_dictionaries(
        {
            "role": st.just("assistant"),
            "content": st.none(),
            "tool_calls": st.one_of(json_values, st.lists(bad_call, min_size=1, max_size=2)),
        }
    ),
    st.fixed_dictionaries({"role": st.just("user"), "content": deep}),
)


def _with_broken(messages: list[Any], broken: Any, where: float) -> list[Any]:
    at = int(len(messages) * where)
    return [*messages[:at], broken, *messages[at:]]


def _with_huge(messages: list[Any], pick: int) -> list[Any]:
    """One history in ten gets a message of 1 or 3 million characters in the middle."""
    if pick >= 2:
        return messages
    return [*messages, {"role": "user", "content": "word " * ((1_000_000, 3_000_000)[pick] // 5)}, *messages]


history = st.one_of(
    st.lists(valid_message, max_size=40),  # valid (some too short to compress)
    st.lists(valid_message, min_size=8, max_size=60),  # valid, long enough to compress
    st.tuples(st.lists(valid_message, max_size=30), broken_message, st.floats(0, 1)).map(lambda t: _with_broken(*t)),
    st.tuples(st.lists(valid_message, max_size=6), st.integers(0, 19)).map(lambda t: _with_huge(*t)),
    json_values,  # not a list of messages at all
    deep,
)

# --- files ---------------------------------------------------------------------------------------------------

layouts = st.sampled_from(["json", "json-ascii", "jsonl", "messages", "mini-swe-agent", "openhands-eval", "events"])
corruptions = st.sampled_from(["none", "none", "none", "gzip", "truncate", "not-utf8", "bom", "deep-wrap", "empty"])


def _encode(value: Any, layout: str, ascii_only: bool) -> bytes:
    dump = lambda v: json.dumps(v, ensure_ascii=ascii_only)  # noqa: E731
    if layout == "jsonl" and isinstance(value, list):
        body = "\n".join(dump(m) for m in value)
    elif layout == "messages":
        body = dump({"messages": value})
    elif layout == "mini-swe-agent":
        body = dump({"info": {"exit_status": "Submitted"}, "messages": value, "trajectory_format": "mini-swe-agent-1"})
    elif layout == "openhands-eval":
        body = dump({"instance_id": "x__y-1", "instruction": "Fix it.", "history": value, "test_result": {}})
    elif layout == "events":  # OpenHands-looking events mixed with the messages
        body = dump(
            [{"id": 1, "source": "user", "action": "message", "args": {"content": "hi"}}]
            + (value if isinstance(value, list) else [value])
        )
    else:
        body = dump(value)
    try:
        return body.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: JSON can only carry it escaped
        return _encode(value, layout, True)


def file_bytes(value: Any, layout: str, corruption: str, cut: float) -> bytes:
    try:
        data = _encode(value, layout, layout == "json-ascii")
    except (RecursionError, ValueError):
        data = b"[" * 100_000
    if corruption == "gzip":
        return gzip.compress(data, mtime=0)
    if corruption == "truncate":
        return data[: int(len(data) * cut)]
    if corruption == "not-utf8":
        at = int(len(data) * cut)
        return data[:at] + b"\xff\xfe\xc3" + data[at:]
    if corruption == "bom":
        return b"\xef\xbb\xbf" + data
    if corruption == "deep-wrap":
        return b"[" * 5000 + data + b"]" * 5000
    if corruption == "empty":
        return b""
    return data


# --- the checks ----------------------------------------------------------------------------------------------


def check_cli(argv: list[str], capsys: pytest.CaptureFixture[str], *, summary: bool = False) -> None:
    code = main(argv)
    out, err = capsys.readouterr()
    event(f"cli {argv[0]}: exit {code}")
    assert "Traceback" not in err
    if code == 0:
        document = json.loads(out)
        if summary:
            CompressedContext.model_validate(document)
        return
    assert code == 2, (code, err)
    errors = [line for line in err.splitlines() if line.startswith(ERROR_PREFIX)]
    assert len(errors) == 1 and err.rstrip("\n").splitlines()[-1] == errors[0], err
    assert out == ""


def _hook_step(value: list[Any], compressor: Any, archive: Path, max_tokens: int) -> list[Any]:
    with CompactionHook(max_tokens, HookConfig(keep_last=3), compressor=compressor, archive_path=archive) as hook:
        return hook.before_step(value)


def check_compacted(value: list[Any], result: list[Any]) -> None:
    """``result`` is ``value`` itself, or holds one summary message (a schema-valid document after the
    marker) and otherwise only messages of ``value``, as they were."""
    if result == value:
        return
    summaries = [
        m
        for m in result
        if isinstance(m, dict)
        and isinstance(m.get("content"), str)
        and m["content"].startswith(SUMMARY_MARK)
        and m not in value
    ]
    assert len(summaries) == 1, result
    CompressedContext.model_validate_json(summaries[0]["content"][len(SUMMARY_MARK) :].lstrip("\n").split("\n", 1)[0])
    assert all(m in value or any(_is_cut_copy(m, v) for v in value) for m in result if m is not summaries[0])


_CUT_NOTE = re.compile(
    r"\n\[… [\d,]+ characters cut here to fit the context window; the whole message is in the archive …\]\n"
)


_LINES_NOTE = re.compile(
    r"\[… [\d,]+ characters cut here and at each … below to fit the context window; the whole message is in the "
    r"archive …\]"
)


def _is_cut_copy(message: Any, original: Any) -> bool:
    """A recent message the hook shortened because it did not fit the window (its last resort): the original's
    keys and values, but texts (a string content, or the text of content parts) that keep the original's start
    and end around one cut note, or (a tool output) some of its lines in order around one note and ``…`` lines."""
    return message != original and _cut_or_same(message, original)


def _lines_of(a: str, b: str) -> bool:
    """``a`` holds lines of ``b`` in their order, the first one first (a line may end in ``…`` where it was cut),
    with one cut note and ``…`` lines where lines were left out."""
    lines = a.split("\n")
    if sum(bool(_LINES_NOTE.fullmatch(x)) for x in lines) != 1:
        return False
    kept, given = [x for x in lines if x != "…" and not _LINES_NOTE.fullmatch(x)], b.split("\n")
    at = 0
    for k, x in enumerate(kept):
        while at < len(given) and not (x == given[at] or (x.endswith("…") and given[at].startswith(x[:-1]))):
            if k == 0:
                return False
            at += 1
        if at == len(given):
            return False
        at += 1
    return True


def _cut_or_same(a: Any, b: Any) -> bool:
    if a == b:
        return True
    if isinstance(a, str) and isinstance(b, str):
        parts = _CUT_NOTE.split(a)
        if len(parts) == 2:
            return b.startswith(parts[0]) and b.endswith(parts[1])
        return _lines_of(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_cut_or_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_cut_or_same(x, y) for x, y in zip(a, b))
    return False


def check_api(value: Any, compressor: Compressor, archive: Path, max_tokens: int) -> None:
    before = copy.deepcopy(value)
    calls = [lambda: compressor.compress(value, keep_last=3), lambda: evaluate_compression(value, max_tokens)]
    if isinstance(value, list):  # the hook's argument is typed a list; what is in it may be anything
        calls.append(lambda: _hook_step(value, compressor, archive, max_tokens))
    for call in calls:
        name = ("api compress", "api evaluate_compression", "api hook")[calls.index(call)]
        try:
            result = call()
        except OfflineCompressError as err:
            event(f"{name}: {type(err).__name__}")
            continue
        event(f"{name}: ok" + (" (compacted)" if isinstance(result, list) and result != value else ""))
        if isinstance(result, CompressedContext):
            CompressedContext.model_validate_json(result.to_json())
        elif isinstance(result, list):  # the hook: the history as it was, or [head, summary, *recent]
            check_compacted(value, result)
    assert value == before  # nothing the caller passed was changed


EXTRACTIVE = Compressor(model=None)


@settings(
    max_examples=int(__import__("os").environ.get("PROP_N", 1000)),
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.generate] if __import__("os").environ.get("PROP_NOSHRINK") else list(Phase),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(value=history, layout=layouts, corruption=corruptions, cut=st.floats(0, 1), max_tokens=st.integers(20, 4000))
def test_no_traceback_on_any_history(
    value: Any,
    layout: str,
    corruption: str,
    cut: float,
    max_tokens: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "history.json"
    path.write_bytes(file_bytes(value, layout, corruption, cut))
    check_cli(["count", str(path)], capsys)
    check_cli(["check", str(path), "--context", str(max_tokens), "--turns-since", "31"], capsys)
    check_cli(["compress", str(path), "--no-model", "--keep-last", "3"], capsys, summary=True)
    check_api(value, EXTRACTIVE, tmp_path / "archive.jsonl", max_tokens)


@settings(
    max_examples=10,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(value=st.lists(valid_message, min_size=6, max_size=14))
def test_the_model_path_on_generated_histories(value: list[Any], compressor: Any, tmp_path: Path) -> None:
    """Through the real model, by way of the hook (one model call per example: 20 examples with two calls each
    took 240 s on the 2-core machine under load, over the ~2 minutes this may take)."""
    before = copy.deepcopy(value)
    try:
        result = _hook_step(value, compressor, tmp_path / "archive.jsonl", 200)
    except OfflineCompressError as err:
        event(f"model hook: {type(err).__name__}")
    else:
        event("model hook: compacted" if result != value else "model hook: kept")
        check_compacted(value, result)
    assert value == before


def test_the_archive_takes_a_lone_surrogate(tmp_path: Path) -> None:
    step = [
        {"role": "assistant", "content": "```bash\nls\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n" + "file.py " * 200},
    ]
    history = [{"role": "system", "content": "Work carefully."}, {"role": "user", "content": "Fix the bug."}]
    history += step * 3 + [{"role": "assistant", "content": "note \udfff x"}] + step * 3
    check_compacted(history, _hook_step(history, EXTRACTIVE, tmp_path / "a.jsonl", 50))


def test_extract_takes_deep_arguments() -> None:
    deep_args = "[" * 5000 + "]" * 5000
    history = [
        {"role": "user", "content": "Fix the bug."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": deep_args}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ] + [{"role": "user", "content": "next"}] * 4
    EXTRACTIVE.compress(history, keep_last=2)
