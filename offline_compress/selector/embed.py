"""The embedded Gemma's token embeddings, read straight from its GGUF: a piece's vector is the mean of the
embedding rows of its tokens.

Why token embeddings and not hidden states: a forward pass of the 270M model runs at a few hundred tokens per
second on two cores, so scoring the lines of one large tool output would cost the agent seconds of CPU per step;
pooling embedding rows costs microseconds per token (measured in docs/selector.md). The matrix is Q8_0 in the
shipped GGUF (262,144 rows of 640): it is memory-mapped and only the rows of tokens met are dequantised, once
each, so the resident cost is the rows in use, not the 671 MB a float32 copy would take.

The tokens are the derived tokenizer's (``tokens/gguf.py``), the same ids llama.cpp uses for this GGUF.

Why a header walk of our own and not ``gguf.GGUFReader`` (a dependency already): the reader parses every header
field eagerly, about a million numpy views for the 262,144-entry vocabulary; measured on 2 cores, opening this
GGUF took 9.3 s and peaked at 733 MB with it, against 0.27 s and 51 MB here, with bit-identical rows.
"""

from __future__ import annotations

import mmap
import struct
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelFileError

EMBEDDING_TENSOR = "token_embd.weight"
_Q8_0, _F32, _F16 = 8, 0, 1
_Q8_BLOCK = 32
_SCALARS = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}  # GGUF value type -> bytes
_STRING, _ARRAY = 8, 9


class _Cursor:
    def __init__(self, buf: Any) -> None:
        self.buf, self.at = buf, 0

    def take(self, fmt: str) -> Any:
        value = struct.unpack_from("<" + fmt, self.buf, self.at)
        self.at += struct.calcsize("<" + fmt)
        return value[0] if len(value) == 1 else value

    def string(self) -> str:
        n = self.take("Q")
        self.at += n
        return bytes(self.buf[self.at - n : self.at]).decode("utf-8", "replace")

    def skip_value(self, kind: int) -> Any:
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            inner, n = self.take("I"), self.take("Q")
            if inner in _SCALARS:
                self.at += _SCALARS[inner] * n
            else:
                for _ in range(n):
                    self.skip_value(inner)
            return None
        size = _SCALARS[kind]
        value = struct.unpack_from("<" + {1: "B", 2: "H", 4: "I", 8: "Q"}[size], self.buf, self.at)[0]
        self.at += size
        return value


def _tensor_of(path: Path, buf: Any) -> tuple[int, int, int, int]:
    """(type, rows, columns, byte offset) of the embedding matrix in the GGUF ``buf``."""
    c = _Cursor(buf)
    if bytes(buf[:4]) != b"GGUF":
        raise ModelFileError(f"{path}: not a GGUF file (no GGUF magic)")
    version = c.take("4xI")
    if version < 2:
        raise ModelFileError(f"{path}: GGUF version {version} is not supported (2 or later)")
    n_tensors, n_kv = c.take("Q"), c.take("Q")
    alignment = 32
    for _ in range(n_kv):
        key = c.string()
        value = c.skip_value(c.take("I"))
        if key == "general.alignment" and isinstance(value, int):
            alignment = value
    found = None
    for _ in range(n_tensors):
        name = c.string()
        dims = [c.take("Q") for _ in range(c.take("I"))]
        kind, offset = c.take("I"), c.take("Q")
        if name == EMBEDDING_TENSOR:
            found = (kind, dims, offset)
    if found is None:
        raise ModelFileError(f"{path}: no {EMBEDDING_TENSOR} tensor")
    kind, dims, offset = found
    if len(dims) != 2 or kind not in (_Q8_0, _F32, _F16):
        raise ModelFileError(f"{path}: {EMBEDDING_TENSOR} is {dims} of GGUF type {kind}; Q8_0, F16 or F32 expected")
    data_start = (c.at + alignment - 1) // alignment * alignment
    return kind, dims[1], dims[0], data_start + offset


class TokenEmbeddings:
    """Pooled token embeddings of texts. Thread-safe; rows are dequantised on first use and kept."""

    def __init__(self, gguf_path: str | Path, tokenizer: Any) -> None:
        path = Path(gguf_path)
        if not path.is_file():
            raise ModelFileError(f"model file not found: {path} (offline-compress download-model brings it)")
        self.path = path
        self.tokenizer = tokenizer
        with path.open("rb") as f:
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self.kind, self.rows, self.dim, offset = _tensor_of(path, self._map)
        row_bytes = {_Q8_0: self.dim // _Q8_BLOCK * (2 + _Q8_BLOCK), _F16: 2 * self.dim, _F32: 4 * self.dim}[self.kind]
        self._raw = np.frombuffer(self._map, dtype=np.uint8, count=self.rows * row_bytes, offset=offset).reshape(
            self.rows, row_bytes
        )
        self._rows: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()

    def _dequantise(self, ids: np.ndarray) -> np.ndarray:
        raw = self._raw[ids]
        if self.kind == _F32:
            return raw.view(np.float32).reshape(len(ids), self.dim)
        if self.kind == _F16:
            return raw.view(np.float16).astype(np.float32).reshape(len(ids), self.dim)
        blocks = raw.reshape(len(ids), -1, 2 + _Q8_BLOCK)
        scale = blocks[:, :, :2].copy().view(np.float16).astype(np.float32)
        values = blocks[:, :, 2:].view(np.int8).astype(np.float32)
        return (values * scale).reshape(len(ids), self.dim)

    def vectors(self, ids: Sequence[int]) -> np.ndarray:
        """The embedding rows of ``ids`` (float32, one row per id)."""
        with self._lock:
            todo = sorted({i for i in ids if i not in self._rows})
            if todo:
                for i, row in zip(todo, self._dequantise(np.asarray(todo, dtype=np.int64))):
                    self._rows[i] = row
            return np.stack([self._rows[i] for i in ids]) if ids else np.zeros((0, self.dim), np.float32)

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        encodings = self.tokenizer.encode_batch([t.encode("utf-8", "replace").decode() for t in texts], False)
        return [list(e.ids) for e in encodings]

    def pooled(self, texts: Sequence[str]) -> tuple[np.ndarray, list[int]]:
        """(mean embedding row of each text's tokens, float32 ``len(texts) x dim``; each text's token count)."""
        ids = self.token_ids(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        flat = [i for row in ids for i in row]
        if flat:
            rows = self.vectors(flat)
            at = 0
            for k, row in enumerate(ids):
                if row:
                    out[k] = rows[at : at + len(row)].mean(axis=0)
                at += len(row)
        return out, [len(row) for row in ids]

    @property
    def rows_cached(self) -> int:
        return len(self._rows)

    def close(self) -> None:
        self._raw = np.zeros((0, 0), np.uint8)
        self._map.close()


__all__ = ["EMBEDDING_TENSOR", "TokenEmbeddings"]
