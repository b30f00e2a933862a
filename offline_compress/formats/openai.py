"""OpenAI chat histories: a JSON list of messages, JSONL (one message per line), or a JSON object with a
``messages`` list (which is how mini-swe-agent ``.traj.json`` files load as they are)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping
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


def readable_lines(text: str, skipped: list[str], probe: int, found: Callable[[], Any]) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each JSON line of a JSON Lines file that skips damaged lines (``"line N: why"`` in
    ``skipped``); it stops after ``probe`` lines while ``found()`` is false (not this format: fail fast in ``auto``).
    split("\n"), not splitlines(): JSON strings may hold U+2028 and other line separators as they are."""
    for lineno, line in enumerate(text.split("\n"), start=1):
        if lineno == probe + 1 and not found():  # found() only turns true: asked once, after the probe
            break
        try:
            if line.strip():
                yield lineno, json_loads(line)
        except json.JSONDecodeError as err:
            skipped.append(f"line {lineno}: not JSON ({err.msg})")
        except RecursionError:
            skipped.append(f"line {lineno}: JSON nested too deeply")


def in_line_order(skipped: list[str]) -> tuple[str, ...]:
    """``"line N: why"`` entries sorted by N."""
    return tuple(sorted(skipped, key=lambda why: int(why.split(":", 1)[0].removeprefix("line "))))


def expect(value: Any, types: type | tuple[type, ...], expected: str, name: str, source: str, **where: Any) -> Any:
    """``value`` when it is a ``types``, else an ``InputError`` "'name' is a T, expected EXPECTED" (``where``: the
    InputError's index, field, position)."""
    if not isinstance(value, types):
        raise InputError(f"'{name}' is a {type(value).__name__}, expected {expected}", source=source, **where)
    return value


def object_list(data: Any, key: str, source: str, *, kind: str = "", items: str = "") -> list[Any]:
    """``data[key]``, a list (a non-empty one when ``items`` names its items), of the JSON object ``data``; else an
    InputError ending in ``kind`` (": not a X") when the key is missing."""
    if not isinstance(data, Mapping):
        raise InputError(f"expected a JSON object with a '{key}' list, got {type(data).__name__}", source=source)
    if key not in data:
        keys = ", ".join(sorted(map(str, data))[:8]) or "none"
        raise InputError(f"no '{key}' list (keys: {keys}){kind}", source=source, field=key)
    if items and data[key] == []:
        raise InputError(f"'{key}' is an empty list, expected a list{items}", source=source, field=key)
    return expect(data[key], list, f"a list{items}", key, source, field=key)


def parse_json(text: str, source: str) -> Any:
    if not text.strip():
        raise InputError("the file is empty", source=source)
    try:
        return json_loads(text)
    except json.JSONDecodeError as err:
        raise InputError(
            f"malformed JSON: {err.msg}", source=source, position=f"line {err.lineno} column {err.colno}"
        ) from None
    except RecursionError:
        raise InputError(TOO_DEEP, source=source) from None


def json_lines(text: str, source: str) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line of a JSON Lines text; a line that is not JSON is an error."""
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield lineno, json_loads(line)
        except json.JSONDecodeError as err:
            raise InputError(
                f"malformed JSON line: {err.msg}", source=source, position=f"line {lineno} column {err.colno}"
            ) from None
        except RecursionError:
            raise InputError(TOO_DEEP, source=source, position=f"line {lineno}") from None


def parse_jsonl(text: str, source: str) -> list[Message]:
    messages = [parse_message(raw, index=i, source=source) for i, (_, raw) in enumerate(json_lines(text, source))]
    if not messages:
        raise InputError("the history is empty", source=source)
    return messages


def looks_like_jsonl(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    return len(lines) > 1 and all(line.lstrip().startswith("{") and line.rstrip().endswith("}") for line in lines[:3])


def load_openai(text: str, source: str) -> list[Message]:
    """Parse OpenAI-format text (JSON list, object with ``messages``, or JSONL)."""
    if looks_like_jsonl(text):
        return parse_jsonl(text, source)
    return parse_messages(parse_json(text, source), source=source)
