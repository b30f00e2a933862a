"""Grounding: every sentence the model wrote is checked against the source; what the history does not
support is dropped, and the run reports how much was kept.

A claim is supported when all of its content words (identifiers, paths, numbers, words of 4+ letters
that are not function words) occur in the source. This is lexical on purpose: cheap, deterministic, and strict
about the things a summary must not invent (file names, commands, error names)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel

_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./:%+-]*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_STOP = frozenset(
    """a an the and or but if then else when while of to in on at by for with from into onto over under
    about after before again also been being both each few more most other some such than that this these those
    very just only own same so too can will would should could have has had having does did doing done was were
    are is be it its they them their there here what which who whom whose why how all any not no nor
    agent user model task step steps file files code tests test change changes changed make made using used
    found find run ran now next first last then still need needs needed want wants wanted tried try trying
    work works worked working call called calls fix fixed fixes issue problem""".split()
)


def _normalise(word: str) -> str:
    return word.strip("./:%+-").lower()


def content_words(text: str) -> set[str]:
    words = set()
    for raw in _TOKEN.findall(text):
        word = _normalise(raw)
        if len(word) >= 4 and word not in _STOP:
            words.add(word)
        elif any(ch.isdigit() for ch in word) and word:
            words.add(word)
    return words


# An item that tells the agent what to do (or not to): such words may come from the user, never from tool output.
_INSTRUCTION = re.compile(
    r"\b(?:must|never|always|do not|don't|should|shall|required?|important|ignore|instead|only|forbidden|"
    r"not allowed|make sure|you (?:need|have) to)\b",
    re.I,
)


def instruction_like(text: str) -> bool:
    return _INSTRUCTION.search(text) is not None


def _vocabulary(texts: Iterable[str]) -> set[str]:
    words: set[str] = set()
    for text in texts:
        words |= content_words(text)
        # Parts of paths and dotted names count too: "src/a.py" supports "a.py".
        for raw in _TOKEN.findall(text):
            for part in re.split(r"[./:]", raw):
                if len(part) >= 4:
                    words.add(part.lower())
    return words


class SourceIndex:
    """Vocabulary of the source text, built once per compression. ``untrusted`` texts (tool output) support
    a claim of fact, but a claim that reads as an instruction must be supported by the trusted texts alone."""

    def __init__(self, texts: Iterable[str], untrusted: Iterable[str] = ()) -> None:
        self.trusted_words = _vocabulary(texts)
        self.words = self.trusted_words | _vocabulary(untrusted)

    def support(self, claim: str, *, trusted_only: bool = False) -> float:
        words = content_words(claim)
        if not words:
            return 0.0
        vocabulary = self.trusted_words if trusted_only else self.words
        return sum(1 for w in words if w in vocabulary) / len(words)

    def grounded(self, claim: str, threshold: float = 1.0, min_words: int = 2) -> bool:
        """Supported, concrete (``min_words`` content words or more) and not a loop of the small model; an
        instruction only by the trusted (non-tool-output) texts."""
        if len(content_words(claim)) < min_words or repetitive(claim):
            return False
        return self.support(claim, trusted_only=instruction_like(claim)) >= threshold


def repetitive(text: str, n: int = 4) -> bool:
    """A repeated run of ``n`` words: the signature of a small model looping."""
    words = text.lower().split()
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    return len(grams) != len(set(grams))


class GroundingReport(BaseModel):
    """How many model-written items were checked and kept; ``dropped`` lists the ones without support."""

    checked: int = 0
    kept: int = 0
    dropped: list[str] = []

    @property
    def groundedness(self) -> float:
        return 1.0 if self.checked == 0 else self.kept / self.checked


def keep_grounded(items: Iterable[str], index: SourceIndex, report: GroundingReport) -> list[str]:
    kept = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        report.checked += 1
        if index.grounded(item):
            report.kept += 1
            kept.append(item)
        else:
            report.dropped.append(item)
    return kept


def grounded_sentences(text: str, index: SourceIndex, report: GroundingReport, max_chars: int | None = None) -> str:
    """Keep the supported sentences; a last sentence cut off by the length bound is not a sentence."""
    sentences = _SENTENCE.split(text.strip())
    if max_chars is not None and len(text) >= max_chars and sentences and not sentences[-1].endswith((".", "!", "?")):
        sentences = sentences[:-1]
    return " ".join(keep_grounded(sentences, index, report))
