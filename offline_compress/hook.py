"""The hook for agent loops (framework-agnostic): call ``before_step(messages)`` before each model call and
use the list it returns. When the trigger fires, the older messages are archived on disk, then replaced by one
system message holding the summary; the last messages (and the tool results they need) stay as they are."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .archive import archive_messages
from .compressor import DEFAULT_KEEP_LAST, Compressor, default_compressor, split_previous_summary, summary_message
from .cut import cut_index
from .messages import MessageCache, as_messages
from .schema import CompressedContext
from .trigger import CompressionDecision, TriggerConfig, evaluate_compression


class CompactionMetrics(BaseModel):
    """One compaction: why, how much it saved, how long it took."""

    compaction: int
    reason: str
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    seconds: float
    groundedness: float


class CompactionHook:
    """Keeps an agent's history inside ``model_max_tokens``.

    ``archive_path``: JSONL file the replaced messages are appended to (fsync'd) before a new history is
    returned. The caller's list and dicts are never modified; kept messages are passed through unchanged."""

    def __init__(
        self,
        model_max_tokens: int,
        *,
        archive_path: str | Path = "offline_compress_archive.jsonl",
        compressor: Compressor | None = None,
        counter: Any = None,
        trigger: TriggerConfig = TriggerConfig(),
        keep_last: int = DEFAULT_KEEP_LAST,
    ) -> None:
        if model_max_tokens <= 0:
            raise ValueError(f"model_max_tokens must be positive, got {model_max_tokens}")
        self.model_max_tokens = model_max_tokens
        self.archive_path = Path(archive_path)
        self._compressor = compressor
        if counter is None:
            from .tokens import get_counter

            counter = get_counter()
        self.counter = counter
        self.trigger = trigger
        self.keep_last = keep_last
        self.turns_since_last_compression = 0
        self.metrics: list[CompactionMetrics] = []
        self.last_decision: CompressionDecision | None = None
        self.summary: CompressedContext | None = None
        self._messages = MessageCache()

    @property
    def compressor(self) -> Compressor:
        if self._compressor is None:
            self._compressor = default_compressor(keep_last=self.keep_last)
        return self._compressor

    def before_step(self, messages: Sequence[Mapping[str, Any]]) -> list[Any]:
        """Return the history to send: ``messages`` itself (as a new list) or ``[summary, *recent]``."""
        originals = list(messages)
        parsed = self._messages.parse(originals)
        decision = evaluate_compression(
            parsed, self.model_max_tokens, self.turns_since_last_compression, config=self.trigger, counter=self.counter
        )
        self.last_decision = decision
        if not decision.should_compress:
            self.turns_since_last_compression += 1
            return originals
        return self._compact(originals, parsed, decision.reason, decision.estimated_tokens)

    def compact(self, messages: Sequence[Mapping[str, Any]], *, reason: str = "manual") -> list[Any]:
        """Compact now, whatever the trigger says (a user's "compact" command, or a model that refused a
        too-long prompt). Returns ``messages`` unchanged (as a new list) when nothing can be compressed."""
        originals = list(messages)
        parsed = self._messages.parse(originals)
        return self._compact(originals, parsed, reason, self.counter.count(parsed))

    def _compact(self, originals: list[Any], parsed: list[Any], reason: str, tokens_before: int) -> list[Any]:
        cut = cut_index(parsed, self.keep_last)
        _, summary_messages = split_previous_summary(parsed)
        if cut <= summary_messages:
            self.turns_since_last_compression += 1
            return originals
        start = time.perf_counter()
        result = self.compressor.compress_detailed(parsed, keep_last=self.keep_last, previous=self.summary)
        compaction = len(self.metrics) + 1
        new_history = [summary_message(result.context), *originals[cut:]]
        # Archive first: if this raises, the caller still has its full history and nothing was replaced.
        archive_messages(
            self.archive_path, originals[:cut], compaction=compaction, summary_json=result.context.to_json()
        )
        self.summary = result.context
        self.turns_since_last_compression = 0
        self.metrics.append(
            CompactionMetrics(
                compaction=compaction,
                reason=reason,
                tokens_before=tokens_before,
                tokens_after=self.counter.count(as_messages(new_history)),
                messages_before=len(originals),
                messages_after=len(new_history),
                seconds=time.perf_counter() - start,
                groundedness=result.grounding.groundedness,
            )
        )
        return new_history
