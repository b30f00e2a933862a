"""The history: the canonical message (OpenAI chat format, ``messages``), which messages are tool output (the one
definition every other module uses, ``conventions``), where a compaction may cut (``cut``: the head's end, the last
messages kept, never between a tool call and its results), tool output as the summary reads it, as a terminal
shows it (``terminal``), and the shell lexer (``shell``: a command line as simple commands, the one the extractor
and the contradiction counter both read commands with). Everything here is a pure function of the messages, and
nothing here imports another folder of the package: the history is the floor the rest stands on."""

from __future__ import annotations

from importlib import import_module
from typing import Any

# Loaded on first use: importing one module of this package (the message model, say) loads no other.
_LAZY = {
    "Message": "messages",
    "MessageCache": "messages",
    "as_messages": "messages",
    "cut_index": "cut",
    "head_end": "cut",
    "is_tool_output": "conventions",
    "parse_message": "messages",
    "parse_messages": "messages",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_LAZY)
