"""The live A/B's task suite: a JSONL file of tasks, each a small repository, a prompt with constraints and a
check command; and the per-run working copy (a fresh git repository with one commit).

One JSON object per line: ``id``, ``repo`` (a folder, relative to the tasks file's folder), ``prompt``,
``check`` (a shell command run in the repository after the agent stops; exit status 0 = completed),
``timeout_s`` (wall-clock limit of the agent's run) and optionally ``check_timeout_s``. The check runs with
``AB_BASE`` set to the commit the run started from, so it can tell whether protected files changed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from offline_compress.errors import InputError, OfflineCompressError

BASE_ENV = "AB_BASE"
# Fixed identity and dates: the base commit (and so AB_BASE) is the same bytes on every run.
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "offline-compress ab",
    "GIT_AUTHOR_EMAIL": "ab@localhost",
    "GIT_COMMITTER_NAME": "offline-compress ab",
    "GIT_COMMITTER_EMAIL": "ab@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
    "GIT_CONFIG_NOSYSTEM": "1",
}
OUTPUT_TAIL = 2000


class TaskSetupError(OfflineCompressError):
    """A task's repository could not be prepared, or its check could not be run (not the agent's fault)."""


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=100)
    repo: str = Field(min_length=1)
    prompt: str = Field(min_length=1)
    check: str = Field(min_length=1)
    timeout_s: float = Field(gt=0)
    check_timeout_s: float = Field(default=300, gt=0)


class TaskEntry(BaseModel):
    """One line of a tasks file: the task, or why it could not be read (the run gets an error row)."""

    line: int
    id: str
    task: Task | None = None
    error: str | None = None


class CheckResult(BaseModel):
    passed: bool
    returncode: int | None
    timed_out: bool
    output_tail: str


def _entry_id(raw: object, line: int) -> str:
    if isinstance(raw, dict) and isinstance(raw.get("id"), str) and raw["id"]:
        return raw["id"]
    return f"line-{line}"


def _describe(err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "task"
    return f"field {where!r}: {first['msg']}"


def read_task_entries(path: str | Path) -> list[TaskEntry]:
    """Every non-blank line of ``path`` as a TaskEntry. A bad line becomes an entry with ``error`` set, so
    one typo does not stop a long run; a file that cannot be read at all raises InputError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", source=str(path)) from None
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 ({err.reason} at byte {err.start})", source=str(path)) from None
    except OSError as err:
        raise InputError(f"cannot read ({err.strerror})", source=str(path)) from None
    entries: list[TaskEntry] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as err:
            entries.append(
                TaskEntry(
                    line=number,
                    id=f"line-{number}",
                    error=f"line {number}: malformed JSON ({err.msg}, column {err.colno})",
                )
            )
            continue
        task_id = _entry_id(raw, number)
        try:
            task = Task.model_validate(raw)
        except ValidationError as err:
            entries.append(TaskEntry(line=number, id=task_id, error=f"line {number}: {_describe(err)}"))
            continue
        if task.id in seen:
            entries.append(TaskEntry(line=number, id=task_id, error=f"line {number}: duplicate task id {task.id!r}"))
            continue
        seen.add(task.id)
        entries.append(TaskEntry(line=number, id=task.id, task=task))
    if not entries:
        raise InputError("no tasks in the file", source=str(path))
    return entries


def load_tasks(path: str | Path) -> list[Task]:
    """All tasks of ``path``; the first bad line raises InputError (file and line named)."""
    tasks = []
    for entry in read_task_entries(path):
        if entry.task is None:
            raise InputError(entry.error or "unreadable task", source=str(path))
        tasks.append(entry.task)
    return tasks


def repo_source(task: Task, tasks_dir: Path) -> Path:
    return (tasks_dir / task.repo).resolve()


def _git(args: list[str], cwd: Path) -> str:
    try:
        done = subprocess.run(
            ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
            cwd=cwd,
            env=os.environ | _GIT_ENV,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except FileNotFoundError:
        raise TaskSetupError("git is not installed (needed to set up task repositories)") from None
    except subprocess.TimeoutExpired:
        raise TaskSetupError(f"git {args[0]} timed out in {cwd}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise TaskSetupError(f"git {args[0]} failed in {cwd}: {last}")
    return done.stdout.strip()


def setup_repo(task: Task, tasks_dir: Path, dest: Path) -> str:
    """Copy the task's repository folder to ``dest`` (which must not exist) and make it a git repository
    with one commit; return that commit's id (the check's ``AB_BASE``)."""
    source = repo_source(task, tasks_dir)
    if not source.is_dir():
        raise TaskSetupError(f"task {task.id}: repository folder not found: {source}")
    try:
        shutil.copytree(source, dest, symlinks=True)
    except (OSError, shutil.Error) as err:
        raise TaskSetupError(f"task {task.id}: cannot copy {source}: {err}") from None
    if (dest / ".git").exists():
        raise TaskSetupError(f"task {task.id}: {source} holds a .git folder; give a plain folder of files")
    _git(["init", "-q"], dest)
    _git(["add", "-A"], dest)
    _git(["commit", "-q", "--no-verify", "--allow-empty", "-m", f"task {task.id}"], dest)
    return _git(["rev-parse", "HEAD"], dest)


def run_shell(
    command: str, cwd: Path, timeout_s: float, env: dict[str, str] | None = None
) -> tuple[int | None, str, bool]:
    """Run ``command`` with ``sh`` in ``cwd``: (exit status or None, stdout+stderr, timed out). On a time-out
    the whole process group is killed, so no child outlives the run."""
    process = subprocess.Popen(
        command,
        shell=True,
        cwd=cwd,
        env=os.environ | (env or {}),
        text=True,
        encoding="utf-8",
        errors="replace",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout_s)
        return process.returncode, output, False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return None, output or "", True


def run_check(task: Task, workdir: Path, base_commit: str) -> CheckResult:
    """The task's check in ``workdir``: passed when it exits 0. A check that cannot start (126/127: not
    executable / not found) raises TaskSetupError: that is the suite's fault, not a failed task."""
    code, output, timed_out = run_shell(task.check, workdir, task.check_timeout_s, {BASE_ENV: base_commit})
    if code in (126, 127):
        tail = output.strip().splitlines()[-1:] or [""]
        raise TaskSetupError(f"task {task.id}: check command could not run (exit {code}): {tail[0]}")
    return CheckResult(passed=code == 0, returncode=code, timed_out=timed_out, output_tail=output[-OUTPUT_TAIL:])
