"""Our contract with mini-swe-agent (written by us, not copied from it): ``CompactingAgent`` runs mini-swe-agent's
own ``DefaultAgent`` loop, with its own deterministic test models and a real ``LocalEnvironment``, in all three of
its message formats: text-based actions (``DeterministicModel``: a ```` ```mswea_bash_command ```` block, the
output a user message), tool calls (``DeterministicToolcallModel``: ``tool_calls`` answered by ``tool`` messages)
and the Responses API (``DeterministicResponseAPIToolcallModel``: response objects and ``function_call_output``
items).

The invariants the framework relies on: a call is never separated from its output; the summary sits after the
head (``agent.messages`` is ``[system, task, summary, *recent]``); no compaction below the threshold; the head is
kept; a run completes (submitted); the trajectory keeps every message; and the loop guard's cases."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from offline_compress import CompactionHook, Compressor
from offline_compress.history.messages import as_messages
from offline_compress.hook.config import HookConfig
from offline_compress.hook.shrink import CUT_NOTE
from offline_compress.summary.message import SUMMARY_PREFIX

adapter = pytest.importorskip("offline_compress.integrations.mini_swe_agent", reason="mini-swe-agent not installed")

FORMATS = ["text", "toolcall", "response"]
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def model_for(kind: str, commands: list[str], thought: str = "I'll look at it.") -> Any:
    from minisweagent.models import test_models as tm

    steps = [*commands, SUBMIT]
    if kind == "text":
        outputs = [
            tm.make_output(f"THOUGHT: {thought}\n\n```mswea_bash_command\n{c}\n```", [{"command": c}]) for c in steps
        ]
        return tm.DeterministicModel(outputs=outputs)
    if kind == "toolcall":
        outputs = []
        for i, c in enumerate(steps):
            call = {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": c})},
            }
            outputs.append(tm.make_toolcall_output(thought, [call], [{"command": c, "tool_call_id": f"call_{i}"}]))
        return tm.DeterministicToolcallModel(outputs=outputs)
    outputs = [
        tm.make_response_api_output(thought, [{"command": c, "tool_call_id": f"call_{i}"}]) for i, c in enumerate(steps)
    ]
    return tm.DeterministicResponseAPIToolcallModel(outputs=outputs)


def agent_for(kind: str, model: Any, hook: CompactionHook, workdir: Path, system: str = "") -> Any:
    from minisweagent.environments.local import LocalEnvironment

    config = adapter.builtin_config("mini_textbased" if kind == "text" else "mini")["agent"]
    if system:
        config["system_template"] = system
    config["step_limit"] = 0
    config["cost_limit"] = 0
    return adapter.CompactingAgent(model, LocalEnvironment(cwd=str(workdir)), hook=hook, **config)


def prompts_of(agent: Any) -> list[list[dict[str, Any]]]:
    """Every history the model was given, recorded by wrapping its ``query``."""
    seen: list[list[dict[str, Any]]] = []
    query = agent.model.query

    def recording(messages: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        seen.append(list(messages))
        return query(messages, **kwargs)

    agent.model.query = recording
    return seen


def repo(tmp_path: Path, files: int = 20, lines: int = 40) -> Path:
    work = tmp_path / "repo"
    (work / "src").mkdir(parents=True)
    for i in range(files):
        (work / "src" / f"m{i}.py").write_text("".join(f"value_{i}_{k} = compute({k})\n" for k in range(lines)))
    return work


def hook_for(tmp_path: Path, window: int, **kwargs: Any) -> CompactionHook:
    return CompactionHook(
        window, HookConfig(recall_note="", **kwargs), archive_path=tmp_path / "a.sqlite3", compressor=Compressor(None)
    )


def paired(history: list[Any]) -> None:
    """No output without its call: what follows the summary is never a tool output, and every tool message (or
    output item) answers a call made before it."""
    from offline_compress.history.conventions import is_tool_output

    parsed = as_messages(history)
    summary = next(i for i, m in enumerate(parsed) if m.text.startswith(SUMMARY_PREFIX))
    assert summary + 1 == len(parsed) or not is_tool_output(parsed, summary + 1)
    made = set()
    for m in parsed:
        made |= {c.id for c in m.tool_calls or ()}
        if m.role == "tool":
            assert m.tool_call_id in made


@pytest.mark.parametrize("kind", FORMATS)
def test_a_run_compacts_keeps_the_head_and_never_splits_a_call(kind, tmp_path):
    work = repo(tmp_path)
    hook = hook_for(tmp_path, 6000)
    agent = agent_for(kind, model_for(kind, [f"cat src/m{i}.py" for i in range(20)]), hook, work)
    prompts = prompts_of(agent)
    result = agent.run("Fix the crash in src/app.py. Do not modify the tests.")
    assert result["exit_status"] == "Submitted"  # the run completes
    assert hook.compactions >= 2
    head = agent.trajectory[:2]
    threshold = hook.trigger.token_fraction * hook.model_max_tokens
    compactions = 0
    for prompt in prompts:
        assert prompt[:2] == head  # the system prompt and the task, verbatim, at every step
        if hook.compactions and any(
            isinstance(m.get("content"), str) and m["content"].startswith(SUMMARY_PREFIX) for m in prompt
        ):
            assert prompt[2]["content"].startswith(SUMMARY_PREFIX)  # the summary right after the head
            paired(prompt)
            compactions += 1
    assert compactions >= 1
    for m in hook.metrics:
        assert m.tokens_before > threshold and m.outcome == "compacted"  # never below the threshold
        assert m.tokens_after <= hook.target_tokens or m.over_target
    # the trajectory and the archive keep every message
    assert len(agent.trajectory) > len(agent.messages)
    first = hook.archive.restore(1, session=hook.session)
    assert first == agent.trajectory[: len(first)]
    saved = agent.serialize()
    assert saved["messages"] == agent.trajectory and saved["info"]["offline_compress"]["compactions"]


@pytest.mark.parametrize("kind", FORMATS)
def test_a_huge_system_prompt_is_held_not_compacted_at_every_step(kind, tmp_path):
    work = repo(tmp_path, lines=8)
    system = "You are a careful agent. " + " ".join(f"Rule {k}: never edit file_{k}.py." for k in range(150))
    probe = agent_for(kind, model_for(kind, []), hook_for(tmp_path / "probe", 100_000), work, system)
    probe.run("Fix the crash.")
    head = probe.hook.counter.count(as_messages(probe.trajectory[:2]))
    # the head (system prompt and task) alone at 55% of the window: over the 50% target, under the 60% trigger
    hook = hook_for(tmp_path, int(head / 0.55))
    agent = agent_for(kind, model_for(kind, [f"cat src/m{i % 20}.py" for i in range(36)]), hook, work, system)
    assert agent.run("Fix the crash.")["exit_status"] == "Submitted"
    done = [m for m in hook.metrics if m.outcome == "compacted"]
    assert done and all(m.over_target for m in done)
    assert len(hook.metrics) * 2 < 36  # held between compactions: not every step, nor every other one


def _cut_chars(x: dict[str, Any]) -> int:
    """Characters the cut note of a message says were cut."""
    found = re.search(r"\[… ([\d,]+) characters cut here", json.dumps(x, ensure_ascii=False))
    return int(found.group(1).replace(",", "")) if found else 0


@pytest.mark.parametrize("kind", FORMATS)
def test_one_enormous_output_is_cut_to_fit(kind, tmp_path):
    work = repo(tmp_path, files=6)
    (work / "huge.log").write_text("".join(f"line {k}: parse_config returned None\n" for k in range(2500)))
    hook = hook_for(tmp_path, 6000)
    commands = [f"cat src/m{i}.py" for i in range(6)] + ["cat huge.log", "tail -1 huge.log"]
    agent = agent_for(kind, model_for(kind, commands), hook, work)
    prompts = prompts_of(agent)
    assert agent.run("Find why parse_config fails.")["exit_status"] == "Submitted"
    m = next(m for m in hook.metrics if m.shortened)
    assert "recent message" in m.harder
    note = CUT_NOTE.strip().split("{")[0]

    def text(x: dict[str, Any]) -> str:  # what the model reads of a message or an output item
        return json.dumps({k: v for k, v in x.items() if k != "extra"}, ensure_ascii=False)

    after = next(p for p in prompts if any(note in text(x) for x in p))  # the first prompt after the cut
    assert hook.counter.count(as_messages(after)) < 6000
    cut = [x for x in after if note in text(x)]
    # the enormous output is cut, its end kept; others as long as the cap are cut to it too (the summary, whole,
    # takes its share of this 6,000-token window), never more than it
    huge = [x for x in cut if "line 2499: parse_config returned None" in text(x)]
    assert len(huge) == 1 and max(cut, key=_cut_chars) is huge[0]
    archived = hook.archive.restore(m.compaction, session=hook.session)
    assert any("line 1250: parse_config" in text(x) for x in archived)  # the whole output, archived
    paired(after)


@pytest.mark.parametrize("kind", FORMATS)
def test_think_only_steps_compact_without_a_loop(kind, tmp_path):
    from minisweagent.models import test_models as tm

    work = repo(tmp_path, lines=10)
    hook = hook_for(tmp_path, 4800)  # the trigger at 85% of it (60% of 6,000 until the churn defaults of 2026-12-07)
    model = model_for(kind, [f"cat src/m{i}.py" for i in range(14)], thought="Checking the parser. " * 30)
    if kind == "text":  # replies without an action: mini-swe-agent answers each with its format-error message
        thinking = [tm.make_output("THOUGHT: " + "maybe value_3 is None here. " * 40, []) for _ in range(10)]
        model.config.outputs[3:3] = thinking
    agent = agent_for(kind, model, hook, work)
    assert agent.run("Fix the crash.")["exit_status"] == "Submitted"
    fired = [i for i, m in enumerate(hook.metrics)]
    assert hook.compactions >= 1 and len(fired) * 2 < len(agent.trajectory) // 2
