"""The last pass over a finished summary: every string field, tool names and paths included."""

from __future__ import annotations

from offline_compress.summary.redaction import redact_summary
from offline_compress.summary.schema import (
    MAX_TOOL_CHARS,
    CompressedContext,
    Decision,
    FailedAttempt,
    TaskState,
    ToolCallSummary,
)

KEY = "gh" + "p_" + "A1b2C3d4E5f6G7h8J9k0" + "0123456789abcdef"  # assembled: no secret-shaped literal in the repo
NPM = "n" + "pm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _leaky() -> CompressedContext:
    return CompressedContext(
        user_constraints=[f"use the token {KEY} for pushes"],
        decisions=[Decision(decision=f"export GH_TOKEN={KEY}", rationale="curl -u bob:Xk9mQ2vL failed")],
        failed_attempts=[FailedAttempt(approach=f"npm publish --token {NPM}", reason_failed="E403")],
        tool_calls_summary=[
            ToolCallSummary(tool=f"npm:{NPM}", target=f"/home/u/.config/{KEY}/hosts.yml", outcome="error"),
            ToolCallSummary(tool="bash", target="ls", outcome="success"),
        ],
        recent_narrative=f"The agent set PGPASSWORD=hunter22 and used {KEY}.",
        task_state=TaskState(completed=[f"pushed with {KEY}"], remaining=["mysql -u root -pS3cretPw"], blockers=[NPM]),
    )


def test_every_string_field_is_redacted() -> None:
    leaky = _leaky()
    out = redact_summary(leaky)
    text = out.to_json()
    for secret in (KEY, NPM, "Xk9mQ2vL", "hunter22", "S3cretPw"):
        assert secret not in text, secret
    assert out.tool_calls_summary[1] == leaky.tool_calls_summary[1]
    assert out.tool_calls_summary[0].target.startswith("/home/u/.config/[REDACTED:github_token]")
    assert KEY in leaky.to_json()  # the input document is unchanged (a new one is returned)


def test_idempotent_and_valid() -> None:
    once = redact_summary(_leaky())
    assert redact_summary(once) == once
    assert CompressedContext.model_validate_json(once.to_json()) == once
    clean = CompressedContext(recent_narrative="Nothing secret here: commit 3ea751c087f3a1b2c4d5e6f708192a3b4c5d6e7f.")
    assert redact_summary(clean) == clean


def test_a_marker_longer_than_the_secret_is_cut_to_the_bound() -> None:
    """A 48-character tool name ending in a short password: the marker makes it longer than the field allows;
    the result is cut at the bound, still valid, and the password is gone."""
    tool = "x" * (MAX_TOOL_CHARS - len("pwd=Tr0ub4x!")) + "pwd=Tr0ub4x!"
    assert len(tool) == MAX_TOOL_CHARS
    out = redact_summary(
        CompressedContext(tool_calls_summary=[ToolCallSummary(tool=tool, target="", outcome="success")])
    )
    got = out.tool_calls_summary[0].tool
    assert len(got) == MAX_TOOL_CHARS and got.endswith("…") and "Tr0ub4x" not in got
