"""llama-cpp-python's own OpenAI-compatible server (``python -m llama_cpp.server``, extra ``server``) serving a GGUF
on 127.0.0.1, as a subprocess: the real server the server backend is tested and benchmarked against."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from offline_compress.errors import BackendError


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve(
    model_path: str | Path, log: Path, *, n_ctx: int = 4096, n_gpu_layers: int = 0, start_timeout: float = 180.0
) -> Iterator[str]:
    """Start the server on a free port, wait until it accepts connections, yield its URL, stop it. Its output goes
    to ``log``; ``BackendError`` with the log's tail when it does not come up."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_gpu_layers",
        str(n_gpu_layers),
    ]
    with log.open("w") as sink:
        proc = subprocess.Popen(
            command, stdout=sink, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = log.read_text(errors="replace")[-1500:]
                    raise BackendError(f"llama_cpp.server did not start ({' '.join(command)}): {tail}") from None
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
