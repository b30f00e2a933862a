"""``python -m evaluation ab-contexts``: another hook's contexts scored at an ``ab-replay`` result's points.

End to end on a real trajectory: today's hook, forced at the points where it fired by itself
(``scripts/contexts_at_points.py``), must score exactly as the replay's own ``extract`` column (the same contexts,
the same probes); the truncate baseline's contexts, written in the same file format, must score as its column."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation.__main__ import main
from evaluation.contexts import load_contexts, score
from evaluation.replay import load_phrases, load_trajectory
from evaluation.strategies import truncate
from offline_compress.tokens.counter import get_counter

REPO = Path(__file__).resolve().parent.parent
TRAJECTORY = REPO / "tests" / "fixtures" / "mini-swe-agent" / "django__django-11163.traj.json"


@pytest.fixture(scope="module")
def replayed(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("contexts")
    result, contexts = tmp / "result.json", tmp / "contexts.json.gz"
    run = [sys.executable, "-m", "evaluation", "ab-replay", str(TRAJECTORY), "--context", "4096,8192"]
    proc = subprocess.run([*run, "--json", str(result)], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    script = [sys.executable, "scripts/contexts_at_points.py", str(result), str(contexts)]
    proc = subprocess.run(script, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return result, contexts


def test_todays_hook_forced_at_its_own_points_scores_as_its_column(replayed, capsys):
    result_path, contexts_path = replayed
    result = json.loads(result_path.read_text())
    points = [p for t in result["trajectories"] for p in t["points"]]
    assert {p["window"] for p in points} == {4096, 8192}
    rows = score(result, load_contexts(contexts_path), name="forced", phrases=load_phrases(None), counter=get_counter())
    for row in rows:
        at = [p for p in points if p["window"] == row["window"]]
        probes = sum(p["strategies"]["extract"]["artifacts"] for p in at)
        kept = sum(p["strategies"]["extract"]["artifacts_kept"] for p in at)
        assert row["points"] == len(at) and row["probes"] == probes > 0
        assert row["forced"] == row["extract"] == kept / probes and row["extract_minus"] == 0.0
        assert row["tokens_median"] == row["extract_tokens_median"]
    assert main(["ab-contexts", str(result_path), str(contexts_path), "--name", "forced"]) == 0
    assert "forced / extract / mask" in capsys.readouterr().out


def test_another_strategys_contexts_score_as_that_strategy(replayed, tmp_path):
    result_path, _ = replayed
    result = json.loads(result_path.read_text())
    messages = load_trajectory(TRAJECTORY)
    t = result["trajectories"][0]
    out = {}
    for window in (4096, 8192):
        steps = [p["step"] for p in t["points"] if p["window"] == window]
        contexts = {str(s): [m.to_openai() for m in truncate(messages[:s]).messages] for s in steps}
        out[f"{t['name']}|{window}"] = {"messages": len(messages), "contexts": contexts}
    path = tmp_path / "truncate.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(out, f)
    rows = score(result, load_contexts(path), name="truncated", phrases=load_phrases(None), counter=get_counter())
    for row in rows:
        at = [p for p in t["points"] if p["window"] == row["window"]]
        kept = sum(p["strategies"]["truncate"]["artifacts_kept"] for p in at)
        assert row["truncated"] == kept / row["probes"] < row["extract"]


def test_a_file_that_is_not_contexts_is_a_clear_error(replayed, tmp_path, capsys):
    result_path, _ = replayed
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"x|1": [1, 2]}))
    assert main(["ab-contexts", str(result_path), str(bad)]) == 2
    assert "not the output of scripts/contexts_at_points.py" in capsys.readouterr().err


def test_a_name_that_is_a_column_of_the_result_is_refused(replayed, capsys):
    result_path, contexts_path = replayed
    assert main(["ab-contexts", str(result_path), str(contexts_path), "--name", "extract"]) == 2
    assert "one of the result's own columns" in capsys.readouterr().err
