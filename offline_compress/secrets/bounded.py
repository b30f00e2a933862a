"""detect-secrets' regexes with every unbounded repetition bounded, so that a scan is linear in the text.

Its plugins write ``+``, ``*`` and ``{m,}``. Started at each of 10,000 ``eyJ`` in one 30 kB token, its JWT regex
``eyJ[A-Za-z0-9-_=]+\\.`` scans to the end of the token from every start and fails: quadratic. With every
repetition bounded at ``REPEAT_CAP``, a start scans at most a few times ``REPEAT_CAP`` characters, so a pass
costs at most a constant times the text. Secrets are shorter than the cap (a find is widened to its whole
token afterwards, ``detectors._widen``), so what the plugins find on real text does not change.

The rewrite is textual and knows the regex syntax it must not touch: escapes, character classes (a ``*`` in
``[*+]`` is a literal), group openers (``(?:``, ``(?P<name>``, ``(?#...)``), lazy and possessive suffixes
(``+?``, ``*+``), and comments of verbose patterns. ``tests/test_redaction_speed.py`` parses every rewritten
pattern and checks that no repetition is left unbounded.
"""

from __future__ import annotations

import re
import warnings

REPEAT_CAP = 256  # longer than any credential a plugin's regex describes (PyPI tokens: ~180 characters)

# Items copied as they are: an escape, a character class (a ']' first, or after '^', is a literal), a comment, a
# group opener (its '?' is no quantifier). Its alternatives start differently and never overlap: it is linear.
_VERBATIM = re.compile(r"\\.?|\[\^?\]?(?:\\.|[^\]\\])*\]?|\(\?#[^)]*\)?|\(\?", re.S)
_VERBOSE_COMMENT = re.compile(r"#[^\n]*")
_COUNT = re.compile(r"\{(\d*)(,?)(\d*)\}")  # {m}, {m,n}, {,n}; {m,} and {,} have a lower bound only


def bound_pattern(pattern: str, cap: int = REPEAT_CAP, *, verbose: bool = False) -> str:
    """``pattern`` with ``*`` as ``{0,cap}``, ``+`` as ``{1,cap}`` and ``{m,}`` as ``{m,max(m,cap)}``."""
    out: list[str] = []
    i = 0
    after_repeat = False  # the last item was a quantifier: a '?' or '+' now makes it lazy or possessive
    while i < len(pattern):
        ch, end, quantifier = pattern[i], i + 1, False
        item = ch
        if after_repeat and ch in "?+":
            pass  # copied: it makes the quantifier before it lazy or possessive
        elif m := _VERBATIM.match(pattern, i) or (_VERBOSE_COMMENT.match(pattern, i) if verbose else None):
            item, end = m.group(), m.end()
        elif ch in "*+":
            item, quantifier = f"{{{int(ch == '+')},{cap}}}", True
        elif ch == "?":
            quantifier = True
        elif m := _COUNT.match(pattern, i):
            low, comma, high = m.groups()
            item = f"{{{int(low or 0)},{max(int(low or 0), cap)}}}" if comma and not high else m.group()
            end, quantifier = m.end(), True
        out.append(item)
        i, after_repeat = end, quantifier
    return "".join(out)


def bounded(rx: re.Pattern[str], cap: int = REPEAT_CAP) -> re.Pattern[str]:
    """``rx`` recompiled with every repetition bounded (same flags). Should a newer detect-secrets write a
    pattern this rewrite cannot handle, the pattern is kept as it is, with a warning naming it."""
    rewritten = bound_pattern(rx.pattern, cap, verbose=bool(rx.flags & re.VERBOSE))
    try:
        return re.compile(rewritten, rx.flags)
    except re.error as err:
        warnings.warn(f"cannot bound the repetitions of {rx.pattern!r} ({err}); it is used as it is", stacklevel=2)
        return rx
