"""Importers: turn a history file into canonical messages.

``load_history(path, fmt="auto")`` reads a file (or ``-`` for stdin) and returns ``list[Message]``;
``load_history_report`` also says what the importer skipped (damaged records) and left out (``Imported``);
``load_history_with_format`` / ``parse_history_with_format`` also return the name of the format that was read.
Each importer is a function ``(text, source) -> list[Message]`` that raises ``InputError`` when the text is not
in its format; ``auto`` tries them in order and, when none fits, reports every format tried and why it failed.

Formats (in ``auto`` order): ``mini-swe-agent`` (``.traj.json``), ``swe-agent`` (``.traj``), ``openhands``
(V0 event stream), ``openhands-eval`` (OpenHands' evaluation ``output.jsonl``: one object per instance;
``instance=`` picks one when there are several), ``codex`` (Codex CLI rollout JSONL), ``openhands-v1``
(OpenHands software-agent-sdk event stream: a folder of ``event-*.json`` files, or JSONL), ``moatless``
(Moatless Tools ``trajectory.json``: the final branch of its node tree), ``debug-gym`` (debug-gym run log),
``openhands-completions`` (OpenHands 0.15 litellm completion log), ``aider`` (markdown chat log),
``claude-code`` (Claude Code session JSONL), ``anthropic`` (Anthropic Messages body or message list), ``openai``
(JSON list / JSONL / ``{messages}``). mini-swe-agent comes before openai because its files also parse as plain
OpenAI messages: the messages are the same either way, but ``auto`` then names the agent.

Any of them may be gzip-compressed (``.gz``): the gzip magic number is what counts, not the name.
"""

from __future__ import annotations

import gzip
import logging
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

from ..errors import InputError
from ..history.messages import Message
from .aider import load_aider
from .anthropic import load_anthropic
from .claude_code import load_claude_code
from .codex import load_codex
from .debug_gym import load_debug_gym
from .imported import Imported, LoadedHistory
from .mini_swe_agent import load_mini_swe_agent
from .moatless import load_moatless
from .openai import decode_text, load_openai
from .openhands import load_openhands
from .openhands_completions import load_openhands_completions
from .openhands_eval import InstanceChoiceError, load_openhands_eval
from .openhands_v1 import load_openhands_v1
from .swe_agent import load_swe_agent

Importer = Callable[[str, str], "list[Message] | Imported"]
log = logging.getLogger(__name__)

# Order matters for "auto": specific formats first, the permissive OpenAI reader last.
IMPORTERS: dict[str, Importer] = {
    "mini-swe-agent": load_mini_swe_agent,
    "swe-agent": load_swe_agent,
    "openhands": load_openhands,
    "openhands-eval": load_openhands_eval,
    "codex": load_codex,  # Codex CLI rollout JSONL
    "openhands-v1": load_openhands_v1,  # OpenHands SDK (V1) events: an event folder, or JSONL
    "moatless": load_moatless,
    "debug-gym": load_debug_gym,
    "openhands-completions": load_openhands_completions,  # before openai: its files hold a messages list
    "aider": load_aider,
    "claude-code": load_claude_code,  # Claude Code session JSONL
    "anthropic": load_anthropic,  # before openai, which would read Anthropic blocks as content parts
    "openai": load_openai,
}


GZIP_MAGIC = b"\x1f\x8b"


def decompress(data: bytes, source: str) -> bytes:
    """``data`` itself, or its decompressed bytes when it starts with the gzip magic number (whatever the
    file is called: ``.traj.json.gz`` and a gzip stream piped to stdin both work)."""
    if not data.startswith(GZIP_MAGIC):
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as err:  # BadGzipFile is an OSError; a cut stream is an EOFError
        raise InputError(f"not a readable gzip file ({err or type(err).__name__})", source=source) from None


def read_source(path: str | Path) -> tuple[str, str]:
    """Read a file or ``-`` (stdin) as UTF-8 text, gzip-compressed or not; returns (text, source name for
    errors)."""
    if str(path) == "-":
        return decode_text(decompress(sys.stdin.buffer.read(), "<stdin>"), "<stdin>"), "<stdin>"
    p = Path(path)
    if p.is_dir():
        return read_event_folder(p), str(p)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", source=str(p)) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", source=str(p)) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", source=str(p)) from None
    return decode_text(decompress(data, str(p)), str(p)), str(p)


def _event_number(path: Path) -> tuple[int, str]:
    number = path.name.split("-")[1] if path.name.count("-") else ""
    return (int(number) if number.isdigit() else -1, path.name)


def _event_files(folder: Path) -> list[Path]:
    return [*folder.glob("event-*.json"), *folder.glob("event-*.json.gz")]


def read_event_folder(path: Path) -> str:
    """An OpenHands V1 events folder (``event_service/events``, or the conversation folder above it) as JSONL:
    its ``event-*.json`` files (gzip-compressed ones too) in event-number order, one line each."""
    folder = next((d for d in (path, path / "event_service" / "events") if _event_files(d)), None)
    if folder is None:
        raise InputError("is a directory without OpenHands V1 event files (event-*.json)", source=str(path))
    lines = []
    for file in sorted(_event_files(folder), key=_event_number):
        try:
            text = decode_text(decompress(file.read_bytes(), str(file)), str(file))
        except (InputError, OSError) as err:  # a line that is not JSON: the importer skips and reports it
            lines.append(f"<unreadable event file {file.name}: {getattr(err, 'problem', None) or err}>")
            continue
        # Valid JSON holds line breaks only as whitespace between tokens: one file stays one line.
        lines.append(text.strip().replace("\r", " ").replace("\n", " "))
    return "\n".join(lines)


def parse_history_report(text: str, source: str, fmt: str = "auto", *, instance: str | None = None) -> LoadedHistory:
    """Parse ``text`` as ``fmt`` (or the first format that fits, for ``auto``): the format's name, the messages,
    and what the importer skipped (damaged input) or left out. ``instance`` names the instance of an OpenHands
    evaluation output that holds several."""
    if fmt != "auto" and fmt not in IMPORTERS:
        raise InputError(f"unknown format {fmt!r} (known: auto, {', '.join(IMPORTERS)})", source=source)
    try:
        name, result = _parse(text, source, fmt, instance)
    except RecursionError:  # a structure nested deeper than the stack (copying or validating it)
        raise InputError("nested too deeply to read", source=source) from None
    if isinstance(result, Imported):
        return LoadedHistory(name, result.messages, result.skipped, result.notes)
    return LoadedHistory(name, result)


def parse_history_with_format(
    text: str, source: str, fmt: str = "auto", *, instance: str | None = None
) -> tuple[str, list[Message]]:
    """``parse_history_report`` as (format name, messages); skipped input is logged as a warning."""
    loaded = parse_history_report(text, source, fmt, instance=instance)
    if loaded.skipped:
        log.warning("%s: skipped %d damaged records (%s)", source, len(loaded.skipped), "; ".join(loaded.skipped[:3]))
    return loaded.format, loaded.messages


def _parse(text: str, source: str, fmt: str, instance: str | None) -> tuple[str, list[Message] | Imported]:
    if instance is not None:
        if fmt not in ("auto", "openhands-eval"):
            raise InputError(f"--instance applies to OpenHands evaluation output, not to {fmt!r}", source=source)
        return "openhands-eval", load_openhands_eval(text, source, instance)
    if fmt != "auto":
        return fmt, IMPORTERS[fmt](text, source)
    failures: list[str] = []
    position = None
    looks_json = text.lstrip().startswith(("{", "["))
    for name, importer in IMPORTERS.items():
        try:
            return name, importer(text, source)
        except InstanceChoiceError:
            raise  # the format fits; the caller must pick an instance
        except InputError as err:
            failures.append(f"{name}: {_without_source(err)}")
            if looks_json and position is None and err.position and err.problem.startswith("malformed JSON"):
                position = err.position  # a truncated/broken JSON file: say where it breaks
    raise InputError("no known format fits; tried " + "; ".join(failures), source=source, position=position)


def _without_source(err: InputError) -> str:
    """An importer's error, less the file name (the combined error names it once)."""
    where = [w for w in (err.position, None if err.index is None else f"message {err.index}") if w]
    if err.field:
        where.append(f"field {err.field!r}")
    return f"{', '.join(where)}: {err.problem}" if where else err.problem


def parse_history(text: str, source: str, fmt: str = "auto", *, instance: str | None = None) -> list[Message]:
    """Parse ``text`` as ``fmt`` (``auto``: the first format that fits) into messages."""
    return parse_history_with_format(text, source, fmt, instance=instance)[1]


def load_history_report(path: str | Path, fmt: str = "auto", *, instance: str | None = None) -> LoadedHistory:
    """Read a file (or ``-`` for stdin): its format, messages, and what was skipped or left out."""
    text, source = read_source(path)
    return parse_history_report(text, source, fmt, instance=instance)


def load_history_with_format(
    path: str | Path, fmt: str = "auto", *, instance: str | None = None
) -> tuple[str, list[Message]]:
    """Read a file (or ``-`` for stdin); returns (format name, messages)."""
    text, source = read_source(path)
    return parse_history_with_format(text, source, fmt, instance=instance)


def load_history(path: str | Path, fmt: str = "auto", *, instance: str | None = None) -> list[Message]:
    """Read a file (or ``-`` for stdin) as ``fmt`` (``auto`` by default) into messages; ``instance`` picks one
    instance of an OpenHands evaluation output that holds several."""
    return load_history_with_format(path, fmt, instance=instance)[1]
