"""The in-process backend: llama.cpp (llama-cpp-python) loads a GGUF once; Outlines' ``Generator`` with the llguidance
backend, built once per schema, constrains the greedy decode; the KV cache of the fixed prompt prefix is kept.

Why these choices (measured, see docs/install.md, "Why these dependencies"): Outlines' default ``outlines_core``
backend took seconds to compile a nested schema for Gemma's 262k vocabulary and ran out of memory on long strings;
llguidance compiles in ~3 s with little per-token cost. Outlines resets the llama.cpp context after each call, which
defeats llama-cpp-python's own prefix reuse, so we restore a saved state of the fixed prefix before each call instead.
"""

from __future__ import annotations

import atexit
import json
import os
import time
import warnings
import weakref
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import BackendError
from .base import Generation, MissingExtraError, PromptTooLongError
from .threads import default_threads, threads_now

Decoder = Literal["outlines", "forced"]


class LlamaSettings(BaseModel):
    """How the in-process model runs (llama.cpp), apart from what the summary is: ``Compressor(model,
    llama=LlamaSettings(...))`` or a mapping of the same fields. Unused with ``backend=...`` (a server)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_ctx: int = Field(8192, ge=1)
    """The model's context window in tokens: the prompt, the fixed prefix and the output share it."""
    n_threads: int | None = Field(None, ge=0)
    """CPU threads for the decode. None: as many as are idle at each call (``engine.threads``); 0: the cores
    available, fixed."""
    n_gpu_layers: int = Field(0, ge=-1)
    """Layers offloaded to the GPU (-1: all), where llama-cpp-python was built with one."""
    flash_attn: bool = False
    """llama.cpp's flash attention."""
    decoder: Decoder = "outlines"
    """The constrained decoder: Outlines' ``Generator`` (llguidance), or the forced-token loop (``engine.forced``,
    about 10% less time per compaction on 2 CPU cores)."""
    verify_model: bool = True
    """Check the model file's SHA-256 against the manifest before loading it (a manifest name or the default)."""


@dataclass(frozen=True)
class FastGeneration(Generation):
    """``Generation`` from the forced-token loop (fastdecode.py), with what it did. ``generated_tokens`` is the exact
    number of output tokens (forced + sampled, final EOS excluded), not a re-tokenization of the text."""

    forced_tokens: int = 0
    sampled_tokens: int = 0
    decode_calls: int = 0  # llama.cpp decode batches during generation (prompt excluded)
    masks: int = 0  # full token masks computed (only where the unconstrained greedy token was not allowed)
    mask_seconds: float = 0.0  # llguidance time: masks, validations, forced tokens
    stop_reason: str = ""  # "grammar" | "eos" | "max_tokens" | "error: ..."


# FastGeneration's own fields: the loop's DecodeResult has them under the same names
_LOOP_FIELDS = tuple(f.name for f in fields(FastGeneration) if f.name not in {g.name for g in fields(Generation)})


class LlamaCppBackend:
    """One loaded GGUF. Build once, call ``generate`` many times (one at a time: a llama.cpp context is not
    thread-safe; the compressor holds a lock)."""

    def __init__(
        self,
        model_path: str | Path,
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        n_batch: int = 256,
        n_gpu_layers: int = 0,
        flash_attn: bool = False,
        seed: int = 0,
        decoder: Decoder = "outlines",
        verbose: bool = False,
    ) -> None:
        try:
            import llama_cpp
            import llguidance  # noqa: F401  # Outlines' grammar backend
            import outlines
        except ImportError as err:
            raise MissingExtraError(err) from err
        quiet_null_files()
        if decoder not in ("outlines", "forced"):
            raise ValueError(f"decoder must be 'outlines' or 'forced', got {decoder!r}")
        self.model_path = Path(model_path)
        self.decoder: Decoder = decoder
        # None: adaptive, re-chosen before each generation from the cores free then (threads.py)
        self.adaptive_threads = n_threads is None
        self.n_threads = n_threads or default_threads()
        try:
            self.llm: Any = llama_cpp.Llama(
                model_path=str(self.model_path),
                n_ctx=n_ctx,
                n_threads=self.n_threads,
                n_threads_batch=self.n_threads,
                n_batch=n_batch,
                n_ubatch=n_batch,
                n_gpu_layers=n_gpu_layers,
                # Off by default: on 2 CPU cores it made generation ~8% faster per token and prompt processing
                # ~5% slower, a wash end to end (bench "attention"); it also rounds differently, so summaries change.
                flash_attn=flash_attn,
                seed=seed,
                verbose=verbose,
            )
        except (ValueError, RuntimeError) as err:
            raise BackendError(f"{self.model_path}: llama.cpp could not load the model ({err})") from err
        self.n_ctx = n_ctx
        self.flash_attn = flash_attn
        self.gpu = n_gpu_layers != 0 and bool(llama_cpp.llama_supports_gpu_offload())
        self.name = f"llama.cpp {'GPU' if self.gpu else 'CPU'} ({self.model_path.name})"
        self.instruct = self.llm.metadata.get("tokenizer.chat_template") is not None
        with warnings.catch_warnings():
            # llguidance's vocabulary import calls a llama.cpp function deprecated in 0.3.36 once per token (262k).
            warnings.simplefilter("ignore", DeprecationWarning)
            self._outlines_model: Any = outlines.from_llamacpp(self.llm, chat_mode=False)
        self._generators: dict[str, Any] = {}
        self._prefix_states: dict[str, tuple[list[int], Any]] = {}
        self._fast_decoder: Any = None
        self.closed = False
        _loaded.add(self)

    def close(self) -> None:
        """Free the model, its context and the decoders now; idempotent. Every reference this backend holds to
        a llama.cpp object is dropped, so nothing of it is left for the garbage collector to free during
        interpreter shutdown (see ``_close_loaded``)."""
        if self.closed:
            return
        self.closed = True
        _loaded.discard(self)
        if self._fast_decoder is not None:
            self._fast_decoder.close()  # its worker thread evaluates on the context: stop it first
        self._fast_decoder = None
        self._generators.clear()
        self._prefix_states.clear()
        self._outlines_model = None
        llm, self.llm = self.llm, None
        llm.close()

    # -- tokens ---------------------------------------------------------------------------------------------
    def tokenize(self, text: str, *, add_bos: bool = False) -> list[int]:
        if self.closed:
            raise BackendError(f"{self.model_path}: this backend was closed")
        return self.llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True)

    def count(self, text: str) -> int:
        return len(self.tokenize(text))

    # -- generation -----------------------------------------------------------------------------------------
    def set_threads(self, n: int) -> None:
        """Run llama.cpp with ``n`` threads from now on (prompt and generation alike)."""
        import llama_cpp

        if n < 1:
            raise ValueError(f"threads must be >= 1, got {n}")
        if n != self.n_threads:
            llama_cpp.llama_set_n_threads(self.llm.ctx, n, n)
            self.n_threads = n

    def generator(self, schema: dict[str, Any]) -> Any:
        """The Outlines generator for ``schema``, compiled on first use and reused (compiling costs seconds)."""
        from outlines import Generator
        from outlines.types import JsonSchema

        key = json.dumps(schema)  # property order is the generation order: keep it
        if key not in self._generators:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                self._generators[key] = Generator(self._outlines_model, JsonSchema(key), backend="llguidance")
        return self._generators[key]

    def _restore_prefix(self, prefix: str) -> tuple[list[int], bool]:
        """Put the KV cache in the state right after ``prefix`` (BOS included); returns (its tokens, was cached)."""
        cached = self._prefix_states.get(prefix)
        if cached is not None:
            self.llm.load_state(cached[1])
            return cached[0], True
        tokens = self.tokenize(prefix, add_bos=True)
        self.llm.reset()
        self.llm.eval(tokens)
        self._prefix_states[prefix] = (tokens, self.llm.save_state())
        return tokens, False

    def eval_prompt(self, prefix: str, prompt: list[int]) -> tuple[int, bool]:
        """The KV cache holds all of ``prompt`` afterwards: the prefix's restored, the rest evaluated. Returns
        (prefix tokens, prefix cached). The fixed prefix ends in a newline that never merges with what follows,
        so its tokens start the prompt's; if a prefix ever did not, the whole prompt is evaluated afresh."""
        prefix_tokens, cached = self._restore_prefix(prefix)
        if len(prompt) <= len(prefix_tokens) or prompt[: len(prefix_tokens)] != prefix_tokens:
            self.llm.reset()
            self.llm.eval(prompt)
            return 0, False
        self.llm.eval(prompt[len(prefix_tokens) :])
        return len(prefix_tokens), cached

    def generate(
        self, prefix: str, suffix: str, schema: dict[str, Any], max_tokens: int, repeat_penalty: float = 1.0
    ) -> Generation:
        """Greedy (temperature 0) constrained generation of a JSON document for ``prefix + suffix``.

        ``repeat_penalty`` > 1 keeps small models out of loops (still greedy, still deterministic). The prompt is in
        the KV cache before the decoder starts (prefix restored, rest evaluated), so llama-cpp-python samples at
        once and the prompt time is measured apart. Same input, same output bytes. The forced-token loop (``decoder
        "forced"``, see forced.py) keeps this contract but appends the tokens the grammar forces in one batch instead
        of one decode each, and says what it did (``FastGeneration``)."""
        forced = self.decoder == "forced"
        decoder = self.fast_decoder() if forced else self.generator(schema)
        prompt = self.tokenize(prefix + suffix, add_bos=True)
        if len(prompt) + max_tokens > self.n_ctx:
            raise PromptTooLongError(
                f"prompt of {len(prompt)} tokens + {max_tokens} output tokens exceeds n_ctx={self.n_ctx}"
            )
        start = time.perf_counter()
        if self.adaptive_threads and not self.gpu:
            self.set_threads(threads_now())
        prefix_tokens, cached = self.eval_prompt(prefix, prompt)
        prompt_done = time.perf_counter()
        made: type[Generation] = Generation
        loop: dict[str, Any] = {}
        if forced:
            result = decoder.decode(schema, max_tokens, repeat_penalty=repeat_penalty, prompt_tokens=prompt)
            text = self.llm.detokenize(result.tokens, prev_tokens=prompt).decode("utf-8", errors="ignore")
            made, generated = FastGeneration, len(result.tokens)
            loop = {name: getattr(result, name) for name in _LOOP_FIELDS}
        else:
            text = decoder(
                prefix + suffix, max_tokens=max_tokens, temperature=0.0, seed=0, repeat_penalty=repeat_penalty
            )
            generated = len(self.tokenize(text)) if text else 0
        return made(
            text=text,
            prompt_tokens=len(prompt),
            prefix_tokens=prefix_tokens,
            prefix_cached=cached,
            generated_tokens=generated,
            prompt_seconds=prompt_done - start,
            total_seconds=time.perf_counter() - start,
            threads=self.n_threads,
            **loop,
        )

    # -- the forced-token loop (offline_compress/fastdecode.py) ----------------------------------------------
    def fast_decoder(self) -> Any:
        """The ``FastJsonDecoder`` for this model, built on first use. It reuses the llguidance tokenizer of an
        Outlines generator already built here (building one over Gemma's vocabulary takes seconds)."""
        if self._fast_decoder is None:
            from .forced import FastJsonDecoder

            processors = (getattr(g, "logits_processor", None) for g in self._generators.values())
            tokenizers = (t for p in processors if (t := getattr(p, "llg_tokenizer", None)) is not None)
            self._fast_decoder = FastJsonDecoder(self.llm, next(tokenizers, None))
        return self._fast_decoder


# Backends whose model is loaded. At interpreter exit, while llama-cpp-python's modules still exist, each is
# closed: a Llama left to the garbage collector is freed during module teardown, when llama_cpp's globals are
# already None, and its __del__ prints "TypeError: 'NoneType' object is not callable" (or an AttributeError
# from contextlib) after a successful run (issue 22).
_loaded: weakref.WeakSet[LlamaCppBackend] = weakref.WeakSet()


def _close_loaded() -> None:
    for backend in list(_loaded):
        backend.close()


atexit.register(_close_loaded)


class _DevNull:
    """What llama-cpp-python writes its suppressed output to: a bare descriptor of ``os.devnull``, which the process
    closes at exit (the text files it opens at import are never closed and warn at exit, ``ResourceWarning``)."""

    def __init__(self) -> None:
        self.fd = os.open(os.devnull, os.O_WRONLY)

    def fileno(self) -> int:
        return self.fd

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def quiet_null_files() -> None:
    """Swap llama-cpp-python's two module-level ``/dev/null`` files (``llama_cpp._utils``, read by name when it
    silences llama.cpp) for ``_DevNull``s, once, and close them: a clean interpreter exit."""
    from llama_cpp import _utils

    for name in ("outnull_file", "errnull_file"):
        current = getattr(_utils, name, None)
        if current is not None and not isinstance(current, _DevNull):
            setattr(_utils, name, _DevNull())
            current.close()
