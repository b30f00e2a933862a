"""Greedy grammar-constrained decoding that skips grammar-forced tokens.

The Outlines path (``LlamaCppBackend.generate_json``) runs one llama.cpp decode per output token, also where the
grammar admits exactly one continuation: the draft's keys and punctuation (``{"recent_narrative":"The agent``,
``","decisions":[``, ``],"task_state":{"completed":[`` ...) are a large share of its output. This loop drives
llguidance's ``LLMatcher`` directly:

1. ``compute_ff_tokens()``: the tokens the grammar forces from here. llguidance tokenizes the forced bytes
   canonically and already drops ("chops") a trailing token that a longer token could replace, so every
   token it returns is safe to commit; the chopped bytes become a token-healing prefix that the next mask
   enforces (e.g. after ``"The agent`` the next sampled token must start with a space). These tokens are
   consumed by the matcher and evaluated by llama.cpp together with the previous sampled token, in ONE
   batch: one decode for the whole run.
2. Otherwise one token is sampled. llama.cpp evaluates everything pending (the last sampled token + any
   forced run after it) in one decode; the greedy token over the whole vocabulary is read from llama.cpp's
   own logits buffer (a zero-copy view, with the repetition penalty applied on the fly by a numba kernel)
   and checked with ``matcher.validate_tokens`` (microseconds). Only when the grammar rejects it is the full
   token mask computed (~3 ms over Gemma's 262k tokens, into a preallocated bitmask) and the greedy token
   taken among the allowed ones. That is the same token as masking first: if the unconstrained greedy token
   is allowed, it is also the greedy token among the allowed ones (same values, same lowest-id tie rule).
   On the draft schema ~13 of 50-150 sampled steps need a mask (the structural ones).

Relation to the Outlines path. There the matcher is built with ``ff_tokens`` disabled, so while bytes are
forced its mask is the singleton ``{first ff token}``: the model is made to emit llguidance's canonical
tokenization of the forced bytes one token at a time, which is the token sequence appended here. With
``batch_forced=False`` (forced tokens evaluated one decode each) this loop reproduces the Outlines output byte
for byte (checked on the three bench prompts). With batching (the default, and the point) the text can differ:
llama.cpp's decode of a batch of tokens is not bit-identical to decoding them one by one (other matmul
kernels, other summation order), so logits differ in the last bits and a greedy choice at a near-tie can flip.
Both are deterministic for a given input; the drafts are equally valid.

Repetition penalty, exactly as llama.cpp's ``penalties`` sampler in the chain llama-cpp-python builds for
``Llama.__call__(repeat_penalty=p)`` (``penalty_last_n = Llama.last_n_tokens_size = 64``, frequency and
presence penalties 0): the window holds the last 64 tokens *of this generation* (the sampler is created fresh
for each call and only ``llama_sampler_sample`` feeds it, with the token it returns, so prompt tokens are
never in it; forced tokens are, because the Outlines path samples them too). A token in the window (counted
once however often it occurs) has its logit ``l`` replaced by ``l * p`` if ``l <= 0`` else ``l / p`` (float32),
after the grammar mask. Greedy: highest logit, ties to the lowest token id (llama.cpp's greedy sampler keeps
the first maximum of an array in id order). ``penalize_prompt=True`` also seeds the window with the prompt's
last tokens (not what the Outlines path does; off by default).

Stop: when the matcher stops (nothing but EOS can follow: the draft's closing ``}``), when it is accepting and
EOS is the greedy choice, on a matcher error, or after ``max_tokens`` output tokens (forced runs are cut to the
remaining budget, so the bound holds by construction).
"""

from __future__ import annotations

import json
import threading
import time
import warnings
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

PENALTY_LAST_N = 64  # llama-cpp-python's Llama.last_n_tokens_size default, passed as penalty_last_n


@dataclass(frozen=True)
class DecodeResult:
    """What one constrained decode produced (tokens exclude the final EOS)."""

    tokens: list[int]
    forced_tokens: int
    sampled_tokens: int
    decode_calls: int  # llama.cpp decode batches during generation (prompt excluded)
    masks: int  # full token masks computed
    mask_seconds: float  # time in llguidance: token masks, validations, forced-token computation
    decode_seconds: float  # time waiting for llama.cpp decodes (not hidden behind mask computation)
    seconds: float  # whole generation loop, prompt evaluation excluded
    stop_reason: str  # "grammar" | "eos" | "max_tokens" | "error: ..."


# -- masked greedy pick -------------------------------------------------------------------------------------
def _masked_argmax_numpy(
    logits: np.ndarray, words: np.ndarray, counts: np.ndarray, penalty: np.float32, n_vocab: int
) -> int:
    allowed = np.unpackbits(words.view(np.uint8), bitorder="little")[:n_vocab].view(np.bool_)
    values = np.where(allowed, logits, np.float32(-np.inf))
    return int(np.argmax(_penalise_numpy(values, counts, penalty, n_vocab)))  # first maximum: lowest id


def _penalise_numpy(values: np.ndarray, counts: np.ndarray, penalty: np.float32, n_vocab: int) -> np.ndarray:
    """llama.cpp's repetition penalty, in place, on the tokens with ``counts > 0``."""
    hit = np.flatnonzero(counts[:n_vocab])
    if hit.size and penalty != 1.0:
        v = values[hit]
        values[hit] = np.where(v <= 0, v * penalty, v / penalty)
    return values


def _build_kernel() -> Any:
    try:
        import numba
    except ImportError:  # pragma: no cover - numba is a dependency; the numpy fallback is slower
        return _masked_argmax_numpy, _penalised_argmax_numpy

    @numba.njit(nogil=True, cache=True, inline="always")
    def penalise(v, count, penalty):
        """llama.cpp's repetition penalty of one logit (float32 in, float32 out)."""
        if count > 0:
            return v * penalty if v <= np.float32(0.0) else v / penalty
        return v

    @numba.njit(nogil=True, cache=True)
    def masked_argmax(logits, words, counts, penalty, n_vocab):
        best = -1
        best_v = np.float32(0.0)
        for w in range(words.shape[0]):
            word = words[w]
            if word == 0:
                continue
            base = w * 32
            for b in range(32):
                if (word >> np.uint32(b)) & np.uint32(1):
                    i = base + b
                    if i >= n_vocab:
                        break
                    v = penalise(logits[i], counts[i], penalty)
                    if best < 0 or v > best_v:
                        best = i
                        best_v = v
        return best

    @numba.njit(nogil=True, cache=True)
    def penalised_argmax(logits, counts, penalty, n_vocab):
        best = 0
        best_v = np.float32(-np.inf)
        for i in range(n_vocab):
            v = penalise(logits[i], counts[i], penalty)
            if i == 0 or v > best_v:
                best = i
                best_v = v
        return best

    return masked_argmax, penalised_argmax


def _penalised_argmax_numpy(logits: np.ndarray, counts: np.ndarray, penalty: np.float32, n_vocab: int) -> int:
    return int(np.argmax(_penalise_numpy(logits[:n_vocab].copy(), counts, penalty, n_vocab)))


_KERNEL: Any = None
_KERNEL_LOCK = threading.Lock()


def _kernels() -> Any:
    global _KERNEL
    if _KERNEL is None:
        with _KERNEL_LOCK:
            if _KERNEL is None:
                _KERNEL = _build_kernel()
    return _KERNEL


def masked_argmax(logits: np.ndarray, words: np.ndarray, counts: np.ndarray, penalty: float, n_vocab: int) -> int:
    """Greedy pick among the tokens whose bit is set in ``words`` (uint32, little-endian bit order, as
    llguidance writes it); tokens with ``counts > 0`` get the repetition penalty first. -1 if none allowed."""
    return int(_kernels()[0](logits, words, counts, np.float32(penalty), n_vocab))


def penalised_argmax(logits: np.ndarray, counts: np.ndarray, penalty: float, n_vocab: int) -> int:
    """Greedy pick over the whole vocabulary, same penalty and tie rule as ``masked_argmax``."""
    return int(_kernels()[1](logits, counts, np.float32(penalty), n_vocab))


class _PenaltyWindow:
    """The last ``PENALTY_LAST_N`` tokens with per-token counts (llama.cpp's ring buffer ``prev`` + ``token_count``)."""

    def __init__(self, n_vocab: int) -> None:
        self.ring: deque[int] = deque()
        self.counts = np.zeros(n_vocab, dtype=np.int32)

    def push(self, token: int) -> None:
        if len(self.ring) >= PENALTY_LAST_N:
            self.counts[self.ring.popleft()] -= 1
        self.ring.append(token)
        self.counts[token] += 1

    def clear(self) -> None:
        for token in self.ring:
            self.counts[token] -= 1
        self.ring.clear()


@dataclass
class _Run:
    """One decode's state between its steps: the tokens, what llama.cpp has not evaluated yet, the counters."""

    mask_ptr: int  # the bitmask's address and size in bytes, for llguidance to write the token mask into
    mask_size: int
    tokens: list[int] = field(default_factory=list)
    pending: list[int] = field(default_factory=list)  # consumed by the matcher, not yet evaluated by llama.cpp
    forced_tokens: int = 0
    sampled_tokens: int = 0
    decode_calls: int = 0
    masks: int = 0
    mask_seconds: float = 0.0
    decode_seconds: float = 0.0
    future: Future[None] | None = None  # a decode running on the pool while the mask is computed

    def result(self, stop: str, start: float) -> DecodeResult:
        """The ``DecodeResult`` of a decode that started at ``start`` (``time.perf_counter``) and ended on ``stop``:
        the tokens and counters are this run's fields of the same names."""
        counted = {f.name: getattr(self, f.name) for f in fields(DecodeResult) if hasattr(self, f.name)}
        return DecodeResult(**counted, seconds=time.perf_counter() - start, stop_reason=stop)


# -- the decoder ----------------------------------------------------------------------------------------------
class FastJsonDecoder:
    """Constrained greedy decoding on a loaded ``llama_cpp.Llama``. Build once per model (the llguidance
    tokenizer over Gemma's 262k vocabulary takes seconds); grammars are compiled once per schema.
    One decode at a time (it drives the model's single llama.cpp context); not thread-safe."""

    def __init__(self, llm: Any, tokenizer: Any | None = None) -> None:
        import llama_cpp
        import llguidance
        import llguidance.llamacpp

        self.llm = llm
        self._llama_cpp = llama_cpp
        self._llg = llguidance
        if tokenizer is None:
            # The helper calls a deprecated llama.cpp accessor once per vocabulary entry (262k warnings).
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                tokenizer = llguidance.llamacpp.lltokenizer_from_vocab(llama_cpp.llama_model_get_vocab(llm.model))
        self.tokenizer = tokenizer
        self.n_vocab = int(llm.n_vocab())
        self.eos = int(self.tokenizer.eos_token)
        self._bitmask = np.zeros((self.tokenizer.vocab_size + 31) // 32, dtype=np.uint32)  # a bit per token
        self._matchers: dict[str, Any] = {}
        self._window = _PenaltyWindow(max(self.n_vocab, self.tokenizer.vocab_size))
        # None after close (and where a benchmark switches the overlap off): decodes run in the calling thread
        self._pool: ThreadPoolExecutor | None = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama-decode")
        # compile the kernels now (numba; cached on disk after the first process)
        masked_argmax(np.zeros(64, np.float32), np.zeros(2, np.uint32), np.zeros(64, np.int32), 1.0, 64)
        penalised_argmax(np.zeros(64, np.float32), np.zeros(64, np.int32), 1.0, 64)

    # grammar ----------------------------------------------------------------------------------------------
    def matcher(self, schema: dict[str, Any]) -> Any:
        """A fresh matcher for ``schema`` (a copy of one compiled on first use). llguidance's JSON compiler reads the
        schema's ``x-guidance`` (e.g. ``whitespace_flexible``), exactly as for Outlines' ``grammar_from``."""
        key = json.dumps(schema)  # property order is the generation order: keep it
        template = self._matchers.get(key)
        if template is None:
            grammar = self._llg.LLMatcher.grammar_from_json_schema(key)
            template = self._llg.LLMatcher(self.tokenizer, grammar, log_level=0)
            if template.is_error():
                raise ValueError(f"llguidance rejected the schema: {template.get_error()}")
            self._matchers[key] = template
        return template.deep_copy()

    # model ------------------------------------------------------------------------------------------------
    def _logits(self) -> np.ndarray:
        """The last evaluated position's logits, a view of llama.cpp's buffer (valid until the next decode)."""
        ptr = self._llama_cpp.llama_get_logits_ith(self.llm.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))

    # decoding ---------------------------------------------------------------------------------------------
    def decode(
        self,
        schema: dict[str, Any],
        max_tokens: int,
        *,
        repeat_penalty: float = 1.0,
        prompt_tokens: Sequence[int] = (),
        penalize_prompt: bool = False,
        batch_forced: bool = True,
        lazy_mask: bool = True,
    ) -> DecodeResult:
        """Greedy constrained decode from the context's current state (``LlamaCppBackend.eval_prompt`` first).

        ``batch_forced=False`` evaluates forced tokens one decode each, as the Outlines path does (same
        arithmetic, hence bit-identical logits; for equivalence checks, not speed).

        ``lazy_mask=True``: take the greedy token over the whole vocabulary first and ask the matcher whether
        it is allowed (``validate_tokens``, microseconds); only when it is not is the full mask computed (~3 ms
        on Gemma's vocabulary). The result is the same token: if the unconstrained greedy token is allowed it
        is also the greedy token among the allowed ones (same values, same lowest-id tie rule), and
        ``validate_tokens`` agrees with the mask (checked on every token of the vocabulary in sampled states of
        real drafts). ``lazy_mask=False`` computes every mask, overlapped with the decode (the pool's thread)."""
        if max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")
        matcher = self.matcher(schema)
        window = self._start_window(prompt_tokens, penalize_prompt)
        run = _Run(mask_ptr=self._bitmask.ctypes.data, mask_size=self._bitmask.nbytes)
        stop = "max_tokens"
        start = time.perf_counter()
        try:
            while len(run.tokens) < max_tokens:
                t0 = time.perf_counter()
                ff = matcher.compute_ff_tokens()
                run.mask_seconds += time.perf_counter() - t0
                if ff:
                    if not self._take_forced(matcher, ff[: max_tokens - len(run.tokens)], run, batch_forced):
                        stop = f"error: {matcher.get_error()}"
                        break
                    continue
                if matcher.is_stopped():
                    stop = "grammar" if not matcher.is_error() else f"error: {matcher.get_error()}"
                    break
                # One decode of everything pending (the last sampled token + any forced run after it).
                if lazy_mask:
                    token = self._pick_checked(matcher, run, repeat_penalty)
                else:
                    token = self._pick_masked(matcher, run, repeat_penalty)
                if token is None:  # the matcher failed while computing the mask
                    stop = f"error: {matcher.get_error()}"
                    break
                if token < 0:
                    stop = "error: empty mask"
                    break
                if token == self.eos:
                    stop = "eos"
                    break
                if not matcher.consume_token(token):
                    stop = f"error: {matcher.get_error()}"
                    break
                window.push(token)
                run.tokens.append(token)
                run.pending.append(token)
                run.sampled_tokens += 1
            else:
                if matcher.is_stopped() and not matcher.is_error():
                    stop = "grammar"
        finally:
            if run.future is not None:  # an exception left a decode running: never leave it behind
                run.future.exception()
            window.clear()
        # Whatever is still pending stays un-evaluated: the KV cache ends at the last evaluated token, and
        # llm.n_tokens says so (llm.eval keeps it in step), so the context is consistent for the next call.
        return run.result(stop, start)

    def _start_window(self, prompt_tokens: Sequence[int], penalize_prompt: bool) -> _PenaltyWindow:
        """The repetition-penalty window, emptied, and seeded with the prompt's last tokens if ``penalize_prompt``."""
        window = self._window
        window.clear()
        if penalize_prompt:
            for token in list(prompt_tokens)[-PENALTY_LAST_N:]:
                window.push(int(token))
        return window

    def _take_forced(self, matcher: Any, ff: list[int], run: _Run, batch_forced: bool) -> bool:
        """Consume a forced run (one decode per token without ``batch_forced``); False when the matcher rejects it."""
        if not matcher.consume_tokens(ff):
            return False
        for token in ff:
            self._window.push(token)
        run.tokens += ff
        run.pending += ff
        run.forced_tokens += len(ff)
        if not batch_forced:  # one decode per token, as the Outlines path
            t0 = time.perf_counter()
            for token in run.pending:
                self.llm.eval([token])
            run.decode_calls += len(run.pending)
            run.decode_seconds += time.perf_counter() - t0
            run.pending = []
        return True

    def _pick_checked(self, matcher: Any, run: _Run, repeat_penalty: float) -> int | None:
        """The greedy token, the full mask computed only when the grammar rejects it; None on a matcher error."""
        if run.pending:
            run.decode_calls += 1
            t0 = time.perf_counter()
            self.llm.eval(run.pending)
            run.decode_seconds += time.perf_counter() - t0
            run.pending = []
        logits = self._logits()
        token = penalised_argmax(logits, self._window.counts, repeat_penalty, self.n_vocab)
        t0 = time.perf_counter()
        allowed = matcher.validate_tokens([token]) == 1
        if not allowed:
            matcher.unsafe_compute_mask_ptr(run.mask_ptr, run.mask_size)
            run.masks += 1
        run.mask_seconds += time.perf_counter() - t0
        if not allowed:
            if matcher.is_error():
                return None
            token = masked_argmax(logits, self._bitmask, self._window.counts, repeat_penalty, self.n_vocab)
        return token

    def _pick_masked(self, matcher: Any, run: _Run, repeat_penalty: float) -> int | None:
        """The greedy token among those the full mask allows (computed during the decode); None on a matcher error."""
        # The mask is computed while llama.cpp decodes: both release the GIL.
        if run.pending:
            run.decode_calls += 1
            if self._pool is not None:
                run.future = self._pool.submit(self.llm.eval, run.pending)
            else:
                t0 = time.perf_counter()
                self.llm.eval(run.pending)
                run.decode_seconds += time.perf_counter() - t0
            run.pending = []
        t0 = time.perf_counter()
        matcher.unsafe_compute_mask_ptr(run.mask_ptr, run.mask_size)
        run.masks += 1
        t1 = time.perf_counter()
        run.mask_seconds += t1 - t0
        if run.future is not None:
            done, run.future = run.future, None
            done.result()
            run.decode_seconds += time.perf_counter() - t1
        if matcher.is_error():
            return None
        return masked_argmax(self._logits(), self._bitmask, self._window.counts, repeat_penalty, self.n_vocab)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
