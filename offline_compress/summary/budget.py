"""The summary's token budget for one compaction: it scales with what the summary replaces.

``region_tokens`` (the messages the summary stands for, the previous summary included) times ``ratio``, never below
``floor`` tokens, never above ``fraction`` of the window (the summary must leave the agent room). Without a ratio the
budget is the older fixed rule: ``fraction`` of the window, at most ``floor`` tokens."""

from __future__ import annotations

MIN_TOKENS = 256  # below this a summary holds little more than its constraints


def summary_budget(region_tokens: int, window: int, *, fraction: float, floor: int, ratio: float | None) -> int:
    """Tokens the summary of a region of ``region_tokens`` may take in a ``window``-token context."""
    share = int(fraction * window)
    if ratio is None:
        return max(MIN_TOKENS, min(share, floor))
    return max(MIN_TOKENS, min(share, max(floor, int(ratio * region_tokens))))


__all__ = ["MIN_TOKENS", "summary_budget"]
