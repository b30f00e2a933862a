"""The seed design, as an A/B baseline: the whole prefix JSON-dumped into one prompt to the same local model,
which writes the seed's six-field schema (without this project's bounds) under Outlines' grammar, greedy,
2,048 output tokens at most. A prompt that does not fit the model's context, or output that is not a valid
document (cut off at the token limit), is a failure, counted as such.

It is slow (minutes per long prefix on a CPU), so results are cached in a JSON file keyed by the sha256 of the
prompt, the model file and the settings; a cached result is reused, never recomputed.
"""

from __future__ import annotations

import copy
import hashlib
import json
import time
from pathlib import Path
from typing import Any

from offline_compress.history.messages import Message
from offline_compress.summary.schema import CompressedContext, compressed_context_json_schema

SEED_MAX_TOKENS = 2048
SEED_N_CTX = 32768  # Gemma 3 270M's trained context
SEED_PROMPT = (
    "You compress the conversation history of an AI coding agent. Write a JSON object with the fields "
    "user_constraints (the user's instructions, word for word), decisions (decision and rationale), "
    "failed_attempts (approach and reason_failed), tool_calls_summary (tool, target, outcome: success, error or "
    "partial), recent_narrative (the last turns) and task_state (completed, remaining, blockers).\n\n"
    "Conversation history (JSON):\n"
)
SEED_CLOSE = "\n\nJSON summary:\n"


def seed_schema() -> dict[str, Any]:
    """The six fields of the seed's schema, without the bounds this project added (the seed had none)."""
    schema = copy.deepcopy(compressed_context_json_schema())

    def strip(node: Any) -> None:
        if isinstance(node, dict):
            for key in ("maxLength", "maxItems"):
                node.pop(key, None)
            for value in node.values():
                strip(value)
        elif isinstance(node, list):
            for value in node:
                strip(value)

    strip(schema)
    return schema


def seed_prompt(prefix: list[Message]) -> str:
    return SEED_PROMPT + json.dumps([m.to_openai() for m in prefix], ensure_ascii=False) + SEED_CLOSE


class SeedCache:
    """``{key: result}`` in one JSON file, written atomically after each new result."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path else None
        self.data: dict[str, Any] = {}
        if self.path and self.path.exists():
            self.data = json.loads(self.path.read_text(encoding="utf-8"))

    def get(self, key: str) -> dict[str, Any] | None:
        return self.data.get(key)

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.data[key] = value
        if self.path:
            from offline_compress.files import write_atomic

            write_atomic(self.path, json.dumps(self.data, ensure_ascii=False, indent=0, sort_keys=True) + "\n")


class SeedCompressor:
    """Runs the seed design on a prefix (model loaded on first use)."""

    def __init__(
        self,
        model_path: str | Path,
        cache: SeedCache,
        *,
        n_ctx: int = SEED_N_CTX,
        max_tokens: int = SEED_MAX_TOKENS,
        n_threads: int | None = None,
    ) -> None:
        self.model_path = Path(model_path)
        self.cache = cache
        self.n_ctx = n_ctx
        self.max_tokens = max_tokens
        self.n_threads = n_threads
        self._backend: Any = None
        self.schema = seed_schema()
        self.model_id = f"{self.model_path.name}:{self.model_path.stat().st_size}"

    def key(self, prompt: str) -> str:
        settings = f"{self.model_id}|{self.n_ctx}|{self.max_tokens}|{json.dumps(self.schema, sort_keys=True)}"
        return hashlib.sha256((settings + "\n" + prompt).encode("utf-8")).hexdigest()

    def cached(self, prefix: list[Message]) -> dict[str, Any] | None:
        return self.cache.get(self.key(seed_prompt(prefix)))

    def compress(self, prefix: list[Message]) -> dict[str, Any]:
        """``{"ok", "error", "summary" (JSON text or None), "seconds", "prompt_tokens", "cached"}``."""
        prompt = seed_prompt(prefix)
        key = self.key(prompt)
        hit = self.cache.get(key)
        if hit is not None:
            return hit | {"cached": True}
        backend = self._load()
        tokens = backend.count(prompt) + 1
        result: dict[str, Any] = {"ok": False, "error": None, "summary": None, "seconds": 0.0, "prompt_tokens": tokens}
        if tokens + self.max_tokens > self.n_ctx:
            result["error"] = f"prompt of {tokens} tokens + {self.max_tokens} output tokens exceeds n_ctx={self.n_ctx}"
        else:
            start = time.perf_counter()
            generation = backend.generate("", prompt, self.schema, self.max_tokens)
            result["seconds"] = time.perf_counter() - start
            result["generated_tokens"] = generation.generated_tokens
            try:
                doc = json.loads(generation.text)
                result["summary"] = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
                result["ok"] = True
            except ValueError as err:
                result["error"] = f"invalid JSON after {generation.generated_tokens} tokens ({err.msg})"
        self.cache.put(key, result)
        return result | {"cached": False}

    def _load(self) -> Any:
        if self._backend is None:
            from offline_compress.engine.llamacpp import LlamaCppBackend

            self._backend = LlamaCppBackend(self.model_path, n_ctx=self.n_ctx, n_threads=self.n_threads)
        return self._backend


def seed_context_message(summary_json: str) -> dict[str, str]:
    """The seed replaced the history by its summary as one system message (plus the recent messages)."""
    return {"role": "system", "content": "[CONTEXT_SUMMARY]\n" + summary_json}


__all__ = [
    "SEED_MAX_TOKENS",
    "SeedCache",
    "SeedCompressor",
    "seed_context_message",
    "seed_prompt",
    "seed_schema",
    "CompressedContext",
]
