"""Operations: what one command or code snippet does to the working tree (writes, copies, moves, deletes,
installs, pushes, names it uses)."""

from __future__ import annotations

import posixpath
import re
from dataclasses import replace

from ..history.shell import parse_shell
from .git import _git_ops
from .operation import (
    _change_ops,
    _Ctx,
    _inplace_suffix,
    _join,
    _move_ops,
    _Op,
    _options,
    _patch_files,
    _paths,
    _strip_level,
    _strip_prefix,
)
from .rules import _clip, _norm_pkg

_PYTHON = re.compile(r"\A(?:python|python\d+(?:\.\d+)?|pypy\d*)\Z")
_PIP = re.compile(r"\Apip\d*(?:\.\d+)?\Z")
_PIP_VALUE_OPTIONS = """-r --requirement -c --constraint -i --index-url --extra-index-url -t --target -e --editable -f
--find-links --prefix --root --python""".split()
_MANAGERS = {  # package manager -> (its install subcommands, its uninstall subcommands)
    "conda": ({"install", "create"}, {"remove", "uninstall"}),
    "mamba": ({"install"}, {"remove", "uninstall"}),
    "micromamba": ({"install"}, {"remove", "uninstall"}),
    "apt": ({"install"}, {"remove", "purge"}),
    "apt-get": ({"install"}, {"remove", "purge"}),
    "npm": ({"install", "i", "add"}, {"uninstall", "remove", "rm"}),
    "yarn": ({"add"}, {"remove"}),
    "pnpm": ({"add", "install", "i"}, {"remove", "rm", "uninstall"}),
    "poetry": ({"add"}, {"remove"}),
    "uv": ({"add"}, {"remove"}),
    "gem": ({"install"}, {"uninstall"}),
    "cargo": ({"add", "install"}, {"remove", "uninstall"}),
    "brew": ({"install"}, {"uninstall", "remove"}),
}


def _python_code_ops(code: str, cwd: str | None, evidence: str) -> list[_Op]:
    """Effects of a Python program text: writes/deletes/copies of files named by literals or variables."""
    ops: list[_Op] = []
    str_lit = r"""[rRbBuU]?(?P<q{n}>['"])(?P<s{n}>(?:\\.|(?!(?P=q{n})).)*?)(?P=q{n})"""
    assign = r"^[ \t]*(?P<name>\w+)\s*=\s*(?:(?:pathlib\.)?Path\(\s*)?" + str_lit.format(n=0)
    assigns = [(m.start(), m.group("name"), m.group("s0")) for m in re.finditer(assign, code, re.M)]

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
            ops.append(_Op(kind, (path,), evidence, mode))

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
    for m in re.finditer(
        r"\b(?:shutil\.move|os\.rename|os\.replace)\(\s*(?P<a>[^,()]+?)\s*,\s*(?P<b>[^,()]+?)\s*\)", code
    ):
        add("move", m.group("a"), m.start(), other=m.group("b"))
    for m in re.finditer(
        r"\bfileinput\.(?:input|FileInput)\(\s*(?:files\s*=\s*)?" + arg + r"[^)]*inplace\s*=\s*(?:True|1)", code
    ):
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
            # not a package of the index: the project or another path (".", "..", "./x"), a file, an option
            if "/" in a or a.startswith((".", "-")) or a.endswith((".txt", ".whl", ".tar.gz", ".zip")):
                continue
            out.append(_norm_pkg(a))
        return tuple(x for x in dict.fromkeys(out) if x)

    if _PIP.match(prog) or prog == "uv" and args[:1] == ["pip"]:
        if prog == "uv":
            args = args[1:]
        sub = args[0] if args else ""
        _opts, operands = _options(args[1:], _PIP_VALUE_OPTIONS)
        installs, removes = {"install"}, {"uninstall"}
    elif prog in _MANAGERS:
        _opts, operands = _options(args, ("-c", "--channel", "-n", "--name", "-p", "--prefix", "-o"))
        if not operands:
            return []
        sub, operands = operands[0], operands[1:]
        installs, removes = _MANAGERS[prog]
    else:
        return []
    if sub in installs:
        packages = named(operands)
        return [_Op("install", (), evidence, extra=packages)] if packages else []
    if sub in removes:
        return [_Op("uninstall", (), evidence, extra=named(operands))]
    return []


def _redirect_op(op: str) -> str:
    """The counter's reading of a redirection operator: its file descriptor dropped (``2>`` writes a file as ``>``
    does), and ``>&``/``<&`` with a file (not a descriptor) a write."""
    op = op.lstrip("0123456789")
    return ">" if op in (">&", "<&") else op


def _shell_ops(src: str, ctx: _Ctx, depth: int = 0) -> list[_Op]:
    """Effects of one shell action; ``ctx.cwd`` follows ``cd`` and ``ctx.files`` learns written file texts."""
    ops: list[_Op] = []
    prev_stdin: str | None = None
    for cmd in parse_shell(src):
        evidence = _clip(src[cmd.start : cmd.end])
        words = _strip_prefix(cmd.words)
        stdin = None
        redirects = [(_redirect_op(op), target) for op, target in cmd.redirects]
        for op, target in redirects:
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
        for op, target in redirects:
            if op in (">", ">>", ">|", "&>", "&>>"):
                p = _join(ctx.cwd, target)
                if p is None:
                    continue
                append = op in (">>", "&>>")
                ops.append(_Op("write", (p,), evidence, "append" if append else "create"))
                if out_text:
                    ops.extend(_content_ops(out_text, evidence))
                if out_text is not None:
                    ctx.files[p] = (ctx.files.get(p, "") if append else "") + out_text
                elif not append:
                    ctx.files.pop(p, None)
        prev_stdin = out_text
        if not words:
            continue
        ops.extend(_command_ops(prog, args, words, ctx, evidence, stdin, depth))
        if prog == "tee" and stdin is not None:
            prev_stdin = stdin
    return ops


def _command_ops(
    prog: str, args: list[str], words: list[str], ctx: _Ctx, evidence: str, stdin: str | None, depth: int
) -> list[_Op]:
    cwd = ctx.cwd
    ops: list[_Op] = [_Op("run", (), evidence, extra=(prog,))]
    flags = tuple(a for a in words if a.startswith("-"))
    if flags:
        ops.append(_Op("flags", (), evidence, extra=flags))
    if prog == "cd":
        target = next((a for a in args if not a.startswith("-")), "~")
        ctx.cwd = _join(cwd, target) if target not in ("~", "-") else None
        if ctx.cwd is not None and ctx.cwd.startswith("~"):
            ctx.cwd = None
        return ops
    if prog == "rm":
        _opts, operands = _options(args)
        return ops + [_Op("delete", _paths(cwd, operands), evidence)]
    if prog == "touch":
        _opts, operands = _options(args, ("-t", "-d", "-r", "--reference"))
        return ops + [_Op("touch", _paths(cwd, operands), evidence)]
    if prog == "mkdir":
        _opts, operands = _options(args, ("-m", "--mode"))
        return ops + [_Op("mkdir", _paths(cwd, operands), evidence)]
    if prog in ("cp", "mv"):
        opts, operands = _options(args, ("-t", "--target-directory", "-S", "--suffix"))
        target_dir = next((opts[k + 1] for k, o in enumerate(opts[:-1]) if o in ("-t", "--target-directory")), None)
        items = _paths(cwd, operands + ([target_dir] if target_dir else []))
        if target_dir and items:
            items = (*items[:-1], items[-1].rstrip("/") + "/")
        return ops + _move_ops("copy" if prog == "cp" else "move", items, evidence)
    if prog == "tee":
        opts, operands = _options(args)
        mode = "append" if any(o in ("-a", "--append") for o in opts) else "create"
        for p in _paths(cwd, operands):
            ops.append(_Op("write", (p,), evidence, mode))
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
        files = _paths(cwd, operands if has_script else operands[1:])
        if suffix:  # sed -i.bak / perl -i.bak keep the old text beside the file
            ops.extend(_Op("copy", (p, p + suffix), evidence) for p in files)
        return ops + _change_ops("write", files, evidence)
    if prog in ("awk", "gawk"):
        if "inplace" not in args:
            return ops
        opts, operands = _options(args, ("-i", "-f", "-v", "-F"))
        return ops + _change_ops("write", _paths(cwd, operands[1:]), evidence)
    if prog in ("ed", "ex"):
        _opts, operands = _options(args)
        return ops + _change_ops("write", _paths(cwd, operands), evidence)
    if prog == "git":
        return ops + _git_ops(args, ctx, evidence, stdin)
    if prog == "patch":
        opts, operands = _options(
            args, ("-p", "-i", "--input", "-o", "--output", "-d", "--directory", "-F", "-r", "-B", "-z", "-V", "-D")
        )
        if any(o in ("--dry-run", "-C", "--check") for o in opts):
            return ops
        patch_text = stdin
        input_file = next((opts[k + 1] for k, o in enumerate(opts[:-1]) if o in ("-i", "--input")), None)
        if len(operands) >= 2:
            input_file = operands[1]
        if input_file:
            where = _join(cwd, input_file)
            patch_text = ctx.files.get(where) if where else None
        # the file named on the command line, else the files the patch names
        targets = operands[:1] or _patch_files(patch_text or "", _strip_level(opts, 0))
        kind = "revert" if any(o in ("-R", "--reverse") for o in opts) else "write"
        return ops + _change_ops(kind, _paths(cwd, targets), evidence)
    if prog in ("bash", "sh", "zsh", "dash") and depth < 3:
        if "-c" in args:
            k = args.index("-c")
            script = args[k + 1] if k + 1 < len(args) else None
        else:
            _opts, operands = _options(args)
            script = stdin if not operands else ctx.files.get(_join(cwd, operands[0]) or "")
        # a script runs in a subshell: its cd stays there, the files it writes are known after it
        return ops + (_shell_ops(script, replace(ctx), depth + 1) if script else [])
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
            return ops + _shell_ops(script, replace(ctx), depth + 1)
    return ops + _install_ops(prog, args, evidence)


def _content_ops(text: str, evidence: str) -> list[_Op]:
    """Names a written text uses: imports (for forbidden names) and its flag-like words."""
    ops = [_Op("written-use", (), _import_line(text, n) or evidence, extra=(n,)) for n in _python_imports(text)]
    flags = tuple(dict.fromkeys(re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", text)))
    if flags:
        ops.append(_Op("written-flags", (), evidence, extra=flags))
    return ops
