"""Paired statistics for the live A/B: the exact McNemar test on completion."""

from __future__ import annotations

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

