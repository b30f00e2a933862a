"""Choosing llama.cpp's thread count (offline_compress/threads.py): quota and affinity, per-CPU activity."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from offline_compress.engine import threads as T

STAT_A = """cpu  300 0 100 1000 10 0 0 0 0 0
cpu0 100 0 50 500 5 0 0 0 0 0
cpu1 200 0 50 500 5 0 0 0 0 0
intr 123 0 0
"""
# cpu0: +95 busy (5 of it steal) of +100; cpu1: +5 busy (2 steal) of +102, the rest idle/iowait
STAT_B = """cpu  400 0 200 1100 20 0 0 0 0 0
cpu0 180 0 60 505 5 0 0 5 0 0
cpu1 203 0 50 588 14 0 0 2 0 0
intr 456 0 0
"""


def test_parse_proc_stat_counts_steal_as_busy_and_iowait_as_idle() -> None:
    before, after = T.parse_proc_stat(STAT_A), T.parse_proc_stat(STAT_B)
    assert set(after) == {0, 1}  # the aggregate "cpu" line and other lines are ignored
    assert after[0] == (180 + 60 + 5, 180 + 60 + 505 + 5 + 5)  # (busy, total)
    busy = T.busy_fractions(before, after)
    assert busy[0] == pytest.approx(95 / 100)
    assert busy[1] == pytest.approx(5 / 102)


def test_choose_threads_leaves_out_busy_cpus() -> None:
    assert T.choose_threads([0, 1], {0: 0.0, 1: 0.1}) == 2
    assert T.choose_threads([0, 1], {0: 0.9, 1: 0.1}) == 1
    assert T.choose_threads([0, 1], {0: 0.9, 1: 0.95}) == 1  # never zero
    assert T.choose_threads(range(16), {}) == T.MAX_THREADS
    assert T.choose_threads(range(4), {}, limit=2) == 2  # a cgroup quota of 2 CPUs


def test_cgroup_limits_v2_and_v1(tmp_path: Path) -> None:
    none = tmp_path / "no-proc-cgroup"
    assert T.cgroup_cpu_limit(tmp_path, none) is None  # no cgroup files: unlimited
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert T.cgroup_cpu_limit(tmp_path, none) is None
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert T.cgroup_cpu_limit(tmp_path, none) == 1.5
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert T.cgroup_cpu_limit(v1, none) is None
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("200000\n")
    assert T.cgroup_cpu_limit(v1, none) == 2.0


def test_cgroup_limit_of_the_process_own_cgroup(tmp_path: Path) -> None:
    """On a host without a cgroup namespace the quota sits in the process's own cgroup, not at the root."""
    root = tmp_path / "cgroup"
    (root / "system.slice" / "agent.service").mkdir(parents=True)
    (root / "cpu.max").write_text("max 100000\n")
    (root / "system.slice" / "agent.service" / "cpu.max").write_text("100000 100000\n")
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text("0::/system.slice/agent.service\n")
    assert T.cgroup_cpu_limit(root, proc) == 1.0
    v1 = tmp_path / "v1"
    (v1 / "cpu" / "docker" / "abc").mkdir(parents=True)
    (v1 / "cpu" / "docker" / "abc" / "cpu.cfs_quota_us").write_text("300000\n")
    (v1 / "cpu" / "docker" / "abc" / "cpu.cfs_period_us").write_text("100000\n")
    proc.write_text("4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n")
    assert T.cgroup_cpu_limit(v1, proc) == 3.0


def test_threads_now_reads_the_real_machine() -> None:
    n = T.threads_now(sample_seconds=0.02)
    assert 1 <= n <= min(T.available_cores(), T.MAX_THREADS)
    if hasattr(os, "sched_getaffinity"):
        assert T.available_cores() <= len(os.sched_getaffinity(0))


def test_threads_now_without_proc_stat_falls_back_to_the_cores(tmp_path: Path) -> None:
    assert T.threads_now(stat=tmp_path / "missing") == min(T.available_cores(), T.MAX_THREADS)
