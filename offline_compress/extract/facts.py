"""``Facts``: all exact facts of a history (tool events, failures, files read and changed, the task, constraint
candidates, decisions), and ``extract_facts``, which reads them. Pure and deterministic."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..history.conventions import as_message_list
from ..history.messages import Message
from .calls import changed_lines, todo_state
from .constraints import MAX_CONSTRAINTS, Constraint, extract_constraints
from .events import Frozen, ToolEvent, extract_tool_events, failed, unique
from .state import WorkingState, working_state
from .steps import WorkStep, extract_steps
from .task import extract_task

_AIDER_APPLIED = re.compile(r"^(?:>\s*)?Applied edit to (\S[^\n]*?)\s*$", re.M)


class FailedCommand(Frozen):
    """A call whose outcome was ``error``: what was tried (exact) and the line that says why (verbatim)."""

    approach: str
    reason_failed: str
    call_index: int
    result_index: int | None = None


class Facts(Frozen):
    """All exact facts of a history (``extract_facts``)."""

    task: str = ""  # the first user message's task statement (a verbatim prefix of a section of it)
    task_index: int | None = None
    tool_events: list[ToolEvent] = []
    failed_attempts: list[FailedCommand] = []
    files_read: list[str] = []
    files_changed: list[str] = []
    constraint_candidates: list[Constraint] = []
    state: WorkingState = WorkingState()  # files with their net change, failures and what followed, decisions, ...
    steps: list[WorkStep] = []  # the work log: what the agent said, ran and saw at each call
    # the agent's own latest list of what is done and what is left ((status, item) of its last planning call that
    # wrote one, e.g. TodoWrite); None: no such call
    todo: tuple[tuple[str, str], ...] | None = None


def _approach(event: ToolEvent) -> str:
    """What a failed call tried, as a person reads it: the command line, or the readable call (``Edit path``); of an
    edit, the lines it changed (``changed_lines``: the approach is cut to a few hundred characters, which the
    unchanged lines around an edit would fill)."""
    if event.shown.strip() and not event.shell:
        return changed_lines(event.shown)
    return event.command if event.command.strip() not in ("", "{}") else f"{event.tool} {event.target}".strip()


def extract_facts(
    messages: Sequence[Message | Mapping[str, Any]],
    *,
    start: int = 0,
    summarised_before: bool = False,
) -> Facts:
    """All exact facts of ``messages[start:]``. The messages before ``start`` (a head kept verbatim elsewhere:
    the system prompt and the task) are read only as context — where the task was stated, which user turns
    come after the first reply — and give no facts of their own. ``summarised_before``: an exchange between the
    head and ``messages[start]`` was summarised already (a previous summary), so every user turn from ``start``
    on is a person steering mid-session, even one that follows the head directly. Pure and deterministic."""
    msgs = as_message_list(messages)
    events = [e for e in extract_tool_events(msgs) if e.call_index >= start]
    failures = [
        FailedCommand(
            approach=_approach(e),
            reason_failed=e.error_line or "(no output)",
            call_index=e.call_index,
            result_index=e.result_index,
        )
        for e in events
        if failed(e)
    ]
    files_read = unique(p for e in events for p in e.files_read)
    changed = [(e.call_index, p) for e in events for p in e.files_changed]
    for i, m in enumerate(msgs[start:], start):  # aider reports its edits in console lines ("Applied edit to X")
        if m.role != "system" and "Applied edit to" in m.text:
            changed += [(i, x.group(1)) for x in _AIDER_APPLIED.finditer(m.text)]
    changed.sort(key=lambda t: t[0])  # stable: chronological, events first within a message
    task, task_index = extract_task(msgs)
    if task_index is not None and task_index < start:
        task, task_index = "", None  # stated in the head, which the reader has verbatim
    after = start if summarised_before else None
    candidates = extract_constraints(msgs, limit=10**6, mid_session_from=after)
    constraints = [c for c in candidates if c.message_index >= start][:MAX_CONSTRAINTS]
    todos = [todo_state(e.tool, e.command) for e in events if not e.shell and e.outcome != "error"]
    return Facts(
        todo=next((p for p in reversed(todos) if p is not None), None),  # a failed call wrote no list
        task=task,
        task_index=task_index,
        tool_events=events,
        failed_attempts=failures,
        files_read=files_read,
        files_changed=unique(p for _, p in changed),
        constraint_candidates=constraints,
        state=working_state(msgs, events, start),
        steps=extract_steps(msgs, events),
    )
