"""Issue 47: an agent's step costs what is new, and the first one does not wait.

* Each ``before_step`` validates and counts only the messages new since the last one (counted work, not time); an
  edited or replaced history is noticed, and its count is exact again.
* While the tokenizer loads, an upper bound that needs none decides where it leaves the history under every
  threshold: it is never under the exact count (a property test against the target tokenizer), and the decision it
  makes is the exact one's. Anywhere else the step waits for the tokenizer and counts exactly.
* ``import offline_compress`` loads nothing heavy; the in-process model names its pip extra when it is missing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offline_compress import CompactionHook, Compressor
from offline_compress.engine import MissingExtraError
from offline_compress.history.messages import as_messages
from offline_compress.hook.config import HookConfig
from offline_compress.hook.trigger import RunningTrigger, TriggerConfig, decide, last_tool_name
from offline_compress.model_files import tokenizer_path_for
from offline_compress.tokens import counter as counter_module
from offline_compress.tokens.counter import TokenCounter

SYSTEM = {"role": "system", "content": "You are a coding agent."}
TASK = {"role": "user", "content": "Fix the failing test in utils.py."}
FAR = TriggerConfig(turn_limit=10**6)  # no turn-limit firing: the steps below only count


def _step(k: int) -> list[dict[str, Any]]:
    call = {
        "id": f"c{k}",
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"cmd": f"ls {k}"})},
    }
    return [
        {"role": "assistant", "content": f"step {k}", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{k}", "content": f"file_{k}.py\nREADME"},
    ]


def _hook(tmp_path: Any, counter: Any, window: int = 10**7, trigger: TriggerConfig = FAR) -> CompactionHook:
    return CompactionHook(
        window,
        HookConfig(trigger=trigger),
        archive_path=tmp_path / "a.sqlite3",
        compressor=Compressor(None),
        counter=counter,
    )


def test_each_step_validates_and_counts_only_what_is_new(tmp_path, target_tokenizer):
    counter = TokenCounter(target_tokenizer)
    hook = _hook(tmp_path, counter)
    history = [SYSTEM, TASK]
    hook.before_step(history)
    for k in range(120):
        if k % 2:
            history = history + _step(k)  # an agent that builds a new list
        else:
            history.extend(_step(k))  # ...or appends to its own
        encoded = counter.encoded
        hook.before_step(history)
        assert hook._messages.validated == 2
        assert hook._running.tokens is not None and hook._running.tokens.counted == 2
        assert counter.encoded - encoded == 2  # texts sent to the tokenizer
    assert hook.last_decision is not None and hook.last_decision.exact
    assert hook.last_decision.estimated_tokens == TokenCounter(target_tokenizer).count(history)


def test_an_edited_or_replaced_history_is_noticed(tmp_path, target_tokenizer):
    counter = TokenCounter(target_tokenizer)
    hook = _hook(tmp_path, counter)
    history = [SYSTEM, TASK] + [m for k in range(20) for m in _step(k)]
    hook.before_step(history)

    def exact() -> int:
        assert hook.last_decision is not None and hook.last_decision.exact
        return hook.last_decision.estimated_tokens

    history[7]["content"] = "edited in place " * 50  # a key of a message the hook has seen
    hook.before_step(history)
    assert hook._messages.validated == len(history) - 7 and exact() == TokenCounter(target_tokenizer).count(history)
    history = [dict(m) for m in history]  # a new list of equal messages: nothing is read again
    hook.before_step(history)
    assert hook._messages.validated == 0 and hook._running.tokens.counted == 0  # type: ignore[union-attr]
    history[3] = {"role": "tool", "tool_call_id": "c0", "content": "replaced"}
    hook.before_step(history)
    assert hook._messages.validated == len(history) - 3 and exact() == TokenCounter(target_tokenizer).count(history)
    history = history[:10] + [{"role": "system", "content": "note"}]  # shorter, ending in a system message
    hook.before_step(history)
    assert exact() == TokenCounter(target_tokenizer).count(history)
    history.append({"role": "user", "content": "and now?"})  # the note folds into this turn: counted again
    hook.before_step(history)
    assert exact() == TokenCounter(target_tokenizer).count(history)


# -- the bound ------------------------------------------------------------------------------------------------

_PIECES = ["a", "b", "é", "日本", "😀", " ", "  ", "   ", "\n", "\n\n", "\t", "▁", "<start_of_turn>", "<b>", "x\u0301"]
_TEXT = st.lists(st.sampled_from(_PIECES) | st.text(max_size=8), max_size=30).map("".join)


@st.composite
def _message(draw: Any) -> dict[str, Any]:
    role = draw(st.sampled_from(["system", "developer", "user", "assistant", "tool"]))
    message: dict[str, Any] = {"role": role, "content": draw(_TEXT)}
    if role == "assistant" and draw(st.booleans()):
        arguments = draw(st.sampled_from([json.dumps({"cmd": draw(_TEXT)}), draw(_TEXT)]))
        message["tool_calls"] = [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": arguments}}]
        message["content"] = draw(st.none() | _TEXT)
    if role == "tool":
        message |= {"tool_call_id": "c1", "name": draw(st.none() | st.sampled_from(["read_file", "bash"]))}
    if role == "user" and draw(st.booleans()):  # content parts
        message["content"] = [{"type": "text", "text": draw(_TEXT)}, {"type": "image", "url": "x"}]
    return message


_HISTORY = st.lists(_message(), min_size=1, max_size=12).map(as_messages)


@settings(max_examples=300, deadline=None)
@given(history=_HISTORY)
def test_the_bound_is_never_under_the_exact_count(target_tokenizer, history):
    counter = TokenCounter(target_tokenizer)
    exact, bounds = counter.message_counts(history), counter.message_bounds(history)
    assert all(b >= e for b, e in zip(bounds, exact)), list(zip(bounds, exact))
    assert counter.running(bound=True).total(history) >= counter.count(history)


class _Loading(TokenCounter):
    """The target's counter as it is while its tokenizer loads (counting exactly still works here)."""

    loaded = False  # type: ignore[assignment]


@settings(max_examples=300, deadline=None)
@given(
    history=_HISTORY,
    window=st.integers(20, 3000),
    turns=st.integers(0, 40),
    soft=st.none() | st.floats(0.05, 0.55),
)
def test_the_bound_decides_only_what_the_exact_count_would(target_tokenizer, history, window, turns, soft):
    counter = _Loading(target_tokenizer)
    counter.bounded = True
    config = TriggerConfig()
    running = RunningTrigger(counter, window, None if soft is None else soft * window)
    got = running.decide(history, turns, config)
    tokens = counter.count(history)
    want = decide(tokens, window, turns, last_tool_name(history), config)
    if got.exact:
        assert got == want
    else:  # the bound said "under": so does the exact count, soft threshold included
        assert not got.should_compress and not want.should_compress and got.estimated_tokens >= tokens
        assert soft is None or tokens <= soft * window


def test_the_derived_tokenizer_is_bounded_and_compact(target_tokenizer):
    counter = TokenCounter()  # the default target: found, not loaded
    assert counter.bounded and counter.source is not None and not counter.loaded
    path = tokenizer_path_for(counter.source.path) if counter.source.gguf else counter.source.path
    with path.open("rb") as fh:
        head = fh.read(300)
    assert head.startswith(b'{"normalizer"') and b'"merges":[[' not in head


# -- cold start ------------------------------------------------------------------------------------------------


def test_the_first_step_decides_while_the_tokenizer_loads(tmp_path, monkeypatch, target_tokenizer):
    go, order = threading.Event(), []

    def slow_load(source: Any) -> Any:
        go.wait(60)
        order.append("loaded")
        return target_tokenizer

    monkeypatch.setattr(counter_module, "load_tokenizer", slow_load)
    counter = TokenCounter()
    hook = _hook(tmp_path, counter, window=2000, trigger=TriggerConfig())
    hook.before_step([SYSTEM, TASK, *_step(0)])  # far under every threshold: the bound decides, nothing waits
    assert hook.last_decision is not None and not hook.last_decision.exact and not counter.loaded
    assert not hook.last_decision.should_compress
    # over the bound at the trigger (1,200), under it counted exactly: the step waits for the tokenizer
    history = [SYSTEM, TASK, *_step(0), {"role": "user", "content": "a" * 1500}]
    threading.Timer(0.05, lambda: (order.append("released"), go.set())).start()
    hook.before_step(history)
    order.append("decided")
    assert order == ["released", "loaded", "decided"]
    decision = hook.last_decision
    assert decision.exact and not decision.should_compress
    assert decision.estimated_tokens == TokenCounter(target_tokenizer).count(history)


def test_importing_the_package_loads_nothing_heavy():
    code = "import json, sys, offline_compress\nprint(json.dumps(sorted(sys.modules)))"
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout)
    heavy = {"pydantic", "tokenizers", "numpy", "llama_cpp", "outlines"}
    assert not heavy & {m.split(".")[0] for m in loaded}


def test_the_model_path_names_its_extra_when_it_is_missing(monkeypatch, model_path):
    from offline_compress.engine.llamacpp import LlamaCppBackend
    from offline_compress.errors import BackendError

    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # `import llama_cpp` raises ImportError
    with pytest.raises(MissingExtraError, match=re.escape('pip install "offline_compress[local-model]"')) as err:
        LlamaCppBackend(model_path)
    assert isinstance(err.value, BackendError) and "llama_cpp" in str(err.value)
