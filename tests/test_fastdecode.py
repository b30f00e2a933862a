"""The forced-token decode loop (offline_compress/fastdecode.py, ``decoder="forced"``) through the real model: valid drafts,
deterministic bytes, forced tokens actually skipped, max_tokens a hard bound. No timing asserts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from offline_compress.engine.forced import (
    _masked_argmax_numpy,
    _penalised_argmax_numpy,
    masked_argmax,
    penalised_argmax,
)
from offline_compress.extract.facts import extract_facts
from offline_compress.formats import load_history
from offline_compress.history.cut import cut_index
from offline_compress.summary.draft import Draft
from offline_compress.summary.prompt import closing, digest

FIXTURE = Path(__file__).parent / "fixtures" / "mini-swe-agent" / "github_issue.traj.json"


@pytest.fixture(scope="module")
def prompt(compressor):
    """(prefix, suffix) exactly as the compressor builds them for a short real trajectory."""
    messages = load_history(FIXTURE)
    target = messages[: cut_index(messages, compressor.keep_last)]
    facts = extract_facts(target)
    suffix = digest(target, facts, budget_tokens=compressor.prompt_budget, count_tokens=compressor.backend.count)
    return compressor.prefix, suffix + closing(compressor.instruct)


def generate_forced(compressor, prefix: str, suffix: str):
    """One generation with the in-process backend's forced-token decoder (``decoder="forced"``)."""
    backend = compressor.backend
    decoder, backend.decoder = backend.decoder, "forced"
    try:
        return backend.generate(prefix, suffix, compressor.schema, compressor.max_tokens, compressor.repeat_penalty)
    finally:
        backend.decoder = decoder


@pytest.fixture(scope="module")
def two_runs(compressor, prompt):
    prefix, suffix = prompt
    return [generate_forced(compressor, prefix, suffix) for _ in range(2)]


def test_fast_draft_is_schema_valid(two_runs, compressor):
    gen = two_runs[0]
    draft = Draft.model_validate_json(gen.text)
    assert draft.recent_narrative.startswith("The agent ")
    assert gen.stop_reason == "grammar"
    assert gen.generated_tokens == gen.forced_tokens + gen.sampled_tokens <= compressor.max_tokens
    assert gen.decode_calls <= gen.sampled_tokens + 1  # forced runs ride along with a sampled token


def test_fast_decode_is_deterministic(two_runs):
    first, second = two_runs
    assert first.text.encode() == second.text.encode()
    assert (first.forced_tokens, first.sampled_tokens) == (second.forced_tokens, second.sampled_tokens)


def test_forced_tokens_are_skipped_on_the_draft_schema(two_runs):
    gen = two_runs[0]
    # At least the opening '{"recent_narrative":"The agent' and the closing keys are forced.
    assert gen.forced_tokens >= 8
    assert gen.decode_calls < gen.generated_tokens


def test_lazy_masks_pick_the_same_tokens_as_full_masks(compressor, prompt, two_runs):
    """Skipping the mask when the unconstrained greedy token is allowed must not change a single token."""
    prefix, suffix = prompt
    backend = compressor.backend
    decoder = backend.fast_decoder()
    tokens = backend.tokenize(prefix + suffix, add_bos=True)
    backend.eval_prompt(prefix, tokens)
    eager = decoder.decode(
        compressor.schema, compressor.max_tokens, repeat_penalty=compressor.repeat_penalty, lazy_mask=False
    )
    lazy = two_runs[0]
    assert eager.stop_reason == "grammar"
    assert eager.masks == eager.sampled_tokens  # every sampled step computed its mask
    assert lazy.masks < lazy.sampled_tokens
    assert (eager.forced_tokens, eager.sampled_tokens) == (lazy.forced_tokens, lazy.sampled_tokens)
    text = backend.llm.detokenize(eager.tokens, prev_tokens=tokens).decode("utf-8")
    assert text == lazy.text


@pytest.mark.parametrize("max_tokens", [0, 1, 5, 12])
def test_max_tokens_is_a_hard_bound(compressor, max_tokens):
    """5 cuts the forced opening run (8 tokens) in the middle; 12 stops inside the narrative. A short
    prompt: the bound does not depend on it, and the test stays fast."""
    prefix, suffix = compressor.prefix, "### Task\nFix the failing test.\n" + closing(compressor.instruct)
    backend = compressor.backend
    decoder = backend.fast_decoder()
    tokens = backend.tokenize(prefix + suffix, add_bos=True)
    backend.eval_prompt(prefix, tokens)
    result = decoder.decode(compressor.schema, max_tokens, repeat_penalty=compressor.repeat_penalty)
    assert len(result.tokens) == max_tokens
    assert result.stop_reason == "max_tokens"


def test_masked_argmax_matches_llama_cpp_penalty_semantics():
    """numba kernel == numpy fallback == a direct reading of llama.cpp's penalties + greedy samplers."""
    rng = np.random.default_rng(0)
    n = 1000
    for trial in range(50):
        logits = rng.normal(0, 3, n).astype(np.float32)
        logits[rng.integers(0, n, 20)] = logits.max()  # ties: lowest id must win
        words = rng.integers(0, 2**32, (n + 31) // 32, dtype=np.uint64).astype(np.uint32)
        if trial % 5 == 0:
            words[:] = 0
            words[3] = 1 << 7  # a single allowed token
        counts = np.zeros(n, np.int32)
        counts[rng.integers(0, n, 64)] += 1
        penalty = np.float32(1.3)

        allowed = [i for i in range(n) if (int(words[i // 32]) >> (i % 32)) & 1]
        best, best_v = -1, None
        for i in allowed:
            v = logits[i]
            if counts[i] > 0:
                v = v * penalty if v <= 0 else v / penalty  # float32 arithmetic, as in C
            if best < 0 or v > best_v:
                best, best_v = i, v
        assert masked_argmax(logits, words, counts, 1.3, n) == best
        assert _masked_argmax_numpy(logits, words, counts, penalty, n) == best

        best, best_v = -1, None
        for i in range(n):
            v = logits[i]
            if counts[i] > 0:
                v = v * penalty if v <= 0 else v / penalty
            if best < 0 or v > best_v:
                best, best_v = i, v
        assert penalised_argmax(logits, counts, 1.3, n) == best
        assert _penalised_argmax_numpy(logits, counts, penalty, n) == best


def test_thread_count_does_not_change_the_draft(compressor, prompt, two_runs):
    """The adaptive thread count may differ from call to call; the bytes must not."""
    prefix, suffix = prompt
    backend = compressor.backend
    adaptive, before = backend.adaptive_threads, backend.n_threads
    backend.adaptive_threads = False
    try:
        texts = {}
        for n in (1, 2):
            backend.set_threads(n)
            gen = generate_forced(compressor, prefix, suffix)
            assert gen.threads == n
            texts[n] = gen.text
    finally:
        backend.set_threads(before)
        backend.adaptive_threads = adaptive
    assert texts[1].encode() == texts[2].encode() == two_runs[0].text.encode()
