"""Cutting a long text where no token can span, so that it is counted piece by piece in bounded memory.

``tokenizers`` keeps an ``Encoding`` per text (ids, offsets, token strings, masks: ~250 bytes a token), so a
50 MB tool output counted whole held 7.1 GB (issue 22). The count of a text is the sum of the counts of its
pieces when every cut falls where the tokenizer itself splits the text whatever surrounds the cut. For the
SentencePiece-style BPE derived from a GGUF (``gguf.py``: added tokens matched on the raw text first, then
``' ' -> '▁'`` and merges, no pre-tokenizer) two kinds of place qualify, both read off the tokenizer itself:

* the edge of a run of newlines, when every added token holding a newline is a run of newlines and ``"\\n"``
  is one: the run is cut out as added tokens on either side of the cut, as in the whole text;
* just before a single space whose left neighbour ``X`` never precedes ``▁`` inside a vocabulary token (for
  Gemma 3 only ``>`` does, in ``>▁</``), when every added token holding a space is a run of spaces: no merge
  can join ``X`` and ``▁``, so the pieces on either side are merged as they would be in the whole text.

Any other tokenizer (a pre-tokenizer, another normalizer, a wrapper without the ``tokenizers`` API) is
counted whole, as before. ``tests/test_huge_input.py`` checks piecewise counts against whole counts and
against llama.cpp.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

PIECE_CHARS = 1 << 16  # the shortest piece a long text is cut into (cuts are searched from there on)


@dataclass(frozen=True)
class CutRules:
    """Where a tokenizer's count of a text can be split: ``cut`` matches (zero-width) at every such place."""

    cut: re.Pattern[str]


def _plain_normalizer(tokenizer: Any) -> bool:
    """No normalizer, or only ``Replace(' ', '▁')`` (maybe in a Sequence): a character-local rewrite."""
    normalizer = tokenizer.normalizer
    if normalizer is None:
        return True
    text = repr(normalizer)
    return text in (
        'Sequence(normalizers=[Replace(pattern=String(" "), content="▁")])',
        'Replace(pattern=String(" "), content="▁")',
    )


def cut_rules(tokenizer: Any) -> CutRules | None:
    """The places ``tokenizer`` splits any text at, or None when none are known (the text is counted whole)."""
    try:
        from tokenizers.models import BPE

        model = tokenizer.model
        if (
            not isinstance(model, BPE)
            or tokenizer.pre_tokenizer is not None
            or model.end_of_word_suffix
            or model.continuing_subword_prefix
            or model.dropout
            or not _plain_normalizer(tokenizer)
        ):
            return None
        added = [t for t in tokenizer.get_added_tokens_decoder().values()]
    except AttributeError:  # not a tokenizers.Tokenizer (a wrapper that only encodes)
        return None
    if any(t.normalized or t.single_word or t.lstrip or t.rstrip for t in added):
        return None  # matched on normalized text or with context: the rules below do not hold
    contents = [t.content for t in added]
    alternatives = []
    if "\n" in contents and all(set(c) == {"\n"} for c in contents if "\n" in c):
        alternatives += [r"(?<=\n)(?!\n)", r"(?<!\n)(?=\n)"]
    if all(set(c) == {" "} for c in contents if " " in c):
        # each character a vocabulary token holds just before a '▁' (a merge joined it and a space)
        vocab = tokenizer.get_vocab(with_added_tokens=False)
        before_space = {c for tok in vocab if "▁" in tok[1:] for c in re.findall(r".(?=▁)", tok, re.S)}
        unsafe = "".join(sorted(before_space | {" ", "\n"}))
        alternatives.append(rf"(?<![{re.escape(unsafe)}])(?= )")
    if not alternatives:
        return None
    return CutRules(re.compile("|".join(alternatives)))


def pieces(text: str, rules: CutRules | None, piece_chars: int = PIECE_CHARS) -> Iterator[str]:
    """``text`` in pieces of at least ``piece_chars`` characters (the last may be shorter), cut at the first
    place ``rules`` allow from there on; whole when there are no rules or no such place."""
    if rules is None or len(text) <= piece_chars:
        yield text
        return
    start = 0
    while len(text) - start > piece_chars:
        m = rules.cut.search(text, start + piece_chars)
        if m is None or m.start() >= len(text):
            break
        yield text[start : m.start()]
        start = m.start()
    yield text[start:]
