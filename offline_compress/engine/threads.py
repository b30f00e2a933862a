"""How many threads llama.cpp should use: the cores this process may run on, less those other work holds now.

Measured on this project's 2-core machine (Gemma 3 270M, 718-token prompt): idle, 2 threads beat 1 (prompt
287 vs 180 tok/s, generation 34 vs 23 tok/s); with one other busy process, 2 threads collapse (98 and 12.5
tok/s: llama.cpp's threads wait for each other at every op while one of them is descheduled) and 1 thread
keeps 160 and 22 tok/s. So the count is chosen again before each generation from a short sample of per-CPU
activity (``/proc/stat``), not once at load time. The thread count does not change the output: each dot
product is computed by one thread in a fixed order (tests/test_llamacpp_backend.py and test_fastdecode.py
check the bytes).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable, Mapping
from contextlib import suppress
from pathlib import Path

MAX_THREADS = 8  # beyond this a 270M-1B model gains nothing on CPU
BUSY_THRESHOLD = 0.5  # a CPU busy more than half of the sample is taken by someone else
SAMPLE_SECONDS = 0.1


def _affinity() -> set[int] | None:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def _own_cgroups(proc_cgroup: Path = Path("/proc/self/cgroup")) -> tuple[str | None, str | None]:
    """This process's cgroup path for v2 (``0::/path``) and for v1's cpu controller (``N:cpu,cpuacct:/path``)."""
    v2 = v1 = None
    with suppress(OSError, ValueError):
        for line in proc_cgroup.read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if controllers == "":
                v2 = path
            elif "cpu" in controllers.split(","):
                v1 = path
    return v2, v1


def cgroup_cpu_limit(
    root: Path = Path("/sys/fs/cgroup"), proc_cgroup: Path = Path("/proc/self/cgroup")
) -> float | None:
    """CPUs granted by a cgroup quota (v2 ``cpu.max`` or v1 ``cpu.cfs_quota_us``), None when unlimited. Looks in
    this process's own cgroup first, then at the root (a container usually sees its cgroup there)."""
    v2, v1 = _own_cgroups(proc_cgroup)
    for base in dict.fromkeys([root / (v2 or "/").lstrip("/"), root]):
        with suppress(OSError, ValueError):  # no such file, or not a quota: the next place
            quota, period = (base / "cpu.max").read_text().split()[:2]
            return None if quota == "max" else int(quota) / int(period)
    cpu = root / "cpu"
    for base in dict.fromkeys([cpu / (v1 or "/").lstrip("/"), cpu]):
        with suppress(OSError, ValueError):
            quota_us = int((base / "cpu.cfs_quota_us").read_text())
            period_us = int((base / "cpu.cfs_period_us").read_text())
            return None if quota_us <= 0 or period_us <= 0 else quota_us / period_us
    return None


def available_cores() -> int:
    """Cores this process may use: the CPU affinity set (taskset, cpuset), capped by a cgroup CPU quota."""
    cores = len(_affinity() or ()) or os.cpu_count() or 1
    limit = cgroup_cpu_limit()
    return cores if limit is None else min(cores, max(1, math.floor(limit)))


def default_threads() -> int:
    """Threads when nothing is known about other work: the cores this process may use, at most ``MAX_THREADS``."""
    return min(available_cores(), MAX_THREADS)


def parse_proc_stat(text: str) -> dict[int, tuple[int, int]]:
    """``cpuN`` lines of /proc/stat as {N: (busy jiffies, total jiffies)}; idle and iowait are not busy, steal
    is (the hypervisor gave that time to someone else). guest time is already inside user/nice."""
    out = {}
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu":
            continue
        # user nice system idle iowait irq softirq steal (older kernels write fewer: 0)
        fields = [int(x) for x in rest.split()[:8]] + [0] * 8
        total = sum(fields)
        out[int(name[3:])] = (total - fields[3] - fields[4], total)
    return out


def busy_fractions(before: Mapping[int, tuple[int, int]], after: Mapping[int, tuple[int, int]]) -> dict[int, float]:
    """Share of each CPU's time spent busy between two /proc/stat samples (0.0 where no time passed)."""
    out = {}
    for cpu, (busy1, total1) in after.items():
        busy0, total0 = before.get(cpu, (busy1, total1))
        span = total1 - total0
        out[cpu] = (busy1 - busy0) / span if span > 0 else 0.0
    return out


def choose_threads(
    cores: Iterable[int], busy: Mapping[int, float], limit: int | None = None, threshold: float = BUSY_THRESHOLD
) -> int:
    """Threads = usable cores that are not busy with other work now (at least 1, at most ``limit``)."""
    free = sum(1 for c in cores if busy.get(c, 0.0) <= threshold)
    return max(1, min(free, limit or MAX_THREADS, MAX_THREADS))


def threads_now(sample_seconds: float = SAMPLE_SECONDS, stat: Path = Path("/proc/stat")) -> int:
    """The thread count for a generation starting now. Without /proc/stat (not Linux): ``available_cores()``."""
    limit = available_cores()
    try:
        before = parse_proc_stat(stat.read_text())
        time.sleep(sample_seconds)
        after = parse_proc_stat(stat.read_text())
    except OSError:
        return default_threads()
    cores = _affinity() or set(after)
    return choose_threads(sorted(cores), busy_fractions(before, after), limit)
