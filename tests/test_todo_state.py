"""The agent's own plan in the task state: what is done and what is left, as the agent last wrote it in a planning
tool (Claude Code TodoWrite, OpenHands task_tracker, Codex update_plan), item by item with its status; a newer plan
replaces the older one across compactions. Expected values are read from the raw session file with ``json``, not
through the importer or the extractor under test."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offline_compress import Compressor
from offline_compress.extract.calls import todo_state
from offline_compress.formats import load_history
from offline_compress.summary.merge import todo_items

FIXTURE = Path(__file__).parent / "fixtures" / "claude-code" / "c10f5964-20bd-4783-aa1a-30b06c8a702a.jsonl.gz"


def raw_todo_lists() -> list[list[dict[str, str]]]:
    """Every TodoWrite ``todos`` list of the session's main thread, in order, read straight from its JSONL."""
    out = []
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if record.get("type") != "assistant" or record.get("isSidechain"):
                continue
            for block in record["message"].get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == "TodoWrite":
                    out.append(block["input"]["todos"])
    return out


def expected_state(todos: list[dict[str, str]]) -> tuple[list[str], list[str]]:
    done = [f"[{t['status']}] {t['content']}" for t in todos if t["status"] == "completed"]
    left = [f"[{t['status']}] {t['content']}" for t in todos if t["status"] != "completed"]
    return done, left


def plan_part(items: list[str]) -> list[str]:
    return [x for x in items if x.startswith("[")]


@pytest.fixture(scope="module")
def session() -> tuple[list, list[int]]:
    messages = load_history(FIXTURE)
    calls = [
        i
        for i, m in enumerate(messages)
        if m.role == "assistant" and any(c.function.name == "TodoWrite" for c in m.tool_calls or [])
    ]
    return messages, calls


@pytest.mark.parametrize(
    ("name", "args", "state"),
    [
        (
            "TodoWrite",
            {
                "todos": [
                    {"content": "a", "status": "completed", "activeForm": "A"},
                    {"content": "b", "status": "pending"},
                ]
            },
            (("completed", "a"), ("pending", "b")),
        ),
        (
            "task_tracker",
            {"command": "plan", "task_list": [{"title": "t", "status": "done", "notes": ""}]},
            (("done", "t"),),
        ),
        ("task_tracker", {"command": "view"}, None),  # reads the list, writes none
        ("update_plan", {"plan": [{"step": "s", "status": "in_progress"}]}, (("in_progress", "s"),)),
        ("think", {"thought": "[pending] looks like a plan, is a thought"}, None),
        ("TodoWrite", {"todos": []}, ()),  # the agent emptied its list
        ("TodoWrite", {"todos": [{"content": "no status"}]}, None),
        ("Bash", {"command": "echo '{\"todos\": []}'"}, None),
        ("TodoWrite", "not json", None),
    ],
)
def test_a_planning_call_states_what_is_done_and_what_is_left(name, args, state):
    assert todo_state(name, args if isinstance(args, str) else json.dumps(args)) == state


def test_todo_items_split_done_from_left_in_the_lists_order():
    done, left = todo_items((("pending", "b"), ("completed", "a"), ("in_progress", "c"), ("done", "d")))
    assert done == ["[completed] a", "[done] d"] and left == ["[pending] b", "[in_progress] c"]


def test_the_summary_holds_the_latest_plan_of_what_it_replaces(session):
    messages, calls = session
    todos = raw_todo_lists()
    assert len(todos) == len(calls) == 4
    compressor = Compressor(None)
    for k, call in enumerate(calls):
        context = compressor.compress(messages[: call + 2], keep_last=0)  # the call and its result summarised
        done, left = expected_state(todos[k])
        assert plan_part(context.task_state.completed) == done, k
        assert plan_part(context.task_state.remaining) == left, k


def test_a_newer_plan_replaces_the_previous_summarys_and_none_keeps_it(session):
    messages, calls = session
    todos = raw_todo_lists()
    compressor = Compressor(None)
    first = compressor.compress(messages[: calls[1] + 2], keep_last=0)
    later = compressor.compress(messages[calls[1] + 2 : calls[3] + 2], keep_last=0, previous=first)
    assert (plan_part(later.task_state.completed), plan_part(later.task_state.remaining)) == expected_state(todos[3])
    quiet = compressor.compress(messages[calls[1] + 2 : calls[2]], keep_last=0, previous=first)  # no plan written
    assert (plan_part(quiet.task_state.completed), plan_part(quiet.task_state.remaining)) == expected_state(todos[1])
    assert all(item in quiet.task_state.completed for item in first.task_state.completed if not item.startswith("["))


def test_a_planning_call_that_failed_wrote_no_list():
    def todo(call_id: str, todos: list[dict[str, str]]) -> dict:
        args = json.dumps({"todos": todos})
        return {
            "role": "assistant",
            "tool_calls": [{"id": call_id, "function": {"name": "TodoWrite", "arguments": args}}],
        }

    history = [
        {"role": "user", "content": "Fix the parser."},
        todo("1", [{"content": "write the test", "status": "in_progress"}]),
        {"role": "tool", "tool_call_id": "1", "content": "Todos have been modified successfully."},
        todo("2", [{"content": "write the test", "status": "completed"}]),
        {
            "role": "tool",
            "tool_call_id": "2",
            # a Claude Code tool_result with is_error, as formats/anthropic.py writes it
            "content": "Error: <tool_use_error>InputValidationError: TodoWrite failed</tool_use_error>",
        },
    ]
    context = Compressor(None).compress(history, keep_last=0)
    assert plan_part(context.task_state.remaining) == ["[in_progress] write the test"]
    assert plan_part(context.task_state.completed) == []


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["status", "content", "title", "step", "todos", "task_list", "plan", "x"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(["TodoWrite", "task_tracker", "update_plan", "think", "Bash"]), args=_JSON)
def test_any_arguments_give_a_plan_or_none_and_never_raise(name, args):
    state = todo_state(name, json.dumps(args))
    assert state is None or all(isinstance(s, str) and isinstance(t, str) and s and t for s, t in state)
