"""``python -m evaluation ab-contexts RESULT.json CONTEXTS.json.gz``: another hook's contexts scored at an
``ab-replay`` result's points, beside the result's own strategies.

The compaction points of a replay are where today's hook fires, so a figure of another version of the hook, measured
at its own points, is another sample: each horizon (the steps to the next point) holds other probes. This scores
contexts built at *these* points (``scripts/contexts_at_points.py``, run in a checkout of that version) with
today's probes, the same horizons and constraints, so the two versions are compared like for like: recall of what
the agent later used from the compacted region and from the recent messages, the tokens, the share of contexts that
fit the window or stay under the trigger, and the paired difference against ``extract`` over trajectories."""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from offline_compress.history.messages import Message, as_messages
from offline_compress.hook.trigger import TriggerConfig

from . import probes as P
from .fitting import load_result, read_json
from .stats import bootstrap_recall_difference

TRIGGER_FRACTION = TriggerConfig().token_fraction  # the default trigger: a context over it fires at the next step
STRATEGIES = ("extract", "mask")  # the result's own columns beside the other hook's
MUST_KEEP = Path(__file__).resolve().parent.parent / "eval" / "must_keep.json"


def load_trajectory(path: Path) -> list[Message]:
    """The history of a trajectory file, read as ``ab-replay`` reads it (this module loads no compressor)."""
    from offline_compress.formats import load_history_with_format

    return load_history_with_format(path)[1]


def load_contexts(path: str | Path) -> dict[str, Any]:
    data = read_json(path)
    if not isinstance(data, dict) or not all(isinstance(v, dict) and "contexts" in v for v in data.values()):
        raise ValueError(f"{path}: not the output of scripts/contexts_at_points.py")
    return data


def score(
    result: dict[str, Any], contexts: dict[str, Any], *, name: str, phrases: Sequence[str], counter: Any
) -> list[dict[str, Any]]:
    """One row per window: ``name``'s contexts and the result's ``extract`` and ``mask`` at the same points."""
    if name in STRATEGIES:
        raise ValueError(f"--name {name!r} is one of the result's own columns: call the other hook something else")
    keep_last = result.get("keep_last", P.KEEP_LAST)
    who = (name, *STRATEGIES)
    acc: dict[int, dict[str, Any]] = {}
    for t in result["trajectories"]:
        if not t.get("points"):
            continue
        messages: list[Any] | None = None
        acts: Any = None
        for p in t["points"]:
            window, step = p["window"], p["step"]
            entry = contexts.get(f"{t['name']}|{window}")
            if entry is None:
                continue
            if messages is None:
                messages = load_trajectory(Path(t["path"]))
                acts = P.actions(messages)
            if entry["messages"] != len(messages):
                raise ValueError(f"{t['name']}: {entry['messages']} messages there, {len(messages)} here")
            given = entry["contexts"].get(str(step))
            if given is None:
                continue
            context = as_messages(given)
            probes = P.build_probes(
                messages, step, p["horizon_end"], phrases=phrases, keep_last=keep_last, all_actions=acts
            )
            scores = {name: P.score_context(probes, context).as_dict() | {"tokens": counter.count(context)}}
            scores |= {s: p["strategies"][s] for s in STRATEGIES if s in p["strategies"]}
            a = acc.setdefault(window, {"points": 0, "per": {}} | {f"{w}_tokens": [] for w in who})
            a["points"] += 1
            for w, sc in scores.items():
                a[f"{w}_tokens"].append(sc["tokens"])
            per = a["per"].setdefault(
                t["name"], dict.fromkeys(("probes", "recent", *who, *(w + "_recent" for w in who)), 0)
            )
            per["probes"] += scores[name]["artifacts"]
            per["recent"] += scores[name]["recent_artifacts"]
            for w, sc in scores.items():
                per[w] += sc["artifacts_kept"]
                per[w + "_recent"] += sc["recent_artifacts_kept"]
    rows = []
    for window, a in sorted(acc.items()):
        per = list(a["per"].values())
        probes, recent = sum(x["probes"] for x in per), sum(x["recent"] for x in per)
        row: dict[str, Any] = {"window": window, "name": name, "points": a["points"], "probes": probes}
        for w in who:
            row[w] = sum(x[w] for x in per) / probes if probes else None
            row[w + "_recent"] = sum(x[w + "_recent"] for x in per) / recent if recent else None
        mine, theirs = a[f"{name}_tokens"], a["extract_tokens"]
        row |= {
            "tokens_median": statistics.median(mine),
            "extract_tokens_median": statistics.median(theirs) if theirs else None,
            "fits": sum(x <= window for x in mine) / a["points"],
            "under_trigger": sum(x <= TRIGGER_FRACTION * window for x in mine) / a["points"],
            "extract_under_trigger": sum(x <= TRIGGER_FRACTION * window for x in theirs) / a["points"],
        }
        pairs = [(x["probes"], x["extract"], x[name]) for x in per if x["probes"]]
        if pairs:
            diff, lo, hi = bootstrap_recall_difference(pairs)
            row |= {"extract_minus": diff, "ci95": [lo, hi], "trajectories": len(pairs)}
            row |= {"fewer": sum(1 for p in pairs if p[1] < p[2]), "more": sum(1 for p in pairs if p[1] > p[2])}
        rows.append(row)
    return rows


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def format_rows(rows: Sequence[dict[str, Any]]) -> str:
    if not rows:
        return "no point of the result has a context in the file"
    name = rows[0]["name"]
    lines = [
        f"window  points  probes  {name} / extract / mask recall   recent ({name} / extract)   tokens ({name} / extract)"
        f"   under the trigger ({name} / extract)   fits ({name})   extract - " + name
    ]
    for r in rows:
        diff = ""
        if "extract_minus" in r:
            lo, hi = r["ci95"]
            diff = (
                f"{100 * r['extract_minus']:+.1f} ({100 * lo:+.1f} to {100 * hi:+.1f}), "
                f"extract keeps fewer in {r['fewer']} of {r['trajectories']}"
            )
        lines.append(
            f"{r['window']:>6}  {r['points']:>6}  {r['probes']:>6}  "
            f"{_pct(r[name])} / {_pct(r['extract'])} / {_pct(r['mask'])}   "
            f"{_pct(r[name + '_recent'])} / {_pct(r['extract_recent'])}   "
            f"{r['tokens_median']:.0f} / {r['extract_tokens_median']:.0f}   "
            f"{_pct(r['under_trigger'])} / {_pct(r['extract_under_trigger'])}   {_pct(r['fits'])}   {diff}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from offline_compress.tokens.counter import get_counter

    from .replay import load_phrases

    rows = score(
        load_result(args.result),
        load_contexts(args.contexts),
        name=args.name,
        phrases=load_phrases(args.must_keep),
        counter=get_counter(),
    )
    print(format_rows(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


def add_ab_contexts_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "ab-contexts",
        help="score another hook's contexts (scripts/contexts_at_points.py) at an ab-replay result's points",
    )
    p.add_argument("result", help="an ab-replay --json output (.json or .json.gz)")
    p.add_argument("contexts", help="the contexts at its points (scripts/contexts_at_points.py)")
    p.add_argument("--name", default="other", help="what to call those contexts in the table")
    p.add_argument("--must-keep", default=str(MUST_KEEP), help="curated must-keep phrases (constraints)")
    p.add_argument("--json", metavar="OUT", help="write the rows here")
    p.set_defaults(func=run)
    return p


__all__ = ["add_ab_contexts_parser", "format_rows", "load_contexts", "score"]
