"""Function-call semantics: what a tool call (``tool_calls`` of an assistant message) does, as its tool, target,
exact command text, files read and written, whether it only read, and how a person reads it (``calls.py``: the
vocabularies of the common harnesses). Shell tools are read as their command line, through the shell reader."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, NamedTuple

from ..history.tools import SHELL_TOOLS
from .calls import PATH_KEYS, first_leaf, first_string, parse_arguments, read_call, shell_command
from .commands import (
    EDITOR_WRITE_COMMANDS,
    SWE_EDIT_COMMANDS,
    ShellState,
    clean_path,
    diff_files,
    looks_like_file,
    shorten,
    summarise_command,
)

_PATTERN_KEYS = ("pattern", "regex", "query", "search_term", "search", "term", "q")
_READ_TOOL_HINTS = ("read", "view", "open", "cat", "show", "get_file", "load")
_WRITE_TOOL_HINTS = (
    "write",
    "edit",
    "create",
    "replace",
    "insert",
    "patch",
    "apply",
    "delete",
    "remove",
    "rename",
    "move",
    "save",
    "append",
)


class CallFacts(NamedTuple):
    """What one function call did."""

    tool: str  # the program for shell calls (sed, pytest, ...), else the tool's name
    target: str
    command: str  # the exact command line of a shell call, else the exact arguments text
    reads: list[str]
    writes: list[str]
    read_only: bool
    shown: str  # the call as a person reads it (``calls.Call.lines``), never a bare JSON object
    shell: bool  # a shell command line was read from it


def analyse_function_call(name: str, raw_args: str, state: ShellState) -> CallFacts:
    """The facts of a function call (see ``CallFacts``)."""
    parsed = parse_arguments(raw_args)
    args: dict[str, Any] | None = parsed if isinstance(parsed, dict) else None
    lname = name.lower()
    call = read_call(name, raw_args)
    shown = "\n".join(call.lines())
    if args is None:
        # Not an object: some agents pass the raw command line.
        if lname in SHELL_TOOLS:
            tool, target, reads, writes, ro = summarise_command(raw_args, state)
            return CallFacts(tool, target, raw_args, reads, writes, ro, f"{name}: {raw_args}", True)
        if call.kind == "edit" and call.paths:  # a freeform patch (Codex apply_patch): the files it changes
            changed = [p for p in map(clean_path, call.paths) if p]
            return CallFacts(name, shorten(", ".join(call.paths)), raw_args, [], changed, False, shown, False)
        return CallFacts(name, shorten(raw_args), raw_args, [], [], False, shown, False)
    has_command = any(k in args for k in ("command", "cmd", "script"))
    shell_cmd: str | None = shell_command(args) if has_command else None
    if shell_cmd == "" and not isinstance(args.get("command", args.get("cmd", args.get("script"))), str):
        shell_cmd = None  # an argument of another shape (a number, an object) is no command line
    if shell_cmd is not None and lname.startswith("/"):
        shell_cmd = shell_cmd.split(None, 1)[1] if lname in ("/run", "/test") and " " in shell_cmd.strip() else None
        if shell_cmd is None:  # other aider console commands (/add, /undo, ...) act on their arguments
            text = str(args.get("command", ""))
            return CallFacts(name, shorten(text[len(name) :].strip()), raw_args, [], [], False, text, False)
    # A shell tool, or a text action turned into a call named after its first word (SWE-agent importer, aider's
    # /run): the command is what the agent typed, shown as it typed it.
    if shell_cmd is not None and (
        lname in SHELL_TOOLS or lname.startswith("/") or shell_cmd.split(None, 1)[:1] == [name]
    ):
        tool, target, reads, writes, ro = summarise_command(shell_cmd, state)
        shown = f"{name}: {shell_cmd}" if lname in SHELL_TOOLS else shell_cmd
        return CallFacts(tool, target, shell_cmd, reads, writes, ro, shown, True)
    path = first_string(args, PATH_KEYS)
    # an edit's "search" is the text it replaces (SWE-agent's edit), not what the call looked for
    pattern = "" if call.kind in ("edit", "write") else first_string(args, _PATTERN_KEYS)
    url = args.get("url") if isinstance(args.get("url"), str) else ""
    sub = args.get("command") if isinstance(args.get("command"), str) else ""
    diffs = [args.get(k) for k in ("patch", "diff", "input")]
    patch = next((d for d in diffs if isinstance(d, str) and ("\n+++ " in d or "*** " in d)), None)
    reads = []
    writes = diff_files(patch) if patch else []
    if not path and not patch and call.paths and call.kind in ("read", "edit", "write"):
        # paths nested in the arguments, which only the vocabulary reads (Moatless ViewCode's files[].file_path)
        (reads if call.kind == "read" else writes).extend(call.paths)
        path = ", ".join(call.paths)
    elif path:
        if sub in EDITOR_WRITE_COMMANDS or (not sub and any(h in lname for h in _WRITE_TOOL_HINTS)):
            writes.append(path)
        elif looks_like_file(path) if sub == "view" else any(h in lname for h in _READ_TOOL_HINTS):
            reads.append(path)  # viewing a directory reads no file
        if lname in ("open", "create") or sub in ("create", "view", "str_replace", "insert"):
            state.open_file = path
    if lname in SWE_EDIT_COMMANDS and not path and state.open_file:
        writes.append(state.open_file)
        path = state.open_file
        shown = "\n".join(replace(call, paths=(clean_path(path) or path,)).lines())  # SWE-agent edits the open file
    if pattern:
        target = pattern + (f" in {path}" if path else "")
    else:
        target = path or url or (", ".join(writes) if writes else "")
        if not target:
            first = next((v for v in args.values() if isinstance(v, str) and v), "")
            target = first or (first_leaf(args) if call.kind == "other" else "")
    read_only = not writes and bool(reads or pattern or sub == "view")
    clean = lambda ps: [p for p in map(clean_path, ps) if p]  # noqa: E731
    return CallFacts(name, shorten(target), raw_args, clean(reads), clean(writes), read_only, shown, False)
