"""SentencePiece Unigram models against ``sentencepiece`` itself on long documents, where
its single-precision path scores (re-based past ±1e5) decide near-ties: every 45 KB chunk
of the Gutenberg novels and of ja.txt, whole novels, and user-defined pieces."""

from __future__ import annotations

import pytest
import tokensmith as ts
from tokensmith.sampling import encode_nbest

from .conftest import CORPUS, asset, corpus_file

spm = pytest.importorskip("sentencepiece", reason="sentencepiece is a test dependency")

MODELS = ["test_model.model", "test_ja_model.model"]
CHUNK = 45_000


def _chunks() -> list[str]:
    books = sorted((CORPUS / "gutenberg").glob("*.txt"))
    if not books:
        pytest.skip(f"no Gutenberg novels under {CORPUS} (../shared/corpus is optional)")
    texts = [b.read_text(encoding="utf-8") for b in books]
    texts.append(corpus_file("ja.txt").read_text(encoding="utf-8"))
    return [t[i:i + CHUNK] for t in texts for i in range(0, len(t), CHUNK)]


@pytest.mark.parametrize("name", MODELS)
def test_every_45_kb_chunk_matches_sentencepiece(name: str) -> None:
    path = asset("sentencepiece-unigram", name)
    ours, ref = ts.load(path), spm.SentencePieceProcessor(model_file=str(path))
    chunks = _chunks()
    differ = [k for k, c in enumerate(chunks)
              if ours.encode(c, add_special_tokens=False) != ref.encode(c)]
    assert len(chunks) > 400
    assert differ == []


@pytest.mark.parametrize("name", MODELS)
def test_whole_novels_match_sentencepiece(name: str) -> None:
    path = asset("sentencepiece-unigram", name)
    ours, ref = ts.load(path), spm.SentencePieceProcessor(model_file=str(path))
    for book in sorted((CORPUS / "gutenberg").glob("*.txt"))[:4]:
        text = book.read_text(encoding="utf-8")
        # (one document of megabytes: its path score passes 1e5 and is re-based)
        assert ours.encode(text, add_special_tokens=False) == ref.encode(text), book.name


def test_user_defined_pieces_score_as_sentencepiece(tmp_path) -> None:  # type: ignore[no-untyped-def]
    text = corpus_file("en.txt").read_text(encoding="utf-8")[:400_000]
    (tmp_path / "corpus.txt").write_text(text, encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(tmp_path / "corpus.txt"), model_prefix=str(tmp_path / "ud"), vocab_size=800,
        user_defined_symbols=["<tag>", "the", "ing", "Sherlock", "<br/>"], model_type="unigram",
        minloglevel=2)
    model = tmp_path / "ud.model"
    ours, ref = ts.load(model), spm.SentencePieceProcessor(model_file=str(model))
    samples = [text[i:i + 3000] for i in range(0, 300_000, 3000)]
    samples += ["<tag>the thing<br/>Sherlock<tag><tag>", "thethethe ing<br/>", "Sherlockian"]
    for s in samples:
        assert ours.encode(s, add_special_tokens=False) == ref.encode(s), s[:60]
    for s in samples[-3:]:
        assert encode_nbest(ours, s, 5) == ref.nbest_encode_as_ids(s, 5), s


def test_user_defined_piece_scores_by_its_length(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # A user-defined piece of 20 bytes scores 0.1 * 19 = 1.9 (sentencepiece 0.2.3; earlier
    # releases about -0.1 whatever its length): "q"*20 (user-defined) + "z" (-11.05)
    # = -9.15 beats the normal piece "q"*20 + "z" at -10.
    from tokensmith.formats import sentencepiece as spfmt

    proto = spfmt.read_model_proto(asset("sentencepiece-unigram", "test_model.model").read_bytes())
    q = "q" * 20
    proto.pieces.append(spfmt.SentencePiece(piece=q, score=0.0, type=spfmt.USER_DEFINED))
    proto.pieces.append(spfmt.SentencePiece(piece=q + "z", score=-10.0))
    model = tmp_path / "ud.model"
    model.write_bytes(proto.serialize())
    ours, ref = ts.load(model), spm.SentencePieceProcessor(model_file=str(model))
    for text in [q + "z", "x" + q + "z y", q + q + "z", "q" * 19 + "z"]:
        assert ours.encode(text, add_special_tokens=False) == ref.encode(text), text
        assert encode_nbest(ours, text, 4) == ref.nbest_encode_as_ids(text, 4), text
    assert ref.encode(q + "z", out_type=str) == ["\u2581", q, "z"]
