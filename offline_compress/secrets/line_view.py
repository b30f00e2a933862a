"""Some lines of a text joined into one string, with offsets that map back into the text.

Secret detectors are line-local, and only a few lines of a long history can hold what a given detector looks
for. Running a regex once over the joined candidate lines costs one C-level pass over a fraction of the text,
instead of one Python call per line or a pass over everything.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from functools import cached_property
from itertools import accumulate

Span = tuple[int, int]

MAX_LINE = 1000  # detect-secrets' indirect-reference heuristic skips longer lines (heuristic.is_indirect_reference)


def lower_same_length(text: str) -> str:
    """``text.lower()`` when it keeps every offset; else ASCII-only lowering (a few characters, such as 'İ',
    lower to two)."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(ch.lower() if ch.isascii() else ch for ch in text)


def line_span(text: str, pos: int) -> Span:
    """(start, end) of the line of ``text`` holding ``pos``, without its line break."""
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return start, len(text) if end < 0 else end


def lines_with_needles(text: str, lowered: str, needles: Iterable[str]) -> list[Span]:
    """The lines in which one of ``needles`` occurs, sorted, each once. A lower-case needle is looked for in
    ``lowered`` (``text`` lowered, same length: any case matches), any other in ``text`` as it is."""
    found: dict[int, int] = {}
    for needle in needles:
        haystack = lowered if needle == needle.lower() else text
        pos = haystack.find(needle)
        while pos >= 0:
            start, end = line_span(text, pos)
            found[start] = end
            pos = haystack.find(needle, end)
    return sorted(found.items())


def intersect(*line_sets: list[Span]) -> list[Span]:
    """The lines present in every one of ``line_sets`` (each sorted, as the functions above return them)."""
    keep = set.intersection(*({a for a, _ in lines} for lines in line_sets))
    return [span for span in line_sets[0] if span[0] in keep]


def lines_matching(text: str, pattern: re.Pattern[str]) -> list[Span]:
    """The lines on which ``pattern`` matches (the pattern must not match a line break), sorted, each once: each
    search starts on the line after the last find's."""
    lines: list[Span] = []
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        lines.append(line_span(text, m.start()))
        pos = lines[-1][1] + 1
    return lines


class LineView:
    """``lines`` (sorted, disjoint spans of ``text``) joined by ``\\n`` into ``self.text``."""

    def __init__(self, text: str, lines: list[Span]) -> None:
        self.source = text
        self.lines = lines
        self.text = "\n".join(text[a:b] for a, b in lines)
        # where each line starts in self.text: the lengths of the lines before it, each with its '\n'
        self._view_starts = list(accumulate((b - a + 1 for a, b in lines), initial=0))[:-1]
        self._first_ends: dict[tuple[int, re.Pattern[str]], int | None] = {}

    def to_source(self, span: Span) -> Span:
        """A span of ``self.text`` as a span of the source text, cut at the end of the line where it starts
        (the joined lines are not neighbours in the source)."""
        i = self._line_index(span[0])
        start, end = self.lines[i]
        shift = start - self._view_starts[i]
        return span[0] + shift, min(span[1] + shift, end)

    def _line_index(self, pos: int) -> int:
        return bisect.bisect_right(self._view_starts, pos) - 1

    def column(self, pos: int) -> int:
        """The offset of view position ``pos`` in its source line."""
        return pos - self._view_starts[self._line_index(pos)]

    def first_match_end(self, pos: int, pattern: re.Pattern[str]) -> int | None:
        """Where the first match of ``pattern`` in the source line holding ``pos`` ends (an offset in the
        line), or None: one search per line and pattern, however many finds the line holds."""
        i = self._line_index(pos)
        key = (i, pattern)
        if key not in self._first_ends:
            start, end = self.lines[i]
            m = pattern.search(self.source[start:end])  # the line alone: '^' is its start
            self._first_ends[key] = None if m is None else m.end()
        return self._first_ends[key]

    def line_of(self, pos: int) -> str:
        """The source line that holds view position ``pos``; of a line longer than ``MAX_LINE`` characters,
        the ``MAX_LINE + 1`` of them around ``pos`` (a heuristic that reads the line then costs a bounded
        amount per find, however long the line; detect-secrets' own skip lines over ``MAX_LINE``)."""
        i = self._line_index(pos)
        start, end = self.lines[i]
        if end - start <= MAX_LINE:
            return self.source[start:end]
        at = pos - self._view_starts[i] + start
        left = max(start, min(at - MAX_LINE // 2, end - MAX_LINE - 1))
        return self.source[left : left + MAX_LINE + 1]


# A run of 20 characters of the alphabets keys are written in (base64, base64url, hex, with '='): every
# token-shaped secret holds one, ordinary prose and most code lines do not.
LONG_TOKEN = re.compile(r"[A-Za-z0-9+/=_-]{20}")


class ScanText:
    """A text, its lower-case twin of the same length, and the line sets detectors ask for, each computed once
    (our patterns and detect-secrets' plugins look at the same credential-word and long-token lines)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lowered = lower_same_length(text)
        self._needles: dict[tuple[str, ...], list[Span]] = {}

    @cached_property
    def token_view(self) -> LineView:
        """The lines that hold a ``LONG_TOKEN``, joined."""
        return LineView(self.text, lines_matching(self.text, LONG_TOKEN))

    def lines_with(self, needles: tuple[str, ...]) -> list[Span]:
        if needles not in self._needles:
            self._needles[needles] = lines_with_needles(self.text, self.lowered, needles)
        return self._needles[needles]
