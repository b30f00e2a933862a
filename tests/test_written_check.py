"""The written state's check (``Compressor(written=True, check=True)``): the model checks each statement of the state
it wrote against the same prompt; the ones it finds unsupported are dropped and reported, and a check that fails
leaves the summary extractive. The verdicts are recorded from a capable model (``tests/written/recordings.json``);
what the check catches on a labelled set is measured in ``test_written_grounding.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from seed_scenario import history

from offline_compress import Compressor
from offline_compress.engine.recorded import RecordedBackend, digest, load_recordings
from offline_compress.summary.written import StateCheck, WrittenState, check_json_schema, statements, without
from offline_compress.summary.written_prompt import check_suffix

RECORDINGS = Path(__file__).parent / "written" / "recordings.json"
KEEP = {"keep_first": None, "keep_last": 5}

STATE = WrittenState.model_validate(
    {
        "findings": ["`issueTokens` sets `httpOnly: true`.", "Tests pass."],
        "decisions": [
            {"decision": "Store the refresh token in a cookie.", "rationale": "XSS."},
            {"decision": "Skip `bcrypt`.", "rationale": ""},
        ],
        "failures": [{"failure": 2, "why": "No Provider."}],
        "task_state": {"completed": ["Login"], "remaining": ["Logout", "Refresh"], "blockers": []},
        "narrative": "It wrote `tokens.ts`. テストは成功した。Then it stopped.",
        "next_step": "Write the logout.",
    }
)


def test_statements_are_numbered_in_one_order_and_dropped_by_number():
    assert statements(STATE) == [
        ("finding", "`issueTokens` sets `httpOnly: true`."),
        ("finding", "Tests pass."),
        ("decision", "Store the refresh token in a cookie."),
        ("its rationale", "XSS."),
        ("decision", "Skip `bcrypt`."),  # no rationale: nothing to check
        ("why failure F2 failed", "No Provider."),
        ("completed", "Login"),
        ("remaining", "Logout"),
        ("remaining", "Refresh"),
        ("narrative", "It wrote `tokens.ts`."),
        ("narrative", "テストは成功した。"),
        ("narrative", "Then it stopped."),
        ("next step", "Write the logout."),
    ]
    check = StateCheck.model_validate(
        {"unsupported": [{"statement": n, "why": "not shown"} for n in (2, 3, 6, 9, 11, 13, 99)]}
    )
    kept, dropped = without(STATE, check)
    assert kept.model_dump() == {
        "findings": ["`issueTokens` sets `httpOnly: true`."],
        "decisions": [{"decision": "Skip `bcrypt`.", "rationale": ""}],  # a decision dropped takes its rationale
        "failures": [],
        "task_state": {"completed": ["Login"], "remaining": ["Logout"], "blockers": []},
        "narrative": "It wrote `tokens.ts`. Then it stopped.",
        "next_step": "",
    }
    assert dropped[0] == "finding: Tests pass. (the model's check: not shown)" and len(dropped) == 6  # 99: none
    only_rationale = StateCheck.model_validate({"unsupported": [{"statement": 4, "why": "no reason given"}]})
    assert without(STATE, only_rationale)[0].decisions[0].rationale == ""
    assert without(STATE, StateCheck(unsupported=[])) == (STATE, [])


def test_the_seed_session_checked_by_a_capable_model():
    """The seed session: its recorded state, then the recorded check of that state (one more request, on the same
    prompt up to the region's end). The model found every statement supported, so the summary is the unchecked one."""
    backend = RecordedBackend(RECORDINGS)
    plain = Compressor(backend=backend, written=True, check=False).compress_detailed(history("ja"), **KEEP)
    checked = Compressor(backend=backend, written=True).compress_detailed(history("ja"), **KEEP)  # checked: default
    assert (checked.stats.attempts, plain.stats.attempts, checked.stats.refuted) == (2, 1, 0)
    assert checked.stats.fallback is None and checked.stats.prompt_tokens > 2 * plain.stats.prompt_tokens
    assert checked.context == plain.context and checked.grounding == plain.grounding


def test_what_the_check_refutes_leaves_the_summary_and_is_reported(tmp_path):
    """The check's verdicts by number (here: the cookie decision and the first narrative sentence) drop exactly
    those statements, whatever grounding would keep; everything read exactly stays."""
    listed = statements(the_state())
    cookie = next(n for n, (kind, text) in enumerate(listed, 1) if kind == "decision" and "httpOnly" in text)
    first = next(n for n, (kind, _) in enumerate(listed, 1) if kind == "narrative")
    verdict = {"unsupported": [{"statement": cookie, "why": "w1"}, {"statement": first, "why": "w2"}]}
    result = recorded_check(tmp_path, json.dumps(verdict)).compress_detailed(history("ja"), **KEEP)
    plain = Compressor(backend=RecordedBackend(RECORDINGS), written=True, check=False).compress_detailed(
        history("ja"), **KEEP
    )
    assert result.stats.refuted == 2 and result.stats.fallback is None
    assert [d for d in result.grounding.dropped if "(the model's check: " in d] == [
        f"decision: {listed[cookie - 1][1]} (the model's check: w1)",
        f"narrative: {listed[first - 1][1]} (the model's check: w2)",
    ]
    assert not any("httpOnly" in d.decision for d in result.context.decisions)
    assert listed[first - 1][1] not in result.context.recent_narrative
    assert len(result.context.decisions) == len(plain.context.decisions) - 1
    assert result.context.user_constraints == plain.context.user_constraints
    assert result.context.failed_attempts[0].reason_failed == plain.context.failed_attempts[0].reason_failed


def the_state() -> WrittenState:
    compressor = Compressor(backend=RecordedBackend(RECORDINGS), written=True)
    prepared = compressor.prepare(history("ja"), **KEEP)
    recordings: dict[str, Any] = load_recordings(RECORDINGS)["recordings"]
    return WrittenState.model_validate(
        recordings[digest(compressor.prefix, prepared.suffix, compressor.schema)]["completion"]
    )


def recorded_check(tmp_path: Path, text: str) -> Compressor:
    """The seed session's recorded state, and ``text`` as its recorded check."""
    compressor = Compressor(backend=RecordedBackend(RECORDINGS), written=True)
    prepared = compressor.prepare(history("ja"), **KEEP)
    recordings: dict[str, Any] = load_recordings(RECORDINGS)["recordings"]
    written_key = digest(compressor.prefix, prepared.suffix, compressor.schema)
    listed = statements(WrittenState.model_validate(recordings[written_key]["completion"]))
    suffix = check_suffix(prepared.checklist, prepared.parts[0], 1, 1, None, listed, compressor.instruct)
    check_key = digest(compressor.prefix, suffix, check_json_schema())
    path = tmp_path / "recordings.json"
    entries = {written_key: recordings[written_key], check_key: {"completion": text}}
    path.write_text(json.dumps({"recordings": entries}, ensure_ascii=False), encoding="utf-8")
    return Compressor(backend=RecordedBackend(path), written=True)


@pytest.mark.parametrize("text", ["All of them hold.", '{"unsupported": [{"statement": 0, "why": "x"}]}'])
def test_a_check_that_fails_leaves_the_summary_extractive(tmp_path, text):
    result = recorded_check(tmp_path, text).compress_detailed(history("ja"), **KEEP)
    assert result.stats.draft_valid is False
    assert result.stats.fallback.startswith("the check of the written state: ")
    assert result.context == Compressor().compress(history("ja"), **KEEP)


def test_a_state_that_says_nothing_is_not_checked(tmp_path):
    """Nothing to check, no request: an empty state (what the embedded 270M model writes) costs no second call."""
    empty = {"findings": [], "decisions": [], "failures": [], "narrative": "", "next_step": ""}
    empty["task_state"] = {"completed": [], "remaining": [], "blockers": []}
    path = tmp_path / "recordings.json"
    path.write_text(json.dumps({"recordings": {}}), encoding="utf-8")
    compressor = Compressor(backend=RecordedBackend(path), written=True)
    key = digest(compressor.prefix, compressor.prepare(history("ja"), **KEEP).suffix, compressor.schema)
    path.write_text(json.dumps({"recordings": {key: {"completion": empty}}}), encoding="utf-8")
    result = compressor.compress_detailed(history("ja"), **KEEP)  # a check asked for would be RecordingMissing
    assert (result.stats.attempts, result.stats.refuted, result.stats.fallback) == (1, 0, None)
