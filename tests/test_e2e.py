"""End to end through the real model (no mock in the path): real trajectories in, schema-valid, grounded,
deterministic summaries out; the hook archives before it replaces."""

import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest

from offline_compress import CompactionHook, CompressedContext, compress_context
from offline_compress.errors import EmptyHistoryError
from offline_compress.extract.prose import prose
from offline_compress.formats import load_history
from offline_compress.summary.message import SUMMARY_PREFIX
from offline_compress.summary.prompt import closing

FIXTURES = Path(__file__).parent / "fixtures"
TRAJECTORIES = sorted(
    p
    for p in FIXTURES.rglob("*")
    if p.suffix in {".json", ".traj", ".md"}
    and "LICENSE" not in p.name
    and p.name != "ATTRIBUTION.md"
    and "injection" not in p.parts
)


@pytest.fixture(scope="session")
def summaries(compressor):
    """Each fixture compressed once per session (the slow part), shared by the checks below."""
    out = {}
    for path in TRAJECTORIES:
        messages = load_history(path)
        if len(messages) <= 6:
            continue
        out[path.name] = (messages, compressor.compress_detailed(messages))
    return out


def test_every_fixture_gives_a_valid_document(summaries):
    assert len(summaries) >= 6
    for name, (_, result) in summaries.items():
        doc = CompressedContext.model_validate_json(result.context.to_json())
        assert doc == result.context, name
        assert result.stats.draft_valid, name


def test_constraints_are_verbatim_user_or_system_text(summaries):
    for name, (messages, result) in summaries.items():
        sources = [m.text for m in messages if m.role in ("user", "system", "developer")]
        for constraint in result.context.user_constraints:
            assert any(constraint in text for text in sources), (name, constraint)


def test_narrative_bridges_to_the_kept_messages_without_repeating_them(summaries):
    for name, (messages, result) in summaries.items():
        narrative = result.context.recent_narrative
        cut = result.stats.messages_compressed
        said = [m for m in messages[:cut] if m.role == "assistant" and prose(m.text)][-2:]
        for m in said:  # the agent's last words before the cut, as the bridge
            assert "[assistant] " + " ".join(prose(m.text).split())[:40] in narrative, name
        # Only those: the kept messages follow the summary verbatim, so they are not repeated in it.
        bridge = [line for line in narrative.splitlines() if line.startswith("[")]
        assert 0 < len(bridge) <= len(said) and all(line.startswith("[assistant] ") for line in bridge), name


def test_grounding_accounts_for_every_model_item_and_keeps_none_it_dropped(summaries):
    for name, (_, result) in summaries.items():
        report, context, facts = result.grounding, result.context, result.facts
        assert report.checked >= 1 and report.kept + len(report.dropped) == report.checked, name
        lines = context.recent_narrative.split("\n")
        head = " ".join(lines[: next((k for k, x in enumerate(lines) if x.startswith("[")), len(lines))])
        written = [x for x in re.split(r"(?<=[.!?])\s+", head) if x.strip()]  # the model's sentences
        extracted = {x for d in facts.state.decisions for x in (d.decision, d.rationale)}
        written += [x for d in context.decisions for x in (d.decision, d.rationale) if x and x not in extracted]
        state = context.task_state
        written += [
            x
            for x in (*state.completed, *state.remaining, *state.blockers)
            if not x.startswith(("fixed: ", "Task: ")) and x not in {f.reason_failed for f in context.failed_attempts}
        ]
        assert not set(report.dropped) & {x.strip() for x in written}, name


def test_mini_swe_agent_constraint_and_failures_kept(summaries):
    messages, result = summaries["django__django-11163.traj.json"]
    joined = "\n".join(result.context.user_constraints)
    assert "DO NOT MODIFY: Tests, configuration files (pyproject.toml, setup.cfg, etc.)" in joined
    # The agent's actions survive as the work log (tool_calls_summary is the first field the budget drops);
    # every command it records was run: it appears in one of the caller's assistant messages.
    steps = result.context.work_log or result.context.tool_calls_summary
    assert steps
    said = "\n".join(m.content or "" for m in messages if m.role == "assistant")
    for step in result.context.work_log:
        assert step.ran.split("\n")[0] in said, step.ran


def test_same_input_same_bytes_across_processes(compressor, summaries, model_path):
    path = FIXTURES / "mini-swe-agent" / "github_issue.traj.json"
    messages = load_history(path)
    first = compressor.compress(messages).to_json()
    assert compressor.compress(messages).to_json() == first  # prefix cache warm now: still the same bytes
    cli = subprocess.run(
        [sys.executable, "-m", "offline_compress.cli", "compress", str(path), "--model", str(model_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.strip() == first
    assert "compressed" in cli.stderr  # progress goes to stderr, the document alone to stdout


def test_prepare_gives_the_prompt_that_compress_decodes(compressor, summaries):
    messages, result = summaries["django__django-11163.traj.json"]
    prepared = compressor.prepare(messages)
    assert prepared.cut == result.stats.messages_compressed and prepared.target == messages[: prepared.cut]
    assert prepared.facts == result.facts
    prompt = compressor.backend.tokenize(compressor.prefix + prepared.suffix, add_bos=True)
    assert len(prompt) == result.stats.prompt_tokens
    assert prepared.suffix.endswith(closing(compressor.instruct)) and len(prepared.suffix) > 500  # digest + closing
    with pytest.raises(EmptyHistoryError):
        compressor.prepare(messages[:3])


def test_empty_target_is_an_explicit_error(compressor):
    with pytest.raises(EmptyHistoryError):
        compressor.compress([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])


def test_hook_archives_then_replaces_and_merges_next_time(compressor, tmp_path):
    messages = load_history(FIXTURES / "mini-swe-agent" / "django__django-11163.traj.json")
    history = [m.to_openai() for m in messages]
    snapshot = copy.deepcopy(history)
    # 8,268 tokens: over the trigger's 85% of 9,500 (the history fired 60% of 11,000 until 2026-12-07)
    hook = CompactionHook(model_max_tokens=9_500, archive_path=tmp_path / "archive.sqlite3", compressor=compressor)
    new = hook.before_step(history)
    assert history == snapshot  # the caller's list and dicts are untouched
    assert new[:2] == history[:2]  # the system prompt and the task stay verbatim
    assert new[2]["role"] == "system" and new[2]["content"].startswith(SUMMARY_PREFIX)
    kept = len(new) - 3
    assert new[3:] == history[-kept:] and kept >= 5
    assert hook.archive.replaced(1) == list(enumerate(history[2:-kept], 2))
    assert hook.archive.restore(1) == history  # undo: the whole history as the agent had it
    metric = hook.metrics[-1]
    assert metric.reason == "token-threshold" and metric.outcome == "compacted"
    assert metric.tokens_after < metric.tokens_before and metric.head == 2
    assert hook.turns_since_last_compression == 0
    first_summary = CompressedContext.model_validate_json(new[2]["content"][len(SUMMARY_PREFIX) :].split("\n")[0])

    # The agent goes on; the next compaction merges the previous summary with the new messages only.
    more = new + [
        {"role": "assistant", "content": f"step {i}"} if i % 2 else {"role": "user", "content": f"ok {i}"}
        for i in range(12)
    ]
    hook.trigger = hook.trigger.model_copy(update={"turn_limit": 1})
    hook.turns_since_last_compression = 1
    newer = hook.before_step(more)
    assert newer[:2] == history[:2] and hook.compactions == 2
    second = CompressedContext.model_validate_json(newer[2]["content"][len(SUMMARY_PREFIX) :].split("\n")[0])
    for constraint in first_summary.user_constraints:
        assert constraint in second.user_constraints
    assert hook.metrics[-1].reason == "turn-limit"


def test_compress_context_function_matches_the_object(compressor):
    messages = load_history(FIXTURES / "mini-swe-agent" / "github_issue.traj.json")
    assert compress_context(messages, compressor=compressor) == compressor.compress(messages)
