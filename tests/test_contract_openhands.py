"""Our contract with the OpenHands SDK (written by us, not copied from the SDK): what the SDK relies on from a
``RollingCondenser``, and the cases of issue 21, on the SDK's own classes and its own scripted LLM (``TestLLM``).

The SDK needs Python >= 3.12, the project's ``.venv`` is 3.11: ``test_the_openhands_tests_run_in_python_312``
runs this file, the SDK's own condenser tests ported in ``test_contract_openhands_upstream.py`` and the OpenHands
tests of ``test_integrations.py`` in ``.venv312`` (``scripts/setup_py312.sh``,
called by ``scripts/setup.sh``), so that ``.ci/run`` runs them for real. It skips only when the machine has no
Python 3.12 at all; a 3.12 without ``.venv312`` is a failure that says what to run. Inside 3.12 the tests below
run directly (the extractive compressor: no llama.cpp there)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
VENV312 = REPO / ".venv312" / "bin" / "python"
PYENV312 = Path.home() / ".pyenv" / "versions" / "3.12.1" / "bin" / "python"

try:
    from offline_compress.integrations import openhands as oh
except ImportError as err:
    oh, OH_MISSING = None, str(err)

needs_sdk = pytest.mark.skipif(oh is None, reason=f"runs in .venv312 (Python 3.12): {globals().get('OH_MISSING')}")


def python312() -> str | None:
    found = shutil.which("python3.12")
    return str(PYENV312) if PYENV312.exists() else found


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="this is the 3.12 run itself")
def test_the_openhands_tests_run_in_python_312() -> None:
    if python312() is None:
        pytest.skip("no Python 3.12 on this machine (pyenv's 3.12.1 or python3.12): the OpenHands SDK cannot run")
    assert VENV312.exists(), "Python 3.12 is here but .venv312 is not: run scripts/setup.sh (or scripts/setup_py312.sh)"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    tests = [
        "tests/test_contract_openhands.py",
        "tests/test_contract_openhands_upstream.py",
        "tests/test_integrations.py",
    ]
    # the real-model test needs llama.cpp, which .venv312 does not build; the rest is every OpenHands test
    command = [
        str(VENV312),
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        *tests,
        "-k",
        "openhands and not real_model and not python_312",
    ]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    tail = (done.stdout + done.stderr)[-4000:]
    assert done.returncode == 0, tail
    summary = re.search(r"(\d+) passed", tail)
    # 7 here, 23 ported from the SDK's own tests (test_contract_openhands_upstream.py), 6 in test_integrations.py
    assert summary and int(summary.group(1)) >= 36, tail
    assert not re.search(r"\d+ (failed|error|skipped)", tail), tail  # every OpenHands test ran, none skipped


# ------------------------------------------------------------------------------------------------ in 3.12

TASK = "Fix the crash in src/app.py. Do not modify the tests."
FOREIGN = (
    "USER_CONTEXT: Fix the crash in src/app.py without touching tests\n"
    "COMPLETED: Found that parse_config() in src/config.py returns None for empty files\n"
    "PENDING: Add a guard in load_app() and rerun pytest tests/test_app.py\n"
    "TESTS: tests/test_app.py::test_empty_config fails with TypeError: 'NoneType' object is not subscriptable"
)


def events(n: int, *, start: int = 0, system: str = "You are OpenHands agent.", size: int = 30) -> list[Any]:
    """System prompt and task (when ``start`` is 0), then ``n`` tool steps: an action and its observation."""
    from openhands.sdk.event import ActionEvent, MessageEvent, ObservationEvent
    from openhands.sdk.event.llm_convertible import SystemPromptEvent
    from openhands.sdk.llm import Message, MessageToolCall, TextContent
    from openhands.sdk.tool.schema import Action, Observation

    class TerminalAction(Action):
        command: str

    class TerminalObservation(Observation):
        pass

    out: list[Any] = []
    if start == 0:
        out = [
            SystemPromptEvent(system_prompt=TextContent(text=system), tools=[]),
            MessageEvent(source="user", llm_message=Message(role="user", content=[TextContent(text=TASK)])),
        ]
    for i in range(start, start + n):
        cmd = f"cat src/mod{i}.py"
        call = MessageToolCall(
            id=f"call_{i}", name="terminal", arguments=json.dumps({"command": cmd}), origin="completion"
        )
        action = ActionEvent(
            thought=[TextContent(text=f"I'll run {cmd} next.")],
            action=TerminalAction(command=cmd),
            tool_name="terminal",
            tool_call_id=call.id,
            tool_call=call,
            llm_response_id=f"resp_{i}",
        )
        text = f"# src/mod{i}.py\n" + f"value_{i} = compute({i})\n" * size
        observation = ObservationEvent(
            observation=TerminalObservation.from_text(text),
            action_id=action.id,
            tool_name="terminal",
            tool_call_id=call.id,
        )
        out += [action, observation]
    return out


def condenser(tmp_path: Path, **kwargs: Any) -> Any:
    from offline_compress import Compressor

    kwargs.setdefault("compressor", Compressor(None))
    kwargs.setdefault("max_tokens", 4000)
    return oh.OfflineCondenser(archive_path=str(tmp_path / "a.sqlite3"), **kwargs)


def view_of(evs: list[Any]) -> Any:
    from openhands.sdk.context.view import View

    return View.from_events(evs)


def tokens(c: Any, view: Any) -> int:
    """The view's tokens as the condenser counts them (the hook's counter: the default target's)."""
    from offline_compress.history.messages import as_messages
    from offline_compress.tokens.counter import get_counter

    return get_counter().count(as_messages(oh.view_messages(view.events)[0]))


def check(c: Any, view: Any, result: Any) -> Any:
    """The invariants the SDK relies on, for one ``Condensation``; returns the condensed view."""
    from openhands.sdk.event import ActionEvent, CondensationSummaryEvent, ObservationEvent

    ids = [e.id for e in view.events]
    forgotten = [i for i, e in enumerate(ids) if e in result.forgotten_event_ids]
    assert result.forgotten_event_ids <= set(ids)  # valid ids: events of the view
    assert forgotten == list(range(forgotten[0], forgotten[-1] + 1))  # one range
    assert forgotten[0] in view.manipulation_indices and forgotten[-1] + 1 in view.manipulation_indices
    assert result.summary_offset == forgotten[0] and result.summary.startswith("[CONTEXT_SUMMARY]")
    condensed = view_of([*view.events, result])
    assert isinstance(condensed.events[result.summary_offset], CondensationSummaryEvent)  # where the SDK puts it
    calls = {e.tool_call_id for e in condensed.events if isinstance(e, ActionEvent)}
    results = {e.tool_call_id for e in condensed.events if isinstance(e, ObservationEvent)}
    assert calls == results  # a call is never separated from its observation
    return condensed


@needs_sdk
def test_a_condensation_keeps_the_sdks_invariants_and_keep_first(tmp_path):
    evs = events(14)
    view = view_of(evs)
    for keep_first in (2, 5):
        c = condenser(tmp_path / str(keep_first), keep_first=keep_first)
        result = c.condense(view)
        condensed = check(c, view, result)
        assert result.summary_offset >= keep_first and not {e.id for e in evs[:keep_first]} & result.forgotten_event_ids
        assert [e.id for e in condensed.events[:keep_first]] == [e.id for e in evs[:keep_first]]
        # the loop guard: at its target, or (a longer head) at least under the trigger, and said so
        metrics = c.hook.metrics[-1]
        under = tokens(c, condensed) <= c.hook.trigger_tokens
        assert tokens(c, condensed) <= c.hook.target_tokens or (metrics.over_target and under)


@needs_sdk
def test_no_condensation_below_the_threshold(tmp_path):
    view = view_of(events(3))
    c = condenser(tmp_path, max_tokens=50_000)
    assert c.condensation_requirement(view) is None and c.condense(view) is view and c.hook.metrics == []


@needs_sdk
def test_a_summary_of_another_condenser_is_carried_not_dropped(tmp_path):
    from openhands.sdk.event import Condensation

    evs = events(6)
    theirs = Condensation(
        forgotten_event_ids={e.id for e in evs[2:8]}, summary=FOREIGN, summary_offset=2, llm_response_id="llm-1"
    )
    evs = [*evs, theirs, *events(12, start=6)]
    view = view_of(evs)
    c = condenser(tmp_path, max_tokens=6000)
    result = c.condense(view)
    check(c, view, result)
    assert f"{theirs.id}-summary" in result.forgotten_event_ids  # their summary event is forgotten...
    from offline_compress.history.messages import Message
    from offline_compress.summary.message import parse_summary_message

    summary = parse_summary_message(Message(role="system", content=result.summary))  # ...and carried in ours
    carried = oh.carried_text(summary)
    for line in FOREIGN.splitlines():
        assert " ".join(line.split()) in carried
    # the next condensation merges ours (with theirs in it) as usual
    again = condenser(tmp_path / "b", max_tokens=6000).condense(view_of([*evs, result, *events(12, start=18)]))
    assert "parse_config() in src/config.py returns None" in again.summary


@needs_sdk
def test_a_summariser_that_fails_is_no_condensation_for_soft_and_a_reset_for_hard(tmp_path):
    from openhands.sdk.context.condenser.base import CondensationRequirement, NoCondensationAvailableException
    from openhands.sdk.event import Condensation, CondensationRequest

    # the embedded model without llama.cpp (.venv312 has none): loading it fails at the first condensation
    view = view_of(events(14))
    window = int(tokens(None, view) / 0.9)  # above the trigger's 85%, inside the window: SOFT
    c = oh.OfflineCondenser(model="default", max_tokens=window, archive_path=str(tmp_path / "a.sqlite3"))
    assert c.assess(view)[0] == CondensationRequirement.SOFT
    with pytest.raises(NoCondensationAvailableException, match=r"MissingExtraError: .*offline_compress\[local-model\]"):
        c.get_condensation(view)
    assert c.condense(view) is view  # SOFT: the agent goes on with its view
    assert c.condensation_requirement(view) is None  # and the trigger is held: no retry at every step
    hard = view_of([*events(14), CondensationRequest()])
    result = c.condense(hard)  # HARD: a hard context reset, by the extractive compressor
    assert isinstance(result, Condensation) and result.summary.startswith("[CONTEXT_SUMMARY]")
    condensed = view_of([*hard.events, result])
    assert tokens(c, condensed) < tokens(c, hard)


@needs_sdk
def test_a_hard_request_on_a_short_history_always_shrinks(tmp_path):
    from openhands.sdk.event import CondensationRequest

    evs = [*events(2, size=6), CondensationRequest()]
    view = view_of(evs)
    c = condenser(tmp_path, max_tokens=9000)  # a summary budget far larger than the two steps it replaces
    result = c.condense(view)
    condensed = check(c, view, result)
    assert tokens(c, condensed) < tokens(c, view)
    assert c.hook.metrics[-1].outcome == "compacted"


@needs_sdk
def test_a_huge_system_prompt_in_a_small_window_does_not_condense_at_every_step(tmp_path):
    """The issue's case: a 9k window and a 3.4k-token system prompt, in a real conversation (the SDK's agent loop,
    its scripted ``TestLLM``, its built-in ``think`` tool: think-only steps)."""
    from openhands.sdk import Agent, Conversation
    from openhands.sdk.event import Condensation
    from openhands.sdk.llm import Message, MessageToolCall, TextContent
    from openhands.sdk.testing import TestLLM

    def think(i: int) -> Any:
        thought = f"Checking src/mod{i}.py: " + f"value_{i} = compute({i}) may return None. " * 25
        call = MessageToolCall(
            id=f"t{i}", name="think", arguments=json.dumps({"thought": thought}), origin="completion"
        )
        return Message(role="assistant", content=[TextContent(text=f"Step {i}.")], tool_calls=[call])

    finish = MessageToolCall(id="fin", name="finish", arguments=json.dumps({"message": "done"}), origin="completion")
    llm = TestLLM.from_messages(
        [*(think(i) for i in range(40)), Message(role="assistant", content=[], tool_calls=[finish])]
    )
    c = condenser(tmp_path, max_tokens=9000)
    conversation = Conversation(agent=Agent(llm=llm, tools=[], condenser=c), workspace=str(tmp_path), visualizer=None)
    conversation.send_message(TASK)
    conversation.run()  # a run with the fake model completes
    assert conversation.state.execution_status.value == "finished"
    condensations = [e for e in conversation.state.events if isinstance(e, Condensation)]
    done = [m for m in c.hook.metrics if m.outcome == "compacted"]
    assert condensations and len(done) == len(condensations)
    assert all(m.tokens_after <= c.hook.trigger_tokens for m in done)  # never left above the trigger...
    assert len(condensations) * 2 < 40  # ...so not every other step


@needs_sdk
def test_an_enormous_observation_is_forgotten_with_fewer_recent_events_when_nothing_else_fits(tmp_path):
    from openhands.sdk.event import CondensationRequest

    evs = [*events(8), *events(1, start=8, size=900)]  # the last observation alone is larger than the window
    view = view_of([*evs, CondensationRequest()])
    c = condenser(tmp_path, max_tokens=8000)
    assert tokens(c, view) > 8000
    result = c.condense(view)
    condensed = check(c, view, result)
    assert tokens(c, condensed) < 8000 and "call_8" not in {getattr(e, "tool_call_id", "") for e in condensed.events}
    assert c.hook.archive.restore(c.hook.metrics[-1].compaction, session=c.hook.session)  # archived first
