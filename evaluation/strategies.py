"""The contexts an agent would see after a compaction, one per strategy, for the replay A/B.

full      no compaction (the reference)
truncate  the head (leading system messages + the task) and the last ``keep_last`` messages
mask      observation masking: every tool output before the last ``keep_last`` messages replaced by a one-line
          placeholder; the agent's own messages and the head kept ("The Complexity Trap", arXiv 2508.21433)
seed      the seed design: the whole prefix JSON-dumped into one prompt to the same local model (``seed.py``)
extract   this project's default, extractive (``Compressor()``, no model), through ``CompactionHook``
model     this project with the embedded model's draft (``Compressor("default")``), through ``CompactionHook``

``truncate`` and ``mask`` are pure functions of the prefix (applying them again to their own output plus new
messages gives the same context as applying them to the whole prefix). ``extract`` and ``model`` run the real
hook over the trajectory as an agent loop would, so a later compaction merges the earlier summary.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offline_compress.history.messages import Message, as_messages
from offline_compress.hook.config import HookConfig

from .probes import KEEP_LAST, head_end, is_tool_output, tail_start

STRATEGIES = ("full", "truncate", "mask", "seed", "extract", "model")
HOOKED = ("extract", "model")  # strategies that run the real hook
FAST_STRATEGIES = ("full", "truncate", "mask", "extract")  # no model: what ab-replay runs by default
MASK_PLACEHOLDER = "[output omitted]"


@dataclass
class Context:
    """One strategy's context at one step."""

    messages: list[Message]
    seconds: float = 0.0
    failed: str | None = None  # why the compaction failed (the context is then what was left)
    info: dict[str, Any] = field(default_factory=dict)


def full(prefix: Sequence[Message]) -> Context:
    return Context(list(prefix))


def truncate(prefix: Sequence[Message], keep_last: int = KEEP_LAST) -> Context:
    start = time.perf_counter()
    h = head_end(prefix)
    t = max(tail_start(prefix, keep_last), h)
    return Context([*prefix[:h], *prefix[t:]], time.perf_counter() - start)


def mask(prefix: Sequence[Message], keep_last: int = KEEP_LAST) -> Context:
    start = time.perf_counter()
    h = head_end(prefix)
    t = max(tail_start(prefix, keep_last), h)
    out = list(prefix[:h])
    for i in range(h, t):
        m = prefix[i]
        out.append(m.model_copy(update={"content": MASK_PLACEHOLDER}) if is_tool_output(prefix, i) else m)
    out += prefix[t:]
    return Context(out, time.perf_counter() - start)


class HookReplay:
    """Drives a real ``CompactionHook`` over a recorded trajectory, as an agent loop would: before each assistant
    message the hook gets the live history (its own last output plus the messages recorded since).

    ``run(steps=None)`` lets the trigger decide and returns the steps where it fired; ``run(steps=[...])`` forces
    a compaction at exactly those steps (``CompactionHook.compact``), so several strategies can be compared at
    the same points."""

    def __init__(
        self, compressor: Any, window: int, counter: Any, keep_last: int = KEEP_LAST, **hook_options: Any
    ) -> None:
        self.compressor = compressor
        self.window = window
        self.counter = counter
        self.keep_last = keep_last
        self.hook_options = hook_options

    def run(
        self,
        messages: Sequence[Message],
        steps: Sequence[int] | None = None,
        archive_path: Path | None = None,
        on_step: Callable[[int, list[Any], list[Any], Sequence[Any]], None] | None = None,
    ) -> dict[int, Context]:
        """``archive_path``: where the hook archives (session ``replay``), kept for recall; default a temporary
        file removed at the end. ``on_step`` (trigger deciding only): called after each step with the step's index,
        the messages that arrived since the last step, the context handed to the agent's model and the hook's
        metrics of the step (``churn.py`` reads what the model must prefill from them)."""
        from offline_compress.hook.compaction_hook import CompactionHook

        forced = None if steps is None else set(steps)
        out: dict[int, Context] = {}
        with tempfile.TemporaryDirectory(prefix="ab-replay-") as tmp:
            hook = CompactionHook(
                self.window,
                HookConfig(session="replay", keep_last=self.keep_last, **self.hook_options),
                archive_path=archive_path or Path(tmp) / "archive.sqlite3",
                compressor=self.compressor,
                counter=self.counter,
            )
            live: list[Any] = []
            last = 0
            for i, m in enumerate(messages):
                if m.role != "assistant" or i == 0:
                    continue
                # as plain dicts, the way agent loops hold their history (the hook's last resort, a recent message
                # cut to fit the window, then runs as it does for them)
                arrived = [m.to_openai() for m in messages[last:i]]
                live = live + arrived
                last = i
                before = len(hook.metrics)
                if forced is None:
                    live = hook.before_step(live)
                    if on_step is not None:
                        on_step(i, arrived, live, hook.metrics[before:])
                elif i in forced:
                    live = hook.compact(live, reason="replay")
                else:
                    continue
                fired = hook.metrics[before:]
                if fired and fired[-1].outcome == "compacted":
                    metric = fired[-1]
                    out[i] = Context(
                        as_messages(live),
                        metric.seconds,
                        info={
                            "reason": metric.reason,
                            "tokens_before": metric.tokens_before,
                            "above_threshold": metric.above_threshold,
                            "compaction": metric.compaction,
                        },
                    )
                elif forced is not None:
                    note = fired[-1].note if fired else "nothing to compress"
                    out[i] = Context(as_messages(live), fired[-1].seconds if fired else 0.0, failed=note)
            hook.close()
        return out


__all__ = [
    "Context",
    "FAST_STRATEGIES",
    "HOOKED",
    "HookReplay",
    "MASK_PLACEHOLDER",
    "STRATEGIES",
    "full",
    "mask",
    "truncate",
]
