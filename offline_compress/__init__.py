"""offline_compress: keep long-running LLM agents inside their context window, fully offline.

Public face::

    from offline_compress import evaluate_compression, compress_context, Compressor, CompactionHook

Heavy pieces (llama.cpp, Outlines, the tokenizer) load lazily, on first use, never from a network.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from .errors import (
    BackendError,
    EmptyHistoryError,
    InputError,
    ModelFileError,
    OfflineCompressError,
    TokenizerError,
)
from .history.messages import Message
from .history.trigger import CompressionDecision, TriggerConfig, evaluate_compression
from .summary.schema import CompressedContext, compressed_context_json_schema

__version__ = "0.1.0"

# Imported on first attribute access so `import offline_compress` stays cheap (no llama.cpp load).
_LAZY = {
    "Compressor": "compressor",
    "CompressionResult": "compressor",
    "compress_context": "compressor",
    "CompactionHook": "hook",
    "CompactionMetrics": "metrics",
    "TokenCounter": "tokens",
    "count_tokens": "tokens",
    "count_contradictions": "contradictions",
    "load_history": "formats",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'offline_compress' has no attribute {name!r}")


__all__ = [
    "BackendError",
    "CompactionHook",
    "CompactionMetrics",
    "CompressedContext",
    "CompressionDecision",
    "CompressionResult",
    "Compressor",
    "EmptyHistoryError",
    "InputError",
    "Message",
    "ModelFileError",
    "OfflineCompressError",
    "TokenCounter",
    "TokenizerError",
    "TriggerConfig",
    "compress_context",
    "compressed_context_json_schema",
    "count_contradictions",
    "count_tokens",
    "evaluate_compression",
    "load_history",
]
