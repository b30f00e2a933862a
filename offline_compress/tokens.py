"""Exact token counts of a history as the target model sees it, incremental across agent steps.

``count(messages) == bos_tokens + sum(len(encode(segment)))`` over the template's per-message segments, which
equals ``len(llama.cpp tokenize(full rendering, add_bos=True, special=True))`` because segments meet at special
tokens (see chat_template.py). Each segment's count is cached under a blake2b digest of its text (LRU-bounded),
so after an agent appends a message only the new segment is encoded; the rest costs a render and a hash.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from .chat_template import ChatTemplate, Gemma3Template, HFChatTemplate, MessageLike, resolve_template
from .gguf_tokenizer import load_target_tokenizer

DEFAULT_CACHE_SIZE = 65536  # segments; ~100 bytes each, so a few MB at most


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _valid_text(text: str) -> str:
    """Lone surrogates (possible in JSON) cannot go to the Rust tokenizer; send U+FFFD like a UTF-8 client would."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


class TokenCounter:
    """Counts tokens of histories for one target (tokenizer + chat template), caching per-segment counts.

    ``tokenizer``: a ``tokenizers.Tokenizer`` or a spec for ``load_target_tokenizer`` (None: the default model).
    ``template``: a ``ChatTemplate``, ``"gemma3"`` or a Hugging Face model folder; None picks the folder's own
    template when ``tokenizer`` names a folder, else Gemma 3.
    """

    def __init__(
        self,
        tokenizer: Tokenizer | str | Path | None = None,
        template: ChatTemplate | str | Path | None = None,
        *,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        if template is None and isinstance(tokenizer, (str, Path)) and Path(tokenizer).is_dir():
            template = HFChatTemplate(tokenizer)
        self.tokenizer = tokenizer if isinstance(tokenizer, Tokenizer) else load_target_tokenizer(tokenizer)
        self.template: ChatTemplate = resolve_template(template)
        self.cache_size = max(0, cache_size)
        self._cache: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    # -- text --------------------------------------------------------------------------------------------

    def _encode_counts(self, texts: list[str]) -> list[int]:
        clean = [_valid_text(t) for t in texts]
        if len(clean) == 1:
            return [len(self.tokenizer.encode(clean[0], add_special_tokens=False))]
        return [len(e) for e in self.tokenizer.encode_batch(clean, add_special_tokens=False)]

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        """Token counts of plain texts (no BOS), through the cache; misses are encoded in one batch."""
        keys = [_digest(t) if t else b"" for t in texts]
        counts: list[int | None] = [None] * len(texts)
        todo: dict[bytes, list[int]] = {}
        with self._lock:
            for i, key in enumerate(keys):
                if not key:
                    counts[i] = 0
                elif key in self._cache:
                    self._cache.move_to_end(key)
                    counts[i] = self._cache[key]
                    self.hits += 1
                else:
                    todo.setdefault(key, []).append(i)
        if todo:
            new = self._encode_counts([texts[idx[0]] for idx in todo.values()])
            with self._lock:
                for (key, idx), n in zip(todo.items(), new):
                    for i in idx:
                        counts[i] = n
                    self.misses += 1
                    if self.cache_size:
                        self._cache[key] = n
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        return counts  # type: ignore[return-value]

    def count_text(self, text: str) -> int:
        return self.count_texts([text])[0]

    # -- messages ----------------------------------------------------------------------------------------

    def message_counts(self, messages: Sequence[MessageLike]) -> list[int]:
        """Tokens each message adds to the rendering (a system message folded into the next user turn: 0, its
        text counts in that turn). ``bos_tokens + sum(...) == count(messages)``."""
        return self.count_texts(self.template.segments(messages))

    def count(self, messages: Sequence[MessageLike]) -> int:
        """Tokens of the whole history as the target sees it, BOS included, no generation prompt."""
        return self.template.bos_tokens + sum(self.message_counts(messages))

    def count_message(self, message: MessageLike) -> int:
        """Tokens of one message rendered as a history of its own (no BOS)."""
        return sum(self.message_counts([message]))

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()
            self.hits = self.misses = 0

    @property
    def cache_len(self) -> int:
        return len(self._cache)


_counters: dict[str, TokenCounter] = {}
_counters_lock = threading.Lock()


def get_counter(tokenizer_spec: str | Path | None = None) -> TokenCounter:
    """One shared ``TokenCounter`` per tokenizer spec (so the tokenizer loads and the cache fills once)."""
    key = str(Path(tokenizer_spec).resolve()) if isinstance(tokenizer_spec, Path) else str(tokenizer_spec)
    with _counters_lock:
        if key not in _counters:
            _counters[key] = TokenCounter(tokenizer_spec)
        return _counters[key]


def count_tokens(messages: Sequence[MessageLike | Mapping[str, Any]], tokenizer_spec: str | Path | None = None) -> int:
    """Tokens of ``messages`` for the target named by ``tokenizer_spec`` (None: the default model, Gemma 3)."""
    return get_counter(tokenizer_spec).count(messages)


__all__ = ["TokenCounter", "count_tokens", "get_counter", "Gemma3Template"]
