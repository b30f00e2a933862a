"""Token counting as the target model sees a history: its tokenizer (``gguf``: derived from a GGUF's own vocabulary,
or a ``tokenizer.json``), its chat template (``chat_template``: Gemma 3, or a Hugging Face folder's), and the exact,
incremental, cached counter (``counter.TokenCounter``, which counts a long text in pieces cut where no token can
span: ``pieces``). ``protocol.CountsTokens`` is what the rest of the library
asks of a counter, so a test or a caller may pass any object with those methods.

The counter is found at once and its tokenizer loads on first use, or in a background thread (``preload``, which a
hook starts), never at import; meanwhile a derived tokenizer's counts have an upper bound that needs none
(``TokenCounter.message_bounds``). ``counter.RunningTotal`` keeps a conversation's count as it grows."""

from __future__ import annotations

from typing import Any

from .protocol import CountsTokens

_LAZY = {"TokenCounter": "counter", "count_tokens": "counter", "get_counter": "counter", "default_counter": "counter"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CountsTokens", "TokenCounter", "count_tokens", "default_counter", "get_counter"]
