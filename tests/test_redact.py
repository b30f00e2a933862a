"""Secret redaction: every kind is caught, ordinary code and hashes are left alone."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import uuid
from pathlib import Path

import pytest

from offline_compress.history.messages import Message
from offline_compress.secrets.redact import find_secrets, redact, redact_message, redact_messages

FIXTURES = Path(__file__).parent / "fixtures"

# Fake credentials are assembled at run time so that the repository holds no secret-shaped literal.
B62 = "A1b2C3d4E5f6G7h8J9k0"
OPENAI = "sk-" + "proj-" + B62 * 3
OPENAI_LEGACY = "sk-" + B62 * 2 + "AbCdEfGh"
ANTHROPIC = "sk-" + "ant-api03-" + B62 * 4 + "-xYz_AA"
GITHUB = "gh" + "p_" + B62 + "0123456789abcdef"
GITHUB_PAT = "github_" + "pat_" + "11ABCDEFG0" + "_" + B62 * 3
AWS = "AK" + "IA" + "IOSFODNN7EXAMPLE"
SLACK = "xo" + "xb-" + "1234567890-0987654321-" + B62
GOOGLE = "AI" + "za" + "SyA1b2C3d4E5f6G7h8J9k0L1m2N3o4P5q6r"
JWT = (
    "ey"
    + "JhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    + ".ey"
    + "JzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN RSA "
    + "PRIVATE KEY-----\nMIIEowIBAAKCAQEA1b2C3d4E5f6G7h8\nJ9k0L1m2N3o4P5q6r7s8t9u0==\n-----END RSA "
    + "PRIVATE KEY-----"
)
HF = "h" + "f_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567"
STRIPE = "sk" + "_live_" + "51HcXyZAbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefghij"
NPM = "n" + "pm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
GITLAB = "gl" + "pat-" + "x1Y2z3A4b5C6d7E8f9G0"
AZURE = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6QUJDRA0987654321abcdefABCDEF+/=="

# The 12 kinds of issue 11 (the first 8 came out of the old redact unchanged), then more forms of each kind.
TWELVE = [
    (f"export HF_TOKEN={HF}", "huggingface_token", HF),
    (f"curl https://api.stripe.com/v1/charges -u {STRIPE}:", "stripe_key", STRIPE),
    (f"//registry.npmjs.org/:_authToken={NPM}", "npm_token", NPM),
    (f"glab auth status  # logged in with {GITLAB}", "gitlab_token", GITLAB),
    (
        f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={AZURE};EndpointSuffix=core.windows.net",
        "azure_key",
        AZURE,
    ),
    ("curl -u admin:Xk9mQ2vL https://example.com/api/v1", "password", "Xk9mQ2vL"),
    ("PGPASSWORD=hunter psql -h db.internal -U app", "password", "hunter"),
    ("mysql -h 127.0.0.1 -u root -pS3cretPw -e 'select 1'", "password", "S3cretPw"),
    (f"export OPENAI_API_KEY={OPENAI}", "openai_key", OPENAI),
    (f"git clone https://{GITHUB}@github.com/o/r.git", "github_token", GITHUB),
    (f"aws_access_key_id = {AWS}", "aws_access_key", AWS),
    (f"SLACK_BOT_TOKEN={SLACK}", "slack_token", SLACK),
]


@pytest.mark.parametrize(
    "text,kind,secret",
    TWELVE
    + [
        (f"client = OpenAI(api_key='{OPENAI_LEGACY}')", "openai_key", OPENAI_LEGACY),
        (f"ANTHROPIC_API_KEY={ANTHROPIC} python run.py", "anthropic_key", ANTHROPIC),
        (f"token: {GITHUB_PAT}", "github_token", GITHUB_PAT),
        (f"https://maps.googleapis.com/maps/api/geocode/json?key={GOOGLE}", "google_api_key", GOOGLE),
        (f"cookie: session={JWT}; path=/", "jwt", JWT),
        (
            "curl -H 'Authorization: Bearer abcDEF123456ghiJKL789' https://api.x",
            "bearer_token",
            "abcDEF123456ghiJKL789",
        ),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "basic_auth", "dXNlcjpwYXNzd29yZA=="),
        ("DATABASE_URL=postgres://admin:S3cr3tPass@db.internal:5432/app", "url_credentials", "S3cr3tPass"),
        ("db_password=hunter2!x", "password", "hunter2!x"),
        ('{"password": "correct-horse-9"}', "password", "correct-horse-9"),
        ("passwd: Tr0ub4dor&3", "password", "Tr0ub4dor&3"),
        ("PGPASSWORD=x9Kd2mQ7 psql -h db", "password", "x9Kd2mQ7"),
        ("https://h/login?user=bob&password=pa55wordX&next=/", "password", "pa55wordX"),
        ("client_secret='q8Zr2LmN5vB'", "secret", "q8Zr2LmN5vB"),
        ("GITLAB_TOKEN=glpat-a1B2c3D4e5F6g7H8", "token", "glpat-a1B2c3D4e5F6g7H8"),
        (f"key file:\n{PEM}\nend", "private_key", PEM),
        (f"huggingface-cli login --token {HF}", "huggingface_token", HF),
        (f'stripe.api_key = "{STRIPE}"', "stripe_key", STRIPE),
        (f"NPM_TOKEN={NPM} npm publish", "npm_token", NPM),
        (f"use {GITLAB} for the API", "gitlab_token", GITLAB),
        ("curl --user deploy:hunter2x -X POST https://x.io", "password", "hunter2x"),
        ("mysqldump --password='p4ss w0rd' --all-databases", "password", "p4ss w0rd"),
        ("docker login -u bob --password Xk9#mQ2v registry.io", "password", "Xk9#mQ2v"),
        ("gh auth login --token=q8Zr2LmN5vB", "token", "q8Zr2LmN5vB"),
        ("docker run -e POSTGRES_PASSWORD=letmein postgres:16", "password", "letmein"),
        (
            'config = {"signing_material": "q8Zr2LmN5vBx7TyU1pWd3KfH9sJe4Gc6Aa0"}',
            "high_entropy_string",
            "q8Zr2LmN5vBx7TyU1pWd3KfH9sJe4Gc6Aa0",
        ),
        (
            'HEADERS = {"X-Auth": "9f86d081884c7d659a2feaa0c55ad015"}',
            "high_entropy_hex",
            "9f86d081884c7d659a2feaa0c55ad015",
        ),
        ("session = 'sess=' + 'ok'; password = 'Password1!'", "password", "Password1!"),
    ],
)
def test_each_kind_is_found_and_redacted(text: str, kind: str, secret: str) -> None:
    found = find_secrets(text)
    assert (kind, (text.index(secret), text.index(secret) + len(secret))) in found
    out = redact(text)
    assert secret not in out and f"[REDACTED:{kind}]" in out


def test_truncated_private_key_is_still_redacted() -> None:
    text = (
        "-----BEGIN OPENSSH "
        + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz\n\nnext paragraph"
    )
    out = redact(text)
    assert "b3BlbnNzaC1rZXkt" not in out and out.endswith("\n\nnext paragraph")


@pytest.mark.parametrize(
    "text",
    [
        "commit 3ea751c087f3a1b2c4d5e6f708192a3b4c5d6e7f",
        "index d157c291ef..fadac848d0 100644",
        "sha256:" + hashlib.sha256(b"x").hexdigest(),
        '"hash": "' + hashlib.sha1(b"y").hexdigest() + '"',
        "password = get_password(user)",
        "def login(username: str, password: str) -> Token:",
        "token = self.tokenizer.encode(text)",
        "tokenizer='bert-base-uncased'",
        "max_tokens=1000, temperature=0.2",
        "SECRET_KEY='secret',",
        "api_key = os.environ['OPENAI_API_KEY']",
        "password=None",
        "token: ${{ secrets.GITHUB_TOKEN }}",
        "passwords = []",
        'raise ValueError("Enter your password again")',
        "git clone git@github.com:org/repo.git && cd repo",
        "http://localhost:8000/path?x=1",
        "scikit: pip install sk-learn-extensions-for-everyone",
        "Bearer authentication is described in RFC 6750",
        "AKIA is the prefix of AWS access key ids",
        # hashes, ids and encoded text are not keys
        '"sha256": "' + hashlib.sha256(b"z").hexdigest() + '"',
        'checksum = "' + hashlib.md5(b"w").hexdigest() + '"',
        "request_id = '" + str(uuid.UUID(int=123456789)) + "'",
        'token_id = "' + str(uuid.UUID(int=987654321)) + '"',
        '"id": "call_IpyczPgEAwtpRWFZ2RNokTdH"',
        '"tool_call_id": "toolu_01PuY3mXrE6fm3j52GscR4rj"',
        '"id": "chatcmpl-Aw30O6Ka8n1X3F6F7YUh91NxXBE0y"',
        'payload = "' + base64.b64encode(b"The quick brown fox jumps over the lazy dog 42 times.").decode() + '"',
        '"data": "' + base64.b64encode(bytes(range(256)) * 3).decode() + '"',  # a long blob is data
        # code, placeholders, prose
        "password=get_password()",
        "new_secret = 'abcdefghijkl'",
        "SECRET_KEY = 'abcd' * 20",
        'SECRET_KEY = "django_tests_secret_key"',
        "{'PASSWORD': 'somepassword'}",
        "psql --no-password mydb",
        "but --password suffers from the same problem",
        "mysql -u root -p mydb",
        "docker login --password-stdin < token.txt",
        "PASSWORD_RESET_TIMEOUT=3600",
        "API_KEY_HEADER=X-API-Key",
        "curl -u $USER:$PASS https://x.io",
    ],
)
def test_ordinary_code_and_hashes_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []
    assert redact(text) == text


def test_fixtures_have_no_false_positives() -> None:
    for path in sorted(FIXTURES.rglob("*")):
        # The injection corpus plants secrets on purpose (test_injection checks they are redacted).
        if path.is_file() and path.suffix in {".json", ".traj", ".md"} and "injection" not in path.parts:
            text = path.read_text(encoding="utf-8")
            assert find_secrets(text) == [], path.name


def test_spans_are_ordered_and_disjoint() -> None:
    text = f"a {OPENAI} b password='{OPENAI}' c Authorization: Bearer {JWT}"
    found = find_secrets(text)
    spans = [s for _, s in found]
    assert spans == sorted(spans)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    out = redact(text)
    assert OPENAI not in out and JWT not in out
    assert out.count("[REDACTED:") == 3


def _plugin_samples() -> dict[str, str]:
    """One line per detect-secrets vendor plugin that the plugin itself flags (assembled, as above)."""
    hex64 = "0123456789abcdef" * 4
    return {
        "AWS Access Key": "id = " + "AK" + "IA" + "ABCDEFGHIJKLMNOP",
        "Artifactory Credentials": "artifactory = " + "AK" + "Cp8jQ8tVzX1fGhT3vB2nM9kLrW5pYq",
        "Azure Storage Account access key": "AccountKey=" + AZURE[:86] + "==",
        "Basic Auth Credentials": "https://deploy:" + "Xk9mQ2vLq8Zr2LmN5vBx7T" + "@example.com/",
        "Cloudant Credentials": "cloudant_password='" + hex64 + "'",
        "Discord Bot Token": "bot = " + "MTk4NjIyNDgzNDcxOTI1MjQ4" + ".Cl2FMQ." + "ZnCjm1XVW7vRze4b7Cq4se7kKWs",
        "GitHub Token": "token " + GITHUB,
        "GitLab Token": "token " + GITLAB,
        "IBM COS HMAC Credentials": 'cos_secret_access_key = "' + hex64[:48] + '"',
        "IBM Cloud IAM Key": 'ibm_cloud_iam_key = "' + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789-_abcdef" + '"',
        "JSON Web Token": "cookie " + JWT,
        "Mailchimp Access Key": "mc = " + hex64[:32] + "-us12",
        "NPM tokens": "//registry.npmjs.org/:_authToken=" + NPM,
        "OpenAI Token": "key = " + "sk-" + "abcdefghijKLMNOPQRST" + "T3Blbk" + "FJ" + "abcdefghijKLMNOPQRST",
        "PyPI Token": "password = " + "pypi-" + "AgEIcHlwaS5vcmc" + "A1b2C3d4E5" * 8,
        "SendGrid API Key": "SENDGRID="
        + "SG."
        + "abcdefghijklmnopqrstuv"
        + "."
        + "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ",
        "Slack Token": "slack " + SLACK,
        "SoftLayer Credentials": "https://api.softlayer.com/soap/v3/" + hex64,
        "Square OAuth Secret": "square = " + "sq0" + "csp-" + "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456",
        "Stripe Access Key": "stripe = " + "sk" + "_live_" + "abcdefghijklmnopqrstuvwx",
        "Telegram Bot Token": "bot = " + "110201543" + ":" + "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1",
        "Twilio API Key": "twilio = " + "AC" + hex64[:32],
    }


def test_every_detect_secrets_vendor_plugin_is_used() -> None:
    """Each vendor plugin of detect-secrets finds its sample by itself, and find_secrets (which narrows every
    plugin to the lines holding its literal parts) redacts what the plugin found: the narrowing loses nothing."""
    from offline_compress.secrets.detectors import _SKIPPED, _plugins

    samples = _plugin_samples()
    used = {stype for stype, plugin in _plugins().items() if stype not in _SKIPPED and hasattr(plugin, "denylist")}
    assert used == set(samples), "a detect-secrets plugin without a sample here"
    for stype, line in samples.items():
        values = [v for v in _plugins()[stype].analyze_string(line) if v]
        assert values, f"{stype}: the sample does not trigger the plugin itself"
        out = redact(line)
        for value in values:
            if len(value) >= 8:
                assert value not in out, (stype, out)
        assert "[REDACTED:" in out, stype


def test_no_network_and_no_settings() -> None:
    """Scanning never calls a plugin's verify (network) and leaves detect-secrets' global settings alone."""
    from detect_secrets.plugins.base import BasePlugin
    from detect_secrets.settings import get_settings

    before = json.dumps(get_settings().json(), sort_keys=True)
    original = BasePlugin.verify
    calls = []
    BasePlugin.verify = lambda self, *a, **k: calls.append(a)  # type: ignore[method-assign]
    try:
        for line in _plugin_samples().values():
            redact(line)
    finally:
        BasePlugin.verify = original  # type: ignore[method-assign]
    assert calls == []
    assert json.dumps(get_settings().json(), sort_keys=True) == before


def test_a_secret_is_redacted_before_a_cut() -> None:
    """Redacting the full text, then cutting, leaves no piece of the key; cutting first leaves a piece that no
    detector can recognise any more (why callers must redact first)."""
    text = "step 3: python run.py  # with the key " + OPENAI + " from the vault"
    cut_first = text[: text.index(OPENAI) + 12]
    assert OPENAI[:12] in redact(cut_first)  # the piece escapes
    assert OPENAI[:12] not in redact(text)[: len(cut_first) + 20]


def test_prompt_notes_redact_before_cutting() -> None:
    """The digest cuts an assistant note at 400 characters; a key straddling the cut must not leave a piece."""
    from offline_compress.summary.prompt import assistant_notes

    note = "x" * 385 + " " + OPENAI
    notes = assistant_notes([Message(role="assistant", content=note)])
    assert OPENAI[:10] not in notes[0]


def test_redact_message_covers_content_parts_and_arguments_without_mutation() -> None:
    raw = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"my key is {OPENAI}"},
                {"type": "image_url", "image_url": {"url": "x"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {
                        "name": "bash",
                        "arguments": json.dumps({"command": f"curl -u bob:Xk9mQ2vL https://h -H 'x: {GITHUB}'"}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    before = copy.deepcopy(raw)
    messages = [Message.model_validate(m) for m in raw]
    out = redact_messages(messages)
    assert raw == before
    assert out[2] is messages[2]  # nothing to redact: the same object
    assert OPENAI not in out[0].text and "[image_url]" in out[0].text
    args = json.loads(out[1].tool_calls[0].function.arguments)
    assert "Xk9mQ2vL" not in args["command"] and GITHUB not in args["command"]
    assert OPENAI in messages[0].text  # the input messages are unchanged


def test_redacted_arguments_stay_json_when_a_span_ends_in_an_escape() -> None:
    """A private key inside a JSON string: redacting the JSON text as text must not break the JSON."""
    arguments = json.dumps({"content": PEM + "\\", "path": "id_rsa"})
    message = Message.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "write", "arguments": arguments}}],
        }
    )
    out = json.loads(redact_message(message).tool_calls[0].function.arguments)
    assert "MIIEow" not in out["content"] and out["path"] == "id_rsa"


def test_real_trajectories_false_positives_are_few_and_known() -> None:
    """Every message of the mini-swe-agent runs in ../shared: what gets redacted is listed in docs/secrets.md;
    any new find fails here (skipped where the shared folder is absent, as in CI)."""
    from conftest import SHARED_TRAJECTORIES

    shared = SHARED_TRAJECTORIES / "gruckion__mini-swe-agent"
    if not shared.is_dir():
        pytest.skip(f"{shared} is absent")
    from offline_compress.formats import load_history

    finds = []
    for path in sorted(shared.rglob("*.traj.json*")):
        for i, m in enumerate(load_history(path)):
            for kind, (a, b) in find_secrets(m.text):
                finds.append((path.name.split(".")[0], i, kind, m.text[a:b]))
    # Each is a literal in a test or a signed session cookie in test output (docs/secrets.md says why they stay).
    assert sorted({(name, kind) for name, _, kind, _ in finds}) == [
        ("django__django-14315", "password"),
        ("pallets__flask-5014", "jwt"),
    ], finds
