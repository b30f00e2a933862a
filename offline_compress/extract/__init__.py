"""Exact fact extraction from a history, by code alone (no model).

A tiny local model cannot be trusted to copy text or find facts, so everything that must be exact comes from
here: tool calls with their targets and outcomes, failed commands with the line that says why, files read and
changed, the task statement, and candidate user constraints (verbatim substrings of user/system text).

One concept per module, in the order the data flows:

    commands        what a shell command does: tool, target, files read and written
    calls           a function call's tool name and arguments read as the facts they state, in any harness
    function_calls  what a JSON-argument tool call does
    outcomes        success / error / partial of one result, and the line that says why
    events          calls paired with their results: ``ToolEvent``
    constraints     instruction-like lines of genuine user/system text: ``Constraint``
    prose           the agent's own words: sentences in any script, quoted code
    steps           the work log: per call, what the agent said, ran and learnt, verbatim and short
    state           the working state: files with their net change, failures and what followed, decisions by
                    their place (the words before an edit), open items, last words: ``WorkingState``
    task            the task statement
    facts           ``Facts`` and ``extract_facts``, which runs all of the above

Which messages are tool calls and which are tool output is ``history.conventions`` (shared with the cut); the
shell lexer (a command line -> simple commands, ``parse_shell``) is ``history.shell`` (shared with the
contradiction counter).
Everything here is a pure, deterministic function of the messages; regexes are precompiled and linear.
"""

from __future__ import annotations

from ..history.conventions import bash_blocks, is_tool_output
from ..history.shell import parse_shell
from .constraints import (
    MAX_CONSTRAINT_CHARS,
    MAX_CONSTRAINTS,
    MAX_TURN_CHARS,
    MAX_WHOLE_TURN_CHARS,
    Constraint,
    extract_constraints,
    turn_sentences,
)
from .events import ToolEvent, extract_tool_events
from .facts import Facts, FailedCommand, extract_facts
from .outcomes import MAX_ERROR_LINE_CHARS, Outcome, classify_result
from .state import WorkingState, working_state
from .task import DEFAULT_TASK_CHARS, extract_task

__all__ = [
    "DEFAULT_TASK_CHARS",
    "MAX_CONSTRAINTS",
    "MAX_CONSTRAINT_CHARS",
    "MAX_ERROR_LINE_CHARS",
    "MAX_TURN_CHARS",
    "MAX_WHOLE_TURN_CHARS",
    "Constraint",
    "Facts",
    "FailedCommand",
    "Outcome",
    "ToolEvent",
    "bash_blocks",
    "classify_result",
    "extract_constraints",
    "extract_facts",
    "extract_task",
    "extract_tool_events",
    "is_tool_output",
    "parse_shell",
    "turn_sentences",
    "working_state",
    "WorkingState",
]
