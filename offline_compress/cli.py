"""``offline-compress``: count / check / compress (and eval / bench) on history files or stdin, JSON out.

Errors in the input or the model files print one line to stderr and exit with status 2; nothing is written."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from .errors import OfflineCompressError
from .files import write_atomic


def one_line(text: str) -> str:
    """``text`` with every character that is not printable (line breaks, form feeds, U+2028, control codes, lone
    surrogates from a file's JSON) written as its escape, so that an error quoting the input stays one line."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape", "backslashreplace").decode("ascii") for ch in text)


def _progress(message: str) -> None:
    print(f"offline-compress: {message}", file=sys.stderr, flush=True)


def _emit(document: Any, out: str | None) -> None:
    text = document if isinstance(document, str) else json.dumps(document, ensure_ascii=False)
    if out:
        write_atomic(Path(out), text + "\n")
    else:
        sys.stdout.write(text + "\n")


def _load(args: argparse.Namespace):
    from .formats import load_history

    return load_history(args.file, args.format, instance=args.instance)


def cmd_count(args: argparse.Namespace) -> int:
    from .tokens import get_counter

    messages = _load(args)
    counter = get_counter(args.tokenizer)
    _emit({"tokens": counter.count(messages), "messages": len(messages)}, None)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from .tokens import get_counter
    from .trigger import evaluate_compression

    messages = _load(args)
    counter = get_counter(args.tokenizer)
    decision = evaluate_compression(messages, args.context, args.turns_since, counter=counter)
    _emit(decision.model_dump(mode="json"), None)
    return 0


def cmd_compress(args: argparse.Namespace) -> int:
    from .backends.options import backend_from_args
    from .compressor import Compressor

    messages = _load(args)
    _progress(f"read {len(messages)} messages from {args.file}")
    start = time.perf_counter()
    server = backend_from_args(args)
    model = None if args.no_model else args.model
    if server is None and model is not None:
        _progress("loading the model and compiling the grammar (once per process)")
    compressor = Compressor(model, keep_last=args.keep_last, max_tokens=args.max_tokens, n_threads=args.threads,
                            backend=server, decoder=args.decoder, **({"n_ctx": args.n_ctx} if args.n_ctx else {}))
    backend = compressor.backend
    if backend is not None:
        how = ""
        if hasattr(backend, "adaptive_threads"):
            how = "; threads chosen per call" if backend.adaptive_threads else f"; {backend.n_threads} threads"
        _progress(f"{backend.name} ready in {time.perf_counter() - start:.1f} s{how}; compressing")
    result = compressor.compress_detailed(messages)
    s = result.stats
    _progress(
        f"compressed {s.messages_compressed} of {s.messages_in} messages in {s.total_seconds:.1f} s "
        f"(prompt {s.prompt_tokens} tokens, generated {s.generated_tokens}; groundedness "
        f"{result.grounding.groundedness:.0%}, {len(result.grounding.dropped)} unsupported items dropped)"
    )
    if s.fallback:
        _progress(f"warning: the summary has no model draft (extractive only): {s.fallback}")
    _emit(result.context.to_json(), args.output)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="offline-compress", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def history_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("file", help="history file (JSON list, JSONL, {messages: [...]}, or an agent's format); - for stdin")
        p.add_argument("--format", default="auto",
                       help="auto (default), openai, mini-swe-agent, swe-agent, openhands, openhands-eval, aider")
        p.add_argument("--instance", help="the instance to read from an OpenHands evaluation output.jsonl that holds several")

    p = sub.add_parser("count", help="exact token count of a history as the target model sees it")
    history_args(p)
    p.add_argument("--tokenizer", help="target tokenizer: tokenizer.json, a Hugging Face model folder, or a .gguf (default: the embedded Gemma)")
    p.set_defaults(func=cmd_count)

    p = sub.add_parser("check", help="would the trigger compress this history now?")
    history_args(p)
    p.add_argument("--context", type=int, required=True, help="the target model's context window in tokens")
    p.add_argument("--turns-since", type=int, default=0, help="turns since the last compression")
    p.add_argument("--tokenizer", help="target tokenizer (as for count)")
    p.set_defaults(func=cmd_check)

    from .backends.options import add_backend_arguments

    p = sub.add_parser("compress", help="summarise all but the last messages into a CompressedContext (JSON)")
    history_args(p)
    p.add_argument("-o", "--output", help="write the JSON here (atomically) instead of stdout")
    p.add_argument("--model", help="add a model draft: 'default' (the embedded Gemma), a manifest name or a .gguf path "
                                   "(default: none, extractive); with --backend openai, the server's model id "
                                   "(default: its only model)")
    p.add_argument("--no-model", action="store_true",
                   help="extractive only (the default; kept for scripts that pass it)")
    p.add_argument("--keep-last", type=int, default=5, help="messages kept out of the summary (default 5)")
    p.add_argument("--max-tokens", type=int, default=2048, help="output token budget of the model (default 2048)")
    p.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: the cores available)")
    add_backend_arguments(p)
    p.set_defaults(func=cmd_compress)

    from .contradictions import add_contradictions_parser

    # The evaluation commands sit on top of the library (offline_compress.evaluation); registering them imports
    # only their argument definitions, the model and the scoring load when the command runs.
    from .evaluation.bench import add_bench_parser
    from .evaluation.summary_eval import add_eval_parser

    add_eval_parser(sub)
    add_bench_parser(sub)
    add_contradictions_parser(sub)
    from .evaluation.replay import add_ab_replay_parser

    add_ab_replay_parser(sub)
    from .recall import add_archive_parsers

    add_archive_parsers(sub)
    from .evaluation.ab_live import add_ab_parser

    add_ab_parser(sub)
    from .download import add_download_parser

    add_download_parser(sub)
    from .batch import add_batch_parser

    add_batch_parser(sub)
    from .evaluation.load import add_load_test_parser

    add_load_test_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    context = getattr(args, "context", None)
    if isinstance(context, int) and context <= 0:
        print("offline-compress: error: --context must be a positive number of tokens", file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except (OfflineCompressError, ValueError) as err:
        print(f"offline-compress: error: {one_line(str(err))}", file=sys.stderr)
        return 2
    except RecursionError:  # only input can nest this deep; the readers turn what they meet into InputErrors
        print("offline-compress: error: the input is nested too deeply to process", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
