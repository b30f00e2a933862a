"""Secret redaction: every kind is caught, ordinary code and hashes are left alone."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest

from offline_compress.redact import find_secrets, redact

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
JWT = "ey" + "JhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" + ".ey" + "JzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ" + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
PEM = "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEA1b2C3d4E5f6G7h8\nJ9k0L1m2N3o4P5q6r7s8t9u0==\n-----END RSA " + "PRIVATE KEY-----"


@pytest.mark.parametrize(
    "text,kind,secret",
    [
        (f"export OPENAI_API_KEY={OPENAI}", "openai_key", OPENAI),
        (f"client = OpenAI(api_key='{OPENAI_LEGACY}')", "openai_key", OPENAI_LEGACY),
        (f"ANTHROPIC_API_KEY={ANTHROPIC} python run.py", "anthropic_key", ANTHROPIC),
        (f"git clone https://{GITHUB}@github.com/o/r.git", "github_token", GITHUB),
        (f"token: {GITHUB_PAT}", "github_token", GITHUB_PAT),
        (f"aws_access_key_id = {AWS}", "aws_access_key", AWS),
        (f"SLACK_BOT_TOKEN={SLACK}", "slack_token", SLACK),
        (f"https://maps.googleapis.com/maps/api/geocode/json?key={GOOGLE}", "google_api_key", GOOGLE),
        (f"cookie: session={JWT}; path=/", "jwt", JWT),
        ("curl -H 'Authorization: Bearer abcDEF123456ghiJKL789' https://api.x", "bearer_token", "abcDEF123456ghiJKL789"),
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
    ],
)
def test_each_kind_is_found_and_redacted(text: str, kind: str, secret: str) -> None:
    found = find_secrets(text)
    assert (kind, (text.index(secret), text.index(secret) + len(secret))) in found
    out = redact(text)
    assert secret not in out and f"[REDACTED:{kind}]" in out


def test_truncated_private_key_is_still_redacted() -> None:
    text = "-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz\n\nnext paragraph"
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
        'token: ${{ secrets.GITHUB_TOKEN }}',
        "passwords = []",
        'raise ValueError("Enter your password again")',
        "git clone git@github.com:org/repo.git && cd repo",
        "http://localhost:8000/path?x=1",
        "scikit: pip install sk-learn-extensions-for-everyone",
        "Bearer authentication is described in RFC 6750",
        "AKIA is the prefix of AWS access key ids",
    ],
)
def test_ordinary_code_and_hashes_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []
    assert redact(text) == text


def test_fixtures_have_no_false_positives() -> None:
    for path in sorted(FIXTURES.rglob("*")):
        if path.is_file() and path.suffix in {".json", ".traj", ".md"}:
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


def test_linear_time_on_adversarial_input() -> None:
    evil = ("sk-" + "a" * 50 + " ") * 2000 + "password=" * 5000 + "eyJ" + "a" * 20000 + "://" + "x:" * 10000
    t = time.perf_counter()
    redact(evil)
    assert time.perf_counter() - t < 2.0
