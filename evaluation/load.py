"""``python -m evaluation load-test``: many agent loops against one compressor, and the pause an agent sees with and
without background compaction.

Each loop replays a real trajectory through its own ``CompactionHook`` as an agent would call it (before each
assistant message the hook gets the live history: its own last output plus the messages recorded since; the
recorded assistant message stands for the model's reply), optionally sleeping ``agent_seconds`` per step as the
agent's own model call would take. Sections:

- ``pause``: one loop at a time, each trajectory twice: compaction when the trigger fires (synchronous) and with
  ``soft_fraction`` (background); the agent-visible pause at each compaction (the time ``before_step`` took).
- ``threads`` / ``asyncio``: ``loops`` loops at once (threads calling ``before_step``, or asyncio tasks awaiting
  ``abefore_step``), one shared compressor, one archive database, one session per loop. Checked, not only
  timed: every compaction is in the archive and restores to exactly the history the loop passed; the replaced
  messages are the ones missing from what the hook returned; no summary holds a string that only another loop's
  trajectory contains; and, when ``reference`` is on, every summary is byte for byte the one the same loop
  produces alone. Reported: compactions/s over the section's wall time, p50/p95 of the pause at compactions.

The compressor is built once from ``model`` (``None``: extractive, milliseconds) or given as ``backend`` (any
backend ``Compressor(backend=...)`` takes, e.g. a model server's client once the server backend lands).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offline_compress.archive.store import Archive, message_json
from offline_compress.errors import OfflineCompressError
from offline_compress.hook.config import HookConfig

from .replay import find_files, load_trajectory, trajectory_name

# ../shared/trajectories beside the checkout, or where OFFLINE_COMPRESS_SHARED says the shared folder is
SHARED = (
    Path(os.environ.get("OFFLINE_COMPRESS_SHARED") or Path(__file__).resolve().parents[3] / "shared") / "trajectories"
)
DEFAULT_SOURCE = SHARED / "gruckion__mini-swe-agent"
SECTIONS = ("pause", "threads", "asyncio")
# Path-like strings: what a summary copies verbatim from its own trajectory (targets, commands, work log).
_PATHLIKE = re.compile(r"[A-Za-z_][\w.-]*(?:/[\w.-]+)+|[A-Za-z_][\w-]*\.(?:py|pyx|rst|txt|cfg|toml|ini|c|h|js)\b")


@dataclass
class Compaction:
    """One compaction as a loop saw it."""

    step: int
    given: list[dict[str, Any]]  # the history passed to the hook
    returned: list[dict[str, Any]]  # what the hook returned
    number: int
    head: int
    pause: float
    background: bool
    summary_seconds: float


@dataclass
class Loop:
    name: str
    session: str
    steps: int = 0
    plain: list[float] = field(default_factory=list)  # before_step time of the steps that did not compact
    compactions: list[Compaction] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None


def trajectories(
    paths: Sequence[str | Path], count: int, min_messages: int = 20
) -> list[tuple[str, list[dict[str, Any]]]]:
    """``count`` trajectories (name, OpenAI-format dicts) with at least ``min_messages`` messages and distinct
    names, in path order; files that cannot be read are passed over."""
    out: list[tuple[str, list[dict[str, Any]]]] = []
    names: set[str] = set()
    for path in find_files(paths):
        name = trajectory_name(path)
        if name in names:
            continue
        try:
            messages = load_trajectory(path)
        except (OfflineCompressError, ValueError):
            continue
        if len(messages) >= min_messages:
            out.append((name, [m.to_openai() for m in messages]))
            names.add(name)
        if len(out) == count:
            break
    return out


def _model_calls(messages: Sequence[dict[str, Any]]) -> list[int]:
    """Indices of the recorded assistant replies (the first message excluded): the loop calls the hook before each."""
    return [i for i, m in enumerate(messages) if m["role"] == "assistant" and i > 0]


def _record(loop: Loop, hook: Any, step: int, given: list[Any], returned: list[Any], pause: float, before: int) -> None:
    loop.steps += 1
    fired = [m for m in hook.metrics[before:] if m.outcome == "compacted"]
    if not fired:
        loop.plain.append(pause)
    else:
        m = fired[-1]
        loop.compactions.append(
            Compaction(step, given, returned, m.compaction, m.head, pause, m.background, m.summary_seconds)
        )


def _agent(loop: Loop, hook: Any, messages: Sequence[dict[str, Any]]) -> Generator[list[Any], list[Any], None]:
    """The agent's side of a replay: yields each history to pass to the hook, takes back (``send``) what the hook
    returned, times the call between the two and records it in ``loop``."""
    live: list[Any] = []
    last = 0
    for i in _model_calls(messages):
        live = live + list(messages[last:i])
        last = i
        before = len(hook.metrics)
        t = time.perf_counter()
        out = yield live
        _record(loop, hook, i, live, out, time.perf_counter() - t, before)
        live = out


def _send(agent: Generator[list[Any], list[Any], None], returned: list[Any]) -> list[Any] | None:
    try:
        return agent.send(returned)
    except StopIteration:
        return None


@contextmanager
def _running(loop: Loop) -> Iterator[None]:
    """Times the loop; an exception ends it with one line in ``loop.error`` (the other loops go on)."""
    start = time.perf_counter()
    try:
        yield
    except Exception as err:
        loop.error = f"{type(err).__name__}: {err}"
    loop.seconds = time.perf_counter() - start


def run_loop(hook: Any, name: str, messages: Sequence[dict[str, Any]], agent_seconds: float = 0.0) -> Loop:
    """Replay ``messages`` through ``hook.before_step`` as an agent loop (see the module's docstring)."""
    loop = Loop(name, hook.session)
    agent = _agent(loop, hook, messages)
    with _running(loop):
        given = next(agent, None)
        while given is not None:
            given = _send(agent, hook.before_step(given))
            if given is not None and agent_seconds:
                time.sleep(agent_seconds)
    return loop


async def arun_loop(hook: Any, name: str, messages: Sequence[dict[str, Any]], agent_seconds: float = 0.0) -> Loop:
    """``run_loop`` as an asyncio task: ``await hook.abefore_step`` and ``await asyncio.sleep``."""
    loop = Loop(name, hook.session)
    agent = _agent(loop, hook, messages)
    with _running(loop):
        given = next(agent, None)
        while given is not None:
            given = _send(agent, await hook.abefore_step(given))
            if given is not None:
                await asyncio.sleep(agent_seconds)
    return loop


def run_concurrent(
    jobs: Sequence[tuple[str, list[dict[str, Any]]]],
    make_hook: Callable[[str], Any],
    mode: str,
    agent_seconds: float = 0.0,
) -> tuple[list[Loop], float]:
    """All loops at once (``mode``: ``threads`` or ``asyncio``), each with ``make_hook(name)``; (loops, wall s)."""
    hooks = [make_hook(name) for name, _ in jobs]
    start = time.perf_counter()
    if mode == "threads":
        results: list[Loop | None] = [None] * len(jobs)
        barrier = threading.Barrier(len(jobs))

        def work(k: int) -> None:
            barrier.wait()
            results[k] = run_loop(hooks[k], jobs[k][0], jobs[k][1], agent_seconds)

        threads = [threading.Thread(target=work, args=(k,), name=f"agent-{k}") for k in range(len(jobs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        loops = [r for r in results if r is not None]
    elif mode == "asyncio":

        async def main() -> list[Loop]:
            return list(await asyncio.gather(*(arun_loop(h, n, m, agent_seconds) for h, (n, m) in zip(hooks, jobs))))

        loops = asyncio.run(main())
    else:
        raise ValueError(f"mode must be 'threads' or 'asyncio', got {mode!r}")
    wall = time.perf_counter() - start
    for hook in hooks:
        hook.close()
    return loops, wall


# -------------------------------------------------------------------------------------------------- checks


def _strings(value: Any) -> list[str]:
    """Every string inside a JSON-like value (message dicts, a summary's dump)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def _pathlike(value: Any) -> set[str]:
    return {token for text in _strings(value) for token in _PATHLIKE.findall(text)}


def distinctive_strings(jobs: Sequence[tuple[str, list[dict[str, Any]]]]) -> dict[str, set[str]]:
    """Per trajectory, the path-like strings (whole tokens of its messages' texts) that no other of ``jobs`` has."""
    found = {name: _pathlike(messages) for name, messages in jobs}
    seen = Counter(s for strings in found.values() for s in strings)
    return {name: {s for s in strings if seen[s] == 1} for name, strings in found.items()}


def _summary_text(message: dict[str, Any]) -> str:
    return message["content"] if isinstance(message.get("content"), str) else json.dumps(message)


def _summary_strings(message: dict[str, Any]) -> set[str]:
    """The path-like tokens of the summary a summary message holds (read back from either rendering)."""
    from offline_compress.history.messages import parse_message
    from offline_compress.summary.message import parse_summary_message

    summary = parse_summary_message(parse_message(message, index=0))
    return _pathlike(summary.model_dump(mode="json")) if summary is not None else {"<not a summary>"}


def check_loop(loop: Loop, archive: Archive, distinct: dict[str, set[str]]) -> list[str]:
    """What is wrong with one loop's compactions (empty: nothing): archive, exactness, and foreign strings."""
    problems: list[str] = []
    if loop.error:
        problems.append(f"{loop.name}: {loop.error}")
    records = archive.compactions(loop.session)
    if [r.compaction for r in records] != [c.number for c in loop.compactions]:
        problems.append(
            f"{loop.name}: archive holds compactions {[r.compaction for r in records]}, the loop saw "
            f"{[c.number for c in loop.compactions]}"
        )
        return problems
    foreign = {s: other for other, strings in distinct.items() if other != loop.name for s in strings}
    for c, record in zip(loop.compactions, records):
        where = f"{loop.name} compaction {c.number}"
        given = [json.loads(message_json(m)) for m in c.given]
        if archive.restore(c.number, loop.session) != given:
            problems.append(f"{where}: the archive does not restore the history the loop passed")
        replaced = [m for _, m in archive.replaced(c.number, loop.session)]
        cut = record.cut
        summary_at = c.head
        returned = c.returned
        if (
            returned[: c.head] != c.given[: c.head]
            or not _same_or_cut(returned[summary_at + 1 :], c.given[cut:])
            or replaced != given[c.head : cut]
        ):
            problems.append(f"{where}: returned history is not [head, summary, given[cut:]] with [head, cut) archived")
        strays = sorted(_summary_strings(returned[summary_at]) & foreign.keys())
        if strays:
            problems.append(
                f"{where}: summary holds strings of other trajectories: "
                + ", ".join(f"{s!r} ({foreign[s]})" for s in strays[:3])
            )
    return problems


_CUT = re.compile(
    r"\n\[… [\d,]+ characters cut here to fit the context window; the whole message is in the archive …\]\n"
)
_CUT_LINES = re.compile(
    r"\[… [\d,]+ characters cut here and at each … below to fit the context window; the whole message is in the "
    r"archive …\]"
)


def _lines_cut_from(returned: str, given: str) -> bool:
    """``returned`` is ``given`` cut by whole lines: its first line, then lines of ``given`` in their order (a long
    one may end in ``…`` where it was cut), one cut note where lines were first left out and ``…`` lines at the
    other places."""
    lines = returned.split("\n")
    if sum(bool(_CUT_LINES.fullmatch(x)) for x in lines) != 1:
        return False
    kept = [x for x in lines if x != "…" and not _CUT_LINES.fullmatch(x)]
    source = given.split("\n")
    if not kept or not _line_of(kept[0], source[0]):
        return False
    at = 0
    for line in kept:
        while at < len(source) and not _line_of(line, source[at]):
            at += 1
        if at == len(source):
            return False
        at += 1
    return True


def _line_of(shown: str, line: str) -> bool:
    return shown == line or (shown.endswith("…") and line.startswith(shown[:-1]))


def _same_or_cut(returned: Any, given: Any) -> bool:
    """``returned`` is ``given``, or a copy of it whose texts were cut (the hook's last resort when recent messages
    do not fit the window): the same keys, values and lengths, but texts that keep the given text's start and end
    around one cut note, or that keep some of its lines (``_lines_cut_from``)."""
    if returned == given:
        return True
    if isinstance(returned, str) and isinstance(given, str):
        parts = _CUT.split(returned)
        if len(parts) == 2:
            return given.startswith(parts[0]) and given.endswith(parts[1])
        return _lines_cut_from(returned, given)
    if isinstance(returned, Mapping) and isinstance(given, Mapping):
        return returned.keys() == given.keys() and all(_same_or_cut(returned[k], given[k]) for k in returned)
    if isinstance(returned, Sequence) and isinstance(given, Sequence):
        return len(returned) == len(given) and all(_same_or_cut(r, g) for r, g in zip(returned, given))
    return False


# ---------------------------------------------------------------------------------------------- sections


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def build_compressor(model: str | None, *, backend: Any = None, threads: int | None = None) -> Any:
    """The one compressor every loop shares: extractive when ``model`` is None and no ``backend`` is given."""
    from offline_compress.compressor import Compressor

    if backend is not None:
        return Compressor(backend=backend)
    return Compressor(model, llama={"n_threads": threads}) if model is not None else Compressor(None)


def load_section(
    jobs: Sequence[tuple[str, list[dict[str, Any]]]],
    compressor: Any,
    mode: str,
    window: int,
    database: Path,
    agent_seconds: float = 0.0,
    reference: bool = False,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """``len(jobs)`` loops at once against ``compressor``; checks and numbers (see the module's docstring)."""
    from offline_compress.hook.compaction_hook import CompactionHook

    def make_hook(name: str) -> CompactionHook:
        return CompactionHook(
            window, HookConfig(session=f"{mode}-{name}"), archive_path=database, compressor=compressor
        )

    loops, wall = run_concurrent(jobs, make_hook, mode, agent_seconds)
    distinct = distinctive_strings(jobs)
    with Archive(database) as archive:
        problems = [p for loop in loops for p in check_loop(loop, archive, distinct)]
    mismatched = 0
    if reference:
        progress(f"{mode}: reference run, one loop at a time")
        for (name, messages), loop in zip(jobs, loops):
            hook = make_hook(f"{name}-alone")
            alone = run_loop(hook, name, messages)
            hook.close()
            ours = [_summary_text(c.returned[c.head]) for c in loop.compactions]
            theirs = [_summary_text(c.returned[c.head]) for c in alone.compactions]
            if ours != theirs:
                mismatched += 1
                problems.append(f"{name}: the summaries differ from the same loop run alone")
    pauses = [c.pause for loop in loops for c in loop.compactions]
    count = len(pauses)
    return {
        "mode": mode,
        "loops": len(loops),
        "compactions": count,
        "steps": sum(loop.steps for loop in loops),
        "wall_seconds": wall,
        "compactions_per_second": count / wall if wall else float("nan"),
        "pause_p50": _percentile(pauses, 0.5),
        "pause_p95": _percentile(pauses, 0.95),
        "summary_seconds_p50": _percentile([c.summary_seconds for loop in loops for c in loop.compactions], 0.5),
        "step_p50_without_compaction": _percentile([p for loop in loops for p in loop.plain], 0.5),
        "distinctive_strings": {name: len(s) for name, s in distinct.items()},
        "reference_checked": reference,
        "reference_mismatches": mismatched,
        "problems": problems,
    }


def pause_section(
    jobs: Sequence[tuple[str, list[dict[str, Any]]]],
    compressor: Any,
    window: int,
    soft: float,
    agent_seconds: float,
    directory: Path,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Each trajectory alone, synchronous and background (the order alternates between trajectories, so a
    machine whose load drifts does not favour one arm): the pause at each compaction."""
    from offline_compress.hook.compaction_hook import CompactionHook

    rows = []
    for k, (name, messages) in enumerate(jobs):
        row: dict[str, Any] = {"trajectory": name}
        arms = [("sync", None), ("background", soft)]
        for arm, fraction in arms if k % 2 == 0 else arms[::-1]:
            hook = CompactionHook(
                window,
                HookConfig(session=f"{arm}-{name}", soft_fraction=fraction),
                archive_path=directory / f"pause-{arm}.sqlite3",
                compressor=compressor,
            )
            loop = run_loop(hook, name, messages, agent_seconds)
            hook.close()
            row[arm] = {
                "pauses": [c.pause for c in loop.compactions],
                "background": [c.background for c in loop.compactions],
                "summary_seconds": [c.summary_seconds for c in loop.compactions],
                "steps": loop.steps,
                "seconds": loop.seconds,
                "error": loop.error,
            }
            progress(
                f"pause {name} {arm}: {len(loop.compactions)} compactions, pauses "
                + ", ".join(f"{p:.2f}" for p in row[arm]["pauses"])
                + " s"
            )
        rows.append(row)

    def pooled(arm: str, key: str, swapped: bool | None = None) -> list[float]:
        return [v for r in rows for v, b in zip(r[arm][key], r[arm]["background"]) if swapped in (None, b)]

    swapped = list(zip(pooled("background", "pauses", True), pooled("background", "summary_seconds", True)))
    return {
        "window": window,
        "soft_fraction": soft,
        "agent_seconds": agent_seconds,
        "rows": rows,
        "sync_pause_median": _median(pooled("sync", "pauses")),
        "sync_summary_seconds_median": _median(pooled("sync", "summary_seconds")),
        "background_pause_median": _median(pooled("background", "pauses")),
        "swapped_pause_median": _median([p for p, _ in swapped]),
        "not_swapped_pause_median": _median(pooled("background", "pauses", False)),
        # the share of a swapped summary's build time the agent did not wait for (1: none of it)
        "swapped_hidden_median": _median([1 - p / s for p, s in swapped if s > 0]),
        "sync_compactions": len(pooled("sync", "pauses")),
        "background_compactions": len(pooled("background", "pauses")),
        "swapped": len(swapped),
    }


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


# ---------------------------------------------------------------------------------------------------- CLI


def _note(message: str) -> None:
    print(f"load-test: {message}", file=sys.stderr, flush=True)


def _report(results: dict[str, Any]) -> str:
    lines = []
    pause = results.get("pause")
    if pause:
        lines.append(
            f"pause at compaction (window {pause['window']}, soft {pause['soft_fraction']}, agent "
            f"{pause['agent_seconds']} s/step, {len(pause['rows'])} trajectories): median sync "
            f"{pause['sync_pause_median']:.2f} s ({pause['sync_compactions']} compactions), background "
            f"{pause['background_pause_median']:.2f} s ({pause['background_compactions']} compactions; "
            f"{pause['swapped']} swapped in: {pause['swapped_pause_median']:.2f} s, "
            f"{pause['swapped_hidden_median']:.0%} of their build time hidden; the others "
            f"{pause['not_swapped_pause_median']:.2f} s)"
        )
    for mode in ("threads", "asyncio"):
        r = results.get(mode)
        if r:
            lines.append(
                f"{mode}: {r['loops']} loops, {r['compactions']} compactions in {r['wall_seconds']:.1f} s = "
                f"{r['compactions_per_second']:.2f}/s; pause at compaction p50 {r['pause_p50']:.3f} s, p95 "
                f"{r['pause_p95']:.3f} s; problems: {len(r['problems'])}"
                + (f"; reference mismatches {r['reference_mismatches']}" if r["reference_checked"] else "")
            )
            lines += [f"  {p}" for p in r["problems"][:20]]
    return "\n".join(lines)


def cmd_load_test(args: argparse.Namespace) -> int:
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        raise ValueError(f"--sections: unknown {', '.join(unknown)} (known: {', '.join(SECTIONS)})")
    if args.loops < 1 or args.window <= 0 or args.agent_seconds < 0:
        raise ValueError("--loops and --window must be positive and --agent-seconds not negative")
    paths = args.trajectories or [DEFAULT_SOURCE]
    jobs = trajectories(paths, max(args.loops, args.pause_trajectories))
    if len(jobs) < args.loops:
        raise ValueError(
            f"{len(jobs)} readable trajectories of 20+ messages under {', '.join(map(str, paths))}; "
            f"--loops {args.loops} needs as many"
        )
    from offline_compress.engine.options import backend_from_args

    server = backend_from_args(args)  # --backend openai --base-url URL: the loops share one server backend
    model = None if args.no_model else (args.model or "default")
    what = f"server {server.name}" if server is not None else "extractive (no model)" if model is None else model
    _note(f"{len(jobs)} trajectories; compressor: {what}")
    compressor = build_compressor(model, backend=server, threads=args.threads)
    results: dict[str, Any] = {
        "model": model if server is None else None,
        "backend": what,
        "window": args.window,
        "loops": args.loops,
    }
    with tempfile.TemporaryDirectory(prefix="load-test-") as tmp:
        if "pause" in sections:
            results["pause"] = pause_section(
                jobs[: args.pause_trajectories],
                compressor,
                args.pause_window,
                args.soft,
                args.pause_agent_seconds,
                Path(tmp),
                _note,
            )
        for mode in ("threads", "asyncio"):
            if mode in sections:
                _note(f"{mode}: {args.loops} loops at once")
                results[mode] = load_section(
                    jobs[: args.loops],
                    compressor,
                    mode,
                    args.window,
                    Path(tmp) / f"{mode}.sqlite3",
                    args.agent_seconds,
                    reference=args.reference,
                    progress=_note,
                )
    print(_report(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 1 if any(results.get(m, {}).get("problems") for m in ("threads", "asyncio")) else 0


def add_load_test_parser(sub: Any) -> None:
    p = sub.add_parser(
        "load-test", help="concurrent agent loops against one compressor; pause with and without background compaction"
    )
    p.add_argument("trajectories", nargs="*", help=f"trajectory files or folders (default: {DEFAULT_SOURCE})")
    p.add_argument("--sections", default="pause,threads,asyncio", help="comma-separated: pause, threads, asyncio")
    p.add_argument("--loops", type=int, default=16, help="concurrent agent loops (default 16)")
    p.add_argument("--window", type=int, default=32768, help="context window of the load loops (default 32768)")
    p.add_argument("--agent-seconds", type=float, default=0.0, help="agent time per step in the load loops")
    p.add_argument(
        "--reference",
        action="store_true",
        help="also run every loop alone and require the same summaries (doubles the model time)",
    )
    p.add_argument("--pause-trajectories", type=int, default=4, help="trajectories of the pause section")
    p.add_argument("--pause-window", type=int, default=16384, help="context window of the pause section")
    p.add_argument("--pause-agent-seconds", type=float, default=1.0, help="agent time per step (pause section)")
    p.add_argument("--soft", type=float, default=0.5, help="soft_fraction of the background arm (default 0.5)")
    p.add_argument("--no-model", action="store_true", help="extractive compressor (no model: a fast run)")
    p.add_argument(
        "--model",
        help="compressor model (manifest name or .gguf; default: the embedded model); with "
        "--backend openai, the server's model id",
    )
    p.add_argument("--threads", type=int, help="llama.cpp threads (default: chosen per call)")
    from offline_compress.engine.options import add_backend_arguments

    add_backend_arguments(p)
    p.add_argument("--json", help="write every number and problem here")
    p.set_defaults(func=cmd_load_test)
