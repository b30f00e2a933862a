"""The hook's policy as data: ``HookConfig``, one validated model (pydantic) with each field documented where it is
declared, as mini-swe-agent documents its ``AgentConfig``. ``CompactionHook(window, HookConfig(...))`` takes it, or
a mapping of the same fields (a JSON or YAML file read by the caller). What a backend is and how it runs (llama.cpp
threads, a server's URL) is the ``Compressor``'s, not this."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from ..summary.plan import DEFAULT_KEEP_LAST
from ..summary.render import Render
from .harder import KEEP_SHARE
from .trigger import TriggerConfig

DEFAULT_SUMMARY_FRACTION = 0.35  # chosen on the replay A/B design split (docs/replay.md): binds below ~9k windows
# The budget scales with what the summary replaces: DEFAULT_SUMMARY_RATIO of its tokens, never below the floor,
# never above DEFAULT_SUMMARY_FRACTION of the window. Both chosen on both corpora's design splits (docs/replay.md,
# "The budget curve"; the floor 4,608 until 2026-12-07, then 5,120 with the churn defaults below).
DEFAULT_SUMMARY_FLOOR_TOKENS = 5120
DEFAULT_SUMMARY_RATIO = 0.4
# The churn defaults (issue 47), chosen on the replay's function-calling design split by a rule stated before the sweep
# (docs/performance.md, "Compaction churn", every setting tried): the trigger at 85% (hook.trigger), the summary's
# floor above, this room, the guard's hold capped at the trigger. A compaction aims under the target (issue 21; 35% of
# the window under the trigger): deeper ones, reached by summarising the last messages, cost 4-8 points of them.
DEFAULT_TARGET_FRACTION = 0.5
# The summary's room under the trigger, as a share of the window, before the recent messages give way to it (the
# oldest of them summarised too, then tool outputs among them cut); 0.2 until 2026-12-07 (docs/replay.md, "Room for
# the summary"); 0 keeps every recent message whole unless the history would not fit.
DEFAULT_SUMMARY_ROOM = 0.25
DEFAULT_TRIGGER_FRACTION = TriggerConfig().token_fraction  # the trigger the two shares above were chosen with


def _scaled(default: float, trigger: TriggerConfig) -> float:
    """A share chosen with the default trigger, kept in proportion under a lower one (LangChain's tests use 10%)."""
    return min(default, default * trigger.token_fraction / DEFAULT_TRIGGER_FRACTION)


class HookConfig(BaseModel):
    """What ``CompactionHook`` does, and when. Fractions are of the agent's context window."""

    # the docstrings below are the fields' descriptions too (HookConfig.model_json_schema())
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    trigger: TriggerConfig = Field(default_factory=TriggerConfig)
    """When a compaction fires (``hook.trigger``): by default when the history passes 85% of the window."""
    keep_first: int | None = Field(None, ge=0)
    """The head kept verbatim before the summary. None: the leading system/developer messages and the first user
    message (the task); an int: that many first messages; 0: everything before the recent messages is summarised."""
    keep_last: StrictInt = Field(DEFAULT_KEEP_LAST, ge=0)
    """Recent messages kept verbatim after the summary (with any tool results they need)."""
    summary_ratio: float | None = Field(DEFAULT_SUMMARY_RATIO, gt=0)
    """The summary's token budget as a share of the tokens it replaces (``summary.budget``), between
    ``summary_floor_tokens`` and ``summary_fraction`` of the window. None: the older fixed budget, ``summary_fraction``
    of the window up to ``summary_floor_tokens``. What does not fit is dropped (the work log line by line by what each
    line adds, ``summary.pack``), counted in the metrics, and stays in the archive."""
    summary_floor_tokens: int = Field(DEFAULT_SUMMARY_FLOOR_TOKENS, gt=0)
    """The budget's floor (with ``summary_ratio=None``, its cap)."""
    summary_fraction: float = Field(DEFAULT_SUMMARY_FRACTION, gt=0, le=1)
    """The most of the window a summary may take; a user turn of 2,000+ characters stays whole while the
    constraints fit this share."""
    summary_room: float | None = None
    """The share of the window the summary keeps under the trigger before the recent messages give way: while the
    head and the last ``keep_last`` messages would leave it less, the oldest of those are summarised too (down to
    the last message and its call, never past a user's own turn), then the tool outputs among them are cut (copies).
    0: recent messages are cut only when the history would not fit. None: 25%, in proportion to a trigger below
    85%. A later summary reads a cut message whole."""
    target_fraction: float | None = Field(None, gt=0, le=1)
    """The loop guard's target: a compaction that leaves the history above it holds the trigger
    (``hook.guard``). None: 50%, in proportion to a trigger below 85%."""
    summary_keep_share: float = Field(KEEP_SHARE, ge=0, le=1)
    """A summary cut toward the target keeps at least this share of itself (``hook.harder``)."""
    soft_fraction: float | None = None
    """Start building the summary in a worker thread once the history passes this share (below the trigger), and
    swap it in when the trigger fires. None: off, the summary is built when the trigger fires."""
    summary_role: Literal["system", "user"] = "system"
    """The summary message's role: "user" for chat templates that drop or reject a system message after the first
    (llama.cpp's llama-2/chatml formats keep only the first; Gemma's folds only a leading one)."""
    render: Render = "json"
    """How the summary is written into the history: one line of canonical JSON, or the same fields as compact
    Markdown (``summary.render``); either is read back and merged."""
    recall_note: str | None = None
    """The line after the summary telling the agent it can recall archived messages. None: the default note once
    ``CompactionHook.recall_tool()`` has been called (the agent has the tool), else none."""
    session: str | None = None
    """This agent's id in the archive. None: a new uuid4 per hook (give one to resume a session's archive)."""

    @model_validator(mode="after")
    def _under_the_trigger(self) -> HookConfig:
        limit = self.trigger.token_fraction
        if self.soft_fraction is not None and not 0 < self.soft_fraction < limit:
            raise ValueError(f"soft_fraction must be None or between 0 and the trigger's token_fraction ({limit})")
        if self.summary_room is not None and not 0 <= self.summary_room < limit:
            raise ValueError(f"summary_room must be in [0, {limit}) (the trigger's token_fraction)")
        return self

    @property
    def room(self) -> float:
        """``summary_room``, or its default in proportion to the trigger (a low trigger is never refused for it)."""
        return _scaled(DEFAULT_SUMMARY_ROOM, self.trigger) if self.summary_room is None else self.summary_room

    @property
    def target(self) -> float:
        """``target_fraction``, or its default in proportion to the trigger."""
        return _scaled(DEFAULT_TARGET_FRACTION, self.trigger) if self.target_fraction is None else self.target_fraction


__all__ = [
    "DEFAULT_SUMMARY_FLOOR_TOKENS",
    "DEFAULT_SUMMARY_FRACTION",
    "DEFAULT_SUMMARY_RATIO",
    "DEFAULT_SUMMARY_ROOM",
    "DEFAULT_TARGET_FRACTION",
    "HookConfig",
]
