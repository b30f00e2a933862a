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

_OPEN_COUNT = re.compile(r"\{(\d*),\}")  # {m,} (and {,}): a lower bound only
_COUNT = re.compile(r"\{\d*(?:,\d*)?\}")  # {m}, {m,n}, {,n}: already bounded


def bound_pattern(pattern: str, cap: int = REPEAT_CAP, *, verbose: bool = False) -> str:
    """``pattern`` with ``*`` as ``{0,cap}``, ``+`` as ``{1,cap}`` and ``{m,}`` as ``{m,max(m,cap)}``."""
    out: list[str] = []
    i, n = 0, len(pattern)
    after_repeat = False  # the last item was a quantifier: a '?' or '+' now makes it lazy or possessive
    while i < n:
        ch = pattern[i]
        if after_repeat and ch in "?+":
            out.append(ch)
            i += 1
            after_repeat = False
            continue
        after_repeat = False
        if ch == "\\":
            out.append(pattern[i : i + 2])
            i += 2
        elif ch == "[":
            end = _class_end(pattern, i)
            out.append(pattern[i:end])
            i = end
        elif pattern.startswith("(?#", i):
            end = pattern.find(")", i)
            end = n if end < 0 else end + 1
            out.append(pattern[i:end])
            i = end
        elif ch == "(" and pattern.startswith("(?", i):
            out.append("(?")  # the '?' opens a group form, it is no quantifier
            i += 2
        elif verbose and ch == "#":
            end = pattern.find("\n", i)
            end = n if end < 0 else end
            out.append(pattern[i:end])
            i = end
        elif ch in "*+":
            out.append(f"{{{0 if ch == '*' else 1},{cap}}}")
            i += 1
            after_repeat = True
        elif ch == "?":
            out.append(ch)
            i += 1
            after_repeat = True
        elif ch == "{" and (m := _OPEN_COUNT.match(pattern, i)):
            low = int(m.group(1) or 0)
            out.append(f"{{{low},{max(low, cap)}}}")
            i = m.end()
            after_repeat = True
        elif ch == "{" and (m := _COUNT.match(pattern, i)):
            out.append(m.group(0))
            i = m.end()
            after_repeat = True
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _class_end(pattern: str, start: int) -> int:
    """The index just past the character class opening at ``start`` (a ``]`` first, or after ``^``, is a
    literal; escapes are skipped)."""
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] == "]":
            return i + 1
        i += 1
    return len(pattern)


def bounded(rx: re.Pattern[str], cap: int = REPEAT_CAP) -> re.Pattern[str]:
    """``rx`` recompiled with every repetition bounded (same flags). Should a newer detect-secrets write a
    pattern this rewrite cannot handle, the pattern is kept as it is, with a warning naming it."""
    rewritten = bound_pattern(rx.pattern, cap, verbose=bool(rx.flags & re.VERBOSE))
    try:
        return re.compile(rewritten, rx.flags)
    except re.error as err:
        warnings.warn(f"cannot bound the repetitions of {rx.pattern!r} ({err}); it is used as it is", stacklevel=2)
        return rx
