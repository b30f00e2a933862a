"""The layout's boundaries (issue 19): the evaluation lives beside the package and outside the wheel; the library
never imports it and reads no repository path; the scoring never loads the code it scores; folders by concern,
each with a docstring; no module over 600 lines; the public names stay importable from ``offline_compress``."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "offline_compress"
FOLDERS = (
    "history",
    "hook",
    "formats",
    "extract",
    "summary",
    "tokens",
    "engine",
    "secrets",
    "archive",
    "contradictions",
    "integrations",
    "cli",
)
PUBLIC = (
    "BackendError",
    "CompactionHook",
    "CompactionMetrics",
    "CompressedContext",
    "CompressionDecision",
    "CompressionResult",
    "Compressor",
    "EmptyHistoryError",
    "InputError",
    "Message",
    "ModelFileError",
    "OfflineCompressError",
    "TokenCounter",
    "TokenizerError",
    "TriggerConfig",
    "compress_context",
    "compressed_context_json_schema",
    "count_contradictions",
    "count_tokens",
    "evaluate_compression",
    "load_history",
)


def modules_after(statement: str, prefix: str | None = "offline_compress") -> set[str]:
    """The modules named ``prefix`` or below it (``None``: every module) that a fresh interpreter holds after
    running ``statement``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    keep = "True" if prefix is None else f"m == {prefix!r} or m.startswith({prefix + '.'!r})"
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(m for m in sys.modules if {keep})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def package_modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def imported_names(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports (relative imports resolved), lazy imports included."""
    rel = path.relative_to(REPO).with_suffix("")
    here = list(rel.parts[:-1])
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)]
                mod = ".".join([*base, *([node.module] if node.module else [])])
            else:
                mod = node.module or ""
            out.add(mod)
            out |= {f"{mod}.{a.name}" for a in node.names}
    return out


# ------------------------------------------------------------------------------------------- the evaluation


@pytest.mark.parametrize(
    "module",
    [
        "offline_compress",
        "offline_compress.compressor",
        "offline_compress.hook.compaction_hook",
        "offline_compress.cli",
    ],
)
def test_the_runtime_path_does_not_import_the_evaluation_package(module: str) -> None:
    loaded = modules_after(f"import {module}", prefix=None)
    assert module in loaded  # the import ran in the tree under test
    assert not {m for m in loaded if m == "evaluation" or m.startswith("evaluation.")}


def test_no_library_module_imports_the_evaluation_package_even_lazily() -> None:
    offenders = {
        str(p.relative_to(REPO)): sorted(n for n in imported_names(p) if n.split(".")[0] == "evaluation")
        for p in package_modules()
    }
    assert not {k: v for k, v in offenders.items() if v}


def test_the_library_reads_no_repository_path() -> None:
    """Fixtures, ``eval/``, ``scripts/`` and ``../shared`` are the evaluation's. The one use of the package's own
    location is ``model_files``: the manifest that ships inside the package, and a development install's models
    folder (documented there)."""
    markers = ("tests/fixtures", "fixtures/", "eval/", "scripts/", "shared/", "trajectories/", "bench-results")
    for path in package_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        doc_nodes = {
            id(n.body[0].value)
            for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
            and n.body
            and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)
        }
        strings = [
            n.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in doc_nodes
        ]
        assert not [s for s in strings if any(m in s for m in markers)], path
        if "__file__" in path.read_text(encoding="utf-8"):
            assert path.name == "model_files.py", path


def test_the_wheel_holds_no_evaluation_or_benchmark_module(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("offline_compress-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "offline_compress/hook/compaction_hook.py" in names and "offline_compress/models_manifest.json" in names
    assert not [n for n in names if n.startswith("evaluation/") or "/evaluation/" in n or "bench" in n]


def test_the_user_cli_keeps_only_what_a_user_runs() -> None:
    from offline_compress.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert set(sub.choices) == {
        "count",
        "check",
        "compress",
        "batch",
        "recall",
        "show",
        "restore",
        "archive",
        "contradictions",
        "download-model",
    }
    from evaluation.__main__ import build_parser as evaluation_parser

    sub = next(a for a in evaluation_parser()._actions if a.dest == "command")
    assert set(sub.choices) == {
        "eval",
        "bench",
        "ab-replay",
        "ab-fits",
        "ab-contexts",
        "ab",
        "load-test",
        "reliability",
        "resume-qa",
    }


def test_the_scoring_modules_import_neither_the_extractor_nor_the_compressors_checks() -> None:
    modules = ["summary_eval", "scoring", "reference", "grounding", "canaries", "probes", "fitting"]
    modules.append("contexts")
    loaded = modules_after("\n".join(f"import evaluation.{m}" for m in modules))
    forbidden = {m for m in loaded if m == "offline_compress.extract" or m.startswith("offline_compress.extract.")}
    forbidden |= loaded & {
        "offline_compress.summary.ground",
        "offline_compress.compressor",
        "offline_compress.cli",
        "offline_compress.summary.pack",
        "offline_compress.summary.merge",
    }
    assert not forbidden


def test_only_the_explanation_of_a_miss_imports_the_extractor() -> None:
    loaded = modules_after("import evaluation.explain")
    assert "offline_compress.extract.constraints" in loaded


def test_the_evaluation_modules_do_not_import_the_user_cli() -> None:
    modules = sorted(p.stem for p in (REPO / "evaluation").glob("*.py") if not p.stem.startswith("__"))
    assert {"summary_eval", "bench", "scoring", "replay", "probes"} <= set(modules)
    loaded = modules_after("\n".join(f"import evaluation.{m}" for m in modules))
    assert not {m for m in loaded if m == "offline_compress.cli" or m.startswith("offline_compress.cli.")}


# ------------------------------------------------------------------------------------------- the package


def test_folders_by_concern_each_with_a_docstring_of_a_paragraph() -> None:
    for folder in FOLDERS:
        init = PACKAGE / folder / "__init__.py"
        assert init.is_file(), folder
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc.split()) >= 20, f"{folder}/__init__.py needs a paragraph saying what it holds"


def test_the_top_level_holds_the_faces_and_few_modules() -> None:
    top = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert top == [
        "__init__",
        "batch",
        "compressor",
        "download",
        "errors",
        "files",
        "model_files",
    ]


def test_no_module_is_over_600_lines() -> None:
    long = {
        str(p.relative_to(REPO)): n
        for p in package_modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert not long


# Floors, lowest first (issue 49: "data flows down"). A module imports only from its own floor or a lower one, lazy
# and type-checking imports included; a folder or a top-level module is one floor.
FLOORS = (
    "errors",
    "files",
    "model_files",
    "history",
    "tokens",
    "formats",
    "extract",
    "secrets",
    "contradictions",
    "summary",
    "engine",
    "archive",
    "compressor",
    "hook",
    "batch",
    "download",
    "integrations",
    "cli",
)


def floor_of(module: str) -> str | None:
    """The floor of ``offline_compress.X[.…]``: ``X`` (the package's own ``__init__``, the public face, has none)."""
    parts = module.split(".")
    return parts[1] if parts[0] == "offline_compress" and len(parts) > 1 else None


def test_every_unit_of_the_package_has_a_floor() -> None:
    units = {p.stem for p in PACKAGE.glob("*.py")} | {
        p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()
    }
    assert units - {"__init__"} == set(FLOORS)


def test_no_module_imports_from_a_floor_above_its_own() -> None:
    rank = {name: i for i, name in enumerate(FLOORS)}
    upward = {}
    for path in package_modules():
        own = floor_of(".".join(path.relative_to(REPO).with_suffix("").parts))
        if own not in rank:  # the package's __init__: the public face, above every floor
            continue
        above = sorted(n for n in imported_names(path) if (f := floor_of(n)) in rank and rank[f] > rank[own])
        if above:
            upward[str(path.relative_to(REPO))] = above
    assert not upward


def test_the_shared_vocabularies_depend_on_nothing_else() -> None:
    """The message model and the schema are what everything else shares, never the other way round; the
    extractor and the importers read messages and nothing above them."""

    def deps(path: Path) -> set[str]:
        return {n for n in imported_names(path) if n.startswith("offline_compress.")}

    assert deps(PACKAGE / "history" / "messages.py") <= {
        "offline_compress.errors",
        "offline_compress.errors.InputError",
    }
    assert not deps(PACKAGE / "summary" / "schema.py")
    allowed = ("offline_compress.history.", "offline_compress.errors", "offline_compress.extract.")
    for folder in ("extract", "formats"):
        for path in (PACKAGE / folder).glob("*.py"):
            assert all(n.startswith(allowed) or n.startswith(f"offline_compress.{folder}") for n in deps(path)), path


def test_one_definition_of_tool_output_and_one_plan() -> None:
    """Which messages are tool output is defined once (``history.conventions``); the plan of a compaction is made by
    ``summary.plan.plan_compaction`` alone: no other library module computes the head and the cut itself."""
    defining = [p for p in package_modules() if "def is_tool_output" in p.read_text(encoding="utf-8")]
    assert defining == [PACKAGE / "history" / "conventions.py"]
    for path in package_modules():
        if path.parent.name == "history" or path == PACKAGE / "summary" / "plan.py":
            continue
        text = path.read_text(encoding="utf-8")
        assert "head_end(" not in text, path
        assert "find_previous_summary(" not in text or path.name == "message.py", path


def test_the_harnesses_tool_names_have_one_home() -> None:
    """Adding a harness's tool names is an edit of ``history/tools.py`` alone (issue 49): no other module of the
    package defines a vocabulary of tool names (a module-level ``…_TOOLS``)."""
    homes = set()
    for path in package_modules():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            if any(isinstance(t, ast.Name) and t.id.endswith("_TOOLS") for t in targets):
                homes.add(str(path.relative_to(PACKAGE)))
    assert homes == {"history/tools.py"}


def test_the_public_names_stay_importable() -> None:
    import offline_compress

    for name in PUBLIC:
        assert getattr(offline_compress, name) is not None, name
    assert set(PUBLIC) <= set(offline_compress.__all__)


def test_the_public_face_loads_without_evaluation_code() -> None:
    loaded = modules_after(
        "import offline_compress as oc\noc.Compressor, oc.CompactionHook, oc.compress_context", prefix=None
    )
    assert {"offline_compress.compressor", "offline_compress.hook"} <= loaded
    assert not {m for m in loaded if m == "evaluation" or m.startswith("evaluation.")}


def test_the_extract_package_keeps_its_names() -> None:
    from offline_compress import extract
    from offline_compress.extract import facts
    from offline_compress.history import conventions

    assert extract.extract_facts is facts.extract_facts and extract.is_tool_output is conventions.is_tool_output
    assert set(extract.__all__) >= {
        "Facts",
        "ToolEvent",
        "Constraint",
        "extract_facts",
        "extract_tool_events",
        "extract_constraints",
        "is_tool_output",
        "classify_result",
        "parse_shell",
    }
