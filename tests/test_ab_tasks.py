"""The live A/B's task suite and statistics, with no model: every task's check fails on the untouched
repository and passes with its known-good solution; the tempting shortcut of the protected-config task fails
its check; the tasks file reader reports bad lines; the exact McNemar test matches textbook values."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from evaluation.stats import discordant, mcnemar_exact
from evaluation.tasks import (
    TaskSetupError,
    load_tasks,
    read_task_entries,
    run_check,
    setup_repo,
)
from offline_compress.errors import InputError

REPO = Path(__file__).resolve().parent.parent
TASKS_FILE = REPO / "eval" / "tasks" / "tasks.jsonl"
TASKS = load_tasks(TASKS_FILE)


def test_suite_has_at_least_six_tasks_with_constraints() -> None:
    assert len(TASKS) >= 6
    for task in TASKS:
        assert "Constraints:" in task.prompt, task.id
        assert (TASKS_FILE.parent / task.id / "solution.patch").is_file(), task.id


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_check_fails_untouched_and_passes_with_the_solution(task, tmp_path: Path) -> None:
    untouched = tmp_path / "untouched"
    base = setup_repo(task, TASKS_FILE.parent, untouched)
    before = run_check(task, untouched, base)
    assert not before.passed, f"{task.id}: the check passes before any change:\n{before.output_tail}"

    solved = tmp_path / "solved"
    base = setup_repo(task, TASKS_FILE.parent, solved)
    patch = TASKS_FILE.parent / task.id / "solution.patch"
    subprocess.run(["git", "apply", str(patch)], cwd=solved, check=True)
    after = run_check(task, solved, base)
    assert after.passed, f"{task.id}: the check fails with the known-good solution:\n{after.output_tail}"


def test_the_tempting_shortcut_fails_the_check(tmp_path: Path) -> None:
    """lint-line-length: raising the limit in the protected lint.cfg makes the linter pass, but not the check."""
    task = next(t for t in TASKS if t.id == "lint-line-length")
    repo = tmp_path / "repo"
    base = setup_repo(task, TASKS_FILE.parent, repo)
    cfg = repo / "lint.cfg"
    cfg.write_text(cfg.read_text().replace("max_line_length = 79", "max_line_length = 200"))
    assert subprocess.run(["python3", "tools/lint.py", "src"], cwd=repo).returncode == 0
    assert not run_check(task, repo, base).passed


def test_editing_a_protected_test_fails_the_check(tmp_path: Path) -> None:
    task = next(t for t in TASKS if t.id == "semver-order")
    repo = tmp_path / "repo"
    base = setup_repo(task, TASKS_FILE.parent, repo)
    subprocess.run(["git", "apply", str(TASKS_FILE.parent / task.id / "solution.patch")], cwd=repo, check=True)
    test = repo / "tests" / "test_compare.py"
    test.write_text(test.read_text() + "\n# touched\n")
    assert not run_check(task, repo, base).passed


def test_each_setup_is_a_fresh_repository_with_the_same_base_commit(tmp_path: Path) -> None:
    task = TASKS[0]
    first = setup_repo(task, TASKS_FILE.parent, tmp_path / "a")
    second = setup_repo(task, TASKS_FILE.parent, tmp_path / "b")
    assert first == second  # fixed identity and dates: same bytes, same commit id
    log = subprocess.run(["git", "log", "--oneline"], cwd=tmp_path / "a", capture_output=True, text=True, check=True)
    assert len(log.stdout.splitlines()) == 1
    (tmp_path / "a" / "src" / "new.txt").write_text("x")
    assert not (tmp_path / "b" / "src" / "new.txt").exists()


def test_setup_of_a_missing_repository_raises_a_typed_error(tmp_path: Path) -> None:
    task = TASKS[0].model_copy(update={"repo": "no/such/folder"})
    with pytest.raises(TaskSetupError, match="repository folder not found"):
        setup_repo(task, TASKS_FILE.parent, tmp_path / "repo")


def test_a_check_that_cannot_run_raises_instead_of_failing_the_task(tmp_path: Path) -> None:
    task = TASKS[0].model_copy(update={"check": "no-such-program-for-the-check"})
    base = setup_repo(task, TASKS_FILE.parent, tmp_path / "repo")
    with pytest.raises(TaskSetupError, match="exit 127"):
        run_check(task, tmp_path / "repo", base)


def test_a_check_that_hangs_is_killed(tmp_path: Path) -> None:
    task = TASKS[0].model_copy(update={"check": "sleep 30", "check_timeout_s": 0.5})
    base = setup_repo(task, TASKS_FILE.parent, tmp_path / "repo")
    result = run_check(task, tmp_path / "repo", base)
    assert result.timed_out and not result.passed and result.returncode is None


def test_bad_lines_become_entries_with_errors(tmp_path: Path) -> None:
    good = {"id": "ok", "repo": "r", "prompt": "p", "check": "true", "timeout_s": 5}
    lines = [
        json.dumps(good),
        "not json",
        json.dumps({k: v for k, v in good.items() if k != "check"} | {"id": "no-check"}),
        json.dumps(good),  # duplicate id
        json.dumps(good | {"id": "extra", "surprise": 1}),
        "",
    ]
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines))
    entries = read_task_entries(path)
    assert [(e.id, e.task is not None) for e in entries] == [
        ("ok", True),
        ("line-2", False),
        ("no-check", False),
        ("ok", False),
        ("extra", False),
    ]
    assert "line 2: malformed JSON" in entries[1].error
    assert "field 'check'" in entries[2].error
    assert "duplicate task id 'ok'" in entries[3].error
    assert "field 'surprise'" in entries[4].error
    with pytest.raises(InputError, match=r"tasks.jsonl: line 2: malformed JSON"):
        load_tasks(path)


def test_unreadable_tasks_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_task_entries(tmp_path / "missing.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(InputError, match="no tasks"):
        read_task_entries(empty)
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError, match="not UTF-8"):
        read_task_entries(binary)


# Two-sided exact binomial (McNemar) p-values, as R's binom.test(min(b, c), b + c) and
# scipy.stats.binomtest(...).pvalue give them.
@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (0, 0, 1.0),
        (1, 0, 1.0),
        (3, 3, 1.0),
        (0, 5, 0.0625),
        (5, 0, 0.0625),
        (2, 8, 0.109375),
        (0, 10, 0.001953125),
        (3, 12, 0.03515625),
        (1, 6, 0.125),
        (10, 20, 0.09873714670538902),
    ],
)
def test_mcnemar_exact_known_values(b: int, c: int, p: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(p, rel=1e-12)


def test_mcnemar_exact_tiny_p_is_not_rounded_to_zero() -> None:
    assert 0 < mcnemar_exact(0, 1000) < 1e-300


def test_mcnemar_rejects_negative_counts() -> None:
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


def test_discordant() -> None:
    assert discordant([(True, False), (True, True), (False, True), (False, False), (True, False)]) == (2, 1)
