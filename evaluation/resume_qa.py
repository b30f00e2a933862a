"""``python -m evaluation resume-qa``: a capable reader resumes from each context and answers what an agent must
know to go on; a blind grader scores the answers against references written from the whole run.

The method (docs/resume.md):

runs
    ``eval/resume_qa/runs.json``: design-split runs of several harnesses, each with fixed cut points (the middle
    of the run, and for some a point where the replay's hook compacts). A *point* is the index of an assistant
    message: the agent is about to write it, and each strategy's context is built from ``messages[:point]``.
questions
    ``eval/resume_qa/questions/<point>.json``, written from the whole run and its future by a question writer
    and frozen before any change they judge: about ten a point (intent, artifacts, failures, a decision,
    continuation), each with a reference answer and its key facts.
strategies
    full, truncate, mask (``strategies.py``), ours (the default hook stepped through the run at the window, then
    compacting at the point), and ``reference``: the head, a summary written by a capable model from the
    compacted region alone (``eval/resume_qa/reference/<point>.md``, frozen), and the same recent messages as
    truncate keeps.
reading
    One reader per context: it sees that context and the questions, nothing else, and answers "unknown" where the
    context does not say. Contexts go out under opaque ids (``export``), so neither the reader nor the grader
    learns which strategy built one.
grading
    One grader per point sees the questions, references, key facts and every strategy's answer under shuffled
    labels: 2 full, 1 partial, 0 unknown or missing, -1 wrong (states something false).

A reader or grader is either any OpenAI-compatible endpoint (``--reader-url``) or whoever works from the exchange
folder's files (``export`` writes the tasks, ``import`` reads their answers). ``report`` prints per strategy the
score, the wrong answers, the tokens, the score by kind and the paired difference per point against ``ours``."""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from offline_compress.history.messages import Message, as_messages
from offline_compress.hook.config import HookConfig

from .probes import KEEP_LAST, head_end, tail_start

REPO = Path(__file__).resolve().parent.parent
HOME = REPO / "eval" / "resume_qa"
EXCHANGE = HOME / "exchange"  # git-ignored: contexts and tasks, rebuilt by ``export``
KINDS = ("intent", "artifact", "failure", "decision", "continuation")
STRATEGIES = ("full", "truncate", "mask", "ours", "reference")
SCORES = {"full": 2, "partial": 1, "unknown": 0, "wrong": -1}


# ------------------------------------------------------------------------------------------------ rendering


def render(messages: Sequence[Message], *, start: int = 0, marks: dict[int, str] | None = None) -> str:
    """Messages as a person reads a transcript: each under a ``### [i] role`` heading, its text, then its tool
    calls (name and arguments); ``marks`` puts a line before a message (where the cut falls)."""
    out: list[str] = []
    for k, m in enumerate(messages):
        i = start + k
        if marks and i in marks:
            out.append(f"\n======== {marks[i]} ========\n")
        head = f"### [{i}] {m.role}"
        if m.tool_call_id:
            head += f" (result of call {m.tool_call_id})"
        out.append(head)
        if m.text.strip():
            out.append(m.text.rstrip())
        for c in m.tool_calls or ():
            out.append(f"-> call {c.function.name} (id {c.id}): {c.function.arguments}")
        out.append("")
    return "\n".join(out)


# ------------------------------------------------------------------------------------------------ runs


def load_runs(path: Path = HOME / "runs.json") -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return list(data["points"])


def load_run(point: dict[str, Any]) -> list[Message]:
    from .replay import load_trajectory

    return load_trajectory(REPO / point["path"])


def middle(messages: Sequence[Message]) -> int:
    """The first assistant message at or after the middle of the run."""
    for i in range(len(messages) // 2, len(messages)):
        if messages[i].role == "assistant":
            return i
    raise ValueError("no assistant message after the middle")


def write_transcripts(points: Sequence[dict[str, Any]], out: Path) -> list[Path]:
    """The whole run of each point, for its question writer, with the point and the kept messages marked."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for p in points:
        messages = load_run(p)
        cut = p["point"]
        prefix = messages[:cut]
        h, t = head_end(prefix), max(tail_start(prefix, KEEP_LAST), head_end(prefix))
        marks = {
            h: f"END OF THE HEAD (messages 0-{h - 1} are always kept verbatim)",
            t: f"THE LAST MESSAGES BEFORE THE POINT (messages {t}-{cut - 1} are always kept verbatim)",
            cut: "THE POINT: the agent resumes here; everything below is the FUTURE (not in any context)",
        }
        f = out / f"{p['id']}.transcript.md"
        header = (
            f"# Run {p['run']} ({p['harness']}), point {cut} of {len(messages)} messages\n\n"
            f"The whole run. Contexts are built from messages 0-{cut - 1}; messages {cut}- are the future.\n\n"
        )
        f.write_text(header + render(messages, marks=marks), encoding="utf-8")
        written.append(f)
    return written


def write_regions(points: Sequence[dict[str, Any]], out: Path) -> list[Path]:
    """The compacted region of each point (what truncate drops: after the head, before the last messages), for the
    writer of the reference summary, who sees nothing else."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for p in points:
        prefix = load_run(p)[: p["point"]]
        h, t = head_end(prefix), max(tail_start(prefix, KEEP_LAST), head_end(prefix))
        f = out / f"{p['id']}.region.md"
        f.write_text(render(prefix[h:t], start=h), encoding="utf-8")
        written.append(f)
    return written


# ------------------------------------------------------------------------------------------------ contexts


def contexts_at(
    point: dict[str, Any], messages: Sequence[Message], counter: Any, hook_options: dict[str, Any] | None = None
) -> dict[str, list[Message]]:
    """Each strategy's context at ``point`` (the reference needs its frozen summary; skipped without one)."""
    from .strategies import full, mask, truncate

    cut = point["point"]
    prefix = list(messages[:cut])
    out = {"full": full(prefix).messages, "truncate": truncate(prefix).messages, "mask": mask(prefix).messages}
    out["ours"] = ours(prefix, point["window"], counter, **(hook_options or {}))
    ref = HOME / "reference" / f"{point['id']}.md"
    if ref.exists():
        h, t = head_end(prefix), max(tail_start(prefix, KEEP_LAST), head_end(prefix))
        summary = Message(role="user", content="Summary of the conversation so far:\n\n" + ref.read_text("utf-8"))
        out["reference"] = [*prefix[:h], summary, *prefix[t:]]
    return out


def ours(prefix: Sequence[Message], window: int, counter: Any, **hook_options: Any) -> list[Message]:
    """The default hook stepped through ``prefix`` as an agent loop would (it compacts when its trigger fires),
    then compacting at the point: what the agent sees right after a compaction there."""
    import tempfile

    from offline_compress.hook.compaction_hook import CompactionHook

    with tempfile.TemporaryDirectory(prefix="resume-qa-") as tmp:
        compressor = hook_options.pop("compressor", None)  # the written mode's; the rest are HookConfig's fields
        database = Path(tmp) / "a.sqlite3"
        config = HookConfig(**hook_options)
        with CompactionHook(window, config, archive_path=database, compressor=compressor, counter=counter) as hook:
            live: list[Any] = []
            last = 0
            for i, m in enumerate(prefix):
                if m.role != "assistant" or i == 0:
                    continue
                live = hook.before_step(live + [x.to_openai() for x in prefix[last:i]])
                last = i
            live = hook.compact(live + [x.to_openai() for x in prefix[last:]], reason="resume-qa")
    return as_messages(live)


def opaque(point_id: str, strategy: str) -> str:
    """The id a context goes out under: neither reader nor grader can tell its strategy."""
    return hashlib.sha256(f"resume-qa|{point_id}|{strategy}".encode()).hexdigest()[:10]


def questions_of(point_id: str) -> dict[str, Any]:
    return json.loads((HOME / "questions" / f"{point_id}.json").read_text(encoding="utf-8"))


def _asked(q: dict[str, Any]) -> str:
    return "\n".join(f"{x['id']}. {x['question']}" for x in q["questions"])


READER_BRIEF = """You are an AI coding agent resuming a task after a pause. The file context.md is everything you
have: the conversation so far (some of it may have been summarised or shortened). Answer each question in
questions.md from that context alone, as the agent who must now continue the work. Be concrete and short (one to
three sentences; quote paths, names, commands and errors exactly). If the context does not let you answer, write
"unknown": a wrong answer is worse than "unknown". Write answers.json: {"answers": {"q1": "...", "q2": "...", ...}}.
A line of context.md can be tens of thousands of characters long (a summary written as one line of JSON), and a
tool that shows files or command output may cut long lines or long output without saying so: read every character,
in pieces of at most 8,000 characters (for example `python3 -c "print(open('context.md').read()[0:8000])"`, then
8000:16000, and so on), before you answer.
"""

GRADER_BRIEF = """You grade answers of AI agents who resumed a task from different contexts. For each question
you get the reference answer and its key facts (written from the whole run), and several answers under letters.
Grade each answer on its own against the reference: "full" (all key facts, nothing false), "partial" (some key
facts or less precise, nothing false), "unknown" (says it does not know, or answers nothing relevant), "wrong"
(states something false about the run, or contradicts the reference). A different wording of a correct fact is
correct. Write grades.json: {"grades": {"q1": {"A": "full", "B": "wrong", ...}, ...}, "notes": {"q1": {"B": "why
it is wrong"}}} (notes only for wrong answers)."""


def export(
    points: Sequence[dict[str, Any]],
    strategies: Sequence[str],
    exchange: Path,
    counter: Any,
    *,
    ours_as: str = "ours",
    hook_options: dict[str, Any] | None = None,
) -> None:
    """Reading tasks: ``read/<opaque>/context.md`` + ``questions.md`` + ``BRIEF.md``, and ``key.json`` (opaque
    id -> point, strategy and the context's tokens), kept for ``grade`` and ``report``. ``ours_as``: the name the
    hook's context is recorded under (``ours`` today; another name for a changed summary, measured beside it)."""
    key = _key(exchange)
    for p in points:
        messages = load_run(p)
        q = questions_of(p["id"])
        try:
            built = contexts_at(p, messages, counter, hook_options)
        except BaseException as stop:  # the written mode's recorded backend exported a prompt for a writer
            if type(stop).__name__ != "WriterNeeded":
                raise
            _note(f"{p['id']}: waiting for a writer ({stop.digest})")  # type: ignore[attr-defined]
            continue
        for strategy in strategies:
            if strategy not in built:
                _note(f"{p['id']}: no {strategy} context (no frozen reference summary)")
                continue
            name = ours_as if strategy == "ours" else strategy
            ctx = built[strategy]
            oid = opaque(p["id"], name)
            d = exchange / "read" / oid
            d.mkdir(parents=True, exist_ok=True)
            (d / "context.md").write_text(render(ctx), encoding="utf-8")
            (d / "questions.md").write_text(_asked(q) + "\n", encoding="utf-8")
            (d / "BRIEF.md").write_text(READER_BRIEF, encoding="utf-8")
            key[oid] = {"point": p["id"], "strategy": name, "tokens": counter.count(ctx), "messages": len(ctx)}
            _note(f"{p['id']} {name}: {key[oid]['tokens']} tokens -> read/{oid}")
        _save_key(exchange, key)


def reread(exchange: Path, strategy: str, name: str, points: Sequence[str] | None = None) -> list[str]:
    """The contexts of ``strategy`` out again under ``name``, byte for byte, for fresh readers: a change is compared
    with its baseline read in the same round (readers differ: fresh readers of the same contexts scored 2.6-5.3
    points above older answers, docs/resume.md rounds 13-14). Returns the new opaque ids."""
    key, out = _key(exchange), []
    for oid, info in sorted(key.items()):
        if info["strategy"] != strategy or (points and info["point"] not in points):
            continue
        new = opaque(info["point"], name)
        src, d = exchange / "read" / oid, exchange / "read" / new
        d.mkdir(parents=True, exist_ok=True)
        for f in ("context.md", "questions.md"):
            (d / f).write_bytes((src / f).read_bytes())
        (d / "BRIEF.md").write_text(READER_BRIEF, encoding="utf-8")
        key[new] = {**info, "strategy": name}
        out.append(new)
    if not out:
        raise ValueError(f"reread: no context of strategy {strategy!r} in {exchange / 'key.json'}")
    _save_key(exchange, key)
    return out


def _key(exchange: Path) -> dict[str, Any]:
    path = exchange / "key.json"
    return json.loads(path.read_text("utf-8")) if path.exists() else {}


def _save_key(exchange: Path, key: dict[str, Any]) -> None:
    exchange.mkdir(parents=True, exist_ok=True)
    (exchange / "key.json").write_text(json.dumps(key, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def answers_of(exchange: Path, oid: str) -> dict[str, str] | None:
    path = exchange / "read" / oid / "answers.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text("utf-8"))
    answers = data.get("answers", data) if isinstance(data, dict) else None
    if not isinstance(answers, dict):
        raise ValueError(f"{path}: expected {{'answers': {{'q1': '...', ...}}}}")
    return {str(k): str(v) for k, v in answers.items()}


# ------------------------------------------------------------------------------------------------ grading


def grading_tasks(
    exchange: Path,
    graded: dict[str, Any],
    again: Sequence[str] = (),
    regrade: bool = False,
    only: Sequence[str] | None = None,
) -> list[Path]:
    """One grading task per point for the answers not graded yet (and those of the strategies ``again``, graded
    anew beside them: a paired comparison by one grader): ``grade/<point>-<digest>/GRADING.md`` with the questions,
    references, key facts and the answers under shuffled letters; the letters' owners go to ``grade_key.json``,
    which the grader never sees. A later round's grade of an answer replaces an earlier one. ``regrade``: a round of
    the strategies ``again`` alone, even with nothing new (a second grader's opinion of the same answers). ``only``:
    these points alone (the others wait, e.g. for a reading still to come)."""
    key, out = _key(exchange), []
    gkey_path = exchange / "grade_key.json"
    gkey = json.loads(gkey_path.read_text("utf-8")) if gkey_path.exists() else {}
    round_ = 1 + max((v.get("round", 1) for v in gkey.values()), default=0)
    new: dict[str, list[str]] = {}
    for oid, info in sorted(key.items()):
        if answers_of(exchange, oid) is not None and oid not in graded:
            new.setdefault(info["point"], []).append(oid)
    points = set(new) | ({v["point"] for v in key.values()} if regrade else set())
    points = points if only is None else points & set(only)
    by_point = {
        point: new.get(point, [])
        + [
            o
            for o, v in sorted(key.items())
            if v["point"] == point and v["strategy"] in again and o not in new.get(point, [])
        ]
        for point in sorted(points)
    }
    for point, oids in sorted(by_point.items()):
        rng = random.Random(f"{point}|{','.join(oids)}")
        rng.shuffle(oids)
        letters = {chr(ord("A") + i): oid for i, oid in enumerate(oids)}
        task = hashlib.sha256(f"{point}|{','.join(oids)}|{round_}".encode()).hexdigest()[:8]  # a task per round
        d = exchange / "grade" / f"{point}-{task}"
        d.mkdir(parents=True, exist_ok=True)
        q = questions_of(point)
        parts = [GRADER_BRIEF, "", f"Grading notes from the question writer: {q.get('note') or '(none)'}", ""]
        for x in q["questions"]:
            parts += [f"## {x['id']} ({x['kind']}): {x['question']}", f"Reference: {x['reference']}"]
            parts += ["Key facts:", *[f"- {f}" for f in x["key_facts"]], "Answers:"]
            for letter, oid in letters.items():
                answer = (answers_of(exchange, oid) or {}).get(x["id"], "").strip() or "(no answer)"
                parts.append(f"{letter}: {' '.join(answer.split())}")
            parts.append("")
        (d / "GRADING.md").write_text("\n".join(parts), encoding="utf-8")
        gkey[d.name] = {"point": point, "letters": letters, "round": round_}
        out.append(d)
    gkey_path.write_text(json.dumps(gkey, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return out


def collect_grades(exchange: Path, every_round: bool = False) -> dict[str, dict[str, dict[str, str]]]:
    """opaque id -> question -> {"grade", "note", "round"} from every finished grading task, a later round's grade
    replacing an earlier one; ``every_round``: keyed ``"<opaque id>|<round>"``, every round's grades."""
    gkey_path = exchange / "grade_key.json"
    gkey = json.loads(gkey_path.read_text("utf-8")) if gkey_path.exists() else {}
    out: dict[str, dict[str, dict[str, str]]] = {}
    for task, info in sorted(gkey.items(), key=lambda kv: kv[1].get("round", 1)):  # a later round replaces
        path = exchange / "grade" / task / "grades.json"
        if not path.exists():
            continue
        data = json.loads(path.read_text("utf-8"))
        notes = data.get("notes", {})
        for qid, by_letter in data["grades"].items():
            for letter, grade in by_letter.items():
                grade = str(grade).strip().lower()
                if grade not in SCORES:
                    raise ValueError(f"{path}: {qid} {letter}: grade {grade!r} is not one of {', '.join(SCORES)}")
                oid = info["letters"][letter]
                note = notes.get(qid, {}).get(letter, "") if isinstance(notes.get(qid), dict) else ""
                where = f"{oid}|{info.get('round', 1)}" if every_round else oid
                out.setdefault(where, {})[qid] = {"grade": grade, "note": note, "round": str(info.get("round", 1))}
    return out


# ------------------------------------------------------------------------------------------------ endpoint


def ask(url: str, model: str, system: str, user: str, timeout: float = 600.0) -> str:
    """One chat completion from an OpenAI-compatible endpoint, at temperature 0."""
    import urllib.request

    body = json.dumps(
        {
            "model": model,
            "temperature": 0,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        }
    ).encode()
    request = urllib.request.Request(url.rstrip("/") + "/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return str(json.loads(response.read())["choices"][0]["message"]["content"])


def _json_in(text: str) -> Any:
    a, b = text.find("{"), text.rfind("}")
    if a < 0 or b < a:
        raise ValueError(f"no JSON object in the answer: {text[:200]!r}")
    return json.loads(text[a : b + 1])


def read_with(exchange: Path, url: str, model: str) -> None:
    """Every reading task without answers, through the endpoint (one request per context)."""
    for d in sorted((exchange / "read").iterdir()):
        if (d / "answers.json").exists():
            continue
        user = f"context.md:\n\n{(d / 'context.md').read_text('utf-8')}\n\nquestions.md:\n\n{(d / 'questions.md').read_text('utf-8')}"
        reply = _json_in(ask(url, model, READER_BRIEF, user))
        (d / "answers.json").write_text(json.dumps(reply, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        _note(f"read {d.name}")


def grade_with(exchange: Path, url: str, model: str, tasks: Sequence[Path]) -> None:
    for d in tasks:
        reply = _json_in(ask(url, model, GRADER_BRIEF, (d / "GRADING.md").read_text("utf-8")))
        (d / "grades.json").write_text(json.dumps(reply, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        _note(f"graded {d.name}")


# ------------------------------------------------------------------------------------------------ report


def results(exchange: Path) -> dict[str, Any]:
    """Everything the report is made of, in one document (committed as ``eval/resume_qa/results.json``)."""
    key, grades = _key(exchange), collect_grades(exchange, every_round=True)
    rows = []
    for where, graded in sorted(grades.items()):
        oid, round_ = where.split("|")
        info, answers = key[oid], answers_of(exchange, oid) or {}
        kinds = {x["id"]: x["kind"] for x in questions_of(info["point"])["questions"]}
        for qid, kind in kinds.items():
            g = graded.get(qid, {"grade": "unknown", "note": "not graded"})
            rows.append(
                {"point": info["point"], "strategy": info["strategy"], "question": qid, "kind": kind}
                | {"answer": answers.get(qid, ""), "grade": g["grade"], "note": g["note"], "round": int(round_)}
            )
    tokens = {f"{v['point']}|{v['strategy']}": v["tokens"] for v in key.values()}
    return {"rows": rows, "tokens": tokens}


def latest(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each answer's grade of the latest round it was graded in."""
    last: dict[tuple[str, str], int] = {}
    for r in rows:
        k = (r["point"], r["strategy"])
        last[k] = max(last.get(k, 0), r.get("round", 1))
    return [r for r in rows if r.get("round", 1) == last[(r["point"], r["strategy"])]]


def _pct(rows: Sequence[dict[str, Any]]) -> float:
    return 100 * sum(SCORES[r["grade"]] for r in rows) / (2 * len(rows)) if rows else float("nan")


def report(doc: dict[str, Any], baseline: str = "ours") -> str:
    every, tokens = doc["rows"], doc["tokens"]
    rows = latest(every)
    strategies = sorted({r["strategy"] for r in rows}, key=lambda s: (STRATEGIES + (s,)).index(s))
    points = sorted({r["point"] for r in rows})
    complete = [p for p in points if all(any(r["point"] == p and r["strategy"] == s for r in rows) for s in strategies)]
    lines = [
        f"resume-qa: {len(complete)} points with every strategy graded (of {len(points)}), "
        f"{sum(1 for r in rows if r['point'] in complete) // max(1, len(strategies))} questions each",
        "",
        "| strategy | score | wrong | tokens (sum) | " + " | ".join(KINDS) + " |",
        "|---|---:|---:|---:|" + "---:|" * len(KINDS),
    ]
    for s in strategies:
        mine = [r for r in rows if r["strategy"] == s and r["point"] in complete]
        by_kind = [f"{_pct([r for r in mine if r['kind'] == k]):.0f}%" for k in KINDS]
        total = sum(tokens.get(f"{p}|{s}", 0) for p in complete)
        wrong = sum(r["grade"] == "wrong" for r in mine)
        lines.append(f"| {s} | {_pct(mine):.1f}% | {wrong} | {total:,} | " + " | ".join(by_kind) + " |")
    if baseline in strategies:
        lines += ["", f"Per point, score (and tokens); the paired difference against {baseline}:", ""]
        lines.append("| point | " + " | ".join(strategies) + " |")
        lines.append("|---|" + "---:|" * len(strategies))
        diffs: dict[str, list[float]] = {s: [] for s in strategies}
        for p in complete:
            base = _pct([r for r in rows if r["point"] == p and r["strategy"] == baseline])
            cells = []
            for s in strategies:
                score = _pct([r for r in rows if r["point"] == p and r["strategy"] == s])
                diffs[s].append(score - base)
                cells.append(f"{score:.0f}% ({tokens.get(f'{p}|{s}', 0) / 1000:.1f}k)")
            lines.append(f"| {p} | " + " | ".join(cells) + " |")
        lines.append(
            "| mean difference | "
            + " | ".join(f"{statistics.mean(diffs[s]):+.1f}" if diffs[s] else "" for s in strategies)
            + " |"
        )
    rounds = sorted({r.get("round", 1) for r in every})
    if len(rounds) > 1:
        lines += [
            "",
            "By grading round (one grader per point saw these answers side by side; paired, same points):",
            "",
        ]
        lines += [
            "| round | strategy | score | wrong | " + " | ".join(KINDS) + " |",
            "|---|---|---:|---:|" + "---:|" * len(KINDS),
        ]
        for n in rounds:
            mine = [r for r in every if r.get("round", 1) == n]
            shared = set.intersection(
                *({r["point"] for r in mine if r["strategy"] == s} for s in {r["strategy"] for r in mine})
            )
            for s in sorted({r["strategy"] for r in mine}, key=lambda s: (STRATEGIES + (s,)).index(s)):
                these = [r for r in mine if r["strategy"] == s and r["point"] in shared]
                by_kind = [f"{_pct([r for r in these if r['kind'] == k]):.0f}%" for k in KINDS]
                wrong = sum(r["grade"] == "wrong" for r in these)
                lines.append(f"| {n} | {s} | {_pct(these):.1f}% | {wrong} | " + " | ".join(by_kind) + " |")
    wrongs = [r for r in rows if r["grade"] == "wrong" and r["point"] in complete]
    if wrongs:
        lines += ["", "Wrong answers:", ""]
        lines += [f"- {r['strategy']} {r['point']} {r['question']}: {r['note'] or r['answer'][:160]}" for r in wrongs]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ command


def cmd_resume_qa(args: argparse.Namespace) -> int:
    exchange = Path(args.exchange)
    points = [p for p in load_runs() if not args.points or p["id"] in args.points.split(",")]
    if args.action == "transcripts":
        for f in write_transcripts(points, exchange / "transcripts"):
            _note(f"wrote {f}")
        for f in write_regions(points, exchange / "regions"):
            _note(f"wrote {f}")
    elif args.action == "export":
        from offline_compress.tokens.counter import default_counter

        strategies = [s for s in args.strategies.split(",") if s]
        unknown = [s for s in strategies if s not in STRATEGIES]
        if unknown:
            raise ValueError(f"--strategies: unknown {', '.join(unknown)} (known: {', '.join(STRATEGIES)})")
        options: dict[str, Any] = {k: json.loads(v) for k, _, v in (o.partition("=") for o in args.hook)}
        if args.written:  # the written-state mode, on recorded completions; missing ones exported for a writer
            from offline_compress.compressor import Compressor
            from offline_compress.engine.recorded import RecordedBackend

            recordings = Path(args.written)
            backend = RecordedBackend(recordings, export_to=recordings.parent / "exchange")
            options["compressor"] = Compressor(backend=backend, written=True, check=not args.unchecked)
        export(points, strategies, exchange, default_counter(), ours_as=args.ours_as, hook_options=options)
        if args.reader_url:
            read_with(exchange, args.reader_url, args.model)
    elif args.action == "reread":
        if not args.strategies or "," in args.strategies or not args.ours_as or args.ours_as == "ours":
            raise ValueError("reread: name one --strategies to read again and a new name for it with --ours-as")
        ids = reread(exchange, args.strategies, args.ours_as, [p["id"] for p in points])
        _note(f"{len(ids)} contexts of {args.strategies} out again as {args.ours_as}: {', '.join(ids)}")
    elif args.action == "grade":
        graded = collect_grades(exchange)
        again = [s for s in (args.again or "").split(",") if s]
        only = [p["id"] for p in points] if args.points else None
        tasks = grading_tasks(exchange, graded, again, args.regrade, only)
        _note(f"{len(tasks)} grading tasks: {', '.join(t.name for t in tasks) or 'none'}")
        if args.reader_url:
            grade_with(exchange, args.reader_url, args.model, tasks)
    elif args.action == "report":
        doc = results(exchange)
        if args.save:
            Path(args.save).write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(report(doc, args.baseline))
    return 0


def add_resume_qa_parser(sub: Any) -> None:
    p = sub.add_parser("resume-qa", help="a capable reader resumes from each context; blind grading (docs/resume.md)")
    p.add_argument(
        "action",
        choices=("transcripts", "export", "reread", "grade", "report"),
        help="transcripts: the whole runs for question writers and the regions for the reference summary's writer; "
        "export: the reading tasks (with --reader-url, read them too); reread: the contexts of one --strategies out "
        "again as --ours-as, for fresh readers beside a change; grade: the grading tasks of the answers not "
        "graded yet (with --reader-url, grade them too); report: the table",
    )
    p.add_argument("--exchange", default=str(EXCHANGE), help=f"the exchange folder (default {EXCHANGE})")
    p.add_argument(
        "--points",
        help="comma-separated point ids (default: all of eval/resume_qa/runs.json); grade: tasks for these alone",
    )
    p.add_argument("--strategies", default=",".join(STRATEGIES), help="export: which contexts")
    p.add_argument("--ours-as", default="ours", help="export: the name of the hook's context (a changed summary)")
    p.add_argument(
        "--hook", action="append", default=[], help="export: a CompactionHook option for ours, NAME=JSON (repeatable)"
    )
    p.add_argument(
        "--written",
        help="export: ours in the written-state mode on these recorded completions (a JSON file); a compaction whose "
        "completion is missing exports its prompt to the exchange folder beside it and that point waits",
    )
    p.add_argument(
        "--unchecked",
        action="store_true",
        help="export: --written without the model's check of its state (rounds 10-14)",
    )
    p.add_argument("--reader-url", help="an OpenAI-compatible endpoint (…/v1) that reads and grades")
    p.add_argument("--model", default="default", help="the endpoint's model id")
    p.add_argument("--again", help="grade: strategies whose answers are graded anew beside the new ones (paired)")
    p.add_argument("--regrade", action="store_true", help="grade: a round of --again alone, with nothing new")
    p.add_argument("--baseline", default="ours", help="report: the strategy the per-point differences are against")
    p.add_argument("--save", help="report: write every answer, grade and token count here")
    p.set_defaults(func=cmd_resume_qa)


__all__ = ["KINDS", "STRATEGIES", "add_resume_qa_parser", "contexts_at", "export", "middle", "ours", "render", "report"]


def _note(message: str) -> None:
    sys.stderr.write(f"resume-qa: {message}\n")
