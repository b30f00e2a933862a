"""The derived target tokenizer agrees with llama.cpp token for token (fixtures, tricky strings, tiny vocabularies),
and load_target_tokenizer / write_tokenizer_json behave (caching, atomic writes, clear errors)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from tokenizers import Tokenizer

from offline_compress.errors import TokenizerError
from offline_compress.model_files import tokenizer_path_for
from offline_compress.tokens import gguf as gguf_tokenizer
from offline_compress.tokens.gguf import load_target_tokenizer, tokenizer_from_gguf, write_tokenizer_json

FIXTURES = Path(__file__).resolve().parent / "fixtures"
TRAJECTORY_DIRS = [FIXTURES / d for d in ("aider", "mini-swe-agent", "openhands", "swe-agent")]


def _mismatches(texts: list[str], tok: Any, llama: Any, *, add_bos: bool = False) -> list[str]:
    out = []
    for text, enc in zip(texts, tok.encode_batch(texts, add_special_tokens=add_bos)):
        ref = llama.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True)
        if enc.ids != ref:
            out.append(
                f"{text[:80]!r}: ours {[tok.id_to_token(i) for i in enc.ids][:20]} "
                f"llama.cpp {[tok.id_to_token(i) for i in ref][:20]}"
            )
    return out


def test_every_fixture_text_agrees_with_llama_cpp(agreement_script, target_tokenizer, llama_vocab):
    texts = agreement_script.collect_texts(TRAJECTORY_DIRS)
    assert len(texts) > 300, "fixture trajectories not found or not parsed"
    result = agreement_script.compare(texts, target_tokenizer, llama_vocab)
    assert result["tokens"] > 50_000
    shown = [agreement_script.describe(m, target_tokenizer) for m in result["mismatches"][:5]]
    assert not result["mismatches"], f"{len(result['mismatches'])} mismatches:\n" + "\n".join(shown)


def _tricky_strings() -> list[str]:
    out: list[str] = []
    for n in range(1, 81):
        sp = " " * n
        out += [
            sp,
            f"x{sp}y",
            f"{sp}\t{sp}\n",
            f"def f():\n{sp}return 1",
            "\n" * n,
            "\t" * n,
            f"a{sp}\n{sp}b",
            f"{sp}▁{sp}",
            f"{'-' * n} {'=' * n}",
            "ab" * n,
            "." * n,
        ]
    rng = random.Random(7)
    ws = [" ", "  ", "\t", "\n", "\r\n", " \t", "\u00a0", "\u3000", "x", "▁"]
    out += ["".join(rng.choice(ws) for _ in range(rng.randint(1, 60))) for _ in range(300)]
    out += [
        "😀",
        "👨‍👩‍👧‍👦 family",
        "🇫🇷🇯🇵",
        "emoji😀in😀text",
        "日本語のテキストです。",
        "中文 文本，标点！",
        "한국어",
        "தமிழ் எழுத்து",
        "العربية",
        "עברית",
        "ไทย",
        "Ελληνικά",
        "ℝ∑∫√∞",
        "\u200b\u200c\u200d\ufeff",
        "".join(chr(c) for c in range(0, 32)),
        "\x7f\x80\x9f",
        "nul\x00inside",
        "\ufffd\ufffe",
        "\ue000\uf8ff",
        "\U0010fffd\U000e0001",
        "\U0001d54f\U0001f9ff",
        "text <start_of_turn>user\nhi<end_of_turn>\n more",
        "<start_of_turn",
        "start_of_turn>",
        "<<start_of_turn>>",
        "<bos><eos><pad><unk><mask>",
        "<unused0><unused6241>",
        "[multimodal]",
        "<start_of_image>x<end_of_image>",
        "<table><tr><td>1</td></tr></table>",
        "<0x41><0x0A>",
        "<0xZZ>",
        "a<b>c</b>",
        "<h1>Title</h1>\n\n\n\n",
        "```python\n    if x:\n\t\treturn  y\n```",
        "C:\\path\\to\\file.txt",
        "https://example.com/a?b=c&d=e#f",
        "0123456789 3.14159 1e-10 0xFFFF",
        "tab\tseparated\tvalues\n" * 3,
        "trailing spaces   \n   \n",
    ]
    return out


def test_tricky_strings_agree_with_llama_cpp(target_tokenizer, llama_vocab):
    bad = _mismatches(_tricky_strings(), target_tokenizer, llama_vocab)
    assert not bad, f"{len(bad)} mismatches:\n" + "\n".join(bad[:5])


def test_bos_from_post_processor_matches_llama_cpp(target_tokenizer, llama_vocab):
    texts = ["", "hello", "<start_of_turn>user\nhi<end_of_turn>\n", "  spaced  "]
    assert not _mismatches(texts, target_tokenizer, llama_vocab, add_bos=True)


def test_decode_round_trips(target_tokenizer):
    for text in ["Hello  world\n\ttab", "日本語 😀 \x00\x7f", "a    b\n\n\nc", "<start_of_turn>user\nx<end_of_turn>\n"]:
        ids = target_tokenizer.encode(text, add_special_tokens=False).ids
        assert target_tokenizer.decode(ids, skip_special_tokens=False) == text


# --- tiny vocabularies: the derivation itself, against llama.cpp ---------------------------------------------

_BYTES = [f"<0x{b:02X}>" for b in range(256)]


def _write_gguf(
    path: Path,
    normals: list[str],
    scores: list[float],
    *,
    specials: dict[str, int] | None = None,
    add_space_prefix: bool = False,
    model: str = "llama",
) -> Path:
    import gguf

    specials = specials or {}
    w = gguf.GGUFWriter(str(path), "llama")
    # Minimal hyper-parameters so llama.cpp accepts the file with vocab_only=True.
    w.add_context_length(64)
    w.add_embedding_length(8)
    w.add_block_count(1)
    w.add_feed_forward_length(8)
    w.add_head_count(1)
    w.add_layer_norm_rms_eps(1e-5)
    tokens = ["<unk>", "<s>", "</s>", *_BYTES, *normals, *specials]
    w.add_tokenizer_model(model)
    w.add_token_list(tokens)
    w.add_token_scores([0.0, 0.0, 0.0] + [0.0] * 256 + [float(s) for s in scores] + [0.0] * len(specials))
    w.add_token_types([2, 3, 3] + [6] * 256 + [1] * len(normals) + list(specials.values()))
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_space_prefix(add_space_prefix)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _tiny_vocab(rng: random.Random) -> tuple[list[str], list[float]]:
    alphabet = ["a", "b", "c", "▁", "é"]
    normals = list(alphabet)
    while len(normals) < 60:
        piece = "".join(rng.choice(alphabet) for _ in range(rng.randint(2, 5)))
        if piece not in normals:
            normals.append(piece)
    scores = [float(s) for s in rng.sample(range(-5000, -1), len(normals))]  # distinct, like Gemma's
    return normals, scores


@pytest.mark.parametrize("add_space_prefix", [False, True])
def test_tiny_vocabularies_agree_with_llama_cpp(tmp_path, add_space_prefix):
    import llama_cpp

    rng = random.Random(11 + add_space_prefix)
    pieces = ["a", "b", "c", " ", "  ", "é", "x", "\n", "▁", "<ctl>", "<ud>", "   ", "ab", "ca"]
    bad: list[str] = []
    for v in range(4):
        normals, scores = _tiny_vocab(rng)
        path = _write_gguf(
            tmp_path / f"tiny{v}.gguf",
            normals,
            scores,
            add_space_prefix=add_space_prefix,
            specials={"<ctl>": 3, "<ud>": 4, "  ": 4, "\n": 4},
        )
        tok = tokenizer_from_gguf(path)
        llama = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)
        texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 30))) for _ in range(400)]
        bad += _mismatches(texts, tok, llama)
        bad += _mismatches(texts[:50], tok, llama, add_bos=True)
        llama.close()
    assert not bad, f"{len(bad)} mismatches:\n" + "\n".join(bad[:5])


@pytest.mark.parametrize("add_space_prefix", [False, True])
def test_the_compact_file_tokenizes_as_the_derivation(tmp_path, add_space_prefix):
    """``write_tokenizer_json`` writes merges as "left right" strings (half the memory to load) and drops the merges
    with a space, which never apply: the normalizer turns every space into '▁' first. Same ids; bounded only
    without the prefix space (``TokenizerSource.bounded``)."""
    rng = random.Random(5)
    normals, scores = _tiny_vocab(rng)
    normals, scores = [*normals, " ", " a", "a "], [*scores, -6001.0, -6002.0, -6003.0]  # merges with a space
    path = _write_gguf(tmp_path / "m.gguf", normals, scores, add_space_prefix=add_space_prefix, specials={"  ": 4})
    derived = tmp_path / "m.tokenizer.json"
    whole = write_tokenizer_json(path, derived)
    data = json.loads(derived.read_text(encoding="utf-8"))
    assert all(isinstance(m, str) and " " not in m.replace(" ", "", 1) for m in data["model"]["merges"])
    assert len(data["model"]["merges"]) < len(json.loads(whole.to_str())["model"]["merges"])
    compact = Tokenizer.from_file(str(derived))
    pieces = ["a", "b", "c", " ", "  ", "   ", "é", "▁", " a", "a ", "ab", "\n"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 40))) for _ in range(2000)]
    for a, b in zip(whole.encode_batch(texts), compact.encode_batch(texts)):
        assert a.ids == b.ids
    assert gguf_tokenizer.TokenizerSource(path, gguf=True, derived=True).bounded is not add_space_prefix


def test_an_older_derived_file_is_made_compact_once(tmp_path, target_tokenizer):
    old = tmp_path / "m.tokenizer.json"
    old.write_text(target_tokenizer.to_str(), encoding="utf-8")  # [left, right] pairs, as before
    old.chmod(0o644)
    loaded = gguf_tokenizer._load_json(old, derived=True)
    assert old.read_bytes().startswith(b'{"normalizer"') and (old.stat().st_mode & 0o777) == 0o644
    texts = [f"def f{i}():\n    return  {i} é 日本  " * 5 for i in range(200)]
    assert [e.ids for e in loaded.encode_batch(texts)] == [e.ids for e in target_tokenizer.encode_batch(texts)]


def test_tied_scores_warn(tmp_path):
    path = _write_gguf(tmp_path / "ties.gguf", ["a", "b", "ab", "ba"], [-1.0, -2.0, -3.0, -3.0])
    with pytest.warns(RuntimeWarning, match="share the score"):
        tokenizer_from_gguf(path)


def test_non_spm_vocabulary_is_rejected(tmp_path):
    path = _write_gguf(tmp_path / "bpe.gguf", ["a", "b"], [-1.0, -2.0], model="gpt2")
    with pytest.raises(TokenizerError, match="only SentencePiece"):
        tokenizer_from_gguf(path)


def test_gguf_spec_derives_once_and_caches(tmp_path):
    path = _write_gguf(tmp_path / "cached.gguf", ["a", "b", "ab"], [-1.0, -2.0, -3.0])
    first = load_target_tokenizer(path)
    assert gguf_tokenizer.last_derivation_seconds is not None
    derived = tokenizer_path_for(path)
    assert derived.is_file() and not list(tmp_path.glob("*.partial"))
    assert load_target_tokenizer(path) is first  # same process: no second derivation
    assert load_target_tokenizer(derived) is first


# --- load_target_tokenizer specs and errors -----------------------------------------------------------------


def test_default_spec_is_the_models_tokenizer(model_path, target_tokenizer):
    assert load_target_tokenizer() is target_tokenizer
    assert load_target_tokenizer(str(model_path)) is target_tokenizer
    assert load_target_tokenizer(tokenizer_path_for(model_path)) is target_tokenizer


def test_hugging_face_folder_spec(tmp_path, model_path, target_tokenizer):
    (tmp_path / "tokenizer.json").symlink_to(tokenizer_path_for(model_path))
    tok = load_target_tokenizer(tmp_path)
    assert tok.encode("hello  world").ids == target_tokenizer.encode("hello  world").ids


@pytest.mark.parametrize(
    "make_spec, message",
    [
        (lambda d: d / "missing.gguf", "not found"),
        (lambda d: (d / "vocab.txt").write_text("x") and d / "vocab.txt", "expected a .gguf"),
        (lambda d: d, "no tokenizer.json"),
        (lambda d: "no-such-model", "no target tokenizer"),
        (lambda d: (d / "bad.json").write_text("{not json") and d / "bad.json", "not a readable tokenizer.json"),
    ],
)
def test_bad_specs_raise_tokenizer_error(tmp_path, make_spec, message):
    with pytest.raises(TokenizerError, match=message):
        load_target_tokenizer(make_spec(tmp_path))


def test_write_tokenizer_json_is_atomic(tmp_path, monkeypatch):
    from tokenizers.models import WordLevel

    small = Tokenizer(WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
    monkeypatch.setattr(gguf_tokenizer, "tokenizer_from_gguf", lambda path: small)
    out = tmp_path / "m.tokenizer.json"
    write_tokenizer_json(tmp_path / "m.gguf", out)
    assert json.loads(out.read_text())["model"]["type"] == "WordLevel"

    class Broken:
        def save(self, path: str) -> None:
            Path(path).write_text("half a fi")
            raise OSError("disk full")

    monkeypatch.setattr(gguf_tokenizer, "tokenizer_from_gguf", lambda path: Broken())
    with pytest.raises(OSError, match="disk full"):
        write_tokenizer_json(tmp_path / "m.gguf", out)
    assert json.loads(out.read_text())["model"]["type"] == "WordLevel"  # the old file is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.tokenizer.json"]  # no temporary left behind


def test_derived_tokenizer_suffices_without_the_model(tmp_path, monkeypatch, model_path, target_tokenizer):
    (tmp_path / "manifest.json").write_text(
        json.dumps({"default": "m", "models": [{"name": "m", "file": "m.gguf", "sha256": "0" * 64}]})
    )
    monkeypatch.setenv("OFFLINE_COMPRESS_MODEL_DIR", str(tmp_path))
    with pytest.raises(TokenizerError, match=r"model m \(m.gguf\) is not installed; searched"):
        load_target_tokenizer()
    (tmp_path / "m.tokenizer.json").symlink_to(tokenizer_path_for(model_path))
    assert load_target_tokenizer().encode("a  b").ids == target_tokenizer.encode("a  b").ids
    assert load_target_tokenizer("m").encode("a  b").ids == target_tokenizer.encode("a  b").ids
