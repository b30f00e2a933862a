"""Files: finding the history files under folders, naming them, and writing outputs (never half-written)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .errors import InputError

HISTORY_SUFFIXES = (".json", ".traj", ".jsonl", ".md")
NOT_HISTORIES = ("LICENSE", "README", "ATTRIBUTION", "NOTICE", "RESULTS_SUMMARY")  # name prefixes, upper case


def history_name(path: Path) -> str:
    """A history file's name without its format suffixes: ``django-11163.traj.json.gz`` -> ``django-11163``."""
    name = path.name
    for suffix in (".gz", ".traj.json", ".traj", ".json", ".jsonl", ".md"):
        name = name.removesuffix(suffix)
    return name.removesuffix(".traj")


def find_history_files(paths: Sequence[str | Path]) -> list[Path]:
    """History files under ``paths`` (folders walked, sorted; licence/readme files skipped), each once."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            for f in sorted(x for x in p.rglob("*") if x.is_file()):
                name = f.name.removesuffix(".gz")
                if name.endswith(HISTORY_SUFFIXES) and not name.upper().startswith(NOT_HISTORIES):
                    out.append(f)
        elif p.is_file():
            out.append(p)
        else:
            raise InputError("no such file or directory", source=str(p))
    unique: dict[Path, Path] = {}
    for f in out:
        unique.setdefault(f.resolve(), f)  # each file once, by its resolved path, first spelling kept
    return list(unique.values())


def write_atomic(path: Path, text: str) -> None:
    """Write to a temporary file beside ``path`` and rename it: never a half-written output."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
