"""The import graph: the runtime path never loads the evaluation code, and the evaluator's scoring never loads the
code it scores (each checked in a fresh interpreter, by the modules it ends up holding)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def modules_after(statement: str) -> set[str]:
    """The ``offline_compress`` modules a fresh interpreter holds after running ``statement``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('offline_compress'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("module", ["offline_compress", "offline_compress.compressor", "offline_compress.hook",
                                    "offline_compress.cli"])
def test_the_runtime_path_does_not_import_the_evaluation_code(module: str) -> None:
    loaded = modules_after(f"import {module}")
    assert module in loaded  # the import ran in the tree under test
    assert not {m for m in loaded if m.startswith("offline_compress.evaluation")}


def test_the_public_face_loads_without_evaluation_code() -> None:
    loaded = modules_after("import offline_compress as oc\noc.Compressor, oc.CompactionHook, oc.compress_context")
    assert {"offline_compress.compressor", "offline_compress.hook"} <= loaded
    assert not {m for m in loaded if m.startswith("offline_compress.evaluation")}


def test_the_scoring_modules_import_neither_the_extractor_nor_the_compressors_checks() -> None:
    modules = ["summary_eval", "scoring", "reference", "grounding", "canaries"]
    loaded = modules_after("\n".join(f"import offline_compress.evaluation.{m}" for m in modules))
    assert {f"offline_compress.evaluation.{m}" for m in modules} <= loaded
    forbidden = {m for m in loaded if m == "offline_compress.extract" or m.startswith("offline_compress.extract.")}
    forbidden |= loaded & {"offline_compress.ground", "offline_compress.compressor", "offline_compress.cli"}
    assert not forbidden


def test_only_the_explanation_of_a_miss_imports_the_extractor() -> None:
    loaded = modules_after("import offline_compress.evaluation.explain")
    assert "offline_compress.extract.constraints" in loaded


def test_the_evaluation_modules_do_not_import_the_cli() -> None:
    modules = sorted(p.stem for p in (REPO / "offline_compress" / "evaluation").glob("*.py") if p.stem != "__init__")
    assert {"summary_eval", "bench", "scoring"} <= set(modules)
    loaded = modules_after("\n".join(f"import offline_compress.evaluation.{m}" for m in modules))
    assert "offline_compress.cli" not in loaded


def test_old_extract_imports_keep_working() -> None:
    from offline_compress import extract
    from offline_compress.extract import conventions, facts

    assert extract.extract_facts is facts.extract_facts and extract.is_tool_output is conventions.is_tool_output
    assert set(extract.__all__) >= {"Facts", "ToolEvent", "Constraint", "extract_facts", "extract_tool_events",
                                    "extract_constraints", "is_tool_output", "classify_result", "parse_shell"}
