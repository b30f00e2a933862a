"""Pack: the work log fitted to a token budget by what each of its lines adds.

The work log loses lines, not whole steps in age order, when it does not fit. Every piece of a step (a sentence
the agent said, a line of code it quoted, a line of what it ran, a line of what it saw) names things of the
code: paths, dotted names, identifiers, numbers. A piece is worth the names it adds that nothing taken so far
names, nor the messages kept verbatim around the summary, weighted by how recent its step is, per token it
costs. Pieces are taken best first (the lazy greedy of budgeted coverage) until the budget is spent. A piece
that adds no name is not taken, except the first line of what a step ran: a step appears once any piece of it
is taken, and always with that line (what was done), and a failed step's error line counts as a name (what not
to repeat). Lines of a command that were left out show as ``…``, so the reader knows the command was longer.
An edit's (or a diff's) removed line is worth only the names its added lines do not hold, so the new text is
what a summary shows of a changed line.
A work log within its budget is packed too, with room for all of it: only the pieces that add no name go (the
summary pays for a name once; ``merge.fit``).

Pure and deterministic: equal worth goes to the newer step, then to the earlier piece of it.
"""

from __future__ import annotations

import functools
import heapq
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ..extract.calls import ADDED_LINE, REMOVED_LINE
from ..extract.prose import SENTENCE_SPLIT
from ..extract.steps import MAX_SAW_LINES, WorkStep, names
from ..secrets.redact import redact
from ..tokens.protocol import CountsTokens
from . import schema as S

HEAD_BONUS = 1  # the first line of what a step ran is worth one name: what was done
RECENCY = 0.95  # weight of a step = RECENCY ** (number of newer steps); chosen on the replay design split
ELLIPSIS = "…"
REPEAT_SAW_LINES = MAX_SAW_LINES  # distinct lines a run of repeated calls offers the packer, as one call does
# A line of output that is only a path heads the lines after it (a search's or a viewer's file header)
_PATH_LINE = re.compile(r"(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+|[\w-]+\.[A-Za-z]\w{0,4}")


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ``…`` last when it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def redacted(text: str, limit: int = S.MAX_ITEM_CHARS) -> str:
    """``text`` redacted, then ``clip``ped (a redaction marker may be longer than the secret it replaces)."""
    return clip(redact(text), limit)


@dataclass(frozen=True)
class Material:
    """One step of the work log with everything that may be kept of it (redacted, not yet cut to a budget)."""

    said: tuple[str, ...]  # sentences
    code: tuple[str, ...]
    ran: tuple[str, ...]  # lines
    saw: tuple[str, ...]
    outcome: str
    failed_line: int | None = None  # index in ``saw`` of the line that says why the step failed
    times: int = 1  # the same call run this many times in a row (``collapse_repeats``)

    @classmethod
    def of(
        cls,
        said: str,
        code: Sequence[str],
        ran: str,
        saw: Sequence[str],
        outcome: str,
        failed_line: int | None = None,
        times: int = 1,
    ) -> Material:
        sentences = tuple(x for x in SENTENCE_SPLIT.split(" ".join(said.split())) if x)
        ran_lines = tuple(ran.strip("\n").split("\n")) if ran.strip() else ("",)
        return cls(sentences, tuple(code), ran_lines, tuple(saw), outcome, failed_line, times)

    @classmethod
    def of_step(cls, step: WorkStep | S.Step) -> Material:
        """A step of the work log, or of an earlier summary (its error line, when it failed, is the last line it saw:
        ``extract.steps`` appends it last). Not redacted again: the compressor redacts the messages whole before
        anything is read from them (a secret cut at a piece's boundary would escape a pass over the piece), and the
        finished summary once more (``summary.redaction``)."""
        failed = len(step.saw) - 1 if step.outcome == "error" and step.saw else None
        times = step.times if isinstance(step, S.Step) else 1
        return cls.of(step.said, step.code, step.ran, step.saw, step.outcome or "partial", failed, times)

    def key(self) -> tuple[object, ...]:
        return (self.said, self.code, self.ran, self.saw, self.times)

    def again(self, later: Material) -> Material:
        """This step and ``later``, the same call run again, as one step: what was said first, the distinct lines
        seen (the latest kept when there are more than ``REPEAT_SAW_LINES``; a failure's line last), the count."""
        fail = later.saw[later.failed_line] if later.failed_line is not None else None
        lines = [x for m in (self, later) for k, x in enumerate(m.saw) if k != m.failed_line]
        saw = [x for x in dict.fromkeys(lines) if x != fail][-REPEAT_SAW_LINES:]
        if fail is not None:
            saw.append(fail)
        failed = len(saw) - 1 if fail is not None else None
        return replace(self, saw=tuple(saw), failed_line=failed, times=self.times + later.times)

    def step(
        self,
        said: Sequence[int] = (),
        code: Sequence[int] = (),
        ran: Sequence[int] | None = None,
        saw: Sequence[int] = (),
    ) -> S.Step:
        """The step with the pieces at these positions (``ran=None``: all of it), cut to the schema's bounds."""
        ran_at = range(len(self.ran)) if ran is None else sorted(ran)
        saw = _with_headers(self.saw, sorted(saw))
        return S.Step(
            said=clip(" ".join(self.said[i] for i in sorted(said)), S.MAX_SAID_CHARS),
            code=[clip(self.code[i].strip(), S.MAX_CODE_CHARS) for i in sorted(code)][: S.MAX_CODE_LINES],
            ran=clip(_with_gaps(self.ran, ran_at), S.MAX_RAN_CHARS),
            saw=[clip(self.saw[i], S.MAX_SAW_CHARS) for i in saw][: S.MAX_SAW_LINES],
            outcome=self.outcome if self.outcome in ("success", "error", "partial") else "partial",
            times=min(self.times, S.MAX_STEP_TIMES),
        )

    def whole(self) -> S.Step:
        return self.step(range(len(self.said)), range(len(self.code)), None, range(len(self.saw)))


def collapse_repeats(material: Sequence[Material]) -> list[Material]:
    """``material`` with each run of consecutive steps that ran the same call with the same outcome, the later ones
    with nothing said or quoted (an agent polling a background job, or retrying a command unchanged), as one step
    (``Material.again``): a summary shows the call once with how many times it ran, and the budget goes to what the
    other steps add. Pure; nothing but the repeats is merged."""
    out: list[Material] = []
    for m in material:
        last = out[-1] if out else None
        if last is not None and (m.ran, m.outcome) == (last.ran, last.outcome) and not m.said and not m.code:
            out[-1] = last.again(m)
        else:
            out.append(m)
    return out


def _with_headers(lines: Sequence[str], chosen: Sequence[int]) -> list[int]:
    """``chosen`` (sorted) with the path line that heads each chosen line, as long as the schema's bound on lines
    allows: a line of code is read with the file it is from, even when that file's name shows elsewhere."""
    if not chosen or len(chosen) >= S.MAX_SAW_LINES:
        return list(chosen)
    heads = _heads(tuple(lines))
    out = set(chosen)
    for i in chosen:
        if len(out) >= S.MAX_SAW_LINES:
            break
        if heads[i] >= 0:
            out.add(heads[i])
    return sorted(out)


@functools.lru_cache(maxsize=4096)
def _heads(lines: tuple[str, ...]) -> tuple[int, ...]:
    """For each line, the index of the path line above it that heads it (-1: none, or it is a path line)."""
    out, last = [], -1
    for k, line in enumerate(lines):
        if _PATH_LINE.fullmatch(line):
            out.append(-1)
            last = k
        else:
            out.append(last)
    return tuple(out)


def _with_gaps(lines: Sequence[str], chosen: Sequence[int]) -> str:
    """The chosen lines in order, ``…`` wherever lines were left out (between them or after the last)."""
    out: list[str] = []
    last = -1
    for i in chosen:
        if i > last + 1 and out:
            out.append(ELLIPSIS)
        out.append(lines[i])
        last = i
    if last < len(lines) - 1:
        out.append(ELLIPSIS)
    return "\n".join(out)


@dataclass
class _Piece:
    step: int
    kind: str  # "ran" | "said" | "code" | "saw"
    pos: int
    text: str
    names: frozenset[str]
    cost: int
    bonus: int = 0


@dataclass
class _Chosen:
    said: list[int] = field(default_factory=list)
    code: list[int] = field(default_factory=list)
    ran: list[int] = field(default_factory=list)
    saw: list[int] = field(default_factory=list)
    said_chars: int = 0
    ran_chars: int = 0


_KINDS = ("ran", "said", "code", "saw")
_LIMITS = {"code": S.MAX_CODE_CHARS, "saw": S.MAX_SAW_CHARS, "said": S.MAX_SAID_CHARS}


@dataclass
class _Read:
    """The pieces of a work log, read once (names, token costs) and packed for any budget."""

    material: Sequence[Material]
    pieces: list[_Piece]
    heads: dict[int, int]  # step -> index of its first ran line in ``pieces``
    of_step: dict[int, list[int]]  # step -> indices of its pieces
    overhead: int  # tokens of an empty step


def read(material: Sequence[Material], counter: CountsTokens) -> _Read:
    """Read the pieces of ``material`` once: what each names and costs (one tokenizer batch for all pieces)."""
    slots: list[tuple[int, str, int, str, int]] = []  # (step, kind, position, text, bonus)
    for k, m in enumerate(material):
        for kind in _KINDS:
            for pos, raw in enumerate(getattr(m, kind)):
                text = clip(raw.strip() if kind == "code" else raw, _LIMITS.get(kind, S.MAX_RAN_CHARS - 2))
                bonus = HEAD_BONUS * int(kind == "ran" and pos == 0) + int(kind == "saw" and pos == m.failed_line)
                slots.append((k, kind, pos, text, bonus))
    quoted = [json.dumps(slot[3], ensure_ascii=False) for slot in slots]
    costs = counter.count_texts(quoted)
    named: dict[str, frozenset[str]] = {}  # lines repeat (a script written twice): read each once
    out = _Read(material, [], {}, {}, counter.count_text(S.Step(ran="").model_dump_json()) + 1)
    # A removed line is worth only the names its step's added lines do not hold: where the old and the new text
    # name the same things, the summary shows what the file holds now, not what it held (a `-` line kept alone
    # reads as the code that is there)
    added: dict[tuple[int, str], frozenset[str]] = {}  # (step, kind) -> the names its added lines hold
    for k, kind, pos, text, _ in slots:
        if kind in ("ran", "saw") and not (kind == "ran" and pos == 0) and ADDED_LINE.match(text):
            added[k, kind] = added.get((k, kind), frozenset()) | names(text)
    for (k, kind, pos, text, bonus), cost in zip(slots, costs):
        if kind == "ran" and pos == 0:
            out.heads[k] = len(out.pieces)
        out.of_step.setdefault(k, []).append(len(out.pieces))
        if text not in named:
            named[text] = frozenset(names(text))
        held = named[text]
        if (k, kind) in added and REMOVED_LINE.match(text):
            held = held - added[k, kind]
        out.pieces.append(_Piece(k, kind, pos, text, held, cost + 1, bonus))
    return out


def pack(
    material: Sequence[Material] | _Read,
    budget: int,
    counter: CountsTokens,
    *,
    known: set[str] | frozenset[str] = frozenset(),
) -> list[S.Step]:
    """The steps of ``material`` (oldest first; or its pieces, ``read`` once for several budgets) cut to about
    ``budget`` tokens of JSON, best pieces first (see the module docstring). ``known``: names the reader has
    elsewhere (the messages kept verbatim). A step of which nothing is taken is left out. The caller checks the
    exact total and packs again with less if needed."""
    if budget <= 0 or not material:
        return []
    r = material if isinstance(material, _Read) else read(material, counter)
    if not r.pieces:
        return []
    chosen = _Greedy(r, known).run(budget)
    return [r.material[k].step(c.said, c.code, c.ran, c.saw) for k, c in sorted(chosen.items())]


class _Greedy:
    """The lazy greedy of budgeted coverage over the pieces of a work log: what is taken, and what is worth what."""

    def __init__(self, r: _Read, known: set[str] | frozenset[str]) -> None:
        self.pieces, self.heads, self.of_step = r.pieces, r.heads, r.of_step
        self.overhead = r.overhead
        n = len(r.material)
        self.weight = [RECENCY ** (n - 1 - k) for k in range(n)]
        self.covered = set(known)
        self.chosen: dict[int, _Chosen] = {}
        self.taken: set[int] = set()

    def gain(self, i: int) -> int:
        """The names piece ``i`` adds to what is covered so far, and its bonus."""
        p = self.pieces[i]
        return len(p.names - self.covered) + p.bonus

    def price(self, i: int) -> tuple[float, int]:
        """(worth per token, tokens) of taking piece ``i`` now (opening its step costs its first line too)."""
        pieces = self.pieces
        p = pieces[i]
        own = self.gain(i)
        value, cost = own, p.cost
        if p.step not in self.chosen:
            cost += self.overhead
            h = self.heads[p.step]
            if h != i:
                head_value = len(pieces[h].names - self.covered - p.names) + pieces[h].bonus
                value += head_value
                cost += pieces[h].cost
        if own <= 0:
            return 0.0, cost
        return self.weight[p.step] * value / cost, cost

    def fits(self, i: int) -> bool:
        """Piece ``i`` stays within the schema's bounds of its step as chosen so far."""
        p, c = self.pieces[i], self.chosen.get(self.pieces[i].step)
        if c is None:
            return True
        if p.kind == "said":
            return c.said_chars + len(p.text) + 1 <= S.MAX_SAID_CHARS
        if p.kind == "code":
            return len(c.code) < S.MAX_CODE_LINES
        if p.kind == "saw":
            return len(c.saw) < S.MAX_SAW_LINES
        return c.ran_chars + len(p.text) + 4 <= S.MAX_RAN_CHARS

    def take(self, i: int) -> None:
        """Piece ``i`` into its step, its names covered."""
        p = self.pieces[i]
        c = self.chosen.setdefault(p.step, _Chosen())
        getattr(c, p.kind).append(p.pos)
        if p.kind == "said":
            c.said_chars += len(p.text) + 1
        elif p.kind == "ran":
            c.ran_chars += len(p.text) + 4
        self.taken.add(i)
        self.covered.update(p.names)

    def entry(self, i: int) -> tuple[float, int, int]:
        """Piece ``i`` in the queue: the best worth first, then the newer step, then the earlier piece."""
        return (-self.price(i)[0], -self.pieces[i].step, i)

    def run(self, budget: int) -> dict[int, _Chosen]:
        """The pieces taken, best first, until ``budget`` is spent: by step, the positions of each kind."""
        pieces, heads, chosen, taken = self.pieces, self.heads, self.chosen, self.taken
        heap = [self.entry(i) for i in range(len(pieces))]
        heapq.heapify(heap)
        left = budget
        cheapest = min(p.cost for p in pieces)
        while heap and left >= cheapest:
            _, _, i = heapq.heappop(heap)
            if i in taken:
                continue
            worth, cost = self.price(i)
            if worth <= 0:
                continue
            if heap and worth < -heap[0][0] - 1e-12:  # stale: worth fell since it was queued
                heapq.heappush(heap, (-worth, -pieces[i].step, i))
                continue
            if cost > left or not self.fits(i):
                continue
            opened = pieces[i].step not in chosen
            if opened and heads[pieces[i].step] != i:
                self.take(heads[pieces[i].step])
            self.take(i)
            left -= cost
            if opened:  # the step's other pieces just got cheaper: queue them at their new worth
                for j in self.of_step[pieces[i].step]:
                    if j not in taken:
                        heapq.heappush(heap, self.entry(j))
        return chosen


__all__ = ["ELLIPSIS", "RECENCY", "Material", "clip", "collapse_repeats", "names", "pack", "read"]
