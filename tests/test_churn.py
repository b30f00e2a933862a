"""The replay's churn metric (``evaluation/churn.py``, issue 47): what the agent's model must prefill with perfect
prefix caching, against the no-compaction lower bound, and the steps between compactions; on hand-made histories
whose figures are worked out by hand, then on a fixture run through the real hook."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evaluation.churn import ChurnRecorder, PrefillMeter, aggregate_churn, common_prefix, format_churn

FIXTURES = Path(__file__).resolve().parent / "fixtures"


class WordCounter:
    """One token per word of each message's content, BOS 1: counts a reader can check by eye."""

    class template:  # noqa: N801 - the attribute a TokenCounter has
        bos_tokens = 1

    def message_counts(self, messages: list[dict[str, Any]]) -> list[int]:
        return [len(str(m.get("content", "")).split()) for m in messages]


@dataclass
class Fired:
    outcome: str
    reason: str = "token-threshold"
    tokens_after: int = 0


def msg(role: str, words: int, tag: str) -> dict[str, Any]:
    return {"role": role, "content": " ".join([tag] * words)}


SYSTEM, TASK = msg("system", 3, "s"), msg("user", 4, "t")
A1, T1, A2, T2, A3, T3, A4, T4 = (
    msg("assistant", 2, "a1"),
    msg("tool", 10, "t1"),
    msg("assistant", 2, "a2"),
    msg("tool", 20, "t2"),
    msg("assistant", 2, "a3"),
    msg("tool", 5, "t3"),
    msg("assistant", 2, "a4"),
    msg("tool", 6, "t4"),
)
SUMMARY = msg("system", 7, "summary")


def test_common_prefix_compares_objects_then_values() -> None:
    assert common_prefix([SYSTEM, TASK, A1], [SYSTEM, dict(TASK), A2]) == 2
    assert common_prefix([SYSTEM], [SYSTEM, TASK]) == 1 and common_prefix([], [SYSTEM]) == 0


def test_prefill_with_prefix_caching_on_a_hand_made_run() -> None:
    """Five calls: the first reads everything; growth reads only what is new; a compaction rewrites everything after
    the head; growth again; then a message before the newest is changed without a compaction (counted)."""
    rec = ChurnRecorder(WordCounter(), window=100)
    none: list[Any] = []
    rec.on_step(2, [SYSTEM, TASK], [SYSTEM, TASK], none)  # call 0: 1 + 3 + 4
    rec.on_step(4, [A1, T1], [SYSTEM, TASK, A1, T1], none)  # call 1: 2 + 10 (own: 10)
    rec.on_step(6, [A2, T2], [SYSTEM, TASK, A1, T1, A2, T2], none)  # call 2: 2 + 20 (own: 20)
    compacted = [SYSTEM, TASK, SUMMARY, A3, T3]  # call 3 compacts: the summary and the recent message read again
    rec.on_step(8, [A3, T3], compacted, [Fired("compacted", tokens_after=22)])  # 7 + 2 + 5 (own: the same)
    rec.on_step(10, [A4, T4], [*compacted, A4, T4], none)  # call 4: 2 + 6 (own: 6)
    changed = [SYSTEM, TASK, msg("system", 7, "other"), A3, T3, A4, T4, A4, T4]
    rec.on_step(12, [A4, T4], changed, none)  # call 5: from the changed summary on, 7 + 2 + 5 + 2 + 6 + 2 + 6
    r = rec.result()
    assert r["calls"] == 6 and r["compactions"] == 1 and r["reasons"] == {"token-threshold": 1}
    assert r["prefill"] == 8 + 12 + 22 + 14 + 8 + 30
    assert r["prefill_own"] == 8 + 10 + 20 + 14 + 6 + 30
    # the lower bound: every message that arrived, once (the agent's own messages counted as read in the plain one)
    assert r["lower_bound"] == 1 + 3 + 4 + 12 + 22 + 7 + 8 + 8
    assert r["lower_bound_own"] == r["lower_bound"] - 2 * 5
    assert r["changed_without_compaction"] == 1 and r["full_changed"] == 0
    assert r["tokens_after"] == [22] and r["largest_call"] == 1 + 3 + 4 + 12 + 22


def test_a_system_message_folded_into_the_next_turn_is_read_again_with_it() -> None:
    """A trailing system message renders as a turn of its own until a user turn folds it in: that turn changed, so
    the meter reads it again, and the history did not change before its newest messages."""
    meter = PrefillMeter(WordCounter())
    note = msg("system", 5, "note")
    meter.read([SYSTEM, TASK, note])
    assert meter.read([SYSTEM, TASK, note, msg("user", 3, "u")]) == 5 + 3
    assert meter.changed == 0 and meter.sizes == [13, 16]


def test_gaps_and_the_pooled_figures() -> None:
    runs = []
    for calls, at in ((30, [4, 14, 29]), (12, []), (50, [10])):
        rec = ChurnRecorder(WordCounter(), window=100)
        context: list[Any] = []
        for k in range(calls):
            arrived = [msg("assistant", 1, f"a{k}"), msg("tool", 9, f"t{k}")] if k else [SYSTEM, TASK]
            context = [SYSTEM, TASK, SUMMARY] if k in at else [*context, *arrived]
            rec.on_step(k, arrived, context, [Fired("compacted")] if k in at else [])
        runs.append({"churn": [rec.result()]})
    assert runs[0]["churn"][0]["gaps"] == [10, 15] and runs[2]["churn"][0]["gaps"] == []
    (row,) = aggregate_churn(runs, [100])
    assert row["runs"] == 3 and row["runs_compacted"] == 2 and row["compactions"] == 4 and row["calls"] == 92
    assert row["gap_median"] == 12.5 and row["steps_per_compaction"] == 23
    assert row["run_steps_per_compaction"] == (10 + 50) / 2  # 30 calls / 3 and 50 / 1; the run that never compacts: out
    assert row["prefill_ratio"] == sum(r["churn"][0]["prefill"] for r in runs) / sum(
        r["churn"][0]["lower_bound"] for r in runs
    )
    assert runs[1]["churn"][0]["prefill"] == runs[1]["churn"][0]["lower_bound"]  # no compaction: the lower bound
    assert "gap-med" in format_churn([row])


@pytest.mark.parametrize("window", [4096])
def test_the_real_hook_keeps_its_prefix_between_compactions(window: int) -> None:
    """A fixture run stepped through the real hook as ab-replay steps it: without a compaction the prefill equals
    the lower bound (the uncompacted history's exact count); with them it is larger, and nothing before the newest
    messages changed at any call without a compaction."""
    from evaluation.replay import load_trajectory
    from evaluation.strategies import HookReplay
    from offline_compress.compressor import Compressor
    from offline_compress.tokens.counter import get_counter

    counter = get_counter()
    messages = load_trajectory(FIXTURES / "mini-swe-agent" / "django__django-11163.traj.json")
    rec = ChurnRecorder(counter, window)
    driven = HookReplay(Compressor(None), window, counter).run(messages, on_step=rec.on_step)
    r = rec.result()
    assert r["compactions"] == len(driven) >= 2 and r["changed_without_compaction"] == 0
    assert r["prefill"] > r["lower_bound"]
    last = max(i for i, m in enumerate(messages) if m.role == "assistant")
    assert r["lower_bound"] == counter.count([m.to_openai() for m in messages[:last]])
    huge = ChurnRecorder(counter, 10**7)
    assert not HookReplay(Compressor(None), 10**7, counter).run(messages, on_step=huge.on_step)
    assert huge.result()["prefill"] == huge.result()["lower_bound"] == r["lower_bound"]


def test_ab_replay_churn_only_prints_and_writes_the_metric(tmp_path: Path) -> None:
    from evaluation.__main__ import main

    out = tmp_path / "r.json"
    argv = ["ab-replay", str(FIXTURES / "mini-swe-agent"), "--context", "4096", "--churn-only", "--json", str(out)]
    assert main(argv) == 0
    report = json.loads(out.read_text())
    assert report["strategies"] == ["extract"] and report["aggregate"] == []
    (row,) = report["churn"]
    assert row["window"] == 4096 and row["compactions"] > 0 and row["prefill_ratio"] > 1
    assert row["changed_without_compaction"] == 0
