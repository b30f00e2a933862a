"""Install anywhere: a wheel in a fresh virtualenv, outside the checkout, finds its model in the per-user data
folder after `offline-compress download-model --from-file`, counts with the tokenizer derived there, and
compresses a history.

The compression runs with --no-model: through the model it took 84 s of this test's 137 s on the 2-core machine
(load average 6), over the ~60 s a test may take; the model file is still resolved and verified from the data
folder by the installed package, and tests/test_e2e.py runs the model itself.

The fresh virtualenv sees the main environment's site-packages through a .pth file (so llama-cpp-python is not
compiled again) and gets only our wheel, with --no-deps. A .pth-added folder's own .pth files are not run, so
the checkout's editable install there stays inert: the test checks that `offline_compress` is the wheel's copy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO

from offline_compress.model_files import manifest_entries
from offline_compress.summary.schema import CompressedContext

HISTORY = FIXTURES / "mini-swe-agent" / "github_issue.traj.json"


def _run(args: list[str], *, env: dict[str, str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv holding only our wheel (built from a copy of the sources, so the checkout stays clean)."""
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "offline_compress", src / "offline_compress", ignore=shutil.ignore_patterns("__pycache__"))
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp / "dist"),
            str(src),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    wheel = next((tmp / "dist").glob("offline_compress-*.whl"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert install.returncode == 0, install.stderr
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "zz_main_environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


@pytest.fixture()
def user_env(tmp_path: Path) -> dict[str, str]:
    """A user with an empty home and data folder, no model folder set, nothing of the checkout on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OFFLINE_COMPRESS_", "PYTHON", "XDG_"))}
    env.update(HOME=str(tmp_path / "home"), XDG_DATA_HOME=str(tmp_path / "data"))
    (tmp_path / "home").mkdir()
    return env


def test_wheel_in_a_fresh_venv_downloads_from_file_and_compresses(
    fresh_venv: Path, user_env: dict[str, str], tmp_path: Path, model_path: Path
) -> None:
    python, cli = fresh_venv / "bin" / "python", fresh_venv / "bin" / "offline-compress"
    cwd = tmp_path / "work"
    cwd.mkdir()
    where = _run(
        [str(python), "-c", "import offline_compress; print(offline_compress.__file__)"], env=user_env, cwd=cwd
    )
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(fresh_venv), where.stdout  # the wheel, not the checkout
    packaged = _run(
        [str(python), "-c", "from offline_compress.model_files import PACKAGE_MANIFEST as p; print(p.is_file())"],
        env=user_env,
        cwd=cwd,
    )
    assert packaged.stdout.strip() == "True", packaged.stderr  # the manifest ships inside the wheel

    # Nothing installed yet: one clear line that names the folders searched and the command to run.
    # Nothing installed yet. The extractive default loads no model, but it counts tokens with the tokenizer
    # derived from the model at download: one clear line saying what to run.
    extractive = _run([str(cli), "compress", str(HISTORY)], env=user_env, cwd=cwd)
    assert extractive.returncode == 2 and "Traceback" not in extractive.stderr
    assert (
        extractive.stderr.strip()
        .splitlines()[-1]
        .startswith("offline-compress: error: no target tokenizer for the default model: model gemma-3-270m-q4_k_m")
    )
    assert "run `offline-compress download-model`" in extractive.stderr
    missing = _run([str(cli), "compress", str(HISTORY), "--model", "default"], env=user_env, cwd=cwd)
    assert missing.returncode == 2
    last = missing.stderr.strip().splitlines()[-1]
    assert "Traceback" not in missing.stderr
    models = tmp_path / "data" / "offline_compress" / "models"
    assert last.startswith(
        "offline-compress: error: model gemma-3-270m-q4_k_m (gemma-3-270m-q4_k_m.gguf) is not installed"
    )
    assert f"searched {models}" in last and "run `offline-compress download-model`" in last

    default, entries = manifest_entries()
    digest = entries[default].sha256
    got = _run(
        [str(cli), "download-model", "--from-file", str(model_path.resolve()), "--sha256", digest],
        env=user_env,
        cwd=cwd,
        timeout=600,
    )
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == str(models / entries[default].file)
    assert (models / entries[default].file).stat().st_size == entries[default].size
    assert (models / entries[default].file.replace(".gguf", ".tokenizer.json")).is_file()
    assert not (models / "manifest.local.json").exists()  # the default model is in the packaged manifest

    again = _run(
        [str(cli), "download-model", "--from-file", str(model_path.resolve()), "--sha256", digest],
        env=user_env,
        cwd=cwd,
    )
    assert again.returncode == 0 and "already present and verified" in again.stderr

    counted = _run([str(cli), "count", str(HISTORY)], env=user_env, cwd=cwd)
    assert counted.returncode == 0, counted.stderr
    assert json.loads(counted.stdout)["messages"] == 22

    resolved = _run(
        [str(python), "-c", "from offline_compress.model_files import resolve_model; print(resolve_model())"],
        env=user_env,
        cwd=cwd,
    )
    assert resolved.stdout.strip() == str(models / entries[default].file), resolved.stderr  # found and verified

    done = _run([str(cli), "compress", str(HISTORY), "-o", "summary.json"], env=user_env, cwd=cwd)  # the default
    assert done.returncode == 0, done.stderr
    summary = CompressedContext.model_validate_json((cwd / "summary.json").read_text())
    assert summary.user_constraints and summary.tool_calls_summary is not None
