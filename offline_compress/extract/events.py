"""Tool events: every call of a history paired with its result (by call id, else in order; text calls with the
next message), with its tool, target, files and outcome."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from ..history.conventions import (
    MINI_FORMAT_ERROR,
    RETURNCODE,
    as_message_list,
    bash_blocks,
    is_tool_output,
    text_command,
    unwrap_output,
)
from ..history.messages import Message
from ..history.shell import parse_shell
from .commands import ShellState, summarise_command
from .function_calls import CallFacts, analyse_function_call
from .outcomes import Outcome, classify_result


class Frozen(BaseModel):
    """The models of extracted facts: immutable, and no field they do not name."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolEvent(Frozen):
    """One tool call and what came of it."""

    call_index: int  # index of the assistant message that made the call
    result_index: int | None = None  # index of the message holding its result; None: never answered
    call_id: str | None = None
    tool: str  # function name; for shell commands the program (sed, grep, pytest, git, …)
    target: str = ""  # what it acted on: path, "pattern in path", test id, URL (derived, may be shortened)
    command: str  # the exact command text, or the exact arguments JSON of a function call, untruncated
    shown: str = ""  # the call as a person reads it, when that differs from ``command`` (``calls.Call.lines``)
    shell: bool = False  # ``command`` is a shell command line
    read_only: bool = False  # it only reads (a search that finds nothing fails without anything to fix)
    outcome: Outcome | None = None  # None when there is no result
    exit_code: int | None = None
    error_line: str | None = None  # verbatim line of the result that says why (a substring of it)
    files_read: tuple[str, ...] = ()
    files_changed: tuple[str, ...] = ()


@dataclass
class _Call:
    """A call read from its message (its facts, paths relative to the working directory), waiting for its result."""

    call_index: int
    call_id: str | None
    facts: CallFacts
    result: int | None = None


def _event(call: _Call, result_index: int | None, result_text: str | None) -> ToolEvent:
    facts = call.facts
    outcome: Outcome | None = None
    exit_code = error_line = None
    if result_text is not None:
        # an output wrapped with its exit code (older Codex) is read as the text the tool printed
        result_text, wrapped_code = unwrap_output(result_text)
        # error_line is a substring of result_text (tests/test_outcomes.py holds classify_result to it)
        outcome, exit_code, error_line = classify_result(result_text, read_only=facts.read_only, exit_code=wrapped_code)
    writes = facts.writes
    if outcome == "error" and (not facts.shell or len(parse_shell(facts.command)) <= 1):
        if not (result_text and _EDIT_APPLIED.search(result_text[:400])):
            writes = []  # a single edit that failed changed nothing
    return ToolEvent(
        call_index=call.call_index,
        result_index=result_index,
        call_id=call.call_id,
        tool=facts.tool[:64] or "sh",
        target=facts.target,
        command=facts.command,
        shown=facts.shown if facts.shown != facts.command else "",
        shell=facts.shell,
        read_only=facts.read_only,
        outcome=outcome,
        exit_code=exit_code,
        error_line=error_line,
        files_read=tuple(unique(facts.reads)),
        files_changed=tuple(unique(writes)),
    )


def failed(event: ToolEvent) -> bool:
    """The call failed: an error (or a partial result with a failing exit code), but not a read that found nothing
    (``grep`` / ``rg`` exiting 1 with no output: an answer, not a problem to solve or to avoid; measured on
    resume-qa, docs/resume.md)."""
    if event.outcome != "error" and not (event.outcome == "partial" and event.exit_code not in (None, 0)):
        return False
    return not (event.read_only and (not event.error_line or RETURNCODE.fullmatch(event.error_line.strip())))


def unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))  # first occurrences, in order


# An editor that applied an edit says so on a line of its own first (after Moatless' ``<observation>`` line), before
# what it ran after it (Moatless runs the tests and reports them in the same result): the file changed even when
# those tests failed
_EDIT_APPLIED = re.compile(
    r"^(?:The file \S.* has been (?:edited|updated)\b|File created successfully|Success\. Updated the following files)",
    re.M,
)
_OPEN_FILE_LINE = re.compile(r"^\(Open file: ([^\n)]+)\)\s*$", re.M)
_CWD_LINE = re.compile(r"^\(Current directory: ([^\n)]+)\)\s*$", re.M)


def extract_tool_events(messages: Sequence[Message]) -> list[ToolEvent]:
    """Every tool call in order, both conventions, with its result, target and outcome."""
    msgs = as_message_list(messages)
    state = ShellState()
    events: list[ToolEvent] = []
    pending: dict[str, int] = {}  # call id -> slot in `calls`
    calls: list[_Call] = []  # canonical calls awaiting results
    for i, msg in enumerate(msgs):
        if msg.role == "assistant" and msg.tool_calls:
            for tc in msg.tool_calls:
                facts = analyse_function_call(tc.function.name, tc.function.arguments, state)
                reads, writes = state.relative(facts.reads), state.relative(facts.writes)
                # A shell command line was pulled out of the arguments (or the tool is a shell).
                shell = facts.shell or facts.command != tc.function.arguments
                if tc.id:
                    pending[tc.id] = len(calls)
                target = state.relative([facts.target])[0]
                relative = facts._replace(target=target, reads=reads, writes=writes, shell=shell)
                calls.append(_Call(i, tc.id, relative))
            continue
        if msg.role == "tool":
            answers = pending.pop(msg.tool_call_id, None) if msg.tool_call_id else None
            if answers is None:  # no id: the oldest unanswered call
                answers = next((k for k, c in enumerate(calls) if c.result is None), None)
                if answers is not None and calls[answers].call_id:
                    pending.pop(calls[answers].call_id or "", None)
            if answers is not None and calls[answers].result is None:
                calls[answers].result = i
            _note_open_file(msg.text, state)
            continue
        command = text_command(msgs, i)
        if command is None:
            continue
        answered = i + 1 < len(msgs) and is_tool_output(msgs, i + 1)
        result_text = msgs[i + 1].text if answered else None
        if answered and MINI_FORMAT_ERROR.match(result_text or ""):
            tool, target, reads, writes, ro = summarise_command(bash_blocks(msg.text)[0], ShellState())
            reads, writes = [], []  # rejected, nothing ran
        else:
            tool, target, reads, writes, ro = summarise_command(command, state)
            reads, writes = state.relative(reads), state.relative(writes)
            target = state.relative([target])[0]
        call = _Call(i, None, CallFacts(tool, target, command, reads, writes, ro, command, True))
        events.append(_event(call, i + 1 if answered else None, result_text))
        if result_text:
            _note_open_file(result_text, state)
    events += [_event(c, c.result, msgs[c.result].text if c.result is not None else None) for c in calls]
    events.sort(key=lambda e: e.call_index)  # stable: calls of one message keep their order
    return events


def _note_open_file(text: str, state: ShellState) -> None:
    """SWE-agent observations end with the open file and the working directory; later calls need both."""
    tail = text[-600:]
    m = next(reversed([*_OPEN_FILE_LINE.finditer(tail)]), None)  # the last match
    if m and m.group(1) != "n/a":
        state.open_file = m.group(1).strip()
    d = next(reversed([*_CWD_LINE.finditer(tail)]), None)  # the last match
    if d:
        state.cwd = d.group(1).strip()
