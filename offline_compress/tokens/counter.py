"""Exact token counts of a history as the target model sees it, incremental across agent steps.

``count(messages) == bos_tokens + sum(len(encode(segment)))`` over the template's per-message segments, which
equals ``len(llama.cpp tokenize(full rendering, add_bos=True, special=True))`` because segments meet at special
tokens (see chat_template.py). Each segment's count is cached (LRU-bounded; see ``TokenCounter``), so after an agent
appends a message only the new segment is rendered and encoded; unchanged messages cost a dictionary lookup.

The tokenizer loads on first use, or in a background thread (``preload``: a hook starts it when it is made, so
that its first step does not wait). Until then a derived tokenizer's counts have a bound that needs no tokenizer
(``message_bounds``: never fewer than the exact count), which may decide where it is far from a threshold.

Memory stays proportional to the text, not to its tokens: a segment longer than ``pieces.PIECE_CHARS`` is
encoded in pieces cut where no token can span (``pieces.py``), and texts go to the tokenizer in batches of at
most ``BATCH_CHARS`` characters (each ``Encoding`` costs ~250 bytes a token while its batch lives).
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from ..history.messages import Message, valid_utf8
from .chat_template import (
    ChatTemplate,
    Gemma3Template,
    HFChatTemplate,
    MessageLike,
    PlainMessage,
    Turn,
    render_turn,
    resolve_template,
    turn_key,
)
from .gguf import TokenizerSource, load_tokenizer, resolve_tokenizer
from .pieces import PIECE_CHARS, CutRules, cut_rules, pieces

DEFAULT_CACHE_SIZE = 65536  # entries
DEFAULT_CACHE_CHARS = 64 << 20  # characters of message text that turn keys may keep alive
BATCH_CHARS = 1 << 20  # characters per encode_batch call: ~300k tokens, ~75 MB of Encodings at once
SMALL_BATCH = 16  # fewer texts are encoded one by one (2 texts: 32 us, against 49 us through encode_batch)


_EMPTY = object()  # key of an empty segment (a folded system message): 0 tokens, never cached or encoded


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class TokenCounter:
    """Counts tokens of histories for one target (tokenizer + chat template), caching per-segment counts.

    ``tokenizer``: a ``tokenizers.Tokenizer`` or a spec for ``load_target_tokenizer`` (None: the default model),
    found at once (a missing one is a ``TokenizerError`` here) and loaded on first use or by ``preload``.
    ``template``: a ``ChatTemplate``, ``"gemma3"`` or a Hugging Face model folder; None picks the folder's own
    template when ``tokenizer`` names a folder, else Gemma 3.

    The cache maps a segment to its token count. Keys: for Gemma turns the turn's own strings (``turn_key``:
    Python caches a string's hash and compares by identity first, so an unchanged message costs O(1), no
    rendering, no hashing of its text); otherwise a 16-byte blake2b digest of the rendered segment. It is an LRU
    bounded by ``cache_size`` entries and by ``cache_chars`` characters of message text held by keys.
    """

    def __init__(
        self,
        tokenizer: Tokenizer | str | Path | None = None,
        template: ChatTemplate | str | Path | None = None,
        *,
        cache_size: int = DEFAULT_CACHE_SIZE,
        cache_chars: int = DEFAULT_CACHE_CHARS,
    ) -> None:
        if template is None and isinstance(tokenizer, (str, Path)) and Path(tokenizer).is_dir():
            template = HFChatTemplate(tokenizer)
        self.source: TokenizerSource | None = None
        self._tokenizer: Any = None
        if tokenizer is None or isinstance(tokenizer, (str, Path)):
            self.source = resolve_tokenizer(tokenizer)
        else:  # anything with tokenizers' encode/encode_batch will do (tests pass a counting wrapper)
            self._tokenizer = tokenizer
        self._loading = threading.Lock()
        self._preloading = False
        self.template: ChatTemplate = resolve_template(template)
        gemma = isinstance(self.template, Gemma3Template)
        self.bounded = gemma and self.source is not None and self.source.bounded  # see message_bounds
        self.cache_size = max(0, cache_size)
        self.cache_chars = max(0, cache_chars)
        self._cache: OrderedDict[Hashable, tuple[int, int]] = OrderedDict()  # key -> (count, chars held)
        self._chars = 0
        self._lock = threading.Lock()
        self.encoded = 0  # texts actually sent to the tokenizer
        self._running = self.running()  # ``count``'s own
        self.piece_chars = PIECE_CHARS
        self._cut_rules: CutRules | None | bool = False  # False: not read off the tokenizer yet

    # -- the tokenizer ---------------------------------------------------------------------------------------

    @property
    def tokenizer(self) -> Any:
        """The tokenizer, loaded on first use (waiting for ``preload``'s load, whose error is raised here)."""
        tokenizer = self._tokenizer
        if tokenizer is None:
            with self._loading:
                if self._tokenizer is None:
                    assert self.source is not None  # one of the two is set in __init__
                    self._tokenizer = load_tokenizer(self.source)
                tokenizer = self._tokenizer
        return tokenizer

    @property
    def loaded(self) -> bool:
        return self._tokenizer is not None

    def preload(self) -> None:
        """Load the tokenizer in a background thread (once; ``tokenizers`` parses without holding the GIL)."""
        if self._tokenizer is None and not self._preloading:
            self._preloading = True
            threading.Thread(target=self._load_quietly, name="offline-compress-tokenizer", daemon=True).start()

    def _load_quietly(self) -> None:
        with contextlib.suppress(Exception):  # loaded again, and raised, in the thread that needs the tokenizer
            self.tokenizer  # noqa: B018

    # -- cache -------------------------------------------------------------------------------------------

    def _store(self, key: Hashable, count: int, chars: int) -> None:
        if key in self._cache or not self.cache_size or chars > self.cache_chars:
            return
        self._cache[key] = (count, chars)
        self._chars += chars
        while len(self._cache) > self.cache_size or self._chars > self.cache_chars:
            _, (_, dropped) = self._cache.popitem(last=False)
            self._chars -= dropped

    def _rules(self) -> CutRules | None:
        if self._cut_rules is False:
            self._cut_rules = cut_rules(self.tokenizer)  # reads the vocabulary once (~0.3 s for Gemma's)
        return self._cut_rules  # type: ignore[return-value]  # no longer False

    def _encode_counts(self, texts: list[str]) -> list[int]:
        """Token counts of ``texts``: long ones in pieces, all in batches of at most ``BATCH_CHARS``."""
        self.encoded += len(texts)
        if len(texts) == 1 and len(texts[0]) <= self.piece_chars:
            return [len(self.tokenizer.encode(valid_utf8(texts[0]), add_special_tokens=False))]
        counts = [0] * len(texts)
        batch: list[str] = []
        owners: list[int] = []
        size = 0
        for i, text in enumerate(texts):
            split = pieces(text, self._rules() if len(text) > self.piece_chars else None, self.piece_chars)
            for piece in split:
                batch.append(valid_utf8(piece))  # lone surrogates cannot go to the Rust tokenizer
                owners.append(i)
                size += len(piece)
                if size >= BATCH_CHARS:
                    self._add_batch(batch, owners, counts)
                    batch, owners, size = [], [], 0
        if batch:
            self._add_batch(batch, owners, counts)
        return counts

    def _add_batch(self, batch: list[str], owners: list[int], counts: list[int]) -> None:
        if len(batch) < SMALL_BATCH:  # an agent step's few messages: the batch's threads cost more than they save
            for owner, text in zip(owners, batch):
                counts[owner] += len(self.tokenizer.encode(text, add_special_tokens=False))
            return
        for owner, encoding in zip(owners, self.tokenizer.encode_batch(batch, add_special_tokens=False)):
            counts[owner] += len(encoding)

    def _count_keyed(
        self, keys: Sequence[Hashable], render: Callable[[int], str], chars: Callable[[int], int]
    ) -> list[int]:
        """Counts for items ``i`` with cache key ``keys[i]``; misses are rendered and encoded in one batch."""
        counts: list[int] = [0] * len(keys)
        todo: dict[Hashable, list[int]] = {}
        cache = self._cache
        with self._lock:
            for i, key in enumerate(keys):
                if key is _EMPTY:
                    continue
                entry = cache.get(key)
                if entry is None:
                    todo.setdefault(key, []).append(i)
                else:
                    cache.move_to_end(key)
                    counts[i] = entry[0]
        if not todo:
            return counts
        texts = [render(idx[0]) for idx in todo.values()]
        new = self._encode_counts(texts)
        with self._lock:
            for (key, idx), n in zip(todo.items(), new):
                for i in idx:
                    counts[i] = n
                self._store(key, n, chars(idx[0]))
        return counts

    # -- text --------------------------------------------------------------------------------------------

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        """Token counts of plain texts (no BOS), through the cache (keyed by blake2b digests)."""
        return self._count_keyed([_digest(t) if t else _EMPTY for t in texts], texts.__getitem__, lambda i: 0)

    def count_text(self, text: str) -> int:
        return self.count_texts([text])[0]

    # -- messages ----------------------------------------------------------------------------------------

    def message_counts(self, messages: Sequence[MessageLike]) -> list[int]:
        """Tokens each message adds to the rendering (a system message folded into the next user turn: 0, its
        text counts in that turn). ``template.bos_tokens + sum(...) == count(messages)``."""
        turns_of = getattr(self.template, "turns", None)
        if turns_of is None:
            return self.count_texts(self.template.segments(messages))
        turns = turns_of(messages)
        keys: list[Hashable] = []
        append = keys.append
        for turn in turns:
            if not turn[0]:
                append(_EMPTY)
            elif type(turn[1]) is PlainMessage and not turn[2]:
                append(turn)  # the common case, inlined from turn_key (this loop runs for every message)
            else:
                key = turn_key(turn)
                append(key if key is not None else _digest(render_turn(turn)))
        return self._count_keyed(keys, lambda i: render_turn(turns[i]), lambda i: _turn_chars(turns[i]))

    def message_bounds(self, messages: Sequence[MessageLike]) -> list[int]:
        """For each message, at least its ``message_counts`` entry, without the tokenizer (``bounded`` counters
        only): the UTF-8 bytes of the turn it renders. Each token of a derived tokenizer stands for at least one
        character, or one byte of one (byte fallback); the turn markers are one token for many bytes."""
        turns = self.template.turns(messages)  # type: ignore[attr-defined]  # bounded: Gemma3Template
        return [_utf8_bytes(render_turn(turn)) if turn[0] else 0 for turn in turns]

    def running(self, *, bound: bool = False) -> RunningTotal:
        """A running total of this counter's counts (``bound``: of ``message_bounds``) for one conversation: a hook
        keeps its own, so that another conversation on the shared counter does not make it count again."""
        bos = self.template.bos_tokens
        values = self.message_bounds if bound else self.message_counts
        return RunningTotal(values, bos, incremental=isinstance(self.template, Gemma3Template))

    def count(self, messages: Sequence[MessageLike]) -> int:
        """Tokens of the whole history as the target sees it, BOS included, no generation prompt.

        A history that extends the previous call's with the very same (immutable) ``Message`` objects costs
        only its new messages (``RunningTotal``)."""
        return self._running.total(messages)

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()
            self._running = self.running()
            self._chars = 0
            self.encoded = 0

    @property
    def cache_len(self) -> int:
        return len(self._cache)


def _role(message: Any) -> str | None:
    return message.get("role") if isinstance(message, Mapping) else getattr(message, "role", None)


def _utf8_bytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _first_difference(a: Sequence[Any], b: Sequence[Any]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x is not y and x != y), min(len(a), len(b)))


class RunningTotal:
    """``base + sum(values(messages))`` kept between calls for a growing history: a history that starts with the
    ``Message`` objects of the last one (the same or equal ones, compared in C) costs ``values`` of the rest only;
    the rest starts before a trailing system message, which folds into the turn after it. Only ``Message``
    objects are remembered (they are immutable). ``incremental=False`` (a template whose segments depend on the
    whole history): every message every time. ``counted``: the messages the last call passed to ``values``."""

    def __init__(
        self, values: Callable[[Sequence[Any]], list[int]], base: int = 0, *, incremental: bool = True
    ) -> None:
        self.values, self.base, self.incremental = values, base, incremental
        self._seen: list[Any] = []  # the leading Messages of the last history
        self._sums = [0]  # running sums of their values
        self._lock = threading.Lock()
        self.counted = 0

    def total(self, messages: Sequence[Any]) -> int:
        msgs = messages if isinstance(messages, list) else list(messages)
        if not self.incremental:
            self.counted = len(msgs)
            return self.base + sum(self.values(msgs))
        with self._lock:  # one call at a time: the lists are updated in place (no O(n) copies)
            seen, sums = self._seen, self._sums
            k = len(seen)
            n = k if len(msgs) >= k and msgs[:k] == seen else _first_difference(seen, msgs)
            while n and _role(msgs[n - 1]) in ("system", "developer"):
                n -= 1
            del seen[n:], sums[n + 1 :]
            for value in self.values(msgs[n:]) if n < len(msgs) else ():
                sums.append(sums[-1] + value)
            total, self.counted = sums[-1], len(msgs) - n
            known = n  # msgs[:n] equal Messages: Messages themselves
            while known < len(msgs) and type(msgs[known]) is Message:
                known += 1
            seen += msgs[n:known]
            del sums[known + 1 :]
            return self.base + total


def _turn_chars(turn: Turn) -> int:
    """Characters of message text a turn key keeps alive (0 for digest keys, which hold none)."""
    if turn_key(turn) is None:
        return 0
    messages = (turn.message, *turn.prefix)
    return sum(len(m.content or "") + sum(len(c.function.arguments) for c in m.tool_calls or ()) for m in messages)


_counters: dict[str, TokenCounter] = {}
_counters_lock = threading.Lock()


def get_counter(tokenizer_spec: str | Path | None = None) -> TokenCounter:
    """One shared ``TokenCounter`` per tokenizer spec (so the tokenizer loads and the cache fills once)."""
    key = str(Path(tokenizer_spec).resolve()) if isinstance(tokenizer_spec, Path) else str(tokenizer_spec)
    with _counters_lock:
        if key not in _counters:
            _counters[key] = TokenCounter(tokenizer_spec)
        return _counters[key]


def default_counter() -> TokenCounter:
    """The shared counter of the default target (the embedded Gemma's tokenizer and chat template)."""
    return get_counter(None)


def count_tokens(messages: Sequence[MessageLike | Mapping[str, Any]], tokenizer_spec: str | Path | None = None) -> int:
    """Tokens of ``messages`` for the target named by ``tokenizer_spec`` (None: the default model, Gemma 3)."""
    return get_counter(tokenizer_spec).count(messages)


__all__ = ["RunningTotal", "TokenCounter", "count_tokens", "default_counter", "get_counter"]
