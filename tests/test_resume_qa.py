"""The resume-qa plumbing (evaluation/resume_qa.py): contexts go out under ids that do not name their strategy,
each grading task shows a point's answers under shuffled letters, and the grades come back to the right strategy
and question; the score is (2 full, 1 partial, 0 unknown, -1 wrong) over twice the questions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation import resume_qa as R
from offline_compress.history.messages import as_messages


def _setup(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp / "home"
    (home / "questions").mkdir(parents=True)
    questions = {
        "point": "p1",
        "questions": [
            {"id": "q1", "kind": "intent", "question": "What?", "reference": "X", "key_facts": ["X"]},
            {"id": "q2", "kind": "failure", "question": "Why?", "reference": "Y", "key_facts": ["Y"]},
        ],
    }
    (home / "questions" / "p1.json").write_text(json.dumps(questions), "utf-8")
    monkeypatch.setattr(R, "HOME", home)
    exchange = tmp / "x"
    key = {}
    for strategy, answers in (("full", {"q1": "X", "q2": "Y"}), ("ours", {"q1": "X", "q2": "Z"})):
        oid = R.opaque("p1", strategy)
        assert strategy not in oid
        d = exchange / "read" / oid
        d.mkdir(parents=True)
        (d / "answers.json").write_text(json.dumps({"answers": answers}), "utf-8")
        key[oid] = {"point": "p1", "strategy": strategy, "tokens": 100 if strategy == "full" else 10}
    R._save_key(exchange, key)
    return exchange


def test_grading_is_blind_and_grades_come_back_to_their_strategy(tmp_path, monkeypatch):
    exchange = _setup(tmp_path, monkeypatch)
    [task] = R.grading_tasks(exchange, {})
    text = (task / "GRADING.md").read_text("utf-8")
    assert "full" not in text.split("Answers:")[1] and "ours" not in text and "A: " in text and "B: " in text
    letters = json.loads((exchange / "grade_key.json").read_text("utf-8"))[task.name]["letters"]
    by_strategy = {json.loads((exchange / "key.json").read_text())[oid]["strategy"]: L for L, oid in letters.items()}
    grades = {
        "q1": {by_strategy["full"]: "full", by_strategy["ours"]: "full"},
        "q2": {by_strategy["full"]: "full", by_strategy["ours"]: "wrong"},
    }
    (task / "grades.json").write_text(
        json.dumps({"grades": grades, "notes": {"q2": {by_strategy["ours"]: "Z is not Y"}}})
    )
    doc = R.results(exchange)
    score = {s: R._pct([r for r in doc["rows"] if r["strategy"] == s]) for s in ("full", "ours")}
    assert score == {"full": 100.0, "ours": pytest.approx(25.0)}  # (2 - 1) / 4
    table = R.report(doc)
    assert "| ours | 25.0% | 1 | 10 |" in table and "Z is not Y" in table
    assert R.grading_tasks(exchange, R.collect_grades(exchange)) == []  # graded answers are not asked again


def test_grading_waits_for_the_points_not_named(tmp_path, monkeypatch):
    exchange = _setup(tmp_path, monkeypatch)
    assert R.grading_tasks(exchange, {}, only=["p2"]) == []  # p1's answers wait for a round that names it
    assert not (exchange / "grade").exists() or not any((exchange / "grade").iterdir())
    [task] = R.grading_tasks(exchange, {}, only=["p1"])
    assert task.name.startswith("p1-")


def test_a_grade_outside_the_rubric_is_refused(tmp_path, monkeypatch):
    exchange = _setup(tmp_path, monkeypatch)
    [task] = R.grading_tasks(exchange, {})
    (task / "grades.json").write_text(json.dumps({"grades": {"q1": {"A": "mostly"}}}))
    with pytest.raises(ValueError, match="not one of"):
        R.collect_grades(exchange)


def test_render_shows_calls_and_marks():
    messages = as_messages(
        [
            {"role": "user", "content": "task"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "c1", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
        ]
    )
    text = R.render(messages, marks={2: "THE POINT"})
    assert '-> call bash (id c1): {"command": "ls"}' in text and "======== THE POINT ========" in text
    assert "### [2] tool (result of call c1)" in text


def test_a_reread_sends_the_same_contexts_out_again_under_a_new_name(tmp_path, monkeypatch):
    exchange = _setup(tmp_path, monkeypatch)
    old = R.opaque("p1", "ours")
    (exchange / "read" / old / "context.md").write_bytes("### [0] user\nfix it ✓\n".encode())
    (exchange / "read" / old / "questions.md").write_text("q1. What?\n", "utf-8")
    [new] = R.reread(exchange, "ours", "ours-again")
    assert new == R.opaque("p1", "ours-again") != old
    d = exchange / "read" / new
    assert (d / "context.md").read_bytes() == (exchange / "read" / old / "context.md").read_bytes()
    assert (d / "BRIEF.md").read_text("utf-8") == R.READER_BRIEF and not (d / "answers.json").exists()
    key = json.loads((exchange / "key.json").read_text("utf-8"))
    assert key[new] == {**key[old], "strategy": "ours-again"}
    with pytest.raises(ValueError, match="no context of strategy 'mask'"):
        R.reread(exchange, "mask", "mask-again")
