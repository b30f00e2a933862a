"""``python -m evaluation ab-fits``: recall restricted to the points where the baseline's context fits."""

from __future__ import annotations

import gzip
import json

import pytest

from evaluation.__main__ import main
from evaluation.fitting import load_result, where_baseline_fits


def point(window: int, mask_tokens: int, artifacts: int, mask_kept: int, extract_kept: int) -> dict:
    return {
        "window": window,
        "step": 1,
        "strategies": {
            "mask": {"tokens": mask_tokens, "artifacts": artifacts, "artifacts_kept": mask_kept},
            "extract": {"tokens": 100, "artifacts": artifacts, "artifacts_kept": extract_kept},
        },
    }


RESULT = {
    "windows": [1000],
    "strategies": ["mask", "extract"],
    "trajectories": [
        # mask keeps everything but does not fit: left out
        {"name": "a", "path": "x/a", "points": [point(1000, 5000, 10, 10, 2), point(1000, 900, 10, 4, 8)]},
        {"name": "a", "path": "y/a", "points": [point(1000, 1000, 4, 4, 2)]},  # same name, another run
    ],
}


def test_only_points_where_the_baseline_fits_count():
    [row] = where_baseline_fits(RESULT)
    assert (row["points"], row["of_points"], row["probes"], row["trajectories"]) == (2, 3, 14, 2)
    assert row["recall"] == pytest.approx(10 / 14) and row["baseline_recall"] == pytest.approx(8 / 14)
    assert (row["more"], row["fewer"]) == (1, 1)
    lo, hi = row["ci95"]
    assert lo <= row["recall_difference"] <= hi


def test_the_cli_reads_gzip_and_says_what_is_wrong(tmp_path, capsys):
    good = tmp_path / "r.json.gz"
    good.write_bytes(gzip.compress(json.dumps(RESULT).encode()))
    assert load_result(good)["windows"] == [1000]
    assert main(["ab-fits", str(good)]) == 0
    assert "2 of 3 points" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    assert main(["ab-fits", str(bad)]) == 2
    assert "not an ab-replay result" in capsys.readouterr().err
