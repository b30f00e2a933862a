"""A small shell lexer: a command line split into simple commands (words with quotes removed, redirections,
heredoc bodies, and whether each one reads from a pipe). Enough to say what a command acts on, not to run it."""

from __future__ import annotations


class SimpleCommand:
    """A simple command: words (quotes removed), redirections, heredoc body, and the operator before it."""

    __slots__ = ("words", "redirs", "heredoc", "after_pipe")

    def __init__(self, after_pipe: bool) -> None:
        self.words: list[str] = []
        self.redirs: list[tuple[str, str]] = []  # (operator, target word)
        self.heredoc: str | None = None
        self.after_pipe = after_pipe


_OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&")


def _read_word(cmd: str, i: int) -> tuple[str, int]:
    """Read one shell word from ``i`` (quotes removed, $(...) and `...` kept raw); returns (word, next index)."""
    n = len(cmd)
    out: list[str] = []
    while i < n:
        c = cmd[i]
        if c in " \t\n;&|<>()":
            break
        if c == "\\":
            if i + 1 < n and cmd[i + 1] == "\n":
                i += 2
                continue
            if i + 1 < n:
                out.append(cmd[i + 1])
            i += 2
            continue
        if c == "'":
            j = cmd.find("'", i + 1)
            j = n if j < 0 else j
            out.append(cmd[i + 1 : j])
            i = j + 1
            continue
        if c == '"':
            j = i + 1
            while j < n and cmd[j] != '"':
                if cmd[j] == "\\" and j + 1 < n and cmd[j + 1] in '"\\$`':
                    out.append(cmd[j + 1])
                    j += 2
                    continue
                out.append(cmd[j])
                j += 1
            i = j + 1
            continue
        if c == "`":
            j = cmd.find("`", i + 1)
            j = n if j < 0 else j
            out.append(cmd[i : j + 1])
            i = j + 1
            continue
        if c == "$" and i + 1 < n and cmd[i + 1] == "(":
            depth, j = 0, i + 1
            while j < n:
                if cmd[j] == "(":
                    depth += 1
                elif cmd[j] == ")":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            out.append(cmd[i : j + 1])
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out), i


def parse_shell(cmd: str) -> list[SimpleCommand]:
    """Split a command line into simple commands (handles quotes, heredocs, comments, continuations)."""
    simples: list[SimpleCommand] = []
    cur = SimpleCommand(after_pipe=False)
    pending: list[tuple[SimpleCommand, str, bool]] = []  # heredocs waiting for the end of the line
    n, i = len(cmd), 0

    def finish(after_pipe: bool) -> None:
        nonlocal cur
        if cur.words or cur.redirs:
            simples.append(cur)
        cur = SimpleCommand(after_pipe=after_pipe)

    while i < n:
        c = cmd[i]
        if c in " \t":
            i += 1
            continue
        if c == "\n":
            finish(False)
            i += 1
            for owner, delim, strip_tabs in pending:  # heredoc bodies follow the line that opened them
                body: list[str] = []
                while i < n:
                    j = cmd.find("\n", i)
                    j = n if j < 0 else j
                    line = cmd[i:j]
                    i = j + 1
                    if (line.lstrip("\t") if strip_tabs else line).strip() == delim:
                        break
                    body.append(line)
                owner.heredoc = "\n".join(body)
            pending = []
            continue
        if c == "#":  # only reached at the start of a word: a comment to the end of the line
            j = cmd.find("\n", i)
            i = n if j < 0 else j
            continue
        if c in "()":
            finish(False)
            i += 1
            continue
        if c in ";&|":
            op = next(o for o in _OPERATORS if cmd.startswith(o, i))
            if op == "&" and cmd.startswith("&>", i):
                pass  # redirect, handled below
            else:
                finish(op in ("|", "|&"))
                i += len(op)
                continue
        if c in "<>" or cmd.startswith("&>", i):
            fd = ""
            if cur.words and cur.words[-1].isdigit() and i > 0 and cmd[i - 1].isdigit():
                fd = cur.words.pop()
            for op in ("<<<", "<<-", "<<", ">>", ">|", "&>>", "&>", ">&", "<&", "<>", ">", "<"):
                if cmd.startswith(op, i):
                    break
            i += len(op)
            while i < n and cmd[i] in " \t":
                i += 1
            word, i = _read_word(cmd, i)
            if op in ("<<", "<<-"):
                pending.append((cur, word, op == "<<-"))
            elif op in (">&", "<&") and (word.isdigit() or word == "-"):
                pass  # fd duplication like 2>&1
            else:
                cur.redirs.append((fd + op, word))
            continue
        word, i = _read_word(cmd, i)
        cur.words.append(word)
    finish(False)
    return simples
