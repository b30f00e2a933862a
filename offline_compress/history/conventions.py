"""Message conventions: which messages are tool calls and which are tool output, in every format we read.

Two call conventions are understood:

(a) canonical: assistant ``tool_calls`` answered by ``tool`` messages (matched by ``tool_call_id``, else in order);
(b) text: an assistant message with a ```bash (or ```mswea_bash_command) block is the call and the next ``user``
    message is its result when it is harness output (``<returncode>…``, a timeout or format-error notice, the
    submission diff). SWE-agent text actions (a bare ``` block, answered by a user message ending in ``bash-$``)
    are read the same way.

A user message that answers an assistant action is TOOL OUTPUT whatever its prefix (``Observation:``, ``Output:``,
none at all): one that directly follows an assistant message with ``tool_calls`` or with a shell block. Two
exceptions keep a person's reply the person's: a chat where a shell block is a rare suggestion (aider: a history
with 3 or more assistant messages of which fewer than half hold one), and an agent that calls tools (a shell block
in its text is then a suggestion, never what it ran).
``is_tool_output`` is the one definition the cut, the extractor and the contradiction counter share: constraints
never come from tool output, which is the main defence against prompt injection through command output.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from .messages import Message, parse_message

# The fences mini-swe-agent runs (close to its own regex ```bash\s*\n(.*?)\n```).
_BASH_BLOCK = re.compile(r"```(?:bash|mswea_bash_command)[ \t]*\n(.*?)\n?```", re.DOTALL)
_FENCE_LINE = re.compile(r"^[ \t]*```([^`\n]*)$", re.M)
RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
MINI_TIMEOUT = re.compile(r"\AThe last command <command>")
MINI_FORMAT_ERROR = re.compile(r"\A\s*Please always provide EXACTLY ONE action")
_SUBMIT_SENTINELS = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")
_SWE_AGENT_PROMPT = re.compile(r"\(Current directory: [^\n]*\)\s*\n\s*bash-\$\s*\Z")
_SHELL_BLOCK = re.compile(r"```(?:bash|sh|shell|zsh|console|mswea_bash_command)[ \t]*\n", re.I)
CHAT_MIN_REPLIES = 3  # fewer assistant messages than this are too few to call a history a chat


def as_message_list(messages: Sequence[Message | Mapping[str, Any]]) -> list[Message]:
    """Messages as ``Message`` objects (plain dicts parsed, with their index in errors)."""
    return [m if isinstance(m, Message) else parse_message(m, index=i) for i, m in enumerate(messages)]


def bash_blocks(text: str) -> list[str]:
    """The ```bash / ```mswea_bash_command blocks of a text, as mini-swe-agent would run them."""
    return [m.group(1) for m in _BASH_BLOCK.finditer(text)]


def bare_action(text: str) -> str | None:
    """SWE-agent text actions: the body of the last fenced block without a language tag."""
    last = None
    opened: re.Match[str] | None = None
    for m in _FENCE_LINE.finditer(text):
        if opened is None:
            opened = m
        elif not m.group(1).strip():  # a bare fence closes the open block
            if not opened.group(1).strip():
                last = text[opened.end() + 1 : m.start()].rstrip("\n")
            opened = None
    return last


def _prev_assistant_commands(messages: Sequence[Message], i: int) -> tuple[list[str], str | None]:
    if i == 0 or messages[i - 1].role != "assistant" or messages[i - 1].tool_calls:
        return [], None
    text = messages[i - 1].text
    return bash_blocks(text), bare_action(text)


def is_tool_output(messages: Sequence[Message] | Sequence[Mapping[str, Any]], i: int) -> bool:
    """True when message ``i`` carries tool/harness output rather than words of a person.

    ``tool`` messages always; ``user`` messages when they are a mini-swe-agent result (``<returncode>``), a
    harness notice answering an assistant command (timeout, format error, the submission), or a SWE-agent
    observation (answers an assistant action and ends with the ``bash-$`` prompt).
    """
    if isinstance(messages[i], Message):
        parsed = cast("Sequence[Message]", messages)
    else:
        parsed = as_message_list(messages)  # plain dicts are accepted too
    return _is_tool_output(parsed, i)


def _is_tool_output(messages: Sequence[Message], i: int) -> bool:
    msg = messages[i]
    if msg.role == "tool":
        return True
    if msg.role != "user":
        return False
    text = msg.text
    if text.lstrip().startswith("<returncode>"):
        return True
    prev = messages[i - 1] if i > 0 else None
    if prev is not None and prev.role == "assistant":
        if prev.tool_calls:
            return True  # the harness answered the call with a user message
        if _SHELL_BLOCK.search(prev.text) and acts_through_shell_blocks(messages):
            return True
    blocks, bare = _prev_assistant_commands(messages, i)
    if blocks:
        if MINI_TIMEOUT.match(text) or MINI_FORMAT_ERROR.match(text) or "<returncode>" in text[:200]:
            return True
        if any(s in b for b in blocks for s in _SUBMIT_SENTINELS):
            return True  # the submission's output comes back bare (a diff, or nothing)
    if (blocks or bare is not None) and _SWE_AGENT_PROMPT.search(text):
        return True
    return False


_ACTING: dict[tuple[int, int, int, int], bool] = {}  # a few recent histories, by identity and length


def acts_through_shell_blocks(messages: Sequence[Message]) -> bool:
    """The agent acts through shell blocks: it makes no tool calls, and the history is not a chat in which fewer
    than half of 3+ assistant messages hold one (computed once per history and cached by its identity, since
    callers ask per message)."""
    key = (id(messages), len(messages), id(messages[0]) if messages else 0, id(messages[-1]) if messages else 0)
    cached = _ACTING.get(key)
    if cached is not None:
        return cached
    replies = [m for m in messages if m.role == "assistant"]
    if any(m.tool_calls for m in replies):
        # An agent that calls tools acts through its calls: a shell block in its text is a suggestion to the
        # person (Claude Code, Codex), and the person's reply to it is theirs.
        result = False
    else:
        acting = sum(1 for m in replies if _SHELL_BLOCK.search(m.text) is not None)
        result = len(replies) < CHAT_MIN_REPLIES or 2 * acting >= len(replies)
    if len(_ACTING) > 16:
        _ACTING.clear()
    _ACTING[key] = result
    return result


def first_user_index(messages: Sequence[Message]) -> int | None:
    """The first user message that is not tool output: where the task is stated."""
    return next((i for i, m in enumerate(messages) if m.role == "user" and not is_tool_output(messages, i)), None)


def text_command(messages: Sequence[Message], i: int) -> str | None:
    """The command of a text-convention call at assistant message ``i`` (None if it is not one)."""
    msg = messages[i]
    if msg.role != "assistant" or msg.tool_calls:
        return None
    text = msg.text
    answered = i + 1 < len(messages) and messages[i + 1].role == "user" and is_tool_output(messages, i + 1)
    blocks = bash_blocks(text)
    if blocks:
        if answered or (i + 1 == len(messages) and _is_mini_history(messages)):
            return "\n".join(blocks) if len(blocks) > 1 else blocks[0]
        return None
    bare = bare_action(text)
    if bare is not None and answered:
        return bare
    return None


def _is_mini_history(messages: Sequence[Message]) -> bool:
    return any(m.role == "user" and m.text.lstrip().startswith("<returncode>") for m in messages)
