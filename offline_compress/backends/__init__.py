"""Summariser backends behind one seam (``base.Backend``): the in-process llama.cpp model (``llamacpp``) and an
OpenAI-compatible model server (``openai_server``: llama.cpp's server, llama-cpp-python's, vLLM). Both modules load
their engine only when a backend is built (llama.cpp) or not at all (the server client is the standard library), so
importing this package is cheap."""

from __future__ import annotations

from .base import Backend, Generation
from .llamacpp import LlamaCppBackend
from .openai_server import OpenAIServerBackend

__all__ = ["Backend", "Generation", "LlamaCppBackend", "OpenAIServerBackend"]
