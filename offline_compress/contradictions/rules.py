"""The rules: the typed rules and their report, path categories (test and configuration files), the
genuine user/system text they are read from, and the parsing of constraints into rules."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..history.conventions import is_tool_output
from ..history.messages import Message

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
_CONFIG_NAMES = frozenset(
    """pyproject.toml setup.cfg setup.py tox.ini pytest.ini noxfile.py .coveragerc .flake8 mypy.ini .pylintrc pylintrc
    .isort.cfg .pre-commit-config.yaml .editorconfig MANIFEST.in Pipfile Pipfile.lock poetry.lock environment.yml
    package.json package-lock.json yarn.lock tsconfig.json Cargo.toml go.mod""".split()
)
_REQUIREMENTS = re.compile(r"\Arequirements[\w.-]*\.txt\Z")


def is_test_path(path: str) -> bool:
    """A test file: a ``test``/``tests``/``testing`` folder on the path, or a test-runner file name."""
    parts = [p for p in path.split("/") if p]
    return bool(parts) and (any(p in _TEST_DIRS for p in parts[:-1]) or bool(_TEST_NAME.match(parts[-1])))


def is_config_path(path: str) -> bool:
    """A configuration file: a known build/tool configuration name, ``requirements*.txt``, or under ``.github/``."""
    parts = [p for p in path.split("/") if p]
    return bool(parts) and (
        parts[-1] in _CONFIG_NAMES or bool(_REQUIREMENTS.match(parts[-1])) or ".github" in parts[:-1]
    )


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


def _norm_pkg(spec: str) -> str:
    """Package name of an install spec: ``Foo[x]>=1.2`` -> ``foo``; ``_``/``.`` read as ``-``."""
    name = re.split(r"[\[<>=!~;@ ]", spec, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


# -------------------------------------------------------------------------------------- genuine messages

_SHELL_BLOCK = re.compile(r"```(?:bash|sh|shell|mswea_bash_command)[ \t]*\r?\n(.*?)^[ \t]*```", re.S | re.M)


def _is_returncode(text: str) -> bool:
    return text.lstrip().startswith("<returncode>")


def _runs_text_actions(messages: list[Message]) -> bool:
    """A history of a text-action agent (mini-swe-agent): its results come back as ``<returncode>`` messages.
    Elsewhere a fenced shell block in an assistant message is a suggestion, not something that ran."""
    return any(m.role == "user" and _is_returncode(m.text) for m in messages)


def constraint_candidates(messages: list[Message]) -> list[tuple[str, int | None]]:
    """The texts (with their index) that are the user's or the operator's own: system and developer messages, and
    user messages that are not tool output (``history.conventions``, the one definition the compressor uses too)."""
    return [
        (m.text, i)
        for i, m in enumerate(messages)
        if m.role in ("system", "developer") or (m.role == "user" and not is_tool_output(messages, i))
    ]


# ------------------------------------------------------------------------------------- constraint parsing

_NEG = (
    r"(?:do\s+not|don'?t|never|must\s+not|mustn'?t|should\s+not|shouldn'?t|may\s+not|cannot|can'?t|"
    r"(?:are|is)\s+not\s+allowed\s+to|not\s+allowed\s+to|avoid|refrain\s+from)"
)
_MODIFY_VERB = r"(?:modify|change|edit|touch|alter|update|rewrite|delete|remove)(?:ing|s)?"
_PROTECT = [
    re.compile(rf"\b{_NEG}\s+(?:to\s+)?{_MODIFY_VERB}\b\W*(?P<obj>.*)", re.I | re.S),
    re.compile(r"\b(?:leave)\s+(?P<obj>.+?)\s+(?:alone|untouched|unchanged|as\s+(?:it\s+is|they\s+are))\b", re.I),
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
    re.compile(
        rf"\b{_NEG}\s+(?:to\s+)?(?:add|adding)\s+(?P<obj>(?:any\s+|new\s+|other\s+|extra\s+|additional\s+|more\s+)*(?:packages|dependencies|libraries)\b[^.;!\n]*)",
        re.I,
    ),
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
    re.compile(
        r"\buse\s+(?P<x>`[^`]+`|[\w.-]+)\s*,?\s+(?:not|instead\s+of|rather\s+than)\s+(?P<y>`[^`]+`|[\w.-]+)(?P<rest>.*)",
        re.I,
    ),
    re.compile(r"\bprefer\s+(?P<x>`[^`]+`|[\w.-]+)\s+(?:over|to)\s+(?P<y>`[^`]+`|[\w.-]+)(?P<rest>.*)", re.I),
    re.compile(rf"\b{_NEG}\s+(?:to\s+)?(?:use|using)\s+(?:the\s+)?(?P<y>`[^`]+`|--?[\w-]+|[\w.-]+)(?P<rest>.*)", re.I),
    re.compile(r"\bwithout\s+using\s+(?:the\s+)?(?P<y>`[^`]+`|--?[\w-]+|[\w.-]+)(?P<rest>.*)", re.I),
]
_FORBID_NAME = re.compile(r"\A(?:--?[A-Za-z][\w-]*|[A-Za-z_][\w.-]*)\Z")
_FORBID_STOP = frozenset(  # words after "use"/"install" that are no name
    """a an the any it this that these those them more other new multiple interactive your my our their its such same
    different one two all each every some no only just too much many so very external additional extra""".split()
)
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


def _first_match(patterns: list[re.Pattern[str]], text: str) -> re.Match[str] | None:
    """The match of the first of ``patterns`` that matches ``text`` (the later ones are not tried)."""
    return next((m for m in (p.search(text) for p in patterns) if m), None)


def _rule_specs(sentence: str) -> list[tuple[RuleKind, tuple[str, ...], int]]:
    """(kind, targets, priority) of every rule a sentence states; priority ranks explicit prohibitions first."""
    specs: list[tuple[RuleKind, tuple[str, ...], int]] = []
    m = _first_match(_PROTECT, sentence) or _PROTECT_PASSIVE.search(sentence)
    if m:
        obj = m.group("obj") or m.groupdict().get("obj2") or ""  # the passive form has two alternatives
        specs.extend(("protected-path", (t,), 0) for t in _protected_targets(obj))
    if _NON_TEST.search(sentence):
        specs.append(("protected-path", ("tests",), 1))
    m = _first_match(_ONLY_UNDER, sentence)
    if m:
        folder = _unquote_name(m.group("path"))
        if folder and folder.lower() not in ("the", "this", "that", "order", "place", "case"):
            specs.append(("only-under", (folder,), 0))
    m = _first_match(_NO_INSTALL, sentence)
    if m:
        obj = m.group("obj") or ""
        if _ALL_PACKAGES.search(obj) or not obj.strip():
            specs.append(("no-install", (), 0))
        else:
            names = [_unquote_name(t) for t in re.split(r"\s*(?:,|\band\b|\bor\b|\s)\s*", obj.strip()) if t.strip()]
            names = [n for n in names if _FORBID_NAME.match(n) and n.lower() not in _FORBID_STOP]
            if names:
                specs.append(("no-install", tuple(sorted(set(_norm_pkg(n) for n in names))), 0))
    m = _NO_PUSH.search(sentence)
    if m:
        branches: list[str] = []
        for target in _PUSH_TARGET.finditer(m.group("obj")):
            b = _unquote_name(target.group("b"))
            if b.lower() in _REMOTE_WORDS:
                continue
            branches.extend(_DEFAULT_BRANCHES if b in _DEFAULT_BRANCHES else [b])
        specs.append(("no-push", tuple(dict.fromkeys(branches)), 0))
    for pattern in _FORBID:
        m = pattern.search(sentence)
        if m and _FORBID_REST.match(m.group("rest")):
            y = _unquote_name(m.group("y"))
            x = _unquote_name(m.groupdict().get("x") or "")  # "use X, not Y": Y is no name to forbid when it is X
            if _FORBID_NAME.match(y) and y.lower() not in _FORBID_STOP and y != x:
                specs.append(("forbidden-name", (y,), 0))
                break
    return specs


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
            constraint = _clip(sentence, CONSTRAINT_LIMIT)
            if not specs:
                if _IMPERATIVE.search(sentence) and constraint not in unchecked:
                    unchecked.append(constraint)
                continue
            for kind, targets, priority in specs:
                name = f"{kind}:{','.join(targets)}" if targets else kind
                rule = Rule(name=name, kind=kind, constraint=constraint, message_index=index, targets=targets)
                order += 1
                if name not in found or (priority, order) < found[name][:2]:
                    found[name] = (priority, order, rule)
    rules = [r for _, _, r in sorted(found.values(), key=lambda t: t[1])]
    return rules, unchecked
