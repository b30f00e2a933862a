"""Redaction is linear in its input (issue 22: a 40 kB token after ``AKIA`` took 16 s, x4.3 per doubling).

Proved by structure and by counting work, never by timing (the MB/s are measured by ``python -m evaluation
reliability``): every regex the detectors run repeats a bounded number of times, except detect-secrets' two
entropy regexes, whose one repetition cannot run past the next place a match may start; each token pattern is
anchored; and on worst-case inputs twice as long, the work done per candidate (finds and their spans, widened
characters, heuristic checks and the characters they read) at most doubles.
"""

from __future__ import annotations

import random
import re
import string
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evaluation.bench_reliability import WORST_CASES
from offline_compress.secrets import detectors, line_view, patterns
from offline_compress.secrets.bounded import REPEAT_CAP, bound_pattern, bounded
from offline_compress.secrets.line_view import ScanText
from offline_compress.secrets.redact import find_secrets, redact

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    try:
        import re._constants as sre_constants  # type: ignore[import-not-found]
        import re._parser as sre_parse  # type: ignore[import-not-found]
    except ImportError:  # Python 3.10
        import sre_constants  # type: ignore[no-redef]
        import sre_parse  # type: ignore[no-redef]

FIXTURES = Path(__file__).parent / "fixtures"
_REPEATS = {sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, getattr(sre_constants, "POSSESSIVE_REPEAT", None)}


def _unbounded(items: Any) -> list[str]:
    """The unbounded repetitions in a parsed regex (``sre_parse`` tree), as text."""
    found: list[str] = []
    for op, av in items:
        if op in _REPEATS:
            low, high, sub = av
            if high == sre_constants.MAXREPEAT:
                found.append(f"{op} {sub}")
            found += _unbounded(sub)
        elif op == sre_constants.SUBPATTERN:
            found += _unbounded(av[-1])
        elif op == sre_constants.BRANCH:
            for branch in av[1]:
                found += _unbounded(branch)
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            found += _unbounded(av[1])
        elif op == sre_constants.GROUPREF_EXISTS:
            found += _unbounded(av[1]) + (_unbounded(av[2]) if av[2] else [])
        elif op == getattr(sre_constants, "ATOMIC_GROUP", None):
            found += _unbounded(av)
    return found


def _patterns_in(value: Any) -> Iterator[re.Pattern[str]]:
    if isinstance(value, re.Pattern):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _patterns_in(item)


def _regexes_run() -> dict[str, re.Pattern[str]]:
    """Every regex the redaction runs: module constants of secrets.* and the plugins' regexes as used."""
    found: dict[str, re.Pattern[str]] = {}
    for module in (patterns, detectors, line_view):
        for name, value in vars(module).items():
            for i, rx in enumerate(_patterns_in(value)):
                found[f"{module.__name__}.{name}[{i}]"] = rx
    for stype, regexes in detectors._vendor_regexes():
        for i, rx in enumerate(regexes):
            found[f"{stype}[{i}]"] = rx
    words, lower_words, keyword = detectors._keyword_regexes()
    found["keyword words"], found["keyword words, lower case"] = words, lower_words
    for i, (rx, _) in enumerate(keyword):
        found[f"keyword[{i}]"] = rx
    return found


def test_every_regex_run_repeats_a_bounded_number_of_times() -> None:
    regexes = _regexes_run()
    assert len(regexes) > 60  # the walk found them (ours, the plugins', the keyword plugin's)
    bad = {name: _unbounded(sre_parse.parse(rx.pattern, rx.flags)) for name, rx in regexes.items()}
    assert {name: b for name, b in bad.items() if b} == {}


def test_the_entropy_regexes_are_linear_by_construction() -> None:
    """detect-secrets' ``(['"])([chars]+)(\\1)``: a run of characters that excludes the quotes, the only places
    a match starts, so no two starts scan the same characters (kept unbounded: a bound would pair a long
    string's closing quote with the next string)."""
    plugins = detectors._plugins()
    for stype in ("Base64 High Entropy String", "Hex High Entropy String"):
        rx = plugins[stype].regex
        (op1, quote), (op2, run), (op3, ref) = sre_parse.parse(rx.pattern, rx.flags)
        assert op1 == op2 == op3 == sre_constants.SUBPATTERN
        (in_op, quotes), *_ = quote[-1]
        quote_chars = {chr(v) for kind, v in quotes if kind == sre_constants.LITERAL}
        assert in_op == sre_constants.IN and quote_chars == {"'", '"'}
        ((repeat, (low, high, body)),) = run[-1]
        assert repeat == sre_constants.MAX_REPEAT and low == 1
        ((body_op, members),) = body
        assert body_op == sre_constants.IN and all(kind == sre_constants.LITERAL for kind, _ in members)
        assert not quote_chars & {chr(v) for _, v in members}
        assert list(ref[-1]) == [(sre_constants.GROUPREF, 1)]


def _first_items(items: Any) -> Iterator[tuple[Any, Any]]:
    op, av = items[0]
    yield op, av
    if op == sre_constants.SUBPATTERN:
        yield from _first_items(av[-1])


def test_token_patterns_are_anchored() -> None:
    """A token pattern starts with a lookbehind or a word boundary (a start inside a run of key characters
    fails at its first step), or with a literal URL."""
    for kind, _, rx, _ in patterns._TOKENS:
        firsts = list(_first_items(sre_parse.parse(rx.pattern, rx.flags)))
        anchored = any(
            (op == sre_constants.ASSERT_NOT and av[0] == -1) or (op == sre_constants.AT) for op, av in firsts
        )
        assert anchored or rx.pattern.startswith("https://"), kind


@pytest.mark.parametrize(
    "pattern,expected",
    [
        (r"a+b*c", f"a{{1,{REPEAT_CAP}}}b{{0,{REPEAT_CAP}}}c"),
        (r"a+?b*?", f"a{{1,{REPEAT_CAP}}}?b{{0,{REPEAT_CAP}}}?"),
        (r"a*+b++", f"a{{0,{REPEAT_CAP}}}+b{{1,{REPEAT_CAP}}}+"),
        (r"x{3,}y{,}z{2}w{1,5}", f"x{{3,{REPEAT_CAP}}}y{{0,{REPEAT_CAP}}}z{{2}}w{{1,5}}"),
        (r"x{300,}", "x{300,300}"),
        (r"[*+?]\*\+[^]*]", r"[*+?]\*\+[^]*]"),
        (
            r"(?:a|b)+(?P<n>c)?(?=d*)(?<!e)(?#f+)",
            f"(?:a|b){{1,{REPEAT_CAP}}}(?P<n>c)?(?=d{{0,{REPEAT_CAP}}})(?<!e)(?#f+)",
        ),
        (r"[\]a]+\\+", f"[\\]a]{{1,{REPEAT_CAP}}}\\\\{{1,{REPEAT_CAP}}}"),
    ],
)
def test_bound_pattern_rewrites_only_repetitions(pattern: str, expected: str) -> None:
    assert bound_pattern(pattern) == expected
    re.compile(expected)


def test_bound_pattern_keeps_verbose_comments() -> None:
    rx = re.compile("a+  # one or more a's\n b*", re.VERBOSE)
    out = bounded(rx)
    assert out.flags & re.VERBOSE and _unbounded(sre_parse.parse(out.pattern, out.flags)) == []
    assert out.fullmatch("aab")


def _real_texts() -> list[str]:
    texts = []
    for path in sorted(FIXTURES.rglob("*.json")):
        if "injection" not in path.parts:
            texts += path.read_text(encoding="utf-8", errors="replace").splitlines()
    return texts


def test_bounded_plugin_regexes_find_what_detect_secrets_finds() -> None:
    """On every plugin's own sample and on the fixtures' lines, the bounded regexes match where and what the
    originals match (secrets are shorter than the bound)."""
    from test_redact import _plugin_samples

    texts = list(_plugin_samples().values()) + _real_texts()
    plugins = detectors._plugins()
    for stype, regexes in detectors._vendor_regexes():
        for original, rx in zip(plugins[stype].denylist, regexes):
            for text in texts:
                assert [m.span() for m in rx.finditer(text)] == [m.span() for m in original.finditer(text)], stype
    from detect_secrets.plugins.keyword import QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP

    keyword_texts = [t for t in texts if any(n in t.lower() for n in patterns.CREDENTIAL_NEEDLES)]
    for original, (rx, _) in zip(QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP, detectors._keyword_regexes()[2]):
        for text in keyword_texts:
            assert [m.span() for m in rx.finditer(text)] == [m.span() for m in original.finditer(text)]


def test_word_first_keyword_matches_are_those_of_finditer() -> None:
    """``_from_words`` (tried once per run of word characters) finds what ``finditer`` finds on real lines and
    on lines made to hold credential words next to each other."""
    words, lower_words, regexes = detectors._keyword_regexes()
    texts = [t for t in _real_texts() if any(n in t.lower() for n in patterns.CREDENTIAL_NEEDLES)]
    texts += [
        "db_password = 'x9'; api_key='a1b2c3'",
        "xpassword = \"hunter22\" and secret_key: 'q8Zr2LmN'",
        "SECRETPASSWORD = 'abc123def'",
        "password_secret_api_key = 'nested9'",
        "contraseña = 'clave123'",
    ]
    for rx, _ in regexes:
        if not rx.pattern.startswith(f"({words.pattern})"):
            continue
        for text in texts:
            lowered = line_view.lower_same_length(text)
            ours = [m.span() for m in detectors._from_words(rx, lower_words, text, lowered)]
            assert ours == [m.span() for m in rx.finditer(text)], text


def test_indirect_reference_is_detect_secrets_heuristic() -> None:
    from detect_secrets.filters.heuristic import is_indirect_reference

    rng = random.Random(22)
    alphabet = "ab_.-=!:([)] \t\vx1"
    lines = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(20000)]
    lines += ["secret = get_secret_key()", "api_key = request.headers['apikey']", "x := f(y)", "a == b", "k = v)"]
    lines += ["s = " + "a" * 1000 + "()", "s = f()" + "a" * 995]
    for line in lines:
        assert detectors._indirect_reference(line) == is_indirect_reference(line), repr(line)


class _Work:
    """What the detectors do per candidate, counted: finds and the characters they span, characters widened,
    heuristic and literal checks and the characters they read, entropy computations and their lengths."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts: Counter[str] = Counter()
        plugins = detectors._plugins()

        def counting(name: str, fn: Any, size: Any) -> Any:
            def wrapped(*args: Any, **kwargs: Any) -> Any:
                out = fn(*args, **kwargs)
                self.counts[name] += 1
                self.counts[name + " characters"] += size(args, out)
                return out

            return wrapped

        widen = detectors._Widener.__call__
        monkeypatch.setattr(detectors._Widener, "__call__", counting("widen", widen, lambda a, o: o[1] - o[0]))
        for module in (patterns, detectors):
            monkeypatch.setattr(module, "literal_secret", counting("literal", patterns.literal_secret, _len0))
        monkeypatch.setattr(
            detectors,
            "_filtered_by_detect_secrets",
            counting("heuristic", detectors._filtered_by_detect_secrets, _len0),
        )
        line_of = line_view.LineView.line_of
        monkeypatch.setattr(line_view.LineView, "line_of", counting("line read", line_of, lambda a, o: len(o)))
        first = line_view.LineView.first_match_end
        monkeypatch.setattr(line_view.LineView, "first_match_end", counting("line search", first, lambda a, o: 0))
        for stype in ("Base64 High Entropy String", "Hex High Entropy String"):
            plugin = plugins[stype]
            monkeypatch.setattr(
                plugin, "calculate_shannon_entropy", counting("entropy", plugin.calculate_shannon_entropy, _len0)
            )

    def of(self, text: str) -> Counter[str]:
        self.counts.clear()
        for finds in (patterns.find_pattern_secrets(ScanText(text)), detectors.find_detector_secrets(ScanText(text))):
            for _, (a, b) in finds:
                self.counts["finds"] += 1
                self.counts["find characters"] += b - a
        return Counter(self.counts)


def _len0(args: tuple[Any, ...], out: Any) -> int:
    return len(args[0])


@pytest.mark.parametrize("name", sorted(WORST_CASES))
def test_twice_the_input_at_most_twice_the_work(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    make = WORST_CASES[name]
    work = _Work(monkeypatch)
    small, large = work.of(make(20_000)), work.of(make(40_000))
    for key in small.keys() | large.keys():
        assert large[key] <= 2.2 * small[key] + 300, (key, small[key], large[key])


def test_the_reported_case_is_redacted_whole_and_in_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's 40 kB token of AWS key shapes: one token, redacted whole, each character widened over at most
    twice (the old code widened each of its 2,000 finds over all 40,000 characters)."""
    text = ("AK" + "IAIOSFODNN7EXAMPLE") * 2000
    work = _Work(monkeypatch).of(text)
    assert work["widen characters"] <= 2 * len(text)
    assert redact(text) == "[REDACTED:aws_access_key]"


def test_a_find_in_a_very_long_token_is_redacted_with_its_neighbourhood() -> None:
    """A run of key characters longer than ``WIDEN_CAP`` on each side of a find is data: the find and
    ``WIDEN_CAP`` characters each way are redacted, not necessarily the whole run."""
    rng = random.Random(5)
    body = "".join(rng.choices(string.ascii_lowercase, k=3 * detectors.WIDEN_CAP))
    key = "gh" + "p_" + "A1b2C3d4E5f6G7h8J9k0" + "0123456789abcdef"
    text = body + key + body
    (kind, (a, b)), *_ = find_secrets(text)
    assert kind == "github_token" and a <= text.index(key) and b >= text.index(key) + len(key)
    assert key not in redact(text)


def test_pem_headers_without_an_end_are_found_once_each() -> None:
    header = "-----BEGIN " + "PRIVATE KEY-----"
    text = (header + "\n") * 3000
    finds = list(patterns._pem_blocks(text))
    # each with the line break after it (a cut block's body runs to a blank line), as before
    assert len(finds) == 3000 and all(b - a == len(header) + 1 for _, (a, b) in finds)
