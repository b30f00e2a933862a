"""OpenAI Responses-API items in the message model: one item, one message (the hook maps them back by index), and
a cut that keeps calls with their results by id, including parallel calls listed as separate items."""

from __future__ import annotations

import copy
import json

import pytest

from offline_compress import CompactionHook, InputError
from offline_compress.compressor import Compressor
from offline_compress.history.cut import call_spans, cut_index, head_end, splits_a_call
from offline_compress.history.messages import MessageCache, parse_message, parse_messages
from offline_compress.hook.config import HookConfig
from offline_compress.summary.message import SUMMARY_PREFIX


def _user(text):
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _call(call_id, command):
    args = json.dumps({"command": ["bash", "-lc", command], "workdir": "/repo"})
    return {"type": "function_call", "id": f"fc_{call_id}", "name": "shell", "arguments": args, "call_id": call_id}


def _output(call_id, text, code=0):
    payload = {"output": text, "metadata": {"exit_code": code, "duration_seconds": 0.1}}
    return {"type": "function_call_output", "call_id": call_id, "output": json.dumps(payload)}


def _reasoning(summary=""):
    parts = [{"type": "summary_text", "text": summary}] if summary else []
    return {"type": "reasoning", "id": "rs_x", "summary": parts, "encrypted_content": "gAAAA-opaque"}


HEAD = [
    {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are a coding agent."}]},
    _user("Fix the parser in src/parse.py. Do not modify tests."),
]


def _steps(n, size=300):
    """n turns of: reasoning, two parallel shell calls, their two outputs (large), an assistant note."""
    items = []
    for i in range(n):
        items += [
            _reasoning(f"Step {i}: read two files." if i % 2 else ""),
            _call(f"call_{i}a", f"cat src/mod{i}.py"),
            _call(f"call_{i}b", f"grep -n parse src/mod{i}.py"),
            _output(f"call_{i}a", f"line {i} " * size),
            _output(f"call_{i}b", f"{i}: def parse():\n" * (size // 10), code=1 if i == 3 else 0),
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"Read mod{i}."}]},
        ]
    return items


def _pairs_whole(items):
    """Every function_call_output in ``items`` has its call there, and every call that was answered has it."""
    calls = {x["call_id"] for x in items if isinstance(x, dict) and x.get("type") == "function_call"}
    outputs = {x["call_id"] for x in items if isinstance(x, dict) and x.get("type") == "function_call_output"}
    return outputs <= calls and calls <= outputs


# ------------------------------------------------------------------------------------------- one to one


def test_each_item_is_one_message_and_the_callers_items_are_untouched():
    items = [
        *HEAD,
        _reasoning(),
        _reasoning("Plan: list files."),
        _call("c1", "ls"),
        _output("c1", "a.py\n"),
        {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch", "call_id": "c2"},
        {"type": "custom_tool_call_output", "call_id": "c2", "output": "Done!"},
        {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "parts"}]},
        {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "re.sub"}},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok", "annotations": []}]},
    ]
    before = copy.deepcopy(items)
    messages = parse_messages(items)
    assert items == before  # nothing written into the caller's dicts
    assert len(messages) == len(items)
    assert [m.role for m in messages] == [
        "developer",
        "user",
        "assistant",
        "assistant",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "assistant",
    ]
    assert messages[1].text == "Fix the parser in src/parse.py. Do not modify tests."
    assert messages[2].content == "" and not messages[2].tool_calls  # encrypted-only reasoning keeps its message
    assert messages[3].text == "Plan: list files."
    (call,) = messages[4].tool_calls
    assert (call.id, call.function.name, call.function.arguments) == ("c1", "shell", items[4]["arguments"])
    # Codex's output JSON string is what the model read: kept as it is, not unwrapped.
    assert messages[5].tool_call_id == "c1" and messages[5].content == items[5]["output"]
    custom = messages[6].tool_calls[0]
    assert custom.type == "custom" and custom.function.arguments == "*** Begin Patch\n*** End Patch"
    assert messages[7].tool_call_id == "c2" and messages[7].text == "Done!"
    assert messages[8].text == "parts"
    assert messages[9].text == "web search: re.sub"  # as a person reads it, not a JSON object
    assert messages[10].content == [{"type": "text", "text": "ok"}]


def test_an_unknown_item_type_is_a_clear_error():
    with pytest.raises(InputError) as err:
        parse_messages([*HEAD, {"type": "item_reference", "id": "msg_1"}])
    assert err.value.index == 2 and err.value.field == "type" and "'item_reference'" in err.value.problem
    with pytest.raises(InputError, match="call_id"):
        parse_message({"type": "function_call", "name": "shell", "arguments": "{}"}, index=0)
    # A chat message that happens to carry a "type" key is still the chat message it is.
    assert parse_message({"role": "user", "content": "hi", "type": "custom"}, index=0).text == "hi"


def test_the_hook_names_the_bad_item(tmp_path):
    hook = CompactionHook(4000, archive_path=tmp_path / "a.sqlite3", compressor=Compressor(None))
    with pytest.raises(InputError) as err:
        hook.before_step([*HEAD, _call("c1", "ls"), {"type": "computer_call", "call_id": "c9"}])
    assert err.value.index == 3 and "computer_call" in str(err.value)


def test_the_cache_notices_a_replaced_item_field():
    cache = MessageCache()
    items = [*HEAD, _call("c1", "ls"), _output("c1", "a")]
    first = cache.parse(items)
    items[3]["output"] = "changed"
    assert cache.parse(items)[3].content == "changed" and first[3].content != "changed"


# ------------------------------------------------------------------------------------------- the hook


def test_a_responses_history_compacts_through_the_hook(tmp_path):
    history = HEAD + _steps(8)
    snapshot = copy.deepcopy(history)
    # keep_last=4 puts the plain cut between the two parallel calls of the last turn (call_7a | call_7b).
    hook = CompactionHook(
        8000, HookConfig(keep_last=4), archive_path=tmp_path / "a.sqlite3", compressor=Compressor(None)
    )
    new = hook.before_step(history)
    assert history == snapshot
    m = hook.metrics[-1]
    assert m.outcome == "compacted" and m.tokens_after < m.tokens_before
    head, summary = new[: m.head], new[m.head]
    assert all(a is b for a, b in zip(head, history))  # the caller's objects, not copies
    assert summary["content"].startswith(SUMMARY_PREFIX)
    tail = new[m.head + 1 :]
    assert tail and all(a is b for a, b in zip(tail, history[len(history) - len(tail) :]))
    assert _pairs_whole(tail)  # no output after the summary without its call, nor a call without its output
    assert tail[0] is history[-5] and tail[0]["call_id"] == "call_7a"  # the cut moved back to the turn's first call
    assert hook.archive.restore(1) == history


def test_no_compaction_below_the_threshold(tmp_path):
    history = HEAD + _steps(2, size=20)
    hook = CompactionHook(100_000, archive_path=tmp_path / "a.sqlite3", compressor=Compressor(None))
    new = hook.before_step(history)
    assert new == history and all(a is b for a, b in zip(new, history))
    assert not hook.metrics and not (tmp_path / "a.sqlite3").exists()


# ------------------------------------------------------------------------------------------- the cut


def test_parallel_calls_are_never_split_by_the_cut():
    items = HEAD + _steps(3, size=5)
    messages = parse_messages(items)
    spans = call_spans(messages)
    assert len(spans) == 6  # each call with its output, matched by call_id
    for keep_last in range(len(messages) + 1):
        cut = cut_index(messages, keep_last)
        assert not [s for s in spans if s[0] < cut <= s[1]], (keep_last, cut)
        assert not splits_a_call(messages, 0, cut)
    # The plain rule alone ("the message at the cut is tool output") would cut between the two calls of a turn:
    # call_0a, call_0b, out_0a, out_0b sit at 3..6; a cut at 4 would leave out_0a after it and call_0a before.
    assert cut_index(messages, len(messages) - 4) == 3
    for keep_first in range(len(messages) + 1):
        head = head_end(messages, keep_first)
        assert not [s for s in spans if s[0] < head <= s[1]], (keep_first, head)


def test_a_result_before_its_call_is_a_pair_too():
    done = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}
    messages = parse_messages([_user("go"), _output("c1", "early"), _user("next"), _call("c1", "ls"), done])
    assert call_spans(messages) == [(1, 3)]
    assert cut_index(messages, 2) == 0  # not between the result and its call (nor the result and what it follows)
    assert head_end(messages, 2) == 4  # the head takes the call that answers to a result in it


def test_a_whole_response_object_is_one_assistant_message():
    """mini-swe-agent's Responses models keep each reply as the whole response (``object: "response"``, its items in
    ``output``): one assistant message, its text and then its calls, in order; an output item that is not the
    model's own is a clear error naming the message and field."""
    response = {
        "object": "response",
        "output": [
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "The config is read twice."}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Look at it."}]},
            _call("c1", "cat cfg.py"),
            _call("c2", "grep -n load cfg.py"),
        ],
        "extra": {"actions": [], "cost": 0.0},
    }
    before = copy.deepcopy(response)
    m = parse_message(response, index=3)
    assert response == before  # the caller's object is untouched
    assert m.role == "assistant" and m.content == "The config is read twice.\n\nLook at it."
    assert [(c.id, json.loads(c.function.arguments)["command"][-1]) for c in m.tool_calls] == [
        ("c1", "cat cfg.py"),
        ("c2", "grep -n load cfg.py"),
    ]
    bad = {**response, "output": [_output("c1", "x")]}
    with pytest.raises(InputError, match=r"message 3.*output.*function_call_output"):
        parse_message(bad, index=3)


def test_a_web_search_reads_as_a_search_not_a_json_object():
    def text(action):
        item = {"type": "web_search_call", "status": "completed"}
        if action is not None:
            item["action"] = action
        (message,) = parse_messages([item])
        return message.text

    assert text({"type": "open_page", "url": "https://docs.python.org/3/library/re.html"}) == (
        "web search: open https://docs.python.org/3/library/re.html"
    )
    assert text({"type": "find", "pattern": "re.sub", "url": "https://x.org/re"}) == (
        "web search: find 're.sub' in https://x.org/re"
    )
    assert text({"type": "lookup", "term": "slugify"}) == "web search: lookup slugify"
    assert text(None) == "web search"
    assert not any("{" in text(a) for a in ({"type": "search"}, {"type": "search", "query": "a b"}, {}))
