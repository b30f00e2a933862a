"""``python -m evaluation ab TASKS.jsonl --model-url URL``: every task run twice by a real agent against an
OpenAI-compatible model, once with the compaction hook and once without, then a paired summary.

Per run: ``completed`` (the task's own check exits 0 in the repository the agent left; never the agent's
word), ``contradictions`` (``offline_compress.contradictions.count_contradictions`` on the run's full
history; null when that module is not installed), input/output tokens (the endpoint's ``usage``, summed over
calls; counted with the target's tokenizer when a reply has none: ``token_source`` says which), wall time of
the agent's run, compactions, model calls (``steps``), and ``error`` (why a run stopped short: the endpoint
refused or timed out, the step or time limit, a task whose repository or check is broken). A failing run is a
row, never a traceback; each run works in its own temporary directory."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from offline_compress.errors import InputError, OfflineCompressError
from offline_compress.files import write_atomic
from offline_compress.hook.config import HookConfig

from .agent_loop import (
    AgentRun,
    AgentSettings,
    ChatClient,
    ModelEndpointError,
    Protocol,
    StopReason,
    TokenTally,
    hook_counts,
    run_agent,
)
from .stats import discordant, mcnemar_exact
from .tasks import Task, TaskEntry, TaskSetupError, read_task_entries, run_check, setup_repo

Arm = Literal["hook", "no_hook"]
AgentKind = Literal["builtin", "mini-swe-agent"]
DEFAULT_CONTEXT = 4096
_ROLES = ("system", "developer", "user", "assistant", "tool")


class ABConfig(BaseModel):
    tasks_path: str
    model_url: str
    model: str | None = None
    agent: AgentKind = "builtin"
    max_steps: int = 100
    context: int = DEFAULT_CONTEXT
    protocol: Protocol = "auto"
    late_system: Literal["keep", "user"] = "keep"
    max_reply_tokens: int = 1024
    request_timeout_s: float = 300
    command_timeout_s: float = 60
    no_model: bool = False  # the hook without a model whatever hook_model says (the default is extractive anyway)
    hook_model: str | None = None  # add a model draft to the hook's summaries: "default", a name or a .gguf path
    tokenizer: str | None = None
    only: list[str] | None = None
    keep_workdirs: bool = False


class RunRecord(BaseModel):
    task_id: str
    arm: Arm
    completed: bool
    contradictions: int | None
    total_input_tokens: int
    total_output_tokens: int
    token_source: Literal["endpoint", "counted", "mixed", "none"]
    duration_ms: int
    compactions: int
    steps: int
    error: str | None
    trigger_firings: int = 0
    stop_reason: str | None = None
    check_returncode: int | None = None
    workdir: str | None = None
    notes: list[str] = []


class ArmSummary(BaseModel):
    runs: int
    completed: int
    errors: int
    input_tokens: int
    output_tokens: int
    duration_ms: int
    median_duration_ms: float | None
    compactions: int
    trigger_firings: int
    contradictions: int | None


class ABSummary(BaseModel):
    pairs: int
    hook: ArmSummary
    no_hook: ArmSummary
    only_hook_completed: int
    only_no_hook_completed: int
    completion_difference: float | None
    mcnemar_p: float
    input_tokens_saved: int
    input_tokens_saved_fraction: float | None
    pairs_without_error: int
    token_sources: list[str]
    contradiction_counter: str


class ABReport(BaseModel):
    config: ABConfig
    runs: list[RunRecord]
    summary: ABSummary


def contradiction_counter_status() -> str:
    if importlib.util.find_spec("offline_compress.contradictions") is None:
        return "not available (offline_compress.contradictions is not installed): contradictions are null"
    return "offline_compress.contradictions.count_contradictions"


def count_run_contradictions(history: list[dict[str, Any]]) -> int | None:
    """``len(count_contradictions(history).contradictions)``; None when the counter is not installed."""
    if importlib.util.find_spec("offline_compress.contradictions") is None:
        return None
    from offline_compress.contradictions import count_contradictions

    # mini-swe-agent's final "exit" message is bookkeeping, not a chat message.
    report = count_contradictions([m for m in history if m.get("role") in _ROLES])
    return len(getattr(report, "contradictions", report))


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return f"{type(err).__name__}: {text[:400]}"


class _Harness:
    """What the runs share: the tasks folder, the agent settings, the compressor and the token counter."""

    def __init__(self, config: ABConfig, model_name: str) -> None:
        self.config = config
        self.tasks_dir = Path(config.tasks_path).resolve().parent
        self.settings = AgentSettings(
            model_url=config.model_url,
            model=model_name,
            max_steps=config.max_steps,
            max_reply_tokens=config.max_reply_tokens,
            request_timeout_s=config.request_timeout_s,
            command_timeout_s=config.command_timeout_s,
            protocol=config.protocol,
            late_system=config.late_system,
        )

    def counter(self) -> Any:
        from offline_compress.tokens.counter import get_counter

        return get_counter(self.config.tokenizer)

    def hook(self, archive: Path) -> Any:
        from offline_compress.compressor import default_compressor
        from offline_compress.hook.compaction_hook import CompactionHook

        # One compressor per process and model (a model is loaded once); None: the extractive default.
        compressor = default_compressor(None if self.config.no_model else self.config.hook_model)
        # recall_note="": these agents are not offered the archive's recall tool, so the summary must not point to it.
        return CompactionHook(
            self.config.context,
            HookConfig(recall_note=""),
            archive_path=archive,
            compressor=compressor,
            counter=self.counter(),
        )

    def run(self, entry: TaskEntry, arm: Arm) -> RunRecord:
        if entry.task is None:
            return _error_row(entry.id, arm, entry.error or "unreadable task")
        task = entry.task
        run_dir = Path(tempfile.mkdtemp(prefix=f"ab-{task.id}-{arm}-"))
        repo = run_dir / "repo"
        try:
            try:
                base = setup_repo(task, self.tasks_dir, repo)
            except TaskSetupError as err:
                return _error_row(task.id, arm, f"task setup: {err}")
            hook = self.hook(run_dir / "archive.sqlite3") if arm == "hook" else None
            start = time.perf_counter()
            if self.config.agent == "builtin":
                result = run_agent(
                    task.prompt, repo, self.settings, timeout_s=task.timeout_s, hook=hook, counter=self.counter
                )
            else:
                result = run_mini_swe_agent(task, repo, self.settings, hook=hook, counter=self.counter)
            duration_ms = round((time.perf_counter() - start) * 1000)
            if self.config.keep_workdirs:  # for reading what the agent did: the full history, not the compacted view
                (run_dir / "history.json").write_text(
                    json.dumps(result.history, ensure_ascii=False, indent=1, default=str) + "\n"
                )
            notes = list(result.notes)
            try:
                check = run_check(task, repo, base)
            except TaskSetupError as err:
                agent_error = f"; the agent's run: {result.error}" if result.error else ""
                return _error_row(task.id, arm, f"check: {err}{agent_error}", result=result, duration_ms=duration_ms)
            if check.timed_out:
                notes.append(f"the check timed out after {task.check_timeout_s:.0f} s")
            try:
                contradictions = count_run_contradictions(result.history)
            except Exception as err:  # noqa: BLE001 - another module's failure must not end the run
                contradictions = None
                notes.append(f"contradiction counter failed: {_one_line(err)}")
            return RunRecord(
                task_id=task.id,
                arm=arm,
                completed=check.passed,
                contradictions=contradictions,
                total_input_tokens=result.input_tokens,
                total_output_tokens=result.output_tokens,
                token_source=result.token_source,
                duration_ms=duration_ms,
                compactions=result.compactions,
                trigger_firings=result.trigger_firings,
                steps=result.steps,
                error=result.error,
                stop_reason=result.stop_reason,
                check_returncode=check.returncode,
                workdir=str(run_dir) if self.config.keep_workdirs else None,
                notes=notes,
            )
        except Exception as err:  # noqa: BLE001 - one broken run is a row; the harness goes on
            return _error_row(task.id, arm, f"harness: {_one_line(err)}")
        finally:
            if not self.config.keep_workdirs:
                shutil.rmtree(run_dir, ignore_errors=True)


def _error_row(
    task_id: str, arm: Arm, error: str, *, result: AgentRun | None = None, duration_ms: int = 0
) -> RunRecord:
    return RunRecord(
        task_id=task_id,
        arm=arm,
        completed=False,
        contradictions=None,
        total_input_tokens=result.input_tokens if result else 0,
        total_output_tokens=result.output_tokens if result else 0,
        token_source=result.token_source if result else "none",
        duration_ms=duration_ms,
        compactions=result.compactions if result else 0,
        trigger_firings=result.trigger_firings if result else 0,
        steps=result.steps if result else 0,
        error=error,
        stop_reason=result.stop_reason if result else None,
        notes=list(result.notes) if result else [],
    )


def run_mini_swe_agent(
    task: Task, workdir: Path, settings: AgentSettings, *, hook: Any, counter: Callable[[], Any]
) -> AgentRun:
    """One run of mini-swe-agent (``CompactingAgent``) with its own bundled templates: text-based replies
    unless ``protocol`` is ``tools``. mini-swe-agent's own limits stop it: ``step_limit`` = max steps,
    ``wall_time_limit_seconds`` = the task's limit."""
    # mini-swe-agent retries a failed query up to 10 times with waits of up to a minute; one retry is enough
    # here (a refused endpoint becomes an error row in seconds). A value the user set wins.
    os.environ.setdefault("MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT", "2")
    # The adapter first: it silences mini-swe-agent's import banner, which would land in the table on stdout.
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.exceptions import FormatError

    from offline_compress.integrations.mini_swe_agent import CompactingAgent, builtin_config, local_model

    textbased = settings.protocol != "tools"
    config = builtin_config("mini_textbased" if textbased else "mini")
    model_config = dict(config.get("model") or {})
    model_config["model_kwargs"] = (model_config.get("model_kwargs") or {}) | {
        "temperature": settings.temperature,
        "max_tokens": settings.max_reply_tokens,
        "timeout": settings.request_timeout_s,
        "api_key": settings.api_key,
    }
    model = local_model(settings.model_url, settings.model, textbased=textbased, **model_config)
    import litellm

    # litellm prints its provider list to stdout whenever its cost look-up fails, as it does for every
    # local model; the table goes to stdout.
    litellm.suppress_debug_info = True
    env = LocalEnvironment(
        **(config.get("environment") or {}) | {"cwd": str(workdir), "timeout": int(settings.command_timeout_s)}
    )
    tally = TokenTally(counter)

    class TalliedAgent(CompactingAgent):
        def query(self) -> dict:
            try:
                message = super().query()
            except FormatError as err:  # the reply was billed before it failed to parse
                extra = err.messages[0].get("extra", {})
                tally.add(_usage(extra.get("response")), self.messages, {"content": extra.get("model_response", "")})
                raise
            tally.add(_usage(message.get("extra", {}).get("response")), self.messages[:-1], message)
            return message

    agent_config = dict(config.get("agent") or {}) | {
        "step_limit": settings.max_steps,
        "cost_limit": 0,
        "wall_time_limit_seconds": int(task.timeout_s),
    }
    agent = TalliedAgent(model, env, hook=hook, **agent_config)
    error: str | None = None
    stop: StopReason = "agent_error"
    try:
        info = agent.run(task.prompt)
        status = info.get("exit_status", "")
        if status == "Submitted":
            stop = "submitted"
        elif status == "LimitsExceeded":
            stop, error = "max_steps", f"reached --max-steps {settings.max_steps} without submitting"
        elif status == "TimeExceeded":
            stop, error = "timeout", f"timed out: the task's limit of {task.timeout_s:.0f} s was reached"
        elif status == "RepeatedFormatError":
            stop, error = (
                "format_errors",
                "mini-swe-agent stopped: replies without a valid action several times in a row (RepeatedFormatError)",
            )
        else:
            error = f"mini-swe-agent stopped: {status or 'no exit status'}"
    except OfflineCompressError as err:  # raised by the hook inside CompactingAgent.query
        stop, error = "compaction_error", f"compaction failed: {_one_line(err)}"
    except Exception as err:  # noqa: BLE001 - mini-swe-agent re-raises what the model call raised
        stop, error = "model_error", f"model endpoint: {_one_line(err)}"
    return AgentRun(
        history=list(agent.trajectory),
        steps=agent.n_calls,
        submitted=stop == "submitted",
        stop_reason=stop,
        error=error,
        input_tokens=tally.input_tokens,
        output_tokens=tally.output_tokens,
        token_source=tally.source(),
        **hook_counts(hook),
        protocol_used="text" if textbased else "tools",
    )


def _usage(response: Any) -> dict[str, Any] | None:
    usage = response.get("usage") if isinstance(response, dict) else None
    return usage if isinstance(usage, dict) else None


def _arm_summary(rows: list[RunRecord]) -> ArmSummary:
    counted = [r.contradictions for r in rows if r.contradictions is not None]
    return ArmSummary(
        runs=len(rows),
        completed=sum(r.completed for r in rows),
        errors=sum(r.error is not None for r in rows),
        input_tokens=sum(r.total_input_tokens for r in rows),
        output_tokens=sum(r.total_output_tokens for r in rows),
        duration_ms=sum(r.duration_ms for r in rows),
        median_duration_ms=statistics.median([r.duration_ms for r in rows]) if rows else None,
        compactions=sum(r.compactions for r in rows),
        trigger_firings=sum(r.trigger_firings for r in rows),
        contradictions=sum(counted) if counted else None,
    )


def summarize(runs: list[RunRecord]) -> ABSummary:
    """The paired summary: tasks with both arms run are the pairs; McNemar on their completion."""
    by_task: dict[str, dict[str, RunRecord]] = {}
    for row in runs:
        by_task.setdefault(row.task_id, {})[row.arm] = row
    pairs = [(arms["hook"], arms["no_hook"]) for arms in by_task.values() if "hook" in arms and "no_hook" in arms]
    only_hook, only_no_hook = discordant([(h.completed, n.completed) for h, n in pairs])
    hook_rows = [h for h, _ in pairs]
    no_hook_rows = [n for _, n in pairs]
    hook, no_hook = _arm_summary(hook_rows), _arm_summary(no_hook_rows)
    saved = no_hook.input_tokens - hook.input_tokens
    return ABSummary(
        pairs=len(pairs),
        hook=hook,
        no_hook=no_hook,
        only_hook_completed=only_hook,
        only_no_hook_completed=only_no_hook,
        completion_difference=(hook.completed - no_hook.completed) / len(pairs) if pairs else None,
        mcnemar_p=mcnemar_exact(only_hook, only_no_hook),
        input_tokens_saved=saved,
        input_tokens_saved_fraction=saved / no_hook.input_tokens if no_hook.input_tokens else None,
        pairs_without_error=sum(1 for h, n in pairs if h.error is None and n.error is None),
        token_sources=sorted({r.token_source for r in runs}),
        contradiction_counter=contradiction_counter_status(),
    )


def resolve_model_name(config: ABConfig) -> tuple[str, str]:
    """(model name, how it was chosen): ``--model``, else the endpoint's first listed model, else "local"."""
    if config.model:
        return config.model, "--model"
    try:
        names = ChatClient(config.model_url).models()
    except ModelEndpointError as err:
        return "local", f"default (could not list the endpoint's models: {err})"
    return (names[0], "the endpoint's first model") if names else ("local", "default (the endpoint lists no models)")


def run_ab(
    config: ABConfig,
    *,
    progress: Callable[[str], None] = lambda _: None,
    on_run: Callable[[ABReport], None] = lambda _: None,
) -> ABReport:
    """Run every task in both arms (the order alternates from task to task) and summarise."""
    entries = read_task_entries(config.tasks_path)
    if config.only:
        wanted = set(config.only)
        unknown = wanted - {e.id for e in entries}
        if unknown:
            raise InputError(
                f"--only names tasks that are not in the file: {', '.join(sorted(unknown))}", source=config.tasks_path
            )
        entries = [e for e in entries if e.id in wanted]
    model_name, how = resolve_model_name(config)
    progress(f"model {model_name!r} ({how}) at {config.model_url}; agent {config.agent}; {len(entries)} tasks x 2 arms")
    progress(f"contradiction counter: {contradiction_counter_status()}")
    harness = _Harness(config, model_name)
    runs: list[RunRecord] = []
    total = 2 * len(entries)
    for index, entry in enumerate(entries):
        arms: tuple[Arm, Arm] = ("hook", "no_hook") if index % 2 == 0 else ("no_hook", "hook")
        for arm in arms:
            row = harness.run(entry, arm)
            runs.append(row)
            outcome = "completed" if row.completed else "not completed"
            tail = f"; error: {row.error}" if row.error else ""
            progress(
                f"[{len(runs)}/{total}] {row.task_id} {arm}: {outcome}, {row.steps} steps, "
                f"{row.compactions} compactions, {row.duration_ms / 1000:.1f} s{tail}"
            )
            on_run(ABReport(config=config, runs=runs, summary=summarize(runs)))
    return ABReport(config=config, runs=runs, summary=summarize(runs))


def format_table(report: ABReport) -> str:
    head = ("task", "arm", "done", "contra", "in_tok", "out_tok", "time_s", "compact", "steps", "error")
    rows = [head]
    for r in report.runs:
        rows.append(
            (
                r.task_id,
                r.arm,
                "yes" if r.completed else "no",
                _or_na(r.contradictions),
                str(r.total_input_tokens),
                str(r.total_output_tokens),
                f"{r.duration_ms / 1000:.1f}",
                str(r.compactions),
                str(r.steps),
                (r.error or "")[:70],
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(head) - 1)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths)) + "  " + row[-1] for row in rows]
    s = report.summary
    h, n = s.hook, s.no_hook
    diff = "n/a" if s.completion_difference is None else f"{s.completion_difference * 100:+.1f} points"
    saved = "n/a" if s.input_tokens_saved_fraction is None else f"{s.input_tokens_saved_fraction:.1%}"
    contra = f"hook {_or_na(h.contradictions)}, no_hook {_or_na(n.contradictions)}"
    lines += [
        "",
        f"pairs: {s.pairs} ({s.pairs_without_error} without an error in either arm)",
        f"completed: hook {h.completed}/{h.runs}, no_hook {n.completed}/{n.runs}; only hook {s.only_hook_completed}, "
        f"only no_hook {s.only_no_hook_completed}; difference {diff}; exact McNemar p = {s.mcnemar_p:.4g}",
        f"input tokens: hook {h.input_tokens:,} vs no_hook {n.input_tokens:,}: saved {s.input_tokens_saved:,} ({saved}); "
        f"output tokens: hook {h.output_tokens:,} vs no_hook {n.output_tokens:,} (source: {', '.join(s.token_sources)})",
        f"time: hook {h.duration_ms / 1000:.1f} s vs no_hook {n.duration_ms / 1000:.1f} s in all "
        f"(median per run {_seconds(h.median_duration_ms)} vs {_seconds(n.median_duration_ms)})",
        f"compactions (hook arm): {h.compactions} (the trigger fired {h.trigger_firings} times); errors: hook {h.errors}, no_hook {n.errors}; contradictions: {contra}",
        f"contradiction counter: {s.contradiction_counter}",
    ]
    return "\n".join(lines)


def _or_na(value: int | None) -> str:
    return "n/a" if value is None else str(value)


def _seconds(ms: float | None) -> str:
    return "n/a" if ms is None else f"{ms / 1000:.1f} s"


def _progress(message: str) -> None:
    print(f"offline-compress ab: {message}", file=sys.stderr, flush=True)


def cmd_ab(args: argparse.Namespace) -> int:
    config = ABConfig(
        tasks_path=args.tasks,
        model_url=args.model_url,
        model=args.model,
        agent=args.agent,
        max_steps=args.max_steps,
        context=args.context,
        protocol=args.protocol,
        late_system=args.late_system,
        max_reply_tokens=args.max_reply_tokens,
        request_timeout_s=args.request_timeout,
        command_timeout_s=args.command_timeout,
        no_model=args.no_model,
        hook_model=args.hook_model,
        tokenizer=args.tokenizer,
        only=[t for t in args.only.split(",") if t] if args.only else None,
        keep_workdirs=args.keep_workdirs,
    )
    out = Path(args.json) if args.json else None

    def save(report: ABReport) -> None:
        if out is not None:  # after every run, atomically: an interrupted run keeps what it measured
            write_atomic(out, report.model_dump_json(indent=2) + "\n")

    report = run_ab(config, progress=_progress, on_run=save)
    save(report)
    sys.stdout.write(format_table(report) + "\n")
    return 0


def _positive(kind: type) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value

    return parse


def add_ab_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``ab`` on the CLI's subparsers (``func`` is set)."""
    p = subparsers.add_parser(
        "ab", help="live A/B: run each task with and without the compaction hook against a model endpoint"
    )
    p.add_argument("tasks", help="tasks file (JSONL: id, repo, prompt, check, timeout_s), e.g. eval/tasks/tasks.jsonl")
    p.add_argument("--model-url", required=True, help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--model", help="model name sent to the endpoint (default: the first one it lists)")
    p.add_argument(
        "--agent", choices=["builtin", "mini-swe-agent"], default="builtin", help="the agent loop (default builtin)"
    )
    p.add_argument(
        "--max-steps", type=_positive(int), default=100, help="model calls per run before it is stopped (default 100)"
    )
    p.add_argument(
        "--context",
        type=int,
        default=DEFAULT_CONTEXT,
        help=f"context window the hook keeps the history inside, in tokens (default {DEFAULT_CONTEXT}, small so short runs compact)",
    )
    p.add_argument(
        "--protocol",
        choices=["auto", "tools", "text"],
        default="auto",
        help="how the agent reads commands: tool calls, a ```bash block, or tools with the block as fallback (default auto)",
    )
    p.add_argument(
        "--late-system",
        choices=["keep", "user"],
        default="keep",
        help="builtin agent: send system messages after the first (the hook's summary) as they are, or as "
        "user messages for servers whose chat format drops them, as llama-cpp-python's built-in formats do",
    )
    p.add_argument(
        "--max-reply-tokens", type=_positive(int), default=1024, help="max_tokens of each model reply (default 1024)"
    )
    p.add_argument(
        "--request-timeout",
        type=_positive(float),
        default=300,
        help="seconds to wait for one model reply (default 300)",
    )
    p.add_argument(
        "--command-timeout", type=_positive(float), default=60, help="seconds one agent command may run (default 60)"
    )
    p.add_argument(
        "--no-model", action="store_true", help="the hook compresses extractively (the default; kept for scripts)"
    )
    p.add_argument(
        "--hook-model",
        help="add a model draft to the hook's summaries: 'default' (the embedded Gemma), a "
        "manifest name or a .gguf path (default: none, extractive)",
    )
    p.add_argument(
        "--tokenizer", help="tokenizer of the target model for the hook's trigger (default: the embedded Gemma)"
    )
    p.add_argument("--only", help="comma-separated task ids to run (default: all)")
    p.add_argument(
        "--keep-workdirs",
        action="store_true",
        help="keep each run's folder: the repository, history.json and the hook's archive (paths in the JSON)",
    )
    p.add_argument("--json", help="write every run and the summary here (atomically, after each run)")
    p.set_defaults(func=cmd_ab)
    return p
