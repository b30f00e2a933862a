"""The command line: JSON out, stdin, and bad input -> one clear line on stderr, exit status 2, nothing written."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from gemma3_reference import render_official_gemma3

from offline_compress.cli import main

FIXTURES = Path(__file__).parent / "fixtures"
MINI = FIXTURES / "mini-swe-agent" / "django__django-11163.traj.json"


def test_count_equals_the_gemma3_rendering_measured_by_llama_cpp(capsys, llama_vocab):
    assert main(["count", str(MINI)]) == 0
    out = json.loads(capsys.readouterr().out)
    messages = json.loads(MINI.read_text())["messages"]
    # Google's official chat template (jinja), tokenised by llama.cpp from the GGUF: the reference count.
    rendering = render_official_gemma3([{"role": m["role"], "content": m["content"]} for m in messages])
    expected = len(llama_vocab.tokenize(rendering.encode(), add_bos=True, special=True))
    assert out == {"tokens": expected, "messages": len(messages)}


def test_check_and_stdin(capsys, monkeypatch):
    import io

    data = MINI.read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert main(["check", "-", "--context", "9000", "--turns-since", "2"]) == 0  # 8,268 tokens: over 85%
    decision = json.loads(capsys.readouterr().out)
    assert decision["should_compress"] is True and decision["reason"] == "token-threshold"


@pytest.mark.parametrize(
    "content, words",
    [
        ("[]", "empty"),
        ('{"a": 1}', "no known format"),
        ('[{"content": "x"}]', "role"),
        ('[{"role": "wizard", "content": "x"}]', "unknown role"),
        ('[{"role": "assistant", "content": null}]', "content"),
        ('[{"role": "user", "content": "x"}', "line 1"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, content, words):
    path = tmp_path / "history.json"
    path.write_text(content)
    assert main(["count", str(path)]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err


def test_non_utf8_and_missing_files(tmp_path, capsys):
    path = tmp_path / "latin1.json"
    path.write_bytes(b'[{"role": "user", "content": "caf\xe9"}]')
    assert main(["count", str(path)]) == 2
    assert "not UTF-8" in capsys.readouterr().err
    assert main(["count", str(tmp_path / "nope.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_compress_with_a_bad_model_writes_nothing(tmp_path, capsys):
    out = tmp_path / "summary.json"
    bad = tmp_path / "fake.gguf"
    bad.write_bytes(b"not a model")
    assert main(["compress", str(MINI), "--model", str(tmp_path / "missing.gguf"), "-o", str(out)]) == 2
    assert "model file not found" in capsys.readouterr().err
    assert main(["compress", str(MINI), "--model", str(bad), "-o", str(out)]) == 2
    assert "fake.gguf" in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.glob(".summary.json*"))


def test_console_script_is_installed():
    result = subprocess.run(
        [Path(sys.executable).parent / "offline-compress", "--help"], capture_output=True, text=True
    )
    assert result.returncode == 0 and "count" in result.stdout and "compress" in result.stdout


def test_sha256_mismatch_is_an_error_that_names_the_file(tmp_path, capsys, monkeypatch):
    (tmp_path / "tiny.gguf").write_bytes(b"GGUF but altered")
    manifest = {"default": "tiny", "models": [{"name": "tiny", "file": "tiny.gguf", "size": 16, "sha256": "0" * 64}]}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setenv("OFFLINE_COMPRESS_MODEL_DIR", str(tmp_path))
    out = tmp_path / "out.json"
    assert main(["compress", str(MINI), "--model", "default", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "tiny.gguf" in err and "sha256" in err and not out.exists()


def test_bench_quick_writes_json_markdown_and_chart(tmp_path, model_path):
    """Smoke test of `offline-compress bench --quick` on the bundled fixtures: every section ran and was
    written. It asserts what was measured and written, never how fast."""
    out = tmp_path / "bench"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluation",
            "bench",
            "--quick",
            "--out",
            str(out),
            "--model",
            str(model_path),
            "--no-gpu",
            str(Path(__file__).parent / "fixtures" / "mini-swe-agent" / "github_issue.traj.json"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads((out / "results.json").read_text())
    for section in (
        "trigger",
        "compression",
        "compression_summary",
        "decoders",
        "decoders_summary",
        "decoding",
        "forced_token_cost",
        "bandwidth",
        "effective_rate",
        "effective_rate_summary",
        "prefix_cache",
        "threads",
        "attention",
        "threads_under_load",
        "naive_vs_ours",
        "server",
        "server_summary",
    ):
        assert data[section], section
    assert "compression_gpu" not in data and "decoders_gpu" not in data  # --no-gpu
    decoders = data["decoders"][0]
    assert decoders["outlines_same_bytes"] and decoders["forced_same_bytes"]
    assert decoders["outlines_total_s"] > decoders["outlines_prompt_s"] > 0
    assert data["server_summary"]["structured_outputs"] == "llamacpp" and data["server_summary"]["n_gpu_layers"] == 0
    assert all(row["draft_valid"] and row["attempts"] == 1 for row in data["server"])
    assert [r["trajectory"] for r in data["effective_rate"]] == ["github_issue.traj.json"]
    assert all(0 < r["forced_share"] < 1 and r["loop_tok_s"] > 0 for r in data["effective_rate"])
    assert [(r["flash_attn"], r["default"]) for r in data["attention"]] == [(True, False), (False, True)]
    assert isinstance(data["attention"][0]["same_summary_as_off"], bool)
    assert all(row["same_bytes"] for row in data["compression"])
    assert all(row["counts_equal"] for row in data["trigger"])
    assert {row["mode"] for row in data["decoding"]} == {
        "unconstrained",
        "outlines (llguidance)",
        "forced-token loop",
        "forced-token loop, forced tokens one by one",
    }
    assert (out / "results.md").read_text().startswith("# offline_compress benchmark")
    assert (out / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "bench:" in result.stderr  # progress
