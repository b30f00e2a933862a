"""No compaction loops (issue 21, item 4), on the bare hook: after a compaction the history holds at most the
hook's target (half the window by default) when that can be reached, and when it cannot (a huge system prompt) the
hook says so once and holds the trigger, instead of compacting at every step. The cases are the issue's: a huge
system prompt, one enormous tool output, think-only steps. Each agent loop below is driven step by step, the way
an agent uses the hook: the list the hook returns is the one the next step extends.

The adapters' own runs of these cases are in ``test_contract_langchain.py``, ``test_contract_mini_swe_agent.py``
and ``test_contract_openhands.py``."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from seed_policy import SEED_POLICY

from offline_compress import CompactionHook, Compressor
from offline_compress.history.messages import Message, as_messages
from offline_compress.hook.config import HookConfig
from offline_compress.hook.shrink import CUT_NOTE
from offline_compress.hook.trigger import TriggerConfig
from offline_compress.summary.message import SUMMARY_PREFIX
from offline_compress.tokens.counter import get_counter

TASK = "Fix the crash in src/app.py. Do not modify the tests."
CUT_MARK = CUT_NOTE.split("{")[0]  # the start of the note a cut message carries


@pytest.fixture(scope="module")
def extractive() -> Compressor:
    return Compressor(None)


def tool_step(i: int, lines: int = 30) -> list[dict[str, Any]]:
    call = {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": f'{{"cmd": "cat m{i}.py"}}'}}
    return [
        {"role": "assistant", "content": f"I'll read src/m{i}.py next.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": f"# src/m{i}.py\n" + f"value_{i} = f({i})\n" * lines},
    ]


def think_step(i: int, words: int = 120) -> list[dict[str, Any]]:
    """A step that only thinks: no tool call, no result (a reasoning model between actions)."""
    thought = " ".join(f"maybe parse_config{i} returns None for case {k}" for k in range(words // 8))
    return [{"role": "assistant", "content": f"Thinking about step {i}: {thought}."}]


def drive(hook: CompactionHook, head: list[dict[str, Any]], steps: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Run the agent loop: before each model call the history goes through the hook; one record per step."""
    history = list(head)
    records = []
    for step in steps:
        history = hook.before_step([*history, *step])
        records.append(
            {
                "tokens": hook.counter.count(as_messages(history)),
                "compactions": hook.compactions,
                "firings": len(hook.metrics),
            }
        )
    return records


def compacted(hook: CompactionHook) -> list[Any]:
    return [m for m in hook.metrics if m.outcome == "compacted"]


def test_a_compaction_lands_at_the_target_and_the_next_steps_do_not_fire(extractive, tmp_path):
    """With the summary allowed to be cut (``summary_keep_share=0``), compacting harder lands at the target."""
    counter = get_counter()
    hook = CompactionHook(
        4000,
        HookConfig(summary_keep_share=0.0),
        archive_path=tmp_path / "a.sqlite3",
        compressor=extractive,
        counter=counter,
    )
    assert hook.target_tokens == 2000 and hook.guard.hold_tokens == 200  # 50% of the window; a hold: 5% more
    assert hook.trigger_tokens == hook.guard.trigger_tokens == 3400  # 85%
    records = drive(
        hook,
        [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": TASK}],
        [tool_step(i) for i in range(40)],
    )
    done = compacted(hook)
    assert len(done) >= 3
    for m in done:
        assert m.tokens_after <= hook.target_tokens and not m.over_target and m.hold_until == 0
    # a compaction is never followed by another at the next step: 50% leaves 35% of the window to the trigger
    steps_at = [i for i in range(1, len(records)) if records[i]["compactions"] > records[i - 1]["compactions"]]
    assert all(b - a > 1 for a, b in zip(steps_at, steps_at[1:]))


def test_a_huge_system_prompt_is_said_once_and_the_trigger_held(extractive, tmp_path, caplog):
    window = 4000
    system = "You are a coding agent. " + " ".join(f"Rule {k}: never touch file_{k}.py." for k in range(150))
    head = [{"role": "system", "content": system}, {"role": "user", "content": TASK}]
    hook = CompactionHook(window, HookConfig(**SEED_POLICY), archive_path=tmp_path / "a.sqlite3", compressor=extractive)
    head_tokens = hook.counter.count(as_messages(head))
    assert hook.target_tokens < head_tokens < 0.6 * window  # the head alone is over the target, under the trigger
    with caplog.at_level(logging.INFO, logger="offline_compress.hook"):
        records = drive(hook, head, [tool_step(i, lines=8) for i in range(40)])
    done = compacted(hook)
    assert done and all(m.over_target and m.hold_until > m.tokens_after for m in done)
    # held until the history grows by the hold's margin: without a target (1.0: only the window) the same run
    # compacts at every step over the trigger
    options = {**SEED_POLICY, "target_fraction": 1.0}
    unguarded = CompactionHook(
        window, HookConfig(**options), archive_path=tmp_path / "b.sqlite3", compressor=extractive
    )
    unguarded_records = drive(unguarded, head, [tool_step(i, lines=8) for i in range(40)])

    def firing_steps(rs: list) -> list[int]:
        return [i for i in range(1, len(rs)) if rs[i]["firings"] > rs[i - 1]["firings"]]

    # the unguarded hook fires at every step; the guarded one never at two steps in a row
    assert len(firing_steps(unguarded_records)) > 0.8 * len(unguarded_records)
    held = firing_steps(records)
    assert len(held) < 0.6 * len(records), held
    assert all(b - a > 1 for a, b in zip(held, held[1:])), held
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "head kept verbatim" in r.getMessage()]
    assert len(warnings) == len(done)  # once per compaction, none for the steps in between
    assert all(r["tokens"] < window for r in records)  # it never stopped fitting the window
    # every compaction kept the head verbatim and summarised what it replaced
    history = hook.archive.restore(done[0].compaction, session=hook.session)
    assert history[:2] == head


def test_one_enormous_tool_output_is_cut_to_fit_and_archived_whole(extractive, tmp_path):
    window = 4000
    hook = CompactionHook(window, archive_path=tmp_path / "a.sqlite3", compressor=extractive)
    head = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": TASK}]
    history = [*head, *[m for i in range(6) for m in tool_step(i, lines=10)]]
    enormous = tool_step(99, lines=1500)  # one cat of a huge file: ~3x the window
    given = [*history, *enormous]
    new = hook.before_step(given)
    m = hook.metrics[-1]
    assert m.outcome == "compacted" and m.shortened >= 1 and "recent message" in m.harder
    assert "summary cut" not in m.harder  # the output is cut anyway: it gives way, the summary is kept whole
    assert hook.counter.count(as_messages(new)) < window  # it fits again
    cut = [x for x in new if isinstance(x.get("content"), str) and CUT_MARK in x["content"]]
    assert cut and cut[-1]["role"] == "tool" and cut[-1]["tool_call_id"] == "c99"  # still answers its call
    assert cut[-1]["content"].startswith("# src/m99.py") and cut[-1]["content"].endswith("value_99 = f(99)\n")
    assert new[:2] == head and new[2]["content"].startswith(SUMMARY_PREFIX)
    assert any(x.get("tool_calls") and x["tool_calls"][0]["id"] == "c99" for x in new)  # its call is kept too
    # the archive holds the whole output, as it was given
    assert hook.archive.restore(m.compaction, session=hook.session) == given
    assert given[-1] == enormous[-1] and CUT_MARK not in given[-1]["content"]  # the caller's dicts untouched
    # the next step extends the cut history: no second compaction of the same messages
    again = hook.before_step([*new, {"role": "assistant", "content": "The file is long; I'll grep it instead."}])
    assert hook.compactions == 1 and again[: len(new)] == new


def test_a_history_of_message_objects_is_cut_to_fit_too(extractive, tmp_path):
    # The package's own Message type (what load_history returns) gets the last resort as dicts do: the cut copy
    # is a Message, the caller's objects are not touched.
    window = 4000
    hook = CompactionHook(window, archive_path=tmp_path / "a.sqlite3", compressor=extractive)
    head = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": TASK}]
    given = as_messages([*head, *[m for i in range(6) for m in tool_step(i, lines=10)], *tool_step(99, lines=1500)])
    new = hook.before_step(given)
    assert hook.metrics[-1].shortened >= 1 and hook.counter.count(as_messages(new)) < window
    cut = [x for x in new if isinstance(x, Message) and CUT_MARK in x.text]
    assert cut and cut[-1].role == "tool" and cut[-1].tool_call_id == "c99"
    assert CUT_MARK not in given[-1].text  # the caller's message is as it was


def test_recall_finds_what_a_cut_left_out_of_a_recent_message(extractive, tmp_path):
    # The cut note says the whole message is in the archive: recall must find its middle, before the message is
    # ever replaced by a later compaction. (The line names nothing of code, so the cut by lines leaves it out.)
    hook = CompactionHook(4000, archive_path=tmp_path / "a.sqlite3", compressor=extractive)
    head = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": TASK}]
    enormous = tool_step(99, lines=1500)
    lines = enormous[1]["content"].split("\n")
    lines[700] = "the registry of quuxes was loaded"
    enormous[1]["content"] = "\n".join(lines)
    new = hook.before_step([*head, *[m for i in range(6) for m in tool_step(i, lines=10)], *enormous])
    assert hook.metrics[-1].shortened >= 1 and "quuxes" not in str(new)
    hits = hook.recall("quuxes", k=5)
    assert hits and hits[0].role == "tool" and "quuxes" in hits[0].snippet


def test_a_caller_that_kept_its_uncut_list_gets_the_same_cut(extractive, tmp_path):
    hook = CompactionHook(4000, archive_path=tmp_path / "a.sqlite3", compressor=extractive)
    head = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": TASK}]
    given = [*head, *[m for i in range(6) for m in tool_step(i, lines=10)], *tool_step(99, lines=1500)]
    first = hook.before_step(given)
    later = hook.before_step([*given, {"role": "assistant", "content": "Looking."}])  # the uncompacted list, longer
    assert hook.compactions == 1 and later[:-1] == first and later[-1]["content"] == "Looking."


def test_think_only_steps_compact_to_the_target_without_a_loop(extractive, tmp_path):
    # steps of 3% (thoughts) and 6% (tool outputs) of the window: under the tenth the target leaves to the trigger
    hook = CompactionHook(6000, archive_path=tmp_path / "a.sqlite3", compressor=extractive)
    head = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": TASK}]
    steps = [think_step(i) if i % 3 else tool_step(i) for i in range(90)]
    records = drive(hook, head, steps)
    done = compacted(hook)
    assert len(done) >= 2
    assert all(m.tokens_after <= hook.target_tokens or m.over_target for m in done)
    steps_at = [i for i in range(1, len(records)) if records[i]["compactions"] > records[i - 1]["compactions"]]
    assert all(b - a > 1 for a, b in zip(steps_at, steps_at[1:]))
    assert all(r["tokens"] < 6000 for r in records)


def test_a_firing_that_cannot_compact_is_held_not_retried_at_every_step(extractive, tmp_path):
    hook = CompactionHook(2000, HookConfig(keep_last=40), archive_path=tmp_path / "a.sqlite3", compressor=extractive)
    head = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": TASK}]
    drive(hook, head, [tool_step(i, lines=6) for i in range(14)])
    kept = [m for m in hook.metrics if m.outcome == "kept"]
    assert kept and all(m.hold_until > m.tokens_before for m in kept)
    assert len(kept) < 4  # once per hold, not once per step over the trigger


def test_the_default_path_is_the_plain_compaction_when_nothing_is_wrong(extractive, tmp_path):
    """A compaction that lands under the target is exactly the compressor's summary with the hook's budget."""
    from offline_compress.summary.plan import plan_compaction

    hook = CompactionHook(16_000, archive_path=tmp_path / "a.sqlite3", compressor=extractive)
    head = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": TASK}]
    given = [*head, *[m for i in range(220) for m in tool_step(i, lines=4)]]  # over 85% of the window
    new = hook.before_step(given)
    m = hook.metrics[-1]
    assert m.outcome == "compacted" and m.harder == "" and not m.over_target and m.tokens_after <= hook.target_tokens
    plan = plan_compaction(as_messages(given), None, hook.keep_last)
    budget = hook.summary_budget_for(as_messages(given), plan)
    expected = extractive.compress_detailed(given, plan=plan, summary_tokens=budget, counter=hook.counter)
    assert new[2]["content"].split("\n")[1] == expected.context.to_json()
    assert new[3:] == given[plan.cut :] and all(a is b for a, b in zip(new[3:], given[plan.cut :]))


def test_the_target_is_configurable_and_validated(tmp_path):
    assert CompactionHook(10_000, HookConfig(target_fraction=0.4)).target_tokens == 4000
    assert CompactionHook(10_000, HookConfig(target_fraction=1.0)).target_tokens == 9999  # no target but the window
    with pytest.raises(ValueError, match="target_fraction"):
        CompactionHook(10_000, HookConfig(target_fraction=0))


def test_by_default_the_summary_is_cut_only_as_far_as_the_trigger_needs(extractive, tmp_path):
    """The default (``summary_keep_share=1.0``, chosen on the replay design split): a history left between the
    target and the trigger keeps its summary whole and holds the trigger; one over the trigger has its summary cut
    to just under it, no further; the trigger fires only over itself. (Under this old policy the summary grows into
    the margin, and since the hold stops at the trigger (2026-12-07), compactions may come at consecutive steps once
    a step adds more than the trigger leaves: the churn the defaults now avoid, test_the_churn_defaults_*.)"""
    window = 4000
    hook = CompactionHook(window, HookConfig(**SEED_POLICY), archive_path=tmp_path / "a.sqlite3", compressor=extractive)
    assert hook.summary_keep_share == 1.0
    head = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": TASK}]
    records = drive(hook, head, [tool_step(i) for i in range(40)])
    done = compacted(hook)
    trigger = int(0.6 * window)
    assert len(done) >= 3 and all(m.tokens_after <= trigger for m in done)
    cut = [m for m in done if "summary cut" in m.harder]
    assert cut and all(m.tokens_after > hook.target_tokens for m in cut)  # cut to the trigger, not to the target
    assert all("summary cut" not in m.harder for m in done if m.tokens_after <= hook.target_tokens)
    assert all(m.reason == "token-threshold" and m.tokens_before > trigger for m in done)
    assert all(m.hold_until in (0, max(trigger, m.tokens_after + window // 20)) for m in done)
    assert all(r["tokens"] < window for r in records)


def test_the_churn_defaults_leave_room_before_the_next_trigger(extractive, tmp_path):
    """Issue 47: the trigger at 85% and nothing else; a compaction lands near half the window, so several steps pass
    before the next, and the hold never lets the history past the trigger (the agent's reply keeps its room)."""
    window = 4000
    hook = CompactionHook(window, archive_path=tmp_path / "a.sqlite3", compressor=extractive)
    assert hook.trigger == TriggerConfig(token_fraction=0.85) and hook.trigger.turn_limit is None
    assert (hook.target_tokens, hook.trigger_tokens, hook.room_tokens, hook.summary_floor_tokens) == (
        2000,
        3400,
        1000,
        5120,
    )
    head = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": TASK}]
    records = drive(hook, head, [tool_step(i) for i in range(40)])
    done = compacted(hook)
    assert len(done) >= 5 and all(m.tokens_before > hook.trigger_tokens for m in done)
    steps_at = [i for i in range(1, len(records)) if records[i]["compactions"] > records[i - 1]["compactions"]]
    assert all(b - a >= 3 for a, b in zip(steps_at, steps_at[1:])), steps_at
    assert all(m.hold_until in (0, hook.trigger_tokens) for m in done)  # a hold stops at the trigger
    assert max(r["tokens"] for r in records) <= hook.trigger_tokens  # every context handed over leaves 15%
    # the policy before, as options (a trigger as a mapping too: resume-qa's --hook reads JSON)
    seed = CompactionHook(
        window, HookConfig(**{**SEED_POLICY, "trigger": {"token_fraction": 0.6}}), archive_path=tmp_path / "b.sqlite3"
    )
    assert (seed.trigger_tokens, seed.target_tokens, seed.room_tokens, seed.summary_floor_tokens) == (
        2400,
        2000,
        800,
        4608,
    )


def test_the_next_compaction_merges_the_summary_as_it_was_before_its_cut(tmp_path):
    """A cut fits one context; it does not forget: the history holds the cut summary, and the next compaction
    merges the whole one (every line of it read from the messages), then fits that to its own budget."""
    merged: list[Any] = []

    class Recording(Compressor):  # the real compressor; records the summary each compaction merges
        def compress_detailed(self, *args: Any, **kwargs: Any) -> Any:
            merged.append(kwargs.get("previous"))
            return super().compress_detailed(*args, **kwargs)

    window = 4000
    hook = CompactionHook(
        window, HookConfig(**SEED_POLICY), archive_path=tmp_path / "a.sqlite3", compressor=Recording(None)
    )
    head = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": TASK}]
    history = list(head)
    written = []  # (the summary in the history, the one kept for the next merge) after each compaction
    for step in [tool_step(i) for i in range(40)]:
        before = hook.compactions
        history = hook.before_step([*history, *step])
        if hook.compactions > before:  # the summary this compaction merged, and what it leaves
            written.append((merged[-1], hook.summary, hook._merged, "summary cut" in hook.metrics[-1].harder))
    count = hook.counter.count_text
    cut_at = [k for k, (*_, cut) in enumerate(written) if cut and k + 1 < len(written)]
    assert cut_at, "the scenario must cut a summary before a later compaction"
    for k in cut_at:
        _, in_history, kept, _ = written[k]
        assert count(kept.to_json()) > count(in_history.to_json())  # the whole one is kept...
        assert written[k + 1][0] is kept  # ...and is what the next compaction merges
    for _, in_history, kept, cut in written:
        if not cut:  # uncut: the summary with the lines left out only for the kept messages (merge.merge_carried)
            assert kept.user_constraints == in_history.user_constraints
            assert [s.ran for s in kept.work_log] == [s.ran for s in in_history.work_log]
            assert count(kept.to_json()) >= count(in_history.to_json())


def test_a_hold_stops_at_the_trigger_unless_the_history_is_already_there() -> None:
    """``hook.guard`` since 2026-12-07: a hold waits until the history passes the trigger, and for 5% of the
    window more when it is already (nearly) there; it no longer waits for the trigger's margin over the target past
    the history (with the target at half and the trigger at 85% that let a history grow to the window)."""
    from offline_compress.hook.guard import Guard

    guard = Guard(1000, 0.5, 0.85)
    history = as_messages([{"role": "user", "content": TASK}])
    assert (guard.target_tokens, guard.trigger_tokens, guard.hold_tokens) == (500, 850, 50)
    assert guard.set(history, 550) == 850 and guard.held(history, 850) and not guard.held(history, 851)
    assert guard.set(history, 830) == 880 and guard.set(history, 990) == 1040  # over the trigger: 5% more
    assert not guard.held(history, 1000)  # no longer fits the window: released
