"""Async, background and concurrent compaction: ``abefore_step`` has ``before_step``'s contract without blocking
the event loop; concurrent calls on one hook compact once; a background summary is swapped in only when it
describes exactly the messages it replaces (a history that diverged is compacted as usual); 16 agent loops
(threads, and asyncio tasks) sharing one compressor and one archive neither lose nor mix anything.

Extractive compressor (no model) throughout: deterministic, so a summary can be compared byte for byte with the
one the same input gives alone. ``SlowCompressor`` is that compressor with a pause added, so that calls overlap."""

from __future__ import annotations

import asyncio
import copy
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from seed_policy import SEED_POLICY

from evaluation import load
from offline_compress import CompactionHook, Compressor
from offline_compress.archive.store import Archive
from offline_compress.history.cut import cut_index
from offline_compress.history.messages import as_messages
from offline_compress.hook.config import HookConfig
from offline_compress.summary.message import SUMMARY_PREFIX
from offline_compress.summary.plan import plan_compaction
from offline_compress.summary.schema import CompressedContext
from offline_compress.tokens.counter import TokenCounter, get_counter

FIXTURES = Path(__file__).resolve().parent / "fixtures"
WINDOW = 12_000  # requests-2317 passes 50% (the soft threshold) 4 steps before 60% (the trigger)


class SlowCompressor(Compressor):
    """The extractive compressor, taking ``delay`` seconds longer (as a model would), so that calls overlap."""

    def __init__(self, delay: float) -> None:
        super().__init__(None)
        self.delay = delay

    def compress_detailed(self, *args, **kwargs):
        time.sleep(self.delay)
        return super().compress_detailed(*args, **kwargs)


def steps_of(messages):
    """The histories an agent loop appends before each model call (the recorded assistant reply excluded)."""
    return [i for i, m in enumerate(messages) if m["role"] == "assistant" and i > 0]


def drive(hook, messages, *, call=None):
    """Replay ``messages`` as an agent loop; returns [(given, returned)] per step."""
    call = call or hook.before_step
    out, live, last = [], [], 0
    for i in steps_of(messages):
        live = live + messages[last:i]
        last = i
        returned = call(live)
        out.append((live, returned))
        live = returned
    return out


def summary_of(message):
    return message["content"][len(SUMMARY_PREFIX) :].split("\n")[0]


# ------------------------------------------------------------------------------------------------- asyncio


def test_abefore_step_gives_what_before_step_gives(extractive_compressor, requests_history, tmp_path):
    sync = CompactionHook(WINDOW, archive_path=tmp_path / "s.sqlite3", compressor=extractive_compressor)
    expected = drive(sync, requests_history)
    threads = []
    hook = CompactionHook(
        WINDOW,
        archive_path=tmp_path / "a.sqlite3",
        compressor=extractive_compressor,
        on_compaction=lambda m, s: threads.append(threading.current_thread()),
    )

    async def agent():
        out, live, last = [], [], 0
        for i in steps_of(requests_history):
            live = live + requests_history[last:i]
            last = i
            returned = await hook.abefore_step(live)
            out.append((live, returned))
            live = returned
        return out

    got = asyncio.run(agent())
    assert got == expected and sync.compactions == hook.compactions >= 2
    assert threads and all(t is not threading.main_thread() for t in threads)  # compacted off the loop's thread
    hook.close()


class GatedCompressor(Compressor):
    """The extractive compressor, waiting inside the compaction until the event loop has ticked (``ticked``): a
    compaction run on the loop's own thread would never see it set."""

    def __init__(self) -> None:
        super().__init__(None)
        self.ticked = threading.Event()
        self.entered = threading.Event()

    def compress_detailed(self, *args, **kwargs):
        self.entered.set()
        if not self.ticked.wait(60):
            raise TimeoutError("the event loop did not run while the compaction waited")
        return super().compress_detailed(*args, **kwargs)


def test_the_event_loop_keeps_running_during_a_compaction(requests_history, tmp_path):
    """Proved by order, not by timing: the compaction waits for ticks that only a running loop can make."""
    gated = GatedCompressor()
    hook = CompactionHook(WINDOW, archive_path=tmp_path / "a.sqlite3", compressor=gated)
    history = requests_history[:40]
    ticks_during = 0

    async def ticker(stop):
        nonlocal ticks_during
        while not stop.is_set():
            if gated.entered.is_set():
                ticks_during += 1
                if ticks_during >= 5:
                    gated.ticked.set()
            await asyncio.sleep(0.001)

    async def main():
        stop = asyncio.Event()
        task = asyncio.create_task(ticker(stop))
        new = await hook.abefore_step(history)
        stop.set()
        await task
        return new

    new = asyncio.run(main())
    assert hook.compactions == 1 and len(new) < len(history) and ticks_during >= 5
    hook.close()


def test_concurrent_calls_on_one_hook_compact_once(requests_history, tmp_path):
    history = requests_history[:40]
    hook = CompactionHook(WINDOW, archive_path=tmp_path / "a.sqlite3", compressor=SlowCompressor(0.3))

    async def main():
        return await asyncio.gather(
            *(hook.abefore_step(history) for _ in range(8)), hook.abefore_step(history + requests_history[40:42])
        )

    *same, longer = asyncio.run(main())
    assert hook.compactions == 1 and len(Archive(tmp_path / "a.sqlite3").compactions()) == 1
    assert all(r == same[0] for r in same) and len(same[0]) < len(history)
    assert longer == same[0] + requests_history[40:42]  # the longer history got the same compaction

    threaded = CompactionHook(WINDOW, archive_path=tmp_path / "t.sqlite3", compressor=SlowCompressor(0.3))
    results = [None] * 8

    def call(k):
        results[k] = threaded.before_step(history)

    workers = [threading.Thread(target=call, args=(k,)) for k in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert threaded.compactions == 1 and all(r == results[0] for r in results)
    hook.close()
    threaded.close()


def test_a_history_that_extends_a_compacted_one_gets_that_compaction(extractive_compressor, requests_history, tmp_path):
    history = requests_history[:40]
    hook = CompactionHook(WINDOW, archive_path=tmp_path / "a.sqlite3", compressor=extractive_compressor)
    compacted = hook.before_step(history)
    # a caller that kept its own list (or whose awaited step was cancelled) comes back with the old one, longer
    again = hook.before_step(history + requests_history[40:44])
    assert again == compacted + requests_history[40:44] and hook.compactions == 1
    # the explicit compact() still compacts what it is given
    hook.compact(history)
    assert hook.compactions == 2


# ---------------------------------------------------------------------------------------------- background


def test_background_swap_is_exact(extractive_compressor, requests_history, tmp_path):
    database = tmp_path / "a.sqlite3"
    counter = get_counter()
    hook = CompactionHook(
        WINDOW,
        HookConfig(soft_fraction=0.5, **{**SEED_POLICY, "summary_room": 0}),
        archive_path=database,
        compressor=extractive_compressor,
        counter=counter,
    )
    carried = []  # after each step: the summary the hook merges at its next compaction (CompressionResult.carried)

    def step(live):
        returned = hook.before_step(live)
        carried.append(hook._merged)
        return returned

    steps = drive(hook, requests_history, call=step)
    swapped = [m for m in hook.metrics if m.background]
    assert swapped and all(m.outcome == "compacted" for m in swapped)
    archive = Archive(database)
    records = {r.compaction: r for r in archive.compactions(hook.session)}
    previous = None
    compacted_at = 0  # index in ``steps`` after the last compaction
    for k, (given, returned) in enumerate(steps):
        if returned == given:
            continue
        number = max(r.compaction for r in records.values() if archive.restore(r.compaction, hook.session) == given)
        record, metric = records[number], hook.metrics[[m.compaction for m in hook.metrics].index(number)]
        head, cut = record.head, record.cut
        # nothing lost, nothing twice: what was returned plus what was archived as replaced is what was given; a
        # recent message the compaction cut (to leave the summary its room) is a copy of it with the cut said
        recent, kept_given = returned[head + 1 :], given[cut:]
        assert returned[:head] == given[:head] and len(recent) == len(kept_given)
        cut_here = [i for i, (a, b) in enumerate(zip(recent, kept_given)) if a is not b]
        assert len(cut_here) == metric.shortened
        for i in cut_here:
            assert recent[i]["role"] == kept_given[i]["role"] and "characters cut here" in recent[i]["content"]
            assert len(recent[i]["content"]) < len(kept_given[i]["content"])
        replaced = [m for _, m in archive.replaced(number, hook.session)]
        assert replaced == given[head:cut] and archive.restore(number, hook.session) == given
        kept = [id(kept_given[i - head - 1]) if i - head - 1 in cut_here else id(m) for i, m in enumerate(returned)]
        kept.pop(head)  # the summary
        assert Counter(kept + [id(m) for m in given[head:cut]]) == Counter(id(m) for m in given)
        if metric.background:
            # the summary describes exactly [head, cut) of the snapshot taken at the soft threshold (the plan of
            # the hook's rule: the last keep_last messages)
            snapshot = next(g for g, _ in steps[compacted_at:k] if counter.count(as_messages(g)) > 0.5 * WINDOW)
            parsed = as_messages(snapshot)
            plan = plan_compaction(parsed, None, hook.keep_last)
            assert given[: len(snapshot)] == snapshot and (head, cut) == (plan.head, plan.cut)
            assert cut >= cut_index(parsed, hook.keep_last)
            expected = extractive_compressor.compress_detailed(
                snapshot, plan=plan, previous=previous, summary_tokens=hook.summary_budget_for(parsed, plan)
            ).context
            assert summary_of(returned[head]) == expected.to_json() == record.summary
            assert len(given) > len(snapshot)  # messages arrived meanwhile, kept verbatim after the summary
        shown = CompressedContext.model_validate_json(record.summary)
        previous = carried[k]  # the summary shown, with the lines it left out for the messages it kept
        assert previous.user_constraints == shown.user_constraints
        compacted_at = k + 1
    archive.close()
    hook.close()


def _crossing(hook, history):
    """The shortest prefix of ``history`` (at a model call) past the soft threshold but under the trigger."""
    for i in steps_of(history):
        tokens = get_counter().count(as_messages(history[:i]))
        if hook.soft_fraction * WINDOW < tokens <= hook.trigger.token_fraction * WINDOW:
            return i
    raise AssertionError("no step between the soft threshold and the trigger")


def _hard(history, start):
    return next(
        i for i in steps_of(history) if i > start and get_counter().count(as_messages(history[:i])) > 0.6 * WINDOW
    )


@pytest.mark.parametrize("change", ["none", "edited", "dropped"])
def test_a_history_that_diverged_from_the_snapshot_is_compacted_as_usual(
    change, extractive_compressor, requests_history, tmp_path
):
    hook = CompactionHook(
        WINDOW,
        HookConfig(soft_fraction=0.5, **SEED_POLICY),
        archive_path=tmp_path / "a.sqlite3",
        compressor=extractive_compressor,
    )
    soft = _crossing(hook, requests_history)
    assert hook.before_step(requests_history[:soft]) == requests_history[:soft]  # starts the background summary
    hard = _hard(requests_history, soft)
    history = list(requests_history[:hard])
    if change == "edited":  # a message before the snapshot's cut changed (the caller edited it)
        history[6] = copy.deepcopy(history[6]) | {"content": history[6]["content"] + "\n(edited)"}
    elif change == "dropped":  # the caller dropped a message (a short one: still past the trigger)
        del history[5]
    new = hook.before_step(history)
    fresh = CompactionHook(
        WINDOW, HookConfig(**SEED_POLICY), archive_path=tmp_path / "f.sqlite3", compressor=extractive_compressor
    )
    expected = fresh.before_step(history)
    assert hook.metrics[-1].outcome == "compacted"
    if change == "none":  # the control: the background summary is used, and it differs from the synchronous one
        assert hook.metrics[-1].background and new != expected
    else:
        assert not hook.metrics[-1].background and new == expected


def test_a_failing_background_summary_falls_back_to_compacting_now(requests_history, tmp_path, caplog):
    class Failing(Compressor):
        calls = 0

        def compress_detailed(self, *args, **kwargs):
            Failing.calls += 1
            if Failing.calls == 1:
                raise RuntimeError("out of memory")
            return super().compress_detailed(*args, **kwargs)

    hook = CompactionHook(
        WINDOW,
        HookConfig(soft_fraction=0.5, **SEED_POLICY),
        archive_path=tmp_path / "a.sqlite3",
        compressor=Failing(None),
    )
    soft = _crossing(hook, requests_history)
    hook.before_step(requests_history[:soft])
    hard = _hard(requests_history, soft)
    with caplog.at_level("WARNING", logger="offline_compress"):
        new = hook.before_step(requests_history[:hard])
    assert hook.compactions == 1 and not hook.metrics[-1].background and len(new) < hard
    assert any("background summary failed" in r.getMessage() for r in caplog.records)


def test_soft_fraction_must_be_below_the_trigger():
    with pytest.raises(ValueError, match="soft_fraction"):
        CompactionHook(1000, HookConfig(soft_fraction=0.85))  # the trigger's own share
    with pytest.raises(ValueError, match="soft_fraction"):
        CompactionHook(1000, HookConfig(soft_fraction=0))


# ---------------------------------------------------------------------------------------------- 16 loops


def _fixture_jobs(count):
    """``count`` loops over the fixture trajectories of 20+ messages (each fixture more than once, named apart)."""
    base = load.trajectories([FIXTURES], 100)
    assert len(base) >= 5
    return [(f"{name}#{k}", messages) for k, (name, messages) in ((k, base[k % len(base)]) for k in range(count))]


@pytest.mark.parametrize("mode", ["threads", "asyncio"])
def test_16_loops_share_one_compressor_and_one_archive(mode, extractive_compressor, tmp_path):
    jobs = _fixture_jobs(16)
    result = load.load_section(jobs, extractive_compressor, mode, 8192, tmp_path / "a.sqlite3", reference=True)
    assert result["problems"] == [] and result["reference_mismatches"] == 0
    assert result["loops"] == 16 and result["compactions"] >= 16


@pytest.mark.skipif(not load.DEFAULT_SOURCE.is_dir(), reason="needs ../shared/trajectories (not in CI)")
@pytest.mark.parametrize("mode", ["threads", "asyncio"])
def test_16_distinct_real_trajectories(mode, extractive_compressor, tmp_path):
    jobs = load.trajectories([load.DEFAULT_SOURCE], 16)
    result = load.load_section(jobs, extractive_compressor, mode, 16384, tmp_path / "a.sqlite3")
    assert len(jobs) == 16 and result["problems"] == [] and result["compactions"] >= 16
    assert all(result["distinctive_strings"].values())


def test_the_load_checks_can_fail(extractive_compressor, tmp_path):
    """A summary moved to another loop, and an archive that does not restore what a loop passed, are reported."""
    base = load.trajectories([FIXTURES / "mini-swe-agent"], 2)
    database = tmp_path / "a.sqlite3"
    loops, _ = load.run_concurrent(
        base,
        lambda name: CompactionHook(
            4096, HookConfig(session=name), archive_path=database, compressor=extractive_compressor
        ),
        "threads",
    )
    distinct = load.distinctive_strings(base)
    with Archive(database) as archive:
        assert [load.check_loop(loop, archive, distinct) for loop in loops] == [[], []]
        a, b = loops
        moved = copy.deepcopy(a)
        moved.compactions[0].returned[a.compactions[0].head] = b.compactions[0].returned[b.compactions[0].head]
        assert any("other trajectories" in p for p in load.check_loop(moved, archive, distinct))
        changed = copy.deepcopy(a)
        changed.compactions[0].given[3] = {"role": "user", "content": "not what was archived"}
        assert any("does not restore" in p for p in load.check_loop(changed, archive, distinct))


def test_one_token_counter_counts_right_from_16_threads(requests_history):
    counter = TokenCounter()
    histories = [as_messages(requests_history[: 10 + 3 * k]) for k in range(16)]
    expected = [TokenCounter().count(h) for h in histories]
    got = [None] * 16
    barrier = threading.Barrier(16)

    def work(k):
        barrier.wait()
        for _ in range(20):
            got[k] = counter.count(histories[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == expected


def test_compressors_given_one_backend_share_its_generation_lock():
    from offline_compress.compressor import generation_lock

    class Loaded:  # any backend object: the lock is keyed by its identity
        pass

    backend, other = Loaded(), Loaded()
    assert generation_lock(backend) is generation_lock(backend)
    assert generation_lock(backend) is not generation_lock(other)
    assert generation_lock(None) is not generation_lock(None)  # a compressor that loads its own model


def test_default_compressor_with_a_model_does_not_deadlock(model_path):
    # default_compressor builds the Compressor under its lock, and the Compressor takes its backend's generation
    # lock: the two must be different locks, or this waits forever.
    from offline_compress.compressor import default_compressor

    built: list[Any] = []
    worker = threading.Thread(target=lambda: built.append(default_compressor(str(model_path))), daemon=True)
    worker.start()
    worker.join(timeout=300)
    assert not worker.is_alive() and built and built[0].backend is not None
