"""``python -m evaluation ab-fits RESULT.json…``: recall at the points where the baseline's context fits the window.

A strategy with no budget (``mask``, ``full``) can keep more of the history than the window holds; an agent's model
refuses such a context, so its recall there is not one an agent could have had. This view restricts an
``ab-replay`` result to the points where the baseline's context fits (``tokens <= window``) and compares each other
strategy with it there, pooled and trajectory by trajectory (the same bootstrap as ``ab-replay``'s paired rows).
It reads the JSON ``ab-replay --json`` wrote (gzip too), nothing else."""

from __future__ import annotations

import argparse
import gzip
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .stats import bootstrap_recall_difference


def read_json(path: str | Path) -> Any:
    """A JSON file, gzipped or not (told by its first bytes)."""
    raw = Path(path).read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def load_result(path: str | Path) -> dict[str, Any]:
    data = read_json(path)
    if not isinstance(data, dict) or "trajectories" not in data or "windows" not in data:
        raise ValueError(f"{path}: not an ab-replay result (no 'trajectories' / 'windows')")
    return data


def where_baseline_fits(result: dict[str, Any], *, baseline: str = "mask") -> list[dict[str, Any]]:
    """Per window and strategy: the points where ``baseline``'s context fits the window, the pooled recall of the
    strategy and of the baseline there, and the paired difference over trajectories with its 95% interval."""
    rows = []
    strategies = [s for s in result.get("strategies", []) if s not in ("full", "truncate", baseline)]
    for window in result["windows"]:
        for name in strategies:
            per: dict[str, list[int]] = {}
            points = total = 0
            for t in result["trajectories"]:
                for row in t.get("points", []):
                    s = row["strategies"]
                    if row["window"] != window or name not in s or baseline not in s:
                        continue
                    total += 1
                    if s[baseline]["tokens"] > window:
                        continue
                    points += 1
                    acc = per.setdefault(t.get("path", t["name"]), [0, 0, 0])
                    acc[0] += s[name]["artifacts"]
                    acc[1] += s[name]["artifacts_kept"]
                    acc[2] += s[baseline]["artifacts_kept"]
            pairs = [tuple(v) for v in per.values() if v[0]]
            probes = sum(p[0] for p in pairs)
            row_out: dict[str, Any] = {
                "window": window,
                "strategy": name,
                "against": baseline,
                "points": points,
                "of_points": total,
                "probes": probes,
                "recall": sum(p[1] for p in pairs) / probes if probes else None,
                "baseline_recall": sum(p[2] for p in pairs) / probes if probes else None,
                "trajectories": len(pairs),
            }
            if pairs:
                diff, lo, hi = bootstrap_recall_difference(pairs)
                row_out |= {
                    "more": sum(1 for p in pairs if p[1] > p[2]),
                    "fewer": sum(1 for p in pairs if p[1] < p[2]),
                    "recall_difference": diff,
                    "ci95": [lo, hi],
                }
            rows.append(row_out)
    return rows


def format_rows(name: str, rows: Sequence[dict[str, Any]]) -> str:
    lines = [f"== {name}: points where {rows[0]['against'] if rows else 'the baseline'}'s context fits the window"]
    for r in rows:
        if r["recall"] is None:
            lines.append(f"  {r['window']:>6} {r['strategy']}: no probe at {r['points']} of {r['of_points']} points")
            continue
        line = (
            f"  {r['window']:>6} {r['strategy']}: {r['points']} of {r['of_points']} points, {r['probes']} probes, "
            f"recall {100 * r['recall']:.1f}% vs {r['against']} {100 * r['baseline_recall']:.1f}%"
        )
        if "recall_difference" in r:
            lo, hi = r["ci95"]
            line += (
                f"; per trajectory more / fewer in {r['more']} / {r['fewer']} of {r['trajectories']}, "
                f"{100 * r['recall_difference']:+.1f} points (95% bootstrap {100 * lo:+.1f} to {100 * hi:+.1f})"
            )
        lines.append(line)
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    out = []
    for path in args.results:
        out.append(format_rows(Path(path).name, where_baseline_fits(load_result(path), baseline=args.against)))
    print("\n".join(out))
    return 0


def add_ab_fits_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "ab-fits",
        help="recall at the points where the baseline's context fits the window (reads ab-replay --json results)",
    )
    p.add_argument("results", nargs="+", help="ab-replay --json outputs (.json or .json.gz)")
    p.add_argument("--against", default="mask", help="the baseline strategy (default mask)")
    p.set_defaults(func=run)
    return p


__all__ = ["add_ab_fits_parser", "format_rows", "load_result", "read_json", "where_baseline_fits"]
