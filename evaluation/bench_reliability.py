"""``python -m evaluation reliability``: issue 22's measurements, side by side, each case in a subprocess of its
own (its peak resident memory is then its own: ``resource.getrusage`` at the end of the case).

Sections:
- redaction: ``find_secrets`` throughput (MB/s) on normal text (the messages of the bundled real trajectories,
  and the same text joined into one string) and on worst cases (``WORST_CASES``: one long token after each
  vendor prefix, a prefix repeated, long base64, minified JS, PEM headers without an end, credential words in
  runs, ...), at two sizes, with the ratio of their times (2.0: linear);
- memory: peak RSS and seconds of ``offline-compress count FILE`` (in-process ``cli.main``) and of
  ``CompactionHook.before_step`` on a history holding one 10 MB and one 50 MB tool output, next to the
  process's RSS before the case (imports and tokenizer loaded) and the input's size;
- history: seconds of ``Compressor().compress`` on 20k / 50k / 100k-message histories (real messages
  repeated), medians, and the ratio per message to the smallest.

``--before DIR`` also runs every case against the library in DIR (e.g. ``git archive HEAD | tar -x -C DIR``):
the worker below imports nothing but ``offline_compress`` and the standard library, so it runs against any
version. Results: ``bench-results/reliability-<date>/results.json`` and ``results.md``. Medians; no timing is
asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
MB = 1_000_000

_B62 = string.ascii_letters + string.digits
_B64 = _B62 + "+/"
VENDOR_PREFIXES = (
    "AKIA",
    "xoxb-",
    "sk_live_",
    "sk-",
    "sk-proj-",
    "sk-ant-",
    "ghp_",
    "github_pat_",
    "glpat-",
    "hf_",
    "npm_",
    "AIza",
    "eyJ",
    "SG.",
    "pypi-AgEIcHlwaS5vcmc",
    "AccountKey=",
    "sig=",
)


def _random(alphabet: str, n: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choices(alphabet, k=n))


def _repeat(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def _worst_cases() -> dict[str, Callable[[int], str]]:
    cases: dict[str, Callable[[int], str]] = {}
    for i, p in enumerate(VENDOR_PREFIXES):
        alphabet = string.ascii_uppercase + string.digits if p == "AKIA" else _B62
        cases[f"one token {p}…"] = lambda n, p=p, a=alphabet, i=i: p + _random(a, max(0, n - len(p)), i)
        cases[f"{p} repeated"] = lambda n, p=p: _repeat(p, n)
    cases["AKIA key repeated"] = lambda n: _repeat("AK" + "IAIOSFODNN7EXAMPLE", n)
    cases["base64, one line"] = lambda n: _random(_B64, n, 101)
    cases["base64, quoted"] = lambda n: '"' + _random(_B64, n - 2, 102) + '"'
    cases["base64, 76-char lines"] = lambda n: "\n".join(_random(_B64, 76, i) for i in range(n // 77))
    js = 'var a=function(b){return b.c+"d"},e={password:"x",token:f(1),key:"AbC123"};'
    cases["minified JS"] = lambda n: _repeat(js, n)
    cases["PEM headers, no end"] = lambda n: _repeat("-----BEGIN " + "PRIVATE KEY-----", n)
    cases["PEM header, open body"] = lambda n: "-----BEGIN " + "PRIVATE KEY-----\n" + _random(_B64, n, 103)
    cases["password = ' unclosed"] = lambda n: _repeat("password = '" + "a" * 30, n)
    cases["password run"] = lambda n: _repeat("password", n)
    cases["api_key run, a quote"] = lambda n: _repeat("api_key", n - 2) + " '"
    cases["scheme://user: repeated"] = lambda n: _repeat("a://b:", n - 21) + " " + "A" * 20
    cases["curl repeated"] = lambda n: _repeat("curl ", n)
    cases["curl -u repeated"] = lambda n: "curl " + _repeat("-u 'a:b ", n - 5)
    cases["--password repeated"] = lambda n: _repeat(" --password", n)
    cases["Bearer repeated"] = lambda n: _repeat("Bearer ", n)
    cases[".env lines"] = lambda n: _repeat("ENCRYPTION_KEY=" + "a1" * 10 + "\n", n)
    cases["sig= repeated"] = lambda n: _repeat("&sig=" + "A" * 30, n - 14) + " sv=2020-01-01"
    cases["quoted hex"] = lambda n: _repeat('key "' + "0123456789abcdef" * 4 + '" ', n)
    cases["quoted high-entropy ids"] = lambda n: " ".join(f'"{_random(_B62, 30, i)}"' for i in range(n // 33))
    # mixed runs (once timed in tests/test_redact.py, now counted as the others are)
    cases["sk- tokens, password=, eyJ, x: runs"] = lambda n: (
        _repeat("sk-" + "a" * 50 + " ", n // 4)
        + _repeat("password=", n // 4)
        + "eyJ"
        + "a" * (n // 4)
        + "://"
        + _repeat("x:", n // 4)
    )
    cases["one quoted line, AccountKey= run"] = lambda n: (
        '"' + _repeat("A1b2", n // 2) + '"' + _repeat(" AccountKey=", n // 2)
    )
    cases["many short tokens, AKC keys"] = lambda n: (
        _repeat("x" * 19 + " ", n // 2) + _repeat("AKC" + "a" * 30 + " ", n // 2)
    )
    return cases


WORST_CASES = _worst_cases()


# -- the worker (one case per process; imports only offline_compress and the standard library) ------------------
def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _fixture_texts() -> list[str]:
    from offline_compress.formats import load_history

    texts = []
    for path in sorted((FIXTURES / "mini-swe-agent").glob("*.traj.json")):
        for m in load_history(path):
            texts.append(m.text)
            texts += [c.function.arguments for c in m.tool_calls or ()]
    return [t for t in texts if t]


def _best_seconds(fn: Callable[[], Any], reps: int) -> float:
    runs = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def _work_redaction(args: dict[str, Any]) -> dict[str, Any]:
    from offline_compress.secrets.redact import find_secrets

    size, reps = int(args["chars"]), int(args["reps"])
    find_secrets("warm up: AKIA and password=x")  # imports, plugin set-up
    texts = _fixture_texts()
    joined = "\n".join(texts)
    rows = []
    per_message = _best_seconds(lambda: [find_secrets(t) for t in texts], reps)
    chars = sum(map(len, texts))
    rows.append({"case": "normal: real messages, one by one", "chars": chars, "mb_per_s": chars / per_message / MB})
    cases: dict[str, Callable[[int], str]] = {
        "normal: real messages joined": lambda n: (joined * (n // len(joined) + 1))[:n]
    }
    cases.update({name: WORST_CASES[name] for name in args.get("cases") or WORST_CASES})
    for name, make in cases.items():
        small, large = make(size), make(2 * size)
        t_small = _best_seconds(lambda: find_secrets(small), reps)
        t_large = _best_seconds(lambda: find_secrets(large), reps)
        rows.append(
            {
                "case": name,
                "chars": len(small),
                "mb_per_s": len(small) / t_small / MB,
                "seconds": t_small,
                "seconds_at_2x": t_large,
                "ratio_2x": t_large / t_small,
            }
        )
    return {"rows": rows}


def _work_count(args: dict[str, Any]) -> dict[str, Any]:
    import contextlib
    import io

    from offline_compress.cli import main
    from offline_compress.tokens.counter import default_counter

    default_counter().count_text("warm up")  # the tokenizer, loaded as any count loads it
    before = _peak_mb()
    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        rc = main(["count", args["path"]])
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "peak_mb": _peak_mb(), "rss_before_mb": before, "rc": rc, "output": out.getvalue()}


def _work_before_step(args: dict[str, Any]) -> dict[str, Any]:
    from offline_compress import CompactionHook
    from offline_compress.compressor import Compressor
    from offline_compress.tokens.counter import default_counter

    default_counter().count_text("warm up")
    compressor = Compressor(None)
    with open(args["path"], encoding="utf-8") as f:
        messages = json.load(f)
    before = _peak_mb()
    with tempfile.TemporaryDirectory() as tmp:
        hook = CompactionHook(32_768, archive_path=Path(tmp) / "a.sqlite3", compressor=compressor)
        start = time.perf_counter()
        new = hook.before_step(messages)
        seconds = time.perf_counter() - start
        outcome = hook.metrics[-1].outcome if hook.metrics else ""
        hook.close()
    return {
        "seconds": seconds,
        "peak_mb": _peak_mb(),
        "rss_before_mb": before,
        "outcome": outcome,
        "messages_after": len(new),
    }


def history_of(n: int) -> list[dict[str, Any]]:
    """``n`` messages: the head of a real mini-swe-agent run, then its steps repeated, each made unique."""
    from offline_compress.formats import load_history

    source = [m.to_openai() for m in load_history(FIXTURES / "mini-swe-agent" / "django__django-11163.traj.json")]
    head, steps = source[:2], source[2:]
    out = list(head)
    i = 0
    while len(out) < n:
        m = dict(steps[i % len(steps)])
        m["content"] = f"{m.get('content') or ''}\n[step {i}]"
        out.append(m)
        i += 1
    return out


def _work_compress(args: dict[str, Any]) -> dict[str, Any]:
    from offline_compress.compressor import Compressor
    from offline_compress.tokens.counter import default_counter

    default_counter().count_text("warm up")
    messages = history_of(int(args["messages"]))
    compressor = Compressor(None)
    chars = sum(len(m.get("content") or "") for m in messages)
    before = _peak_mb()
    runs = []
    for _ in range(int(args["reps"])):
        start = time.perf_counter()
        compressor.compress(messages, keep_last=6)
        runs.append(time.perf_counter() - start)
    return {"seconds": runs, "peak_mb": _peak_mb(), "rss_before_mb": before, "chars": chars}


_WORKERS = {
    "redaction": _work_redaction,
    "count": _work_count,
    "before_step": _work_before_step,
    "compress": _work_compress,
}


def _worker_main(argv: list[str]) -> int:
    kind, args = argv[0], json.loads(argv[1])
    result = _WORKERS[kind](args)
    print("RESULT " + json.dumps(result))
    return 0


# -- the parent ---------------------------------------------------------------------------------------------
def log(message: str) -> None:
    print(f"reliability: {message}", file=sys.stderr, flush=True)


def run_case(kind: str, args: dict[str, Any], library: Path, timeout: float) -> dict[str, Any]:
    """One case in a fresh interpreter that imports ``offline_compress`` from ``library``."""
    env = {
        **os.environ,
        "PYTHONPATH": str(library),
        "TRANSFORMERS_VERBOSITY": "error",
        "OFFLINE_COMPRESS_MODEL_DIR": os.environ.get("OFFLINE_COMPRESS_MODEL_DIR", str(REPO / "models")),
    }
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, json.dumps(args)]
    start = time.perf_counter()
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=str(library))
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout:.0f} s"}
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            result: dict[str, Any] = json.loads(line[len("RESULT ") :])
            result["wall_seconds"] = time.perf_counter() - start
            return result
    return {"error": (done.stderr.strip().splitlines() or ["no result"])[-1][:300]}


def big_history(path: Path, megabytes: float) -> int:
    """A function-calling history whose one tool output is ``megabytes`` of test-log lines; its size in bytes."""
    rng = random.Random(0)
    words = "the build failed because module error test passed line file import value None return".split()
    lines, size = [], 0
    while size < megabytes * MB:
        line = f"{size:09d} " + " ".join(rng.choices(words, k=10))
        lines.append(line)
        size += len(line) + 1

    def call(i: int, command: str) -> dict[str, Any]:
        arguments = json.dumps({"command": command})
        return {
            "role": "assistant",
            "content": f"Step {i}.",
            "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": arguments}}],
        }

    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Make the test suite pass."},
        call(0, "pytest -q"),
        {"role": "tool", "tool_call_id": "c0", "content": "\n".join(lines)},
    ]
    for i in range(1, 9):
        messages += [call(i, f"cat src/m{i}.py"), {"role": "tool", "tool_call_id": f"c{i}", "content": f"x = {i}\n"}]
    messages.append({"role": "assistant", "content": "Done."})
    path.write_text(json.dumps(messages))
    return path.stat().st_size


def run(args: argparse.Namespace) -> int:
    libraries = {"now": REPO}
    if args.before:
        libraries["before"] = Path(args.before).resolve()
    date = datetime.now(timezone.utc)
    out = Path(args.out or REPO / "bench-results" / f"reliability-{date.strftime('%Y-%m-%d')}")
    sections = set(args.sections.split(",")) if args.sections else {"redaction", "memory", "history"}
    # Sections run before into the same folder are kept (run them one at a time on a shared machine).
    earlier = json.loads((out / "results.json").read_text()) if (out / "results.json").is_file() else {}
    results: dict[str, Any] = {
        **{k: v for k, v in earlier.items() if k not in sections and k not in ("machine", "runs")},
        "machine": {
            "date": date.strftime("%Y-%m-%d %H:%M UTC"),
            "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "python": sys.version.split()[0],
            "load_average_at_start": os.getloadavg() if hasattr(os, "getloadavg") else None,
            "libraries": {k: str(v) for k, v in libraries.items()},
            "sections_run": sorted(sections),
        },
    }
    results["runs"] = [*earlier.get("runs", []), results["machine"]]
    if "redaction" in sections:
        rows = []
        for label, library in libraries.items():
            chars = args.redaction_chars if label == "now" else args.before_redaction_chars
            cases = None if label == "now" else args.before_cases.split(",")
            log(f"redaction ({label}, {chars} characters and twice that)")
            got = run_case("redaction", {"chars": chars, "reps": args.repeats, "cases": cases}, library, args.timeout)
            rows += [{"library": label, **row} for row in got.get("rows", [got])]
        results["redaction"] = rows
        _save(results, out)
    if "memory" in sections:
        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            for megabytes in args.message_mb:
                path = Path(tmp) / f"history-{megabytes}mb.json"
                size = big_history(path, megabytes)
                for label, library in libraries.items():
                    for kind in ("count", "before_step"):
                        log(f"{kind} on a {megabytes} MB message ({label})")
                        got = run_case(kind, {"path": str(path)}, library, args.timeout)
                        got.pop("output", None)
                        row = {"library": label, "case": kind, "message_mb": megabytes, "input_bytes": size, **got}
                        if "peak_mb" in got:
                            row["peak_over_input"] = got["peak_mb"] * 2**20 / size
                            row["growth_over_input"] = (got["peak_mb"] - got["rss_before_mb"]) * 2**20 / size
                        rows.append(row)
                        _save({**results, "memory": rows}, out)
        results["memory"] = rows
        _save(results, out)
    if "history" in sections:
        rows = []
        for label, library in libraries.items():
            first = None
            for n in args.history_messages:
                log(f"compress of {n} messages ({label})")
                got = run_case("compress", {"messages": n, "reps": args.history_repeats}, library, args.timeout)
                row: dict[str, Any] = {"library": label, "messages": n, **got}
                if "seconds" in got:
                    row["median_seconds"] = statistics.median(got["seconds"])
                    first = first or (n, row["median_seconds"])
                    row["per_message_ratio"] = (row["median_seconds"] / n) / (first[1] / first[0])
                rows.append(row)
                _save({**results, "history": rows}, out)
        results["history"] = rows
        _save(results, out)
    print((out / "results.md").read_text())
    return 0


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    if isinstance(value, list):
        return ", ".join(_cell(v) for v in value)
    return str(value)


def _table(rows: list[dict[str, Any]]) -> str:
    keys: list[str] = []
    for row in rows:
        keys += [k for k in row if k not in keys]
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(_cell(row.get(k, "")) for k in keys) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _save(results: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    md = ["# offline_compress reliability (issue 22)\n\n"]
    md += [f"- {json.dumps(machine)}\n" for machine in results.get("runs", [results["machine"]])]
    for key, value in results.items():
        if key not in ("machine", "runs"):
            md.append(f"\n## {key}\n\n{_table(value)}")
    (out / "results.md").write_text("".join(md))


def add_reliability_parser(sub: Any) -> None:
    p = sub.add_parser(
        "reliability", help="redaction MB/s on worst cases, memory and time on huge messages and histories"
    )
    p.add_argument("--out", help="results folder (default bench-results/reliability-<date>)")
    p.add_argument("--sections", help="comma-separated subset of: redaction, memory, history (default: all)")
    p.add_argument("--before", help="also run every case against the library in this folder (a checkout)")
    p.add_argument("--repeats", type=int, default=3, help="runs per redaction case (median)")
    p.add_argument("--redaction-chars", type=int, default=200_000, help="worst-case size (and twice that)")
    p.add_argument(
        "--before-redaction-chars", type=int, default=10_000, help="worst-case size for --before (it may be slow)"
    )
    p.add_argument(
        "--before-cases",
        default="AKIA key repeated,one token xoxb-…,one token sk_live_…,password run,eyJ repeated",
        help="worst cases run for --before",
    )
    p.add_argument("--message-mb", type=float, nargs="+", default=[10, 50], help="sizes of the one big message")
    p.add_argument("--history-messages", type=int, nargs="+", default=[20_000, 50_000, 100_000])
    p.add_argument("--history-repeats", type=int, default=3, help="compressions per history size (median)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per case")
    p.set_defaults(func=run)


if __name__ == "__main__":
    # Run as a script, this folder comes first on sys.path: drop it, so that only the library is imported.
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        sys.exit(_worker_main(sys.argv[2:]))
    parser = argparse.ArgumentParser(prog="bench_reliability")
    add_reliability_parser(parser.add_subparsers(dest="command", required=True))
    parsed = parser.parse_args()
    sys.exit(parsed.func(parsed))
