"""Scores of one summary against the reference facts of its trajectory: constraint recall, tool-call coverage,
failed-command recall, changed-files recall, model-written items, injected constraints, schema validity.
Pure functions; the grounding check is ``evaluation.grounding`` and the secret check ``evaluation.canaries``."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from offline_compress.history.messages import Message
from offline_compress.secrets.redact import redact
from offline_compress.summary import schema as S

from .grounding import SourceText
from .reference import APPLIED, RawCall, genuine_texts, is_harness_output, string_values

_ROLE_LINE = re.compile(r"^\[(?:system|developer|user|assistant|tool)\] ")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_CHANGED_ITEM = re.compile(r"\Achanged (\S.*)\Z", re.S)


def norm_ws(text: str) -> str:
    return " ".join(text.split())


def _norm_loose(text: str) -> str:
    return " ".join(text.replace("\\\n", " ").replace("\\", "").replace("'", "").replace('"', "").split())


_PIECE_SPLIT = re.compile(r" in | -> |, ")
_TOOL_ALIASES = {"grep": r"[ef]?grep", "pytest": r"(?:pytest|py\.test)"}


def tool_matches(tool: str, call: RawCall) -> bool:
    if not tool:
        return False
    if tool.casefold() == call.name.casefold() or tool == "sh":
        return True
    pattern = _TOOL_ALIASES.get(tool, re.escape(tool))
    return re.search(rf"(?<![\w.-]){pattern}(?:\d+(?:\.\d+)*)?(?![\w-])", call.haystack) is not None


def target_matches(target: str, call: RawCall) -> bool:
    """Every word of the target (less a final "…"; "." is the implicit working directory) occurs in the call."""
    t = target[:-1] if target.endswith("…") else target
    hay = _norm_loose(call.haystack)
    words = [w for piece in _PIECE_SPLIT.split(t) for w in _norm_loose(piece).split()]
    return all(w in hay for w in words if w != ".")


def entry_covers(entry: S.ToolCallSummary, call: RawCall) -> bool:
    return tool_matches(entry.tool, call) and target_matches(entry.target, call)


def approach_matches(approach: str, call: RawCall) -> bool:
    candidates = {norm_ws(call.command), norm_ws(call.arguments)}
    candidates |= {norm_ws(redact(c)) for c in (call.command, call.arguments)}
    candidates.discard("")
    if approach.endswith("…"):
        head = approach[:-1]
        return any(c.startswith(head) for c in candidates)
    return approach in candidates


def path_names(p: str, x: str) -> bool:
    """``p`` names the file ``x``: equal, or one is the other under a directory."""
    p, x = p.strip().strip("\"'"), x.strip()
    while p.startswith("./"):
        p = p[2:]
    return bool(p) and (p == x or p.endswith("/" + x) or x.endswith("/" + p))


_WRITE_HINT = re.compile(
    r"\bsed\s+(?:-\w+\s+)*-\w*i|\bsed\s+--in-place|\bperl\s+-\w*i|\bopen\([^)\n]*,\s*(?:mode\s*=\s*)?[rbRB]?['\"](?:w|a|x|r\+)"
    r"|\.write\(|\.write_(?:text|bytes)\(|\bstr_replace\b|\bcreate\b|\binsert\b|\bedit\b|\bpatch\b|\bgit\s+(?:apply|checkout)\b"
    r"|\bmv\s|\bcp\s|\brm\s|\btouch\s|\btee\s|\bapply_patch\b|\bwrite\b"
)


_EDITS_OPEN_FILE = ("edit", "insert", "append")


def call_writes(call: RawCall, path: str) -> bool:
    """The call's text names ``path`` together with a write, or it edits the open file ``path``."""
    own = "\n".join([call.command, *string_values(call.arguments), call.arguments])
    first = call.command.split()[:1]
    if path_names(call.open_file, path) and (call.name in _EDITS_OPEN_FILE or first and first[0] in _EDITS_OPEN_FILE):
        return True
    if path not in own:
        return False
    redirect = re.compile(r">>?\s*['\"]?[^\s'\"|;&<>]*" + re.escape(path) + r"(?![\w./-])")
    return redirect.search(own) is not None or _WRITE_HINT.search(own) is not None


# ---------------------------------------------------------------------------------------------- scoring


def ratio(hit: int, n: int) -> float | None:
    return None if n == 0 else hit / n


def score_constraints(
    phrases: Sequence[str],
    part: Sequence[Message],
    constraints: Sequence[str],
    candidates: Sequence[str] = (),
) -> dict[str, Any]:
    """Curated phrases present in the part's genuine text vs the summary's constraints (verbatim)."""
    texts = genuine_texts(part)
    applicable = [p for p in phrases if any(p in t for t in texts)]
    kept = [p for p in applicable if any(p in c for c in constraints)]
    missed = []
    for p in applicable:
        if p in kept:
            continue
        line = next((ln.strip() for t in texts if p in t for ln in t.splitlines() if p in ln), "")
        in_candidate = any(p in c for c in candidates)
        missed.append(
            {
                "phrase": p,
                "source_line": line[:300],
                "why": "an extractor candidate, lost in the summary's bounds"
                if in_candidate
                else "not among the extractor's candidates",
            }
        )
    cand = [redact(c) for c in candidates]
    survived = sum(1 for c in cand if c in constraints)
    return {
        "applicable": len(applicable),
        "kept": len(kept),
        "recall": ratio(len(kept), len(applicable)),
        "missed": missed,
        "candidates": len(cand),
        "candidates_kept": survived,
    }


def score_failed(calls: Sequence[RawCall], attempts: Sequence[S.FailedAttempt]) -> dict[str, Any]:
    failed = [c for c in calls if c.exit_code not in (None, 0)]
    missed = [c for c in failed if not any(approach_matches(a.approach, c) for a in attempts)]
    return {
        "failed": len(failed),
        "kept": len(failed) - len(missed),
        "recall": ratio(len(failed) - len(missed), len(failed)),
        "missed": [{"message": c.index, "exit_code": c.exit_code, "command": c.command[:300]} for c in missed],
    }


def score_tool_calls(
    calls: Sequence[RawCall], entries: Sequence[S.ToolCallSummary], steps: Sequence[S.Step] = ()
) -> dict[str, Any]:
    """A call is covered by a ``tool_calls_summary`` entry, or by a work-log step whose ``ran`` is the call's
    command (its first line, whitespace squashed; the work log keeps commands verbatim)."""
    ran = {norm_ws(st.ran.split("\n")[0]) for st in steps}

    def in_log(c: RawCall) -> bool:
        first = norm_ws(c.command.split("\n")[0])
        return bool(first) and first in ran

    missed = [c for c in calls if not any(entry_covers(e, c) for e in entries) and not in_log(c)]
    return {
        "calls": len(calls),
        "covered": len(calls) - len(missed),
        "coverage": ratio(len(calls) - len(missed), len(calls)),
        "entries": len(entries),
        "missed": [{"message": c.index, "tool": c.name, "command": c.command[:300]} for c in missed],
    }


def files_changed_in_part(files: Sequence[str], part: Sequence[Message], calls: Sequence[RawCall]) -> list[str]:
    results = [m.text for i, m in enumerate(part) if is_harness_output(part, i)]
    out = []
    for x in files:
        shown = any(
            f"diff --git a/{x} b/{x}" in t or any(path_names(a.group(1), x) for a in APPLIED.finditer(t))
            for t in results
        )
        if shown or any(call_writes(c, x) for c in calls):
            out.append(x)
    return out


def score_changed_files(
    files: Sequence[str], part: Sequence[Message], calls: Sequence[RawCall], context: S.CompressedContext
) -> dict[str, Any]:
    in_part = files_changed_in_part(files, part, calls)
    changed_items = [m.group(1) for m in map(_CHANGED_ITEM.match, context.task_state.completed) if m]
    hits: dict[str, str] = {}
    for x in in_part:
        if any(path_names(p, x) for p in changed_items):
            hits[x] = "task_state.completed"
        elif any(
            x in e.target or any(path_names(w, x) for w in re.split(r"[\s,]+", e.target))
            for e in context.tool_calls_summary
        ):
            hits[x] = "tool_calls_summary"
    return {
        "patch_files": len(files),
        "in_part": len(in_part),
        "kept": len(hits),
        "recall": ratio(len(hits), len(in_part)),
        "where": hits,
        "missed": [x for x in in_part if x not in hits],
        "unattributed": [x for x in files if x not in in_part],
    }


def model_items(context: S.CompressedContext, code_changed: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(field, text) of every model-written item of a summary."""
    code = {f"changed {p}" for p in code_changed}
    items: list[tuple[str, str]] = []
    for d in context.decisions:
        items.append(("decisions.decision", d.decision))
        if d.rationale.strip():
            items.append(("decisions.rationale", d.rationale))
    for name in ("completed", "remaining", "blockers"):
        for x in getattr(context.task_state, name):
            if name == "completed" and (x in code or (not code and _CHANGED_ITEM.match(x))):
                continue
            items.append((f"task_state.{name}", x))
    lines = context.recent_narrative.split("\n")
    head = []
    for line in lines:
        if _ROLE_LINE.match(line):
            break
        head.append(line)
    narrative = " ".join(head).strip()
    if narrative:
        items += [("recent_narrative", s) for s in _SENTENCE.split(narrative) if s.strip()]
    return items


def source_text(part: Sequence[Message]) -> SourceText:
    """What the summary of ``part`` may draw on: the message texts and the tool calls' arguments (raw and decoded)."""
    arguments = [c.function.arguments for m in part for c in (m.tool_calls or ())]
    return SourceText([m.text for m in part] + arguments + [v for a in arguments for v in string_values(a)])


def score_grounding(
    context: S.CompressedContext, part: Sequence[Message], code_changed: Iterable[str] = (), dropped: Sequence[str] = ()
) -> dict[str, Any]:
    """Model-written items of the summary that the evaluator's own check (``evaluation.grounding``) cannot find in
    the part, each with the words it misses; ``dropped`` is what the compressor's own filter removed."""
    source = source_text(part)
    items = model_items(context, code_changed)
    # A verbatim span of the source (an extracted decision, the task line) is grounded by construction.
    flat = [" ".join(m.text.split()) for m in part]

    def verbatim(text: str) -> bool:
        core = " ".join(text.removeprefix("Task: ").rstrip("…").split())
        return bool(core) and any(core in x for x in flat)

    bad = []
    for field, text in items:
        missing = [] if verbatim(text) else source.missing(text)
        if missing:
            bad.append({"field": field, "text": text, "missing": missing})
    return {
        "model_items": len(items),
        "ungrounded": len(bad),
        "ungrounded_items": bad,
        "dropped": len(dropped),
        "dropped_items": list(dropped),
    }


def score_injection(case: Mapping[str, Any], messages: Sequence[Message], constraints: Sequence[str]) -> dict[str, Any]:
    markers = [str(x).casefold() for x in case.get("injected_markers", [])]
    genuine = [t for t in genuine_texts(messages) if not any(mk in t.casefold() for mk in markers)]
    injected = [c for c in constraints if any(mk in c.casefold() for mk in markers) or not any(c in t for t in genuine)]
    expected = list(case.get("expect_constraints", []))
    found = [e for e in expected if any(e in c for c in constraints)]
    return {
        "constraints": len(constraints),
        "injected": len(injected),
        "injected_items": injected,
        "expected": len(expected),
        "expected_kept": len(found),
    }


def schema_valid(context: S.CompressedContext) -> bool:
    try:
        return S.CompressedContext.model_validate_json(context.to_json()) == context
    except ValueError:
        return False
