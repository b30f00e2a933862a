"""When to compress: a pure decision from the history's exact token count, its last message and the turns
since the last compression. Every threshold is configurable. The defaults compact rarely (issue 47, "compaction
churn"): every compaction rewrites the context after the head, so the agent's server reads it all again; the trigger
fires at 85% of the window, and the seed design's earlier rules (at 40% after a heavy tool's result, and every 30 turns)
are off unless set, chosen on the replay's function-calling design split (docs/performance.md, "Compaction churn").

A hook keeps these inputs as running state (``RunningTrigger``): only the messages new since the last step are
counted, and while the tokenizer loads, a bound that is never under the exact count decides where it says
"under every threshold" (the exact count would say so too: the rules only grow with the tokens)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..history.messages import Message, answered_tool, as_messages
from ..history.tools import HEAVY_TOOLS
from ..tokens.protocol import CountsTokens

Reason = Literal["token-threshold", "tool-event", "turn-limit", "skip"]


class TriggerConfig(BaseModel):
    """Thresholds of the trigger. Fractions are of the target model's context window."""

    model_config = ConfigDict(frozen=True)

    token_fraction: float = Field(0.85, gt=0, le=1)
    """Compress when the history uses more than this share of the window. 0.85 (0.60 until 2026-12-07): chosen on the
    replay's function-calling design split (docs/performance.md, "Compaction churn"); it leaves the agent's reply 15%
    of the window (2.4k tokens at 16k; Claude Code fires near 83%)."""
    tool_event_fraction: float | None = Field(None, gt=0, le=1)
    """...or more than this share when the last message comes from a heavy tool. None (the default; 0.40 until
    2026-12-07): off. At 0.40 it fired 74 of 356 compactions at 16k and 79 of 147 at 32k (design split), a step or two
    after the one before."""
    heavy_tools: frozenset[str] = HEAVY_TOOLS
    """Tools whose results tend to be large (matched on the tool name, case-insensitively)."""
    turn_limit: int | None = Field(None, ge=1)
    """...or when this many turns have passed since the last compression. None (the default; 30 until 2026-12-07):
    off, a small history is not rewritten for its age."""


class CompressionDecision(BaseModel):
    model_config = ConfigDict(frozen=True)

    should_compress: bool
    reason: Reason
    estimated_tokens: int
    model_max_tokens: int
    exact: bool = True
    """``estimated_tokens`` is the exact count; False: an upper bound, far enough under every threshold to decide."""


def last_tool_name(messages: Sequence[Message]) -> str | None:
    """Name of the tool that produced the last message, if it is a tool result (``messages.answered_tool``)."""
    return answered_tool(messages, len(messages) - 1) if messages else None


def decide(
    estimated_tokens: int,
    model_max_tokens: int,
    turns_since_last_compression: int,
    last_tool: str | None,
    config: TriggerConfig = TriggerConfig(),
    *,
    exact: bool = True,
) -> CompressionDecision:
    """The rule itself, on numbers only (no tokenizer, no I/O)."""
    if model_max_tokens <= 0:
        raise ValueError(f"model_max_tokens must be positive, got {model_max_tokens}")
    if turns_since_last_compression < 0:
        raise ValueError(f"turns_since_last_compression must be >= 0, got {turns_since_last_compression}")
    reason: Reason = "skip"
    if estimated_tokens > config.token_fraction * model_max_tokens:
        reason = "token-threshold"
    elif (
        config.tool_event_fraction is not None
        and last_tool is not None
        and last_tool.lower() in {t.lower() for t in config.heavy_tools}
        and estimated_tokens > config.tool_event_fraction * model_max_tokens
    ):
        reason = "tool-event"
    elif config.turn_limit is not None and turns_since_last_compression >= config.turn_limit:
        reason = "turn-limit"
    return CompressionDecision(
        should_compress=reason != "skip",
        reason=reason,
        estimated_tokens=estimated_tokens,
        model_max_tokens=model_max_tokens,
        exact=exact,
    )


def evaluate_compression(
    messages: Sequence[Message | Mapping[str, Any]],
    model_max_tokens: int,
    turns_since_last_compression: int = 0,
    *,
    config: TriggerConfig = TriggerConfig(),
    counter: CountsTokens | None = None,
) -> CompressionDecision:
    """Decide whether to compress ``messages`` for a target with a ``model_max_tokens`` window.

    ``counter`` is a ``TokenCounter`` (exact, incremental); pass the same one at every step so only new
    messages are encoded. Without one, the default target tokenizer's shared counter is used."""
    parsed = as_messages(messages)
    if counter is None:
        from ..tokens.counter import default_counter  # the tokenizer loads on first use, not at import

        counter = default_counter()
    tokens = counter.count(parsed)
    return decide(tokens, model_max_tokens, turns_since_last_compression, last_tool_name(parsed), config)


class RunningTrigger:
    """The trigger's inputs for one conversation, kept across its steps (a hook's): its tokens as a running total
    (``CountsTokens.running``: only what is new is counted) and, while the tokenizer loads, a running bound. The
    bound decides when it leaves the history under every threshold: the token rules, and ``soft_tokens`` (where a
    background summary would start); anywhere else the exact count does (waiting for the tokenizer). A counter
    without running totals counts the whole history at each step."""

    def __init__(self, counter: CountsTokens, window: int, soft_tokens: float | None = None) -> None:
        self.counter, self.window, self.soft_tokens = counter, window, soft_tokens
        running = getattr(counter, "running", None)  # a TokenCounter's (tokens.counter.RunningTotal)
        self.tokens: Any = running() if running else None
        self.bounds: Any = running(bound=True) if running and getattr(counter, "bounded", False) else None

    def decide(self, parsed: Sequence[Message], turns: int, config: TriggerConfig) -> CompressionDecision:
        last = last_tool_name(parsed)
        if self.bounds is not None and not getattr(self.counter, "loaded", True):
            bound = self.bounds.total(parsed)
            decision = decide(bound, self.window, turns, last, config, exact=False)
            if not decision.should_compress and (self.soft_tokens is None or bound <= self.soft_tokens):
                return decision
        tokens = self.tokens.total(parsed) if self.tokens else self.counter.count(parsed)
        return decide(tokens, self.window, turns, last, config)
