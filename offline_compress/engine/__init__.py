"""The local model engine, behind one seam (``base.Backend``): the in-process llama.cpp model (``llamacpp``, with
Outlines or the forced-token decoder of ``forced``, and the thread count of ``threads``) and an OpenAI-compatible
model server (``openai_server``: llama.cpp's server, llama-cpp-python's, vLLM), and recorded completions for tests
and evaluation (``recorded``); ``options`` holds the command-line switches that pick one. llama.cpp loads only when
a backend is built, so importing this package is cheap; without the ``local-model`` extra, building the in-process
one raises ``MissingExtraError``, naming the pip command."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import Backend, Generation, MissingExtraError, PromptTooLongError
from .llamacpp import LlamaCppBackend
from .openai_server import OpenAIServerBackend

if TYPE_CHECKING:
    from .recorded import RecordedBackend


def __getattr__(name: str) -> Any:
    # loaded on first use: ``python -m offline_compress.engine.recorded`` must find it not yet imported
    if name == "RecordedBackend":
        from .recorded import RecordedBackend

        return RecordedBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Backend",
    "Generation",
    "LlamaCppBackend",
    "MissingExtraError",
    "OpenAIServerBackend",
    "PromptTooLongError",
    "RecordedBackend",
]
