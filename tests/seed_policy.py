"""The hook's policy until 2026-12-07 (issue 47's "compaction churn" changed the defaults): the trigger at 60%, with
the seed design's rules at 40% after a heavy tool's result and every 30 turns, the target at half the window, the
summary's room 20% and its floor 4,608 tokens. The mechanisms tested on small windows (a summary cut to the trigger, a
background summary swapped in at the trigger, recent messages cut to leave the summary its room) were written on it;
the tests that pass it test those mechanisms, and the defaults since have tests of their own."""

from __future__ import annotations

from typing import Any

from offline_compress.hook.trigger import TriggerConfig

SEED_TRIGGER = TriggerConfig(token_fraction=0.6, tool_event_fraction=0.4, turn_limit=30)
SEED_POLICY: dict[str, Any] = {
    "trigger": SEED_TRIGGER,
    "target_fraction": 0.5,
    "summary_room": 0.2,
    "summary_floor_tokens": 4608,
}
