"""The written-state mode never leaves an invalid summary: a model that stops early (truncated JSON, or cut by
max_tokens), answers with prose, answers valid JSON outside the schema, or gets a prompt over its window (said by
the compressor, by the backend, or by a server's HTTP error) leaves the extractive summary, whole, and
``CompressionStats.fallback`` says why. A region written in parts falls back whole when one part fails."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fake_server import fake_server
from seed_scenario import history

from offline_compress import Compressor
from offline_compress.engine import Generation, PromptTooLongError
from offline_compress.engine.openai_server import OpenAIServerBackend
from offline_compress.engine.recorded import RecordedBackend, digest, load_recordings
from offline_compress.formats import load_history
from offline_compress.summary.schema import CompressedContext

RECORDINGS = Path(__file__).parent / "written" / "recordings.json"
DJANGO = Path(__file__).parent / "fixtures" / "mini-swe-agent" / "django__django-11163.traj.json"
KEEP = {"keep_first": None, "keep_last": 5}


def extractive(messages: Any) -> CompressedContext:
    return Compressor().compress(messages, **KEEP)


def recorded_with(tmp_path: Path, text: str, **options: Any) -> Compressor:
    """A written-state compressor whose recorded completion for the seed session's prompt is ``text``."""
    path = tmp_path / "recordings.json"
    path.write_text(json.dumps({"recordings": {}}), encoding="utf-8")
    compressor = Compressor(backend=RecordedBackend(path), written=True, check=False, **options)
    prompt = compressor.prepare(history("ja"), **KEEP)
    key = digest(compressor.prefix, prompt.suffix, compressor.schema)
    path.write_text(json.dumps({"recordings": {key: {"completion": text}}}, ensure_ascii=False), encoding="utf-8")
    return compressor


def the_recorded_state() -> str:
    """The seed session's recorded written state, as text."""
    compressor = Compressor(backend=RecordedBackend(RECORDINGS), written=True)
    prompt = compressor.prepare(history("ja"), **KEEP)
    entry = load_recordings(RECORDINGS)["recordings"][digest(compressor.prefix, prompt.suffix, compressor.schema)]
    return json.dumps(entry["completion"], ensure_ascii=False)


def assert_fell_back(result: Any, messages: Any, *why: str) -> None:
    """Extractive, whole (nothing lost), and said so."""
    assert result.stats.draft_valid is False and result.stats.fallback
    assert all(w in result.stats.fallback for w in why), result.stats.fallback
    assert result.context == extractive(messages)
    assert result.grounding.checked == 0
    CompressedContext.model_validate_json(result.context.to_json())


def test_a_truncated_state_falls_back(tmp_path):
    text = the_recorded_state()
    result = recorded_with(tmp_path, text[: len(text) // 2]).compress_detailed(history("ja"), **KEEP)
    assert_fell_back(result, history("ja"), "no valid draft in 2 attempts", "document: Invalid JSON")
    assert result.stats.attempts == 2


def test_a_state_cut_by_max_tokens_falls_back():
    """The recorded state takes 620 tokens; with room for 300 it is cut where a server would cut it."""
    compressor = Compressor(backend=RecordedBackend(RECORDINGS), written=True, max_tokens=300)
    result = compressor.compress_detailed(history("ja"), **KEEP)
    assert_fell_back(result, history("ja"), "Invalid JSON", "300 tokens")


def test_prose_instead_of_json_falls_back(tmp_path):
    prose = "Sure! Here is the working state: the agent stored the refresh token in a cookie."
    result = recorded_with(tmp_path, prose).compress_detailed(history("ja"), **KEEP)
    assert_fell_back(result, history("ja"), "Invalid JSON")


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda s: {**s, "surprise": 1}, "surprise: Extra inputs are not permitted"),
        (lambda s: {k: v for k, v in s.items() if k != "next_step"}, "next_step: Field required"),
        (lambda s: {**s, "decisions": s["decisions"] * 4}, "decisions: List should have at most 12 items"),
        (lambda s: {**s, "failures": [{"failure": 0, "why": "x"}]}, "failures.0.failure"),
        (lambda s: {**s, "narrative": "x" * 1501}, "narrative: String should have at most 1500 characters"),
    ],
)
def test_json_outside_the_schema_falls_back(tmp_path, change, where):
    state = change(json.loads(the_recorded_state()))
    result = recorded_with(tmp_path, json.dumps(state, ensure_ascii=False)).compress_detailed(history("ja"), **KEEP)
    assert_fell_back(result, history("ja"), where)


def test_a_window_without_room_for_the_region_falls_back_without_a_call(tmp_path):
    compressor = Compressor(backend=RecordedBackend(tmp_path / "none.json", n_ctx=3000), written=True)
    result = compressor.compress_detailed(history("ja"), **KEEP)
    assert_fell_back(result, history("ja"), "does not fit the model's window", "n_ctx=3000")
    assert result.stats.attempts == 0


class Undercounting:
    """A backend that counts too few tokens (another model's tokenizer), so the prompt it gets is over its window:
    it says so as a server would."""

    name, n_ctx, instruct = "undercounting", 8192, False

    def count(self, text: str) -> int:
        return len(text) // 20

    def generate(self, prefix: str, suffix: str, *args: Any, **kwargs: Any) -> Generation:
        raise PromptTooLongError(f"prompt of {len(prefix + suffix) // 3} tokens exceeds n_ctx=8192")

    def close(self) -> None:
        pass


@pytest.mark.parametrize("written", [True, False])
def test_a_prompt_the_backend_finds_over_its_window_falls_back(written):
    """Either mode: the embedded 270M's draft too."""
    result = Compressor(backend=Undercounting(), written=written).compress_detailed(history("en"), **KEEP)
    assert_fell_back(result, history("en"), "does not fit the model's window", "exceeds n_ctx=8192")


@contextmanager
def server_over_its_window() -> Iterator[str]:
    """A llama-server-like HTTP server whose completions answer 400 "exceeds the available context size"."""

    def respond(method: str, path: str, body: Any) -> tuple[int, Any]:
        if method == "GET":
            if path == "/v1/models":
                return 200, {"data": [{"id": "agent-model", "owned_by": "llamacpp"}]}
            return 404, {"error": "not found"}
        message = "the request exceeds the available context size, try increasing it"
        return 400, {"error": {"code": 400, "message": message, "type": "exceed_context_size_error"}}

    with fake_server(respond) as (url, _):
        yield url


def test_a_server_that_says_the_prompt_is_over_its_window_leaves_the_extractive_summary():
    with server_over_its_window() as url:
        backend = OpenAIServerBackend(url, n_ctx=32_768, structured="openai")
        result = Compressor(backend=backend, written=True).compress_detailed(history("ja"), **KEEP)
    assert_fell_back(result, history("ja"), "HTTP 400", "exceeds the available context size")


def test_a_part_that_fails_leaves_the_whole_region_extractive(tmp_path):
    """The django run in three parts: part 1's recorded state is valid, part 2's answer is cut short."""
    path = tmp_path / "recordings.json"
    shutil.copy(RECORDINGS, path)
    data = load_recordings(path)
    messages = load_history(DJANGO)
    keys: list[str] = []

    class Keys(RecordedBackend):  # the digest of each prompt, in order
        def generate(self, prefix: str, suffix: str, schema: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
            keys.append(digest(prefix, suffix, schema))
            return super().generate(prefix, suffix, schema, *args, **kwargs)

    compressor = Compressor(backend=Keys(path, n_ctx=5000), written=True, check=False, max_tokens=1024)
    assert compressor.compress_detailed(messages, **KEEP).stats.parts == 3 and len(keys) == 3
    data["recordings"][keys[1]] = {"completion": '{"findings": ["Fix'}
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    compressor = Compressor(backend=RecordedBackend(path, n_ctx=5000), written=True, check=False, max_tokens=1024)
    result = compressor.compress_detailed(messages, **KEEP)
    assert_fell_back(result, messages, "part 2 of 3:", "Invalid JSON")
    assert (result.stats.parts, result.stats.attempts) == (2, 3)  # part 2 tried twice; part 3 never asked


def test_findings_enter_the_summary_only_where_their_names_hold(tmp_path):
    # what the agent established is the model's to write; a finding naming what the session never held is dropped
    # like any other statement, and an extractive summary has no findings key at all (its bytes stay as they were)
    true = "`useAuth` works only inside an `AuthProvider`: `main.tsx` wraps `App` in it."
    invented = "`src/billing/invoice.ts` defines `chargeCard`, which `App.tsx` calls."
    state = {
        "findings": [true, invented],
        "decisions": [],
        "failures": [],
        "task_state": {"completed": [], "remaining": [], "blockers": []},
        "narrative": "",
        "next_step": "",
    }
    result = recorded_with(tmp_path, json.dumps(state)).compress_detailed(history("ja"), **KEEP)
    assert result.stats.draft_valid and not result.stats.fallback
    assert result.context.findings == [true]
    assert any("chargeCard" in d for d in result.grounding.dropped)
    assert '"findings":["`useAuth` works only' in result.context.to_json()
    assert '"findings"' not in extractive(history("ja")).to_json()
    assert CompressedContext.model_validate_json(result.context.to_json()) == result.context
