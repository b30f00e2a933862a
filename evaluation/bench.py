"""``python -m evaluation bench``: measure, side by side with a baseline in the same run, and write
``results.json``, ``results.md`` and ``chart.png`` under a results folder.

Sections (each row says what ran, so numbers from different machines are never mixed up):
- trigger: per-step cost of the exact token count at 8k / 32k / 128k-token histories, incremental (cached per
  message, what the hook does) vs re-rendering and re-encoding the whole history each step (the seed design);
- steps (issue 47): ``CompactionHook.before_step`` with no compaction firing on a history of short tool calls at
  100 / 1,000 / 10,000 messages, against re-encoding the whole history each step (the seed's trigger); the time to
  the first decision of a fresh process (import, a hook, a first step on 30 messages) and its peak RSS once the
  tokenizer is loaded, against the seed's (the tokenizer loaded, then the history encoded). Each in a fresh
  interpreter; ``--before DIR`` runs the same against the library in DIR (a checkout of an earlier version);
- compression: latency on real trajectories (median, p95), split into prompt processing, generation and grammar
  (mask) time; peak resident memory;
- decoding: unconstrained greedy vs Outlines-constrained vs our forced-token loop, tokens/s on the same prompt;
  the loop's effective output rate over unconstrained decoding on every trajectory's own prompt;
- threads 1..N (prompt processing and generation rates) and prefix cache on/off; the adaptive thread count vs
  all cores, idle and with another busy process; flash attention on vs off;
- naive: the whole history JSON-dumped into the prompt (the seed) vs ours, same trajectories;
- GPU (n_gpu_layers=-1) when llama-cpp-python was built with CUDA; the report names the backend that ran.

Medians, not means: these machines are noisy. No timing is asserted anywhere; this only measures.
"""

from __future__ import annotations

import argparse
import functools
import gc
import itertools
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tqdm import tqdm

from offline_compress.hook.config import HookConfig

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
SHARED = REPO.parent / "shared" / "trajectories"


def log(message: str) -> None:
    tqdm.write(f"bench: {message}", file=sys.stderr)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def p95(values: Sequence[float]) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds of one call, with the garbage collector paused during it (as ``timeit`` does), so a collection
    triggered by an earlier measurement does not land in this one."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        out = fn()
        return time.perf_counter() - start, out
    finally:
        if enabled:
            gc.enable()


def gpu_name() -> str:
    """The GPU's name as nvidia-smi gives it ("" without one)."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def machine() -> dict[str, Any]:
    try:
        import llama_cpp
    except ImportError:  # a light install (no local-model extra): the sections that need no model still run
        llama_cpp = None

    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu or platform.processor(),
        "cores_available": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": platform.python_version(),
        "llama_cpp_python": llama_cpp.__version__ if llama_cpp else None,
        "gpu_offload_supported": bool(llama_cpp and llama_cpp.llama_supports_gpu_offload()),
        "load_average_at_start": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }


# -- trigger -----------------------------------------------------------------------------------------------
def trajectory_files(paths: Sequence[str] | None, quick: bool) -> list[Path]:
    if paths:
        found: list[Path] = []
        for p in map(Path, paths):
            found += sorted(x for x in p.rglob("*") if x.is_file()) if p.is_dir() else [p]
    else:
        base = SHARED if SHARED.exists() else FIXTURES
        found = sorted(x for x in base.rglob("*.traj.json"))
    if quick:
        found = [p for p in found if p.name == "github_issue.traj.json"] or found[:1]
    return found


def synthetic_history(messages: list[dict[str, Any]], target_tokens: int, counter: Any) -> list[dict[str, Any]]:
    """Real messages repeated until ``target_tokens``, each made unique (so no cache entry is shared)."""
    history: list[dict[str, Any]] = []
    i = 0
    while True:
        m = dict(messages[i % len(messages)])
        if i >= len(messages):
            m["content"] = f"{m.get('content') or ''}\n[repeat {i}]"
        history.append(m)
        i += 1
        if i % 16 == 0 and counter.count(history) >= target_tokens:
            return history


def bench_trigger(sizes: Sequence[int], steps: int) -> list[dict[str, Any]]:
    from offline_compress.formats import load_history
    from offline_compress.history.messages import MessageCache
    from offline_compress.tokens.chat_template import render
    from offline_compress.tokens.counter import TokenCounter

    counter_for_building = TokenCounter()
    source = [m.to_openai() for m in load_history(FIXTURES / "mini-swe-agent" / "psf__requests-2317.traj.json")]
    rows = []
    for size in sizes:
        history = synthetic_history(source, size, counter_for_building)
        counter = TokenCounter(counter_for_building.tokenizer)  # fresh cache: what a new session has
        cache = MessageCache()
        counter.count(cache.parse(history))  # earlier steps of the session filled the cache
        tokenizer, template = counter.tokenizer, counter.template
        steps_msgs = [
            {"role": "user" if k % 2 else "assistant", "content": f"step {k}: " + "ok " * 40} for k in range(steps)
        ]
        # Two passes over the same steps, not interleaved: re-encoding 500 KB between two incremental steps
        # evicts the caches the agent's own loop would keep warm, and would bill that to the incremental path.
        incremental, inc_counts, grown = [], [], history
        for m in steps_msgs:
            grown = grown + [m]
            t, n = timed(lambda: counter.count(cache.parse(grown)))
            incremental.append(t)
            inc_counts.append(n)
        full, grown = [], history
        for m, n_inc in zip(steps_msgs, inc_counts):
            grown = grown + [m]
            # The seed design: render the whole history and encode it all, every step.
            t, n_full = timed(lambda: 1 + len(tokenizer.encode(render(template, grown), add_special_tokens=False)))
            if n_inc != n_full:
                raise AssertionError(f"counts differ at {size}: incremental {n_inc} vs full {n_full}")
            full.append(t)
        history = grown
        rows.append(
            {
                "history_tokens": n_inc,
                "messages": len(history),
                "incremental_ms_median": 1000 * median(incremental),
                "full_reencode_ms_median": 1000 * median(full),
                "ratio": median(full) / median(incremental),
                "counts_equal": True,
            }
        )
        log(
            f"trigger at {n_inc} tokens: incremental {rows[-1]['incremental_ms_median']:.2f} ms, "
            f"full {rows[-1]['full_reencode_ms_median']:.1f} ms ({rows[-1]['ratio']:.0f}x)"
        )
    return rows


# -- steps (issue 47) ------------------------------------------------------------------------------------------
# Each case runs in a fresh interpreter that imports offline_compress from the library given (this checkout, or
# --before's), through this file run as a script: ``--worker KIND JSON`` prints one ``RESULT {json}`` line.
STEP_SIZES = (100, 1_000, 10_000)
HEAD = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix the failing test."}]


def short_calls(n: int, start: int = 0) -> list[dict[str, Any]]:
    """``n`` messages of an agent's short tool calls (a call, then its result)."""
    out: list[dict[str, Any]] = []
    for k in range(start, start + (n + 1) // 2):
        call = {
            "id": f"c{k}",
            "type": "function",
            "function": {"name": "bash", "arguments": f'{{"cmd": "cat f{k}.py"}}'},
        }
        out.append({"role": "assistant", "content": f"Step {k}: read f{k}.py.", "tool_calls": [call]})
        out.append({"role": "tool", "tool_call_id": f"c{k}", "content": f"def f{k}():\n    return {k}\n"})
    return out[:n]


def _work_steps(args: dict[str, Any]) -> dict[str, Any]:
    """Median ``before_step`` time per agent step (a call and its result appended) at each size, the tokenizer
    loaded (the steady state); with ``seed``, the seed's trigger on the same histories too."""
    from offline_compress import CompactionHook
    from offline_compress.hook.trigger import TriggerConfig

    rows, fresh = [], itertools.count(10**6)  # every step's messages new to the process (no cache hit)
    with tempfile.TemporaryDirectory() as tmp:
        for n in args["sizes"]:
            never = TriggerConfig(turn_limit=10**9)  # and a window far over the history: no compaction fires
            hook = CompactionHook(10**9, HookConfig(trigger=never), archive_path=Path(tmp) / f"{n}.sqlite3")
            hook.counter.tokenizer  # noqa: B018  # loaded before the clock starts (the cold start: _work_cold)
            history = HEAD + short_calls(n - len(HEAD))
            hook.before_step(history)
            times = []
            for _ in range(args["warmup"] + args["steps"]):
                history = history + short_calls(2, start=next(fresh))
                times.append(timed(lambda: hook.before_step(history))[0])
            row = {"messages": n, "ms": 1000 * median(times[args["warmup"] :])}
            if args.get("seed"):  # the seed's trigger: the whole history rendered and encoded at every step
                from offline_compress.tokens.chat_template import render

                tokenizer, template, seed = hook.counter.tokenizer, hook.counter.template, []
                for _ in range(args["seed_steps"]):
                    history = history + short_calls(2, start=next(fresh))
                    seed.append(timed(lambda: len(tokenizer.encode(render(template, history))))[0])
                row["seed_ms"] = 1000 * median(seed)
            rows.append(row)
            hook.close()
    return {"rows": rows}


def _work_cold(args: dict[str, Any]) -> dict[str, Any]:
    """A fresh process's first decision: import, a hook (the extractive default), a first step on 30 messages;
    then its peak RSS once the tokenizer is loaded and a step counted exactly. ``seed``: the seed's way instead
    (the tokenizer loaded, then the 30 messages rendered and encoded)."""
    history = HEAD + short_calls(28)
    start = time.perf_counter()
    if args.get("seed"):
        from offline_compress.tokens.chat_template import render
        from offline_compress.tokens.counter import TokenCounter

        counter = TokenCounter()
        len(counter.tokenizer.encode(render(counter.template, history)))
        return {"first_decision_s": time.perf_counter() - start, "peak_rss_mb": peak_rss_mb()}
    import offline_compress  # noqa: F401

    imported = time.perf_counter() - start
    from offline_compress import CompactionHook

    with tempfile.TemporaryDirectory() as tmp:
        hook = CompactionHook(32_768, archive_path=Path(tmp) / "a.sqlite3")
        hook.before_step(history)
        first = time.perf_counter() - start
        exact = getattr(hook.last_decision, "exact", True)
        hook.counter.tokenizer  # noqa: B018  # the background load, waited for
        loaded = time.perf_counter() - start
        hook.before_step(history + short_calls(2, start=99))
        hook.close()
    return {
        "import_s": imported,
        "first_decision_s": first,
        "first_decision_exact": exact,
        "tokenizer_loaded_s": loaded,
        "peak_rss_mb": peak_rss_mb(),
    }


_WORKERS = {"steps": _work_steps, "cold": _work_cold}


def run_worker(kind: str, args: dict[str, Any], library: Path, models: Path | None = None) -> dict[str, Any]:
    """One case in a fresh interpreter that imports ``offline_compress`` from ``library`` (models from ``models``)."""
    models = models or Path(os.environ.get("OFFLINE_COMPRESS_MODEL_DIR", str(REPO / "models")))
    env = {**os.environ, "PYTHONPATH": str(library), "OFFLINE_COMPRESS_MODEL_DIR": str(models)}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, json.dumps(args)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=str(library), timeout=3600)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            result: dict[str, Any] = json.loads(line[len("RESULT ") :])
            return result
    raise RuntimeError(f"{kind} worker failed: {(done.stderr.strip().splitlines() or ['no result'])[-1][:300]}")


def bench_steps(before: Path | None, before_models: Path | None, quick: bool) -> dict[str, list[dict[str, Any]]]:
    """The steps section (module docstring): per-step rows by size, cold-start rows by library."""
    libraries = {"now": REPO, **({"before": before.resolve()} if before else {})}
    models = {"before": before_models}
    sizes = list(STEP_SIZES)
    steps_args = {"sizes": sizes, "warmup": 5, "steps": 10 if quick else 40, "seed_steps": 3 if quick else 10}
    per_step: dict[str, dict[int, dict[str, Any]]] = {}
    for label, library in libraries.items():
        log(f"steps: per-step cost ({label})")
        got = run_worker("steps", steps_args | {"seed": label == "now"}, library, models.get(label))
        per_step[label] = {r["messages"]: r for r in got["rows"]}
    rows = []
    for n in sizes:
        now = per_step["now"][n]
        row = {"messages": n, "now_ms": now["ms"], "now_over_100": now["ms"] / per_step["now"][sizes[0]]["ms"]}
        if "before" in per_step:
            then = per_step["before"][n]["ms"]
            row |= {"before_ms": then, "before_over_100": then / per_step["before"][sizes[0]]["ms"]}
            row["before_over_now"] = then / now["ms"]
        row |= {"seed_reencode_ms": now["seed_ms"], "seed_over_now": now["seed_ms"] / now["ms"]}
        rows.append(row)
    cold = []
    runs = 3 if quick else 7
    cases = [(label, library, False) for label, library in libraries.items()] + [("seed (re-encode)", REPO, True)]
    for label, library, seed in cases:
        log(f"steps: cold start ({label}), {runs} fresh processes")
        got = [run_worker("cold", {"seed": seed}, library, models.get(label)) for _ in range(runs)]
        row: dict[str, Any] = {"library": label, "runs": runs}
        for key in ("import_s", "first_decision_s", "tokenizer_loaded_s", "peak_rss_mb"):
            if key in got[0]:
                row[f"{key}_median"] = median([g[key] for g in got])
        row["first_decision_exact"] = all(g.get("first_decision_exact", True) for g in got)
        cold.append(row)
    return {"steps": rows, "cold_start": cold}


# -- compression -------------------------------------------------------------------------------------------
def bench_compression(compressor: Any, files: Sequence[Path], repeats: int) -> list[dict[str, Any]]:
    from offline_compress.formats import load_history
    from offline_compress.tokens.counter import get_counter

    counter = get_counter()
    rows = []
    for path in tqdm(files, desc="compress", file=sys.stderr):
        try:
            messages = load_history(path)
        except Exception as err:  # a file in no known format is not a benchmark input
            log(f"skipped {path.name}: {err}")
            continue
        if len(messages) <= compressor.keep_last + 1:
            continue
        runs = [compressor.compress_detailed(messages) for _ in range(repeats)]
        s = [r.stats for r in runs]
        rows.append(
            {
                "trajectory": path.name,
                "history_tokens": counter.count(messages),
                "compressed_messages": s[0].messages_compressed,
                "prompt_tokens": s[0].prompt_tokens,
                "generated_tokens": s[0].generated_tokens,
                "forced_tokens": getattr(s[0], "forced_tokens", 0),
                "total_s": median([x.total_seconds for x in s]),
                "prompt_s": median([x.prompt_seconds for x in s]),
                "generation_s": median([x.generation_seconds for x in s]),
                "generated_tok_s": median(
                    [x.generated_tokens / x.generation_seconds for x in s if x.generation_seconds]
                ),
                "grammar_s": median([x.grammar_seconds for x in s]),
                "same_bytes": len({r.context.to_json() for r in runs}) == 1,
                "draft_valid": all(x.draft_valid for x in s),
                "attempts": max(x.attempts for x in s),
                "threads": sorted({x.threads for x in s}),
            }
        )
    return rows


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    totals = [r["total_s"] for r in rows]
    return {
        "trajectories": len(totals),
        "median_s": median(totals),
        "p95_s": p95(totals),
        "median_prompt_s": median([r["prompt_s"] for r in rows]),
        "median_generation_s": median([r["generation_s"] for r in rows]),
        "median_generated_tok_s": median([r["generated_tok_s"] for r in rows]),
        "drafts_valid": sum(r["draft_valid"] for r in rows),
    }


def bench_server(model_path: Path, files: Sequence[Path], repeats: int, n_gpu_layers: int, out: Path) -> dict[str, Any]:
    """The same compressions through llama-cpp-python's own server (``llama_cpp.server``) serving the same GGUF,
    asked through ``/v1/completions`` with a GBNF grammar (what that server accepts): what the server backend costs
    next to the in-process one. The server's grammar sampler checks every candidate token of Gemma's 262k
    vocabulary at each step, so it is slow; few files."""
    from offline_compress.compressor import Compressor
    from offline_compress.engine.openai_server import OpenAIServerBackend

    from .llama_server import serve

    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with serve(model_path, out / "llama_server.log", n_ctx=4096, n_gpu_layers=n_gpu_layers) as url:
        started = time.perf_counter() - start
        backend = OpenAIServerBackend(url, api="completions")
        compressor = Compressor(backend=backend)
        rows = bench_compression(compressor, files, repeats)
    summary = summarise(rows) | {
        "server": "llama-cpp-python " + _llama_cpp_version(),
        "n_gpu_layers": n_gpu_layers,
        "structured_outputs": backend.structured,
        "counting": backend.counting,
        "server_start_s": started,
    }
    log(
        f"server: median {summary['median_s']:.1f} s per compression, {summary['median_generated_tok_s']:.2f} tok/s "
        f"generated ({summary['drafts_valid']}/{len(rows)} drafts valid)"
    )
    return {"rows": rows, "summary": summary}


def _llama_cpp_version() -> str:
    import llama_cpp

    return str(llama_cpp.__version__)


def bench_decoders(compressor: Any, files: Sequence[Path], repeats: int) -> dict[str, Any]:
    """Whole-compaction wall time (cut, extract, prompt, model, ground, merge) with Outlines' Generator vs the
    forced-token loop, same backend, same trajectories, in rotating order (neither always runs first), with the
    prompt-processing / generation split. The decision rule of issue 15: the loop stays only if it saves >= 10%."""
    from offline_compress.formats import load_history

    backend = compressor.backend
    decoders = ("outlines", "forced")

    def compress_with(decoder: str, messages: Any) -> Any:
        backend.decoder = decoder
        return compressor.compress_detailed(messages)

    rows = []
    original = backend.decoder
    try:
        histories = []
        for path in files:
            try:
                messages = load_history(path)
            except Exception as err:  # a file in no known format is not a benchmark input
                log(f"skipped {path.name}: {err}")
                continue
            if len(messages) > compressor.keep_last + 1:
                histories.append((path, messages))
        for decoder in decoders:  # warm-up: grammar compiled, prefix cached, numba kernels loaded
            compress_with(decoder, histories[0][1])
        for path, messages in tqdm(histories, desc="decoders", file=sys.stderr):
            runs = _decode_script().run_rotating(
                {d: functools.partial(compress_with, d, messages) for d in decoders}, repeats
            )
            row: dict[str, Any] = {"trajectory": path.name, "prompt_tokens": runs["outlines"][0].stats.prompt_tokens}
            for d in decoders:
                s = [r.stats for r in runs[d]]
                row[f"{d}_total_s"] = median([x.total_seconds for x in s])
                row[f"{d}_prompt_s"] = median([x.prompt_seconds for x in s])
                row[f"{d}_generation_s"] = median([x.generation_seconds for x in s])
                row[f"{d}_generated_tokens"] = s[0].generated_tokens
                row[f"{d}_same_bytes"] = len({r.context.to_json() for r in runs[d]}) == 1
                row[f"{d}_runs_s"] = [x.total_seconds for x in s]
                row[f"{d}_runs_prompt_s"] = [x.prompt_seconds for x in s]
            row["saving"] = 1 - row["forced_total_s"] / row["outlines_total_s"]
            row["same_summary"] = runs["outlines"][0].context.to_json() == runs["forced"][0].context.to_json()
            rows.append(row)
            log(
                f"decoders {path.name}: outlines {row['outlines_total_s']:.2f} s, forced loop "
                f"{row['forced_total_s']:.2f} s ({row['saving']:+.1%})"
            )
    finally:
        backend.decoder = original
    summary: dict[str, Any] = {"trajectories": len(rows), "runs_each": repeats}
    for d in decoders:
        totals = [r[f"{d}_total_s"] for r in rows]
        summary[f"{d}_median_s"] = median(totals)
        summary[f"{d}_p95_s"] = p95(totals)
        summary[f"{d}_sum_s"] = sum(totals)
        summary[f"{d}_prompt_share"] = sum(r[f"{d}_prompt_s"] for r in rows) / sum(totals)
        summary[f"{d}_generation_share"] = sum(r[f"{d}_generation_s"] for r in rows) / sum(totals)
    summary["median_saving"] = median([r["saving"] for r in rows])
    summary["saving_of_summed_time"] = 1 - summary["forced_sum_s"] / summary["outlines_sum_s"]
    summary["saving_of_median"] = 1 - summary["forced_median_s"] / summary["outlines_median_s"]
    summary["saving_of_p95"] = 1 - summary["forced_p95_s"] / summary["outlines_p95_s"]
    return {"rows": rows, "summary": summary}


def bench_prefix_cache(compressor: Any, path: Path, repeats: int) -> dict[str, Any]:
    from offline_compress.formats import load_history

    messages = load_history(path)
    backend = compressor.backend
    cold, warm = [], []
    for _ in range(repeats):
        backend._prefix_states.clear()  # noqa: SLF001 - the benchmark switches the cache off on purpose
        cold.append(compressor.compress_detailed(messages).stats.prompt_seconds)
        warm.append(compressor.compress_detailed(messages).stats.prompt_seconds)
    return {
        "trajectory": path.name,
        "prompt_s_cache_off": median(cold),
        "prompt_s_cache_on": median(warm),
        "prefix_tokens": compressor.backend.count(compressor.prefix),
    }


@functools.cache
def _decode_script() -> Any:
    """scripts/bench_decode.py (the decoding variants, shared with that standalone script), loaded once."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_decode", REPO / "scripts" / "bench_decode.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tokens_per_s(runs: Sequence[dict[str, Any]]) -> float:
    """Median output tokens per second of decoding runs (scripts/bench_decode.py's ``run_*`` results)."""
    return median([r["tokens"] / r["seconds"] for r in runs])


def forced_share(runs: Sequence[dict[str, Any]]) -> float:
    """Median share of grammar-forced tokens in the forced-token loop's runs."""
    return median([r["forced"] / max(r["tokens"], 1) for r in runs])


def rate_ceiling(forced: float, cost_per_forced: float) -> float:
    """The most the forced-token loop can gain over unconstrained decoding: a share ``forced`` of the tokens
    costs ``cost_per_forced`` of a decode each, the rest a whole decode."""
    return 1 / ((1 - forced) + forced * cost_per_forced)


@functools.cache
def _bench_prompt(backend: Any) -> tuple[str, str, str]:
    """(name, fixed prefix, suffix) of the decoding prompt (the first of scripts/bench_decode.py's), built once."""
    return _decode_script().build_prompts(backend)[0]


def bench_decoding(compressor: Any, repeats: int) -> list[dict[str, Any]]:
    """Same prompt, same number of tokens: unconstrained greedy vs Outlines-constrained vs the forced-token
    loop (its effective rate counts every output token, forced ones included, over the loop's time), and the
    loop with forced tokens decoded one by one: constrained decoding's own per-token cost, end to end and split
    from llama.cpp's decode time (``outside_decode_overhead`` in scripts/bench_decode.py)."""
    bd = _decode_script()
    backend, schema = compressor.backend, compressor.schema
    name, prefix, suffix = _bench_prompt(backend)
    n = max(bd.run_outlines(backend, prefix, suffix, schema)["tokens"], 2)  # warm-up; its output length
    runs = bd.run_rotating(
        {
            "a": lambda: bd.run_unconstrained_numpy(backend, prefix, suffix, n),
            "b": lambda: bd.run_outlines(backend, prefix, suffix, schema),
            "c": lambda: bd.run_fast(backend, prefix, suffix, schema),
            "c1": lambda: bd.run_fast_variant(backend, prefix, suffix, schema, batch_forced=False),
        },
        repeats,
    )
    ua, ub, uc, u1 = (tokens_per_s(runs[k]) for k in ("a", "b", "c", "c1"))
    split = bd.outside_decode_overhead(runs["c1"], runs["a"])
    log(
        f"decoding: unconstrained {ua:.1f} tok/s, outlines {ub:.1f}, forced-token loop {uc:.1f}, "
        f"one by one {u1:.1f} (outside-decode overhead {split['overhead']:+.1%})"
    )
    return [
        {"mode": "unconstrained", "prompt": name, "tokens_per_s": ua, "vs_unconstrained": 1.0},
        {
            "mode": "outlines (llguidance)",
            "prompt": name,
            "tokens_per_s": ub,
            "vs_unconstrained": ub / ua,
            "per_token_overhead": ua / ub - 1,
        },
        {
            "mode": "forced-token loop",
            "prompt": name,
            "tokens_per_s": uc,
            "vs_unconstrained": uc / ua,
            "forced_share": forced_share(runs["c"]),
        },
        {
            "mode": "forced-token loop, forced tokens one by one",
            "prompt": name,
            "tokens_per_s": u1,
            "vs_unconstrained": u1 / ua,
            "per_token_overhead": split["end_to_end"],
            "outside_decode_overhead": split["overhead"],
            "decode_ratio": split["decode_ratio"],
        },
    ]


def bench_effective_rate(
    compressor: Any, files: Sequence[Path], repeats: int, cost_per_forced: float
) -> dict[str, Any]:
    """The forced-token loop's effective output rate over unconstrained greedy decoding on every trajectory's
    own prompt (``Compressor.prepare``: what a compression decodes), not on one prompt: the forced share, hence
    the gain, depends on how much the model writes. Per trajectory, both decode the loop's output length from
    the same prompt state, in rotating order; the summary gives the median over trajectories and the worst."""
    from offline_compress.formats import load_history

    bd = _decode_script()
    backend, schema, prefix = compressor.backend, compressor.schema, compressor.prefix
    rows = []
    for path in tqdm(files, desc="effective rate", file=sys.stderr):
        suffix = compressor.prepare(load_history(path)).suffix
        n = max(bd.run_fast(backend, prefix, suffix, schema)["tokens"], 2)  # warm-up; its output length
        runs = bd.run_rotating(
            {
                "a": lambda: bd.run_unconstrained_numpy(backend, prefix, suffix, n),
                "c": lambda: bd.run_fast(backend, prefix, suffix, schema),
            },
            repeats,
        )
        ua, uc, f = tokens_per_s(runs["a"]), tokens_per_s(runs["c"]), forced_share(runs["c"])
        rows.append(
            {
                "trajectory": path.name,
                "output_tokens": n,
                "forced_share": f,
                "unconstrained_tok_s": ua,
                "loop_tok_s": uc,
                "vs_unconstrained": uc / ua,
                "ceiling_vs_unconstrained": rate_ceiling(f, cost_per_forced),
            }
        )
        log(f"effective rate {path.name}: {uc:.1f} vs {ua:.1f} tok/s ({uc / ua:.2f}x, {f:.0%} forced)")
    ratios = [r["vs_unconstrained"] for r in rows]
    return {
        "rows": rows,
        "summary": {
            "trajectories": len(rows),
            "median_vs_unconstrained": median(ratios),
            "worst_vs_unconstrained": min(ratios, default=float("nan")),
            "best_vs_unconstrained": max(ratios, default=float("nan")),
            "median_forced_share": median([r["forced_share"] for r in rows]),
            "median_ceiling_vs_unconstrained": median([r["ceiling_vs_unconstrained"] for r in rows]),
        },
    }


def forced_token_cost(compressor: Any, repeats: int) -> dict[str, Any]:
    """What a forced token costs when it rides in the batch of the next sampled token, as in the forced-token
    loop: one decode of 1 + k tokens (logits for the last only) over one decode of 1 token, from the same
    prompt state. With a forced share f and that cost c per extra token, the loop's effective rate can reach
    at most 1 / ((1 - f) + f * c) times the unconstrained rate (mask and sampling time taken as free)."""
    bd = _decode_script()
    backend = compressor.backend
    _, prefix, suffix = _bench_prompt(backend)
    bd.prompt_ready(backend, prefix, suffix)
    llm = backend.llm
    probe = backend.tokenize(" The agent ran the tests and found that the field name did not exist in the model")
    base = int(llm.n_tokens)
    seconds: dict[int, list[float]] = {k: [] for k in (0, 1, 2, 4, 8)}
    for _ in range(repeats):
        for k in seconds:
            llm.n_tokens = base  # llm.eval drops the KV cache from here on
            seconds[k].append(timed(lambda: llm.eval(probe[: 1 + k]))[0])
    one = median(seconds[0])
    relative = {k: median(v) / one for k, v in seconds.items()}
    per_extra = median([(relative[k] - 1) / k for k in relative if k])
    return {"single_decode_ms": one * 1e3, "decode_of_1_plus_k_vs_1": relative, "cost_per_forced_token": per_extra}


def thread_rates(backend: Any, n: int, prompt_words: int, gen_tokens: int, repeats: int = 1) -> tuple[float, float]:
    """(prompt processing, unconstrained generation) tokens/s with ``n`` threads on a loaded backend; medians."""
    bd = _decode_script()
    _, prefix, suffix = _bench_prompt(backend)
    prompt = backend.tokenize("word " * prompt_words, add_bos=True)
    backend.set_threads(n)
    pp, tg = [], []
    for _ in range(repeats):
        backend.llm.reset()
        t_pp, _ = timed(lambda: backend.llm.eval(prompt))
        gen = bd.run_unconstrained_numpy(backend, prefix, suffix, gen_tokens)
        pp.append(len(prompt) / t_pp)
        tg.append(gen["tokens"] / gen["seconds"])
    return median(pp), median(tg)


def bench_threads(compressor: Any, prompt_words: int, gen_tokens: int) -> list[dict[str, Any]]:
    """Prompt processing and unconstrained generation rates for 1..N threads, on the one loaded model."""
    from offline_compress.engine.threads import available_cores

    rows = []
    for n in range(1, available_cores() + 1):
        pp, tg = thread_rates(compressor.backend, n, prompt_words, gen_tokens)
        rows.append({"threads": n, "prompt_tok_s": pp, "gen_tok_s": tg})
        log(f"threads {n}: prompt {pp:.0f} tok/s, generation {tg:.1f} tok/s")
    return rows


def bench_attention(
    compressor: Any, path: Path, prompt_words: int, gen_tokens: int, repeats: int
) -> list[dict[str, Any]]:
    """llama.cpp's flash attention on vs off: prompt processing and generation rates on two contexts of the same
    model (alternating which runs first), and whether a compression gives the same summary bytes either way."""
    from offline_compress.compressor import Compressor
    from offline_compress.engine.llamacpp import LlamaCppBackend
    from offline_compress.formats import load_history

    ours = compressor.backend
    other = LlamaCppBackend(ours.model_path, n_ctx=ours.n_ctx, n_threads=ours.n_threads, flash_attn=not ours.flash_attn)
    n = ours.n_threads
    rates = _decode_script().run_rotating(
        {b.flash_attn: functools.partial(thread_rates, b, n, prompt_words, gen_tokens) for b in (ours, other)}, repeats
    )
    messages = load_history(path)
    summaries = {
        ours.flash_attn: compressor.compress(messages).to_json(),
        other.flash_attn: Compressor(backend=other).compress(messages).to_json(),
    }
    del other
    rows = []
    for flash in (True, False):
        pp, tg = (median(x) for x in zip(*rates[flash]))
        rows.append(
            {
                "flash_attn": flash,
                "default": flash == ours.flash_attn,
                "threads": n,
                "prompt_tok_s": pp,
                "gen_tok_s": tg,
            }
        )
        log(f"flash attention {'on' if flash else 'off'}: prompt {pp:.0f} tok/s, generation {tg:.1f} tok/s")
    same = summaries[True] == summaries[False]
    for row in rows:
        row["gen_vs_off"] = row["gen_tok_s"] / rows[1]["gen_tok_s"]
        row["prompt_vs_off"] = row["prompt_tok_s"] / rows[1]["prompt_tok_s"]
        row["same_summary_as_off"] = same
    return rows


def memory_bandwidth_gb_s(size_mb: int = 512, repeats: int = 5) -> float:
    """Single-stream copy bandwidth (bytes read + written per second), as a STREAM-like copy with numpy."""
    import numpy as np

    src = np.ones(size_mb * (1 << 20) // 8)
    dst = np.empty_like(src)
    best = min(timed(lambda: np.copyto(dst, src))[0] for _ in range(repeats))
    return 2 * src.nbytes / best / 1e9


def read_bandwidth_gb_s(threads: int, size_mb: int = 512, repeats: int = 10) -> float:
    """Read bandwidth with ``threads`` threads: a parallel sum over an array far larger than the caches (what a
    decode does with the weights: read each byte once), best of ``repeats``. 64-bit integers: one add per 8
    bytes keeps the loop memory-bound (a float32 sum measured ~20% less on this machine, below a plain copy)."""
    import numba
    import numpy as np

    @numba.njit(parallel=True, fastmath=True, cache=True)
    def total(x):  # type: ignore[no-untyped-def]
        acc = 0
        for i in numba.prange(x.size):
            acc += x[i]
        return acc

    data = np.ones(size_mb * (1 << 20) // 8, dtype=np.int64)
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        total(data[:1024])  # compile outside the timing
        best = min(timed(lambda: total(data))[0] for _ in range(repeats))
    finally:
        numba.set_num_threads(before)
    return data.nbytes / best / 1e9


def bench_bandwidth(compressor: Any, decoding: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Unconstrained generation against the memory-bandwidth bound: every decode reads the whole GGUF once
    (the tied 262k-row output embedding is read for each token's logits), so the bound is the read bandwidth
    at the decode's thread count over the file size. The copy bandwidth (one thread) is kept for reference."""
    uncon = next((r for r in decoding if r["mode"] == "unconstrained"), None)
    if uncon is None:
        return None
    weights = compressor.backend.model_path.stat().st_size
    threads = compressor.backend.n_threads
    read = read_bandwidth_gb_s(threads)
    bound = read * 1e9 / weights
    log(f"bandwidth: read {read:.1f} GB/s with {threads} threads -> bound {bound:.0f} tok/s")
    return {
        "read_bandwidth_gb_s": read,
        "read_threads": threads,
        "copy_bandwidth_gb_s": memory_bandwidth_gb_s(),
        "weights_mb": weights / 1e6,
        "bound_tok_s": bound,
        "unconstrained_tok_s": uncon["tokens_per_s"],
        "share_of_bound": uncon["tokens_per_s"] / bound,
    }


def bench_contention(compressor: Any, prompt_words: int, gen_tokens: int, repeats: int) -> list[dict[str, Any]]:
    """The adaptive thread count (chosen before each generation from the CPUs free then) vs a fixed count of
    all available cores, idle and with one other busy process (a pure-Python spin loop), same prompt and run."""
    import subprocess

    from offline_compress.engine.threads import available_cores, threads_now

    cores = available_cores()
    rows = []
    for busy in (0, 1):
        hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
        try:
            time.sleep(0.5)  # let the scheduler see it
            chosen = threads_now()
            # Alternating which goes first: in two earlier bench runs the one measured first was ~10% faster.
            runs = _decode_script().run_rotating(
                {
                    name: functools.partial(thread_rates, compressor.backend, n, prompt_words, gen_tokens)
                    for name, n in (("fixed", cores), ("adaptive", chosen))
                },
                repeats,
            )
            fixed_pp, fixed_tg = (median(x) for x in zip(*runs["fixed"]))
            ad_pp, ad_tg = (median(x) for x in zip(*runs["adaptive"]))
        finally:
            if hog is not None:
                hog.kill()
                hog.wait()
        rows.append(
            {
                "other_busy_processes": busy,
                "fixed_threads": cores,
                "fixed_prompt_tok_s": fixed_pp,
                "fixed_gen_tok_s": fixed_tg,
                "adaptive_threads": chosen,
                "adaptive_prompt_tok_s": ad_pp,
                "adaptive_gen_tok_s": ad_tg,
                "prompt_speedup": ad_pp / fixed_pp,
                "gen_speedup": ad_tg / fixed_tg,
            }
        )
        log(
            f"{busy} busy process(es): fixed {cores} threads {fixed_pp:.0f}/{fixed_tg:.1f} tok/s, "
            f"adaptive {chosen} threads {ad_pp:.0f}/{ad_tg:.1f} tok/s (prompt/generation)"
        )
    return rows


def bench_naive(compressor: Any, files: Sequence[Path], n_ctx: int) -> list[dict[str, Any]]:
    """The seed design: the whole history JSON-dumped into the prompt (cut to fit the window), same grammar,
    same model, on a context big enough to hold it. Ours runs on the same files in the same process."""
    from offline_compress.engine.llamacpp import LlamaCppBackend
    from offline_compress.formats import load_history
    from offline_compress.history.cut import cut_index
    from offline_compress.summary.prompt import closing, fixed_prefix

    naive = LlamaCppBackend(compressor.backend.model_path, n_ctx=n_ctx, n_threads=compressor.backend.n_threads)
    prefix = fixed_prefix(naive.instruct)
    rows = []
    for path in tqdm(files, desc="naive", file=sys.stderr):
        messages = load_history(path)
        cut = cut_index(messages, compressor.keep_last)
        if cut == 0:
            continue
        dumped = json.dumps([m.to_openai() for m in messages[:cut]], ensure_ascii=False)
        room = n_ctx - compressor.max_tokens - naive.count(prefix) - 64
        tokens = naive.tokenize(dumped)
        truncated = len(tokens) > room
        if truncated:
            dumped = naive.llm.detokenize(tokens[-room:]).decode("utf-8", errors="ignore")
        naive_s, gen = timed(
            lambda: naive.generate(
                prefix, dumped + closing(False), compressor.schema, compressor.max_tokens, compressor.repeat_penalty
            )
        )
        ours_s, _ = timed(lambda: compressor.compress_detailed(messages))
        rows.append(
            {
                "trajectory": path.name,
                "naive_prompt_tokens": gen.prompt_tokens,
                "naive_truncated": truncated,
                "naive_s": naive_s,
                "ours_s": ours_s,
                "speedup": naive_s / ours_s,
            }
        )
        log(f"naive {path.name}: {naive_s:.1f} s vs ours {ours_s:.1f} s ({naive_s / ours_s:.1f}x)")
    naive.close()  # free the second model before the next section
    return rows


# -- report ------------------------------------------------------------------------------------------------
def _table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "(none)\n"
    keys = list(dict.fromkeys(k for r in rows for k in r))  # rows may differ (e.g. decoding modes)
    fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else str(v)  # noqa: E731
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(fmt(r.get(k, "")) for k in keys) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def save_partial(results: dict[str, Any], out: Path) -> None:
    """results.json as far as the run got (a run stopped at a time limit still leaves its finished sections)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")


def write_report(results: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    md = [f"# offline_compress benchmark\n\n{json.dumps(results['machine'])}\n"]
    for key, value in results.items():
        if key == "machine":
            continue
        md.append(f"\n## {key}\n\n")
        md.append(_table(value) if isinstance(value, list) else _table([value]))
    (out / "results.md").write_text("".join(md))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib not installed: no chart (pip install 'offline_compress[bench]')")
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    trig = results.get("trigger", [])
    if trig:
        labels = [f"{r['history_tokens'] // 1000}k" for r in trig]
        x = range(len(trig))
        axes[0].bar([i - 0.2 for i in x], [r["full_reencode_ms_median"] for r in trig], 0.4, label="full re-encode")
        axes[0].bar([i + 0.2 for i in x], [r["incremental_ms_median"] for r in trig], 0.4, label="incremental")
        axes[0].set_xticks(list(x), labels)
        axes[0].set_yscale("log")
        axes[0].set_ylabel("ms per agent step (median)")
        axes[0].set_title("trigger: exact token count")
        axes[0].legend()
    comp = results.get("naive_vs_ours") or []
    if comp:
        x = range(len(comp))
        axes[1].bar([i - 0.2 for i in x], [r["naive_s"] for r in comp], 0.4, label="naive (history in prompt)")
        axes[1].bar([i + 0.2 for i in x], [r["ours_s"] for r in comp], 0.4, label="ours")
        axes[1].set_xticks(
            list(x), [r["trajectory"].split(".")[0].split("__")[-1][:16] for r in comp], rotation=30, ha="right"
        )
        axes[1].set_ylabel("seconds per compression")
        axes[1].set_title("compression latency")
        axes[1].legend()
    fig.tight_layout()
    fig.savefig(out / "chart.png", dpi=110)


SECTIONS = (
    "trigger",
    "steps",
    "compression",
    "decoders",
    "decoding",
    "prefix_cache",
    "threads",
    "attention",
    "contention",
    "naive",
    "gpu",
    "server",
)
# What is worth a GPU's time (about 3 minutes on one): compression latency with every layer offloaded (both
# decoders), and the server backend against llama-cpp-python's server with every layer offloaded.
GPU_SECTIONS = ("gpu", "server")


def parse_sections(text: str | None, gpu_only: bool) -> list[str]:
    """The sections to run, in the bench's own order; an unknown name is an error that lists the known ones."""
    if gpu_only:
        return list(GPU_SECTIONS)
    if not text:
        return list(SECTIONS)
    asked = [x.strip() for x in text.split(",") if x.strip()]
    unknown = [x for x in asked if x not in SECTIONS]
    if unknown:
        raise ValueError(f"unknown bench section(s) {', '.join(unknown)}; known: {', '.join(SECTIONS)}")
    return [x for x in SECTIONS if x in asked]


def run(args: argparse.Namespace) -> int:
    from offline_compress.compressor import DEFAULT_MODEL, Compressor

    model = args.model or DEFAULT_MODEL  # None would mean no model at all
    quick = args.quick
    sections = parse_sections(args.sections, args.gpu_only)
    out = Path(args.out or REPO / "bench-results" / datetime.now().strftime("%Y%m%d-%H%M%S"))
    results: dict[str, Any] = {"machine": machine()}
    results["machine"]["mode"] = "quick" if quick else "full"
    results["machine"]["sections"] = sections
    log(f"writing results to {out}; sections: {', '.join(sections)}")
    if "trigger" in sections:
        results["trigger"] = bench_trigger((8_000, 32_000) if quick else (8_000, 32_000, 128_000), 3 if quick else 15)
    if "steps" in sections:
        before_models = Path(args.before_models) if args.before_models else None
        results |= bench_steps(Path(args.before) if args.before else None, before_models, quick)
        save_partial(results, out)
    files = trajectory_files(args.trajectories, quick)
    cpu_sections = [x for x in sections if x not in ("trigger", "steps", "gpu", "server")]
    compressor = None
    if cpu_sections:
        log("loading the compressor")
        compressor = Compressor(model, llama={"n_threads": args.threads})
        results["machine"]["threads"] = compressor.backend.n_threads
        results["machine"]["backend"] = compressor.backend.name
    if "compression" in sections:
        results["compression"] = bench_compression(compressor, files, 1 if quick else args.repeats)
        results["compression_summary"] = summarise(results["compression"]) | {"peak_rss_mb": peak_rss_mb()}
        save_partial(results, out)
    if "decoders" in sections:
        decoders = bench_decoders(compressor, files, 1 if quick else args.repeats)
        results["decoders"] = decoders["rows"]
        results["decoders_summary"] = decoders["summary"]
        save_partial(results, out)
    if "decoding" in sections:
        results["decoding"] = bench_decoding(compressor, repeats=1 if quick else 8)
        cost = forced_token_cost(compressor, 3 if quick else 7)
        for row in results["decoding"]:
            if "forced_share" in row:
                row["cost_per_forced_token"] = cost["cost_per_forced_token"]
                row["ceiling_vs_unconstrained"] = rate_ceiling(row["forced_share"], cost["cost_per_forced_token"])
        results["forced_token_cost"] = cost
        effective = bench_effective_rate(compressor, files, 1 if quick else 3, cost["cost_per_forced_token"])
        results["effective_rate"] = effective["rows"]
        results["effective_rate_summary"] = effective["summary"]
        bandwidth = bench_bandwidth(compressor, results["decoding"])
        if bandwidth:
            results["bandwidth"] = bandwidth
    if "prefix_cache" in sections:
        results["prefix_cache"] = bench_prefix_cache(compressor, files[0], 1 if quick else 3)
    if "threads" in sections:
        results["threads"] = bench_threads(compressor, 128 if quick else 512, 16 if quick else 64)
    if "attention" in sections:
        results["attention"] = bench_attention(
            compressor, files[0], 128 if quick else 512, 16 if quick else 64, 1 if quick else 6
        )
    if "contention" in sections:
        results["threads_under_load"] = bench_contention(
            compressor, 128 if quick else 512, 16 if quick else 64, 1 if quick else 3
        )
    if "naive" in sections:
        naive_files = files[:1] if quick else files[: args.naive_files]
        results["naive_vs_ours"] = bench_naive(compressor, naive_files, n_ctx=8192 if quick else 32768)
    gpu = results["machine"]["gpu_offload_supported"] and not args.no_gpu
    if "gpu" in sections:
        if gpu:
            del compressor  # one model on the machine at a time
            on_gpu = Compressor(model, llama={"n_gpu_layers": -1})
            results["machine"]["gpu_backend"] = on_gpu.backend.name
            results["machine"]["gpu_name"] = gpu_name()
            # Both decoders, same trajectories, rotating order: the compression latency on the GPU and what the
            # forced-token loop saves there.
            decoders = bench_decoders(on_gpu, files, 1 if quick else args.repeats)
            results["decoders_gpu"] = decoders["rows"]
            results["decoders_gpu_summary"] = decoders["summary"]
            save_partial(results, out)
            del on_gpu
        else:
            log(
                "gpu: skipped (llama-cpp-python has no GPU offload in this build)"
                if not args.no_gpu
                else "gpu: --no-gpu"
            )
    if "server" in sections:
        from offline_compress.compressor import DEFAULT_MODEL as default
        from offline_compress.model_files import resolve_model

        compressor = None  # the server loads its own copy of the model
        server = bench_server(
            resolve_model(None if model == default else model),
            files[: args.server_files],
            1 if quick else args.server_repeats,
            -1 if gpu else 0,
            out,
        )
        results["server"] = server["rows"]
        results["server_summary"] = server["summary"]
    results["machine"]["load_average_at_end"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    write_report(results, out)
    print((out / "results.md").read_text())
    return 0


def add_bench_parser(sub: Any) -> None:
    p = sub.add_parser(
        "bench", help="measure trigger, compression, decoding, threads, naive baseline (JSON + md + PNG)"
    )
    p.add_argument(
        "trajectories",
        nargs="*",
        help="trajectory files or folders (default: ../shared/trajectories "
        "mini-swe-agent runs, else the bundled fixtures)",
    )
    p.add_argument("--quick", action="store_true", help="about a minute: small sizes, one trajectory (CI smoke)")
    p.add_argument("--out", help="results folder (default bench-results/<timestamp>)")
    p.add_argument("--model", help="compressor model (manifest name or .gguf)")
    p.add_argument("--threads", type=int, help="llama.cpp threads (default: cores available)")
    p.add_argument("--repeats", type=int, default=3, help="runs per trajectory (median)")
    p.add_argument("--naive-files", type=int, default=4, help="trajectories for the naive baseline (slow)")
    p.add_argument(
        "--server-files",
        type=int,
        default=2,
        help="trajectories for the server section (llama.cpp's grammar sampler is slow on CPU)",
    )
    p.add_argument("--server-repeats", type=int, default=1, help="runs per trajectory in the server section")
    p.add_argument("--sections", help=f"comma-separated subset of: {', '.join(SECTIONS)} (default: all)")
    p.add_argument("--gpu-only", action="store_true", help=f"only the sections worth a GPU: {', '.join(GPU_SECTIONS)}")
    p.add_argument("--no-gpu", action="store_true", help="skip the GPU section even if CUDA is available")
    p.add_argument("--before", help="the steps section also runs against the library in this folder (a checkout)")
    p.add_argument(
        "--before-models", help="the models folder --before reads (e.g. its tokenizer.json as it derived it)"
    )
    p.set_defaults(func=run)


if __name__ == "__main__" and sys.argv[1:2] == ["--worker"]:  # a case of the steps section (run_worker)
    print("RESULT " + json.dumps(_WORKERS[sys.argv[2]](json.loads(sys.argv[3]))))
