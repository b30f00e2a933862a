"""What ``git`` commands do to the working tree: checkout, restore, stash, reset, clean, rm, mv, apply, push."""

from __future__ import annotations

import re

from .operation import _change_ops, _Ctx, _join, _move_ops, _Op, _options, _patch_files, _paths, _strip_level

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
            return [_Op("revert", _paths(cwd, files), evidence)]
        return _change_ops("write", _paths(cwd, files), evidence)
    if sub == "restore":
        opts, operands = _options(rest, ("-s", "--source"))
        source = next((opts[k + 1] for k, o in enumerate(opts[:-1]) if o in ("-s", "--source")), None)
        source = source or next((o.split("=", 1)[1] for o in opts if o.startswith("--source=")), None)
        staged_only = any(o in ("--staged", "-S") for o in opts) and not any(o in ("--worktree", "-W") for o in opts)
        if staged_only:
            return [_Op("unstage", _paths(cwd, operands), evidence)]
        if source in (None, "HEAD", "@"):
            return [_Op("revert", _paths(cwd, operands), evidence)]
        return _change_ops("write", _paths(cwd, operands), evidence)
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
        return [_Op("unstage", _paths(cwd, operands), evidence)]
    if sub == "clean":
        opts, operands = _options(rest, ("-e", "--exclude"))
        flags = "".join(o.lstrip("-") for o in opts if not o.startswith("--"))
        if ("f" in flags or "--force" in opts) and "n" not in flags and "--dry-run" not in opts:
            return [_Op("clean", _paths(cwd, operands), evidence)]
        return []
    if sub == "rm":
        opts, operands = _options(rest)
        if "--cached" in opts:
            return []
        return [_Op("delete", _paths(cwd, operands), evidence)]
    if sub == "mv":
        _opts, operands = _options(rest)
        return _move_ops("move", _paths(cwd, operands), evidence)
    if sub == "apply" or sub == "am":
        opts, operands = _options(rest, ("-p", "--directory", "--exclude", "--include"))
        if any(o in ("--check", "--stat", "--numstat", "--summary") for o in opts):
            return []
        text = stdin
        for a in operands:
            p = _join(cwd, a)
            text = ctx.files.get(p, text) if p else text
        patched = _paths(cwd, _patch_files(text or "", _strip_level(opts, 1)))
        return _change_ops("revert" if any(o in ("-R", "--reverse") for o in opts) else "write", patched, evidence)
    if sub == "add":
        opts, operands = _options(rest)
        if any(o in ("-A", "--all") for o in opts) or "." in operands:
            return [_Op("stage-all", (), evidence)]
        return [_Op("stage", _paths(cwd, operands), evidence)]
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
        return [_Op("diff", _paths(cwd, files), evidence, extra=tuple(opts) + tuple(revs))]
    return []
