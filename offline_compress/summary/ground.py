"""Grounding: every sentence the model wrote is checked against the source; what the history does not
support is dropped, and the run reports how much was kept.

Two rules, both lexical on purpose (cheap, deterministic, strict about what a summary must not invent: file names,
commands, error names, numbers):

- the embedded 270M model's draft (``grounded``): a claim is supported when all of its content words (identifiers,
  paths, numbers, words of 4+ letters that are not function words) occur in the source; a base model's own wording
  is mostly noise, so it must hold word for word;
- a capable model's written state (``holds``): a statement is kept when its names (paths, numbers, code names,
  proper names) and its `quoted` spans occur in the source, whatever its wording, and dropped when it names
  something the source does not hold. Measured on a labelled set of written statements
  (tests/test_written_grounding.py).

Either way an instruction-like item must be supported by trusted (non tool-output) text."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

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


def content_words(text: str) -> set[str]:
    """The words of 4 letters or more that are not function words, and those with a digit, lower-cased."""
    words = {raw.strip("./:%+-").lower() for raw in _TOKEN.findall(text)}
    return {w for w in words if (len(w) >= 4 and w not in _STOP) or any(ch.isdigit() for ch in w)}


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
        # Parts of paths and dotted names count too: "src/a.py" supports "a.py".
        parts = (part for raw in _TOKEN.findall(text) for part in re.split(r"[./:]", raw))
        words |= content_words(text) | {part.lower() for part in parts if len(part) >= 4}
    return words


class SourceIndex:
    """Vocabulary of the source text, built once per compression. ``untrusted`` texts (tool output) support
    a claim of fact, but a claim that reads as an instruction must be supported by the trusted texts alone."""

    def __init__(self, texts: Iterable[str], untrusted: Iterable[str] = ()) -> None:
        self._trusted_texts, self._untrusted_texts = list(texts), list(untrusted)
        self.trusted_words = _vocabulary(self._trusted_texts)
        self.words = self.trusted_words | _vocabulary(self._untrusted_texts)
        self._joined: dict[tuple[bool, bool], str] = {}  # the source as one text, built on first use (``holds``)
        self._lowered: dict[bool, list[str]] = {}  # its texts lower-cased, on first use (``_pieces_hold``)

    def support(self, claim: str, *, trusted_only: bool = False) -> float:
        words = content_words(claim)
        if not words:
            return 0.0
        vocabulary = self.trusted_words if trusted_only else self.words
        return sum(1 for w in words if w in vocabulary) / len(words)

    def _texts(self, trusted_only: bool) -> list[str]:
        return self._trusted_texts if trusted_only else self._trusted_texts + self._untrusted_texts

    def _source(self, trusted_only: bool, squeezed: bool) -> str:
        """The source as one lower-cased text, a Windows path's separators as ``/`` (``squeezed``: without
        whitespace, where quotes are looked up)."""
        key = (trusted_only, squeezed)
        if key not in self._joined:
            joined = _slashed("\n".join(self._texts(trusted_only)).lower())
            self._joined[key] = "".join(joined.split()) if squeezed else joined
        return self._joined[key]

    def _pieces_hold(self, name: str, trusted_only: bool) -> bool:
        """A qualified name (``_qualified``: ``RectilinearGrid.__init__``, ``typing.Sequence``) that the source
        writes apart (``class RectilinearGrid`` … ``def __init__``): each of its pieces occurs as a whole name in
        one and the same text of the source (a file, an output), so pieces from unrelated places do not pair."""
        pieces = name.lower().removesuffix("()").split(".")
        patterns = [re.compile(rf"(?<![a-z0-9_]){re.escape(p)}(?![a-z0-9_])") for p in pieces]
        if trusted_only not in self._lowered:
            self._lowered[trusted_only] = [t.lower() for t in self._texts(trusted_only)]
        return any(all(p.search(text) for p in patterns) for text in self._lowered[trusted_only])

    def _name_holds(self, name: str, trusted_only: bool) -> bool:
        """``name`` occurs in the source as a whole name (``app`` in ``App.tsx``, not in ``Apple``; a number in
        ``15m``, not in ``150``)."""
        name = _slashed(name)
        before, after = (r"(?<![0-9.])", r"(?![0-9])") if name.isdigit() else (r"(?<![a-z0-9_])", r"(?![a-z0-9_])")
        return re.search(before + re.escape(name) + after, self._source(trusted_only, False)) is not None

    def _piece_holds(self, piece: str, counted: dict[str, list[str]], trusted_only: bool) -> bool:
        """A name, or a small number by the words beside it ("8 tests", and in a list a slash apart: "8/8 tests")."""
        if piece in counted:
            return self._number_holds(piece, counted[piece], trusted_only)
        return self._name_holds(piece, trusted_only)

    def _quote_holds(self, span: str, trusted_only: bool) -> bool:
        """A quoted span occurs as a whole (``issueToken`` not in ``issueTokens``), case and runs of whitespace
        aside; one with code in it (punctuation) whitespace aside altogether, as code is wrapped and indented
        differently; an elided one (``a(...)``) piece by piece, as is a glob (``MEDIA-STACK-*``); a qualified name
        as ``_pieces_hold`` says."""
        span = _slashed(span)
        pieces = _ELLIPSIS.split(span)
        if _GLOB.fullmatch(span) and re.search(r"[A-Za-z0-9]{3}", span):
            pieces = span.split("*")
        for piece in pieces:
            flat = _collapsed(piece)
            if len(flat) < 2:
                continue
            if self._whole(flat, self._source(trusted_only, False)):
                continue
            code = any(not (ch.isalnum() or ch.isspace()) for ch in flat)
            if not (code and self._whole(_squeezed(piece), self._source(trusted_only, True))):
                return _qualified(span) and self._pieces_hold(span, trusted_only)
        return True

    @staticmethod
    def _whole(text: str, source: str) -> bool:
        """``text`` occurs in ``source`` and, where it starts or ends with a letter or digit, not inside a word."""
        before = r"(?<![a-z0-9_])" if text[0].isalnum() else ""
        after = r"(?![a-z0-9_])" if text[-1].isalnum() else ""
        return text in source and re.search(before + re.escape(text) + after, source) is not None

    def _number_holds(self, number: str, near: list[str], trusted_only: bool) -> bool:
        """A small number occurs on a line of the source that shows a word beside it in the statement (its first
        four letters: "8 tests" by "Tests  8 passed"), so a "9" of a file location does not hold "9 tests"."""
        text = self._source(trusted_only, False)
        stems = [w[:4] for w in near]
        for m in re.finditer(rf"(?<![0-9.]){number}(?![0-9])", text):
            if not stems:
                return True
            line = text[text.rfind("\n", 0, m.start()) + 1 : (text.find("\n", m.end()) + 1 or len(text) + 1) - 1]
            if any(s in line for s in stems):
                return True
        return False

    def holds(self, statement: str, *, directive: bool = False) -> bool:
        """A capable model's statement is kept when its quoted spans and its names (paths, numbers, code names,
        proper names: ``statement_names``) occur in the source, whatever its other words; ordinary prose and
        function words need not occur. A statement whose own words (its quotes are data: an error's "must be
        used within" is no order) give an order (``_ORDER``) must hold by the trusted texts alone, with at least
        ``INSTRUCTION_SUPPORT`` of its content words there: tool output may support a fact, never an order.
        ``directive``: the statement says what to do next (a remaining item, the next step), an order whatever
        its words, held to the same (a directive in a script without content words to weigh stands on its names).
        A name the source writes otherwise still holds: a qualified name by its pieces (``_pieces_hold``), names a
        slash apart each on its own (``_piece_holds``), a Windows path with either separator, a glob by its pieces.
        A statement whose own words loop is never kept."""
        spans, rest = quoted_spans(statement)
        # a loop of its own words: 6 of them repeated (parallel clauses of ordinary prose repeat 4: "a token that
        # expires in 15m and a refresh token that expires in 7d")
        if not statement.strip() or repetitive(rest, 6, skip="§"):
            return False
        order = gives_an_order(rest)
        trusted = order or directive
        if not all(self._quote_holds(s, trusted) for s in spans):
            return False
        counted = counted_numbers(rest)
        names = statement_names(rest)
        # as statement_names gives them: a call's "()" left out
        qualified = {q.lower().removesuffix("()") for q in _DOTTED.findall(rest) if _qualified(q)}
        for name in names:
            held = (
                self._piece_holds(name, counted, trusted)
                or (name in qualified and self._pieces_hold(name, trusted))
                or (
                    _LISTED.fullmatch(name) is not None
                    and all(self._piece_holds(n, counted, trusted) for n in name.split("/"))
                )
            )
            if not held:
                return False
        if not trusted or (directive and not order and (names or spans)):
            return True  # what to do next, anchored by names the agent or the people wrote
        if not content_words(rest):
            return not order
        return self.support(rest, trusted_only=True) >= INSTRUCTION_SUPPORT

    def grounded(self, claim: str) -> bool:
        """Supported word for word, concrete (two content words or more) and not a loop of the small model; an
        instruction only by the trusted (non-tool-output) texts."""
        if len(content_words(claim)) < 2 or repetitive(claim):
            return False
        return self.support(claim, trusted_only=instruction_like(claim)) >= 1.0


def repetitive(text: str, n: int = 4, skip: str | None = None) -> bool:
    """A repeated run of ``n`` words: the signature of a small model looping (runs holding ``skip`` aside: the mark
    of a quoted span, which a list of them repeats)."""
    words = text.lower().split()
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    grams = [g for g in grams if skip is None or skip not in g]
    return len(grams) != len(set(grams))


# -- a capable model's statements (the written-state mode): judged by the names they hold, not by their wording ----

# Spans the brief asks to be exact: `backticked`, "quoted" (and the typographic and CJK quotes).
_QUOTED = re.compile(r"`([^`\n]+)`|\"([^\"\n]+)\"|“([^”\n]+)”|「([^」\n]+)」|『([^』\n]+)』|«([^»\n]+)»")
_ELLIPSIS = re.compile(r"\.\.\.|…")
_GLOB = re.compile(r"[\w./-]*\*[\w.*/-]*")  # a file pattern, no spaces: `docs/*.md`, `tmp-*-cwd`
_LISTED = re.compile(r"[^/.~\s]+(?:/[^/.~\s]+)+")  # words or numbers a slash apart, no path: "list/tuple/range"
_DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?(?![\w(])")
_NAME_TOKEN = re.compile(r"[A-Za-z0-9_$@#~./-][A-Za-z0-9_./:@#%+~$-]*(?:\(\))?")
_CLAUSE_OPENERS = frozenset(".!?:;([{\"'“‘«*•>-–—|\n")
_ABBREVIATION = re.compile(r"(?:[a-z]\.)+[a-z]?")  # e.g, i.e: not a dotted name
_ALTERNATIVES = re.compile(r"[a-z]+/[a-z]+")  # and/or, read/write: words, not a path
_CAMEL = re.compile(r"[a-z][A-Z]")
_ACRONYM = re.compile(r"[A-Z][A-Z0-9]+")
_WRITTEN_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*")
# The words of an order, as ``_INSTRUCTION`` without "only" and "instead", which a capable model's account of what
# happened uses all the time ("used only the installed packages", "ran plain `ipconfig` instead"); "never" and
# "always" after a form of "be" or "have" tell what was ("was never set"), not what to do.
_ORDER = re.compile(
    r"\b(?:must|never|always|do not|don't|should|shall|required?|important|ignore|forbidden|not allowed|make sure|"
    r"you (?:need|have) to)\b",
    re.I,
)
_WAS = re.compile(r"\b(?:is|are|was|were|be|been|has|have|had)\s+(?:never|always)\b", re.I)


def gives_an_order(text: str) -> bool:
    """A statement's own words give an order (``_ORDER``)."""
    return _ORDER.search(_WAS.sub(" ", text)) is not None


INSTRUCTION_SUPPORT = 0.5  # of an instruction's content words, in the trusted texts (see ``SourceIndex.holds``)


def quoted_spans(statement: str) -> tuple[list[str], str]:
    """(the quoted spans, the statement with each replaced by a mark that is no word)."""
    spans = [next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(statement)]
    # a mark glued to a hyphen after it stays glued: "`sorted`-based" is no flag "-based"
    rest = _QUOTED.sub(lambda m: " §" if statement[m.end() : m.end() + 1] == "-" else " § ", statement)
    return [s.strip() for s in spans if s.strip()], rest


def _token_names(token: str, clause_start: bool) -> list[str]:
    """The names in one token: a path or dotted name, a call ``f()``, a flag, anything with a digit or an
    underscore, camelCase, an acronym, or a capitalised word inside a clause; lower-cased."""
    code = token.endswith("()")
    t = (token[:-2] if code else token).strip(".,;:!?'").rstrip("/")
    if not t or not any(ch.isalnum() for ch in t):
        return []
    if t.startswith("-") and t.lstrip("-")[:1].isalpha():
        return [t.lower()]  # a command-line flag
    t = t.strip("-")
    lower = t.lower()
    if code or "_" in t or "::" in t or t[0] in "$@#~":
        return [lower]
    if "/" in t and not _ALTERNATIVES.fullmatch(lower):
        return [lower]
    if "." in t and not _ABBREVIATION.fullmatch(lower):
        return [lower]
    if "-" in t or "/" in t:
        return [n for k, p in enumerate(re.split(r"[-/]", t)) for n in _token_names(p, clause_start and k == 0)]
    if any(ch.isdigit() for ch in t) or _CAMEL.search(t) or _ACRONYM.fullmatch(t):
        return [lower]
    if len(t) > 1 and t[0].isupper() and t[1:].islower() and not clause_start:
        return [lower]
    return []


def statement_names(text: str) -> list[str]:
    """The names a statement holds outside its quoted spans (``_token_names``). A hyphen glued to what comes
    before (a quote's mark: "`sorted`-based") starts no flag; a tilde before a number says "about" ("~92/day")."""
    out: list[str] = []
    for m in _NAME_TOKEN.finditer(text):
        token, before = m.group(), text[: m.start()].rstrip()
        if token.startswith("-") and m.start() and not text[m.start() - 1].isspace():
            token = token.lstrip("-")
        elif token.startswith("~") and token[1:2].isdigit():
            token = token[1:]
        out += _token_names(token, not before or before[-1] in _CLAUSE_OPENERS)
    return out


def _qualified(name: str) -> bool:
    """A dotted code name with a class, a constant or a private member in it (``Response.json``,
    ``typing.Sequence``, ``pyvista._vtk``), which a source writes apart; a lower-case dotted name (a file
    ``grid.py``, ``np.asarray``) must occur as it is."""
    if not _DOTTED.fullmatch(name):
        return False
    return any(p[:1].isupper() or p.startswith("_") for p in name.removesuffix("()").split("."))


def _slashed(text: str) -> str:
    return text.replace("\\", "/")


def _squeezed(text: str) -> str:
    return "".join(text.split()).lower()


def _collapsed(text: str) -> str:
    return " ".join(text.split()).lower()


_COUNTED = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.,%/:-]*")
_FUNCTION_WORDS = frozenset("the and all only about after before than then are was were with from for its".split())
_LOCATION_WORDS = frozenset("line lines col column row".split())  # "line 183" is shown as "183:" by grep and tracebacks


def counted_numbers(text: str) -> dict[str, list[str]]:
    """The small whole numbers of a statement (under 1000: they occur somewhere in any long source) with the words
    beside them (the two nearest content words before and after), one of which the source must show on the
    number's line. A number beside no word (in a script without spaces) or beside "line" is looked up alone."""
    tokens = [t.rstrip(".,:%") for t in _COUNTED.findall(text)]  # "15m" is a name, not the number 15
    out: dict[str, list[str]] = {}
    for k, token in enumerate(tokens):
        parts = token.split("/")  # "8/8 tests": each of them
        numbers = [n for n in parts if n.isdigit() and int(n) < 1000]
        if not numbers or not all(n.isdigit() for n in parts):
            continue
        near = []
        for side in (tokens[k - 1 :: -1] if k else [], tokens[k + 1 :]):
            words = [w.lower() for w in side if w.isalpha() and len(w) >= 3]
            near += [w for w in words if w not in _FUNCTION_WORDS][:2]
        if any(w in _LOCATION_WORDS for w in near):
            near = []
        for number in numbers:
            out.setdefault(number, []).extend(near)
    return out


class GroundingReport(BaseModel):
    """How many model-written items were checked and kept; ``dropped`` lists the ones without support."""

    checked: int = 0
    kept: int = 0
    dropped: list[str] = []

    @property
    def groundedness(self) -> float:
        return 1.0 if self.checked == 0 else self.kept / self.checked


def keep_grounded(
    items: Iterable[str], index: SourceIndex, report: GroundingReport, holds: Callable[[str], bool] | None = None
) -> list[str]:
    """The items that hold in the source (``holds``; default: the small model's rule, ``SourceIndex.grounded``); the
    others are reported dropped."""
    check = index.grounded if holds is None else holds
    kept = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        report.checked += 1
        if check(item):
            report.kept += 1
            kept.append(item)
        else:
            report.dropped.append(item)
    return kept


def grounded_sentences(text: str, index: SourceIndex, report: GroundingReport, max_chars: int) -> str:
    """Keep the supported sentences; a last sentence cut off by the length bound is not a sentence."""
    sentences = _SENTENCE.split(text.strip())
    if len(text) >= max_chars and sentences and not sentences[-1].endswith((".", "!", "?")):
        sentences = sentences[:-1]
    return " ".join(keep_grounded(sentences, index, report))


def keep_written(
    items: Iterable[str], index: SourceIndex, report: GroundingReport, *, directive: bool = False
) -> list[str]:
    """The items of a capable model's state that hold (``SourceIndex.holds``); the others reported dropped."""
    return keep_grounded(items, index, report, lambda item: index.holds(item, directive=directive))


def written_split(text: str) -> list[str]:
    """The sentences of a written text (a sentence in a CJK script ends with its own stop), never split inside a
    quoted span (`ssh ... "x"` holds a full stop)."""
    text = text.strip()
    inside = [m.span() for m in _QUOTED.finditer(text)]
    out, start = [], 0
    for m in _WRITTEN_SENTENCE.finditer(text):
        if not any(a < m.start() < b for a, b in inside):
            out.append(text[start : m.start()])
            start = m.end()
    return [s for s in [*out, text[start:]] if s.strip()]


def written_sentences(text: str, index: SourceIndex, report: GroundingReport, *, directive: bool = False) -> str:
    """The sentences of a written text that hold, in order."""
    return join_sentences(keep_written(written_split(text), index, report, directive=directive))


def join_sentences(sentences: Iterable[str]) -> str:
    """Sentences of ``written_split`` as one text again (a CJK sentence's stop needs no space after it)."""
    return "".join(s if s.endswith(("。", "！", "？")) else s + " " for s in sentences).strip()
