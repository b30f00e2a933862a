"""Secrets never reach a summary: find them and replace them by ``[REDACTED:<kind>]``.

Two detectors, merged: our own patterns (``secret_patterns``: key shapes, command-line credentials, literal
assignments) and detect-secrets' plugins (``secret_scan``: vendor keys, keyword assignments, high-entropy
strings under limits). Overlapping finds merge into one redaction, so a secret two detectors see differently
is redacted whole. ``docs/secrets.md`` lists what is found and the false positives measured on real histories.

Redact the full text before anything cuts it: a secret cut at a boundary no longer has its shape.
``redact_message`` does that for a whole message (content, text parts, tool call arguments), and
``summary.redaction.redact_summary`` makes the last pass over a finished summary.
"""

from __future__ import annotations

import json
from typing import Any

from ..history.messages import FunctionCall, Message, ToolCall
from .detectors import find_detector_secrets
from .line_view import ScanText, Span
from .patterns import find_pattern_secrets

_MIN_SECRET_CHARS = 4  # the shortest value any detector redacts
# Kinds that say only where a secret stood (an assignment, a high-entropy string); a find of the same span
# that names the vendor ("openai_key" for OPENAI_API_KEY=sk-...) names it better.
GENERIC_KINDS = frozenset({"password", "secret", "token", "api_key", "high_entropy_string", "high_entropy_hex"})


def find_secrets(text: str) -> list[tuple[str, Span]]:
    """(kind, (start, end)) of every secret in ``text``, in order, without overlaps: finds that overlap are
    merged into one span, named after the one that starts first (the longest, then the most specific kind,
    then ours, on a tie)."""
    if len(text) < _MIN_SECRET_CHARS:
        return []
    scan = ScanText(text)
    found = sorted(
        (a, a - b, kind in GENERIC_KINDS, theirs, kind)
        for theirs, finds in enumerate((find_pattern_secrets(scan), find_detector_secrets(scan)))
        for kind, (a, b) in finds
        if b > a
    )
    out: list[tuple[str, Span]] = []
    for a, neg_len, _, _, kind in found:
        if out and a < out[-1][1][1]:
            last_kind, (la, lb) = out[-1]
            out[-1] = (last_kind, (la, max(lb, a - neg_len)))
        else:
            out.append((kind, (a, a - neg_len)))
    return out


def redact(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]``."""
    parts: list[str] = []
    pos = 0
    for kind, (a, b) in find_secrets(text):
        parts += (text[pos:a], f"[REDACTED:{kind}]")
        pos = b
    return "".join(parts) + text[pos:] if parts else text


def redact_json(value: Any) -> Any:
    """A copy of JSON-like data (dicts, lists, scalars) with every string redacted; keys stay as they are."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_json(v) for v in value]
    if isinstance(value, dict):
        return {k: redact_json(v) for k, v in value.items()}
    return value


def redact_arguments(arguments: str) -> str:
    """A tool call's arguments with secrets redacted. The JSON text is redacted as text (the bytes stay as they
    were elsewhere); should that break the JSON (a span ending inside an escape), each string value of the
    parsed arguments is redacted instead."""
    out = redact(arguments)
    if out == arguments or not _is_json(arguments) or _is_json(out):  # unchanged, text to begin with, or still JSON
        return out
    return json.dumps(redact_json(json.loads(arguments)), ensure_ascii=False)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def redact_message(message: Message) -> Message:
    """``message`` with secrets redacted from its content (text and text parts), its tool calls' arguments and
    names; the same object when there is nothing to redact."""
    message = message.with_text(redact)
    calls = tuple(
        ToolCall(
            id=c.id,
            type=c.type,
            function=FunctionCall(name=redact(c.function.name), arguments=redact_arguments(c.function.arguments)),
        )
        for c in message.tool_calls or ()
    )
    return message if calls == (message.tool_calls or ()) else message.model_copy(update={"tool_calls": calls})


def redact_messages(messages: list[Message]) -> list[Message]:
    """Every message through ``redact_message``: run it on a history before anything extracts from it, cuts
    it or shows it to the model."""
    return [redact_message(m) for m in messages]
