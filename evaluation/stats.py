"""Paired statistics: the exact McNemar test on completion (live A/B), and a bootstrap over trajectories of a
recall difference (replay A/B)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from fractions import Fraction
from math import comb


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` pairs where only arm A succeeded and ``c`` where only arm B
    did: under the null each discordant pair goes either way with probability 1/2, so the p-value is the
    two-sided binomial tail ``min(1, 2 * P(X <= min(b, c)))`` with ``X ~ Binomial(b + c, 1/2)``.
    No discordant pairs: 1.0. Computed with exact fractions, so small p-values are not rounded away."""
    if b < 0 or c < 0:
        raise ValueError(f"counts must be non-negative, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = Fraction(sum(comb(n, i) for i in range(min(b, c) + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


def discordant(pairs: Sequence[tuple[bool, bool]]) -> tuple[int, int]:
    """(pairs where only the first arm completed, pairs where only the second did)."""
    only_a = sum(1 for a, b in pairs if a and not b)
    only_b = sum(1 for a, b in pairs if b and not a)
    return only_a, only_b


def bootstrap_recall_difference(
    pairs: Sequence[tuple[int, int, int]], *, draws: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float, float]:
    """``pairs``: per trajectory, (probes, kept by A, kept by B). Returns the pooled recall difference A - B and
    its ``level`` percentile interval when whole trajectories are resampled with replacement (points of one
    trajectory are not independent, trajectories are). Seeded: the same pairs give the same interval."""
    if not pairs:
        raise ValueError("no trajectories to compare")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")

    def diff(sample: Sequence[tuple[int, int, int]]) -> float:
        total = sum(p[0] for p in sample)
        return (sum(p[1] for p in sample) - sum(p[2] for p in sample)) / total if total else 0.0

    rng = random.Random(seed)
    draws_sorted = sorted(diff([pairs[rng.randrange(len(pairs))] for _ in pairs]) for _ in range(draws))
    lo = draws_sorted[int((1 - level) / 2 * draws)]
    hi = draws_sorted[min(draws - 1, int((1 + level) / 2 * draws))]
    return diff(pairs), lo, hi
