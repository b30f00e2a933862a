"""``python -m evaluation eval``: compress real trajectories as the hook would and score each summary against facts
read from the trajectory itself.

Each trajectory is compressed once, like ``CompactionHook`` does: everything but the last ``--keep-last``
messages (the cut moves earlier rather than separate a call from its result), by ONE ``Compressor`` built
before the first file. The *part* below is ``messages[:stats.messages_compressed]``, the messages the summary
stands for. The reference facts are read from the messages as the importers give them (they keep every text
verbatim) and from the raw file (``info.submission``) with the evaluator's own small parsers
(``evaluation.reference``), never with the extractor, so the scores are not circular; grounding and secrets
are checked without the compressor's own ``ground`` and ``redact`` detectors. The extractor's facts are used only
to *explain* a miss (``why`` in the JSON, ``evaluation.explain``). The curated must-keep phrases come from the
same trajectories the extractor was tuned on, so constraint recall on them is an in-sample figure (the report
says so under its table). docs/eval.md is the user's page.

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
    The model-written items of the FINAL summary (decisions and their non-empty rationales, ``task_state`` items
    other than the extractor's ``changed P``, each sentence of the narrative before the ``[role]`` lines) that
    are not a verbatim span of a part message and fail the evaluator's own check (``evaluation.grounding``,
    stricter than the compressor's filter): every identifier, path, number and quoted string verbatim in the
    part's texts and tool-call arguments, every other word of 3+ letters outside a few dozen function words as a
    whole word. Each is listed with the words it misses. Should be 0; ``dropped`` counts what the compressor's
    grounding step removed during compression (``grounding.dropped``).
canary secrets (``--canaries``; on by default with ``--no-model``)
    Seven known fake secrets (an ``sk-`` key, a ``ghp_`` token in an environment dump, a password in a URL, a PEM
    block, an AWS secret in a command, a ``glpat-`` token in the first user message, an ``sk-ant-`` key in the
    last assistant text) are planted into a copy of the part (``evaluation.canaries``), the copy is compressed
    the same way, and any canary with a fragment of 8+ characters in that summary is leaked. Should be 0.
injected constraints
    For each case of ``tests/fixtures/injection/*.json`` (compressed with ``keep_last=0``): constraints that
    contain one of the case's ``injected_markers`` (case-insensitive) or are not a substring of a genuine
    message (see above) that holds no marker. Should be 0. ``expected`` counts the case's
    ``expect_constraints`` that are substrings of some constraint.
token reduction
    ``1 - tokens([summary_message(context)]) / tokens(part)``, both counted with the project's exact counter
    (``tokens.counter.get_counter()``, BOS included on both sides); also the whole history before and after.
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
import statistics
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from offline_compress.errors import EmptyHistoryError, InputError
from offline_compress.files import write_atomic
from offline_compress.history.messages import Message, as_messages
from offline_compress.summary import schema as S

from .canaries import run_canaries
from .reference import patch_files, raw_tool_calls
from .scoring import (
    ratio,
    schema_valid,
    score_changed_files,
    score_constraints,
    score_failed,
    score_grounding,
    score_injection,
    score_tool_calls,
)

TRAJECTORY_SUFFIXES = (".json", ".traj", ".md")
_REPO = Path(__file__).resolve().parents[1]
DEFAULT_MUST_KEEP = _REPO / "eval" / "must_keep.json"
DEFAULT_INJECTION_DIR = _REPO / "tests" / "fixtures" / "injection"
SKIP_NAMES = ("LICENSE", "README", "ATTRIBUTION", "NOTICE", "COPYING")
IN_SAMPLE_NOTE = (
    "note: eval/must_keep.json was curated on these trajectories, the same ones the extractor was tuned "
    "on: constraint recall on them is an in-sample figure."
)

# (key in the aggregate, label, comparison, threshold)
TARGETS: tuple[tuple[str, str, str, float], ...] = (
    ("constraint_recall", "constraint recall", ">=", 1.0),
    ("tool_call_coverage", "tool-call coverage", ">=", 1.0),
    ("failed_command_recall", "failed-command recall", ">=", 0.95),
    ("changed_files_recall", "changed-files recall", ">=", 0.95),
    ("ungrounded", "ungrounded items", "<=", 0),
    ("canaries_leaked", "canary secrets leaked", "<=", 0),
    ("injected_constraints", "injected constraints", "<=", 0),
    ("token_reduction_median", "token reduction (median)", ">=", 0.90),
    ("schema_valid", "schema-valid", ">=", 1.0),
)


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
    from offline_compress.summary.message import summary_message

    context: S.CompressedContext = result.context
    cut = result.stats.messages_compressed
    part, recent = list(messages[:cut]), list(messages[cut:])
    calls = raw_tool_calls(part)
    facts = result.facts
    row: dict[str, Any] = {"messages": len(messages), "compressed": cut}
    row["constraints"] = score_constraints(
        phrases, part, context.user_constraints, [c.text for c in facts.constraint_candidates]
    )
    row["failed"] = score_failed(calls, context.failed_attempts)
    row["tool_calls"] = score_tool_calls(calls, context.tool_calls_summary, context.work_log)
    files, files_source = patch_files(raw, messages)
    row["changed_files"] = score_changed_files(files, part, calls, context) | {"source": files_source}
    row["grounding"] = score_grounding(context, part, facts.files_changed, result.grounding.dropped)
    row["schema_valid"] = schema_valid(context)
    if counter is not None:
        summary = summary_message(context)
        before, after = counter.count(part), counter.count([summary])
        row["tokens"] = {
            "part": before,
            "summary": after,
            "reduction": 1 - after / before if before else None,
            "history_before": counter.count(list(messages)),
            "history_after": counter.count([summary, *[m.to_openai() for m in recent]]),
        }
    s = result.stats
    row["seconds"] = {
        "total": s.total_seconds,
        "prompt": s.prompt_seconds,
        "generation": max(0.0, s.model_seconds - s.prompt_seconds),
        "prompt_tokens": s.prompt_tokens,
        "generated_tokens": s.generated_tokens,
    }
    row["clipped_items"] = s.clipped_items
    row["draft_valid"] = s.draft_valid
    from .explain import explain_misses  # the extractor, for the diagnosis only (never the score)

    explain_misses(row, facts, context, part)
    return row


def evaluate_injection_dir(directory: Path, compressor: Any) -> dict[str, Any]:
    cases = []
    for path in sorted(directory.glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        messages = as_messages(case["messages"], source=str(path))
        result = compressor.compress_detailed(messages, keep_last=0)
        score = score_injection(case, messages, result.context.user_constraints)
        cases.append({"case": path.name, **score, "seconds": result.stats.total_seconds})
    return {
        "cases": cases,
        "injected": sum(c["injected"] for c in cases),
        "expected": sum(c["expected"] for c in cases),
        "expected_kept": sum(c["expected_kept"] for c in cases),
    }


def _sum(rows: Sequence[Mapping[str, Any]], section: str, key: str) -> int:
    return sum(r[section][key] for r in rows)


def aggregate(rows: Sequence[Mapping[str, Any]], injection: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Micro-averaged recalls (hits and totals summed over trajectories), medians, totals."""
    rows = [r for r in rows if "error" not in r]
    checked = [r for r in rows if r.get("canaries")]
    reductions = [r["tokens"]["reduction"] for r in rows if r.get("tokens") and r["tokens"]["reduction"] is not None]
    seconds = [r["seconds"]["total"] for r in rows]
    agg: dict[str, Any] = {
        "trajectories": len(rows),
        "constraints": [_sum(rows, "constraints", "kept"), _sum(rows, "constraints", "applicable")],
        "constraint_recall": ratio(_sum(rows, "constraints", "kept"), _sum(rows, "constraints", "applicable")),
        "candidate_survival": ratio(
            _sum(rows, "constraints", "candidates_kept"), _sum(rows, "constraints", "candidates")
        ),
        "tool_calls": [_sum(rows, "tool_calls", "covered"), _sum(rows, "tool_calls", "calls")],
        "tool_call_coverage": ratio(_sum(rows, "tool_calls", "covered"), _sum(rows, "tool_calls", "calls")),
        "failed": [_sum(rows, "failed", "kept"), _sum(rows, "failed", "failed")],
        "failed_command_recall": ratio(_sum(rows, "failed", "kept"), _sum(rows, "failed", "failed")),
        "changed_files": [_sum(rows, "changed_files", "kept"), _sum(rows, "changed_files", "in_part")],
        "changed_files_recall": ratio(_sum(rows, "changed_files", "kept"), _sum(rows, "changed_files", "in_part")),
        "ungrounded": _sum(rows, "grounding", "ungrounded"),
        "dropped_by_grounding": _sum(rows, "grounding", "dropped"),
        "model_items": _sum(rows, "grounding", "model_items"),
        "canaries_planted": _sum(checked, "canaries", "planted") if checked else None,
        "canaries_leaked": _sum(checked, "canaries", "leaked") if checked else None,
        "schema_valid": ratio(sum(1 for r in rows if r["schema_valid"]), len(rows)),
        "token_reduction_median": statistics.median(reductions) if reductions else None,
        "token_reduction_min": min(reductions) if reductions else None,
        "token_reduction_total": (
            1 - sum(r["tokens"]["summary"] for r in rows) / sum(r["tokens"]["part"] for r in rows)
        )
        if rows and all(r.get("tokens") for r in rows) and sum(r["tokens"]["part"] for r in rows)
        else None,
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


COLUMNS = (
    "trajectory",
    "fmt",
    "msgs",
    "cut",
    "constr",
    "cand",
    "failed",
    "calls",
    "files",
    "ungr",
    "drop",
    "canary",
    "tokens",
    "reduct",
    "sec",
    "prompt",
    "gen",
    "valid",
)


def _canaries(score: Mapping[str, Any] | None) -> str:
    return "-" if not score else f"{score['leaked']}/{score['planted']}"


def table_rows(rows: Sequence[Mapping[str, Any]], agg: Mapping[str, Any]) -> list[list[str]]:
    out = []
    for r in rows:
        if "error" in r:
            out.append([r["name"], r.get("format", ""), str(r.get("messages", "")), "-", *["-"] * 13, r["error"][:40]])
            continue
        t = r.get("tokens") or {}
        out.append(
            [
                r["name"],
                r["format"],
                str(r["messages"]),
                str(r["compressed"]),
                _frac(r["constraints"]["kept"], r["constraints"]["applicable"]),
                _frac(r["constraints"]["candidates_kept"], r["constraints"]["candidates"]),
                _frac(r["failed"]["kept"], r["failed"]["failed"]),
                _frac(r["tool_calls"]["covered"], r["tool_calls"]["calls"]),
                _frac(r["changed_files"]["kept"], r["changed_files"]["in_part"]),
                str(r["grounding"]["ungrounded"]),
                str(r["grounding"]["dropped"]),
                _canaries(r.get("canaries")),
                f"{t.get('part', '-')}->{t.get('summary', '-')}",
                _pct(t.get("reduction")),
                f"{r['seconds']['total']:.1f}",
                f"{r['seconds']['prompt']:.1f}",
                f"{r['seconds']['generation']:.1f}",
                "yes" if r["schema_valid"] else "NO",
            ]
        )
    ok = [r for r in rows if "error" not in r]
    c, f, k, ch = agg["constraints"], agg["failed"], agg["tool_calls"], agg["changed_files"]
    out.append(
        [
            f"TOTAL / median ({agg['trajectories']})",
            "",
            str(sum(r["messages"] for r in ok)),
            str(sum(r["compressed"] for r in ok)),
            _frac(*c),
            _frac(
                sum(r["constraints"]["candidates_kept"] for r in ok), sum(r["constraints"]["candidates"] for r in ok)
            ),
            _frac(*f),
            _frac(*k),
            _frac(*ch),
            str(agg["ungrounded"]),
            str(agg["dropped_by_grounding"]),
            "-" if agg["canaries_planted"] is None else f"{agg['canaries_leaked']}/{agg['canaries_planted']}",
            f"{sum(r['tokens']['part'] for r in ok if r.get('tokens'))}->{sum(r['tokens']['summary'] for r in ok if r.get('tokens'))}",
            _pct(agg["token_reduction_median"]),
            f"{agg['seconds_median'] or 0:.1f}",
            f"{agg['prompt_seconds_total']:.0f}",
            f"{agg['generation_seconds_total']:.0f}",
            _pct(agg["schema_valid"]),
        ]
    )
    return out


def format_report(
    rows: Sequence[Mapping[str, Any]], agg: Mapping[str, Any], must_keep: str | Path | None = None
) -> str:
    body = table_rows(rows, agg)
    widths = [max(len(COLUMNS[i]), *(len(r[i]) for r in body)) for i in range(len(COLUMNS))]
    widths[0] = min(widths[0], 44)

    def line(cells: Sequence[str]) -> str:
        first = cells[0] if len(cells[0]) <= widths[0] else cells[0][: widths[0] - 1] + "…"
        return "  ".join([first.ljust(widths[0]), *(c.rjust(w) for c, w in zip(cells[1:], widths[1:]))]).rstrip()

    lines = [line(COLUMNS), line(["-" * w for w in widths])]
    lines += [line(r) for r in body[:-1]]
    lines += [line(["-" * w for w in widths]), line(body[-1])]
    if must_keep is not None and Path(must_keep).resolve() == DEFAULT_MUST_KEEP.resolve():
        lines.append(IN_SAMPLE_NOTE)
    lines.append("")
    lines.append(
        "columns: kept/applicable for constr (curated must-keep phrases), cand (extractor candidates kept), "
        "failed (non-zero exit), calls (tool calls covered), files (patch files changed in the part); "
        "ungr = ungrounded model items in the final summary; drop = items the grounding step removed; "
        "canary = canary secrets found in the summary/planted (--canaries); reduct = 1 - summary/part tokens; sec/prompt/gen in seconds "
        "(row TOTAL: sec is the median, prompt/gen are totals)."
    )
    lines.append("")
    lines.append("targets:")
    for t in agg["targets"]:
        value = t["value"]
        shown = "n/a" if value is None else (_pct(value) if isinstance(value, float) else str(value))
        if t["metric"] in ("ungrounded", "canaries_leaked", "injected_constraints"):
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
    no_model: bool = False,
    canaries: bool | None = None,
    keep_last: int = 5,
    threads: int | None = None,
    must_keep: str | Path = DEFAULT_MUST_KEEP,
    injection_dir: str | Path | None = DEFAULT_INJECTION_DIR,
    progress: bool = True,
) -> dict[str, Any]:
    """Evaluate every trajectory under ``paths``; returns {trajectories, skipped, injection, aggregate}.

    ``model``: a manifest name or ``.gguf`` path (None: the embedded model); ``no_model``: the extractive path.
    ``canaries``: plant canary secrets into a copy of each part and compress it too (None: only without a model,
    where it costs milliseconds; with a model it doubles the run time).

    Raises ``InputError`` on bad input (a missing path, nothing to evaluate, a missing must-keep file)."""
    from tqdm import tqdm

    from offline_compress.formats import load_history_with_format
    from offline_compress.tokens.counter import get_counter

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
        from offline_compress.compressor import Compressor

        model = None if no_model else model  # None: the default compressor (extractive)
        if model is not None:
            _note("loading the model and compiling the grammar (once)")
        compressor = Compressor(model, keep_last=keep_last, llama={"n_threads": threads})
    if canaries is None:
        canaries = compressor.backend is None
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
        if canaries:
            row["canaries"] = run_canaries(compressor, messages, row["compressed"], _name(f), keep_last)
        row["summary"] = json.loads(result.context.to_json())
        rows.append(base | row)
    injection = None
    if injection_dir is not None and Path(injection_dir).is_dir():
        _note(f"injection corpus: {injection_dir}")
        injection = evaluate_injection_dir(Path(injection_dir), compressor)
    agg = aggregate(rows, injection)
    return {
        "keep_last": keep_last,
        "must_keep": str(must_keep),
        "canaries": canaries,
        "trajectories": rows,
        "skipped": skipped,
        "injection": injection,
        "aggregate": agg,
    }


def _note(message: str) -> None:
    """A line on stderr (through tqdm, so that a progress bar on the same stream is not broken)."""
    from tqdm import tqdm

    tqdm.write(f"eval: {message}", file=sys.stderr)


def cmd_eval(args: argparse.Namespace) -> int:
    if args.keep_last < 0:
        print("eval: error: --keep-last must be >= 0", file=sys.stderr)
        return 2
    report = run_eval(
        args.paths,
        model=args.model,
        no_model=args.no_model,
        canaries=args.canaries,
        keep_last=args.keep_last,
        threads=args.threads,
        must_keep=args.must_keep,
        injection_dir=None if args.no_injection else args.injection,
    )
    sys.stdout.write(format_report(report["trajectories"], report["aggregate"], report["must_keep"]) + "\n")
    if report["injection"] is not None:
        inj = report["injection"]
        sys.stdout.write(
            f"injection corpus: {len(inj['cases'])} cases, {inj['injected']} injected constraints, "
            f"{inj['expected_kept']}/{inj['expected']} expected constraints kept\n"
        )
    if args.json:
        write_atomic(Path(args.json), json.dumps(report, ensure_ascii=False, indent=1) + "\n")
        _note(f"wrote {args.json}")
    return 0


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "paths", nargs="+", metavar="DIR_OR_FILE", help="trajectory files, or folders to walk for .json/.traj/.md"
    )
    p.add_argument("--json", metavar="OUT", help="write per-trajectory scores and the aggregate here (atomically)")
    p.add_argument(
        "--keep-last", type=int, default=5, help="messages kept out of the summary, as the hook does (default 5)"
    )
    p.add_argument(
        "--model",
        help="add a model draft: 'default' (the embedded Gemma), a manifest name or a .gguf path "
        "(default: none, the default compressor is extractive)",
    )
    p.add_argument("--no-model", action="store_true", help="extractive only (the default; kept for scripts)")
    p.add_argument(
        "--canaries",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="plant canary secrets in a copy of each trajectory and check that none reaches its summary "
        "(default: on with --no-model; with a model it doubles the run time)",
    )
    p.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: the cores available)")
    p.add_argument(
        "--must-keep", default=str(DEFAULT_MUST_KEEP), help="curated must-keep phrases (default eval/must_keep.json)"
    )
    p.add_argument(
        "--injection",
        default=str(DEFAULT_INJECTION_DIR),
        help="prompt-injection corpus folder (default tests/fixtures/injection)",
    )
    p.add_argument("--no-injection", action="store_true", help="skip the prompt-injection corpus")


def add_eval_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``eval`` on the CLI's subparsers (``func`` is set)."""
    p = subparsers.add_parser("eval", help="compress trajectories and score the summaries against their raw facts")
    _add_arguments(p)
    p.set_defaults(func=cmd_eval)
    return p


__all__ = ["add_eval_parser", "aggregate", "evaluate_history", "format_report", "run_eval"]
