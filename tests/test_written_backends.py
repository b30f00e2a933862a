"""The backends of the written-state mode: recorded completions (a missing one is an error naming its digest, or is
exported for a writer and stops the run, through the hook too; a written completion is validated before it is
stored; the environment selects it for a hook built without a compressor), a server (the written schema goes as a
strict ``json_schema``), and the in-process model (Outlines compiles the written schema)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fake_server import fake_server
from seed_scenario import history

from offline_compress import CompactionHook, Compressor
from offline_compress import compressor as compressor_module
from offline_compress.engine.openai_server import OpenAIServerBackend, bounded_schema
from offline_compress.engine.recorded import (
    RecordedBackend,
    RecordingMissing,
    WriterNeeded,
    digest,
    import_completions,
    load_recordings,
    main,
)
from offline_compress.formats import load_history
from offline_compress.summary.schema import CompressedContext
from offline_compress.summary.written import check_json_schema, written_json_schema

RECORDINGS = Path(__file__).parent / "written" / "recordings.json"
CLAUDE = Path(__file__).parent / "fixtures" / "claude-code" / "97b0ffde-ece9-4977-91cb-5c8cdeabdf3f.jsonl.gz"
KEEP = {"keep_first": None, "keep_last": 5}
WRITER = "written by a test acting as the recorded writer"


def seed_state() -> dict[str, Any]:
    compressor = Compressor(backend=RecordedBackend(RECORDINGS), written=True)
    suffix = compressor.prepare(history("ja"), **KEEP).suffix
    return load_recordings(RECORDINGS)["recordings"][digest(compressor.prefix, suffix, compressor.schema)]["completion"]


def test_a_missing_recording_is_an_error_naming_its_digest(tmp_path):
    compressor = Compressor(backend=RecordedBackend(tmp_path / "none.json"), written=True)
    with pytest.raises(RecordingMissing, match=r"none\.json: no completion recorded for the prompt [0-9a-f]{20}"):
        compressor.compress(history("en"), **KEEP)


def test_an_export_round_trip_writes_validates_imports_and_repeats(tmp_path, monkeypatch, capsys):
    """Export (through the hook: the stop is not answered with the caller's history, even out of strict mode),
    write, import (an invalid completion refused, naming its field), run again."""
    monkeypatch.delenv("OFFLINE_COMPRESS_STRICT", raising=False)
    folder, recordings = tmp_path / "writer", tmp_path / "recordings.json"
    compressor = Compressor(backend=RecordedBackend(recordings, export_to=folder), written=True, check=False)
    with CompactionHook(32_768, compressor=compressor, archive_path=tmp_path / "a.sqlite3") as hook:
        with pytest.raises(WriterNeeded) as stop:
            hook.compact(load_history(CLAUDE))
    key = stop.value.digest
    assert f"{folder}/{key}.prompt.md" in str(stop.value) and (folder / "WRITER.md").exists()
    request = json.loads((folder / f"{key}.request.json").read_text(encoding="utf-8"))
    assert digest(request["prefix"], request["suffix"], request["schema"]) == key
    assert (folder / f"{key}.prompt.md").read_text(encoding="utf-8") == request["prefix"] + request["suffix"]
    assert main(["pending", str(folder)]) == 0 and f"{key}.prompt.md" in capsys.readouterr().out

    state = load_recordings(RECORDINGS)["recordings"]["23178c8672af2dc2de7c"]["completion"]  # the same prompt
    (folder / f"{key}.completion.json").write_text(json.dumps({**state, "decisions": [{"decision": "x"}]}))
    assert main(["import", str(folder), str(recordings), "--writer", WRITER]) == 2
    assert "decisions.0.rationale: Field required" in capsys.readouterr().err and not recordings.exists()

    (folder / f"{key}.completion.json").write_text(json.dumps(state, ensure_ascii=False), encoding="utf-8")
    stored, refused = import_completions(folder, recordings, writer=WRITER)
    assert (stored, refused) == ([key], [])
    entry = load_recordings(recordings)["recordings"][key]
    assert entry["writer"] == WRITER and entry["prompt_tokens"] > entry["completion_tokens"] > 0
    with CompactionHook(32_768, compressor=compressor, archive_path=tmp_path / "b.sqlite3") as hook:
        hook.compact(load_history(CLAUDE))
        assert hook.metrics[-1].outcome == "compacted"


def test_an_edited_request_is_refused(tmp_path):
    folder = tmp_path / "writer"
    folder.mkdir()
    request = {"prefix": "a", "suffix": "b", "schema": written_json_schema()}
    (folder / "0123456789abcdef0123.request.json").write_text(json.dumps(request))
    (folder / "0123456789abcdef0123.completion.json").write_text(json.dumps(seed_state(), ensure_ascii=False))
    stored, [refused] = import_completions(folder, tmp_path / "r.json", writer=WRITER)
    assert not stored and "does not match its digest" in refused


def test_the_environment_makes_the_default_compressor_write(tmp_path, monkeypatch):
    """What an evaluation that builds its own hooks sets: OFFLINE_COMPRESS_RECORDED (and _EXPORT)."""
    monkeypatch.setenv("OFFLINE_COMPRESS_RECORDED", str(RECORDINGS))
    monkeypatch.setattr(compressor_module, "_default", {})
    with CompactionHook(32_768, archive_path=tmp_path / "a.sqlite3") as hook:
        hook.compact(load_history(CLAUDE))
        assert hook.compressor.written and isinstance(hook.compressor.backend, RecordedBackend)
        assert hook.metrics[-1].outcome == "compacted" and hook.summary and hook.summary.decisions
    monkeypatch.setenv("OFFLINE_COMPRESS_EXPORT", str(tmp_path / "writer"))
    with pytest.raises(WriterNeeded):
        compressor_module.default_compressor().compress(history("en"), **KEEP)
    monkeypatch.delenv("OFFLINE_COMPRESS_RECORDED")
    monkeypatch.delenv("OFFLINE_COMPRESS_EXPORT")
    assert compressor_module.default_compressor().backend is None  # extractive again


@contextmanager
def chat_server(*contents: str) -> Iterator[tuple[str, list[Any]]]:
    """An OpenAI-compatible chat server that answers its completions with ``contents`` in turn (the last one
    again after them); yields (URL, bodies)."""
    answered: list[str] = []

    def respond(method: str, path: str, body: Any) -> tuple[int, Any]:
        if method == "GET":
            return 200, {"data": [{"id": "agent-model"}]} if path == "/v1/models" else {}
        content = contents[min(len(answered), len(contents) - 1)]
        answered.extend([content] if path.endswith("/chat/completions") else [])
        usage = {"prompt_tokens": 1900, "completion_tokens": 620}
        return 200, {"choices": [{"message": {"role": "assistant", "content": content}}], "usage": usage}

    with fake_server(respond) as (url, received):
        bodies: list[Any] = []
        yield url, bodies
        bodies += [body for method, _, body in received if method == "POST"]


def test_a_server_gets_the_written_schema_as_a_strict_json_schema():
    """Then the check of the state, on the same prompt up to the region's end (a server's prompt cache keeps it)."""
    check = json.dumps({"unsupported": [{"statement": 1, "why": "not shown"}]})
    with chat_server(json.dumps(seed_state(), ensure_ascii=False), check) as (url, bodies):
        backend = OpenAIServerBackend(url, n_ctx=32_768)
        result = Compressor(backend=backend, written=True).compress_detailed(history("ja"), **KEEP)
    [body, checked] = [b for b in bodies if "messages" in b]  # the probe's tokenize request aside
    asked, checking = body["messages"][0]["content"], checked["messages"][0]["content"]
    shared = asked.index("## The working state as JSON")
    assert checking[:shared] == asked[:shared] and "## Check the working state" in checking[shared:]
    assert checked["response_format"]["json_schema"]["schema"] == bounded_schema(check_json_schema())
    assert result.stats.refuted == 1 and result.grounding.dropped[0].startswith("finding: ")
    sent = body["response_format"]["json_schema"]
    assert body["response_format"]["type"] == "json_schema" and sent["strict"] is True
    assert sent["schema"] == bounded_schema(written_json_schema()) and "x-guidance" not in sent["schema"]
    assert body["temperature"] == 0.0 and body["messages"][0]["content"].startswith("You write the working state")
    assert "repetition_penalty" not in body and "repeat_penalty" not in body  # an unknown server: none sent
    assert result.stats.draft_valid and (result.stats.prompt_tokens, result.stats.generated_tokens) == (3800, 1240)
    assert any("httpOnly" in d.decision for d in result.context.decisions)


def test_the_in_process_model_compiles_and_decodes_the_written_schema(compressor):
    """Outlines (llguidance) compiles the written schema for the embedded model and decodes under it. The 270M
    base model cannot write (docs/replay.md, "What the model is for"): whatever it writes is valid under the grammar or cut
    by max_tokens, and the summary is valid either way."""
    written = Compressor(backend=compressor.backend, written=True, max_tokens=256)
    result = written.compress_detailed(history("en"), **KEEP)
    assert result.stats.attempts >= 1 and result.stats.generated_tokens > 0
    assert result.stats.draft_valid or "Invalid JSON" in (result.stats.fallback or "")
    CompressedContext.model_validate_json(result.context.to_json())
