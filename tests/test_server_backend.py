"""The backend seam and the OpenAI-compatible server backend.

Against small local HTTP servers written here (a server that answers 200 with unconstrained text, one that rejects
a field, one that never answers) and a closed port: what the compressor does when a server fails open or fails.
Then end to end against llama-cpp-python's own server (``python -m llama_cpp.server``, extra ``server``) serving the
embedded model on 127.0.0.1: a compression through it returns a schema-valid summary."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_server import fake_server

from evaluation.llama_server import free_port, serve
from offline_compress.cli import main as cli_main
from offline_compress.compressor import Compressor
from offline_compress.engine import Backend, Generation
from offline_compress.engine.openai_server import (
    OpenAIServerBackend,
    bounded_schema,
    gbnf_grammar,
    structured_fields,
)
from offline_compress.errors import BackendError
from offline_compress.formats import load_history
from offline_compress.summary.draft import Draft, draft_json_schema

FIXTURE = Path(__file__).parent / "fixtures" / "mini-swe-agent" / "github_issue.traj.json"
VALID_DRAFT = {
    "recent_narrative": "The agent fixed the missing colon.",
    "decisions": [],
    "task_state": {"completed": [], "remaining": [], "blockers": []},
}
GARBAGE = "Sure! Here is a summary of the log: the agent fixed a syntax error and ran the script again."


def completion(text: str) -> dict[str, Any]:
    return {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 600, "completion_tokens": 30},
    }


def not_found(method: str, path: str, body: Any) -> tuple[int, Any]:
    return 404, {"detail": "Not Found"}


# -- the seam ---------------------------------------------------------------------------------------------------
class TwiceBackend:
    """A backend that writes ``texts`` in turn (the compressor's validation and retry are what is tested)."""

    name = "scripted"
    instruct = False
    n_ctx = 8192

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.calls = 0

    def count(self, text: str) -> int:
        return len(text.split())

    def generate(
        self, prefix: str, suffix: str, schema: dict[str, Any], max_tokens: int, repeat_penalty: float = 1.0
    ) -> Generation:
        text = self.texts[min(self.calls, len(self.texts) - 1)]
        self.calls += 1
        return Generation(
            text=text,
            prompt_tokens=self.count(prefix + suffix),
            generated_tokens=7,
            prompt_seconds=0.5,
            total_seconds=2.0,
        )

    def close(self) -> None:
        pass


def test_any_backend_with_the_protocol_plugs_in_and_an_invalid_draft_is_asked_for_once_more():
    assert isinstance(TwiceBackend(), Backend)
    messages = load_history(FIXTURE)
    backend = TwiceBackend(GARBAGE, json.dumps(VALID_DRAFT))
    result = Compressor(backend=backend).compress_detailed(messages)
    s = result.stats
    assert backend.calls == 2 and s.attempts == 2 and s.draft_valid and s.fallback is None
    assert s.backend == "scripted"
    assert s.model_seconds == pytest.approx(4.0) and s.prompt_seconds == pytest.approx(1.0)  # both attempts count
    assert s.generation_seconds == pytest.approx(3.0) and s.generated_tokens == 14
    assert result.context.recent_narrative.startswith("The agent fixed the missing colon.")


def test_a_draft_that_stays_invalid_falls_back_to_the_extractive_summary():
    messages = load_history(FIXTURE)
    # Valid JSON, but not the bounded schema (a narrative far over its bound): validation is by the schema.
    too_long = dict(VALID_DRAFT, recent_narrative="The agent " + "ran tests " * 40)
    for text in (GARBAGE, json.dumps(too_long), ""):
        backend = TwiceBackend(text)
        result = Compressor(backend=backend).compress_detailed(messages)
        s = result.stats
        assert backend.calls == 2 and s.attempts == 2 and not s.draft_valid
        assert s.fallback and s.fallback.startswith("scripted: no valid draft in 2 attempts")
        assert result.context == Compressor(None).compress(messages)  # exactly the no-model summary


# -- what is sent --------------------------------------------------------------------------------------------
def test_bounded_schema_spells_every_string_bound_in_its_pattern():
    schema = draft_json_schema()
    bounded = bounded_schema(schema)
    assert "x-guidance" not in bounded and "x-guidance" in schema  # the original is left alone
    narrative = bounded["properties"]["recent_narrative"]
    assert narrative["pattern"] == r"^The agent [ !#-\[\]-~]{0,190}$" and narrative["maxLength"] == 200
    decision = bounded["$defs"]["DraftDecision"]["properties"]["decision"]
    assert decision["pattern"] == r"^[ !#-\[\]-~]{0,80}$"
    # The same strings pass: up to the bound, and not one character more.
    assert re.fullmatch(narrative["pattern"], "The agent " + "x" * 190)
    assert not re.fullmatch(narrative["pattern"], "The agent " + "x" * 191)
    assert re.fullmatch(schema["properties"]["recent_narrative"]["pattern"], "The agent " + "x" * 191)  # before
    # A pattern of another shape is left as it is.
    other = {"type": "string", "maxLength": 5, "pattern": "^(a|b)+$"}
    assert bounded_schema(other) == other


def test_the_grammar_made_for_llama_cpp_compiles_and_is_bounded(llama_vocab):
    import llama_cpp

    def compiles(grammar: str) -> bool:
        """llama.cpp's own parser, as a server runs it (a NULL sampler: the grammar did not parse)."""
        vocab = llama_cpp.llama_model_get_vocab(llama_vocab.model)
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
        if not sampler:
            return False
        llama_cpp.llama_sampler_free(sampler)
        return True

    grammar = gbnf_grammar(bounded_schema(draft_json_schema()))
    assert "[ !#-\\[\\]-~]*" not in grammar and "{0,190}" not in grammar  # every string bounded, expanded
    assert compiles(grammar)
    assert not compiles('root ::= "{" unknown-rule')  # the check can fail
    fields = structured_fields("llamacpp", draft_json_schema())
    assert list(fields) == ["grammar"]
    assert structured_fields("vllm", {"type": "object"}) == {"structured_outputs": {"json": {"type": "object"}}}
    with pytest.raises(ValueError, match="structured outputs"):
        structured_fields("xml", {})


def test_a_server_that_answers_200_with_unconstrained_text_gets_one_retry_then_the_extractive_summary():
    def respond(method: str, path: str, body: Any) -> tuple[int, Any]:
        if path == "/v1/chat/completions":
            return 200, completion(GARBAGE)
        return not_found(method, path, body)

    messages = load_history(FIXTURE)
    with fake_server(respond) as (url, received):
        backend = OpenAIServerBackend(url + "/v1")
        assert isinstance(backend, Backend)
        assert backend.info.kind == "unknown" and backend.structured == "openai"
        assert backend.counting == "local Gemma 3 tokenizer" and backend.n_ctx == 4096
        compressor = Compressor(backend=backend)
        result = compressor.compress_detailed(messages)
    posts = [body for method, path, body in received if path == "/v1/chat/completions"]
    assert len(posts) == 2  # asked, then asked once more
    body = posts[0]
    assert body["temperature"] == 0.0 and body["max_tokens"] == compressor.max_tokens and not body["stream"]
    assert body["messages"] == [{"role": "user", "content": compressor.prefix + compressor.prepare(messages).suffix}]
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"] == bounded_schema(compressor.schema)
    assert "repeat_penalty" not in body  # an unknown server gets only standard fields
    s = result.stats
    assert not s.draft_valid and s.attempts == 2 and "no valid draft in 2 attempts" in s.fallback
    assert s.backend.startswith(f"unknown server at {url}")
    assert result.context == Compressor(None).compress(messages)


def test_auto_moves_to_the_next_format_when_the_server_rejects_one():
    def respond(method: str, path: str, body: Any) -> tuple[int, Any]:
        if path == "/v1/completions":
            if "response_format" in body:
                return 422, {"detail": [{"loc": ["body", "response_format", "type"], "msg": "unexpected value"}]}
            return 200, {"choices": [{"text": json.dumps(VALID_DRAFT)}], "usage": {"completion_tokens": 25}}
        return not_found(method, path, body)

    with fake_server(respond) as (url, received):
        backend = OpenAIServerBackend(url, api="completions")
        result = Compressor(backend=backend).compress_detailed(load_history(FIXTURE))
        assert backend.structured == "llamacpp"  # from now on
        Compressor(backend=backend).compress_detailed(load_history(FIXTURE))
    posts = [body for _, path, body in received if path == "/v1/completions"]
    assert ["response_format" in b for b in posts] == [True, False, False]
    assert "grammar" in posts[1] and isinstance(posts[1]["prompt"], str)
    assert result.stats.draft_valid and result.stats.attempts == 1 and result.stats.generated_tokens == 25


def test_a_llama_server_is_recognised_and_asked_in_its_own_terms():
    """What llama.cpp's llama-server says about itself (``/props``, ``/tokenize``) decides the format, the token
    counting and the context window."""

    def respond(method: str, path: str, body: Any) -> tuple[int, Any]:
        if path == "/v1/models":
            return 200, {"object": "list", "data": [{"id": "gemma-3-1b-it", "owned_by": "llamacpp"}]}
        if path == "/props":
            return 200, {"default_generation_settings": {"n_ctx": 16384}, "chat_template": "..."}
        if path == "/tokenize":
            return 200, {"tokens": list(range(len(body["content"].split())))}
        if path == "/v1/chat/completions":
            return 200, completion(json.dumps(VALID_DRAFT)) | {"timings": {"prompt_ms": 1500.0}}
        return not_found(method, path, body)

    with fake_server(respond) as (url, received):
        backend = OpenAIServerBackend(url)
        assert (backend.info.kind, backend.info.model, backend.n_ctx) == ("llama.cpp", "gemma-3-1b-it", 16384)
        assert backend.count("three words here") == 3 and backend.counting == "server /tokenize"
        generation = backend.generate("a ", "b", draft_json_schema(), 1000, 1.3)
    body = next(b for _, path, b in received if path == "/v1/chat/completions")
    assert body["model"] == "gemma-3-1b-it" and body["repeat_penalty"] == 1.3 and "grammar" in body
    assert generation.prompt_seconds == 1.5 and Draft.model_validate_json(generation.text)


# -- failures: one line, within the timeout ------------------------------------------------------------------
def test_connection_refused_is_one_clear_error_at_once():
    port = free_port()
    start = time.perf_counter()
    with pytest.raises(BackendError, match=rf"127\.0\.0\.1:{port}/v1/models: connection refused"):
        OpenAIServerBackend(f"http://127.0.0.1:{port}")
    assert time.perf_counter() - start < 30  # at once, not after a default timeout of minutes


def test_a_server_that_never_answers_times_out_with_one_clear_error():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # accepts connections (the kernel does), never answers
    try:
        start = time.perf_counter()
        with pytest.raises(BackendError, match=r"no answer within 1 s \(read timeout\)"):
            OpenAIServerBackend(f"http://127.0.0.1:{listener.getsockname()[1]}", read_timeout=1.0)
        assert time.perf_counter() - start < 30  # at once, not after a default timeout of minutes
    finally:
        listener.close()


def test_http_errors_and_oversized_prompts_are_backend_errors():
    def respond(method: str, path: str, body: Any) -> tuple[int, Any]:
        if path == "/v1/chat/completions":
            return 500, {"error": {"message": "CUDA out of memory\nwhile decoding", "type": "server_error"}}
        return not_found(method, path, body)

    with fake_server(respond) as (url, _):
        backend = OpenAIServerBackend(url, n_ctx=2048)
        with pytest.raises(BackendError, match=r"/v1/chat/completions: HTTP 500: CUDA out of memory while decoding$"):
            backend.generate("a", "b", {"type": "object"}, 16)
        with pytest.raises(BackendError, match=r"exceeds the server's n_ctx=2048"):
            backend.generate("word " * 3000, "", {"type": "object"}, 16)


def test_cli_compress_through_an_unreachable_server_prints_one_line_and_exits_2(capsys):
    port = free_port()
    code = cli_main(["compress", str(FIXTURE), "--backend", "openai", "--base-url", f"http://127.0.0.1:{port}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert (
        err[-1]
        == f"offline-compress: error: http://127.0.0.1:{port}/v1/models: connection refused (is the server running?)"
    )
    assert cli_main(["compress", str(FIXTURE), "--backend", "openai"]) == 2
    assert "needs --base-url" in capsys.readouterr().err
    assert cli_main(["compress", str(FIXTURE), "--base-url", f"http://127.0.0.1:{port}"]) == 2
    assert "--base-url needs --backend openai" in capsys.readouterr().err
    assert (
        cli_main(
            [
                "compress",
                str(FIXTURE),
                "--backend",
                "openai",
                "--base-url",
                f"http://127.0.0.1:{port}",
                "--decoder",
                "forced",
            ]
        )
        == 2
    )
    assert "--decoder is for the in-process backend" in capsys.readouterr().err
    assert (
        cli_main(
            [
                "compress",
                str(FIXTURE),
                "--backend",
                "openai",
                "--base-url",
                f"http://127.0.0.1:{port}",
                "--api-key-env",
                "OC_TEST_UNSET_VARIABLE",
            ]
        )
        == 2
    )
    assert "OC_TEST_UNSET_VARIABLE: that environment variable is not set" in capsys.readouterr().err


def test_cli_compress_through_a_server(tmp_path, capsys, monkeypatch):
    def respond(method: str, path: str, body: Any) -> tuple[int, Any]:
        if path == "/v1/chat/completions":
            return 200, completion(json.dumps(VALID_DRAFT))
        return not_found(method, path, body)

    monkeypatch.setenv("OC_TEST_KEY", "sk-test-123")
    out = tmp_path / "summary.json"
    with fake_server(respond) as (url, received):
        code = cli_main(
            [
                "compress",
                str(FIXTURE),
                "--backend",
                "openai",
                "--base-url",
                url,
                "--model",
                "m",
                "--api-key-env",
                "OC_TEST_KEY",
                "-o",
                str(out),
            ]
        )
    assert code == 0, capsys.readouterr().err
    assert json.loads(out.read_text())["recent_narrative"].startswith("The agent fixed the missing colon.")
    assert next(b for _, p, b in received if p == "/v1/chat/completions")["model"] == "m"
    assert {h.get("Authorization") for h in received.headers} == {"Bearer sk-test-123"}  # on every request


# -- llama-cpp-python's own server, serving the embedded model -------------------------------------------------
@pytest.fixture(scope="module")
def llama_server(model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    try:
        import llama_cpp.server  # noqa: F401
    except ImportError as err:
        pytest.fail(f"llama-cpp-python's server is required (pip install -e '.[server]'): {err}", pytrace=False)
    with serve(model_path, tmp_path_factory.mktemp("server") / "server.log", n_ctx=4096) as url:
        yield url


def test_compression_through_llama_cpp_python_server_is_schema_valid(llama_server, target_tokenizer):
    """The embedded base model through /v1/completions with a GBNF grammar (llama.cpp's own sampler: slow on
    Gemma's 262k-token vocabulary, hence one short trajectory)."""
    backend = OpenAIServerBackend(llama_server, api="completions")
    assert backend.info.kind == "llama-cpp-python" and backend.structured == "llamacpp"
    assert backend.counting == "server /extras/tokenize"
    for text in ("### Task\nFix the failing test.\n", "The agent ran `pytest -q` and saw 3 failures."):
        assert backend.count(text) == len(target_tokenizer.encode(text, add_special_tokens=False).ids)
    compressor = Compressor(backend=backend)
    messages = load_history(FIXTURE)
    result = compressor.compress_detailed(messages)
    s = result.stats
    assert s.draft_valid and s.attempts == 1 and s.fallback is None, s
    assert s.generated_tokens > 0 and s.prompt_tokens > 100
    document = result.context.to_json()
    assert type(result.context).model_validate_json(document) == result.context
    assert result.context.tool_calls_summary  # the exact facts are there as in process
    assert result.context.recent_narrative


def test_cli_compress_written_through_a_server(tmp_path, capsys):
    """``--written``: the server gets the written state's schema and the state goes into the summary; without a
    model to write, one line and exit status 2."""
    state = {
        "findings": [],
        "decisions": [],
        "failures": [],
        "task_state": {"completed": [], "remaining": [], "blockers": []},
        "narrative": "The agent fixed the missing colon and ran the script again.",
        "next_step": "",
    }

    def respond(method: str, path: str, body: Any) -> tuple[int, Any]:
        if path == "/v1/chat/completions":  # the state, then its check (nothing unsupported)
            checking = "## Check the working state" in body["messages"][0]["content"]
            return 200, completion(json.dumps({"unsupported": []} if checking else state))
        return not_found(method, path, body)

    out = tmp_path / "summary.json"
    with fake_server(respond) as (url, received):
        argv = ["compress", str(FIXTURE), "--backend", "openai", "--base-url", url, "--model", "m", "--written"]
        argv += ["--n-ctx", "16384"]  # an unknown server is taken for 4,096 tokens: too few for a written prompt
        code = cli_main([*argv, "-o", str(out)])
    assert code == 0, capsys.readouterr().err
    assert json.loads(out.read_text())["recent_narrative"].startswith(state["narrative"])
    [sent, checked] = [json.dumps(b) for _, p, b in received if p == "/v1/chat/completions"]
    assert '"next_step"' in sent and '"narrative"' in sent  # the written state's schema, not the 270M draft's
    assert '"unsupported"' in checked  # then the model's check of it (on by default)
    assert cli_main(["compress", str(FIXTURE), "--written"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "offline-compress: error: --written needs a model to write: --backend openai --base-url URL, or --model"
    )
