"""Continuation probes: does a compacted context still hold what the agent went on to use?

Everything here reads the raw trajectory with this module's own small parsers. It never imports the extractor,
the cut, grounding or redaction of the library (a test checks that), so a score is never the code under test
re-checking itself. The only library pieces used are the message model (the shared vocabulary) and, in the
caller, the exact token counter.

Definitions (a *step* ``i`` is the index of an assistant message: the agent is about to write it, and the
context it sees is built from ``messages[:i]``):

head
    The leading system/developer messages and the first user message (the task): ``messages[:head_end]``.
action
    What an assistant message asked to run: each ``tool_calls`` entry (its ``command``/``cmd``/``script``
    argument, else the raw arguments), or the bodies of its fenced ```bash / ```sh / ```mswea_bash_command
    blocks (else of a bare ``` block, SWE-agent's text actions) joined by newlines. Its *result* is the
    ``tool`` message with its id (else the next unanswered one), or the next message when that is a ``user``
    message answering the action. The exit code is read from ``<returncode>N</returncode>`` or an
    ``exit code N`` marker; an action *failed* when that code is not 0, or, without a code, when the result
    starts with a traceback / ``error:`` line.
tool output
    A ``tool`` message, a ``user`` message that answers an assistant action (whatever its prefix), or a known
    harness notice in the user role (mini-swe-agent's format-error and timeout notices, which answer a reply
    that had no runnable action).
region
    ``messages[head_end:tail]`` where ``tail`` leaves the last ``keep_last`` messages of the prefix (moved
    earlier while the first kept message is tool output): the part a compaction decides about.
horizon
    The steps after ``i`` up to the next compaction point (the steps during which this context is what the
    agent works from); later use is attributed to the later compaction.
artifact
    A path (``a/b.py``, ``x.py``), a dotted name (``django.utils.numberformat``), a code identifier (with an
    underscore, camelCase or a digit; 4+ characters; not ALL-CAPS prose) or a number with 3+ digits or a dot
    (``1e-200`` does not count, ``0.00`` and ``1234`` do), found in the agent's own messages (text and action).

Metrics of one context at one step:

artifact probes
    Artifacts the agent used in the horizon whose first occurrence in the history is in the region (in a tool
    output or an agent message); recall = share of them present, verbatim, in the context.
constraints
    The curated must-keep phrases present in genuine (not tool-output) system/user text before ``i``, every
    user message after the first agent reply that is not tool output (a person steering), whole, and what a
    person said that reached the agent as tool output (``answers_of_person``: the result of a call to a tool
    that asks the user, the words typed to refuse a call); retention = share present verbatim
    (whitespace-normalised).
head lines
    Non-empty lines of the head, present verbatim (whitespace-normalised): how much of the system prompt and
    task the agent still sees.
redo
    A horizon action that repeats (same whitespace-normalised command) a read-only action of the region
    with no write to a path it names in between, when the earlier result is not in the context (fewer than
    half of its distinctive lines present; for a result with none, the command itself absent). Rate = redos /
    horizon actions.
failure memory
    Horizon actions that repeat a command that failed in the region and fail again with the same error line:
    remembered when the context holds that command and its error line. ``failure recall`` is the same check
    over every failed action of the region (whether or not it was repeated).
presence
    A probe is present when it occurs in the text of a context message or its tool-call arguments, or in that
    text with JSON string escapes undone (an agent reads ``\\"`` in a JSON summary as ``"``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from offline_compress.history.messages import Message

KEEP_LAST = 5

# ------------------------------------------------------------------------------------------------ parsing

_FENCE = re.compile(r"```([A-Za-z_]*)[ \t]*\n(.*?)\n?```", re.S)
_SHELL_LANGS = ("bash", "sh", "shell", "mswea_bash_command", "console")
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_EXIT_MARKER = re.compile(r"exit code[:\s]+(-?\d+)", re.I)
_ERROR_LINE = re.compile(
    r"(?:Error\b|Exception\b|error:|ERROR|FAILED|Traceback|No such file|not found|fatal:|SyntaxError|cannot )"
)
_ERROR_START = re.compile(r"\A\s*(?:Traceback \(most recent call last\)|[\w.]*(?:Error|Exception):|error:|fatal:)")


def _text(m: Message) -> str:
    return m.text


def _arguments(m: Message) -> list[str]:
    return [c.function.arguments for c in (m.tool_calls or ())]


def _command_of_arguments(arguments: str) -> str:
    """What a call ran: its ``command`` (``cmd``, ``script``, ``code``) argument; a call of any other tool (a
    Read, an Edit, a search) is what it passed, its argument values (``argument_values``), as the probes read a
    call everywhere else: the JSON's keys and quoting are the tool's interface, not something the agent did. A call
    that passed no value (``{}``) keeps its raw arguments: it names no program, and two of them are no repeated read."""
    try:
        value = json.loads(arguments) if arguments.strip() else None
    except (ValueError, RecursionError):
        return arguments
    if isinstance(value, Mapping):
        for key in ("command", "cmd", "script", "code"):
            if isinstance(value.get(key), str):
                return value[key]
    return argument_values(arguments) or arguments


def fenced_commands(text: str) -> list[str]:
    """Shell blocks of an assistant text; else the last bare block (SWE-agent text actions)."""
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(text)]
    shell = [body for lang, body in blocks if lang in _SHELL_LANGS]
    if shell:
        return shell
    bare = [body for lang, body in blocks if not lang]
    return bare[-1:]


def has_action(m: Message) -> bool:
    return m.role == "assistant" and (bool(m.tool_calls) or bool(fenced_commands(m.text)))


_HARNESS_NOTICES = ("Please always provide EXACTLY ONE action", "The last command <command>", "<returncode>")


def is_tool_output(messages: Sequence[Message], i: int) -> bool:
    m = messages[i]
    if m.role == "tool":
        return True
    if m.role != "user":
        return False
    return (i > 0 and has_action(messages[i - 1])) or m.text.lstrip().startswith(_HARNESS_NOTICES)


def head_end(messages: Sequence[Message]) -> int:
    """Index after the leading system/developer messages and the first user message."""
    i = 0
    while i < len(messages) and messages[i].role in ("system", "developer"):
        i += 1
    if i < len(messages) and messages[i].role == "user":
        i += 1
    return i


def tail_start(messages: Sequence[Message], keep_last: int = KEEP_LAST) -> int:
    cut = max(len(messages) - keep_last, 0)
    while 0 < cut < len(messages) and is_tool_output(messages, cut):
        cut -= 1
    return cut


@dataclass(frozen=True)
class Action:
    index: int
    command: str
    result_index: int | None = None
    result: str = ""
    exit_code: int | None = None

    @property
    def failed(self) -> bool:
        if self.exit_code is not None:
            return self.exit_code != 0
        return bool(self.result) and _ERROR_START.match(self.result) is not None

    @property
    def key(self) -> str:
        return normalise(self.command)


def _exit_code(text: str) -> int | None:
    m = _RETURNCODE.search(text[:300])
    if m:
        return int(m.group(1))
    found = next(reversed([*_EXIT_MARKER.finditer(text[-300:])]), None)  # the last match
    return int(found.group(1)) if found else None


def actions(messages: Sequence[Message]) -> list[Action]:
    """Every action of the history with its result, in order."""
    out: list[Action] = []
    by_id: dict[str, int] = {}
    for i, m in enumerate(messages):
        if m.role == "assistant" and m.tool_calls:
            for call in m.tool_calls:
                if call.id:
                    by_id[call.id] = len(out)
                out.append(Action(i, _command_of_arguments(call.function.arguments)))
        elif m.role == "assistant":
            commands = fenced_commands(m.text)
            if commands:
                nxt = i + 1 if i + 1 < len(messages) and messages[i + 1].role == "user" else None
                result = messages[nxt].text if nxt is not None else ""
                out.append(Action(i, "\n".join(commands), nxt, result, _exit_code(result) if nxt is not None else None))
        elif m.role == "tool":
            slot = by_id.pop(m.tool_call_id, None) if m.tool_call_id else None
            if slot is None or out[slot].result_index is not None:
                slot = next(
                    (k for k, a in enumerate(out) if a.result_index is None and messages[a.index].tool_calls), None
                )
            if slot is not None:
                a = out[slot]
                out[slot] = Action(a.index, a.command, i, m.text, _exit_code(m.text))
    return out


_TRACEBACK_HEAD = re.compile(r"^\s*Traceback \(most recent call last\):")
_RAISED_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?::.*)?$")


def _raised(lines: list[str]) -> str | None:
    """The exception a Python traceback raised, as Python prints it: the first line back at the margin after the
    last traceback's indented frames (after its last ``File "…", line N`` frame: what the program printed to its
    other stream may stand between the frames), whatever its class is called (Django's ``ImproperlyConfigured``)."""
    heads = [i for i, ln in enumerate(lines) if _TRACEBACK_HEAD.match(ln)]
    if not heads:
        return None
    frames = [i for i in range(heads[-1] + 1, len(lines)) if lines[i].lstrip().startswith('File "')]
    for ln in lines[(frames[-1] if frames else heads[-1]) + 1 :]:
        if not ln.strip() or ln[:1].isspace():
            continue
        return ln.strip() if _RAISED_LINE.match(ln.strip()) else None
    return None


def error_line(result: str) -> str:
    raw = result.splitlines()
    raised = _raised(raw)
    if raised:
        return raised[:200]
    lines = [ln.strip() for ln in raw if ln.strip() and not ln.strip().startswith("<")]
    for line in reversed(lines):
        if _ERROR_LINE.search(line):
            return line[:200]
    return lines[-1][:200] if lines else ""


# -------------------------------------------------------------------------------------------- artifacts

_EXT = (
    r"(?:py|pyi|pyx|js|jsx|ts|tsx|json|ya?ml|toml|cfg|ini|txt|md|rst|c|h|cc|cpp|hpp|go|rs|java|rb|php|sh|html|"
    r"css|sql|xml|csv|lock)"
)
_PATH = re.compile(r"(?<![\w/.@-])(?:\.{1,2}/)?(?:[\w.-]+/)+[\w.-]*\w|(?<![\w/.@-])[\w-]+\." + _EXT + r"\b")
_FILE_NAME = re.compile(r"\." + _EXT + r"\Z")
_DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_WORD = re.compile(r"(?<![\w.])[A-Za-z_][A-Za-z0-9_]{3,}")
_NUMBER = re.compile(r"(?<![\w.])(?:\d+\.\d+(?:\.\d+)*|\d{3,})(?![\w])")


def _code_identifier(word: str) -> bool:
    core = word.strip("_")
    if len(core) < 4:
        return False
    if word.isupper() and "_" not in core:
        return False  # prose in capitals (IMPORTANT, THOUGHT), not a name
    return (
        "_" in core
        or re.search(r"[a-z][A-Z]", word) is not None
        or (any(c.isdigit() for c in word) and any(c.isalpha() for c in word))
    )


def artifacts(text: str) -> set[str]:
    """Paths, dotted names, code identifiers and numbers named in ``text``."""
    found: set[str] = set()
    for m in _PATH.finditer(text):
        p = m.group(0).rstrip(".")
        if len(p) >= 4 and not p.startswith("//") and "://" not in text[max(0, m.start() - 8) : m.start() + 3]:
            found.add(p)
    for m in _DOTTED.finditer(text):
        d = m.group(0)
        if len(d) >= 5 and not _FILE_NAME.search(d):  # file names are paths, found above
            found.add(d)
    for m in _WORD.finditer(text):
        if _code_identifier(m.group(0)):
            found.add(m.group(0))
    for m in _NUMBER.finditer(text):
        found.add(m.group(0))
    return found


def argument_values(arguments: str) -> str:
    """The values a call passed, decoded, one per line: what the agent wrote. The keys are the tool's interface
    (its schema, which the harness sends with every request), and JSON's escapes are syntax (``\\n`` before a word
    is a line break, not a letter of it): neither is something the agent used from the history. Arguments that are
    not JSON are taken as they are."""
    try:
        value = json.loads(arguments) if arguments.strip() else None
    except (ValueError, RecursionError):
        return arguments
    out: list[str] = []
    todo: list[Any] = [value]
    while todo:
        x = todo.pop()
        if isinstance(x, Mapping):
            todo.extend(reversed(list(x.values())))
        elif isinstance(x, list):
            todo.extend(reversed(x))
        elif isinstance(x, str):
            out.append(x)
        elif x is not None and not isinstance(x, bool):
            out.append(str(x))
    return "\n".join(out)


def agent_texts(m: Message) -> str:
    """What an assistant message says and does (text and the values of its tool-call arguments)."""
    return "\n".join([_text(m), *(argument_values(a) for a in _arguments(m))])


def message_texts(m: Message) -> str:
    """Everything a message shows: text, tool-call arguments as sent, and their decoded values."""
    return "\n".join([_text(m), *_arguments(m), *(argument_values(a) for a in _arguments(m))])


def first_occurrence(messages: Sequence[Message], needles: Iterable[str]) -> dict[str, int]:
    """Index of the first message whose text (or arguments) contains each needle (absent: not in the dict)."""
    todo = set(needles)
    first: dict[str, int] = {}
    for i, m in enumerate(messages):
        if not todo:
            break
        text = message_texts(m)
        hit = {n for n in todo if n in text}
        for n in hit:
            first[n] = i
        todo -= hit
    return first


# -------------------------------------------------------------------------------------------- presence


def normalise(text: str) -> str:
    return " ".join(text.split())


_UNICODE_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


def _unescape(text: str) -> str:
    """``text`` with JSON's string escapes undone (``\\"``, ``\\n``, ``\\t``, ``\\uXXXX`` of control characters
    and the like, ``\\\\``), as an agent reads a JSON document."""
    text = _UNICODE_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
    return text.replace('\\"', '"').replace("\\n", "\n").replace("\\t", "\t").replace("\\\\", "\\")


class Haystack:
    """The text an agent sees in a context: every message's text and tool-call arguments, also with JSON string
    escapes undone; ``has`` is verbatim, ``has_normalised`` compares with whitespace collapsed."""

    def __init__(self, context: Sequence[Message]) -> None:
        raw = "\n\u241e\n".join(message_texts(m) for m in context)
        self.text = raw + "\n\u241e\n" + _unescape(raw)
        self.flat = normalise(self.text)

    def has(self, needle: str) -> bool:
        return needle in self.text

    def has_normalised(self, needle: str) -> bool:
        n = normalise(needle)
        return bool(n) and n in self.flat


# --------------------------------------------------------------------------------------------- scoring

_READ_ONLY = frozenset("cat head tail less nl wc grep egrep fgrep rg ag ls find tree stat file diff view open".split())
_GIT_READ = frozenset("diff show log status grep blame ls-files".split())
_WRITE_HINT = re.compile(
    r"(?:>|\btee\b|\bsed\s+-i|\bsed\s+--in-place|\bperl\s+-\w*i|\bmv\b|\bcp\b|\brm\b|\btouch\b|"
    r"\bpatch\b|\bgit\s+(?:apply|checkout|restore|stash)|\.write|open\()"
)


def read_only(command: str) -> bool:
    """A command that only reads (each part of a pipeline / && chain starts with a reading program)."""
    if _WRITE_HINT.search(command.replace("2>&1", "").replace("2>/dev/null", "")):
        return False
    for part in re.split(r"&&|\|\||;|\|", command):
        words = part.split()
        if not words:
            continue
        prog = words[0].rsplit("/", 1)[-1]
        if prog == "cd":
            continue
        if prog == "git" and len(words) > 1 and words[1] in _GIT_READ:
            continue
        if prog == "sed" and "-n" in words:
            continue
        if prog not in _READ_ONLY and prog not in ("sort", "uniq", "cut", "awk", "xargs", "echo"):
            return False
    return True


def _paths_named(command: str) -> set[str]:
    return {m.group(0) for m in _PATH.finditer(command)}


def result_present(action: Action, hay: Haystack) -> bool:
    lines = list(
        dict.fromkeys(
            ln.strip() for ln in action.result.splitlines() if len(ln.strip()) >= 8 and not ln.strip().startswith("<")
        )
    )[:40]
    if not lines:
        return hay.has_normalised(action.command[:200])
    present = sum(1 for ln in lines if hay.has_normalised(ln))
    return 2 * present >= len(lines)


def command_present(action: Action, hay: Haystack) -> bool:
    return hay.has_normalised(action.key[:100])


def failure_present(action: Action, hay: Haystack) -> bool:
    """The failed command and the line that says why (when its output has one) are both in the context."""
    line = error_line(action.result)
    return command_present(action, hay) and (not line or hay.has_normalised(line))


@dataclass
class Probes:
    """What the agent used after step ``step`` (up to ``horizon_end``) that a compacted context should hold."""

    step: int
    horizon_end: int
    region: tuple[int, int]
    artifacts: list[str] = field(default_factory=list)
    recent_artifacts: list[str] = field(default_factory=list)  # used later, first seen in the recent messages
    constraints: list[str] = field(default_factory=list)
    head_lines: list[str] = field(default_factory=list)
    repeat_reads: list[tuple[Action, Action]] = field(default_factory=list)  # (earlier, later)
    repeat_failures: list[tuple[Action, Action]] = field(default_factory=list)
    region_failures: list[Action] = field(default_factory=list)
    horizon_actions: int = 0


# The tools through which a harness asks the person a question and returns their answer as the call's result
# (Claude Code, OpenCode, Cline, the Codex CLI, LangChain), compared whole and case-folded.
_ASKING_TOOLS = {
    "askuserquestion",
    "ask_user_question",
    "ask_user",
    "askuser",
    "ask_question",
    "question",
    "ask_human",
    "ask_followup_question",
    "request_user_input",
    "human",
}
_REFUSAL_START = "The user doesn't want to proceed with this tool use."
_REFUSAL_WORDS = "the user said:"  # ends the refusal's first line; their words follow
_REFUSAL_NOTE = "\n\nNote: The user's next message"


def answers_of_person(messages: Sequence[Message]) -> list[tuple[int, str]]:
    """What a person said that reaches the agent as tool output: the result of a call to an asking tool, whole;
    the words after "the user said:" in Claude Code's result of a refused call (up to the harness's note)."""
    names: dict[str, str] = {}
    out = []
    for i, m in enumerate(messages):
        if m.role == "assistant":
            for c in m.tool_calls or ():
                if c.id:
                    names[c.id] = c.function.name
            continue
        if m.role != "tool":
            continue
        text = m.text
        first_line = text.split("\n", 1)[0]
        body = first_line[len("Error: ") :] if first_line.startswith("Error: ") else first_line
        if body.startswith(_REFUSAL_START) and first_line.endswith(_REFUSAL_WORDS):
            words = text[len(first_line) + 1 :]
            words = words.split(_REFUSAL_NOTE, 1)[0].strip()
            if words:
                out.append((i, words))
        elif m.tool_call_id and names.get(m.tool_call_id, "").lower() in _ASKING_TOOLS and text.strip():
            out.append((i, text.strip()))
    return out


def genuine_user_texts(messages: Sequence[Message]) -> list[tuple[int, str]]:
    return [
        (i, m.text)
        for i, m in enumerate(messages)
        if m.role in ("system", "developer", "user") and not is_tool_output(messages, i)
    ]


def build_probes(
    messages: Sequence[Message],
    step: int,
    horizon_end: int,
    *,
    phrases: Sequence[str] = (),
    keep_last: int = KEEP_LAST,
    all_actions: Sequence[Action] | None = None,
) -> Probes:
    """The probes of step ``step`` (see the module docstring)."""
    prefix = list(messages[:step])
    h = head_end(prefix)
    t = max(tail_start(prefix, keep_last), h)
    probes = Probes(step=step, horizon_end=horizon_end, region=(h, t))
    # artifacts used later, first seen in the region
    used: set[str] = set()
    for m in messages[step:horizon_end]:
        if m.role == "assistant":
            used |= artifacts(agent_texts(m))
    first = first_occurrence(messages[:step], used)
    probes.artifacts = sorted(a for a, k in first.items() if h <= k < t)
    # every strategy keeps the recent messages verbatim unless it cuts them to fit the window: scored apart
    probes.recent_artifacts = sorted(a for a, k in first.items() if k >= t)
    # constraints
    genuine = genuine_user_texts(prefix)
    first_reply = next((k for k, m in enumerate(prefix) if m.role == "assistant"), len(prefix))
    items = [p for p in phrases if any(p in text for _, text in genuine)]
    items += [text.strip() for k, text in genuine if k > first_reply and prefix[k].role == "user" and text.strip()]
    items += [text for _, text in answers_of_person(prefix)]
    probes.constraints = list(dict.fromkeys(items))
    probes.head_lines = list(dict.fromkeys(ln.strip() for m in prefix[:h] for ln in m.text.splitlines() if ln.strip()))
    # actions: repeats of reads and of failures
    acts = list(all_actions) if all_actions is not None else actions(messages)
    # A call whose arguments are unknown (an importer's call read from a damaged line: id and name only) names
    # nothing to look for: it is not scored as a failure, nor as the earlier run of a repeat.
    region_acts = [a for a in acts if h <= a.index < t and a.key]
    later = [a for a in acts if step <= a.index < horizon_end]
    probes.horizon_actions = len(later)
    probes.region_failures = [a for a in region_acts if a.failed]
    for b in later:
        earlier = [a for a in region_acts if a.key == b.key]
        if not earlier:
            continue
        a = earlier[-1]
        if read_only(a.command) and not _written_between(acts, a, b):
            probes.repeat_reads.append((a, b))
        if a.failed and b.failed and error_line(a.result) == error_line(b.result):
            probes.repeat_failures.append((a, b))
    return probes


def _written_between(acts: Sequence[Action], a: Action, b: Action) -> bool:
    paths = _paths_named(a.command)
    for x in acts:
        if a.index < x.index < b.index and not read_only(x.command) and any(p in x.command for p in paths):
            return True
    return False


@dataclass
class Score:
    artifacts: int = 0
    artifacts_kept: int = 0
    recent_artifacts: int = 0
    recent_artifacts_kept: int = 0
    constraints: int = 0
    constraints_kept: int = 0
    head_lines: int = 0
    head_lines_kept: int = 0
    horizon_actions: int = 0
    repeat_reads: int = 0
    redos: int = 0
    repeat_failures: int = 0
    failures_remembered: int = 0
    region_failures: int = 0
    region_failures_kept: int = 0
    lost_artifacts: list[str] = field(default_factory=list)
    lost_constraints: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def score_context(probes: Probes, context: Sequence[Message]) -> Score:
    """Score one compacted context against the probes of its step."""
    hay = Haystack(context)
    s = Score(horizon_actions=probes.horizon_actions)
    kept = [a for a in probes.artifacts if hay.has(a)]
    s.artifacts, s.artifacts_kept = len(probes.artifacts), len(kept)
    s.lost_artifacts = [a for a in probes.artifacts if a not in set(kept)]
    s.recent_artifacts = len(probes.recent_artifacts)
    s.recent_artifacts_kept = sum(1 for a in probes.recent_artifacts if hay.has(a))
    ck = [c for c in probes.constraints if hay.has_normalised(c)]
    s.constraints, s.constraints_kept = len(probes.constraints), len(ck)
    s.lost_constraints = [c[:200] for c in probes.constraints if c not in set(ck)]
    s.head_lines = len(probes.head_lines)
    s.head_lines_kept = sum(1 for ln in probes.head_lines if hay.has_normalised(ln))
    s.repeat_reads = len(probes.repeat_reads)
    s.redos = sum(1 for a, _ in probes.repeat_reads if not result_present(a, hay))
    s.repeat_failures = len(probes.repeat_failures)
    s.failures_remembered = sum(1 for a, _ in probes.repeat_failures if failure_present(a, hay))
    s.region_failures = len(probes.region_failures)
    s.region_failures_kept = sum(1 for a in probes.region_failures if failure_present(a, hay))
    return s


__all__ = [
    "Action",
    "Haystack",
    "Probes",
    "Score",
    "actions",
    "answers_of_person",
    "artifacts",
    "build_probes",
    "head_end",
    "is_tool_output",
    "score_context",
    "tail_start",
]
