"""Every metric of tokensmith.evaluate against values worked out by hand.

The tokenizers are built by hand (tests/_measure_helpers.py) so each token
boundary is known; the texts, including the small parallel sample, were
written for these tests.
"""

from __future__ import annotations

import json
import math
import statistics

import pytest
import tokensmith as ts
from tokensmith.errors import EmptyTextError, EvaluationError, ParallelTextError
from tokensmith.evaluate import (
    compression,
    coverage,
    evaluate,
    fertility,
    histogram,
    length_distribution,
    parity,
    percentile,
    renyi_efficiency,
    split_documents,
    term_fragmentation,
    token_text,
    vocabulary_use,
    words,
)

from ._measure_helpers import bytes_only, char_bpe, wordpiece
from .conftest import asset

# WordPiece over [UNK] the cat ##s sat mat m ##at c:
#   "the cats sat" -> the | cat ##s | sat      4 tokens, 12 characters
#   "the mat"      -> the | mat                2 tokens,  7 characters
#   "dog"          -> [UNK]                    1 token,   3 characters
DOCS = ["the cats sat", "the mat", "dog"]

# A small parallel sample (line i is the same sentence in every language).
# With one token per UTF-8 byte, each count below is the byte count:
PARALLEL = {
    "en": ["The cat sleeps.", "Good morning!"],  # 15 + 13 = 28
    "de": ["Die Katze schläft.", "Guten Morgen!"],  # 19 (ä is 2 bytes) + 13 = 32
    "ru": ["Кошка спит.", "Доброе утро!"],  # (10+1+8+1) + (12+1+8+1) = 20 + 22 = 42
    "zh": ["猫在睡觉。", "早上好！"],  # 5·3 + 4·3 = 15 + 12 = 27
    "ja": ["猫が寝ている。", "おはよう！"],  # 7·3 + 5·3 = 21 + 15 = 36
}


@pytest.fixture(scope="module")
def wp() -> ts.Tokenizer:
    return wordpiece()


@pytest.fixture(scope="module")
def byte_tok() -> ts.Tokenizer:
    return bytes_only()


# ------------------------------------------------------------ compression


def test_compression_by_hand(wp: ts.Tokenizer) -> None:
    c = compression(wp, DOCS)
    assert (c.tokens, c.characters, c.bytes) == (7, 22, 22)
    assert c.bytes_per_token == pytest.approx(22 / 7)
    assert c.chars_per_token == pytest.approx(22 / 7)
    assert c.tokens_per_1k_chars == pytest.approx(1000 * 7 / 22)


def test_compression_counts_bytes_and_characters_apart(byte_tok: ts.Tokenizer) -> None:
    c = compression(byte_tok, "猫在睡觉。")  # 5 characters, 15 bytes, 15 tokens
    assert (c.characters, c.bytes, c.tokens) == (5, 15, 15)
    assert c.bytes_per_token == 1.0
    assert c.chars_per_token == pytest.approx(1 / 3)
    assert c.tokens_per_1k_chars == 3000.0


# -------------------------------------------------------------- fertility


def test_fertility_by_hand(wp: ts.Tokenizer) -> None:
    f = fertility(wp, DOCS)
    # words: the cats sat the mat dog; tokens per word 1 2 1 1 1 1
    assert (f.words, f.word_tokens, f.continued_words) == (6, 7, 1)
    assert f.fertility == pytest.approx(7 / 6)
    assert f.proportion_continued == pytest.approx(1 / 6)


def test_fertility_chinese_and_japanese_words_are_characters(byte_tok: ts.Tokenizer) -> None:
    # 我 爱 猫 are three words of 3 bytes each; "I love 猫": I (1), love (4), 猫 (3).
    # The space byte overlaps no word and counts for none.
    f = fertility(byte_tok, ["我爱猫", "I love 猫"])
    assert (f.words, f.word_tokens, f.continued_words) == (6, 17, 5)
    assert f.fertility == pytest.approx(17 / 6)
    assert f.proportion_continued == pytest.approx(5 / 6)
    ja = fertility(byte_tok, "ねこが好き")  # five words (kana and Han), 3 bytes each
    assert (ja.words, ja.fertility, ja.proportion_continued) == (5, 3.0, 1.0)


def test_fertility_with_a_user_segmenter(byte_tok: ts.Tokenizer) -> None:
    f = fertility(byte_tok, "我爱北京", segmenter=lambda text: ["我", "爱", "北京"])
    assert (f.words, f.word_tokens) == (3, 12)  # 3 + 3 + 6
    assert f.fertility == 4.0


def test_words_rule() -> None:
    text = "don't stop_now 3.14 nai\u0308ve 分词 カタカナ नमस्ते दुनिया"

    def spans(t: str) -> list[str]:
        return [t[s:e] for s, e in words(t)]

    assert spans(text) == ["don", "t", "stop", "now", "3", "14", "nai\u0308ve",
                           "分", "词", "カ", "タ", "カ", "ナ", "नमस्ते", "दुनिया"]
    assert words("", None) == []
    assert words("  ,.!  ") == []


def test_words_segmenter_spans_and_blank_words() -> None:
    text = "我爱 北京"
    assert words(text, lambda t: ["我", "爱", " ", "北京"]) == [(0, 1), (1, 2), (3, 5)]
    # a word the segmenter changed (not in the text) is skipped
    assert words("ab cd", lambda t: ["ab", "XX", "cd"]) == [(0, 2), (3, 5)]


# --------------------------------------------------------------- coverage


def test_unknown_rate_by_hand(wp: ts.Tokenizer) -> None:
    c = coverage(wp, DOCS)
    assert (c.tokens, c.unknown_tokens, c.byte_fallback_tokens) == (7, 1, 0)
    assert c.unknown_rate == pytest.approx(1 / 7)
    assert c.unknown_characters == ["d", "o", "g"]


def test_byte_fallback_rate_by_hand() -> None:
    tok = char_bpe(["a", "b", "ab"], ["a b"], byte_fallback=True, unk="<unk>")
    c = coverage(tok, "ab é")  # ab | <0xC3> <0xA9>
    assert (c.tokens, c.byte_fallback_tokens, c.unknown_tokens) == (3, 2, 0)
    assert c.byte_fallback_rate == pytest.approx(2 / 3)
    assert token_text(tok, tok.token_to_id("<0xC3>") or -1) == b"\xc3"


def test_unknown_in_a_sentencepiece_unigram_model() -> None:
    tok = ts.load(asset("sentencepiece-unigram", "test_model.model"))
    c = coverage(tok, "分词")  # '▁' and one unknown piece for both characters
    assert (c.tokens, c.unknown_tokens) == (2, 1)
    assert c.unknown_characters == ["分", "词"]


def test_unknown_text_is_a_warning_not_an_error(wp: ts.Tokenizer) -> None:
    ev = evaluate(wp, ["猫 dog"])
    assert ev.coverage is not None and ev.coverage.unknown_tokens == 2
    assert any("cannot represent" in w and "猫" in w for w in ev.warnings)


# ---------------------------------------------------------- vocabulary use


def test_vocabulary_use_by_hand(wp: ts.Tokenizer) -> None:
    v = vocabulary_use(wp, DOCS, top=3)
    # 8 ordinary tokens ([UNK] is special); produced: the cat ##s sat mat
    assert (v.vocab_size, v.used, v.never_produced) == (8, 5, 3)
    assert v.share_used == pytest.approx(5 / 8)
    assert v.never_produced_sample == ["m", "at", "c"]  # ids 6, 7, 8; ## removed
    assert v.longest == [("the", 3, 2), ("cat", 3, 1), ("sat", 3, 1)]


# ---------------------------------------------------------- document lengths


def test_length_distribution_by_hand(wp: ts.Tokenizer) -> None:
    s = length_distribution(wp, DOCS, context_length=1)
    assert s.lengths == [4, 2, 1]
    assert s.mean == pytest.approx(7 / 3)
    assert (s.p50, s.p95, s.p99, s.max) == (2, 4, 4, 4)
    assert s.over_context == 2


def test_percentile_is_nearest_rank() -> None:
    values = list(range(1, 11))
    assert [percentile(values, p) for p in (0, 10, 50, 90, 95, 99, 100)] == [
        1, 1, 5, 9, 10, 10, 10]
    assert percentile([], 50) == 0
    assert percentile([7], 99) == 7


def test_histogram_bins() -> None:
    assert histogram([0, 1, 2, 3, 9], bins=5) == [
        (0, 2, 2), (2, 4, 2), (4, 6, 0), (6, 8, 0), (8, 10, 1)]
    assert histogram([1, 50], bins=2, upper=10) == [(0, 6, 1), (6, 12, 1)]
    assert histogram([]) == []


# ----------------------------------------------------------- Rényi efficiency


def test_renyi_efficiency_by_hand(wp: ts.Tokenizer) -> None:
    # unigram counts: the 2, cat 1, ##s 1, sat 1, mat 1, [UNK] 1 (7 tokens, 6 types)
    r2 = renyi_efficiency(wp, DOCS, alpha=2)
    h2 = math.log2(49 / 9)  # -log2 of sum p^2 = (4 + 5) / 49
    assert r2.entropy_bits == pytest.approx(h2)
    assert r2.efficiency == pytest.approx(h2 / 3)  # log2 of 8 ordinary tokens
    assert r2.efficiency_observed == pytest.approx(h2 / math.log2(6))
    r1 = renyi_efficiency(wp, DOCS, alpha=1)
    shannon = -(2 / 7 * math.log2(2 / 7) + 5 / 7 * math.log2(1 / 7))
    assert r1.entropy_bits == pytest.approx(shannon)
    default = renyi_efficiency(wp, DOCS)
    h25 = math.log2((2 / 7) ** 2.5 + 5 * (1 / 7) ** 2.5) / (1 - 2.5)
    assert default.alpha == 2.5
    assert default.efficiency == pytest.approx(h25 / 3)


def test_renyi_of_a_single_token_type_is_zero(wp: ts.Tokenizer) -> None:
    r = renyi_efficiency(wp, "the the the")
    assert r.entropy_bits == 0.0 and r.efficiency == 0.0
    assert math.isnan(r.efficiency_observed)


# ------------------------------------------------------------------- terms


def test_term_fragmentation_by_hand(wp: ts.Tokenizer) -> None:
    t = term_fragmentation(wp, ["cats", "", "  ", "mat", "cats", "dog"])
    assert [(r.term, r.pieces, r.split, r.unknown) for r in t.terms] == [
        ("cats", ["cat", "s"], True, False),
        ("mat", ["mat"], False, False),
        ("dog", ["[UNK]"], False, True),
    ]
    assert t.tokens_per_term == pytest.approx(4 / 3)
    assert (t.split_terms, t.split_share) == (1, pytest.approx(1 / 3))
    assert t.warnings == ["2 blank terms skipped", "1 repeated term measured once"]


def test_term_pieces_show_partial_bytes(byte_tok: ts.Tokenizer) -> None:
    t = term_fragmentation(byte_tok, ["é"])  # after a space: ' ' is not part of the term
    assert t.terms[0].pieces == ["<0xC3>", "<0xA9>"]


def test_blank_term_list_is_a_typed_error(wp: ts.Tokenizer) -> None:
    with pytest.raises(EmptyTextError, match="blank"):
        term_fragmentation(wp, ["", "   ", "\t"])
    ev = evaluate(wp, DOCS, terms=["", ""])
    assert ev.terms is None and any("blank" in w for w in ev.warnings)
    assert ev.compression is not None  # the rest is still measured


# ------------------------------------------------------------------ parity


def test_parity_by_hand(byte_tok: ts.Tokenizer) -> None:
    p = parity(byte_tok, PARALLEL, pivot="en")
    counts = {lp.language: lp.tokens for lp in p.languages}
    assert counts == {"en": 28, "de": 32, "ru": 42, "zh": 27, "ja": 36}
    premiums = [1.0, 32 / 28, 42 / 28, 27 / 28, 36 / 28]
    assert [lp.premium for lp in p.languages] == pytest.approx(premiums)
    assert p.premium("ru") == pytest.approx(1.5)
    assert p.spread == pytest.approx(42 / 27)
    assert p.std == pytest.approx(statistics.pstdev(premiums))
    assert (p.pivot, p.lines, p.warnings) == ("en", 2, [])


def test_parity_counts_unknown_tokens(wp: ts.Tokenizer) -> None:
    # "The cat sleeps." -> [UNK] cat [UNK]; "Good morning!" -> [UNK] [UNK]
    p = parity(wp, {"en": PARALLEL["en"], "zh": PARALLEL["zh"]})
    en = p.languages[0]
    assert (en.tokens, en.unknown_tokens) == (5, 4)
    assert p.premium("zh") == pytest.approx(2 / 5)  # one [UNK] per line: looks cheap
    assert p.warnings[0].startswith("en: 80% of the tokens are unknown")
    assert "zh: 100% of the tokens are unknown" in p.warnings[1]


def test_parity_pivot_can_be_any_language(byte_tok: ts.Tokenizer) -> None:
    p = parity(byte_tok, PARALLEL, pivot="zh")
    assert p.premium("en") == pytest.approx(28 / 27)


def test_parallel_files_with_different_line_counts(byte_tok: ts.Tokenizer) -> None:
    uneven = {"en": ["The cat sleeps.", "Good morning!", "One more line."],
              "de": ["Die Katze schläft.", "Guten Morgen!"]}
    p = parity(byte_tok, uneven)
    assert p.lines == 2 and p.premium("de") == pytest.approx(32 / 28)
    assert "different numbers of lines (en: 3, de: 2)" in p.warnings[0]
    with pytest.raises(ParallelTextError, match="different numbers of lines"):
        parity(byte_tok, uneven, on_mismatch="error")


def test_parity_errors(byte_tok: ts.Tokenizer) -> None:
    with pytest.raises(ParallelTextError, match="pivot"):
        parity(byte_tok, {"de": ["x"]}, pivot="en")
    with pytest.raises(ParallelTextError, match="no tokens"):
        parity(byte_tok, {"en": [""], "de": ["x"]})
    assert issubclass(ParallelTextError, EvaluationError)
    ev = evaluate(byte_tok, ["hi"], parallel={"de": ["Hallo"]})
    assert ev.parity is None and any("parity not measured" in w for w in ev.warnings)


def test_parallel_text_as_one_string_per_language(byte_tok: ts.Tokenizer) -> None:
    p = parity(byte_tok, {k: "\n".join(v) + "\n" for k, v in PARALLEL.items()})
    assert p.premium("ru") == pytest.approx(1.5) and p.lines == 2


# ------------------------------------------------------------ evaluate()


def test_evaluate_runs_every_metric_from_one_pass(wp: ts.Tokenizer) -> None:
    ev = evaluate(wp, DOCS, terms=["cats"], context_length=3, name="wp")
    assert ev.name == "wp" and ev.model == "WordPiece" and ev.vocab_size == 8
    assert ev.documents == 3
    assert ev.compression == compression(wp, DOCS)
    assert ev.fertility == fertility(wp, DOCS)
    assert ev.lengths is not None and ev.lengths.over_context == 1
    assert ev.terms is not None and ev.terms.split_terms == 1
    data = json.loads(ev.to_json())
    assert data["compression"]["tokens"] == 7
    assert data["lengths"]["histogram"] and "lengths" not in data["lengths"]
    assert data["terms"]["terms"][0]["tokens"] == 2
    text = ev.summary()
    assert "fertility" in text and "[cat][s]" in text


def test_empty_texts(wp: ts.Tokenizer) -> None:
    with pytest.raises(EmptyTextError, match="empty"):
        evaluate(wp, [])
    with pytest.raises(EmptyTextError):
        evaluate(wp, ["", ""])
    with pytest.raises(EmptyTextError):
        compression(wp, "")
    ev = evaluate(wp, ["", "the mat", ""])
    assert ev.documents == 1 and "2 empty documents skipped" in ev.warnings
    only_terms = evaluate(wp, terms=["cats"])
    assert only_terms.compression is None and only_terms.terms is not None
    assert only_terms.warnings == []


def test_special_token_text_is_measured_as_text() -> None:
    tok = ts.train(texts=["a b c " * 20], vocab_size=260, special_tokens=["<|endoftext|>"])
    text = "a<|endoftext|>b"
    ev = evaluate(tok, [text])
    expected = tok.encode(text, disallowed_special=())
    assert ev.compression is not None and ev.compression.tokens == len(expected)
    assert tok.special_tokens["<|endoftext|>"] not in expected


def test_post_processor_tokens_are_not_counted() -> None:
    tok = ts.load(asset("bert-base-uncased", "tokenizer.json"))
    c = compression(tok, "hello world")
    assert c.tokens == 2  # no [CLS] / [SEP]


def test_a_tokenizer_that_fails_to_load_raises_a_typed_error(tmp_path) -> None:  # noqa: ANN001
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json")
    with pytest.raises(ts.TokenizerError):
        evaluate(str(bad), ["x"])


def test_split_documents() -> None:
    text = "\nfirst para\nline two\n\n\nsecond\n  \nthird"
    paras = split_documents(text)
    assert "".join(paras) == text
    assert paras == ["\nfirst para\nline two\n\n\n", "second\n  \n", "third"]
    lines = split_documents("a\n\nb\nc", "lines")
    assert lines == ["a\n\n", "b\n", "c"]
    assert split_documents("x\n\ny", "file") == ["x\n\ny"]
    with pytest.raises(ValueError):
        split_documents("x", "words")  # type: ignore[arg-type]


def test_token_text_removes_word_markers(wp: ts.Tokenizer) -> None:
    assert token_text(wp, 3) == b"s"  # ##s
    gpt2 = ts.load(asset("gpt2", "tokenizer.json"))
    assert token_text(gpt2, gpt2.token_to_id("Ġthe") or -1) == b" the"


# ----------------------------------------- more values worked out by hand


def test_length_percentiles_and_context_overflow_by_hand(byte_tok: ts.Tokenizer) -> None:
    # one token per byte: documents of 1, 2, ..., 20 tokens
    docs = ["x" * n for n in range(1, 21)]
    s = length_distribution(byte_tok, docs, context_length=18)
    assert s.mean == pytest.approx(10.5)
    # nearest rank: p50 is the ceil(0.50·20) = 10th value, p95 the 19th, p99 the ceil(19.8) = 20th
    assert (s.p50, s.p95, s.p99, s.max) == (10, 19, 20, 20)
    assert s.over_context == 2  # 19 and 20 tokens; 18 itself fits
    assert length_distribution(byte_tok, docs, context_length=20).over_context == 0
    assert length_distribution(byte_tok, docs).over_context is None
    # 100 documents: 95 of 1 token, 4 of 2, 1 of 3
    skew = ["a"] * 95 + ["ab"] * 4 + ["abc"]
    t = length_distribution(byte_tok, skew, context_length=1)
    assert (t.p50, t.p95, t.p99, t.max, t.over_context) == (1, 1, 2, 3, 5)
    assert t.mean == pytest.approx((95 + 8 + 3) / 100)


def test_tokens_per_1k_characters_by_hand(wp: ts.Tokenizer, byte_tok: ts.Tokenizer) -> None:
    assert compression(wp, "the cats sat").tokens_per_1k_chars == pytest.approx(1000 * 4 / 12)
    # "né" is 2 characters, 3 bytes, 3 byte tokens: 1,500 tokens per 1,000 characters
    c = compression(byte_tok, "né")
    assert (c.tokens, c.characters, c.bytes) == (3, 2, 3)
    assert c.tokens_per_1k_chars == 1500.0 and c.bytes_per_token == 1.0


def test_renyi_efficiency_of_a_uniform_and_a_skewed_distribution(byte_tok: ts.Tokenizer) -> None:
    # "abcd": four token types, each p = 1/4, so H_α = log2 4 = 2 bits for every α;
    # |V| = 256 ordinary tokens, log2 256 = 8
    for alpha in (0.5, 1, 2, 2.5, 3):
        r = renyi_efficiency(byte_tok, "abcd", alpha=alpha)
        assert r.entropy_bits == pytest.approx(2.0)
        assert r.efficiency == pytest.approx(2 / 8)
        assert r.efficiency_observed == pytest.approx(1.0)
    # "aab": p = (2/3, 1/3). α = 2: H = -log2(4/9 + 1/9) = log2(9/5) ≈ 0.848 bits;
    # α = 3: H = log2((8 + 1)/27) / (1 - 3) = log2(3) / 2 ≈ 0.792 bits
    r2 = renyi_efficiency(byte_tok, "aab", alpha=2)
    assert r2.entropy_bits == pytest.approx(math.log2(9 / 5))
    assert r2.efficiency == pytest.approx(math.log2(9 / 5) / 8)
    assert r2.efficiency_observed == pytest.approx(math.log2(9 / 5))  # log2 of 2 types = 1
    r3 = renyi_efficiency(byte_tok, "aab", alpha=3)
    assert r3.entropy_bits == pytest.approx(math.log2(3) / 2)
    # α = 0 counts the types: log2 2 = 1 bit
    assert renyi_efficiency(byte_tok, "aab", alpha=0).entropy_bits == pytest.approx(1.0)
    with pytest.raises(ValueError):
        renyi_efficiency(byte_tok, "aab", alpha=-1)


def test_package_level_calls() -> None:
    import tokensmith as ts
    import tokensmith.evaluate as module

    tok = ts.train(texts=["hello world"] * 20, vocab_size=270)
    result = ts.evaluate(tok, ["hello there world"])
    assert result.compression.tokens == len(tok.encode_ordinary("hello there world"))
    assert ts.evaluate is module and callable(module)
    import tokensmith.compare as compare_module

    assert ts.compare is compare_module and callable(compare_module)
    cmp = ts.compare([tok], ["hello world"])
    (name,) = cmp.names
    (evaluation,) = cmp.results[name].values()
    assert evaluation.compression.tokens == len(tok.encode_ordinary("hello world"))


def test_tokens_per_word_numpy_and_plain_agree(monkeypatch) -> None:
    import random
    import sys

    from tokensmith.evaluate import _tokens_per_word

    rng = random.Random(3)
    for _ in range(50):
        cuts = sorted(rng.sample(range(1, 200), 30))
        spans = [(a, b) for a, b in zip(cuts[::2], cuts[1::2], strict=False) if b > a]
        points = sorted({0, 200, *rng.sample(range(1, 200), 40)})
        offsets = list(zip(points, points[1:], strict=False)) + [(5, 5)]
        fast = _tokens_per_word(spans, offsets)
        with monkeypatch.context() as m:
            m.setitem(sys.modules, "numpy", None)
            plain = _tokens_per_word(spans, offsets)
        assert fast == plain
        # by hand: a token counts for every word it overlaps
        expect = [sum(1 for s, e in offsets if e > s and s < we and e > ws) for ws, we in spans]
        assert plain == expect
