"""Issue 22's secret kinds (Azure connection strings and SAS tokens, GCP service-account keys, ``sk-proj-`` and
``sk-ant-`` keys, ``github_pat_`` tokens, database URLs with passwords, ``.env`` lines, JWTs): each is found
and redacted by itself, and none reaches any output of a compaction when it sits in a command, a tool output,
a tool call's arguments or the user's text: the summary, its Markdown rendering, the metrics, the logs and
the recall tool's answer (docs/secrets.md)."""

from __future__ import annotations

import json
import logging
import string

import pytest

from offline_compress import CompactionHook
from offline_compress.compressor import Compressor
from offline_compress.hook.config import HookConfig
from offline_compress.secrets.redact import find_secrets, redact
from offline_compress.summary.render import to_markdown

# Fake credentials, assembled at run time so that the repository holds no secret-shaped literal.
_ALNUM = string.ascii_letters + string.digits


def _chars(n: int, alphabet: str = _ALNUM, step: int = 7) -> str:
    return "".join(alphabet[(i * step + i // len(alphabet)) % len(alphabet)] for i in range(n))


AZURE_ACCOUNT_KEY = _chars(86, _ALNUM + "+/") + "=="
AZURE_BUS_KEY = _chars(43, _ALNUM + "+/", 11) + "="
SAS_SIG = "r7Qw2" + "%2B" + _chars(38, step=5) + "%3D"
PEM_BODY = "\\n".join(_chars(64, _ALNUM + "+/", s) for s in (3, 5, 9, 13))
GCP_PRIVATE_KEY = "-----BEGIN " + "PRIVATE KEY-----\\n" + PEM_BODY + "\\n-----END " + "PRIVATE KEY-----\\n"
OPENAI_PROJECT = "sk-" + "proj-" + _chars(74, _ALNUM + "_-", 3) + "T3Blbk" + "FJ" + _chars(74, _ALNUM + "_-", 5)
ANTHROPIC = "sk-" + "ant-api03-" + _chars(93, _ALNUM + "_-", 9) + "-AA"
GITHUB_PAT = "github_" + "pat_" + "11ABCDEFG0" + _chars(12) + "_" + _chars(59, step=3)
JWT = (
    "ey"
    + "JhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9"
    + ".ey"
    + "JzdWIiOiJhZ2VudCIsInNjb3BlIjoicmVwbyIsImV4cCI6MTkwMDAwMDAwMH0"
    + "."
    + _chars(43, _ALNUM + "_-", 13)
)

# (kind, the text it sits in, the secret that must not survive, a word of its context for a recall query)
KINDS = [
    (
        "azure_key",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
        + AZURE_ACCOUNT_KEY
        + ";EndpointSuffix=core.windows.net",
        AZURE_ACCOUNT_KEY,
        "EndpointSuffix",
    ),
    (
        "azure_key",
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey="
        + AZURE_BUS_KEY,
        AZURE_BUS_KEY,
        "servicebus",
    ),
    (
        "azure_sas",
        "https://acct.blob.core.windows.net/builds/app.tar.gz?sv=2022-11-02&ss=b&srt=o&sp=r"
        "&se=2030-01-01T00:00:00Z&spr=https&sig=" + SAS_SIG,
        SAS_SIG,
        "blob",
    ),
    (
        "azure_sas",
        "BlobEndpoint=https://acct.blob.core.windows.net/;SharedAccessSignature=sv=2021-06-08&ss=b&srt=sco&sp=rl"
        "&se=2030-01-01&sig=" + SAS_SIG,
        SAS_SIG,
        "SharedAccessSignature",
    ),
    (
        "private_key",
        '{"type": "service_account", "project_id": "demo-123", "private_key": "'
        + GCP_PRIVATE_KEY
        + '", "client_email": "ci@demo-123.iam.gserviceaccount.com"}',
        GCP_PRIVATE_KEY,
        "service_account",
    ),
    ("openai_key", "export OPENAI_API_KEY=" + OPENAI_PROJECT, OPENAI_PROJECT, "OPENAI_API_KEY"),
    ("anthropic_key", "client = Anthropic(api_key=" + ANTHROPIC + ")", ANTHROPIC, "Anthropic"),
    ("github_token", "git push https://" + GITHUB_PAT + "@github.com/org/repo.git", GITHUB_PAT, "github"),
    ("url_credentials", "psql postgresql://app:S3cr3t-pw9@db.internal:5432/app -c 'select 1'", "S3cr3t-pw9", "psql"),
    (
        "url_credentials",
        "mongosh mongodb+srv://admin:Zx9kLm2Qp@cluster0.ab1cd.mongodb.net/test",
        "Zx9kLm2Qp",
        "mongosh",
    ),
    ("url_credentials", "redis-cli -u redis://:R3disPass99@cache:6379/0 ping", "R3disPass99", "redis"),
    ("url_credentials", "DATABASE_URL=mysql://root:p@ss9w0rd@10.0.0.5:3306/shop", "p@ss9w0rd", "shop"),
    ("api_key", "ENCRYPTION_KEY=9f2b7c1d4e8a6b3c0d5e7f1aQ", "9f2b7c1d4e8a6b3c0d5e7f1aQ", "ENCRYPTION_KEY"),
    ("password", "DB_PASS=hunter2hunter", "hunter2hunter", "DB_PASS"),
    ("token", "export TWILIO_AUTH_TOKEN=" + _chars(32, "0123456789abcdef"), _chars(32, "0123456789abcdef"), "TWILIO"),
    (
        "api_key",
        "APP_KEY=base64:" + _chars(43, _ALNUM + "+/", 3) + "=",
        "base64:" + _chars(43, _ALNUM + "+/", 3),
        "APP_KEY",
    ),
    ("jwt", "curl -H 'X-Session: " + JWT + "' https://api.internal/v1/me", JWT, "Session"),
]


@pytest.mark.parametrize("kind,text,secret,word", KINDS, ids=[f"{k[0]}-{i}" for i, k in enumerate(KINDS)])
def test_each_kind_is_found_and_redacted(kind: str, text: str, secret: str, word: str) -> None:
    found = find_secrets(text)
    a = text.index(secret)
    assert any(k == kind and s <= a and a + len(secret) <= e for k, (s, e) in found), found
    out = redact(text)
    assert secret not in out and f"[REDACTED:{kind}]" in out
    # no piece of the secret survives either (a key redacted in part still leaks)
    assert all(secret[i : i + 12] not in out for i in range(0, max(1, len(secret) - 12), 6))


@pytest.mark.parametrize(
    "text",
    [
        "PASSWORD_RESET_TIMEOUT=3600",
        "SSH_KEY_PATH=/home/dev/.ssh/id_ed25519",
        "TOKEN_URL=https://auth.example.com/oauth/token",
        "SORT_KEY=created_at",
        "CACHE_KEY=release_v2",
        "AUTH_PROVIDER=github",
        "export API_KEY_HEADER=X-API-Key",
        "https://example.com/search?q=sig&sig=abc",  # no signed version near it: not a SAS
        "https://example.com/a?sig=" + _chars(40) + "&page=2",
        "git@github.com:org/repo.git",
        "ssh://git@host:22/repo.git",
        "postgresql://localhost:5432/app",
        "mysql://root@localhost/db",
    ],
)
def test_settings_about_credentials_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == [], find_secrets(text)


def _history(secret_text: str) -> list[dict]:
    """A function-calling run with ``secret_text`` in the user's text, a command, a tool output and a tool
    call's arguments, all before the cut; long enough that a 2,000-token window compacts it."""
    filler = [f"tests/test_mod{i}.py::test_case PASSED" for i in range(60)]
    steps: list[dict] = []
    for i in range(8):
        steps += [
            {
                "role": "assistant",
                "content": f"Step {i}: checking the module.",
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"command": f"pytest -q tests/{i}"})},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"c{i}", "content": "\n".join(filler)},
        ]
    planted = [
        {"role": "user", "content": f"Use this for the deployment, do not print it: {secret_text}"},
        {
            "role": "assistant",
            "content": "Running it.",
            "tool_calls": [
                {
                    "id": "s1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": secret_text})},
                },
                {
                    "id": "s2",
                    "type": "function",
                    "function": {
                        "name": "write_file",
                        "arguments": json.dumps({"path": "deploy/config.env", "content": secret_text + "\n"}),
                    },
                },
            ],
        },
        {"role": "tool", "tool_call_id": "s1", "content": f"error: connection refused\nused: {secret_text}\nexit 1"},
        {"role": "tool", "tool_call_id": "s2", "content": "written"},
    ]
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Deploy the service and make the tests pass."},
        *planted,
        *steps,
        {"role": "assistant", "content": "All tests pass now."},
    ]


@pytest.fixture(scope="module")
def extractive() -> Compressor:
    return Compressor(None)


@pytest.mark.parametrize("render", ["json", "markdown"])
@pytest.mark.parametrize("kind,text,secret,word", KINDS, ids=[f"{k[0]}-{i}" for i, k in enumerate(KINDS)])
def test_no_output_of_a_compaction_holds_the_secret(
    kind: str, text: str, secret: str, word: str, render: str, extractive, tmp_path, caplog
) -> None:
    history = _history(text)
    caplog.set_level(logging.DEBUG, logger="offline_compress")
    with CompactionHook(
        2000, HookConfig(render=render), archive_path=tmp_path / "a.sqlite3", compressor=extractive
    ) as hook:
        new = hook.before_step(history)
        assert hook.compactions == 1, hook.metrics[-1]
        _, recall = hook.recall_tool()
        answers = [recall({"query": q, "k": 10}) for q in (word, "deployment", "connection refused", "config.env")]
        outputs = {
            "history": json.dumps(new[:3], ensure_ascii=False),  # head and summary (what follows is verbatim)
            "summary": hook.summary.to_json() if hook.summary else "",
            "markdown": to_markdown(hook.summary) if hook.summary else "",
            "metrics": json.dumps([m.model_dump(mode="json") for m in hook.metrics], ensure_ascii=False),
            "logs": "\n".join(
                r.getMessage() + json.dumps(getattr(r, "offline_compress", None), default=str) for r in caplog.records
            ),
            "recall": "\n".join(answers),
        }
    assert any(secret[:12] in m.get("content", "") or secret[:12] in json.dumps(m) for m in history[2:6])
    assert "[REDACTED:" in outputs["recall"]  # the planted messages were archived and found
    for name, out in outputs.items():
        for piece in {secret, secret[:16], secret[-16:]}:
            assert piece not in out, (name, piece)
