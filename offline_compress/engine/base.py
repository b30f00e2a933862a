"""The summariser backend seam: what the compressor needs from a model, whichever engine runs it.

The compressor builds a prompt (a fixed prefix + a per-history suffix), asks for one JSON document that follows the
draft's bounded schema, and counts tokens to fit its prompt budget. It validates what comes back itself (a server
may answer with unconstrained text), so a backend only has to try; see ``Compressor._draft``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..errors import BackendError

# The in-process model's packages are an extra: the default (extractive) compressor loads no model, and
# llama-cpp-python compiles from source for ~15 minutes (pyproject.toml, docs/install.md).
LOCAL_MODEL_INSTALL = 'pip install "offline_compress[local-model]"'


class MissingExtraError(BackendError):
    """The in-process model's packages (llama-cpp-python, Outlines, llguidance) are not installed."""

    def __init__(self, err: ImportError) -> None:
        super().__init__(
            f"the in-process model needs the local-model extra ({err}); install it with: {LOCAL_MODEL_INSTALL} "
            "(llama-cpp-python compiles from source once, ~15 min on 2 cores)"
        )


class PromptTooLongError(BackendError):
    """The prompt and the output room do not fit the model's window (said by the backend, or by a server's HTTP
    error). The compressor answers it with the extractive summary (``CompressionStats.fallback``), not an error:
    the window is the model's, the history is the caller's, and neither is wrong."""


@dataclass(frozen=True)
class Generation:
    """One constrained generation and what it cost. Seconds are wall time in this process."""

    text: str
    prompt_tokens: int
    prefix_tokens: int = 0  # tokens of the fixed prefix (0 where the backend does not say)
    prefix_cached: bool = False  # the prefix's KV state was reused (in-process: restored; server: its own cache)
    generated_tokens: int = 0
    prompt_seconds: float = 0.0  # prompt processing (0 where the backend cannot tell it apart)
    total_seconds: float = 0.0
    threads: int = 0  # llama.cpp threads in this process (0: not run here)

    @property
    def generation_seconds(self) -> float:
        return self.total_seconds - self.prompt_seconds


@runtime_checkable
class Backend(Protocol):
    """A model that writes one JSON document for a prompt under a JSON schema, greedily (temperature 0)."""

    name: str  # what runs the model, for stats and progress lines ("llama.cpp CPU", "openai-compatible server at …")
    n_ctx: int  # the context window: prompt + output tokens must fit
    instruct: bool  # the prompt text must carry the model's turn markup itself (prompt.py wraps it then)

    def count(self, text: str) -> int:
        """Tokens of ``text`` (no BOS) in the model's own vocabulary, or as close as the backend can tell."""
        ...

    def generate(
        self, prefix: str, suffix: str, schema: dict[str, Any], max_tokens: int, repeat_penalty: float = 1.0
    ) -> Generation:
        """One JSON document for the prompt ``prefix + suffix`` (``prefix`` never changes between calls: a backend
        may cache its state). Raises ``BackendError`` when the engine cannot be reached or fails."""
        ...

    def close(self) -> None:
        """Free the model or the connection; the backend is not used afterwards."""
        ...
