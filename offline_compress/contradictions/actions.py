"""Actions: the agent's tool calls, shell blocks and editor calls, each as its operations."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from ..history.messages import Message
from ..history.shell import parse_shell
from .operations import _content_ops, _Ctx, _join, _Op, _python_code_ops, _shell_ops
from .rules import _SHELL_BLOCK, _clip, _is_returncode, _runs_text_actions

# ----------------------------------------------------------------------------------------- actions


@dataclass
class _Action:
    step: int
    ops: list[_Op]
    output: str | None  # the result the agent saw, when the history holds it


_EDITOR_WRITES = {
    "create": "create",
    "write": "create",
    "str_replace": "modify",
    "insert": "modify",
    "undo_edit": "modify",
    "edit": "modify",
    "append": "modify",
    "replace": "modify",
    "overwrite": "create",
}
_EDITOR_READS = frozenset({"view", "read", "open"})
_WRITE_NAME = re.compile(r"write|create|edit|replace|insert|append|patch")
_DELETE_NAME = re.compile(r"delete|remove")
_PATH_KEYS = ("path", "file_path", "filename", "file", "target_file", "file_name", "filepath")
_SHELL_KEYS = ("command", "cmd", "script", "bash", "shell")
_CONTENT_KEYS = ("file_text", "content", "new_str", "text", "replace", "new_content", "code")
_EDIT_BLOCK = re.compile(r"\A\s*edit\s+\d+(?::\d+)?\s*\n(?P<body>.*?)^end_of_edit\s*\Z", re.S | re.M)
_SEARCH_REPLACE = re.compile(
    r"^(?P<file>[^\n`]+?)[ \t]*\n```[^\n]*\n<<<<<<< SEARCH[ \t]*\n(?P<search>.*?)^=======[ \t]*\n"
    r"(?P<replace>.*?)^>>>>>>> REPLACE",
    re.M | re.S,
)
_APPLIED_EDIT = re.compile(r"^(?:>\s*)?Applied edit to (\S[^\n]*?)\s*$", re.M)
_SWE_AGENT_COMMANDS = frozenset(
    "create open str_replace_editor insert append goto scroll_up scroll_down search_file search_dir find_file submit "
    "view".split()
)


def _call_ops(name: str, arguments: str, ctx: _Ctx, evidence: str) -> list[_Op]:
    try:
        args = json.loads(arguments) if arguments.strip() else {}
    except (ValueError, RecursionError):  # not JSON, a number too long to read, or nested too deep
        args = {}
    if not isinstance(args, Mapping):
        args = {}
    lname = name.lower()
    path_arg = next((args[k] for k in _PATH_KEYS if isinstance(args.get(k), str)), None)
    sub = args.get("command") if isinstance(args.get("command"), str) else None
    content = next((args[k] for k in _CONTENT_KEYS if isinstance(args.get(k), str)), None)
    # editor-style calls: str_replace_editor {command: create|str_replace|..., path}, write_file {path, content}
    if path_arg is not None and (sub is None or sub in _EDITOR_WRITES or sub in _EDITOR_READS):
        p = _join(ctx.cwd, path_arg)
        if sub in _EDITOR_WRITES or (sub is None and _WRITE_NAME.search(lname)):
            mode = _EDITOR_WRITES.get(sub or "", "create" if re.search(r"write|create", lname) else "modify")
            ops: list[_Op] = []
            if p is not None:
                ops.append(_Op("write", (p,), evidence, mode))
                if mode == "create" and content is not None:
                    ctx.files[p] = content
                if lname == "create":
                    ctx.open_file = p  # SWE-agent's create also opens the file
            if content:
                replaced = args.get("old_str") or args.get("search")
                ops.extend(_content_ops(_added(replaced, content) if isinstance(replaced, str) else content, evidence))
            return ops
        if sub is None and _DELETE_NAME.search(lname):
            return [_Op("delete", (p,), evidence)] if p else []
        if lname == "open":
            ctx.open_file = p
        return []  # view / read / open
    # SWE-agent function calling: edit/insert act on the open file, create names its file
    if (
        lname in ("edit", "insert", "append")
        and ctx.open_file
        and ("search" in args or "text" in args or "replace" in args)
    ):
        text = args.get("replace") or args.get("text")
        ops = [_Op("write", (ctx.open_file,), evidence, "modify")]
        if isinstance(text, str):
            search = args.get("search")
            ops.extend(_content_ops(_added(search, text) if isinstance(search, str) else text, evidence))
        return ops
    shell = next((args[k] for k in _SHELL_KEYS if isinstance(args.get(k), str)), None)
    if shell is None and arguments.strip() and not args:
        shell = arguments  # a raw command string instead of JSON
    if shell is not None:
        return _text_command_ops(shell, ctx)
    code = args.get("code")
    if isinstance(code, str) and "python" in lname:  # also ipython
        return _python_code_ops(code, ctx.cwd, evidence)
    return []


def _added(old: str, new: str) -> str:
    """The lines of ``new`` that ``old`` does not have (what an edit adds; its context lines are not new)."""
    have = Counter(old.splitlines())
    added = []
    for line in new.splitlines():
        if have[line]:
            have[line] -= 1
        else:
            added.append(line)
    return "\n".join(added)


def _text_command_ops(command: str, ctx: _Ctx) -> list[_Op]:
    """A shell command or a SWE-agent tool command (``create``, ``open``, ``edit N:M``, ``str_replace_editor``)."""
    m = _EDIT_BLOCK.match(command)
    if m:
        if not ctx.open_file:
            return []
        ev = _clip(command.splitlines()[0])
        return [_Op("write", (ctx.open_file,), ev, "modify"), *_content_ops(m.group("body"), ev)]
    first = command.strip().split(None, 1)
    head = first[0] if first else ""
    if head in _SWE_AGENT_COMMANDS:
        cmds = parse_shell(command.split("\n", 1)[0] if head != "str_replace_editor" else command)
        words = cmds[0].words if cmds else []
        ev = _clip(command.split("\n", 1)[0])
        if head == "create" and len(words) > 1:
            p = _join(ctx.cwd, words[1])
            if p:
                ctx.open_file = p
                return [_Op("write", (p,), ev, "create")]
            return []
        if head == "open" and len(words) > 1:
            ctx.open_file = _join(ctx.cwd, words[1])
            return []
        if head in ("insert", "append") and ctx.open_file:
            return [_Op("write", (ctx.open_file,), ev, "modify")]
        if head == "str_replace_editor" and len(words) > 2 and words[1] in _EDITOR_WRITES:
            p = _join(ctx.cwd, words[2])
            content = None
            for key in ("--file_text", "--new_str"):
                if key in words and words.index(key) + 1 < len(words):
                    content = words[words.index(key) + 1]
            ops = [_Op("write", (p,), ev, _EDITOR_WRITES[words[1]])] if p else []
            if content:
                ops.extend(_content_ops(content, ev))
            return ops
        return []
    return _shell_ops(command, ctx)


def _tool_outputs(messages: list[Message], index: int) -> dict[str | None, str]:
    """Results of the tool calls of the assistant message ``index``, by call id (None: the first result)."""
    out: dict[str | None, str] = {}
    for m in messages[index + 1 :]:
        if m.role != "tool":
            break
        out.setdefault(m.tool_call_id, m.text)
        out.setdefault(None, m.text)
    return out


def actions(messages: list[Message]) -> list[_Action]:
    """Every action of the history, in order, with its effects and (when present) its output."""
    out: list[_Action] = []
    files: dict[str, str] = {}
    shared = _Ctx("", files)  # tool-call agents keep one shell (cwd, open file) across actions
    text_actions = _runs_text_actions(messages)
    for i, m in enumerate(messages):
        if m.role == "tool":
            applied = [f.strip() for f in _APPLIED_EDIT.findall(m.text)]
            if applied:
                step = next((k for k in range(i - 1, -1, -1) if messages[k].role == "assistant"), i)
                ops = []
                for f in applied:
                    p = _join("", f)
                    if p is None:
                        continue
                    evidence = _clip(f"Applied edit to {f}")
                    ops.append(_Op("write", (p,), evidence, "modify"))
                    for block in _SEARCH_REPLACE.finditer(messages[step].text):
                        if block.group("file").strip().strip("`") == f:
                            ops.extend(_content_ops(_added(block.group("search"), block.group("replace")), evidence))
                out.append(_Action(step, ops, None))
            continue
        if m.role != "assistant":
            continue
        if m.tool_calls:
            results = _tool_outputs(messages, i)
            for call in m.tool_calls:
                evidence = _clip(f"{call.function.name} {call.function.arguments}")
                ops = _call_ops(call.function.name, call.function.arguments, shared, evidence)
                out.append(_Action(i, ops, results.get(call.id, results.get(None))))
            continue
        blocks = _SHELL_BLOCK.findall(m.text) if text_actions else []
        if not blocks:
            continue
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        output = nxt.text if nxt is not None and nxt.role in ("user", "tool") else None
        if len(blocks) != 1 and not (output is not None and _is_returncode(output)):
            continue  # mini-swe-agent runs nothing when a reply holds several blocks (a format error follows)
        ctx = _Ctx("", files)  # text actions (mini-swe-agent) run each in a fresh subshell
        ops = []
        for text in blocks:
            ops.extend(_text_command_ops(text, ctx))
        out.append(_Action(i, ops, output))
    return out
