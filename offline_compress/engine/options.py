"""Command-line options that choose the summariser backend, shared by every command that builds a compressor:
``--backend llamacpp`` (the in-process model, the default) or ``--backend openai --base-url URL`` (a model server)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from .openai_server import STRUCTURED_CHOICES


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("model backend")
    group.add_argument(
        "--backend",
        choices=("llamacpp", "openai"),
        default="llamacpp",
        help="llamacpp: the model in this process (default); openai: an OpenAI-compatible server "
        "(llama.cpp's llama-server, llama-cpp-python's server, vLLM)",
    )
    group.add_argument(
        "--decoder",
        choices=("outlines", "forced"),
        default="outlines",
        help="in-process constrained decoder: outlines (Outlines' Generator, default) or forced (the "
        "forced-token loop, fastdecode.py: ~10%% less time per compaction on 2 CPU cores)",
    )
    group.add_argument("--base-url", help="the server's root URL, e.g. http://127.0.0.1:8080 (with --backend openai)")
    group.add_argument(
        "--api",
        choices=("chat", "completions"),
        default="chat",
        help="server endpoint: chat (an instruct model; default) or completions (a base model's raw "
        "prompt, e.g. the embedded Gemma 270M)",
    )
    group.add_argument(
        "--structured-outputs",
        choices=STRUCTURED_CHOICES,
        default="auto",
        help="how the JSON schema is asked for: openai (response_format json_schema), vllm "
        "(structured_outputs), llamacpp (a GBNF grammar); auto: by what the server is",
    )
    group.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the server's API key")
    group.add_argument(
        "--n-ctx",
        type=int,
        help="context window in tokens (default: 8192 in process; the server's own where it says, else 4096)",
    )
    group.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the server's answer (300)")
    group.add_argument("--connect-timeout", type=float, default=5.0, help="seconds to wait for a connection (5)")


def backend_from_args(args: argparse.Namespace) -> Any:
    """The server backend the options ask for, or None for the in-process model (the compressor loads it from
    ``--model``). Raises ``ValueError`` (one line) for options that do not fit together, ``BackendError`` when the
    server cannot be reached."""
    if args.backend == "llamacpp":
        if args.base_url:
            raise ValueError("--base-url needs --backend openai")
        return None
    if args.decoder != "outlines":
        raise ValueError("--decoder is for the in-process backend (a server decodes with its own engine)")
    if not args.base_url:
        raise ValueError("--backend openai needs --base-url (e.g. http://127.0.0.1:8080)")
    if getattr(args, "no_model", False):
        raise ValueError("--no-model and --backend openai do not go together")
    api_key = os.environ.get(args.api_key_env) if args.api_key_env else None
    if args.api_key_env and not api_key:
        raise ValueError(f"--api-key-env {args.api_key_env}: that environment variable is not set")
    from .openai_server import OpenAIServerBackend

    return OpenAIServerBackend(
        args.base_url,
        model=args.model,
        api=args.api,
        structured=args.structured_outputs,
        api_key=api_key,
        n_ctx=args.n_ctx,
        connect_timeout=args.connect_timeout,
        read_timeout=args.timeout,
    )
