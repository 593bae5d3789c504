"""``tokensmith.compat.tiktoken`` against the real tiktoken, offline.

tiktoken is pointed at a private cache folder holding the reference rank
files under the names it looks for (``sha1(url)``), so it builds its own
official encodings (its own patterns and special tokens) without a network.
"""

from __future__ import annotations

import base64
import hashlib
import json
import pickle
import random
import shutil
import string
from pathlib import Path

import pytest
import tokensmith as ts
from tokensmith.compat import tiktoken as ct

from .adversarial import strings
from .conftest import asset, corpus_file

tiktoken = pytest.importorskip("tiktoken")

ENCODINGS = {
    "r50k_base": ("gpt2", "r50k_base.tiktoken"),
    "cl100k_base": ("cl100k_base", "cl100k_base.tiktoken"),
    "o200k_base": ("o200k_base", "o200k_base.tiktoken"),
}
URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"

BIG_SLICE = 200_000  # bytes of each corpus in one document
SHORT_SLICES = 400  # short documents per corpus


def _tiktoken_cache(folder: Path, name: str) -> Path:
    """Put ``name``'s reference rank file where tiktoken's cache lookup finds it."""
    src = asset(*ENCODINGS[name])
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, folder / hashlib.sha1(URL.format(name).encode()).hexdigest())
    return src


@pytest.fixture(scope="module", params=list(ENCODINGS))
def pair(request, tmp_path_factory):
    """(facade, real tiktoken) for one encoding; skips when its rank file is absent."""
    name = request.param
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    src = _tiktoken_cache(cache, name)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", str(cache))
        real = tiktoken.get_encoding(name)
    facade = ct.Encoding.from_tokenizer(ts.load(src), name=name)
    return facade, real


# ------------------------------------------------------------------ samples
def _big_slice(name: str, seed: int) -> str:
    """``BIG_SLICE`` bytes from a deterministic place in a corpus file (cut at characters)."""
    path = corpus_file(name)
    size = path.stat().st_size
    offset = random.Random(seed).randrange(0, max(1, size - BIG_SLICE))
    with path.open("rb") as f:
        f.seek(offset)
        raw = f.read(BIG_SLICE)
    return raw.decode("utf-8", errors="ignore")


def _short_slices(text: str, seed: int, n: int = SHORT_SLICES) -> list[str]:
    """Short documents cut anywhere in ``text`` (mid-word, mid-line, mid-indentation)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        length = rng.choice([1, 2, 3, 5, 8, 13, 40, 100, 300, 1000])
        start = rng.randrange(0, max(1, len(text) - length))
        out.append(text[start : start + length])
    return out


CORPORA = ["en.txt", "code.txt", "zh.txt"]


def documents() -> list[str]:
    """Every real-text document compared (the big slices, then the short ones)."""
    big = [_big_slice(c, seed) for seed, c in enumerate(CORPORA)]
    short = [s for seed, text in enumerate(big) for s in _short_slices(text, 100 + seed)]
    return big + short


def runs() -> list[str]:
    n = 100_000
    return [
        "a" * n, " " * n, "\n" * n, "\t" * n, "1" * n, "中" * n, "😀" * (n // 2), "." * n,
        "ab" * (n // 2), " a" * (n // 2), "x" + " " * n + "x", "\r\n" * (n // 2),
        " " * n + "\n", "\n" + " " * n, "é" * n, "'" * n,
    ]


# -------------------------------------------------------------------- tests
def test_real_text(pair) -> None:
    facade, real = pair
    docs = documents()
    big, short = docs[: len(CORPORA)], docs[len(CORPORA) :]
    for text in big:
        assert facade.encode(text) == real.encode(text)
        assert facade.encode_ordinary(text) == real.encode_ordinary(text)
    assert facade.encode_batch(short) == real.encode_batch(short)
    assert facade.encode_ordinary_batch(short) == real.encode_ordinary_batch(short)
    for text in short[::20]:
        assert facade.encode(text) == real.encode(text)


def test_adversarial(pair) -> None:
    facade, real = pair
    for text in strings():
        kw = {"disallowed_special": ()}
        assert facade.encode(text, **kw) == real.encode(text, **kw), repr(text[:60])
        kw = {"allowed_special": "all"}
        assert facade.encode(text, **kw) == real.encode(text, **kw), repr(text[:60])
    lone = "a\ud800b \udfff 😀\ud83d"  # lone surrogates become U+FFFD in both
    assert facade.encode(lone) == real.encode(lone)


def test_long_runs(pair) -> None:
    facade, real = pair
    for text in runs():
        assert facade.encode(text) == real.encode(text), repr(text[:5])


def test_long_random_pieces(pair) -> None:
    # words of 16 to 31 bytes are merged together in the encoder's wide
    # lanes (where the CPU has AVX2), longer ones one by one; random words,
    # base64 and hex are new pieces nearly every time, and the same text
    # again comes from the caches
    facade, real = pair
    rng = random.Random(11)
    letters = string.ascii_letters
    words = ["".join(rng.choices(letters, k=rng.randint(1, 40))) for _ in range(20_000)]
    assert sum(16 <= len(w) + 1 <= 31 for w in words) > 5_000
    texts = [
        " ".join(words),
        base64.b64encode(rng.randbytes(60_000)).decode(),
        rng.randbytes(30_000).hex(),
        "\n".join(" ".join(words[i : i + 7]) for i in range(0, len(words), 7)),
    ]
    for text in texts + texts[:1]:
        assert facade.encode_ordinary(text) == real.encode_ordinary(text)
    docs = [text[i : i + 3_000] for text in texts for i in range(0, len(text), 3_000)]
    assert facade.encode_ordinary_batch(docs) == real.encode_ordinary_batch(docs)


def test_special_tokens(pair) -> None:
    facade, real = pair
    assert facade.special_tokens_set == real.special_tokens_set
    assert facade._special_tokens == real._special_tokens
    assert facade.eot_token == real.eot_token
    assert facade.n_vocab == real.n_vocab
    assert facade.max_token_value == real.max_token_value
    specials = sorted(real.special_tokens_set)
    texts = [
        f"hello {s} world{s}{s} end" for s in specials
    ] + ["".join(specials), "<|endoftext", "<|endoftext|", "x<|endoftext|>>y"]
    for text in texts:
        for kw in (
            {"allowed_special": "all"},
            {"disallowed_special": ()},
            {"allowed_special": {"<|endoftext|>"}, "disallowed_special": ()},
            {"allowed_special": "all", "disallowed_special": ()},
        ):
            assert facade.encode(text, **kw) == real.encode(text, **kw), (text, kw)
        assert facade.encode_ordinary(text) == real.encode_ordinary(text)
    for s in specials:
        assert facade.is_special_token(real.encode_single_token(s))
        assert facade.encode_single_token(s) == real.encode_single_token(s)
    assert not facade.is_special_token(real.encode_ordinary("hello")[0])


def _raises_same(fn_a, fn_b) -> type[BaseException]:
    with pytest.raises(Exception) as got_b:  # noqa: B017 (whatever tiktoken raises)
        fn_b()
    with pytest.raises(got_b.type):
        fn_a()
    return got_b.type


def test_disallowed_specials_raise_like_tiktoken(pair) -> None:
    facade, real = pair
    cases = [
        ("a <|endoftext|> b", {}),
        ("a <|endoftext|> b", {"allowed_special": set()}),
        ("a <|endoftext|> b", {"disallowed_special": {"<|endoftext|>"}}),
        # named in both: tiktoken's check comes first and refuses
        ("a <|endoftext|>", {"allowed_special": {"<|endoftext|>"},
                             "disallowed_special": {"<|endoftext|>"}}),
        ("a <|endoftext|>", {"allowed_special": "all", "disallowed_special": {"<|endoftext|>"}}),
        # any string can be disallowed, not only special tokens
        ("hello world", {"disallowed_special": {"wor"}}),
    ]
    for text, kw in cases:
        kind = _raises_same(lambda t=text, k=kw: facade.encode(t, **k),
                            lambda t=text, k=kw: real.encode(t, **k))
        assert issubclass(kind, ValueError)
        _raises_same(lambda t=text, k=kw: facade.encode_batch(["ok", t], **k),
                     lambda t=text, k=kw: real.encode_batch(["ok", t], **k))
    assert facade.encode("hello world", disallowed_special={"xyz"}) == real.encode("hello world")
    assert facade.encode("a <|endoftext|>", allowed_special={"<|endoftext|>"}) == real.encode(
        "a <|endoftext|>", allowed_special={"<|endoftext|>"}
    )


def test_decoding(pair) -> None:
    facade, real = pair
    rng = random.Random(7)
    ordinary = [i for i in rng.sample(range(real.n_vocab), 3000) if i not in real._special_tokens]
    known = []
    for i in ordinary + sorted(real._special_tokens.values()):
        try:
            expected = real.decode_single_token_bytes(i)
        except KeyError:
            with pytest.raises(KeyError):
                facade.decode_single_token_bytes(i)
            continue
        known.append(i)
        assert facade.decode_single_token_bytes(i) == expected
    # random id sequences: partial UTF-8 characters, U+FFFD, special tokens
    batches = [[rng.choice(known) for _ in range(rng.randrange(1, 30))] for _ in range(300)]
    for ids in batches:
        assert facade.decode_bytes(ids) == real.decode_bytes(ids)
        assert facade.decode(ids) == real.decode(ids)
        assert facade.decode(ids, errors="ignore") == real.decode(ids, errors="ignore")
        assert facade.decode_tokens_bytes(ids) == real.decode_tokens_bytes(ids)
    assert facade.decode_batch(batches) == real.decode_batch(batches)
    assert facade.decode_bytes_batch(batches) == real.decode_bytes_batch(batches)
    # ids with no token (cl100k_base has a hole at 100256, o200k_base before its specials)
    holes = [i for i in range(real.n_vocab) if facade.tokenizer.id_to_bytes(i) is None]
    for hole in holes:
        _raises_same(lambda h=hole: facade.decode_single_token_bytes(h),
                     lambda h=hole: real.decode_single_token_bytes(h))
        _raises_same(lambda h=hole: facade.decode_bytes([1, h]),
                     lambda h=hole: real.decode_bytes([1, h]))
    _raises_same(lambda: facade.decode_bytes([real.n_vocab + 5]),
                 lambda: real.decode_bytes([real.n_vocab + 5]))


def test_offsets_and_single_tokens(pair) -> None:
    facade, real = pair
    texts = [
        "hello world", "héllo 😀 分词 👨‍👩‍👧‍👦", "naïve café", "ab\u0301c  \n\tx",
        "日本語の文章、한국어 문장。", "emoji 🏳️‍🌈🇯🇵 end",
    ] + _short_slices(_big_slice("zh.txt", 2), 5, 40)
    for text in texts:
        ids = real.encode(text)
        assert facade.decode_with_offsets(ids) == real.decode_with_offsets(ids)
    for token in ["hello", " world", "\n", b"\xe5\x88", b"\xf0\x9f", "<|endoftext|>"]:
        try:
            expected = real.encode_single_token(token)
        except KeyError:
            with pytest.raises(KeyError):
                facade.encode_single_token(token)
            continue
        assert facade.encode_single_token(token) == expected
    for token in ["hello world", "not one token at all", b"\xff\xfe\xfd\xfc"]:
        _raises_same(lambda t=token: facade.encode_single_token(t),
                     lambda t=token: real.encode_single_token(t))
    assert facade.token_byte_values() == real.token_byte_values()


def test_constructor_with_tiktoken_definitions(pair) -> None:
    """``Encoding(...)`` from tiktoken's own definition (its possessive patterns included)."""
    _, real = pair
    specials = {**real._special_tokens, "<|im_start|>": real.n_vocab}
    dense = len(real._mergeable_ranks) + len(specials) == real.n_vocab + 1  # r50k: no holes
    enc = ct.Encoding(
        real.name + "_copy",
        pat_str=real._pat_str,
        mergeable_ranks=real._mergeable_ranks,
        special_tokens=specials,
        explicit_n_vocab=real.n_vocab + 1 if dense else None,
    )
    assert enc.n_vocab == real.n_vocab + 1
    before, after = " 1234567 it's  \n\n\tx", "分词😀 " + strings()[8]
    assert enc.encode(before + "<|im_start|>" + after, allowed_special="all") == (
        real.encode(before) + [real.n_vocab] + real.encode(after)
    )
    assert enc.encode(before + after) == real.encode(before + after)
    for doc in _short_slices(_big_slice("code.txt", 9), 3, 100):
        assert enc.encode(doc, disallowed_special=()) == real.encode(doc, disallowed_special=())
    with pytest.raises(ValueError):
        ct.Encoding("bad", pat_str=real._pat_str, mergeable_ranks=real._mergeable_ranks,
                    special_tokens={}, explicit_n_vocab=5)


def test_possessive_bounded_repeat_rewrite() -> None:
    rewrite = ct._atomic_bounded_possessives
    assert rewrite(r"\p{N}{1,3}+|\s+") == r"(?>\p{N}{1,3})|\s+"
    assert rewrite(r"[a\]{]{2}+(x|y){1,}+") == r"(?>[a\]{]{2})(?>(x|y){1,})"
    assert rewrite(r"a{2}|b{1}+") == r"a{2}|(?>b{1})"
    assert rewrite(r"\{1}+") == r"\{1}+"  # an escaped brace is no repeat
    assert rewrite(r"\p{L}++ ?[^\s]++") == r"\p{L}++ ?[^\s]++"  # unchanged: no braces


def test_encoding_for_model() -> None:
    models = [
        "gpt-4o", "gpt-4o-2024-05-13", "gpt-4o-mini", "o1", "o1-mini", "o3", "o3-mini",
        "gpt-4", "gpt-4-0314", "gpt-4-32k", "gpt-3.5-turbo", "gpt-3.5-turbo-0301",
        "text-embedding-3-small", "text-embedding-3-large", "text-embedding-ada-002",
        "text-davinci-002", "text-davinci-003", "code-davinci-002", "davinci", "curie",
        "babbage", "ada", "gpt2", "gpt-4.1", "gpt-4.1-mini", "ft:gpt-4o:org:x", "gpt-35-turbo",
        "text-davinci-edit-001", "davinci-002",
    ]
    from tiktoken.model import encoding_name_for_model

    for model in models:
        assert ct.encoding_name_for_model(model) == encoding_name_for_model(model), model
    for unknown in ["llama-3", "", "gpt3", "claude"]:
        with pytest.raises(KeyError):
            ct.encoding_for_model(unknown)
        with pytest.raises(KeyError):
            encoding_name_for_model(unknown)
    assert set(ct.list_encoding_names()) >= set(ENCODINGS) | {"gpt2", "p50k_base"}


def test_get_encoding_by_name(tmp_path, monkeypatch) -> None:
    """Names resolve through tokensmith.load (here: a tokensmith cache folder)."""
    src = asset("cl100k_base", "cl100k_base.tiktoken")
    shutil.copyfile(src, tmp_path / "cl100k_base.tiktoken")
    monkeypatch.setenv("TOKENSMITH_CACHE", str(tmp_path))
    monkeypatch.setenv("TOKENSMITH_OFFLINE", "1")
    monkeypatch.setattr(ct, "_ENCODINGS", {})
    enc = ct.get_encoding("cl100k_base")
    assert enc is ct.get_encoding("cl100k_base")
    assert enc.name == "cl100k_base" and repr(enc) == "<Encoding 'cl100k_base'>"
    assert enc.encode("hello world") == [15339, 1917]
    assert ct.encoding_for_model("gpt-4") is enc
    assert pickle.loads(pickle.dumps(enc)) is enc  # registered: by name, like tiktoken
    with pytest.raises(ValueError):
        ct.get_encoding("cl100k_bass")
    with pytest.raises(ValueError):
        ct.get_encoding(42)  # type: ignore[arg-type]


def _with_bos(path: Path) -> ts.Tokenizer:
    """GPT-2's tokenizer.json with a post-processor that puts <|endoftext|> first."""
    spec = json.loads(path.read_text(encoding="utf-8"))
    bos = {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}
    spec["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [bos, {"Sequence": {"id": "A", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {
            "<|endoftext|>": {"id": "<|endoftext|>", "ids": [50256], "tokens": ["<|endoftext|>"]}
        },
    }
    return ts.Tokenizer.from_str(json.dumps(spec))


def test_facade_adds_no_bos_and_pickles() -> None:
    tok = _with_bos(asset("gpt2", "tokenizer.json"))
    assert tok.encode("hi")[0] == 50256
    enc = ct.Encoding.from_tokenizer(tok, name="gpt2-bos")
    ids = enc.encode("hi there")
    assert ids == tok.encode("hi there", add_special_tokens=False)
    assert enc.decode(ids) == "hi there"
    copy = pickle.loads(pickle.dumps(enc))
    assert copy.name == "gpt2-bos" and copy.encode("hi there") == ids
    trained = ts.train(texts=["hello world"] * 20, vocab_size=300, byte_level=False,
                       limit_alphabet=50)
    with pytest.raises(ts.UnsupportedComponentError):
        ct.Encoding.from_tokenizer(trained)


def test_numpy(pair) -> None:
    np = pytest.importorskip("numpy")
    facade, real = pair
    arr = facade.encode_to_numpy("hello world 分词")
    assert arr.dtype == np.uint32
    assert arr.tolist() == real.encode("hello world 分词")


def test_runs_of_one_character_every_length_near_the_shortcut(pair) -> None:
    """Runs of 8 KB and more are encoded from short probes (the middle of a run
    repeats one token): every length modulo the period, against tiktoken."""
    facade, real = pair
    rng = random.Random(5)
    for ch in ["a", " ", "中", "\n", "é", "😀", "!", "ー", "\t", "Z"]:
        unit = len(ch.encode())
        first = -(-8192 // unit)
        lengths = list(range(first - 2, first + 130)) + [rng.randrange(first, 300_000)
                                                          for _ in range(4)]
        for m in lengths:
            text = ch * m
            assert facade.encode_ordinary(text) == real.encode_ordinary(text), (ch, m)
        around = "x" + ch * lengths[-1] + "y"
        assert facade.encode_ordinary(around) == real.encode_ordinary(around), ch


def test_every_string_storage_kind(pair) -> None:
    """CPython keeps a str as ASCII, Latin-1, UCS-2 or UCS-4 code units, and
    tokensmith reads them directly (converting to UTF-8 itself, off the GIL):
    each kind, ASCII blocks of every alignment around the non-ASCII
    characters, a string whose UTF-8 CPython has cached, single texts and
    batches, against tiktoken."""
    import ctypes

    facade, real = pair
    tok = facade.tokenizer
    rng = random.Random(11)
    widest = {"ascii": "z", "latin1": "é", "ucs2": "中", "ucs4": "😀"}
    texts = []
    for kind, ch in widest.items():
        for _ in range(30):
            parts = ["".join(rng.choice("ab c\n") for _ in range(rng.randrange(0, 40)))
                     for _ in range(rng.randrange(1, 8))]
            text = ch.join(parts) + ("" if kind == "ascii" else ch)
            text += rng.choice(["", "ÿ", "Ω", "é中😀"])[: 1 if kind == "latin1" else 4]
            texts.append(text)
    # a string whose UTF-8 CPython holds (PyUnicode_AsUTF8 caches it)
    cached = "grüße, 世界 " * 50
    ctypes.pythonapi.PyUnicode_AsUTF8.restype = ctypes.c_char_p
    ctypes.pythonapi.PyUnicode_AsUTF8.argtypes = [ctypes.py_object]
    assert ctypes.pythonapi.PyUnicode_AsUTF8(cached) == cached.encode()
    texts.append(cached)
    def kind(t: str) -> int:
        top = max(map(ord, t), default=0)
        return sum(top >= bound for bound in (0x80, 0x100, 0x10000))

    assert {kind(t) for t in texts} == {0, 1, 2, 3}  # every storage kind is there
    want = [real.encode_ordinary(t) for t in texts]
    assert [tok.encode(t) for t in texts] == want
    assert [tok.encode_to_numpy(t).tolist() for t in texts] == want
    assert [tok.count(t) for t in texts] == [len(w) for w in want]
    assert tok.encode_batch(texts) == want
    ids, offsets = tok.encode_batch_to_numpy(texts)
    flat, bounds = ids.tolist(), offsets.tolist()
    assert [flat[a:b] for a, b in zip(bounds, bounds[1:], strict=False)] == want
    # a lone surrogate (UTF-8 cannot hold it) in each kind: cleaned to U+FFFD
    # as before, in a single text and in a batch
    for text in texts[::20]:
        bad = text + "\ud800" + text
        clean = real.encode_ordinary(text + "\ufffd" + text)
        assert tok.encode(bad) == clean
        assert tok.encode_batch(texts[:9] + [bad]) == want[:9] + [clean]


# ------------------------------------------------- tiktoken's private encoders, submodules
def test_private_encoders_match_tiktoken(pair) -> None:
    facade, real = pair
    pieces = ["hello", " world", "  \n\n ", "中文", "x" * 40, "don't"]  # (tiktoken panics on "")
    for piece in pieces:
        assert facade._encode_single_piece(piece) == real._encode_single_piece(piece), piece
        assert facade._encode_single_piece(piece.encode()) == real._encode_single_piece(
            piece.encode())
    for text in strings()[:40] + ["hello world  \n\n  x", "a\n \nb"]:
        assert facade._encode_only_native_bpe(text) == real._encode_only_native_bpe(text)
    rng = random.Random(7)
    starts = [b"hello wor", b"x  \n ", "中文 ".encode(), b"", b"1234 "]
    for _ in range(300):
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 10)))
        data = rng.choice(starts) + junk + rng.choice([b"", b" \n", "中".encode()[:2]])
        assert facade._encode_bytes(data) == real._encode_bytes(data), data


def test_submodules_are_tiktokens(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import tiktoken.load as real_load
    from tokensmith.compat.tiktoken import core, load, model, registry

    assert core.Encoding is ct.Encoding
    assert registry.get_encoding is ct.get_encoding and model.encoding_for_model is (
        ct.encoding_for_model)
    assert model.MODEL_PREFIX_TO_ENCODING is ct.MODEL_PREFIX_TO_ENCODING
    path = str(asset("gpt2", "r50k_base.tiktoken"))
    ranks = load.load_tiktoken_bpe(path)
    assert ranks == real_load.load_tiktoken_bpe(path)
    load.dump_tiktoken_bpe(ranks, str(tmp_path / "copy.tiktoken"))
    assert (tmp_path / "copy.tiktoken").read_bytes() == Path(path).read_bytes()
    with pytest.raises(ValueError, match="Hash mismatch"):
        load.read_file_cached(path, "0" * 64)
    merges, vocab = str(asset("gpt2", "merges.txt")), str(asset("gpt2", "vocab.json"))
    assert load.data_gym_to_mergeable_bpe_ranks(merges, vocab) == ranks
