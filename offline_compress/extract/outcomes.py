"""Outcome classification: success / error / partial of one tool result, its exit code, and the verbatim line
that says why it failed (a traceback's exception, a shell error, a failing test summary)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import Literal

from ..history.conventions import ABORTED_OUTPUT, MINI_FORMAT_ERROR, MINI_TIMEOUT, RETURNCODE

Outcome = Literal["success", "error", "partial"]

MAX_ERROR_LINE_CHARS = 300

_TRACEBACK = re.compile(r"^Traceback \(most recent call last\):", re.M)
_EXC_LINE = re.compile(
    r"^(?:E\s+)?(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Warning)(?::.*)?$"
)
# A Python traceback ends with its exception at the left margin, under the indented frames: [module.]Name[: message]
# (Django's ImproperlyConfigured, StopIteration: not only names that end in Error).
_EXC_NAME = r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*"
_RAISED = re.compile(rf"^{_EXC_NAME}(?::.*)?$")
_BARE_EXC = re.compile(rf"^{_EXC_NAME}$")  # no message: the statement above it says what failed
_FRAME = re.compile(r'^[ \t]*File "[^"\n]{1,1000}", line \d+.*$', re.M)  # a traceback's frame line, whole
_SHELL_ERROR = re.compile(
    r"(?:command not found|No such file or directory|Permission denied|cannot access|can't read|"
    r"Is a directory|not a git repository|unrecognized option|invalid option|^usage: |"
    r"SyntaxError|IndentationError|^fatal: |^error: |^Error: |^ERROR: |^ERROR |^E: |^FAILED |"
    r"Your proposed edit has introduced new syntax error|^File .* not found|^No replacement was performed|"
    r"did not appear verbatim|^Invalid |does not exist|failed to exactly match|^make: \*\*\* .*Error \d+|"
    # an editor's refused replacement, as Moatless and many editor tools word it ("String '<old>' not found in
    # <path>", "Multiple occurrences of string found", "... already exists in <path>. No changes were made.")
    r"' not found in [\w./\\-]{1,200}\.?$|^Multiple occurrences (?:of|found)|\bNo changes were made\.)",
    re.M,
)
_WEAK_ERROR = re.compile(
    r"(?:did not conform to the edit format|failed to match|^Traceback \(most recent call last\):)", re.M
)
_PYTEST_SUMMARY = re.compile(
    r"^={2,200} ([^\n]{0,300}?\b(?:passed|failed|error|errors|skipped|xfailed|deselected|no tests ran)\b"
    r"[^\n]{0,300}?) ={2,200}[ \t]*$",
    re.M,
)
_COUNT = re.compile(r"(\d+) (passed|failed|errors?)\b")
_UNITTEST_FAILED = re.compile(r"^FAILED \((?:failures|errors)=\d+.*\)$", re.M)
_TRUNCATED = re.compile(
    r"(?:<output_head>|<elided_chars>|output of your last command was too long|Output truncated|"
    r"Observation truncated|\[\.\.\. .*truncated|<response clipped>)",
    re.I,
)
_EXIT_CODE_TEXT = re.compile(r"(?:exit code|exit status|exited with code|Exit code:?)\s*(-?\d+)", re.I)


def _clip_line(line: str) -> str:
    return line.strip()[:MAX_ERROR_LINE_CHARS]


def _raised_by(text: str, at: int, line: str) -> str:
    """A bare exception (``AssertionError``: no message says what failed) with the statement that raised it, as
    a Python traceback shows them: the indented line right under the last ``File "…", line N`` line, then the
    exception; the two lines as they stand in ``text`` (a substring of it). Any other exception line with the
    detail it introduces (``_with_detail``)."""
    if not _BARE_EXC.match(line.strip()):
        return _with_detail(text, at, line)
    before = text[max(0, at - 2 * MAX_ERROR_LINE_CHARS) : at].splitlines()
    if len(before) < 2 or not _FRAME.match(before[-2]) or not before[-1][:1].isspace() or not before[-1].strip():
        return line
    statement = before[-1]
    if len(statement.strip()) + 1 + len(line.strip()) > MAX_ERROR_LINE_CHARS:
        return line  # clipped, the pair would lose the exception's name
    return text[text.rfind(statement, 0, at) : at + len(line)]


def _with_detail(text: str, at: int, line: str) -> str:
    """An error line that ends with a colon introduces its detail on the next line ("BashOutput failed due to the
    following issue:" / "An unexpected parameter `block` was provided"): the two lines as they stand in ``text``
    (a substring of it) when the next one is not blank and both fit. Any other line as it is."""
    if not line.rstrip().endswith(":"):
        return line
    start = text.find("\n", at + len(line))
    if start < 0:
        return line
    end = text.find("\n", start + 1)
    detail = text[start + 1 : end if end >= 0 else len(text)]
    if not detail.strip() or detail.lstrip().startswith("</"):  # no detail, or the end of a harness's wrapper
        return line
    if len(line.strip()) + 1 + len(detail.strip()) > MAX_ERROR_LINE_CHARS:
        return line
    return text[at : start + 1 + len(detail.rstrip())]


def _lines(text: str, start: int) -> Iterator[tuple[int, str]]:
    """(offset, line without its break) of each line of ``text[start:]``."""
    at = start
    for raw in text[start:].splitlines(keepends=True):
        yield at, raw.splitlines()[0] if raw.strip() else raw.strip("\r\n")
        at += len(raw)


def _last_exception_line(text: str) -> str | None:
    tb = next(reversed([*_TRACEBACK.finditer(text)]), None)  # the last match
    if tb:  # the raised exception: the first line back at the left margin after the last traceback's frames
        # (after its last frame: what the program printed meanwhile may stand between them, ``DEBUG: x=1``)
        frame = next(reversed([*_FRAME.finditer(text, tb.end())]), None)
        for at, line in _lines(text, frame.end() if frame else tb.end()):
            s = line.strip()
            if not s or line[:1].isspace() or s.startswith('File "'):
                continue
            if len(s) <= 2000 and (_RAISED.match(s) or _EXC_LINE.match(s)):  # bounded: the match stays linear
                return _raised_by(text, at, line)
            break  # something else there (an output cut short, a harness's note): read by the names below
    found = None
    for at, line in _lines(text, tb.end() if tb else 0):
        s = line.strip()
        if len(s) <= 2000 and _EXC_LINE.match(s):
            found = (at, line)
            if tb:
                break  # the first exception line after the last traceback is the raised one
    return _raised_by(text, *found) if found else None


def _error_line(text: str, allow_exceptions: bool = True) -> str | None:
    if allow_exceptions:
        exc = _last_exception_line(text) if _TRACEBACK.search(text) else None
        if exc:
            return _clip_line(exc)
    m = _SHELL_ERROR.search(text) or _WEAK_ERROR.search(text)
    if m:
        a = text.rfind("\n", 0, m.start()) + 1
        b = text.find("\n", m.end())
        line = text[a : b if b >= 0 else len(text)]
        if line.strip():
            return _clip_line(_with_detail(text, a, line))
    summaries = list(_PYTEST_SUMMARY.finditer(text))
    if summaries and "failed" in summaries[-1].group(1) or summaries and "error" in summaries[-1].group(1):
        return _clip_line(summaries[-1].group(0))
    if allow_exceptions:
        exc = _last_exception_line(text)
        if exc:
            return _clip_line(exc)
    return None


def _output_body(text: str) -> str:
    """The command output inside a mini-swe-agent result (falls back to the whole text)."""
    for open_tag, close_tag in (("<output>", "</output>"), ("<output_head>", "</output_tail>")):
        a = text.find(open_tag)
        if a >= 0:
            b = text.rfind(close_tag)
            return text[a + len(open_tag) : b if b > a else len(text)]
    return text


def classify_result(
    text: str, *, read_only: bool = False, exit_code: int | None = None
) -> tuple[Outcome, int | None, str | None]:
    """(outcome, exit_code, error_line) of one tool result. ``error_line`` is a substring of ``text``.
    ``exit_code``: the code the output gave structurally (``conventions.unwrap_output``), else it is read from the
    text. An output that is exactly Codex's ``aborted`` is a call that never ran: partial, nothing failed."""
    if text.strip() == ABORTED_OUTPUT:
        return "partial", None, None
    rc_match = RETURNCODE.search(text[:300]) if exit_code is None else None
    if rc_match:
        exit_code = int(rc_match.group(1))
    if exit_code is None:
        m = _EXIT_CODE_TEXT.search(text[-400:]) or _EXIT_CODE_TEXT.search(text[:300])
        if m:
            exit_code = int(m.group(1))
    if MINI_TIMEOUT.match(text):
        return "error", exit_code, _clip_line(text.split("\n", 1)[0])
    if MINI_FORMAT_ERROR.match(text):
        return "error", exit_code, _clip_line(text.lstrip().split("\n", 1)[0])
    body = _output_body(text)
    summaries = list(_PYTEST_SUMMARY.finditer(body))
    counts: Counter[str] = Counter()
    for n, kind in _COUNT.findall(summaries[-1].group(1)) if summaries else ():
        counts[kind.rstrip("s")] += int(n)
    mixed_tests = counts["passed"] > 0 and counts["failed"] + counts["error"] > 0
    truncated = bool(_TRUNCATED.search(text))
    if exit_code is not None:
        if exit_code != 0:
            line = _error_line(body)
            if line is None:
                # A search that finds nothing exits 1 with no message: the return code itself is the reason.
                line = rc_match.group(0) if (read_only and rc_match) else _fallback_line(body, rc_match)
            return ("partial" if mixed_tests else "error"), exit_code, line
        if mixed_tests:
            return "partial", 0, _error_line(body)
        if not read_only and _TRACEBACK.search(body):
            line = _error_line(body)
            if line:
                return "partial", 0, line
        return ("partial" if truncated else "success"), 0, None
    # No exit code: judge by markers.
    if mixed_tests:
        return "partial", None, _error_line(body)
    # A file being read may mention errors; for reads only the start of the output (where a shell puts them).
    line = _error_line(body[:400] if read_only else body, allow_exceptions=not read_only)
    failed_tests = counts["failed"] + counts["error"] > 0 or bool(_UNITTEST_FAILED.search(body))
    if line and (not read_only or _SHELL_ERROR.search(line) or _WEAK_ERROR.search(line)):
        return "error", None, line
    if failed_tests:
        return "error", None, line
    return ("partial" if truncated else "success"), None, None


def _fallback_line(body: str, rc_match: re.Match[str] | None) -> str | None:
    """The first line that names an error (``npm ERR! code EAI_AGAIN``), else the last line the command printed
    that is not a harness's exit-code note, else its return code's tag, else None: an empty output (Codex's ``rg``
    that finds nothing, ``{"output": "", "metadata": {"exit_code": 1}}``) has no line to quote."""
    lines = [line for line in body.splitlines() if line.strip() and not _EXIT_NOTE.match(line)]
    named = next((line for line in lines if len(line) <= 2000 and _NAMES_ERROR.search(line)), None)
    if named or lines:
        return _clip_line(named or lines[-1])
    return rc_match.group(0) if rc_match else None


# a line that says what went wrong, in the words tools print it with (any case), and a harness's exit-code note
_NAMES_ERROR = re.compile(r"(?i)\b(?:err!?|error|errno|fatal|failed|failure|exception|denied|refused|cannot|unable)\b")
_EXIT_NOTE = re.compile(r"(?i)^\W*(?:exit code|exit status|process exited with code|command finished with exit code)")
