"""Room for the summary (``CompactionHook.summary_room``): when the head and the last messages would leave the summary
less than its room under the trigger, the oldest of those messages are summarised too (``plan_compaction``'s
``kept_tokens``), never past a user's own turn and never the last message with its call; then the tool outputs
among them are cut (copies, the agent's thoughts whole) before the summary is cut below that room. A later
compaction reads a message that was cut whole (``hook.applied.uncut``).

The plan's rule is checked on made-up token counts; the hook's on real histories through the real tokenizer."""

from __future__ import annotations

import json
from typing import Any

import pytest
from seed_policy import SEED_POLICY

from offline_compress import CompactionHook, Compressor
from offline_compress.history.cut import cut_index
from offline_compress.history.messages import as_messages, parse_message
from offline_compress.hook.applied import Applied, uncut
from offline_compress.hook.config import HookConfig
from offline_compress.hook.shrink import CUT_NOTE
from offline_compress.summary.message import SUMMARY_PREFIX
from offline_compress.summary.plan import plan_compaction

CUT_MARK = CUT_NOTE.split("{")[0]
TASK = "Fix the crash in src/app.py. Do not modify the tests."


@pytest.fixture(scope="module")
def extractive() -> Compressor:
    return Compressor(None)


def call(i: int, path: str) -> dict[str, Any]:
    args = json.dumps({"cmd": f"cat {path}"})
    return {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": args}}


def tool_step(i: int, lines: int = 10) -> list[dict[str, Any]]:
    body = [f"value_{i}_{k} = f({k})" for k in range(lines)]
    return [
        {"role": "assistant", "content": f"I'll read src/m{i}.py next.", "tool_calls": [call(i, f"src/m{i}.py")]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": f"# src/m{i}.py\n" + "\n".join(body) + "\n"},
    ]


HEAD = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": TASK}]


# ------------------------------------------------------------------------------------------------ the plan


def test_the_oldest_recent_messages_are_summarised_when_they_leave_no_room():
    messages = as_messages([*HEAD, *[m for i in range(6) for m in tool_step(i)]])  # 14 messages
    counts = [10] * len(messages)
    counts[-3] = 500  # the output of the step before the last one
    free = plan_compaction(messages, None, 5)
    assert free.cut == cut_index(messages, 5) == 8  # the last 5 and the call the first of them answers
    # no bound, or a bound the last 5 messages already meet: the plan of keep_last
    assert plan_compaction(messages, None, 5, counts=counts, kept_tokens=10_000) == free
    # the head (20 tokens) and the recent messages in 100: the big output is summarised, the last step is kept
    tight = plan_compaction(messages, None, 5, counts=counts, kept_tokens=100)
    assert tight.cut == 12 and messages[tight.cut].role == "assistant" and messages[-1].role == "tool"


def test_counts_must_match_the_messages():
    messages = as_messages([*HEAD, *tool_step(0)])
    with pytest.raises(ValueError, match="3 entries for 4 messages"):
        plan_compaction(messages, None, 5, counts=[1, 2, 3], kept_tokens=10)


def test_the_last_message_and_the_call_it_answers_always_stay():
    messages = as_messages([*HEAD, *[m for i in range(6) for m in tool_step(i)]])
    counts = [1000] * len(messages)
    plan = plan_compaction(messages, None, 5, counts=counts, kept_tokens=10)  # nothing would fit
    assert plan.cut == len(messages) - 2  # the last call and its result


def test_a_users_own_turn_among_the_recent_messages_is_never_summarised_early():
    steps = [m for i in range(6) for m in tool_step(i)]
    turn = {"role": "user", "content": "Also keep the public API of src/app.py unchanged."}
    messages = as_messages([*HEAD, *steps[:-4], turn, *steps[-4:]])
    counts = [10] * len(messages)
    counts[-5] = counts[-6] = 400  # the user's turn and the output before it are big
    free = plan_compaction(messages, None, 6)
    turn_at = next(i for i, m in enumerate(messages) if m.text.startswith("Also keep"))
    assert free.cut == turn_at - 2
    plan = plan_compaction(messages, None, 6, counts=counts, kept_tokens=60)
    assert plan.cut == turn_at  # it moves up to the turn, never past it, though the turn itself is big


# ------------------------------------------------------------------------------------------------ the hook


def squeezed_history() -> list[dict[str, Any]]:
    """An 8k-window history whose last messages hold two long file reads (about 3,300 tokens each): with the head
    they take more than the trigger (60%) less the summary's room (20%)."""
    older = [m for i in range(12) for m in tool_step(i, lines=25)]
    return [*HEAD, *older, *tool_step(40, lines=220), *tool_step(41, lines=220)]


def summary_tokens(hook: CompactionHook, history: list[Any]) -> int:
    message = next(m for m in history if isinstance(m.get("content"), str) and m["content"].startswith(SUMMARY_PREFIX))
    return hook.counter.count_text(message["content"])


def test_the_recent_messages_give_way_before_the_summary_is_cut_below_its_room(extractive, tmp_path):
    history = squeezed_history()
    room = CompactionHook(8192, HookConfig(**SEED_POLICY), archive_path=tmp_path / "a.sqlite3", compressor=extractive)
    none = CompactionHook(
        8192,
        HookConfig(**{**SEED_POLICY, "summary_room": 0}),
        archive_path=tmp_path / "b.sqlite3",
        compressor=extractive,
    )
    with_room, without = room.before_step(history), none.before_step(history)
    assert room.compactions == none.compactions == 1
    trigger = int(0.6 * 8192)
    # without room the summary alone is cut, to its floor, and the history stays over the trigger (it fits the
    # window, so the recent messages are kept whole)
    assert none.counter.count(as_messages(without)) > trigger and summary_tokens(none, without) < 300
    # with it: the older of the two reads is summarised, the last one cut, the summary keeps about its room
    assert room.counter.count(as_messages(with_room)) <= trigger
    assert summary_tokens(room, with_room) >= 0.9 * 0.2 * 8192
    kept = with_room[3:]
    assert [m.get("tool_calls", [{}])[0].get("id") for m in kept if m["role"] == "assistant"] == ["c41"]
    # the agent's own thoughts are never cut to make room; only tool outputs are
    assert [m["role"] for m in kept if CUT_MARK in (m.get("content") or "")] == ["tool"]
    # the caller's list is untouched and the archive holds the history whole
    assert all(CUT_MARK not in (m.get("content") or "") for m in history)
    assert room.archive.restore(room.metrics[-1].compaction, session=room.session) == history


def test_room_zero_is_validated_and_the_earlier_rule(tmp_path):
    with pytest.raises(ValueError, match="summary_room"):
        CompactionHook(
            8192, HookConfig(summary_room=0.85), archive_path=tmp_path / "a.sqlite3"
        )  # not under the trigger
    with pytest.raises(ValueError, match="summary_room"):
        CompactionHook(8192, HookConfig(summary_room=-0.1), archive_path=tmp_path / "a.sqlite3")


def test_a_later_compaction_reads_a_cut_message_whole(extractive, tmp_path):
    # A line in the middle of an output that a compaction cut (to make room) is gone from the agent's history; the
    # next compaction summarises the original, so the summary can show it again. The output's other lines name
    # nothing (long lines of progress), so that line is one the work log would offer; they are few and long, so
    # the output is cut in its middle (a cut by lines would keep the one line that names something).
    sentinel = "quux_registry_7781 = load_registry(strict=True)"
    history = squeezed_history()
    lines = ["checking ... ok " * 250] * 7  # about 5,500 tokens: cut to make room
    lines[3] = sentinel
    history[-1] = {**history[-1], "content": "\n".join(lines)}
    hook = CompactionHook(8192, HookConfig(**SEED_POLICY), archive_path=tmp_path / "a.sqlite3", compressor=extractive)
    live = hook.before_step(history)
    assert hook.compactions == 1 and hook.metrics[-1].shortened == 1
    assert "quux_registry_7781" not in json.dumps(live)  # cut from the context the agent sees
    for i in range(50, 56):  # the agent goes on until the trigger fires again
        live = hook.before_step([*live, *tool_step(i, lines=60)])
        if hook.compactions == 2:
            break
    assert hook.compactions == 2
    assert "quux_registry_7781" in json.dumps(live)  # the second summary read the original


def test_no_message_is_cut_twice_in_a_long_squeezed_loop(extractive, tmp_path):
    hook = CompactionHook(8192, archive_path=tmp_path / "a.sqlite3", compressor=extractive)
    live = list(HEAD)
    for i in range(40):
        live = hook.before_step([*live, *tool_step(i, lines=60 if i < 3 or i % 3 else 300)])
        for m in live:
            assert (m.get("content") or "").count(CUT_MARK) <= 1
        assert hook.counter.count(as_messages(live)) < 8192
    assert hook.compactions >= 3


# ----------------------------------------------------------------------------------------------- uncut


def test_uncut_follows_a_copy_cut_twice_back_to_its_original():
    original = parse_message({"role": "tool", "tool_call_id": "c1", "content": "a\n" * 100}, index=0)
    once = parse_message({"role": "tool", "tool_call_id": "c1", "content": "a\n[cut once]"}, index=0)
    twice = parse_message({"role": "tool", "tool_call_id": "c1", "content": "a\n[cut twice]"}, index=0)
    other = parse_message({"role": "assistant", "content": "a\n[cut once]"}, index=0)
    summary = parse_message({"role": "system", "content": "s"}, index=0)
    applied = [
        Applied([], 1, 2, {"role": "system", "content": "s"}, summary, 1, ((3, original, {}, once),)),
        Applied([], 1, 2, {"role": "system", "content": "s"}, summary, 2, ((3, once, {}, twice),)),
    ]
    parsed = [summary, twice, other, once]
    out = uncut(applied, parsed, [1, 2])
    assert out[1] is original and out[2] is other  # another role is another message, even with the same text
    assert out[3] is once  # outside the region: as it is
    assert uncut([], parsed, [1, 2]) == parsed
