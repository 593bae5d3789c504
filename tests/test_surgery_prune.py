"""Pruning (tokensmith.surgery.prune): a smaller vocabulary, old ids still valid.

The property every test comes back to: for text whose old encoding uses only
kept tokens, the new encoding is the old one mapped id for id through the id
map. Each tokenizer family is checked on held-out text, on the text it was
pruned on, and against its reference library reading the saved file.
"""

from __future__ import annotations

import base64
import gzip
import importlib
import random
from pathlib import Path

import numpy as np
import pytest
import tokensmith as ts
from tokensmith.cli import main
from tokensmith.errors import (
    ConfigError,
    CorpusEncodingError,
    CorpusError,
    DisallowedSpecialTokenError,
    EmptyCorpusError,
    PruneError,
    TokenizerError,
    TokenizerFormatError,
    UnknownIdError,
)
from tokensmith.surgery.prune import IdMap, prune

from .conftest import asset, corpus_file, make_text

prune_module = importlib.import_module("tokensmith.surgery.prune")

TRICKY = [
    "\t-ilrsD \t%s and\n    indented\n\n\n        deeper",
    "naïve café — 1234567 dollars, 3.14159!",
    "分词器把文本切成小块。 日本語のテキスト",
    "emoji 😀👍🏽 and RTL שלום مرحبا",
    "   leading spaces\r\nwindows line",
    "a" * 300,
]


# ------------------------------------------------------------------ helpers


def _ids(tok: ts.Tokenizer, text: str) -> list[int]:
    return tok.encode(text, disallowed_special=(), add_special_tokens=False)


def _kept_only(old: ts.Tokenizer, id_map: IdMap, texts: list[str]) -> list[str]:
    """The texts whose old encoding uses only kept tokens."""
    out = []
    for t in texts:
        ids = _ids(old, t)
        if ids and all(id_map.old_to_new[i] >= 0 for i in ids):
            out.append(t)
    return out


def _assert_maps(
    old: ts.Tokenizer, new: ts.Tokenizer, id_map: IdMap, texts: list[str], at_least: int
) -> list[str]:
    """The guarantee, on every text whose old tokens were all kept; returns those texts."""
    kept = _kept_only(old, id_map, texts)
    for t in kept:
        assert _ids(new, t) == id_map.map_ids(_ids(old, t)), t
    assert len(kept) >= at_least, f"only {len(kept)} of {len(texts)} texts use only kept tokens"
    return kept


def _fragments(texts: list[str], words: int = 6) -> list[str]:
    """Short pieces of texts (a few words each): many of them use only kept tokens."""
    out = []
    for t in texts:
        ws = t.split(" ")
        out += [" ".join(ws[k : k + words]) for k in range(0, len(ws), words)]
    return [x for x in out if x.strip()]


def _read_cut(path: Path, start: int, size: int) -> str:
    with path.open("rb") as f:
        f.seek(start)
        data = f.read(size)
    first = data.find(b"\n") + 1 if start else 0
    return data[first : data.rfind(b"\n") + 1].decode("utf-8")


@pytest.fixture(scope="module")
def en_train() -> str:
    """About 300 KB of English, cut at a line break."""
    return _read_cut(corpus_file("en.txt"), 0, 300_000)


@pytest.fixture(scope="module")
def en_held() -> list[str]:
    """Lines of English from further into the file (not pruned on)."""
    return [x for x in _read_cut(corpus_file("en.txt"), 6_000_000, 300_000).split("\n") if x][
        :1500
    ]


@pytest.fixture(scope="module")
def held_mixed() -> list[str]:
    return _fragments([make_text(10_000 + k) for k in range(40)])


# ------------------------------------------------- byte-level BPE (json)


@pytest.fixture(scope="module")
def trained_pruned(trained, corpus_texts):
    before = trained.to_str()
    new, id_map = prune(trained, corpus_texts[:30], min_count=40)
    assert trained.to_str() == before, "prune changed the tokenizer it was given"
    return new, id_map


def test_byte_level_bpe_keeps_old_encodings(trained, trained_pruned, corpus_texts, held_mixed):
    new, id_map = trained_pruned
    assert 258 < new.vocab_size < trained.vocab_size
    assert id_map.old_size == trained.vocab_size and id_map.new_size == new.vocab_size
    kept = _assert_maps(trained, new, id_map, held_mixed, at_least=200)
    _assert_maps(trained, new, id_map, _fragments(corpus_texts[:30]), at_least=500)
    # compacted in old-id order
    kept_old = np.flatnonzero(id_map.old_to_new >= 0)
    assert id_map.old_to_new[kept_old].tolist() == list(range(new.vocab_size))
    for i in kept_old[::37]:
        assert new.id_to_bytes(id_map.new_id(int(i))) == trained.id_to_bytes(int(i))
    # every text still round-trips, whether its tokens were kept or not
    for t in held_mixed + TRICKY:
        assert new.decode(new.encode(t, disallowed_special=())) == t
    assert len(kept) < len(held_mixed), "the prune removed nothing the held-out text uses"


def test_byte_level_bpe_bytes_specials_and_merges_survive(trained, trained_pruned):
    new, id_map = trained_pruned
    old_ids = {trained.id_to_bytes(i): i for i in range(trained.vocab_size)}
    for b in range(256):
        assert new.id_to_bytes(id_map.new_id(old_ids[bytes([b])])) == bytes([b])
    assert new.special_tokens == {
        c: id_map.new_id(i) for c, i in trained.special_tokens.items()
    }
    assert new.encode("<|endoftext|>", allowed_special="all") == [
        id_map.new_id(trained.special_tokens["<|endoftext|>"])
    ]
    # the closure: every kept token longer than a byte is made by a kept merge
    made = {a + b for a, b in new.merges}
    for tok, i in new.get_vocab().items():
        if i not in new.special_tokens.values() and len(tok) > 1:
            assert tok in made, tok


def test_byte_level_bpe_saved_file_loads_in_tokenizers(trained_pruned, held_mixed, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    new, _ = trained_pruned
    path = new.save(tmp_path / "pruned.json")
    hf = tokenizers.Tokenizer.from_file(str(path))
    assert hf.get_vocab_size() == new.vocab_size
    for t in held_mixed[:300] + TRICKY:
        assert hf.encode(t).ids == new.encode(t, disallowed_special=()), t
    assert ts.load(path).encode(held_mixed[0]) == new.encode(held_mixed[0])


def test_keep_ids_keeps_every_kept_id(trained, trained_pruned, corpus_texts, held_mixed, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    compact_new, compact_map = trained_pruned
    new, id_map = prune(trained, corpus_texts[:30], min_count=40, keep_ids=True)
    assert new.vocab_size == trained.vocab_size == id_map.new_size
    assert id_map.keep_ids
    # the same tokens are kept as without keep_ids, each at its old id
    assert ((id_map.old_to_new >= 0) == (compact_map.old_to_new >= 0)).all()
    removed = id_map.removed()
    assert removed and len(removed) == trained.vocab_size - compact_new.vocab_size
    for i in range(trained.vocab_size):
        if i in removed:
            assert id_map.new_id(i) is None
            assert new.id_to_token(i) == f"<|unused_{i}|>"
            assert new.special_tokens[f"<|unused_{i}|>"] == i
        else:
            assert id_map.new_id(i) == i
            assert new.id_to_token(i) == trained.id_to_token(i)
    kept = _assert_maps(trained, new, id_map, held_mixed, at_least=200)
    for t in kept:
        assert _ids(new, t) == _ids(trained, t)
    # text never produces an unused id, unless a call allows it
    unused = set(removed)
    for t in held_mixed + TRICKY:
        assert not unused & set(new.encode(t, disallowed_special=()))
    name = f"<|unused_{removed[0]}|>"
    with pytest.raises(DisallowedSpecialTokenError):
        new.encode(f"x {name} y")
    assert new.encode(name, allowed_special="all") == [removed[0]]
    hf = tokenizers.Tokenizer.from_file(str(new.save(tmp_path / "kept.json")))
    for t in held_mixed[:200] + TRICKY:
        assert hf.encode(t).ids == new.encode(t, disallowed_special=()), t


def test_vocab_size_counts_everything_kept(trained, corpus_texts, held_mixed):
    texts = corpus_texts[:30]
    new, id_map = prune(trained, texts, vocab_size=400)
    assert new.vocab_size <= 400
    _assert_maps(trained, new, id_map, held_mixed + _fragments(texts, 2), at_least=20)
    # with min_count=0 unused tokens fill the rest: exactly V
    full, _ = prune(trained, texts, vocab_size=400, min_count=0)
    assert full.vocab_size == 400
    # the most used tokens are the ones kept
    counts = np.bincount(
        np.concatenate([np.asarray(_ids(trained, t)) for t in texts]), minlength=trained.vocab_size
    )
    top = np.argsort(-counts, kind="stable")[:60]
    assert (id_map.old_to_new[top] >= 0).all()
    # the minimum is what can never be removed: 256 bytes + 2 special tokens
    smallest, m = prune(trained, texts, vocab_size=258)
    assert smallest.vocab_size == 258 and len(m.removed()) == trained.vocab_size - 258
    with pytest.raises(PruneError, match="vocab_size >= 258"):
        prune(trained, texts, vocab_size=257)


def test_keep_protects_a_token_and_what_it_is_made_of(trained, corpus_texts):
    vocab = trained.get_vocab()
    longest = max(
        (t for t, i in vocab.items() if i not in trained.special_tokens.values()), key=len
    )
    text = trained.decode([vocab[longest]])
    new, id_map = prune(trained, ["unrelated words"], min_count=10**9, keep=[text])
    i = vocab[longest]
    assert id_map.new_id(i) is not None
    assert new.encode_ordinary(text) == [id_map.new_id(i)]
    # also by its vocabulary spelling, or by id
    for key in (longest, i):
        _, m = prune(trained, ["unrelated words"], min_count=10**9, keep=[key])
        assert m.new_id(i) is not None


# ----------------------------------------------------------- cl100k (tiktoken)


@pytest.fixture(scope="module")
def cl100k():
    return ts.load(asset("cl100k_base", "cl100k_base.tiktoken"))


@pytest.fixture(scope="module")
def cl100k_pruned(cl100k, en_train):
    return prune(cl100k, [en_train])


def _tiktoken_from(path: Path, tok: ts.Tokenizer):
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    src = tok._tiktoken
    return tiktoken.Encoding(
        name="pruned",
        pat_str=src.pattern,
        mergeable_ranks=load_tiktoken_bpe(str(path)),
        special_tokens=src.special_tokens,
    )


def test_cl100k_keeps_old_encodings(cl100k, cl100k_pruned, en_train, en_held):
    new, id_map = cl100k_pruned
    assert 2_000 < new.vocab_size < 30_000
    _assert_maps(cl100k, new, id_map, en_held, at_least=300)
    _assert_maps(cl100k, new, id_map, en_train.split("\n")[:2000], at_least=1000)
    for t in en_held[:300] + TRICKY:
        assert new.decode(new.encode_ordinary(t)) == t
    # byte tokens and special tokens survive; specials move down, in order
    kept_bytes = {new.id_to_bytes(i) for i in range(new.vocab_size)}
    assert {bytes([b]) for b in range(256)} <= kept_bytes
    specials = sorted(cl100k.special_tokens.items(), key=lambda kv: kv[1])
    assert [new.special_tokens[c] for c, _ in specials] == [
        id_map.new_id(i) for _, i in specials
    ]
    assert [id_map.new_id(i) for _, i in specials] == sorted(new.special_tokens.values())
    # ids 100261-100275 were never tokens: gaps, not removed tokens
    assert set(range(100261, 100276)) <= set(id_map.gaps)
    assert not set(id_map.gaps) & set(id_map.removed())


def test_cl100k_saved_rank_file_loads_in_tiktoken(cl100k_pruned, en_held, tmp_path):
    new, _ = cl100k_pruned
    path = new.save(tmp_path / "cl100k-en.tiktoken")
    enc = _tiktoken_from(path, new)
    assert enc.n_vocab == new.vocab_size
    for t in en_held[:500] + TRICKY:
        assert enc.encode_ordinary(t) == new.encode_ordinary(t), t
    assert enc.encode("<|endoftext|>", allowed_special="all") == new.encode(
        "<|endoftext|>", allowed_special="all"
    )
    from tokensmith.formats import tiktoken as tt

    again = tt.load(path, pattern=new._tiktoken.pattern,
                    special_tokens=new._tiktoken.special_tokens)
    assert again.encode_ordinary(en_held[0]) == new.encode_ordinary(en_held[0])


def test_cl100k_keep_ids_rank_file_has_unused_specials(cl100k, en_train, en_held, tmp_path):
    new, id_map = prune(cl100k, [en_train], keep_ids=True)
    assert new.vocab_size == cl100k.vocab_size
    removed = id_map.removed()
    assert len(removed) > 70_000
    for i in removed[:: len(removed) // 50]:
        assert new.special_tokens[f"<|unused_{i}|>"] == i
    for c, i in cl100k.special_tokens.items():
        assert new.special_tokens[c] == i
    kept = _assert_maps(cl100k, new, id_map, en_held, at_least=300)
    assert all(_ids(new, t) == _ids(cl100k, t) for t in kept[:200])
    enc = _tiktoken_from(new.save(tmp_path / "cl100k-en-ids.tiktoken"), new)
    for t in en_held[:300] + TRICKY:
        assert enc.encode_ordinary(t) == new.encode_ordinary(t), t


def test_resize_embeddings_gives_the_same_vectors(cl100k, cl100k_pruned, en_held):
    new, id_map = cl100k_pruned
    rng = np.random.default_rng(0)
    old_emb = rng.standard_normal((cl100k.vocab_size, 64)).astype(np.float32)
    new_emb = id_map.resize_embeddings(old_emb)
    assert new_emb.shape == (new.vocab_size, 64)
    kept = _kept_only(cl100k, id_map, en_held)
    assert len(kept) > 300
    for t in kept:
        assert np.array_equal(old_emb[_ids(cl100k, t)], new_emb[_ids(new, t)])
    # a bias vector (one axis) too; a matrix of another vocabulary is refused
    assert id_map.resize_embeddings(np.arange(cl100k.vocab_size)).tolist() == [
        i for i in range(cl100k.vocab_size) if id_map.old_to_new[i] >= 0
    ]
    with pytest.raises(ConfigError, match="old vocabulary has 100277 ids"):
        id_map.resize_embeddings(np.zeros((1000, 4)))
    kept_map = IdMap(
        np.where(id_map.old_to_new >= 0, np.arange(id_map.old_size), -1), id_map.old_size,
        id_map.old_size, keep_ids=True,
    )
    assert np.array_equal(kept_map.resize_embeddings(old_emb), old_emb)


# --------------------------------------------------- SentencePiece Unigram


def test_sentencepiece_unigram(en_train, en_held, tmp_path):
    spm = pytest.importorskip("sentencepiece")
    tok = ts.load(asset("sentencepiece-unigram", "test_model.model"))
    new, id_map = prune(tok, [en_train], min_count=2)
    assert new.vocab_size < tok.vocab_size
    _assert_maps(tok, new, id_map, en_held, at_least=300)
    for t in en_held[:200]:
        assert new.decode(new.encode_ordinary(t)) == tok.decode(tok.encode_ordinary(t))
    # unknown and control pieces, and (no byte fallback) every single character survive
    for piece in ("<unk>", "<s>", "</s>"):
        assert new.token_to_id(piece) == id_map.new_id(tok.token_to_id(piece))
    for piece, i in tok.get_vocab().items():
        if len(piece) == 1:
            assert new.token_to_id(piece) == id_map.new_id(i), piece
    sp = spm.SentencePieceProcessor(model_file=str(new.save(tmp_path / "small.model")))
    assert sp.vocab_size() == new.vocab_size
    assert (sp.unk_id(), sp.bos_id(), sp.eos_id()) == (
        id_map.new_id(0), id_map.new_id(1), id_map.new_id(2)
    )
    for t in en_held[:500] + TRICKY:
        assert sp.encode(t) == new.encode_ordinary(t), t
    # keep_ids: removed pieces are UNUSED, kept ones where they were
    same, m = prune(tok, [en_train], min_count=2, keep_ids=True)
    sp2 = spm.SentencePieceProcessor(model_file=str(same.save(tmp_path / "same.model")))
    assert sp2.vocab_size() == tok.vocab_size
    for i in range(tok.vocab_size):
        assert sp2.id_to_piece(i) == tok.id_to_token(i)
        assert sp2.IsUnused(i) == (m.new_id(i) is None)
    kept = _assert_maps(tok, same, m, en_held, at_least=300)
    assert all(_ids(same, t) == _ids(tok, t) for t in kept)
    for t in en_held[:300] + TRICKY:
        ids = sp2.encode(t)
        assert ids == same.encode_ordinary(t), t
        assert not any(sp2.IsUnused(i) for i in ids)


# ----------------------------------------------------- Llama-2 (SP BPE)


@pytest.fixture(scope="module")
def llama2():
    return ts.load(asset("llama2", "tokenizer.model"))


def test_llama2_sentencepiece_bpe(llama2, en_train, en_held, tmp_path):
    spm = pytest.importorskip("sentencepiece")
    new, id_map = prune(llama2, [en_train])
    assert 2_000 < new.vocab_size < 20_000
    _assert_maps(llama2, new, id_map, en_held, at_least=300)
    _assert_maps(llama2, new, id_map, en_train.split("\n")[:2000], at_least=1000)
    # byte pieces, <unk>, <s>, </s> survive
    for b in range(256):
        piece = f"<0x{b:02X}>"
        assert new.token_to_id(piece) == id_map.new_id(llama2.token_to_id(piece))
    sp = spm.SentencePieceProcessor(model_file=str(new.save(tmp_path / "l2.model")))
    assert (sp.unk_id(), sp.bos_id(), sp.eos_id()) == (
        id_map.new_id(0), id_map.new_id(1), id_map.new_id(2)
    )
    zh = [x for x in _read_cut(corpus_file("zh.txt"), 0, 60_000).split("\n") if x][:100]
    for t in en_held[:400] + TRICKY + zh:
        ids = new.encode_ordinary(t)
        assert sp.encode(t) == ids, t
        # removed characters come back through byte fallback
        assert new.decode(ids) == llama2.decode(llama2.encode_ordinary(t))


def test_llama2_keep_ids_never_produces_unused(llama2, en_train, en_held, tmp_path):
    spm = pytest.importorskip("sentencepiece")
    new, id_map = prune(llama2, [en_train], keep_ids=True)
    sp = spm.SentencePieceProcessor(model_file=str(new.save(tmp_path / "l2-ids.model")))
    removed = id_map.removed()
    assert len(removed) > 10_000
    assert all(sp.IsUnused(i) for i in removed)
    assert all(sp.id_to_piece(i) == llama2.id_to_token(i) for i in range(0, 32000, 97))
    kept = _assert_maps(llama2, new, id_map, en_held, at_least=300)
    assert all(_ids(new, t) == _ids(llama2, t) for t in kept)
    zh = [x for x in _read_cut(corpus_file("zh.txt"), 0, 60_000).split("\n") if x][:100]
    for t in en_held[:300] + TRICKY + zh:
        ids = sp.encode(t)
        assert ids == new.encode_ordinary(t), t
        assert not any(sp.IsUnused(i) for i in ids), t


# ------------------------------------------------------- WordPiece (BERT)


@pytest.fixture(scope="module")
def bert():
    return ts.load(asset("bert-base-uncased", "tokenizer.json"))


def test_wordpiece_bert(bert, en_train, en_held, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    new, id_map = prune(bert, [en_train], min_count=2)
    assert new.vocab_size < 10_000
    _assert_maps(bert, new, id_map, en_held, at_least=300)
    # with the post-processor: [CLS] ... [SEP], their ids remapped
    for t in _kept_only(bert, id_map, en_held)[:200]:
        assert new.encode(t) == id_map.map_ids(bert.encode(t))
    assert new.encode("hello")[0] == id_map.new_id(bert.token_to_id("[CLS]"))
    # every single character and its ## form survive, so no word becomes [UNK]
    for piece, i in bert.get_vocab().items():
        if len(piece) == 1 or (piece.startswith("##") and len(piece) == 3):
            assert id_map.new_id(i) is not None, piece
    unk = bert.token_to_id("[UNK]")
    for t in en_held[:300]:
        assert (unk in bert.encode(t)) == (id_map.new_id(unk) in new.encode(t)), t
    hf = tokenizers.Tokenizer.from_file(str(new.save(tmp_path / "bert-small.json")))
    for t in en_held[:400] + TRICKY:
        assert hf.encode(t).ids == new.encode(t), t
        assert hf.encode(t, "a pair").ids == new.encode_full(t, "a pair").ids


def test_wordpiece_keep_ids_uses_bert_unused_names(bert, en_train, en_held, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    new, id_map = prune(bert, [en_train], min_count=2, keep_ids=True)
    removed = id_map.removed()
    assert new.vocab_size == bert.vocab_size
    for i in removed:
        assert new.id_to_token(i) == f"[unused{i}]"
        assert new.special_tokens[f"[unused{i}]"] == i
    kept = _assert_maps(bert, new, id_map, en_held, at_least=300)
    assert all(new.encode(t) == bert.encode(t) for t in kept[:200])
    hf = tokenizers.Tokenizer.from_file(str(new.save(tmp_path / "bert-ids.json")))
    for t in en_held[:300] + TRICKY:
        assert hf.encode(t).ids == new.encode(t), t


# ------------------------------------------------------------------ IdMap


def test_id_map_round_trips_and_looks_up(cl100k_pruned, tmp_path):
    _, id_map = cl100k_pruned
    path = id_map.save(tmp_path / "maps" / "cl100k.json")
    again = IdMap.load(path)
    assert np.array_equal(again.old_to_new, id_map.old_to_new)
    assert (again.old_size, again.new_size, again.keep_ids, again.gaps) == (
        id_map.old_size, id_map.new_size, id_map.keep_ids, id_map.gaps
    )
    assert IdMap.from_json(id_map.to_json()).removed() == id_map.removed()
    assert id_map.kept == id_map.new_size
    first_removed = id_map.removed()[0]
    assert id_map.new_id(first_removed) is None
    assert id_map.new_id(0) == 0  # a byte token
    with pytest.raises(UnknownIdError):
        id_map.new_id(id_map.old_size)
    with pytest.raises(UnknownIdError, match="removed"):
        id_map.map_ids([0, first_removed])
    assert id_map.map_ids([]) == []
    with pytest.raises(ValueError):
        id_map.old_to_new[0] = 5  # read-only
    (tmp_path / "bad.json").write_text('{"format": "something else"}')
    with pytest.raises(TokenizerFormatError):
        IdMap.load(tmp_path / "bad.json")
    (tmp_path / "bad2.json").write_text("not json")
    with pytest.raises(TokenizerFormatError):
        IdMap.load(tmp_path / "bad2.json")


# ----------------------------------------------------------------- inputs


def test_files_are_read_in_blocks_with_the_same_counts(trained, corpus_texts, tmp_path,
                                                      monkeypatch):
    text = "\n".join(corpus_texts[:30]) + "\n"
    plain = tmp_path / "corpus.txt"
    plain.write_text(text, encoding="utf-8")
    with gzip.open(tmp_path / "corpus2.txt.gz", "wt", encoding="utf-8") as f:
        f.write(text)
    _, by_text = prune(trained, [text], min_count=2)
    # tiny blocks and documents: cuts fall after line breaks, the counts do not change
    monkeypatch.setattr(prune_module, "_READ_BLOCK", 1 << 12)
    monkeypatch.setattr(prune_module, "_DOC_CHARS", 1 << 10)
    monkeypatch.setattr(prune_module, "_BATCH_CHARS", 1 << 14)
    _, by_file = prune(trained, files=[plain], min_count=2)
    assert np.array_equal(by_file.old_to_new, by_text.old_to_new)
    _, by_gz = prune(trained, files=str(tmp_path / "*.gz"), min_count=2)
    assert np.array_equal(by_gz.old_to_new, by_text.old_to_new)
    _, both = prune(trained, texts=[text], files=[plain], min_count=4)
    assert np.array_equal(both.old_to_new, by_text.old_to_new)


def test_bad_input_raises_typed_errors(trained, tmp_path):
    before = trained.to_str()
    texts = ["the quick brown fox"]
    with pytest.raises(PruneError, match="'zzqqxx' is not in the vocabulary"):
        prune(trained, texts, keep=["zzqqxx"])
    with pytest.raises(PruneError):
        prune(trained, texts, keep=[10**6])
    with pytest.raises(PruneError, match=r"pass vocab_size >= 258"):
        prune(trained, texts, vocab_size=5)
    with pytest.raises(ConfigError, match="wrap it"):
        prune(trained, "one string")
    with pytest.raises(CorpusError, match="got bytes"):
        prune(trained, [b"bytes"])
    with pytest.raises(CorpusError, match="got int"):
        prune(trained, ["fine", 3])
    for empty in ([], [""], ["", ""]):
        with pytest.raises(EmptyCorpusError):
            prune(trained, empty)
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(EmptyCorpusError):
        prune(trained, files=[tmp_path / "empty.txt"])
    with pytest.raises(CorpusError, match="no such file"):
        prune(trained, files=[tmp_path / "missing.txt"])
    with pytest.raises(ConfigError):
        prune(trained)
    for bad in ({"min_count": -1}, {"vocab_size": 0}, {"errors": "ignore"}, {"keep": [1.5]}):
        with pytest.raises(ConfigError):
            prune(trained, texts, **bad)
    (tmp_path / "latin1.txt").write_bytes("caf\xe9 au lait\n".encode("latin-1") * 3)
    with pytest.raises(CorpusEncodingError, match="byte offset 3"):
        prune(trained, files=[tmp_path / "latin1.txt"])
    new, _ = prune(trained, files=[tmp_path / "latin1.txt"], errors="replace")
    assert new.vocab_size < trained.vocab_size
    # every one of them is a TokenizerError (a ValueError), and nothing changed
    assert issubclass(PruneError, TokenizerError) and issubclass(PruneError, ValueError)
    assert trained.to_str() == before


# -------------------------------------------------------------------- CLI


def test_cli_prune_round_trip(trained, corpus_texts, tmp_path, capsys):
    src = trained.save(tmp_path / "tok.json")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(corpus_texts[:30]) + "\n", encoding="utf-8")
    out = tmp_path / "out" / "pruned.json"
    code = main(["prune", str(src), "--text", str(corpus), "--min-count", "40", "-o", str(out),
                 "--id-map", str(tmp_path / "map.json")])
    printed = capsys.readouterr().out
    assert code == 0
    new, id_map = prune(trained, files=[corpus], min_count=40)
    assert f"{trained.vocab_size:,} tokens -> {new.vocab_size:,}" in printed
    assert "added back because kept tokens are built from them" in printed
    saved = ts.load(out)
    assert saved.get_vocab() == new.get_vocab()
    assert np.array_equal(IdMap.load(tmp_path / "map.json").old_to_new, id_map.old_to_new)
    held = _fragments([make_text(20_000)])
    _assert_maps(trained, saved, id_map, held, at_least=10)

    # errors: one line, exit status 2
    assert main(["prune", str(src), "--text", str(corpus), "--vocab-size", "10",
                 "-o", str(out)]) == 2
    assert "vocab_size >= 258" in capsys.readouterr().err
    assert main(["prune", str(src), "--text", str(corpus), "--keep", "zzqqxx",
                 "-o", str(out)]) == 2
    assert "not in the vocabulary" in capsys.readouterr().err
    assert main(["prune", str(src), "--text", str(tmp_path / "nope.txt"), "-o", str(out)]) == 2
    assert "no such file" in capsys.readouterr().err


def test_cli_prune_into_a_folder_keeps_the_format(en_train, tmp_path, capsys):
    spm = pytest.importorskip("sentencepiece")
    model = asset("sentencepiece-unigram", "test_model.model")
    corpus = tmp_path / "en.txt"
    corpus.write_text(en_train, encoding="utf-8")
    folder = tmp_path / "small"
    folder.mkdir()
    assert main(["prune", str(model), "--text", str(corpus), "--keep-ids", "-o",
                 str(folder)]) == 0
    assert "ids kept in place" in capsys.readouterr().out
    sp = spm.SentencePieceProcessor(model_file=str(folder / "tokenizer.model"))
    assert sp.vocab_size() == ts.load(model).vocab_size
    assert any(sp.IsUnused(i) for i in range(sp.vocab_size()))


def test_cli_refuses_a_rank_file_named_like_a_known_encoding(tmp_path, capsys):
    path = asset("cl100k_base", "cl100k_base.tiktoken")
    corpus = tmp_path / "en.txt"
    corpus.write_text("hello world\n" * 10)
    assert main(["prune", str(path), "--text", str(corpus), "-o",
                 str(tmp_path / "cl100k_base.tiktoken")]) == 2
    assert "choose another name" in capsys.readouterr().err
    assert main(["prune", str(path), "--text", str(corpus), "-o", str(tmp_path) + "/"]) == 0
    printed = capsys.readouterr().out
    assert "tokensmith.formats.tiktoken.load(" in printed
    assert (tmp_path / "cl100k_base-pruned.tiktoken").is_file()


def test_random_texts_keep_the_guarantee(trained, corpus_texts):
    """Many small prunes with random settings: the guarantee holds every time."""
    rng = random.Random(7)
    held = _fragments([make_text(30_000 + k) for k in range(10)], words=3)
    for _ in range(6):
        texts = rng.sample(corpus_texts, 5)
        kwargs = rng.choice([{"min_count": rng.randrange(1, 6)},
                             {"vocab_size": rng.randrange(300, 600)}])
        new, id_map = prune(trained, texts, keep_ids=rng.random() < 0.5, **kwargs)
        _assert_maps(trained, new, id_map, held + _fragments(texts, 3), at_least=5)


# ------------------------------------------------ the closure, by hand


def test_the_closure_keeps_the_merges_kept_tokens_are_made_by():
    """A rank file where "abcd" is made from "ab" + "cd": text that produces only
    "abcd" and "ab" never shows "cd", which must stay all the same."""
    from tokensmith.formats import tiktoken as tt

    pairs = [bytes([b]) for b in range(256)] + [b"cd", b"ab", b"abcd"]
    data = b"".join(base64.b64encode(t) + b" %d\n" % r for r, t in enumerate(pairs))
    tok = tt.loads(data, pattern=r"\S+|\s+", special_tokens={"<|end|>": 259})
    cd, ab, abcd = 256, 257, 258
    assert tok.encode_ordinary("abcdab") == [abcd, ab]
    assert tok.encode_ordinary("cd") == [cd]
    new, id_map = prune(tok, ["abcdab abcdab"])
    assert id_map.new_id(cd) is not None, "the closure dropped a part of a kept token"
    assert new.encode_ordinary("abcdab") == id_map.map_ids([abcd, ab])
    assert new.special_tokens == {"<|end|>": id_map.new_id(259)}
    # "cd" is kept for "abcd" even where the vocabulary budget is tight
    small, m = prune(tok, ["abcdab abcdab"], vocab_size=256 + 1 + 3)
    assert small.vocab_size == 260 and m.removed() == []
    # one place left: "ab" and "abcd" are used as often, "ab" has the lower id and fits;
    # "abcd" would need "cd" too
    one, m = prune(tok, ["abcdab abcdab"], vocab_size=258)
    assert one.vocab_size == 258 and m.removed() == [cd, abcd]
    with pytest.raises(PruneError, match="vocab_size >= 257"):
        prune(tok, ["abcdab"], vocab_size=256)


def test_numpy_is_needed_and_named(trained, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "numpy", None)
    with pytest.raises(ConfigError, match="pip install numpy"):
        prune(trained, ["some text"])


# ------------------------------------------- other tokenizer.json families


@pytest.mark.parametrize(
    "parts",
    [("t5", "tokenizer.json"), ("llama2", "tokenizer.json"), ("gpt2", "tokenizer.json")],
    ids=["unigram-t5", "bpe-byte-fallback-llama2", "byte-bpe-gpt2"],
)
def test_other_tokenizer_json_families(parts, en_train, en_held, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    tok = ts.load(asset(*parts))
    for keep_ids in (False, True):
        new, id_map = prune(tok, [en_train[:150_000]], keep_ids=keep_ids)
        assert len(id_map.removed()) > tok.vocab_size // 2
        _assert_maps(tok, new, id_map, en_held, at_least=200)
        for t in _kept_only(tok, id_map, en_held)[:100]:
            assert new.encode(t) == id_map.map_ids(tok.encode(t)), t  # post-processor too
        hf = tokenizers.Tokenizer.from_file(str(new.save(tmp_path / f"{keep_ids}.json")))
        for t in en_held[:200] + TRICKY:
            assert hf.encode(t).ids == new.encode(t, disallowed_special=()), t
