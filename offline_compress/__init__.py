"""offline_compress: keep long-running LLM agents inside their context window, fully offline.

Public face::

    from offline_compress import evaluate_compression, compress_context, Compressor, CompactionHook, HookConfig

Every piece loads on first use (the tokenizer in the background when a hook is made), never from a network.
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

__version__ = "0.1.0"

# Imported on first attribute access, so that `import offline_compress` loads nothing heavy (no pydantic, no
# tokenizer, no llama.cpp): 4 ms instead of 0.1-0.5 s.
_LAZY = {
    "Compressor": "compressor",
    "CompressionResult": "compressor",
    "compress_context": "compressor",
    "CompactionHook": "hook.compaction_hook",
    "HookConfig": "hook.config",
    "CompactionMetrics": "hook.metrics",
    "CompressedContext": "summary.schema",
    "CompressionDecision": "hook.trigger",
    "Message": "history.messages",
    "TokenCounter": "tokens.counter",
    "TriggerConfig": "hook.trigger",
    "compressed_context_json_schema": "summary.schema",
    "count_tokens": "tokens.counter",
    "count_contradictions": "contradictions",
    "evaluate_compression": "hook.trigger",
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
    "HookConfig",
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
