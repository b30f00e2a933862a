"""The task statement: the issue/PR section of the first user message if marked, else its start."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..history.conventions import as_message_list, first_user_index
from ..history.messages import Message

DEFAULT_TASK_CHARS = 1500

_TASK_SECTIONS = (
    re.compile(r"<pr_description>\s*(?:Consider the following PR description:\s*)?(.*?)\s*</pr_description>", re.S),
    re.compile(r"ISSUE:\s*\n(.*?)\n\s*INSTRUCTIONS:", re.S),
    re.compile(r"<issue>\s*(.*?)\s*</issue>", re.S),
    re.compile(r"<task>\s*(.*?)\s*</task>", re.S),
)


def extract_task(messages: Sequence[Message]) -> tuple[str, int | None]:
    """The task statement: the issue/PR section of the first user message if marked, else its start."""
    msgs = as_message_list(messages)
    i = first_user_index(msgs)
    if i is None:
        return "", None
    text = msgs[i].text
    for rx in _TASK_SECTIONS:
        m = rx.search(text)
        if m and m.group(1).strip():
            return m.group(1)[:DEFAULT_TASK_CHARS], i
    return text.strip()[:DEFAULT_TASK_CHARS], i
