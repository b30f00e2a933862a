"""Labels for the learned line selector (``offline_compress.selector``), without a teacher: a piece of a compacted
region is *used* when the agent, within the horizon up to the next compaction point, used a name or number that
first appeared in the history in that region and that the piece holds.

The compaction points are where the project's own hook fires when it replays the run (as ``ab-replay`` finds
them). The pieces and the labels are read from the raw trajectory with ``probes.py``'s own parsers, never with
the extractor, so the selector is not trained to agree with the code it is meant to improve:

said   a sentence of an assistant message, outside its code blocks
code   a line of a non-shell code block of an assistant message
ran    a line of what an assistant message ran (a shell block, or a tool call's command / argument values)
saw    a non-empty line of a tool output

Each piece carries its age: the number of agent actions of the region after the one it belongs to (the packer's
recency). Only pieces the packer could take are kept (those that name something, and the first line of what a
step ran). ``MAX_PIECES_PER_POINT`` bounds a point's share (a deterministic sample by the text's digest), so one
long run does not outweigh the others.

    python -m evaluation.selector_labels RUNS... --split design --out LABELS.jsonl.gz
    offline-compress train-selector LABELS.jsonl.gz --out HEAD.json

writes the labels of every run (the library's labels format, ``offline_compress.selector.train``), then trains
the selector's head on them.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offline_compress.history.messages import Message

from . import probes as P

MAX_PIECES_PER_POINT = 400
MAX_LINE_CHARS = 400
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`])")
_FENCED = re.compile(r"```[^\n]*\n.*?```", re.S)
_BLOCK = re.compile(r"```([A-Za-z_+-]*)[ \t]*\n(.*?)\n?```", re.S)
_SHELL = ("bash", "sh", "shell", "zsh", "console", "mswea_bash_command")


@dataclass(frozen=True)
class Piece:
    trajectory: str
    window: int
    step: int
    kind: str
    text: str
    head: bool  # the first line of what a step ran
    age: int
    used: bool


def _assistant_pieces(m: Message) -> Iterator[tuple[str, str, bool]]:
    prose = _FENCED.sub("\n", m.text)
    for line in prose.splitlines():
        for sentence in _SENTENCE.split(line):
            if sentence.strip():
                yield "said", sentence.strip(), False
    ran = [ln for body in P.fenced_commands(m.text) for ln in body.split("\n")]
    for lang, body in _BLOCK.findall(m.text):
        if lang and lang.lower() not in _SHELL:
            yield from (("code", ln.strip(), False) for ln in body.split("\n") if ln.strip())
    for call in m.tool_calls or ():
        ran += P.argument_values(call.function.arguments).split("\n")
    ran = [ln for ln in ran if ln.strip()]
    for k, ln in enumerate(ran):
        yield "ran", ln, k == 0


def region_pieces(messages: Sequence[Message], start: int, end: int) -> list[tuple[str, str, bool, int]]:
    """(kind, text, head, age) of every candidate piece of ``messages[start:end]``."""
    out: list[tuple[str, str, bool, int, int]] = []  # ..., the action it belongs to
    action = 0
    for i in range(start, end):
        m = messages[i]
        if m.role == "assistant":
            action += int(P.has_action(m))
            out += [(k, t[:MAX_LINE_CHARS], h, 0, action) for k, t, h in _assistant_pieces(m)]
        elif P.is_tool_output(messages, i):
            out += [("saw", ln.strip()[:MAX_LINE_CHARS], False, 0, action) for ln in m.text.splitlines() if ln.strip()]
    return [(k, t, h, action - a) for k, t, h, _, a in out if h or P.artifacts(t)]


def label_point(
    name: str, messages: Sequence[Message], step: int, horizon_end: int, window: int, keep_last: int = P.KEEP_LAST
) -> list[Piece]:
    """The labelled pieces of the region compacted at ``step`` (a sample of ``MAX_PIECES_PER_POINT``)."""
    probes = P.build_probes(messages, step, horizon_end, keep_last=keep_last)
    start, end = probes.region
    used = [P.normalise(a) for a in probes.artifacts]
    pieces = region_pieces(messages, start, end)
    if len(pieces) > MAX_PIECES_PER_POINT:
        order = sorted(range(len(pieces)), key=lambda k: hashlib.sha256(f"{k}\0{pieces[k][1]}".encode()).digest())
        pieces = [pieces[k] for k in sorted(order[:MAX_PIECES_PER_POINT])]
    out = []
    for kind, text, head, age in pieces:
        flat = P.normalise(text)
        out.append(Piece(name, window, step, kind, text, head, age, any(a in flat for a in used)))
    return out


def compaction_points(
    messages: Sequence[Message], window: int, hook_options: dict[str, Any] | None = None
) -> list[int]:
    """The steps where the project's hook (extractive, its default budget) fires on this run at ``window``."""
    from offline_compress.compressor import Compressor
    from offline_compress.tokens.counter import default_counter

    from .strategies import HookReplay

    driver = HookReplay(Compressor(None, keep_last=P.KEEP_LAST), window, default_counter(), **(hook_options or {}))
    return sorted(driver.run(messages))


def label_trajectory(name: str, messages: Sequence[Message], windows: Sequence[int]) -> list[Piece]:
    out: list[Piece] = []
    for window in windows:
        steps = compaction_points(messages, window)
        for k, step in enumerate(steps):
            horizon_end = steps[k + 1] if k + 1 < len(steps) else len(messages)
            out += label_point(name, messages, step, horizon_end, window)
    return out


def label_runs(
    paths: Sequence[str | Path],
    *,
    windows: Sequence[int] = (16384, 32768),
    split: str = "all",
    note: Callable[[str], None] = lambda _: None,
) -> list[Any]:
    """The labelled pieces (``selector.train.Row``) of every run under ``paths`` (``split``: the ``design`` /
    ``holdout`` halves of ``ab-replay``, or ``all``), sorted by run name."""
    from offline_compress.errors import InputError
    from offline_compress.files import find_history_files
    from offline_compress.selector import task_text
    from offline_compress.selector.train import Row

    from .replay import load_trajectory, split_of, trajectory_names

    files = find_history_files(paths)
    names = trajectory_names(files)
    chosen = sorted((f for f in files if split in ("all", split_of(names[f]))), key=lambda f: names[f])
    if not chosen:
        raise InputError(f"no runs found (split {split})", source=", ".join(map(str, paths)))
    rows: list[Row] = []
    for k, f in enumerate(chosen, 1):
        messages = load_trajectory(f)
        task = task_text(messages)
        pieces = label_trajectory(names[f], messages, windows)
        rows += [Row(names[f], task, p.kind, p.text, p.head, p.age, p.used) for p in pieces]
        note(f"[{k}/{len(chosen)}] {names[f]}: {len(pieces)} pieces, {sum(p.used for p in pieces)} used")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    from offline_compress.selector.train import save_rows

    p = argparse.ArgumentParser(prog="python -m evaluation.selector_labels", description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="+", metavar="RUNS", help="recorded runs (files or folders, any importer's format)")
    p.add_argument("--out", required=True, help="the labels file to write (.jsonl.gz)")
    p.add_argument("--split", choices=("all", "design", "holdout"), default="all")
    p.add_argument("--context", default="16384,32768", help="windows to find compaction points at (comma-separated)")
    args = p.parse_args(argv)
    windows = [int(x) for x in args.context.split(",") if x.strip()]
    started = time.perf_counter()
    rows = label_runs(args.paths, windows=windows, split=args.split, note=lambda m: print(m, file=sys.stderr))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    save_rows(rows, Path(args.out))
    used = sum(r.used for r in rows)
    print(
        f"{len(rows)} pieces ({used} used) in {time.perf_counter() - started:.1f} s; wrote {args.out}", file=sys.stderr
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


__all__ = [
    "MAX_PIECES_PER_POINT",
    "Piece",
    "compaction_points",
    "label_point",
    "label_runs",
    "label_trajectory",
    "main",
    "region_pieces",
]
