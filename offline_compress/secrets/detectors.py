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
"""

from __future__ import annotations

import base64
import binascii
import re
import string
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from .line_view import LineView, ScanText, intersect, lines_with_needles, lower_same_length
from .patterns import CREDENTIAL_NEEDLES, kind_of_word, literal_secret

Span = tuple[int, int]
Find = tuple[str, Span]

# secret_type -> our kind; plugins named in _SKIPPED are not used.
_KINDS = {
    "AWS Access Key": "aws_access_key",
    "Artifactory Credentials": "artifactory_token",
    "Azure Storage Account access key": "azure_key",
    "Basic Auth Credentials": "url_credentials",
    "Cloudant Credentials": "cloudant_credentials",
    "Discord Bot Token": "discord_token",
    "GitHub Token": "github_token",
    "GitLab Token": "gitlab_token",
    "IBM COS HMAC Credentials": "ibm_cos_hmac_key",
    "IBM Cloud IAM Key": "ibm_cloud_iam_key",
    "JSON Web Token": "jwt",
    "Mailchimp Access Key": "mailchimp_key",
    "NPM tokens": "npm_token",
    "OpenAI Token": "openai_key",
    "PyPI Token": "pypi_token",
    "SendGrid API Key": "sendgrid_key",
    "Slack Token": "slack_token",
    "SoftLayer Credentials": "softlayer_key",
    "Square OAuth Secret": "square_oauth_secret",
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
    "GitLab Token": (
        (
            "glpat-",
            "gldt-",
            "glft-",
            "glsoat-",
            "glrt-",
            "GR1348941",
            "glcbt-",
            "glimt-",
            "glptt-",
            "glagent-",
            "gloas-",
        ),
    ),
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
_TOKEN_CHARS = frozenset(string.ascii_letters + string.digits + "_-")
_STOP_CHARS = frozenset(" \t\r\n'\"`,;<>(){}[]")
_CREDENTIAL_WORD = re.compile(r"(?i)key|token|secret|passw|pwd|auth|credential")
_DIGEST_WORD = re.compile(r"(?i)sha|hash|digest|checksum|commit|etag|md5|integrity|fingerprint|revision|nonce|uuid")
B64_LIMIT = 4.5
HEX_LIMIT = 3.0
MIN_ENTROPY_CHARS = 20
MAX_ENTROPY_CHARS = 256
# The value of a key named id / *_id / *Id: `"id": "`, `tool_call_id='`, `requestId: "` just before it.
_ID_KEY_BEFORE = re.compile(r"(?:\b[Ii][Dd]|[a-z0-9]_id|[a-z0-9]Id|[a-z0-9]_ID)[\"']?[ \t]*[:=][ \t]*[\"']?\Z")


@lru_cache(maxsize=1)
def _plugins() -> dict[str, Any]:
    """detect-secrets' plugin instances by secret type (imported on first use: it pulls in ``requests``)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    mapping: dict[str, Any] = get_mapping_from_secret_type_to_class()
    return {stype: cls() for stype, cls in sorted(mapping.items())}


@lru_cache(maxsize=1)
def _keyword_regexes() -> tuple[re.Pattern[str], tuple[tuple[re.Pattern[str], int], ...]]:
    """detect-secrets' credential words as one regex, and its quotes-required assignment regexes with the
    group that holds the value."""
    from detect_secrets.plugins.keyword import DENYLIST, QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP

    return re.compile("|".join(DENYLIST), re.I), tuple(QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items())


_NAME_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,40}[=:]")


def _widen(text: str, a: int, b: int) -> Span:
    """The whole token around a find: without a leading ``Name=`` that the regex included (Azure's
    ``AccountKey=``), cut at the first space or quote, then extended over key characters."""
    while a < b and text[a] in _STOP_CHARS:
        a += 1
    prefix = _NAME_PREFIX.match(text, a, b)
    if prefix and b - prefix.end() >= 8:
        a = prefix.end()
    for i in range(a, b):
        if text[i] in _STOP_CHARS:
            b = i
            break
    while b < len(text) and text[b] in _TOKEN_CHARS:
        b += 1
    while a > 0 and text[a - 1] in _TOKEN_CHARS:
        a -= 1
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
    needles (a view of the view)."""
    lowered = lower_same_length(view.text)
    present = {n for n in _ALL_NEEDLES if n in (lowered if n == n.lower() else view.text)}
    for stype, plugin in _plugins().items():
        if stype in _SKIPPED or not hasattr(plugin, "denylist"):
            continue
        kind = _KINDS.get(stype) or re.sub(r"[^a-z0-9]+", "_", stype.lower()).strip("_")
        groups = _NEEDLES.get(stype, ())
        if not all(present.intersection(group) for group in groups):
            continue
        narrow = view
        if groups:
            narrow = LineView(
                view.text, intersect(*(lines_with_needles(view.text, lowered, group) for group in groups))
            )
        for rx in plugin.denylist:
            for m in rx.finditer(narrow.text):
                a, b = view.to_source(narrow.to_source(_secret_span(m)))
                a, b = _widen(text, a, b)
                if b - a >= 8:
                    yield kind, (a, b)


def _filtered_by_detect_secrets(secret: str, line: str) -> bool:
    from detect_secrets.filters import heuristic as h

    return (
        h.is_templated_secret(secret)
        or h.is_prefixed_with_dollar_sign(secret)
        or h.is_sequential_string(secret)
        or h.is_potential_uuid(secret)
        or h.is_not_alphanumeric_string(secret)
        or h.is_likely_id_string(secret, line)
        or h.is_indirect_reference(line)
    )


def _keyword(view: LineView) -> Iterator[Find]:
    words, regexes = _keyword_regexes()
    for rx, group in regexes:
        for m in rx.finditer(view.text):
            secret = m.group(group)
            word = words.search(m.group(0))
            if "\n" in secret or word is None:
                continue  # the joined lines are not neighbours: a match across them is not one
            line = view.line_of(m.start(group))
            if _filtered_by_detect_secrets(secret, line) or not literal_secret(secret, True, word=word.group(0)):
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
    plugins = _plugins()
    b64 = plugins.get("Base64 High Entropy String")
    hexp = plugins.get("Hex High Entropy String")
    if b64 is not None:
        for m in b64.regex.finditer(view.text):
            value = m.group(2)
            if (
                MIN_ENTROPY_CHARS <= len(value) <= MAX_ENTROPY_CHARS
                and any(c.isdigit() for c in value)
                and any(c.isupper() for c in value)
                and any(c.islower() for c in value)
                and b64.calculate_shannon_entropy(value) > B64_LIMIT
                and not _ID_KEY_BEFORE.search(view.text, max(0, m.start() - 40), m.start() + 1)
                and not _filtered_by_detect_secrets(value, view.line_of(m.start(2)))
                and not _decodes_to_text(value)
            ):
                yield "high_entropy_string", view.to_source(m.span(2))
    if hexp is not None:
        for m in hexp.regex.finditer(view.text):
            value = m.group(2)
            if len(value) < 16 or hexp.calculate_shannon_entropy(value) <= HEX_LIMIT:
                continue
            line = view.line_of(m.start(2))
            before = line[: max(0, line.find(value))]
            if _CREDENTIAL_WORD.search(before) and not _DIGEST_WORD.search(before):
                yield "high_entropy_hex", view.to_source(m.span(2))


def find_detector_secrets(scan: ScanText) -> Iterator[Find]:
    """(kind, span) of every find of detect-secrets' plugins in ``scan.text``; unordered, possibly
    overlapping."""
    view = scan.token_view()
    if view.text:
        yield from _vendor(scan.text, view)
        yield from _entropy(view)
    keyword_lines = scan.lines_with(CREDENTIAL_NEEDLES)
    if keyword_lines:
        yield from _keyword(LineView(scan.text, keyword_lines))
