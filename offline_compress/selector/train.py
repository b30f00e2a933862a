"""Training the selector on labelled pieces, offline: compute their features with the local model's token
embeddings, fit the head, and score it on held-back runs.

The labels come from recorded runs: ``python -m evaluation.selector_labels RUNS... --out LABELS.jsonl.gz`` (the
labeller lives in the evaluation package, beside the probes it shares its parsers with, independent of the
extractor; the library never imports it). The labels file is this module's format (``save_rows``): one JSON array
per line, ``[run, task, kind, text, head, age, used]``.

The embedding enters through its first ``PROJECTION`` principal directions (of the training rows): on the design
split's validation runs the whole 640-dimensional embedding overfitted the training runs (AUC 0.72 against 0.83 on
them), below the rule features with the task's closeness alone (0.745); eight directions did best (0.752; 32: 0.730).
The projection is folded into the head's weights, so the head stays one linear map of the features.

Which runs validate is fixed by the name (a fifth of them, by a hash), so the same runs give the same head. The
head records the digest of its labelled rows and its validation scores: the area under the ROC curve of the
head, of the head on the rule features alone (what the model's embeddings add), and of the names count alone.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError
from .embed import TokenEmbeddings
from .features import RULE_FEATURES, TaskContext, feature_names, features
from .head import Head, auc, fit

DEFAULT_WINDOWS = (16384, 32768)
VALIDATION_SHARE = 5  # one run in five validates
PROJECTION = 8  # principal directions of the embedding the head sees (chosen on the design split, see above)
PCA_SAMPLE = 10  # every tenth training row estimates them


def validates(name: str) -> bool:
    return int(hashlib.sha256(f"selector-validation\0{name}".encode()).hexdigest()[:8], 16) % VALIDATION_SHARE == 0


@dataclass(frozen=True)
class Row:
    trajectory: str
    task: str
    kind: str
    text: str
    head: bool
    age: int
    used: bool


def save_rows(rows: Iterable[Row], path: Path) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps([r.trajectory, r.task, r.kind, r.text, r.head, r.age, r.used], ensure_ascii=False))
            f.write("\n")


def load_rows(path: Path) -> list[Row]:
    """The rows of a labels file, sorted by run (as ``label_runs`` writes them)."""
    rows: list[Row] = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                run, task, kind, text, head, age, used = json.loads(line)
                rows.append(Row(str(run), str(task), str(kind), str(text), bool(head), int(age), bool(used)))
            except (ValueError, TypeError) as err:
                raise InputError(f"not a labelled piece ({err})", source=str(path), position=f"line {n}") from None
    return rows


def digest(rows: Sequence[Row]) -> str:
    h = hashlib.sha256()
    for r in rows:
        h.update(json.dumps([r.trajectory, r.kind, r.text, r.head, r.age, r.used], ensure_ascii=False).encode())
        h.update(b"\n")
    return h.hexdigest()


def matrix(rows: Sequence[Row], embeddings: TokenEmbeddings) -> np.ndarray:
    """The feature rows (float32), computed per run with its task as context."""
    out = np.zeros((len(rows), len(RULE_FEATURES) + embeddings.dim), np.float32)
    start = 0
    while start < len(rows):
        end = start
        while end < len(rows) and rows[end].trajectory == rows[start].trajectory:
            end += 1
        ctx = TaskContext(rows[start].task, embeddings)
        for a in range(start, end, 4096):
            b = min(a + 4096, end)
            out[a:b] = features([(r.kind, r.text, r.head, r.age) for r in rows[a:b]], embeddings, ctx)
        start = end
    return out


def train(
    rows: Sequence[Row], embeddings: TokenEmbeddings, *, epochs: int = 300, note: Callable[[str], None] = lambda _: None
) -> Head:
    """The head fitted on the training runs of ``rows``, with its validation scores in ``meta``."""
    if not rows:
        raise InputError("no labelled pieces to train on (no compaction point in these runs?)")
    x = matrix(rows, embeddings)  # float32: a few hundred thousand rows of 654 features
    y = np.asarray([float(r.used) for r in rows])
    held = np.asarray([validates(r.trajectory) for r in rows])
    if held.all() or not held.any():
        held = np.zeros(len(rows), bool)  # too few runs to hold some back: validate on the training runs
    names = feature_names(embeddings.dim)
    note(f"{len(rows)} pieces ({int(y.sum())} used), {int((~held).sum())} to train, {int(held.sum())} to validate")
    rules = len(RULE_FEATURES)
    head = _projected_fit(x[~held], y[~held], names, rules, epochs)
    rule_head = fit(x[~held][:, :rules], y[~held], names[:rules], epochs=epochs)
    check = held if held.any() else ~held
    log_names = x[check][:, names.index("log_names")]
    head.meta = {
        "training_digest": digest(rows),
        "model_rows": embeddings.rows,
        "model_dim": embeddings.dim,
        "model_file": embeddings.path.name,
        "runs": len({r.trajectory for r in rows}),
        "validation_runs": len({r.trajectory for r, h in zip(rows, held) if h}),
        "pieces": len(rows),
        "used": int(y.sum()),
        "epochs": epochs,
        "projection": PROJECTION,
        "validation": {
            "pieces": int(check.sum()),
            "used_rate": round(float(y[check].mean()), 6),
            "auc": _round(auc(head.predict(x[check]), y[check])),
            "auc_rule_features_only": _round(auc(rule_head.predict(x[check][:, :rules]), y[check])),
            "auc_names_count_only": _round(auc(log_names, y[check])),
        },
    }
    return head


def _projected_fit(x: np.ndarray, y: np.ndarray, names: list[str], rules: int, epochs: int) -> Head:
    """Fit on the rule features and the embedding's first ``PROJECTION`` principal directions, then fold the
    projection into weights over the whole embedding (mean 0, scale 1 for those columns)."""
    emb = x[::PCA_SAMPLE, rules:].astype(np.float64)
    centre = emb.mean(axis=0)
    _, _, vt = np.linalg.svd(emb - centre, full_matrices=False)
    basis = vt[: min(PROJECTION, len(vt))]
    basis = basis * np.where(basis[:, :1] < 0, -1.0, 1.0)  # a fixed sign per direction: the same head every time
    projected = ((x[:, rules:] - centre) @ basis.T).astype(np.float32)
    small = fit(np.concatenate([x[:, :rules], projected], axis=1), y, names[:rules] + [""] * len(basis), epochs=epochs)
    w_rule = small.weights[:rules]
    w_proj = small.weights[rules:] / small.scale[rules:]
    emb_weights = basis.T @ w_proj
    bias = small.bias - float(w_proj @ (basis @ centre + small.mean[rules:]))
    dim = x.shape[1] - rules
    return Head(
        names,
        np.concatenate([small.mean[:rules], np.zeros(dim)]),
        np.concatenate([small.scale[:rules], np.ones(dim)]),
        np.concatenate([w_rule, emb_weights]),
        bias,
    )


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


__all__ = ["DEFAULT_WINDOWS", "Row", "digest", "load_rows", "matrix", "save_rows", "train", "validates"]
