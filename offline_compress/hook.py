"""The hook for agent loops (framework-agnostic): call ``before_step(messages)`` before each model call and
use the list it returns. When the trigger fires, the older messages are archived on disk, then replaced by one
system message holding the summary. The head (the system prompt and the task, by default) stays verbatim before
the summary, and the last messages (and the tool results they need) stay verbatim after it:

    [*head, summary, *recent]

A compaction that would not make the history smaller is not done: the history is returned as it was and the
metrics say why."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from .archive import Archive, RecallHit, database_path
from .compressor import (
    DEFAULT_KEEP_LAST,
    Compressor,
    default_compressor,
    find_previous_summary,
    is_summary_message,
    summary_message,
)
from .errors import InputError
from .cut import cut_index, head_end
from .messages import MessageCache, as_messages
from .recall import RECALL_NOTE
from .recall import recall_tool as archive_recall_tool
from .schema import CompressedContext
from .trigger import CompressionDecision, TriggerConfig, evaluate_compression


DEFAULT_SUMMARY_FRACTION = 0.25
DEFAULT_SUMMARY_MAX_TOKENS = 4096
HEAD_NOTE = "The messages before this summary (the instructions and the task) are kept verbatim."


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
    seconds: float
    groundedness: float = 1.0
    above_threshold: bool = False  # the compacted history is still above the trigger's token threshold
    dropped_items: int = 0  # summary items dropped by its bounds (they stay in the archive)


def _as_list(messages: Any) -> list[Any]:
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Iterable):
        raise InputError(f"expected a list of messages, got {type(messages).__name__}", source="<messages>")
    return list(messages)


class CompactionHook:
    """Keeps an agent's history inside ``model_max_tokens``.

    ``archive_path``: the SQLite archive (``archive.py``) each compaction is committed to before a new history
    is returned; ``None`` (default): ``$XDG_STATE_HOME/offline_compress/archive.sqlite3``; a ``.jsonl`` path:
    the ``.sqlite3`` beside it. ``session``: this agent's id in the archive (default: a new uuid4).
    ``recall_note``: the line after the summary telling the agent it can recall archived messages; ``None``
    (default): ``recall.RECALL_NOTE`` once ``recall_tool()`` has been called (the agent has the tool), else none.
    ``summary_role``: the role of the summary message, ``"system"`` (default) or ``"user"`` for chat templates
    that drop or reject a system message after the first one (llama.cpp's llama-2/chatml formats keep only the
    first; Gemma's folds only a leading one).
    ``keep_first``: the head kept verbatim before the summary: ``None`` (default) keeps the leading
    system/developer messages and the first user message (the task); an int keeps that many first messages; 0
    summarises everything before the recent messages. ``keep_last``: recent messages kept verbatim after it.
    ``summary_fraction`` / ``summary_max_tokens``: the summary's token budget, a share of ``model_max_tokens``
    up to a cap (default a quarter of the window, at most 4,096 tokens; what does not fit is dropped oldest
    first, counted in the metrics, and stays in the archive).
    The caller's list and dicts are never modified; kept messages are passed through unchanged."""

    def __init__(
        self,
        model_max_tokens: int,
        *,
        archive_path: str | Path | None = None,
        session: str | None = None,
        recall_note: str | None = None,
        compressor: Compressor | None = None,
        counter: Any = None,
        trigger: TriggerConfig = TriggerConfig(),
        keep_last: int = DEFAULT_KEEP_LAST,
        keep_first: int | None = None,
        summary_fraction: float = DEFAULT_SUMMARY_FRACTION,
        summary_max_tokens: int = DEFAULT_SUMMARY_MAX_TOKENS,
        summary_role: Literal["system", "user"] = "system",
    ) -> None:
        if summary_role not in ("system", "user"):
            raise ValueError(f"summary_role must be 'system' or 'user', got {summary_role!r}")
        if not 0 < summary_fraction <= 1:
            raise ValueError(f"summary_fraction must be in (0, 1], got {summary_fraction}")
        if model_max_tokens <= 0:
            raise ValueError(f"model_max_tokens must be positive, got {model_max_tokens}")
        if keep_first is not None and keep_first < 0:
            raise ValueError(f"keep_first must be None or >= 0, got {keep_first}")
        self.model_max_tokens = model_max_tokens
        self.archive_path = database_path(archive_path)
        self._archive_arg = archive_path
        self._archive: Archive | None = None  # opened at the first compaction or recall
        self.session = session or uuid.uuid4().hex
        self.recall_note = recall_note
        self.summary_role = summary_role
        self._tool_offered = False
        self._compressor = compressor
        if counter is None:
            from .tokens import get_counter

            counter = get_counter()
        self.counter = counter
        self.trigger = trigger
        self.keep_last = keep_last
        self.keep_first = keep_first
        self.summary_tokens = max(256, min(int(summary_fraction * model_max_tokens), summary_max_tokens))
        self.turns_since_last_compression = 0
        self.metrics: list[CompactionMetrics] = []
        self.last_decision: CompressionDecision | None = None
        self.summary: CompressedContext | None = None
        self._messages = MessageCache()
        self._empty_summary_tokens: int | None = None

    @property
    def compressor(self) -> Compressor:
        if self._compressor is None:
            self._compressor = default_compressor(keep_last=self.keep_last)
        return self._compressor

    @property
    def archive(self) -> Archive:
        if self._archive is None:
            self._archive = Archive(self._archive_arg)
        return self._archive

    def recall(self, query: str, k: int = 5) -> list[RecallHit]:
        """The archived messages of this session that best match ``query`` (redacted snippets, best first)."""
        return self.archive.recall(query, k=k, session=self.session)

    def recall_tool(self) -> tuple[dict[str, Any], Any]:
        """(OpenAI tool definition, ``handler(arguments) -> str``) for the agent to search this session's archive.
        From now on the summary tells the agent that it can recall (unless ``recall_note`` says otherwise)."""
        self._tool_offered = True
        return archive_recall_tool(self.archive, session=self.session)

    @property
    def note(self) -> str:
        """The recall line after the summary: the given ``recall_note``, else the default once the tool is offered."""
        if self.recall_note is not None:
            return self.recall_note
        return RECALL_NOTE if self._tool_offered else ""

    def close(self) -> None:
        """Close the archive's database connection (the hook can be used again; it reopens on demand)."""
        if self._archive is not None:
            self._archive.close()
            self._archive = None

    def __enter__(self) -> CompactionHook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def compactions(self) -> int:
        return sum(1 for m in self.metrics if m.outcome == "compacted")

    def before_step(self, messages: Sequence[Mapping[str, Any]]) -> list[Any]:
        """Return the history to send: ``messages`` itself (as a new list) or ``[*head, summary, *recent]``."""
        originals = _as_list(messages)
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
        too-long prompt). Returns ``messages`` unchanged (as a new list) when compaction cannot shrink it."""
        originals = _as_list(messages)
        parsed = self._messages.parse(originals)
        return self._compact(originals, parsed, reason, self.counter.count(parsed))

    def _keep(self, originals: list[Any], parsed: list[Any], reason: str, tokens: int, note: str,
              start: float) -> list[Any]:
        """Record a firing that did not compact, and hand the history back as it was."""
        self.turns_since_last_compression += 1
        self.metrics.append(CompactionMetrics(
            compaction=0, outcome="kept", reason=reason, note=note, tokens_before=tokens, tokens_after=tokens,
            messages_before=len(parsed), messages_after=len(parsed), seconds=time.perf_counter() - start))
        return originals

    def _compact(self, originals: list[Any], parsed: list[Any], reason: str, tokens_before: int) -> list[Any]:
        start = time.perf_counter()
        head = head_end(parsed, self.keep_first, is_summary=is_summary_message)
        cut = cut_index(parsed, self.keep_last)
        _, at = find_previous_summary(parsed[:cut], head)
        region = [i for i in range(head, cut) if i != at]
        if not region:
            return self._keep(originals, parsed, reason, tokens_before,
                              "nothing to compress between the kept head and the recent messages", start)
        # Any summary costs at least the empty one: a region smaller than that can only grow (no model call).
        if self._empty_summary_tokens is None:
            self._empty_summary_tokens = self.counter.count([summary_message(CompressedContext(), "")])
        region_tokens = sum(self.counter.message_counts([parsed[i] for i in region]))
        if region_tokens <= self._empty_summary_tokens:
            return self._keep(originals, parsed, reason, tokens_before,
                              f"the {len(region)} messages to compress hold {region_tokens} tokens, no more than an "
                              "empty summary", start)
        result = self.compressor.compress_detailed(parsed, keep_last=self.keep_last, previous=self.summary,
                                                   keep_first=head, summary_tokens=self.summary_tokens)
        note = "\n".join(x for x in (HEAD_NOTE if head else "", self.note) if x)
        message = summary_message(result.context, note) | {"role": self.summary_role}
        new_history = [*originals[:head], message, *originals[cut:]]
        tokens_after = self.counter.count(as_messages(new_history))
        if tokens_after >= tokens_before:
            return self._keep(originals, parsed, reason, tokens_before,
                              f"the compacted history would hold {tokens_after} tokens, not fewer than {tokens_before}",
                              start)
        # Archive first (committed): if this raises, the caller still has its full history and nothing was replaced.
        compaction = self.archive.record_compaction(
            self.session, originals, head=head, cut=cut, reason=reason, summary_json=result.context.to_json(),
            tokens_before=tokens_before, tokens_after=tokens_after)
        self.summary = result.context
        self.turns_since_last_compression = 0
        above = tokens_after > self.trigger.token_fraction * self.model_max_tokens
        self.metrics.append(
            CompactionMetrics(
                compaction=compaction,
                outcome="compacted",
                reason=reason,
                note=f"still above the threshold ({tokens_after} tokens): this is the smallest history there is"
                if above else "",
                tokens_before=tokens_before,
                tokens_after=tokens_after,
                messages_before=len(originals),
                messages_after=len(new_history),
                head=head,
                seconds=time.perf_counter() - start,
                groundedness=result.grounding.groundedness,
                above_threshold=above,
                dropped_items=result.stats.clipped_items,
            )
        )
        return new_history
