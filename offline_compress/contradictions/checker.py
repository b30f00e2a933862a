"""The checker: replays the actions against the tree and reports each action that breaks a rule."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from ..history.messages import Message, as_messages
from .actions import _Action, actions
from .operations import _Op
from .rules import (
    Contradiction,
    ContradictionReport,
    Rule,
    _clip,
    _norm_pkg,
    _outside_tree,
    _under,
    constraint_candidates,
    derive_rules,
    is_config_path,
    is_test_path,
)
from .tree import (
    _ABSENT,
    _CUT_SHORT,
    _DIFF_HEADER,
    _HEAD,
    _PLAIN_DIFF_OPTIONS,
    _dir_like,
    _Hit,
    _missing_paths,
    _same_file,
    _Tree,
)


def _without_missing(op: _Op, missing: list[str]) -> _Op | None:
    """``op`` less the paths the command said were not there (it did nothing to them); None when a copy or move
    has nothing left."""
    if op.kind not in ("write", "delete", "copy", "move", "touch", "revert"):
        return op
    kept = tuple(p for p in op.paths if not any(_same_file(p, m) for m in missing))
    if len(kept) == len(op.paths):
        return op
    if op.kind in ("copy", "move") and len(kept) < 2:
        return None
    return replace(op, paths=kept)


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
        if _outside_tree(key):  # also the "~outside/" paths above the working tree
            return []
        out = []
        for r in self._active("protected-path", step):
            t = r.targets[0]
            if (
                (t == "tests" and is_test_path(key))
                or (t == "config" and is_config_path(key))
                or (t not in ("tests", "config") and (_under(key, t) or posixpath.basename(key) == t))
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
            pend.append(self._hit(rule, step, evidence, key))

    def _hit(self, rule: Rule, step: int, evidence: str, target: str, final: bool = False) -> int:
        """Record a contradiction; its index in ``hits``."""
        self.hits.append(_Hit(rule, step, evidence, target, final))
        return len(self.hits) - 1

    def _restored(self, key: str) -> None:
        self.pending.pop(key, None)

    def apply(self, action: _Action) -> None:
        step = action.step
        diff_seen = False
        missing = _missing_paths(action.output)
        for each in action.ops:
            op = _without_missing(each, missing)
            if op is None:
                continue
            if op.kind == "diff":
                if not diff_seen and action.output is not None:
                    diff_seen = True
                    self._diff_evidence(action, op, step)
            else:
                self._apply_op(op, step, action)

    def _apply_op(self, op: _Op, step: int, action: _Action) -> None:
        """One operation other than ``diff`` (which only the action's first one reads)."""
        kind = op.kind
        tree = self.tree
        if kind == "write":
            for p in op.paths:
                k = tree.key(p)
                tree.write(k, op.mode)
                self._changed(k, step, op.evidence)
        elif kind == "touch":
            self._touch(op, step)
        elif kind == "mkdir":
            tree.made_dirs.update(p.rstrip("/") for p in op.paths)
        elif kind == "delete":
            for p in op.paths:
                self._delete(p, step, op.evidence)
        elif kind in ("copy", "move"):
            self._copy(op, step)
        elif kind == "revert":
            self._revert(op, step)
        elif kind == "revert-all":
            for k in list(tree.version):
                if tree.tracked(k) and tree.differs(k):
                    tree.revert(k)
                    self._restored(k)
        elif kind == "stash":
            self._stash(op)
        elif kind in ("stash-pop", "stash-apply"):
            self._unstash(kind)
        elif kind == "stash-drop":
            if tree.stash:
                tree.stash.pop()
        elif kind == "clean":
            self._clean(op, step)
        elif kind in ("stage-all", "stage", "unstage", "commit"):
            self._stage(op)
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

    def _touch(self, op: _Op, step: int) -> None:
        """``touch`` only changes an existing file's time: a new empty file only where the file cannot have existed."""
        tree = self.tree
        for p in op.paths:
            k = tree.key(p)
            if tree.version[k] == _ABSENT or (tree.untouched(k) and tree.in_made_dir(k)):
                tree.write(k, "create")
                self._changed(k, step, op.evidence)

    def _copy(self, op: _Op, step: int) -> None:
        """``cp`` or ``mv``: the destination takes the source's version; a move also deletes the source."""
        tree = self.tree
        src, dst = op.paths
        ks, kd = tree.key(src), tree.key(dst)
        if ks == kd:
            return
        tree.version[kd] = tree.version[ks]
        self._changed(kd, step, op.evidence)
        if op.kind == "move":
            tree.delete(ks)
            self._changed(ks, step, op.evidence)

    def _revert(self, op: _Op, step: int) -> None:
        """``git checkout``/``git restore`` of paths: files git knows go back to their start."""
        tree = self.tree
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

    def _stash(self, op: _Op) -> None:
        """``git stash``: the changed files (untracked ones with ``-u``) saved and back at their start."""
        tree = self.tree
        saved: dict[str, tuple[str, ...]] = {}
        include_untracked = "untracked" in op.extra
        for k in list(tree.version):
            if tree.differs(k) and (include_untracked or tree.tracked(k)):
                saved[k] = tree.version[k]
                tree.version[k] = (_HEAD, k) if tree.tracked(k) else _ABSENT
                self.stashed_pending[k] = self.pending.pop(k, [])
        tree.stash.append(saved)

    def _unstash(self, kind: str) -> None:
        """``git stash pop``/``apply``: the last stash's files back, with their contradictions."""
        tree = self.tree
        if tree.stash:
            saved = tree.stash.pop() if kind == "stash-pop" else tree.stash[-1]
            for k, version in saved.items():
                tree.version[k] = version  # the stashed changes come back: same contradictions, not new ones
                self.pending[k] = self.stashed_pending.pop(k, []) + self.pending.get(k, [])

    def _clean(self, op: _Op, step: int) -> None:
        """``git clean``: untracked files under the paths (the whole tree without any) are removed."""
        tree = self.tree
        for p in op.paths or ("",):
            found = tree.find(p)
            for k in tree.keys_under(p) + ([found] if found else []):
                if not tree.tracked(k) and tree.version[k] != _ABSENT:
                    tree.version[k] = _ABSENT
                    self._changed(k, step, op.evidence)

    def _stage(self, op: _Op) -> None:
        """``git add``, ``git reset`` of paths, ``git commit``: what a later ``git diff`` compares."""
        tree = self.tree
        if op.kind == "stage-all":
            tree.all_staged = True
        elif op.kind == "stage":
            tree.staged.update(tree.key(p) for p in op.paths)
        elif op.kind == "unstage":
            if op.paths:
                tree.staged.difference_update(tree.key(p) for p in op.paths)
            else:
                tree.staged.clear()
                tree.all_staged = False
        else:
            tree.committed = True

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
            if not tree.differs(k) or k in shown or _outside_tree(k):
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
        refspecs = op.extra[1:]  # after the remote
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
                self._hit(rule, step, op.evidence, ",".join(targets), True)
                continue
            for t in targets:
                if t in rule.targets:
                    self._hit(rule, step, op.evidence, t, True)
                    break

    def _install(self, op: _Op, step: int) -> None:
        for rule in self._active("no-install", step):
            for pkg in op.extra:
                if not rule.targets or pkg in rule.targets:
                    self.installed.setdefault(pkg, []).append(self._hit(rule, step, op.evidence, pkg, True))
        for rule in self._active("forbidden-name", step):
            name = rule.targets[0]
            if not name.startswith("-") and _norm_pkg(name) in op.extra:
                self.installed.setdefault(_norm_pkg(name), []).append(self._hit(rule, step, op.evidence, name, True))

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
            h = self._hit(rule, step, op.evidence, name)
            written = next((o for o in action.ops if o.kind == "write" and o.paths), None)
            if op.kind.startswith("written") and written is not None:
                self.written_uses.append((h, self.tree.key(written.paths[0])))

    def finish(self) -> list[Contradiction]:
        for key, idxs in self.pending.items():
            if self.tree.differs(key):
                for h in idxs:
                    self.hits[h].final = True
        for h, key in self.written_uses:
            self.hits[h].final = self.tree.differs(key)
        return [
            Contradiction(
                rule=h.rule.name,
                constraint=h.rule.constraint,
                step=h.step,
                evidence=h.evidence,
                final=h.final,
                target=h.target,
            )
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
