"""Contradiction counter: the user's constraints as typed rules, checked against what the agent did.

``count_contradictions(history)`` reads the constraints from the genuine user/system/developer text of a
history, turns those it can check into typed rules, replays the agent's actions (tool calls, shell commands,
editor calls, patches) against a model of the working tree, and reports every action that breaks a rule: which
rule, which constraint (verbatim), which step (the message index of the action), what evidence (the command,
editor call or ``diff --git`` header, verbatim, at most 300 characters), and whether the contradiction is still
there at the end (``final``). Constraints it finds but cannot check are listed in ``unchecked``, never counted.

This module is also used as an evaluator, so it has its own small parsers and never imports
``offline_compress.extract``.

Where the constraints come from
    ``system`` and ``developer`` messages, and ``user`` messages that are not tool output. Tool output is every
    ``tool`` message, a ``user`` message that starts with ``<returncode>``, and a ``user`` message right after an
    assistant message that holds an action (tool calls or a fenced shell block): mini-swe-agent and SWE-agent
    send results back as ``user`` messages. Fenced code blocks inside a message are not read for constraints.
    A constraint applies to the actions after the message it was read from; constraints passed with
    ``constraints=`` apply from the start.

Rules (``Rule.kind``; ``Rule.name`` is what ``Contradiction.rule`` holds)
    ``protected-path``  "DO NOT MODIFY: Tests, configuration files (pyproject.toml, setup.cfg, etc.)", "never
        edit src/legacy/", "make changes to non-test files", "X must not be modified". One rule per category
        (``protected-path:tests``, ``protected-path:config``) or path (``protected-path:src/legacy/``). Broken
        by an action after which a protected file differs from its state at the start (written, created,
        deleted, moved). Renaming the categories' examples (pyproject.toml) folds them into the category.
    ``only-under``      "only change files under src/": broken by a change to a file outside the folder.
    ``no-install``      "don't install other packages", "do not install numpy": broken by ``pip``/``pip3``/
        ``python -m pip``/``uv pip``/``uv add``/``poetry add``/``conda``/``mamba``/``apt``/``apt-get``/
        ``npm``/``yarn``/``pnpm``/``gem``/``cargo`` installs that name a package. Installing the project
        itself (``pip install -e .``, a local path) or from a requirements file (``-r``) is not counted.
    ``no-push``         "never push to main": ``git push`` whose target branch is named (``origin main``,
        ``HEAD:main``) or is the current branch as set by ``git checkout``/``git switch`` in the history; a bare
        push from an unknown branch is not counted. ``main`` and ``master`` stand for each other (the default
        branch). "never push" without a branch forbids every push.
    ``forbidden-name``  "use X, not Y", "use X instead of Y", "prefer X over Y", "don't use Y", "avoid using Y"
        with Y one name or flag: broken by ``import Y``/``from Y import`` in code the agent ran or wrote, an
        install of Y, running Y as a program (also ``python -m Y``), or, for a flag (``--no-git``), a command
        or written text that holds it.

What counts as a test file (``is_test_path``)
    A path with a folder named ``test``, ``tests`` or ``testing``; or a file named ``test_*.py``,
    ``*_test.py``, ``tests.py``, ``conftest.py``, ``*_test.go``, ``*.test.<js|jsx|ts|tsx|mjs|cjs>`` or
    ``*.spec.<js|jsx|ts|tsx|mjs|cjs>``. A scratch ``test_repro.py`` at the top of the tree is a test file.

What counts as a configuration file (``is_config_path``)
    A file named ``pyproject.toml``, ``setup.cfg``, ``setup.py``, ``tox.ini``, ``pytest.ini``, ``noxfile.py``,
    ``.coveragerc``, ``.flake8``, ``mypy.ini``, ``.pylintrc``, ``pylintrc``, ``.isort.cfg``,
    ``.pre-commit-config.yaml``, ``.editorconfig``, ``MANIFEST.in``, ``Pipfile``, ``Pipfile.lock``,
    ``poetry.lock``, ``environment.yml``, ``package.json``, ``package-lock.json``, ``yarn.lock``,
    ``tsconfig.json``, ``Cargo.toml``, ``go.mod`` or ``requirements*.txt``, or any file under ``.github/``.

The working tree and ``final``
    Each file has a version: its content at the start, a copy of another file's content (``cp``, ``mv``), new
    content, or absent. A file differs at the end when its version is not its starting content (a file that did
    not exist at the start and is absent again does not differ). An action that leaves a file equal to its start
    (``git checkout -- f``, ``git restore``, ``git stash``, ``git reset --hard``, ``rm`` of a file created in
    the history, ``mv f.bak f`` after ``cp f f.bak``) undoes the contradictions since the file last equalled
    its start: they stay in the report with ``final: false``. A contradiction is final when its file still
    differs at the end. Untracked files count: mini-swe-agent and SWE-agent submit ``git add -A && git diff
    --cached``, which includes them. Installs are final unless uninstalled later; pushes are always final; a
    forbidden name in a command is never final (it leaves nothing), in written code it is final while that file
    differs.
    Actions read: OpenAI ``tool_calls`` (a ``command``/``cmd``/``script`` shell argument; editor calls with a
    path: ``create``, ``str_replace``, ``insert``, ``write``, ``edit``, ``undo_edit``; ``delete``/``remove``
    calls), SWE-agent commands (``create F``, ``open F``, ``edit N:M`` ... ``end_of_edit``, ``insert``,
    ``str_replace_editor ...``), fenced shell blocks of assistant messages without tool calls (mini-swe-agent:
    a message with more than one block is not run, unless the next message reports a ``<returncode>``), and
    aider's ``Applied edit to F`` lines. In shell commands: redirections (``>``, ``>>``, here-documents),
    ``tee``, ``sed -i``, ``perl -i``, ``awk -i inplace``, ``ed``, ``cp``, ``mv``, ``rm``, ``touch`` (a new
    file only in a folder the history created), ``mkdir``, ``git checkout/restore/stash/reset --hard/clean/
    rm/mv/apply``, ``patch``, ``cd`` (within one action; tool-call shells keep it across actions), ``bash -c``,
    and Python run with ``-c``, from a here-document or from a script whose text the history wrote
    (``open(p, 'w'|'a'|'x'|'r+')``, ``Path(p).write_text``, ``os.remove``, ``shutil.copy/move``,
    ``os.rename``, with ``p`` a string literal or a variable assigned one). ``git diff`` output the agent saw is
    evidence too: a file it shows as changed differs (a contradiction at that step if nothing read before
    explained it); a whole-tree ``git diff`` whose output was not cut short also shows which files no longer
    differ. Paths under ``/tmp``, ``/var/tmp``, ``/dev``, ``/proc``, ``/sys``, ``/etc``, ``~`` or a
    ``site-packages``/``dist-packages`` folder are outside the working tree and never count.
    Not read (so not counted): files written by programs whose text the history does not hold, ``find -exec``
    / ``xargs`` targets, variables in paths (``$F``), globs beyond their literal text.
"""

from __future__ import annotations

import argparse
import json
import posixpath
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from .errors import OfflineCompressError
from .messages import Message, as_messages

EVIDENCE_LIMIT = 300
CONSTRAINT_LIMIT = 500

RuleKind = Literal["protected-path", "only-under", "no-install", "no-push", "forbidden-name"]


class Rule(BaseModel):
    """A constraint turned into something an action can be checked against."""

    model_config = ConfigDict(frozen=True)

    name: str  # e.g. "protected-path:tests", "no-install", "no-push:main"
    kind: RuleKind
    constraint: str  # verbatim text the rule was read from
    message_index: int | None = None  # where it was read; None when the caller passed it
    targets: tuple[str, ...] = ()  # categories, paths, packages, branches or names (empty: all)


class Contradiction(BaseModel):
    model_config = ConfigDict(frozen=True)

    rule: str
    constraint: str
    step: int  # message index of the action
    evidence: str  # the command / editor call / diff header, verbatim, at most EVIDENCE_LIMIT characters
    final: bool  # still in the end state
    target: str = ""  # the file, package, branch or name concerned


class ContradictionReport(BaseModel):
    contradictions: list[Contradiction]
    unchecked: list[str]
    rules: list[Rule]


# ----------------------------------------------------------------------------------------- path categories

_TEST_DIRS = frozenset({"test", "tests", "testing"})
_JS_EXT = r"(?:js|jsx|ts|tsx|mjs|cjs)"
_TEST_NAME = re.compile(
    rf"\A(?:test_.*\.py|.*_test\.py|tests\.py|conftest\.py|.*_test\.go|.*\.test\.{_JS_EXT}|.*\.spec\.{_JS_EXT})\Z"
)
_CONFIG_NAMES = frozenset({
    "pyproject.toml", "setup.cfg", "setup.py", "tox.ini", "pytest.ini", "noxfile.py", ".coveragerc", ".flake8",
    "mypy.ini", ".pylintrc", "pylintrc", ".isort.cfg", ".pre-commit-config.yaml", ".editorconfig", "MANIFEST.in",
    "Pipfile", "Pipfile.lock", "poetry.lock", "environment.yml", "package.json", "package-lock.json", "yarn.lock",
    "tsconfig.json", "Cargo.toml", "go.mod",
})
_REQUIREMENTS = re.compile(r"\Arequirements[\w.-]*\.txt\Z")


def is_test_path(path: str) -> bool:
    """A test file: a ``test``/``tests``/``testing`` folder on the path, or a test-runner file name."""
    parts = [p for p in path.split("/") if p]
    if not parts:
        return False
    return any(p in _TEST_DIRS for p in parts[:-1]) or bool(_TEST_NAME.match(parts[-1]))


def is_config_path(path: str) -> bool:
    """A configuration file: a known build/tool configuration name, ``requirements*.txt``, or under ``.github/``."""
    parts = [p for p in path.split("/") if p]
    if not parts:
        return False
    return parts[-1] in _CONFIG_NAMES or bool(_REQUIREMENTS.match(parts[-1])) or ".github" in parts[:-1]


_OUTSIDE_PREFIXES = ("/tmp/", "/var/tmp/", "/dev/", "/proc/", "/sys/", "/etc/")


def _outside_tree(path: str) -> bool:
    if path.startswith("~") or any(path.startswith(p) or path == p[:-1] for p in _OUTSIDE_PREFIXES):
        return True
    parts = path.split("/")
    return "site-packages" in parts or "dist-packages" in parts


def _under(path: str, folder: str) -> bool:
    """``path`` lies in ``folder`` (relative folders also match below an absolute root)."""
    folder = folder.strip("/")
    if not folder:
        return True
    p = path.strip("/")
    if path.startswith("/") and not folder.startswith("/"):
        return p.startswith(folder + "/") or f"/{folder}/" in f"/{p}"
    return p == folder or p.startswith(folder + "/")


def _clip(text: str, limit: int = EVIDENCE_LIMIT) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -------------------------------------------------------------------------------------- genuine messages

_SHELL_BLOCK = re.compile(r"```(?:bash|sh|shell|mswea_bash_command)[ \t]*\r?\n(.*?)^[ \t]*```", re.S | re.M)


def _shell_blocks(text: str) -> list[str]:
    return _SHELL_BLOCK.findall(text)


def _is_returncode(text: str) -> bool:
    return text.lstrip().startswith("<returncode>")


def _runs_text_actions(messages: list[Message]) -> bool:
    """A history of a text-action agent (mini-swe-agent): its results come back as ``<returncode>`` messages.
    Elsewhere a fenced shell block in an assistant message is a suggestion, not something that ran."""
    return any(m.role == "user" and _is_returncode(m.text) for m in messages)


def genuine_indices(messages: list[Message]) -> list[int]:
    """Indices of the messages whose text is the user's or the operator's own (never tool output)."""
    text_actions = _runs_text_actions(messages)
    out = []
    for i, m in enumerate(messages):
        if m.role in ("system", "developer"):
            out.append(i)
        elif m.role == "user":
            previous = messages[i - 1] if i > 0 else None
            if _is_returncode(m.text) or (previous is not None and previous.role == "assistant" and (
                bool(previous.tool_calls) or (text_actions and bool(_shell_blocks(previous.text)))
            )):
                continue
            out.append(i)
    return out


# ------------------------------------------------------------------------------------- constraint parsing

_NEG = (
    r"(?:do\s+not|don'?t|never|must\s+not|mustn'?t|should\s+not|shouldn'?t|may\s+not|cannot|can'?t|"
    r"(?:are|is)\s+not\s+allowed\s+to|not\s+allowed\s+to|avoid|refrain\s+from)"
)
_MODIFY_VERB = r"(?:modify|change|edit|touch|alter|update|rewrite|delete|remove)(?:ing|s)?"
_PROTECT = [
    re.compile(rf"\b{_NEG}\s+(?:to\s+)?{_MODIFY_VERB}\b\W*(?P<obj>.*)", re.I | re.S),
    re.compile(rf"\b(?:leave)\s+(?P<obj>.+?)\s+(?:alone|untouched|unchanged|as\s+(?:it\s+is|they\s+are))\b", re.I),
]
_PROTECT_PASSIVE = re.compile(
    r"(?P<obj>.+?)\s+(?:must|should|may|can|are\s+to|is\s+to)\s*(?:not|n't)\s+be\s+"
    r"(?:modified|changed|edited|touched|altered|updated|rewritten|deleted|removed)\b"
    r"|(?P<obj2>.+?)\s+(?:is|are)\s+read[- ]only\b",
    re.I,
)
_NON_TEST = re.compile(
    r"\b(?:(?:make|making)\s+changes\s+(?:only\s+)?to|(?:only\s+)?(?:modify|change|edit)(?:ing)?)\s+(?:only\s+)?non-test\s+files\b",
    re.I,
)
_TESTS_WORD = re.compile(r"\b(?:tests?|test\s+(?:files?|suites?|cases?)|unit\s+tests?|testing\s+files?)\b", re.I)
_CONFIG_WORD = re.compile(r"\b(?:config(?:uration)?s?(?:\s+files?)?|settings\s+files?|build\s+files?)\b", re.I)
_PATHLIKE = re.compile(r"`([^`\s]+)`|(?<![\w/.-])((?:[\w*.-]+/)+[\w*.-]*|[\w*-]+(?:\.[\w*-]+)*\.[A-Za-z]\w*)(?![\w/-])")
_NOT_PATHS = frozenset({"etc.", "e.g.", "i.e.", "etc", "e.g", "i.e"})

_FOLDER = (  # the folder an "only change files under X" names: one token, then the end or "folder"/"directory"
    r"(?:the\s+)?(?P<path>`[^`]+`|[\w./*-]+)(?=\s*(?:$|[.,;:)!]|\s(?:folder|directory|dir|package|tree)\b))"
)
_ONLY_UNDER = [
    re.compile(
        r"\bonly\s+(?:modify|change|edit|touch|write(?:\s+to)?|make\s+changes|create\s+or\s+modify)\s+"
        r"(?:files?\s+|code\s+)?(?:under|in|inside|within|below)\s+" + _FOLDER,
        re.I,
    ),
    re.compile(
        r"\b(?:restrict|limit|confine)\s+(?:your\s+|all\s+|the\s+)?(?:changes|edits|modifications)\s+to\s+"
        r"(?:files\s+)?(?:(?:under|in|inside|within)\s+)?" + _FOLDER,
        re.I,
    ),
]
_NO_INSTALL = [
    re.compile(rf"\b{_NEG}\s+(?:to\s+)?(?:install|installing)\b(?P<obj>[^.;!\n]*)", re.I),
    re.compile(rf"\b{_NEG}\s+(?:to\s+)?(?:add|adding)\s+(?P<obj>(?:any\s+|new\s+|other\s+|extra\s+|additional\s+|more\s+)*(?:packages|dependencies|libraries)\b[^.;!\n]*)", re.I),
    re.compile(r"\bno\s+(?:new|additional|extra|other|more)\s+(?:packages|dependencies|libraries)\b(?P<obj>)", re.I),
    re.compile(r"\bwithout\s+installing\b(?P<obj>[^.;!\n]*)", re.I),
]
_ALL_PACKAGES = re.compile(
    r"\A\W*(?:(?:any|other|new|additional|extra|more|the|third[- ]party|external|python|system|software|anything|"
    r"packages?|dependenc(?:y|ies)|librar(?:y|ies)|modules?|tools?|else)\b\W*)*\Z|"
    r"\b(?:packages?|dependenc(?:y|ies)|librar(?:y|ies)|anything)\b",
    re.I,
)
_NO_PUSH = re.compile(rf"\b{_NEG}\s+(?:to\s+)?(?:force[- ]?)?push(?:ing|es)?\b(?P<obj>[^;!\n]*)", re.I)
_PUSH_TARGET = re.compile(r"\b(?:to|into|on|onto)\s+(?:the\s+)?`?(?P<b>[\w./-]+)`?", re.I)
_REMOTE_WORDS = frozenset({"remote", "origin", "upstream", "github", "repo", "repository", "server", "remotes"})
_DEFAULT_BRANCHES = ("main", "master")
_FORBID = [
    re.compile(r"\buse\s+(?P<x>`[^`]+`|[\w.-]+)\s*,?\s+(?:not|instead\s+of|rather\s+than)\s+(?P<y>`[^`]+`|[\w.-]+)(?P<rest>.*)", re.I),
    re.compile(r"\bprefer\s+(?P<x>`[^`]+`|[\w.-]+)\s+(?:over|to)\s+(?P<y>`[^`]+`|[\w.-]+)(?P<rest>.*)", re.I),
    re.compile(rf"\b{_NEG}\s+(?:to\s+)?(?:use|using)\s+(?:the\s+)?(?P<y>`[^`]+`|--?[\w-]+|[\w.-]+)(?P<rest>.*)", re.I),
    re.compile(r"\bwithout\s+using\s+(?:the\s+)?(?P<y>`[^`]+`|--?[\w-]+|[\w.-]+)(?P<rest>.*)", re.I),
]
_FORBID_NAME = re.compile(r"\A(?:--?[A-Za-z][\w-]*|[A-Za-z_][\w.-]*)\Z")
_FORBID_STOP = frozenset({
    "a", "an", "the", "any", "it", "this", "that", "these", "those", "them", "more", "other", "new", "multiple",
    "interactive", "your", "my", "our", "their", "its", "such", "same", "different", "one", "two", "all", "each",
    "every", "some", "no", "only", "just", "too", "much", "many", "so", "very", "external", "additional", "extra",
})
_FORBID_REST = re.compile(
    r"\A\s*(?:$|[.,;:)!?]|(?:in|for|when|anywhere|at|here|there|to|because|as|since|and|or|but|unless|while|"
    r"with|anymore|again|inside|within|please|instead|library|package|module|command|flag|option|tool)\b)",
    re.I,
)
_IMPERATIVE = re.compile(
    r"(?i:\A\W*(?:(?:important|note|critical|warning|rule|rules)\s*:\s*)?(?:please\s+)?"
    r"(?:do\s+not|don'?t|never|always|only|avoid|must|make\s+sure|ensure|refrain|you\s+(?:must|should|shall|"
    r"cannot|can'?t|may\s+not|are\s+not\s+allowed|need\s+to|have\s+to))\b)|\b(?:DO NOT|MUST|NEVER|ONLY|SHOULD NOT)\b"
)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\"'(])")


_TAG_LINE = re.compile(r"\A</?[A-Za-z][\w-]*>\Z")


def _outside_fences(text: str) -> Iterable[str]:
    """The lines of a message that are not inside a fenced code block.

    A line that is only an XML-like tag (``</pr_description>``) also ends a block: prompts wrap their sections in
    tags, and a fence left open in a pasted issue must not swallow the instructions after it."""
    fence: str | None = None
    for raw_line in text.splitlines():
        stripped = raw_line.strip()
        if fence is not None and _TAG_LINE.match(stripped):
            fence = None
        marker = stripped[:3]
        if marker in ("```", "~~~"):
            if fence is None:
                fence = marker
            elif marker == fence and stripped.strip("`~") == "":
                fence = None
            continue
        if fence is None:
            yield raw_line


def _constraint_sentences(text: str) -> Iterable[str]:
    for raw_line in _outside_fences(text):
        line = raw_line.strip()
        if not line:
            continue
        for piece in _SENTENCE_SPLIT.split(line):
            piece = piece.strip()
            if piece:
                yield piece


def _unquote_name(token: str) -> str:
    return token.strip("`'\"*").rstrip(".,;:)!?")


def _object_paths(obj: str) -> list[str]:
    out = []
    for m in _PATHLIKE.finditer(obj):
        token = _unquote_name(m.group(1) or m.group(2) or "")
        if not token or token.lower() in _NOT_PATHS or token.endswith(".") or re.fullmatch(r"[\d.]+", token):
            continue
        out.append(token)
    return out


def _protected_targets(obj: str) -> list[str]:
    """Categories (``tests``, ``config``) and paths named in the object of a "do not modify" sentence."""
    obj = obj.replace("**", "")
    targets: list[str] = []
    if _TESTS_WORD.search(obj):
        targets.append("tests")
    if _CONFIG_WORD.search(obj):
        targets.append("config")
    for path in _object_paths(obj):
        if ("config" in targets and is_config_path(path)) or ("tests" in targets and is_test_path(path)):
            continue
        if path not in targets:
            targets.append(path)
    return targets


def _rule_specs(sentence: str) -> list[tuple[RuleKind, tuple[str, ...], int]]:
    """(kind, targets, priority) of every rule a sentence states; priority ranks explicit prohibitions first."""
    specs: list[tuple[RuleKind, tuple[str, ...], int]] = []
    for pattern in _PROTECT:
        m = pattern.search(sentence)
        if m:
            for t in _protected_targets(m.group("obj")):
                specs.append(("protected-path", (t,), 0))
            break
    else:
        m = _PROTECT_PASSIVE.search(sentence)
        if m:
            for t in _protected_targets(m.group("obj") or m.group("obj2") or ""):
                specs.append(("protected-path", (t,), 0))
    if _NON_TEST.search(sentence):
        specs.append(("protected-path", ("tests",), 1))
    for pattern in _ONLY_UNDER:
        m = pattern.search(sentence)
        if m:
            folder = _unquote_name(m.group("path"))
            if folder and folder.lower() not in ("the", "this", "that", "order", "place", "case"):
                specs.append(("only-under", (folder,), 0))
            break
    for pattern in _NO_INSTALL:
        m = pattern.search(sentence)
        if m:
            obj = m.group("obj") or ""
            if _ALL_PACKAGES.search(obj) or not obj.strip():
                specs.append(("no-install", (), 0))
            else:
                names = [
                    _unquote_name(t) for t in re.split(r"\s*(?:,|\band\b|\bor\b|\s)\s*", obj.strip()) if t.strip()
                ]
                names = [n for n in names if _FORBID_NAME.match(n) and n.lower() not in _FORBID_STOP]
                if names:
                    specs.append(("no-install", tuple(sorted(set(_norm_pkg(n) for n in names))), 0))
            break
    m = _NO_PUSH.search(sentence)
    if m:
        branches = []
        for t in _PUSH_TARGET.finditer(m.group("obj")):
            b = _unquote_name(t.group("b"))
            if b.lower() in _REMOTE_WORDS:
                continue
            branches.extend(_DEFAULT_BRANCHES if b in _DEFAULT_BRANCHES else [b])
        specs.append(("no-push", tuple(dict.fromkeys(branches)), 0))
    for pattern in _FORBID:
        m = pattern.search(sentence)
        if m and _FORBID_REST.match(m.group("rest")):
            y = _unquote_name(m.group("y"))
            x = _unquote_name(m.group("x")) if "x" in m.groupdict() and m.group("x") else ""
            if _FORBID_NAME.match(y) and y.lower() not in _FORBID_STOP and y != x:
                specs.append(("forbidden-name", (y,), 0))
                break
    return specs


def _rule_name(kind: RuleKind, targets: tuple[str, ...]) -> str:
    return f"{kind}:{','.join(targets)}" if targets else kind


def derive_rules(candidates: Iterable[tuple[str, int | None]]) -> tuple[list[Rule], list[str]]:
    """Rules from constraint texts (each with the message index it came from), and the instruction-like
    sentences no rule covers (``unchecked``). The same rule stated twice is kept once: the explicit prohibition
    over the implied one ("non-test files"), then the earliest."""
    found: dict[str, tuple[int, int, Rule]] = {}
    unchecked: list[str] = []
    order = 0
    for text, index in candidates:
        for sentence in _constraint_sentences(text):
            specs = _rule_specs(sentence)
            if not specs:
                if _IMPERATIVE.search(sentence):
                    clipped = _clip(sentence, CONSTRAINT_LIMIT)
                    if clipped not in unchecked:
                        unchecked.append(clipped)
                continue
            for kind, targets, priority in specs:
                name = _rule_name(kind, targets)
                rule = Rule(name=name, kind=kind, constraint=_clip(sentence, CONSTRAINT_LIMIT),
                            message_index=index, targets=targets)
                order += 1
                if name not in found or (priority, order) < found[name][:2]:
                    found[name] = (priority, order, rule)
    rules = [r for _, _, r in sorted(found.values(), key=lambda t: t[1])]
    return rules, unchecked


def constraint_candidates(messages: list[Message]) -> list[tuple[str, int]]:
    return [(messages[i].text, i) for i in genuine_indices(messages)]


# ------------------------------------------------------------------------------------------ shell parsing


@dataclass
class _Cmd:
    """One simple command: its words (quotes removed), redirections, and its span in the source text."""

    words: list[str] = field(default_factory=list)
    redirects: list[list[str]] = field(default_factory=list)  # [op, target]; for << the target becomes the body
    start: int = 0
    end: int = 0
    piped: bool = False  # stdin comes from the previous command


def _read_balanced(src: str, i: int, open_ch: str, close_ch: str) -> int:
    """Index just past the ``close_ch`` matching the ``open_ch`` at ``i`` (quotes respected)."""
    depth = 0
    n = len(src)
    while i < n:
        c = src[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            j = src.find("'", i + 1)
            i = n if j < 0 else j + 1
            continue
        if c == '"':
            i = _skip_double(src, i)
            continue
        if c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _skip_double(src: str, i: int) -> int:
    j = i + 1
    n = len(src)
    while j < n:
        c = src[j]
        if c == "\\":
            j += 2
            continue
        if c == '"':
            return j + 1
        if c == "$" and j + 1 < n and src[j + 1] == "(":
            j = _read_balanced(src, j + 1, "(", ")")
            continue
        j += 1
    return n


def parse_shell(src: str) -> list[_Cmd]:
    """Split shell text into simple commands (quotes, escapes, ``$(...)``, here-documents, operators)."""
    cmds: list[_Cmd] = []
    cur = _Cmd()
    word: list[str] | None = None
    pending_redir: list[str] | None = None
    heredocs: list[tuple[list[str], str, bool]] = []
    piped_next = False
    i, n = 0, len(src)

    def end_word() -> None:
        nonlocal word, pending_redir
        if word is None:
            return
        w = "".join(word)
        word = None
        if pending_redir is not None:
            op = pending_redir[0]
            if op in ("<<", "<<-"):
                delim = w
                entry = [op, ""]
                cur.redirects.append(entry)
                heredocs.append((entry, delim, op == "<<-"))
            else:
                cur.redirects.append([op, w])
            pending_redir = None
        else:
            cur.words.append(w)

    def start_word() -> list[str]:
        nonlocal word
        if word is None:
            word = []
            if not cur.words and not cur.redirects and pending_redir is None:
                cur.start = i
        return word

    def end_cmd(pipe: bool) -> None:
        nonlocal cur, piped_next
        end_word()
        if cur.words or cur.redirects:
            cur.end = max(cur.end, i)
            cur.piped = piped_next
            cmds.append(cur)
        cur = _Cmd()
        piped_next = pipe

    while i < n:
        c = src[i]
        if c == "\\":
            if i + 1 < n and src[i + 1] == "\n":
                i += 2
                continue
            start_word().append(src[i + 1] if i + 1 < n else "")
            i += 2
            cur.end = i
            continue
        if c == "'":
            j = src.find("'", i + 1)
            j = n if j < 0 else j
            start_word().append(src[i + 1 : j])
            i = j + 1
            cur.end = i
            continue
        if c == "$" and i + 1 < n and src[i + 1] == "'":
            j = i + 2
            while j < n and src[j] != "'":
                j += 2 if src[j] == "\\" else 1
            start_word().append(src[i + 2 : min(j, n)].encode().decode("unicode_escape", "ignore"))
            i = j + 1
            cur.end = i
            continue
        if c == '"':
            j = _skip_double(src, i)
            inner = src[i + 1 : j - 1] if j <= n and src[j - 1 : j] == '"' else src[i + 1 : j]
            start_word().append(re.sub(r'\\([\\"$`\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), inner))
            i = j
            cur.end = i
            continue
        if c == "$" and i + 1 < n and src[i + 1] == "(":
            j = _read_balanced(src, i + 1, "(", ")")
            start_word().append(src[i:j])
            i = j
            cur.end = i
            continue
        if c == "`":
            j = src.find("`", i + 1)
            j = n - 1 if j < 0 else j
            start_word().append(src[i : j + 1])
            i = j + 1
            cur.end = i
            continue
        if c == "#" and word is None:
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if c in " \t\r":
            end_word()
            i += 1
            continue
        if c == "\n":
            end_cmd(False)
            i += 1
            for entry, delim, strip_tabs in heredocs:
                lines = []
                while i < n:
                    j = src.find("\n", i)
                    line = src[i:] if j < 0 else src[i:j]
                    i = n if j < 0 else j + 1
                    check = line.lstrip("\t") if strip_tabs else line
                    if check.rstrip("\r") == delim:
                        break
                    lines.append(line)
                entry[1] = "\n".join(lines) + ("\n" if lines else "")
            heredocs.clear()
            continue
        if c in ";&|()":
            two = src[i : i + 2]
            if c == "&" and two in ("&>",):
                end_word()
                op = "&>>" if src[i : i + 3] == "&>>" else "&>"
                pending_redir = [op]
                i += len(op)
                continue
            end_cmd(c == "|" and two != "||")
            i += 2 if two in ("&&", "||", ";;", "|&") else 1
            continue
        if c in "<>":
            if word is not None and "".join(word).isdigit() and src[i - 1].isdigit():
                word = None  # an fd number (2>)
            else:
                end_word()
            if cur.start == 0 and not cur.words and not cur.redirects:
                cur.start = i
            for op in ("<<<", "<<-", "<<", ">>", ">|", ">&", "<&", "<>", ">", "<"):
                if src.startswith(op, i):
                    break
            i += len(op)
            if op in (">&", "<&"):
                m = re.match(r"\s*(\d+|-)", src[i:])
                if m:
                    i += m.end()
                    continue
                op = ">"
            pending_redir = [op]
            continue
        start_word().append(c)
        i += 1
        cur.end = i
    end_cmd(False)
    for entry, _delim, _strip in heredocs:  # unterminated here-document: the rest was already consumed
        entry[1] = entry[1] or ""
    return cmds


# ---------------------------------------------------------------------------------------- operations


@dataclass(frozen=True)
class _Op:
    """One effect of an action on the working tree, the environment or a remote."""

    kind: str
    paths: tuple[str, ...] = ()
    evidence: str = ""
    content: str | None = None  # text written, when known
    mode: str = "create"  # write: create | modify | append
    extra: tuple[str, ...] = ()  # packages / branches / names / flags


_PREFIX_CMDS = frozenset({"sudo", "env", "nohup", "time", "command", "exec", "stdbuf", "nice", "timeout", "builtin"})
_PREFIX_VALUE_OPTIONS = frozenset({"-n", "-u", "-g", "-k", "-s", "--signal", "--kill-after"})
_KEYWORDS = frozenset({"{", "}", "!", "if", "then", "else", "elif", "do", "while", "until", "fi", "done"})
_ASSIGN = re.compile(r"\A[A-Za-z_]\w*=")
_PYTHON = re.compile(r"\A(?:python|python\d+(?:\.\d+)?|pypy\d*)\Z")
_PIP = re.compile(r"\Apip\d*(?:\.\d+)?\Z")


@dataclass
class _Ctx:
    """What the parser knows while reading one action: the directory and the file texts written so far."""

    cwd: str | None
    files: dict[str, str]  # path as written -> last full text written (scripts we may see run later)
    open_file: str | None = None


def _join(cwd: str | None, path: str) -> str | None:
    if not path or "$" in path or "`" in path or path in ("-", "/dev/stdout", "/dev/stderr"):
        return None
    if path.startswith("~"):
        return path
    if not path.startswith("/"):
        if cwd is None:
            return None
        path = posixpath.join(cwd, path) if cwd else path
    norm = posixpath.normpath(path)
    if norm.startswith("../") or norm == "..":
        return "~outside/" + norm  # above the working tree
    return "" if norm == "." else norm


def _strip_prefix(words: list[str]) -> list[str]:
    """The command proper: without variable assignments, shell keywords and wrappers (``timeout 5``, ``sudo``)."""
    words = list(words)
    while words:
        w = words[0]
        if _ASSIGN.match(w) or w in _KEYWORDS:
            words.pop(0)
            continue
        if w in _PREFIX_CMDS:
            words.pop(0)
            while words and (words[0].startswith("-") or _ASSIGN.match(words[0])
                             or re.fullmatch(r"\d+(?:\.\d+)?[smhd]?", words[0])):
                option = words.pop(0)
                if option in _PREFIX_VALUE_OPTIONS and words:
                    words.pop(0)
            continue
        break
    return words


def _options(args: list[str], with_value: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """Split args into (options, operands); options in ``with_value`` take the next word; ``--`` ends options."""
    takes = set(with_value)
    opts: list[str] = []
    operands: list[str] = []
    value_next = ended = False
    for a in args:
        if value_next:
            value_next = False
            opts.append(a)
        elif ended or a == "-" or not a.startswith("-"):
            operands.append(a)
        elif a == "--":
            ended = True
        else:
            opts.append(a)
            value_next = a in takes
    return opts, operands


def _python_code_ops(code: str, cwd: str | None, evidence: str) -> list[_Op]:
    """Effects of a Python program text: writes/deletes/copies of files named by literals or variables."""
    ops: list[_Op] = []
    str_lit = r"""[rRbBuU]?(?P<q{n}>['"])(?P<s{n}>(?:\\.|(?!(?P=q{n})).)*?)(?P=q{n})"""
    assigns: list[tuple[int, str, str]] = []
    for m in re.finditer(r"^[ \t]*(?P<name>\w+)\s*=\s*(?:(?:pathlib\.)?Path\(\s*)?" + str_lit.format(n=0), code, re.M):
        assigns.append((m.start(), m.group("name"), m.group("s0")))

    def resolve(expr: str, pos: int) -> str | None:
        expr = expr.strip()
        m = re.fullmatch(str_lit.format(n=9), expr)
        if m:
            return m.group("s9")
        m = re.fullmatch(r"(?:pathlib\.)?Path\(\s*(.+?)\s*\)", expr)
        if m:
            return resolve(m.group(1), pos)
        if re.fullmatch(r"\w+", expr):
            found = [v for p, name, v in assigns if name == expr and p < pos]
            return found[-1] if found else None
        return None

    arg = r"(?P<a>[^,()]+?|(?:pathlib\.)?Path\([^()]*\))"

    def add(kind: str, raw: str, pos: int, mode: str = "create", other: str | None = None) -> None:
        p = resolve(raw, pos)
        path = _join(cwd, p) if p is not None else None
        if path is None:
            return
        if other is not None:
            q = resolve(other, pos)
            dst = _join(cwd, q) if q is not None else None
            if dst is None:
                return
            ops.append(_Op(kind, (path, dst), evidence))
        else:
            ops.append(_Op(kind, (path,), evidence, None, mode))

    for m in re.finditer(r"\bopen\(\s*" + arg + r"\s*,\s*(?:mode\s*=\s*)?" + str_lit.format(n=1), code):
        mode = m.group("s1")
        if any(ch in mode for ch in "wax+"):
            add("write", m.group("a"), m.start(), "modify" if ("a" in mode or "+" in mode) else "create")
    for m in re.finditer(r"\bopen\(\s*" + arg + r"\s*,[^)]*?\bmode\s*=\s*" + str_lit.format(n=1), code):
        if any(ch in m.group("s1") for ch in "wax+"):
            add("write", m.group("a"), m.start(), "modify")
    for m in re.finditer(r"(?P<a>(?:pathlib\.)?Path\([^()]*\)|\b\w+)\.write_(?:text|bytes)\(", code):
        add("write", m.group("a"), m.start())
    for m in re.finditer(r"\bos\.(?:remove|unlink)\(\s*" + arg + r"\s*\)", code):
        add("delete", m.group("a"), m.start())
    for m in re.finditer(r"(?P<a>(?:pathlib\.)?Path\([^()]*\)|\b\w+)\.unlink\(", code):
        add("delete", m.group("a"), m.start())
    for m in re.finditer(r"\bshutil\.rmtree\(\s*" + arg + r"\s*[,)]", code):
        add("delete", m.group("a"), m.start())
    for m in re.finditer(r"\bshutil\.(?:copy|copy2|copyfile)\(\s*(?P<a>[^,()]+?)\s*,\s*(?P<b>[^,()]+?)\s*\)", code):
        add("copy", m.group("a"), m.start(), other=m.group("b"))
    for m in re.finditer(r"\b(?:shutil\.move|os\.rename|os\.replace)\(\s*(?P<a>[^,()]+?)\s*,\s*(?P<b>[^,()]+?)\s*\)", code):
        add("move", m.group("a"), m.start(), other=m.group("b"))
    for m in re.finditer(r"\bfileinput\.(?:input|FileInput)\(\s*(?:files\s*=\s*)?" + arg + r"[^)]*inplace\s*=\s*(?:True|1)", code):
        add("write", m.group("a"), m.start(), "modify")
    for name in _python_imports(code):
        ops.append(_Op("use", (), _import_line(code, name) or evidence, extra=(name,)))
    return ops


_IMPORT = re.compile(r"^[ \t]*(?:import[ \t]+(?P<names>[\w., \t]+)|from[ \t]+(?P<mod>[\w.]+)[ \t]+import\b)", re.M)


def _python_imports(code: str) -> list[str]:
    names: list[str] = []
    for m in _IMPORT.finditer(code):
        if m.group("mod"):
            names.append(m.group("mod"))
        else:
            for part in m.group("names").split(","):
                token = part.strip().split()
                if token:
                    names.append(token[0])
    return list(dict.fromkeys(names))


def _import_line(code: str, name: str) -> str | None:
    for m in _IMPORT.finditer(code):
        if name in (m.group("mod") or "") or name in (m.group("names") or ""):
            return m.group(0).strip()
    return None


def _norm_pkg(spec: str) -> str:
    """Package name of an install spec: ``Foo[x]>=1.2`` -> ``foo``; ``_``/``.`` read as ``-``."""
    name = re.split(r"[\[<>=!~;@ ]", spec, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def _install_ops(prog: str, args: list[str], evidence: str) -> list[_Op]:
    """Installs/uninstalls of package managers (the packages named; local paths and -r files excluded)."""
    def named(operands: list[str]) -> tuple[str, ...]:
        out = []
        for a in operands:
            if a in (".", "..") or "/" in a or a.startswith((".", "-")) or a.endswith((".txt", ".whl", ".tar.gz", ".zip")):
                continue
            out.append(_norm_pkg(a))
        return tuple(x for x in dict.fromkeys(out) if x)

    sub = args[0] if args else ""
    rest = args[1:]
    if _PIP.match(prog) or prog == "uv" and sub == "pip":
        if prog == "uv":
            sub, rest = (rest[0] if rest else ""), rest[1:]
        opts, operands = _options(rest, ("-r", "--requirement", "-c", "--constraint", "-i", "--index-url",
                                         "--extra-index-url", "-t", "--target", "-e", "--editable", "-f",
                                         "--find-links", "--prefix", "--root", "--python"))
        if sub == "install":
            packages = named(operands)
            return [_Op("install", (), evidence, extra=packages)] if packages else []
        if sub == "uninstall":
            return [_Op("uninstall", (), evidence, extra=named(operands))]
        return []
    table = {
        "conda": ({"install", "create"}, {"remove", "uninstall"}), "mamba": ({"install"}, {"remove", "uninstall"}),
        "micromamba": ({"install"}, {"remove", "uninstall"}), "apt": ({"install"}, {"remove", "purge"}),
        "apt-get": ({"install"}, {"remove", "purge"}), "npm": ({"install", "i", "add"}, {"uninstall", "remove", "rm"}),
        "yarn": ({"add"}, {"remove"}), "pnpm": ({"add", "install", "i"}, {"remove", "rm", "uninstall"}),
        "poetry": ({"add"}, {"remove"}), "uv": ({"add"}, {"remove"}), "gem": ({"install"}, {"uninstall"}),
        "cargo": ({"add", "install"}, {"remove", "uninstall"}), "brew": ({"install"}, {"uninstall", "remove"}),
    }
    if prog not in table:
        return []
    _opts, operands = _options(args, ("-c", "--channel", "-n", "--name", "-p", "--prefix", "-o"))
    if not operands:
        return []
    sub, operands = operands[0], operands[1:]
    installs, removes = table[prog]
    if sub in installs:
        packages = named(operands)
        return [_Op("install", (), evidence, extra=packages)] if packages else []
    if sub in removes:
        return [_Op("uninstall", (), evidence, extra=named(operands))]
    return []


_REV = re.compile(r"\A(?:HEAD(?:[~^]\d*)*|[0-9a-f]{7,40}|(?:origin|upstream)/[\w./-]+|@(?:\{.*\})?)\Z")


def _git_ops(args: list[str], ctx: _Ctx, evidence: str, stdin: str | None) -> list[_Op]:
    cwd = ctx.cwd
    while args and args[0].startswith("-"):
        if args[0] in ("-C", "-c", "--git-dir", "--work-tree") and len(args) > 1:
            if args[0] == "-C":
                cwd = _join(cwd, args[1])
            args = args[2:]
        else:
            args = args[1:]
    if not args:
        return []
    sub, rest = args[0], args[1:]

    def paths(items: Iterable[str]) -> tuple[str, ...]:
        return tuple(p for p in (_join(cwd, a) for a in items) if p is not None)

    if sub == "checkout":
        if any(a in ("-b", "-B", "--orphan") for a in rest):
            opts, operands = _options(rest, ("-b", "-B", "--orphan"))
            branch = next((opts[k + 1] for k, o in enumerate(opts[:-1]) if o in ("-b", "-B", "--orphan")), None)
            return [_Op("branch", (), evidence, extra=(branch,))] if branch else []
        if "--" in rest:
            k = rest.index("--")
            before = [a for a in rest[:k] if not a.startswith("-")]
            files = rest[k + 1 :]
            rev = before[0] if before else None
        else:
            operands = [a for a in rest if not a.startswith("-")]
            if not operands:
                return []
            if len(operands) == 1:
                a = operands[0]
                if a == "." or "/" in a and not _REV.match(a) or re.search(r"\.\w+\Z", a):
                    rev, files = None, operands
                else:
                    return [_Op("branch", (), evidence, extra=(a,))]
            elif _REV.match(operands[0]) or not re.search(r"[./]", operands[0]):
                rev, files = operands[0], operands[1:]
            else:
                rev, files = None, operands
        if rev in (None, "HEAD", "@"):
            return [_Op("revert", paths(files), evidence)]
        return [_Op("write", p, evidence, None, "modify") for p in (paths(files),) if p]
    if sub == "restore":
        opts, operands = _options(rest, ("-s", "--source"))
        source = next((opts[k + 1] for k, o in enumerate(opts[:-1]) if o in ("-s", "--source")), None)
        source = source or next((o.split("=", 1)[1] for o in opts if o.startswith("--source=")), None)
        staged_only = any(o in ("--staged", "-S") for o in opts) and not any(o in ("--worktree", "-W") for o in opts)
        if staged_only:
            return [_Op("unstage", paths(operands), evidence)]
        if source in (None, "HEAD", "@"):
            return [_Op("revert", paths(operands), evidence)]
        return [_Op("write", paths(operands), evidence, None, "modify")]
    if sub == "stash":
        action = rest[0] if rest and not rest[0].startswith("-") else "push"
        if action in ("push", "save"):
            untracked = any(a in ("-u", "--include-untracked", "-a", "--all") for a in rest)
            return [_Op("stash", (), evidence, extra=("untracked",) if untracked else ())]
        if action in ("pop", "apply"):
            return [_Op("stash-" + action, (), evidence)]
        if action in ("drop", "clear"):
            return [_Op("stash-drop", (), evidence)]
        return []
    if sub == "reset":
        if "--hard" in rest:
            return [_Op("revert-all", (), evidence)]
        operands = [a for a in rest if not a.startswith("-") and a != "HEAD"]
        return [_Op("unstage", paths(operands), evidence)]
    if sub == "clean":
        opts, operands = _options(rest, ("-e", "--exclude"))
        flags = "".join(o.lstrip("-") for o in opts if not o.startswith("--"))
        if ("f" in flags or "--force" in opts) and "n" not in flags and "--dry-run" not in opts:
            return [_Op("clean", paths(operands), evidence)]
        return []
    if sub == "rm":
        opts, operands = _options(rest)
        if "--cached" in opts:
            return []
        return [_Op("delete", paths(operands), evidence)]
    if sub == "mv":
        _opts, operands = _options(rest)
        return _move_ops("move", paths(operands), evidence)
    if sub == "apply" or sub == "am":
        opts, operands = _options(rest, ("-p", "--directory", "--exclude", "--include"))
        if any(o in ("--check", "--stat", "--numstat", "--summary") for o in opts):
            return []
        text = stdin
        for a in operands:
            p = _join(cwd, a)
            text = ctx.files.get(p, text) if p else text
        files = paths(_patch_files(text or "", _strip_level(opts, 1)))
        kind = "revert" if any(o in ("-R", "--reverse") for o in opts) else "write"
        return [_Op(kind, files, evidence, None, "modify")] if files else []
    if sub == "add":
        opts, operands = _options(rest)
        if any(o in ("-A", "--all") for o in opts) or "." in operands:
            return [_Op("stage-all", (), evidence)]
        return [_Op("stage", paths(operands), evidence)]
    if sub == "commit":
        return [_Op("commit", (), evidence)]
    if sub == "push":
        return [_Op("push", (), evidence, extra=tuple(a for a in rest if not a.startswith("-")))]
    if sub == "switch":
        opts, operands = _options(rest, ("-c", "-C", "--create"))
        created = next((opts[k + 1] for k, o in enumerate(opts[:-1]) if o in ("-c", "-C", "--create")), None)
        branch = created or (operands[0] if operands else None)
        return [_Op("branch", (), evidence, extra=(branch,))] if branch else []
    if sub == "diff":
        opts, operands = _options(rest)
        revs = [a for a in operands if _REV.match(a) or ".." in a]
        if any(r != "HEAD" for r in revs):
            return []  # a diff against another commit says nothing about the working tree alone
        files = [a for a in operands if a not in revs]
        return [_Op("diff", paths(files), evidence, extra=tuple(opts) + tuple(revs))]
    return []


def _inplace_suffix(args: list[str]) -> str | None:
    """The backup suffix of ``sed``/``perl`` in-place editing ("" for none); None when not editing in place."""
    for a in args:
        if a == "--":
            break
        if a.startswith("--in-place"):
            return a.partition("=")[2]
        m = re.fullmatch(r"-(?!-)[a-zA-Z]*?i(\S*)", a)
        if m and not a.startswith("-e"):
            return m.group(1) if not m.group(1).isalpha() else ""
    return None


def _strip_level(opts: list[str], default: int) -> int:
    for k, o in enumerate(opts):
        m = re.fullmatch(r"-p(\d+)", o)
        if m:
            return int(m.group(1))
        if o == "-p" and k + 1 < len(opts) and opts[k + 1].isdigit():
            return int(opts[k + 1])
    return default


def _patch_files(text: str, strip: int) -> list[str]:
    """Files a unified diff changes (``+++`` lines, ``diff --git`` headers), with ``strip`` leading parts removed."""
    out = []
    for m in re.finditer(r"^diff --git a/(\S+) b/(\S+)", text, re.M):
        out.append(m.group(2))
    if not out:
        for m in re.finditer(r"^\+\+\+ ([^\t\n]+)", text, re.M):
            p = m.group(1).strip()
            if p == "/dev/null":
                continue
            parts = p.split("/")
            out.append("/".join(parts[strip:]) if len(parts) > strip else parts[-1])
    return list(dict.fromkeys(out))


def _move_ops(kind: str, operands: tuple[str, ...], evidence: str) -> list[_Op]:
    if len(operands) < 2:
        return []
    *sources, dst = operands
    into_dir = len(sources) > 1 or dst.endswith("/") or (
        "." not in posixpath.basename(dst) and "." in posixpath.basename(sources[0])
    )
    return [
        _Op(kind, (src, posixpath.join(dst, posixpath.basename(src)) if into_dir else dst), evidence)
        for src in sources
    ]


def _shell_ops(src: str, ctx: _Ctx, depth: int = 0) -> list[_Op]:
    """Effects of one shell action; ``ctx.cwd`` follows ``cd`` and ``ctx.files`` learns written file texts."""
    ops: list[_Op] = []
    prev_stdin: str | None = None
    for cmd in parse_shell(src):
        evidence = _clip(src[cmd.start : cmd.end])
        words = _strip_prefix(cmd.words)
        stdin = None
        for op, target in cmd.redirects:
            if op in ("<<", "<<-", "<<<"):
                stdin = target + ("\n" if op == "<<<" else "")
            elif op == "<":
                p = _join(ctx.cwd, target)
                stdin = ctx.files.get(p) if p else None
        if stdin is None and cmd.piped:
            stdin = prev_stdin
        prog = posixpath.basename(words[0]) if words else ""
        args = words[1:]
        out_text: str | None = None  # what the command writes to stdout, when known (cat/echo/printf)
        if prog == "cat" and not args:
            out_text = stdin
        elif prog in ("echo", "printf") and args:
            out_text = " ".join(a for a in args if not re.fullmatch(r"-[neE]+", a)) + "\n"
        # redirections into files
        for op, target in cmd.redirects:
            if op in (">", ">>", ">|", "&>", "&>>"):
                p = _join(ctx.cwd, target)
                if p is None:
                    continue
                append = op in (">>", "&>>")
                ops.append(_Op("write", (p,), evidence, out_text, "append" if append else "create"))
                if out_text:
                    ops.extend(_content_ops(out_text, evidence))
                if out_text is not None:
                    ctx.files[p] = (ctx.files.get(p, "") if append else "") + out_text
                elif not append:
                    ctx.files.pop(p, None)
        prev_stdin = out_text if out_text is not None else None
        if not words:
            continue
        ops.extend(_command_ops(prog, args, words, ctx, evidence, stdin, depth))
        if prog in ("tee",) and stdin is not None:
            prev_stdin = stdin
    return ops


def _command_ops(prog: str, args: list[str], words: list[str], ctx: _Ctx, evidence: str,
                 stdin: str | None, depth: int) -> list[_Op]:
    cwd = ctx.cwd
    ops: list[_Op] = [_Op("run", (), evidence, extra=(prog,))]
    flags = tuple(a for a in words if a.startswith("-"))
    if flags:
        ops.append(_Op("flags", (), evidence, extra=flags))

    def paths(items: Iterable[str]) -> tuple[str, ...]:
        return tuple(p for p in (_join(cwd, a) for a in items) if p is not None)

    if prog == "cd":
        target = next((a for a in args if not a.startswith("-")), "~")
        ctx.cwd = _join(cwd, target) if target not in ("~", "-") else None
        if ctx.cwd is not None and ctx.cwd.startswith("~"):
            ctx.cwd = None
        return ops
    if prog == "rm":
        _opts, operands = _options(args)
        return ops + [_Op("delete", paths(operands), evidence)]
    if prog == "touch":
        _opts, operands = _options(args, ("-t", "-d", "-r", "--reference"))
        return ops + [_Op("touch", paths(operands), evidence)]
    if prog == "mkdir":
        _opts, operands = _options(args, ("-m", "--mode"))
        return ops + [_Op("mkdir", paths(operands), evidence)]
    if prog in ("cp", "mv"):
        opts, operands = _options(args, ("-t", "--target-directory", "-S", "--suffix"))
        target_dir = next((opts[k + 1] for k, o in enumerate(opts[:-1]) if o in ("-t", "--target-directory")), None)
        items = paths(operands + ([target_dir] if target_dir else []))
        if target_dir and items:
            items = (*items[:-1], items[-1].rstrip("/") + "/")
        return ops + _move_ops("copy" if prog == "cp" else "move", items, evidence)
    if prog == "tee":
        opts, operands = _options(args)
        mode = "append" if any(o in ("-a", "--append") for o in opts) else "create"
        for p in paths(operands):
            ops.append(_Op("write", (p,), evidence, stdin, mode))
            if stdin:
                ops.extend(_content_ops(stdin, evidence))
            if stdin is not None:
                ctx.files[p] = (ctx.files.get(p, "") if mode == "append" else "") + stdin
        return ops
    if prog in ("sed", "perl"):
        suffix = _inplace_suffix(args)
        if suffix is None:
            return ops
        if prog == "sed":
            has_script = any(a in ("-e", "--expression", "-f", "--file") or a.startswith("--expression=") for a in args)
            opts, operands = _options(args, ("-e", "--expression", "-f", "--file", "-l", "--line-length"))
            if operands[:1] == [""] and "-i" in opts:
                operands = operands[1:]  # BSD form: -i ''
        else:
            opts, operands = _options(args, ("-e", "-E", "-M", "-I"))
            has_script = any(o in ("-e", "-E") or re.fullmatch(r"-[a-zA-Z]*e", o) for o in opts)
        files = paths(operands if has_script else operands[1:])
        if suffix:  # sed -i.bak / perl -i.bak keep the old text beside the file
            ops.extend(_Op("copy", (p, p + suffix), evidence) for p in files)
        return ops + ([_Op("write", files, evidence, None, "modify")] if files else [])
    if prog in ("awk", "gawk"):
        if "inplace" not in args:
            return ops
        opts, operands = _options(args, ("-i", "-f", "-v", "-F"))
        return ops + [_Op("write", p, evidence, None, "modify") for p in (paths(operands[1:]),) if p]
    if prog in ("ed", "ex"):
        _opts, operands = _options(args)
        return ops + [_Op("write", p, evidence, None, "modify") for p in (paths(operands),) if p]
    if prog == "git":
        return ops + _git_ops(args, ctx, evidence, stdin)
    if prog == "patch":
        opts, operands = _options(args, ("-p", "-i", "--input", "-o", "--output", "-d", "--directory", "-F", "-r", "-B", "-z", "-V", "-D"))
        if any(o in ("--dry-run", "-C", "--check") for o in opts):
            return ops
        reverse = any(o in ("-R", "--reverse") for o in opts)
        text = stdin
        input_file = next((opts[k + 1] for k, o in enumerate(opts[:-1]) if o in ("-i", "--input")), None)
        if len(operands) >= 2:
            input_file = operands[1]
        if input_file:
            p = _join(cwd, input_file)
            text = ctx.files.get(p) if p else None
        files = paths(operands[:1]) if operands else paths(_patch_files(text or "", _strip_level(opts, 0)))
        return ops + ([_Op("revert" if reverse else "write", files, evidence, None, "modify")] if files else [])
    if prog in ("bash", "sh", "zsh", "dash") and depth < 3:
        if "-c" in args:
            k = args.index("-c")
            if k + 1 < len(args):
                return ops + _shell_ops(args[k + 1], _Ctx(cwd, ctx.files, ctx.open_file), depth + 1)
            return ops
        _opts, operands = _options(args)
        script = stdin if not operands else ctx.files.get(_join(cwd, operands[0]) or "")
        if script:
            return ops + _shell_ops(script, _Ctx(cwd, ctx.files, ctx.open_file), depth + 1)
        return ops
    if _PYTHON.match(prog):
        code = None
        k = 0
        while k < len(args):  # python's own options end at -c CODE, -m MODULE or the script
            a = args[k]
            if a == "-c":
                code = args[k + 1] if k + 1 < len(args) else None
                break
            if a == "-m":
                module = args[k + 1] if k + 1 < len(args) else ""
                ops.append(_Op("use", (), evidence, extra=(module,)))
                return ops + (_install_ops("pip", args[k + 2 :], evidence) if module == "pip" else [])
            if a == "-" or not a.startswith("-"):
                script = _join(cwd, a) if a != "-" else None
                code = stdin if a == "-" else (ctx.files.get(script) if script else None)
                break
            k += 2 if a in ("-W", "-X") else 1
        else:
            code = stdin  # no script: the program comes from stdin
        if code:
            ops.extend(_python_code_ops(code, cwd, evidence))
        return ops
    if "/" in words[0] and depth < 3:  # ./script.sh: a script whose text the history wrote
        script_path = _join(cwd, words[0])
        script = ctx.files.get(script_path) if script_path else None
        if script:
            first = script.split("\n", 1)[0]
            if "python" in first or (script_path or "").endswith(".py"):
                return ops + _python_code_ops(script, cwd, evidence)
            return ops + _shell_ops(script, _Ctx(cwd, ctx.files, ctx.open_file), depth + 1)
    return ops + _install_ops(prog, args, evidence)


# ----------------------------------------------------------------------------------------- actions


@dataclass
class _Action:
    step: int
    ops: list[_Op]
    output: str | None  # the result the agent saw, when the history holds it


_EDITOR_WRITES = {"create": "create", "write": "create", "str_replace": "modify", "insert": "modify",
                  "undo_edit": "modify", "edit": "modify", "append": "modify", "replace": "modify", "overwrite": "create"}
_EDITOR_READS = frozenset({"view", "read", "open"})
_WRITE_NAME = re.compile(r"write|create|edit|replace|insert|append|patch")
_DELETE_NAME = re.compile(r"delete|remove")
_PATH_KEYS = ("path", "file_path", "filename", "file", "target_file", "file_name", "filepath")
_SHELL_KEYS = ("command", "cmd", "script", "bash", "shell")
_CONTENT_KEYS = ("file_text", "content", "new_str", "text", "replace", "new_content", "code")
_EDIT_BLOCK = re.compile(r"\A\s*edit\s+\d+(?::\d+)?\s*\n(?P<body>.*?)^end_of_edit\s*\Z", re.S | re.M)
_SEARCH_REPLACE = re.compile(
    r"^(?P<file>[^\n`]+?)[ \t]*\n```[^\n]*\n<<<<<<< SEARCH[ \t]*\n(?P<search>.*?)^=======[ \t]*\n"
    r"(?P<replace>.*?)^>>>>>>> REPLACE",
    re.M | re.S,
)
_APPLIED_EDIT = re.compile(r"^(?:>\s*)?Applied edit to (\S[^\n]*?)\s*$", re.M)


def _call_ops(name: str, arguments: str, ctx: _Ctx, evidence: str) -> list[_Op]:
    try:
        args = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        args = {}
    if not isinstance(args, Mapping):
        args = {}
    lname = name.lower()
    path_arg = next((args[k] for k in _PATH_KEYS if isinstance(args.get(k), str)), None)
    sub = args.get("command") if isinstance(args.get("command"), str) else None
    content = next((args[k] for k in _CONTENT_KEYS if isinstance(args.get(k), str)), None)
    # editor-style calls: str_replace_editor {command: create|str_replace|..., path}, write_file {path, content}
    if path_arg is not None and (sub is None or sub in _EDITOR_WRITES or sub in _EDITOR_READS):
        p = _join(ctx.cwd, path_arg)
        if sub in _EDITOR_WRITES or (sub is None and _WRITE_NAME.search(lname)):
            mode = _EDITOR_WRITES.get(sub or "", "create" if re.search(r"write|create", lname) else "modify")
            ops: list[_Op] = []
            if p is not None:
                ops.append(_Op("write", (p,), evidence, content, mode))
                if mode == "create" and content is not None:
                    ctx.files[p] = content
                if lname == "create":
                    ctx.open_file = p  # SWE-agent's create also opens the file
            if content:
                replaced = args.get("old_str") or args.get("search")
                ops.extend(_content_ops(_added(replaced, content) if isinstance(replaced, str) else content, evidence))
            return ops
        if sub is None and _DELETE_NAME.search(lname):
            return [_Op("delete", (p,), evidence)] if p else []
        if lname == "open":
            ctx.open_file = p
        return []  # view / read / open
    # SWE-agent function calling: edit/insert act on the open file, create names its file
    if lname in ("edit", "insert", "append") and ctx.open_file and ("search" in args or "text" in args or "replace" in args):
        text = args.get("replace") or args.get("text")
        ops = [_Op("write", (ctx.open_file,), evidence, None, "modify")]
        if isinstance(text, str):
            search = args.get("search")
            ops.extend(_content_ops(_added(search, text) if isinstance(search, str) else text, evidence))
        return ops
    shell = next((args[k] for k in _SHELL_KEYS if isinstance(args.get(k), str)), None)
    if shell is None and arguments.strip() and not args:
        shell = arguments  # a raw command string instead of JSON
    if shell is not None:
        return _text_command_ops(shell, ctx)
    code = args.get("code")
    if isinstance(code, str) and ("python" in lname or "ipython" in lname):
        return _python_code_ops(code, ctx.cwd, evidence)
    return []


def _added(old: str, new: str) -> str:
    """The lines of ``new`` that ``old`` does not have (what an edit adds; its context lines are not new)."""
    have: dict[str, int] = {}
    for line in old.splitlines():
        have[line] = have.get(line, 0) + 1
    added = []
    for line in new.splitlines():
        if have.get(line, 0):
            have[line] -= 1
        else:
            added.append(line)
    return "\n".join(added)


def _content_ops(text: str, evidence: str) -> list[_Op]:
    """Names a written text uses: imports (for forbidden names) and its flag-like words."""
    ops = [_Op("written-use", (), _import_line(text, n) or evidence, extra=(n,)) for n in _python_imports(text)]
    flags = tuple(dict.fromkeys(re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", text)))
    if flags:
        ops.append(_Op("written-flags", (), evidence, extra=flags))
    return ops


def _text_command_ops(command: str, ctx: _Ctx) -> list[_Op]:
    """A shell command or a SWE-agent tool command (``create``, ``open``, ``edit N:M``, ``str_replace_editor``)."""
    m = _EDIT_BLOCK.match(command)
    if m:
        if not ctx.open_file:
            return []
        ev = _clip(command.splitlines()[0])
        return [_Op("write", (ctx.open_file,), ev, None, "modify"), *_content_ops(m.group("body"), ev)]
    first = command.strip().split(None, 1)
    head = first[0] if first else ""
    if head in ("create", "open", "str_replace_editor", "insert", "append", "goto", "scroll_up", "scroll_down",
                "search_file", "search_dir", "find_file", "submit", "view"):
        cmds = parse_shell(command.split("\n", 1)[0] if head != "str_replace_editor" else command)
        words = cmds[0].words if cmds else []
        ev = _clip(command.split("\n", 1)[0])
        if head == "create" and len(words) > 1:
            p = _join(ctx.cwd, words[1])
            if p:
                ctx.open_file = p
                return [_Op("write", (p,), ev, "", "create")]
            return []
        if head == "open" and len(words) > 1:
            ctx.open_file = _join(ctx.cwd, words[1])
            return []
        if head in ("insert", "append") and ctx.open_file:
            return [_Op("write", (ctx.open_file,), ev, None, "modify")]
        if head == "str_replace_editor" and len(words) > 2 and words[1] in _EDITOR_WRITES:
            p = _join(ctx.cwd, words[2])
            content = None
            for key in ("--file_text", "--new_str"):
                if key in words and words.index(key) + 1 < len(words):
                    content = words[words.index(key) + 1]
            ops = [_Op("write", (p,), ev, content, _EDITOR_WRITES[words[1]])] if p else []
            if content:
                ops.extend(_content_ops(content, ev))
            return ops
        return []
    return _shell_ops(command, ctx)


def _tool_outputs(messages: list[Message], index: int) -> dict[str | None, str]:
    """Results of the tool calls of the assistant message ``index``, by call id (None: the first result)."""
    out: dict[str | None, str] = {}
    for m in messages[index + 1 :]:
        if m.role != "tool":
            break
        out.setdefault(m.tool_call_id, m.text)
        out.setdefault(None, m.text)
    return out


def actions(messages: list[Message]) -> list[_Action]:
    """Every action of the history, in order, with its effects and (when present) its output."""
    out: list[_Action] = []
    files: dict[str, str] = {}
    shared = _Ctx("", files)  # tool-call agents keep one shell (cwd, open file) across actions
    text_actions = _runs_text_actions(messages)
    for i, m in enumerate(messages):
        if m.role == "tool":
            applied = [f.strip() for f in _APPLIED_EDIT.findall(m.text)]
            if applied:
                step = next((k for k in range(i - 1, -1, -1) if messages[k].role == "assistant"), i)
                ops = []
                for f in applied:
                    p = _join("", f)
                    if p is None:
                        continue
                    evidence = _clip(f"Applied edit to {f}")
                    ops.append(_Op("write", (p,), evidence, None, "modify"))
                    for block in _SEARCH_REPLACE.finditer(messages[step].text):
                        if block.group("file").strip().strip("`") == f:
                            ops.extend(_content_ops(_added(block.group("search"), block.group("replace")), evidence))
                out.append(_Action(step, ops, None))
            continue
        if m.role != "assistant":
            continue
        if m.tool_calls:
            results = _tool_outputs(messages, i)
            for call in m.tool_calls:
                evidence = _clip(f"{call.function.name} {call.function.arguments}")
                ops = _call_ops(call.function.name, call.function.arguments, shared, evidence)
                out.append(_Action(i, ops, results.get(call.id, results.get(None))))
            continue
        blocks = _shell_blocks(m.text) if text_actions else []
        if not blocks:
            continue
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        output = nxt.text if nxt is not None and nxt.role in ("user", "tool") else None
        if len(blocks) != 1 and not (output is not None and _is_returncode(output)):
            continue  # mini-swe-agent runs nothing when a reply holds several blocks (a format error follows)
        ctx = _Ctx("", files)  # text actions (mini-swe-agent) run each in a fresh subshell
        ops = []
        for block in blocks:
            ops.extend(_text_command_ops(block, ctx))
        out.append(_Action(i, ops, output))
    return out


# ----------------------------------------------------------------------------------------- working tree

_HEAD = "head"
_ABSENT = ("absent",)
_DIFF_HEADER = re.compile(r"^diff --git a/(\S+) b/(\S+)[ \t]*$", re.M)
_PLAIN_DIFF_OPTIONS = frozenset({"--cached", "--staged", "HEAD", "--no-color", "--no-ext-diff", "--no-pager"})
_CUT_SHORT = re.compile(r"elided|truncated|too long|omitted|\.\.\.\s*\(\d+ (?:more )?(?:lines|characters)", re.I)


class _Tree:
    """Versions of the files the history touched, relative to their content at the start.

    ``existed[k]`` is True when the file is known to have existed at the start (changed in place, deleted or
    restored by git before anything created it), None when its first event created it: such a file is taken to
    be untracked, so being absent again means unchanged."""

    def __init__(self) -> None:
        self.version: dict[str, tuple[str, ...]] = {}
        self.existed: dict[str, bool | None] = {}
        self.content: dict[str, str | None] = {}  # last full text, when known
        self.made_dirs: set[str] = set()
        self.stash: list[dict[str, tuple[tuple[str, ...], str | None]]] = []
        self.staged: set[str] = set()
        self.all_staged = False
        self.committed = False
        self._fresh = 0

    def find(self, path: str) -> str | None:
        """The key of a known file: "/testbed/a/b.py" and "a/b.py" name the same file."""
        if path in self.version:
            return path
        if path.startswith("/"):
            rel = [k for k in self.version if not k.startswith("/") and path.endswith("/" + k)]
            return max(rel, key=len) if rel else None
        absolute = [k for k in self.version if k.startswith("/") and k.endswith("/" + path)]
        return min(absolute, key=len) if absolute else None

    def key(self, path: str) -> str:
        found = self.find(path)
        if found is not None:
            return found
        self.version[path] = (_HEAD, path)
        self.existed[path] = None
        return path

    def keys_under(self, folder: str) -> list[str]:
        folder = folder.rstrip("/")
        if folder in ("", "."):
            return list(self.version)
        out = []
        for k in self.version:
            if k.startswith(folder + "/"):
                out.append(k)
            elif folder.startswith("/") and not k.startswith("/"):
                parts = folder.strip("/").split("/")
                if any(k.startswith("/".join(parts[j:]) + "/") for j in range(1, len(parts))):
                    out.append(k)
            elif not folder.startswith("/") and k.startswith("/") and f"/{folder}/" in k:
                out.append(k)
        return out

    def in_made_dir(self, path: str) -> bool:
        parent = posixpath.dirname(path.rstrip("/"))
        while parent not in ("", "/"):
            if parent in self.made_dirs:
                return True
            parent = posixpath.dirname(parent)
        return path.rstrip("/") in self.made_dirs

    def untouched(self, key: str) -> bool:
        return self.version[key] == (_HEAD, key) and self.existed.get(key) is None

    def differs(self, key: str) -> bool:
        v = self.version.get(key, (_HEAD, key))
        if v == (_HEAD, key):
            return False
        return not (v == _ABSENT and self.existed.get(key) is not True)

    def fresh(self) -> tuple[str, ...]:
        self._fresh += 1
        return ("new", str(self._fresh))

    def write(self, key: str, content: str | None, mode: str) -> None:
        if self.untouched(key) and mode != "create":
            self.existed[key] = True  # changed in place: it was there
        self.version[key] = self.fresh()
        if mode == "create":
            self.content[key] = content
        elif mode == "append" and content is not None and self.content.get(key) is not None:
            self.content[key] = (self.content[key] or "") + content
        else:
            self.content[key] = None

    def delete(self, key: str) -> None:
        if self.untouched(key):
            self.existed[key] = True  # removed before anything created it: it was there at the start
        self.version[key] = _ABSENT
        self.content[key] = None

    def revert(self, key: str) -> None:
        self.existed[key] = True
        self.version[key] = (_HEAD, key)
        self.content[key] = None

    def tracked(self, key: str) -> bool:
        return self.existed.get(key) is True


_NO_SUCH_FILE = re.compile(
    r"^(?:\S+: )?(?:cannot (?:remove|stat|touch|open|access) |can't read |can't open |cannot open )?"
    r"['\"‘`]?(?P<p>[^'\"’`:\n]+?)['\"’`]?: No such file or directory",
    re.M,
)


def _missing_paths(output: str | None) -> list[str]:
    """Paths a command's output says did not exist (``rm: cannot remove 'x': No such file or directory``)."""
    if not output:
        return []
    return [m.group("p").strip() for m in _NO_SUCH_FILE.finditer(output) if m.group("p").strip()]


def _same_file(path: str, named: str) -> bool:
    named = posixpath.normpath(named)
    return path == named or path.endswith("/" + named) or named.endswith("/" + path)


def _dir_like(path: str) -> bool:
    """A path that names a folder: ends with /, is the tree itself, or has no extension."""
    return path.endswith("/") or path in ("", ".") or "." not in posixpath.basename(path)


@dataclass
class _Hit:
    rule: Rule
    step: int
    evidence: str
    target: str
    final: bool = False


class _Checker:
    """Applies actions to the tree and records the contradictions they cause."""

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules
        self.tree = _Tree()
        self.hits: list[_Hit] = []
        self.pending: dict[str, list[int]] = {}  # key -> hits since the file last equalled its start
        self.installed: dict[str, list[int]] = {}  # package -> install hits
        self.written_uses: list[tuple[int, str]] = []  # (hit, file key) for names in written text
        self.branch: str | None = None
        self.stashed_pending: dict[str, list[int]] = {}

    def _active(self, kind: str, step: int) -> list[Rule]:
        return [r for r in self.rules if r.kind == kind and (r.message_index is None or r.message_index < step)]

    def _path_rules(self, key: str, step: int) -> list[Rule]:
        if _outside_tree(key) or key.startswith("~outside/"):
            return []
        out = []
        for r in self._active("protected-path", step):
            t = r.targets[0]
            if (t == "tests" and is_test_path(key)) or (t == "config" and is_config_path(key)) or (
                t not in ("tests", "config") and (_under(key, t) or posixpath.basename(key) == t)
            ):
                out.append(r)
        for r in self._active("only-under", step):
            if not _under(key, r.targets[0]):
                out.append(r)
        return out

    def _changed(self, key: str, step: int, evidence: str) -> None:
        if not self.tree.differs(key):
            self._restored(key)
            return
        for rule in self._path_rules(key, step):
            pend = self.pending.setdefault(key, [])
            if any(self.hits[h].rule.name == rule.name and self.hits[h].step == step for h in pend):
                continue
            self.hits.append(_Hit(rule, step, evidence, key))
            pend.append(len(self.hits) - 1)

    def _restored(self, key: str) -> None:
        self.pending.pop(key, None)

    def _after(self, keys: Iterable[str], step: int, evidence: str) -> None:
        for k in keys:
            self._changed(k, step, evidence)

    def apply(self, action: _Action) -> None:
        step = action.step
        tree = self.tree
        diff_seen = False
        missing = _missing_paths(action.output)
        for op in action.ops:
            kind = op.kind
            if missing and kind in ("write", "delete", "copy", "move", "touch", "revert") and any(
                _same_file(p, m) for p in op.paths for m in missing
            ):
                # the command said the file was not there: it did nothing to it
                op = _Op(kind, tuple(p for p in op.paths if not any(_same_file(p, m) for m in missing)),
                         op.evidence, op.content, op.mode, op.extra)
                if kind in ("copy", "move") and len(op.paths) < 2:
                    continue
            if kind == "write":
                for p in op.paths:
                    k = tree.key(p)
                    tree.write(k, op.content, op.mode)
                    self._changed(k, step, op.evidence)
            elif kind == "touch":
                for p in op.paths:
                    k = tree.key(p)
                    # touch only changes an existing file's time: a new file only where it cannot have existed
                    if tree.version[k] == _ABSENT or (tree.untouched(k) and tree.in_made_dir(k)):
                        tree.write(k, "", "create")
                        self._changed(k, step, op.evidence)
            elif kind == "mkdir":
                tree.made_dirs.update(p.rstrip("/") for p in op.paths)
            elif kind == "delete":
                for p in op.paths:
                    self._delete(p, step, op.evidence)
            elif kind in ("copy", "move"):
                src, dst = op.paths
                ks, kd = tree.key(src), tree.key(dst)
                if ks == kd:
                    continue
                tree.version[kd] = tree.version[ks]
                tree.content[kd] = tree.content.get(ks)
                self._changed(kd, step, op.evidence)
                if kind == "move":
                    tree.delete(ks)
                    self._changed(ks, step, op.evidence)
            elif kind == "revert":
                keys: list[str] = []
                for p in op.paths:
                    under = tree.keys_under(p)
                    found = tree.find(p)
                    if found is not None:
                        keys.append(found)
                    elif not under and not _dir_like(p):
                        keys.append(tree.key(p))
                    keys.extend(under)
                for k in dict.fromkeys(keys):
                    if tree.existed.get(k) is None and not tree.untouched(k):
                        continue  # created in the history: git does not know it, checkout fails
                    tree.revert(k)
                    self._changed(k, step, op.evidence)
            elif kind == "revert-all":
                for k in list(tree.version):
                    if tree.tracked(k) and tree.differs(k):
                        tree.revert(k)
                        self._restored(k)
            elif kind == "stash":
                saved: dict[str, tuple[tuple[str, ...], str | None]] = {}
                include_untracked = "untracked" in op.extra
                for k in list(tree.version):
                    if tree.differs(k) and (include_untracked or tree.tracked(k)):
                        saved[k] = (tree.version[k], tree.content.get(k))
                        tree.version[k] = (_HEAD, k) if tree.tracked(k) else _ABSENT
                        self.stashed_pending[k] = self.pending.pop(k, [])
                tree.stash.append(saved)
            elif kind in ("stash-pop", "stash-apply"):
                if tree.stash:
                    saved = tree.stash.pop() if kind == "stash-pop" else tree.stash[-1]
                    for k, (version, content) in saved.items():
                        tree.version[k] = version  # the stashed changes come back: same contradictions, not new ones
                        tree.content[k] = content
                        self.pending[k] = self.stashed_pending.pop(k, []) + self.pending.get(k, [])
            elif kind == "stash-drop":
                if tree.stash:
                    tree.stash.pop()
            elif kind == "clean":
                for p in op.paths or ("",):
                    found = tree.find(p)
                    for k in tree.keys_under(p) + ([found] if found else []):
                        if not tree.tracked(k) and tree.version[k] != _ABSENT:
                            tree.version[k] = _ABSENT
                            self._changed(k, step, op.evidence)
            elif kind == "stage-all":
                tree.all_staged = True
            elif kind == "stage":
                tree.staged.update(tree.key(p) for p in op.paths)
            elif kind == "unstage":
                if op.paths:
                    tree.staged.difference_update(tree.key(p) for p in op.paths)
                else:
                    tree.staged.clear()
                    tree.all_staged = False
            elif kind == "commit":
                tree.committed = True
            elif kind == "diff":
                if not diff_seen and action.output is not None:
                    diff_seen = True
                    self._diff_evidence(action, op, step)
            elif kind == "branch":
                self.branch = op.extra[0]
            elif kind == "push":
                self._push(op, step)
            elif kind == "install":
                self._install(op, step)
            elif kind == "uninstall":
                for pkg in op.extra:
                    for h in self.installed.pop(pkg, []):
                        self.hits[h].final = False
            elif kind in ("run", "use", "flags", "written-use", "written-flags"):
                self._names(op, step, action)

    def _delete(self, path: str, step: int, evidence: str) -> None:
        tree = self.tree
        found = tree.find(path)
        under = [k for k in tree.keys_under(path) if k != found]
        targets = ([found] if found is not None else []) + under
        if not targets:
            if tree.in_made_dir(path) or _dir_like(path):
                return  # a folder (or file in a folder) the history made: nothing that was there at the start
            targets = [tree.key(path)]
        for k in targets:
            if tree.version[k] != _ABSENT:
                tree.delete(k)
                self._changed(k, step, evidence)

    def _diff_evidence(self, action: _Action, op: _Op, step: int) -> None:
        """A ``git diff`` the agent ran: files it shows differ; a whole-tree diff shows the others do not."""
        output = action.output or ""
        tree = self.tree
        shown: list[str] = []
        sections = list(_DIFF_HEADER.finditer(output))
        for n, m in enumerate(sections):
            end = sections[n + 1].start() if n + 1 < len(sections) else len(output)
            head = output[m.end() : min(end, m.end() + 400)]
            k = tree.key(m.group(2))
            shown.append(k)
            if tree.differs(k):
                continue
            if re.search(r"^deleted file mode", head, re.M):
                tree.existed[k] = True
                tree.version[k] = _ABSENT
            else:
                if not re.search(r"^new file mode", head, re.M) and tree.untouched(k):
                    tree.existed[k] = True
                tree.version[k] = tree.fresh()
            self._changed(k, step, _clip(m.group(0)))
        opts = set(op.extra)
        if op.paths or tree.committed or _CUT_SHORT.search(output) or opts - _PLAIN_DIFF_OPTIONS:
            return
        cached = bool(opts & {"--cached", "--staged"})
        against_head = "HEAD" in opts
        stage_all = any(o.kind == "stage-all" for o in action.ops)
        for k in list(tree.version):
            if not tree.differs(k) or k in shown or _outside_tree(k) or k.startswith("~outside/"):
                continue
            tracked = tree.tracked(k)
            staged = tree.all_staged or k in tree.staged
            if cached and stage_all:
                covered = True  # git add -A && git diff --cached: the whole tree, untracked files included
            elif cached:
                covered = staged and tracked
            elif against_head:
                covered = tracked
            else:
                covered = tracked and not staged
            if covered:
                tree.version[k] = (_HEAD, k) if tracked else _ABSENT
                self._restored(k)

    def _push(self, op: _Op, step: int) -> None:
        rules = self._active("no-push", step)
        if not rules:
            return
        operands = list(op.extra)
        refspecs = operands[1:] if operands else []
        targets: list[str] = []
        for ref in refspecs:
            dst = ref.split(":", 1)[1] if ":" in ref else ref
            dst = dst.lstrip("+").removeprefix("refs/heads/")
            if dst in ("HEAD", "@"):
                dst = self.branch or ""
            if dst:
                targets.append(dst)
        if not refspecs and self.branch:
            targets.append(self.branch)
        for rule in rules:
            if not rule.targets:
                self.hits.append(_Hit(rule, step, op.evidence, ",".join(targets), True))
                continue
            for t in targets:
                if t in rule.targets:
                    self.hits.append(_Hit(rule, step, op.evidence, t, True))
                    break

    def _install(self, op: _Op, step: int) -> None:
        for rule in self._active("no-install", step):
            for pkg in op.extra:
                if not rule.targets or pkg in rule.targets:
                    self.hits.append(_Hit(rule, step, op.evidence, pkg, True))
                    self.installed.setdefault(pkg, []).append(len(self.hits) - 1)
        for rule in self._active("forbidden-name", step):
            name = rule.targets[0]
            if not name.startswith("-") and _norm_pkg(name) in op.extra:
                self.hits.append(_Hit(rule, step, op.evidence, name, True))
                self.installed.setdefault(_norm_pkg(name), []).append(len(self.hits) - 1)

    def _names(self, op: _Op, step: int, action: _Action) -> None:
        for rule in self._active("forbidden-name", step):
            name = rule.targets[0]
            if op.kind in ("flags", "written-flags"):
                hit = name.startswith("-") and any(f == name or f.startswith(name + "=") for f in op.extra)
            elif op.kind == "run":
                hit = not name.startswith("-") and op.extra[0] == name
            else:
                hit = not name.startswith("-") and any(
                    n == name or n.startswith(name + ".") or n.split(".")[0] == name for n in op.extra
                )
            if not hit:
                continue
            if any(h.rule.name == rule.name and h.step == step for h in self.hits):
                continue
            self.hits.append(_Hit(rule, step, op.evidence, name, False))
            if op.kind.startswith("written"):
                written = [o for o in action.ops if o.kind == "write" and o.paths]
                if written:
                    self.written_uses.append((len(self.hits) - 1, self.tree.key(written[0].paths[0])))

    def finish(self) -> list[Contradiction]:
        for key, idxs in self.pending.items():
            if self.tree.differs(key):
                for h in idxs:
                    self.hits[h].final = True
        for h, key in self.written_uses:
            self.hits[h].final = self.tree.differs(key)
        return [
            Contradiction(rule=h.rule.name, constraint=h.rule.constraint, step=h.step, evidence=h.evidence,
                          final=h.final, target=h.target)
            for h in self.hits
        ]


# ------------------------------------------------------------------------------------------- public


def count_contradictions(
    history: Iterable[Message | Mapping[str, Any]], *, constraints: Iterable[str] | None = None
) -> ContradictionReport:
    """Check the history's actions against the rules derived from its constraints (or from ``constraints``).

    ``history`` is OpenAI-format messages (dicts or ``Message``), as ``as_messages`` accepts. The caller's
    messages are not modified. Same input, same report."""
    messages = as_messages(history)
    if constraints is None:
        candidates: list[tuple[str, int | None]] = list(constraint_candidates(messages))
    else:
        candidates = [(str(c), None) for c in constraints]
    rules, unchecked = derive_rules(candidates)
    checker = _Checker(rules)
    for action in actions(messages):
        checker.apply(action)
    return ContradictionReport(contradictions=checker.finish(), unchecked=unchecked, rules=rules)


# ----------------------------------------------------------------------------------------------- CLI


def _report_json(path: str, report: ContradictionReport) -> dict[str, Any]:
    return {
        "file": path,
        "contradictions": [c.model_dump(mode="json") for c in report.contradictions],
        "unchecked": report.unchecked,
    }


def cmd_contradictions(args: argparse.Namespace) -> int:
    from .formats import load_history

    failed = False
    documents = []
    for path in args.files:
        try:
            messages = load_history(path, args.format)
            report = count_contradictions(messages)
        except (OfflineCompressError, ValueError) as err:
            print(f"offline-compress: error: {err}", file=sys.stderr, flush=True)
            failed = True
            continue
        document = _report_json(path, report)
        if args.json:
            documents.append(document)
        else:
            sys.stdout.write(json.dumps(document, ensure_ascii=False) + "\n")
            sys.stdout.flush()
    if args.json:
        sys.stdout.write(json.dumps(documents, ensure_ascii=False, indent=2) + "\n")
    return 2 if failed else 0


def add_contradictions_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``contradictions`` on the CLI's subparsers (``func`` is set)."""
    p = subparsers.add_parser(
        "contradictions",
        help="actions that break the user's constraints (one JSON object per file)",
        description="Check each history's actions against its constraints. Prints one JSON line per file "
        "({file, contradictions, unchecked}); --json prints one indented JSON array instead.",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="history files (any supported format; - for stdin)")
    p.add_argument("--format", default="auto", help="auto (default), openai, mini-swe-agent, swe-agent, openhands, aider")
    p.add_argument("--json", action="store_true", help="one indented JSON array of all files instead of JSON lines")
    p.set_defaults(func=cmd_contradictions)
    return p


__all__ = [
    "Contradiction",
    "ContradictionReport",
    "Rule",
    "add_contradictions_parser",
    "count_contradictions",
    "derive_rules",
    "is_config_path",
    "is_test_path",
    "parse_shell",
]
