"""OpenAI chat histories: a JSON list of messages, JSONL (one message per line), or a JSON object with a
``messages`` list (which is how mini-swe-agent ``.traj.json`` files load as they are)."""

from __future__ import annotations

import json
import sys
from typing import Any

from ..errors import InputError
from ..history.messages import Message, parse_message, parse_messages


def decode_text(data: bytes, source: str) -> str:
    """UTF-8 (a BOM is tolerated); anything else is an error with the byte offset."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text ({err.reason})", source=source, position=f"byte {err.start}") from None


TOO_DEEP = "JSON nested too deeply for Python's parser"


def _long_int(digits: str) -> int | str:
    limit = sys.get_int_max_str_digits()
    return int(digits) if not limit or len(digits.lstrip("-")) <= limit else digits


def json_loads(text: str) -> Any:
    """``json.loads``, except that an integer longer than Python converts from decimal (4300 digits) is read as its
    digits (a string) instead of failing with a ValueError that is not a JSONDecodeError."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError:  # "Exceeds the limit (4300 digits) for integer string conversion"
        return json.loads(text, parse_int=_long_int)


def read_json_line(line: str) -> tuple[Any, str]:
    """One line of a JSON Lines file that skips damaged lines: ``(value, "")``, or ``(None, why it was skipped)``."""
    try:
        return json_loads(line), ""
    except json.JSONDecodeError as err:
        return None, f"not JSON ({err.msg})"
    except RecursionError:
        return None, "JSON nested too deeply"


def parse_json(text: str, source: str) -> Any:
    try:
        return json_loads(text)
    except json.JSONDecodeError as err:
        raise InputError(
            f"malformed JSON: {err.msg}", source=source, position=f"line {err.lineno} column {err.colno}"
        ) from None
    except RecursionError:
        raise InputError(TOO_DEEP, source=source) from None


def parse_jsonl(text: str, source: str) -> list[Message]:
    messages: list[Message] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json_loads(line)
        except json.JSONDecodeError as err:
            raise InputError(
                f"malformed JSON line: {err.msg}", source=source, position=f"line {lineno} column {err.colno}"
            ) from None
        except RecursionError:
            raise InputError(TOO_DEEP, source=source, position=f"line {lineno}") from None
        messages.append(parse_message(raw, index=len(messages), source=source))
    if not messages:
        raise InputError("the history is empty", source=source)
    return messages


def looks_like_jsonl(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    return len(lines) > 1 and all(line.lstrip().startswith("{") and line.rstrip().endswith("}") for line in lines[:3])


def load_openai(text: str, source: str) -> list[Message]:
    """Parse OpenAI-format text (JSON list, object with ``messages``, or JSONL)."""
    stripped = text.lstrip()
    if not stripped:
        raise InputError("the file is empty", source=source)
    if stripped.startswith("{") and looks_like_jsonl(text):
        return parse_jsonl(text, source)
    return parse_messages(parse_json(text, source), source=source)
