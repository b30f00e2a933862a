"""Shared fixtures: the target model, llama.cpp's vocabulary (loaded once), our derived tokenizer, and the
fixture trajectories as OpenAI-format histories. A missing model or llama.cpp FAILS the tests (no skipping):
the token counts are only meaningful against the real target."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


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
    llama = llama_cpp.Llama(str(model_path), vocab_only=True, verbose=False)
    yield llama
    llama.close()


@pytest.fixture(scope="session")
def target_tokenizer(model_path: Path) -> Any:
    from offline_compress.gguf_tokenizer import load_target_tokenizer

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


def _openhands(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for ev in events:
        meta = ev.get("tool_call_metadata") or {}
        if "observation" in ev:
            msg = {"role": "tool", "content": str(ev.get("content", ""))}
            if meta.get("tool_call_id"):
                msg["tool_call_id"] = meta["tool_call_id"]
            if meta.get("function_name"):
                msg["name"] = meta["function_name"]
            out.append(msg)
        elif ev.get("source") == "user":
            out.append({"role": "user", "content": str(ev.get("message", ""))})
        else:
            msg = {"role": "assistant", "content": str(ev.get("message", ""))}
            if meta.get("function_name"):
                msg["tool_calls"] = [{"id": meta.get("tool_call_id"), "type": "function",
                                      "function": {"name": meta["function_name"],
                                                   "arguments": json.dumps(ev.get("args", {}))}}]
            out.append(msg)
    return out


def _aider(text: str) -> list[dict[str, Any]]:
    """'#### ' lines are the user, '> ' lines console output (given to the model as user text), the rest the
    assistant; consecutive lines of one role form one message."""
    out: list[dict[str, Any]] = []
    for line in text.splitlines(keepends=True):
        if line.startswith("# aider chat started"):
            continue
        role = "user" if line.startswith(("#### ", "> ")) else "assistant"
        if out and out[-1]["role"] == role:
            out[-1]["content"] += line
        else:
            out.append({"role": role, "content": line})
    return [m for m in out if m["content"].strip()]


def history_of(path: Path) -> list[dict[str, Any]]:
    """A fixture trajectory as OpenAI-format messages (a small importer, enough for counting tests)."""
    if path.suffix == ".md":
        return _aider(path.read_text(encoding="utf-8"))
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, list) and data and "role" not in data[0]:
        return _openhands(data)
    if isinstance(data, dict):
        data = data.get("messages") or [m for m in data.get("history", []) if not m.get("is_demo")]
    keep = ("role", "content", "tool_calls", "tool_call_id", "name")
    out = []
    for m in data:
        msg = {k: m[k] for k in keep if m.get(k) is not None}
        if msg.get("role") == "tool" and "tool_call_id" not in msg and m.get("tool_call_ids"):
            msg["tool_call_id"] = m["tool_call_ids"][0]
        out.append(msg)
    return out


def fixture_files() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*") if p.suffix in (".json", ".traj", ".md")
                  and not p.name.upper().startswith(("LICENSE", "README", "ATTRIBUTION")))


@pytest.fixture(scope="session")
def fixture_histories() -> dict[str, list[dict[str, Any]]]:
    return {p.name: history_of(p) for p in fixture_files()}


@pytest.fixture(scope="session")
def compressor(model_path: Path) -> Any:
    """The real compressor (model loaded and grammar compiled once per test session)."""
    from offline_compress.compressor import Compressor

    return Compressor(model_path)
