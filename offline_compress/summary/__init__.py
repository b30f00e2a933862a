"""The summary document and how it is made from the facts: its schema (``CompressedContext``, bounded), the message
that holds it in a history (``message``: the marker, rendering, finding the previous one; ``render``: JSON or
Markdown, read back exactly), the model's optional draft (``draft``, ``prompt``) and its grounding (``ground``), and
the assembly of facts, draft and previous summary into the token budget (``merge``, with the work log packed line by
line by ``pack``), what a compaction replaces (``plan``: the ``Plan``, the head, the region and the earlier summary it
merges), and the last pass of secret redaction over a finished summary (``redaction``)."""

from __future__ import annotations

from importlib import import_module
from typing import Any

# Loaded on first use: importing one module of this package (the message model, say) loads no other.
_LAZY = {
    "SUMMARY_PREFIX": "message",
    "CompressedContext": "schema",
    "Plan": "plan",
    "plan_compaction": "plan",
    "compressed_context_json_schema": "schema",
    "find_previous_summary": "message",
    "is_summary_message": "message",
    "parse_summary_message": "message",
    "summary_message": "message",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_LAZY)
