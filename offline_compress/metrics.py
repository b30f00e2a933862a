"""What the hook reports of each firing of the trigger (``CompactionMetrics``), to its ``metrics`` list, its log
records and its ``on_compaction`` listeners."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel

from .summary.schema import CompressedContext


class CompactionMetrics(BaseModel):
    """One firing of the trigger: what was done, why, how much it saved, how long it took."""

    compaction: int  # number of this compaction (1, 2, ...); 0 when the history was kept
    outcome: Literal["compacted", "kept"]
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


Listener = Callable[[CompactionMetrics, CompressedContext], Any]
