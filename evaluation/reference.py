"""Reference facts of a trajectory, read by the evaluator's own small parsers (never by the extractor, so a
score is not a re-check of the code under test): the tool calls with their exit codes, which messages are
harness output and which are genuine words of a person, and the files of the final patch.

The rules are spelled out in ``summary_eval``'s docstring (the metric definitions) and in docs/eval.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from offline_compress.history.messages import Message

_FENCED = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.S)
_RETURNCODE = re.compile(r"\A\s*<returncode>\s*(-?\d+)\s*</returncode>")
_EXIT_MARKER = re.compile(
    r"^[ \t]*\[?(?:The command completed with exit code|Command finished with exit code|Exit code:?)[ \t]*(-?\d+)\.?\]?[ \t]*$",
    re.M | re.I,
)
_OPEN_FILE = re.compile(r"^\(Open file: ([^\n)]*)\)", re.M)
_SUBMIT = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")
_HARNESS_STARTS = ("<returncode>", "The last command <command>", "Please always provide EXACTLY ONE action")
_PATCH_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.M)
APPLIED = re.compile(r"^(?:>\s*)?Applied edit to (\S[^\n]*?)\s*$", re.M)


@dataclass(frozen=True)
class RawCall:
    """One tool call of the history, read without the extractor."""

    index: int  # the assistant message
    name: str  # function name; "bash" for a fenced block
    command: str  # the command line (block bodies / command argument), else the raw arguments
    arguments: str = ""  # raw arguments ("" for fenced blocks)
    result_index: int | None = None
    exit_code: int | None = None
    open_file: str = ""  # the file open in SWE-agent's editor when the call was made

    @property
    def haystack(self) -> str:
        """Everything a summary entry of this call may quote: command, argument values, open file."""
        values = string_values(self.arguments)
        return "\n".join([self.command, *values, self.arguments, self.open_file])


def string_values(arguments: str) -> list[str]:
    try:
        value = json.loads(arguments) if arguments.strip() else None
    except ValueError:
        return []
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, Mapping):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(value)
    return out


def _command_argument(arguments: str) -> str:
    try:
        value = json.loads(arguments) if arguments.strip() else None
    except ValueError:
        return arguments
    if isinstance(value, Mapping):
        for key in ("command", "cmd", "script"):
            if isinstance(value.get(key), str):
                return value[key]
    return arguments


def _exit_code(text: str) -> int | None:
    m = _RETURNCODE.match(text)
    if m:
        return int(m.group(1))
    found = next(reversed([*_EXIT_MARKER.finditer(text)]), None)  # the last match
    return int(found.group(1)) if found else None


def is_harness_output(messages: Sequence[Message], i: int) -> bool:
    """Tool/harness output rather than words of a person (the rule of the module docstring)."""
    m = messages[i]
    if m.role == "tool":
        return True
    if m.role != "user":
        return False
    text = m.text.lstrip()
    if text.startswith(_HARNESS_STARTS):
        return True
    prev = messages[i - 1] if i > 0 else None
    if prev is not None and prev.role == "assistant":
        if any(s in block for block in _FENCED.findall(prev.text) for s in _SUBMIT):
            return True
        if m.text.rstrip().endswith("bash-$"):
            return True
    return False


def genuine_texts(messages: Sequence[Message]) -> list[str]:
    return [
        m.text
        for i, m in enumerate(messages)
        if m.role in ("system", "developer", "user") and not is_harness_output(messages, i)
    ]


def raw_tool_calls(messages: Sequence[Message]) -> list[RawCall]:
    """Every tool call of ``messages`` in order, both conventions (see the module docstring)."""
    calls: list[RawCall] = []
    by_id: dict[str, int] = {}
    open_file = ""
    for i, m in enumerate(messages):
        if m.role == "assistant" and m.tool_calls:
            for tc in m.tool_calls:
                command = _command_argument(tc.function.arguments)
                if tc.id:
                    by_id[tc.id] = len(calls)
                calls.append(RawCall(i, tc.function.name, command, tc.function.arguments, open_file=open_file))
                open_file = _opened(tc.function.name, command, tc.function.arguments, open_file)
            continue
        if m.role == "assistant":
            blocks = _FENCED.findall(m.text)
            if blocks:
                command = "\n".join(blocks)
                nxt = messages[i + 1] if i + 1 < len(messages) else None
                code = (
                    _exit_code(nxt.text)
                    if nxt is not None and nxt.role == "user" and _RETURNCODE.match(nxt.text)
                    else None
                )
                answered = nxt is not None and nxt.role == "user" and is_harness_output(messages, i + 1)
                calls.append(RawCall(i, "bash", command, "", i + 1 if answered else None, code, open_file))
                open_file = _opened("bash", command, "", open_file)
            continue
        if m.role == "tool":
            slot = by_id.pop(m.tool_call_id, None) if m.tool_call_id else None
            if slot is None or calls[slot].result_index is not None:
                slot = next((k for k, c in enumerate(calls) if c.name != "bash" and c.result_index is None), None)
            if slot is not None:
                c = calls[slot]
                calls[slot] = RawCall(c.index, c.name, c.command, c.arguments, i, _exit_code(m.text), c.open_file)
        if m.role in ("tool", "user"):
            found = next(reversed([*_OPEN_FILE.finditer(m.text[-600:])]), None)  # the last match
            if found and found.group(1).strip() != "n/a":
                open_file = found.group(1).strip()
    return calls


def _opened(call_name: str, command: str, arguments: str, current: str) -> str:
    """The file open in SWE-agent's editor after ``open X`` / ``create X`` (text action or function call)."""
    words = command.split()
    if len(words) >= 2 and words[0] in ("open", "create"):
        return words[1].strip("\"'")
    if call_name in ("open", "create"):
        try:
            value = json.loads(arguments)
        except ValueError:
            return current
        if isinstance(value, Mapping):
            for key in ("path", "filename", "file_name", "file"):
                if isinstance(value.get(key), str) and value[key]:
                    return value[key]
    return current


def patch_files(raw: Any, messages: Sequence[Message]) -> tuple[list[str], str]:
    """Files of the final patch and where they were read from ('' when the trajectory has none)."""
    if isinstance(raw, Mapping) and isinstance(raw.get("info"), Mapping):
        sub = raw["info"].get("submission")
        if isinstance(sub, str) and _PATCH_FILE.search(sub):
            return _diff_paths(sub), "info.submission"
        if isinstance(sub, str):
            return [], ""
    for i in range(1, len(messages)):
        prev, m = messages[i - 1], messages[i]
        if (
            prev.role == "assistant"
            and m.role in ("user", "tool")
            and any(s in b for b in _FENCED.findall(prev.text) for s in _SUBMIT)
            and _PATCH_FILE.search(m.text)
        ):
            return _diff_paths(m.text), "submit output"
    applied = _unique(x.group(1) for m in messages if m.role == "tool" for x in APPLIED.finditer(m.text))
    if applied:
        return applied, "Applied edit to"
    return [], ""


def _diff_paths(text: str) -> list[str]:
    return _unique(b for _, b in _PATCH_FILE.findall(text))


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))  # first occurrences, in order
