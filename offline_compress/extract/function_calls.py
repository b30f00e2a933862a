"""Function-call semantics: what a JSON-argument tool call (``tool_calls`` of an assistant message) does, as
(tool, target, command, files read, files written, read-only). Shell tools are read as their command line."""

from __future__ import annotations

import json
from typing import Any

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

SHELL_TOOLS = frozenset(
    "bash shell sh execute_bash execute_command run_command run_shell_command terminal run exec cmd "
    "execute_shell command_line local_shell container.exec".split()
)
_PATH_KEYS = (
    "path",
    "file_path",
    "filepath",
    "filename",
    "file",
    "target_file",
    "absolute_path",
    "notebook_path",
    "dir_path",
    "directory",
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


def _parse_arguments(raw: str) -> dict[str, Any] | None:
    try:
        value = json.loads(raw) if raw.strip() else {}
    except (json.JSONDecodeError, ValueError, RecursionError):  # nested past the parser's depth: not arguments
        return None
    return value if isinstance(value, dict) else None


def analyse_function_call(
    name: str, raw_args: str, state: ShellState
) -> tuple[str, str, str, list[str], list[str], bool]:
    """(tool, target, command, reads, writes, read_only) of a function call."""
    args = _parse_arguments(raw_args)
    lname = name.lower()
    if args is None:
        # Not JSON: some agents pass the raw command line.
        if lname in SHELL_TOOLS:
            tool, target, reads, writes, ro = summarise_command(raw_args, state)
            return tool, target, raw_args, reads, writes, ro
        return name, shorten(raw_args), raw_args, [], [], False
    shell_cmd = next((args[k] for k in ("command", "cmd", "script") if isinstance(args.get(k), str)), None)
    if shell_cmd is not None and lname.startswith("/"):
        shell_cmd = shell_cmd.split(None, 1)[1] if lname in ("/run", "/test") and " " in shell_cmd.strip() else None
        if shell_cmd is None:  # other aider console commands (/add, /undo, ...) act on their arguments
            return name, shorten(str(args.get("command", ""))[len(name) :].strip()), raw_args, [], [], False
    # A shell tool, or a text action turned into a call named after its first word (SWE-agent importer).
    if shell_cmd is not None and (
        lname in SHELL_TOOLS or lname.startswith("/") or shell_cmd.split(None, 1)[:1] == [name]
    ):
        tool, target, reads, writes, ro = summarise_command(shell_cmd, state)
        return tool, target, shell_cmd, reads, writes, ro
    path = next((args[k] for k in _PATH_KEYS if isinstance(args.get(k), str) and args[k]), "")
    pattern = next((args[k] for k in _PATTERN_KEYS if isinstance(args.get(k), str) and args[k]), "")
    url = args.get("url") if isinstance(args.get("url"), str) else ""
    sub = args.get("command") if isinstance(args.get("command"), str) else ""
    reads = []
    writes = []
    patch = next(
        (
            args[k]
            for k in ("patch", "diff", "input")
            if isinstance(args.get(k), str) and ("\n+++ " in args[k] or "*** " in args[k])
        ),
        None,
    )
    if patch:
        writes = diff_files(patch)
    if path:
        if sub in EDITOR_WRITE_COMMANDS or (not sub and any(h in lname for h in _WRITE_TOOL_HINTS)):
            writes.append(path)
        elif sub == "view" or any(h in lname for h in _READ_TOOL_HINTS):
            if sub == "view" and not looks_like_file(path):
                pass  # viewing a directory
            else:
                reads.append(path)
        if lname in ("open", "create") or sub in ("create", "view", "str_replace", "insert"):
            state.open_file = path
    if lname in SWE_EDIT_COMMANDS and not path and state.open_file:
        writes.append(state.open_file)
        path = state.open_file
    if pattern:
        target = pattern + (f" in {path}" if path else "")
    else:
        target = path or url or (", ".join(writes) if writes else "")
        if not target:
            first = next((v for v in args.values() if isinstance(v, str) and v), "")
            target = first
    read_only = not writes and bool(reads or pattern or sub == "view")
    clean = lambda ps: [p for p in map(clean_path, ps) if p]  # noqa: E731
    return name, shorten(target), raw_args, clean(reads), clean(writes), read_only
