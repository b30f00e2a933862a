"""An OpenAI-compatible model server as the summariser: llama.cpp's ``llama-server``, llama-cpp-python's
``python -m llama_cpp.server``, vLLM, or any server that speaks ``/v1/chat/completions`` or ``/v1/completions``.

The draft's JSON schema is asked for through the server's structured-output API, at temperature 0:

- ``openai``: ``response_format = {"type": "json_schema", "json_schema": {"name", "schema", "strict": true}}``
  (OpenAI's format; llama-server's chat endpoint and vLLM accept it);
- ``vllm``: vLLM's own ``structured_outputs = {"json": schema}`` (vLLM >= 0.10.2; older releases ignore it
  silently: use ``openai`` there);
- ``llamacpp``: a GBNF ``grammar`` made here from the schema (llama-server and llama-cpp-python's server accept it
  on both endpoints; llama-cpp-python's completions endpoint accepts nothing else and ignores ``response_format``).

``auto`` picks by what the server says it is (one look at ``/v1/models``, ``/props`` and the tokenize endpoints
when the backend is built) and, if the server rejects the request (HTTP 400/422), tries the next format (a request
every format gets rejected for, say a prompt over the server's window, costs three quick rejections, then the
last error).

Servers can fail open (llama.cpp's server has answered 200 with unconstrained text when a grammar failed to
compile; servers ignore fields they do not know), so nothing here trusts the answer: the compressor validates every
draft against the same bounded schema, asks once more, then goes without the model (``Compressor._draft``).
Schemas are sent with every string bound spelled in its pattern too (``bounded_schema``): llama.cpp's JSON-schema
converter ignores ``maxLength`` when a string also has a ``pattern``, and an unbounded string lets a small model
write until ``max_tokens`` cuts the document short.

Connection refused, timeouts (connect and read, separately) and HTTP errors raise ``BackendError`` with one line
that names the URL. Standard library only (``http.client``): no new dependency.
"""

from __future__ import annotations

import copy
import http.client
import json
import re
import time
from contextlib import closing
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from ..errors import BackendError
from .base import Generation, MissingExtraError, PromptTooLongError

Api = Literal["chat", "completions"]
Structured = Literal["auto", "openai", "vllm", "llamacpp"]
STRUCTURED_CHOICES = ("auto", "openai", "vllm", "llamacpp")
DEFAULT_N_CTX = 4096  # when the server does not say (llama-cpp-python's does not): pass n_ctx= to be exact
# The servers' own tokenize endpoints, by what the server is (``ServerInfo.kind``)
_TOKENIZE_PATHS = {"llama.cpp": "/tokenize", "llama-cpp-python": "/extras/tokenize", "vllm": "/tokenize"}

# A pattern "^<literal>[<class>]*$": the one shape bounded_schema rewrites (a literal start, then one class).
_OPEN_PATTERN = re.compile(r"^\^((?:[^\\\[\](){}.*+?|^$]|\\.)*)(\[(?:[^\]\\]|\\.)*\])\*\$$")


def bounded_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with ``maxLength`` also written into each string pattern of the shape ``^start[class]*$`` (as
    ``{0,n}``), and without llguidance's ``x-guidance`` options. Same documents valid, but a converter that reads the
    pattern alone still bounds the string."""
    out = copy.deepcopy(schema)
    out.pop("x-guidance", None)
    pending: list[Any] = [out]
    while pending:
        node = pending.pop()
        if isinstance(node, list):
            pending.extend(node)
        elif isinstance(node, dict):
            pending.extend(node.values())
            m = _OPEN_PATTERN.match(node.get("pattern", "")) if node.get("type") == "string" else None
            if m and "maxLength" in node:
                literal = re.sub(r"\\(.)", r"\1", m.group(1))
                room = max(0, int(node["maxLength"]) - len(literal))
                node["pattern"] = f"^{m.group(1)}{m.group(2)}{{0,{room}}}$"
    return out


def gbnf_grammar(schema: dict[str, Any]) -> str:
    """The GBNF grammar of a JSON schema, by llama-cpp-python's port of llama.cpp's converter (pure Python)."""
    try:
        from llama_cpp.llama_grammar import json_schema_to_gbnf
    except ImportError as err:
        raise MissingExtraError(err) from err

    return json_schema_to_gbnf(json.dumps(schema))


def structured_fields(style: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The request fields that ask for ``schema`` in one of the formats (see the module docstring)."""
    if style == "openai":
        named = {"name": "draft", "schema": schema, "strict": True}
        return {"response_format": {"type": "json_schema", "json_schema": named}}
    if style == "vllm":
        return {"structured_outputs": {"json": schema}}
    if style == "llamacpp":
        return {"grammar": gbnf_grammar(schema)}
    raise ValueError(f"structured outputs must be one of {', '.join(STRUCTURED_CHOICES[1:])}, got {style!r}")


@dataclass(frozen=True)
class ServerInfo:
    """What the server said about itself when the backend was built."""

    kind: str  # "llama.cpp" (llama-server) | "llama-cpp-python" | "vllm" | "unknown"
    model: str | None  # the model id to send (None: the server's only model)
    n_ctx: int | None  # its context window, where it says


class OpenAIServerBackend:
    """The summariser on an OpenAI-compatible server. ``base_url`` is the server's root (``http://host:port``; a
    trailing ``/v1`` is accepted). ``api="chat"`` sends the prompt as one user message (the server applies the
    model's chat template); ``"completions"`` sends it as raw text (a base model, such as the embedded Gemma 270M).

    Token counts for the prompt budget come from the server's tokenize endpoint where it has one (llama-server
    ``/tokenize``, llama-cpp-python ``/extras/tokenize``, vLLM ``/tokenize``), else from the embedded Gemma
    tokenizer (exact for Gemma 3 models, an estimate for others); ``counting`` says which."""

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api: Api = "chat",
        structured: Structured = "auto",
        api_key: str | None = None,
        n_ctx: int | None = None,
        connect_timeout: float = 5.0,
        read_timeout: float = 300.0,
    ) -> None:
        if api not in ("chat", "completions"):
            raise ValueError(f"api must be 'chat' or 'completions', got {api!r}")
        if structured not in STRUCTURED_CHOICES:
            raise ValueError(f"structured outputs must be one of {', '.join(STRUCTURED_CHOICES)}, got {structured!r}")
        parts = urlsplit(base_url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base URL must be http(s)://host[:port][/path], got {base_url!r}")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        origin = f"{parts.scheme}://{self._host}:{self._port}"  # no user:password@ from the URL in names and messages
        root = parts.path.rstrip("/")
        self.url = f"{origin}{root}"
        self._root = root.removesuffix("/v1")  # the API's paths start with /v1 themselves
        self._base = f"{origin}{self._root}"  # what a request's path follows, in messages
        self.api: Api = api
        self.api_key = api_key
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.info = self._probe(model)
        self.n_ctx = n_ctx or self.info.n_ctx or DEFAULT_N_CTX
        self.instruct = False  # chat: the server applies the template; completions: a base model's raw text
        if structured == "auto":  # the server's own format first (vLLM's and the rest: OpenAI's), then the others
            first = {"llama.cpp": "llamacpp", "llama-cpp-python": "llamacpp"}.get(self.info.kind, "openai")
            self._styles = [first, *(s for s in ("openai", "llamacpp", "vllm") if s != first)]
        else:
            self._styles = [structured]
        self._tokenize_path = _TOKENIZE_PATHS.get(self.info.kind)
        self.counting = f"server {self._tokenize_path}" if self._tokenize_path else "local Gemma 3 tokenizer"
        self._count_offset = 0
        self._count_offset = self.count("")  # llama-cpp-python's tokenizer adds BOS: counted once, taken off
        self.name = f"{self.info.kind} server at {self.url} ({self.info.model or 'its model'}, {api})"

    def close(self) -> None:
        """Nothing to free: each request opens its own connection."""

    # -- HTTP -----------------------------------------------------------------------------------------------
    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        """(status, parsed JSON or text). Raises ``BackendError`` for what is not an HTTP answer."""
        url = f"{self._base}{path}"
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Accept": "application/json"} | ({} if data is None else {"Content-Type": "application/json"})
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        with closing(cls(self._host, self._port, timeout=self.connect_timeout)) as conn:
            try:
                conn.connect()
            except TimeoutError as err:
                raise BackendError(f"{url}: no connection within {self.connect_timeout:g} s (connect timeout)") from err
            except ConnectionRefusedError as err:
                raise BackendError(f"{url}: connection refused (is the server running?)") from err
            except OSError as err:
                raise BackendError(f"{url}: cannot connect ({err.strerror or err})") from err
            conn.sock.settimeout(self.read_timeout)
            try:
                conn.request(method, f"{self._root}{path}", body=data, headers=headers)
                response = conn.getresponse()
                raw = response.read()
            except TimeoutError as err:
                raise BackendError(f"{url}: no answer within {self.read_timeout:g} s (read timeout)") from err
            except (OSError, http.client.HTTPException) as err:
                raise BackendError(f"{url}: the connection failed ({type(err).__name__}: {err})") from err
        text = raw.decode("utf-8", errors="replace")
        try:
            return response.status, json.loads(text)
        except ValueError:
            return response.status, text

    # -- what the server is -----------------------------------------------------------------------------
    def _probe(self, model: str | None) -> ServerInfo:
        kind, n_ctx = "unknown", None
        status, payload = self._request("GET", "/v1/models")
        entries = payload.get("data") if status == 200 and isinstance(payload, dict) else None
        first = entries[0] if isinstance(entries, list) and entries and isinstance(entries[0], dict) else {}
        if model is None and first.get("id"):
            model = str(first["id"])
        if first.get("owned_by") == "vllm":
            kind, n_ctx = "vllm", first.get("max_model_len")
        else:
            status, props = self._request("GET", "/props")
            if status == 200 and isinstance(props, dict) and "default_generation_settings" in props:
                kind = "llama.cpp"
                n_ctx = props["default_generation_settings"].get("n_ctx") or props.get("n_ctx")
            else:
                status, tokens = self._request("POST", "/extras/tokenize", {"input": "a"})
                if status == 200 and isinstance(tokens, dict) and isinstance(tokens.get("tokens"), list):
                    kind = "llama-cpp-python"
        return ServerInfo(kind=kind, model=model, n_ctx=int(n_ctx) if n_ctx else None)

    @property
    def structured(self) -> str:
        """The structured-output format in use (with ``auto``: the first one the server has not rejected)."""
        return self._styles[0]

    # -- the Backend protocol -----------------------------------------------------------------------------
    def count(self, text: str) -> int:
        if self._tokenize_path is None:
            from ..tokens.counter import default_counter

            return default_counter().count_text(text)
        body: dict[str, Any] = {"content": text} if self.info.kind == "llama.cpp" else {"input": text}
        if self.info.kind == "vllm":
            body = {"model": self.info.model, "prompt": text, "add_special_tokens": False}
        status, payload = self._request("POST", self._tokenize_path, body)
        where = f"{self._base}{self._tokenize_path}"
        if not 200 <= status < 300:
            raise BackendError(f"{where}: HTTP {status}: {_error_text(payload)}")
        if not isinstance(payload, dict):
            raise BackendError(f"{where}: the answer is not a JSON object: {str(payload)[:120]!r}")
        tokens = payload.get("tokens")
        if not isinstance(tokens, list):
            raise BackendError(f"{self.url}{self._tokenize_path}: no token list in the answer")
        return len(tokens) - self._count_offset

    def generate(
        self, prefix: str, suffix: str, schema: dict[str, Any], max_tokens: int, repeat_penalty: float = 1.0
    ) -> Generation:
        """One request at temperature 0 for ``prefix + suffix`` under ``schema``; the text comes back as the server
        wrote it (validated by the caller)."""
        prompt = prefix + suffix
        prompt_tokens = self.count(prompt) + 1  # + BOS
        if prompt_tokens + max_tokens > self.n_ctx:
            raise PromptTooLongError(
                f"prompt of {prompt_tokens} tokens + {max_tokens} output tokens exceeds the server's n_ctx={self.n_ctx}"
            )
        sent = bounded_schema(schema)
        body: dict[str, Any] = {"max_tokens": max_tokens, "temperature": 0.0, "seed": 0, "stream": False}
        if self.info.model:
            body["model"] = self.info.model
        if self.api == "chat":
            path, body["messages"] = "/v1/chat/completions", [{"role": "user", "content": prompt}]
        else:
            path, body["prompt"] = "/v1/completions", prompt
        if self.info.kind in ("llama.cpp", "llama-cpp-python"):
            body["repeat_penalty"] = repeat_penalty
            body["cache_prompt"] = True  # llama-server: reuse the fixed prefix's KV cache
        elif self.info.kind == "vllm":
            body["repetition_penalty"] = repeat_penalty
        start = time.perf_counter()
        while True:
            status, payload = self._request("POST", path, body | structured_fields(self._styles[0], sent))
            if status not in (400, 422) or len(self._styles) < 2:
                break
            self._styles.pop(0)  # the server said no to this request: the next format, from now on
        total = time.perf_counter() - start
        where = f"{self._base}{path}"
        if not 200 <= status < 300:
            said = _error_text(payload)
            too_long = status in (400, 413, 422) and _TOO_LONG.search(said)
            raise (PromptTooLongError if too_long else BackendError)(f"{where}: HTTP {status}: {said}")
        try:
            choice = payload["choices"][0]
            text = choice["message"]["content"] if self.api == "chat" else choice["text"]
        except (TypeError, KeyError, IndexError) as err:
            raise BackendError(f"{where}: no completion in the answer ({str(payload)[:120]!r})") from err
        usage = payload.get("usage") or {}
        timings = payload.get("timings") or {}  # llama-server reports its prompt time
        return Generation(
            text=text or "",
            prompt_tokens=int(usage.get("prompt_tokens") or prompt_tokens),
            generated_tokens=int(usage.get("completion_tokens") or 0),
            prompt_seconds=float(timings.get("prompt_ms") or 0.0) / 1000,
            total_seconds=total,
        )


# How servers say a prompt is over their window: llama-server "exceeds the available context size"
# (exceed_context_size_error), vLLM "This model's maximum context length is N tokens", OpenAI context_length_exceeded.
_TOO_LONG = re.compile(r"context.{0,12}(?:size|length|window)|maximum context|too (?:long|many tokens)", re.I)


def _error_text(payload: Any) -> str:
    """The server's own error message, on one line, short."""
    if isinstance(payload, dict):
        error = payload.get("error", payload.get("detail", payload))
        if isinstance(error, dict):
            error = error.get("message", error)
        text = error if isinstance(error, str) else json.dumps(error)
    else:
        text = str(payload)
    return " ".join(text.split())[:300] or "(empty answer)"
