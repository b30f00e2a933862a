"""The working tree: each file's version (start, copy, new content, absent) across the actions."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from .rules import Rule

# ----------------------------------------------------------------------------------------- working tree

_HEAD = "head"
_ABSENT = ("absent",)
_DIFF_HEADER = re.compile(r"^diff --git a/(\S+) b/(\S+)[ \t]*$", re.M)
_PLAIN_DIFF_OPTIONS = frozenset({"--cached", "--staged", "HEAD", "--no-color", "--no-ext-diff", "--no-pager"})
_CUT_SHORT = re.compile(r"elided|truncated|too long|omitted|\.\.\.\s*\(\d+ (?:more )?(?:lines|characters)", re.I)


class _Tree:
    """Versions of the files the history touched, relative to their content at the start.

    ``existed[k]`` is True when the file is known to have existed at the start (changed in place, deleted or
    restored by git before anything created it), None when its first event created it: such a file is taken to
    be untracked, so being absent again means unchanged."""

    def __init__(self) -> None:
        self.version: dict[str, tuple[str, ...]] = {}
        self.existed: dict[str, bool | None] = {}
        self.made_dirs: set[str] = set()
        self.stash: list[dict[str, tuple[str, ...]]] = []
        self.staged: set[str] = set()
        self.all_staged = False
        self.committed = False
        self._fresh = 0

    def find(self, path: str) -> str | None:
        """The key of a known file: "/testbed/a/b.py" and "a/b.py" name the same file."""
        if path in self.version:
            return path
        if path.startswith("/"):
            rel = [k for k in self.version if not k.startswith("/") and path.endswith("/" + k)]
            return max(rel, key=len) if rel else None
        absolute = [k for k in self.version if k.startswith("/") and k.endswith("/" + path)]
        return min(absolute, key=len) if absolute else None

    def key(self, path: str) -> str:
        found = self.find(path)
        if found is not None:
            return found
        self.version[path] = (_HEAD, path)
        self.existed[path] = None
        return path

    def keys_under(self, folder: str) -> list[str]:
        folder = folder.rstrip("/")
        if folder in ("", "."):
            return list(self.version)
        out = []
        for k in self.version:
            if k.startswith(folder + "/"):
                out.append(k)
            elif folder.startswith("/") and not k.startswith("/"):
                parts = folder.strip("/").split("/")
                if any(k.startswith("/".join(parts[j:]) + "/") for j in range(1, len(parts))):
                    out.append(k)
            elif not folder.startswith("/") and k.startswith("/") and f"/{folder}/" in k:
                out.append(k)
        return out

    def in_made_dir(self, path: str) -> bool:
        parent = posixpath.dirname(path.rstrip("/"))
        while parent not in ("", "/"):
            if parent in self.made_dirs:
                return True
            parent = posixpath.dirname(parent)
        return path.rstrip("/") in self.made_dirs

    def untouched(self, key: str) -> bool:
        return self.version[key] == (_HEAD, key) and self.existed.get(key) is None

    def differs(self, key: str) -> bool:
        v = self.version.get(key, (_HEAD, key))
        if v == (_HEAD, key):
            return False
        return not (v == _ABSENT and self.existed.get(key) is not True)

    def fresh(self) -> tuple[str, ...]:
        self._fresh += 1
        return ("new", str(self._fresh))

    def write(self, key: str, mode: str) -> None:
        if self.untouched(key) and mode != "create":
            self.existed[key] = True  # changed in place: it was there
        self.version[key] = self.fresh()

    def delete(self, key: str) -> None:
        if self.untouched(key):
            self.existed[key] = True  # removed before anything created it: it was there at the start
        self.version[key] = _ABSENT

    def revert(self, key: str) -> None:
        self.existed[key] = True
        self.version[key] = (_HEAD, key)

    def tracked(self, key: str) -> bool:
        return self.existed.get(key) is True


_NO_SUCH_FILE = re.compile(
    r"^(?:\S+: )?(?:cannot (?:remove|stat|touch|open|access) |can't read |can't open |cannot open )?"
    r"['\"‘`]?(?P<p>[^'\"’`:\n]+?)['\"’`]?: No such file or directory",
    re.M,
)


def _missing_paths(output: str | None) -> list[str]:
    """Paths a command's output says did not exist (``rm: cannot remove 'x': No such file or directory``)."""
    if not output:
        return []
    return [m.group("p").strip() for m in _NO_SUCH_FILE.finditer(output) if m.group("p").strip()]


def _same_file(path: str, named: str) -> bool:
    named = posixpath.normpath(named)
    return path == named or path.endswith("/" + named) or named.endswith("/" + path)


def _dir_like(path: str) -> bool:
    """A path that names a folder: ends with /, is the tree itself, or has no extension."""
    return path.endswith("/") or path in ("", ".") or "." not in posixpath.basename(path)


@dataclass
class _Hit:
    rule: Rule
    step: int
    evidence: str
    target: str
    final: bool = False
