"""Secrets never reach a summary: find them and replace them by ``[REDACTED:<kind>]``.

Only shapes that are secrets by construction are matched (vendor key prefixes, JWTs, PEM private keys,
credentials in URLs, ``Bearer``/``Basic`` headers) plus the values of ``password=``/``secret:``/``token=``-style
assignments when the value is a literal, not code (``password=get_password()`` or ``token: str`` stay).
Plain hex (git shas, sha256 digests) is never a secret here. Every regex is precompiled and linear
(bounded repetitions, no nested quantifiers); overlapping finds keep the earliest, then the longest.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

Span = tuple[int, int]

# (kind, hints, regex, group): the regex runs only when one of the hint substrings occurs (cheap `in` checks
# keep ordinary text fast); the group's span is what gets replaced (0 = whole match).
_PATTERNS: list[tuple[str, tuple[str, ...], re.Pattern[str], int]] = [
    ("anthropic_key", ("sk-ant-",), re.compile(r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,400}"), 0),
    # OpenAI: sk-, sk-proj-, sk-svcacct-, sk-admin-; a real key has digits, prose like "sk-learn-..." has none.
    ("openai_key", ("sk-",), re.compile(r"(?<![A-Za-z0-9_-])sk-(?!ant-)(?=[A-Za-z0-9_-]{0,400}\d)[A-Za-z0-9_-]{20,400}"), 0),
    ("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
     re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"), 0),
    ("aws_access_key", ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"),
     re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}(?![A-Z0-9])"), 0),
    ("slack_token", ("xox",), re.compile(r"(?<![A-Za-z0-9])xox[abposre]-[A-Za-z0-9-]{10,250}"), 0),
    ("slack_webhook", ("hooks.slack.com",), re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,200}"), 0),
    ("google_api_key", ("AIza",), re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])"), 0),
    # JWT: base64url('{"...') . base64url('{"...') . signature
    ("jwt", ("eyJ",), re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,4000}\.eyJ[A-Za-z0-9_-]{5,8000}\.[A-Za-z0-9_-]{0,4000}"), 0),
    ("bearer_token", ("earer",), re.compile(r"\b[Bb]earer[ \t]+((?=[A-Za-z0-9._~+/=-]{0,2000}\d)[A-Za-z0-9._~+/-]{16,2000}=*)"), 1),
    ("basic_auth", ("uthorization",), re.compile(r"\b[Aa]uthorization:[ \t]*Basic[ \t]+([A-Za-z0-9+/]{8,2000}={0,2})"), 1),
    # scheme://user:password@host -> only the password goes.
    ("url_credentials", ("://",),
     re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{0,20}://[^\s/:@'\"<>]{1,200}:([^\s/@'\"<>]{1,200})@[^\s/@'\"<>]"), 1),
]

# key = value assignments; the key names the kind. The value is a quoted literal or a bare word.
_ASSIGN = re.compile(
    r"""(?ix)
    (?P<word>passwd|password|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key)
    (?![a-z])[A-Za-z0-9_.-]{0,40}              # GITHUB_TOKEN, secret_key, password2 (not tokenizer, passwords)
    ["']?[ \t]{0,10}(?::=|:|=)[ \t]{0,10}
    (?:(?P<q>["'])(?P<qval>[^"'\n]{1,500})(?P=q)|(?P<val>(?:[^\s"'`,;&)}\]<>]|&(?![A-Za-z0-9_]{1,40}=)){1,500}))
    """
)
# Values that name a placeholder or a type rather than hold a credential.
_PLACEHOLDERS = frozenset(
    "secret password passwd token test testing dummy example placeholder foo bar baz fake none null empty "
    "bearer basic str string bytes int bool required optional hidden redacted changeme".split()
)
_KIND_OF_WORD = {
    "passwd": "password", "password": "password", "passphrase": "password", "pwd": "password",
    "secret": "secret", "token": "token", "private_key": "private_key", "privatekey": "private_key",
}
_IDENTIFIER_OR_CODE = re.compile(r"\A(?:[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(.*|\[.*)?|-?\d+(?:\.\d+)?)\Z")
_NOT_LITERAL = re.compile(r"\A(?:\$|\{|%|<|\*+\Z|x+\Z|\.\.\.|None\Z|null\Z|true\Z|false\Z|undefined\Z|REDACTED|\[REDACTED)", re.I)
_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)?-----")
_PEM_WINDOW = 20000  # a private key block is a few kB at most


def _assignment_kind(word: str) -> str:
    w = word.lower().replace("-", "_")
    if w in _KIND_OF_WORD:
        return _KIND_OF_WORD[w]
    if "key" in w:
        return "api_key"
    return "secret"


def _literal_secret(value: str, quoted: bool) -> bool:
    """Whether an assigned value looks like a real credential rather than code, a type or a placeholder."""
    if len(value) < 4 or _NOT_LITERAL.match(value):
        return False
    if value.isdigit():
        return False  # max_tokens=1000
    if value.strip().casefold() in _PLACEHOLDERS or value.casefold().startswith(("your", "my-", "my_")):
        return False  # SECRET_KEY='secret', api_key="your-api-key"
    if quoted:
        return " " not in value.strip() or len(value) >= 24  # prose in quotes ("Enter your password") is not one
    if _IDENTIFIER_OR_CODE.match(value):
        # password=get_password(), token: str, token=self.token; but Tr0ub4dor3x is a literal, not a name
        digits = sum(ch.isdigit() for ch in value)
        return len(value) >= 8 and digits >= 2 and value.isalnum() and len(value) - digits >= 2
    return len(value) >= 6


def _squash(s: str) -> str:
    return s.casefold().replace("_", "").replace("-", "")


def _iter_secrets(text: str) -> Iterator[tuple[str, Span]]:
    for kind, hints, rx, group in _PATTERNS:
        if not any(h in text for h in hints):
            continue
        for m in rx.finditer(text):
            yield kind, m.span(group)
    for m in _PEM_BEGIN.finditer(text):
        end = _PEM_END.search(text, m.end(), min(len(text), m.end() + _PEM_WINDOW))
        if end:
            yield "private_key", (m.start(), end.end())
        else:  # a truncated key: take the base64 body that follows (to a blank line or a quote)
            stop = m.end()
            limit = min(len(text), m.end() + _PEM_WINDOW)
            while stop < limit and (text[stop].isalnum() or text[stop] in "+/=\r\n\\ "):
                if text.startswith("\n\n", stop):
                    break
                stop += 1
            yield "private_key", (m.start(), stop)
    for m in _ASSIGN.finditer(text):
        quoted = m.group("qval") is not None
        value = m.group("qval") if quoted else m.group("val")
        if _literal_secret(value, quoted) and _squash(value) != _squash(m.group("word")):
            yield _assignment_kind(m.group("word")), m.span("qval" if quoted else "val")


def find_secrets(text: str) -> list[tuple[str, Span]]:
    """(kind, (start, end)) of every secret in ``text``, in order, without overlaps."""
    found = sorted(_iter_secrets(text), key=lambda t: (t[1][0], -(t[1][1] - t[1][0])))
    out: list[tuple[str, Span]] = []
    last_end = -1
    for kind, (a, b) in found:
        if a >= last_end and b > a:
            out.append((kind, (a, b)))
            last_end = b
    return out


def redact(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]``."""
    secrets = find_secrets(text)
    if not secrets:
        return text
    parts: list[str] = []
    pos = 0
    for kind, (a, b) in secrets:
        parts.append(text[pos:a])
        parts.append(f"[REDACTED:{kind}]")
        pos = b
    parts.append(text[pos:])
    return "".join(parts)
