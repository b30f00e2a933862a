"""Where model files live and how they are verified: ``models/manifest.json`` (committed) lists known models
with size and sha256; ``models/manifest.local.json`` (git-ignored, written by ``scripts/download_model.sh``)
records models a user brought with ``--from-file`` or ``--url``. Nothing here touches the network."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from pydantic import BaseModel

from .errors import ModelFileError

MODEL_DIR_ENV = "OFFLINE_COMPRESS_MODEL_DIR"


class ModelEntry(BaseModel):
    name: str
    file: str
    size: int | None = None
    sha256: str
    source: str = ""
    description: str = ""


def model_dir() -> Path:
    """``$OFFLINE_COMPRESS_MODEL_DIR`` if set, else the repository's ``models/`` folder."""
    env = os.environ.get(MODEL_DIR_ENV)
    return Path(env) if env else Path(__file__).resolve().parent.parent / "models"


def _read_manifest(path: Path) -> tuple[str | None, list[ModelEntry]]:
    if not path.exists():
        return None, []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data.get("default"), [ModelEntry.model_validate(m) for m in data.get("models", [])]
    except (ValueError, TypeError) as err:
        raise ModelFileError(f"{path}: unreadable model manifest ({err})") from None


def manifest_entries(directory: Path | None = None) -> tuple[str, dict[str, ModelEntry]]:
    """(default model name, entries by name); local entries override committed ones."""
    directory = directory or model_dir()
    default, entries = _read_manifest(directory / "manifest.json")
    local_default, local = _read_manifest(directory / "manifest.local.json")
    by_name = {e.name: e for e in entries + local}
    name = os.environ.get("OFFLINE_COMPRESS_MODEL") or local_default or default
    if not name:
        raise ModelFileError(f"{directory}: no default model in manifest.json")
    return name, by_name


def sha256_of(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def resolve_model(model: str | Path | None = None, *, verify: bool = True) -> Path:
    """Path of a GGUF: an explicit path, a manifest name, or the default. Verified against the manifest
    (size always, sha256 when ``verify``); a missing or mismatched file raises ``ModelFileError``."""
    directory = model_dir()
    default, entries = manifest_entries(directory)
    if model is not None and (str(model).endswith(".gguf") or Path(model).exists()):
        path = Path(model)
        entry = next((e for e in entries.values() if e.file == path.name), None)
    else:
        name = str(model) if model is not None else default
        if name not in entries:
            raise ModelFileError(f"unknown model {name!r}; known: {', '.join(sorted(entries)) or 'none'}")
        entry = entries[name]
        path = directory / entry.file
    if not path.exists():
        raise ModelFileError(f"model file not found: {path} (run scripts/download_model.sh)")
    if entry is not None and verify:
        size = path.stat().st_size
        if entry.size is not None and size != entry.size:
            raise ModelFileError(f"{path}: size {size} does not match the manifest ({entry.size}); re-run scripts/download_model.sh")
        actual = sha256_of(path)
        if actual != entry.sha256:
            raise ModelFileError(f"{path}: sha256 {actual} does not match the manifest ({entry.sha256})")
    return path


def tokenizer_path_for(model_path: Path) -> Path:
    """The derived target tokenizer sits next to its GGUF: ``<name>.tokenizer.json``."""
    return model_path.with_name(model_path.name.removesuffix(".gguf") + ".tokenizer.json")
