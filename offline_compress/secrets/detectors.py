"""detect-secrets (Yelp, Apache-2.0) plugins applied to the lines of a text, offline and fast.

detect-secrets scans files line by line through global settings, a filter pipeline and optionally a baseline
file, and some plugins can verify a find over the network. Here its plugin classes are used directly: no
settings, no baseline, and no plugin's ``verify`` is ever called (nothing leaves the machine).

* Vendor plugins: every regex detector it ships (AWS, Azure storage, GitLab, Stripe, Twilio, SendGrid, PyPI,
  npm, Discord, Telegram, Mailchimp, Square, Artifactory, IBM, Cloudant, SoftLayer, JWT, Slack, ...) except the
  public-IP one (an address is not a credential) and the private-key header (``secret_patterns`` takes the
  whole block). A find is widened to the whole token it sits in (detect-secrets cuts Stripe keys at 24
  characters and reports only the ``glpat`` prefix of a GitLab token).
* ``KeywordDetector`` (``password = "..."``, ``"api_key": "..."``, ...), its finds judged by detect-secrets'
  own heuristic filters (templated, ``$``-prefixed, indirect reference, sequential, UUID, id) and by
  ``secret_patterns.literal_secret`` (placeholders, code).
* ``Base64HighEntropyString`` (limit 4.5) on quoted strings of 20 to 256 characters that mix digits, upper
  and lower case, do not decode to text (base64 of ordinary text in test fixtures is not a key) and are not
  the value of an id (``"id": "call_..."``, ``tool_call_id``, ``"id": "chatcmpl-..."``). Longer strings are
  data (an encrypted reasoning blob, an image), not a credential.
* ``HexHighEntropyString`` (limit 3.0) only when the line names a credential and no digest: plain hex is a
  git SHA, a sha256 or an md5 far more often than a key.

Speed: every plugin looks only at lines that can hold what it finds: lines with a run of 20 or more key
characters that also hold the literal parts of the plugin's regexes (``_NEEDLES``; vendor and entropy
plugins), and lines with a credential word (keyword plugin), found with one C-level regex pass and
``str.find``, joined into a ``LineView`` that maps offsets back.

Linear time, whatever the text (issue 22: a 40 kB token of ``AKIA`` took 16 s): the plugins' regexes run with
their repetitions bounded (``bounded``); a find is widened to its token at most ``WIDEN_CAP`` characters each
way, with C-level regexes, and a find inside the last widened span is not widened again; the heuristics read
at most ``line_view.MAX_LINE + 1`` characters of a line; an entropy candidate is measured only when it is at
most ``MAX_ENTROPY_CHARS`` long. The two entropy regexes stay as detect-secrets writes them: a run of a class
that excludes the quote it starts after cannot overlap the next start, so they are linear already.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from .bounded import bounded
from .line_view import MAX_LINE, LineView, ScanText, Span, intersect, lines_with_needles, lower_same_length
from .patterns import CREDENTIAL_NEEDLES, Find, kind_of_word, literal_secret

# secret_type -> our kind, where that is not the type in snake case ("AWS Access Key": aws_access_key); plugins
# named in _SKIPPED are not used.
_KINDS = {
    "Artifactory Credentials": "artifactory_token",
    "Azure Storage Account access key": "azure_key",
    "Basic Auth Credentials": "url_credentials",
    "Discord Bot Token": "discord_token",
    "IBM COS HMAC Credentials": "ibm_cos_hmac_key",
    "JSON Web Token": "jwt",
    "Mailchimp Access Key": "mailchimp_key",
    "NPM tokens": "npm_token",
    "OpenAI Token": "openai_key",
    "SendGrid API Key": "sendgrid_key",
    "SoftLayer Credentials": "softlayer_key",
    "Stripe Access Key": "stripe_key",
    "Telegram Bot Token": "telegram_token",
    "Twilio API Key": "twilio_key",
}
_SKIPPED = {
    "Public IP (ipv4)",
    "Private Key",
    "Secret Keyword",
    "Base64 High Entropy String",
    "Hex High Entropy String",
}

# A plugin's regexes can only match on a line that holds every group's literal part (each group: any one
# needle; lower-case needles match in any case, others as written), read off the plugin's own regexes.
# Plugins not listed (a newer detect-secrets may add some) run on every line with a long token.
_NEEDLES: dict[str, tuple[tuple[str, ...], ...]] = {
    "AWS Access Key": (("A3T", "ABIA", "ACCA", "AKIA", "ASIA", "aws"),),
    "Artifactory Credentials": (("AKC", "AP"),),
    "Azure Storage Account access key": (("AccountKey=",),),
    "Basic Auth Credentials": (("://",),),
    "Cloudant Credentials": (("cl",), ("key", "pw", "pass", "token", "cloudant.com")),
    "GitHub Token": (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),),
    "GitLab Token": (tuple("glpat- gldt- glft- glsoat- glrt- GR1348941 glcbt- glimt- glptt- glagent- gloas-".split()),),
    "IBM COS HMAC Credentials": (("secret",), ("key",)),
    "IBM Cloud IAM Key": (("key", "pwd", "pass", "token"),),
    "JSON Web Token": (("eyJ",),),
    "Mailchimp Access Key": (("-us",),),
    "NPM tokens": (("_authToken",),),
    "OpenAI Token": (("T3BlbkFJ",),),
    "PyPI Token": (("pypi-",),),
    "SendGrid API Key": (("SG.",),),
    "Slack Token": (("xox", "hooks.slack.com"),),
    "SoftLayer Credentials": (("sl", "softlayer"),),
    "Square OAuth Secret": (("sq0csp-",),),
    "Stripe Access Key": (("k_live_",),),
    "Telegram Bot Token": ((":",),),
    "Twilio API Key": (("AC", "SK"),),
}
_ALL_NEEDLES = frozenset(n for groups in _NEEDLES.values() for group in groups for n in group)
_STOP_CHARS = frozenset(" \t\r\n'\"`,;<>(){}[]")
_CREDENTIAL_WORD = re.compile(r"(?i)key|token|secret|passw|pwd|auth|credential")
_DIGEST_WORD = re.compile(r"(?i)sha|hash|digest|checksum|commit|etag|md5|integrity|fingerprint|revision|nonce|uuid")
B64_LIMIT = 4.5
HEX_LIMIT = 3.0
MIN_ENTROPY_CHARS = 20
MAX_ENTROPY_CHARS = 256
WIDEN_CAP = 4096  # characters a find is widened by, each way (a longer run of key characters is data)
# The value of a key named id / *_id / *Id: `"id": "`, `tool_call_id='`, `requestId: "` just before it.
_ID_KEY_BEFORE = re.compile(
    r"(?:\b[Ii][Dd]|[a-z0-9]_id|[a-z0-9]Id|[a-z0-9]_ID)[\"']?[ \t]{0,40}[:=][ \t]{0,40}[\"']?\Z"
)
_TOKEN_RUN = re.compile(rf"[A-Za-z0-9_-]{{0,{WIDEN_CAP}}}")
_WORD_RUN = re.compile(rf"\w{{0,{WIDEN_CAP}}}")
# detect-secrets' heuristic.is_indirect_reference (``secret = get_secret_key()``, ``= headers['apikey']``) is
# ``([^\v=!:]*)\s*(:=?|[!=]{1,3})\s*([\w.-]+[\[\(][^\v]*[\]\)])``: 11 ms on a 1000-character line without an
# operator (every start scans to the end). The same question in linear time: an operator, a name and an opening
# bracket, then a closing bracket after it (before a vertical tab, which [^\v] stops at).
_INDIRECT_OPEN = re.compile(rf"(?::=?|[!=]{{1,3}})\s{{0,{MAX_LINE}}}[\w.-]{{1,{MAX_LINE}}}[\[(]")


@lru_cache(maxsize=1)
def _plugins() -> dict[str, Any]:
    """detect-secrets' plugin instances by secret type (imported on first use: it pulls in ``requests``)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    mapping: dict[str, Any] = get_mapping_from_secret_type_to_class()
    return {stype: cls() for stype, cls in sorted(mapping.items())}


@lru_cache(maxsize=1)
def _vendor_regexes() -> tuple[tuple[str, tuple[re.Pattern[str], ...]], ...]:
    """(secret type, its regexes with bounded repetitions) of every vendor plugin used."""
    return tuple(
        (stype, tuple(bounded(rx) for rx in plugin.denylist))
        for stype, plugin in _plugins().items()
        if stype not in _SKIPPED and hasattr(plugin, "denylist")
    )


@lru_cache(maxsize=1)
def _keyword_regexes() -> tuple[re.Pattern[str], re.Pattern[str], tuple[tuple[re.Pattern[str], int], ...]]:
    """detect-secrets' credential words as one regex (any case, and lower case only: on lowered text it runs
    20 times faster), and its quotes-required assignment regexes with the group that holds the value."""
    from detect_secrets.plugins.keyword import DENYLIST, QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP

    regexes = tuple((bounded(rx), group) for rx, group in QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items())
    words = "|".join(DENYLIST)
    return re.compile(words, re.I), re.compile(words), regexes


_NAME_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,40}[=:]")


class _Widener:
    """The whole token around a find: without a leading ``Name=`` that the regex included (Azure's
    ``AccountKey=``), cut at the first space or quote, then extended over key characters, at most
    ``WIDEN_CAP`` each way. Backwards runs on the reversed text, made on first use, so both ways are one
    C-level match."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._reversed: str | None = None

    def __call__(self, a: int, b: int) -> Span:
        text = self.text
        while a < b and text[a] in _STOP_CHARS:
            a += 1
        prefix = _NAME_PREFIX.match(text, a, b)
        if prefix and b - prefix.end() >= 8:
            a = prefix.end()
        b = next((i for i in range(a, b) if text[i] in _STOP_CHARS), b)  # b - a: a plugin match, bounded
        b = _TOKEN_RUN.match(text, b).end()  # type: ignore[union-attr]  # {0,N} always matches
        if self._reversed is None:
            self._reversed = text[::-1]
        back = len(text) - a
        a -= _TOKEN_RUN.match(self._reversed, back).end() - back  # type: ignore[union-attr]
        return a, b


def _secret_span(m: re.Match[str]) -> Span:
    """The last group that matched and is long enough to be the secret, else the whole match (detect-secrets'
    regexes capture either the secret or, for some, only a prefix)."""
    for g in range(m.re.groups, 0, -1):
        a, b = m.span(g)
        if a >= 0 and b - a >= 8:
            return a, b
    return m.span()


def _vendor(text: str, view: LineView) -> Iterator[Find]:
    """Vendor plugins over ``view`` (the lines with a long token), each narrowed to the lines that hold its
    needles (a view of the view). A find that lies inside the span the last find of the same regex was widened
    to widens to a part of that span: it is not widened again (a 40 kB token holds 2,000 ``AKIA`` matches)."""
    lowered = lower_same_length(view.text)
    present = {n for n in _ALL_NEEDLES if n in (lowered if n == n.lower() else view.text)}
    widen = _Widener(text)
    for stype, regexes in _vendor_regexes():
        kind = _KINDS.get(stype) or re.sub(r"[^a-z0-9]+", "_", stype.lower()).strip("_")
        groups = _NEEDLES.get(stype, ())
        if not all(present.intersection(group) for group in groups):
            continue
        narrow = view
        if groups:
            narrow = LineView(
                view.text, intersect(*(lines_with_needles(view.text, lowered, group) for group in groups))
            )
        for rx in regexes:
            last = (-1, -1)
            for m in rx.finditer(narrow.text):
                a, b = view.to_source(narrow.to_source(_secret_span(m)))
                if last[0] <= a and b <= last[1]:
                    continue
                last = a, b = widen(a, b)
                if b - a >= 8:
                    yield kind, (a, b)


def _indirect_reference(line: str) -> bool:
    """``heuristic.is_indirect_reference(line)``, in linear time (``_INDIRECT_OPEN``)."""
    if len(line) > MAX_LINE:
        return False  # as detect-secrets
    rests = (line[m.end() :].partition("\v")[0] for m in _INDIRECT_OPEN.finditer(line))  # [^\v]* stops at a \v
    return any("]" in rest or ")" in rest for rest in rests)


def _before_on_line(view: LineView, pos: int, pattern: re.Pattern[str]) -> bool:
    """Whether ``pattern`` matches on the line of view position ``pos``, wholly before it."""
    end = view.first_match_end(pos, pattern)
    return end is not None and end <= view.column(pos)


def _filtered_by_detect_secrets(secret: str, view: LineView, pos: int) -> bool:
    """detect-secrets' heuristic filters of ``secret`` (at most ``bounded.REPEAT_CAP`` characters: a regex
    group or an entropy candidate) found at view position ``pos``. Its line-reading ones at a bounded cost per
    find: ``is_likely_id_string`` (an id word such as ``_id`` before the secret on its line) as one search per
    line, ``is_indirect_reference`` on at most ``MAX_LINE`` characters (it skips longer lines)."""
    from detect_secrets.filters import heuristic as h

    return (
        h.is_templated_secret(secret)
        or h.is_prefixed_with_dollar_sign(secret)
        or h.is_sequential_string(secret)
        or h.is_potential_uuid(secret)
        or h.is_not_alphanumeric_string(secret)
        or _before_on_line(view, pos, h._get_id_detector_regex())
        or _indirect_reference(view.line_of(pos))
    )


def _from_words(rx: re.Pattern[str], words: re.Pattern[str], text: str, lowered: str) -> Iterator[re.Match[str]]:
    """``rx.finditer(text)`` for a regex that begins with a credential word, tried only where a word begins,
    and once per run of word characters: a later start in the run would fail too, since the ``\\w*`` after
    the word at the first start covers it. ``"password" * 5000`` then costs one attempt, not 5,000 attempts
    of ``bounded.REPEAT_CAP`` steps each."""
    pos = 0  # no match starts before the end of the last match or of the run whose first start failed
    for w in words.finditer(lowered):
        if w.start() < pos:
            continue
        m = rx.match(text, w.start())
        if m is not None:
            yield m
            pos = m.end()
        else:
            pos = _WORD_RUN.match(text, w.start()).end()  # type: ignore[union-attr]  # {0,N} always matches


def _keyword(view: LineView) -> Iterator[Find]:
    words, lower_words, regexes = _keyword_regexes()
    lowered = lower_same_length(view.text)
    for rx, group in regexes:
        word_first = rx.pattern.startswith(f"({words.pattern})")
        matches = _from_words(rx, lower_words, view.text, lowered) if word_first else rx.finditer(view.text)
        for m in matches:
            secret = m.group(group)
            word = words.search(m.group(0))
            if "\n" in secret or word is None:
                continue  # the joined lines are not neighbours: a match across them is not one
            pos = m.start(group)
            if _filtered_by_detect_secrets(secret, view, pos) or not literal_secret(secret, True, word=word.group(0)):
                continue
            yield kind_of_word(word.group(0)), view.to_source(m.span(group))


def _decodes_to_text(value: str) -> bool:
    """base64 (or base64url) of printable text: an encoded sentence or file, not random key material."""
    padded = value + "=" * (-len(value) % 4)
    try:
        raw = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return bool(decoded) and all(ch.isprintable() or ch in "\n\r\t" for ch in decoded)


def _entropy(view: LineView) -> Iterator[Find]:
    b64, hexp = _plugins()["Base64 High Entropy String"], _plugins()["Hex High Entropy String"]
    for m in b64.regex.finditer(view.text):
        value = m.group(2)
        if (
            MIN_ENTROPY_CHARS <= len(value) <= MAX_ENTROPY_CHARS
            and any(c.isdigit() for c in value)
            and any(c.isupper() for c in value)
            and any(c.islower() for c in value)
            and b64.calculate_shannon_entropy(value) > B64_LIMIT
            and not _ID_KEY_BEFORE.search(view.text, max(0, m.start() - 40), m.start() + 1)
            and not _filtered_by_detect_secrets(value, view, m.start(2))
            and not _decodes_to_text(value)
        ):
            yield "high_entropy_string", view.to_source(m.span(2))
    for m in hexp.regex.finditer(view.text):
        value = m.group(2)
        if not 16 <= len(value) <= MAX_ENTROPY_CHARS or hexp.calculate_shannon_entropy(value) <= HEX_LIMIT:
            continue
        pos = m.start(2)
        if _before_on_line(view, pos, _CREDENTIAL_WORD) and not _before_on_line(view, pos, _DIGEST_WORD):
            yield "high_entropy_hex", view.to_source(m.span(2))


def find_detector_secrets(scan: ScanText) -> Iterator[Find]:
    """(kind, span) of every find of detect-secrets' plugins in ``scan.text``; unordered, possibly
    overlapping."""
    view = scan.token_view
    if view.text:
        yield from _vendor(scan.text, view)
        yield from _entropy(view)
    keyword_lines = scan.lines_with(CREDENTIAL_NEEDLES)
    if keyword_lines:
        yield from _keyword(LineView(scan.text, keyword_lines))
