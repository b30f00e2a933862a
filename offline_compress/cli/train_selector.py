"""``offline-compress train-selector``: train the learned line selector's head on labelled pieces, offline.

The labels come from recorded runs, in a checkout: ``python -m evaluation.selector_labels RUNS... --out LABELS``
(docs/selector.md)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..files import check_output, write_output


def cmd_train_selector(args: argparse.Namespace) -> int:
    from ..errors import InputError
    from ..model_files import resolve_model
    from ..selector.embed import TokenEmbeddings
    from ..selector.train import load_rows, train
    from ..tokens.counter import default_counter
    from . import progress

    started = time.perf_counter()
    check_output(args.out)  # now, not after the training
    labels = Path(args.labels)
    if not labels.is_file():
        raise InputError(
            "labels file not found (python -m evaluation.selector_labels RUNS... --out FILE)", source=str(labels)
        )
    rows = load_rows(labels)
    progress(f"read {len(rows)} labelled pieces from {labels}")
    embeddings = TokenEmbeddings(resolve_model(args.model), default_counter().tokenizer)
    head = train(rows, embeddings, epochs=args.epochs, note=progress)
    head.meta["labels_file"] = labels.name
    write_output(head.to_json(), args.out)
    v = head.meta["validation"]
    progress(
        f"trained in {time.perf_counter() - started:.1f} s; validation AUC {v['auc']} (rule features alone "
        f"{v['auc_rule_features_only']}, names count alone {v['auc_names_count_only']}); wrote {args.out}"
    )
    return 0


def add_train_selector_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "train-selector",
        help="train the learned line selector's head on labelled pieces of recorded runs (offline)",
        description="Embed labelled pieces with the local Gemma's token embeddings and fit the selector's head; "
        "writes the head file (JSON) with the digest of its training data and its validation scores. The labels: "
        "python -m evaluation.selector_labels RUNS... --out LABELS (a checkout). Use the head with "
        "Compressor(selector=HEAD).",
    )
    p.add_argument("labels", metavar="LABELS", help="labelled pieces (.jsonl.gz from evaluation.selector_labels)")
    p.add_argument("--out", required=True, help="the head file to write")
    p.add_argument("--epochs", type=int, default=300)
    p.add_argument("--model", help="the GGUF whose token embeddings to use (default: the embedded Gemma)")
    p.set_defaults(func=cmd_train_selector)
