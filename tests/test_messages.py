"""Canonical messages and the OpenAI-format reader: bad input gets an error that says what and where."""

import json

import pytest

from offline_compress.errors import InputError
from offline_compress.formats import load_history, parse_history
from offline_compress.history.messages import as_messages, parse_messages


def test_parts_and_unknown_keys():
    [m] = parse_messages(
        [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url"}], "extra": 1}]
    )
    assert m.text == "a\n[image_url]"


def test_tool_call_arguments_dict_become_json_text():
    [m] = parse_messages(
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "1", "function": {"name": "f", "arguments": {"b": 1, "a": 2}}}],
            }
        ]
    )
    assert m.tool_calls[0].function.arguments == '{"a": 2, "b": 1}'


@pytest.mark.parametrize(
    "raw, match",
    [
        ([], "empty"),
        ({"foo": 1}, "expected a list"),
        ("text", "expected a list"),
        ([{"content": "x"}], "message 0.*role"),
        ([{"role": "user", "content": "a"}, {"role": "robot", "content": "x"}], "message 1.*unknown role 'robot'"),
        ([{"role": "assistant", "content": None}], "message 0.*content"),
        ([1], "message 0.*expected a JSON object"),
    ],
)
def test_bad_histories(raw, match):
    with pytest.raises(InputError, match=match):
        parse_messages(raw)


def test_reader_formats(tmp_path):
    msgs = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    (tmp_path / "a.json").write_text(json.dumps(msgs))
    (tmp_path / "b.jsonl").write_text("\n".join(json.dumps(m) for m in msgs) + "\n")
    (tmp_path / "c.json").write_text(json.dumps({"messages": msgs, "info": {}}))
    for name in ("a.json", "b.jsonl", "c.json"):
        assert [m.text for m in load_history(tmp_path / name, "openai")] == ["hello", "hi"]


def test_reader_errors(tmp_path):
    (tmp_path / "latin1.json").write_bytes('[{"role": "user", "content": "caf\xe9"}]'.encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8.*|byte"):
        load_history(tmp_path / "latin1.json")
    (tmp_path / "broken.json").write_text('[{"role": "user", "content": "a"},\n {"role": ')
    with pytest.raises(InputError, match="line 2"):
        load_history(tmp_path / "broken.json", "openai")
    with pytest.raises(InputError, match="no such file"):
        load_history(tmp_path / "missing.json")
    with pytest.raises(InputError, match="empty"):
        parse_history("   ", "<x>", "openai")


def test_validation_never_touches_the_callers_dicts():
    raw = [{"role": "user", "content": "x", "custom": {"k": [1]}}]
    snapshot = json.dumps(raw)
    as_messages(raw)
    assert json.dumps(raw) == snapshot


def test_message_cache_revalidates_only_what_changed():
    from offline_compress.history.messages import MessageCache

    cache = MessageCache()
    history = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    first = cache.parse(history)
    history.append({"role": "user", "content": "c"})
    second = cache.parse(history)
    assert second[0] is first[0] and second[1] is first[1] and second[2].text == "c"
    history[1]["content"] = "edited in place"  # noticed: the cache compares with a copy
    assert cache.parse(history)[1].text == "edited in place"
    history[2]["role"] = "robot"
    with pytest.raises(InputError, match="message 2"):
        cache.parse(history)
