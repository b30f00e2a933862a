"""The history: the canonical message (OpenAI chat format, ``messages``), which messages are tool output (the one
definition every other module uses, ``conventions``), where a compaction cuts (``cut``) and what it replaces
(``plan``: the ``Plan``), and when it fires (``trigger``); the loop guard's hold (``guard``), recent messages cut to fit
(``shrink``), and the compactions a hook handed back (``applied``: reapplied to a history that extends one, a cut
message read whole by the next summary); tool output as the summary reads it, as a terminal shows it
(``terminal``). Everything here is a pure function of the messages."""

from __future__ import annotations

from importlib import import_module
from typing import Any

# Loaded on first use: importing one module of this package (the message model, say) loads no other.
_LAZY = {
    "CompressionDecision": "trigger",
    "Message": "messages",
    "MessageCache": "messages",
    "Plan": "plan",
    "TriggerConfig": "trigger",
    "as_messages": "messages",
    "cut_index": "cut",
    "evaluate_compression": "trigger",
    "head_end": "cut",
    "is_tool_output": "conventions",
    "parse_message": "messages",
    "parse_messages": "messages",
    "plan_compaction": "plan",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_LAZY)
