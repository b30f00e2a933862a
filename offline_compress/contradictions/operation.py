"""An operation: what one command does to the working tree (``_Op``), the state a shell carries between
commands (``_Ctx``), and the small readers of paths, options and patches that every command's reading shares."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass

_KEYWORDS = frozenset({"{", "}", "!", "if", "then", "else", "elif", "do", "while", "until", "fi", "done"})


@dataclass(frozen=True)
class _Op:
    """One effect of an action on the working tree, the environment or a remote."""

    kind: str
    paths: tuple[str, ...] = ()
    evidence: str = ""
    mode: str = "create"  # write: create | modify | append
    extra: tuple[str, ...] = ()  # packages / branches / names / flags


_PREFIX_CMDS = frozenset({"sudo", "env", "nohup", "time", "command", "exec", "stdbuf", "nice", "timeout", "builtin"})
_PREFIX_VALUE_OPTIONS = frozenset({"-n", "-u", "-g", "-k", "-s", "--signal", "--kill-after"})
_ASSIGN = re.compile(r"\A[A-Za-z_]\w*=")


@dataclass
class _Ctx:
    """What the parser knows while reading one action: the directory and the file texts written so far."""

    cwd: str | None
    files: dict[str, str]  # path as written -> last full text written (scripts we may see run later)
    open_file: str | None = None


def _join(cwd: str | None, path: str) -> str | None:
    if not path or "$" in path or "`" in path or path in ("-", "/dev/stdout", "/dev/stderr"):
        return None
    if path.startswith("~"):
        return path
    if not path.startswith("/"):
        if cwd is None:
            return None
        path = posixpath.join(cwd, path) if cwd else path
    norm = posixpath.normpath(path)
    if norm.startswith("../") or norm == "..":
        return "~outside/" + norm  # above the working tree
    return "" if norm == "." else norm


def _paths(cwd: str | None, items: Iterable[str]) -> tuple[str, ...]:
    """The paths of ``items`` that can be read (no variables, no standard streams)."""
    return tuple(p for p in (_join(cwd, a) for a in items) if p is not None)


def _strip_prefix(words: list[str]) -> list[str]:
    """The command proper: without variable assignments, shell keywords and wrappers (``timeout 5``, ``sudo``)."""
    words = list(words)
    while words:
        w = words[0]
        if _ASSIGN.match(w) or w in _KEYWORDS:
            words.pop(0)
            continue
        if w in _PREFIX_CMDS:
            words.pop(0)
            while words and (
                words[0].startswith("-") or _ASSIGN.match(words[0]) or re.fullmatch(r"\d+(?:\.\d+)?[smhd]?", words[0])
            ):
                option = words.pop(0)
                if option in _PREFIX_VALUE_OPTIONS and words:
                    words.pop(0)
            continue
        break
    return words


def _options(args: list[str], with_value: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """Split args into (options, operands); options in ``with_value`` take the next word; ``--`` ends options."""
    takes = set(with_value)
    opts: list[str] = []
    operands: list[str] = []
    value_next = ended = False
    for a in args:
        if value_next:
            value_next = False
            opts.append(a)
        elif ended or a == "-" or not a.startswith("-"):
            operands.append(a)
        elif a == "--":
            ended = True
        else:
            opts.append(a)
            value_next = a in takes
    return opts, operands


def _inplace_suffix(args: list[str]) -> str | None:
    """The backup suffix of ``sed``/``perl`` in-place editing ("" for none); None when not editing in place."""
    for a in args:
        if a == "--":
            break
        if a.startswith("--in-place"):
            return a.partition("=")[2]
        m = re.fullmatch(r"-(?!-)[a-zA-Z]*?i(\S*)", a)
        if m and not a.startswith("-e"):
            return m.group(1) if not m.group(1).isalpha() else ""
    return None


def _strip_level(opts: list[str], default: int) -> int:
    for k, o in enumerate(opts):
        m = re.fullmatch(r"-p(\d+)", o)
        if m:
            return int(m.group(1))
        if o == "-p" and k + 1 < len(opts) and opts[k + 1].isdigit():
            return int(opts[k + 1])
    return default


def _patch_files(text: str, strip: int) -> list[str]:
    """Files a unified diff changes (``+++`` lines, ``diff --git`` headers), with ``strip`` leading parts removed."""
    out = [m.group(2) for m in re.finditer(r"^diff --git a/(\S+) b/(\S+)", text, re.M)]
    if not out:
        for m in re.finditer(r"^\+\+\+ ([^\t\n]+)", text, re.M):
            p = m.group(1).strip()
            if p == "/dev/null":
                continue
            parts = p.split("/")
            out.append("/".join(parts[strip:]) if len(parts) > strip else parts[-1])
    return list(dict.fromkeys(out))


def _change_ops(kind: str, paths: tuple[str, ...], evidence: str) -> list[_Op]:
    """``kind`` (a write or a revert) of files changed in place; nothing when no path could be read."""
    return [_Op(kind, paths, evidence, "modify")] if paths else []


def _move_ops(kind: str, operands: tuple[str, ...], evidence: str) -> list[_Op]:
    if len(operands) < 2:
        return []
    *sources, dst = operands
    into_dir = (
        len(sources) > 1
        or dst.endswith("/")
        or ("." not in posixpath.basename(dst) and "." in posixpath.basename(sources[0]))
    )
    return [
        _Op(kind, (src, posixpath.join(dst, posixpath.basename(src)) if into_dir else dst), evidence) for src in sources
    ]
