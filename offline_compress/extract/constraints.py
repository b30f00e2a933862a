"""Constraint candidates: instruction-like lines and sentences of genuine user, system and developer messages
(never tool output, but for a person's words that reach the agent as one: ``conventions.person_words``), verbatim,
deduplicated and ranked."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ..history.conventions import as_message_list, first_user_index, is_tool_output, person_words
from ..history.messages import Message
from .events import Frozen

MAX_CONSTRAINTS = 80
MAX_CONSTRAINT_CHARS = 600  # an instruction-like sentence or line
MAX_TURN_CHARS = 2000  # a person's turn mid-session, always kept whole up to this length
# ...and a longer one (a pasted log, a harness's own summary sent as the user) is offered whole up to this; the
# summary's fit gives it way to its instruction sentences (``turn_sentences``) only when the constraints would
# take more than their bound (``summary.merge``: the summary's share of the window).
MAX_WHOLE_TURN_CHARS = 100_000


class Constraint(Frozen):
    """A sentence/line of a genuine user, system or developer message that reads as an instruction.

    ``text == messages[message_index].text[start:start + len(text)]`` always holds.
    """

    text: str
    message_index: int
    role: str
    start: int
    strength: int  # 2: strong marker (must/never/only/ALL-CAPS…), 1: weak (should/avoid/please…)


_STRONG = re.compile(
    r"\b(?:must(?:n't| not)?|never|always|do not|don't|cannot|can't|can not|can only|only|"
    r"under no circumstances|forbidden|prohibited|not allowed|mandatory|(?:is|are) required|required to|"
    r"make sure|ensures?|shall|critical(?:ly)?|important(?:ly)?|no more than|at most|at least|exactly|"
    r"doesn't|does not|won't|will not|not persistent|to finish|the following command)\b",
    re.I,
)
# ALL-CAPS runs ("DO NOT MODIFY", "YOU CAN ONLY ENTER ONE COMMAND AT A TIME"); acronyms alone do not count.
_CAPS_RUN = re.compile(r"\b[A-Z]{2,}(?:[ ’'][A-Z]{1,})+\b")
_CAPS_IMPERATIVE = re.compile(
    r"\b(?:DO|DON'T|MUST|NEVER|ONLY|ALWAYS|NOT|CANNOT|NO|EXACTLY|ONE|IMPORTANT|CRITICAL|REQUIRES?)\b"
)
_FENCE = re.compile(r"^[ \t]*(?:```|~~~)", re.M)
_EXAMPLE_TAG = re.compile(r"<(/?)([A-Za-z_]*example[A-Za-z_]*)>", re.I)
_BULLET = re.compile(r"(?:[-*+•]|\d{1,3}[.)]|[a-z][.)]|#{1,6})[ \t]+")  # used with match(text, pos)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[`]?[A-Z0-9])")


def _units(text: str) -> Iterable[tuple[int, int]]:
    """Spans of candidate units: non-empty lines outside code fences and example tags, bullets stripped."""
    in_fence = False
    example_depth = 0
    pos = 0
    spans: list[tuple[int, int, bool, int]] = []  # (start, end, is_bullet, line start)
    for line in text.splitlines(keepends=True):
        start, end = pos, pos + len(line)
        pos = end
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        for m in _EXAMPLE_TAG.finditer(line):
            example_depth = max(0, example_depth + (-1 if m.group(1) else 1))
        if in_fence or example_depth or _EXAMPLE_TAG.search(line):
            continue
        a, b = end - len(line.lstrip(" \t")), start + len(line.rstrip(" \t\r\n"))
        if a >= b:
            continue
        bullet = _BULLET.match(text, a, b)
        if bullet:
            a = bullet.end()
        a = b - len(text[a:b].lstrip("> \t"))  # heading/quote markers are not part of the instruction
        if a < b:
            spans.append((a, b, bool(bullet), start))
    # A sentence wrapped over lines is one unit: join a line that does not end a sentence with the next
    # line when that one starts in lower case and is not a bullet (the unit then spans the newline).
    k = 0
    while k < len(spans):
        a, b, _, _ = spans[k]
        while (
            k + 1 < len(spans)
            and text[b - 1] not in ".!?:;"
            and not spans[k + 1][2]
            and text[spans[k + 1][0]].islower()
            and text.count("\n", b, spans[k + 1][0]) == 1  # adjacent lines, nothing skipped between
            and spans[k + 1][3] == text.find("\n", b) + 1
        ):
            b = spans[k + 1][1]
            k += 1
        yield a, b
        k += 1


def _split_long(text: str, a: int, b: int, limit: int) -> Iterable[tuple[int, int]]:
    """Cut [a, b) into pieces of at most ``limit`` chars at sentence (else clause, else word) boundaries."""
    if b - a <= limit:
        yield a, b
        return
    cuts = [m.start() for m in _SENTENCE_END.finditer(text, a, b)]
    pieces: list[tuple[int, int]] = []
    s = a
    for c in cuts + [b]:
        pieces.append((s, c))
        s = c
        while s < b and text[s] in " \t":
            s += 1
    for s, e in pieces:
        while e - s > limit:  # a giant sentence: cut at the last space/comma before the limit
            cut = max(text.rfind("; ", s, s + limit), text.rfind(", ", s, s + limit), text.rfind(" ", s, s + limit))
            cut = cut + 1 if cut > s else s + limit
            yield s, cut
            s = cut
            while s < e and text[s] in " \t":
                s += 1
        if e > s:
            yield s, e


def _strength(unit: str) -> int:
    """2 strong instruction, 1 weak, 0 none. Fragments (under 3 words) and weak list intros ("...:") are 0."""
    words = len(unit.split())
    if words < 3:
        return 0
    if any(_CAPS_IMPERATIVE.search(m.group(0)) for m in _CAPS_RUN.finditer(unit)):
        return 2
    if _STRONG.search(unit) or _IMPERATIVE_START.match(unit):
        return 2
    if words >= 4 and not unit.endswith(":") and _WEAK_MARKERS.search(unit):
        return 1
    return 0


_IMPERATIVE_START = re.compile(r"(?:Avoid|Refrain|Stop|Don't|Do not|Never|Always|Only)\b")


_WEAK_MARKERS = re.compile(
    r"\b(?:should(?:n't| not)?|avoid|please|prefer|instead of|remember|be sure|be careful|need to|needs to|"
    r"your task is|the goal is|you're going to|you are going to|refrain|no need to|not to)\b",
    re.I,
)


def _key(text: str) -> str:
    """What makes two candidates the same: their words, case folded."""
    return " ".join(text.split()).casefold()


def _instruction_spans(text: str) -> Iterable[tuple[int, int, int]]:
    """(start, end, strength) of the instruction-like units of ``text``: lines and sentences outside code, at most
    ``MAX_CONSTRAINT_CHARS`` each, verbatim."""
    for a, b in _units(text):
        for s, e in _split_long(text, a, b, MAX_CONSTRAINT_CHARS):
            strength = _strength(text[s:e])
            if strength:  # at most MAX_CONSTRAINT_CHARS by _split_long (tests/test_extract.py)
                yield s, e, strength


def turn_sentences(turn: str) -> list[str]:
    """The instruction-like sentences and lines of a user turn, verbatim, deduplicated, in order: what a turn too
    long to keep whole gives the summary instead (the sentences a longer message gives in ``extract_constraints``)."""
    first: dict[str, str] = {}
    for s, e, _ in _instruction_spans(turn):
        first.setdefault(_key(turn[s:e]), turn[s:e])
    return list(first.values())


def extract_constraints(
    messages: Sequence[Message], *, limit: int = MAX_CONSTRAINTS, mid_session_from: int | None = None
) -> list[Constraint]:
    """Instruction-like sentences/lines of genuine user/system/developer messages, verbatim, deduplicated.

    Every user turn of up to ``MAX_TURN_CHARS`` (the task too: nothing a person typed is lost) and a user turn after
    the first exchange (a person steering mid-session) are kept whole, up to
    ``MAX_WHOLE_TURN_CHARS`` (the summary's fit turns one over ``MAX_TURN_CHARS`` into its sentences if the
    constraints outgrow their bound); a longer one gives its sentences like any other message. Order = priority:
    those turns first, then strong markers, then weak ones; ties keep history order. ``mid_session_from``: every
    user turn from this index on is mid-session whatever precedes it here (a compacted history: the exchange
    before it is in a summary, not in ``messages``). A person's words that reach the agent as tool output (an
    answer to its question, the words of a refusal: ``conventions.person_words``) are such a turn.
    """
    msgs = as_message_list(messages)
    first_user = first_user_index(msgs)
    # A user turn after the first assistant reply (that follows the task) is a person steering mid-session.
    first_reply = next((k for k in range(first_user or 0, len(msgs)) if msgs[k].role == "assistant"), None)
    found: list[tuple[int, Constraint]] = []
    seen: set[str] = set()
    for i, msg in enumerate(msgs):
        said = person_words(msgs, i)  # a person's answer or refusal, which reaches the agent as tool output
        if said is None and (msg.role not in ("system", "developer", "user") or is_tool_output(msgs, i)):
            continue
        text = msg.text
        turn = text[said[0] : said[1]] if said else text.strip()
        mid_session = said is not None or (
            msg.role == "user"
            and (
                (first_user is not None and first_reply is not None and i > first_reply)
                or (mid_session_from is not None and i >= mid_session_from)
            )
        )
        # a person's short turn before the first reply (the task; not a harness's page of instructions): whole too
        short_turn = msg.role == "user" and len(turn) <= MAX_TURN_CHARS
        if (mid_session or short_turn) and turn and len(turn) <= MAX_WHOLE_TURN_CHARS:
            # A person steering mid-session is an instruction whatever its wording: the turn whole, word for word
            # (its sentences are in it); so is their answer to the agent's question or their words refusing a call
            # (with the harness's frame of an answer).
            key = _key(turn)
            if key not in seen:
                seen.add(key)
                start = said[0] if said else text.index(turn)
                role = "user" if said else msg.role
                strength = 2 if _strength(turn) == 2 else 1
                tier = 0 if mid_session else 1  # the task after the turns that steered it
                found.append((tier, Constraint(text=turn, message_index=i, role=role, start=start, strength=strength)))
            continue
        if said is not None:
            continue  # over the bound: tool output gives no sentences of its own
        for s, e, strength in _instruction_spans(text):
            unit = text[s:e]
            key = _key(unit)
            if key in seen:
                continue
            seen.add(key)
            tier = (0 if mid_session else 1) if strength == 2 else (2 if mid_session else 3)
            found.append((tier, Constraint(text=unit, message_index=i, role=msg.role, start=s, strength=strength)))
        for m in _COMMAND_BLOCK.finditer(text):
            # A command the instructions spell out in a code block ("issue the following command: ```…```"):
            # the agent needs it verbatim after compaction (how to submit, how to run the tests).
            s, e = m.span(1)
            unit = text[s:e].strip()
            s = text.index(unit, s) if unit else s
            key = _key(unit)
            if unit and len(unit) <= MAX_CONSTRAINT_CHARS and key not in seen:
                seen.add(key)
                found.append((1, Constraint(text=unit, message_index=i, role=msg.role, start=s, strength=2)))
    found.sort(key=lambda t: (t[0], t[1].message_index, t[1].start))
    return [c for _, c in found[:limit]]


_COMMAND_BLOCK = re.compile(r"(?:following|this|the) command[^\n]*:[ \t]*\n\s*```[^\n]*\n(.*?)\n[ \t]*```", re.I | re.S)
