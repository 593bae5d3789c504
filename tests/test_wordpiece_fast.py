"""The fused BERT WordPiece encoder (normalizer + pre-tokenizer + LinMaxMatch
in one pass) against the `tokenizers` library and against tokensmith's own
staged pipeline.

`encode` / `encode_batch` take the fused path for a `BertNormalizer` (or no
normalizer) with the `BertPreTokenizer`; `encode_full` needs offsets and so
runs the stages one by one: both must give `tokenizers`' ids on every input.
"""

from __future__ import annotations

import itertools
import json
import random

import pytest
import tokensmith as ts

from .adversarial import strings as adversarial_strings
from .conftest import asset, corpus_file

tokenizers = pytest.importorskip("tokenizers", reason="the tokenizers package is a test dependency")

MODELS = ["bert-base-uncased", "bert-base-chinese"]
CORPORA = ["en.txt", "code.txt", "zh.txt", "ja.txt"]
SLICE = 400_000


def _pair(name: str, edit=None):
    """(tokensmith, tokenizers) for the asset `name`, its JSON edited by `edit`."""
    data = json.loads(asset(name, "tokenizer.json").read_text(encoding="utf-8"))
    if edit is not None:
        edit(data)
    text = json.dumps(data)
    return ts.Tokenizer.from_str(text), tokenizers.Tokenizer.from_str(text)


_CACHE: dict[str, tuple] = {}


def _loaded(name: str):
    if name not in _CACHE:
        _CACHE[name] = _pair(name)
    return _CACHE[name]


def _ours(tok, text: str) -> list[int]:
    return tok.encode(text, add_special_tokens=False)


def _staged(tok, text: str) -> list[int]:
    return tok.encode_full(text, add_special_tokens=False).ids


def _ref(hf, text: str) -> list[int]:
    return hf.encode(text, add_special_tokens=False).ids


def _slice(name: str) -> str:
    raw = corpus_file(name).read_bytes()[:SLICE]
    return raw.decode("utf-8", "ignore")


def _hard_strings() -> list[str]:
    """Inputs aimed at the fused pass's seams."""
    rng = random.Random(44)
    marks = (
        "\u302e\u1b44\U0001d16d\u0300\u0301\u0308\u0316\u0327"
        "\u0345\u05b0\u093c\u0f39\u1dc0\u20d0\u302a\u3099"
    )
    odd_space = (
        "\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0"
        "\u1680\u2000\u2007\u200a\u2028\u2029\u202f\u205f\u3000"
    )
    controls = (
        "\x00\x01\x07\x1b\x7f\x80\x9f\xad\u200b\u200c\u200d\u200e\u2060\ufeff\ufffd\ue000\U000f0000"
    )
    letters = (
        "aAzZéÉßẞİıΣσςﬁǅÅÆĲ中文日本語한국어ÀÁÂÃÄÅǺ"
        "\u212a\u2126\u037e\u0387\u1fef\uf900\uf9ff\U0002f800"
    )
    punct = "-_.,!?¿¡。、「」"
    pieces = [marks, odd_space, controls, letters, "#", "##", "###", punct, "0123456789", " "]
    out = [
        "",
        " ",
        "##",
        "##ing ##s #a ###b",
        "a##b x##",
        "\x0bword\x0cword\x1cword\x85word",
        "e\u0301\u0316 a\u0316\u0301 o\u0f39\u0301 o\u0301\u0f39 e\u0345\u0301",
        # non-starters that are not marks: NFD's reordering shows
        "e\u0301\u302e\u0316x \U0001d165\u0301\U0001d16d o\u1b44\u0316",
        "\u0300\u302f \u00c9\u302e\u302f a\u302e",
        "\u4e2d\u302e\u0301\u4e2d A\u1734\u0301B, \U0001d16d\U0001d165",
        "İstanbul ΣΑΣ ÅNGSTRÖM ǅemal ﬁnal Straße",
        "\uf900\uf9ff\U0002f800 \u2f00\u3400\U00020000",
        "unaffable " * 50,
        "a" * 99,
        "a" * 100,
        "a" * 101,
        "é" * 100,
        "é" * 101,
        "x" + "\u0301" * 150,
        "supercalifragilisticexpialidocious" * 4,
        "😀" * 60 + " " + "😀a" * 51,
        "a" * 50_000,
        "中" * 20_000,
        "hello world " * 2_000,
    ]
    for _ in range(400):
        n = rng.randrange(1, 40)
        out.append("".join(rng.choice(rng.choice(pieces)) for _ in range(n)))
    return out


def _inputs() -> list[str]:
    return adversarial_strings() + _hard_strings()


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("corpus", CORPORA)
def test_corpus_whole_and_batch(name: str, corpus: str) -> None:
    tok, hf = _loaded(name)
    text = _slice(corpus)
    assert _ours(tok, text) == _ref(hf, text)
    docs = text.split("\n")
    ours = tok.encode_batch(docs, add_special_tokens=False)
    ref = [e.ids for e in hf.encode_batch(docs, add_special_tokens=False)]
    bad = [d for d, a, b in zip(docs, ours, ref, strict=True) if list(a) != b]
    assert not bad, bad[:3]


@pytest.mark.parametrize("name", MODELS)
def test_adversarial_fused_staged_and_reference(name: str) -> None:
    tok, hf = _loaded(name)
    for s in _inputs():
        ref = _ref(hf, s)
        assert _ours(tok, s) == ref, repr(s[:80])
        assert _staged(tok, s) == ref, repr(s[:80])


@pytest.mark.parametrize("name", MODELS)
def test_adversarial_batch(name: str) -> None:
    tok, hf = _loaded(name)
    inputs = _inputs()
    ours = tok.encode_batch(inputs, add_special_tokens=False)
    ref = [e.ids for e in hf.encode_batch(inputs, add_special_tokens=False)]
    assert [list(x) for x in ours] == ref


def _normalizer_options():
    for clean, chinese, strip, lower in itertools.product(
        (True, False), (True, False), (None, True, False), (True, False)
    ):
        yield {
            "type": "BertNormalizer",
            "clean_text": clean,
            "handle_chinese_chars": chinese,
            "strip_accents": strip,
            "lowercase": lower,
        }
    yield None


@pytest.mark.parametrize("normalizer", list(_normalizer_options()), ids=lambda n: json.dumps(n))
def test_every_normalizer_option(normalizer) -> None:
    def edit(data):
        data["normalizer"] = normalizer

    tok, hf = _pair("bert-base-uncased", edit)
    texts = adversarial_strings() + _hard_strings()[:200]
    texts += [_slice("en.txt")[:20_000], _slice("zh.txt")[:20_000]]
    for s in texts:
        ref = _ref(hf, s)
        assert _ours(tok, s) == ref, repr(s[:80])
        assert _staged(tok, s) == ref, repr(s[:80])
    # every code point, in batches (fused only: the staged path is slower)
    from .adversarial import every_code_point

    chunks = every_code_point()
    ours = tok.encode_batch(chunks, add_special_tokens=False)
    ref = [e.ids for e in hf.encode_batch(chunks, add_special_tokens=False)]
    bad = [c[:40] for c, a, b in zip(chunks, ours, ref, strict=True) if list(a) != b]
    assert not bad, bad[:3]


@pytest.mark.parametrize("limit", [0, 1, 5, 1000])
def test_max_input_chars_per_word(limit: int) -> None:
    def edit(data):
        data["model"]["max_input_chars_per_word"] = limit

    tok, hf = _pair("bert-base-uncased", edit)
    for s in _hard_strings()[:60] + [_slice("en.txt")[:20_000]]:
        assert _ours(tok, s) == _ref(hf, s), repr(s[:80])


def test_other_stages_are_not_fused() -> None:
    """A normalizer the fused pass does not know still gives the right ids."""

    def edit(data):
        data["normalizer"] = {
            "type": "Sequence",
            "normalizers": [{"type": "NFD"}, {"type": "Lowercase"}, {"type": "StripAccents"}],
        }

    tok, hf = _pair("bert-base-uncased", edit)
    for s in adversarial_strings()[:20] + ["Héllo WÖRLD, ﬁne"]:
        assert _ours(tok, s) == _ref(hf, s), repr(s[:80])


def test_long_runs_are_linear() -> None:
    """A million-character word and a million punctuation marks finish."""
    tok, hf = _loaded("bert-base-uncased")
    unk = tok.token_to_id("[UNK]")
    assert _ours(tok, "a" * 1_000_000) == [unk]
    assert _ours(tok, "!" * 1_000_000) == _ref(hf, "!" * 1000) * 1000


@pytest.mark.parametrize("name", MODELS)
def test_every_code_point(name: str) -> None:
    """Every scalar value, next to letters, digits and spaces, fused and batched."""
    from .adversarial import every_code_point

    tok, hf = _loaded(name)
    chunks = every_code_point()
    ours = tok.encode_batch(chunks, add_special_tokens=False)
    ref = [e.ids for e in hf.encode_batch(chunks, add_special_tokens=False)]
    bad = [c[:40] for c, a, b in zip(chunks, ours, ref, strict=True) if list(a) != b]
    assert not bad, bad[:3]
