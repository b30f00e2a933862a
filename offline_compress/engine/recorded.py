"""Recorded completions as a backend (tests and evaluation, offline and deterministic): ``RecordedBackend(path)``
answers each prompt with the completion recorded for it, keyed by the digest of (prefix, suffix, schema).

The recordings file is JSON in the repository::

    {"about": "...", "recordings": {"<digest>": {"completion": {...} or "raw text", "writer": "...", ...}}}

A prompt with no recording is an error that names its digest (``RecordingMissing``). With ``export_to=FOLDER``
it is written there for a writer instead (``<digest>.prompt.md`` to read, ``<digest>.request.json`` with the exact
prefix, suffix and schema), and the run stops (``WriterNeeded``). A writer, a capable model working from files,
writes ``<digest>.completion.json``; ``import_completions`` (``python -m offline_compress.engine.recorded import
FOLDER RECORDINGS --writer "..."``) checks each against its schema and stores it, and the run is repeated. A
later compaction's prompt holds the earlier one's summary, so a run with several compactions takes a round each.

``OFFLINE_COMPRESS_RECORDED=RECORDINGS`` (and ``OFFLINE_COMPRESS_EXPORT=FOLDER``) makes the default compressor, the
one a ``CompactionHook`` builds when given none, write with such a backend (``from_environment``): an evaluation
that builds its own hooks runs the written-state mode without a change of its code.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import BackendError, OfflineCompressError
from .base import Generation, PromptTooLongError

RECORDED_ENV = "OFFLINE_COMPRESS_RECORDED"
EXPORT_ENV = "OFFLINE_COMPRESS_EXPORT"
N_CTX_ENV = "OFFLINE_COMPRESS_RECORDED_N_CTX"
DEFAULT_N_CTX = 32_768  # the window of a served agent model the prompts are split for (a part of a long region each)

WRITER_BRIEF = """# Prompts waiting for a writer

Each `<digest>.prompt.md` here is a prompt the compressor sent to a model (it is the whole prompt: read it, nothing
else). For each one without a `<digest>.completion.json`:

1. Read `<digest>.prompt.md` and do what it asks, as the model it was sent to.
2. Write ONE JSON document, valid under the `schema` of `<digest>.request.json`, to `<digest>.completion.json`
   (UTF-8; no Markdown fence, no comment).

Then store them and run again:

    python -m offline_compress.engine.recorded import {folder} {recordings} \\
        --writer "written by <model> acting as the recorded writer"
"""


class RecordingMissing(BackendError):
    """No completion is recorded for a prompt (and no export folder was given)."""


class RecordingError(OfflineCompressError, ValueError):
    """A recordings file or a written completion that cannot be used: what is wrong and in which file."""


class WriterNeeded(BaseException):  # noqa: N818 - a stop, not an error
    """The run stops: a prompt was exported for a writer. A ``BaseException`` on purpose, as pytest's own
    outcomes: the hook answers any ``Exception`` of a compaction with the caller's history (``safe_step``), and an
    export round must stop instead of going on without the completion."""

    def __init__(self, digest: str, folder: Path, recordings: Path) -> None:
        self.digest, self.folder, self.recordings = digest, folder, recordings
        super().__init__(
            f"the prompt {digest} has no recorded completion: exported to {folder}/{digest}.prompt.md for a writer. "
            f"Write {digest}.completion.json there ({folder}/WRITER.md says how), then run "
            f"`python -m offline_compress.engine.recorded import {folder} {recordings} --writer '...'` and run again"
        )


def digest(prefix: str, suffix: str, schema: dict[str, Any]) -> str:
    """The key of a prompt: SHA-256 of (prefix, suffix, schema) as canonical JSON, its first 20 hex digits."""
    canonical = json.dumps([prefix, suffix, schema], ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:20]


def load_recordings(path: Path) -> dict[str, Any]:
    """The recordings file as a dict (an absent file: none recorded yet)."""
    if not path.exists():
        return {"recordings": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise RecordingError(f"{path}: not a readable recordings file ({err})") from err
    if not isinstance(data, dict) or not isinstance(data.get("recordings"), dict):
        raise RecordingError(f"{path}: a recordings file is an object with a 'recordings' object")
    return data


def _completion_text(entry: Any) -> str:
    """The text a recording answers with: a raw text as the model wrote it, or a JSON document (written compact)."""
    completion = entry.get("completion") if isinstance(entry, dict) else None
    if isinstance(completion, str):
        return completion
    return json.dumps(completion, ensure_ascii=False, separators=(",", ":"))


class RecordedBackend:
    """A ``Backend`` whose completions come from a recordings file (see the module docstring). Tokens are counted by
    the target's tokenizer (the embedded Gemma 3's), so prompts are split as for a Gemma 3 server of ``n_ctx``."""

    instruct = False  # a server applies its chat template: the prompt is plain text

    def __init__(
        self, path: str | Path, *, export_to: str | Path | None = None, n_ctx: int = DEFAULT_N_CTX, counter: Any = None
    ) -> None:
        self.path = Path(path)
        self.export_to = Path(export_to) if export_to is not None else None
        self.n_ctx = n_ctx
        self._counter = counter
        self._recordings = load_recordings(self.path)["recordings"]
        self.name = f"recorded completions ({self.path.name})"

    def count(self, text: str) -> int:
        if self._counter is None:
            from ..tokens.counter import default_counter

            self._counter = default_counter()
        return int(self._counter.count_text(text))

    def close(self) -> None:
        """Nothing to free."""

    def generate(
        self, prefix: str, suffix: str, schema: dict[str, Any], max_tokens: int, repeat_penalty: float = 1.0
    ) -> Generation:
        """The recorded completion of ``prefix + suffix`` under ``schema``. Raises ``PromptTooLongError`` as a
        server of ``n_ctx`` would, ``RecordingMissing`` or (exporting) ``WriterNeeded`` when none is recorded."""
        prompt_tokens = self.count(prefix + suffix) + 1  # + BOS
        if prompt_tokens + max_tokens > self.n_ctx:
            raise PromptTooLongError(
                f"prompt of {prompt_tokens} tokens + {max_tokens} output tokens exceeds n_ctx={self.n_ctx} "
                f"({self.name})"
            )
        key = digest(prefix, suffix, schema)
        if key not in self._recordings:
            self._recordings = load_recordings(self.path)["recordings"]  # written by an import since
        if key not in self._recordings:
            if self.export_to is None:
                raise RecordingMissing(
                    f"{self.path}: no completion recorded for the prompt {key} (pass export_to=FOLDER, or set "
                    f"{EXPORT_ENV}=FOLDER, to export it for a writer)"
                )
            export(self.export_to, key, prefix, suffix, schema, max_tokens, self.path)
            raise WriterNeeded(key, self.export_to, self.path)
        text = _completion_text(self._recordings[key])
        generated = self.count(text)
        if generated > max_tokens:  # as a server would: the document is cut at max_tokens (then invalid JSON)
            text, generated = text[: len(text) * max_tokens // generated], max_tokens
        return Generation(text=text, prompt_tokens=prompt_tokens, generated_tokens=generated)


def export(
    folder: Path, key: str, prefix: str, suffix: str, schema: dict[str, Any], max_tokens: int, recordings: Path
) -> None:
    """Write a prompt for a writer: ``<key>.prompt.md`` (to read), ``<key>.request.json`` (exact), ``WRITER.md``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{key}.prompt.md").write_text(prefix + suffix, encoding="utf-8")
    request = {"digest": key, "prefix": prefix, "suffix": suffix, "schema": schema, "max_tokens": max_tokens}
    (folder / f"{key}.request.json").write_text(json.dumps(request, ensure_ascii=False, indent=1), encoding="utf-8")
    (folder / "WRITER.md").write_text(WRITER_BRIEF.format(folder=folder, recordings=recordings), encoding="utf-8")


def validate_completion(text: str, schema: dict[str, Any]) -> Any:
    """The completion as a JSON value, if it is valid under ``schema``; else ``RecordingError`` naming the field.
    It is validated by the model the schema was made from (one of the compressor's three)."""
    from ..summary.draft import Draft, draft_json_schema
    from ..summary.written import StateCheck, WrittenState, check_json_schema, written_json_schema

    known = ((WrittenState, written_json_schema()), (StateCheck, check_json_schema()), (Draft, draft_json_schema()))
    model = next((model for model, made in known if schema == made), None)
    if model is None:
        raise RecordingError("the request's schema is not the written state's, its check's or the draft's (older?)")
    try:
        return model.model_validate_json(text).model_dump(mode="json")
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "document"
        raise RecordingError(f"{where}: {first['msg']}") from err


def import_completions(folder: str | Path, recordings: str | Path, *, writer: str) -> tuple[list[str], list[str]]:
    """Store every ``<digest>.completion.json`` of ``folder`` that is valid under its request's schema into the
    recordings file (created if absent). Returns (the digests stored, one line per completion refused)."""
    from ..tokens.counter import default_counter

    folder, recordings = Path(folder), Path(recordings)
    data = load_recordings(recordings)
    counter = default_counter()
    stored, refused = [], []
    for request_path in sorted(folder.glob("*.request.json")):
        key = request_path.name[: -len(".request.json")]
        done = folder / f"{key}.completion.json"
        if not done.exists():
            continue
        try:
            request = json.loads(request_path.read_text(encoding="utf-8"))
            if digest(request["prefix"], request["suffix"], request["schema"]) != key:
                raise RecordingError("the request does not match its digest (edited after the export?)")
            value = validate_completion(done.read_text(encoding="utf-8").strip(), request["schema"])
        except (RecordingError, OSError, ValueError, KeyError) as err:
            refused.append(f"{done}: {err}")
            continue
        data["recordings"][key] = {
            "completion": value,
            "writer": writer,
            "recorded": datetime.date.today().isoformat(),
            # what it costs a server, in the target's tokens (docs/backends.md, "The written-state mode")
            "prompt_tokens": counter.count_text(request["prefix"] + request["suffix"]) + 1,
            "completion_tokens": counter.count_text(_completion_text({"completion": value})),
        }
        stored.append(key)
    if stored:
        data["recordings"] = dict(sorted(data["recordings"].items()))
        text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
        partial = recordings.with_name(recordings.name + ".partial")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, recordings)  # never a half-written recordings file
    return stored, refused


def from_environment() -> RecordedBackend | None:
    """The backend ``OFFLINE_COMPRESS_RECORDED`` (``_EXPORT``, ``_RECORDED_N_CTX``) asks for, or None."""
    path = os.environ.get(RECORDED_ENV, "").strip()
    if not path:
        return None
    folder = os.environ.get(EXPORT_ENV, "").strip() or None
    n_ctx = os.environ.get(N_CTX_ENV, "").strip()
    return RecordedBackend(path, export_to=folder, n_ctx=int(n_ctx) if n_ctx else DEFAULT_N_CTX)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m offline_compress.engine.recorded", description="recorded completions: import, pending"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    imp = sub.add_parser("import", help="store the valid completions of an export folder in a recordings file")
    imp.add_argument("folder", type=Path)
    imp.add_argument("recordings", type=Path)
    imp.add_argument("--writer", required=True, help='"written by <model> acting as the recorded writer, <date>"')
    pending = sub.add_parser("pending", help="list the exported prompts that have no completion yet")
    pending.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    if args.command == "pending":
        for request in sorted(args.folder.glob("*.request.json")):
            key = request.name[: -len(".request.json")]
            if not (args.folder / f"{key}.completion.json").exists():
                print(args.folder / f"{key}.prompt.md")
        return 0
    try:
        stored, refused = import_completions(args.folder, args.recordings, writer=args.writer)
    except RecordingError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for key in stored:
        print(f"stored {key}")
    for line in refused:
        print(f"refused {line}", file=sys.stderr)
    return 2 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
