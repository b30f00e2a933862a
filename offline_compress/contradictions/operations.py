"""Operations: what one command or code snippet does to the working tree (writes, copies, moves, deletes,
installs, pushes, names it uses)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass

from .lexer import parse_shell
from .rules import _clip, _norm_pkg

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


def _content_ops(text: str, evidence: str) -> list[_Op]:
    """Names a written text uses: imports (for forbidden names) and its flag-like words."""
    ops = [_Op("written-use", (), _import_line(text, n) or evidence, extra=(n,)) for n in _python_imports(text)]
    flags = tuple(dict.fromkeys(re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", text)))
    if flags:
        ops.append(_Op("written-flags", (), evidence, extra=flags))
    return ops
