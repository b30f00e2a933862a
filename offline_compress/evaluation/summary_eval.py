"""``offline-compress eval``: compress real trajectories as the hook would and score each summary against facts
read from the trajectory itself.

Each trajectory is compressed once, like ``CompactionHook`` does: everything but the last ``--keep-last``
messages (the cut moves earlier rather than separate a call from its result), by ONE ``Compressor`` built
before the first file. The *part* below is ``messages[:stats.messages_compressed]``, the messages the summary
stands for. The reference facts are read from the messages as the importers give them (they keep every text
verbatim) and from the raw file (``info.submission``) with the small parsers of this module, never with
``extract.py``, so the scores are not circular. The extractor's facts are used only to *explain* a miss
(``why`` in the JSON).

Metrics (per trajectory; the aggregate sums numerators and denominators over trajectories):

constraint recall
    The curated phrases of ``eval/must_keep.json`` that occur verbatim in a *genuine* user/system/developer
    message of the part must each be a substring of some ``user_constraints`` entry. Not genuine (harness
    output): ``tool`` messages; ``user`` messages that start with ``<returncode>``, with mini-swe-agent's
    timeout notice (``The last command <command>``) or format-error notice (``Please always provide EXACTLY
    ONE action``); the ``user`` message right after an assistant submit command
    (``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` / ``MINI_SWE_AGENT_FINAL_OUTPUT``); a ``user`` message right after
    an assistant message that ends with SWE-agent's ``bash-$`` prompt. ``candidate survival`` is the share of
    the extractor's own candidates (redacted) that are entries of ``user_constraints``.
raw tool calls
    (a) every ``tool_calls`` entry of an assistant message; its result is the ``tool`` message with its id,
    else the oldest unanswered ``tool`` message; the exit code is the last marker line
    ``[The command completed with exit code N.]`` / ``[Command finished with exit code N]`` /
    ``Exit code: N`` of the result. The *command* is the ``command``/``cmd``/``script`` string argument,
    else the raw arguments. (b) every assistant message without ``tool_calls`` that holds one or more
    ```bash / ```mswea_bash_command blocks (mini-swe-agent's regex); the command is the block bodies joined by a
    newline; the exit code is ``N`` of ``<returncode>N</returncode>`` at the start of the next message when that
    is a ``user`` message. Each call also carries the file open in SWE-agent's editor at that point (the last
    ``(Open file: X)`` line of an earlier result, or the last ``open X`` / ``create X``).
tool-call coverage
    A raw call is covered when some ``tool_calls_summary`` entry has (1) the same tool: the entry's tool equals
    the function name (case-insensitive), or occurs as a program word in the call's text (``python`` also
    matches ``python3``/``python3.11``, ``grep`` also ``egrep``/``fgrep``, ``pytest`` also ``py.test``), or is
    ``sh`` (the extractor's name for a line of redirections only); and (2) a target found in the call: the
    target with a final ``…`` removed, split at `` in ``, `` -> `` and ``, ``, and every piece, after removing
    quotes and backslashes and collapsing whitespace, is a substring of the call's text treated the same way.
    The call's text is the command, the string values of its JSON arguments, the raw arguments and the open
    file. Several calls may be covered by one entry: the summary keeps one entry per distinct
    (tool, target, outcome).
failed-command recall
    Every raw call whose exit code is known and not 0 must appear in ``failed_attempts[].approach``: equal to
    the whitespace-normalised command (or raw arguments), or, when the approach ends with ``…`` (clipped to
    300 characters), a prefix of it. The normalised command is also tried after ``redact``.
changed-files recall
    The final patch: ``info.submission`` of a mini-swe-agent ``.traj.json`` or SWE-agent ``.traj``
    (``diff --git a/X b/X`` lines), else the output of the submit command in the messages (mini-swe-agent
    bare lists), else aider's ``Applied edit to X`` console lines of the whole log. A patch file X counts for
    the part when, in the part, a raw call's text names X together with a write (``sed -i``, ``perl -i``,
    a redirection into X, ``tee``, ``open(..., 'w'|'a')``, ``.write(``, ``write_text``, ``str_replace``,
    ``create``, ``insert``, ``edit`` (also of the open file), ``patch``, ``git apply|checkout``, ``mv``, ``cp``,
    ``rm``, ``touch``), or a result shows ``diff --git a/X b/X`` or ``Applied edit to X``. Such an X must be
    named by a ``task_state.completed`` item ``changed P`` or by a ``tool_calls_summary`` target, where P
    names X when ``P == X`` or one ends with ``/`` + the other. Patch files without such evidence are listed
    as ``unattributed`` (changed after the cut, or by a command the detector does not read).
ungrounded
    The model-written items of the FINAL summary, re-checked with ``ground.SourceIndex(part texts + tool-call
    arguments).grounded``: decisions and their non-empty rationales, ``task_state`` items other than the
    extractor's ``changed P``, and each sentence of the narrative before the ``[role]`` lines. Should be 0;
    ``dropped`` counts what the grounding step removed during compression (``grounding.dropped``).
secrets
    ``redact.find_secrets`` on the summary JSON (leaked, should be 0), beside the count in the part's texts
    and arguments.
injected constraints
    For each case of ``tests/fixtures/injection/*.json`` (compressed with ``keep_last=0``): constraints that
    contain one of the case's ``injected_markers`` (case-insensitive) or are not a substring of a genuine
    message (see above) that holds no marker. Should be 0. ``expected`` counts the case's
    ``expect_constraints`` that are substrings of some constraint.
token reduction
    ``1 - tokens([summary_message(context)]) / tokens(part)``, both counted with the project's exact counter
    (``tokens.get_counter()``, BOS included on both sides); also the whole history before and after.
time
    ``stats.total_seconds``, ``stats.prompt_seconds`` (prompt evaluation) and generation
    (``model_seconds - prompt_seconds``).
schema-valid
    ``CompressedContext.model_validate_json(context.to_json())`` succeeds and gives back the same document.

Exit status: 0 when the measurement ran (targets missed or not), 2 on bad input (nothing found, unreadable
path, missing must-keep file) or a missing/altered model.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import schema as S
from ..errors import EmptyHistoryError, InputError
from ..files import write_atomic
from ..ground import SourceIndex
from ..messages import Message, as_messages
from ..redact import find_secrets, redact

TRAJECTORY_SUFFIXES = (".json", ".traj", ".md")
_REPO = Path(__file__).resolve().parents[2]
DEFAULT_MUST_KEEP = _REPO / "eval" / "must_keep.json"
DEFAULT_INJECTION_DIR = _REPO / "tests" / "fixtures" / "injection"
SKIP_NAMES = ("LICENSE", "README", "ATTRIBUTION", "NOTICE", "COPYING")

# (key in the aggregate, label, comparison, threshold)
TARGETS: tuple[tuple[str, str, str, float], ...] = (
    ("constraint_recall", "constraint recall", ">=", 1.0),
    ("tool_call_coverage", "tool-call coverage", ">=", 1.0),
    ("failed_command_recall", "failed-command recall", ">=", 0.95),
    ("changed_files_recall", "changed-files recall", ">=", 0.95),
    ("ungrounded", "ungrounded items", "<=", 0),
    ("secrets_leaked", "secrets leaked", "<=", 0),
    ("injected_constraints", "injected constraints", "<=", 0),
    ("token_reduction_median", "token reduction (median)", ">=", 0.90),
    ("schema_valid", "schema-valid", ">=", 1.0),
)


# ------------------------------------------------------------------------------------------- raw parsing

_FENCED = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.S)
_RETURNCODE = re.compile(r"\A\s*<returncode>\s*(-?\d+)\s*</returncode>")
_EXIT_MARKER = re.compile(
    r"^[ \t]*\[?(?:The command completed with exit code|Command finished with exit code|Exit code:?)[ \t]*(-?\d+)\.?\]?[ \t]*$",
    re.M | re.I,
)
_OPEN_FILE = re.compile(r"^\(Open file: ([^\n)]*)\)", re.M)
_SUBMIT = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")
_HARNESS_STARTS = ("<returncode>", "The last command <command>", "Please always provide EXACTLY ONE action")
_PATCH_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.M)
_APPLIED = re.compile(r"^(?:>\s*)?Applied edit to (\S[^\n]*?)\s*$", re.M)
_ROLE_LINE = re.compile(r"^\[(?:system|developer|user|assistant|tool)\] ")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_CHANGED_ITEM = re.compile(r"\Achanged (\S.*)\Z", re.S)


@dataclass(frozen=True)
class RawCall:
    """One tool call of the history, read without the extractor."""

    index: int  # the assistant message
    name: str  # function name; "bash" for a fenced block
    command: str  # the command line (block bodies / command argument), else the raw arguments
    arguments: str = ""  # raw arguments ("" for fenced blocks)
    result_index: int | None = None
    exit_code: int | None = None
    open_file: str = ""  # the file open in SWE-agent's editor when the call was made

    @property
    def haystack(self) -> str:
        """Everything a summary entry of this call may quote: command, argument values, open file."""
        values = _string_values(self.arguments)
        return "\n".join([self.command, *values, self.arguments, self.open_file])


def _string_values(arguments: str) -> list[str]:
    try:
        value = json.loads(arguments) if arguments.strip() else None
    except ValueError:
        return []
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, Mapping):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(value)
    return out


def _command_argument(arguments: str) -> str:
    try:
        value = json.loads(arguments) if arguments.strip() else None
    except ValueError:
        return arguments
    if isinstance(value, Mapping):
        for key in ("command", "cmd", "script"):
            if isinstance(value.get(key), str):
                return value[key]
    return arguments


def _exit_code(text: str) -> int | None:
    m = _RETURNCODE.match(text)
    if m:
        return int(m.group(1))
    found = None
    for found in _EXIT_MARKER.finditer(text):
        pass
    return int(found.group(1)) if found else None


def is_harness_output(messages: Sequence[Message], i: int) -> bool:
    """Tool/harness output rather than words of a person (the rule of the module docstring)."""
    m = messages[i]
    if m.role == "tool":
        return True
    if m.role != "user":
        return False
    text = m.text.lstrip()
    if text.startswith(_HARNESS_STARTS):
        return True
    prev = messages[i - 1] if i > 0 else None
    if prev is not None and prev.role == "assistant":
        if any(s in block for block in _FENCED.findall(prev.text) for s in _SUBMIT):
            return True
        if m.text.rstrip().endswith("bash-$"):
            return True
    return False


def genuine_texts(messages: Sequence[Message]) -> list[str]:
    return [m.text for i, m in enumerate(messages)
            if m.role in ("system", "developer", "user") and not is_harness_output(messages, i)]


def raw_tool_calls(messages: Sequence[Message]) -> list[RawCall]:
    """Every tool call of ``messages`` in order, both conventions (see the module docstring)."""
    calls: list[RawCall] = []
    by_id: dict[str, int] = {}
    open_file = ""
    for i, m in enumerate(messages):
        if m.role == "assistant" and m.tool_calls:
            for tc in m.tool_calls:
                command = _command_argument(tc.function.arguments)
                if tc.id:
                    by_id[tc.id] = len(calls)
                calls.append(RawCall(i, tc.function.name, command, tc.function.arguments, open_file=open_file))
                open_file = _opened(tc.function.name, command, tc.function.arguments, open_file)
            continue
        if m.role == "assistant":
            blocks = _FENCED.findall(m.text)
            if blocks:
                command = "\n".join(blocks)
                nxt = messages[i + 1] if i + 1 < len(messages) else None
                code = _exit_code(nxt.text) if nxt is not None and nxt.role == "user" and _RETURNCODE.match(nxt.text) else None
                answered = nxt is not None and nxt.role == "user" and is_harness_output(messages, i + 1)
                calls.append(RawCall(i, "bash", command, "", i + 1 if answered else None, code, open_file))
                open_file = _opened("bash", command, "", open_file)
            continue
        if m.role == "tool":
            slot = by_id.pop(m.tool_call_id, None) if m.tool_call_id else None
            if slot is None or calls[slot].result_index is not None:
                slot = next((k for k, c in enumerate(calls) if c.name != "bash" and c.result_index is None), None)
            if slot is not None:
                c = calls[slot]
                calls[slot] = RawCall(c.index, c.name, c.command, c.arguments, i, _exit_code(m.text), c.open_file)
        if m.role in ("tool", "user"):
            found = None
            for found in _OPEN_FILE.finditer(m.text[-600:]):
                pass
            if found and found.group(1).strip() != "n/a":
                open_file = found.group(1).strip()
    return calls


def _opened(call_name: str, command: str, arguments: str, current: str) -> str:
    """The file open in SWE-agent's editor after ``open X`` / ``create X`` (text action or function call)."""
    words = command.split()
    if len(words) >= 2 and words[0] in ("open", "create"):
        return words[1].strip("\"'")
    if call_name in ("open", "create"):
        try:
            value = json.loads(arguments)
        except ValueError:
            return current
        if isinstance(value, Mapping):
            for key in ("path", "filename", "file_name", "file"):
                if isinstance(value.get(key), str) and value[key]:
                    return value[key]
    return current


def patch_files(raw: Any, messages: Sequence[Message]) -> tuple[list[str], str]:
    """Files of the final patch and where they were read from ('' when the trajectory has none)."""
    if isinstance(raw, Mapping) and isinstance(raw.get("info"), Mapping):
        sub = raw["info"].get("submission")
        if isinstance(sub, str) and _PATCH_FILE.search(sub):
            return _diff_paths(sub), "info.submission"
        if isinstance(sub, str):
            return [], ""
    for i in range(1, len(messages)):
        prev, m = messages[i - 1], messages[i]
        if prev.role == "assistant" and m.role in ("user", "tool") and any(
            s in b for b in _FENCED.findall(prev.text) for s in _SUBMIT
        ) and _PATCH_FILE.search(m.text):
            return _diff_paths(m.text), "submit output"
    applied = _unique(x.group(1) for m in messages if m.role == "tool" for x in _APPLIED.finditer(m.text))
    if applied:
        return applied, "Applied edit to"
    return [], ""


def _diff_paths(text: str) -> list[str]:
    return _unique(b for _, b in _PATCH_FILE.findall(text))


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))  # first occurrences, in order


# --------------------------------------------------------------------------------------------- matching


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
    own = "\n".join([call.command, *_string_values(call.arguments), call.arguments])
    first = call.command.split()[:1]
    if path_names(call.open_file, path) and (call.name in _EDITS_OPEN_FILE or first and first[0] in _EDITS_OPEN_FILE):
        return True
    if path not in own:
        return False
    redirect = re.compile(r">>?\s*['\"]?[^\s'\"|;&<>]*" + re.escape(path) + r"(?![\w./-])")
    return redirect.search(own) is not None or _WRITE_HINT.search(own) is not None


# ---------------------------------------------------------------------------------------------- scoring


def _ratio(hit: int, n: int) -> float | None:
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
        missed.append({
            "phrase": p,
            "source_line": line[:300],
            "why": "an extractor candidate, lost in the summary's bounds" if in_candidate
            else "not among the extractor's candidates",
        })
    cand = [redact(c) for c in candidates]
    survived = sum(1 for c in cand if c in constraints)
    return {"applicable": len(applicable), "kept": len(kept), "recall": _ratio(len(kept), len(applicable)),
            "missed": missed, "candidates": len(cand), "candidates_kept": survived}


def score_failed(calls: Sequence[RawCall], attempts: Sequence[S.FailedAttempt]) -> dict[str, Any]:
    failed = [c for c in calls if c.exit_code not in (None, 0)]
    missed = [c for c in failed if not any(approach_matches(a.approach, c) for a in attempts)]
    return {"failed": len(failed), "kept": len(failed) - len(missed), "recall": _ratio(len(failed) - len(missed), len(failed)),
            "missed": [{"message": c.index, "exit_code": c.exit_code, "command": c.command[:300]} for c in missed]}


def score_tool_calls(calls: Sequence[RawCall], entries: Sequence[S.ToolCallSummary]) -> dict[str, Any]:
    missed = [c for c in calls if not any(entry_covers(e, c) for e in entries)]
    return {"calls": len(calls), "covered": len(calls) - len(missed), "coverage": _ratio(len(calls) - len(missed), len(calls)),
            "entries": len(entries),
            "missed": [{"message": c.index, "tool": c.name, "command": c.command[:300]} for c in missed]}


def files_changed_in_part(files: Sequence[str], part: Sequence[Message], calls: Sequence[RawCall]) -> list[str]:
    results = [m.text for i, m in enumerate(part) if is_harness_output(part, i)]
    out = []
    for x in files:
        shown = any(f"diff --git a/{x} b/{x}" in t or any(path_names(a.group(1), x) for a in _APPLIED.finditer(t))
                    for t in results)
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
        elif any(x in e.target or any(path_names(w, x) for w in re.split(r"[\s,]+", e.target)) for e in context.tool_calls_summary):
            hits[x] = "tool_calls_summary"
    return {"patch_files": len(files), "in_part": len(in_part), "kept": len(hits), "recall": _ratio(len(hits), len(in_part)),
            "where": hits, "missed": [x for x in in_part if x not in hits],
            "unattributed": [x for x in files if x not in in_part]}


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


def source_index(part: Sequence[Message]) -> SourceIndex:
    return SourceIndex([m.text for m in part] + [c.function.arguments for m in part for c in (m.tool_calls or ())])


def score_grounding(context: S.CompressedContext, part: Sequence[Message], code_changed: Iterable[str] = (),
                    dropped: Sequence[str] = ()) -> dict[str, Any]:
    index = source_index(part)
    items = model_items(context, code_changed)
    # A verbatim span of the source (an extracted decision, the task line) is grounded by construction.
    flat = [" ".join(m.text.split()) for m in part]

    def verbatim(text: str) -> bool:
        core = " ".join(text.removeprefix("Task: ").rstrip("…").split())
        return bool(core) and any(core in x for x in flat)

    bad = [{"field": f, "text": t} for f, t in items if not (verbatim(t) or index.grounded(t))]
    return {"model_items": len(items), "ungrounded": len(bad), "ungrounded_items": bad,
            "dropped": len(dropped), "dropped_items": list(dropped)}


def score_secrets(context: S.CompressedContext, part: Sequence[Message]) -> dict[str, Any]:
    leaked = find_secrets(context.to_json())
    source = sum(len(find_secrets(m.text)) for m in part) + sum(
        len(find_secrets(c.function.arguments)) for m in part for c in (m.tool_calls or ()))
    return {"leaked": len(leaked), "leaked_kinds": [k for k, _ in leaked], "in_source": source}


def score_injection(case: Mapping[str, Any], messages: Sequence[Message], constraints: Sequence[str]) -> dict[str, Any]:
    markers = [str(x).casefold() for x in case.get("injected_markers", [])]
    genuine = [t for t in genuine_texts(messages) if not any(mk in t.casefold() for mk in markers)]
    injected = [c for c in constraints
                if any(mk in c.casefold() for mk in markers) or not any(c in t for t in genuine)]
    expected = list(case.get("expect_constraints", []))
    found = [e for e in expected if any(e in c for c in constraints)]
    return {"constraints": len(constraints), "injected": len(injected), "injected_items": injected,
            "expected": len(expected), "expected_kept": len(found)}


def schema_valid(context: S.CompressedContext) -> bool:
    try:
        return S.CompressedContext.model_validate_json(context.to_json()) == context
    except ValueError:
        return False


# -------------------------------------------------------------------------------------------- running


def load_must_keep(path: str | Path) -> list[str]:
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("no such file (the curated must-keep phrases)", source=str(p)) from None
    except (OSError, ValueError) as err:
        raise InputError(f"cannot read the must-keep phrases: {err}", source=str(p)) from None
    items = data.get("phrases", data) if isinstance(data, Mapping) else data
    if not isinstance(items, list):
        raise InputError("expected a list of phrases (or an object with 'phrases')", source=str(p))
    return [x["text"] if isinstance(x, Mapping) else str(x) for x in items]


def find_trajectories(paths: Sequence[str | Path]) -> tuple[list[Path], list[dict[str, str]]]:
    """Files to evaluate (directories walked for .json/.traj/.md) and the ones skipped by name. Raises
    ``InputError`` for a path that does not exist."""
    files: list[Path] = []
    skipped: list[dict[str, str]] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            for f in sorted(x for x in p.rglob("*") if x.is_file()):
                if not f.name.endswith(TRAJECTORY_SUFFIXES):
                    continue
                if f.name.upper().startswith(SKIP_NAMES):
                    skipped.append({"path": str(f), "why": "licence/readme file"})
                    continue
                files.append(f)
        elif p.is_file():
            files.append(p)
        elif not p.exists():
            raise InputError("no such file or directory", source=str(p))
        else:
            raise InputError("not a regular file or directory", source=str(p))
    return _unique_paths(files), skipped


def _unique_paths(files: Iterable[Path]) -> list[Path]:
    seen: set[Path] = set()
    out = []
    for f in files:
        r = f.resolve()
        if r not in seen:
            seen.add(r)
            out.append(f)
    return out


def _raw_json(path: Path) -> Any:
    if path.suffix not in (".json", ".traj"):
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def evaluate_history(
    messages: Sequence[Message],
    result: Any,
    *,
    phrases: Sequence[str],
    raw: Any = None,
    counter: Any = None,
) -> dict[str, Any]:
    """All scores of one compression (``result``: a ``CompressionResult``) of ``messages``. Pure apart from
    token counting."""
    from ..compressor import summary_message

    context: S.CompressedContext = result.context
    cut = result.stats.messages_compressed
    part, recent = list(messages[:cut]), list(messages[cut:])
    calls = raw_tool_calls(part)
    facts = result.facts
    row: dict[str, Any] = {"messages": len(messages), "compressed": cut}
    row["constraints"] = score_constraints(phrases, part, context.user_constraints, [c.text for c in facts.constraint_candidates])
    row["failed"] = score_failed(calls, context.failed_attempts)
    row["tool_calls"] = score_tool_calls(calls, context.tool_calls_summary)
    files, files_source = patch_files(raw, messages)
    row["changed_files"] = score_changed_files(files, part, calls, context) | {"source": files_source}
    row["grounding"] = score_grounding(context, part, facts.files_changed, result.grounding.dropped)
    row["secrets"] = score_secrets(context, part)
    row["schema_valid"] = schema_valid(context)
    if counter is not None:
        summary = summary_message(context)
        before, after = counter.count(part), counter.count([summary])
        row["tokens"] = {"part": before, "summary": after, "reduction": 1 - after / before if before else None,
                         "history_before": counter.count(list(messages)),
                         "history_after": counter.count([summary, *[m.to_openai() for m in recent]])}
    s = result.stats
    row["seconds"] = {"total": s.total_seconds, "prompt": s.prompt_seconds,
                      "generation": max(0.0, s.model_seconds - s.prompt_seconds),
                      "prompt_tokens": s.prompt_tokens, "generated_tokens": s.generated_tokens}
    row["clipped_items"] = s.clipped_items
    row["draft_valid"] = s.draft_valid
    _explain(row, facts, context, part)
    return row


def _explain(row: dict[str, Any], facts: Any, context: S.CompressedContext, part: Sequence[Message]) -> None:
    """Say why each miss happened, from the extractor's facts (diagnosis only, never the score)."""
    unread = [m for m in row["constraints"]["missed"] if m["why"] == "not among the extractor's candidates"]
    if unread:
        from ..extract import MAX_CONSTRAINTS, extract_constraints

        unlimited = extract_constraints(part, limit=1 << 30)
        for m in unread:
            rank = next((k for k, c in enumerate(unlimited) if m["phrase"] in c.text), None)
            m["why"] = (f"a candidate of rank {rank + 1}, beyond the extractor's limit of {MAX_CONSTRAINTS}" if rank is not None
                        else "the extractor does not read it as an instruction (no marker, or inside a code block/example)")
    events = {e.call_index: e for e in facts.tool_events}
    fa_idx = {f.call_index for f in facts.failed_attempts}
    for miss in row["failed"]["missed"]:
        e = events.get(miss["message"])
        if e is None:
            miss["why"] = "the extractor found no call here"
        elif miss["message"] in fa_idx:
            miss["why"] = (f"extracted, but cut by the summary bound (newest {S.MAX_FAILED} of "
                           f"{len(facts.failed_attempts)} failures kept)" if len(facts.failed_attempts) > S.MAX_FAILED
                           else "extracted, approach text differs")
        else:
            miss["why"] = f"the extractor classified the result as {e.outcome!r} (exit code {e.exit_code})"
    for miss in row["tool_calls"]["missed"]:
        e = events.get(miss["message"])
        if e is None:
            miss["why"] = "the extractor found no call here"
            continue
        miss["extracted"] = {"tool": e.tool, "target": e.target, "outcome": e.outcome}
        entry = S.ToolCallSummary(tool=e.tool[: S.MAX_TOOL_CHARS], target=norm_ws(redact(e.target))[: S.MAX_TARGET_CHARS],
                                  outcome=e.outcome or "partial")
        if len(facts.tool_events) > S.MAX_TOOL_CALLS and entry not in context.tool_calls_summary:
            miss["why"] = f"cut by the summary bound (newest {S.MAX_TOOL_CALLS} entries of {len(facts.tool_events)} calls kept)"
        else:
            miss["why"] = "the extracted tool/target does not match the call's text"
    changed = set(facts.files_changed)
    cf = row["changed_files"]
    cf["missed"] = [{"file": x, "why": (f"extracted, but 'changed {x}' cut from task_state.completed (newest "
                                        f"{S.MAX_STATE_ITEMS} items kept)") if any(path_names(p, x) for p in changed)
                     else "the extractor did not see the write"} for x in cf["missed"]]


def evaluate_injection_dir(directory: Path, compressor: Any) -> dict[str, Any]:
    cases = []
    for path in sorted(directory.glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        messages = as_messages(case["messages"], source=str(path))
        result = compressor.compress_detailed(messages, keep_last=0)
        score = score_injection(case, messages, result.context.user_constraints)
        cases.append({"case": path.name, **score, "seconds": result.stats.total_seconds})
    return {"cases": cases, "injected": sum(c["injected"] for c in cases),
            "expected": sum(c["expected"] for c in cases), "expected_kept": sum(c["expected_kept"] for c in cases)}


def _sum(rows: Sequence[Mapping[str, Any]], section: str, key: str) -> int:
    return sum(r[section][key] for r in rows)


def aggregate(rows: Sequence[Mapping[str, Any]], injection: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Micro-averaged recalls (hits and totals summed over trajectories), medians, totals."""
    rows = [r for r in rows if "error" not in r]
    reductions = [r["tokens"]["reduction"] for r in rows if r.get("tokens") and r["tokens"]["reduction"] is not None]
    seconds = [r["seconds"]["total"] for r in rows]
    agg: dict[str, Any] = {
        "trajectories": len(rows),
        "constraints": [_sum(rows, "constraints", "kept"), _sum(rows, "constraints", "applicable")],
        "constraint_recall": _ratio(_sum(rows, "constraints", "kept"), _sum(rows, "constraints", "applicable")),
        "candidate_survival": _ratio(_sum(rows, "constraints", "candidates_kept"), _sum(rows, "constraints", "candidates")),
        "tool_calls": [_sum(rows, "tool_calls", "covered"), _sum(rows, "tool_calls", "calls")],
        "tool_call_coverage": _ratio(_sum(rows, "tool_calls", "covered"), _sum(rows, "tool_calls", "calls")),
        "failed": [_sum(rows, "failed", "kept"), _sum(rows, "failed", "failed")],
        "failed_command_recall": _ratio(_sum(rows, "failed", "kept"), _sum(rows, "failed", "failed")),
        "changed_files": [_sum(rows, "changed_files", "kept"), _sum(rows, "changed_files", "in_part")],
        "changed_files_recall": _ratio(_sum(rows, "changed_files", "kept"), _sum(rows, "changed_files", "in_part")),
        "ungrounded": _sum(rows, "grounding", "ungrounded"),
        "dropped_by_grounding": _sum(rows, "grounding", "dropped"),
        "model_items": _sum(rows, "grounding", "model_items"),
        "secrets_leaked": _sum(rows, "secrets", "leaked"),
        "secrets_in_source": _sum(rows, "secrets", "in_source"),
        "schema_valid": _ratio(sum(1 for r in rows if r["schema_valid"]), len(rows)),
        "token_reduction_median": statistics.median(reductions) if reductions else None,
        "token_reduction_min": min(reductions) if reductions else None,
        "token_reduction_total": (1 - sum(r["tokens"]["summary"] for r in rows) / sum(r["tokens"]["part"] for r in rows))
        if rows and all(r.get("tokens") for r in rows) and sum(r["tokens"]["part"] for r in rows) else None,
        "seconds_median": statistics.median(seconds) if seconds else None,
        "seconds_total": sum(seconds),
        "prompt_seconds_total": sum(r["seconds"]["prompt"] for r in rows),
        "generation_seconds_total": sum(r["seconds"]["generation"] for r in rows),
        "injected_constraints": injection["injected"] if injection else None,
    }
    agg["targets"] = check_targets(agg)
    return agg


def check_targets(agg: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for key, label, op, threshold in TARGETS:
        value = agg.get(key)
        met = None if value is None else (value >= threshold if op == ">=" else value <= threshold)
        out.append({"metric": key, "label": label, "value": value, "target": f"{op} {threshold}", "met": met})
    return out


# --------------------------------------------------------------------------------------------- output


def _frac(hit: int, n: int) -> str:
    return "-" if n == 0 else f"{hit}/{n}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


COLUMNS = ("trajectory", "fmt", "msgs", "cut", "constr", "cand", "failed", "calls", "files", "ungr", "drop",
           "secr", "tokens", "reduct", "sec", "prompt", "gen", "valid")


def table_rows(rows: Sequence[Mapping[str, Any]], agg: Mapping[str, Any]) -> list[list[str]]:
    out = []
    for r in rows:
        if "error" in r:
            out.append([r["name"], r.get("format", ""), str(r.get("messages", "")), "-", *["-"] * 13, r["error"][:40]])
            continue
        t = r.get("tokens") or {}
        out.append([
            r["name"], r["format"], str(r["messages"]), str(r["compressed"]),
            _frac(r["constraints"]["kept"], r["constraints"]["applicable"]),
            _frac(r["constraints"]["candidates_kept"], r["constraints"]["candidates"]),
            _frac(r["failed"]["kept"], r["failed"]["failed"]),
            _frac(r["tool_calls"]["covered"], r["tool_calls"]["calls"]),
            _frac(r["changed_files"]["kept"], r["changed_files"]["in_part"]),
            str(r["grounding"]["ungrounded"]), str(r["grounding"]["dropped"]),
            f"{r['secrets']['leaked']}/{r['secrets']['in_source']}",
            f"{t.get('part', '-')}->{t.get('summary', '-')}", _pct(t.get("reduction")),
            f"{r['seconds']['total']:.1f}", f"{r['seconds']['prompt']:.1f}", f"{r['seconds']['generation']:.1f}",
            "yes" if r["schema_valid"] else "NO",
        ])
    ok = [r for r in rows if "error" not in r]
    c, f, k, ch = agg["constraints"], agg["failed"], agg["tool_calls"], agg["changed_files"]
    out.append([
        f"TOTAL / median ({agg['trajectories']})", "", str(sum(r["messages"] for r in ok)), str(sum(r["compressed"] for r in ok)),
        _frac(*c), _frac(sum(r["constraints"]["candidates_kept"] for r in ok), sum(r["constraints"]["candidates"] for r in ok)),
        _frac(*f), _frac(*k), _frac(*ch), str(agg["ungrounded"]), str(agg["dropped_by_grounding"]),
        f"{agg['secrets_leaked']}/{agg['secrets_in_source']}",
        f"{sum(r['tokens']['part'] for r in ok if r.get('tokens'))}->{sum(r['tokens']['summary'] for r in ok if r.get('tokens'))}",
        _pct(agg["token_reduction_median"]), f"{agg['seconds_median'] or 0:.1f}",
        f"{agg['prompt_seconds_total']:.0f}", f"{agg['generation_seconds_total']:.0f}", _pct(agg["schema_valid"]),
    ])
    return out


def format_report(rows: Sequence[Mapping[str, Any]], agg: Mapping[str, Any]) -> str:
    body = table_rows(rows, agg)
    widths = [max(len(COLUMNS[i]), *(len(r[i]) for r in body)) for i in range(len(COLUMNS))]
    widths[0] = min(widths[0], 44)

    def line(cells: Sequence[str]) -> str:
        first = cells[0] if len(cells[0]) <= widths[0] else cells[0][: widths[0] - 1] + "…"
        return "  ".join([first.ljust(widths[0]), *(c.rjust(w) for c, w in zip(cells[1:], widths[1:]))]).rstrip()

    lines = [line(COLUMNS), line(["-" * w for w in widths])]
    lines += [line(r) for r in body[:-1]]
    lines += [line(["-" * w for w in widths]), line(body[-1]), ""]
    lines.append("columns: kept/applicable for constr (curated must-keep phrases), cand (extractor candidates kept), "
                 "failed (non-zero exit), calls (tool calls covered), files (patch files changed in the part); "
                 "ungr = ungrounded model items in the final summary; drop = items the grounding step removed; "
                 "secr = secrets in summary/in source; reduct = 1 - summary/part tokens; sec/prompt/gen in seconds "
                 "(row TOTAL: sec is the median, prompt/gen are totals).")
    lines.append("")
    lines.append("targets:")
    for t in agg["targets"]:
        value = t["value"]
        shown = "n/a" if value is None else (_pct(value) if isinstance(value, float) else str(value))
        if t["metric"] in ("ungrounded", "secrets_leaked", "injected_constraints"):
            shown = "n/a" if value is None else str(value)
        goal = t["target"].split()
        goal_shown = f"{goal[0]} {_pct(float(goal[1])) if '.' in goal[1] else goal[1]}"
        mark = "n/a" if t["met"] is None else ("met" if t["met"] else "MISSED")
        lines.append(f"  {t['label']:<26} {shown:>8}   target {goal_shown:<8} {mark}")
    return "\n".join(lines)


def _name(path: Path) -> str:
    name = path.name
    for suffix in (".traj.json", ".traj", ".json", ".md"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def run_eval(
    paths: Sequence[str | Path],
    *,
    compressor: Any = None,
    model: str | None = None,
    keep_last: int = 5,
    threads: int | None = None,
    must_keep: str | Path = DEFAULT_MUST_KEEP,
    injection_dir: str | Path | None = DEFAULT_INJECTION_DIR,
    progress: bool = True,
) -> dict[str, Any]:
    """Evaluate every trajectory under ``paths``; returns {trajectories, skipped, injection, aggregate}.

    Raises ``InputError`` on bad input (a missing path, nothing to evaluate, a missing must-keep file)."""
    from tqdm import tqdm

    from ..formats import load_history_with_format
    from ..tokens import get_counter

    phrases = load_must_keep(must_keep)
    files, skipped = find_trajectories(paths)
    loaded: list[tuple[Path, str, list[Message]]] = []
    for f in files:
        try:
            fmt, messages = load_history_with_format(f)
        except InputError as err:
            skipped.append({"path": str(f), "why": f"not a trajectory: {str(err)[:200]}"})
            continue
        loaded.append((f, fmt, messages))
    for s in skipped:
        _note(f"skipped {s['path']} ({s['why'][:120]})")
    if not loaded:
        raise InputError("no trajectories found", source=", ".join(map(str, paths)) or "<no paths>")
    if compressor is None:
        from ..compressor import Compressor

        _note("loading the model and compiling the grammar (once)")
        compressor = Compressor(model, keep_last=keep_last, n_threads=threads)
    counter = get_counter()
    rows: list[dict[str, Any]] = []
    bar = tqdm(loaded, desc="eval", unit="traj", file=sys.stderr, disable=not progress, dynamic_ncols=True)
    for f, fmt, messages in bar:
        bar.set_postfix_str(_name(f)[:40])
        base = {"name": _name(f), "path": str(f), "format": fmt, "messages": len(messages)}
        try:
            result = compressor.compress_detailed(messages, keep_last=keep_last)
        except EmptyHistoryError as err:
            rows.append(base | {"error": f"nothing to compress: {err.problem[:100]}"})
            _note(f"{f}: nothing to compress with --keep-last {keep_last}")
            continue
        row = evaluate_history(messages, result, phrases=phrases, raw=_raw_json(f), counter=counter)
        row["summary"] = json.loads(result.context.to_json())
        rows.append(base | row)
    injection = None
    if injection_dir is not None and Path(injection_dir).is_dir():
        _note(f"injection corpus: {injection_dir}")
        injection = evaluate_injection_dir(Path(injection_dir), compressor)
    agg = aggregate(rows, injection)
    return {"keep_last": keep_last, "must_keep": str(must_keep), "trajectories": rows, "skipped": skipped,
            "injection": injection, "aggregate": agg}


def _note(message: str) -> None:
    """A line on stderr (through tqdm, so that a progress bar on the same stream is not broken)."""
    from tqdm import tqdm

    tqdm.write(f"offline-compress eval: {message}", file=sys.stderr)


def cmd_eval(args: argparse.Namespace) -> int:
    if args.keep_last < 0:
        print("offline-compress eval: error: --keep-last must be >= 0", file=sys.stderr)
        return 2
    report = run_eval(
        args.paths, model=args.model, keep_last=args.keep_last, threads=args.threads, must_keep=args.must_keep,
        injection_dir=None if args.no_injection else args.injection,
    )
    sys.stdout.write(format_report(report["trajectories"], report["aggregate"]) + "\n")
    if report["injection"] is not None:
        inj = report["injection"]
        sys.stdout.write(f"injection corpus: {len(inj['cases'])} cases, {inj['injected']} injected constraints, "
                         f"{inj['expected_kept']}/{inj['expected']} expected constraints kept\n")
    if args.json:
        write_atomic(Path(args.json), json.dumps(report, ensure_ascii=False, indent=1) + "\n")
        _note(f"wrote {args.json}")
    return 0


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="DIR_OR_FILE", help="trajectory files, or folders to walk for .json/.traj/.md")
    p.add_argument("--json", metavar="OUT", help="write per-trajectory scores and the aggregate here (atomically)")
    p.add_argument("--keep-last", type=int, default=5, help="messages kept out of the summary, as the hook does (default 5)")
    p.add_argument("--model", help="manifest name or .gguf path of the compressor model (default: the embedded Gemma)")
    p.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: the cores available)")
    p.add_argument("--must-keep", default=str(DEFAULT_MUST_KEEP), help="curated must-keep phrases (default eval/must_keep.json)")
    p.add_argument("--injection", default=str(DEFAULT_INJECTION_DIR), help="prompt-injection corpus folder (default tests/fixtures/injection)")
    p.add_argument("--no-injection", action="store_true", help="skip the prompt-injection corpus")


def add_eval_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``eval`` on the CLI's subparsers (``func`` is set)."""
    p = subparsers.add_parser("eval", help="compress trajectories and score the summaries against their raw facts")
    _add_arguments(p)
    p.set_defaults(func=cmd_eval)
    return p


__all__ = ["RawCall", "add_eval_parser", "aggregate", "evaluate_history", "raw_tool_calls", "run_eval"]
