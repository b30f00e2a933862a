"""The loop guard's hold on the trigger: after a compaction that could not get the history under its target (or a
firing that could not compact at all), the trigger is held, so that the hook does not compact again at every step,
until the history has grown past the hold's limit, no longer fits the window, or no longer starts with the history
the hold was set on (another conversation, or a caller that rewrote it). A hold set on a history that did not fit
the window either (nothing could be compacted) waits for the growth alone. Pure: the hook keeps one ``Guard``.

The limit is the trigger itself, or a twentieth of the window past the held history when that is further: a hold
never lets the history grow past the trigger unless the history was already (nearly) there, so the agent's reply
keeps the room the trigger leaves it. (Until 2026-12-07 a hold waited for the trigger's whole margin over the target
past the held history; with a target far under the trigger, that let a history grow to the window: 46-60 of the
agent's contexts over 90% of a 16k window on the function-calling design split, docs/performance.md, "Compaction
churn".)"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..history.cut import starts_with
from ..history.messages import Message


@dataclass(frozen=True)
class Hold:
    limit: int  # tokens the history may grow to before the trigger fires again
    prefix: list[Message]  # the history the hold was set on
    fitted: bool = True  # it fit the window: a history that no longer does releases the hold


class Guard:
    """The target a compaction aims at and the hold, for one window: ``target_tokens`` is ``target_fraction`` of the
    window (1.0: no target but the window itself); a hold waits until the history passes the trigger and has grown by
    ``hold_tokens`` (5% of the window) since it was set."""

    def __init__(self, window: int, target_fraction: float, trigger_fraction: float) -> None:
        self.window = window
        self.target_tokens = min(int(target_fraction * window), window - 1)
        self.trigger_tokens = int(trigger_fraction * window)
        self.hold_tokens = window // 20
        self.hold: Hold | None = None

    def held(self, parsed: Sequence[Message], tokens: int) -> bool:
        """The trigger is held for this history of ``tokens`` tokens; a hold that no longer applies is dropped."""
        hold = self.hold
        if hold is None:
            return False
        if tokens <= hold.limit and (tokens < self.window or not hold.fitted) and starts_with(parsed, hold.prefix):
            return True
        self.hold = None
        return False

    def set(self, parsed: Sequence[Message], tokens: int) -> int:
        """Hold the trigger for this history of ``tokens`` tokens until it passes the trigger and has grown by
        ``hold_tokens``; the limit."""
        limit = max(self.trigger_tokens, tokens + self.hold_tokens)
        self.hold = Hold(limit, list(parsed), tokens < self.window)
        return self.hold.limit

    def release(self) -> int:
        """No hold (0: no limit)."""
        self.hold = None
        return 0


__all__ = ["Guard", "Hold"]
