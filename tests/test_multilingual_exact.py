"""Byte-level BPE of tiktoken rank files equals tiktoken on text of every script.

Pieces of multi-byte text (Chinese, Japanese, Korean, Hindi, Arabic …) are
encoded by the backtracking encoder (`src/models/bpe/backtrack.rs`) rather
than by merging; these tests compare whole files of such text, the UDHR in
every language of ../shared/corpus, and generated strings built to make the
longest-token-first guess fail, with the real tiktoken.
"""

from __future__ import annotations

import hashlib
import random
import shutil

import pytest
import tokensmith as ts

from .conftest import CORPUS, asset

tiktoken = pytest.importorskip(
    "tiktoken", reason="tiktoken is a test dependency: pip install -e '.[test]'"
)

ENCODINGS = {
    "cl100k_base": ("cl100k_base", "cl100k_base.tiktoken"),
    "o200k_base": ("o200k_base", "o200k_base.tiktoken"),
    "r50k_base": ("gpt2", "r50k_base.tiktoken"),
}
URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


@pytest.fixture(scope="module", params=list(ENCODINGS))
def pair(request, tmp_path_factory):
    """(tokensmith tokenizer, real tiktoken) for one encoding."""
    name = request.param
    src = asset(*ENCODINGS[name])
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    shutil.copyfile(src, cache / hashlib.sha1(URL.format(name).encode()).hexdigest())
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", str(cache))
        real = tiktoken.get_encoding(name)
    return ts.load(src), real


def _first_difference(a: list[int], b: list[int]) -> int:
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def _same(tok, real, text: str, what: str) -> None:
    got = tok.encode(text, disallowed_special=())
    want = real.encode(text, disallowed_special=())
    if got != want:
        i = _first_difference(got, want)
        raise AssertionError(
            f"{what}: differs from tiktoken at token {i}: "
            f"{got[max(0, i - 3) : i + 3]} vs {want[max(0, i - 3) : i + 3]}"
        )


@pytest.mark.parametrize("name", ["zh.txt", "zh-news.txt", "ja.txt"])
def test_cjk_files(pair, name) -> None:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"corpus file {path} is not present (../shared/corpus is optional)")
    tok, real = pair
    text = path.read_bytes()[:2_000_000].decode("utf-8", errors="ignore")
    # whole, and line by line in a batch (other piece boundaries, other caches)
    _same(tok, real, text, name)
    lines = text.splitlines(keepends=True)[:20_000]
    assert tok.encode_batch(lines, disallowed_special=()) == real.encode_batch(
        lines, disallowed_special=()
    )


def test_every_udhr_and_parallel_language(pair) -> None:
    folders = [CORPUS / "parallel" / "udhr", CORPUS / "parallel" / "pud"]
    files = sorted(p for f in folders if f.exists() for p in f.glob("*.txt"))
    if not files:
        pytest.skip(
            f"no parallel corpus under {CORPUS / 'parallel'} (../shared/corpus is optional)"
        )
    tok, real = pair
    for path in files:
        _same(tok, real, path.read_text(encoding="utf-8", errors="ignore"), path.name)
    assert len(files) > 100


def _alphabet() -> list[str]:
    """Characters whose byte sequences share prefixes and tokens across their boundaries."""
    han = [chr(c) for c in range(0x4E00, 0x4E00 + 400)] + list(
        "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年"
    )
    kana = [chr(c) for c in range(0x3041, 0x3097)] + [chr(c) for c in range(0x30A1, 0x30FB)]
    hangul = [chr(c) for c in range(0xAC00, 0xAC00 + 200)]
    other = list("éèêàçøåßñüöäœ€£¥©®™—–…«»“”‘’·•→←↑↓∞≠≤≥") + [
        "😀",
        "👍",
        "🇫🇷",
        "👩‍💻",
        "\u0301",
        "\u200d",
    ]
    return han + kana + hangul + other + list("abc 1,.")


def test_generated_multibyte_strings(pair) -> None:
    tok, real = pair
    rng = random.Random(20261201)
    alphabet = _alphabet()
    common = alphabet[:60]
    texts = []
    for _ in range(3000):
        pool = common if rng.random() < 0.5 else alphabet
        texts.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 40))))
    for text in texts[:200]:
        _same(tok, real, text, repr(text))
    assert tok.encode_batch(texts, disallowed_special=()) == real.encode_batch(
        texts, disallowed_special=()
    )


def test_random_letters_long_pieces(pair) -> None:
    """Long runs of random letters (no word ever repeats: every pair of
    tokens is new to the compatibility memo, and the backtracking encoder
    may run out of its work budget and hand the piece to merging)."""
    tok, real = pair
    rng = random.Random(7)
    alphabets = [
        "éèêëàâäôöûüçñÉÈÊËÀÂÄÔÖÛÜÇÑабвгдеёжзийклмнопАБВГДЕЁЖЗИЙКЛМНОП",
        "αβγδεζηθικλμνξοπρστυφχψωΑΒΓΔéàü",
        "".join(chr(c) for c in range(0x4E00, 0x4E00 + 3000, 7)),
        "абвгдеёжзийклмнопрстуфхцчшщъыьэюя",
    ]
    for k, alphabet in enumerate(alphabets):
        for n in (7, 40, 300, 5000, 60_000):
            text = "".join(rng.choice(alphabet) for _ in range(n))
            _same(tok, real, text, f"alphabet {k}, {n} letters")


@pytest.mark.parametrize("name", ["deepseek-v3", "qwen2.5", "qwen3", "gpt2", "llama3"])
def test_tokenizer_json_on_every_language(name: str) -> None:
    """`tokenizer.json` models equal the `tokenizers` library on every UDHR
    and PUD language, the CJK files and generated strings of every script:
    DeepSeek-V3's three-split pre-tokenizer runs on a hand-written scanner,
    and models whose merge ranks follow their ids (DeepSeek-V3, Qwen 2.5 and
    3, GPT-2) take the backtracking encoder for long multi-byte pieces."""
    tokenizers = pytest.importorskip(
        "tokenizers", reason="tokenizers is a test dependency: pip install -e '.[test]'"
    )
    path = asset(name, "tokenizer.json")
    ours = ts.load(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    texts: list[tuple[str, str]] = []
    folders = [CORPUS / "parallel" / "udhr", CORPUS / "parallel" / "pud"]
    for p in sorted(p for f in folders if f.exists() for p in f.glob("*.txt")):
        texts.append((p.name, p.read_text(encoding="utf-8", errors="ignore")))
    for name in ["zh.txt", "ja.txt", "code.txt"]:
        if (CORPUS / name).exists():
            texts.append((name, (CORPUS / name).read_bytes()[:300_000].decode("utf-8", "ignore")))
    if not texts:
        pytest.skip(f"no corpus under {CORPUS} (../shared/corpus is optional)")
    rng = random.Random(7)
    alphabet = _alphabet() + list("0123456789٠١٢３４・ー゛゠\u3040\u3099'$\r\n\t")
    texts += [
        (f"generated {i}", "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80))))
        for i in range(2000)
    ]
    got = ours.encode_batch([t for _, t in texts])
    want = [e.ids for e in hf.encode_batch([t for _, t in texts], add_special_tokens=False)]
    for (name, _), a, b in zip(texts, got, want, strict=True):
        assert a == b, f"{name}: differs from tokenizers at token {_first_difference(a, b)}"
    assert len(texts) > 2100
