"""The features of a piece: the rule features the packer weighs (its kind, the names it adds, its token cost,
its recency, whether it is the first line of a command or an error line) joined with the embedded Gemma's view of
it (its pooled token embedding and how close it is to the task's).

A piece is ``(kind, text, head, age)``: kind ``said`` / ``code`` / ``ran`` / ``saw`` (``pack.py``), head: the first
line of what a step ran, age: the number of newer steps. The same function serves training (pieces the labeller
read from raw runs) and packing (the work log's pieces), so both see one definition.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

from ..extract.steps import names as piece_names
from ..summary.pack import RECENCY
from .embed import TokenEmbeddings

Piece = tuple[str, str, bool, int]  # (kind, text, head, age)
KINDS = ("said", "code", "ran", "saw")
_ERROR = re.compile(r"(?:Error\b|Exception\b|error:|FAILED|Traceback|No such file|not found|fatal:|cannot )")
_PATH = re.compile(r"[\w.-]+/[\w./-]+|\w+\.(?:py|js|ts|go|rs|c|h|java|rb|json|toml|yaml|yml|cfg|txt|md)\b")
_NUMBER = re.compile(r"\d")
RULE_FEATURES = (
    *(f"kind_{k}" for k in KINDS),
    "head",
    "error_line",
    "log_names",
    "log_tokens",
    "names_per_token",
    "recency",
    "log_age",
    "has_path",
    "has_digit",
    "task_names",
    "task_cosine",
)


def feature_names(dim: int) -> list[str]:
    return [*RULE_FEATURES, *(f"emb_{i}" for i in range(dim))]


def _unit(v: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(norm > 0, norm, 1.0)


class TaskContext:
    """What the features compare a piece with: the task's names and pooled embedding."""

    def __init__(self, task: str, embeddings: TokenEmbeddings) -> None:
        self.task = task
        self.names = frozenset(piece_names(task))
        vector, _ = embeddings.pooled([task]) if task.strip() else (np.zeros((1, embeddings.dim), np.float32), [0])
        self.unit = _unit(vector[0].astype(np.float64))


def rule_row(kind: str, text: str, head: bool, age: int, tokens: int, task: TaskContext, cosine: float) -> list[float]:
    named = piece_names(text)
    return [
        *(float(kind == k) for k in KINDS),
        float(head),
        float(bool(_ERROR.search(text))),
        math.log1p(len(named)),
        math.log1p(tokens),
        len(named) / (tokens + 1),
        RECENCY ** min(age, 400),
        math.log1p(age),
        float(bool(_PATH.search(text))),
        float(bool(_NUMBER.search(text))),
        len(named & task.names) / (len(named) + 1),
        cosine,
    ]


def features(
    pieces: Sequence[Piece], embeddings: TokenEmbeddings, task: TaskContext, pooled: np.ndarray | None = None
) -> np.ndarray:
    """One row per piece (``feature_names`` order), float64. ``pooled``: the pieces' embeddings if already known
    (with their token counts in the last column)."""
    if pooled is None:
        vectors, counts = embeddings.pooled([p[1] for p in pieces])
        pooled = np.concatenate([vectors, np.asarray(counts, np.float32)[:, None]], axis=1)
    vectors = pooled[:, :-1].astype(np.float64)
    cosines = _unit(vectors) @ task.unit if len(pieces) else np.zeros(0)
    rules = [rule_row(k, t, h, a, int(pooled[i, -1]), task, float(cosines[i])) for i, (k, t, h, a) in enumerate(pieces)]
    return np.concatenate([np.asarray(rules, np.float64).reshape(len(pieces), len(RULE_FEATURES)), vectors], axis=1)


__all__ = ["KINDS", "Piece", "RULE_FEATURES", "TaskContext", "feature_names", "features", "rule_row"]
