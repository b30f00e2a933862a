"""Shortened messages: the last resort of a compaction that must bring a history under a token target.

When the summary at its smallest still leaves the history above the target (one enormous tool output, long
thoughts among the recent messages), the messages kept verbatim after the summary are cut: the longest first, each
down to the same cap (the fewest messages touched for the tokens saved), never below ``SHORTEST_TOKENS``. A cut keeps
the start and the end of the text (a command's output ends with its error, a thought with its action) and says in
the middle how much was cut and where the whole message is. A tool output is cut by whole lines (``clip_lines``):
between its start and its end it keeps the lines that name the most that the kept lines do not (paths, names of
code, numbers), as the work log keeps what a call printed: a file read whole and cut keeps more of what the agent
goes on to use than its first and last lines alone do (docs/replay.md). The caller archives every original first.

Only text is cut, in a copy: a chat message's string ``content`` or its text parts, a Responses item's string
``output`` or text parts; tool calls, ids and every other key stay as they are. A ``Message`` (this package's own)
is cut the same way and stays a ``Message``; other objects that are not plain mappings (a framework's message
class) are never cut. Pure and deterministic."""

from __future__ import annotations

import heapq
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..extract.steps import names
from ..history.conventions import is_tool_output
from ..history.messages import Message, parse_message, valid_utf8
from ..tokens.protocol import CountsTokens

SHORTEST_TOKENS = 128  # a message is never cut below this: what is left must still say what the message was
HEAD_SHARE = 0.6  # of the characters kept, this share from the start, the rest from the end
CUT_NOTE = "\n[… {chars:,} characters cut here to fit the context window; the whole message is in the archive …]\n"
# A tool output cut by lines (``clip_lines``): the note where lines were first left out, ``…`` at the others
CUT_LINES_NOTE = (
    "\n[… {chars:,} characters cut here and at each … below to fit the context window; the whole message is in the "
    "archive …]\n"
)
GAP = "…"
FEWEST_LINES = 8  # a text of fewer lines is cut in its middle
LINE_CHARS = 240  # a longer line is shown up to this
# A longer text is cut in its middle: reading the names of every line of it would take seconds (13 MB: 2.4 s), and
# it is over any model's window anyway (about 250k tokens)
LINES_TEXT_CHARS = 1_000_000
EDGE_SHARE = 0.4  # of the characters a cut by lines keeps, this share for the first and the last lines
_NUMBERED = re.compile(r"\A\s*\d+(?:→|\t|:)")


def _texts(raw: Mapping[str, Any]) -> list[tuple[str, int | None, str]]:
    """The texts of a message and where they are: ``(key, None, text)`` for a string value, ``(key, i, text)`` for
    the i-th text part."""
    out: list[tuple[str, int | None, str]] = []
    for key in ("content", "output"):
        value = raw.get(key)
        if isinstance(value, str):
            out.append((key, None, value))
        elif isinstance(value, list):
            parts = [(i, p.get("text")) for i, p in enumerate(value) if isinstance(p, Mapping)]
            out += [(key, i, text) for i, text in parts if isinstance(text, str)]
    return out


def text_chars(raw: Any) -> int:
    """Characters of ``raw`` that ``shorten`` may cut (0: nothing to cut, or neither a plain mapping nor a
    ``Message``)."""
    if isinstance(raw, Message):
        raw = raw.to_openai()
    return sum(len(text) for *_, text in _texts(raw)) if isinstance(raw, Mapping) else 0


def clip_middle(text: str, keep: int) -> str:
    """``text`` with its middle cut so that about ``keep`` of its characters remain, the cut said in place."""
    if len(text) <= keep:
        return text
    head = int(keep * HEAD_SHARE)
    tail = keep - head
    # New text, ours: valid UTF-8 even where the original holds a lone surrogate (valid_utf8).
    return valid_utf8(text[:head] + CUT_NOTE.format(chars=len(text) - keep) + (text[-tail:] if tail else ""))


def clip_lines(text: str, keep: int) -> str:
    """``text`` cut by whole lines to about ``keep`` characters: its first and last lines (``EDGE_SHARE`` of them, the
    start's share as ``clip_middle`` keeps it), then the lines between that name what no line kept names, most
    names per character first, shown in their order; the cut note stands where lines were first left out and
    ``…`` at each other place. A text of fewer than ``FEWEST_LINES`` lines, of lines so long that their starts
    would keep less than asked, or of more than ``LINES_TEXT_CHARS``, is cut in its middle instead
    (``clip_middle``)."""
    budget = keep - len(CUT_LINES_NOTE)
    if len(text) <= keep or len(text) > LINES_TEXT_CHARS or budget < LINE_CHARS:
        return clip_middle(text, keep)
    lines = text.split("\n")
    shown = [x if len(x) <= LINE_CHARS else x[: LINE_CHARS - 1] + GAP for x in lines]
    if len(lines) < FEWEST_LINES or sum(map(len, shown)) < keep:
        return clip_middle(text, keep)
    edge = int(budget * EDGE_SHARE)
    start, last = int(edge * HEAD_SHARE), len(lines) - 1
    for i, share in ((0, start), (last, edge - start)):  # always shown: cut to its share when it is longer
        if len(shown[i]) > share:
            shown[i] = shown[i][: max(1, share - 1)] + GAP
    chosen: set[int] = set()
    spent = 0
    for order, upto in ((range(len(lines)), start), (range(last, -1, -1), edge)):  # the start, then the end
        for i in order:
            if i in chosen or (spent + len(shown[i]) + 1 > upto and i not in (0, last)):
                break
            chosen.add(i)
            spent += len(shown[i]) + 1
    # What a line names, without the number a viewer put before it (``113→``, ``113<tab>``, ``113:``): a line of
    # a file is worth the names it holds, an empty one none. Taken as the work log's packer takes lines (the lazy
    # greedy of budgeted coverage); the cost counts the ``…`` that may stand before the line.
    named = [names(_NUMBERED.sub("", x, count=1)) for x in shown]
    seen = set().union(*(named[i] for i in chosen))
    heap = [(-len(named[i]) / (len(shown[i]) + 3), i) for i in range(len(lines)) if i not in chosen]
    heapq.heapify(heap)
    while heap:
        _, i = heapq.heappop(heap)
        new, cost = named[i] - seen, len(shown[i]) + 3
        if not new or spent + cost > budget:
            continue
        if heap and -len(new) / cost > heap[0][0]:  # worth less than when it was queued: back in line
            heapq.heappush(heap, (-len(new) / cost, i))
            continue
        chosen.add(i)
        seen |= new
        spent += cost
    for i in range(len(lines)):  # what is left of the budget: more of the start
        if i not in chosen:
            if spent + len(shown[i]) + 1 > budget:
                break
            chosen.add(i)
            spent += len(shown[i]) + 1
    cut = len(text) - sum(len(shown[i]) + 1 for i in chosen)
    out: list[str] = []
    before, noted = -1, False
    for i in sorted(chosen):
        if i > before + 1:  # lines left out here: the note the first time, ``…`` after
            out.append(GAP if noted else CUT_LINES_NOTE.strip("\n").format(chars=cut))
            noted = True
        out.append(shown[i])
        before = i
    # New text, ours: valid UTF-8 even where the original holds a lone surrogate (valid_utf8).
    return valid_utf8("\n".join(out))


def shorten(raw: Mapping[str, Any] | Message, keep: int, *, by_lines: bool = False) -> Any:
    """A copy of ``raw`` whose text keeps about ``keep`` characters in all (each text its share of them); a
    ``Message`` gives a ``Message``. ``by_lines``: texts are cut by whole lines (``clip_lines``), as a tool's
    output is, instead of in their middle."""
    if isinstance(raw, Message):
        return parse_message(shorten(raw.to_openai(), keep, by_lines=by_lines), index=0)
    places = _texts(raw)
    total = sum(len(text) for *_, text in places)
    out = dict(raw)
    for key, i, text in places:
        share = max(1, keep * len(text) // total) if total else 0
        clipped = clip_lines(text, share) if by_lines else clip_middle(text, share)
        if i is None:
            out[key] = clipped
        else:
            parts = list(out[key]) if out[key] is raw[key] else out[key]
            parts[i] = {**parts[i], "text": clipped}
            out[key] = parts
    return out


def caps(counts: Sequence[int], candidates: Sequence[int], excess: int) -> int | None:
    """The one token cap for the ``candidates`` that saves about ``excess`` tokens (the highest that does: the fewest
    tokens cut), never below ``SHORTEST_TOKENS``; None when nothing can be cut."""
    sizes = sorted((counts[i] for i in candidates if counts[i] > SHORTEST_TOKENS), reverse=True)
    if excess <= 0 or not sizes:
        return None
    above = 0
    for k, size in enumerate(sizes):  # with the k+1 largest above the cap, the cap that saves exactly ``excess``
        above += size
        cap = (above - excess) / (k + 1)
        if cap >= (sizes[k + 1] if k + 1 < len(sizes) else SHORTEST_TOKENS):
            return max(SHORTEST_TOKENS, int(cap))
    return SHORTEST_TOKENS


def shorten_recent(
    history: Sequence[Any],
    parsed: Sequence[Message],
    start: int,
    aim: int,
    counter: CountsTokens,
    *,
    thoughts: bool = True,
) -> tuple[list[Any], list[Message], int, list[int]]:
    """``history`` (``parsed``: the same, parsed) with its messages from ``start`` on cut until it holds at most
    ``aim`` tokens, or as close as cutting gets: the assistant's thoughts first (unless ``thoughts`` is false:
    they are then never cut), then tool outputs (never anything
    before ``start``, never a user's own message). Each cut is made from the original text (a second round cuts
    the original shorter, not the cut). Returns the new history, parsed, its tokens, and the indices cut."""
    out, out_parsed = list(history), list(parsed)
    tokens, cut = counter.count(list(out_parsed)), set()
    for of_thoughts in (True, False) if thoughts else (False,):
        wanted = [
            i
            for i in range(start, len(out))
            if text_chars(history[i])
            and (out_parsed[i].role == "assistant" if of_thoughts else is_tool_output(out_parsed, i))
        ]
        for _ in range(3):  # characters per token are estimated: recount and cut again
            counts = counter.message_counts(out_parsed)
            cap = caps(counts, wanted, tokens - aim)
            if cap is None:
                break
            for i in wanted:
                if counts[i] > cap:
                    keep = int(text_chars(out[i]) * cap / counts[i])
                    out[i] = shorten(history[i], keep, by_lines=not of_thoughts)
                    out_parsed[i] = parse_message(out[i], index=i)
                    cut.add(i)
            # a new list: the counter remembers the last list it counted, by identity
            before, tokens = tokens, counter.count(list(out_parsed))
            if tokens >= before:
                break
    return out, out_parsed, tokens, sorted(cut)


__all__ = [
    "CUT_NOTE",
    "SHORTEST_TOKENS",
    "caps",
    "clip_middle",
    "shorten",
    "shorten_recent",
    "text_chars",
]
