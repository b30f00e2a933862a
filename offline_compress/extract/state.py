"""The working state of a compacted region, read from its messages and tool events by their place in the run, never by
the phrases of one language:

files
    each file the region changed, with its net change: created, modified or deleted, and the lines its edits added
    that no later edit removed (the final form of the changed lines, not the sequence of edits); a change made by a
    command whose text we cannot see (``sed -i``, a script) shows the command.
failures
    each failed call with its error line, what the agent said next (its conclusion, in its own words) and the later
    call of the same check that succeeded, if one did (then the failure is resolved).
decisions
    the agent's own words before each edit it made: its first sentence as the decision, the next ones as the reason.
open items
    the items of the list in the agent's latest words to the user (a text with no call among its last three): a
    line ``label: a, b`` or a bulleted list.
last words
    the agent's last two texts before the cut.

Pure and deterministic; every text verbatim from the messages (redaction and clipping are the caller's)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from ..history.conventions import bash_blocks
from ..history.messages import Message
from ..history.tools import WHOLE_FILE_WRITERS
from .calls import ADDED_LINE, REMOVED_LINE
from .events import Frozen, ToolEvent, failed
from .prose import prose, prose_sentences

MAX_FILE_LINES = 12  # net added lines shown per file (the latest)
MAX_WORD_CHARS = 300  # a decision, a reason, what the agent said after a failure
LAST_WORDS = 2  # the agent's last texts kept as its last words
LAST_WORDS_CHARS = 700

_BULLET = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+(\S.*)$")
_LABELLED_LIST = re.compile(r"^[^:：\n]{1,40}[:：]\s*(\S[^\n]*[,、，;；][^\n]*)$")
_LIST_SEPARATOR = re.compile(r"\s*[,、，;；]\s*")
_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")  # cat > f <<'EOF' / cat <<EOF > f: the body is the file
_REDIRECT = re.compile(r">{1,2}\s*['\"]?([\w./-]+)")


class FileState(Frozen):
    path: str
    change: str  # created / modified / deleted
    now: tuple[str, ...] = ()  # net added lines, or the command that changed it
    edits: int = 1


class Failure(Frozen):
    call_index: int
    error: str
    then: str = ""  # what the agent said next
    resolved_by: str = ""  # the later call of the same check that succeeded
    passed: bool = False  # a later run of the same check got past this error: not a blocker
    probe: bool = False  # a read-only call (a search that found nothing): never a blocker


class Decision(Frozen):
    decision: str
    rationale: str
    message_index: int


class WorkingState(Frozen):
    files: tuple[FileState, ...] = ()
    failures: tuple[Failure, ...] = ()
    decisions: tuple[Decision, ...] = ()
    open_items: tuple[str, ...] = ()
    last_words: tuple[str, ...] = ()


def sentences(text: str) -> list[str]:
    """The sentences of a message's own words, in any script (``prose``)."""
    return prose_sentences(prose(text))


def _upto(parts: Sequence[str], limit: int) -> str:
    """The leading ``parts`` joined while they fit in ``limit`` characters (the first one cut if it alone does not)."""
    out = ""
    for p in parts:
        joined = f"{out} {p}".strip()
        if len(joined) > limit:
            return out or p[: limit - 1] + "…"
        out = joined
    return out


def _words_before(messages: Sequence[Message], i: int, floor: int) -> tuple[int, str]:
    """(where, what) the agent said with the call in message ``i``, else in its latest text after ``floor``."""
    for j in range(i, floor - 1, -1):
        m = messages[j]
        if m.role == "assistant" and prose(m.text):
            return j, m.text
        if j < i and (m.tool_calls or m.role != "assistant" and m.role != "user"):
            break  # an earlier call's words are that call's
    return i, ""


def _words_after(messages: Sequence[Message], k: int) -> str:
    """The agent's first text after message ``k`` (its reaction to a result)."""
    said = next((m.text for m in messages[k + 1 :] if m.role == "assistant" and prose(m.text)), "")
    return _upto(sentences(said), MAX_WORD_CHARS)


def _same_check(a: ToolEvent, b: ToolEvent) -> bool:
    return " ".join(a.command.split()) == " ".join(b.command.split()) or (
        bool(a.target) and a.tool == b.tool and a.target == b.target
    )


def _edit_lines(event: ToolEvent) -> tuple[list[str], list[str]]:
    """(added, removed) lines of an edit or a write, as its call shows them (``- old`` / ``+ new``)."""
    lines = (event.shown or "").split("\n")[1:]
    added = [ln[1:].strip() for ln in lines if ADDED_LINE.match(ln) and ln[1:].strip()]
    removed = [ln[1:].strip() for ln in lines if REMOVED_LINE.match(ln) and ln[1:].strip()]
    return added, removed


def _shell_change(command: str, path: str) -> tuple[str, list[str]]:
    """(change, lines) of a shell command that changed ``path``: a heredoc's body, a deletion, else the command."""
    first, _, body = command.partition("\n")
    here, into = _HEREDOC.search(first), _REDIRECT.search(first)
    if here and into and (into.group(1).endswith(path) or path.endswith(into.group(1))):
        end = re.search(rf"^\s*{re.escape(here.group(1))}\s*$", body, re.M)
        return "written", [ln.strip() for ln in body[: end.start() if end else len(body)].splitlines() if ln.strip()]
    try:
        words = shlex.split(first)
    except ValueError:
        words = command.split()
    if words and words[0] in ("rm", "git") and (words[0] == "rm" or words[1:2] == ["rm"]):
        return "deleted", []
    return "modified", [first.strip()]


def _files(events: Sequence[ToolEvent]) -> list[FileState]:
    seen_before = {p for e in events for p in e.files_read}
    state: dict[str, FileState] = {}
    for e in events:
        for path in e.files_changed:
            old = state.get(path)
            now = list(old.now) if old else []
            if e.shell:
                change, lines = _shell_change(e.command, path)
                now = lines if change != "modified" else [*now, *lines]
            else:
                added, removed = _edit_lines(e) if len(e.files_changed) == 1 else ([], [])
                gone = set(removed)
                now = [ln for ln in now if ln not in gone] + added
                change = "written" if not removed and e.tool.lower() in WHOLE_FILE_WRITERS else "modified"
            if change == "written":
                change = "modified" if old or path in seen_before else "created"
            elif old is not None and old.change == "created" and change != "deleted":
                change = "created"
            state[path] = FileState(
                path=path, change=change, now=tuple(now[-MAX_FILE_LINES:]), edits=(old.edits + 1 if old else 1)
            )
    return list(state.values())


def _open_items(text: str) -> list[str]:
    """The items of the last list in ``text``: bullet lines, or a ``label: a, b`` line's items."""
    lines = prose(text).splitlines()
    bullets: list[str] = []
    for line in reversed(lines):
        b = _BULLET.match(line)
        if b:
            bullets.insert(0, b.group(1).strip())
        elif bullets and line.strip():
            break
        labelled = _LABELLED_LIST.match(line.strip())
        if labelled and not bullets:
            return [x.strip(" 。.") for x in _LIST_SEPARATOR.split(labelled.group(1)) if x.strip(" 。.")]
    return bullets


def working_state(messages: Sequence[Message], events: Sequence[ToolEvent], start: int) -> WorkingState:
    """The working state of ``messages[start:]`` (``events``: their calls, read by ``extract_tool_events``)."""
    mine = [e for e in events if e.call_index >= start]
    failures = []
    for k, e in enumerate(mine):
        if not failed(e):
            continue
        later = [x for x in mine[k + 1 :] if _same_check(x, e) and x.outcome is not None]
        fixed = next((x for x in later if x.outcome == "success"), None)
        after = e.result_index if e.result_index is not None else e.call_index
        failures.append(
            Failure(
                call_index=e.call_index,
                error=e.error_line or "",
                then=_words_after(messages, after),
                resolved_by=(fixed.shown or fixed.command).split("\n", 1)[0] if fixed else "",
                # a later run of the same check got past this error (it failed otherwise, or passed)
                passed=bool(later) and (later[-1].outcome == "success" or later[-1].error_line != e.error_line),
                probe=e.read_only,
            )
        )
    decisions: list[Decision] = []
    floor = start
    for e in mine:
        if e.files_changed and e.outcome != "error":
            where, text = _words_before(messages, e.call_index, floor)
            said = sentences(text)
            if said and not any(d.message_index == where for d in decisions):
                decision, rationale = _upto(said[:1], MAX_WORD_CHARS), _upto(said[1:], MAX_WORD_CHARS)
                decisions.append(Decision(decision=decision, rationale=rationale, message_index=where))
        floor = e.call_index + 1
    texts = [m for m in messages[start:] if m.role == "assistant" and prose(m.text)]
    distinct = list(dict.fromkeys(_upto(sentences(m.text), LAST_WORDS_CHARS) for m in reversed(texts)))
    last = distinct[:LAST_WORDS][::-1]  # the last texts, each once (an agent that said the same twice is read once)
    # open items: the list in the agent's latest words to the user (a text with no call), among its last texts
    told = next((m.text for m in reversed(texts[-3:]) if not m.tool_calls and not bash_blocks(m.text)), "")
    return WorkingState(
        files=tuple(_files(mine)),
        failures=tuple(failures),
        decisions=tuple(decisions),
        open_items=tuple(_open_items(told)),
        last_words=tuple(x for x in last if x),
    )


__all__ = ["Decision", "Failure", "FileState", "WorkingState", "sentences", "working_state"]
