"""Tool output as a terminal shows it: without its control sequences (ANSI/ECMA-48: colours, cursor moves, OSC
hyperlinks and titles), and with each carriage return's overwrite applied.

A command run under a harness that looks like a terminal writes them (``\\x1b[31mERROR\\x1b[0m``; ``curl`` and
``ffmpeg`` redraw a progress line with ``\\r``). They style a terminal and say nothing: read as text, each escape
costs several tokens in the summary (JSON writes it as ``\\u001b``), glues its parameters to the next word
(``32mINF``, which then counts as a name) and keeps an error line's words from the outcome classifier, and every
redrawn frame of a progress line reads as a line of its own. The summary reads tool output as shown
(``plain_tool_outputs``); the messages kept verbatim in the history keep their bytes, and so do the words of a
person."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from .conventions import is_tool_output, unwrap_output
from .messages import Message

# CSI (ESC [ params intermediates final), OSC (ESC ] ... BEL or ST), the other string commands (DCS, SOS, PM,
# APC: ESC P/X/^/_ ... ST), a charset designation (ESC ( B), then ESC and one byte in 0x30-0x7E (keypad modes,
# RIS, cursor save). A sequence cut short at the end of an output (a harness's truncation) goes too.
_SEQUENCE = re.compile(
    r"\x1b(?:"
    r"\[[0-?]*[ -/]*(?:[@-~]|$)"
    r"|\][^\x07\x1b]*(?:\x07|\x1b\\|$)"
    r"|[PX^_][^\x1b]*(?:\x1b\\|$)"
    r"|[ -/]+(?:[0-~]|$)"
    r"|[0-~]"
    r"|$)"
)


def _overwritten(line: str) -> str:
    """What a terminal shows of ``line`` (no newline in it): each carriage return sends the cursor back to the
    start, and the text after it overwrites what was there. Read from the last frame back, a frame adds only
    what reaches past the later ones: linear in the line, however many returns it holds."""
    shown = ""
    for frame in reversed(line.split("\r")):
        if len(frame) > len(shown):
            shown += frame[len(shown) :]
    return shown


def terminal_view(text: str) -> str:
    """``text`` as a terminal shows it: no control sequences, carriage returns applied (``\\r\\n`` is a line
    break); the same string when it has neither."""
    if "\x1b" in text:
        text = _SEQUENCE.sub("", text)
    if "\r" in text:
        text = "\n".join(_overwritten(line) for line in text.replace("\r\n", "\n").split("\n"))
    return text


def _styled(text: str) -> bool:
    return "\x1b" in text or "\r" in text


# An escape or a carriage return as a JSON string writes it (``\u001b``, ``\r``, ``\u000d``): only a JSON text that
# holds one is parsed to look inside (most JSON outputs hold none, and the view runs at every compaction)
_ESCAPED_STYLE = re.compile(r"\\u001[bB]|\\r|\\u000[dD]")


def _may_be_styled(text: str) -> bool:
    return _styled(text) or (text.lstrip().startswith("{") and _ESCAPED_STYLE.search(text) is not None)


def _output_view(text: str) -> str:
    """A tool output as a terminal shows it. An older Codex CLI output is the JSON string ``{"output": text,
    "metadata": ...}``, where an escape stands as ``\\u001b``: its ``output`` gets the view and the wrapper is
    written back around it, so the readers that unwrap it (``unwrap_output``) see the words."""
    if _styled(text):
        return terminal_view(text)
    inner = unwrap_output(text)[0]
    if inner is text or not _styled(inner):
        return text
    wrapper = json.loads(text)  # unwrap_output has read it as such an object
    wrapper["output"] = terminal_view(inner)
    return json.dumps(wrapper, ensure_ascii=False)


def plain_tool_outputs(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with every tool output (``is_tool_output``) as a terminal shows it (``terminal_view``);
    new messages where something changed, the same objects elsewhere (the caller's are never modified)."""
    return [
        m.with_text(_output_view) if _may_be_styled(m.text) and is_tool_output(messages, i) else m
        for i, m in enumerate(messages)
    ]


__all__ = ["plain_tool_outputs", "terminal_view"]
