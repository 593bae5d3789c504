"""The WordPiece family (BERT and descendants) against the `tokenizers` library.

Real BERT files (``bert-base-uncased``, ``bert-base-chinese``) loaded from
``tokenizer.json`` and from ``vocab.txt``; every BERT component built with the
``tokenizers`` Python API, serialized and loaded here; every Unicode code
point through the BERT normalizer and pre-tokenizer; the bad-input errors.
"""

from __future__ import annotations

import functools
import json
import random
import warnings
from pathlib import Path

import pytest
import tokensmith as ts
from tokensmith.errors import (
    TokenizerFormatError,
    UnsupportedComponentError,
    VocabShortfallWarning,
)
from tokensmith.formats import bert

from .adversarial import strings as _strings
from .conftest import asset, corpus_file

tokenizers = pytest.importorskip("tokenizers", reason="the tokenizers package is a test dependency")
from tokenizers import decoders, models, normalizers, pre_tokenizers, processors  # noqa: E402

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@functools.lru_cache(maxsize=1)
def _adversarial() -> tuple[str, ...]:
    return tuple(_strings())


def strings() -> list[str]:
    """The adversarial suite (built once: it scans every code point)."""
    return list(_adversarial())


# ----------------------------------------------------------------- helpers
def assert_same(ours: ts.Tokenizer, hf, texts, pairs=None) -> None:  # type: ignore[no-untyped-def]
    """Identical ids, tokens, offsets, type ids, masks and decodes, for single
    inputs and (when given) pairs."""
    cases = [(t, None) for t in texts] + list(pairs or [])
    for text, pair in cases:
        want = hf.encode(text, pair) if pair is not None else hf.encode(text)
        got = ours.encode_full(text, pair, allowed_special="all")
        where = f"on {text[:60]!r}" + (f" / {pair[:60]!r}" if pair is not None else "")
        if got.ids != want.ids:
            n = min(len(got.ids), len(want.ids))
            i = next((k for k in range(n) if got.ids[k] != want.ids[k]), n)
            raise AssertionError(
                f"ids differ {where} at {i}: ours {got.tokens[max(0, i - 2):i + 3]} "
                f"tokenizers {want.tokens[max(0, i - 2):i + 3]}"
            )
        assert got.tokens == want.tokens, f"tokens differ {where}"
        assert got.offsets == [tuple(o) for o in want.offsets], f"offsets differ {where}"
        assert got.type_ids == want.type_ids, f"type ids differ {where}"
        assert got.special_tokens_mask == want.special_tokens_mask, f"masks differ {where}"
        if pair is None:
            assert ours.encode(text, allowed_special="all") == want.ids, f"encode() {where}"
        assert ours.decode(got.ids) == hf.decode(want.ids, skip_special_tokens=False), where
        assert ours.decode(got.ids, skip_special_tokens=True) == hf.decode(want.ids), where
    # a batch (the special tokens added around each text), on one thread and two
    want_all = [e.ids for e in hf.encode_batch(list(texts))]
    for threads in (1, 2):
        got = ours.encode_batch(list(texts), allowed_special="all", num_threads=threads)
        assert got == want_all


def slices(text: str, n: int, size: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        i = rng.randrange(max(1, len(text) - size))
        out.append(text[i : i + rng.randrange(1, size)])
    return out


def real_texts(name: str) -> list[str]:
    data = corpus_file(name).read_text(encoding="utf-8")
    return [data[:100_000], data[100_000:200_000]] + slices(data, 300, 400, seed=len(name))


def pairs_of(texts: list[str], n: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    short = [t for t in texts if len(t) < 1000]
    return [(rng.choice(short), rng.choice(short)) for _ in range(n)]


def ours_from(hf) -> ts.Tokenizer:  # type: ignore[no-untyped-def]
    return ts.Tokenizer.from_str(hf.to_str())


def component(ours: ts.Tokenizer, key: str):  # type: ignore[no-untyped-def]
    return json.loads(ours.to_str())[key]


@pytest.fixture(scope="module")
def uncased():  # type: ignore[no-untyped-def]
    p = asset("bert-base-uncased", "tokenizer.json")
    return ts.load(p), tokenizers.Tokenizer.from_file(str(p))


@pytest.fixture(scope="module")
def chinese():  # type: ignore[no-untyped-def]
    p = asset("bert-base-chinese", "tokenizer.json")
    return ts.load(p), tokenizers.Tokenizer.from_file(str(p))


# -------------------------------------------------------- real BERT files
def test_bert_base_uncased_on_english(uncased) -> None:  # type: ignore[no-untyped-def]
    ours, hf = uncased
    texts = real_texts("en.txt")
    assert_same(ours, hf, texts, pairs_of(texts, 100, seed=1))


def test_bert_base_uncased_on_chinese_and_adversarial(uncased) -> None:  # type: ignore[no-untyped-def]
    ours, hf = uncased
    texts = real_texts("zh.txt") + strings()
    assert_same(ours, hf, texts, pairs_of(texts, 50, seed=2))


def test_bert_base_chinese(chinese) -> None:  # type: ignore[no-untyped-def]
    ours, hf = chinese
    texts = real_texts("zh.txt") + real_texts("en.txt")[:100] + strings()
    assert_same(ours, hf, texts, pairs_of(texts, 100, seed=3))


def test_batches_match_single_encodes(uncased) -> None:  # type: ignore[no-untyped-def]
    ours, hf = uncased
    texts = strings()
    want = [e.ids for e in hf.encode_batch(texts)]
    assert ours.encode_batch(texts, allowed_special="all") == want
    assert ours.decode_batch(want, skip_special_tokens=True) == hf.decode_batch(want)


def test_special_token_text_and_added_tokens(uncased) -> None:  # type: ignore[no-untyped-def]
    ours, hf = uncased
    texts = ["[CLS] hello [SEP] world [MASK].", "a[MASK]b [PAD][PAD] [unused1] [UNK]x"]
    assert_same(ours, hf, texts, [("[MASK] is", "the [SEP] pair")])
    assert ours.encode("a[MASK]b", disallowed_special=(), add_special_tokens=False) == (
        hf.encode("a[ MASK ]b", add_special_tokens=False).ids
    )


def test_vocab_txt_loads_like_tokenizer_json(uncased, chinese) -> None:  # type: ignore[no-untyped-def]
    sample = strings()[:12] + slices(corpus_file("en.txt").read_text(encoding="utf-8"), 20, 300, 5)
    for (ours, _), name, lower in ((uncased, "bert-base-uncased", True),
                                   (chinese, "bert-base-chinese", False)):
        vt = bert.load_vocab_txt(asset(name, "vocab.txt"), lowercase=lower)
        assert json.loads(vt.to_str()) == json.loads(ours.to_str())
        for t in sample:
            assert vt.encode_full(t) == ours.encode_full(t)
    # load_path: a *vocab*.txt file, or a folder with vocab.txt and no tokenizer.json
    vt = ts.load(asset("bert-base-uncased", "vocab.txt"))
    assert json.loads(vt.to_str()) == json.loads(uncased[0].to_str())
    assert "WordPiece" in repr(vt)


def test_vocab_txt_folder_reads_tokenizer_config(tmp_path: Path, chinese) -> None:  # type: ignore[no-untyped-def]
    ours, _ = chinese
    (tmp_path / "vocab.txt").write_bytes(asset("bert-base-chinese", "vocab.txt").read_bytes())
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    vt = ts.load(tmp_path)
    assert json.loads(vt.to_str()) == json.loads(ours.to_str())


def test_save_vocab_txt_round_trips(tmp_path: Path, uncased) -> None:  # type: ignore[no-untyped-def]
    ours, _ = uncased
    out = ours.save(tmp_path / "vocab.txt")
    assert out.read_bytes() == asset("bert-base-uncased", "vocab.txt").read_bytes()
    again = ts.load(out)
    assert json.loads(again.to_str()) == json.loads(ours.to_str())
    # another model type cannot be written as vocab.txt
    bpe = ts.train(texts=["hello world"] * 5, vocab_size=270)
    with pytest.raises(UnsupportedComponentError):
        bpe.save(tmp_path / "x-vocab.txt")
    assert not (tmp_path / "x-vocab.txt").exists()


# ------------------------------------------------------------- bad inputs
def test_vocab_txt_errors(tmp_path: Path) -> None:
    dup = tmp_path / "dup-vocab.txt"
    dup.write_text("[UNK]\na\nb\na \nc\n", encoding="utf-8")
    with pytest.raises(TokenizerFormatError) as e:
        ts.load(dup)
    assert "lines 2 and 4" in str(e.value) and "'a'" in str(e.value)
    no_unk = tmp_path / "vocab.txt"
    no_unk.write_text("a\n##b\n", encoding="utf-8")
    with pytest.raises(TokenizerFormatError) as e:
        ts.load(no_unk)
    assert "[UNK]" in str(e.value) and "unk_token" in str(e.value)
    empty = tmp_path / "empty-vocab.txt"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(TokenizerFormatError):
        ts.load(empty)
    bad = tmp_path / "bad-vocab.txt"
    bad.write_bytes(b"[UNK]\n\xff\n")
    with pytest.raises(TokenizerFormatError) as e:
        ts.load(bad)
    assert "UTF-8" in str(e.value)
    # a custom unknown token is fine
    ok = bert.load_vocab_txt(no_unk, unk_token="a")
    assert ok.encode("zzz", add_special_tokens=False) == [0]


def test_tokenizer_json_errors() -> None:
    base = json.loads(tokenizers.Tokenizer(
        models.WordPiece({"[UNK]": 0, "a": 1}, unk_token="[UNK]")).to_str())
    spec = json.loads(json.dumps(base))
    spec["model"]["unk_token"] = "<unk>"
    with pytest.raises(TokenizerFormatError) as e:
        ts.Tokenizer.from_str(json.dumps(spec))
    assert "model.unk_token" in str(e.value)
    spec = json.loads(json.dumps(base))
    spec["model"]["vocab"]["b"] = 1
    with pytest.raises(TokenizerFormatError) as e:
        ts.Tokenizer.from_str(json.dumps(spec))
    assert "used twice" in str(e.value)
    spec = json.loads(json.dumps(base))
    spec["model"]["max_input_chars_per_word"] = -1
    with pytest.raises(TokenizerFormatError):
        ts.Tokenizer.from_str(json.dumps(spec))
    spec = json.loads(json.dumps(base))
    spec["post_processor"] = {"type": "BertProcessing", "sep": "[SEP]"}
    with pytest.raises(TokenizerFormatError):
        ts.Tokenizer.from_str(json.dumps(spec))


# ------------------------------------------------------------ the model
def test_long_words_become_unk(uncased) -> None:  # type: ignore[no-untyped-def]
    ours, hf = uncased
    texts = ["a" * 100, "a" * 101, "hello " + "ab" * 60 + " world", "é" * 101, "x" * 100_000]
    assert_same(ours, hf, texts)
    assert ours.encode("a" * 101, add_special_tokens=False) == [ours.token_to_id("[UNK]")]
    assert len(ours.encode("a" * 100, add_special_tokens=False)) > 1


def test_model_fuzz_against_tokenizers() -> None:
    rng = random.Random(7)
    alphabet = "abcé中"
    for round_ in range(12):
        prefix = ["##", "", "@@"][round_ % 3]
        max_chars = [100, 5, 8][round_ % 3]
        vocab = {"[UNK]": 0}
        for _ in range(60):
            tok = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4)))
            if rng.random() < 0.5:
                tok = prefix + tok
            vocab.setdefault(tok, len(vocab))
        hf = tokenizers.Tokenizer(models.WordPiece(
            vocab, unk_token="[UNK]", continuing_subword_prefix=prefix,
            max_input_chars_per_word=max_chars))
        hf.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        hf.decoder = decoders.WordPiece(prefix=prefix or "##", cleanup=bool(round_ % 2))
        ours = ours_from(hf)
        assert component(ours, "model") == json.loads(hf.to_str())["model"]
        words = [" ".join("".join(rng.choice(alphabet + "#@") for _ in range(rng.randint(1, 9)))
                          for _ in range(40)) for _ in range(10)]
        assert_same(ours, hf, words)


def test_huge_word_limit_stays_fast() -> None:
    hf = tokenizers.Tokenizer(models.WordPiece(
        {"[UNK]": 0, "a": 1, "##a": 2, "##aa": 3}, unk_token="[UNK]",
        max_input_chars_per_word=10**7))
    ours = ours_from(hf)
    text = "a" * 301  # tokenizers rescans a word from its end: cubic, so keep it short
    assert ours.encode(text) == hf.encode(text).ids
    # a million-character word: linear here
    assert ours.encode("a" * 1_000_001) == [1] + [3] * 500_000


# ------------------------------------------------- components via the API
def bert_like(normalizer, pre, vocab, max_chars=100):  # type: ignore[no-untyped-def]
    hf = tokenizers.Tokenizer(models.WordPiece(vocab, unk_token="[UNK]",
                                               max_input_chars_per_word=max_chars))
    hf.normalizer = normalizer
    hf.pre_tokenizer = pre
    hf.decoder = decoders.WordPiece()
    return hf


# blocks whose characters all behave alike: CJK ideographs, Hangul syllables,
# private use; sampled
_UNIFORM = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xE000, 0xF8FF),
            (0x20000, 0x3FFFF))


def every_code_point(stride: int = 1) -> str:
    """Every code point of planes 0 and 1 and the tags (one in ``stride``; one
    in 31 of uniform blocks, one in 9973 beyond), each after a letter and
    alone, so that marks attach and pieces split."""
    cps = []
    for cp in list(range(0x20000)) + list(range(0x20000, 0x40000, 31)) + list(
            range(0xE0000, 0xE0200)) + list(range(0xF0000, 0x110000, 9973)):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        if any(a <= cp <= b for a, b in _UNIFORM):
            if cp % 31 == 0:
                cps.append(cp)
        elif cp % stride == 0:
            cps.append(cp)
    return " ".join(f"a{chr(cp)} {chr(cp)}b" for cp in cps)


def char_vocab(texts: list[str], normalizer) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """[UNK] and the specials, then every character the normalizer can produce,
    alone and as a continuation: every piece splits into single characters."""
    vocab = {t: i for i, t in enumerate(SPECIALS)}
    chars = set()
    for t in texts:
        chars.update(normalizer.normalize_str(t))
    for c in sorted(chars):
        vocab.setdefault(c, len(vocab))
        vocab.setdefault("##" + c, len(vocab))
    return vocab


@pytest.mark.parametrize("lowercase,strip", [(True, None), (False, None), (True, False),
                                             (False, True)])
def test_every_code_point_through_the_bert_normalizer(lowercase: bool, strip) -> None:  # type: ignore[no-untyped-def]
    norm = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                      strip_accents=strip, lowercase=lowercase)
    text = every_code_point(stride=1 if lowercase and strip is None else 5)
    chunks = [text[i : i + 200_000] for i in range(0, len(text), 200_000)]
    hf = bert_like(norm, pre_tokenizers.BertPreTokenizer(), char_vocab(chunks, norm), 1000)
    ours = ours_from(hf)
    assert component(ours, "normalizer") == json.loads(norm.__getstate__())
    for chunk in chunks:
        want = hf.encode(chunk, add_special_tokens=False)
        got = ours.encode_full(chunk, allowed_special="all", add_special_tokens=False)
        assert got.ids == want.ids, [t for t in got.tokens if t not in want.tokens][:5]
        assert got.offsets == [tuple(o) for o in want.offsets]


@pytest.mark.parametrize("clean", [True, False])
@pytest.mark.parametrize("chinese", [True, False])
@pytest.mark.parametrize("strip", [None, True, False])
@pytest.mark.parametrize("lowercase", [True, False])
def test_bert_normalizer_options(clean: bool, chinese: bool, strip, lowercase: bool) -> None:  # type: ignore[no-untyped-def]
    norm = normalizers.BertNormalizer(clean_text=clean, handle_chinese_chars=chinese,
                                      strip_accents=strip, lowercase=lowercase)
    texts = strings() + ["Ünïcödé TÉXT\u00a0with\u3000spaces\x00\u200b中文ＡＢＣ ǅ İ ß ﬁ"]
    hf = bert_like(norm, pre_tokenizers.WhitespaceSplit(), char_vocab(texts, norm), 300)
    ours = ours_from(hf)
    assert component(ours, "normalizer") == json.loads(norm.__getstate__())
    assert_same(ours, hf, texts)


@pytest.mark.parametrize("behavior", ["removed", "isolated", "merged_with_previous",
                                      "merged_with_next", "contiguous"])
def test_punctuation_pre_tokenizer(behavior: str) -> None:
    punct = pre_tokenizers.Punctuation(behavior)
    pre = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), punct])
    texts = strings() + ["a!!b?? ¿qué? «x» (y)...z -- 'q' \"r\" a.b.c ##x §¶ 〈中〉"]
    norm = normalizers.BertNormalizer(lowercase=False)
    hf = bert_like(norm, pre, char_vocab(texts, norm), 300)
    ours = ours_from(hf)
    assert component(ours, "pre_tokenizer")["pretokenizers"][1] == json.loads(punct.__getstate__())
    assert_same(ours, hf, texts)


def test_bert_pre_tokenizer_serializes() -> None:
    pre = pre_tokenizers.BertPreTokenizer()
    hf = bert_like(None, pre, {"[UNK]": 0})
    assert component(ours_from(hf), "pre_tokenizer") == json.loads(pre.__getstate__())


def test_bert_processing_pairs(uncased) -> None:  # type: ignore[no-untyped-def]
    _, base = uncased
    hf = tokenizers.Tokenizer.from_str(base.to_str())
    post = processors.BertProcessing(("[SEP]", 102), ("[CLS]", 101))
    hf.post_processor = post
    ours = ours_from(hf)
    assert component(ours, "post_processor") == json.loads(post.__getstate__())
    texts = strings()[:10] + ["Hello, world!", ""]
    pairs = [(a, b) for a in texts[:6] for b in texts[4:10]]
    assert_same(ours, hf, texts, pairs)
    for a, b in pairs[:10]:
        want = hf.encode(a, b, add_special_tokens=False)
        got = ours.encode_full(a, b, add_special_tokens=False, allowed_special="all")
        assert (got.ids, got.type_ids, got.special_tokens_mask) == (
            want.ids, want.type_ids, want.special_tokens_mask)


@pytest.mark.parametrize("trim", [True, False])
@pytest.mark.parametrize("prefix_space", [True, False])
def test_roberta_processing(trim: bool, prefix_space: bool) -> None:
    base = tokenizers.Tokenizer.from_file(str(asset("gpt2", "tokenizer.json")))
    base.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=prefix_space)
    post = processors.RobertaProcessing(("<|endoftext|>", 50256), ("<|endoftext|>", 50256),
                                        trim_offsets=trim, add_prefix_space=prefix_space)
    base.post_processor = post
    ours = ours_from(base)
    assert component(ours, "post_processor") == json.loads(post.__getstate__())
    texts = ["Hello world", "  two  spaces  ", " lead", "trail ", "a\n\nb\tc", "é 中文 😀", ""]
    pairs = [(a, b) for a in texts[:4] for b in texts[2:]]
    assert_same(ours, base, texts, pairs)
    for a, b in pairs:
        want = base.encode(a, b, add_special_tokens=False)
        got = ours.encode_full(a, b, add_special_tokens=False, allowed_special="all")
        assert (got.ids, got.type_ids, got.offsets) == (
            want.ids, want.type_ids, [tuple(o) for o in want.offsets])


@pytest.mark.parametrize("prefix,cleanup", [("##", True), ("##", False), ("@@", True)])
def test_wordpiece_decoder(prefix: str, cleanup: bool, uncased) -> None:  # type: ignore[no-untyped-def]
    _, base = uncased
    hf = tokenizers.Tokenizer.from_str(base.to_str())
    dec = decoders.WordPiece(prefix=prefix, cleanup=cleanup)
    hf.decoder = dec
    ours = ours_from(hf)
    assert component(ours, "decoder") == json.loads(dec.__getstate__())
    rng = random.Random(11)
    punct = [hf.token_to_id(t) for t in [".", ",", "?", "!", "'", "n", "##t", "s", "do", "not",
                                          "m", "ve", "re", "##s", "[CLS]", "[SEP]"]]
    for _ in range(300):
        ids = [rng.choice(punct) if rng.random() < 0.5 else rng.randrange(30522)
               for _ in range(rng.randint(0, 30))]
        for skip in (False, True):
            assert ours.decode(ids, skip_special_tokens=skip) == hf.decode(
                ids, skip_special_tokens=skip)


# ------------------------------------------------------------- the trainer
WORDS = ("hug pug pun bun hugs hugging bugs unhug snug snugly tug tugs the then there "
         "thin think thinking hello world wordpiece words unbelievable").split()


def _corpus(seed: int, n: int = 400) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(12)) + rng.choice([".", "!", ","])
            for _ in range(n)]


def _drop(c: float, k: float) -> float:
    """f(c - k) - f(c), f(x) = x ln x, written as the trainer writes it."""
    import math

    if k >= c:
        return -(c * math.log(c))
    return -k * math.log(c) + (c - k) * math.log1p(-k / c)


def _score(kind: str, k: int, ca: int, cb: int, same: bool, n: int) -> float:
    import math

    if kind == "ratio":
        return k / (ca * cb)
    if kind == "frequency":
        return float(k)
    symbols = _drop(ca, 2 * k) if same else _drop(ca, k) + _drop(cb, k)
    return k * math.log(k) + symbols - _drop(n, k)


def _maxmatch(word: str, live: set[str]) -> list[str]:
    """BERT's greedy longest-match-first over ``live`` tokens."""
    out: list[str] = []
    i = 0
    while i < len(word):
        lead = "##" if i else ""
        j = next(j for j in range(len(word), i, -1) if lead + word[i:j] in live)
        out.append(lead + word[i:j])
        i = j
    return out


def _oracle(texts: list[str], size: int, kind: str = "likelihood") -> list[tuple[str, str]]:
    """Merges recomputed from scratch each step (BERT-normalized, lowercased, words
    split on whitespace and punctuation as BertPreTokenizer), until ``target`` tokens
    are learned; under the likelihood score, the checks with MaxMatch: the words
    re-segmented as the tokenizer would, dead tokens out of a full vocabulary.
    ``size``: the vocabulary without the special tokens."""
    import re

    counts: dict[str, int] = {}
    for t in texts:
        for w in re.findall(r"\w+|[^\w\s]", t.lower()):
            counts[w] = counts.get(w, 0) + 1
    segs = [([w[0]] + ["##" + c for c in w[1:]], c) for w, c in sorted(counts.items())]
    initial = sorted({s[0] for s, _ in segs})
    cont = sorted({x for s, _ in segs for x in s[1:]}, key=lambda x: x[2:])
    ids = {t: i for i, t in enumerate(initial + cont)}
    live, dead = set(ids), set()
    target = size - len(ids)
    out: list[tuple[str, str]] = []
    learned, checked, merged, dropped = 0, False, 0, False
    while True:
        while learned < target:
            sym: dict[str, int] = {}
            pair: dict[tuple[str, str], int] = {}
            for s, c in segs:
                for x in s:
                    sym[x] = sym.get(x, 0) + c
                for a, b in zip(s, s[1:]):  # noqa: B905
                    pair[(a, b)] = pair.get((a, b), 0) + c
            candidates = [p for p in pair if p[0] + p[1].removeprefix("##") not in dead]
            if not candidates:
                break
            n = sum(sym.values())
            a, b = max(candidates, key=lambda p: (
                _score(kind, pair[p], sym[p[0]], sym[p[1]], p[0] == p[1], n), pair[p],
                -ids[p[0]], -ids[p[1]]))
            m = a + b.removeprefix("##")
            if m not in ids:
                ids[m] = len(ids)
                live.add(m)
                learned += 1
            for s, _ in segs:
                i = 0
                while i + 1 < len(s):
                    if s[i] == a and s[i + 1] == b:
                        s[i : i + 2] = [m]
                    i += 1
            out.append((a, b))
        if kind != "likelihood" or (checked and merged == len(out) and not dropped):
            return out
        checked, merged = True, len(out)
        again = [_maxmatch(s[0] + "".join(x[2:] for x in s[1:]), live) for s, _ in segs]
        emitted = {t for seg in again for t in seg}
        gone = {t for t in live if learned >= target and ids[t] >= len(initial) + len(cont)
                and t not in emitted}
        dropped = bool(gone)
        live -= gone
        dead |= gone
        learned -= len(gone)
        segs = [(seg, c) for seg, (_, c) in zip(again, segs)]  # noqa: B905


@pytest.mark.parametrize("size", [90, 60, 55])
@pytest.mark.parametrize("score", ["likelihood", "ratio", "frequency"])
def test_trainer_merges_by_its_score(score: str, size: int) -> None:
    texts = _corpus(1)
    events: list[tuple[str, str]] = []

    def cb(kind: str, data: tuple) -> None:  # type: ignore[type-arg]
        if kind == "merge":
            events.append((data[1].decode(), data[2].decode()))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VocabShortfallWarning)
        tok = ts.train(texts=texts, model="wordpiece", vocab_size=size, min_frequency=0,
                       trace=1000, callback=cb, score=score)  # type: ignore[arg-type]
    assert len(events) > (30 if size == 90 else 15)
    assert events == _oracle(texts, size - 5, score)
    # (the count-weighted scores turn every word of this small corpus into one token
    # before reaching 90)
    if size == 90:
        assert tok.vocab_size == 90 if score == "ratio" else 80 < tok.vocab_size <= 90
    else:
        assert tok.vocab_size == size
    assert [tok.id_to_token(i) for i in range(5)] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]",
                                                       "[MASK]"]
    # learned tokens the tokenizer emits on no training word: the likelihood score
    # takes them out of a full vocabulary and merges on (55); merges by count or
    # ratio leave some. At 60 the pairs run out after taking them out: they come
    # back to fill the vocabulary; at 90 the vocabulary never fills
    learned = {t for t in tok.get_vocab() if len(t.removeprefix("##")) > 1
               and not t.startswith("[")}
    words = set(" ".join(texts).split())
    emitted = {tok.id_to_token(i) for w in words for i in tok.encode(w, add_special_tokens=False)}
    assert bool(learned - emitted) == (score != "likelihood" or size != 55)


def test_trained_wordpiece_works_in_tokenizers(tmp_path: Path) -> None:
    texts = _corpus(2)
    tok = ts.train(texts=texts, model="wordpiece", vocab_size=120)
    assert "WordPiece" in repr(tok)
    hf = tokenizers.Tokenizer.from_str(tok.to_str())
    assert_same(tok, hf, texts[:50] + strings()[:12], pairs_of(texts, 10, seed=4))
    for t in texts[:20]:
        assert tok.decode(tok.encode(t), skip_special_tokens=True) == hf.decode(
            hf.encode(t).ids)
    # and as vocab.txt
    path = tok.save(tmp_path / "vocab.txt")
    again = ts.load(path)
    assert [again.encode(t) for t in texts[:20]] == [tok.encode(t) for t in texts[:20]]


def test_trainer_options_and_errors() -> None:
    texts = _corpus(3, 100)
    small = ts.train(texts=texts, model="wordpiece", vocab_size=200, limit_alphabet=5,
                     special_tokens=["[UNK]"], min_frequency=0)
    chars = [t for t in small.get_vocab() if len(t.removeprefix("##")) == 1 and t != "[UNK]"]
    assert len({t.removeprefix("##") for t in chars}) <= 5
    assert small.encode_full("hug").tokens[0] != "[CLS]"  # no [CLS]/[SEP]: no template
    frequent = ts.train(texts=texts, model="wordpiece", vocab_size=10_000, min_frequency=10**6)
    learned = [t for t in frequent.get_vocab() if len(t.removeprefix("##")) > 1
               and not t.startswith("[")]
    assert learned == []
    with pytest.raises(ts.VocabSizeError):
        ts.train(texts=texts, model="wordpiece", vocab_size=10)
    with pytest.raises(ts.EmptyCorpusError):
        ts.train(texts=["   "], model="wordpiece", vocab_size=100)
    with pytest.raises(ts.ConfigError):
        ts.train(texts=texts, model="wordpiece", vocab_size=100, unk_token="")
    with pytest.raises(ts.ConfigError) as e:
        ts.train(texts=texts, model="wordpiece", vocab_size=100, pattern="gpt2")
    assert "pattern" in str(e.value)
    with pytest.raises(ts.ConfigError, match="score"):
        ts.train(texts=texts, model="wordpiece", vocab_size=100, score="pmi")  # type: ignore[arg-type]


SYLLABLES = "ka to ri mu sen lo pa dit ver na qua sho el im bra fu ning ted".split()


def _many_words(seed: int, lines: int = 1500) -> list[str]:
    """Text of a few thousand distinct made-up words with Zipf-like counts."""
    rng = random.Random(seed)
    lexicon = ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4)))
               for _ in range(3000)]
    weights = [1 / (r + 1) for r in range(len(lexicon))]
    return [" ".join(rng.choices(lexicon, weights, k=10)) for _ in range(lines)]


def _tokens_on(tok: ts.Tokenizer, texts: list[str]) -> int:
    return sum(len(ids) for ids in tok.encode_batch(texts, add_special_tokens=False))


def test_candidates_are_learned_then_pruned_to_the_vocabulary(tmp_path: Path) -> None:
    texts = _many_words(5)
    plain = ts.train(texts=texts, model="wordpiece", vocab_size=200, candidates=200)
    pruned = ts.train(texts=texts, model="wordpiece", vocab_size=200, candidates=600)
    assert plain.vocab_size == pruned.vocab_size == 200
    assert set(plain.get_vocab()) != set(pruned.get_vocab())
    # the pruning keeps what MaxMatch needs on the training words
    assert _tokens_on(pruned, texts) < _tokens_on(plain, texts)
    # the default prunes a vocabulary this small beside ~2,000 distinct words (at most 15%)
    auto = ts.train(texts=texts, model="wordpiece", vocab_size=200)
    assert set(auto.get_vocab()) != set(plain.get_vocab())
    assert _tokens_on(auto, texts) < _tokens_on(plain, texts)
    # and not a vocabulary large beside its words (24 words here)
    few = _corpus(1)
    assert set(ts.train(texts=few, model="wordpiece", vocab_size=60).get_vocab()) == set(
        ts.train(texts=few, model="wordpiece", vocab_size=60, candidates=60).get_vocab())
    # ids stay contiguous, and tokenizers encodes it alike
    assert sorted(pruned.get_vocab().values()) == list(range(200))
    hf = tokenizers.Tokenizer.from_str(pruned.to_str())
    assert_same(pruned, hf, texts[:50], pairs_of(texts, 10, seed=5))


def test_candidates_errors() -> None:
    texts = _corpus(3, 100)
    with pytest.raises(ts.ConfigError, match="candidates=100 is below vocab_size=200"):
        ts.train(texts=texts, model="wordpiece", vocab_size=200, candidates=100)
    with pytest.raises(ts.ConfigError, match="candidates must be an int"):
        ts.train(texts=texts, model="wordpiece", vocab_size=200, candidates=True)
    with pytest.raises(ts.ConfigError, match="candidates applies to score='likelihood'"):
        ts.train(texts=texts, model="wordpiece", vocab_size=200, candidates=400,
                 score="frequency")
    with pytest.raises(ts.ConfigError, match="candidates"):
        ts.train(texts=texts, vocab_size=300, candidates=600)


def test_frequency_score_trains_the_vocabulary_tokenizers_trains() -> None:
    """score="frequency" merges as tokenizers' WordPieceTrainer (BPE by pair count)."""
    text = corpus_file("en.txt").read_text(encoding="utf-8")[:300_000]
    lines = text.splitlines()
    hf = tokenizers.Tokenizer(models.WordPiece(unk_token="[UNK]"))
    hf.normalizer = normalizers.BertNormalizer(lowercase=True)
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    hf.train_from_iterator(lines, tokenizers.trainers.WordPieceTrainer(
        vocab_size=3000, min_frequency=2, limit_alphabet=1000, special_tokens=specials,
        show_progress=False))
    tok = ts.train(texts=lines, model="wordpiece", vocab_size=3000, min_frequency=2,
                   score="frequency")
    ours, theirs = set(tok.get_vocab()), set(hf.get_vocab())
    assert len(ours ^ theirs) <= 0.01 * len(theirs), sorted(ours ^ theirs)[:20]
    likelihood = ts.train(texts=lines, model="wordpiece", vocab_size=3000, min_frequency=2)
    held = corpus_file("en.txt").read_text(encoding="utf-8")[300_000:400_000]
    n = {name: sum(len(t.encode(line, add_special_tokens=False)) for line in held.splitlines())
         for name, t in (("frequency", tok), ("likelihood", likelihood))}
    ratio = ts.train(texts=lines, model="wordpiece", vocab_size=3000, min_frequency=2,
                     score="ratio")
    n["ratio"] = sum(len(ratio.encode(line, add_special_tokens=False))
                     for line in held.splitlines())
    # the count-weighted scores compress alike; the ratio leaves far more tokens
    assert n["likelihood"] < 1.05 * n["frequency"] < 1.5 * n["ratio"]
