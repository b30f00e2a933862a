"""Aider markdown chat logs (``.aider.chat.history.md``) and the aider website's example transcripts.

Aider appends to its log as it goes:

* ``# aider chat started at <time>`` opens each session (it is a marker, not a message);
* ``#### <text>`` is what the user typed; a multi-line input is several ``#### `` lines in a row, which join
  into one ``user`` message. ``#### <blank>`` (aider's marker for an empty input) is dropped. Commands such as
  ``/undo`` or ``/run pytest`` are kept as the user typed them;
* ``> <text>`` is console output: the startup banner, token/cost lines, "Applied edit to ...", commits, lint
  and test output, confirmation prompts with the answer typed at them. Aider writes a multi-line output as one
  ``> `` line followed by unprefixed lines, ending with the two-space markdown line break; those lines are part
  of the output;
* everything else is the assistant's reply (kept after stripping the surrounding blank lines).

Console output is tool output, so it must never read as the user. Each run of console lines becomes an
``assistant`` tool call plus a ``tool`` message holding the text (``> `` prefixes and the trailing two-space
line breaks removed). The call is named after the console command the user just typed, when there is one (for
``#### /run pytest x.py`` the call is ``/run`` with arguments ``{"command": "/run pytest x.py"}``), and
``aider`` with arguments ``{}`` otherwise; ids are ``aider-1``, ``aider-2``, ... When the output follows an
assistant reply (edits applied, commits), the call is attached to that reply; otherwise it gets an assistant
message of its own with no text. An answer typed at a console prompt (e.g. ``(y/n/instructions) <text>``)
stays inside the tool output: the log cannot tell it apart from program output.

The log is a human-readable record, not the exact prompt: aider's system prompt, repo map, file contents and
the messages it sends on its own (e.g. "Fix lint errors?" reflections, ``/run`` output added to the chat) are
not in it, so they cannot be reconstructed; the result is the conversation as logged.

Line roles are inferred as aider wrote them: a ``#### `` or ``> `` line inside an assistant reply counts as
user or console only after a blank line (inside a fenced code block it must also end with aider's two-space
line break), so markdown headings, quotes and code in a reply stay in the reply.

The website examples (``aider/website/examples/*.md``) use the same line format, wrapped in Jekyll front
matter and prose: only the text inside their ``<div class="chat-transcript">`` blocks is the chat, and only
that is read.

Detection: the first non-blank line is ``# aider chat started at``, or the text holds a
``<div class="chat-transcript"`` block. Anything else raises ``InputError``.
"""

from __future__ import annotations

import json
import re

from ..errors import InputError
from ..history.messages import Message, call_dict, parse_message

FORMAT = "aider"

HEADER = "# aider chat started at"
_DIV_OPEN = re.compile(r'^\s*<div\s+class="chat-transcript"')
_DIV_CLOSE = re.compile(r"^\s*</div>\s*$")
_USER = re.compile(r"^####(?: |$)")
_CONSOLE = re.compile(r"^>(?: |$)")
_FENCE = re.compile(r"^ {0,3}```")
_SEP = object()  # a blank line or a transcript <div> boundary


def _chat_lines(text: str, source: str) -> list[object]:
    """The lines that belong to the chat (``_SEP`` marks separators); raises when this is not an aider log."""
    lines = re.split(r"\r?\n", text)
    first = next((ln for ln in lines if ln.strip()), None)
    if first is None:
        raise InputError("the file is empty", source=source)
    if first.startswith(HEADER):
        return [_SEP if not ln.strip() else ln for ln in lines]
    if any(_DIV_OPEN.match(ln) for ln in lines):
        # Everything outside the transcript blocks (front matter, prose) and the <div> lines themselves become
        # separators, so that line numbers still match the file.
        kept: list[object] = []
        inside = False
        for ln in lines:
            if _DIV_OPEN.match(ln):
                inside = True
                kept.append(_SEP)
            elif inside and _DIV_CLOSE.match(ln):
                inside = False
                kept.append(_SEP)
            else:
                kept.append(ln if inside and ln.strip() else _SEP)
        return kept
    lineno = lines.index(first) + 1
    raise InputError(
        f"no '{HEADER}' header (the first line is {first[:60]!r}) and no <div class=\"chat-transcript\"> block",
        source=source,
        position=f"line {lineno}",
    )


def _drop_break(line: str) -> str:
    return line[:-2] if line.endswith("  ") else line


class _Block:
    def __init__(self, kind: str, command: str | None = None) -> None:
        self.kind = kind  # "user" | "console" | "assistant"
        self.command = command
        self.lines: list[str] = []

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip("\n") if self.kind != "assistant" else "\n".join(self.lines).strip()


def _blocks(lines: list[object]) -> list[_Block]:
    blocks: list[_Block] = []
    current: _Block | None = None
    prev_blank = True
    console_open = False  # inside a multi-line console entry that has not ended yet
    fence_open = False  # inside a fenced block of an assistant reply

    def start(kind: str, command: str | None = None) -> _Block:
        nonlocal current, fence_open
        current = _Block(kind, command)
        fence_open = False
        blocks.append(current)
        return current

    for line in lines:
        if line is _SEP:
            if current is not None and current.kind == "console" and console_open:
                current.lines.append("")
                prev_blank = True
                continue
            if current is not None and current.kind == "assistant":
                current.lines.append("")
            elif current is not None and current.kind == "user":
                current = None  # a blank line ends a user turn; blocks[-1] still names its command
            prev_blank = True
            continue
        assert isinstance(line, str)
        if line.startswith(HEADER):
            current, console_open, prev_blank = None, False, True
            continue
        if current is not None and current.kind == "console" and console_open:
            # Continuation of a multi-line console entry, unless a user turn clearly starts.
            if not (prev_blank and _USER.match(line) and line.endswith("  ")):
                ended = bool(line.strip()) and line.endswith("  ")
                current.lines.append(_drop_break(line) if ended else line)
                console_open = not ended
                prev_blank = False
                continue
            console_open = False
        in_reply = current is not None and current.kind == "assistant"
        switch_ok = not in_reply or (prev_blank and (not fence_open or line.endswith("  ")))
        if _USER.match(line) and switch_ok:
            body = _drop_break(line[5:] if line.startswith("#### ") else line[4:])
            if current is None or current.kind != "user" or prev_blank:
                start("user")
            assert current is not None
            current.lines.append(body)
        elif _CONSOLE.match(line) and switch_ok:
            if current is None or current.kind != "console":
                command = None
                last = blocks[-1] if blocks else None
                if last is not None and last.kind == "user" and last.text.startswith("/"):
                    command = last.text
                start("console", command)
            assert current is not None
            ended = line == ">" or line.endswith("  ")  # the line holds at least ">", so it is not blank
            body = _drop_break(line) if ended else line
            current.lines.append(body[2:] if body.startswith("> ") else body[1:])
            console_open = not ended
        else:
            if current is None or current.kind != "assistant":
                start("assistant")
            assert current is not None
            current.lines.append(line)
            if _FENCE.match(line):
                fence_open = not fence_open
        prev_blank = False
    return blocks


def load_aider(text: str, source: str) -> list[Message]:
    """Parse an aider chat log (or website example transcript) into messages; rules in the module docstring."""
    blocks = _blocks(_chat_lines(text, source))
    raw: list[dict] = []
    calls = 0
    for block in blocks:
        body = block.text
        if block.kind == "user":
            if body.strip() in ("", "<blank>"):
                continue
            raw.append({"role": "user", "content": body})
        elif block.kind == "assistant":
            if body:
                raw.append({"role": "assistant", "content": body})
        else:
            calls += 1
            call_id = f"aider-{calls}"
            if block.command:
                name = block.command.split()[0]
                arguments = json.dumps({"command": block.command}, ensure_ascii=False)
            else:
                name, arguments = "aider", "{}"
            call = call_dict(call_id, name, arguments)
            last = raw[-1] if raw else None
            if last is not None and last["role"] == "assistant" and "tool_calls" not in last and not block.command:
                last["tool_calls"] = [call]
            else:
                raw.append({"role": "assistant", "content": None, "tool_calls": [call]})
            raw.append({"role": "tool", "content": body, "tool_call_id": call_id})
    if not raw:
        raise InputError("an aider log with no messages in it", source=source)
    return [parse_message(message, index=index, source=source) for index, message in enumerate(raw)]
