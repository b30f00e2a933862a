"""Reading the archive back: the ``recall`` tool an agent can call, and the ``recall`` / ``show`` / ``restore`` /
``archive export|import`` commands. Every snippet shown is redacted (``Archive.recall``); the raw text stays in
the database file."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .store import Archive, ArchiveError, RecallHit

RECALL_TOOL_NAME = "recall"
RECALL_NOTE = (
    f"Older messages were archived: call the `{RECALL_TOOL_NAME}` tool with words from a detail "
    "(a path, a name, an error) to get their text back."
)
MAX_K = 20


def tool_definition() -> dict[str, Any]:
    """The OpenAI tool definition of ``recall``."""
    return {
        "type": "function",
        "function": {
            "name": RECALL_TOOL_NAME,
            "description": (
                "Search the messages that were replaced by the context summary (earlier tool output, commands, "
                "file contents, your own earlier messages) and return the best-matching excerpts. Use it when "
                "you need an exact detail the summary does not hold."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "words to look for: a file path, a function name, an error message",
                    },
                    "k": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_K,
                        "description": "how many excerpts to return (default 5)",
                    },
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    }


def format_hits(hits: Sequence[RecallHit], query: str) -> str:
    """The hits as the agent (or a person) reads them: one block per message, best first."""
    if not hits:
        return f"No archived message matches {query!r}."
    return "\n\n".join(f"[compaction {h.compaction}, message {h.index}, {h.role}]\n{h.snippet}" for h in hits)


Handler = Callable[[str | Mapping[str, Any]], str]


def recall_handler(archive: Archive, session: str | None = None, default_k: int = 5) -> Handler:
    """``handler(arguments)``: the tool's answer as text, for the arguments the model sent (a JSON string or a
    dict). Bad arguments come back as a one-line error text for the model, never an exception."""

    def handler(arguments: str | Mapping[str, Any]) -> str:
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else dict(arguments)
        except (json.JSONDecodeError, TypeError, ValueError) as err:
            return f"recall error: the arguments are not a JSON object ({err})"
        if not isinstance(args, dict):
            return "recall error: the arguments are not a JSON object"
        query, k = args.get("query"), args.get("k", default_k)
        if not isinstance(query, str) or not query.strip():
            return "recall error: 'query' must be a non-empty string"
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            return f"recall error: 'k' must be an integer from 1 to {MAX_K}"
        try:
            return format_hits(archive.recall(query, k=k, session=session), query)
        except ArchiveError as err:
            return f"recall error: {err}"

    return handler


def recall_tool(archive: Archive, session: str | None = None) -> tuple[dict[str, Any], Handler]:
    """(OpenAI tool definition, handler) searching ``archive`` (only ``session`` when given)."""
    return tool_definition(), recall_handler(archive, session)
