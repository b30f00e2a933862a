"""The written-state mode end to end, offline and deterministic: the prompt, the constrained output (recorded
completions written by a capable model, validated), grounding, the merge, and the hook, on three fixture histories
(the seed's session in Japanese, a mini-swe-agent run written in three parts, a Claude Code session). The model's
check of what it wrote is off here but in the hook (the default): ``test_written_check.py`` tests it.

The completions are in ``tests/written/recordings.json`` (who wrote them is in the file). A prompt change changes
its digest: run these tests with ``OFFLINE_COMPRESS_EXPORT=DIR`` to export the new prompts for a writer, then
``python -m offline_compress.engine.recorded import DIR tests/written/recordings.json --writer "..."``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from seed_scenario import WORDS, history

from offline_compress import CompactionHook, Compressor
from offline_compress.engine.recorded import RecordedBackend, load_recordings
from offline_compress.formats import load_history
from offline_compress.summary.intake import NEXT_STEP
from offline_compress.summary.message import parse_summary_message
from offline_compress.summary.written import StateCheck, WrittenState

FIXTURES = Path(__file__).parent / "fixtures"
RECORDINGS = Path(__file__).parent / "written" / "recordings.json"
DJANGO = FIXTURES / "mini-swe-agent" / "django__django-11163.traj.json"
CLAUDE = FIXTURES / "claude-code" / "97b0ffde-ece9-4977-91cb-5c8cdeabdf3f.jsonl.gz"
SPLIT = {"n_ctx": 5000, "max_tokens": 1024}  # the django run's region does not fit: written in three parts


class Calls(RecordedBackend):
    """The recorded backend, keeping the suffix of each prompt it was asked."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.suffixes: list[str] = []

    def generate(self, prefix: str, suffix: str, *args: Any, **kwargs: Any) -> Any:
        self.suffixes.append(suffix)
        return super().generate(prefix, suffix, *args, **kwargs)


def backend(n_ctx: int = 32_768) -> Calls:
    return Calls(RECORDINGS, export_to=os.environ.get("OFFLINE_COMPRESS_EXPORT") or None, n_ctx=n_ctx)


def written(history_: Any, *, n_ctx: int = 32_768, max_tokens: int = 2048) -> Any:
    compressor = Compressor(
        backend=backend(n_ctx), written=True, check=False, max_tokens=max_tokens, summary_tokens=None
    )
    return compressor, compressor.compress_detailed(history_, keep_first=None, keep_last=5)


def extractive(history_: Any) -> Any:
    return Compressor(summary_tokens=None).compress_detailed(history_, keep_first=None, keep_last=5).context


def exact_fields(context: Any) -> dict[str, Any]:
    """What is read exactly: never re-typed by the model (the failures' ``then`` aside, which its reasons fill).
    Compared without a token budget: within one, the work log leaves out lines whose names the rest of the summary
    shows (merge.fit), the model's sentences included."""
    doc = json.loads(context.to_json())
    doc["failed_attempts"] = [{k: v for k, v in f.items() if k != "then"} for f in doc["failed_attempts"]]
    for k in ("decisions", "recent_narrative", "task_state", "findings"):
        doc.pop(k, None)
    return doc


def test_the_recordings_are_valid_written_states_and_say_who_wrote_them():
    data = load_recordings(RECORDINGS)
    assert "acting as the recorded writer" in data["about"]
    assert len(data["recordings"]) == 10
    for entry in data["recordings"].values():
        model = StateCheck if "unsupported" in entry["completion"] else WrittenState
        model.model_validate(entry["completion"])
        assert "acting as the recorded writer" in entry["writer"]
        assert entry["prompt_tokens"] > entry["completion_tokens"] > 0


def test_the_seed_session_in_japanese_is_written_and_grounded():
    """The model's decisions replace the positional ones, its failure reasons fill ``then``, its narrative and next
    step lead the narrative, its findings say what the agent established; every user turn, file, error and step
    stays as the extractor read it."""
    compressor, result = written(history("ja"))
    stats, summary = result.stats, result.context
    assert (stats.draft_valid, stats.fallback, stats.parts, stats.attempts) == (True, None, 1, 1)
    assert stats.backend == compressor.backend.name and stats.prompt_tokens > 1000 and stats.generated_tokens > 100
    # a capable writer's statements hold but one: a signature in backticks not as the log writes it
    # (`issueTokens(res: Response, userId: string, secret: string)`); "全テスト成功（8/8）" holds by "Tests  8 passed (8)"
    [signature] = result.grounding.dropped
    assert "`issueTokens(res, userId, secret)`" in signature and result.grounding.kept > 20
    assert "全テスト成功（8/8）" in summary.task_state.completed
    assert exact_fields(summary) == exact_fields(extractive(history("ja")))
    words = WORDS["ja"]
    assert words["mid_user"] in summary.user_constraints
    cookie = [d for d in summary.decisions if "httpOnly" in d.decision]
    assert len(cookie) == 1 and "XSS" in cookie[0].rationale
    assert not any(d.decision == "App.tsx で useAuth を使ってログイン状態を表示します。" for d in summary.decisions)
    [install, tests] = summary.failed_attempts
    assert install.reason_failed == "npm ERR! code EAI_AGAIN" and "ネットワーク" in install.then
    assert "AuthProvider" in tests.then and tests.resolved_by
    narrative = summary.recent_narrative
    assert narrative.startswith("`package.json` を確認した後") and NEXT_STEP in narrative
    assert narrative.index(NEXT_STEP) < narrative.index("[assistant]")  # the agent's last words follow, exact
    assert any("ログアウト" in x and "トップページ" in x for x in summary.task_state.remaining)
    # what the agent established, which no extracted field says: the login API it reported done is still a stub
    assert any("`src/auth/login.ts`" in f and "スタブ" in f for f in summary.findings)


def test_the_hook_compacts_with_the_written_state(tmp_path):
    """CompactionHook(compressor=Compressor(backend=RecordedBackend(...), written=True)) on the Claude Code session:
    the same prompt as the compressor's below (the hook keeps the head and the last 5), so the same recording. (The
    seed session is too short to compact: its summary would not be smaller.)"""
    compressor = Compressor(backend=backend(), written=True)
    with CompactionHook(32_768, compressor=compressor, archive_path=tmp_path / "a.sqlite3") as hook:
        out = hook.compact(load_history(CLAUDE))
        [metrics] = hook.metrics
    assert metrics.outcome == "compacted" and metrics.tokens_after < metrics.tokens_before / 2
    assert metrics.groundedness == 24 / 28  # the command templates dropped (below)
    summary = parse_summary_message(next(m for m in _messages(out) if m.text.startswith("[CONTEXT_SUMMARY]")))
    assert summary is not None
    assert any("ipconfig" in d.decision for d in summary.decisions)
    assert any("BashOutput" in f.then for f in summary.failed_attempts)
    assert "I want you to figureout the router address and ssh into it" in summary.user_constraints


def _messages(raw: list[Any]) -> list[Any]:
    from offline_compress.history.messages import as_messages

    return as_messages(raw)


def test_a_region_over_the_window_is_written_in_parts_each_carried_into_the_next():
    compressor, result = written(load_history(DJANGO), **SPLIT)
    stats = result.stats
    assert (stats.draft_valid, stats.fallback, stats.parts, stats.attempts) == (True, None, 3, 3)
    first, second, third = compressor.backend.suffixes
    assert "(part 1 of 3)" in first and "(part 2 of 3)" in second and "(part 3 of 3)" in third
    for n, suffix in ((1, second), (2, third)):
        carried = suffix.split(f"## State written from parts 1-{n} of 3\n", 1)[1].split("\n", 1)[0]
        WrittenState.model_validate_json(carried)  # the state so far, as the model wrote it, in the next prompt
    parts = (first, second, third)
    assert stats.prompt_tokens == sum(compressor.backend.count(compressor.prefix + s) + 1 for s in parts)
    assert result.grounding.dropped == []
    assert exact_fields(result.context) == exact_fields(extractive(load_history(DJANGO)))
    assert len(result.context.decisions) == 3 and "check_fields_for_model.py" in result.context.recent_narrative
    assert any("`model_to_dict`" in f and "`if fields and f.name not in fields:`" in f for f in result.context.findings)


def test_each_part_is_checked_before_its_state_goes_on():
    """With the check (the default), the same three parts (the check's room, ``max_tokens`` more, is given by a larger
    window): after each part's state, its check, on that part's prompt up to the region's end, the state carried
    from the parts before included. The model found every statement supported: the summary is the unchecked one."""
    backend_ = backend(SPLIT["n_ctx"] + 1272)
    compressor = Compressor(backend=backend_, written=True, max_tokens=SPLIT["max_tokens"], summary_tokens=None)
    result = compressor.compress_detailed(load_history(DJANGO), keep_first=None, keep_last=5)
    stats = result.stats
    assert (stats.draft_valid, stats.fallback, stats.parts, stats.attempts, stats.refuted) == (True, None, 3, 6, 0)
    asked = backend_.suffixes
    for n in (1, 2, 3):
        write, check = asked[2 * n - 2], asked[2 * n - 1]
        region_end = write.index("## The working state as JSON")
        assert f"(part {n} of 3)" in write and check[:region_end] == write[:region_end]
        assert "## Check the working state" in check and "\n1. (finding) " in check
    _, unchecked = written(load_history(DJANGO), **SPLIT)
    assert result.context == unchecked.context


def test_a_claude_code_session_is_written_in_one_part():
    compressor, result = written(load_history(CLAUDE))
    assert (result.stats.draft_valid, result.stats.parts) == (True, 1)
    # the statements dropped write a command as a template, not as the log has it (the router's address is redacted
    # there, `root@[REDACTED_IP]`; the writer wrote `root@<router>`)
    assert len(result.grounding.dropped) == 4
    assert all("root@<router>" in dropped for dropped in result.grounding.dropped)
    assert exact_fields(result.context) == exact_fields(extractive(load_history(CLAUDE)))
    assert result.context.decisions and result.context.task_state.remaining


@pytest.mark.parametrize("name", ["seed-ja", "django", "claude-code"])
def test_the_written_summary_is_a_valid_compressed_context(name):
    history_ = {"seed-ja": history("ja"), "django": load_history(DJANGO), "claude-code": load_history(CLAUDE)}[name]
    _, result = written(history_, **(SPLIT if name == "django" else {}))
    from offline_compress.summary.schema import CompressedContext

    assert CompressedContext.model_validate_json(result.context.to_json()) == result.context


def test_under_a_tight_budget_the_work_log_gives_way_to_the_models_decisions():
    """The decisions are what the model was asked to judge: within a budget the written mode keeps them and packs the
    work log into the room left, where the extractive default drops its positional decisions first (merge.fit)."""
    from offline_compress.tokens.counter import default_counter

    budget, counter = 1200, default_counter()
    compressor = Compressor(backend=backend(), written=True, summary_tokens=None)
    whole = compressor.compress_detailed(load_history(CLAUDE), keep_first=None, keep_last=5).context
    fitted = compressor.compress_detailed(
        load_history(CLAUDE), keep_first=None, keep_last=5, summary_tokens=budget
    ).context
    plain = (
        Compressor(summary_tokens=None)
        .compress_detailed(load_history(CLAUDE), keep_first=None, keep_last=5, summary_tokens=budget)
        .context
    )
    assert counter.count_text(whole.to_json()) > budget >= counter.count_text(fitted.to_json())
    assert fitted.decisions == whole.decisions and len(fitted.work_log) < len(whole.work_log)
    assert plain.decisions == [] and len(plain.work_log) > len(fitted.work_log)
