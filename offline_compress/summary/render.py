"""How a summary is written into the history: the canonical JSON line, or a compact Markdown rendering of the
same fields that can be read back exactly (``to_markdown`` / ``from_markdown``, pure).

The Markdown needs no escaping, so every string reaches the agent verbatim (a backslash or a ``|`` in a command
is shown as it was run). It stays unambiguous because every line of a value is indented or prefixed:

    # Summary of the earlier messages          title line (how a reader knows the body is Markdown)
    ## User constraints                        a section per non-empty field, in the schema's order
    - first line of a constraint               a string item; its further lines are indented by 2 spaces
      second line of it
    ## Decisions
    - the decision                             an object item: its first field unlabelled or "label: value",
      because: the rationale                   the other fields "  label: value", further lines of any
                                               value indented by 4 spaces
    ## Tool calls
    - sed django/forms/models.py → success     "tool target → outcome" when the tool has no space and the
                                               target no line break, else the labelled form
    ## Recent narrative
    > each line of the narrative
    ## Work log                                steps, oldest first: said, code (one line each), "ran" (a success)
                                               or "ran (outcome)", "ran (outcome, N times)" for a call repeated
                                               N times in a row,
                                               saw (one line each)

A line that starts a section (``## ``) or the closing marker can never be part of a value, since value lines
always start with ``- ``, ``> `` or spaces. Sections and values that are empty are left out and read back as
the schema's defaults. A client that strips trailing whitespace is tolerated (``-`` reads as ``- `` and an empty
line as an empty line of the current value).
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from .schema import CompressedContext

Render = Literal["json", "markdown"]
RENDERS: tuple[str, ...] = ("json", "markdown")
MARKDOWN_TITLE = "# Summary of the earlier messages"
MARKDOWN_END = "[/CONTEXT_SUMMARY]"  # closes the Markdown body; a note for the agent may follow


class MarkdownSummaryError(ValueError):
    """A Markdown body that is not one of ours; the message names the line and what was expected there."""


@dataclass(frozen=True)
class _Field:
    key: str
    label: str | None  # None: the item's first field, shown without a label
    many: bool = False  # a list of strings: one labelled line per element
    optional: bool = False  # left out when empty (reads back as the schema's default)
    with_outcome: bool = False  # the item's outcome rides on this field's label: "ran (error): ..."
    lines: bool = False  # a list of one-line strings, written as one value of several lines (one label)


@dataclass(frozen=True)
class _Section:
    title: str
    path: tuple[str, ...]  # where the value sits in the document (task_state lists are nested)
    kind: Literal["strings", "objects", "tool_calls", "text"]
    fields: tuple[_Field, ...] = ()


_STEP = (
    _Field("said", "said", optional=True),
    _Field("code", "code", many=True, optional=True),
    _Field("ran", "ran", with_outcome=True),
    _Field("saw", "saw", many=True, optional=True),
)
_TOOL = (_Field("tool", "tool"), _Field("target", "target"), _Field("outcome", "outcome"))
SECTIONS: tuple[_Section, ...] = (
    _Section("User constraints", ("user_constraints",), "strings"),
    _Section("Decisions", ("decisions",), "objects", (_Field("decision", None), _Field("rationale", "because"))),
    _Section(
        "Failed attempts",
        ("failed_attempts",),
        "objects",
        (
            _Field("approach", None),
            _Field("reason_failed", "failed"),
            _Field("then", "then", optional=True),
            _Field("resolved_by", "resolved by", optional=True),
        ),
    ),
    _Section("Tool calls", ("tool_calls_summary",), "tool_calls", _TOOL),
    _Section("Recent narrative", ("recent_narrative",), "text"),
    _Section("Completed", ("task_state", "completed"), "strings"),
    _Section("Remaining", ("task_state", "remaining"), "strings"),
    _Section("Blockers", ("task_state", "blockers"), "strings"),
    _Section("Findings", ("findings",), "strings"),
    _Section(
        "Files",
        ("files",),
        "objects",
        (
            _Field("path", None),
            _Field("change", "change"),
            _Field("now", "now", many=True, optional=True, lines=True),
            _Field("edits", "edits", optional=True),
        ),
    ),
    _Section("Work log", ("work_log",), "objects", _STEP),
)
_BY_TITLE = {f"## {s.title}": s for s in SECTIONS}
_OUTCOMES = ("success", "error", "partial")
_REPEATED = re.compile(r"(\w+) \((success|error|partial), ([1-9]\d*) times\)")
_COMPACT_TOOL = re.compile(r"(\S+) (.*) → (success|error|partial)", re.S)


# ------------------------------------------------------------------------------------------------- writing


def _value(first: str, value: str, indent: str) -> list[str]:
    """``first`` + the value's first line, then its other lines indented."""
    head, *rest = value.split("\n")
    return [first + head, *(indent + line for line in rest)]


def _item(fields: tuple[_Field, ...], data: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for field in fields:
        values = data.get(field.key, []) if field.many else [data.get(field.key, "")]  # empty keys are left out
        if field.optional and values == ([] if field.many else [""]):
            continue
        values = [str(v) for v in values]  # a count (a file's edits) reads back as the number it was
        if field.lines:
            values = ["\n".join(values)]
        for value in values:
            bullet = "  " if lines else "- "
            label = "" if field.label is None else field.label
            if field.with_outcome:
                # as in the JSON, a success run once says nothing more: "ran: ...", "ran (error): ..."
                times, outcome = data.get("times", 1), data.get("outcome", "success")
                label += (
                    f" ({outcome}, {times} times)" if times != 1 else "" if outcome == "success" else f" ({outcome})"
                )
            lines += _value(bullet + (label and label + ": "), value, "    ")
    return lines


def _tool_call(call: dict[str, Any]) -> list[str]:
    tool, target, outcome = call["tool"], call["target"], call["outcome"]
    if tool and not any(c.isspace() for c in tool) and "\n" not in target:
        return [f"- {tool} {target} → {outcome}"]
    return _item(_TOOL, call)


def to_markdown(context: CompressedContext) -> str:
    """The summary as compact Markdown (title line first, no closing marker); ``from_markdown`` reads it back."""
    document = context.model_dump(mode="json")
    lines = [MARKDOWN_TITLE]
    for section in SECTIONS:
        value: Any = functools.reduce(operator.getitem, section.path, document)
        if not value:
            continue
        lines.append(f"## {section.title}")
        if section.kind == "text":
            lines += ["> " + line for line in value.split("\n")]
        elif section.kind == "strings":
            lines += [line for item in value for line in _value("- ", item, "  ")]
        elif section.kind == "tool_calls":
            lines += [line for call in value for line in _tool_call(call)]
        else:
            lines += [line for item in value for line in _item(section.fields, item)]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------- reading


def _items(lines: list[tuple[int, str]]) -> Iterator[list[tuple[int, str]]]:
    """The lines of a list section, grouped per item (an item starts with ``- ``)."""
    item: list[tuple[int, str]] = []
    for number, line in lines:
        if line.startswith("- ") or line == "-":
            if item:
                yield item
            item = [(number, line)]
        elif not item:
            raise MarkdownSummaryError(f"line {number}: expected an item starting with '- ', got {line[:40]!r}")
        else:
            item.append((number, line))
    if item:
        yield item


def _continuation(number: int, line: str, indent: str) -> str:
    if line.startswith(indent):
        return line[len(indent) :]
    if not line.strip():  # trailing whitespace stripped by a client
        return ""
    raise MarkdownSummaryError(f"line {number}: expected a line indented by {len(indent)} spaces, got {line[:40]!r}")


def _string_item(item: list[tuple[int, str]]) -> str:
    first = item[0][1][2:]
    return "\n".join([first, *(_continuation(n, line, "  ") for n, line in item[1:])])


def _object_item(section: _Section, item: list[tuple[int, str]]) -> dict[str, Any]:
    labels: dict[str, tuple[_Field, str | None]] = {}
    for f in section.fields:
        if f.with_outcome:
            labels.update({f"{f.label} ({o})": (f, o) for o in _OUTCOMES} | {f"{f.label}": (f, "success")})
        elif f.label is not None:
            labels[f.label] = (f, None)
    with_outcome = next((f for f in section.fields if f.with_outcome), None)
    data: dict[str, Any] = {f.key: [] for f in section.fields if f.many}
    current: _Field | None = None
    parts: list[str] = []

    def close() -> None:
        if current is None:
            return
        text = "\n".join(parts)
        if current.lines:
            data[current.key] += text.split("\n")
        elif current.many:
            data[current.key].append(text)
        elif current.key in data:
            raise MarkdownSummaryError(f"{section.title}: field {current.label!r} given twice in one item")
        else:
            data[current.key] = text

    for position, (number, line) in enumerate(item):
        body = line[2:] if position == 0 or (line.startswith("  ") and not line.startswith("    ")) else None
        if body is not None:
            outcome = None
            if position == 0 and section.fields[0].label is None:
                field: _Field | None = section.fields[0]  # the unlabelled first field, whatever its text
                rest = body
            else:
                label, sep, rest = body.partition(": ")
                if not sep and body.endswith(":"):  # "label: " with the trailing space stripped: an empty value
                    label, sep, rest = body[:-1], ":", ""
                field, outcome = labels.get(label, (None, None)) if sep else (None, None)
                repeated = _REPEATED.fullmatch(label) if sep and field is None and with_outcome else None
                if repeated is not None and with_outcome is not None and repeated[1] == with_outcome.label:
                    # "ran (success, 49 times)"
                    field, outcome = with_outcome, repeated[2]
                    data["times"] = int(repeated[3])
            if field is None:
                raise MarkdownSummaryError(
                    f"line {number}: expected one of {', '.join(labels)} in {section.title}, got {line[:40]!r}"
                )
            close()
            current, parts = field, [rest]
            if outcome is not None:
                data["outcome"] = outcome
        else:
            parts.append(_continuation(number, line, "    "))
    close()
    return data


def _tool_item(section: _Section, item: list[tuple[int, str]]) -> dict[str, Any]:
    if len(item) == 1:  # the labelled form always has three lines
        match = _COMPACT_TOOL.fullmatch(item[0][1][2:])
        if match is None:
            raise MarkdownSummaryError(f"line {item[0][0]}: expected 'tool target → outcome', got {item[0][1][:40]!r}")
        return {"tool": match[1], "target": match[2], "outcome": match[3]}
    return _object_item(section, item)


def from_markdown(text: str) -> CompressedContext:
    """The summary a ``to_markdown`` text holds (the text from the title line up to, not including, any closing
    marker). Raises ``MarkdownSummaryError`` naming the line when the text is not one of ours."""
    lines = list(enumerate(text.split("\n"), 1))
    if not lines or lines[0][1] != MARKDOWN_TITLE:
        raise MarkdownSummaryError(f"line 1: expected {MARKDOWN_TITLE!r}")
    sections: list[tuple[_Section, list[tuple[int, str]]]] = []
    for number, line in lines[1:]:
        if line.startswith("## "):
            section = _BY_TITLE.get(line)
            if section is None or any(s is section for s, _ in sections):
                raise MarkdownSummaryError(f"line {number}: unknown or repeated section {line!r}")
            sections.append((section, []))
        elif not sections:
            raise MarkdownSummaryError(f"line {number}: expected a '## ' section, got {line[:40]!r}")
        else:
            sections[-1][1].append((number, line))
    document: dict[str, Any] = {}
    for section, body in sections:
        if section.kind == "text":
            value: Any = "\n".join(line[2:] if line.startswith("> ") else _quote_stripped(n, line) for n, line in body)
        elif section.kind == "strings":
            value = [_string_item(item) for item in _items(body)]
        elif section.kind == "tool_calls":
            value = [_tool_item(section, item) for item in _items(body)]
        else:
            value = [_object_item(section, item) for item in _items(body)]
        target = document
        for key in section.path[:-1]:
            target = target.setdefault(key, {})
        target[section.path[-1]] = value
    try:
        return CompressedContext.model_validate(document)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise MarkdownSummaryError(f"{where}: {first['msg']}") from None


def _quote_stripped(number: int, line: str) -> str:
    if line.rstrip() == ">":
        return ""
    raise MarkdownSummaryError(f"line {number}: expected a '> ' line in Recent narrative, got {line[:40]!r}")


def render_body(context: CompressedContext, render: Render = "json") -> str:
    """What follows the summary marker: the canonical JSON on one line, or the Markdown and its closing marker."""
    if render == "json":
        return context.to_json()
    if render == "markdown":
        return to_markdown(context) + "\n" + MARKDOWN_END
    raise ValueError(f"render must be one of {', '.join(RENDERS)}, got {render!r}")


def parse_body(body: str) -> CompressedContext | None:
    """The summary in the text after the marker (either rendering; any note after it ignored), else None."""
    if body.startswith(MARKDOWN_TITLE + "\n") or body == MARKDOWN_TITLE:
        end = body.find("\n" + MARKDOWN_END)
        markdown = body if end < 0 else body[:end]
        if end >= 0 and body[end + 1 + len(MARKDOWN_END) :][:1] not in ("", "\n"):
            return None
        try:
            return from_markdown(markdown)
        except MarkdownSummaryError:
            return None
    document = body.split("\n", 1)[0]  # canonical JSON has no raw newline
    try:
        return CompressedContext.model_validate_json(document)
    except ValidationError:
        return None


__all__ = [
    "MARKDOWN_END",
    "MARKDOWN_TITLE",
    "MarkdownSummaryError",
    "RENDERS",
    "Render",
    "from_markdown",
    "parse_body",
    "render_body",
    "to_markdown",
]
