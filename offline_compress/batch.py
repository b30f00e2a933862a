"""``offline-compress batch``: compact many archived sessions, each history file into ``DIR/<name>.summary.json``.

    offline-compress batch runs/ old/session-*.json --out summaries/ [--no-model] [--ray --workers 2]

Each input (a file in any supported format, or a folder walked for them) becomes the CompressedContext JSON of
its history (what ``offline-compress compress`` prints), written atomically by whoever compressed it. A file whose
output exists and is newer than the file is skipped, so an interrupted run resumes where it stopped. A file that
fails gets one line on stderr and the run goes on; the exit status is 2 if any failed. A progress bar runs on
stderr, and the last line gives the counts and the rate.

``--ray`` runs the same stage on Ray Data: the list of files is a dataset, and a callable class (the model
loaded once per worker in its ``__init__``) compresses each file and writes its output in the worker, on
``--workers`` actors. Without ``--ray`` one process compresses the files one after the other."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import InputError, OfflineCompressError
from .files import find_history_files, history_name, write_atomic

OUTPUT_SUFFIX = ".summary.json"


@dataclass(frozen=True)
class Job:
    source: Path
    output: Path


@dataclass(frozen=True)
class Outcome:
    source: str
    error: str  # "" when the output was written
    seconds: float


def is_done(job: Job) -> bool:
    """The output exists and is newer than its input (an input changed since is compressed again)."""
    try:
        return job.output.stat().st_mtime_ns > job.source.stat().st_mtime_ns
    except FileNotFoundError:
        return False


def plan(inputs: Sequence[str | Path], out_dir: Path) -> tuple[list[Job], list[Job]]:
    """(jobs to run, jobs skipped as done). Two inputs that would write the same output are an error before
    anything runs; files under ``out_dir`` are never inputs."""
    out = out_dir.resolve()
    files = [f for f in find_history_files(inputs) if not f.resolve().is_relative_to(out)]
    if not files:
        raise InputError("no history files found", source=", ".join(map(str, inputs)))
    jobs: list[Job] = []
    by_output: dict[Path, Path] = {}
    for f in files:
        job = Job(f, out_dir / f"{history_name(f)}{OUTPUT_SUFFIX}")
        if job.output in by_output:
            raise InputError(
                f"{by_output[job.output]} and {f} would both write {job.output.name}; "
                "rename one or run them into different --out folders",
                source=str(f),
            )
        by_output[job.output] = f
        jobs.append(job)
    finished = {j.output for j in jobs if is_done(j)}
    return [j for j in jobs if j.output not in finished], [j for j in jobs if j.output in finished]


def failure_line(source: str, err: BaseException) -> str:
    """What went wrong with one file, naming the file once."""
    text = str(err) or type(err).__name__
    if not isinstance(err, OfflineCompressError):  # not one of our typed errors: say what kind it is
        text = f"{type(err).__name__}: {text}"
    return text if text.startswith(source) else f"{source}: {text}"


class CompressStage:
    """Compresses one history file into its output. Built once per worker (the model loads here), then called
    for every file; as a Ray Data ``map_batches`` class it takes and returns batches of columns."""

    def __init__(
        self, model: str | None, keep_last: int, max_tokens: int, n_threads: int | None, fmt: str = "auto"
    ) -> None:
        from .compressor import Compressor

        self.compressor = Compressor(model, keep_last=keep_last, max_tokens=max_tokens, llama={"n_threads": n_threads})
        self.fmt = fmt

    def run(self, source: str, output: str) -> Outcome:
        from .formats import load_history

        start = time.perf_counter()
        try:
            context = self.compressor.compress(load_history(source, self.fmt))
            write_atomic(Path(output), context.to_json() + "\n")
            error = ""
        except Exception as err:  # one file's failure, whatever it is, must not stop the batch
            error = failure_line(source, err)
        return Outcome(source, error, time.perf_counter() - start)

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        outcomes = [self.run(str(s), str(o)) for s, o in zip(batch["source"], batch["output"])]
        return {column: [getattr(o, column) for o in outcomes] for column in ("source", "error", "seconds")}


def run_local(jobs: Sequence[Job], stage_args: dict[str, Any]) -> Iterator[Outcome]:
    stage = CompressStage(**stage_args)
    for job in jobs:
        yield stage.run(str(job.source), str(job.output))


def run_ray(jobs: Sequence[Job], stage_args: dict[str, Any], workers: int) -> Iterator[Outcome]:
    """The same stage on Ray Data, ``workers`` actors (one model each). Uses the Ray this process initialised, or
    joins ``RAY_ADDRESS``, or starts a local Ray (no dashboard, no usage reporting); disconnects or stops it at the
    end unless it was already initialised."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # Ray's usage report would try the network
    os.environ.setdefault("RAY_DATA_LOG_LEVEL", "ERROR")  # Ray Data's INFO/WARNING lines would break our bar
    try:
        import ray
        import ray.data
    except ImportError as err:
        raise OfflineCompressError(
            f'--ray needs Ray Data ({err}); install it with: pip install "offline_compress[ray]"'
        ) from None
    started = not ray.is_initialized()
    if started:
        quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING, "configure_logging": True}
        if os.environ.get("RAY_ADDRESS"):  # join that cluster (it has its own resources and dashboard)
            ray.init(**quiet)
        else:
            ray.init(num_cpus=max(workers, os.cpu_count() or 1), include_dashboard=False, **quiet)
    try:
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False  # ours is on stderr already
        context.print_on_execution_start = False
        rows = [{"source": str(j.source), "output": str(j.output)} for j in jobs]
        dataset = ray.data.from_items(rows, override_num_blocks=len(rows)).map_batches(
            CompressStage,
            fn_constructor_kwargs=stage_args,
            batch_size=1,
            num_cpus=1,
            compute=ray.data.ActorPoolStrategy(size=workers),
        )
        try:
            for row in dataset.iter_rows():
                yield Outcome(str(row["source"]), str(row["error"]), float(row["seconds"]))
        except ray.exceptions.RayError as err:  # a worker died or could not start: one line, not Ray's traceback
            first = next((line for line in str(err).splitlines() if line.strip()), type(err).__name__)
            raise OfflineCompressError(f"Ray failed: {first}") from None
    finally:
        if started:
            ray.shutdown()
