"""Vocabulary changes (add tokens, extend, merge, resize): old ids keep their
bytes, new ids follow the last one, and the saved file gives the same ids in
the reference library (tokenizers, sentencepiece, tiktoken)."""

from __future__ import annotations

import base64
import json
import warnings
from pathlib import Path

import pytest
import sentencepiece
import tiktoken
import tokenizers
import tokensmith as ts
from tokensmith import errors, pretrained

from .adversarial import strings as adversarial_strings
from .conftest import CORPUS, asset, corpus_file, make_text

# ------------------------------------------------------------------ helpers


def zh_lines(limit: int = 300_000) -> list[str]:
    text = corpus_file("zh.txt").read_text(encoding="utf-8")[:limit]
    return [line for line in text.splitlines() if line.strip()]


def en_docs(n: int = 200) -> list[str]:
    text = corpus_file("en.txt").read_text(encoding="utf-8")[:400_000]
    return [d for d in text.split("\n\n") if d.strip()][:n]


def samples() -> list[str]:
    out = [make_text(1000 + i, 120) for i in range(20)] + adversarial_strings()
    if (CORPUS / "zh.txt").exists():
        out += zh_lines(600_000)[-200:]
        out += en_docs(50)
    return out


def assert_old_ids_kept(old: ts.Tokenizer, new: ts.Tokenizer) -> None:
    report = ts.check_compatible(old, new, samples())
    assert report.ok, report.failures
    assert new.vocab_size >= old.vocab_size
    for i in range(old.vocab_size):
        assert new.id_to_bytes(i) == old.id_to_bytes(i), f"id {i} changed"
    assert {k: v for k, v in new.special_tokens.items() if k in old.special_tokens} == \
        old.special_tokens


def assert_round_trip(old: ts.Tokenizer, new: ts.Tokenizer) -> None:
    """Every text the old tokenizer gives back, the new one gives back (it may
    give back more: new characters are no longer unknown)."""
    for text in samples():
        if old.decode(old.encode(text, disallowed_special=())) == text:
            assert new.decode(new.encode(text, disallowed_special=())) == text


def hf_ids(tok: ts.Tokenizer, texts: list[str], path: Path) -> None:
    tok.save(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    for text in texts:
        assert hf.encode(text, add_special_tokens=False).ids == \
            tok.encode(text, allowed_special="all", add_special_tokens=False), text[:80]


def sp_ids(tok: ts.Tokenizer, texts: list[str], path: Path) -> None:
    tok.save(path)
    sp = sentencepiece.SentencePieceProcessor(model_file=str(path))
    assert sp.get_piece_size() == tok.vocab_size
    for text in texts:
        assert sp.encode(text) == tok.encode_ordinary(text), text[:80]


def tiktoken_ids(tok: ts.Tokenizer, texts: list[str], path: Path) -> None:
    tok.save(path)
    ranks = {}
    for line in path.read_text().splitlines():
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    spec = pretrained.ENCODINGS["cl100k_base"]
    enc = tiktoken.Encoding("extended", pat_str=spec.pattern, mergeable_ranks=ranks,
                            special_tokens=tok.special_tokens)
    assert enc.n_vocab == tok.vocab_size
    for text in texts:
        assert enc.encode_ordinary(text) == tok.encode_ordinary(text), text[:80]


# --------------------------------------------------------------- add tokens


def test_add_tokens_json(trained: ts.Tokenizer, tmp_path: Path) -> None:
    new = trained.add_tokens(["<tool_call>", "COVID-19"])
    new = new.add_tokens(["<|im_end|>"], special=True)
    first = trained.vocab_size
    assert new.token_to_id("<tool_call>") == first
    assert new.token_to_id("COVID-19") == first + 1
    assert new.special_tokens["<|im_end|>"] == first + 2
    assert trained.token_to_id("<tool_call>") is None  # the original is unchanged
    ids = new.encode("a <tool_call> about COVID-19")
    assert first in ids and first + 1 in ids
    with pytest.raises(errors.DisallowedSpecialTokenError):
        new.encode("x <|im_end|>")
    assert_old_ids_kept(trained, new)
    hf_ids(new, ["a <tool_call> about COVID-19", *samples()], tmp_path / "t.json")


def test_add_tokens_options_reach_tokenizers(trained: ts.Tokenizer, tmp_path: Path) -> None:
    new = trained.add_tokens(["<mask>"], lstrip=True, rstrip=True, single_word=True)
    texts = ["a <mask> b", "a<mask>b", "  <mask>  ", "<mask>"]
    hf_ids(new, texts, tmp_path / "t.json")


def test_existing_token_is_not_duplicated(trained: ts.Tokenizer) -> None:
    existing = trained.id_to_token(300)
    assert existing is not None
    text = trained.decode([300])
    with pytest.warns(UserWarning, match="already token 300"):
        same = trained.add_tokens([text])
    assert same.vocab_size == trained.vocab_size
    with pytest.raises(errors.TokenExistsError) as e:
        trained.add_tokens([text], on_exists="error")
    assert e.value.token_id == 300
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trained.add_tokens(["<|endoftext|>"], on_exists="ignore")


def test_normalized_token_that_exists_is_not_duplicated() -> None:
    bert = ts.load(str(asset("bert-base-uncased", "tokenizer.json")))
    with pytest.warns(UserWarning, match="normalized"):
        new = bert.add_tokens(["Naïve", "COVID-19"])
    assert new.vocab_size == bert.vocab_size + 1
    assert ts.check_compatible(bert, new, ["a naïve COVID-19 test"]).ok


@pytest.mark.parametrize("bad", ["", "   ", "\n\t"])
def test_empty_tokens_are_refused(trained: ts.Tokenizer, bad: str) -> None:
    with pytest.raises(errors.InvalidTokenError):
        trained.add_tokens([bad])


def test_bad_token_lists(trained: ts.Tokenizer) -> None:
    with pytest.raises(errors.InvalidTokenError, match="one string"):
        trained.add_tokens("<x>")  # type: ignore[arg-type]
    with pytest.raises(errors.InvalidTokenError):
        trained.add_tokens([3])  # type: ignore[list-item]
    with pytest.raises(errors.VocabLimitError) as e:
        trained.add_tokens(["<a>", "<b>"], max_vocab=trained.vocab_size + 1)
    assert e.value.limit == trained.vocab_size + 1 and e.value.size == trained.vocab_size + 2


def test_add_tokens_tiktoken(tmp_path: Path) -> None:
    tok = ts.load(str(asset("cl100k_base", "cl100k_base.tiktoken")))
    new = tok.add_tokens(["<|tool|>"], special=True)
    assert new.special_tokens["<|tool|>"] == 100277
    assert new.encode("<|tool|>", allowed_special="all") == [100277]
    with pytest.raises(errors.UnsupportedComponentError, match="special=True"):
        tok.add_tokens(["COVID-19"])
    tiktoken_ids(new, samples(), tmp_path / "x.tiktoken")


def test_add_tokens_sentencepiece(tmp_path: Path) -> None:
    tok = ts.load(str(asset("llama2", "tokenizer.model")))
    new = tok.add_tokens(["<tool_call>", "COVID-19"])
    assert new.token_to_id("<tool_call>") == 32000
    assert 32001 in new.encode("about COVID-19 now")
    sp_ids(new, ["about COVID-19 now", "x<tool_call>y", *samples()], tmp_path / "x.model")


# ------------------------------------------------------------------- extend


def test_extend_trained_byte_level(trained: ts.Tokenizer, corpus_texts: list[str],
                                   tmp_path: Path) -> None:
    fresh = [make_text(500 + i) + " Tokenization tokenizes tokenized tokens" for i in range(30)]
    new = trained.extend(texts=fresh, add=100)
    assert new.vocab_size == trained.vocab_size + 100
    assert_old_ids_kept(trained, new)
    assert_round_trip(trained, new)
    assert new.merges[: len(trained.merges)] == trained.merges
    assert sum(len(new.encode(t)) for t in fresh) < sum(len(trained.encode(t)) for t in fresh)
    hf_ids(new, samples(), tmp_path / "t.json")


def test_extend_reports_like_training(trained: ts.Tokenizer) -> None:
    events: list[str] = []
    trained.extend(texts=[make_text(7)] * 3, add=20, callback=lambda k, d: events.append(k))
    assert "merge" in events and "progress" in events


def test_extend_cl100k_rank_file(tmp_path: Path) -> None:
    tok = ts.load(str(asset("cl100k_base", "cl100k_base.tiktoken")))
    new = tok.extend(texts=zh_lines(), add=1000)
    assert new.vocab_size == 101277
    assert new.special_tokens == tok.special_tokens
    assert_old_ids_kept(tok, new)
    held = zh_lines(600_000)[-300:]
    assert sum(map(len, new.encode_batch(held))) < 0.8 * sum(map(len, tok.encode_batch(held)))
    tiktoken_ids(new, samples(), tmp_path / "x.tiktoken")


def test_extend_llama3_json(tmp_path: Path) -> None:
    tok = ts.load(str(asset("llama3", "tokenizer.json")))
    new = tok.extend(texts=zh_lines(200_000), add=300)
    assert_old_ids_kept(tok, new)
    hf_ids(new, samples(), tmp_path / "t.json")


def test_extend_llama2_model(tmp_path: Path) -> None:
    tok = ts.load(str(asset("llama2", "tokenizer.model")))
    new = tok.extend(texts=zh_lines(), add=1500)
    assert new.vocab_size == 33500
    assert_old_ids_kept(tok, new)
    assert_round_trip(tok, new)
    held = zh_lines(600_000)[-300:]
    assert sum(map(len, new.encode_batch(held))) < 0.8 * sum(map(len, tok.encode_batch(held)))
    sp_ids(new, samples(), tmp_path / "x.model")


def test_extend_protects_text(tmp_path: Path) -> None:
    tok = ts.load(str(asset("llama2", "tokenizer.model")))
    english = en_docs(150)
    new = tok.extend(texts=zh_lines(), add=800, protect=english)
    assert new.vocab_size == 32800
    assert new.encode_batch(english) == tok.encode_batch(english)
    sp_ids(new, samples(), tmp_path / "x.model")


def test_extend_scripts_keep_other_text_unchanged(tmp_path: Path) -> None:
    tok = ts.load(str(asset("cl100k_base", "cl100k_base.tiktoken")))
    new = tok.extend(texts=zh_lines(), add=600, scripts=["Han"])
    added = [new.decode_single_token_bytes(i).decode("utf-8", "replace")
             for i in range(tok.vocab_size, new.vocab_size)]
    assert all(any("\u3000" <= c <= "\u9fff" or "\uff00" <= c <= "\uffef" or c == "\ufffd"
                   for c in t) for t in added), [t for t in added if t.isascii()][:5]
    english = en_docs(200)
    assert new.encode_batch(english) == tok.encode_batch(english)
    tiktoken_ids(new, samples(), tmp_path / "x.tiktoken")
    with pytest.raises(errors.ConfigError, match="unknown script"):
        tok.extend(texts=zh_lines(), add=10, scripts=["Klingon"])


def test_extend_unigram_model_trained_here(tmp_path: Path) -> None:
    texts = [make_text(i) for i in range(40)]
    tok = ts.train(texts=texts, model="unigram", vocab_size=400)
    new = tok.extend(texts=[make_text(900 + i) for i in range(40)], add=100)
    assert new.vocab_size == 500
    assert_old_ids_kept(tok, new)
    assert_round_trip(tok, new)
    sp_ids(new, samples(), tmp_path / "u.model")


def test_extend_t5_json(tmp_path: Path) -> None:
    tok = ts.load(str(asset("t5", "tokenizer.json")))
    new = tok.extend(texts=en_docs(300), add=200)
    assert new.vocab_size == tok.vocab_size + 200
    assert_old_ids_kept(tok, new)
    assert_round_trip(tok, new)
    hf_ids(new, samples(), tmp_path / "t.json")


def test_unigram_list_with_ids_after_it_is_refused(tmp_path: Path) -> None:
    tok = ts.train(texts=[make_text(i) for i in range(10)], model="unigram", vocab_size=300)
    doc = json.loads(tok.to_str())
    doc["added_tokens"].append({"id": 305, "content": "<x>", "single_word": False,
                                "lstrip": False, "rstrip": False, "normalized": False,
                                "special": True})
    odd = ts.Tokenizer.from_str(json.dumps(doc))
    with pytest.raises(errors.UnsupportedComponentError, match="add_tokens"):
        odd.extend(texts=[make_text(3)], add=20)


def test_extend_wordpiece_bert(tmp_path: Path) -> None:
    tok = ts.load(str(asset("bert-base-uncased", "tokenizer.json")))
    new = tok.extend(texts=zh_lines(200_000), add=300)
    assert new.vocab_size == 30822
    assert_old_ids_kept(tok, new)
    unk = tok.token_to_id("[UNK]")
    held = zh_lines(600_000)[-200:]
    assert sum(i == unk for ids in new.encode_batch(held) for i in ids) < \
        sum(i == unk for ids in tok.encode_batch(held) for i in ids)
    hf_ids(new, samples(), tmp_path / "t.json")


def test_extend_bad_input(trained: ts.Tokenizer) -> None:
    with pytest.raises(errors.ConfigError, match="one of the two"):
        trained.extend(texts=["x"])
    with pytest.raises(errors.ConfigError, match="one of the two"):
        trained.extend(texts=["x"], add=3, vocab_size=900)
    with pytest.raises(errors.ConfigError, match="positive"):
        trained.extend(texts=["x"], vocab_size=trained.vocab_size)
    with pytest.raises(errors.VocabLimitError, match="max_vocab"):
        trained.extend(texts=["x"], add=10, max_vocab=trained.vocab_size + 5)
    with pytest.raises(errors.EmptyCorpusError):
        trained.extend(texts=[""], add=10)
    with pytest.raises(errors.NotEnoughTextError) as e:
        trained.extend(texts=["ab ab ab"], add=1000, strict=True)
    assert e.value.asked == 1000 and e.value.learned < 1000
    with pytest.warns(UserWarning, match="supports"):
        fewer = trained.extend(texts=["ab ab ab"], add=1000)
    assert trained.vocab_size < fewer.vocab_size < trained.vocab_size + 1000


# -------------------------------------------------------------------- merge


def test_merge_chinese_llama_recipe(tmp_path: Path) -> None:
    base = ts.load(str(asset("llama2", "tokenizer.model")))
    donor = ts.train(texts=zh_lines(), model="sentencepiece-bpe", vocab_size=3000,
                     byte_fallback=True)
    merged = ts.merge(base, donor)
    assert base.vocab_size < merged.vocab_size <= base.vocab_size + 3000
    assert_old_ids_kept(base, merged)
    held = zh_lines(600_000)[-300:]
    assert sum(map(len, merged.encode_batch(held))) < 0.8 * sum(map(len, base.encode_batch(held)))
    sp_ids(merged, samples(), tmp_path / "m.model")


def test_merge_byte_level(trained: ts.Tokenizer, tmp_path: Path) -> None:
    donor = ts.train(texts=[make_text(300 + i) + " bioinformatics" for i in range(30)],
                     vocab_size=700)
    merged = ts.merge(trained, donor, limit=50)
    assert merged.vocab_size == trained.vocab_size + 50
    assert_old_ids_kept(trained, merged)
    hf_ids(merged, samples(), tmp_path / "m.json")


def test_merge_refuses_other_families(trained: ts.Tokenizer) -> None:
    wp = ts.train(texts=[make_text(1)] * 3, model="wordpiece", vocab_size=200)
    with pytest.raises(errors.IncompatibleTokenizersError, match="wordpiece"):
        ts.merge(trained, wp)
    with pytest.raises(errors.VocabLimitError):
        ts.merge(trained, ts.train(texts=[make_text(2)] * 3, vocab_size=700),
                 max_vocab=trained.vocab_size + 1)


# ------------------------------------------------------------------- resize


def test_resize_to_a_multiple(trained: ts.Tokenizer, tmp_path: Path) -> None:
    new = trained.resize(128)
    assert new.vocab_size % 128 == 0 and new.vocab_size - trained.vocab_size < 128
    assert new.special_tokens["<|reserved_special_token_0|>"] == trained.vocab_size
    assert_old_ids_kept(trained, new)
    assert new.resize(128) is new
    hf_ids(new, samples(), tmp_path / "r.json")
    with pytest.raises(errors.VocabLimitError) as e:
        trained.resize(128, max_vocab=trained.vocab_size)
    assert str(trained.vocab_size) in str(e.value) or f"{new.vocab_size:,}" in str(e.value)
    with pytest.raises(errors.VocabLimitError):
        trained.resize(max_vocab=trained.vocab_size - 1)
    with pytest.raises(errors.ConfigError):
        trained.resize(0)


def test_resize_continues_reserved_numbering() -> None:
    tok = ts.load(str(asset("llama3", "tokenizer.json")))
    new = tok.resize(size=tok.vocab_size + 2)
    names = [new.id_to_token(tok.vocab_size), new.id_to_token(tok.vocab_size + 1)]
    numbers = [int(n.rsplit("_", 1)[1].rstrip("|>")) for n in names if n]
    have = [int(t.rsplit("_", 1)[1].rstrip("|>")) for t in tok.special_tokens
            if t.startswith("<|reserved_special_token_")]
    assert numbers == [max(have) + 1, max(have) + 2]


def test_resize_sentencepiece_unused_pieces(tmp_path: Path) -> None:
    tok = ts.load(str(asset("llama2", "tokenizer.model")))
    new = tok.resize(size=32010)
    assert new.vocab_size == 32010 and new.id_to_token(32005) == "<unused5>"
    sp_ids(new, samples(), tmp_path / "r.model")


# ---------------------------------------------------------------------- CLI


def test_cli_add_extend_merge_resize(trained: ts.Tokenizer, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    from tokensmith.cli import main

    base = trained.save(tmp_path / "base.json")
    corpus = tmp_path / "new.txt"
    corpus.write_text("\n".join(make_text(40 + i) for i in range(20)), encoding="utf-8")
    out = str(tmp_path / "a.json")
    assert main(["add-tokens", str(base), "<tool>", "--special", "-o", out]) == 0
    added = ts.load(str(tmp_path / "a.json"))
    assert added.special_tokens["<tool>"] == trained.vocab_size
    assert main(["extend", str(base), "--text", str(corpus), "--add", "40",
                 "-o", str(tmp_path / "e")]) == 0
    extended = ts.load(str(tmp_path / "e"))
    assert extended.vocab_size == trained.vocab_size + 40
    assert "new ids" in capsys.readouterr().out
    assert main(["merge", str(base), str(tmp_path / "e" / "tokenizer.json"),
                 "--limit", "10", "-o", str(tmp_path / "m.json")]) == 0
    assert ts.load(str(tmp_path / "m.json")).vocab_size == trained.vocab_size + 10
    assert main(["resize", str(base), "--multiple-of", "64", "-o", str(tmp_path / "r.json")]) == 0
    assert ts.load(str(tmp_path / "r.json")).vocab_size % 64 == 0
    assert main(["resize", str(base), "--max-vocab", str(trained.vocab_size)]) == 0
    assert "fits" in capsys.readouterr().out
    # bad input: one line, exit status 2, nothing written
    assert main(["resize", str(base), "--max-vocab", "10"]) == 2
    assert main(["extend", str(base), "--text", str(tmp_path / "missing.txt"), "--add", "5",
                 "-o", str(tmp_path / "x.json")]) == 2
    assert main(["add-tokens", str(base), " ", "-o", str(tmp_path / "y.json")]) == 2
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "y.json").exists()
    assert "error" in capsys.readouterr().err


# -------------------------------------------------- the classic file formats


def test_extend_vocab_txt_saves_back(tmp_path: Path) -> None:
    tok = ts.load(str(asset("bert-base-uncased", "vocab.txt")))
    new = tok.extend(texts=zh_lines(100_000), add=100)
    assert_old_ids_kept(tok, new)
    path = new.save(tmp_path / "vocab.txt")
    hf = tokenizers.BertWordPieceTokenizer(str(path), lowercase=True)
    for text in samples()[:40]:
        assert hf.encode(text, add_special_tokens=False).ids == \
            new.encode(text, add_special_tokens=False)


def test_extend_vocab_json_merges_saves_back(tmp_path: Path) -> None:
    tok = ts.load(str(asset("gpt2", "vocab.json")))
    new = tok.extend(texts=zh_lines(100_000), add=100)
    assert_old_ids_kept(tok, new)
    vocab, merges = new.save_vocab_merges(tmp_path)
    hf = tokenizers.ByteLevelBPETokenizer(str(vocab), str(merges), add_prefix_space=False)
    for text in samples()[:40]:
        assert hf.encode(text).ids == new.encode(text, disallowed_special=())
