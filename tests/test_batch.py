"""``offline-compress batch``: one valid summary per file, resumable, one line per failure and the run goes on,
and the same outputs on Ray Data with two workers. Extractive (``--no-model``) except one real-model file."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from offline_compress import CompressedContext
from offline_compress.cli import main

FIXTURES = Path(__file__).parent / "fixtures"
DJANGO = FIXTURES / "mini-swe-agent" / "django__django-11163.traj.json"
SOURCES = [
    DJANGO,
    FIXTURES / "mini-swe-agent" / "github_issue.traj.json",
    FIXTURES / "swe-agent" / "swe-agent__test-repo-i1.traj",
]
CONSTRAINT = "DO NOT MODIFY: Tests, configuration files (pyproject.toml, setup.cfg, etc.)"


def inputs(tmp_path: Path, files=SOURCES) -> Path:
    folder = tmp_path / "in"
    folder.mkdir(parents=True, exist_ok=True)
    for f in files:
        shutil.copy(f, folder / f.name)
    return folder


def batch_lines(err: str) -> list[str]:
    """Our lines on stderr (the progress bar redraws itself with carriage returns between them; Ray's workers write
    to the same stderr, and a line of theirs without its newline may run into one of ours)."""
    return re.findall(r"offline-compress: batch: [^\r\n]*", err)


def last_line(err: str) -> str:
    return batch_lines(err)[-1]


def failed_files(err: str) -> list[str]:
    """The files named by the failure lines (a line names its file first, then where and what)."""
    return sorted(
        Path(line.removeprefix("offline-compress: batch: ").split(": ")[0].split(", ")[0]).name
        for line in batch_lines(err)[1:-1]
    )


def outputs(out: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(out.iterdir())}


def test_batch_writes_one_valid_summary_per_file_and_resumes(tmp_path, capsys):
    folder, out = inputs(tmp_path), tmp_path / "out"
    assert main(["batch", str(folder), "--out", str(out), "--no-model"]) == 0
    err = capsys.readouterr().err
    assert "3 compressed, 0 skipped, 0 failed" in last_line(err) and "files/min" in last_line(err)
    written = outputs(out)
    assert sorted(written) == [
        "django__django-11163.summary.json",
        "github_issue.summary.json",
        "swe-agent__test-repo-i1.summary.json",
    ]
    for text in written.values():
        CompressedContext.model_validate_json(text)
    # the instruction is in the raw file, and the summary keeps it word for word
    assert CONSTRAINT in DJANGO.read_text(encoding="utf-8")
    django = CompressedContext.model_validate_json(written["django__django-11163.summary.json"])
    assert CONSTRAINT in django.user_constraints
    # each output is what `compress` prints for that file
    assert main(["compress", str(folder / DJANGO.name), "--no-model"]) == 0
    assert capsys.readouterr().out == written["django__django-11163.summary.json"]

    stamps = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    assert main(["batch", str(folder), "--out", str(out), "--no-model"]) == 0
    assert "0 compressed, 3 skipped, 0 failed" in last_line(capsys.readouterr().err)
    assert stamps == {p.name: p.stat().st_mtime_ns for p in out.iterdir()}

    changed = folder / DJANGO.name  # an input changed after its summary was written is compressed again
    later = stamps["django__django-11163.summary.json"] + 10**9
    os.utime(changed, ns=(later, later))
    assert main(["batch", str(folder), "--out", str(out), "--no-model"]) == 0
    assert "1 compressed, 2 skipped, 0 failed" in last_line(capsys.readouterr().err)
    assert not list(out.glob("*.partial")) and not list(out.glob(".*"))


def test_failures_get_one_line_each_and_the_run_goes_on(tmp_path, capsys):
    folder = inputs(tmp_path, [DJANGO])
    (folder / "broken.json").write_text('[{"role": "user", "content": "hi"}', encoding="utf-8")
    (folder / "empty.json").write_text("[]", encoding="utf-8")
    (folder / "short.json").write_text(json.dumps([{"role": "user", "content": "hi"}]), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["batch", str(folder), "--out", str(out), "--no-model"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert failed_files(err) == ["broken.json", "empty.json", "short.json"]
    assert "1 compressed, 0 skipped, 3 failed" in last_line(err)
    assert sorted(outputs(out)) == ["django__django-11163.summary.json"]
    # the failed files are tried again next time, the finished one is not
    assert main(["batch", str(folder), "--out", str(out), "--no-model"]) == 2
    assert "0 compressed, 1 skipped, 3 failed" in last_line(capsys.readouterr().err)


def test_bad_invocations_are_one_line_before_any_work(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    shutil.copy(DJANGO, a / DJANGO.name)
    shutil.copy(DJANGO, b / DJANGO.name)
    out = tmp_path / "out"
    assert main(["batch", str(a), str(b), "--out", str(out), "--no-model"]) == 2
    assert "would both write django__django-11163.summary.json" in capsys.readouterr().err
    assert not out.exists()
    assert main(["batch", str(a), "--out", str(out), "--no-model", "--workers", "2"]) == 2
    assert "--workers needs --ray" in capsys.readouterr().err
    assert main(["batch", str(a), "--out", str(out), "--no-model", "--keep-last", "-1"]) == 2
    assert "--keep-last must be 0 or more" in capsys.readouterr().err
    assert main(["batch", str(a), "--out", str(out), "--no-model", "--max-tokens", "10"]) == 2
    assert "max_tokens=10 is below the largest valid draft" in capsys.readouterr().err
    assert main(["batch", str(tmp_path / "missing"), "--out", str(out), "--no-model"]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    assert main(["batch", str(a), "--out", str(out), "--model", str(tmp_path / "nope.gguf")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "nope.gguf" in err and not out.exists()


def test_outputs_inside_an_input_folder_are_not_read_as_inputs(tmp_path, capsys):
    folder = inputs(tmp_path, SOURCES[:2])
    out = folder / "summaries"
    assert main(["batch", str(folder), "--out", str(out), "--no-model"]) == 0
    assert main(["batch", str(folder), "--out", str(out), "--no-model"]) == 0
    assert "2 files, 2 skipped" in capsys.readouterr().err


def test_batch_with_the_real_model(tmp_path, capsys, model_path):
    folder, out = inputs(tmp_path, [FIXTURES / "mini-swe-agent" / "github_issue.traj.json"]), tmp_path / "out"
    assert main(["batch", str(folder), "--out", str(out), "--model", "default"]) == 0
    assert "1 compressed, 0 skipped, 0 failed" in last_line(capsys.readouterr().err)
    summary = CompressedContext.model_validate_json((out / "github_issue.summary.json").read_text(encoding="utf-8"))
    assert summary.tool_calls_summary and summary.recent_narrative


def test_ray_two_workers_write_the_same_outputs(tmp_path, capsys):
    ray = pytest.importorskip("ray", reason="Ray is not installed (extra 'ray')")
    folder = inputs(tmp_path)
    (folder / "broken.json").write_text("{", encoding="utf-8")
    assert main(["batch", str(folder), "--out", str(tmp_path / "local"), "--no-model"]) == 2
    capsys.readouterr()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        assert (
            main(["batch", str(folder), "--out", str(tmp_path / "ray"), "--no-model", "--ray", "--workers", "2"]) == 2
        )
    finally:
        ray.shutdown()
    err = capsys.readouterr().err
    assert "on Ray, 2 workers" in err and "3 compressed, 0 skipped, 1 failed" in last_line(err)
    assert failed_files(err) == ["broken.json"]
    assert outputs(tmp_path / "ray") == outputs(tmp_path / "local")  # same bytes, written by the workers


def test_a_gzip_input_gives_the_summary_of_its_content(tmp_path, capsys):
    plain = FIXTURES / "mini-swe-agent" / "github_issue.traj.json"
    packed = FIXTURES / "mini-swe-agent" / "github_issue.traj.json.gz"
    assert (
        main(["batch", str(inputs(tmp_path / "a", [plain])), "--out", str(tmp_path / "a" / "out"), "--no-model"]) == 0
    )
    assert (
        main(["batch", str(inputs(tmp_path / "b", [packed])), "--out", str(tmp_path / "b" / "out"), "--no-model"]) == 0
    )
    assert outputs(tmp_path / "b" / "out") == outputs(tmp_path / "a" / "out")
    assert sorted(outputs(tmp_path / "b" / "out")) == ["github_issue.summary.json"]
