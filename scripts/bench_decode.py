#!/usr/bin/env python
"""Decoding speed: unconstrained greedy vs Outlines-constrained vs the fast loop (forced tokens skipped).

Three prompts built exactly as the compressor builds them (fixed prefix + digest of the first part of a
mini-swe-agent trajectory + closing), the draft schema, repeat_penalty 1.3, greedy. In ONE process, per prompt
and repetition, the variants run interleaved (rotating order) so machine load hits them alike; medians are
reported. Every variant starts from the restored prefix state and evaluates the same prompt suffix; only the
generation (after the prompt's logits are ready) is timed.

  (a)  unconstrained: llm.eval(one token) + numpy argmax on llama.cpp's logits view, N tokens
  (a2) unconstrained through llama.cpp's own sampler chain (penalties 1.3 + greedy), N tokens
  (b)  LlamaCppBackend.generate, decoder='outlines': Outlines Generator, llguidance backend (one decode per token)
  (c)  LlamaCppBackend.generate, decoder='forced': offline_compress/engine/forced.py (forced runs batched, lazy masks)
  (c_eager)  the same loop computing every mask (overlapped with the decode in a worker thread)
  (c_1by1)   the same loop evaluating forced tokens one decode each, as (b) does: must give (b)'s text

N is (b)'s output length on that prompt, so (a), (a2) and (b) decode the same number of tokens. "b ovh" is
(b)'s time per decode over (a)'s; "c/a" is (c)'s output tokens per second over (a)'s; "N/dec" is (c)'s output
tokens per llama.cpp decode (load-independent: the ceiling of c/a if a batched decode cost what a single one
does). "c_1by1_outside_decode" splits (c_1by1)'s per-token cost from llama.cpp's decode time: the work between
decodes, constrained minus unconstrained, over an unconstrained token's time (``outside_decode_overhead``).
A second process recomputes (c)'s texts (sha256) for the cross-process determinism check.

    .venv/bin/python scripts/bench_decode.py [--reps 3] [--out bench-results/decode.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from offline_compress.compressor import DEFAULT_MAX_TOKENS  # noqa: E402
from offline_compress.engine.llamacpp import LlamaCppBackend  # noqa: E402
from offline_compress.extract.facts import extract_facts  # noqa: E402
from offline_compress.formats import load_history  # noqa: E402
from offline_compress.history.cut import cut_index  # noqa: E402
from offline_compress.model_files import resolve_model  # noqa: E402
from offline_compress.summary.draft import Draft, draft_json_schema  # noqa: E402
from offline_compress.summary.prompt import closing, digest, fixed_prefix  # noqa: E402

REPEAT_PENALTY = 1.3
PROMPT_BUDGET = 1536


def build_prompts(backend: LlamaCppBackend) -> list[tuple[str, str, str]]:
    instruct = backend.instruct
    prefix = fixed_prefix(instruct)
    out = []
    for path in sorted((REPO / "tests/fixtures/mini-swe-agent").glob("*.traj.json")):
        messages = load_history(path)
        cut = cut_index(messages, 5)
        target = messages[:cut]
        facts = extract_facts(target)
        suffix = digest(target, facts, budget_tokens=PROMPT_BUDGET, count_tokens=backend.count) + closing(instruct)
        out.append((path.name, prefix, suffix))
    return out


def prompt_ready(backend: LlamaCppBackend, prefix: str, suffix: str) -> list[int]:
    prompt = backend.tokenize(prefix + suffix, add_bos=True)
    backend.eval_prompt(prefix, prompt)
    return prompt


def run_unconstrained_numpy(backend: LlamaCppBackend, prefix: str, suffix: str, n: int) -> dict:
    prompt_ready(backend, prefix, suffix)
    dec = backend.fast_decoder()
    llm = backend.llm
    start = time.perf_counter()
    tokens = []
    decode_s = 0.0
    for i in range(n):
        token = int(np.argmax(dec._logits()))
        tokens.append(token)
        if i + 1 < n:
            t0 = time.perf_counter()
            llm.eval([token])
            decode_s += time.perf_counter() - t0
    seconds = time.perf_counter() - start
    return {"tokens": n, "decodes": n - 1, "seconds": seconds, "decode_seconds": decode_s}


def run_unconstrained_sampler(backend: LlamaCppBackend, prefix: str, suffix: str, n: int) -> dict:
    from llama_cpp import _internals as internals

    prompt_ready(backend, prefix, suffix)
    llm = backend.llm
    sampler = internals.LlamaSampler()
    sampler.add_penalties(
        n_vocab=llm.n_vocab(),
        penalty_last_n=llm.last_n_tokens_size,
        penalty_repeat=REPEAT_PENALTY,
        penalty_freq=0.0,
        penalty_present=0.0,
    )
    sampler.add_greedy()
    start = time.perf_counter()
    for i in range(n):
        token = sampler.sample(llm._ctx, -1)
        if i + 1 < n:
            llm.eval([token])
    seconds = time.perf_counter() - start
    sampler.close()
    return {"tokens": n, "decodes": n - 1, "seconds": seconds}


def run_outlines(backend: LlamaCppBackend, prefix: str, suffix: str, schema: dict) -> dict:
    generator = backend.generator(schema)
    processor = generator.logits_processor
    calls: list[float] = []
    original = processor.process_logits

    def timed(input_ids, logits):  # type: ignore[no-untyped-def]
        calls.append(time.perf_counter())
        return original(input_ids, logits)

    processor.process_logits = timed
    try:
        backend.decoder = "outlines"
        gen = backend.generate(prefix, suffix, schema, DEFAULT_MAX_TOKENS, REPEAT_PENALTY)
        end = time.perf_counter()
    finally:
        del processor.process_logits
    # The first call comes right after the prompt's decode; one call per sampled token, the last one is EOS.
    out_tokens = len(calls) - 1
    return {
        "text": gen.text,
        "tokens": out_tokens,
        "decodes": out_tokens,
        "seconds": end - calls[0],
        "retokenized": gen.generated_tokens,
    }


def run_fast(backend: LlamaCppBackend, prefix: str, suffix: str, schema: dict) -> dict:
    decoder, backend.decoder = backend.decoder, "forced"
    try:
        gen = backend.generate(prefix, suffix, schema, DEFAULT_MAX_TOKENS, REPEAT_PENALTY)
    finally:
        backend.decoder = decoder
    return {
        "text": gen.text,
        "tokens": gen.generated_tokens,
        "decodes": gen.decode_calls,
        "seconds": gen.generation_seconds,
        "forced": gen.forced_tokens,
        "sampled": gen.sampled_tokens,
        "mask_seconds": gen.mask_seconds,
        "masks": gen.masks,
        "stop": gen.stop_reason,
    }


def run_fast_variant(
    backend: LlamaCppBackend,
    prefix: str,
    suffix: str,
    schema: dict,
    *,
    overlap: bool = True,
    batch_forced: bool = True,
    lazy_mask: bool = True,
) -> dict:
    """The fast loop with one of its two mechanisms switched off (same decoder, same process)."""
    dec = backend.fast_decoder()
    pool = dec._pool
    if not overlap:
        dec._pool = None
    try:
        prompt = prompt_ready(backend, prefix, suffix)
        r = dec.decode(
            schema,
            DEFAULT_MAX_TOKENS,
            repeat_penalty=REPEAT_PENALTY,
            prompt_tokens=prompt,
            batch_forced=batch_forced,
            lazy_mask=lazy_mask,
        )
    finally:
        dec._pool = pool
    text = backend.llm.detokenize(r.tokens, prev_tokens=prompt).decode("utf-8", errors="ignore")
    return {
        "text": text,
        "tokens": len(r.tokens),
        "decodes": r.decode_calls,
        "seconds": r.seconds,
        "forced": r.forced_tokens,
        "sampled": r.sampled_tokens,
        "mask_seconds": r.mask_seconds,
        "masks": r.masks,
        "stop": r.stop_reason,
        "decode_seconds": r.decode_seconds,
    }


def run_rotating(fns: dict[Any, Callable[[], Any]], reps: int) -> dict[Any, list[Any]]:
    """Each variant ``reps`` times, interleaved in rotating order so that none always runs first (machine load
    and the order itself shift timings here); the results of each variant, in order."""
    runs: dict[Any, list[Any]] = {k: [] for k in fns}
    order = list(fns)
    for rep in range(reps):
        for key in order[rep % len(order) :] + order[: rep % len(order)]:
            runs[key].append(fns[key]())
    return runs


def outside_decode_overhead(constrained: list[dict], unconstrained: list[dict]) -> dict:
    """Per-token cost of the constraint, split from llama.cpp's decode time. Both loops run one decode per
    output token; what differs is the work between decodes (llguidance, the masked pick, the penalty window
    vs a plain argmax). That work is small and CPU-bound, so its difference per decode, over an unconstrained
    token's time, is a measure that the machine's run-to-run noise in the decodes (about +-12% here) does not
    swamp. ``decode_ratio`` (median time per decode, constrained over unconstrained) checks the premise that
    the constraint work does not slow the decodes themselves; it carries that noise. ``end_to_end`` is the
    plain comparison of whole-loop time per decode, noise included."""

    def per_decode(runs: list[dict], seconds: Callable[[dict], float]) -> float:
        return statistics.median(seconds(r) / max(r["decodes"], 1) for r in runs)

    def outside(r: dict) -> float:
        return r["seconds"] - r["decode_seconds"]

    def loop(r: dict) -> float:
        return r["seconds"]

    def decode(r: dict) -> float:
        return r["decode_seconds"]

    other_c, other_a = per_decode(constrained, outside), per_decode(unconstrained, outside)
    token_a = per_decode(unconstrained, loop)
    return {
        "outside_decode_ms_constrained": other_c * 1e3,
        "outside_decode_ms_unconstrained": other_a * 1e3,
        "overhead": (other_c - other_a) / token_a,
        "decode_ratio": per_decode(constrained, decode) / per_decode(unconstrained, decode),
        "end_to_end": per_decode(constrained, loop) / token_a - 1,
    }


def fast_digests() -> dict[str, str]:
    backend = LlamaCppBackend(resolve_model())
    schema = draft_json_schema()
    return {
        name: hashlib.sha256(run_fast(backend, prefix, suffix, schema)["text"].encode()).hexdigest()
        for name, prefix, suffix in build_prompts(backend)
    }


def valid(text: str) -> bool:
    try:
        Draft.model_validate_json(text)
        return True
    except ValueError:
        return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=str(REPO / "bench-results" / "decode.json"))
    ap.add_argument("--fast-digests", action="store_true", help="only print sha256 of (c)'s text per prompt")
    ap.add_argument("--no-cross-process", action="store_true", help="skip the second-process determinism check")
    args = ap.parse_args()
    if args.fast_digests:
        print(json.dumps(fast_digests()))
        return

    t0 = time.perf_counter()
    backend = LlamaCppBackend(resolve_model())
    schema = draft_json_schema()
    backend.generator(schema)  # Outlines: compile (and build the llguidance tokenizer) outside the timing
    backend.fast_decoder()  # shares that tokenizer
    setup_s = time.perf_counter() - t0
    prompts = build_prompts(backend)

    results = []
    for name, prefix, suffix in prompts:
        b0 = run_outlines(backend, prefix, suffix, schema)  # warm-up + N
        n = b0["tokens"]
        fns = {
            "a": lambda: run_unconstrained_numpy(backend, prefix, suffix, n),
            "a2": lambda: run_unconstrained_sampler(backend, prefix, suffix, n),
            "b": lambda: run_outlines(backend, prefix, suffix, schema),
            "c": lambda: run_fast(backend, prefix, suffix, schema),
            "c_eager": lambda: run_fast_variant(backend, prefix, suffix, schema, lazy_mask=False),
            "c_1by1": lambda: run_fast_variant(backend, prefix, suffix, schema, batch_forced=False),
        }
        runs = run_rotating(fns, args.reps)
        med = {k: statistics.median(r["seconds"] for r in v) for k, v in runs.items()}
        texts_b = {r["text"] for r in runs["b"]}
        texts_c = {r["text"] for r in runs["c"]}
        c0 = runs["c"][0]
        rate = {k: runs[k][0]["tokens"] / med[k] for k in med}
        per_tok = {k: med[k] / max(runs[k][0]["decodes"], 1) for k in runs}
        row = {
            "prompt": name,
            "prompt_tokens": len(backend.tokenize(prefix + suffix, add_bos=True)),
            "n_tokens_b": n,
            "n_tokens_c": c0["tokens"],
            "forced_c": c0["forced"],
            "sampled_c": c0["sampled"],
            "decodes_c": c0["decodes"],
            "forced_share_c": c0["forced"] / max(c0["tokens"], 1),
            "tokens_per_decode_c": c0["tokens"] / max(c0["decodes"], 1),
            "median_seconds": med,
            "all_seconds": {k: [r["seconds"] for r in v] for k, v in runs.items()},
            "tokens_per_s": rate,
            "seconds_per_decode": per_tok,
            "overhead_b_vs_a": per_tok["b"] / per_tok["a"] - 1,
            "overhead_b_vs_a2": per_tok["b"] / per_tok["a2"] - 1,
            "effective_ratio_c_vs_a": rate["c"] / rate["a"],
            "c_seconds_per_decode": med["c"] / max(c0["decodes"], 1),
            "c_mask_seconds_median": statistics.median(r["mask_seconds"] for r in runs["c"]),
            "stop_c": c0["stop"],
            "b_deterministic": len(texts_b) == 1 and b0["text"] in texts_b,
            "c_deterministic": len(texts_c) == 1,
            "b_valid": all(valid(t) for t in texts_b),
            "c_valid": all(valid(t) for t in texts_c),
            "c_equals_b": texts_b == texts_c,
            "c_1by1_equals_b": texts_b == {r["text"] for r in runs["c_1by1"]},
            "c_eager_equals_c": texts_c == {r["text"] for r in runs["c_eager"]},
            "masks_c": c0["masks"],
            "sampled_steps_c": c0["sampled"] + (1 if c0["stop"] == "eos" else 0),
            "overhead_c_1by1_vs_a": per_tok["c_1by1"] / per_tok["a"] - 1,
            "c_1by1_outside_decode": outside_decode_overhead(runs["c_1by1"], runs["a"]),
            "effective_ratio_c_eager_vs_a": rate["c_eager"] / rate["a"],
            "text_b": runs["b"][0]["text"],
            "text_c": c0["text"],
        }
        results.append(row)
        print(f"{name}: done", file=sys.stderr)

    hdr = (
        f"{'prompt':32} {'ptok':>5} {'N(b)':>5} {'N(c)':>5} {'forced':>7} {'a tok/s':>8} {'a2 tok/s':>8} "
        f"{'b tok/s':>8} {'b ovh':>7} {'c tok/s':>8} {'c/a':>6} {'N/dec':>6} {'valid b/c':>9} {'c==b':>5}"
    )
    print(hdr)
    for r in results:
        t = r["tokens_per_s"]
        print(
            f"{r['prompt'][:32]:32} {r['prompt_tokens']:5d} {r['n_tokens_b']:5d} {r['n_tokens_c']:5d} "
            f"{r['forced_share_c']:7.1%} {t['a']:8.1f} {t['a2']:8.1f} {t['b']:8.1f} {r['overhead_b_vs_a']:+7.1%} "
            f"{t['c']:8.1f} {r['effective_ratio_c_vs_a']:5.2f}x {r['tokens_per_decode_c']:6.2f} "
            f"{str(r['b_valid'])[0]}/{str(r['c_valid'])[0]:>7} {str(r['c_equals_b']):>5}"
        )
    summary = {
        "median_overhead_b_vs_a": statistics.median(r["overhead_b_vs_a"] for r in results),
        "median_overhead_b_vs_a2": statistics.median(r["overhead_b_vs_a2"] for r in results),
        "median_effective_ratio_c_vs_a": statistics.median(r["effective_ratio_c_vs_a"] for r in results),
        "median_forced_share_c": statistics.median(r["forced_share_c"] for r in results),
        "median_overhead_c_1by1_vs_a": statistics.median(r["overhead_c_1by1_vs_a"] for r in results),
        "c_1by1_outside_decode_overhead": [r["c_1by1_outside_decode"]["overhead"] for r in results],
        "c_1by1_decode_ratio": [r["c_1by1_outside_decode"]["decode_ratio"] for r in results],
        "median_effective_ratio_c_eager_vs_a": statistics.median(r["effective_ratio_c_eager_vs_a"] for r in results),
    }
    if not args.no_cross_process:
        # Note: this process built the fast decoder with Outlines' tokenizer; the child builds its own.
        child = subprocess.run([sys.executable, __file__, "--fast-digests"], capture_output=True, text=True, check=True)
        theirs = json.loads(child.stdout.strip().splitlines()[-1])
        for r in results:
            r["c_same_bytes_other_process"] = theirs[r["prompt"]] == hashlib.sha256(r["text_c"].encode()).hexdigest()
        summary["c_same_bytes_other_process"] = all(r["c_same_bytes_other_process"] for r in results)
    summary["b_deterministic"] = all(r["b_deterministic"] for r in results)
    summary["c_deterministic"] = all(r["c_deterministic"] for r in results)
    summary["c_valid"] = all(r["c_valid"] for r in results)
    summary["b_valid"] = all(r["b_valid"] for r in results)
    summary["c_equals_b"] = [r["c_equals_b"] for r in results]
    summary["c_1by1_equals_b"] = [r["c_1by1_equals_b"] for r in results]
    summary["c_eager_equals_c"] = [r["c_eager_equals_c"] for r in results]
    print(json.dumps(summary, indent=1))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "setup_seconds": setup_s,
                "reps": args.reps,
                "n_threads": backend.n_threads,
                "repeat_penalty": REPEAT_PENALTY,
                "summary": summary,
                "prompts": results,
            },
            indent=1,
        )
    )
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
