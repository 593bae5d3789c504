"""SuperBPE training (``superword_start``): superwords, exactness in the reference
libraries, and the options it refuses."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import tokensmith as ts
from tokensmith._train_superbpe import superword_pattern
from tokensmith.errors import ConfigError, VocabSizeError

from .conftest import make_text

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
NOUNS = ["state", "file", "value", "system", "option", "user", "name", "end", "list", "time"]
ADJS = ["new", "old", "empty", "given", "last", "first", "same"]
TEMPLATES = [
    "The {n} of the {m} is {a}.",
    "It can be used in the {n}, and the {m} is {a}.",
    "If the {n} is {a}, the {m} will be {a}.",
    "This is one of the {n}s in the {m}; see the {m} for the {n}.",
]


def phrases(seed: int, n: int) -> str:
    """Sentences full of recurring multi-word phrases ("of the", "can be used")."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        t = rng.choice(TEMPLATES)
        out.append(t.format(n=rng.choice(NOUNS), m=rng.choice(NOUNS), a=rng.choice(ADJS)))
        if rng.random() < 0.2:
            out.append(make_text(rng.randrange(10**6), 12))
    return " ".join(out)


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return [phrases(i, 80) for i in range(40)]


@pytest.fixture(scope="module")
def superbpe(texts: list[str]) -> ts.Tokenizer:
    return ts.train(texts=texts, vocab_size=900, superword_start=600, superword_words=4,
                    special_tokens=["<|endoftext|>", "<|pad|>"])


def test_superwords_span_spaces_and_compress_more(superbpe: ts.Tokenizer,
                                                  texts: list[str]) -> None:
    plain = ts.train(texts=texts, vocab_size=900, special_tokens=["<|endoftext|>", "<|pad|>"])
    assert superbpe.vocab_size == plain.vocab_size == 900
    learned = [superbpe.id_to_bytes(i) for i in range(600, 898)]
    superwords = [t for t in learned if b" " in t.strip()]
    assert len(superwords) > 50 and b" of the" in learned
    # no token before the transition spans a space inside it, as in plain BPE
    assert not any(b" " in superbpe.id_to_bytes(i).strip() for i in range(256, 600))
    held = phrases(999, 200)
    assert superbpe.decode(superbpe.encode(held)) == held
    assert len(superbpe.encode(held)) < 0.9 * len(plain.encode(held))
    # special tokens come last, after the superwords
    assert superbpe.special_tokens == {"<|endoftext|>": 898, "<|pad|>": 899}


def test_stage_one_is_plain_bpe_up_to_the_transition(superbpe: ts.Tokenizer,
                                                     texts: list[str]) -> None:
    plain = ts.train(texts=texts, vocab_size=600, special_tokens=())
    assert superbpe.merges[: 600 - 256] == plain.merges


def test_chunks_hold_at_most_the_given_number_of_words() -> None:
    import regex

    pat = regex.compile(superword_pattern(3))
    text = "one two three four five, six\n  seven 12345 eight\tnine"
    chunks = pat.findall(text)
    assert "".join(chunks) == text
    assert chunks[:2] == ["one two three", " four five, six"]
    assert "12" not in "".join(c for c in chunks if not c.isdigit())
    assert all(len(c.split()) <= 3 for c in chunks)


def _samples() -> list[str]:
    out = [phrases(7, 50), make_text(3, 300), "  leading and trailing  ", "a\r\n\r\nb",
           "digits 1234567 and 12 3", "tabs\tand  double  spaces", "", " ", "中文 的 文本 。",
           "emoji 👍🏽 and é"]
    for name, n in (("en", 200_000), ("code", 200_000), ("zh", 100_000)):
        path = CORPUS / f"{name}.txt"
        if path.exists():
            out.extend(path.read_text(encoding="utf-8")[:n].split("\n"))
    return out


def test_tokenizers_encode_a_saved_superbpe_id_for_id(superbpe: ts.Tokenizer,
                                                      tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    if not (CORPUS / "en.txt").exists():
        pytest.skip(f"{CORPUS} is missing: only the built samples are compared")  # loud
    hf = tokenizers.Tokenizer.from_file(str(superbpe.save(tmp_path / "tokenizer.json")))
    samples = _samples()
    ours = superbpe.encode_batch(samples, disallowed_special=())
    theirs = [e.ids for e in hf.encode_batch(samples, add_special_tokens=False)]
    assert ours == theirs


def test_a_rank_file_is_refused_where_tiktoken_would_differ(superbpe: ts.Tokenizer) -> None:
    # tiktoken merges any two tokens that make a token, by rank: a superword can be
    # reached by pairs the merge list never made, so the rank file is refused, as
    # for any merge list tiktoken's rule would not follow
    from tokensmith.errors import UnsupportedComponentError
    from tokensmith.formats import tiktoken as tk

    with pytest.raises(UnsupportedComponentError, match="tokenizer.json"):
        tk.dumps(superbpe)


def test_texts_given_as_a_generator_are_read_by_both_stages(texts: list[str]) -> None:
    a = ts.train(texts=(t for t in texts), vocab_size=700, superword_start=600)
    b = ts.train(texts=texts, vocab_size=700, superword_start=600)
    assert a.merges == b.merges and len(a.merges) == 700 - 256 - 1


def test_verbose_names_both_stages(texts: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    import io

    out = io.StringIO()
    ts.train(texts=texts, vocab_size=700, superword_start=600, verbose=True, stream=out,
             progress=False)
    log = out.getvalue()
    assert "stage 1" in log and "stage 2: superwords of up to 4 words" in log


@pytest.mark.parametrize(
    ("options", "error", "words"),
    [
        ({"superword_start": 256}, ConfigError, "more than 256"),
        ({"superword_start": 999}, VocabSizeError, "no room"),
        ({"superword_start": 1000}, VocabSizeError, "no room"),
        ({"superword_start": 600.0}, ConfigError, "must be an int"),
        ({"superword_start": True}, ConfigError, "must be an int"),
        ({"superword_start": 600, "superword_words": 1}, ConfigError, "superword_words"),
        ({"superword_start": 600, "superword_words": 17}, ConfigError, "superword_words"),
        ({"superword_start": 600, "byte_level": False}, ConfigError, "byte-level"),
        ({"superword_start": 600, "sample_bytes": 1000}, ConfigError, "sample_bytes"),
        ({"superword_start": 600, "input_sentence_size": 10}, ConfigError, "input_sentence"),
        ({"superword_start": 600, "text_field": "body"}, ConfigError, "text_field"),
    ],
)
def test_bad_superword_options_are_refused(texts: list[str], options: dict, error: type,
                                           words: str) -> None:
    with pytest.raises(error, match=words):
        ts.train(texts=texts[:2], vocab_size=1000, **options)


def test_counts_cannot_stand_for_the_corpus(texts: list[str]) -> None:
    counts = ts.count(texts=texts[:4])
    with pytest.raises(ConfigError, match="counts"):
        ts.train(counts=counts, vocab_size=700, superword_start=600)
