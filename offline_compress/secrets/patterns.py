"""Our own secret patterns: shapes that are secrets by construction, and credential assignments.

* vendor key shapes detect-secrets does not know or matches only in part (OpenAI/Anthropic keys, Hugging Face
  ``hf_``, Stripe ``sk_live_``/``rk_test_`` of any length, bare ``npm_`` tokens, GitLab ``glpat-``, Google
  ``AIza``, Azure ``AccountKey=``), PEM private key blocks (whole, or to where a cut block ends), credentials in
  URLs, ``Bearer``/``Basic`` headers;
* command lines: ``curl -u user:pass``, ``mysql -pPASS``, ``--password VALUE`` / ``--token=VALUE`` flags;
* ``password=`` / ``secret:`` / ``token=`` style assignments whose value is a literal, not code
  (``password=get_password()``, ``token: str`` and ``api_key = os.environ[...]`` stay).

Plain hex (git SHAs, sha256 digests) is never a secret here. Every regex is precompiled and linear (bounded
repetitions, no nested quantifiers) and runs only where a cheap hint says it can match.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterator

from .line_view import LineView, ScanText

Span = tuple[int, int]
Find = tuple[str, Span]

# Token-shaped keys: (kind, hints, regex, group). Each holds a run of 20 key characters, so the regex runs only
# on the lines that hold one (``ScanText.token_view``), and only when one of the hint substrings occurs there;
# the group's span is what gets replaced (0 = whole match).
_TOKENS: list[tuple[str, tuple[str, ...], re.Pattern[str], int]] = [
    ("anthropic_key", ("sk-ant-",), re.compile(r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,400}"), 0),
    # OpenAI: sk-, sk-proj-, sk-svcacct-, sk-admin-; a real key has digits, prose like "sk-learn-..." has none.
    (
        "openai_key",
        ("sk-",),
        re.compile(r"(?<![A-Za-z0-9_-])sk-(?!ant-)(?=[A-Za-z0-9_-]{0,400}\d)[A-Za-z0-9_-]{20,400}"),
        0,
    ),
    (
        "github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"),
        0,
    ),
    (
        "aws_access_key",
        ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"),
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}(?![A-Z0-9])"),
        0,
    ),
    ("slack_token", ("xox",), re.compile(r"(?<![A-Za-z0-9])xox[abposre]-[A-Za-z0-9-]{10,250}"), 0),
    (
        "slack_webhook",
        ("hooks.slack.com",),
        re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,200}"),
        0,
    ),
    ("google_api_key", ("AIza",), re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])"), 0),
    # Hugging Face user access tokens: hf_ + 34 letters and digits (older ones api_org_...).
    (
        "huggingface_token",
        ("hf_", "api_org_"),
        re.compile(
            r"(?<![A-Za-z0-9_])(?:hf_|api_org_)(?=[A-Za-z]{0,60}[0-9]|[0-9]{0,60}[A-Za-z]{2})[A-Za-z0-9]{30,60}(?![A-Za-z0-9_])"
        ),
        0,
    ),
    # Stripe secret and restricted keys, live or test (detect-secrets knows only sk_live_ and rk_live_ and
    # cuts them at 24 characters).
    ("stripe_key", ("k_live_", "k_test_"), re.compile(r"(?<![A-Za-z0-9_])[sr]k_(?:live|test)_[0-9a-zA-Z]{16,247}"), 0),
    # npm automation/publish tokens: npm_ + 36 (detect-secrets finds them only in an .npmrc line).
    ("npm_token", ("npm_",), re.compile(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"), 0),
    (
        "gitlab_token",
        ("gl",),
        re.compile(r"(?<![A-Za-z0-9_-])gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-[A-Za-z0-9_-]{20,200}"),
        0,
    ),
    # Azure storage / service bus connection strings.
    ("azure_key", ("Key=",), re.compile(r"\b(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{16,200}={0,2})"), 1),
    # JWT: base64url('{"...') . base64url('{"...') . signature
    (
        "jwt",
        ("eyJ",),
        re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,4000}\.eyJ[A-Za-z0-9_-]{5,8000}\.[A-Za-z0-9_-]{0,4000}"),
        0,
    ),
]
# Credentials that need not be long (a short password in a URL or header): run on the whole text, when a hint
# occurs in it.
_SHORT: list[tuple[str, tuple[str, ...], re.Pattern[str], int]] = [
    (
        "bearer_token",
        ("earer",),
        re.compile(r"\b[Bb]earer[ \t]+((?=[A-Za-z0-9._~+/=-]{0,2000}\d)[A-Za-z0-9._~+/-]{16,2000}=*)"),
        1,
    ),
    (
        "basic_auth",
        ("uthorization",),
        re.compile(r"\b[Aa]uthorization:[ \t]*Basic[ \t]+([A-Za-z0-9+/]{8,2000}={0,2})"),
        1,
    ),
    # scheme://user:password@host -> only the password goes.
    (
        "url_credentials",
        ("://",),
        re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{0,20}://[^\s/:@'\"<>]{1,200}:([^\s/@'\"<>]{1,200})@[^\s/@'\"<>]"),
        1,
    ),
]

# Command lines. The value group is judged by ``literal_secret`` (``$PASS``, ``<password>`` and ``***`` stay).
_COMMANDS: list[tuple[str, tuple[str, ...], re.Pattern[str]]] = [
    # curl -u user:pass / --user user:pass / -uuser:pass -> the password.
    (
        "password",
        ("curl",),
        re.compile(
            r"\bcurl\b[^\n|;&]{0,500}?[ \t](?:-u[ \t]*|--user(?:[ \t]+|=))"
            r"(['\"]?)[^\s:'\"]{1,200}:(?P<val>[^\s'\"]{1,200})\1"
        ),
    ),
    # mysql -pPASS (attached: "-p PASS" prompts and PASS is the database) / --password=PASS.
    (
        "password",
        ("mysql", "mariadb"),
        re.compile(
            r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlsh|mariadb(?:-dump|-admin)?)\b"
            r"[^\n|;&]{0,500}?[ \t]"
            r"(?:-p|--password=)(?:'(?P<q1>[^'\n]{1,200})'|\"(?P<q2>[^\"\n]{1,200})\"|(?P<val>[^\s'\"]{1,200}))"
        ),
    ),
]

# --password VALUE, --token=VALUE, --api-key VALUE (any command; --token-file and --password-stdin differ, and
# --no-password takes no value). Runs on the credential-word lines.
_FLAG = re.compile(
    r"(?<![\w-])--(?!no-)(?:[a-z0-9]+-){0,3}(?P<word>password|passwd|pass|token|api-key|apikey|secret|access-key|secret-key)"
    r"(?P<sep>[ \t]+|=)(?:'(?P<q1>[^'\n]{1,200})'|\"(?P<q2>[^\"\n]{1,200})\"|(?P<val>[^\s'\"-][^\s'\"]{0,199}))"
)

# Lines without one of these (any case) hold no credential assignment, ours or detect-secrets' keyword plugin's.
CREDENTIAL_NEEDLES = ("key", "pass", "pwd", "secret", "token", "contrase")
# key = value assignments; the key names the kind. The value is a quoted literal or a bare word.
_ASSIGN = re.compile(
    r"""(?ix)
    (?P<word>passwd|password|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key)
    (?![a-z])(?P<tail>[A-Za-z0-9_.-]{0,40})      # GITHUB_TOKEN, secret_key, password2 (not tokenizer, passwords)
    ["']?(?P<sep>[ \t]{0,10}(?::=|:|=)[ \t]{0,10})
    (?:(?P<q>["'])(?P<qval>[^"'\n]{1,500})(?P=q)|(?P<val>(?:[^\s"'`,;&)}\]<>]|&(?![A-Za-z0-9_]{1,40}=)){1,500}))
    """
)
# Values that name a placeholder or a type rather than hold a credential.
_PLACEHOLDERS = frozenset(
    "secret password passwd token test testing dummy example placeholder foo bar baz fake none null empty "
    "bearer basic str string bytes int bool required optional hidden redacted changeme".split()
)
_KIND_OF_WORD = {
    "passwd": "password",
    "password": "password",
    "passphrase": "password",
    "pwd": "password",
    "pass": "password",
    "secret": "secret",
    "token": "token",
    "private_key": "private_key",
    "privatekey": "private_key",
}
_IDENTIFIER_OR_CODE = re.compile(
    r"\A(?:[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(.*|\[.*)?|-?\d+(?:\.\d+)?)\Z"
)
_BARE_WORD = re.compile(r"\A[A-Za-z0-9_-]+\Z")
_ENV_NAME = re.compile(r"\A[A-Z0-9_]*\Z")
_UUID = re.compile(r"\A[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
_ID_TAIL = re.compile(r"(?:_id|Id|_ID|_ids|Ids|_IDS)\Z")
_NOT_LITERAL = re.compile(
    r"\A(?:\$|\{|%|<|\*+\Z|x+\Z|\.\.\.|None\Z|null\Z|true\Z|false\Z|undefined\Z|REDACTED|\[REDACTED)", re.I
)
_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)?-----")
_SEQUENCES = string.ascii_uppercase * 2 + "|" + string.digits * 2 + "|" + (string.digits + string.ascii_uppercase) * 2
_PEM_WINDOW = 20000  # a private key block is a few kB at most


def kind_of_word(word: str) -> str:
    """The redaction kind named by a credential word (``password``, ``client_secret``, ``api_key``, ...)."""
    w = word.lower().replace("-", "_")
    if w in _KIND_OF_WORD:
        return _KIND_OF_WORD[w]
    if "key" in w:
        return "api_key"
    if "pass" in w or "pwd" in w or "contrase" in w:
        return "password"
    return "secret"


def squash(s: str) -> str:
    return s.casefold().replace("_", "").replace("-", "")


def literal_secret(value: str, quoted: bool, *, word: str = "", shell_word: bool = False) -> bool:
    """Whether an assigned value looks like a real credential rather than code, a type or a placeholder.

    ``word``: the credential word it is assigned to; a value without digits that spells it out
    (``somepassword``, ``django_tests_secret_key``) describes itself and is a placeholder. ``shell_word``: the value
    stands where a shell or ``.env`` file takes a literal (``PGPASSWORD=hunter`` or ``--password hunter``), so a
    bare word is a literal there, not a name."""
    stripped = value.strip()
    if len(stripped) < 4 or _NOT_LITERAL.match(stripped):
        return False
    if stripped.isdigit():
        return False  # max_tokens=1000
    folded = stripped.casefold()
    if folded in _PLACEHOLDERS or folded.startswith(("your", "my-", "my_")):
        return False  # SECRET_KEY='secret', api_key="your-api-key"
    if word and squash(word) in squash(stripped) and not any(ch.isdigit() for ch in stripped):
        return False  # 'somepassword', 'django_tests_secret_key' (but 'Password1!' is one)
    if _UUID.match(stripped):
        return False  # an identifier (detect-secrets filters UUIDs too)
    if stripped.upper() in _SEQUENCES:
        return False  # 'abcdefghijkl', 'abcd' * 20, '12345678': detect-secrets' sequential-string rule
    if quoted:
        return " " not in stripped or len(stripped) >= 24  # prose in quotes ("Enter your password") is not one
    if shell_word and _BARE_WORD.match(stripped):
        return True
    if _IDENTIFIER_OR_CODE.match(stripped):
        # password=get_password(), token: str, token=self.token; but Tr0ub4dor3x is a literal, not a name
        digits = sum(ch.isdigit() for ch in stripped)
        return len(stripped) >= 8 and digits >= 2 and stripped.isalnum() and len(stripped) - digits >= 2
    return len(stripped) >= 6


def _pem_blocks(text: str) -> Iterator[Find]:
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


def _value_group(m: re.Match[str]) -> tuple[str, bool] | None:
    """(value group name, quoted) of the first value alternative that matched."""
    for name, quoted in (("q1", True), ("q2", True), ("qval", True), ("val", False)):
        if name in m.re.groupindex and m.group(name) is not None:
            return name, quoted
    return None


def _flags(view: LineView) -> Iterator[Find]:
    for m in _FLAG.finditer(view.text):
        name, quoted = _value_group(m) or ("val", False)
        value = m.group(name)
        # "--password suffers from ...": after a space, a lower-case word is prose or a subcommand.
        if not quoted and m.group("sep") != "=" and value.isalpha() and value.islower():
            continue
        if literal_secret(value, quoted, word=m.group("word"), shell_word=True):
            yield kind_of_word(m.group("word")), view.to_source(m.span(name))


def _assignments(view: LineView) -> Iterator[Find]:
    for m in _ASSIGN.finditer(view.text):
        name, quoted = _value_group(m) or ("val", False)
        value = m.group(name)
        key = m.group("word") + m.group("tail")
        if _ID_TAIL.search(key):
            continue  # token_id, secret_key_id, passwordIds: the name of an identifier
        # NAME=value in a shell or an .env file (no spaces around '='): a bare word is a literal there.
        shell = not quoted and m.group("sep") == "=" and _ENV_NAME.match(key) is not None
        if literal_secret(value, quoted, word=m.group("word"), shell_word=shell):
            yield kind_of_word(m.group("word")), view.to_source(m.span(name))


def find_pattern_secrets(scan: ScanText) -> Iterator[Find]:
    """(kind, span) of every find of our own patterns in ``scan.text``; unordered, possibly overlapping."""
    text, lowered = scan.text, scan.lowered
    view = scan.token_view()
    for kind, hints, rx, group in _TOKENS:
        if any(h in view.text for h in hints):
            for m in rx.finditer(view.text):
                yield kind, view.to_source(m.span(group))
    for kind, hints, rx, group in _SHORT:
        if any(h in text for h in hints):
            for m in rx.finditer(text):
                yield kind, m.span(group)
    if "PRIVATE KEY" in text:
        yield from _pem_blocks(text)
    for kind, hints, rx in _COMMANDS:
        if any(h in lowered for h in hints):
            for m in rx.finditer(text):
                value = _value_group(m)
                # quoted or not, a value on a command line is a literal: "p4ss w0rd" is no prose there
                if value and literal_secret(m.group(value[0]), False, shell_word=True):
                    yield kind, m.span(value[0])
    lines = scan.lines_with(CREDENTIAL_NEEDLES)
    if lines:
        view = LineView(text, lines)
        yield from _flags(view)
        yield from _assignments(view)
