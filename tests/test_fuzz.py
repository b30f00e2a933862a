"""Fuzz: every importer and every public entry point gives a valid result or a typed ``InputError`` that says
where, never a traceback (issue 22).

* Importers: each format of the registry (``formats.IMPORTERS``, so a new format is covered once it has a
  fixture) on its real fixture, mutated by hypothesis: a field replaced by a value of another type (None, numbers
  with NaN/infinities and integers too long for decimal, text with lone surrogates, lists, dicts, nesting), a field
  deleted, the file cut short, a JSON Lines line damaged, lone surrogates in the text.
* ``compress`` and ``CompactionHook.before_step`` / ``compact`` on OpenAI-format histories built by hypothesis
  (tool-call arguments as JSON text, broken JSON, objects with tuple or int keys, surrogates, huge integers), with a
  window small enough that compaction runs: the caller's list is left as it was.
* The CLI (``compress`` / ``count`` / ``check``) on fuzzed files: exit 0 or 2, never a traceback.

Deterministic (``derandomize=True``) and extractive only (no model).
"""

from __future__ import annotations

import contextlib
import copy
import gzip
import io
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from seed_policy import SEED_POLICY

from offline_compress import CompactionHook, CompressedContext, InputError, count_contradictions
from offline_compress.cli import main
from offline_compress.compressor import Compressor, compress_context
from offline_compress.formats import IMPORTERS, load_history_report, parse_history_report, read_source
from offline_compress.formats.openhands_eval import InstanceChoiceError
from offline_compress.history.messages import Message, parse_message
from offline_compress.hook.config import HookConfig

FIXTURES = Path(__file__).parent / "fixtures"
# Fixture files that are not a history of their own.
NOT_HISTORIES = {
    "openhands-v1/llm_inputs.json.gz": "the chat messages the SDK sent its LLM (test_importers_openhands_v1)",
    "injection/README.md": "describes the injection fixtures",
    "ATTRIBUTION.md": "where the fixtures come from",
}
FUZZ = settings(
    derandomize=True,  # the same examples on every run
    database=None,  # and none replayed from an earlier run
    deadline=None,
    max_examples=40,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
HUGE_DIGITS = 5000  # more digits than Python converts between int and str (4300)


# ----------------------------------------------------------------------------------------- the fixtures


def _fixture_histories() -> Iterator[Path]:
    """Every history among the fixtures: files, and OpenHands V1 event folders (one history, not one per event)."""
    for path in sorted(FIXTURES.rglob("*")):
        rel = path.relative_to(FIXTURES).as_posix()
        if path.is_dir():
            if (path / "event_service" / "events").is_dir():
                yield path
            continue
        if path.name.startswith("LICENSE") or rel in NOT_HISTORIES or "/event_service/" in rel:
            continue
        yield path


@cache
def fixture_formats() -> dict[str, list[Path]]:
    """format -> its fixture histories, each read by ``auto`` (a fixture no format reads fails the test)."""
    found: dict[str, list[Path]] = {}
    for path in _fixture_histories():
        try:
            fmt = load_history_report(path).format
        except InstanceChoiceError:
            fmt = "openhands-eval"  # several instances: the format fits, the caller picks one
        found.setdefault(fmt, []).append(path)
    return found


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*")) if path.is_dir() else path.stat().st_size


@cache
def fixture_text(fmt: str) -> tuple[str, str]:
    """(text, source) of the smallest fixture of ``fmt``, as the importer reads it."""
    return read_source(min(fixture_formats()[fmt], key=_size))


def test_every_format_in_the_registry_has_a_fixture_and_every_fixture_a_format():
    formats = fixture_formats()
    assert sorted(formats) == sorted(IMPORTERS), "a format without a fixture, or a fixture read as no format"
    assert all(formats.values())


# ----------------------------------------------------------------------------------------- values and documents

SURROGATE_TEXT = st.sampled_from(["\ud800", "\udfff", "a\ud83d", "\udc00b", "x\ud800\ud800y", "\\ud800"])
TEXT = st.one_of(st.text(max_size=12), SURROGATE_TEXT, st.sampled_from(["", " ", "\x00", "null", "{", "[1,"]))
# Placeholders that _dumps writes as what json.dumps cannot: an integer too long for decimal, arrays nested about as
# deep as Python's parser goes (900) and deeper than it goes (5000).
HUGE = "\x00huge int\x00"
DEEP = {"\x00deep 900\x00": 900, "\x00deep 5000\x00": 5000}
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([HUGE, *DEEP]),
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple[Any, ...] = (), out: list[tuple[Any, ...]] | None = None) -> list[tuple[Any, ...]]:
    """Every path into ``value`` (keys and list indices), the root excluded."""
    out = [] if out is None else out
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        out.append((*prefix, key))
        _paths(child, (*prefix, key), out)
    return out


def _with(doc: Any, path: tuple[Any, ...], value: Any, delete: bool = False) -> Any:
    """``doc`` with the node at ``path`` replaced by ``value`` (or deleted): copies along the path only."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    out = copy.copy(doc)
    if rest:
        out[head] = _with(doc[head], rest, value, delete)
    elif delete:
        del out[head]
    else:
        out[head] = value
    return out


def _dumps(doc: Any, ascii_only: bool) -> str:
    """JSON as a file holds it; ``ascii_only``: surrogates as escapes (``\\ud800``), else as raw characters."""
    text = json.dumps(doc, ensure_ascii=ascii_only).replace(
        json.dumps(HUGE, ensure_ascii=ascii_only), "9" * HUGE_DIGITS
    )
    for mark, depth in DEEP.items():
        text = text.replace(json.dumps(mark, ensure_ascii=ascii_only), "[" * depth + "]" * depth)
    return text


@cache
def documents(fmt: str) -> tuple[str, list[Any]]:
    """The fixture of ``fmt`` as ("json", [document]), ("jsonl", [one value per line, str where not JSON]) or
    ("text", [the text])."""
    text, _ = fixture_text(fmt)
    try:
        return "json", [json.loads(text)]
    except ValueError:
        pass
    lines: list[Any] = []
    for line in text.splitlines():
        try:
            lines.append(json.loads(line))
        except ValueError:
            lines.append(line)
    if sum(isinstance(line, dict) for line in lines) * 2 >= sum(bool(str(line).strip()) for line in lines):
        return "jsonl", lines
    return "text", [text]


@cache
def document_paths(fmt: str) -> dict[str, list[tuple[Any, ...]]]:
    """The paths into the fixture of ``fmt`` by the key they end in (list items under ``[]``): a mutation picks a
    field name first, so that a key found once in the file is hit as often as one found in every event."""
    kind, doc = documents(fmt)
    by_key: dict[str, list[tuple[Any, ...]]] = {}
    for path in _paths(doc):
        if kind != "json" or len(path) > 1:  # the document itself is not a field
            by_key.setdefault(path[-1] if isinstance(path[-1], str) else "[]", []).append(path)
    return by_key


# Where a draw chooses whether to damage, "no" comes first: hypothesis favours the first choice of a list.


def _somewhere(draw: st.DrawFn, length: int) -> int:
    """A position after the first character of a text of ``length`` characters, spread over it
    (``integers(0, length)`` favours the ends; an empty file is one case, not a quarter of them)."""
    return min(length, 1 + (length - 1) * draw(st.integers(0, 100)) // 100)


@st.composite
def mutated(draw: st.DrawFn, fmt: str) -> str:
    """The fixture of ``fmt`` with one to three mutations, as text."""
    kind, doc = documents(fmt)
    paths = document_paths(fmt)
    for _ in range(draw(st.sampled_from([1, 1, 2, 3])) if kind != "text" and paths else 0):
        key = draw(st.sampled_from(sorted(paths, key=lambda k: (k == "[]", k))))  # list items: the last choice
        how = draw(st.sampled_from(["replace", "replace", "delete", "everywhere"]))
        # "everywhere": every occurrence of the field gets the same value (a writer that types it differently)
        everywhere = how == "everywhere" and key != "[]"
        chosen = paths[key][:200] if everywhere else [draw(st.sampled_from(paths[key]))]
        value = draw(VALUES)
        for path in chosen:
            try:
                doc = _with(doc, path, value, delete=how == "delete")
            except (KeyError, IndexError, TypeError):  # an earlier mutation moved or removed this path
                pass
    ascii_only = draw(st.booleans())
    if kind == "json":
        text = _dumps(doc[0], ascii_only)
    elif kind == "jsonl":
        lines = [line if isinstance(line, str) else _dumps(line, ascii_only) for line in doc]
        if draw(st.booleans()) and lines:  # damage a line: cut it, or put text that is not JSON in its place
            i = draw(st.integers(0, len(lines) - 1))
            lines[i] = lines[i][: _somewhere(draw, len(lines[i]))] if draw(st.booleans()) else draw(TEXT)
        text = "\n".join(lines)
    else:
        text = doc[0]
        at = _somewhere(draw, len(text))
        text = text[:at] + draw(TEXT) + text[at:]
    if draw(st.sampled_from([False] * 4 + [True])):  # the file cut short
        text = text[: _somewhere(draw, len(text))]
    return text


# ----------------------------------------------------------------------------------------- the checks


def _assert_valid_messages(messages: list[Any]) -> None:
    for i, message in enumerate(messages):
        assert isinstance(message, Message)
        raw = message.to_openai()
        json.dumps(raw, ensure_ascii=False).encode("utf-8")
        parse_message(raw, index=i)  # valid as input again


def _assert_read_or_input_error(text: str, source: str, fmt: str, instance: str | None = None) -> None:
    try:
        loaded = parse_history_report(text, source, fmt, instance=instance)
    except InputError as err:
        assert err.source and err.source.startswith(source), f"an InputError that does not say where: {err!r}"
        return
    assert loaded.format in IMPORTERS
    _assert_valid_messages(loaded.messages)
    assert all(isinstance(s, str) for s in (*loaded.skipped, *loaded.notes))


EVAL_INSTANCES = [None, "pallets__flask-4045", "toy__utils-7"]  # the instances of openhands/eval_output.jsonl


@pytest.mark.parametrize("fmt", sorted(IMPORTERS))
def test_a_mutated_fixture_is_read_or_is_an_input_error(fmt):
    _, source = fixture_text(fmt)

    # The two largest fixtures (about 2 MB of JSON each) get fewer examples: the whole file stays under a minute.
    @settings(FUZZ, max_examples=25 if fmt in ("moatless", "debug-gym") else 100)
    @given(text=mutated(fmt), auto=st.booleans(), instance=st.sampled_from(EVAL_INSTANCES))
    def check(text: str, auto: bool, instance: str | None) -> None:
        _assert_read_or_input_error(text, source, fmt, instance if fmt == "openhands-eval" else None)
        if auto:  # every other importer meets this input too
            _assert_read_or_input_error(text, source, "auto")

    check()


# ----------------------------------------------------------------------------------------- compress and the hook

ARGUMENT_OBJECTS = st.recursive(
    st.one_of(SCALARS, st.binary(max_size=3), st.frozensets(st.integers(0, 3), max_size=2)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(TEXT, st.integers(-3, 3), st.tuples(TEXT, st.integers(0, 2))), inner, max_size=3),
    ),
    max_leaves=6,
)


def _nested(depth: int) -> list[Any]:
    out: list[Any] = []
    for _ in range(depth):
        out = [out]
    return out


def _huge(value: Any) -> Any:
    """``value`` with each HUGE placeholder as an integer of more digits than Python writes in decimal, and each
    DEEP one as lists nested 100 deep (deeper ones would break the test's own deepcopy: see the test below)."""
    if value == HUGE:
        return 10**HUGE_DIGITS
    if isinstance(value, str) and value in DEEP:
        return _nested(100)
    if isinstance(value, dict):
        return {k: _huge(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_huge(v) for v in value]
    return value


ARGUMENTS = st.one_of(
    st.builds(lambda v: json.dumps(v), VALUES),  # JSON text, surrogates as escapes
    st.builds(lambda v: _dumps(v, False), VALUES),  # raw surrogates, NaN, a 5000-digit number
    TEXT,  # not JSON
    st.sampled_from(['{"command": "\\ud800"}', '{"a": "\\\\ud800"}', "{('a', 1): 2}", "{'x': {1, 2}}", '{"a": 1']),
    st.sampled_from(["[" * 5000 + "]" * 5000, '{"command": ' + "[" * 900 + "]" * 900 + "}"]),  # deeper than Python
    st.builds(_huge, ARGUMENT_OBJECTS),  # an object, as some agents keep them: tuple or int keys, nesting
    st.none(),
)
TOOL_CALL = st.fixed_dictionaries(
    {
        "id": st.one_of(TEXT, st.sampled_from(["call_1", "call_2"])),
        "type": st.just("function"),
        "function": st.fixed_dictionaries({"name": TEXT, "arguments": ARGUMENTS}),
    }
)
PART = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": TEXT}),
    st.fixed_dictionaries({"type": st.just("image_url"), "image_url": st.fixed_dictionaries({"url": TEXT})}),
    st.dictionaries(TEXT, VALUES, max_size=2),
)
CONTENT = st.one_of(TEXT, st.lists(PART, max_size=3))
MESSAGE = st.one_of(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "system"]), "content": CONTENT},
        optional={"name": TEXT},
    ),
    st.fixed_dictionaries(
        {
            "role": st.just("assistant"),
            "content": st.one_of(st.none(), TEXT),
            "tool_calls": st.lists(TOOL_CALL, min_size=1, max_size=2),
        }
    ),
    st.fixed_dictionaries(
        {"role": st.just("tool"), "content": CONTENT},
        optional={"tool_call_id": st.one_of(TEXT, st.sampled_from(["call_1", "call_2"]))},
    ),
)
# Mostly messages that can be read, so that most examples get as far as a summary; now and then one that cannot.
BROKEN = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["bogus", "\ud800", "", None]), "content": TEXT}),
    st.fixed_dictionaries({"role": st.just("assistant"), "tool_calls": st.just([{"id": "x", "function": {}}])}),
    st.fixed_dictionaries(
        {"role": st.just("user"), "content": st.one_of(st.none(), st.binary(max_size=4), st.builds(_huge, VALUES))}
    ),
    st.builds(lambda v: v, VALUES),
)
MESSAGES = st.lists(MESSAGE, max_size=6)


def _step(i: int) -> list[dict[str, Any]]:
    """A well-formed call and its long output: what makes the history long enough to compact."""
    call = {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": "ls"})}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": f"output {i} " * 150},
    ]


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    head = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "Fix the bug in a.py."}]
    fuzzed = draw(MESSAGES)
    if draw(st.sampled_from([False] * 5 + [True])):
        fuzzed.insert(draw(st.integers(0, len(fuzzed))), draw(BROKEN))
    at = draw(st.integers(0, len(fuzzed)))
    return head + fuzzed[:at] + _step(0) + _step(1) + fuzzed[at:] + _step(2) + _step(3)


@cache
def extractive() -> Compressor:
    return Compressor(None)


def _assert_utf8(value: Any) -> None:
    json.dumps(value, ensure_ascii=False).encode("utf-8")


def _assert_compressed(context: Any) -> None:
    assert isinstance(context, CompressedContext)
    text = context.model_dump_json()
    text.encode("utf-8")
    assert CompressedContext.model_validate(json.loads(text)) is not None


def _nodes(value: Any) -> Iterator[Any]:
    """``value`` and every container, key and value inside it (iteratively: arguments may nest 5000 deep)."""
    stack = [value]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, dict):
            stack += [*node.keys(), *node.values()]
        elif isinstance(node, (list, tuple)):
            stack += node


def _assert_history_out(out: list[Any], given_messages: list[Any]) -> None:
    """What the hook returns holds the caller's own objects (passed through as given, lone surrogates and all) and
    text of ours (the summary, a shortened copy of a long message): every string of ours encodes as UTF-8."""
    theirs = {id(node) for node in _nodes(given_messages)}
    assert isinstance(out, list) and out
    stack = [m for m in out if id(m) not in theirs]
    while stack:
        node = stack.pop()
        if id(node) in theirs:
            continue
        if isinstance(node, str):
            node.encode("utf-8")
        elif isinstance(node, dict):
            stack += [*node.keys(), *node.values()]
        elif isinstance(node, (list, tuple)):
            stack += node


@settings(FUZZ, max_examples=200)
@given(history=histories(), keep_last=st.integers(1, 4))
def test_compress_gives_a_summary_or_an_input_error(history, keep_last):
    snapshot = copy.deepcopy(history)
    try:
        context = compress_context(history, compressor=extractive(), keep_last=keep_last)
    except InputError as err:
        assert err.source
        event(f"InputError {err.field}: {err.problem[:30]}")
    else:
        _assert_compressed(context)
        event("compressed")
        assert count_contradictions(history) is not None
    assert history == snapshot, "the caller's messages were changed"  # NaN: deepcopy keeps the float, == its identity


@settings(FUZZ, max_examples=200)
@given(history=histories(), forced=st.booleans())
def test_the_hook_gives_a_history_or_an_input_error(history, forced):
    snapshot = copy.deepcopy(history)
    with tempfile.TemporaryDirectory() as folder:
        # A window the fuzzed history is well over: compaction runs (or says why it cannot).
        with CompactionHook(1500, archive_path=Path(folder) / "a.sqlite3", compressor=extractive()) as hook:
            try:
                out = hook.compact(history) if forced else hook.before_step(history)
            except InputError as err:
                assert err.source
                event(f"InputError {err.field}: {err.problem[:30]}")
            else:
                _assert_history_out(out, history)
                event(hook.metrics[-1].outcome if hook.metrics else "no compaction")
                if hook.summary is not None:
                    _assert_compressed(hook.summary)
    assert history == snapshot, "the caller's messages were changed"  # NaN: deepcopy keeps the float, == its identity


@pytest.mark.parametrize(
    "arguments",
    [
        '{"command": "\\ud800"}',  # the escape of a lone surrogate, in JSON text
        '{"command": "\ud800"}',  # the lone surrogate itself
        {"command": "\ud800"},
        {("a", 1): "x"},  # TypeError: keys must be str, ... (before)
        {1: "a", "b": 2},  # TypeError: '<' not supported between str and int (sort_keys, before)
        {"n": 10**HUGE_DIGITS},
    ],
    ids=["escaped-surrogate", "surrogate", "surrogate-object", "tuple-key", "mixed-keys", "huge-int"],
)
def test_the_arguments_of_issue_22_give_a_summary_and_a_compaction(arguments, tmp_path):
    history = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "Fix the bug in a.py."}]
    for i in range(6):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": arguments}}
        history += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"Error: failed {i} " + "x " * 200},
        ]
    snapshot = copy.deepcopy(history)
    context = compress_context(history, compressor=extractive(), keep_last=2)
    _assert_compressed(context)
    assert "\ud800" not in context.model_dump_json()  # repaired: U+FFFD, not an escape of the surrogate
    # about 1,500 tokens: over the policy's 60% of 2,000 (the defaults since 2026-12-07 fire at 85%)
    with CompactionHook(
        2000, HookConfig(**SEED_POLICY), archive_path=tmp_path / "a.sqlite3", compressor=extractive()
    ) as hook:
        out = hook.before_step(history)
        assert hook.metrics[-1].outcome == "compacted" and len(out) < len(history)
        _assert_history_out(out, history)
    assert history == snapshot


def test_arguments_nested_deeper_than_python_recurses_are_an_input_error(tmp_path):
    arguments = {"command": _nested(5000)}
    history = [
        {"role": "user", "content": "Fix the bug."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "function": {"name": "bash", "arguments": arguments}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ]
    with pytest.raises(InputError) as raised:
        compress_context(history, compressor=extractive(), keep_last=1)
    assert raised.value.index == 1
    with CompactionHook(1500, archive_path=tmp_path / "a.sqlite3", compressor=extractive()) as hook:
        with pytest.raises(InputError):
            hook.before_step(history)
    assert history[1]["tool_calls"][0]["function"]["arguments"] is arguments and len(arguments) == 1


# ----------------------------------------------------------------------------------------- the CLI

CLI_FORMATS = ["mini-swe-agent", "openhands", "codex", "claude-code", "aider"]


def _cli(argv: list[str]) -> tuple[int, str]:
    """``offline-compress ARGV`` in this process: (exit status, stderr). An exception escaping ``main`` fails."""
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = main(argv)
        except SystemExit as stop:  # argparse
            code = stop.code if isinstance(stop.code, int) else 2
    return code, err.getvalue()


@settings(FUZZ, max_examples=60)
@given(data=st.data(), fmt=st.sampled_from(CLI_FORMATS), command=st.sampled_from(["compress", "count", "check"]))
def test_the_cli_exits_0_or_2_on_a_fuzzed_file(data, fmt, command):
    # A lone surrogate as the (invalid UTF-8) bytes a file may hold; now and then gzip-compressed, or cut short.
    raw = data.draw(mutated(fmt)).encode("utf-8", "surrogatepass")
    if data.draw(st.sampled_from([False] * 2 + [True])):
        raw = gzip.compress(raw, mtime=0)
    if data.draw(st.sampled_from([False] * 3 + [True])):
        raw = raw[: _somewhere(data.draw, len(raw))]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "history.json"
        path.write_bytes(raw)
        extra = ["--context", "2000"] if command == "check" else []
        code, stderr = _cli([command, str(path), *extra])
    assert code in (0, 2), stderr
    assert "Traceback" not in stderr
    event(f"{command}: exit {code}")
    if code == 2:
        error_lines = [line for line in stderr.splitlines() if "error:" in line]
        assert len(error_lines) == 1, stderr


def test_the_cli_in_its_own_process_prints_one_line_not_a_traceback(tmp_path):
    """The installed entry point on files that once gave tracebacks: a surrogate in arguments, tuple-keyed
    arguments written as a Python literal, and an OpenHands event whose fields have the wrong types."""
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "\\ud800"}'}}
    tuple_call = {"id": "c2", "type": "function", "function": {"name": "bash", "arguments": "{('a', 1): 'x'}"}}
    files = {
        "surrogate.json": [
            {"role": "user", "content": "Fix it \ud800"},
            {"role": "assistant", "content": None, "tool_calls": [call, tuple_call]},
            {"role": "tool", "tool_call_id": "c1", "content": "Error: failed \udfff"},
            {"role": "tool", "tool_call_id": "c2", "content": "ok"},
            {"role": "assistant", "content": "done"},
        ],
        "openhands.json": [{"id": [1], "source": "agent", "action": ["run"], "args": {}, "message": {}}],
    }
    for (name, doc), command in zip(files.items(), (["compress", "--keep-last", "1"], ["count"])):
        path = tmp_path / name
        path.write_text(json.dumps(doc), encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "offline_compress.cli", *command, str(path)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode in (0, 2) and "Traceback" not in done.stderr, done.stderr
        if done.returncode == 0:
            json.loads(done.stdout)
        else:
            assert len(done.stderr.strip().splitlines()) == 1, done.stderr
