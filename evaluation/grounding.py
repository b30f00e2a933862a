"""The evaluator's own grounding check: is every part of a model-written item found in the text it summarises?

Independent of ``offline_compress.summary.ground`` (the compressor's filter, which is what is under test) and stricter:

- every identifier (a word with ``_``, inner capitals or a dot between letters), path (a word with ``/``),
  number (a word with a digit) and quoted string ('…', "…", `…`) must occur verbatim, case-sensitive, in the
  source text;
- every other word of 3 or more letters must occur in the source as a whole word (case-insensitive; the
  "parser" of "parser_loop" is not one), unless it is one of a few dozen function words (``STOP_WORDS``).

The compressor's filter normalises words, ignores words under 4 letters and 136 common words ("fix", "run",
"tests", …) and lets the parts of a path stand for the path; this check does none of that, so an item it passes
may fail here ("The parser drops the last token: fixed." fails unless some message says "fixed"). An item with
nothing to check (function words only) passes: it asserts nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Function words, and "agent": the draft's grammar forces every narrative to start with "The agent".
STOP_WORDS = frozenset(
    """the and but not nor for with from into onto over under about after before between then than that this
    these those there here which who whom whose what when where why how are was were been being has have had
    does did its they them their his her she you your our all any each some can could will would should may
    might must shall also agent""".split()
)
_QUOTED = re.compile(r"""(?<!\w)(['"`])([^'"`\n]{1,300}?)\1(?!\w)""")
_EDGE = ".,;:!?()[]{}<>\"'`*"
# A word: letters between non-word characters ("parser_loop" and "ValueError2" hold no word "parser"/"value").
_WORD = re.compile(r"(?<![\w])[A-Za-z]+(?![\w])")
_IDENTIFIER = re.compile(r"_|[a-z][A-Z]|[A-Za-z]\.[A-Za-z]")


class SourceText:
    """The text a summary stands for (message texts and tool-call arguments), indexed once."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.text = "\n".join(texts)
        self.words = {w.lower() for w in _WORD.findall(self.text)}

    def missing(self, item: str) -> list[str]:
        """The parts of ``item`` the source does not contain (empty: grounded), in order of appearance."""
        out: list[str] = []
        for m in _QUOTED.finditer(item):
            if m.group(2) not in self.text:
                out.append(m.group(0))
        rest = _QUOTED.sub(" ", item)
        for raw in rest.split():
            token = raw.strip(_EDGE)
            if not token:
                continue
            if "/" in token or any(c.isdigit() for c in token) or _IDENTIFIER.search(token):
                if token not in self.text:
                    out.append(token)
                continue
            for word in _WORD.findall(token):
                if len(word) >= 3 and word.lower() not in STOP_WORDS and word.lower() not in self.words:
                    out.append(word)
        return list(dict.fromkeys(out))
