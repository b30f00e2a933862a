"""A message's own words: its prose outside code blocks and markup tags, split into sentences in any script, and
the lines of code it quotes. Pure."""

from __future__ import annotations

import re

_FENCED = re.compile(r"```.*?(?:```|\Z)", re.S)
_TAGS = re.compile(r"</?[A-Za-z_][\w-]*>")  # <thoughts>, <returncode>: a harness's markup, not words
# A sentence ends at . ! ? and a space before anything but a lower-case letter or digit ("f.name", "e.g. x" and
# "3.5 s" stay whole), or at the full stops of scripts written without spaces (。！？).
SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?![a-z0-9])|(?<=[。！？])")


def code_lines(text: str) -> list[str]:
    """The non-blank lines of a message's fenced code blocks (without the fences), but for the shell blocks that are
    the agent's commands."""
    out: list[str] = []
    for block in _FENCED.findall(text):
        lines = block.split("\n")
        lang = lines[0].strip("`").strip().lower()
        if lang in ("bash", "sh", "shell", "zsh", "console", "mswea_bash_command"):
            continue
        out += [ln.rstrip() for ln in lines[1:] if ln.strip() and not ln.strip().startswith("```")]
    return out


def prose(text: str) -> str:
    """A message's own words: outside code blocks and markup tags."""
    return _TAGS.sub(" ", _FENCED.sub("\n", text)).strip()


def prose_sentences(text: str) -> list[str]:
    """The sentences of a message outside its code blocks, verbatim (a sentence never spans a line or a block)."""
    return [x.strip() for line in _FENCED.sub("\n", text).splitlines() for x in SENTENCE_SPLIT.split(line) if x.strip()]
