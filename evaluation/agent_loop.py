"""The live A/B's built-in agent: a small OpenAI-compatible loop with a ``bash`` and a ``submit`` tool.

Each step is one chat-completions call over HTTP (urllib, no proxies), then the commands it asked for run in the
task's repository (``sh``, a time limit, output truncated). Messages are plain OpenAI dicts. With a hook, the
history sent to the model is ``hook.before_step(history)`` before every call, and the agent goes on from what
the hook returned, as an agent using the hook would; the full record of the run is kept apart.

Protocols (``protocol``): ``tools`` reads OpenAI ``tool_calls``; ``text`` reads one fenced ```bash block from
the reply (as mini-swe-agent's text mode does), and sends results back as user messages; ``auto`` (default)
offers the tools and falls back to the text block when a reply has no tool call, or when the server rejects
``tools`` on the first call. llama-cpp-python's server with a GGUF's own chat template (or its fallback format)
ignores ``tools`` under ``tool_choice: auto``, so a model served that way works through the text protocol."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from offline_compress.errors import OfflineCompressError

from .tasks import run_shell

Protocol = Literal["auto", "tools", "text"]
StopReason = Literal[
    "submitted", "max_steps", "timeout", "model_error", "compaction_error", "format_errors", "agent_error"
]
SUBMIT_WORD = "submit"

BASH_TOOL = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run one shell command in the repository's root folder and return its exit status and output.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "the command, run with sh"}},
            "required": ["command"],
        },
    },
}
SUBMIT_TOOL = {
    "type": "function",
    "function": {
        "name": "submit",
        "description": "Finish: call this once the task is done. Nothing can be run after it.",
        "parameters": {"type": "object", "properties": {}},
    },
}
_INTRO = (
    "You are a software engineer working in a git repository. Every command runs with sh in the repository's "
    "root folder, in a fresh shell, with no input (no interactive programs or editors; edit files with sed, "
    "python3 or a here-document). Work step by step: read the relevant files, change them, run the tests, then "
    "finish. Follow the task's constraints exactly.\n"
)
_TOOLS_RULES = "Use the bash tool to run one command per call. When the task is done, call the submit tool."
_TEXT_RULES = (
    "Reply with one short sentence of reasoning, then exactly one command in a fenced block:\n"
    "```bash\nls src\n```\n"
    "When the task is done, reply with a block that contains only the word submit:\n```bash\nsubmit\n```"
)
_AUTO_RULES = (
    "Use the bash tool to run one command per call, and the submit tool when the task is done. If you cannot "
    "call tools, reply with exactly one command in a fenced block instead:\n```bash\nls src\n```\n"
    "and finish with a block that contains only the word submit."
)
_FORMAT_ERROR = (
    "Your reply had no command. Reply with exactly one command in a ```bash fenced block (or a bash tool call); "
    "to finish, reply with a block containing only: submit"
)
_BLOCK = re.compile(r"```(?:bash|sh|shell)?[ \t]*\n(.*?)```", re.DOTALL)


class ModelEndpointError(OfflineCompressError):
    """The model endpoint refused, timed out, or answered something that is not a chat completion."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class AgentSettings(BaseModel):
    model_url: str = Field(description="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1")
    model: str = "local"
    api_key: str = "none"
    max_steps: int = Field(default=100, ge=1)
    max_reply_tokens: int = Field(default=1024, ge=1)
    temperature: float = 0.0
    request_timeout_s: float = Field(default=300, gt=0)
    command_timeout_s: float = Field(default=60, gt=0)
    output_limit: int = Field(default=4000, ge=200, description="characters of a command's output shown to the model")
    protocol: Protocol = "auto"
    late_system: Literal["keep", "user"] = Field(
        default="keep", description="send system messages after the first as they are, or as user messages"
    )


class Action(BaseModel):
    kind: Literal["bash", "submit"]
    command: str = ""
    tool_call_id: str | None = None


class AgentRun(BaseModel):
    """What happened in one run. ``history`` is every message of the run in order (what the agent said and
    saw), not the compacted view the model was sent."""

    history: list[dict[str, Any]]
    steps: int
    submitted: bool
    stop_reason: StopReason
    error: str | None
    input_tokens: int
    output_tokens: int
    token_source: Literal["endpoint", "counted", "mixed", "none"]
    compactions: int
    trigger_firings: int = 0
    notes: list[str] = []
    protocol_used: Literal["tools", "text", "mixed", "none"]


class ChatClient:
    """POST ``{base}/chat/completions`` with urllib. No proxy is used (``ProxyHandler({})``): the request
    goes to the given URL and nowhere else."""

    def __init__(self, base_url: str, *, api_key: str = "none") -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def _request(self, path: str, payload: dict[str, Any] | None, timeout_s: float) -> dict[str, Any]:
        url = f"{self.base_url}{path}"
        data = None if payload is None else json.dumps(payload).encode("utf-8")
        request = urllib.request.Request(
            url, data=data, headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"}
        )
        try:
            with self._opener.open(request, timeout=timeout_s) as response:
                body = response.read()
        except urllib.error.HTTPError as err:
            raise ModelEndpointError(f"{url}: HTTP {err.code}: {_error_text(err)}", status=err.code) from None
        except urllib.error.URLError as err:
            reason = err.reason
            if isinstance(reason, TimeoutError):
                raise ModelEndpointError(f"{url}: no reply within {timeout_s:.0f} s") from None
            if isinstance(reason, ConnectionRefusedError):
                raise ModelEndpointError(f"{url}: connection refused") from None
            raise ModelEndpointError(f"{url}: {reason}") from None
        except TimeoutError:
            raise ModelEndpointError(f"{url}: no reply within {timeout_s:.0f} s") from None
        except (ConnectionError, OSError) as err:
            raise ModelEndpointError(f"{url}: {type(err).__name__}: {err}") from None
        try:
            document = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ModelEndpointError(f"{url}: the reply is not JSON ({body[:80]!r})") from None
        if not isinstance(document, dict):
            raise ModelEndpointError(f"{url}: the reply is not a JSON object")
        return document

    def models(self, timeout_s: float = 10) -> list[str]:
        data = self._request("/models", None, timeout_s).get("data") or []
        return [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]

    def complete(self, payload: dict[str, Any], timeout_s: float) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """(the assistant message, the ``usage`` object or None)."""
        document = self._request("/chat/completions", payload, timeout_s)
        choices = document.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0].get("message"), dict):
            raise ModelEndpointError(f"{self.base_url}/chat/completions: no choices[0].message in the reply")
        usage = document.get("usage")
        return choices[0]["message"], usage if isinstance(usage, dict) else None


def _error_text(err: urllib.error.HTTPError) -> str:
    try:
        raw = err.read().decode("utf-8", "replace")
    except OSError:
        return err.reason or ""
    try:
        detail = json.loads(raw)
        if isinstance(detail, dict):
            inner = detail.get("error", detail.get("detail", detail))
            if isinstance(inner, dict):
                inner = inner.get("message", inner)
            raw = inner if isinstance(inner, str) else json.dumps(inner)
    except json.JSONDecodeError:
        pass
    return " ".join(raw.split())[:300]


def system_prompt(protocol: Protocol) -> str:
    return _INTRO + {"tools": _TOOLS_RULES, "text": _TEXT_RULES, "auto": _AUTO_RULES}[protocol]


def assistant_message(raw: Mapping[str, Any], step: int) -> dict[str, Any]:
    """The server's message as a clean OpenAI assistant dict (tool calls get ids if the server gave none)."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": raw.get("content") if isinstance(raw.get("content"), str) else "",
    }
    calls = []
    for i, call in enumerate(raw.get("tool_calls") or []):
        call = call if isinstance(call, dict) else {}
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        arguments = function.get("arguments", "")
        calls.append(
            {
                "id": str(call.get("id") or f"call_{step}_{i}"),
                "type": "function",
                "function": {
                    "name": str(function.get("name", "")),
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
        )
    if calls:
        message["tool_calls"] = calls
        if not message["content"]:
            message["content"] = None
    return message


def parse_actions(message: Mapping[str, Any]) -> tuple[list[Action], Literal["tools", "text", "none"]]:
    """The actions of an assistant message: its tool calls if it has any, else the first fenced block."""
    calls = message.get("tool_calls") or []
    if calls:
        actions = []
        for call in calls:
            name = call["function"]["name"]
            try:
                arguments = json.loads(call["function"]["arguments"] or "{}")
            except json.JSONDecodeError:
                arguments = {}
            if name == "submit":
                actions.append(Action(kind="submit", tool_call_id=call["id"]))
            else:
                command = arguments.get("command", "") if isinstance(arguments, dict) else ""
                actions.append(
                    Action(kind="bash", command=str(command) if name == "bash" else "", tool_call_id=call["id"])
                )
        return actions, "tools"
    match = _BLOCK.search(message.get("content") or "")
    if match is None:
        return [], "none"
    command = match.group(1).strip()
    if command == SUBMIT_WORD:
        return [Action(kind="submit")], "text"
    return [Action(kind="bash", command=command)], "text"


def late_system_as_user(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of ``messages`` where every system message after the first is a user message with the same
    content. For servers whose chat format keeps only the first system message (all of llama-cpp-python's
    built-in formats drop the others, and with them the hook's summary, which follows the kept head)."""
    return [{**m, "role": "user"} if i and m.get("role") == "system" else m for i, m in enumerate(messages)]


def truncate_output(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters elided ...]\n{text[-half:]}"


def observation(code: int | None, output: str, timed_out: bool, limit: int, timeout_s: float) -> str:
    status = f"timed out after {timeout_s:.0f} s (killed)" if timed_out else str(code)
    return f"<returncode>{status}</returncode>\n<output>\n{truncate_output(output, limit)}</output>"


def run_agent(
    prompt: str,
    workdir: Path,
    settings: AgentSettings,
    *,
    timeout_s: float,
    hook: Any = None,
    client: ChatClient | None = None,
    counter: Callable[[], Any] | None = None,
) -> AgentRun:
    """Run the agent on ``prompt`` in ``workdir`` until it submits, fails, hits ``max_steps`` or ``timeout_s``.

    Never raises for the endpoint, a command or a compaction: the run stops and says why (``stop_reason``,
    ``error``). ``counter`` returns the token counter used when a reply carries no ``usage``."""
    client = client or ChatClient(settings.model_url, api_key=settings.api_key)
    deadline = time.monotonic() + timeout_s
    protocol = settings.protocol
    history: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt(protocol)},
        {"role": "user", "content": prompt},
    ]
    view = list(history)
    tally = TokenTally(counter)
    used: set[str] = set()
    steps = 0
    stop: StopReason = "max_steps"
    error: str | None = None

    def add(message: dict[str, Any]) -> None:
        history.append(message)
        view.append(message)

    while True:
        if steps >= settings.max_steps:
            stop, error = "max_steps", f"reached --max-steps {settings.max_steps} without submitting"
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            stop, error = "timeout", f"timed out: the task's limit of {timeout_s:.0f} s was reached"
            break
        if hook is not None:
            try:
                view = hook.before_step(view)
            except Exception as err:  # noqa: BLE001 - any compaction failure ends this run, not the harness
                stop, error = "compaction_error", f"compaction failed: {type(err).__name__}: {err}"
                break
        sent = view if settings.late_system == "keep" else late_system_as_user(view)
        payload: dict[str, Any] = {
            "model": settings.model,
            "messages": sent,
            "temperature": settings.temperature,
            "max_tokens": settings.max_reply_tokens,
        }
        if protocol != "text":
            payload["tools"] = [BASH_TOOL, SUBMIT_TOOL]
            payload["tool_choice"] = "auto"
        try:
            raw, usage = client.complete(payload, min(settings.request_timeout_s, remaining))
        except ModelEndpointError as err:
            # Some servers reject ``tools`` outright (vLLM without auto tool choice): go on in text mode.
            if protocol == "auto" and steps == 0 and err.status in (400, 404, 422, 501):
                protocol = "text"
                payload.pop("tools")
                payload.pop("tool_choice")
                try:
                    raw, usage = client.complete(
                        payload, min(settings.request_timeout_s, max(deadline - time.monotonic(), 1))
                    )
                except ModelEndpointError as retry_err:
                    stop, error = "model_error", f"model endpoint: {retry_err}"
                    break
            else:
                stop, error = "model_error", f"model endpoint: {err}"
                break
        steps += 1
        message = assistant_message(raw, steps)
        tally.add(usage, sent, message)
        add(message)
        actions, kind = parse_actions(message)
        if protocol == "tools" and kind == "text":
            actions, kind = [], "none"  # tools only: a fenced block is not a command
        if kind != "none":
            used.add(kind)
        if not actions:
            add({"role": "user", "content": _FORMAT_ERROR})
            continue
        submitted = False
        for action in actions:
            if action.kind == "submit":
                if action.tool_call_id:
                    add({"role": "tool", "tool_call_id": action.tool_call_id, "content": "submitted"})
                submitted = True
                continue
            if submitted:  # nothing runs after submit; the call still needs its result message
                text = "not run: submit came first"
            elif not action.command.strip():
                text = "error: the bash tool needs a non-empty 'command' argument (other tools: bash, submit)"
            else:
                limit = max(1.0, min(settings.command_timeout_s, deadline - time.monotonic()))
                code, output, timed_out = run_shell(
                    action.command, workdir, limit, {"PAGER": "cat", "GIT_PAGER": "cat"}
                )
                text = observation(code, output, timed_out, settings.output_limit, limit)
            if action.tool_call_id:
                add({"role": "tool", "tool_call_id": action.tool_call_id, "content": text})
            else:
                add({"role": "user", "content": text})
        if submitted:
            stop, error = "submitted", None
            break
    return AgentRun(
        history=history,
        steps=steps,
        submitted=stop == "submitted",
        stop_reason=stop,
        error=error,
        input_tokens=tally.input_tokens,
        output_tokens=tally.output_tokens,
        token_source=tally.source(),
        **hook_counts(hook),
        protocol_used="mixed" if len(used) > 1 else (used.pop() if used else "none"),
    )


def hook_counts(hook: Any) -> dict[str, Any]:
    """``compactions``: firings that replaced the history; ``trigger_firings``: all firings, including those
    where the hook kept the history (nothing to compress, or the result would not have been smaller), each of
    which gets a line in ``notes``."""
    metrics = list(getattr(hook, "metrics", None) or [])
    kept = [m for m in metrics if getattr(m, "outcome", "compacted") != "compacted"]
    notes = [
        f"the trigger fired ({m.reason}, {m.tokens_before} tokens) and the hook kept the history: {m.note}"
        for m in kept
    ]
    return {"compactions": len(metrics) - len(kept), "trigger_firings": len(metrics), "notes": notes}


class TokenTally:
    """Input/output tokens summed over calls: the endpoint's ``usage`` where given, else counted exactly
    with the project's counter (the target's tokenizer) on what was sent and received."""

    def __init__(self, counter: Callable[[], Any] | None) -> None:
        self._counter = counter
        self.input_tokens = 0
        self.output_tokens = 0
        self.reported = 0
        self.counted = 0

    def add(self, usage: Mapping[str, Any] | None, sent: list[dict[str, Any]], reply: Mapping[str, Any]) -> None:
        prompt, completion = (usage or {}).get("prompt_tokens"), (usage or {}).get("completion_tokens")
        if isinstance(prompt, int) and isinstance(completion, int):
            self.input_tokens += prompt
            self.output_tokens += completion
            self.reported += 1
            return
        from offline_compress.history.messages import as_messages
        from offline_compress.tokens.counter import get_counter

        counter = self._counter() if self._counter else get_counter()
        self.input_tokens += counter.count(as_messages(sent))
        text = (reply.get("content") or "") + "".join(c["function"]["arguments"] for c in reply.get("tool_calls") or [])
        self.output_tokens += counter.count_text(text)
        self.counted += 1

    def source(self) -> Literal["endpoint", "counted", "mixed", "none"]:
        if self.reported and self.counted:
            return "mixed"
        return "endpoint" if self.reported else ("counted" if self.counted else "none")
