"""Files: finding the history files under folders, naming them, and writing outputs (never half-written)."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .errors import InputError, OfflineCompressError

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


class OutputError(OfflineCompressError, OSError):
    """An output that cannot be written: which file, and why; nothing of it is left behind. An ``OSError`` too, so
    that callers of ``write_atomic`` that caught those still do."""


def write_atomic(path: Path, text: str) -> None:
    """Write to a temporary file beside ``path`` and rename it: never a half-written output. A device or a pipe
    (``/dev/null``, a FIFO) is written in place: renaming over it would replace it. Raises ``OutputError`` (what,
    where, why) when it cannot, with no temporary file left behind."""
    try:
        if os.path.isdir(path):  # os.replace would say only "Is a directory"
            raise IsADirectoryError(errno.EISDIR, _IS_A_FOLDER)
        if os.path.exists(path) and not os.path.isfile(path):
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        else:
            _replace(path, text)
    except OSError as err:
        raise _output_error(path, err) from None


def check_output(path: str | Path, *, folder: bool = False) -> None:
    """Raises ``OutputError`` when ``path`` (a file to write, or with ``folder`` a folder to write files into)
    cannot be written: a folder given for a file, a file where a folder must be, a folder that refuses new files
    (read-only, no permission). For the CLI to say so before any work, not after minutes of compressing; it
    creates nothing (a probe file is made in the nearest existing folder and removed)."""
    path = Path(path)
    try:
        if not folder and os.path.isdir(path):
            raise IsADirectoryError(errno.EISDIR, _IS_A_FOLDER)
        if not folder and os.path.exists(path) and not os.path.isfile(path):
            return  # a device or a pipe: written in place
        existing = _nearest_existing(path, folder)
        if existing is None:
            return
        if not os.path.isdir(existing):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(existing))
        fd, probe = tempfile.mkstemp(dir=existing, prefix=f".{path.name}.", suffix=".partial")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise _output_error(path, err, folder) from None


_IS_A_FOLDER = "is a folder (give the path of a file)"


def _replace(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _nearest_existing(path: Path, folder: bool) -> Path | None:
    """The folder the files or folders of output ``path`` would be made in: its own (``folder``) or its parent,
    or the nearest parent of that which exists."""
    return next((p for p in ([path] if folder else []) + list(path.parents) if os.path.exists(p)), None)


def _output_error(path: Path, err: OSError, folder: bool = False) -> OutputError:
    """``OutputError``: what could not be written, where, and why, naming the folder at fault where that is not
    the output's own (a parent that is a file, or one in which a missing folder could not be made)."""
    existing = _nearest_existing(path, folder)
    if existing is not None and not os.path.isdir(existing):  # mkdir says only "File exists" or "Not a directory"
        why = f"{existing} is a file, not a folder"
    else:
        why = err.strerror or str(err)
        if existing is not None and existing != (path if folder else path.parent):  # a folder to make was refused
            why += f" (in {existing})"
    return OutputError(f"cannot write {'into ' if folder else ''}{path}: {why}")


def write_output(text: str, out: str | Path | None) -> None:
    """What the command line writes: ``text`` to ``out`` (atomically, as ``write_atomic``) or to stdout, as UTF-8
    with each lone surrogate (text cut inside a UTF-16 pair, as real logs hold) written as its JSON escape
    ``\\udXXX``, as ``json.dumps`` writes it with ``ensure_ascii``: JSON reads it back as the same string."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")  # only surrogates cannot be UTF-8
    if out is not None:
        write_atomic(Path(out), text)
        return
    stdout = sys.stdout
    buffer = getattr(stdout, "buffer", None)
    if buffer is None:  # a text stream of the caller's (tests, redirect_stdout)
        stdout.write(text)
        return
    try:
        stdout.flush()
        buffer.write(text.encode("utf-8"))  # UTF-8 whatever the locale: JSON is UTF-8
        buffer.flush()
    except OSError as err:  # its reader went away (| head): one line, and no second error when Python exits
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stdout.fileno())
            os.close(devnull)
        raise OutputError(f"cannot write to stdout: {err.strerror or err}") from None
