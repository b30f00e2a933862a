"""A small shell lexer of its own: a command line -> simple commands with words and redirections."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# ------------------------------------------------------------------------------------------ shell parsing


@dataclass
class _Cmd:
    """One simple command: its words (quotes removed), redirections, and its span in the source text."""

    words: list[str] = field(default_factory=list)
    redirects: list[list[str]] = field(default_factory=list)  # [op, target]; for << the target becomes the body
    start: int = 0
    end: int = 0
    piped: bool = False  # stdin comes from the previous command


def _read_balanced(src: str, i: int, open_ch: str, close_ch: str) -> int:
    """Index just past the ``close_ch`` matching the ``open_ch`` at ``i`` (quotes respected)."""
    depth = 0
    n = len(src)
    while i < n:
        c = src[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            j = src.find("'", i + 1)
            i = n if j < 0 else j + 1
            continue
        if c == '"':
            i = _skip_double(src, i)
            continue
        if c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _skip_double(src: str, i: int) -> int:
    j = i + 1
    n = len(src)
    while j < n:
        c = src[j]
        if c == "\\":
            j += 2
            continue
        if c == '"':
            return j + 1
        if c == "$" and j + 1 < n and src[j + 1] == "(":
            j = _read_balanced(src, j + 1, "(", ")")
            continue
        j += 1
    return n


def parse_shell(src: str) -> list[_Cmd]:
    """Split shell text into simple commands (quotes, escapes, ``$(...)``, here-documents, operators)."""
    cmds: list[_Cmd] = []
    cur = _Cmd()
    word: list[str] | None = None
    pending_redir: list[str] | None = None
    heredocs: list[tuple[list[str], str, bool]] = []
    piped_next = False
    i, n = 0, len(src)

    def end_word() -> None:
        nonlocal word, pending_redir
        if word is None:
            return
        w = "".join(word)
        word = None
        if pending_redir is not None:
            op = pending_redir[0]
            if op in ("<<", "<<-"):
                delim = w
                entry = [op, ""]
                cur.redirects.append(entry)
                heredocs.append((entry, delim, op == "<<-"))
            else:
                cur.redirects.append([op, w])
            pending_redir = None
        else:
            cur.words.append(w)

    def start_word() -> list[str]:
        nonlocal word
        if word is None:
            word = []
            if not cur.words and not cur.redirects and pending_redir is None:
                cur.start = i
        return word

    def end_cmd(pipe: bool) -> None:
        nonlocal cur, piped_next
        end_word()
        if cur.words or cur.redirects:
            cur.end = max(cur.end, i)
            cur.piped = piped_next
            cmds.append(cur)
        cur = _Cmd()
        piped_next = pipe

    while i < n:
        c = src[i]
        if c == "\\":
            if i + 1 < n and src[i + 1] == "\n":
                i += 2
                continue
            start_word().append(src[i + 1] if i + 1 < n else "")
            i += 2
            cur.end = i
            continue
        if c == "'":
            j = src.find("'", i + 1)
            j = n if j < 0 else j
            start_word().append(src[i + 1 : j])
            i = j + 1
            cur.end = i
            continue
        if c == "$" and i + 1 < n and src[i + 1] == "'":
            j = i + 2
            while j < n and src[j] != "'":
                j += 2 if src[j] == "\\" else 1
            start_word().append(src[i + 2 : min(j, n)].encode().decode("unicode_escape", "ignore"))
            i = j + 1
            cur.end = i
            continue
        if c == '"':
            j = _skip_double(src, i)
            inner = src[i + 1 : j - 1] if j <= n and src[j - 1 : j] == '"' else src[i + 1 : j]
            start_word().append(re.sub(r'\\([\\"$`\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), inner))
            i = j
            cur.end = i
            continue
        if c == "$" and i + 1 < n and src[i + 1] == "(":
            j = _read_balanced(src, i + 1, "(", ")")
            start_word().append(src[i:j])
            i = j
            cur.end = i
            continue
        if c == "`":
            j = src.find("`", i + 1)
            j = n - 1 if j < 0 else j
            start_word().append(src[i : j + 1])
            i = j + 1
            cur.end = i
            continue
        if c == "#" and word is None:
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if c in " \t\r":
            end_word()
            i += 1
            continue
        if c == "\n":
            end_cmd(False)
            i += 1
            for entry, delim, strip_tabs in heredocs:
                lines = []
                while i < n:
                    j = src.find("\n", i)
                    line = src[i:] if j < 0 else src[i:j]
                    i = n if j < 0 else j + 1
                    check = line.lstrip("\t") if strip_tabs else line
                    if check.rstrip("\r") == delim:
                        break
                    lines.append(line)
                entry[1] = "\n".join(lines) + ("\n" if lines else "")
            heredocs.clear()
            continue
        if c in ";&|()":
            two = src[i : i + 2]
            if c == "&" and two in ("&>",):
                end_word()
                op = "&>>" if src[i : i + 3] == "&>>" else "&>"
                pending_redir = [op]
                i += len(op)
                continue
            end_cmd(c == "|" and two != "||")
            i += 2 if two in ("&&", "||", ";;", "|&") else 1
            continue
        if c in "<>":
            if word is not None and "".join(word).isdigit() and src[i - 1].isdigit():
                word = None  # an fd number (2>)
            else:
                end_word()
            if cur.start == 0 and not cur.words and not cur.redirects:
                cur.start = i
            for op in ("<<<", "<<-", "<<", ">>", ">|", ">&", "<&", "<>", ">", "<"):
                if src.startswith(op, i):
                    break
            i += len(op)
            if op in (">&", "<&"):
                m = re.match(r"\s*(\d+|-)", src[i:])
                if m:
                    i += m.end()
                    continue
                op = ">"
            pending_redir = [op]
            continue
        start_word().append(c)
        i += 1
        cur.end = i
    end_cmd(False)
    for entry, _delim, _strip in heredocs:  # unterminated here-document: the rest was already consumed
        entry[1] = entry[1] or ""
    return cmds
