"""Huge messages in bounded memory (issue 22: a 50 MB message took 7.1 GB in ``count``): a long text is counted
in pieces cut where no token can span, exactly; no tokenizer call sees more than a bounded number of
characters, whatever the message; a huge tool output goes through the hook. Memory and time themselves are
measured by ``python -m evaluation reliability`` (docs/performance.md)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from offline_compress import CompactionHook
from offline_compress.compressor import Compressor
from offline_compress.history.messages import valid_utf8
from offline_compress.tokens.counter import BATCH_CHARS, TokenCounter
from offline_compress.tokens.pieces import PIECE_CHARS, cut_rules, pieces

FIXTURES = Path(__file__).parent / "fixtures"
# Places a cut must not break: runs of spaces and newlines longer than Gemma's whitespace tokens (31), the one
# merge across a space in its vocabulary (">▁</"), tabs, CRLF, a literal '▁', surrogate pairs, specials.
ATOMS = ["a", "b", "é", " ", "  ", " " * 33, "\n", "\n\n", "\n" * 40, "\t", "\r\n", ">", "</", "> </", "▁", "😀"]
ATOMS += ["word", "<start_of_turn>", "<br>", "x=1;", "\ud83d\ude00"]


def _texts() -> list[str]:
    rng = random.Random(22)
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in sorted(FIXTURES.rglob("*.json"))[:12]]
    texts += ["".join(rng.choice(ATOMS) for _ in range(rng.randint(200, 4000))) for _ in range(40)]
    return texts


class RecordingTokenizer:
    """The real tokenizer (every attribute passes through), recording the characters of each call."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.calls: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def encode(self, text: str, **kw: Any) -> Any:
        self.calls.append(len(text))
        return self._inner.encode(text, **kw)

    def encode_batch(self, texts: list[str], **kw: Any) -> Any:
        self.calls.append(sum(map(len, texts)))
        return self._inner.encode_batch(texts, **kw)


def test_the_target_tokenizer_has_cut_rules(target_tokenizer) -> None:
    rules = cut_rules(target_tokenizer)
    assert rules is not None
    text = "a\nb> c <d  e"
    assert [m.start() for m in rules.cut.finditer(text)] == [1, 2, 6, 9]  # not after ">", nor inside "  "


@pytest.mark.parametrize("piece_chars", [8, 64, 1000])
def test_counting_in_pieces_is_exact(target_tokenizer, piece_chars: int) -> None:
    rules = cut_rules(target_tokenizer)
    for text in _texts():
        parts = list(pieces(text, rules, piece_chars))
        assert "".join(parts) == text
        assert all(len(p) >= piece_chars for p in parts[:-1])
        whole = len(target_tokenizer.encode(valid_utf8(text), add_special_tokens=False))
        assert sum(len(target_tokenizer.encode(valid_utf8(p), add_special_tokens=False)) for p in parts) == whole


def test_a_long_text_counts_as_llama_cpp_counts_it(target_tokenizer, llama_vocab) -> None:
    """Half a megabyte of real trajectories, counted in pieces by the counter, against llama.cpp on the whole."""
    text = valid_utf8("\n".join(_texts()[:12]))
    text = (text * (500_000 // len(text) + 1))[:500_000]
    counter = TokenCounter(target_tokenizer)
    assert counter.count_text(text) == len(llama_vocab.tokenize(text.encode("utf-8"), add_bos=False, special=True))


def test_no_tokenizer_call_holds_more_than_a_batch(target_tokenizer) -> None:
    """A 6 MB tool output among small messages: counted exactly, with every call to the tokenizer bounded."""
    recording = RecordingTokenizer(target_tokenizer)
    line = "PASSED tests/test_models.py::test_case_%d - ok  (0.01s)\n"
    big = "".join(line % i for i in range(110_000))
    messages = [{"role": "user", "content": "run the tests"}, {"role": "tool", "content": big}]
    messages += [{"role": "assistant", "content": f"step {i}"} for i in range(3000)]
    counted = TokenCounter(recording).count(messages)
    assert counted == TokenCounter(target_tokenizer, cache_size=0).count(messages)
    assert len(big) > 5_000_000 and max(recording.calls) <= BATCH_CHARS + 2 * PIECE_CHARS


def test_a_tokenizer_of_another_kind_is_counted_whole(target_tokenizer) -> None:
    from tokenizers import Tokenizer, pre_tokenizers
    from tokenizers.models import WordLevel

    other = Tokenizer(WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
    other.pre_tokenizer = pre_tokenizers.Whitespace()
    assert cut_rules(other) is None
    assert cut_rules(object()) is None  # a wrapper that only encodes
    assert list(pieces("a\n" * 100, None, 8)) == ["a\n" * 100]


def test_a_huge_tool_output_is_compacted_through_the_hook(target_tokenizer, tmp_path) -> None:
    recording = RecordingTokenizer(target_tokenizer)
    output = "".join(f"{i:07d} collected module ok, 3 warnings\n" for i in range(60_000))  # ~2.5 MB
    history = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Make the test suite pass."},
        {
            "role": "assistant",
            "content": "Running the suite.",
            "tool_calls": [{"id": "c0", "type": "function", "function": {"name": "bash", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c0", "content": output},
    ]
    history += [{"role": "assistant" if i % 2 else "user", "content": f"step {i}"} for i in range(12)]
    with CompactionHook(
        32_768, archive_path=tmp_path / "a.sqlite3", compressor=Compressor(None), counter=TokenCounter(recording)
    ) as hook:
        new = hook.before_step(history)
        assert hook.metrics[-1].outcome == "compacted" and len(new) < len(history)
    assert max(recording.calls) <= BATCH_CHARS + 2 * PIECE_CHARS
