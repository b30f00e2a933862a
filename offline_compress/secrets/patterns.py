"""Our own secret patterns: shapes that are secrets by construction, and credential assignments.

* vendor key shapes detect-secrets does not know or matches only in part (OpenAI ``sk-``/``sk-proj-`` and
  Anthropic ``sk-ant-`` keys, GitHub ``github_pat_``, Hugging Face ``hf_``, Stripe ``sk_live_``/``rk_test_`` of
  any length, bare ``npm_`` tokens, GitLab ``glpat-``, Google ``AIza``, Azure ``AccountKey=`` and SAS ``sig=``,
  JWTs), PEM private key blocks (whole, also inside JSON strings such as a GCP service-account key, or to where
  a cut block ends), credentials in URLs (``postgres://user:pass@host``), ``Bearer``/``Basic`` headers;
* command lines: ``curl -u user:pass``, ``mysql -pPASS``, ``--password VALUE`` / ``--token=VALUE`` flags;
* ``password=`` / ``secret:`` / ``token=`` style assignments whose value is a literal, not code
  (``password=get_password()``, ``token: str`` and ``api_key = os.environ[...]`` stay), and ``.env`` lines
  (``ENCRYPTION_KEY=...``, ``DB_PASS=...``).

Plain hex (git SHAs, sha256 digests) is never a secret here. Every regex is precompiled and linear: each
repetition is bounded, each token pattern is anchored by a lookbehind (a start inside a run of key characters
fails at once), and a regex runs only where a cheap hint says it can match.
"""

from __future__ import annotations

import bisect
import re
import string
from collections.abc import Iterator

from .line_view import LineView, ScanText, Span

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
    # Azure storage / service bus / event hubs connection strings (the key names are case-insensitive there).
    (
        "azure_key",
        ("Key=", "key=", "KEY="),
        re.compile(r"(?i:\b(?:AccountKey|SharedAccessKey)=)([A-Za-z0-9+/]{16,200}={0,2})"),
        1,
    ),
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
        re.compile(r"\b[Bb]earer[ \t]{1,16}((?=[A-Za-z0-9._~+/=-]{0,2000}\d)[A-Za-z0-9._~+/-]{16,2000}={0,4})"),
        1,
    ),
    (
        "basic_auth",
        ("uthorization",),
        re.compile(r"\b[Aa]uthorization:[ \t]{0,16}Basic[ \t]{1,16}([A-Za-z0-9+/]{8,2000}={0,2})"),
        1,
    ),
    # scheme://user:password@host -> only the password goes. Database URLs: the user may be empty
    # (redis://:pw@host) and an unencoded '@' may sit in the password (it runs to the last '@' before the host).
    (
        "url_credentials",
        ("://",),
        re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{0,20}://[^\s/:@'\"<>]{0,200}:([^\s/'\"<>]{1,200})@(?=[^\s/@'\"<>])"),
        1,
    ),
]

# Azure shared access signatures (SAS): the sig= of a SAS URL or a SharedAccessSignature= connection string.
# A SAS is a bearer credential by itself; a sig= is one when a signed version (sv=2022-11-02) is near it.
_SAS_SIG = re.compile(r"(?<=[?&;])sig=([A-Za-z0-9%+/=_-]{16,400})")
_SAS_VERSION = re.compile(r"(?<![A-Za-z0-9_])sv=\d{4}-\d{2}-\d{2}")
_SAS_REACH = 2000  # characters around a sig= searched for its sv= (a SAS URL is a few hundred)

# Command lines: (kind, hints, the command's name, its credential flag). A flag counts when the command's name
# ends at most _COMMAND_REACH characters before it in the same command (no line break, |, ; or & between).
# Looking back from each flag costs a bounded amount per flag; the regex "curl[^\n|;&]{0,500}?[ \t]-u..."
# tried the 500 characters after every "curl". The value group is judged by ``literal_secret`` (``$PASS``,
# ``<password>`` and ``***`` stay).
_COMMANDS: list[tuple[str, tuple[str, ...], re.Pattern[str], re.Pattern[str]]] = [
    # curl -u user:pass / --user user:pass / -uuser:pass -> the password.
    (
        "password",
        ("curl",),
        re.compile(r"\bcurl\b"),
        re.compile(r"[ \t](?:-u[ \t]{0,4}|--user(?:[ \t]{1,4}|=))(['\"]?)[^\s:'\"]{1,200}:(?P<val>[^\s'\"]{1,200})\1"),
    ),
    # mysql -pPASS (attached: "-p PASS" prompts and PASS is the database) / --password=PASS.
    (
        "password",
        ("mysql", "mariadb"),
        re.compile(r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlsh|mariadb(?:-dump|-admin)?)\b"),
        re.compile(
            r"[ \t](?:-p|--password=)(?:'(?P<q1>[^'\n]{1,200})'|\"(?P<q2>[^\"\n]{1,200})\"|(?P<val>[^\s'\"]{1,200}))"
        ),
    ),
]
_COMMAND_REACH = 500
_COMMAND_BREAKS = "\n|;&"
_LONGEST_COMMAND = 12  # "mariadb-admin"

# --password VALUE, --token=VALUE, --api-key VALUE (any command; --token-file and --password-stdin differ, and
# --no-password takes no value). Runs on the credential-word lines.
_FLAG = re.compile(
    r"(?<![\w-])--(?!no-)(?:[a-z0-9]{1,40}-){0,3}(?P<word>password|passwd|pass|token|api-key|apikey|secret|access-key|secret-key)"
    r"(?P<sep>[ \t]{1,4}|=)(?:'(?P<q1>[^'\n]{1,200})'|\"(?P<q2>[^\"\n]{1,200})\"|(?P<val>[^\s'\"-][^\s'\"]{0,199}))"
)

# Lines without one of these (any case) hold no credential assignment, ours or detect-secrets' keyword plugin's.
CREDENTIAL_NEEDLES = ("key", "pass", "pwd", "secret", "token", "contrase")

# .env lines and shell assignments (`export NAME=value`, `docker run -e NAME=value`, `NAME=value cmd`): NAME in
# capitals, one of its parts naming a credential (ENCRYPTION_KEY, DB_PASS, TWILIO_AUTH_TOKEN, APP_KEY), its last
# part not a setting about one (PASSWORD_RESET_TIMEOUT, SSH_KEY_PATH, TOKEN_URL, API_KEY_HEADER).
DOTENV_NEEDLES = (*CREDENTIAL_NEEDLES, "auth", "credential", "salt")
_DOTENV = re.compile(
    r"(?<![A-Za-z0-9_$.-])(?P<name>[A-Z][A-Z0-9_]{0,80})="
    r"(?:\"(?P<q1>[^\"\n]{1,500})\"(?![^\s;&|\\])|'(?P<q2>[^'\n]{1,500})'(?![^\s;&|\\])"
    r"|(?P<val>[^\s\"'`;&|\\]{1,500}))"  # a bare value ends where a shell word or a JSON string does
)
# Parts that name a credential whatever its value looks like, and parts that do only with a key-like value.
_DOTENV_STRONG = frozenset(
    "PASS PASSWORD PASSWD PWD PASSPHRASE SECRET SECRETS TOKEN TOKENS CREDENTIAL CREDENTIALS APIKEY SECRETKEY "
    "ACCESSKEY PRIVATEKEY AUTHTOKEN".split()
)
_DOTENV_WEAK = frozenset("KEY KEYS AUTH SALT AUTHKEY MASTERKEY PASSKEY".split())
_DOTENV_NOT_LAST = frozenset(
    "PATH FILE FILES DIR URL URI ID IDS NAME NAMES TYPE HEADER SIZE BITS LEN LENGTH TIMEOUT TTL EXPIRY EXPIRES "
    "EXPIRATION AGE LIFETIME FORMAT ALG ALGORITHM VERSION COUNT MODE PREFIX SUFFIX FIELD PARAM ENV VAR ENABLED "
    "DISABLED REQUIRED HOST PORT USER USERNAME REGION ENDPOINT ARN LOCATION PROVIDER METHOD SCOPE SCOPES ISSUER "
    "AUDIENCE POLICY LEVEL MIN MAX RETRIES INTERVAL STORE BACKEND CLASS MODULE DOMAIN COLUMN TABLE".split()
)
_KEY_LIKE = re.compile(r"\A(?=(?:[^0-9]{0,500}[0-9]){2})(?=[^A-Za-z]{0,500}[A-Za-z])[!-~]{12,500}\Z")
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
# The patterns below judge one value (at most 500 characters, the longest any value group takes).
_IDENTIFIER_OR_CODE = re.compile(
    r"\A(?:[A-Za-z_][A-Za-z0-9_]{0,500}(?:\.[A-Za-z_][A-Za-z0-9_]{0,500}){0,250}(?:\(.{0,500}|\[.{0,500})?"
    r"|-?\d{1,500}(?:\.\d{1,500})?)\Z"
)
_BARE_WORD = re.compile(r"\A[A-Za-z0-9_-]{1,500}\Z")
_ENV_NAME = re.compile(r"\A[A-Z0-9_]{0,500}\Z")
_UUID = re.compile(r"\A[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
_ID_TAIL = re.compile(r"(?:_id|Id|_ID|_ids|Ids|_IDS)\Z")
_NOT_LITERAL = re.compile(
    r"\A(?:\$|\{|%|<|\*{1,500}\Z|x{1,500}\Z|\.\.\.|None\Z|null\Z|true\Z|false\Z|undefined\Z|REDACTED|\[REDACTED)",
    re.I,
)
_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----")
_SEQUENCES = string.ascii_uppercase * 2 + "|" + string.digits * 2 + "|" + (string.digits + string.ascii_uppercase) * 2
_PEM_WINDOW = 20000  # a private key block is a few kB at most
# The body of a cut block: base64 and the escapes of a JSON string, up to a blank line (str.isalnum is [^\W_]).
_PEM_BODY = re.compile(rf"(?:[^\W_]|[+/=\r\\ ]|\n(?!\n)){{0,{_PEM_WINDOW}}}")


def kind_of_word(word: str) -> str:
    """The redaction kind named by a credential word (``password``, ``client_secret``, ``api_key``, ...)."""
    w = word.lower().replace("-", "_")
    if w in ("private_key", "privatekey"):
        return "private_key"
    if "key" in w:
        return "api_key"
    if "pass" in w or "pwd" in w or "contrase" in w:
        return "password"
    if "token" in w:
        return "token"
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
    if len(stripped) < 4 or _NOT_LITERAL.match(stripped) or stripped.isdigit():
        return False  # too short, not a literal, or a number (max_tokens=1000)
    folded = stripped.casefold()
    if folded in _PLACEHOLDERS or folded.startswith(("your", "my-", "my_")):
        return False  # SECRET_KEY='secret', api_key="your-api-key"
    if word and squash(word) in squash(stripped) and not any(ch.isdigit() for ch in stripped):
        return False  # 'somepassword', 'django_tests_secret_key' (but 'Password1!' is one)
    if _UUID.match(stripped) or stripped.upper() in _SEQUENCES:
        return False  # a UUID, or 'abcdefghijkl', '12345678': detect-secrets' sequential-string rule
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
    """Each BEGIN to the first END within ``_PEM_WINDOW`` (one pass over the ENDs for all BEGINs), else over the
    body that follows; a BEGIN inside a block already found starts nothing."""
    ends = _PEM_END.finditer(text)
    end = next(ends, None)
    covered = 0
    for m in _PEM_BEGIN.finditer(text):
        if m.start() < covered:
            continue
        while end is not None and end.start() < m.end():
            end = next(ends, None)
        if end is not None and end.end() <= m.end() + _PEM_WINDOW:
            covered = end.end()
        else:  # a truncated key: take the base64 body that follows (to a blank line or a quote)
            covered = _PEM_BODY.match(text, m.end()).end()  # type: ignore[union-attr]  # {0,N} always matches
        yield "private_key", (m.start(), covered)


def _value(m: re.Match[str]) -> tuple[str, str, bool]:
    """(group name, value, quoted) of the value alternative that matched (each value regex requires one)."""
    name = next(n for n in ("q1", "q2", "qval", "val") if n in m.re.groupindex and m.group(n) is not None)
    return name, m.group(name), name != "val"


def _flags(view: LineView) -> Iterator[Find]:
    for m in _FLAG.finditer(view.text):
        name, value, quoted = _value(m)
        # "--password suffers from ...": after a space, a lower-case word is prose or a subcommand.
        if not quoted and m.group("sep") != "=" and value.isalpha() and value.islower():
            continue
        if literal_secret(value, quoted, word=m.group("word"), shell_word=True):
            yield kind_of_word(m.group("word")), view.to_source(m.span(name))


def _command_credentials(text: str, kind: str, command: re.Pattern[str], flag: re.Pattern[str]) -> Iterator[Find]:
    for m in flag.finditer(text):
        f = m.start()
        reach = max(0, f - _COMMAND_REACH - _LONGEST_COMMAND)
        start = max(reach, *(text.rfind(c, reach, f) + 1 for c in _COMMAND_BREAKS))
        named = command.search(text, start, f)
        while named is not None and f - named.end() > _COMMAND_REACH:  # too far back: a later one may do
            named = command.search(text, named.end(), f)
        if named is None:
            continue
        name, value, _ = _value(m)
        # quoted or not, a value on a command line is a literal: "p4ss w0rd" is no prose there
        if literal_secret(value, False, shell_word=True):
            yield kind, m.span(name)


def _dotenv(view: LineView) -> Iterator[Find]:
    for m in _DOTENV.finditer(view.text):
        parts = m.group("name").split("_")
        if parts[-1] in _DOTENV_NOT_LAST:
            continue
        strong = [p for p in parts if p in _DOTENV_STRONG]
        weak = [p for p in parts if p in _DOTENV_WEAK]
        if not strong and not weak:
            continue
        name, value, quoted = _value(m)
        word = (strong or weak)[-1]
        # with a weak word only, the value must look like a key (SORT_KEY=created_at, CACHE_KEY=v2: another kind)
        if literal_secret(value, quoted, word=word, shell_word=True) and (strong or _KEY_LIKE.match(value)):
            yield kind_of_word(word), view.to_source(m.span(name))


def _sas_signatures(text: str) -> Iterator[Find]:
    versions = [m.start() for m in _SAS_VERSION.finditer(text)]  # one pass, then a bisection per sig=
    if not versions:  # no sv= anywhere: no sig= can be a SAS signature, so no scan for them
        return
    for m in _SAS_SIG.finditer(text):
        i = bisect.bisect_left(versions, m.start() - _SAS_REACH)
        if i < len(versions) and versions[i] <= m.end() + _SAS_REACH:
            yield "azure_sas", m.span(1)


def _assignments(view: LineView) -> Iterator[Find]:
    for m in _ASSIGN.finditer(view.text):
        name, value, quoted = _value(m)
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
    view = scan.token_view
    for kind, hints, rx, group in _TOKENS if view.text else ():  # most texts hold no 20-character token
        if any(h in view.text for h in hints):
            for m in rx.finditer(view.text):
                yield kind, view.to_source(m.span(group))
    for kind, hints, rx, group in _SHORT:
        if any(h in text for h in hints):
            for m in rx.finditer(text):
                yield kind, m.span(group)
    if "PRIVATE KEY" in text:
        yield from _pem_blocks(text)
    if "sig=" in text:
        yield from _sas_signatures(text)
    for kind, hints, command, flag in _COMMANDS:
        if any(h in lowered for h in hints):
            yield from _command_credentials(text, kind, command, flag)
    # most texts have no line with a credential word: no view is built and nothing is scanned for them
    if lines := scan.lines_with(CREDENTIAL_NEEDLES):
        view = LineView(text, lines)
        yield from _flags(view)
        yield from _assignments(view)
    if "=" in text and (lines := scan.lines_with(DOTENV_NEEDLES)):
        yield from _dotenv(LineView(text, lines))
