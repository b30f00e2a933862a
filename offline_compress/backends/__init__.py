"""Summariser backends behind one seam (``base.Backend``): the in-process llama.cpp model (``llamacpp``) and an
OpenAI-compatible model server (``openai_server``: llama.cpp's server, llama-cpp-python's, vLLM). Each module loads
its engine only when a backend is built, so importing this package is cheap."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from .base import Backend, Generation

_LAZY = {
    "LlamaCppBackend": "llamacpp",
    "OpenAIServerBackend": "openai_server",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Backend", "Generation", "LlamaCppBackend", "OpenAIServerBackend"]
