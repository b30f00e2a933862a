"""The learned line selector: its features and head are deterministic, the head file round-trips, scoring off
leaves the pack byte-identical, the on-arrival worker never blocks a step, and train-selector runs end to end on
two bundled runs through the real model's token embeddings."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from offline_compress.compressor import Compressor
from offline_compress.formats import load_history
from offline_compress.selector import Head, Selector, candidates, task_text
from offline_compress.selector.embed import TokenEmbeddings
from offline_compress.selector.features import RULE_FEATURES, TaskContext, feature_names, features
from offline_compress.selector.head import auc, fit
from offline_compress.summary.pack import Material, pack, read
from offline_compress.tokens.counter import default_counter

FIXTURES = Path(__file__).resolve().parent / "fixtures"

RUNS = FIXTURES / "mini-swe-agent"
PIECES = [
    ("saw", "django/forms/models.py:1128: def construct_instance(form, instance, fields=None):", False, 3),
    ("said", "The bug is in `construct_instance` which skips fields with defaults.", False, 2),
    ("ran", "grep -n 'def construct_instance' django/forms/models.py", True, 1),
    ("code", "if f.has_default() and form[f.name].field.widget.value_omitted_from_data(", False, 0),
]


@pytest.fixture(scope="module")
def embeddings(model_path: Path) -> TokenEmbeddings:
    return TokenEmbeddings(model_path, default_counter().tokenizer)


@pytest.fixture(scope="module")
def selector(embeddings: TokenEmbeddings) -> Selector:
    return Selector(embeddings=embeddings)


def test_token_embeddings_are_the_gguf_rows(embeddings: TokenEmbeddings, model_path: Path) -> None:
    gguf = pytest.importorskip("gguf")
    from gguf.quants import dequantize

    tensor = next(t for t in gguf.GGUFReader(str(model_path)).tensors if t.name == "token_embd.weight")
    ids = [2, 1000, embeddings.rows - 1]
    assert np.array_equal(embeddings.vectors(ids), dequantize(tensor.data[ids], tensor.tensor_type))


def test_features_and_fit_are_deterministic(embeddings: TokenEmbeddings) -> None:
    ctx = TaskContext("Fix construct_instance in django/forms/models.py", embeddings)
    x1, x2 = features(PIECES, embeddings, ctx), features(PIECES, embeddings, ctx)
    assert x1.shape == (len(PIECES), len(RULE_FEATURES) + embeddings.dim)
    assert np.array_equal(x1, x2)
    names = feature_names(embeddings.dim)
    y = np.asarray([1.0, 1.0, 0.0, 0.0])
    one, two = fit(x1, y, names, epochs=50), fit(x2, y, names, epochs=50)
    assert one.to_json() == two.to_json()
    assert auc(one.predict(x1), y) == 1.0  # four rows: the head separates what it was fitted on


def test_head_round_trips() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 5))
    y = (x[:, 0] + 0.3 * x[:, 1] > 0).astype(float)
    head = fit(x, y, [f"f{i}" for i in range(5)], epochs=100)
    head.meta = {"training_digest": "abc", "validation": {"auc": 0.9}}
    again = Head.from_json(head.to_json())
    assert again.to_json() == head.to_json()
    assert np.allclose(again.predict(x), head.predict(x), atol=1e-6)
    assert (auc(head.predict(x), y) or 0.0) > 0.95


def test_shipped_head_records_its_data_and_scores(selector: Selector) -> None:
    meta = selector.head.meta
    assert len(meta["training_digest"]) == 64 and meta["labels_file"] == "selector_design_labels.jsonl.gz"
    assert meta["validation"]["auc"] > 0.5
    assert len(selector.head.feature_names) == len(RULE_FEATURES) + selector.embeddings.dim


class _Constant:
    def score(self, pieces: Any) -> list[float]:
        return [1.0] * len(pieces)


def _material() -> list[Material]:
    history = load_history(RUNS / "django__django-11163.traj.json")
    result = Compressor(None).compress_detailed(history, summary_tokens=None)
    return [Material.of_step(s) for s in result.context.work_log]


def test_scoring_off_is_the_rule_pack_byte_for_byte(selector: Selector) -> None:
    counter = default_counter()
    material = _material()
    budget = 300
    rule = pack(material, budget, counter)
    assert pack(material, budget, counter, selector=_Constant()) == rule  # a neutral score changes nothing
    scored = pack(material, budget, counter, selector=selector.for_task("Fix construct_instance"))
    assert scored and scored != rule  # the learned score reorders what fits
    history = load_history(RUNS / "django__django-11163.traj.json")
    plain = Compressor(None).compress(history, summary_tokens=1200).to_json()
    assert Compressor(None, selector=None).compress(history, summary_tokens=1200).to_json() == plain


def test_scores_are_cached_per_text_and_deterministic(selector: Selector) -> None:
    scorer = selector.for_task("Fix construct_instance")
    first = scorer.score(PIECES)
    hits = selector.hits
    assert scorer.score(PIECES) == first and selector.hits == hits + len(PIECES)
    assert all(selector.floor < s < 1 + selector.floor for s in first)
    r = read(_material(), default_counter(), scorer)
    assert r.scored and any(p.factor != r.pieces[0].factor for p in r.pieces)


class _SlowEmbeddings(TokenEmbeddings):
    """The real embeddings, each batch held back: a worker that takes long."""

    gate = threading.Event()

    def pooled(self, texts: Any) -> Any:
        self.gate.wait(5)
        return super().pooled(texts)


def test_the_worker_never_blocks_a_step(model_path: Path) -> None:
    slow = _SlowEmbeddings(model_path, default_counter().tokenizer)
    selector = Selector(embeddings=slow)
    history = load_history(RUNS / "django__django-11163.traj.json")
    selector.observe(history)
    assert selector.scored_pieces == 0  # queued, not scored: the worker is held (a blocking observe would score)
    slow.gate.set()
    selector.wait()
    assert selector.scored_pieces > 0 and selector.worker_seconds > 0
    seen = selector.scored_pieces
    selector.observe(history)  # nothing new: nothing queued
    selector.wait()
    assert selector.scored_pieces == seen
    task = task_text(history)
    pieces = [p for i in range(len(history)) for p in candidates(history, i)]
    misses = selector.misses
    selector.for_task(task).score(pieces)
    assert selector.misses == misses  # a compaction finds them scored
    selector.close()


def test_train_selector_end_to_end(model_path: Path, tmp_path: Path) -> None:
    from evaluation.selector_labels import main as label
    from offline_compress.cli import main

    runs = [str(RUNS / "django__django-11163.traj.json"), str(RUNS / "astropy__astropy-7336.traj.json")]
    labels = tmp_path / "labels.jsonl.gz"
    assert label([*runs, "--context", "4096", "--out", str(labels)]) == 0
    outs = [tmp_path / "a.json", tmp_path / "b.json"]
    for out in outs:
        assert main(["train-selector", str(labels), "--epochs", "30", "--out", str(out)]) == 0
    assert outs[0].read_bytes() == outs[1].read_bytes()  # same runs, same bytes
    head = Head.load(outs[0])
    assert head.meta["runs"] == 2 and head.meta["pieces"] > 0 and head.meta["used"] > 0
    history = load_history(RUNS / "django__django-11163.traj.json")
    compressor = Compressor(None, selector=outs[0])
    assert compressor.compress(history, summary_tokens=1200).work_log
