"""The hook never fails the agent's step through a fault of its own (issue 45): an internal error is logged at
ERROR, counted (``outcome="failed"``) and answered with the caller's history, or, when that does not fit the
window, the last summary and the recent messages that fit (the rest archived first); ``OFFLINE_COMPRESS_STRICT=1``
raises instead. A history that is not a list of messages is still a clear ``InputError``."""

from __future__ import annotations

import asyncio
import copy
import logging

import pytest
from test_hook import HEAD
from test_hook import _steps as _long_steps

from offline_compress import CompactionHook, TriggerConfig
from offline_compress.compressor import Compressor
from offline_compress.errors import InputError
from offline_compress.hook.config import HookConfig
from offline_compress.summary.message import SUMMARY_PREFIX


def _steps(n: int, size: int = 300) -> list[dict]:
    return _long_steps(n, size)  # the hook tests' steps, shorter: 22 messages fit a 12,000-token window


class Broken(Compressor):
    """A compressor with a bug: the library's own fault, as the hook meets one."""

    def __init__(self, after: int = 0) -> None:
        super().__init__(None)
        self.calls, self.after = 0, after

    def compress_detailed(self, *args, **kwargs):
        self.calls += 1
        if self.calls > self.after:
            raise AssertionError("error_line is not a substring of its result")
        return super().compress_detailed(*args, **kwargs)


@pytest.fixture
def lenient(monkeypatch):
    monkeypatch.delenv("OFFLINE_COMPRESS_STRICT", raising=False)


def test_an_internal_error_hands_the_history_back(lenient, tmp_path, caplog):
    history = HEAD + _steps(11)
    snapshot = copy.deepcopy(history)
    hook = CompactionHook(12_000, HookConfig(session="s1"), archive_path=tmp_path / "a.sqlite3", compressor=Broken())
    with caplog.at_level(logging.ERROR, logger="offline_compress.hook"):
        new = hook.before_step(history)
    assert new == history and new is not history and history == snapshot
    m = hook.metrics[-1]
    assert m.outcome == "failed" and m.reason == "before_step" and m.compaction == 0
    assert "AssertionError: error_line is not a substring" in m.note and m.messages_before == len(history)
    record = next(r for r in caplog.records if r.levelno == logging.ERROR)
    assert "session s1" in record.getMessage() and f"{len(history)} messages" in record.getMessage()
    assert record.exc_info is not None  # the traceback goes to the log, not to the agent
    # the trigger is held: the failing compaction is not tried again at every step
    calls = hook.compressor.calls
    assert hook.before_step(history + _steps(1, 10)[:1]) is not None and hook.compressor.calls == calls
    hook.close()


def test_async_and_manual_steps_too(lenient, tmp_path):
    history = HEAD + _steps(11)
    hook = CompactionHook(12_000, archive_path=tmp_path / "a.sqlite3", compressor=Broken())
    assert asyncio.run(hook.abefore_step(history)) == history
    assert hook.compact(history) == history
    assert [m.outcome for m in hook.metrics] == ["failed", "failed"]
    hook.close()


def test_a_history_over_the_window_gets_the_last_summary_and_the_recent_messages(lenient, tmp_path):
    """One good compaction, then the compressor breaks and the history grows past the window: the last summary and
    the most recent messages that fit, the rest archived first (restorable), never the caller's list mutated."""
    history = HEAD + _steps(11)
    hook = CompactionHook(12_000, archive_path=tmp_path / "a.sqlite3", compressor=Broken(after=1))
    first = hook.before_step(history)
    assert hook.metrics[-1].outcome == "compacted"
    grown = first + _steps(40)
    snapshot = copy.deepcopy(grown)
    new = hook.before_step(grown)
    assert grown == snapshot
    m = hook.metrics[-1]
    assert m.outcome == "failed" and m.compaction == 2 and m.tokens_after < 12_000 < m.tokens_before
    assert new[:2] == HEAD and new[2]["content"].startswith(SUMMARY_PREFIX) and new[-1] == grown[-1]
    assert "cat src/mod" in new[2]["content"]  # the last good summary, not an empty one
    assert hook.archive.restore(2) == grown
    hook.close()


def test_strict_mode_raises(tmp_path, monkeypatch):
    monkeypatch.setenv("OFFLINE_COMPRESS_STRICT", "1")
    hook = CompactionHook(12_000, archive_path=tmp_path / "a.sqlite3", compressor=Broken())
    with pytest.raises(AssertionError):
        hook.before_step(HEAD + _steps(11))
    hook.close()


def test_bad_input_is_still_a_clear_error(lenient, tmp_path):
    hook = CompactionHook(12_000, archive_path=tmp_path / "a.sqlite3", compressor=Broken())
    with pytest.raises(InputError, match="expected a list of messages"):
        hook.before_step("not a history")
    hook.close()


def test_a_low_trigger_is_taken_with_the_default_room_and_target(tmp_path):
    """LangChain's own tests set a 10% trigger: the defaults of the target and the summary's room scale with it."""
    hook = CompactionHook(
        12_000, HookConfig(trigger=TriggerConfig(token_fraction=0.1)), archive_path=tmp_path / "a.sqlite3"
    )
    assert hook.summary_room == pytest.approx(0.25 / 8.5) and hook.target_fraction == pytest.approx(0.5 / 8.5)
    default = CompactionHook(12_000, archive_path=tmp_path / "b.sqlite3")  # at the default 85%: unchanged
    assert (default.summary_room, default.target_fraction) == (0.25, 0.5)
    with pytest.raises(ValueError, match="summary_room"):  # a value the user chose is still checked
        CompactionHook(12_000, HookConfig(trigger=TriggerConfig(token_fraction=0.1), summary_room=0.2))


class FirstProtocolCounter:
    """A counter as adapters took it first: ``count`` and ``message_counts`` only."""

    def __init__(self) -> None:
        from offline_compress.tokens.counter import default_counter

        self.inner = default_counter()

    def count(self, messages):
        return self.inner.count(messages)

    def message_counts(self, messages):
        return self.inner.message_counts(messages)


def test_a_counter_of_the_first_protocol_works(tmp_path):
    hook = CompactionHook(
        12_000, archive_path=tmp_path / "a.sqlite3", compressor=Compressor(None), counter=FirstProtocolCounter()
    )
    new = hook.before_step(HEAD + _steps(11))
    assert hook.metrics[-1].outcome == "compacted" and len(new) < 22
    hook.close()
    with pytest.raises(TypeError, match="has no message_counts method"):
        CompactionHook(12_000, counter=type("C", (), {"count": lambda self, m: 0})())
