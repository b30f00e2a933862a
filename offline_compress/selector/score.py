"""Scoring: the head applied to pieces, cached per piece text, and filled in a worker thread as messages arrive.

The head is linear, so a piece's logit splits into what depends on its text and the task (kind, names, tokens,
embedding, closeness to the task: computed once per text, cached) and what depends on where it sits in the work
log (whether it heads a command, how many steps are newer: added at packing time, a few multiplications). The
packer's worth of a piece is multiplied by ``(floor + p) ** power`` (``p``: the head's probability that the agent
uses it later), so the head reorders pieces without letting one that adds no name in.

``observe(messages)`` queues the new messages' candidate pieces (the lines the extractor may keep: sentences of
the agent's text, lines of its code and commands, the first named lines of a tool output) to one worker thread;
it never waits. A compaction then finds them scored; a piece it does not find is scored there and then.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..extract.prose import SENTENCE_SPLIT, code_lines, prose_sentences
from ..extract.steps import MAX_SAW_LINES, names
from ..extract.task import extract_task
from ..history.conventions import is_tool_output
from ..history.messages import Message, as_messages
from ..summary import schema as S
from ..summary.pack import RECENCY, clip
from .embed import TokenEmbeddings
from .features import RULE_FEATURES, Piece, TaskContext, features
from .head import Head

HEAD_FILE = "head.json"
DEFAULT_FLOOR = 0.05  # the multiplier of a piece the head is sure is unused: never zero, a name still counts
DEFAULT_POWER = 1.0  # multiplier = (floor + p) ** power
CACHE_SIZE = 50_000  # piece texts (a few floats each)
_PLACED = ("head", "recency", "log_age")  # features that depend on the piece's place, not its text


def task_text(messages: Sequence[Message]) -> str:
    """The task the pieces are compared with: the task statement of the first user message."""
    return extract_task(messages)[0]


def shipped_head() -> Head:
    return Head.from_json(resources.files(__package__).joinpath(HEAD_FILE).read_text(encoding="utf-8"), HEAD_FILE)


class Selector:
    """The learned selector: ``for_task(task).score(pieces)`` gives each piece's multiplier of its packing worth.

    ``head``: a ``Head`` or a head file (default: the shipped one); ``model``: the GGUF whose token embeddings the
    head was trained on (default: the embedded Gemma)."""

    def __init__(
        self,
        head: Head | str | Path | None = None,
        *,
        model: str | Path | None = None,
        embeddings: TokenEmbeddings | None = None,
        floor: float = DEFAULT_FLOOR,
        power: float = DEFAULT_POWER,
    ) -> None:
        self.head = head if isinstance(head, Head) else shipped_head() if head is None else Head.load(head)
        if embeddings is None:
            from ..model_files import resolve_model
            from ..tokens.counter import default_counter

            embeddings = TokenEmbeddings(resolve_model(model, verify=False), default_counter().tokenizer)
        self.embeddings = embeddings
        expected = len(RULE_FEATURES) + embeddings.dim
        if len(self.head.feature_names) != expected:
            raise ValueError(f"the head has {len(self.head.feature_names)} features, this model gives {expected}")
        self.floor, self.power = floor, power
        names_ = self.head.feature_names
        placed = [names_.index(n) for n in _PLACED]
        self._w = self.head.weights / self.head.scale
        self._placed = np.asarray(placed)
        self._text_w = self._w.copy()
        self._text_w[self._placed] = 0.0
        self._offset = self.head.bias - float(self.head.mean @ self._w)
        self._cache: OrderedDict[tuple[bytes, str, str], float] = OrderedDict()
        self._lock = threading.Lock()
        self._tasks: dict[str, TaskContext] = {}
        self._worker: ThreadPoolExecutor | None = None
        self._seen: set[bytes] = set()
        self._pending: list[Future[None]] = []
        self.hits = self.misses = 0
        self.scored_pieces = 0
        self.scored_tokens = 0
        self.worker_seconds = 0.0

    # -- scoring -----------------------------------------------------------------------------------------

    def _task(self, task: str) -> TaskContext:
        with self._lock:
            ctx = self._tasks.get(task)
        if ctx is None:
            ctx = TaskContext(task, self.embeddings)
            with self._lock:
                self._tasks[task] = ctx
        return ctx

    def _text_logits(self, pieces: Sequence[Piece], ctx: TaskContext) -> list[float]:
        """The cached part of each piece's logit (what depends on its kind, text and the task)."""
        key = hashlib.blake2b(ctx.task.encode("utf-8", "replace"), digest_size=8).digest()
        out: list[float | None] = []
        todo: list[int] = []
        with self._lock:
            for i, (kind, text, _, _) in enumerate(pieces):
                hit = self._cache.get((key, kind, text))
                if hit is None:
                    todo.append(i)
                else:
                    self._cache.move_to_end((key, kind, text))
                out.append(hit)
            self.hits += len(pieces) - len(todo)
            self.misses += len(todo)
        if todo:
            rows = features([pieces[i] for i in todo], self.embeddings, ctx)
            values = rows @ self._text_w
            with self._lock:
                self.scored_pieces += len(todo)
                self.scored_tokens += int(np.expm1(rows[:, RULE_FEATURES.index("log_tokens")]).round().sum())
                for i, v in zip(todo, values):
                    out[i] = float(v)
                    self._cache[(key, pieces[i][0], pieces[i][1])] = float(v)
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
        return [float(v) for v in out]  # type: ignore[arg-type]  # every None was filled

    def probabilities(self, pieces: Sequence[Piece], task: str) -> np.ndarray:
        """The head's probability that each piece is used later."""
        if not pieces:
            return np.zeros(0)
        text = np.asarray(self._text_logits(pieces, self._task(task)))
        placed = np.asarray([[float(h), RECENCY ** min(a, 400), float(np.log1p(a))] for _, _, h, a in pieces])
        logits = text + placed @ self._w[self._placed] + self._offset
        return 1.0 / (1.0 + np.exp(-np.clip(logits, -40, 40)))

    def for_task(self, task: str) -> TaskScorer:
        return TaskScorer(self, task)

    # -- on arrival --------------------------------------------------------------------------------------

    def observe(self, messages: Sequence[Any]) -> None:
        """Queue the candidate pieces of the messages not seen before to the worker thread; returns at once."""
        parsed = as_messages(messages)
        fresh = []
        for i, m in enumerate(parsed):
            key = hashlib.blake2b(f"{m.role}\0{m.text}".encode("utf-8", "replace"), digest_size=16).digest()
            if key not in self._seen:
                self._seen.add(key)
                fresh.append(i)
        if not fresh:
            return
        pieces = [p for i in fresh for p in candidates(parsed, i)]
        if not pieces:
            return
        task = task_text(parsed)
        with self._lock:
            if self._worker is None:
                self._worker = ThreadPoolExecutor(1, thread_name_prefix="offline-compress-selector")
            self._pending = [f for f in self._pending if not f.done()]
            self._pending.append(self._worker.submit(self._score_in_worker, pieces, task))

    def _score_in_worker(self, pieces: list[Piece], task: str) -> None:
        start = time.thread_time()
        self._text_logits(pieces, self._task(task))
        with self._lock:
            self.worker_seconds += time.thread_time() - start

    def wait(self) -> None:
        """Block until every queued message is scored (tests and measurements; a compaction does not wait)."""
        for f in list(self._pending):
            f.result()

    def close(self) -> None:
        if self._worker is not None:
            self._worker.shutdown(wait=True)
            self._worker = None


class TaskScorer:
    """A selector bound to one task: what ``pack`` calls (``summary.pack.ScoresPieces``)."""

    def __init__(self, selector: Selector, task: str) -> None:
        self.selector, self.task = selector, task

    def score(self, pieces: Sequence[Piece]) -> list[float]:
        p = self.selector.probabilities(pieces, self.task)
        return [float((self.selector.floor + x) ** self.selector.power) for x in p]


def candidates(messages: Sequence[Message], i: int) -> list[Piece]:
    """The pieces message ``i`` may give the work log, as the packer will see them (ages unknown yet: 0)."""
    m = messages[i]
    out: list[Piece] = []
    if m.role == "assistant":
        said = " ".join(s for s in prose_sentences(m.text) if names(s))
        out += [
            ("said", clip(x, S.MAX_SAID_CHARS), False, 0) for x in SENTENCE_SPLIT.split(" ".join(said.split())) if x
        ]
        out += [("code", clip(ln.strip(), S.MAX_CODE_CHARS), False, 0) for ln in code_lines(m.text) if names(ln)]
        commands = [ln for ln in code_lines(m.text, shell=True) if ln.strip()]
        commands += [ln for c in m.tool_calls or () for ln in c.function.arguments.split("\n") if ln.strip()]
        out += [("ran", clip(ln, S.MAX_RAN_CHARS - 2), False, 0) for ln in commands]
    elif is_tool_output(messages, i):
        lines = [ln.strip() for ln in m.text.splitlines() if ln.strip()]
        named = [ln for ln in dict.fromkeys(lines) if names(ln)][:MAX_SAW_LINES]  # bounded: a huge output too
        out += [("saw", clip(ln, S.MAX_SAW_CHARS), False, 0) for ln in named]
    return out


__all__ = ["DEFAULT_FLOOR", "HEAD_FILE", "Selector", "TaskScorer", "candidates", "shipped_head", "task_text"]
