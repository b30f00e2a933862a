"""The head: a logistic regression in numpy on standardised features, and its file.

Training is full-batch Adam from zero weights for a fixed number of epochs (no randomness, so the same rows give
the same weights, bit for bit on one machine). The file is JSON with every float written as ``%.8e``: the same
head, the same bytes. It records the digest of its training rows, the feature names it expects and its
validation scores, so a head trained on other runs says so.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError

FORMAT = "offline-compress-selector-head/1"


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))


@dataclass
class Head:
    feature_names: list[str]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    meta: dict[str, Any] = field(default_factory=dict)

    def logits(self, x: np.ndarray) -> np.ndarray:
        return ((x - self.mean) / self.scale) @ self.weights + self.bias

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Probability that each row's piece is used later."""
        return _sigmoid(self.logits(x))

    def to_json(self) -> str:
        def floats(v: np.ndarray) -> list[str]:
            return [f"{float(x):.8e}" for x in v]

        doc = {
            "format": FORMAT,
            "meta": self.meta,
            "feature_names": self.feature_names,
            "bias": f"{self.bias:.8e}",
            "mean": floats(self.mean),
            "scale": floats(self.scale),
            "weights": floats(self.weights),
        }
        return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=True) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str = "head") -> Head:
        try:
            doc = json.loads(text)
            if doc.get("format") != FORMAT:
                raise InputError(
                    f"not a selector head (format {doc.get('format')!r}, expected {FORMAT})", source=source
                )
            names = list(doc["feature_names"])
            arrays = {k: np.asarray([float(x) for x in doc[k]], np.float64) for k in ("mean", "scale", "weights")}
            bias = float(doc["bias"])
        except (ValueError, KeyError, TypeError) as err:
            raise InputError(f"unreadable selector head ({type(err).__name__}: {err})", source=source) from None
        for key, value in arrays.items():
            if len(value) != len(names):
                raise InputError(f"{len(value)} values for {len(names)} features", source=source, field=key)
        return cls(names, arrays["mean"], arrays["scale"], arrays["weights"], bias, dict(doc.get("meta", {})))

    @classmethod
    def load(cls, path: str | Path) -> Head:
        return cls.from_json(Path(path).read_text(encoding="utf-8"), source=str(path))


def fit(
    x: np.ndarray,
    y: np.ndarray,
    names: Sequence[str],
    *,
    epochs: int = 300,
    rate: float = 0.05,
    l2: float = 1e-3,
    positive_weight: float | None = None,
) -> Head:
    """Logistic regression on ``x`` (rows) for labels ``y`` in {0, 1}. ``positive_weight``: the weight of a used
    piece's loss (default: balanced classes, so the head ranks rather than predicts the rare class away)."""
    if len(x) == 0 or len(x) != len(y):
        raise ValueError(f"fit needs rows and as many labels, got {len(x)} rows and {len(y)} labels")
    mean = x.mean(axis=0, dtype=np.float64)
    scale = x.std(axis=0, dtype=np.float64)
    scale = np.where(scale > 1e-9, scale, 1.0)
    z = ((x - mean) / scale).astype(np.float32)
    pos = float(y.sum())
    if positive_weight is None:
        positive_weight = (len(y) - pos) / pos if pos else 1.0
    sample = np.where(y > 0, positive_weight, 1.0)
    sample = sample / sample.sum()
    w = np.zeros(z.shape[1])
    b = 0.0
    y = y.astype(np.float64)
    m_w, v_w, m_b, v_b = np.zeros_like(w), np.zeros_like(w), 0.0, 0.0
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    for t in range(1, epochs + 1):
        err = (_sigmoid(z @ w + b) - y) * sample
        g_w = z.T @ err + l2 * w
        g_b = float(err.sum())
        m_w = beta1 * m_w + (1 - beta1) * g_w
        v_w = beta2 * v_w + (1 - beta2) * g_w * g_w
        m_b = beta1 * m_b + (1 - beta1) * g_b
        v_b = beta2 * v_b + (1 - beta2) * g_b * g_b
        c1, c2 = 1 - beta1**t, 1 - beta2**t
        w = w - rate * (m_w / c1) / (np.sqrt(v_w / c2) + eps)
        b = b - rate * (m_b / c1) / (math.sqrt(v_b / c2) + eps)
    return Head(list(names), mean, scale, w, b)


def auc(scores: np.ndarray, y: np.ndarray) -> float | None:
    """Area under the ROC curve (ties count half); None with one class only."""
    pos, neg = int(y.sum()), int(len(y) - y.sum())
    if not pos or not neg:
        return None
    order = np.argsort(scores, kind="stable")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    i = 0
    while i < len(scores):  # average ranks of ties
        j = i
        while j + 1 < len(scores) and sorted_scores[j + 1] == sorted_scores[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[y > 0].sum() - pos * (pos + 1) / 2) / (pos * neg))


__all__ = ["FORMAT", "Head", "auc", "fit"]
