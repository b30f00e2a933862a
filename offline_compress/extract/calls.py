"""Calls understood as calls: a function call's tool name and arguments read as the facts they state, whatever
harness wrote them, and shown as a person reads them.

Harnesses name the same acts differently (``Bash``, ``bash``, ``execute_bash``, ``shell``, ``exec_command``;
``Edit``, ``str_replace_editor``, ``str_replace``, ``apply_patch``; ``Grep``, ``Glob``, ``search_codebase``; ...).
``read_call`` maps each vocabulary onto one ``Call``: its kind, the command it ran, the paths it acted on, the line
range it read, the text an edit replaced and wrote, the pattern it searched for, the items of a to-do list. A tool
it does not know gets the generic rule: the tool's name and its salient argument values (strings and numbers, longest
last).

``Call.lines()`` is the call as the work log shows it, first line first (``bash: pytest -x tests/test_x.py``,
``Read src/x.py 40-80``, ``Edit django/forms/models.py`` followed by ``- `` lines of the old text and ``+ `` lines
of the new), never a bare JSON object. Every text in it is a verbatim piece of the arguments (paths, commands,
old/new text), so the names an agent later reuses are found in it as written.

Pure and deterministic. Unparseable arguments are read as the raw text they are.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..history.messages import plain_json
from ..history.tools import (
    AGENT_TOOLS,
    EDIT_TOOLS,
    EDITOR_TOOLS,
    FINISH_TOOLS,
    READ_TOOLS,
    SEARCH_TOOLS,
    SHELL_TOOLS,
    TODO_TOOLS,
    WRITE_TOOLS,
)

Kind = Literal["shell", "read", "edit", "write", "search", "todo", "agent", "finish", "other"]

# The argument names that hold a call's file path, most specific first (also read by function_calls.py).
PATH_KEYS = (
    "file_path",
    "path",
    "filepath",
    "filename",
    "file",
    "target_file",
    "absolute_path",
    "notebook_path",
    "dir_path",
    "directory",
)
_PATTERN_KEYS = (
    "pattern",
    "regex",
    "query",
    "search_term",
    "search",
    "term",
    "q",
    "class_name",
    "function_name",
    "code_snippet",
    "file_name",  # SWE-agent's find_file
)
_COMMAND_KEYS = ("command", "cmd", "script")
_CONTENT_KEYS = ("content", "file_text", "text", "new_code", "code")
MAX_GENERIC_VALUES = 6
MAX_INLINE = 160  # a value longer than this, or with a line break, is shown on lines of its own


@dataclass(frozen=True)
class Call:
    """A function call read as the facts it states."""

    tool: str  # the tool's own name, as the harness wrote it
    kind: Kind
    command: str = ""  # a shell command line (shell tools)
    paths: tuple[str, ...] = ()  # files or folders it acted on
    lines_read: tuple[int | None, int | None] | None = None  # a read's first and last line (None: open)
    old: tuple[str, ...] = ()  # texts an edit replaced (one per edit of a multi-edit)
    new: tuple[str, ...] = ()  # texts an edit (or a write) put in their place
    pattern: str = ""  # what a search looked for
    where: str = ""  # where it searched (path or file pattern)
    items: tuple[str, ...] = ()  # a to-do list's items ("[completed] write the test"), a sub-agent's prompt
    values: tuple[tuple[str, str], ...] = ()  # the salient arguments of a tool of no known vocabulary
    sub: str = ""  # an editor's sub-command (view, create, str_replace, insert, undo_edit)

    def lines(self) -> list[str]:
        """The call as the work log shows it (see the module docstring)."""
        tool = self.tool
        if self.kind == "shell":
            first, *rest = self.command.split("\n") if self.command else [""]
            return [f"{tool}: {first}".rstrip(), *rest]
        paths = " ".join(self.paths)
        if self.kind == "read":
            span = ""
            if self.lines_read is not None:
                a, b = self.lines_read
                span = f" {a if a is not None else 1}-{b if b is not None else ''}"  # "40-": from line 40 on
            return [f"{tool} {paths}{span}".rstrip()]
        if self.kind == "edit" and not any(self.old) and len(self.new) == 1 and _is_patch(self.new[0]):
            return [f"{tool} {paths}".rstrip(), *_split(self.new[0])]  # a patch reads as itself
        if self.kind in ("edit", "write"):
            out = [f"{tool} {paths}".rstrip() + (f" ({self.sub})" if self.sub and self.sub != tool.lower() else "")]
            for k in range(max(len(self.old), len(self.new))):
                out += [f"- {ln}" for ln in _split(self.old[k] if k < len(self.old) else "")]
                out += [f"+ {ln}" for ln in _split(self.new[k] if k < len(self.new) else "")]
            return out
        if self.kind == "search":
            where = f"in {self.where}" if self.where else ""
            return [" ".join(x for x in (tool, _quote(self.pattern), where) if x)]
        if self.kind in ("todo", "agent", "finish"):
            title = self.items[0] if self.kind == "agent" and self.items else ""
            body = self.items[1:] if self.kind == "agent" else self.items
            return [f"{tool}: {title}" if title else tool, *body]
        inline = [f"{k}={v}" for k, v in self.values if "\n" not in v and len(v) <= MAX_INLINE]
        block = [(k, v) for k, v in self.values if "\n" in v or len(v) > MAX_INLINE]
        shown = [" ".join([tool, *inline])]
        for key, value in block:
            shown.append(f"{key}:")
            shown += _split(value)
        return shown


def _split(text: str) -> list[str]:
    return text.split("\n") if text else []


def _is_patch(text: str) -> bool:
    return text.lstrip().startswith(("*** Begin Patch", "--- ", "diff --git", "@@"))


def _quote(text: str) -> str:
    return f'"{text}"' if text and (" " in text or not text.strip()) else text


def parse_arguments(raw: str) -> Any:
    """The arguments as data: JSON, else a Python literal (some harnesses log ``repr``), else the raw text."""
    text = raw.strip()
    if not text:
        return {}
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    if text[0] in "{[":
        try:
            # A Python literal may hold what JSON cannot: tuple keys, sets, "\ud800" (plain_json: as JSON data).
            return plain_json(ast.literal_eval(text))
        except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
            pass
    return raw


def _name(name: str) -> str:
    """The tool's name for matching: lower case; a namespaced name (``mcp__server__tool``, ``server.tool``) by its
    last part unless the whole name is known."""
    low = name.lower()
    known = SHELL_TOOLS | READ_TOOLS | EDIT_TOOLS | WRITE_TOOLS | SEARCH_TOOLS | TODO_TOOLS | AGENT_TOOLS | EDITOR_TOOLS
    if low in known:
        return low
    return low.replace("__", ".").rsplit(".", 1)[-1]


def first_string(args: Mapping[str, Any], keys: Iterable[str]) -> str:
    """The value of the first of ``keys`` that holds a non-empty string ("" if none)."""
    return next((args[k] for k in keys if isinstance(args.get(k), str) and args[k]), "")


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def shell_command(args: Mapping[str, Any]) -> str:
    for key in _COMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and value and all(isinstance(x, str) for x in value):
            # Codex's argv: ["bash", "-lc", "cmd"] is the command "cmd"; other argv joined as a shell would read it
            if len(value) == 3 and value[0] in ("bash", "sh", "zsh") and value[1] in ("-lc", "-c"):
                return value[2]
            return shlex.join(value)
    return ""


def _read_range(args: Mapping[str, Any]) -> tuple[int | None, int | None] | None:
    view = args.get("view_range")
    if isinstance(view, list) and len(view) == 2:
        a, b = _int(view[0]), _int(view[1])
        return (a, None if b is not None and b < 0 else b)
    start = _int(args.get("start_line", args.get("start")))
    end = _int(args.get("end_line", args.get("end")))
    if start is not None or end is not None:
        return (start, end)
    offset, limit = _int(args.get("offset")), _int(args.get("limit"))
    if offset is not None or limit is not None:
        first = offset if offset is not None and offset > 0 else 1
        return (first, first + limit - 1 if limit is not None else None)
    return None


def _readable(value: Any) -> str:
    """A value as a person reads it: a string or number as itself; a list or object as its strings and numbers, a
    line each, in their order, an object's as ``key: value`` (Claude Code's ``AskUserQuestion`` questions and their
    options), never a bare JSON text. Flags (booleans) and nulls say nothing and are left out."""
    out = []
    for key, leaf in _leaves(value):
        if not isinstance(leaf, (str, int, float)):
            # nested too deep, or of another type: whole
            out.append(json.dumps(leaf, ensure_ascii=False, sort_keys=True, default=str))
        elif text := str(leaf):
            out.append(f"{key}: {text}" if key and "\n" not in text else text)
    return "\n".join(out)


def first_leaf(value: Any) -> str:
    """The first non-empty string of a value, depth first in its order ("" if none): what a call of no known
    vocabulary whose arguments hold no string of their own acts on (an ``AskUserQuestion``'s first question)."""
    return next((leaf for _, leaf in _leaves(value) if isinstance(leaf, str) and leaf), "")


def _leaves(value: Any, depth: int = 0, key: str = "") -> Iterator[tuple[str, Any]]:
    """(the key it is under, value) of each string and number of a value, depth first in its order; flags and nulls
    left out; a value nested deeper than ``_READABLE_DEPTH`` (or of another type) as itself, whole."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, (str, int, float)) or depth >= _READABLE_DEPTH:
        yield key, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _leaves(v, depth + 1, str(k))
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v, depth + 1, key)
    else:
        yield key, value


_READABLE_DEPTH = 8  # deeper than any call's arguments we have seen; past it a value shows as JSON


def _generic(tool: str, args: Any) -> Call:
    if not isinstance(args, Mapping):
        return Call(tool, "other", values=(("input", _readable(args)),) if args not in ({}, "", None) else ())
    # _readable is empty for what says nothing (None, "", [], {}, a flag): those values are left out
    values = [(str(k), text) for k, v in args.items() if (text := _readable(v))]
    values.sort(key=lambda kv: len(kv[1]))  # short values first: they read as a one-line call
    paths = tuple(p for p in (first_string(args, PATH_KEYS),) if p)
    return Call(tool, "other", paths=paths, values=tuple(values[:MAX_GENERIC_VALUES]))


def _editor(tool: str, args: Mapping[str, Any]) -> Call:
    """An editor with sub-commands (SWE-agent's / OpenHands' / Anthropic's ``str_replace_editor``)."""
    sub = first_string(args, ("command",))
    path = first_string(args, PATH_KEYS)
    paths = (path,) if path else ()
    if sub == "view":
        return Call(tool, "read", paths=paths, lines_read=_read_range(args), sub=sub)
    if sub == "create":
        return Call(tool, "write", paths=paths, new=(first_string(args, _CONTENT_KEYS),), sub=sub)
    if sub == "str_replace":
        old, new = first_string(args, ("old_str",)), first_string(args, ("new_str",))
        return Call(tool, "edit", paths=paths, old=(old,), new=(new,), sub=sub)
    if sub == "insert":
        line, new = _int(args.get("insert_line")), first_string(args, ("new_str", "text"))
        return Call(tool, "edit", paths=paths, old=("",), new=(new,), sub=sub if line is None else f"insert at {line}")
    return Call(tool, "edit" if sub else "other", paths=paths, sub=sub)


def _patch_paths(patch: str) -> tuple[str, ...]:
    prefixes = ("*** Update File: ", "*** Add File: ", "*** Delete File: ", "+++ b/", "+++ ")
    found = (next((ln[len(p) :].strip() for p in prefixes if ln.startswith(p)), "") for ln in patch.split("\n"))
    return tuple(dict.fromkeys(p for p in found if p and p != "/dev/null"))


def read_call(name: str, raw_arguments: str) -> Call:
    """The facts of one function call (see the module docstring)."""
    args = parse_arguments(raw_arguments)
    low = _name(name)
    if low in SHELL_TOOLS:
        command = shell_command(args) if isinstance(args, Mapping) else (args if isinstance(args, str) else "")
        return Call(name, "shell", command=command)
    if not isinstance(args, Mapping):
        if low in EDIT_TOOLS and isinstance(args, str):  # apply_patch's freeform input
            return Call(name, "edit", paths=_patch_paths(args), new=(args,))
        return _generic(name, args)
    if low in EDITOR_TOOLS:
        return _editor(name, args)
    path = first_string(args, PATH_KEYS)
    paths = (path,) if path else ()
    if low in READ_TOOLS:
        files = args.get("files")
        if not paths and isinstance(files, list):  # Moatless ViewCode: [{file_path, start_line, end_line}]
            spans = [f for f in files if isinstance(f, Mapping) and isinstance(f.get("file_path"), str)]
            if spans:
                paths = tuple(dict.fromkeys(f["file_path"] for f in spans))
                return Call(name, "read", paths=paths, lines_read=_read_range(spans[0]))
        return Call(name, "read", paths=paths, lines_read=_read_range(args))
    if low in EDIT_TOOLS:
        edits = args.get("edits")
        if isinstance(edits, list):  # MultiEdit: [{old_string, new_string}]
            pairs = [e for e in edits if isinstance(e, Mapping)]
            olds = tuple(first_string(e, ("old_string", "old_str")) for e in pairs)
            news = tuple(first_string(e, ("new_string", "new_str")) for e in pairs)
            return Call(name, "edit", paths=paths, old=olds, new=news)
        patch = first_string(args, ("patch", "diff", "input"))
        if patch and not first_string(args, ("old_string", "old_str")):
            return Call(name, "edit", paths=paths or _patch_paths(patch), new=(patch,))
        old = first_string(args, ("old_string", "old_str", "old", "search"))  # SWE-agent: search / replace
        new = first_string(args, ("new_string", "new_str", "new", "replace", *_CONTENT_KEYS))
        every = "all" if args.get("replace_all") is True else ""
        return Call(name, "edit", paths=paths, old=(old,), new=(new,), sub=every)
    if low in WRITE_TOOLS:
        return Call(name, "write", paths=paths, new=(first_string(args, _CONTENT_KEYS),))
    if low in SEARCH_TOOLS:
        where = [
            first_string(args, keys) for keys in (("path", "dir", "directory"), ("glob", "file_pattern", "include"))
        ]
        pattern = first_string(args, _PATTERN_KEYS)
        return Call(name, "search", pattern=pattern, where=" ".join(filter(None, where)), paths=paths)
    if low in TODO_TOOLS:
        return Call(name, "todo", items=_todo_items(args))
    if low in AGENT_TOOLS:
        title = first_string(args, ("description", "subagent_type"))
        prompt = first_string(args, ("prompt", "task", "instructions"))
        return Call(name, "agent", items=tuple(x for x in (title, *_split(prompt)) if x))
    if low in FINISH_TOOLS:
        message = first_string(args, ("message", "finish_reason", "result", "summary"))
        return Call(name, "finish", items=tuple(_split(message)))
    command = shell_command(args)
    if command and command.split(None, 1)[:1] == [name]:  # a text action turned into a call named after it
        return Call(name, "shell", command=command)
    return _generic(name, args)


_TODO_TEXT_KEYS = ("content", "title", "step", "description", "task")


# An edit's (or a diff's) lines as a call shows them: ``- old`` / ``+ new``, a patch's ``-`` / ``+``; never its
# ``---`` / ``+++`` file lines
ADDED_LINE = re.compile(r"\+(?!\+\+ )")
REMOVED_LINE = re.compile(r"-(?!-- )")


def changed_lines(shown: str) -> str:
    """A call as shown (``Call.lines()`` joined), with only what it changed when it is an edit: its first line (the
    tool and path), then, in order, the added lines that no removed line reads as and the removed lines that no added
    line reads as, ``…`` where lines were left out. An edit repeats the lines around its change in its old and its
    new text, so the change itself (what was tried) is what tells two attempts at the same code apart. A call with
    no such line (a command, a read, an edit that changes nothing) is returned as it was."""
    first, *rest = shown.split("\n")
    old = {line[1:].rstrip() for line in rest if REMOVED_LINE.match(line)}
    new = {line[1:].rstrip() for line in rest if ADDED_LINE.match(line)}
    keep = [
        (ADDED_LINE.match(line) and line[1:].rstrip() not in old)
        or (REMOVED_LINE.match(line) and line[1:].rstrip() not in new)
        for line in rest
    ]
    if not any(keep) or all(keep):
        return shown
    out, gap = [first], False
    for line, kept in zip(rest, keep):
        if not kept:
            gap = gap or bool(line.strip())  # a blank line left out hides nothing
            continue
        if gap:
            out.append("…")
            gap = False
        out.append(line)
    return "\n".join(out + (["…"] if gap else []))


def todo_line(status: str, text: str) -> str:
    """A to-do item as the work log and the task state show it: ``[in_progress] write the test``."""
    return f"[{status}] {text}" if status else text


def _todo_list(args: Mapping[str, Any]) -> list[Any] | None:
    return next((args[k] for k in ("todos", "task_list", "plan", "steps") if isinstance(args.get(k), list)), None)


def _status_and_text(item: Mapping[str, Any]) -> tuple[str, str]:
    """A to-do item's ``(status, text)``, either of them "" when the item has none."""
    return first_string(item, ("status",)), first_string(item, _TODO_TEXT_KEYS)


def _todo_items(args: Mapping[str, Any]) -> tuple[str, ...]:
    """A to-do list's items: TodoWrite ``todos``, OpenHands ``task_list``, Codex ``plan``, a thought's lines."""
    items = _todo_list(args)
    if items is None:
        return tuple(_split(first_string(args, ("thought", "plan", "content", "command"))))
    out = (todo_line(*_status_and_text(x)) if isinstance(x, Mapping) else x for x in items)
    return tuple(x for x in out if isinstance(x, str) and x)  # an item of another type is left out


def todo_state(name: str, raw_arguments: str) -> tuple[tuple[str, str], ...] | None:
    """The agent's own list of what is done and what is left, when the call writes one: ``(status, text)`` of each
    item of a planning tool's list whose items carry a status (TodoWrite ``pending`` / ``in_progress`` /
    ``completed``, OpenHands task_tracker ``todo`` / ``in_progress`` / ``done``, Codex update_plan). ``None`` for any
    other call (a thought has no status); ``()`` for a list the agent emptied. Verbatim, in the list's order."""
    if _name(name) not in TODO_TOOLS:
        return None
    args = parse_arguments(raw_arguments)
    items = _todo_list(args) if isinstance(args, Mapping) else None
    if items is None:
        return None  # a tracker's "view", a thought
    out = []
    for item in items:
        if not isinstance(item, Mapping):
            return None
        status, text = _status_and_text(item)
        if not status:
            return None
        if text:
            out.append((status, text))
    return tuple(out)


__all__ = [
    "ADDED_LINE",
    "PATH_KEYS",
    "REMOVED_LINE",
    "SHELL_TOOLS",
    "Call",
    "Kind",
    "changed_lines",
    "first_string",
    "parse_arguments",
    "todo_line",
    "todo_state",
    "read_call",
    "shell_command",
]
