"""The shell lexer: a command line split into simple commands, each with its words (quotes removed), its
redirections (a here-document's body read in), where it stands in the text, and whether it reads from a pipe.
Enough to say what a command acts on, not to run it.

It is the one lexer of the package: the extractor reads what a command does with it (``extract.commands``) and
the contradiction counter what an action did to the working tree (``contradictions.operations``). It lives here,
on the history's floor, so that the counter (an evaluator too) never imports the extractor.

It replaced two lexers (issue 49), the counter's and the extractor's. It reads quotes as the counter's did
(``$'...'``, ``$(...)`` with quotes inside, a line continuation in double quotes), and in four points as the
extractor's did, quirks included, so that no summary changes (nor, on the recorded histories, any contradiction
report):

* ``\\r`` is part of a word (as in bash), not a space;
* a line continuation where a word would start begins a word: ``a \\<newline>  b`` has the words ``a``, ``""``
  and ``b``;
* a redirection's target is the word right after the operator, empty where none follows on the line;
* a here-document ends at the first line that is its delimiter once stripped of spaces (bash wants the delimiter
  alone), or at the end of the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Longest first: the first that matches at a ``<`` or ``>`` is the operator.
_REDIRECT_OPERATORS = ("<<<", "<<-", "<<", ">>", ">|", ">&", "<&", "<>", ">", "<")
_HEREDOC = ("<<", "<<-")
_WORD_END = frozenset(" \t\n;&|<>()")
_DOUBLE_QUOTED_ESCAPE = re.compile(r'\\([\\"$`\n])')


@dataclass
class Command:
    """One simple command.

    ``redirects`` holds (operator, target) in the order written. The operator keeps its file descriptor (``2>``,
    ``0<``); a descriptor copied (``2>&1``, ``>&-``) is left out. For ``<<`` / ``<<-`` the target is the
    here-document's body, each line ending in a newline. ``start``/``end`` delimit the command in the text, from
    its first word or redirection to the operator or line end that ends it. ``piped``: its input is the output of
    the command before it (``|``, ``|&``)."""

    words: list[str] = field(default_factory=list)
    redirects: list[tuple[str, str]] = field(default_factory=list)
    start: int = 0
    end: int = 0
    piped: bool = False

    @property
    def heredoc(self) -> str | None:
        """The body of the command's last here-document without its final newline; None without one."""
        bodies = [target for op, target in self.redirects if op in _HEREDOC]
        return bodies[-1].removesuffix("\n") if bodies else None


def parse_shell(src: str) -> list[Command]:
    """Split shell text into simple commands (quotes, escapes, ``$'...'``, ``$(...)``, here-documents, comments,
    line continuations, operators). Total: any text is read; an unclosed quote runs to the end."""
    return _Lexer(src).read()


class _Lexer:
    """One reading of a text: the commands so far, the one being read, and the here-documents whose bodies follow
    the current line."""

    def __init__(self, src: str) -> None:
        self.src, self.i, self.n = src, 0, len(src)
        self.commands: list[Command] = []
        self.cur = Command()
        self.has_word = False  # ``cur`` has a word of its own (not one a line continuation left empty)
        self.piped_next = False
        self.heredocs: list[tuple[Command, int, str, bool]] = []  # (owner, redirect index, delimiter, strip tabs)

    def read(self) -> list[Command]:
        """The simple commands of the whole text, in order."""
        src, n = self.src, self.n
        while self.i < n:
            c = src[self.i]
            if c in " \t":
                self.i += 1
            elif c == "\n":
                self._end_command(False)
                self.i += 1
                self._read_heredoc_bodies()
            elif c == "#":  # only reached where a word would start: a comment to the end of the line
                j = src.find("\n", self.i)
                self.i = n if j < 0 else j
            elif c in "<>" or src.startswith("&>", self.i):
                self._redirect("")
            elif c in ";&|()":
                two = src[self.i : self.i + 2]
                self._end_command(c == "|" and two != "||")
                self.i += 2 if two in ("&&", "||", ";;", "|&") else 1
            else:
                self._word()
        self._end_command(False)
        return self.commands

    def _word(self) -> None:
        word, first, self.i = _read_word(self.src, self.i)
        if self.i < self.n and self.src[self.i] in "<>" and word.isdigit() and self.src[self.i - 1].isdigit():
            self._redirect(word, first)  # the file descriptor of a redirection: 2>
            return
        if first is not None:
            self._mark_start(first)
            self.has_word = True
        self.cur.words.append(word)

    def _mark_start(self, at: int) -> None:
        """The command starts at ``at`` if nothing of it came before (a copied descriptor, ``2>&1``, aside)."""
        if not self.has_word and not self.cur.redirects:
            self.cur.start = at

    def _redirect(self, fd: str, fd_at: int | None = None) -> None:
        """The redirection at ``self.i`` (after its file descriptor ``fd``, if any) and its target."""
        src, cur = self.src, self.cur
        if fd_at is not None:
            self._mark_start(fd_at)
        elif cur.start == 0:  # after a copied descriptor alone (2>&1 >f) the command still starts at the 2
            self._mark_start(self.i)
        if src.startswith("&>", self.i):  # &> and &>> take no descriptor
            op = "&>>" if src.startswith("&>>", self.i) else "&>"
        else:
            op = next(o for o in _REDIRECT_OPERATORS if src.startswith(o, self.i))
        self.i += len(op)
        while self.i < self.n and src[self.i] in " \t":
            self.i += 1
        target, _, self.i = _read_word(src, self.i)
        if op in (">&", "<&") and (target.isdigit() or target == "-"):
            return  # a descriptor copied or closed (2>&1), no file
        if op in _HEREDOC:
            cur.redirects.append((op, ""))
            self.heredocs.append((cur, len(cur.redirects) - 1, target, op == "<<-"))
        else:
            cur.redirects.append((fd + op, target))

    def _end_command(self, pipe: bool) -> None:
        """Close the command being read (kept if it has a word or a redirection); ``pipe``: the next one reads
        its output."""
        cur = self.cur
        if cur.words or cur.redirects:
            cur.end = min(self.i, self.n)
            cur.piped = self.piped_next
            self.commands.append(cur)
        self.cur = Command()
        self.has_word = False
        self.piped_next = pipe

    def _read_heredoc_bodies(self) -> None:
        """The bodies of the here-documents the line just ended opened, read from the lines after it."""
        src, n = self.src, self.n
        for owner, k, delimiter, strip_tabs in self.heredocs:
            lines = []
            while self.i < n:
                j = src.find("\n", self.i)
                line = src[self.i :] if j < 0 else src[self.i : j]
                self.i = n if j < 0 else j + 1
                if (line.lstrip("\t") if strip_tabs else line).strip() == delimiter:
                    break
                lines.append(line)
            owner.redirects[k] = (owner.redirects[k][0], "".join(line + "\n" for line in lines))
        self.heredocs.clear()


def _read_word(src: str, i: int) -> tuple[str, int | None, int]:
    """The word from ``i``: (its text with quotes removed, where its first piece starts or None where it has
    none, the index after it). A line continuation inside it is skipped."""
    n = len(src)
    pieces: list[str] = []
    first = None
    while i < n and src[i] not in _WORD_END:
        if src[i] == "\\" and src.startswith("\n", i + 1):
            i += 2
            continue
        if first is None:
            first = i
        text, i = _read_piece(src, i)
        pieces.append(text)
    return "".join(pieces), first, i


def _read_piece(src: str, i: int) -> tuple[str, int]:
    """One piece of a word from ``i``: an escaped character, a quoted string (quotes removed; ``$'...'`` with its
    escapes applied), ``$(...)`` or a backquoted command as written, or a plain character; (text, index after)."""
    n = len(src)
    c = src[i]
    if c == "\\":
        return (src[i + 1] if i + 1 < n else ""), i + 2
    if c == "'":
        j = src.find("'", i + 1)
        j = n if j < 0 else j
        return src[i + 1 : j], j + 1
    if c == "$" and src.startswith("'", i + 1):
        j = i + 2
        while j < n and src[j] != "'":
            j += 2 if src[j] == "\\" else 1
        return src[i + 2 : min(j, n)].encode().decode("unicode_escape", "ignore"), j + 1
    if c == '"':
        j = _skip_double(src, i)
        inner = src[i + 1 : j - 1] if src[j - 1 : j] == '"' else src[i + 1 : j]
        return _DOUBLE_QUOTED_ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), inner), j
    if c == "$" and src.startswith("(", i + 1):
        j = _read_balanced(src, i + 1, "(", ")")
        return src[i:j], j
    if c == "`":
        j = src.find("`", i + 1)
        j = n - 1 if j < 0 else j
        return src[i : j + 1], j + 1
    return c, i + 1


def _read_balanced(src: str, i: int, open_ch: str, close_ch: str) -> int:
    """Index just past the ``close_ch`` matching the ``open_ch`` at ``i`` (quotes respected); the end if none."""
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
    """Index just past the double-quoted string opening at ``i`` (escapes and ``$(...)`` inside); the end if open."""
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
