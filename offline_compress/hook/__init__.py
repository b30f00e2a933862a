"""The hook for agent loops and its policy, in one place: ``CompactionHook`` (``compaction_hook``: call
``before_step(messages)`` before each model call), its configuration as data (``config``: ``HookConfig``), when it
fires (``trigger``: a pure decision from the history's exact token count), the loop guard's hold after a compaction
that could not reach its target (``guard``) and compacting harder (``harder``, with recent messages cut to fit by
``shrink``), the summary built in the background (``background``), the compactions it handed back and what a later
history owes them (``applied``), what it reports of each firing (``metrics``), and the failsafe that never lets a
fault of ours fail the agent's step (``safe_step``). Everything here logs as ``offline_compress.hook``."""

from __future__ import annotations

from importlib import import_module
from typing import Any

# Loaded on first use: importing the trigger (the CLI's ``check``, say) loads no compressor.
_LAZY = {
    "CompactionHook": "compaction_hook",
    "CompactionMetrics": "metrics",
    "CompressionDecision": "trigger",
    "HEAD_NOTE": "compaction_hook",
    "HookConfig": "config",
    "TriggerConfig": "trigger",
    "evaluate_compression": "trigger",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_LAZY)
