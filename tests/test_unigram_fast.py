"""The fused Unigram encoder (`Model::encode_fused`) against the reference libraries.

T5's ``tokenizer.json`` (Precompiled + Replace + Metaspace + Unigram) against
``tokenizers``, and SentencePiece Unigram ``.model`` files against
``sentencepiece``: the shared one, and small models trained here (default,
byte fallback, pieces that cross whitespace, whitespace as suffix), on corpus
slices, adversarial strings and every code point; single texts and batches;
and the fused path (ids only) against the staged one (``encode_full``, which
needs offsets).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tokensmith as ts

from . import adversarial
from .conftest import asset, corpus_file

SLICE = 200_000


def _odd_strings() -> list[str]:
    marks = "".join(chr(c) for c in range(0x300, 0x370))
    return [
        "",
        " ",
        "   ",
        "\u2581",
        "\u2581\u2581 \u2581a\u2581 b\u2581",
        " \u2581x",
        "a  b   c    d",
        "tab\tnew\nline\r\ncr\rff\x0cvt\x0b end",
        "\r\n\r\n\r",
        "e\u0301\u0302 a" + marks + " \u0301start",
        "x\u200dy \u200b\u2060\ufeff z",
        "\u3000\u00a0\u2003\u2028\u2029\u0085 wide spaces",
        "\x00a\x01b\x7f\x9f",
        "\U0001f600\U0001f1fa\U0001f1f8\U0001f1e6 \U00020000\U0002a6d6 \U000e0001",
        "\ufffd\U0010ffff\ue000 unknown \u0fff\u2fff",
        "\u1100\u1161\u11a8 \uac00\u11a8 \ud7a3",
        "\u0915\u094d\u0937\u093f \u0600a \u0e01\u0e33",
        "\uff21\uff22\uff23 \ufb01x \u2160 \u00bd",
        "w" * 3000,
        "\u00e9" * 1000,
        "a\u0301" * 500,
        "word " * 300,
        "http://example.com/" + "x" * 40 + "?q=" + "1" * 40,
    ]


def _corpus(name: str) -> str:
    return corpus_file(name).read_text(encoding="utf-8")[:SLICE]


def _inputs() -> list[str]:
    texts = [_corpus(n) for n in ("en.txt", "code.txt", "zh.txt", "ja.txt")]
    return texts + adversarial.strings() + _odd_strings()


def _docs(text: str) -> list[str]:
    return [text[i : i + 1500] for i in range(0, len(text), 1500)]


def _check(tok: ts.Tokenizer, ref_one, ref_many, texts: list[str]) -> None:  # type: ignore[no-untyped-def]
    for k, t in enumerate(texts):
        want = ref_one(t)
        assert tok.encode(t, add_special_tokens=False) == want, (k, t[:80])
        assert tok.encode_full(t, add_special_tokens=False).ids == want, (k, t[:80])
    got = tok.encode_batch(texts, add_special_tokens=False)
    assert [list(x) for x in got] == [list(x) for x in ref_many(texts)]


# -- T5 tokenizer.json ------------------------------------------------------


@pytest.fixture(scope="module")
def t5() -> tuple[ts.Tokenizer, object]:
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a test dependency")
    path = asset("t5", "tokenizer.json")
    return ts.load(path), tokenizers.Tokenizer.from_file(str(path))


def _hf(ref):  # type: ignore[no-untyped-def]
    one = lambda t: ref.encode(t, add_special_tokens=False).ids  # noqa: E731
    many = lambda ts_: [e.ids for e in ref.encode_batch(ts_, add_special_tokens=False)]  # noqa: E731
    return one, many


def test_t5_matches_tokenizers(t5) -> None:  # type: ignore[no-untyped-def]
    tok, ref = t5
    _check(tok, *_hf(ref), _inputs())


def test_t5_batches_of_documents(t5) -> None:  # type: ignore[no-untyped-def]
    tok, ref = t5
    for name in ("en.txt", "code.txt", "zh.txt"):
        docs = _docs(_corpus(name))
        want = [e.ids for e in ref.encode_batch(docs, add_special_tokens=False)]
        assert [list(x) for x in tok.encode_batch(docs, add_special_tokens=False)] == want, name


def test_t5_every_code_point(t5) -> None:  # type: ignore[no-untyped-def]
    tok, ref = t5
    one, _ = _hf(ref)
    for k, chunk in enumerate(adversarial.every_code_point(4096)):
        assert tok.encode(chunk, add_special_tokens=False) == one(chunk), k


def test_t5_cache_sees_the_same_words_again(t5) -> None:  # type: ignore[no-untyped-def]
    # the second pass is served from the per-thread cache
    tok, ref = t5
    text = _corpus("en.txt")[:50_000]
    want = ref.encode(text, add_special_tokens=False).ids
    for _ in range(3):
        assert tok.encode(text, add_special_tokens=False) == want


# -- SentencePiece .model files ----------------------------------------------

spm = pytest.importorskip("sentencepiece", reason="sentencepiece is a test dependency")


def _sp(ref):  # type: ignore[no-untyped-def]
    return (lambda t: ref.encode(t)), (lambda ts_: ref.encode(ts_))


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> dict[str, Path]:  # type: ignore[no-untyped-def]
    """Small Unigram models trained on the mixed corpora, by variant."""
    d = tmp_path_factory.mktemp("spm")
    mix = []
    for name, n in (("en.txt", 300_000), ("code.txt", 300_000), ("zh.txt", 150_000)):
        text = corpus_file(name).read_text(encoding="utf-8")
        mix += [line for line in text[-n:].splitlines() if line.strip()]
    (d / "mix.txt").write_text("\n".join(mix), encoding="utf-8")
    variants = {
        "default": {},
        "bytes": {"byte_fallback": True},
        "cross": {"split_by_whitespace": False},
        "suffix": {"treat_whitespace_as_suffix": True},
    }
    out = {}
    for name, extra in variants.items():
        spm.SentencePieceTrainer.train(
            input=str(d / "mix.txt"),
            model_prefix=str(d / name),
            vocab_size=4000,
            model_type="unigram",
            minloglevel=2,
            num_threads=1,
            **extra,
        )
        out[name] = d / f"{name}.model"
    return out


def test_ja_model_matches_sentencepiece() -> None:
    path = asset("sentencepiece-unigram", "test_ja_model.model")
    ref = spm.SentencePieceProcessor(model_file=str(path))
    _check(ts.load(path), *_sp(ref), _inputs())


@pytest.mark.parametrize("variant", ["default", "bytes", "cross", "suffix"])
def test_trained_models_match_sentencepiece(trained, variant: str) -> None:  # type: ignore[no-untyped-def]
    path = trained[variant]
    ref = spm.SentencePieceProcessor(model_file=str(path))
    if variant == "cross":
        # the variant must exercise the unchunked path: a piece with ▁ inside
        pieces = [ref.id_to_piece(i) for i in range(ref.get_piece_size())]
        if not any("\u2581" in p[1:] for p in pieces):
            pytest.skip("training gave no piece with \u2581 past its start")
    _check(ts.load(path), *_sp(ref), _inputs())


def test_sentencepiece_batches_and_every_code_point(trained) -> None:  # type: ignore[no-untyped-def]
    for path in (trained["default"], trained["bytes"]):
        tok, ref = ts.load(path), spm.SentencePieceProcessor(model_file=str(path))
        for name in ("en.txt", "code.txt", "zh.txt"):
            docs = _docs(_corpus(name))
            assert [
                list(x) for x in tok.encode_batch(docs, add_special_tokens=False)
            ] == ref.encode(docs)
        for k, chunk in enumerate(adversarial.every_code_point(8192)):
            assert tok.encode(chunk, add_special_tokens=False) == ref.encode(chunk), (path.name, k)
