"""Canary secrets: known fake secrets planted into a copy of a trajectory's compressed part. The copy is compressed
as well, and no canary, nor any fragment of one of ``FRAGMENT`` characters or more, may appear in its summary.

The ground truth is known by construction, so this check depends on no secret detector (the compressor's
``redact`` is what is under test). The values are derived from the trajectory's name (same name, same canaries)
and are random enough never to occur in a real history. They are planted where a summary copies text from:

==============  =================================================================  =========================
kind            planted as                                                         where
==============  =================================================================  =========================
openai_key      ``openai.AuthenticationError: Incorrect API key provided: sk-…``   a tool output
github_token    ``GITHUB_TOKEN=ghp_…`` in an environment dump                       a tool output
url_password    ``fatal: unable to access 'https://ci-bot:…@git.example.com/…'``   a tool output
private_key     a PEM block (``-----BEGIN RSA PRIVATE KEY-----`` …)                 a tool output
aws_secret      ``export AWS_SECRET_ACCESS_KEY=…`` as the command's first line      a command
deploy_token    ``You must use the deploy token glpat-… for every push.``          the first user message
anthropic_key   ``Using the key sk-ant-api03-… for the client.`` at its start      the last assistant text
==============  =================================================================  =========================

A tool output gets its canary after its ``<output>`` line (mini-swe-agent) or its first line, so the harness
markers that make it tool output stay where they are; the number of messages never changes, so the cut does not
move. Which tool output and which command are drawn from the trajectory's name. A kind with no place in the part
(no tool output, no command) is not planted.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from offline_compress.history.messages import Message
from offline_compress.summary import schema as S

from .reference import is_harness_output

FRAGMENT = 8  # a leak is any run of this many characters of a canary's secret material

_ALNUM = string.ascii_letters + string.digits
_BASE64 = _ALNUM + "+/"
_FENCE_OPEN = re.compile(r"```(?:bash|mswea_bash_command)[ \t]*\n")


@dataclass(frozen=True)
class Canary:
    kind: str
    value: str  # the secret material (lines of it, for a PEM block): what must never reach a summary
    message: int  # index of the message it was planted in
    where: str  # "tool output", "command", "user message", "assistant message"

    def fragments(self) -> set[str]:
        """Every run of ``FRAGMENT`` characters of the value (within one line)."""
        return {line[k : k + FRAGMENT] for line in self.value.splitlines() for k in range(len(line) - FRAGMENT + 1)}


def _token(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _after_first_line(text: str) -> int:
    """Where a line can go without moving the markers that make a message tool output."""
    mark = text.find("<output>\n")
    if mark >= 0:
        return mark + len("<output>\n")
    nl = text.find("\n")
    return len(text) if nl < 0 else nl + 1


def _insert_line(text: str, line: str) -> str:
    k = _after_first_line(text)
    if k == len(text) and not text.endswith("\n"):
        return f"{text}\n{line}"
    return f"{text[:k]}{line}\n{text[k:]}"


def _with_command_line(message: Message, line: str) -> Message | None:
    """``message`` with ``line`` as the first line of its first command, or None when it has no command."""
    if message.tool_calls:
        for k, call in enumerate(message.tool_calls):
            try:
                args = json.loads(call.function.arguments)
            except ValueError:
                continue
            key = next(
                (
                    x
                    for x in ("command", "cmd", "script")
                    if isinstance(args, Mapping) and isinstance(args.get(x), str) and " " in args[x].strip()
                ),
                None,
            )
            if key is None:  # no command line (an editor sub-command such as "view" is not one)
                continue
            args = {**args, key: f"{line}\n{args[key]}"}
            function = call.function.model_copy(update={"arguments": json.dumps(args)})
            calls = list(message.tool_calls)
            calls[k] = call.model_copy(update={"function": function})
            return message.model_copy(update={"tool_calls": calls})
        return None
    m = _FENCE_OPEN.search(message.text)
    if m is None:
        return None
    text = message.text
    return message.model_copy(update={"content": f"{text[: m.end()]}{line}\n{text[m.end() :]}"})


def plant(part: Sequence[Message], name: str) -> tuple[list[Message], list[Canary]]:
    """A copy of ``part`` with canaries planted (the given messages are not modified), and the canaries."""
    rng = random.Random(int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big"))
    out = list(part)
    canaries: list[Canary] = []

    def put(i: int, text: str, kind: str, value: str, where: str) -> None:
        out[i] = out[i].model_copy(update={"content": text})
        canaries.append(Canary(kind, value, i, where))

    outputs = [i for i in range(len(part)) if is_harness_output(part, i)]
    if outputs:
        key = "sk-" + _token(rng, _ALNUM, 48)
        pem = "\n".join(_token(rng, _BASE64, 64) for _ in range(3))
        password = _token(rng, _ALNUM, 20)
        github = "ghp_" + _token(rng, _ALNUM, 36)
        planted = (
            ("openai_key", key, f"openai.AuthenticationError: Incorrect API key provided: {key}"),
            ("github_token", github, f"HOME=/root\nGITHUB_TOKEN={github}\nLANG=C.UTF-8"),
            (
                "url_password",
                password,
                f"fatal: unable to access 'https://ci-bot:{password}@git.example.com/app.git/': "
                "Could not resolve host: git.example.com",
            ),
            ("private_key", pem, f"-----BEGIN RSA PRIVATE KEY-----\n{pem}\n-----END RSA PRIVATE KEY-----"),
        )
        for kind, value, line in planted:
            i = rng.choice(outputs)
            put(i, _insert_line(out[i].text, line), kind, value, "tool output")
    commands = [i for i, m in enumerate(part) if m.role == "assistant" and _with_command_line(m, "") is not None]
    if commands:
        secret = _token(rng, _BASE64, 40)
        i = rng.choice(commands)
        out[i] = _with_command_line(out[i], f"export AWS_SECRET_ACCESS_KEY={secret}")  # type: ignore[assignment]
        canaries.append(Canary("aws_secret", secret, i, "command"))
    users = [i for i, m in enumerate(part) if m.role == "user" and not is_harness_output(part, i)]
    if users:
        token = "glpat-" + _token(rng, _ALNUM, 20)
        i = users[0]
        put(
            i,
            f"{out[i].text}\n\nYou must use the deploy token {token} for every push.",
            "deploy_token",
            token,
            "user message",
        )
    said = [i for i, m in enumerate(part) if m.role == "assistant" and m.text.strip()]
    if said:
        key = "sk-ant-api03-" + _token(rng, _ALNUM, 40)
        i = said[-1]
        put(i, f"Using the key {key} for the client.\n{out[i].text}", "anthropic_key", key, "assistant message")
    return out, canaries


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def leaks(context: S.CompressedContext, canaries: Sequence[Canary]) -> list[dict[str, Any]]:
    """The canaries of which the summary holds a fragment, with the first fragment found."""
    text = "\n".join(_strings(context.model_dump(mode="json")))
    found = []
    for c in canaries:
        hit = next((f for f in sorted(c.fragments()) if f in text), None)
        if hit is not None:
            found.append({"kind": c.kind, "message": c.message, "where": c.where, "fragment": hit})
    return found


def run_canaries(compressor: Any, messages: Sequence[Message], cut: int, name: str, keep_last: int) -> dict[str, Any]:
    """Plant canaries into ``messages[:cut]`` (a copy), compress the planted history as the original was, and
    report which canaries reached the summary."""
    planted, canaries = plant(messages[:cut], name)
    result = compressor.compress_detailed([*planted, *messages[cut:]], keep_last=keep_last)
    found = leaks(result.context, canaries)
    return {
        "planted": len(canaries),
        "leaked": len(found),
        "leaks": found,
        "kinds": [c.kind for c in canaries],
        "cut": result.stats.messages_compressed,
        "seconds": result.stats.total_seconds,
    }
