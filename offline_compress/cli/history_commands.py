"""``count``, ``check`` and ``compress``: a history file (or stdin) in, JSON out."""

from __future__ import annotations

import argparse
import time
from typing import Any

from ..formats import IMPORTERS, load_history_report
from ..history.messages import Message
from . import emit, progress


def _load(args: argparse.Namespace) -> list[Message]:
    """The history, with one warning line on stderr for each kind of input the importer could not read."""
    loaded = load_history_report(args.file, args.format, instance=args.instance)
    if loaded.skipped:
        shown = "; ".join(loaded.skipped[:3]) + ("; ..." if len(loaded.skipped) > 3 else "")
        progress(f"warning: {args.file}: skipped {len(loaded.skipped)} damaged records ({shown})")
    return loaded.messages


def cmd_count(args: argparse.Namespace) -> int:
    from ..tokens.counter import get_counter

    messages = _load(args)
    emit({"tokens": get_counter(args.tokenizer).count(messages), "messages": len(messages)}, None)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from ..hook.trigger import evaluate_compression
    from ..tokens.counter import get_counter

    messages = _load(args)
    decision = evaluate_compression(messages, args.context, args.turns_since, counter=get_counter(args.tokenizer))
    emit(decision.model_dump(mode="json"), None)
    return 0


def cmd_compress(args: argparse.Namespace) -> int:
    from ..compressor import Compressor
    from ..engine.options import backend_from_args

    messages = _load(args)
    progress(f"read {len(messages)} messages from {args.file}")
    start = time.perf_counter()
    server = backend_from_args(args)
    model = None if args.no_model else args.model
    if args.written and server is None and model is None:
        raise ValueError("--written needs a model to write: --backend openai --base-url URL, or --model")
    if server is None and model is not None:
        progress("loading the model and compiling the grammar (once per process)")
    compressor = Compressor(
        model,
        written=args.written,
        keep_last=args.keep_last,
        max_tokens=args.max_tokens,
        backend=server,
        llama={"n_threads": args.threads, "decoder": args.decoder, **({"n_ctx": args.n_ctx} if args.n_ctx else {})},
    )
    if (backend := compressor.backend) is not None:
        how = ""
        adaptive = getattr(backend, "adaptive_threads", None)  # the in-process backend's
        if adaptive is not None:
            how = "; threads chosen per call" if adaptive else f"; {getattr(backend, 'n_threads', '?')} threads"
        progress(f"{backend.name} ready in {time.perf_counter() - start:.1f} s{how}; compressing")
    result = compressor.compress_detailed(messages)
    s = result.stats
    progress(
        f"compressed {s.messages_compressed} of {s.messages_in} messages in {s.total_seconds:.1f} s "
        f"(prompt {s.prompt_tokens} tokens, generated {s.generated_tokens}; groundedness "
        f"{result.grounding.groundedness:.0%}, {len(result.grounding.dropped)} unsupported items dropped)"
    )
    if s.fallback:
        progress(f"warning: the summary has no model draft (extractive only): {s.fallback}")
    emit(result.context.to_json(), args.output)
    return 0


def add_parsers(sub: Any) -> None:
    """``count``, ``check`` and ``compress``."""

    def history_args(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "file", help="history file (JSON list, JSONL, {messages: [...]}, or an agent's format); - for stdin"
        )
        p.add_argument("--format", default="auto", help=f"auto (default), {', '.join(IMPORTERS)}")
        p.add_argument(
            "--instance", help="the instance to read from an OpenHands evaluation output.jsonl that holds several"
        )

    p = sub.add_parser("count", help="exact token count of a history as the target model sees it")
    history_args(p)
    p.add_argument(
        "--tokenizer",
        help="target tokenizer: tokenizer.json, a Hugging Face model folder, or a .gguf (default: the embedded Gemma)",
    )
    p.set_defaults(func=cmd_count)

    p = sub.add_parser("check", help="would the trigger compress this history now?")
    history_args(p)
    p.add_argument("--context", type=int, required=True, help="the target model's context window in tokens")
    p.add_argument("--turns-since", type=int, default=0, help="turns since the last compression")
    p.add_argument("--tokenizer", help="target tokenizer (as for count)")
    p.set_defaults(func=cmd_check)

    from ..engine.options import add_backend_arguments

    p = sub.add_parser("compress", help="summarise all but the last messages into a CompressedContext (JSON)")
    history_args(p)
    p.add_argument("-o", "--output", help="write the JSON here (atomically) instead of stdout")
    p.add_argument(
        "--model",
        help="add a model draft: 'default' (the embedded Gemma), a manifest name or a .gguf path "
        "(default: none, extractive); with --backend openai, the server's model id "
        "(default: its only model)",
    )
    p.add_argument(
        "--no-model", action="store_true", help="extractive only (the default; kept for scripts that pass it)"
    )
    p.add_argument(
        "--written",
        action="store_true",
        help="the written-state mode: a capable model (a server's, --backend openai, or a larger GGUF) writes the "
        "decisions, failure reasons, task state and next step beside what is read exactly (docs/backends.md); "
        "needs --model or --backend openai",
    )
    p.add_argument("--keep-last", type=int, default=5, help="messages kept out of the summary (default 5)")
    p.add_argument("--max-tokens", type=int, default=2048, help="output token budget of the model (default 2048)")
    p.add_argument("--threads", type=int, help="llama.cpp threads (default: the cores available)")
    add_backend_arguments(p)
    p.set_defaults(func=cmd_compress)
