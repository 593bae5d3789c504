"""Unigram and SentencePiece-BPE training: the models tokensmith trains load in
the ``sentencepiece`` library and encode there exactly as in tokensmith."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import tokensmith as ts
from tokensmith.formats import sentencepiece as spm

from .adversarial import strings
from .conftest import ZH, corpus_file, make_text

sentencepiece = pytest.importorskip("sentencepiece")

MODELS = ("unigram", "sentencepiece-bpe")


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return [make_text(100 + i, 300) for i in range(80)]


@pytest.fixture(scope="module", params=MODELS)
def trained(request: pytest.FixtureRequest, texts: list[str]) -> ts.Tokenizer:
    return ts.train(texts=texts, model=request.param, vocab_size=400)


def _processor(tok: ts.Tokenizer, tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tok.save(tmp_path / "trained.model")
    return sentencepiece.SentencePieceProcessor(model_file=str(path))


def test_vocabulary_layout(trained: ts.Tokenizer) -> None:
    assert trained.vocab_size == 400
    assert [trained.id_to_token(i) for i in range(3)] == ["<unk>", "<s>", "</s>"]
    proto = spm.read_model_proto(spm.dumps(trained))
    types = [p.type for p in proto.pieces]
    assert types[:3] == [spm.UNKNOWN, spm.CONTROL, spm.CONTROL]
    assert all(t == spm.NORMAL for t in types[3:])
    pieces = [p.piece for p in proto.pieces]
    assert len(set(pieces)) == len(pieces)
    # every piece is valid: one word at most, ▁ only in front, ≤ 16 characters
    for p in pieces[3:]:
        assert "\u2581" not in p[1:], p
        assert len(p) <= 16
    assert "\u2581the" in pieces


def test_sentencepiece_encodes_identically(trained: ts.Tokenizer, tmp_path: Path,
                                           texts: list[str]) -> None:
    sp = _processor(trained, tmp_path)
    held_out = [make_text(9000 + i, 200) for i in range(20)] + strings()
    mismatches = 0
    for text in held_out:
        ours = trained.encode_ordinary(text)
        theirs = sp.encode(text)
        mismatches += ours != theirs
        assert trained.decode(ours) == sp.decode(theirs)
    assert mismatches == 0


def test_unigram_scores_are_log_probabilities(texts: list[str]) -> None:
    tok = ts.train(texts=texts, model="unigram", vocab_size=400)
    proto = spm.read_model_proto(spm.dumps(tok))
    scores = [p.score for p in proto.pieces[3:]]
    assert all(s < 0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    # the learned distribution sums to at most 1 (characters added back can only lower it)
    assert sum(math.exp(s) for s in scores) <= 1.0 + 1e-3


def test_bpe_scores_follow_merge_order(texts: list[str]) -> None:
    tok = ts.train(texts=texts, model="sentencepiece-bpe", vocab_size=400)
    proto = spm.read_model_proto(spm.dumps(tok))
    scores = [p.score for p in proto.pieces[3:]]
    assert scores == [-float(i) for i in range(len(scores))]
    first = proto.pieces[3].piece
    assert len(first) == 2  # the first merge joins two characters


def test_tokenizer_json_round_trip(trained: ts.Tokenizer, tmp_path: Path) -> None:
    path = trained.save(tmp_path / "tokenizer.json")
    again = ts.load(path)
    text = make_text(77, 300)
    assert again.encode_ordinary(text) == trained.encode_ordinary(text)
    # and back to a .model that sentencepiece reads
    sp = _processor(again, tmp_path)
    assert sp.encode(text) == trained.encode_ordinary(text)


def test_chinese_trains_without_word_segmentation() -> None:
    lines = [ZH[i:] + ZH[:i] for i in range(len(ZH))] * 5
    for model in MODELS:
        tok = ts.train(texts=lines, model=model, vocab_size=80, character_coverage=1.0)
        pieces = list(tok.get_vocab())
        assert any(len(p.lstrip("\u2581")) >= 3 for p in pieces), model
        text = "训练语料越大词表越好"
        assert tok.decode(tok.encode_ordinary(text)) == text


def test_byte_fallback_covers_unseen_characters(texts: list[str], tmp_path: Path) -> None:
    for model in MODELS:
        tok = ts.train(texts=texts, model=model, vocab_size=700, byte_fallback=True)
        assert tok.token_to_id("<0x00>") == 3 and tok.token_to_id("<0xFF>") == 258
        text = "Ωμέγα ∑ \U00013000nseen"  # (a hieroglyph: unseen, and NFKC keeps it)
        ids = tok.encode_ordinary(text)
        assert tok.token_to_id("<unk>") not in ids
        assert tok.decode(ids) == text
        sp = _processor(tok, tmp_path)
        assert sp.encode(text) == ids


def test_uncovered_characters_become_unk(texts: list[str]) -> None:
    tok = ts.train(texts=texts, model="unigram", vocab_size=400)
    ids = tok.encode_ordinary("the Ω the")
    assert tok.token_to_id("<unk>") in ids


def test_special_tokens_and_user_defined_symbols(texts: list[str], tmp_path: Path) -> None:
    tok = ts.train(texts=texts, model="unigram", vocab_size=400, pad_token="<pad>",
                   special_tokens=["<mask>"], user_defined_symbols=["[NUM]"])
    assert [tok.id_to_token(i) for i in range(6)] == [
        "<unk>", "<s>", "</s>", "<pad>", "<mask>", "[NUM]"]
    sp = _processor(tok, tmp_path)
    text = "the [NUM] token"
    assert 5 in tok.encode_ordinary(text)
    assert sp.encode(text) == tok.encode_ordinary(text)
    assert sp.pad_id() == 3


def test_trace_reports_em_steps_and_merges(texts: list[str]) -> None:
    events: list[tuple[str, tuple]] = []
    ts.train(texts=texts, model="unigram", vocab_size=400,
             callback=lambda k, d: events.append((k, d)))
    em = [d for k, d in events if k == "em"]
    assert em and em[-1][2] <= int(400 * 1.1)
    assert all(d[3] > 0 and d[4] > 0 for d in em)
    events.clear()
    ts.train(texts=texts, model="sentencepiece-bpe", vocab_size=400, trace=5,
             callback=lambda k, d: events.append((k, d)))
    merges = [d for k, d in events if k == "merge"]
    assert len(merges) == 5
    assert merges[0][4] >= merges[-1][4]  # counts do not grow


def test_verbose_output(texts: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    import io

    out = io.StringIO()
    ts.train(texts=texts, model="unigram", vocab_size=400, verbose=True, progress=False,
             stream=out)
    log = out.getvalue()
    assert "EM round 0 step 0:" in log and "learned" in log


@pytest.mark.parametrize("model", MODELS)
def test_bad_options(model: str, texts: list[str]) -> None:
    with pytest.raises(ts.VocabSizeError, match="vocab_size"):
        ts.train(texts=texts, model=model, vocab_size=3)
    with pytest.raises(ts.VocabSizeError, match="character"):
        ts.train(texts=texts, model=model, vocab_size=20)  # fewer than the characters
    with pytest.raises(ts.VocabSizeError, match="lower vocab_size"):
        ts.train(texts=texts[:2], model=model, vocab_size=50_000)
    tok = ts.train(texts=texts[:2], model=model, vocab_size=50_000, hard_vocab_limit=False)
    assert tok.vocab_size < 50_000
    with pytest.raises(ts.ConfigError, match="character_coverage"):
        ts.train(texts=texts, model=model, vocab_size=400, character_coverage=1.5)
    with pytest.raises(ts.ConfigError, match="no option 'pattern': it is an option of "
                                             "model='bpe'"):
        ts.train(texts=texts, model=model, vocab_size=400, pattern="gpt2")
    with pytest.raises(ts.EmptyCorpusError):
        ts.train(texts=["", "   "], model=model, vocab_size=400)
    with pytest.raises(ts.ConfigError, match="twice"):
        ts.train(texts=texts, model=model, vocab_size=400, special_tokens=["<s>"])


def test_unknown_model_name() -> None:
    with pytest.raises(ts.ConfigError, match="unigram"):
        ts.train(texts=["a b"], model="wordpiecez", vocab_size=100)


def test_files_and_lines(tmp_path: Path) -> None:
    # each line is a sentence; CRLF endings are the same as LF
    lf = tmp_path / "lf.txt"
    crlf = tmp_path / "crlf.txt"
    body = [make_text(500 + i, 60).replace("\n", " ") for i in range(40)]
    lf.write_text("\n".join(body) + "\n", encoding="utf-8")
    crlf.write_bytes(("\r\n".join(body) + "\r\n").encode("utf-8"))
    a = ts.train(lf, model="unigram", vocab_size=300)
    b = ts.train(crlf, model="unigram", vocab_size=300)
    assert a.get_vocab() == b.get_vocab()


def test_same_result_with_any_thread_count(texts: list[str], monkeypatch) -> None:  # type: ignore[no-untyped-def]
    runs = []
    for n in ("1", "2"):
        monkeypatch.setenv("TOKENSMITH_NUM_THREADS", n)
        tok = ts.train(texts=texts, model="unigram", vocab_size=400)
        runs.append(json.loads(tok.to_str())["model"]["vocab"])
    # the pieces are the same; scores agree to float precision
    assert [p for p, _ in runs[0]] == [p for p, _ in runs[1]]


def test_real_corpus_slice(tmp_path: Path) -> None:
    src = corpus_file("en.txt")
    data = src.read_bytes()[:1_500_000]
    cut = data.rfind(b"\n")
    path = tmp_path / "en.txt"
    path.write_bytes(data[:cut + 1])
    tok = ts.train(path, model="unigram", vocab_size=2000)
    sp = _processor(tok, tmp_path)
    held = src.read_bytes()[5_000_000:5_200_000].decode("utf-8", "ignore")
    assert sp.encode(held) == tok.encode_ordinary(held)
    assert len(held.encode()) / len(sp.encode(held)) > 3.0


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tokensmith.cli import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(make_text(700 + i, 80) for i in range(40)), encoding="utf-8")
    out = tmp_path / "uni.model"
    assert main(["train", str(corpus), "--model", "unigram", "--vocab-size", "300",
                 "--character-coverage", "1.0", "-q", "--out", str(out)]) == 0
    sp = sentencepiece.SentencePieceProcessor(model_file=str(out))
    assert sp.get_piece_size() == 300
    folder = tmp_path / "bpe"
    assert main(["train", str(corpus), "--model", "sentencepiece-bpe", "--vocab-size", "600",
                 "--byte-fallback", "--user-defined-symbol", "[X]", "-q",
                 "--out", str(folder) + "/"]) == 0
    a, b = ts.load(folder / "tokenizer.json"), ts.load(folder / "tokenizer.model")
    text = "the [X] tokenizer ☃"
    assert a.encode_ordinary(text) == b.encode_ordinary(text)
    assert b.token_to_id("[X]") in b.encode_ordinary(text)
    capsys.readouterr()
    # the text may follow the flags
    assert main(["encode", str(out), "--ids", "--color", "never", "the model"]) == 0
    assert "▁the" in capsys.readouterr().out
    # options that belong to other models are refused before training
    assert main(["train", str(corpus), "--model", "unigram", "--vocab-size", "300",
                 "--char-level", "--out", str(tmp_path / "x.model")]) == 2
    assert "--char-level does not apply" in capsys.readouterr().err
    assert main(["train", str(corpus), "--vocab-size", "300", "--byte-fallback",
                 "--out", str(tmp_path / "x.json")]) == 2
    assert "--byte-fallback applies to" in capsys.readouterr().err


def test_bpe_dropout(texts: list[str], tmp_path: Path) -> None:
    from tokensmith.sampling import sample_encode

    tok = ts.train(texts=texts, model="sentencepiece-bpe", vocab_size=500, byte_fallback=True)
    text = "the tokenizer trains on lower newer text"
    base = tok.encode_ordinary(text)
    assert sample_encode(tok, text, alpha=0.0, seed=3) == base
    chars = sample_encode(tok, text, alpha=1.0, seed=3)
    assert [tok.id_to_token(i) for i in chars] == ["\u2581" if c == " " else c
                                                   for c in "\u2581" + text]
    draws = [sample_encode(tok, text, alpha=0.3, seed=s) for s in range(300)]
    assert all(tok.decode(d) == text for d in draws)
    assert len({tuple(d) for d in draws}) > 20
    assert sample_encode(tok, text, alpha=0.3, seed=7) == sample_encode(tok, text, alpha=0.3,
                                                                          seed=7)
    # on average as long as sentencepiece's own BPE-dropout
    sp = _processor(tok, tmp_path)
    ours = sum(len(d) for d in draws) / len(draws)
    theirs = sum(len(sp.encode(text, enable_sampling=True, alpha=0.3)) for _ in range(300)) / 300
    assert abs(ours - theirs) / theirs < 0.06, (ours, theirs)
    assert len(base) < ours < len(chars)


def test_bpe_dropout_on_llama2() -> None:
    from tokensmith.sampling import sample_encode

    from .conftest import asset

    path = asset("llama2", "tokenizer.model")
    tok = ts.load(path)
    sp = sentencepiece.SentencePieceProcessor(model_file=str(path))
    text = "Subword regularization makes models robust to segmentation noise."
    assert sample_encode(tok, text, alpha=0.0, seed=1) == sp.encode(text)
    ours = [sample_encode(tok, text, alpha=0.2, seed=s) for s in range(400)]
    theirs = [sp.encode(text, enable_sampling=True, alpha=0.2) for _ in range(400)]
    assert all(tok.decode(d) == text for d in ours)
    mean = sum(map(len, ours)) / 400
    ref_mean = sum(map(len, theirs)) / 400
    assert abs(mean - ref_mean) / ref_mean < 0.05, (mean, ref_mean)


def _spm_bpe_pieces(path: Path, vocab_size: int, tmp_path: Path) -> list[str]:
    prefix = tmp_path / f"spm-{path.stem}-{vocab_size}"
    sentencepiece.SentencePieceTrainer.train(
        input=str(path), model_prefix=str(prefix), model_type="bpe", vocab_size=vocab_size,
        character_coverage=0.9995, max_sentence_length=1 << 30, input_sentence_size=0,
        num_threads=1, minloglevel=2)
    sp = sentencepiece.SentencePieceProcessor(model_file=f"{prefix}.model")
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size())]


def _kana_text(seed: int, lines: int) -> str:
    """Lines of made-up kana words: no spaces, few distinct pairs, many equal counts."""
    import random

    rng = random.Random(seed)
    syllables = [chr(c) for c in range(0x3042, 0x3094)] + ["ー", "ッ", "。", "、"]
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 5))) for _ in range(300)]
    return "\n".join("".join(rng.choice(words) for _ in range(rng.randint(3, 30)))
                     for _ in range(lines)) + "\n"


@pytest.mark.parametrize("vocab_size", [600, 2000])
def test_bpe_pieces_equal_spm_train(tmp_path: Path, vocab_size: int) -> None:
    """The same pieces in the same order as ``spm_train --model_type=bpe``: late merges
    are mostly ties of small counts, which both break by the shorter piece, then the
    smaller string."""
    path = tmp_path / "kana.txt"
    path.write_text(_kana_text(5, 3000) + make_text(3, 2000) + "\n", encoding="utf-8")
    tok = ts.train([path], model="sentencepiece-bpe", vocab_size=vocab_size)
    ours = [tok.id_to_token(i) for i in range(tok.vocab_size)]
    assert ours == _spm_bpe_pieces(path, vocab_size, tmp_path)


def test_bpe_pieces_equal_spm_train_on_japanese(tmp_path: Path) -> None:
    """600 KB of a Japanese novel at 16,000 pieces (most merges of count 2 or 3): the same
    vocabulary as ``spm_train``, piece for piece."""
    source = corpus_file("ja.txt")
    path = tmp_path / "ja.txt"
    path.write_bytes(source.read_bytes()[:600_000].rsplit(b"\n", 1)[0] + b"\n")
    tok = ts.train([path], model="sentencepiece-bpe", vocab_size=16000)
    ours = [tok.id_to_token(i) for i in range(tok.vocab_size)]
    assert ours == _spm_bpe_pieces(path, 16000, tmp_path)
