"""Exact fact extraction from a history, by code alone (no model).

A tiny local model cannot be trusted to copy text or find facts, so everything that must be exact comes from
here: tool calls with their targets and outcomes, failed commands with the line that says why, files read and
changed, the task statement, and candidate user constraints (verbatim substrings of user/system text).

Two call conventions are understood:

(a) canonical: assistant ``tool_calls`` answered by ``tool`` messages (matched by ``tool_call_id``, else in order);
(b) text: an assistant message with a ```bash (or ```mswea_bash_command) block is the call and the next ``user``
    message is its result when it is harness output (``<returncode>…``, a timeout or format-error notice, the
    submission diff). SWE-agent text actions (a bare ``` block, answered by a user message ending in ``bash-$``)
    are read the same way.

Such user messages are TOOL OUTPUT everywhere (``is_tool_output``): constraints never come from them, which is
the main defence against prompt injection through command output.

Everything here is a pure, deterministic function of the messages; regexes are precompiled and linear.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from .messages import Message, parse_message

Outcome = Literal["success", "error", "partial"]

MAX_CONSTRAINTS = 40
MAX_CONSTRAINT_CHARS = 600
MAX_ERROR_LINE_CHARS = 300
MAX_TARGET_CHARS = 200
DEFAULT_TASK_CHARS = 1500


# --------------------------------------------------------------------------------------------------- models


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolEvent(_Frozen):
    """One tool call and what came of it."""

    call_index: int  # index of the assistant message that made the call
    result_index: int | None = None  # index of the message holding its result; None: never answered
    call_id: str | None = None
    tool: str  # function name; for shell commands the program (sed, grep, pytest, git, …)
    target: str = ""  # what it acted on: path, "pattern in path", test id, URL (derived, may be shortened)
    command: str  # the exact command text, or the exact arguments JSON of a function call, untruncated
    outcome: Outcome | None = None  # None when there is no result
    exit_code: int | None = None
    error_line: str | None = None  # verbatim line of the result that says why (a substring of it)
    files_read: tuple[str, ...] = ()
    files_changed: tuple[str, ...] = ()


class FailedCommand(_Frozen):
    """A call whose outcome was ``error``: what was tried (exact) and the line that says why (verbatim)."""

    approach: str
    reason_failed: str
    call_index: int
    result_index: int | None = None
    tool: str = ""
    target: str = ""


class Constraint(_Frozen):
    """A sentence/line of a genuine user, system or developer message that reads as an instruction.

    ``text == messages[message_index].text[start:start + len(text)]`` always holds.
    """

    text: str
    message_index: int
    role: str
    start: int
    strength: int  # 2: strong marker (must/never/only/ALL-CAPS…), 1: weak (should/avoid/please…)


class ExtractedDecision(_Frozen):
    """A decision in the agent's own words (verbatim spans of the assistant message before a change)."""

    decision: str
    rationale: str
    message_index: int


class Facts(_Frozen):
    task: str = ""  # the first user message's task statement (a verbatim prefix of a section of it)
    task_index: int | None = None
    tool_events: list[ToolEvent] = []
    failed_attempts: list[FailedCommand] = []
    files_read: list[str] = []
    files_changed: list[str] = []
    constraint_candidates: list[Constraint] = []
    decisions: list[ExtractedDecision] = []


# ------------------------------------------------------------------------------------- message conventions

# The fences mini-swe-agent runs (close to its own regex ```bash\s*\n(.*?)\n```).
_BASH_BLOCK = re.compile(r"```(?:bash|mswea_bash_command)[ \t]*\n(.*?)\n?```", re.DOTALL)
_FENCE_LINE = re.compile(r"^[ \t]*```([^`\n]*)$", re.M)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_MINI_TIMEOUT = re.compile(r"\AThe last command <command>")
_MINI_FORMAT_ERROR = re.compile(r"\A\s*Please always provide EXACTLY ONE action")
_SUBMIT_SENTINELS = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")
_SWE_AGENT_PROMPT = re.compile(r"\(Current directory: [^\n]*\)\s*\n\s*bash-\$\s*\Z")


def _as_message_list(messages: Sequence[Message | Mapping[str, Any]]) -> list[Message]:
    return [m if isinstance(m, Message) else parse_message(m, index=i) for i, m in enumerate(messages)]


def bash_blocks(text: str) -> list[str]:
    """The ```bash / ```mswea_bash_command blocks of a text, as mini-swe-agent would run them."""
    return [m.group(1) for m in _BASH_BLOCK.finditer(text)]


def _bare_action(text: str) -> str | None:
    """SWE-agent text actions: the body of the last fenced block without a language tag."""
    last = None
    opened: re.Match[str] | None = None
    for m in _FENCE_LINE.finditer(text):
        if opened is None:
            opened = m
        elif not m.group(1).strip():  # a bare fence closes the open block
            if not opened.group(1).strip():
                last = text[opened.end() + 1 : m.start()].rstrip("\n")
            opened = None
    return last


def _prev_assistant_commands(messages: Sequence[Message], i: int) -> tuple[list[str], str | None]:
    if i == 0 or messages[i - 1].role != "assistant" or messages[i - 1].tool_calls:
        return [], None
    text = messages[i - 1].text
    return bash_blocks(text), _bare_action(text)


def is_tool_output(messages: Sequence[Message] | Sequence[Mapping[str, Any]], i: int) -> bool:
    """True when message ``i`` carries tool/harness output rather than words of a person.

    ``tool`` messages always; ``user`` messages when they are a mini-swe-agent result (``<returncode>``), a
    harness notice answering an assistant command (timeout, format error, the submission), or a SWE-agent
    observation (answers an assistant action and ends with the ``bash-$`` prompt).
    """
    if not isinstance(messages[i], Message):
        messages = _as_message_list(messages)  # plain dicts are accepted too
    msg = messages[i]
    if msg.role == "tool":
        return True
    if msg.role != "user":
        return False
    text = msg.text
    if text.lstrip().startswith("<returncode>"):
        return True
    blocks, bare = _prev_assistant_commands(messages, i)
    if blocks:
        if _MINI_TIMEOUT.match(text) or _MINI_FORMAT_ERROR.match(text) or "<returncode>" in text[:200]:
            return True
        if any(s in b for b in blocks for s in _SUBMIT_SENTINELS):
            return True  # the submission's output comes back bare (a diff, or nothing)
    if (blocks or bare is not None) and _SWE_AGENT_PROMPT.search(text):
        return True
    return False


# ------------------------------------------------------------------------------------------ shell parsing


class _Simple:
    """A simple command: words (quotes removed), redirections, heredoc body, and the operator before it."""

    __slots__ = ("words", "redirs", "heredoc", "after_pipe")

    def __init__(self, after_pipe: bool) -> None:
        self.words: list[str] = []
        self.redirs: list[tuple[str, str]] = []  # (operator, target word)
        self.heredoc: str | None = None
        self.after_pipe = after_pipe


_OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&")


def _read_word(cmd: str, i: int) -> tuple[str, int]:
    """Read one shell word from ``i`` (quotes removed, $(...) and `...` kept raw); returns (word, next index)."""
    n = len(cmd)
    out: list[str] = []
    while i < n:
        c = cmd[i]
        if c in " \t\n;&|<>()":
            break
        if c == "\\":
            if i + 1 < n and cmd[i + 1] == "\n":
                i += 2
                continue
            if i + 1 < n:
                out.append(cmd[i + 1])
            i += 2
            continue
        if c == "'":
            j = cmd.find("'", i + 1)
            j = n if j < 0 else j
            out.append(cmd[i + 1 : j])
            i = j + 1
            continue
        if c == '"':
            j = i + 1
            while j < n and cmd[j] != '"':
                if cmd[j] == "\\" and j + 1 < n and cmd[j + 1] in '"\\$`':
                    out.append(cmd[j + 1])
                    j += 2
                    continue
                out.append(cmd[j])
                j += 1
            i = j + 1
            continue
        if c == "`":
            j = cmd.find("`", i + 1)
            j = n if j < 0 else j
            out.append(cmd[i : j + 1])
            i = j + 1
            continue
        if c == "$" and i + 1 < n and cmd[i + 1] == "(":
            depth, j = 0, i + 1
            while j < n:
                if cmd[j] == "(":
                    depth += 1
                elif cmd[j] == ")":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            out.append(cmd[i : j + 1])
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out), i


def parse_shell(cmd: str) -> list[_Simple]:
    """Split a command line into simple commands (handles quotes, heredocs, comments, continuations)."""
    simples: list[_Simple] = []
    cur = _Simple(after_pipe=False)
    pending: list[tuple[_Simple, str, bool]] = []  # heredocs waiting for the end of the line
    n, i = len(cmd), 0

    def finish(after_pipe: bool) -> None:
        nonlocal cur
        if cur.words or cur.redirs:
            simples.append(cur)
        cur = _Simple(after_pipe=after_pipe)

    while i < n:
        c = cmd[i]
        if c in " \t":
            i += 1
            continue
        if c == "\n":
            finish(False)
            i += 1
            for owner, delim, strip_tabs in pending:  # heredoc bodies follow the line that opened them
                body: list[str] = []
                while i < n:
                    j = cmd.find("\n", i)
                    j = n if j < 0 else j
                    line = cmd[i:j]
                    i = j + 1
                    if (line.lstrip("\t") if strip_tabs else line).strip() == delim:
                        break
                    body.append(line)
                owner.heredoc = "\n".join(body)
            pending = []
            continue
        if c == "#":  # only reached at the start of a word: a comment to the end of the line
            j = cmd.find("\n", i)
            i = n if j < 0 else j
            continue
        if c in "()":
            finish(False)
            i += 1
            continue
        if c in ";&|":
            op = next(o for o in _OPERATORS if cmd.startswith(o, i))
            if op == "&" and cmd.startswith("&>", i):
                pass  # redirect, handled below
            else:
                finish(op in ("|", "|&"))
                i += len(op)
                continue
        if c in "<>" or cmd.startswith("&>", i):
            fd = ""
            if cur.words and cur.words[-1].isdigit() and i > 0 and cmd[i - 1].isdigit():
                fd = cur.words.pop()
            for op in ("<<<", "<<-", "<<", ">>", ">|", "&>>", "&>", ">&", "<&", "<>", ">", "<"):
                if cmd.startswith(op, i):
                    break
            i += len(op)
            while i < n and cmd[i] in " \t":
                i += 1
            word, i = _read_word(cmd, i)
            if op in ("<<", "<<-"):
                pending.append((cur, word, op == "<<-"))
            elif op in (">&", "<&") and (word.isdigit() or word == "-"):
                pass  # fd duplication like 2>&1
            else:
                cur.redirs.append((fd + op, word))
            continue
        word, i = _read_word(cmd, i)
        cur.words.append(word)
    finish(False)
    return simples


# -------------------------------------------------------------------------------------- command analysis

_NOISE = frozenset(
    "cd pushd popd export source . set unset true false : sleep clear exit wait { } then fi do done else "
    "if for while echo printf alias shopt ulimit".split()
)
_WRAPPERS = frozenset("sudo time nohup env command builtin exec stdbuf nice".split())
_READERS = frozenset("cat head tail less more nl wc stat file strings xxd hexdump od bat view md5sum sha256sum".split())
_SEARCHERS = frozenset("grep egrep fgrep rg ag ack".split())
_PYTHON = re.compile(r"\Apython(?:\d+(?:\.\d+)?)?\Z")
_TEST_RUNNERS = frozenset("pytest py.test nosetests tox".split())
_READ_ONLY_TOOLS = _READERS | _SEARCHERS | frozenset(
    "sed ls find tree open view goto scroll_up scroll_down search_dir search_file find_file str_replace_editor".split()
)
# Options that take a value, per program (so the value is not taken for a path).
_OPT_VALUES = {
    "head": {"-n", "-c"},
    "tail": {"-n", "-c"},
    "grep": {"-e", "-f", "-m", "-A", "-B", "-C", "-d", "-D"},
    "rg": {"-e", "-f", "-m", "-A", "-B", "-C", "-g", "-t", "-T", "--type", "--glob"},
    "sed": {"-e", "-f", "-l"},
    "pytest": {"-k", "-m", "-p", "-c", "-W", "-o", "-n", "--rootdir", "--deselect", "--ignore", "--tb"},
    "nl": {"-b", "-w", "-s", "-v", "-i", "-n"},
}
_SWE_EDIT = frozenset({"edit", "insert", "append"})
_EDITOR_WRITE_CMDS = frozenset({"create", "str_replace", "insert", "undo_edit", "write", "append", "edit", "overwrite"})

_PY_WRITE_OPEN = re.compile(
    r"""open\(\s*(?:[rRfFbB]{0,2})(['"])([^'"\n]{1,300})\1\s*,\s*(?:mode\s*=\s*)?(?:[rRbB]{0,2})(['"])(?:[wax]|r\+)[^'"\n]{0,3}\3"""
)
_PY_WRITE_OPEN_VAR = re.compile(r"""open\(\s*([A-Za-z_]\w*)\s*,\s*(?:mode\s*=\s*)?(['"])(?:[wax]|r\+)[^'"\n]{0,3}\2""")
_PY_WRITE_PATH = re.compile(r"""Path\(\s*(?:[rRfF]?)(['"])([^'"\n]{1,300})\1\s*\)\s*\.\s*write_(?:text|bytes)""")
_PY_WRITE_PATH_VAR = re.compile(r"""\b([A-Za-z_]\w*)\s*\.\s*write_(?:text|bytes)\(""")
_PY_READ_OPEN = re.compile(r"""open\(\s*(?:[rRfF]?)(['"])([^'"\n]{1,300})\1\s*(?:\)|,\s*(?:mode\s*=\s*)?['"]r['"])""")
_PY_STR_ASSIGN = re.compile(r"""^[ \t]*([A-Za-z_]\w*)[ \t]*=[ \t]*(?:Path\()?[rRfF]?(['"])([^'"\n]{1,300})\2\)?[ \t]*(?:#.*)?$""", re.M)
_DIFF_FILE = re.compile(r"^(?:diff --git a/(\S+) b/(\S+)|\+\+\+ (?:b/)?(\S+)|\*\*\* (?:Update|Add|Delete) File: (\S+))", re.M)
_URL = re.compile(r"\A[a-z][a-z0-9+.-]*://\S+\Z", re.I)


def _clean_path(p: str) -> str | None:
    """A word that plausibly names a file, normalised a little ("./x" -> "x"); None otherwise."""
    p = p.strip()
    if not p or p in (".", "..", "-", "/", "/dev/null", "/dev/stdout", "/dev/stderr", "{}", "~"):
        return None
    if any(ch in p for ch in "*?$`{}\n\t ") or p.startswith("-") or p.startswith("&") or "://" in p:
        return None
    while p.startswith("./"):
        p = p[2:]
    while "/./" in p:
        p = p.replace("/./", "/")
    return p or None


def _looks_like_file(p: str) -> bool:
    base = p.rstrip("/").rsplit("/", 1)[-1]
    return not p.endswith("/") and "." in base.strip(".")


def _shorten(s: str, limit: int = MAX_TARGET_CHARS) -> str:
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


def _diff_files(text: str) -> list[str]:
    out: list[str] = []
    for m in _DIFF_FILE.finditer(text):
        p = m.group(2) or m.group(3) or m.group(4)
        if p and p != "/dev/null":
            out.append(p)
    return out


class _Analysis:
    __slots__ = ("tool", "target", "reads", "writes", "weight")

    def __init__(self, tool: str, target: str = "", reads: Iterable[str] = (), writes: Iterable[str] = (), weight: int = 2):
        self.tool = tool
        self.target = target
        self.reads = [p for p in map(_clean_path, reads) if p]
        self.writes = [p for p in map(_clean_path, writes) if p]
        self.weight = weight  # 0 noise, 1 pipe filter/inspection, 2 real work, 3 in-place edit


def _analyse_simple(s: _Simple, state: _State) -> _Analysis:
    words = list(s.words)
    while words and re.fullmatch(r"[A-Za-z_]\w*=.*", words[0], re.S):
        words.pop(0)  # VAR=value prefixes
    while words and (words[0] in _WRAPPERS or words[0] == "timeout"):
        head = words.pop(0)
        if head == "timeout" and words and not words[0].startswith("-"):
            words.pop(0)  # the duration
        while words and words[0].startswith("-"):
            words.pop(0)
    redirect_writes = [t for op, t in s.redirs if ">" in op]
    redirect_reads = [t for op, t in s.redirs if op in ("<", "0<")]
    if not words:
        return _Analysis("sh", redirect_writes[0] if redirect_writes else "", redirect_reads, redirect_writes, 1 if redirect_writes else 0)
    prog = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    if prog in ("bash", "sh", "zsh") and len(args) >= 2 and args[0] in ("-c", "-lc", "-ec"):
        inner = _analyse_command(args[1], state)
        return inner[0] if inner else _Analysis(prog)
    if prog in ("uv", "poetry", "pipenv", "conda") and args[:1] == ["run"]:
        return _analyse_simple(_with_words(s, args[1:]), state)
    if _PYTHON.match(prog) and args[:2] == ["-m", "pytest"] or prog in _TEST_RUNNERS:
        rest = args[2:] if _PYTHON.match(prog) else args
        pos, opts = _positional(rest, "pytest")
        target = " ".join(pos + ([f"-k {opts['-k']}"] if "-k" in opts else []))
        return _Analysis("pytest" if prog not in ("tox", "nosetests") else prog, target)
    if _PYTHON.match(prog):
        return _analyse_python(prog, args, s, state, redirect_writes)
    if prog in _NOISE:
        if prog in ("echo", "printf") and redirect_writes:
            return _Analysis(prog, redirect_writes[0], (), redirect_writes)
        return _Analysis(prog, " ".join(args[:1]), weight=0)
    weight = 2
    if prog == "cat" or prog == "tee":
        pos, _ = _positional(args, prog)
        if prog == "tee":
            return _Analysis("tee", ", ".join(pos), (), pos, 2)
        writes = redirect_writes
        if s.heredoc is not None:
            for w in writes:
                state.bodies[w] = s.heredoc
        if writes:
            return _Analysis("cat", writes[0], pos, writes, 2)
        return _Analysis("cat", ", ".join(pos), pos + redirect_reads, (), weight)
    if prog in _READERS:
        pos, _ = _positional(args, prog)
        if prog in ("head", "tail"):
            pos = [p for p in pos if not re.fullmatch(r"[+-]?\d+", p)]
        return _Analysis(prog, ", ".join(pos), pos + redirect_reads, redirect_writes, weight)
    if prog == "sed":
        pos, opts = _positional(args, "sed")
        inplace = any(o.startswith("-i") or o.startswith("--in-place") or (o.startswith("-") and not o.startswith("--") and "i" in o[1:]) for o in opts)
        files = pos if ("-e" in opts or "-f" in opts) else pos[1:]
        if inplace:
            return _Analysis("sed", ", ".join(files), (), files, 3)
        return _Analysis("sed", ", ".join(files), files + redirect_reads, redirect_writes, weight)
    if prog in ("perl", "awk", "gawk") and any(a.startswith("-i") or a == "-pi" or a.startswith("-pi") for a in args):
        pos = [a for a in args if not a.startswith("-")]
        files = pos[1:]
        return _Analysis(prog, ", ".join(files), (), files, 3)
    if prog in _SEARCHERS or (prog == "git" and args[:1] == ["grep"]):
        if prog == "git":
            args = args[1:]
        pos, opts = _positional(args, "rg" if prog == "rg" else "grep")
        pattern = opts.get("-e") or (pos.pop(0) if pos else "")
        paths = pos
        target = pattern + (" in " + " ".join(paths) if paths else "")
        reads = [p for p in paths if _looks_like_file(p)]
        return _Analysis("grep" if prog in ("egrep", "fgrep") else prog, target, reads, redirect_writes, weight)
    if prog == "find":
        dirs = []
        k = 0
        while k < len(args) and not args[k].startswith("-") and args[k] not in ("(", "!"):
            dirs.append(args[k])
            k += 1
        names = [args[j + 1] for j in range(k, len(args) - 1) if args[j] in ("-name", "-iname", "-path", "-ipath", "-regex")]
        target = " ".join(names) + (" in " + " ".join(dirs) if dirs and names else " ".join(dirs) if dirs else "")
        return _Analysis("find", target.strip(), (), (), weight)
    if prog in ("ls", "tree", "du"):
        pos, _ = _positional(args, prog)
        return _Analysis(prog, " ".join(pos) or ".", (), (), weight)
    if prog == "git":
        return _analyse_git(args, s, state)
    if prog == "patch":
        pos, opts = _positional(args, "patch")
        body = s.heredoc
        for op, t in s.redirs:
            if op == "<":
                body = state.bodies.get(_clean_path(t) or "", body)
        patch_file = opts.get("-i") or opts.get("--input")
        if patch_file:
            body = state.bodies.get(_clean_path(patch_file) or "", body)
        files = pos[:1] if pos else (_diff_files(body) if body else [])
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
    if prog in ("pip", "pip3", "npm", "yarn", "pnpm", "cargo", "go", "make", "apt-get", "apt", "conda", "uv", "poetry", "docker", "kubectl"):
        pos = [a for a in args if not a.startswith("-")]
        return _Analysis(prog, " ".join(pos[:4]), (), redirect_writes, 2)
    # SWE-agent's text-interface commands.
    if prog == "open":
        pos = [a for a in args if not a.startswith("-")]
        if pos:
            state.open_file = pos[0]
        return _Analysis("open", pos[0] if pos else "", pos[:1], (), weight)
    if prog == "create":
        if args:
            state.open_file = args[0]
        return _Analysis("create", args[0] if args else "", (), args[:1], 2)
    if prog in _SWE_EDIT:
        f = state.open_file or ""
        return _Analysis(prog, f, (), [f] if f else [], 3)
    if prog in ("goto", "scroll_up", "scroll_down"):
        return _Analysis(prog, state.open_file or "", (), (), 1)
    if prog in ("find_file", "search_dir", "search_file"):
        target = args[0] if args else ""
        if len(args) > 1:
            target += " in " + args[1]
        reads = args[1:2] if prog == "search_file" else []
        return _Analysis(prog, target, reads, (), weight)
    if prog in ("str_replace_editor", "edit_file", "file_editor"):
        sub = args[0] if args else ""
        path = args[1] if len(args) > 1 else ""
        if sub in _EDITOR_WRITE_CMDS:
            return _Analysis(prog, path, (), [path], 3)
        return _Analysis(prog, path, [path] if sub == "view" and _looks_like_file(path) else [], (), weight)
    pos = [a for a in args if not a.startswith("-")]
    return _Analysis(prog, " ".join(pos[:3]), redirect_reads, redirect_writes, weight)


def _with_words(s: _Simple, words: list[str]) -> _Simple:
    t = _Simple(s.after_pipe)
    t.words, t.redirs, t.heredoc = words, s.redirs, s.heredoc
    return t


def _analyse_python(prog: str, args: list[str], s: _Simple, state: _State, redirect_writes: list[str]) -> _Analysis:
    if args[:1] == ["-m"] and len(args) > 1:
        mod = args[1]
        if mod == "pip":
            pos = [a for a in args[2:] if not a.startswith("-")]
            return _Analysis("pip", " ".join(pos[:4]), (), redirect_writes)
        return _Analysis("python", f"-m {mod}", (), redirect_writes)
    code = None
    target = ""
    k = 0
    while k < len(args):
        a = args[k]
        if a == "-c" and k + 1 < len(args):
            code, target = args[k + 1], "-c"
            break
        if a == "-":
            code, target = s.heredoc or "", "-"
            break
        if a.startswith("-"):
            k += 1
            continue
        target = a
        code = state.bodies.get(_clean_path(a) or "", None)  # a script this history wrote earlier
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


def _analyse_git(args: list[str], s: _Simple, state: _State) -> _Analysis:
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
            body = state.bodies.get(_clean_path(p) or "", body)
        for op, t in s.redirs:
            if op == "<":
                body = state.bodies.get(_clean_path(t) or "", body)
        if body and "--check" not in rest and "--stat" not in rest:
            writes = _diff_files(body)
    elif sub in ("checkout", "restore") and "--" in rest:
        writes = rest[rest.index("--") + 1 :]
    elif sub in ("rm", "mv"):
        writes = pos
    weight = 3 if writes else 2 if sub not in ("status", "log", "diff", "show", "add") else 1
    return _Analysis("git", target, (), writes, weight)


class _State:
    """What later commands need from earlier ones: heredoc file bodies, SWE-agent's open file and directory."""

    __slots__ = ("bodies", "open_file", "cwd")

    def __init__(self) -> None:
        self.bodies: dict[str, str] = {}
        self.open_file: str | None = None
        self.cwd: str | None = None

    def relative(self, paths: Iterable[str]) -> list[str]:
        """Paths under the known working directory, made relative (one name per file in the lists)."""
        if not self.cwd or self.cwd == "/":
            return list(paths)
        prefix = self.cwd.rstrip("/") + "/"
        return [p[len(prefix):] if p.startswith(prefix) and len(p) > len(prefix) else p for p in paths]


def _analyse_command(command: str, state: _State) -> list[_Analysis]:
    out = []
    for s in parse_shell(command):
        a = _analyse_simple(s, state)
        if s.after_pipe and not a.writes:
            a.weight = min(a.weight, 1)  # after a pipe: a consumer/formatter of the real work
        out.append(a)
    return out


def _summarise_command(command: str, state: _State) -> tuple[str, str, list[str], list[str], bool]:
    """(tool, target, reads, writes, read_only) of a whole command line."""
    head = command.lstrip().split(None, 1)[:1]
    if head and head[0] in _SWE_EDIT:
        command = command.lstrip().split("\n", 1)[0]  # SWE-agent edit: the lines after the first are file text
    parts = _analyse_command(command, state)
    if not parts:
        return "sh", "", [], [], True
    # The last of the heaviest parts names the call: an in-place edit beats a run, a run beats setup
    # (cd, echo) and pipe filters, and after writing a script the run that follows is the point.
    best = max(range(len(parts)), key=lambda k: (parts[k].weight, k))
    main = parts[best]
    reads = [p for a in parts for p in a.reads]
    writes = [p for a in parts for p in a.writes]
    read_only = not writes and all(a.tool in _READ_ONLY_TOOLS or a.weight < 2 for a in parts)
    return main.tool, _shorten(main.target), reads, writes, read_only


# ------------------------------------------------------------------------------------ function-call tools

_SHELL_TOOLS = frozenset(
    "bash shell sh execute_bash execute_command run_command run_shell_command terminal run exec cmd "
    "execute_shell command_line local_shell container.exec".split()
)
_PATH_KEYS = ("path", "file_path", "filepath", "filename", "file", "target_file", "absolute_path", "notebook_path", "dir_path", "directory")
_PATTERN_KEYS = ("pattern", "regex", "query", "search_term", "search", "term", "q")
_READ_TOOL_HINTS = ("read", "view", "open", "cat", "show", "get_file", "load")
_WRITE_TOOL_HINTS = ("write", "edit", "create", "replace", "insert", "patch", "apply", "delete", "remove", "rename", "move", "save", "append")


def _parse_arguments(raw: str) -> dict[str, Any] | None:
    try:
        value = json.loads(raw) if raw.strip() else {}
    except (json.JSONDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _analyse_function(name: str, raw_args: str, state: _State) -> tuple[str, str, str, list[str], list[str], bool]:
    """(tool, target, command, reads, writes, read_only) of a function call."""
    args = _parse_arguments(raw_args)
    lname = name.lower()
    if args is None:
        # Not JSON: some agents pass the raw command line.
        if lname in _SHELL_TOOLS:
            tool, target, reads, writes, ro = _summarise_command(raw_args, state)
            return tool, target, raw_args, reads, writes, ro
        return name, _shorten(raw_args), raw_args, [], [], False
    shell_cmd = next((args[k] for k in ("command", "cmd", "script") if isinstance(args.get(k), str)), None)
    if shell_cmd is not None and lname.startswith("/"):
        shell_cmd = shell_cmd.split(None, 1)[1] if lname in ("/run", "/test") and " " in shell_cmd.strip() else None
        if shell_cmd is None:  # other aider console commands (/add, /undo, ...) act on their arguments
            return name, _shorten(str(args.get("command", ""))[len(name):].strip()), raw_args, [], [], False
    # A shell tool, or a text action turned into a call named after its first word (SWE-agent importer).
    if shell_cmd is not None and (lname in _SHELL_TOOLS or lname.startswith("/") or shell_cmd.split(None, 1)[:1] == [name]):
        tool, target, reads, writes, ro = _summarise_command(shell_cmd, state)
        return tool, target, shell_cmd, reads, writes, ro
    path = next((args[k] for k in _PATH_KEYS if isinstance(args.get(k), str) and args[k]), "")
    pattern = next((args[k] for k in _PATTERN_KEYS if isinstance(args.get(k), str) and args[k]), "")
    url = args.get("url") if isinstance(args.get("url"), str) else ""
    sub = args.get("command") if isinstance(args.get("command"), str) else ""
    reads: list[str] = []
    writes: list[str] = []
    patch = next((args[k] for k in ("patch", "diff", "input") if isinstance(args.get(k), str) and ("\n+++ " in args[k] or "*** " in args[k])), None)
    if patch:
        writes = _diff_files(patch)
    if path:
        if sub in _EDITOR_WRITE_CMDS or (not sub and any(h in lname for h in _WRITE_TOOL_HINTS)):
            writes.append(path)
        elif sub == "view" or any(h in lname for h in _READ_TOOL_HINTS):
            if sub == "view" and not _looks_like_file(path):
                pass  # viewing a directory
            else:
                reads.append(path)
        if lname in ("open", "create") or sub in ("create", "view", "str_replace", "insert"):
            state.open_file = path
    if lname in _SWE_EDIT and not path and state.open_file:
        writes.append(state.open_file)
        path = state.open_file
    if pattern:
        target = pattern + (f" in {path}" if path else "")
    else:
        target = path or url or (", ".join(writes) if writes else "")
        if not target:
            first = next((v for v in args.values() if isinstance(v, str) and v), "")
            target = first
    read_only = not writes and bool(reads or pattern or sub == "view")
    clean = lambda ps: [p for p in map(_clean_path, ps) if p]  # noqa: E731
    return name, _shorten(target), raw_args, clean(reads), clean(writes), read_only


# --------------------------------------------------------------------------------------- outcome detection

_TRACEBACK = re.compile(r"^Traceback \(most recent call last\):", re.M)
_EXC_LINE = re.compile(r"^(?:E\s+)?(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Warning)(?::.*)?$")
_SHELL_ERROR = re.compile(
    r"(?:command not found|No such file or directory|Permission denied|cannot access|can't read|"
    r"Is a directory|not a git repository|unrecognized option|invalid option|^usage: |"
    r"SyntaxError|IndentationError|^fatal: |^error: |^Error: |^ERROR: |^ERROR |^E: |^FAILED |"
    r"Your proposed edit has introduced new syntax error|^File .* not found|^No replacement was performed|"
    r"did not appear verbatim|^Invalid |does not exist|failed to exactly match|^make: \*\*\* .*Error \d+)",
    re.M,
)
_WEAK_ERROR = re.compile(r"(?:did not conform to the edit format|failed to match|^Traceback \(most recent call last\):)", re.M)
_PYTEST_SUMMARY = re.compile(
    r"^={2,200} ([^\n]{0,300}?\b(?:passed|failed|error|errors|skipped|xfailed|deselected|no tests ran)\b[^\n]{0,300}?) ={2,200}[ \t]*$",
    re.M,
)
_COUNT = re.compile(r"(\d+) (passed|failed|errors?)\b")
_UNITTEST_FAILED = re.compile(r"^FAILED \((?:failures|errors)=\d+.*\)$", re.M)
_TRUNCATED = re.compile(
    r"(?:<output_head>|<elided_chars>|output of your last command was too long|Output truncated|"
    r"Observation truncated|\[\.\.\. .*truncated|<response clipped>)",
    re.I,
)
_EXIT_CODE_TEXT = re.compile(r"(?:exit code|exit status|exited with code|Exit code:?)\s*(-?\d+)", re.I)


def _clip_line(line: str) -> str:
    line = line.strip()
    return line if len(line) <= MAX_ERROR_LINE_CHARS else line[:MAX_ERROR_LINE_CHARS]


def _last_exception_line(text: str) -> str | None:
    tb = None
    for tb in _TRACEBACK.finditer(text):
        pass
    start = tb.end() if tb else 0
    found = None
    for line in text[start:].splitlines():
        s = line.strip()
        if len(s) <= 2000 and _EXC_LINE.match(s):  # the length bound keeps the match linear
            found = line
            if tb:
                break  # the first exception line after the last traceback is the raised one
    return found


def _error_line(text: str, exit_code: int | None, allow_exceptions: bool = True) -> str | None:
    if allow_exceptions:
        exc = _last_exception_line(text) if _TRACEBACK.search(text) else None
        if exc:
            return _clip_line(exc)
    m = _SHELL_ERROR.search(text) or _WEAK_ERROR.search(text)
    if m:
        a = text.rfind("\n", 0, m.start()) + 1
        b = text.find("\n", m.end())
        line = text[a : b if b >= 0 else len(text)]
        if line.strip():
            return _clip_line(line)
    summaries = list(_PYTEST_SUMMARY.finditer(text))
    if summaries and "failed" in summaries[-1].group(1) or summaries and "error" in summaries[-1].group(1):
        return _clip_line(summaries[-1].group(0))
    if allow_exceptions:
        exc = _last_exception_line(text)
        if exc:
            return _clip_line(exc)
    return None


def _output_body(text: str) -> str:
    """The command output inside a mini-swe-agent result (falls back to the whole text)."""
    for open_tag, close_tag in (("<output>", "</output>"), ("<output_head>", "</output_tail>")):
        a = text.find(open_tag)
        if a >= 0:
            b = text.rfind(close_tag)
            return text[a + len(open_tag) : b if b > a else len(text)]
    return text


def classify_result(text: str, *, read_only: bool = False) -> tuple[Outcome, int | None, str | None]:
    """(outcome, exit_code, error_line) of one tool result. ``error_line`` is a substring of ``text``."""
    rc_match = _RETURNCODE.search(text[:300])
    exit_code: int | None = int(rc_match.group(1)) if rc_match else None
    if exit_code is None:
        m = _EXIT_CODE_TEXT.search(text[-400:]) or _EXIT_CODE_TEXT.search(text[:300])
        if m:
            exit_code = int(m.group(1))
    if _MINI_TIMEOUT.match(text):
        return "error", exit_code, _clip_line(text.split("\n", 1)[0])
    if _MINI_FORMAT_ERROR.match(text):
        return "error", exit_code, _clip_line(text.lstrip().split("\n", 1)[0])
    body = _output_body(text)
    summaries = list(_PYTEST_SUMMARY.finditer(body))
    counts: dict[str, int] = {}
    if summaries:
        for n, kind in _COUNT.findall(summaries[-1].group(1)):
            counts[kind.rstrip("s")] = counts.get(kind.rstrip("s"), 0) + int(n)
    mixed_tests = counts.get("passed", 0) > 0 and (counts.get("failed", 0) + counts.get("error", 0)) > 0
    truncated = bool(_TRUNCATED.search(text))
    if exit_code is not None:
        if exit_code != 0:
            line = _error_line(body, exit_code)
            if line is None:
                # A search that finds nothing exits 1 with no message: the return code itself is the reason.
                line = rc_match.group(0) if (read_only and rc_match) else _fallback_line(text, body, rc_match)
            return ("partial" if mixed_tests else "error"), exit_code, line
        if mixed_tests:
            return "partial", 0, _error_line(body, 0)
        if not read_only and _TRACEBACK.search(body):
            line = _error_line(body, 0)
            if line:
                return "partial", 0, line
        return ("partial" if truncated else "success"), 0, None
    # No exit code: judge by markers.
    if mixed_tests:
        return "partial", None, _error_line(body, None)
    # A file being read may mention errors; for reads only the start of the output (where a shell puts them).
    line = _error_line(body[:400] if read_only else body, None, allow_exceptions=not read_only)
    failed_tests = counts.get("failed", 0) + counts.get("error", 0) > 0 or bool(_UNITTEST_FAILED.search(body))
    if line and (not read_only or _SHELL_ERROR.search(line) or _WEAK_ERROR.search(line)):
        return "error", None, line
    if failed_tests:
        return "error", None, line
    return ("partial" if truncated else "success"), None, None


def _fallback_line(text: str, body: str, rc_match: re.Match[str] | None) -> str:
    for line in reversed(body.splitlines()):
        if line.strip():
            return _clip_line(line)
    return rc_match.group(0) if rc_match else "(no output)"


# ---------------------------------------------------------------------------------------------- tool events


def _first_user_index(messages: Sequence[Message]) -> int | None:
    return next((i for i, m in enumerate(messages) if m.role == "user" and not is_tool_output(messages, i)), None)


def _text_command(messages: Sequence[Message], i: int) -> str | None:
    """The command of a text-convention call at assistant message ``i`` (None if it is not one)."""
    msg = messages[i]
    if msg.role != "assistant" or msg.tool_calls:
        return None
    text = msg.text
    answered = i + 1 < len(messages) and messages[i + 1].role == "user" and is_tool_output(messages, i + 1)
    blocks = bash_blocks(text)
    if blocks:
        if answered or (i + 1 == len(messages) and _is_mini_history(messages)):
            return "\n".join(blocks) if len(blocks) > 1 else blocks[0]
        return None
    bare = _bare_action(text)
    if bare is not None and answered:
        return bare
    return None


def _is_mini_history(messages: Sequence[Message]) -> bool:
    return any(m.role == "user" and m.text.lstrip().startswith("<returncode>") for m in messages)


def _event(
    call_index: int, result_index: int | None, call_id: str | None, tool: str, target: str, command: str,
    reads: list[str], writes: list[str], read_only: bool, result_text: str | None,
    shell: bool,
) -> ToolEvent:
    outcome: Outcome | None = None
    exit_code = error_line = None
    if result_text is not None:
        outcome, exit_code, error_line = classify_result(result_text, read_only=read_only)
        if error_line is not None and error_line not in result_text:  # verbatim invariant
            raise AssertionError("error_line is not a substring of its result")
    if outcome == "error" and (not shell or len(parse_shell(command)) <= 1):
        writes = []  # a single edit that failed changed nothing
    return ToolEvent(
        call_index=call_index, result_index=result_index, call_id=call_id, tool=tool[:64] or "sh", target=target,
        command=command, outcome=outcome, exit_code=exit_code, error_line=error_line,
        files_read=tuple(_unique(reads)), files_changed=tuple(_unique(writes)),
    )


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))  # first occurrences, in order


_OPEN_FILE_LINE = re.compile(r"^\(Open file: ([^\n)]+)\)\s*$", re.M)
_CWD_LINE = re.compile(r"^\(Current directory: ([^\n)]+)\)\s*$", re.M)
_AIDER_APPLIED = re.compile(r"^(?:>\s*)?Applied edit to (\S[^\n]*?)\s*$", re.M)


def extract_tool_events(messages: Sequence[Message]) -> list[ToolEvent]:
    """Every tool call in order, both conventions, with its result, target and outcome."""
    msgs = _as_message_list(messages)
    state = _State()
    events: list[ToolEvent] = []
    pending: dict[str, int] = {}  # call id -> slot in `calls`
    calls: list[dict[str, Any]] = []  # canonical calls awaiting results
    for i, msg in enumerate(msgs):
        if msg.role == "assistant" and msg.tool_calls:
            for tc in msg.tool_calls:
                tool, target, command, reads, writes, ro = _analyse_function(tc.function.name, tc.function.arguments, state)
                reads, writes = state.relative(reads), state.relative(writes)
                target = state.relative([target])[0]
                # A shell command line was pulled out of the arguments (or the tool is a shell).
                shell = command != tc.function.arguments or tc.function.name.lower() in _SHELL_TOOLS
                slot = len(calls)
                calls.append(dict(call_index=i, call_id=tc.id, tool=tool, target=target, command=command,
                                  reads=reads, writes=writes, read_only=ro, shell=shell, result=None))
                if tc.id:
                    pending[tc.id] = slot
            continue
        if msg.role == "tool":
            slot = pending.pop(msg.tool_call_id, None) if msg.tool_call_id else None
            if slot is None:  # no id: the oldest unanswered call
                slot = next((k for k, c in enumerate(calls) if c["result"] is None), None)
                if slot is not None and calls[slot]["call_id"]:
                    pending.pop(calls[slot]["call_id"], None)
            if slot is not None and calls[slot]["result"] is None:
                calls[slot]["result"] = i
            _note_open_file(msg.text, state)
            continue
        command = _text_command(msgs, i)
        if command is None:
            continue
        answered = i + 1 < len(msgs) and is_tool_output(msgs, i + 1)
        result_text = msgs[i + 1].text if answered else None
        if answered and _MINI_FORMAT_ERROR.match(result_text or ""):
            tool, target, reads, writes, ro = _summarise_command(bash_blocks(msg.text)[0], _State())
            reads, writes = [], []  # rejected, nothing ran
        else:
            tool, target, reads, writes, ro = _summarise_command(command, state)
            reads, writes = state.relative(reads), state.relative(writes)
            target = state.relative([target])[0]
        events.append(_event(i, i + 1 if answered else None, None, tool, target, command, reads, writes, ro, result_text, True))
        if result_text:
            _note_open_file(result_text, state)
    for c in calls:
        r = c.pop("result")
        text = msgs[r].text if r is not None else None
        events.append(_event(c["call_index"], r, c["call_id"], c["tool"], c["target"], c["command"], c["reads"],
                             c["writes"], c["read_only"], text, c["shell"]))
    events.sort(key=lambda e: e.call_index)  # stable: calls of one message keep their order
    return events


def _note_open_file(text: str, state: _State) -> None:
    """SWE-agent observations end with the open file and the working directory; later calls need both."""
    tail = text[-600:]
    m = None
    for m in _OPEN_FILE_LINE.finditer(tail):
        pass
    if m and m.group(1) != "n/a":
        state.open_file = m.group(1).strip()
    d = None
    for d in _CWD_LINE.finditer(tail):
        pass
    if d:
        state.cwd = d.group(1).strip()


# ------------------------------------------------------------------------------------------- constraints

_STRONG = re.compile(
    r"\b(?:must(?:n't| not)?|never|always|do not|don't|cannot|can't|can not|can only|only|"
    r"under no circumstances|forbidden|prohibited|not allowed|mandatory|(?:is|are) required|required to|"
    r"make sure|ensures?|shall|critical(?:ly)?|important(?:ly)?|no more than|at most|at least|exactly|"
    r"doesn't|does not|won't|will not|not persistent|to finish|the following command)\b",
    re.I,
)
# ALL-CAPS runs ("DO NOT MODIFY", "YOU CAN ONLY ENTER ONE COMMAND AT A TIME"); acronyms alone do not count.
_CAPS_RUN = re.compile(r"\b[A-Z]{2,}(?:[ ’'][A-Z]{1,})+\b")
_CAPS_IMPERATIVE = re.compile(r"\b(?:DO|DON'T|MUST|NEVER|ONLY|ALWAYS|NOT|CANNOT|NO|EXACTLY|ONE|IMPORTANT|CRITICAL|REQUIRES?)\b")
_FENCE = re.compile(r"^[ \t]*(?:```|~~~)", re.M)
_EXAMPLE_TAG = re.compile(r"<(/?)([A-Za-z_]*example[A-Za-z_]*)>", re.I)
_BULLET = re.compile(r"(?:[-*+•]|\d{1,3}[.)]|[a-z][.)]|#{1,6})[ \t]+")  # used with match(text, pos)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[`]?[A-Z0-9])")


def _units(text: str) -> Iterable[tuple[int, int]]:
    """Spans of candidate units: non-empty lines outside code fences and example tags, bullets stripped."""
    in_fence = False
    example_depth = 0
    pos = 0
    spans: list[tuple[int, int, bool, int]] = []  # (start, end, is_bullet, line start)
    for line in text.splitlines(keepends=True):
        start, end = pos, pos + len(line)
        pos = end
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        for m in _EXAMPLE_TAG.finditer(line):
            example_depth = max(0, example_depth + (-1 if m.group(1) else 1))
        if in_fence or example_depth or _EXAMPLE_TAG.search(line):
            continue
        a, b = start, end
        while a < b and text[a] in " \t":
            a += 1
        while b > a and text[b - 1] in " \t\r\n":
            b -= 1
        if a >= b:
            continue
        m = _BULLET.match(text, a, b)
        if m:
            a = m.end()
        # Headings/quote markers are not part of the instruction.
        while a < b and text[a] in ">":
            a += 1
            while a < b and text[a] in " \t":
                a += 1
        if a < b:
            spans.append((a, b, bool(m), start))
    # A sentence wrapped over lines is one unit: join a line that does not end a sentence with the next
    # line when that one starts in lower case and is not a bullet (the unit then spans the newline).
    k = 0
    while k < len(spans):
        a, b, _, _ = spans[k]
        while (
            k + 1 < len(spans)
            and text[b - 1] not in ".!?:;"
            and not spans[k + 1][2]
            and text[spans[k + 1][0]].islower()
            and text.count("\n", b, spans[k + 1][0]) == 1  # adjacent lines, nothing skipped between
            and spans[k + 1][3] == text.find("\n", b) + 1
        ):
            b = spans[k + 1][1]
            k += 1
        yield a, b
        k += 1


def _split_long(text: str, a: int, b: int, limit: int) -> Iterable[tuple[int, int]]:
    """Cut [a, b) into pieces of at most ``limit`` chars at sentence (else clause, else word) boundaries."""
    if b - a <= limit:
        yield a, b
        return
    cuts = [m.start() for m in _SENTENCE_END.finditer(text, a, b)]
    pieces: list[tuple[int, int]] = []
    s = a
    for c in cuts + [b]:
        pieces.append((s, c))
        s = c
        while s < b and text[s] in " \t":
            s += 1
    for s, e in pieces:
        while e - s > limit:  # a giant sentence: cut at the last space/comma before the limit
            cut = max(text.rfind("; ", s, s + limit), text.rfind(", ", s, s + limit), text.rfind(" ", s, s + limit))
            cut = cut + 1 if cut > s else s + limit
            yield s, cut
            s = cut
            while s < e and text[s] in " \t":
                s += 1
        if e > s:
            yield s, e


def _strength(unit: str) -> int:
    """2 strong instruction, 1 weak, 0 none. Fragments (under 3 words) and weak list intros ("...:") are 0."""
    words = len(unit.split())
    if words < 3:
        return 0
    for m in _CAPS_RUN.finditer(unit):
        if _CAPS_IMPERATIVE.search(m.group(0)):
            return 2
    if _STRONG.search(unit) or _IMPERATIVE_START.match(unit):
        return 2
    if words >= 4 and not unit.endswith(":") and _WEAK_MARKERS.search(unit):
        return 1
    return 0


_IMPERATIVE_START = re.compile(r"(?:Avoid|Refrain|Stop|Don't|Do not|Never|Always|Only)\b")


_WEAK_MARKERS = re.compile(
    r"\b(?:should(?:n't| not)?|avoid|please|prefer|instead of|remember|be sure|be careful|need to|needs to|"
    r"your task is|the goal is|you're going to|you are going to|refrain|no need to|not to)\b",
    re.I,
)


def extract_constraints(messages: Sequence[Message], *, limit: int = MAX_CONSTRAINTS) -> list[Constraint]:
    """Instruction-like sentences/lines of genuine user/system/developer messages, verbatim, deduplicated.

    Order = priority: strong markers in user turns after the first exchange (a person steering mid-session),
    then other strong ones, then weak ones in the same two tiers; ties keep history order.
    """
    msgs = _as_message_list(messages)
    first_user = _first_user_index(msgs)
    # A user turn after the first assistant reply (that follows the task) is a person steering mid-session.
    first_reply = next((k for k in range(first_user or 0, len(msgs)) if msgs[k].role == "assistant"), None)
    found: list[tuple[int, Constraint]] = []
    seen: set[str] = set()
    for i, msg in enumerate(msgs):
        if msg.role not in ("system", "developer", "user") or is_tool_output(msgs, i):
            continue
        text = msg.text
        mid_session = msg.role == "user" and first_user is not None and first_reply is not None and i > first_reply
        for a, b in _units(text):
            for s, e in _split_long(text, a, b, MAX_CONSTRAINT_CHARS):
                unit = text[s:e]
                strength = _strength(unit)
                if strength == 0:
                    continue
                key = " ".join(unit.split()).casefold()
                if key in seen:
                    continue
                seen.add(key)
                if text[s : s + len(unit)] != unit or len(unit) > MAX_CONSTRAINT_CHARS:  # verbatim invariant
                    raise AssertionError("constraint candidate is not an exact substring")
                tier = (0 if mid_session else 1) if strength == 2 else (2 if mid_session else 3)
                found.append((tier, Constraint(text=unit, message_index=i, role=msg.role, start=s, strength=strength)))
        for m in _COMMAND_BLOCK.finditer(text):
            # A command the instructions spell out in a code block ("issue the following command: ```…```"):
            # the agent needs it verbatim after compaction (how to submit, how to run the tests).
            s, e = m.span(1)
            unit = text[s:e].strip()
            s = text.index(unit, s) if unit else s
            key = " ".join(unit.split()).casefold()
            if unit and len(unit) <= MAX_CONSTRAINT_CHARS and key not in seen:
                seen.add(key)
                found.append((1, Constraint(text=unit, message_index=i, role=msg.role, start=s, strength=2)))
        if mid_session and len(text.strip()) <= _SHORT_TURN_CHARS and not any(c.message_index == i for _, c in found):
            # A person steering mid-session ("no, catch ValueError there", "run the test in a tmp dir") is an
            # instruction whatever its wording: keep a short turn whole.
            unit = text.strip()
            key = " ".join(unit.split()).casefold()
            if unit and key not in seen:
                seen.add(key)
                found.append((0, Constraint(text=unit, message_index=i, role=msg.role, start=text.index(unit), strength=1)))
    found.sort(key=lambda t: (t[0], t[1].message_index, t[1].start))
    return [c for _, c in found[:limit]]


_SHORT_TURN_CHARS = 400
_COMMAND_BLOCK = re.compile(r"(?:following|this|the) command[^\n]*:[ \t]*\n\s*```[^\n]*\n(.*?)\n[ \t]*```", re.I | re.S)


# --------------------------------------------------------------------------------------------- decisions

_DECIDE = re.compile(
    r"\b(?:I'll|I’ll|I will|I'm going to|I am going to|I need to|I should|Let's|Let me|We need to|We should|"
    r"I decided|I chose|The fix is|The solution is)\b"
)
_BECAUSE = re.compile(
    r"\b(?:because|since|so that|due to|the (?:issue|problem|bug|cause|reason) (?:is|was)|this (?:means|is why)|"
    r"which (?:means|causes))\b",
    re.I,
)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z`])")  # not inside "f.name" or "requests.sessions"


def extract_decisions(messages: Sequence[Message], events: Sequence[ToolEvent]) -> list[ExtractedDecision]:
    """For each tool call that changed files, the assistant's stated plan in that message (a sentence with
    "I'll / Let's / I need to …") and its reason (a sentence with "because / the issue is …"), verbatim."""
    out: list[ExtractedDecision] = []
    seen: set[int] = set()
    for event in events:
        i = event.call_index
        if not event.files_changed or i in seen:
            continue
        seen.add(i)
        text = _FENCED.sub("\n", messages[i].text)  # a sentence never spans a code block: spans stay verbatim
        sentences = [x.strip() for line in text.splitlines() for x in _SENTENCE_SPLIT.split(line)
                     if len(x.split()) >= 4]
        plans = [x for x in sentences if _DECIDE.search(x) and len(x) <= 300]
        reasons = [x for x in sentences if _BECAUSE.search(x) and len(x) <= 300]
        if plans:
            out.append(ExtractedDecision(decision=plans[-1], rationale=reasons[0] if reasons else "", message_index=i))
    return out


_FENCED = re.compile(r"```.*?(?:```|\Z)", re.S)


# ------------------------------------------------------------------------------------------------- task

_TASK_SECTIONS = (
    re.compile(r"<pr_description>\s*(?:Consider the following PR description:\s*)?(.*?)\s*</pr_description>", re.S),
    re.compile(r"ISSUE:\s*\n(.*?)\n\s*INSTRUCTIONS:", re.S),
    re.compile(r"<issue>\s*(.*?)\s*</issue>", re.S),
    re.compile(r"<task>\s*(.*?)\s*</task>", re.S),
)


def extract_task(messages: Sequence[Message], *, max_chars: int = DEFAULT_TASK_CHARS) -> tuple[str, int | None]:
    """The task statement: the issue/PR section of the first user message if marked, else its start."""
    msgs = _as_message_list(messages)
    i = _first_user_index(msgs)
    if i is None:
        return "", None
    text = msgs[i].text
    for rx in _TASK_SECTIONS:
        m = rx.search(text)
        if m and m.group(1).strip():
            return m.group(1)[:max_chars], i
    return text.strip()[:max_chars], i


# ------------------------------------------------------------------------------------------------- facts


def extract_facts(
    messages: Sequence[Message | Mapping[str, Any]],
    *,
    max_constraints: int = MAX_CONSTRAINTS,
    task_chars: int = DEFAULT_TASK_CHARS,
) -> Facts:
    """All exact facts of a history. Pure and deterministic."""
    msgs = _as_message_list(messages)
    events = extract_tool_events(msgs)
    failed = [
        FailedCommand(approach=e.command if e.command.strip() not in ("", "{}") else f"{e.tool} {e.target}".strip(), reason_failed=e.error_line or "(no output)", call_index=e.call_index,
                      result_index=e.result_index, tool=e.tool, target=e.target)
        for e in events
        if e.outcome == "error" or (e.outcome == "partial" and e.exit_code not in (None, 0))
    ]
    files_read = _unique(p for e in events for p in e.files_read)
    changed = [(e.call_index, p) for e in events for p in e.files_changed]
    for i, m in enumerate(msgs):  # aider reports its edits in console lines ("Applied edit to X")
        if m.role != "system" and "Applied edit to" in m.text:
            changed += [(i, x.group(1)) for x in _AIDER_APPLIED.finditer(m.text)]
    changed.sort(key=lambda t: t[0])  # stable: chronological, events first within a message
    task, task_index = extract_task(msgs, max_chars=task_chars)
    return Facts(
        task=task,
        task_index=task_index,
        tool_events=events,
        failed_attempts=failed,
        files_read=files_read,
        files_changed=_unique(p for _, p in changed),
        constraint_candidates=extract_constraints(msgs, limit=max_constraints),
        decisions=extract_decisions(msgs, events),
    )
