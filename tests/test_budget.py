"""The summary's budget scales with what it replaces (issue 20 item 5): a share of the tokens replaced, never below
the floor, never above a share of the window."""

from __future__ import annotations

from offline_compress.summary.budget import MIN_TOKENS, summary_budget


def test_the_fixed_rule_is_a_share_of_the_window_up_to_the_floor() -> None:
    assert summary_budget(50_000, 8192, fraction=0.35, floor=3072, ratio=None) == 2867
    assert summary_budget(50_000, 32768, fraction=0.35, floor=3072, ratio=None) == 3072


def test_the_scaled_rule_grows_with_the_region_between_the_floor_and_the_window_share() -> None:
    small, big = (summary_budget(r, 32768, fraction=0.35, floor=3072, ratio=0.3) for r in (5_000, 20_000))
    assert small == 3072 and big == 6000
    assert summary_budget(200_000, 32768, fraction=0.35, floor=3072, ratio=0.3) == int(0.35 * 32768)
    assert summary_budget(200_000, 8192, fraction=0.35, floor=3072, ratio=0.3) == 2867  # the window's share binds
    assert summary_budget(0, 1000, fraction=0.1, floor=3072, ratio=0.3) == MIN_TOKENS
