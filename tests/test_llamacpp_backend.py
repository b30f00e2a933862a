"""The in-process backend through the real model: Outlines' Generator (llguidance) is the decoding path, and it keeps
temperature 0, the bounded draft schema, the prefix cache and determinism (same input, same bytes, any thread count).
No timing asserts."""

from __future__ import annotations

from pathlib import Path

import pytest

from offline_compress.engine import Backend
from offline_compress.formats import load_history
from offline_compress.summary.draft import Draft

FIXTURE = Path(__file__).parent / "fixtures" / "mini-swe-agent" / "github_issue.traj.json"


@pytest.fixture(scope="module")
def prompt(compressor):
    """(prefix, suffix) exactly as the compressor builds them for a short real trajectory."""
    return compressor.prefix, compressor.prepare(load_history(FIXTURE)).suffix


def generate(compressor, prefix: str, suffix: str):
    return compressor.backend.generate(
        prefix, suffix, compressor.schema, compressor.max_tokens, compressor.repeat_penalty
    )


def test_the_in_process_backend_has_the_protocol_and_decodes_with_outlines(compressor):
    backend = compressor.backend
    assert isinstance(backend, Backend)
    assert backend.decoder == "outlines"
    assert backend.instruct is False and backend.name.startswith("llama.cpp CPU")


def test_cold_and_cached_prefix_give_the_same_bytes_at_any_thread_count(compressor, prompt):
    """A cold prefix (evaluated now) and a restored one, with 1 and 2 threads: one text."""
    prefix, suffix = prompt
    backend = compressor.backend
    adaptive, before = backend.adaptive_threads, backend.n_threads
    backend._prefix_states.clear()  # noqa: SLF001 - start cold on purpose
    backend.adaptive_threads = False
    try:
        runs = []
        for n in (1, 2):
            backend.set_threads(n)
            runs.append(generate(compressor, prefix, suffix))
            runs.append(generate(compressor, prefix, suffix))
    finally:
        backend.set_threads(before)
        backend.adaptive_threads = adaptive
    assert [r.prefix_cached for r in runs] == [False, True, True, True]
    assert [r.threads for r in runs] == [1, 1, 2, 2]
    assert len({r.text.encode() for r in runs}) == 1
    first = runs[0]
    draft = Draft.model_validate_json(first.text)  # the bounded schema, whole
    assert draft.recent_narrative.startswith("The agent ")
    assert first.prompt_tokens == len(backend.tokenize(prefix + suffix, add_bos=True))
    assert first.prefix_tokens == len(backend.tokenize(prefix, add_bos=True)) < first.prompt_tokens
    assert 0 < first.prompt_seconds < first.total_seconds and first.generation_seconds > 0
    assert 0 < first.generated_tokens <= compressor.max_tokens


def test_a_compression_says_which_backend_wrote_its_draft(compressor):
    stats = compressor.compress_detailed(load_history(FIXTURE)).stats
    assert stats.backend == compressor.backend.name and stats.attempts == 1 and stats.fallback is None
    assert stats.draft_valid and stats.prompt_seconds > 0 and stats.generation_seconds > 0
