"""Command semantics: what a shell command line does, as (tool, target, files read, files written, read-only).

The program that names a call is the heaviest part of the line (an in-place edit beats a run, a run beats setup
and pipe filters); files come from arguments, redirections, heredoc bodies, Python snippets and diffs.
SWE-agent's text-interface commands (open, edit, …) are read with the state they depend on (the open file).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import replace

from ..history.shell import Command, parse_shell
from ..history.tools import READ_ONLY_TOOLS

MAX_TARGET_CHARS = 200

_NOISE = frozenset(
    "cd pushd popd export source . set unset true false : sleep clear exit wait { } then fi do done else "
    "if for while echo printf alias shopt ulimit".split()
)
# The shell's own syntax: never the name of a call while the line runs anything else (a `for` loop's `done`)
_SYNTAX = frozenset("then fi do done else elif if for while until case esac in select function { } ! [[ ]]".split())
_BODY_KEYWORDS = frozenset("do then else { !".split())
_WRAPPERS = frozenset("sudo time nohup env command builtin exec stdbuf nice".split())
_READERS = frozenset("cat head tail less more nl wc stat file strings xxd hexdump od bat view md5sum sha256sum".split())
_SEARCHERS = frozenset("grep egrep fgrep rg ag ack".split())
_PYTHON = re.compile(r"\Apython(?:\d+(?:\.\d+)?)?\Z")
_TEST_RUNNERS = frozenset("pytest py.test nosetests tox".split())
# Installers, builds and their kin: named by their first words (pip install x, make test)
_INSTALLERS = frozenset("pip pip3 npm yarn pnpm cargo go make apt-get apt conda uv poetry docker kubectl".split())
_READ_ONLY_WORDS = _READERS | _SEARCHERS | frozenset("sed ls find tree".split()) | READ_ONLY_TOOLS
# Options that take a value, per program (so the value is not taken for a path).
_OPT_VALUES = {
    "head": {"-n", "-c"},
    "tail": {"-n", "-c"},
    "grep": {"-e", "-f", "-m", "-A", "-B", "-C", "-d", "-D"},
    "rg": {"-e", "-f", "-m", "-A", "-B", "-C", "-g", "-t", "-T", "--type", "--glob"},
    "sed": {"-e", "-f", "-l"},
    "pytest": {"-k", "-m", "-p", "-c", "-W", "-o", "-n", "--rootdir", "--deselect", "--ignore", "--tb"},
    "nl": {"-b", "-w", "-s", "-v", "-i", "-n"},
    "ssh": set("-b -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w".split()),
    "scp": set("-c -D -F -i -J -l -o -P -S".split()),
}
SWE_EDIT_COMMANDS = frozenset({"edit", "insert", "append"})
EDITOR_WRITE_COMMANDS = frozenset(
    {"create", "str_replace", "insert", "undo_edit", "write", "append", "edit", "overwrite"}
)

_PY_WRITE_OPEN = re.compile(
    r"""open\(\s*(?:[rRfFbB]{0,2})(['"])([^'"\n]{1,300})\1\s*,\s*(?:mode\s*=\s*)?(?:[rRbB]{0,2})(['"])(?:[wax]|r\+)[^'"\n]{0,3}\3"""
)
_PY_WRITE_OPEN_VAR = re.compile(r"""open\(\s*([A-Za-z_]\w*)\s*,\s*(?:mode\s*=\s*)?(['"])(?:[wax]|r\+)[^'"\n]{0,3}\2""")
_PY_WRITE_PATH = re.compile(r"""Path\(\s*(?:[rRfF]?)(['"])([^'"\n]{1,300})\1\s*\)\s*\.\s*write_(?:text|bytes)""")
_PY_WRITE_PATH_VAR = re.compile(r"""\b([A-Za-z_]\w*)\s*\.\s*write_(?:text|bytes)\(""")
_PY_READ_OPEN = re.compile(r"""open\(\s*(?:[rRfF]?)(['"])([^'"\n]{1,300})\1\s*(?:\)|,\s*(?:mode\s*=\s*)?['"]r['"])""")
_PY_STR_ASSIGN = re.compile(
    r"""^[ \t]*([A-Za-z_]\w*)[ \t]*=[ \t]*(?:Path\()?[rRfF]?(['"])([^'"\n]{1,300})\2\)?[ \t]*(?:#.*)?$""", re.M
)
_DIFF_FILE = re.compile(
    r"^(?:diff --git a/(\S+) b/(\S+)|\+\+\+ (?:b/)?(\S+)|\*\*\* (?:Update|Add|Delete) File: (\S+))", re.M
)
_URL = re.compile(r"\A[a-z][a-z0-9+.-]*://\S+\Z", re.I)


def clean_path(p: str) -> str | None:
    """A word that plausibly names a file, normalised a little ("./x" -> "x"); None otherwise."""
    p = p.strip()
    if not p or p in (".", "..", "-", "/", "/dev/null", "/dev/stdout", "/dev/stderr", "{}", "~"):
        return None
    if p.lower() in ("nul", "nul:"):  # Windows' null device (``2>nul``), a file of no one
        return None
    if any(ch in p for ch in "*?$`{}\n\t ") or p.startswith("-") or p.startswith("&") or "://" in p:
        return None
    while p.startswith("./"):
        p = p[2:]
    while "/./" in p:
        p = p.replace("/./", "/")
    return p or None


def looks_like_file(p: str) -> bool:
    base = p.rstrip("/").rsplit("/", 1)[-1]
    return not p.endswith("/") and "." in base.strip(".")


def shorten(s: str, limit: int = MAX_TARGET_CHARS) -> str:
    s = " ".join(s.split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _positional(words: list[str], prog: str) -> tuple[list[str], dict[str, str]]:
    """Split arguments into positionals and {option: value} for options known to take a value."""
    takes = _OPT_VALUES.get(prog, set())
    pos: list[str] = []
    opts: dict[str, str] = {}
    skip = False
    for k, w in enumerate(words):
        if skip:
            skip = False
            continue
        if w == "--":
            pos.extend(words[k + 1 :])
            break
        if w.startswith("-") and len(w) > 1:
            if w in takes and k + 1 < len(words):
                opts[w] = words[k + 1]
                skip = True
            elif "=" in w:
                name, _, val = w.partition("=")
                opts[name] = val
            else:
                opts.setdefault(w, "")
            continue
        pos.append(w)
    return pos, opts


def _python_io(code: str) -> tuple[list[str], list[str]]:
    """Files a Python snippet opens for reading and writing (literal paths and simple variables)."""
    names = {m.group(1): m.group(3) for m in _PY_STR_ASSIGN.finditer(code)}
    writes = [m.group(2) for m in _PY_WRITE_OPEN.finditer(code)]
    writes += [names[m.group(1)] for m in _PY_WRITE_OPEN_VAR.finditer(code) if m.group(1) in names]
    writes += [m.group(2) for m in _PY_WRITE_PATH.finditer(code)]
    writes += [names[m.group(1)] for m in _PY_WRITE_PATH_VAR.finditer(code) if m.group(1) in names]
    reads = [m.group(2) for m in _PY_READ_OPEN.finditer(code)]
    return reads, writes


def diff_files(text: str) -> list[str]:
    paths = (m.group(2) or m.group(3) or m.group(4) for m in _DIFF_FILE.finditer(text))
    return [p for p in paths if p and p != "/dev/null"]


class _Analysis:
    __slots__ = ("tool", "target", "reads", "writes", "weight", "piped")

    def __init__(
        self, tool: str, target: str = "", reads: Iterable[str] = (), writes: Iterable[str] = (), weight: int = 2
    ):
        self.tool = tool
        self.target = target
        self.reads = [p for p in map(clean_path, reads) if p]
        self.writes = [p for p in map(clean_path, writes) if p]
        self.weight = weight  # 0 noise, 1 pipe filter/inspection, 2 real work, 3 in-place edit
        self.piped = False  # reads the output of the command before it (``git log | head``)


def _strip_prefixes(words: list[str]) -> list[str]:
    """The words of a command without a body's keyword, VAR=value prefixes and wrappers (sudo, timeout 5, …)."""
    while words and words[0] in _BODY_KEYWORDS:
        words.pop(0)  # `do sed -i ...`: a loop's or a branch's body is the command after the keyword
    while words and re.fullmatch(r"[A-Za-z_]\w*=.*", words[0], re.S):
        words.pop(0)  # VAR=value prefixes
    while words and (words[0] in _WRAPPERS or words[0] == "timeout"):
        head = words.pop(0)
        if head == "timeout" and words and not words[0].startswith("-"):
            words.pop(0)  # the duration
        while words and words[0].startswith("-"):
            words.pop(0)
    return words


def _analyse_simple(s: Command, state: ShellState) -> _Analysis:
    """What one simple command does; the groups of programs are tried in order (the first that knows it wins)."""
    words = _strip_prefixes(list(s.words))
    redirect_writes = [t for op, t in s.redirects if ">" in op]
    redirect_reads = [t for op, t in s.redirects if op in ("<", "0<")]
    if not words:
        first = redirect_writes[0] if redirect_writes else ""
        return _Analysis("sh", first, redirect_reads, redirect_writes, 1 if redirect_writes else 0)
    prog = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    if prog in ("bash", "sh", "zsh") and len(args) >= 2 and args[0] in ("-c", "-lc", "-ec"):
        inner, _ = _analyse_command(args[1], state)
        return inner[0] if inner else _Analysis(prog)
    if prog in ("uv", "poetry", "pipenv", "conda") and args[:1] == ["run"]:
        return _analyse_simple(replace(s, words=args[1:]), state)
    if _PYTHON.match(prog) and args[:2] == ["-m", "pytest"] or prog in _TEST_RUNNERS:
        rest = args[2:] if _PYTHON.match(prog) else args
        pos, opts = _positional(rest, "pytest")
        target = " ".join(pos + ([f"-k {opts['-k']}"] if "-k" in opts else []))
        return _Analysis("pytest" if prog not in ("tox", "nosetests") else prog, target)
    if _PYTHON.match(prog):
        return _analyse_python(args, s, state, redirect_writes)
    if prog in _NOISE:
        if prog in ("echo", "printf") and redirect_writes:
            return _Analysis(prog, redirect_writes[0], (), redirect_writes)
        return _Analysis(prog, " ".join(args[:1]), weight=0)
    if (found := _analyse_file_io(prog, args, s, state, redirect_reads, redirect_writes)) is not None:
        return found
    if (found := _analyse_search(prog, args, redirect_writes)) is not None:
        return found
    if prog == "git":
        return _analyse_git(args, s, state)
    if (found := _analyse_change(prog, args, s, state, redirect_writes)) is not None:
        return found
    if (found := _analyse_swe_agent(prog, args, state)) is not None:
        return found
    # an option's value is not what the call acts on, where the program's options are known (ssh -o X host)
    pos = _positional(args, prog)[0] if prog in _OPT_VALUES else [a for a in args if not a.startswith("-")]
    # a call of options only (netstat -an, scutil --dns) is told apart from the program's other calls by them
    target = " ".join(pos[:3]) or " ".join(args[:3])
    return _Analysis(prog, target, redirect_reads, redirect_writes, 2)


def _analyse_file_io(
    prog: str,
    args: list[str],
    s: Command,
    state: ShellState,
    redirect_reads: list[str],
    redirect_writes: list[str],
) -> _Analysis | None:
    """Programs that read or write the files they name: cat, tee, the readers, sed, perl/awk -i; None for others."""
    if prog == "cat" or prog == "tee":
        pos, _ = _positional(args, prog)
        if prog == "tee":
            return _Analysis("tee", ", ".join(pos), (), pos, 2)
        writes = redirect_writes
        if s.heredoc is not None:
            for w in writes:
                state.bodies[w] = s.heredoc  # a file written here may be run or applied later in the history
        if writes:
            return _Analysis("cat", writes[0], pos, writes, 2)
        return _Analysis("cat", ", ".join(pos), pos + redirect_reads, (), 2)
    if prog in _READERS:
        pos, _ = _positional(args, prog)
        if prog in ("head", "tail"):
            pos = [p for p in pos if not re.fullmatch(r"[+-]?\d+", p)]
        return _Analysis(prog, ", ".join(pos), pos + redirect_reads, redirect_writes, 2)
    if prog == "sed":
        pos, opts = _positional(args, "sed")
        inplace = any(o.startswith("--in-place") or (not o.startswith("--") and "i" in o[1:]) for o in opts)  # -i, -ni
        files = pos if ("-e" in opts or "-f" in opts) else pos[1:]
        if inplace:
            return _Analysis("sed", ", ".join(files), (), files, 3)
        return _Analysis("sed", ", ".join(files), files + redirect_reads, redirect_writes, 2)
    if prog in ("perl", "awk", "gawk") and any(a.startswith(("-i", "-pi")) for a in args):
        files = [a for a in args if not a.startswith("-")][1:]
        return _Analysis(prog, ", ".join(files), (), files, 3)
    return None


def _analyse_search(prog: str, args: list[str], redirect_writes: list[str]) -> _Analysis | None:
    """Searches and listings: the grep family, git grep, find, ls/tree/du; None for other programs."""
    if prog in _SEARCHERS or (prog == "git" and args[:1] == ["grep"]):
        if prog == "git":
            args = args[1:]
        pos, opts = _positional(args, "rg" if prog == "rg" else "grep")
        pattern = opts.get("-e") or (pos.pop(0) if pos else "")
        paths = pos
        target = pattern + (" in " + " ".join(paths) if paths else "")
        reads = [p for p in paths if looks_like_file(p)]
        return _Analysis("grep" if prog in ("egrep", "fgrep") else prog, target, reads, redirect_writes, 2)
    if prog == "find":
        dirs = list(itertools.takewhile(lambda a: not a.startswith("-") and a not in ("(", "!"), args))
        k = len(dirs)
        names = [
            args[j + 1] for j in range(k, len(args) - 1) if args[j] in ("-name", "-iname", "-path", "-ipath", "-regex")
        ]
        target = " ".join(names) + (" in " + " ".join(dirs) if dirs and names else " ".join(dirs) if dirs else "")
        return _Analysis("find", target.strip(), (), (), 2)
    if prog in ("ls", "tree", "du"):
        pos, _ = _positional(args, prog)
        return _Analysis(prog, " ".join(pos) or ".", (), (), 2)
    return None


def _analyse_change(
    prog: str, args: list[str], s: Command, state: ShellState, redirect_writes: list[str]
) -> _Analysis | None:
    """Changes: patch, mv/cp, rm/touch, downloads, installers and builds; None for other programs."""
    if prog == "patch":
        pos, opts = _positional(args, "patch")
        body = s.heredoc
        for op, t in s.redirects:
            if op == "<":
                body = state.bodies.get(clean_path(t) or "", body)
        patch_file = opts.get("-i") or opts.get("--input")
        if patch_file:
            body = state.bodies.get(clean_path(patch_file) or "", body)
        files = pos[:1] if pos else (diff_files(body) if body else [])
        return _Analysis("patch", ", ".join(files), (), files, 3)
    if prog in ("mv", "cp"):
        pos, _ = _positional(args, prog)
        if len(pos) >= 2:
            srcs, dst = pos[:-1], pos[-1]
            target = f"{' '.join(srcs)} -> {dst}"
            return _Analysis(prog, target, srcs if prog == "cp" else (), ([*srcs, dst] if prog == "mv" else [dst]), 2)
        return _Analysis(prog, " ".join(pos))
    if prog in ("rm", "touch", "unlink", "truncate"):
        pos, _ = _positional(args, prog)
        return _Analysis(prog, " ".join(pos), (), pos, 2)
    if prog in ("curl", "wget", "http", "httpie"):
        urls = [a for a in args if _URL.match(a)] or [a for a in args if not a.startswith("-")][:1]
        return _Analysis(prog, urls[0] if urls else "", (), redirect_writes, 2)
    if prog in _INSTALLERS:
        pos = [a for a in args if not a.startswith("-")]
        return _Analysis(prog, " ".join(pos[:4]), (), redirect_writes, 2)
    return None


def _analyse_swe_agent(prog: str, args: list[str], state: ShellState) -> _Analysis | None:
    """SWE-agent's text-interface commands and the file editors (open, edit, find_file, str_replace_editor, …)."""
    if prog == "open":
        pos = [a for a in args if not a.startswith("-")]
        if pos:
            state.open_file = pos[0]
        return _Analysis("open", pos[0] if pos else "", pos[:1], (), 2)
    if prog == "create":
        if args:
            state.open_file = args[0]
        return _Analysis("create", args[0] if args else "", (), args[:1], 2)
    if prog in SWE_EDIT_COMMANDS:
        f = state.open_file or ""  # edit/insert/append act on the file the last open or create named
        return _Analysis(prog, f, (), [f] if f else [], 3)
    if prog in ("goto", "scroll_up", "scroll_down"):
        return _Analysis(prog, state.open_file or "", (), (), 1)
    if prog in ("find_file", "search_dir", "search_file"):
        target = args[0] if args else ""
        if len(args) > 1:
            target += " in " + args[1]
        reads = args[1:2] if prog == "search_file" else []
        return _Analysis(prog, target, reads, (), 2)
    if prog in ("str_replace_editor", "edit_file", "file_editor"):
        sub = args[0] if args else ""
        path = args[1] if len(args) > 1 else ""
        if sub in EDITOR_WRITE_COMMANDS:
            return _Analysis(prog, path, (), [path], 3)
        return _Analysis(prog, path, [path] if sub == "view" and looks_like_file(path) else [], (), 2)
    return None


def _analyse_python(args: list[str], s: Command, state: ShellState, redirect_writes: list[str]) -> _Analysis:
    if args[:1] == ["-m"] and len(args) > 1:
        mod = args[1]
        if mod == "pip":
            pos = [a for a in args[2:] if not a.startswith("-")]
            return _Analysis("pip", " ".join(pos[:4]), (), redirect_writes)
        return _Analysis("python", f"-m {mod}", (), redirect_writes)
    code, target = None, ""
    for k, a in enumerate(args):
        if a == "-c" and k + 1 < len(args):
            code, target = args[k + 1], "-c"
        elif a == "-":
            code, target = s.heredoc or "", "-"
        elif a.startswith("-"):
            continue
        else:
            code, target = state.bodies.get(clean_path(a) or "", None), a  # a script this history wrote earlier
        break
    if not args and s.heredoc is not None:
        code, target = s.heredoc, "-"
    reads: list[str] = []
    writes = list(redirect_writes)
    if code:
        r, w = _python_io(code)
        reads += r
        writes += w
    return _Analysis("python", target, reads, writes)


def _analyse_git(args: list[str], s: Command, state: ShellState) -> _Analysis:
    k = 0
    while k < len(args) and args[k].startswith("-"):
        k += 2 if args[k] in ("-C", "-c") else 1
    sub = args[k] if k < len(args) else ""
    rest = args[k + 1 :]
    pos = [a for a in rest if not a.startswith("-")]
    target = " ".join([sub, *pos[:3]]).strip()
    writes: list[str] = []
    if sub in ("apply", "am"):
        body = s.heredoc
        for p in pos:
            body = state.bodies.get(clean_path(p) or "", body)
        for op, t in s.redirects:
            if op == "<":
                body = state.bodies.get(clean_path(t) or "", body)
        if body and "--check" not in rest and "--stat" not in rest:
            writes = diff_files(body)
    elif sub in ("checkout", "restore") and "--" in rest:
        writes = rest[rest.index("--") + 1 :]
    elif sub in ("rm", "mv"):
        writes = pos
    weight = 3 if writes else 2 if sub not in ("status", "log", "diff", "show", "add") else 1
    return _Analysis("git", target, (), writes, weight)


class ShellState:
    """What later commands need from earlier ones: heredoc file bodies, SWE-agent's open file and directory."""

    __slots__ = ("bodies", "open_file", "cwd")

    def __init__(self) -> None:
        self.bodies: dict[str, str] = {}
        self.open_file: str | None = None
        self.cwd: str | None = None

    def relative(self, paths: Iterable[str]) -> list[str]:
        """Paths under the known working directory, made relative (one name per file in the lists)."""
        return relative_to(self.cwd, paths)


def relative_to(cwd: str | None, paths: Iterable[str]) -> list[str]:
    """``paths`` under the absolute directory ``cwd``, made relative to it; the others as they are."""
    if not cwd or cwd == "/" or not cwd.startswith("/"):
        return list(paths)
    prefix = cwd.rstrip("/") + "/"
    return [p[len(prefix) :] if p.startswith(prefix) and len(p) > len(prefix) else p for p in paths]


def _analyse_command(command: str, state: ShellState) -> tuple[list[_Analysis], str | None]:
    """The analysis of each simple command, and the directory the line starts with ``cd`` into (if any)."""
    out = []
    cwd = None
    for k, s in enumerate(parse_shell(command)):
        if k == 0 and len(s.words) == 2 and s.words[0] == "cd":
            cwd = s.words[1]
        a = _analyse_simple(s, state)
        if s.piped and not a.writes:
            a.weight = min(a.weight, 1)  # after a pipe: a consumer/formatter of the real work
        a.piped = s.piped
        out.append(a)
    return out, cwd


def summarise_command(command: str, state: ShellState) -> tuple[str, str, list[str], list[str], bool]:
    """(tool, target, reads, writes, read_only) of a whole command line."""
    head = command.lstrip().split(None, 1)[:1]
    if head and head[0] in SWE_EDIT_COMMANDS:
        command = command.lstrip().split("\n", 1)[0]  # SWE-agent edit: the lines after the first are file text
    parts, cwd = _analyse_command(command, state)
    if not parts:
        return "sh", "", [], [], True
    # The last of the heaviest parts names the call: an in-place edit beats a run, a run beats setup
    # (cd, echo) and pipe filters, and after writing a script the run that follows is the point. Between two
    # inspections the one a pipe feeds wins (git log | head: git).
    best = max(range(len(parts)), key=lambda k: (parts[k].weight, parts[k].tool not in _SYNTAX, not parts[k].piped, k))
    main = parts[best]
    # A line that starts in a directory (``cd /testbed && ...``: each command of such an agent runs in a fresh
    # shell) names its files relative to it, whether a word says ``x.py`` or ``/testbed/x.py``: one name per file
    reads = relative_to(cwd, (p for a in parts for p in a.reads))
    writes = relative_to(cwd, (p for a in parts for p in a.writes))
    read_only = not writes and all(a.tool in _READ_ONLY_WORDS or a.weight < 2 for a in parts)
    return main.tool, shorten(relative_to(cwd, [main.target])[0]), reads, writes, read_only
