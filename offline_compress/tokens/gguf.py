"""The target tokenizer, derived from a GGUF's own vocabulary so token counts equal llama.cpp's.

llama.cpp tokenises a SentencePiece-style vocabulary (``tokenizer.ggml.model == "llama"``) like this:

1. with ``special=True`` every CONTROL, USER_DEFINED and UNKNOWN token is cut out of the raw text first, longest
   token first (Gemma 3's user-defined tokens include runs of 2-31 spaces, 1-31 newlines/tabs and HTML tags);
2. each remaining fragment gets ``' ' -> '▁'`` (and a leading ``'▁'`` if ``add_space_prefix``);
3. SPM-BPE: starting from UTF-8 characters, repeatedly merge the adjacent pair whose concatenation is a vocab
   token with the highest score (ties: leftmost); what is left unknown becomes ``<0xXX>`` byte tokens.

We rebuild that as a ``tokenizers`` BPE: merges ``(left, right)`` for every split of every vocab token into two
vocab tokens, ranked by the score of the merged token (so rank order == score order), ``byte_fallback=True``,
normalizer ``Replace(' ', '▁')``, and the special tokens as added tokens matched on the *raw* text
(``normalized=False``) as llama.cpp does; a rebuild that leaves the user-defined whitespace tokens to the BPE gets
every run of 2+ spaces wrong. The rebuild is exact under three conditions, checked at derivation time
(``exactness_problems``; a RuntimeWarning otherwise) and all true for Gemma 3: mergeable tokens have distinct
scores (a BPE breaks ties by rank, llama.cpp by position), every character of a mergeable token is a token
itself, and special tokens do not overlap (``tokenizers`` cuts them leftmost-longest, llama.cpp longest-first;
same-character runs such as Gemma's whitespace tokens split identically either way).
``scripts/check_tokenizer_agreement.py`` checks the result against llama.cpp on real histories.

Deriving is slow (~25 s for Gemma 3's 262k tokens on 2 cores, mostly ``GGUFReader`` parsing the arrays), so the
result is written once next to the GGUF as ``<name>.tokenizer.json``, loaded from there afterwards (~2 s), and
kept per process.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenizers import AddedToken, Tokenizer, decoders, normalizers, processors
from tokenizers.models import BPE

from ..errors import ModelFileError, TokenizerError
from ..files import write_atomic
from ..model_files import find_derived_tokenizer, resolve_model, tokenizer_path_for

# llama.cpp token types (gguf.TokenType): NORMAL=1, UNKNOWN=2, CONTROL=3, USER_DEFINED=4, UNUSED=5, BYTE=6.
_UNKNOWN, _CONTROL, _USER_DEFINED = 2, 3, 4
_SPLIT_OUT_TYPES = (_UNKNOWN, _CONTROL, _USER_DEFINED)

_cache: dict[tuple[str, int, int], Tokenizer] = {}
_lock = threading.Lock()
# Seconds the last derivation from a GGUF took (read + build), for reports; None until one ran in this process.
last_derivation_seconds: float | None = None


def _field(reader: Any, key: str, default: Any = None) -> Any:
    field = reader.fields.get(key)
    return default if field is None else field.contents()


def _read_vocab(path: Path) -> dict[str, Any]:
    """Tokenizer metadata of a GGUF, as plain Python values."""
    from gguf import GGUFReader  # imported here: only derivation needs it

    try:
        reader = GGUFReader(str(path))
    except (OSError, ValueError) as err:
        raise TokenizerError(f"{path}: cannot read GGUF ({err})") from None
    model = _field(reader, "tokenizer.ggml.model")
    if model != "llama":
        raise TokenizerError(
            f"{path}: tokenizer.ggml.model is {model!r}; only SentencePiece-style ('llama') vocabularies are supported"
        )
    fields = reader.fields
    if "tokenizer.ggml.tokens" not in fields or "tokenizer.ggml.scores" not in fields:
        raise TokenizerError(f"{path}: GGUF has no tokenizer.ggml.tokens/scores")
    # contents() on 262k-element arrays is slow; read the parts directly.
    tok_field = fields["tokenizer.ggml.tokens"]
    tokens = [bytes(tok_field.parts[i]).decode("utf-8", errors="replace") for i in tok_field.data]
    score_field = fields["tokenizer.ggml.scores"]
    scores = [float(score_field.parts[i][0]) for i in score_field.data]
    type_field = fields.get("tokenizer.ggml.token_type")
    types = [int(type_field.parts[i][0]) for i in type_field.data] if type_field else [1] * len(tokens)
    if not (len(tokens) == len(scores) == len(types)):
        raise TokenizerError(f"{path}: tokens, scores and token_type differ in length")
    return {
        "tokens": tokens,
        "scores": scores,
        "types": types,
        "bos": _field(reader, "tokenizer.ggml.bos_token_id"),
        "eos": _field(reader, "tokenizer.ggml.eos_token_id"),
        "unk": _field(reader, "tokenizer.ggml.unknown_token_id"),
        # llama.cpp's default for SPM vocabularies when the key is absent is True.
        "add_space_prefix": bool(_field(reader, "tokenizer.ggml.add_space_prefix", True)),
        "add_bos": bool(_field(reader, "tokenizer.ggml.add_bos_token", True)),
        "add_eos": bool(_field(reader, "tokenizer.ggml.add_eos_token", False)),
    }


def _spm_merges(tokens: list[str], scores: list[float]) -> list[tuple[str, str]]:
    """Every (left, right) with left, right and left+right in the vocabulary, best merged-token score first.

    SPM may merge any adjacent pair whose concatenation is a token, so every split counts, not just the one
    the vocabulary was trained with. Ties: token id, then split position (deterministic)."""
    vocab = {t: i for i, t in enumerate(tokens)}
    ranked: list[tuple[float, int, int, str, str]] = []
    for i, tok in enumerate(tokens):
        for k in range(1, len(tok)):
            left, right = tok[:k], tok[k:]
            if left in vocab and right in vocab:
                ranked.append((-scores[i], i, k, left, right))
    ranked.sort()
    return [(left, right) for _, _, _, left, right in ranked]


def exactness_problems(meta: dict[str, Any]) -> list[str]:
    """Vocabulary properties under which the BPE rebuild can disagree with llama.cpp (none for Gemma 3):

    - two tokens that SPM can form by merging share a score: llama.cpp breaks such ties by position, a BPE by
      merge rank;
    - a character inside a mergeable token is not a token itself: llama.cpp still merges it, a BPE has already
      turned it into byte tokens;
    - two split-out (special) tokens overlap, one's end being the other's start (except runs of one repeated
      character): llama.cpp cuts the longest first, ``tokenizers`` the leftmost."""
    tokens, scores, types = meta["tokens"], meta["scores"], meta["types"]
    vocab = set(tokens)
    problems: list[str] = []
    seen: dict[float, str] = {}
    missing: set[str] = set()
    for i, tok in enumerate(tokens):
        if types[i] in _SPLIT_OUT_TYPES or not any(tok[:k] in vocab and tok[k:] in vocab for k in range(1, len(tok))):
            continue
        if scores[i] in seen:
            problems.append(f"tokens {seen[scores[i]]!r} and {tok!r} share the score {scores[i]}")
        seen.setdefault(scores[i], tok)
        missing.update(c for c in tok if c not in vocab)
    if missing:
        problems.append(f"characters used in tokens but not tokens themselves: {sorted(missing)[:10]!r}")
    special = [tokens[i] for i, t in enumerate(types) if t in _SPLIT_OUT_TYPES and tokens[i]]
    starts: dict[str, list[str]] = {}
    for tok in special:
        for k in range(1, len(tok)):
            starts.setdefault(tok[:k], []).append(tok)
    for tok in special:
        for k in range(1, len(tok)):
            # runs of one and the same character (Gemma's whitespace tokens) split alike either way
            clash = [o for o in starts.get(tok[k:], ()) if o != tok and len(set(tok + o)) != 1]
            if clash:
                problems.append(f"special tokens {tok!r} and {clash[0]!r} overlap")
                break
    return problems


def _build_tokenizer(meta: dict[str, Any]) -> Tokenizer:
    tokens: list[str] = meta["tokens"]
    vocab = {t: i for i, t in enumerate(tokens)}
    if len(vocab) != len(tokens):
        # llama.cpp keeps the last id of a duplicated text; a BPE vocab cannot express two ids for one text.
        raise TokenizerError("GGUF vocabulary has duplicate token texts")
    unk = tokens[meta["unk"]] if isinstance(meta["unk"], int) and 0 <= meta["unk"] < len(tokens) else None
    model = BPE(
        vocab=vocab, merges=_spm_merges(tokens, meta["scores"]), unk_token=unk, byte_fallback=True, fuse_unk=False
    )
    tok = Tokenizer(model)

    norm: list[Any] = [normalizers.Replace(" ", "▁")]
    dec: list[Any] = [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    if meta["add_space_prefix"]:
        # llama.cpp prefixes every raw fragment (each follows a special token or the start): same as per-piece.
        norm.insert(0, normalizers.Prepend(" "))
        dec.append(decoders.Strip(" ", 1, 0))
    tok.normalizer = normalizers.Sequence(norm)
    tok.decoder = decoders.Sequence(dec)

    added = [
        AddedToken(
            tokens[i], special=t != _USER_DEFINED, normalized=False, lstrip=False, rstrip=False, single_word=False
        )
        for i, t in enumerate(meta["types"])
        if t in _SPLIT_OUT_TYPES and tokens[i]
    ]
    tok.add_tokens(added)

    bos, eos = meta["bos"], meta["eos"]
    single, specials = "$A", []
    if meta["add_bos"] and isinstance(bos, int):
        single = f"{tokens[bos]} {single}"
        specials.append((tokens[bos], bos))
    if meta["add_eos"] and isinstance(eos, int):
        single = f"{single} {tokens[eos]}"
        specials.append((tokens[eos], eos))
    if specials:
        # Only used by encode(..., add_special_tokens=True); counting adds BOS itself (see tokens.py).
        pair = f"{single} {single.replace('$A', '$B:1')}"
        tok.post_processor = processors.TemplateProcessing(single=single, pair=pair, special_tokens=specials)
    return tok


def tokenizer_from_gguf(path: str | Path) -> Tokenizer:
    """Build the tokenizer from a GGUF's metadata (slow: ~25 s for Gemma 3; prefer ``load_target_tokenizer``).
    Warns (RuntimeWarning) when the vocabulary has a property under which exact agreement is not guaranteed."""
    global last_derivation_seconds
    start = time.perf_counter()
    path = Path(path)
    if not path.is_file():
        raise TokenizerError(f"GGUF not found: {path}")
    meta = _read_vocab(path)
    problems = exactness_problems(meta)
    if problems:
        warnings.warn(
            f"{path}: the derived tokenizer may disagree with llama.cpp on some texts ({'; '.join(problems[:3])}"
            f"{'; ...' if len(problems) > 3 else ''}); compare its token counts with llama.cpp's on your histories "
            "(check_tokenizer_agreement.py in the scripts folder of a checkout does it)",
            RuntimeWarning,
            stacklevel=2,
        )
    tok = _build_tokenizer(meta)
    last_derivation_seconds = time.perf_counter() - start
    return tok


def write_tokenizer_json(gguf_path: str | Path, out_path: str | Path) -> Tokenizer:
    """Derive the tokenizer from ``gguf_path`` and save it to ``out_path`` atomically (tmp file + rename), in the
    compact form (``_compact``)."""
    tok = tokenizer_from_gguf(gguf_path)
    out = Path(out_path)
    fd, tmp = tempfile.mkstemp(prefix=out.name + ".", suffix=".partial", dir=out.parent)
    os.close(fd)
    try:
        tok.save(tmp)
        _compact(Path(tmp), Path(tmp))
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; the cache is as readable as the model next to it
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tok


# A derived normalizer that only turns spaces into '▁' (no prefix space): with no pre-tokenizer, a text then never
# has more tokens than UTF-8 bytes (``bounded``). ``_compact`` writes it first, so that this is read off 100 bytes.
_SPACES = {"type": "Sequence", "normalizers": [{"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]}
_BOUNDED_HEAD = '{"normalizer":' + json.dumps(_SPACES, ensure_ascii=False, separators=(",", ":"))
_BOUNDED_HEAD += ',"pre_tokenizer":null,'


def _compact(path: Path, out: Path) -> bool:
    """Rewrite a derived tokenizer.json whose merges are ``[left, right]`` pairs with ``"left right"`` strings, the
    older format ``tokenizers`` still reads, in place (``out`` written atomically); False when there was nothing to
    do. Gemma's 515k pairs made loading peak at 372 MB (the parser buffers them) and hold 306 MB after; as strings,
    174 and 161 MB, and the load takes 0.6 s instead of 1.1 s. A merge with a space in it is dropped (a string cannot
    hold one): the normalizer turns every space into '▁' before the model sees the text, so it never applies; the
    rank order of the others is kept. ``tests/test_tokenizer.py`` checks the ids are the same."""
    with path.open("rb") as fh:  # the pair form ends with ``"]]}}`` (merges are the model's last field)
        fh.seek(max(0, path.stat().st_size - 64))
        if not b"".join(fh.read().split()).endswith(b'"]]}}'):
            return False
    data = json.loads(path.read_text(encoding="utf-8"))
    model, norm = data.get("model") or {}, data.get("normalizer") or {}
    steps = norm.get("normalizers", [norm])
    if model.get("type") != "BPE" or data.get("pre_tokenizer") is not None or steps[-1] != _SPACES["normalizers"][0]:
        return False
    if any(step.get("type") != "Prepend" for step in steps[:-1]):
        return False
    model["merges"] = [f"{a} {b}" for a, b in model["merges"] if " " not in a and " " not in b]
    head = {"normalizer": _SPACES if norm == _SPACES else norm, "pre_tokenizer": None}
    mode = path.stat().st_mode & 0o777
    rest = {k: v for k, v in data.items() if k not in head}
    write_atomic(out, json.dumps(head | rest, ensure_ascii=False, separators=(",", ":")))
    os.chmod(out, mode)  # as readable as it was (write_atomic's temporary file is private)
    return True


def _key(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return (str(path.resolve()), st.st_mtime_ns, st.st_size)


def _release_free_memory() -> None:
    """Give the memory the parser freed back to the system: glibc keeps it otherwise (53 MB of Gemma's load)."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc
        ctypes.CDLL(None).malloc_trim(0)


def _load_json(path: Path, *, derived: bool = False) -> Tokenizer:
    with _lock:
        if derived:
            with contextlib.suppress(OSError, ValueError):  # a read-only folder, a broken file: as it is (or refused)
                _compact(path, path)  # once: a file derived before the compact form
        key = _key(path)
        if key not in _cache:
            try:
                _cache[key] = Tokenizer.from_file(str(path))
            except Exception as err:  # tokenizers raises a bare Exception on bad JSON
                raise TokenizerError(f"{path}: not a readable tokenizer.json ({err})") from None
            _release_free_memory()
        return _cache[key]


def _load_gguf(gguf: Path, *, verify: bool) -> Tokenizer:
    """The tokenizer of a GGUF via its cached ``<name>.tokenizer.json``, derived (and written) when missing or
    older than the GGUF. Falls back to an in-memory tokenizer when the folder is not writable."""
    derived = tokenizer_path_for(gguf)
    if derived.is_file() and derived.stat().st_mtime_ns >= gguf.stat().st_mtime_ns:
        return _load_json(derived, derived=True)
    key = _key(gguf)
    with _lock:
        if key in _cache:
            return _cache[key]
        if verify:
            try:
                resolve_model(gguf)  # size and sha256 against the manifest, before we trust its vocabulary
            except ModelFileError as err:
                raise TokenizerError(str(err)) from None
        try:
            tok = write_tokenizer_json(gguf, derived)
            _cache[_key(derived)] = tok  # later loads of the written file get this same object
        except OSError:
            tok = tokenizer_from_gguf(gguf)
        _cache[key] = tok
        _release_free_memory()
        return tok


@dataclass(frozen=True)
class TokenizerSource:
    """Where a target tokenizer is, found without reading it (``resolve_tokenizer``): a ``tokenizer.json``, or a
    GGUF (``gguf``) whose ``<name>.tokenizer.json`` is derived when missing. ``derived``: the file is (or will be)
    one ``write_tokenizer_json`` wrote."""

    path: Path
    gguf: bool = False
    derived: bool = False

    @property
    def bounded(self) -> bool:
        """A text's tokens are never more than its UTF-8 bytes, known before loading: a derived BPE (each token is a
        character, a byte of one, or an added token, itself at least a character) whose normalizer only turns
        spaces into '▁' and with no pre-tokenizer (``_BOUNDED_HEAD``). False when unknown (not derived yet)."""
        path = tokenizer_path_for(self.path) if self.gguf else self.path
        try:
            with path.open("rb") as fh:
                return self.derived and fh.read(len(_BOUNDED_HEAD.encode())) == _BOUNDED_HEAD.encode()
        except OSError:
            return False


def resolve_tokenizer(spec: str | Path | None = None) -> TokenizerSource:
    """Where the target tokenizer named by ``spec`` is (see ``load_target_tokenizer``): paths only, nothing is
    read. Raises ``TokenizerError`` when there is none."""
    if spec is None or (isinstance(spec, str) and not _looks_like_path(spec)):
        try:
            return TokenizerSource(resolve_model(spec, verify=False), gguf=True, derived=True)
        except ModelFileError as err:
            derived = find_derived_tokenizer(spec)
            if derived is not None:  # counting needs only the derived tokenizer, not the model itself
                return TokenizerSource(derived, derived=True)
            raise TokenizerError(f"no target tokenizer for {spec or 'the default model'}: {err}") from None
    path = Path(spec)
    if path.is_dir():
        if (path / "tokenizer.json").is_file():
            return TokenizerSource(path / "tokenizer.json")
        raise TokenizerError(f"{path}: folder has no tokenizer.json (expected a Hugging Face model folder)")
    if not path.exists():
        raise TokenizerError(f"tokenizer not found: {path}")
    if path.suffix == ".gguf":
        return TokenizerSource(path, gguf=True, derived=True)
    if path.suffix == ".json":
        return TokenizerSource(path)
    raise TokenizerError(f"{path}: expected a .gguf, a tokenizer.json or a Hugging Face model folder")


def load_tokenizer(source: TokenizerSource) -> Tokenizer:
    """The tokenizer at ``source``, loaded once per process (a GGUF's derived first when missing)."""
    return _load_gguf(source.path, verify=True) if source.gguf else _load_json(source.path, derived=source.derived)


def load_target_tokenizer(spec: str | Path | None = None) -> Tokenizer:
    """The target tokenizer named by ``spec``, loaded once per process.

    ``spec``: None (the default model of the manifest), a manifest model name, a ``.gguf`` path
    (its ``<name>.tokenizer.json`` is derived once and cached next to it), a ``tokenizer.json`` path, or a
    Hugging Face model folder holding ``tokenizer.json``. For a manifest model whose GGUF is absent, an already
    derived ``<name>.tokenizer.json`` is enough. Anything else raises ``TokenizerError``."""
    return load_tokenizer(resolve_tokenizer(spec))


def _looks_like_path(spec: str) -> bool:
    return os.sep in spec or "/" in spec or spec.endswith((".gguf", ".json")) or Path(spec).exists()
