"""The agent's step never fails through a fault of the library's own (issue 45): ``safely`` runs a hook's step, and
when it raises anything but the caller's bad input (``InputError``), logs it at ERROR with its traceback, counts it
in the hook's metrics (``outcome="failed"``) and hands back the caller's history, or, when that does not fit the
window, the last summary and the most recent messages that fit, the rest archived first (``fallback``).
``OFFLINE_COMPRESS_STRICT=1`` raises instead (the tests set it)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import InputError, one_line, strict_mode
from ..history.messages import as_messages, parse_message
from ..summary.plan import plan_compaction
from ..summary.schema import CompressedContext
from .metrics import CompactionMetrics, report_failed

if TYPE_CHECKING:
    from .compaction_hook import CompactionHook

log = logging.getLogger("offline_compress.hook")


def safely(hook: CompactionHook, where: str, originals: list[Any], work: Callable[[], list[Any]]) -> list[Any]:
    """``work()``, or what ``fallback`` hands back when it fails through a fault of the library's own."""
    try:
        return work()
    except InputError:
        raise
    except Exception as error:
        if strict_mode():
            raise
        start = time.perf_counter()
        history, compaction, tokens = fallback(hook, originals)
        metrics = CompactionMetrics(
            compaction=compaction,
            outcome="failed",
            reason=where,
            note=one_line(f"{type(error).__name__}: {error}")[:500],
            tokens_before=tokens,
            tokens_after=tokens if compaction == 0 else hook.counter.count(as_messages(history)),
            messages_before=len(originals),
            messages_after=len(history),
            seconds=time.perf_counter() - start,
            target_tokens=hook.target_tokens,
        )
        hook.metrics.append(metrics)
        report_failed(log, metrics, session=hook.session, error=error)
        return history


def fallback(hook: CompactionHook, originals: list[Any]) -> tuple[list[Any], int, int]:
    """(history, its compaction number or 0, the tokens before) after a failed step: ``originals`` when it fits the
    window (or cannot be measured), the trigger held so that the failing work is not retried at every step; else
    the head, the last summary and the most recent messages that fit, the rest archived first."""
    try:
        parsed = as_messages(originals)
        tokens = hook.counter.count(parsed)
        hook.hold(parsed, tokens)
    except Exception:
        log.exception("session %s: the history could not be measured after a failed step", hook.session)
        return list(originals), 0, 0
    if tokens < hook.model_max_tokens:
        return list(originals), 0, tokens
    try:
        head = plan_compaction(parsed, hook.keep_first, hook.keep_last).head
        context = hook.summary or CompressedContext()
        summary = hook.summary_message(context, head)
        counts = hook.counter.message_counts(parsed)
        room = hook.model_max_tokens - 1 - hook.counter.count([*parsed[:head], parse_message(summary, index=head)])
        cut = len(parsed)
        while cut > head + 1 and counts[cut - 1] <= room:
            room, cut = room - counts[cut - 1], cut - 1
        while cut < len(parsed) - 1 and parsed[cut].role == "tool":  # never a result without its call
            cut += 1
        history = [*originals[:head], summary, *originals[cut:]]
        after = hook.counter.count(as_messages(history))
        if after >= hook.model_max_tokens:
            return list(originals), 0, tokens
        compaction = hook.archive.record_compaction(
            hook.session,
            originals,
            head=head,
            cut=cut,
            reason="fallback",
            summary_json=context.to_json(),
            tokens_before=tokens,
            tokens_after=after,
        )
        return history, compaction, tokens
    except Exception:
        log.exception("session %s: the fallback after a failed step failed too", hook.session)
        return list(originals), 0, tokens
