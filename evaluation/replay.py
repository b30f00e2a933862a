"""``python -m evaluation ab-replay``: replay recorded trajectories through the hook and score, at every compaction
point, the context each strategy would give the agent against what the agent went on to do.

For each trajectory and window, the project's own ``CompactionHook`` (trigger included) runs over the
trajectory as an agent loop would call it; the steps where it fires are the compaction points. At each point
every strategy of ``strategies.py`` builds its context from the same history, and ``probes.py`` scores it
against the agent's later steps (up to the next compaction point). The points come from the ``extract`` run
(``--points-from``), so all strategies are compared at the same steps.

Output: a table per window and strategy, ``--json`` with every point, ``--chart`` (artifact-probe recall vs
context tokens, one point per strategy and window). A trajectory that cannot be read or replayed gets one line
in the report and the run goes on.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from offline_compress.errors import InputError, OfflineCompressError
from offline_compress.files import find_history_files as find_files
from offline_compress.files import history_name as trajectory_name
from offline_compress.history.messages import Message, as_messages
from offline_compress.hook.config import (
    DEFAULT_SUMMARY_FLOOR_TOKENS,
    DEFAULT_SUMMARY_FRACTION,
    DEFAULT_SUMMARY_RATIO,
    DEFAULT_SUMMARY_ROOM,
)
from offline_compress.hook.harder import KEEP_SHARE
from offline_compress.hook.trigger import TriggerConfig

from . import probes as P
from .churn import ChurnRecorder, aggregate_churn, format_churn
from .strategies import FAST_STRATEGIES, HOOKED, STRATEGIES, Context, HookReplay, full, mask, truncate

DEFAULT_WINDOWS = (8192, 16384, 32768)
REPO = Path(__file__).resolve().parent.parent
DEFAULT_MUST_KEEP = REPO / "eval" / "must_keep.json"


def split_of(name: str) -> str:
    """A fixed split of trajectories by name: ``design`` (looked at while designing the summary) or
    ``holdout`` (only scored). Half each, by the parity of the name's sha256."""
    return "design" if int(hashlib.sha256(name.encode("utf-8")).hexdigest()[:8], 16) % 2 == 0 else "holdout"


def trajectory_names(files: Sequence[Path]) -> dict[Path, str]:
    """Each file's name for the split and the report: its history name (``django__django-11163``), or, where
    several files share one (Moatless writes every run as ``trajectory.json``), its folder and that name."""
    plain = {f: trajectory_name(f) for f in files}
    counts: dict[str, int] = {}
    for name in plain.values():
        counts[name] = counts.get(name, 0) + 1
    return {f: name if counts[name] == 1 else f"{f.parent.name}/{name}" for f, name in plain.items()}


def load_trajectory(path: Path) -> list[Message]:
    """The history of a trajectory file (gzip-compressed files of any format too)."""
    return load_trajectory_with_harness(path)[1]


def load_trajectory_with_harness(path: Path) -> tuple[str, list[Message]]:
    """(the harness, i.e. the format the file was read as; its history)."""
    from offline_compress.formats import load_history_with_format

    return load_history_with_format(path)


def load_phrases(path: str | Path | None) -> list[str]:
    if not path:
        return []
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    items = data.get("phrases", data) if isinstance(data, dict) else data
    return [x["text"] if isinstance(x, dict) else str(x) for x in items]


# ---------------------------------------------------------------------------------------------- one run


class Replayer:
    """Holds what is loaded once (compressors, counter, seed cache) and replays trajectories."""

    def __init__(
        self,
        strategies: Sequence[str],
        *,
        windows: Sequence[int] = DEFAULT_WINDOWS,
        keep_last: int = P.KEEP_LAST,
        points_from: str = "extract",
        phrases: Sequence[str] = (),
        model: Any = None,
        seed: Any = None,
        seed_only_cached: bool = False,
        counter: Any = None,
        hook_options: dict[str, Any] | None = None,
        churn_only: bool = False,
    ) -> None:
        from offline_compress.compressor import Compressor
        from offline_compress.tokens.counter import get_counter

        unknown = [s for s in strategies if s not in STRATEGIES]
        if unknown:
            raise ValueError(f"unknown strategies {unknown}; known: {', '.join(STRATEGIES)}")
        self.strategies = list(strategies)
        self.windows = list(windows)
        self.keep_last = keep_last
        self.points_from = points_from
        self.phrases = list(phrases)
        self.counter = counter or get_counter()
        self.extract = Compressor(None, keep_last=keep_last)
        self._model = model
        self.seed = seed
        self.seed_only_cached = seed_only_cached
        self.hook_options = dict(hook_options or {})
        self.churn_only = churn_only  # step the points' hook and meter its prefill only (``churn.py``), no scoring
        self.last_churn: dict[str, Any] | None = None  # the last ``replay``'s churn record

    @property
    def model(self) -> Any:
        if self._model is None:
            from offline_compress.compressor import DEFAULT_MODEL, Compressor

            self._model = Compressor(DEFAULT_MODEL, keep_last=self.keep_last)
        return self._model

    def compressor_for(self, strategy: str) -> Any:
        return self.model if strategy == "model" else self.extract

    def replay(self, messages: list[Message], window: int) -> list[dict[str, Any]]:
        """Score every strategy at every compaction point of one trajectory at one window."""
        with tempfile.TemporaryDirectory(prefix="ab-replay-") as tmp:
            return self._replay(messages, window, Path(tmp))

    def _replay(self, messages: list[Message], window: int, tmp: Path) -> list[dict[str, Any]]:
        archives = {name: tmp / f"{name}.sqlite3" for name in HOOKED}
        driver = HookReplay(
            self.compressor_for(self.points_from), window, self.counter, self.keep_last, **self.hook_options
        )
        churn = ChurnRecorder(self.counter, window)
        driven = driver.run(messages, archive_path=archives[self.points_from], on_step=churn.on_step)
        self.last_churn = churn.result()
        steps = sorted(driven)
        if not steps or self.churn_only:
            return []
        hooked: dict[str, dict[int, Context]] = {self.points_from: driven}
        for name in HOOKED:
            if name in self.strategies and name not in hooked:
                hooked[name] = HookReplay(
                    self.compressor_for(name), window, self.counter, self.keep_last, **self.hook_options
                ).run(messages, steps, archive_path=archives[name])
        recall = {name: _Recall(archives[name]) for name in hooked}
        acts = P.actions(messages)
        rows = []
        for k, step in enumerate(steps):
            horizon_end = steps[k + 1] if k + 1 < len(steps) else len(messages)
            probes = P.build_probes(
                messages, step, horizon_end, phrases=self.phrases, keep_last=self.keep_last, all_actions=acts
            )
            prefix = list(messages[:step])
            contexts: dict[str, Context] = {}
            for name in self.strategies:
                if name == "full":
                    contexts[name] = full(prefix)
                elif name == "truncate":
                    contexts[name] = truncate(prefix, self.keep_last)
                elif name == "mask":
                    contexts[name] = mask(prefix, self.keep_last)
                elif name in hooked:
                    contexts[name] = hooked[name][step]
                elif name == "seed" and k == 0:
                    seed = self._seed(prefix)
                    if seed is not None:
                        contexts[name] = seed
            truncate_tokens = None
            row: dict[str, Any] = {
                "step": step,
                "horizon_end": horizon_end,
                "window": window,
                "region": list(probes.region),
                "strategies": {},
            }
            for name, ctx in contexts.items():
                score = P.score_context(probes, ctx.messages)
                tokens = self.counter.count(ctx.messages)
                if name == "truncate":
                    truncate_tokens = tokens
                row["strategies"][name] = {
                    "tokens": tokens,
                    "seconds": ctx.seconds,
                    "failed": ctx.failed,
                    "messages": len(ctx.messages),
                    **score.as_dict(),
                    **ctx.info,
                }
                if name in recall and "compaction" in ctx.info:
                    row["strategies"][name]["recalled"] = recall[name].recovered(
                        score.lost_artifacts, ctx.info["compaction"]
                    )
            if truncate_tokens is not None:
                for s in row["strategies"].values():
                    s["tokens_over_truncate"] = s["tokens"] - truncate_tokens
            rows.append(row)
        for r in recall.values():
            r.close()
        return rows

    def _seed(self, prefix: list[Message]) -> Context | None:
        from .seed import seed_context_message

        if self.seed is None:
            return None
        if self.seed_only_cached:
            result = self.seed.cached(prefix)
            if result is None:
                return None
        else:
            result = self.seed.compress(prefix)
        t = max(P.tail_start(prefix, self.keep_last), P.head_end(prefix))
        recent = prefix[t:]
        if result["ok"]:
            msgs = as_messages([seed_context_message(result["summary"]), *[m.to_openai() for m in recent]])
            return Context(msgs, result["seconds"], info={"prompt_tokens": result.get("prompt_tokens")})
        return Context(
            list(recent), result["seconds"], failed=result["error"], info={"prompt_tokens": result.get("prompt_tokens")}
        )


class _Recall:
    """One ``recall`` call (top 5) per lost probe against a strategy's archive, as it stood at that compaction:
    how many of the probes a summary lost the agent would get back by asking for them."""

    TOP = 5

    def __init__(self, path: Path) -> None:
        self.path = path
        self._archive: Any = None

    def recovered(self, lost: Sequence[str], compaction: int) -> int:
        if not lost:
            return 0
        if self._archive is None:
            from offline_compress.archive.store import Archive

            self._archive = Archive(self.path)
        found = 0
        for probe in lost:
            hits = [
                h for h in self._archive.recall(probe, k=4 * self.TOP, session="replay") if h.compaction <= compaction
            ][: self.TOP]
            needle = P.normalise(probe)
            found += any(needle in P.normalise(h.snippet) for h in hits)
        return found

    def close(self) -> None:
        if self._archive is not None:
            self._archive.close()


# -------------------------------------------------------------------------------------------- aggregate


def _ratio(a: float, b: float) -> float | None:
    return None if not b else a / b


def _median(xs: Sequence[float]) -> float | None:
    return statistics.median(xs) if xs else None


def _p95(xs: Sequence[float]) -> float | None:
    if not xs:
        return None
    o = sorted(xs)
    return o[min(len(o) - 1, round(0.95 * (len(o) - 1)))]


def aggregate(
    trajectories: Sequence[dict[str, Any]], strategies: Sequence[str], windows: Sequence[int]
) -> list[dict[str, Any]]:
    """One row per (window, strategy): micro-averaged rates over every point, medians of tokens and time."""
    out = []
    for window in windows:
        for name in strategies:
            cells = [
                (t["name"], row["strategies"][name])
                for t in trajectories
                for row in t.get("points", [])
                if row["window"] == window and name in row["strategies"]
            ]
            if not cells:
                continue
            s = [c for _, c in cells]

            def total(key: str) -> int:
                return sum(c[key] for c in s)

            per_traj: dict[str, list[float]] = {}
            for tname, c in cells:
                if c["artifacts"]:
                    per_traj.setdefault(tname, []).append(c["artifacts_kept"] / c["artifacts"])
            out.append(
                {
                    "window": window,
                    "strategy": name,
                    "points": len(s),
                    "trajectories": len({t for t, _ in cells}),
                    "failed": sum(1 for c in s if c["failed"]),
                    "artifacts": total("artifacts"),
                    "artifact_recall": _ratio(total("artifacts_kept"), total("artifacts")),
                    "artifact_recall_traj_median": _median([statistics.mean(v) for v in per_traj.values()]),
                    "lost_recalled": _ratio(
                        sum(c.get("recalled", 0) for c in s),
                        sum(c["artifacts"] - c["artifacts_kept"] for c in s if "recalled" in c),
                    ),
                    "recent_recall": _ratio(
                        sum(c.get("recent_artifacts_kept", 0) for c in s), sum(c.get("recent_artifacts", 0) for c in s)
                    ),
                    "constraints": total("constraints"),
                    "constraint_retention": _ratio(total("constraints_kept"), total("constraints")),
                    "points_all_constraints": sum(1 for c in s if c["constraints_kept"] == c["constraints"]),
                    "head_lines": _ratio(total("head_lines_kept"), total("head_lines")),
                    "horizon_actions": total("horizon_actions"),
                    "repeat_reads": total("repeat_reads"),
                    "redos": total("redos"),
                    "redo_rate": _ratio(total("redos"), total("horizon_actions")),
                    "repeat_failures": total("repeat_failures"),
                    "failure_memory": _ratio(total("failures_remembered"), total("repeat_failures")),
                    "region_failures": total("region_failures"),
                    "failure_recall": _ratio(total("region_failures_kept"), total("region_failures")),
                    "tokens_median": _median([c["tokens"] for c in s]),
                    "fits_window": _ratio(sum(1 for c in s if c["tokens"] <= window), len(s)),
                    "tokens_over_truncate_median": _median(
                        [c["tokens_over_truncate"] for c in s if "tokens_over_truncate" in c]
                    ),
                    "seconds_median": _median([c["seconds"] for c in s]),
                    "seconds_p95": _p95([c["seconds"] for c in s]),
                }
            )
    return out


def paired(
    trajectories: Sequence[dict[str, Any]], strategies: Sequence[str], windows: Sequence[int], *, against: str = "mask"
) -> list[dict[str, Any]]:
    """Per window, each summary strategy against ``against`` trajectory by trajectory: how many trajectories it
    keeps more / as many / fewer probes of, and the pooled recall difference with a bootstrap 95% interval over
    trajectories (is the difference more than which trajectories happened to be drawn?)."""
    from .stats import bootstrap_recall_difference

    out = []
    for window in windows:
        for name in strategies:
            if name in ("full", "truncate", against):
                continue
            per: dict[str, list[int]] = {}
            for t in trajectories:
                for row in t.get("points", []):
                    s = row["strategies"]
                    if row["window"] != window or name not in s or against not in s:
                        continue
                    acc = per.setdefault(t.get("path", t["name"]), [0, 0, 0])  # names repeat across harnesses
                    acc[0] += s[name]["artifacts"]
                    acc[1] += s[name]["artifacts_kept"]
                    acc[2] += s[against]["artifacts_kept"]
            pairs = [tuple(v) for v in per.values() if v[0]]
            if not pairs:
                continue
            diff, lo, hi = bootstrap_recall_difference(pairs)
            out.append(
                {
                    "window": window,
                    "strategy": name,
                    "against": against,
                    "trajectories": len(pairs),
                    "more": sum(1 for p in pairs if p[1] > p[2]),
                    "same": sum(1 for p in pairs if p[1] == p[2]),
                    "fewer": sum(1 for p in pairs if p[1] < p[2]),
                    "recall_difference": diff,
                    "ci95": [lo, hi],
                }
            )
    return out


def format_paired(rows: Sequence[dict[str, Any]]) -> str:
    if not rows:
        return ""
    lines: list[str] = []
    against = None
    for r in rows:
        if r["against"] != against:
            against = r["against"]
            lines.append(f"paired, per trajectory, against {against}:")
        lo, hi = r["ci95"]
        lines.append(
            f"  {r['window']:>6}  {r['strategy']}: keeps more probes in {r['more']}, as many in {r['same']}, "
            f"fewer in {r['fewer']} of {r['trajectories']} trajectories; recall {100 * r['recall_difference']:+.1f}"
            f" points (95% bootstrap over trajectories {100 * lo:+.1f} to {100 * hi:+.1f})"
        )
    return "\n".join(lines)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None, fmt: str = "{:.0f}") -> str:
    return "-" if x is None else fmt.format(x)


COLUMNS = (
    "window",
    "strategy",
    "points",
    "fail",
    "probes",
    "recall",
    "traj-med",
    "+recall",
    "recent",
    "constr",
    "head",
    "redo",
    "fail-mem",
    "fail-rec",
    "tokens",
    "+trunc",
    "fits",
    "sec",
    "p95",
)


def format_table(rows: Sequence[dict[str, Any]], *, legend: bool = True) -> str:
    body = [
        [
            str(r["window"]),
            r["strategy"],
            str(r["points"]),
            str(r["failed"]),
            str(r["artifacts"]),
            _pct(r["artifact_recall"]),
            _pct(r["artifact_recall_traj_median"]),
            _pct(r["lost_recalled"]),
            _pct(r.get("recent_recall")),
            _pct(r["constraint_retention"]),
            _pct(r["head_lines"]),
            f"{_pct(r['redo_rate'])} ({r['redos']})",
            f"{_pct(r['failure_memory'])} ({r['repeat_failures']})",
            _pct(r["failure_recall"]),
            _num(r["tokens_median"]),
            _num(r["tokens_over_truncate_median"]),
            _pct(r.get("fits_window")),
            _num(r["seconds_median"], "{:.2f}"),
            _num(r["seconds_p95"], "{:.2f}"),
        ]
        for r in rows
    ]
    widths = [max(len(c), *(len(b[i]) for b in body)) if body else len(c) for i, c in enumerate(COLUMNS)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(COLUMNS, widths)), "  ".join("-" * w for w in widths)]
    last_window = None
    for r, b in zip(rows, body):
        if last_window is not None and r["window"] != last_window:
            lines.append("")
        last_window = r["window"]
        lines.append("  ".join(c.rjust(w) for c, w in zip(b, widths)))
    if not legend:
        return "\n".join(lines)
    lines += [
        "",
        "probes: artifacts the agent used later that first appeared before the compacted region's end; "
        "recall: share present in the context (all points); traj-med: median over trajectories; +recall: of the "
        "probes a summary lost, the share one recall call (top 5 of its archive) gets back; recent: the same for "
        "what the agent used later that first appeared in the recent messages (kept verbatim unless a strategy "
        "cuts them to fit the window); constr: curated must-keep phrases, mid-session user turns and a person's "
        "answers through tools kept verbatim; head: lines of the system prompt and task kept; redo: later "
        "re-reads whose earlier result is gone (count); fail-mem: repeated failures whose earlier failure is in "
        "the context (count); fail-rec: failed commands of the region "
        "kept with their error; tokens: median context tokens (exact, target tokenizer); +trunc: median tokens "
        "over truncate at the same point; fits: points whose context fits the window (an agent's model refuses a "
        "longer one); sec: compaction seconds (median, p95).",
    ]
    return "\n".join(lines)


def write_chart(rows: Sequence[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    markers = {"full": "o", "truncate": "v", "mask": "s", "seed": "X", "extract": "*", "model": "D"}
    colours = {8192: "tab:blue", 16384: "tab:orange", 32768: "tab:green"}
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for r in rows:
        if r["artifact_recall"] is None or r["tokens_median"] is None:
            continue
        ax.scatter(
            r["tokens_median"],
            100 * r["artifact_recall"],
            marker=markers.get(r["strategy"], "o"),
            color=colours.get(r["window"], "tab:gray"),
            s=120 if r["strategy"] == "extract" else 60,
        )
        ax.annotate(
            f"{r['strategy']} {r['window'] // 1024}k",
            (r["tokens_median"], 100 * r["artifact_recall"]),
            textcoords="offset points",
            xytext=(5, 4),
            fontsize=7,
        )
    ax.set_xscale("log")
    ax.set_xlabel("context tokens after compaction (median, log scale)")
    ax.set_ylabel("artifact-probe recall (%)")
    ax.set_title("Replay A/B: what the agent later used that is still in its context")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------- driver


def run_replay(
    paths: Sequence[str | Path],
    *,
    windows: Sequence[int] = DEFAULT_WINDOWS,
    strategies: Sequence[str] = STRATEGIES,
    split: str = "all",
    limit: int | None = None,
    replayer: Replayer | None = None,
    progress: bool = True,
    note: Any = None,
    **kwargs: Any,
) -> dict[str, Any]:
    from tqdm import tqdm

    note = note or _note
    files = find_files(paths)
    names = trajectory_names(files)
    if split != "all":
        files = [f for f in files if split_of(names[f]) == split]
    if limit is not None:
        files = files[:limit]
    if not files:
        raise InputError("no trajectories found", source=", ".join(map(str, paths)))
    replayer = replayer or Replayer(strategies, windows=windows, **kwargs)
    trajectories: list[dict[str, Any]] = []
    bar = tqdm(files, desc="ab-replay", unit="traj", file=sys.stderr, disable=not progress, dynamic_ncols=True)
    started = time.perf_counter()
    for f in bar:
        name = names[f]
        bar.set_postfix_str(name[:40])
        entry: dict[str, Any] = {"name": name, "path": str(f), "split": split_of(name), "points": []}
        try:
            entry["harness"], messages = load_trajectory_with_harness(f)
            entry["messages"] = len(messages)
            entry["tokens"] = replayer.counter.count(messages)
            for window in replayer.windows:
                entry["points"] += replayer.replay(messages, window)
                if replayer.last_churn is not None:
                    entry.setdefault("churn", []).append(replayer.last_churn)
        except (OfflineCompressError, ValueError, KeyError, TypeError, RecursionError) as err:
            entry["error"] = f"{type(err).__name__}: {err}"[:300]
            note(f"{f}: not replayed ({entry['error']})")
        trajectories.append(entry)
    rows = aggregate(trajectories, replayer.strategies, replayer.windows)
    pairs = paired(trajectories, replayer.strategies, replayer.windows) if "mask" in replayer.strategies else []
    harnesses = sorted({t["harness"] for t in trajectories if "harness" in t})
    by_harness = {}
    if len(harnesses) > 1:
        for harness in harnesses:
            subset = [t for t in trajectories if t.get("harness") == harness]
            by_harness[harness] = {
                "trajectories": len(subset),
                "aggregate": aggregate(subset, replayer.strategies, replayer.windows),
                "paired": (
                    paired(subset, replayer.strategies, replayer.windows) if "mask" in replayer.strategies else []
                ),
                "churn": aggregate_churn(subset, replayer.windows),
            }
    return {
        "windows": replayer.windows,
        "strategies": replayer.strategies,
        "keep_last": replayer.keep_last,
        "points_from": replayer.points_from,
        "split": split,
        "seconds": time.perf_counter() - started,
        "aggregate": rows,
        "paired": pairs,
        "by_harness": by_harness,
        "churn": aggregate_churn(trajectories, replayer.windows),
        "trajectories": trajectories,
    }


def _note(message: str) -> None:
    from tqdm import tqdm

    tqdm.write(f"ab-replay: {message}", file=sys.stderr)


def _parse_ints(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def _parse_strategies(text: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    bad = [n for n in names if n not in STRATEGIES]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"unknown strategies {bad}; choose from {', '.join(STRATEGIES)}")
    return names


def cmd_ab_replay(args: argparse.Namespace) -> int:
    from .seed import SeedCache, SeedCompressor

    seed = None
    if "seed" in args.strategies:
        from offline_compress.model_files import resolve_model

        seed = SeedCompressor(
            resolve_model(None if args.model is None else args.model),
            SeedCache(args.seed_cache),
            n_threads=args.threads,
        )
    model = None
    if "model" in args.strategies or args.points_from == "model":
        from offline_compress.compressor import DEFAULT_MODEL, Compressor

        _note("loading the model and compiling the grammar (once)")
        model = Compressor(args.model or DEFAULT_MODEL, keep_last=args.keep_last, llama={"n_threads": args.threads})
    replayer = Replayer(
        [args.points_from] if args.churn_only else args.strategies,
        windows=args.context,
        keep_last=args.keep_last,
        points_from=args.points_from,
        phrases=load_phrases(args.must_keep),
        model=model,
        seed=seed,
        seed_only_cached=args.seed_only_cached,
        hook_options={
            "summary_fraction": args.summary_fraction,
            "summary_floor_tokens": args.summary_floor_tokens,
            "summary_ratio": args.summary_ratio,
            "summary_room": args.summary_room,
            "target_fraction": args.target_fraction,
            "summary_keep_share": args.summary_keep_share,
            "trigger": TriggerConfig(
                token_fraction=args.token_fraction,
                tool_event_fraction=args.tool_event_fraction,
                turn_limit=args.turn_limit,
            ),
        },
        churn_only=args.churn_only,
    )
    report = run_replay(args.paths, split=args.split, limit=args.limit, replayer=replayer)
    for t in report["trajectories"]:
        if "error" in t:
            sys.stdout.write(f"not replayed: {t['path']}: {t['error']}\n")
    for harness, part in report["by_harness"].items():
        sys.stdout.write(f"\n== {harness} ({part['trajectories']} trajectories)\n")
        if part["aggregate"]:
            sys.stdout.write(format_table(part["aggregate"], legend=False) + "\n")
        if part["paired"]:
            sys.stdout.write(format_paired(part["paired"]) + "\n")
        if part["churn"]:
            sys.stdout.write(format_churn(part["churn"], legend=False) + "\n")
    if report["by_harness"]:
        sys.stdout.write("\n== all harnesses, pooled\n")
    if report["aggregate"]:
        sys.stdout.write(format_table(report["aggregate"]) + "\n")
    if report["paired"]:
        sys.stdout.write("\n" + format_paired(report["paired"]) + "\n")
    if report["churn"]:
        sys.stdout.write("\n" + format_churn(report["churn"]) + "\n")
    if args.json:
        from offline_compress.files import write_atomic

        write_atomic(Path(args.json), json.dumps(report, ensure_ascii=False, indent=1) + "\n")
        _note(f"wrote {args.json}")
    if args.chart:
        write_chart(report["aggregate"], Path(args.chart))
        _note(f"wrote {args.chart}")
    return 0


def _off_or(kind: Any) -> Any:
    return lambda text: None if text.strip().lower() in ("off", "none") else kind(text)


def _shown(value: Any) -> str:
    return "off" if value is None else str(value)


def add_ab_replay_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "ab-replay", help="replay recorded trajectories: score each strategy's context against what the agent did next"
    )
    p.add_argument("paths", nargs="+", metavar="FILES_OR_DIRS")
    p.add_argument(
        "--context",
        type=_parse_ints,
        default=list(DEFAULT_WINDOWS),
        help="agent context windows in tokens, comma-separated (default 8192,16384,32768)",
    )
    p.add_argument(
        "--strategies",
        type=_parse_strategies,
        default=list(FAST_STRATEGIES),
        help=f"comma-separated, from {','.join(STRATEGIES)} (default {','.join(FAST_STRATEGIES)}: "
        "seed and model run a model at every point, minutes each on a CPU)",
    )
    p.add_argument(
        "--points-from",
        choices=("extract", "model"),
        default="extract",
        help="whose hook run decides the compaction points (default extract, the default compressor)",
    )
    p.add_argument("--json", metavar="OUT", help="write every point and the aggregate here")
    p.add_argument("--chart", metavar="PNG", help="write probe recall vs tokens here")
    p.add_argument(
        "--split",
        choices=("all", "design", "holdout"),
        default="all",
        help="a fixed half of the trajectories by name hash (default all)",
    )
    p.add_argument("--limit", type=int, help="at most this many trajectories")
    p.add_argument("--keep-last", type=int, default=P.KEEP_LAST)
    p.add_argument(
        "--summary-fraction",
        type=float,
        default=DEFAULT_SUMMARY_FRACTION,
        help=f"the hook's summary budget as a share of the window (default {DEFAULT_SUMMARY_FRACTION}, "
        "the hook's own default)",
    )
    p.add_argument(
        "--summary-floor-tokens",
        type=int,
        default=DEFAULT_SUMMARY_FLOOR_TOKENS,
        help="the hook's summary_floor_tokens: the floor of the scaled budget, the cap of the fixed one "
        f"(default {DEFAULT_SUMMARY_FLOOR_TOKENS})",
    )
    p.add_argument(
        "--summary-ratio",
        type=lambda s: None if s.lower() == "none" else float(s),
        default=DEFAULT_SUMMARY_RATIO,
        help="the hook's summary_ratio: the budget as a share of the tokens the summary replaces (default "
        f"{DEFAULT_SUMMARY_RATIO}, the hook's own; 'none': the fixed budget)",
    )
    p.add_argument(
        "--summary-room",
        type=float,
        default=DEFAULT_SUMMARY_ROOM,
        help="the hook's summary_room: the summary's room under the trigger, as a share of the window, before the "
        f"recent messages give way to it (default {DEFAULT_SUMMARY_ROOM}, the hook's own; 0: they give way only "
        "when the history would not fit the window)",
    )
    p.add_argument(
        "--token-fraction",
        type=float,
        default=TriggerConfig().token_fraction,
        help="the trigger's token_fraction: compact when the history holds more than this share of the window "
        f"(default {TriggerConfig().token_fraction}, the hook's own)",
    )
    p.add_argument(
        "--target-fraction",
        type=float,
        default=None,
        help="the hook's target_fraction: the share of the window a compaction aims under (default: the hook's own, "
        "scaled to a lower trigger)",
    )
    p.add_argument(
        "--summary-keep-share",
        type=float,
        default=KEEP_SHARE,
        help="the hook's summary_keep_share: a summary cut toward the target keeps at least this share of itself "
        f"(default {KEEP_SHARE}, the hook's own: cut only to get under the trigger)",
    )
    p.add_argument(
        "--tool-event-fraction",
        type=_off_or(float),
        default=TriggerConfig().tool_event_fraction,
        help="the trigger's tool_event_fraction: compact above this share after a heavy tool's result ('off': never; "
        f"default {_shown(TriggerConfig().tool_event_fraction)}, the hook's own)",
    )
    p.add_argument(
        "--turn-limit",
        type=_off_or(int),
        default=TriggerConfig().turn_limit,
        help="the trigger's turn_limit: compact after this many steps since the last compaction ('off': never; "
        f"default {_shown(TriggerConfig().turn_limit)}, the hook's own)",
    )
    p.add_argument(
        "--churn-only",
        action="store_true",
        help="only step the points' hook (extract) and print what the agent's model must prefill with prefix "
        'caching, compactions and steps between them (docs/replay.md, "Compaction churn"); no scoring',
    )
    p.add_argument("--model", help="compressor model (manifest name or .gguf; default the embedded Gemma)")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--must-keep", default=str(DEFAULT_MUST_KEEP), help="curated must-keep phrases (constraints)")
    p.add_argument(
        "--seed-cache",
        default=str(REPO / "eval" / "results" / "seed_cache.json"),
        help="cache of seed-baseline results (JSON); results there are reused",
    )
    p.add_argument(
        "--seed-only-cached",
        action="store_true",
        help="score the seed baseline only where the cache has it (never run it)",
    )
    p.set_defaults(func=cmd_ab_replay)
    return p


__all__ = ["Replayer", "add_ab_replay_parser", "aggregate", "format_table", "run_replay", "split_of"]
