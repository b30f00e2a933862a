"""What the hook reports of each firing of the trigger (``CompactionMetrics``), to its ``metrics`` list, its log
records (``report_kept``, ``report_compaction``: the lines and their level) and its ``on_compaction`` listeners."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel

from ..summary.schema import CompressedContext


class CompactionMetrics(BaseModel):
    """One firing of the trigger: what was done, why, how much it saved, how long it took."""

    compaction: int  # number of this compaction (1, 2, ...); 0 when the history was kept
    outcome: Literal["compacted", "kept", "failed"]  # failed: an internal error, history handed back (safe_step)
    reason: str  # the trigger's reason (token-threshold, tool-event, turn-limit) or "manual"
    note: str = ""  # why the history was kept, or "still above the threshold"
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    head: int = 0  # messages kept verbatim before the summary
    seconds: float  # what the agent's step waited for this firing
    groundedness: float = 1.0
    above_threshold: bool = False  # the compacted history is still above the trigger's token threshold
    dropped_items: int = 0  # summary items dropped by its bounds (they stay in the archive)
    background: bool = False  # the summary was built in the background from the soft threshold's snapshot
    summary_seconds: float = 0.0  # what building the summary took (in the worker thread when background)
    # The loop guard (guard.py): a compaction aims at ``target_tokens`` (a share of the window below the trigger).
    target_tokens: int = 0
    over_target: bool = False  # the history is still above target_tokens after compacting as hard as it can
    harder: str = ""  # what compacting harder did ("summary cut from 3072 to 1187 tokens; 2 recent messages cut")
    shortened: int = 0  # recent messages cut to fit (their originals are in the archive)
    hold_until: int = 0  # the trigger is held until the history holds more tokens than this (0: not held)


Listener = Callable[[CompactionMetrics, CompressedContext], Any]


def report_kept(log: logging.Logger, metrics: CompactionMetrics) -> None:
    """The INFO line of a firing that kept the history."""
    log.info(
        "trigger fired (%s, %d tokens), history kept: %s; the trigger is held until the history holds %d tokens",
        metrics.reason,
        metrics.tokens_before,
        metrics.note,
        metrics.hold_until,
        extra={"offline_compress": metrics.model_dump()},
    )


def report_failed(log: logging.Logger, metrics: CompactionMetrics, *, session: str, error: BaseException) -> None:
    """The ERROR line (with the traceback) of a step the hook could not do through its own fault: what failed, on
    which history, what was handed back."""
    log.error(
        "session %s: %s failed on a history of %d messages: %s; handed back %s (%d messages)",
        session,
        metrics.reason,
        metrics.messages_before,
        metrics.note,
        "unchanged"
        if metrics.compaction == 0
        else f"the last summary and the recent messages (archived as {metrics.compaction})",
        metrics.messages_after,
        exc_info=error,
        extra={"offline_compress": metrics.model_dump()},
    )


def report_compaction(
    log: logging.Logger,
    metrics: CompactionMetrics,
    *,
    session: str,
    window: int,
    head_tokens: int,
    cut: int,
    stats: Any,
    context: CompressedContext,
    listeners: Sequence[Listener],
) -> None:
    """A compaction's INFO line, its WARNING when it could not reach the target (once: the hook holds the trigger
    after it), its DEBUG details, then the listeners (an exception in one is logged, never raised)."""
    m, extra = metrics, {"offline_compress": metrics.model_dump()}
    # over the target: said once, in this line (the hook then holds the trigger), and as a WARNING when the head kept
    # verbatim alone is over it (a window too small for the system prompt and the task)
    over = (
        f"; above the target of {m.target_tokens} tokens{f' after compacting harder ({m.harder})' if m.harder else ''}"
        f", the trigger is held until the history holds {m.hold_until}"
        if m.over_target
        else f"; compacted harder ({m.harder})"
        if m.harder
        else ""
    )
    log.info(
        "compaction %d of session %s (%s): %d -> %d tokens, %d -> %d messages, %.2f s%s%s%s",
        m.compaction,
        session,
        m.reason,
        m.tokens_before,
        m.tokens_after,
        m.messages_before,
        m.messages_after,
        m.seconds,
        f" (summary built in the background in {m.summary_seconds:.2f} s)" if m.background else "",
        "; still above the threshold" if m.above_threshold else "",
        over,
        extra=extra,
    )
    if m.over_target and head_tokens > m.target_tokens:
        log.warning(
            "session %s: the head kept verbatim (the system prompt and the task) holds %d tokens, more than the "
            "target of %d (%.0f%% of the window): the history cannot be kept under it; compaction %d left %d tokens",
            session,
            head_tokens,
            m.target_tokens,
            100 * m.target_tokens / window,
            m.compaction,
            m.tokens_after,
        )
    log.debug(
        "compaction %d: messages [%d, %d) replaced; prompt %d tokens (prefix cached: %s), %d generated, "
        "model %.2f s, groundedness %.2f, %d items dropped by the budget%s",
        m.compaction,
        m.head,
        cut,
        stats.prompt_tokens,
        stats.prefix_cached,
        stats.generated_tokens,
        stats.model_seconds,
        m.groundedness,
        m.dropped_items,
        f"; compacted harder: {m.harder}" if m.harder else "",
    )
    for listener in list(listeners):
        try:
            listener(metrics, context)
        except Exception:  # a listener's bug must not break the agent's step
            log.exception("on_compaction listener %r failed after compaction %d", listener, m.compaction)
