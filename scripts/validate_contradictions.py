#!/usr/bin/env python
"""Validate the contradiction counter's final-state rule on mini-swe-agent SWE-bench runs.

Every run was told "DO NOT MODIFY: Tests, configuration files (pyproject.toml, setup.cfg, etc.)"; ``info.submission``
is the patch it submitted. The ground truth is read from that patch by this script's own few-line parser (never
by the counter's code): a run contradicts the instruction in its end state when the patch touches a test file
(a ``test``/``tests``/``testing`` folder, ``test_*.py``, ``*_test.py``, ``tests.py``, ``conftest.py``), or, for
the figure that includes them, a configuration file (the names listed in ``docs/contradictions.md``).

The counter sees each history **without** the submission's output: everything up to and including the
assistant's submit command (the last assistant message). The last user message of these histories is the submit
command's output, i.e. the same diff, so leaving it in would make the score circular. A run is predicted to
contradict when the counter reports a contradiction with ``final: true`` from the ``protected-path:tests`` rule
(``protected-path:config`` too for the figure with config files). As a consistency check (not a measurement),
the same is run on the full histories, where the counter may read the submitted diff itself.

Reads ``.traj.json`` and ``.traj.json.gz`` (gzip + json here, not the project's importers).

    python scripts/validate_contradictions.py [DIR] [--json eval/results/contradictions.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from offline_compress.contradictions import count_contradictions  # noqa: E402

DEFAULT_DIR = Path(
    "/work/shared/trajectories/gruckion__mini-swe-agent/swebench_results/20251118_gemini-3-pro-74pct/trajs"
)

# The ground truth's own definitions (kept apart from the counter's code on purpose).
_GT_TEST_DIRS = {"test", "tests", "testing"}
_GT_CONFIG = {
    "pyproject.toml",
    "setup.cfg",
    "setup.py",
    "tox.ini",
    "pytest.ini",
    "noxfile.py",
    ".coveragerc",
    ".flake8",
    "mypy.ini",
    ".pylintrc",
    "pylintrc",
    ".isort.cfg",
    ".pre-commit-config.yaml",
    ".editorconfig",
    "MANIFEST.in",
    "Pipfile",
    "Pipfile.lock",
    "poetry.lock",
    "environment.yml",
    "package.json",
    "package-lock.json",
    "yarn.lock",
    "tsconfig.json",
    "Cargo.toml",
    "go.mod",
}


def gt_is_test(path: str) -> bool:
    *dirs, name = path.split("/")
    if any(d in _GT_TEST_DIRS for d in dirs):
        return True
    if name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")):
        return True
    return (
        name in ("tests.py", "conftest.py")
        or name.endswith("_test.go")
        or bool(re.search(r"\.(?:test|spec)\.(?:js|jsx|ts|tsx|mjs|cjs)$", name))
    )


def gt_is_config(path: str) -> bool:
    *dirs, name = path.split("/")
    return name in _GT_CONFIG or bool(re.fullmatch(r"requirements[\w.-]*\.txt", name)) or ".github" in dirs


def patch_files(submission: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"^diff --git a/\S+ b/(\S+)", submission, re.M)]


def read_run(path: Path) -> dict:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def without_submission_output(messages: list[dict]) -> list[dict]:
    """Everything up to and including the last assistant message (the submit command)."""
    last = max(i for i, m in enumerate(messages) if m.get("role") == "assistant")
    return messages[: last + 1]


def score(rows: list[dict], predicted_key: str, truth_key: str) -> dict:
    tp = [r["run"] for r in rows if r[predicted_key] and r[truth_key]]
    fp = [r["run"] for r in rows if r[predicted_key] and not r[truth_key]]
    fn = [r["run"] for r in rows if not r[predicted_key] and r[truth_key]]
    tn = len(rows) - len(tp) - len(fp) - len(fn)
    precision = len(tp) / (len(tp) + len(fp)) if tp or fp else None
    recall = len(tp) / (len(tp) + len(fn)) if tp or fn else None
    return {
        "runs": len(rows),
        "tp": len(tp),
        "fp": len(fp),
        "fn": len(fn),
        "tn": tn,
        "precision": precision,
        "recall": recall,
        "false_positives": fp,
        "false_negatives": fn,
    }


_BLOCK = re.compile(r"```(?:bash|mswea_bash_command)[ \t]*\r?\n(.*?)```", re.S)


def named_by_a_command(messages: list[dict], path: str) -> bool:
    """Does any assistant shell block name the file (its base name)? A quick, independent look at a miss."""
    name = path.rsplit("/", 1)[-1]
    return any(
        name in block
        for m in messages
        if m.get("role") == "assistant"
        for block in _BLOCK.findall(m.get("content") or "")
    )


def same_files(targets: list[str], patch_paths: list[str]) -> bool:
    """The counter's final targets name exactly the patch's files ("/testbed/a/b.py" names "a/b.py")."""

    def names(target: str, path: str) -> bool:
        return target == path or target.endswith("/" + path)

    return all(any(names(t, p) for p in patch_paths) for t in targets) and all(
        any(names(t, p) for t in targets) for p in patch_paths
    )


def final_hits(report, rules: tuple[str, ...]) -> list[dict]:
    return [
        {"rule": c.rule, "step": c.step, "target": c.target, "evidence": c.evidence}
        for c in report.contradictions
        if c.final and c.rule in rules
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="?", type=Path, default=DEFAULT_DIR, help="folder of <run>/<run>.traj.json[.gz]")
    ap.add_argument("--json", type=Path, help="write every run's details and the scores here")
    args = ap.parse_args(argv)
    files = sorted(p for p in args.dir.rglob("*") if p.name.endswith((".traj.json", ".traj.json.gz")))
    if not files:
        print(f"validate_contradictions: no .traj.json[.gz] under {args.dir}", file=sys.stderr)
        return 2
    tests_rule = ("protected-path:tests",)
    both_rules = ("protected-path:tests", "protected-path:config")
    rows = []
    start = time.perf_counter()
    for path in files:
        data = read_run(path)
        messages = data["messages"]
        patch = patch_files(data.get("info", {}).get("submission") or "")
        t0 = time.perf_counter()
        cut = count_contradictions(without_submission_output(messages))
        cut_seconds = time.perf_counter() - t0
        full = count_contradictions(messages)
        rows.append(
            {
                "run": path.name.split(".traj.json")[0],
                "messages": len(messages),
                "seconds": round(cut_seconds, 4),
                "patch_test_files": [p for p in patch if gt_is_test(p)],
                "patch_config_files": [p for p in patch if gt_is_config(p)],
                "truth_tests": any(gt_is_test(p) for p in patch),
                "truth_tests_or_config": any(gt_is_test(p) or gt_is_config(p) for p in patch),
                "cut_tests": bool(final_hits(cut, tests_rule)),
                "cut_tests_or_config": bool(final_hits(cut, both_rules)),
                "full_tests": bool(final_hits(full, tests_rule)),
                "full_tests_or_config": bool(final_hits(full, both_rules)),
                "cut_tests_any": any(c.rule in tests_rule for c in cut.contradictions),
                "same_test_files_as_patch": same_files(
                    [h["target"] for h in final_hits(cut, tests_rule)], [p for p in patch if gt_is_test(p)]
                ),
                "cut_final_hits": final_hits(cut, both_rules),
                "protected_patch_files_named_by_a_command": {
                    p: named_by_a_command(messages, p) for p in patch if gt_is_test(p) or gt_is_config(p)
                },
                "cut_contradictions": len(cut.contradictions),
                "cut_undone": sum(1 for c in cut.contradictions if not c.final),
                "rules": [r.name for r in cut.rules],
            }
        )
    seconds = time.perf_counter() - start
    result = {
        "source": str(args.dir),
        "runs": len(rows),
        "seconds": round(seconds, 2),
        "median_seconds_per_history": round(statistics.median(r["seconds"] for r in rows), 4),
        "max_seconds_per_history": round(max(r["seconds"] for r in rows), 4),
        "primary_tests_without_submission_output": score(rows, "cut_tests", "truth_tests"),
        "runs_whose_final_test_files_equal_the_patch_test_files": sum(r["same_test_files_as_patch"] for r in rows),
        "tests_or_config_without_submission_output": score(rows, "cut_tests_or_config", "truth_tests_or_config"),
        "baseline_any_test_contradiction_final_or_not": score(rows, "cut_tests_any", "truth_tests"),
        "consistency_tests_full_history": score(rows, "full_tests", "truth_tests"),
        "consistency_tests_or_config_full_history": score(rows, "full_tests_or_config", "truth_tests_or_config"),
        "per_run": rows,
    }
    by_run = {r["run"]: r for r in rows}
    for name in (
        "primary_tests_without_submission_output",
        "tests_or_config_without_submission_output",
        "baseline_any_test_contradiction_final_or_not",
        "consistency_tests_full_history",
        "consistency_tests_or_config_full_history",
    ):
        s = result[name]
        p = "n/a" if s["precision"] is None else f"{s['precision']:.1%}"
        r = "n/a" if s["recall"] is None else f"{s['recall']:.1%}"
        print(f"{name}: precision {p}, recall {r} (TP {s['tp']}, FP {s['fp']}, FN {s['fn']}, TN {s['tn']})")
        if name.startswith("baseline"):
            continue  # its false positives are the runs whose scratch test files were removed: many, by design
        for run in s["false_positives"]:
            print(f"  FP {run}: final hits {[(h['step'], h['target']) for h in by_run[run]['cut_final_hits']]}")
        for run in s["false_negatives"]:
            print(
                f"  FN {run}: patch files named by a command: {by_run[run]['protected_patch_files_named_by_a_command']}"
            )
    same = result["runs_whose_final_test_files_equal_the_patch_test_files"]
    print(f"runs whose final test-file contradictions name exactly the patch's test files: {same}/{len(rows)}")
    print(
        f"{len(rows)} runs in {seconds:.1f} s (both passes); one history: median "
        f"{result['median_seconds_per_history'] * 1000:.0f} ms, max {result['max_seconds_per_history'] * 1000:.0f} ms"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
