"""A summary built in the background (the hook's ``soft_fraction``): a worker thread summarises the older part of a
snapshot of the history while the agent keeps stepping, and the hook swaps that summary in when its trigger fires.

The summary describes exactly the messages it replaces (the snapshot's ``[head, cut)``), so it may be swapped in
only while the history still starts with the snapshot's messages, no compaction has happened since (its previous
summary is still the hook's), and its cut still separates no tool call from its result (``Job.problem``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..history.conventions import is_tool_output
from ..history.cut import splits_a_call, starts_with
from ..history.messages import Message
from ..summary.plan import Plan
from ..summary.schema import CompressedContext

if TYPE_CHECKING:
    from ..compressor import CompressionResult

log = logging.getLogger("offline_compress.hook")


@dataclass(frozen=True)
class Job:
    """A summary being built from a snapshot of the history at the soft threshold."""

    prefix: list[Message]  # the snapshot's first ``cut`` messages: the swap needs the history to start with them
    plan: Plan
    previous: CompressedContext | None  # the hook's summary it merges: a compaction since makes it stale
    future: Future[CompressionResult]
    tokens: int

    def current(self, parsed: list[Message], summary: CompressedContext | None) -> bool:
        """The job still describes this history (the hook's summary being ``summary``): no new one is needed."""
        return self.previous is summary and starts_with(parsed, self.prefix)

    def problem(self, parsed: list[Message], summary: CompressedContext | None) -> str:
        """Why the job's summary cannot be swapped into ``parsed`` now, or ""."""
        head, cut = self.plan.head, self.plan.cut
        if self.previous is not summary:
            return "a compaction happened since its snapshot"
        if not starts_with(parsed, self.prefix):
            return "the history no longer starts with its snapshot"
        if (cut < len(parsed) and is_tool_output(parsed, cut)) or splits_a_call(parsed, head, cut):
            return "its cut would now separate a tool call from its result"
        return ""

    def result(self, parsed: list[Message], summary: CompressedContext | None) -> CompressionResult | None:
        """The summary to swap into ``parsed`` (waiting for it if need be); None, logged, when there is a problem
        or building it failed (the compaction that follows then runs as usual, and says so if it fails too)."""
        problem = self.problem(parsed, summary)
        if problem:
            log.debug("background summary dropped: %s", problem)
            return None
        try:
            return self.future.result()
        except Exception as err:
            log.warning("background summary failed (%s: %s); compacting now", type(err).__name__, err)
            return None


class Background:
    """One worker thread (started on first use) and at most one job."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.job: Job | None = None
        self._worker: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def current(self, parsed: list[Message], summary: CompressedContext | None) -> bool:
        """The job still describes this history (no new one is needed); a stale job is dropped."""
        job = self.job
        if job is None or job.current(parsed, summary):
            return job is not None
        self.job = None
        log.debug(
            "background summary of %d messages dropped: the history no longer starts with its snapshot", job.plan.cut
        )
        return False

    def start(
        self,
        parsed: list[Message],
        plan: Plan,
        previous: CompressedContext | None,
        tokens: int,
        summarise: Callable[[list[Message], Plan, CompressedContext | None], Any],
    ) -> Job:
        """Summarise ``plan``'s part of a snapshot of ``parsed`` in the worker; the new job replaces any other."""
        with self._lock:
            if self._worker is None:
                self._worker = ThreadPoolExecutor(1, thread_name_prefix=self.name)
            worker = self._worker
        snapshot = list(parsed)
        self.job = Job(snapshot[: plan.cut], plan, previous, worker.submit(summarise, snapshot, plan, previous), tokens)
        log.debug(
            "background summary started at %d tokens: messages [%d, %d) of %d", tokens, plan.head, plan.cut, len(parsed)
        )
        return self.job

    def take(self) -> Job | None:
        """The job, which is no longer this worker's."""
        job, self.job = self.job, None
        return job

    def close(self) -> None:
        """Wait for a summary still being built (its result is dropped) and stop the worker thread."""
        with self._lock:
            worker, self._worker = self._worker, None
        self.job = None
        if worker is not None:
            worker.shutdown(wait=True, cancel_futures=True)


__all__ = ["Background", "Job"]
