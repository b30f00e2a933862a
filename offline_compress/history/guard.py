"""The loop guard's hold on the trigger: after a compaction that could not get the history under its target (or a
firing that could not compact at all), the trigger is held, so that the hook does not compact again at every step,
until the history has grown past the hold's limit, no longer fits the window, or no longer starts with the history
the hold was set on (another conversation, or a caller that rewrote it). A hold set on a history that did not fit
the window either (nothing could be compacted) waits for the growth alone. Pure: the hook keeps one ``Guard``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .cut import starts_with
from .messages import Message


@dataclass(frozen=True)
class Hold:
    limit: int  # tokens the history may grow to before the trigger fires again
    prefix: list[Message]  # the history the hold was set on
    fitted: bool = True  # it fit the window: a history that no longer does releases the hold


class Guard:
    """The target a compaction aims at and the hold, for one window: ``target_tokens`` is ``target_fraction`` of the
    window (1.0: no target but the window itself); a hold waits for the trigger's margin over the target (at least 5%
    of the window)."""

    def __init__(self, window: int, target_fraction: float, trigger_fraction: float) -> None:
        self.window = window
        self.target_tokens = min(int(target_fraction * window), window - 1)
        self.hold_tokens = max(int(trigger_fraction * window) - self.target_tokens, window // 20)
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
        """Hold the trigger for this history of ``tokens`` tokens until it grows by ``hold_tokens``; the limit."""
        self.hold = Hold(tokens + self.hold_tokens, list(parsed), tokens < self.window)
        return self.hold.limit

    def release(self) -> int:
        """No hold (0: no limit)."""
        self.hold = None
        return 0


__all__ = ["Guard", "Hold"]
