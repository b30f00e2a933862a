"""The local model engine, behind one seam (``base.Backend``): the in-process llama.cpp model (``llamacpp``, with
Outlines or the forced-token decoder of ``forced``, and the thread count of ``threads``) and an OpenAI-compatible
model server (``openai_server``: llama.cpp's server, llama-cpp-python's, vLLM); ``options`` holds the command-line
switches that pick one. llama.cpp loads only when a backend is built, so importing this package is cheap; without
the ``local-model`` extra, building the in-process one raises ``MissingExtraError``, naming the pip command."""

from __future__ import annotations

from .base import Backend, Generation, MissingExtraError
from .llamacpp import LlamaCppBackend
from .openai_server import OpenAIServerBackend

__all__ = ["Backend", "Generation", "LlamaCppBackend", "MissingExtraError", "OpenAIServerBackend"]
