"""Shared fixtures: the target model, llama.cpp's vocabulary (loaded once), our derived tokenizer, and the
fixture trajectories as OpenAI-format histories. A missing model or llama.cpp FAILS the tests (no skipping):
the token counts are only meaningful against the real target."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

# An internal error raises in the tests (the hook and the CLI would otherwise log it and hand the history back, issue
# 45): a test of that behaviour removes the variable itself.
os.environ["OFFLINE_COMPRESS_STRICT"] = "1"

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
# The collection of real trajectories beside the checkout (../shared); OFFLINE_COMPRESS_SHARED points elsewhere
# (a git worktree sits one level deeper). Tests that need it skip when it is absent, as in CI.
SHARED_TRAJECTORIES = Path(os.environ.get("OFFLINE_COMPRESS_SHARED") or REPO.parent / "shared") / "trajectories"


@pytest.fixture(scope="session")
def model_path() -> Path:
    from offline_compress.errors import ModelFileError
    from offline_compress.model_files import resolve_model

    try:
        return resolve_model()
    except ModelFileError as err:
        pytest.fail(f"the target model is required for these tests: {err}", pytrace=False)


@pytest.fixture(scope="session")
def llama_vocab(model_path: Path) -> Iterator[Any]:
    """llama.cpp with only the vocabulary loaded: the reference tokenizer."""
    try:
        import llama_cpp
    except ImportError as err:
        pytest.fail(f"llama-cpp-python is required as the reference tokenizer: {err}", pytrace=False)
    from offline_compress.engine.llamacpp import quiet_null_files

    quiet_null_files()  # llama-cpp-python's /dev/null files, closed: nothing printed when the test process exits
    llama = llama_cpp.Llama(str(model_path), vocab_only=True, verbose=False)
    yield llama
    llama.close()


@pytest.fixture(scope="session")
def target_tokenizer(model_path: Path) -> Any:
    from offline_compress.tokens.gguf import load_target_tokenizer

    return load_target_tokenizer(model_path)


@pytest.fixture(scope="session")
def agreement_script() -> ModuleType:
    """scripts/check_tokenizer_agreement.py as a module (its text collection is what the tests check)."""
    path = REPO / "scripts" / "check_tokenizer_agreement.py"
    spec = importlib.util.spec_from_file_location("check_tokenizer_agreement", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def history_of(path: Path) -> list[dict[str, Any]]:
    """A fixture trajectory as OpenAI-format dicts, through the project's own importers."""
    from offline_compress.formats import load_history

    return [m.to_openai() for m in load_history(path)]


def fixture_files() -> list[Path]:
    return sorted(
        p
        for p in FIXTURES.rglob("*")
        if p.suffix in (".json", ".traj", ".md") and not p.name.upper().startswith(("LICENSE", "README", "ATTRIBUTION"))
    )


@pytest.fixture(scope="session")
def fixture_histories() -> dict[str, list[dict[str, Any]]]:
    return {p.name: history_of(p) for p in fixture_files()}


@pytest.fixture(scope="session")
def compressor(model_path: Path) -> Any:
    """The real compressor (model loaded and grammar compiled once per test session)."""
    from offline_compress.compressor import Compressor

    return Compressor(model_path)


@pytest.fixture(scope="session")
def extractive_compressor() -> Any:
    """The compressor without a model (extractive: deterministic, milliseconds)."""
    from offline_compress.compressor import Compressor

    return Compressor(None)


@pytest.fixture(scope="session")
def requests_history() -> list[dict[str, Any]]:
    """mini-swe-agent's psf__requests-2317 run (68 messages, ~17k tokens) as OpenAI-format dicts."""
    return history_of(FIXTURES / "mini-swe-agent" / "psf__requests-2317.traj.json")
