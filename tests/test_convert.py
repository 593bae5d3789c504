"""Converting between tiktoken files, tokenizer.json and vocab.json + merges.txt."""

from __future__ import annotations

import pytest
import tokensmith as ts
from tokensmith.convert import (
    ConversionError,
    NotEquivalentError,
    check_equivalent,
    check_texts,
    convert,
)
from tokensmith.formats.gpt2 import load_vocab_merges

from .adversarial import strings
from .conftest import asset, corpus_file


def _sample(name: str, n: int = 60_000) -> list[str]:
    with corpus_file(name).open(encoding="utf-8") as f:
        text = f.read(n)
    return [text[i : i + 600] for i in range(0, len(text), 600)]


def _files(folder) -> list[str]:
    return sorted(p.name for p in folder.rglob("*"))


def test_cl100k_tiktoken_json_tiktoken_is_byte_identical(tmp_path) -> None:
    src = asset("cl100k_base", "cl100k_base.tiktoken")
    as_json = convert(src, tmp_path / "json" / "tokenizer.json")
    assert as_json == tmp_path / "json" / "tokenizer.json"
    back = convert(as_json, tmp_path / "cl100k_base.tiktoken")
    assert back.read_bytes() == src.read_bytes()
    # a rank file named after nothing known is checked with the source's pattern and specials
    other = convert(as_json, tmp_path / "mine.tiktoken")
    assert other.read_bytes() == src.read_bytes()
    texts = _sample("en.txt") + _sample("code.txt") + strings()
    check_equivalent(ts.load(src), ts.load(as_json), texts)
    assert not [p for p in _files(tmp_path) if p.startswith(".")]  # no staging left over


def test_gpt2_json_vocab_merges_and_back(tmp_path) -> None:
    src = asset("gpt2", "tokenizer.json")
    vocab = convert(src, tmp_path / "pair" / "vocab.json")
    assert _files(tmp_path / "pair") == ["merges.txt", "vocab.json"]
    again = convert(vocab, tmp_path / "again" / "tokenizer.json")
    prefixed = convert(again, tmp_path / "prefixed" / "gpt2-merges.txt")
    assert prefixed.name == "gpt2-vocab.json"
    assert _files(tmp_path / "prefixed") == ["gpt2-merges.txt", "gpt2-vocab.json"]
    original = ts.load(src)
    texts = _sample("en.txt") + _sample("zh.txt") + strings()
    for path in (vocab, again, prefixed):
        tok = ts.load(path)
        check_equivalent(original, tok, texts)
        assert tok.encode_batch(texts[:50]) == original.encode_batch(texts[:50])
    # and the official pair converts to what the official r50k_base rank file encodes
    r50k = ts.load(asset("gpt2", "r50k_base.tiktoken"))
    check_equivalent(r50k, ts.load(vocab), texts)
    pair = convert(asset("gpt2", "r50k_base.tiktoken"), tmp_path / "from-tiktoken" / "vocab.json")
    assert pair.read_bytes() == vocab.read_bytes()
    # its merges.txt lists every pair tiktoken's rule may merge (not GPT-2's 50,000), which
    # encodes the same: tiktoken's rule as a merge list
    check_equivalent(original, ts.load(pair), texts)


def test_cl100k_to_vocab_merges_is_refused_and_leaves_nothing(tmp_path) -> None:
    src = asset("cl100k_base", "cl100k_base.tiktoken")
    dst = tmp_path / "out" / "sub" / "vocab.json"
    with pytest.raises(ConversionError) as e:
        convert(src, dst)
    assert "vocab.json" in str(e.value)
    assert isinstance(e.value, ts.UnsupportedComponentError)
    assert not (tmp_path / "out").exists()  # the folders made for it are gone too
    # special tokens aside, GPT-2's split pattern (all such files get) changes the ids
    folder = tmp_path / "keep"
    folder.mkdir()
    (folder / "vocab.json").write_text("old")
    tok = ts.load(src)
    with pytest.raises(ConversionError) as e:
        convert(tok, folder / "vocab.json", check_text=["hello 1234567 world"])
    assert isinstance(e.value.__cause__, ConversionError)  # the special tokens differ
    assert (folder / "vocab.json").read_text() == "old"  # untouched
    assert _files(folder) == ["vocab.json"]
    tok.save_vocab_merges(tmp_path / "raw")
    specials = list(tok.special_tokens)
    loaded = load_vocab_merges(
        tmp_path / "raw" / "vocab.json", tmp_path / "raw" / "merges.txt", special_tokens=specials
    )
    with pytest.raises(NotEquivalentError) as e:
        check_equivalent(tok, loaded, ["the same", "year 1234567 here"])
    err = e.value
    assert err.index == 1 and err.text == "year 1234567 here"
    assert (err.position, err.offset) == (3, 8)  # " 1234567": "123" then "456" or "45"
    assert err.ids_a[:3] == err.ids_b[:3] and err.ids_a[3] != err.ids_b[3]
    assert "text 1" in str(err) and "character 8" in str(err)


def test_trained_tokenizer_to_tiktoken_is_refused(trained, tmp_path) -> None:
    with pytest.raises(ConversionError) as e:
        convert(trained, tmp_path / "x.tiktoken")
    assert "tokenizer.json" in str(e.value)
    assert _files(tmp_path) == []
    out = convert(trained, tmp_path / "t.json")
    assert ts.load(out).encode("hello world") == trained.encode("hello world")
    with pytest.raises(ConversionError):
        convert(trained, tmp_path / "x.model")
    with pytest.raises(ConversionError):
        convert(trained, tmp_path / "y.json", format="sentencepiece")


def test_converted_json_loads_in_tokenizers(tmp_path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    for folder, name in (("cl100k_base", "cl100k_base.tiktoken"), ("o200k_base",
                                                                   "o200k_base.tiktoken")):
        src = asset(folder, name)
        out = convert(src, tmp_path / folder / "tokenizer.json")
        hf = tokenizers.Tokenizer.from_file(str(out))
        tok = ts.load(src)
        texts = _sample("en.txt", 30_000) + _sample("code.txt", 30_000) + _sample("zh.txt", 20_000)
        texts += ["1234567 12345", "\t-ilrsD \t%s", "x\n    indented\n\n  y", "it's 'S 'LL"]
        got = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
        assert got == tok.encode_batch(texts, disallowed_special=())
        assert hf.decode(got[0]) == tok.decode(got[0])


def test_names_and_checks(tmp_path, monkeypatch) -> None:
    """A known name works as the source; a failing check_text names the text."""
    src = asset("gpt2", "r50k_base.tiktoken")
    monkeypatch.setenv("TOKENSMITH_CACHE", str(src.parent))
    monkeypatch.setenv("TOKENSMITH_OFFLINE", "1")
    out = convert("r50k_base", tmp_path / "r50k" / "tokenizer.json", check_text="hello world")
    assert ts.load(out).encode("hello world") == [31373, 995]
    texts = check_texts(ts.load(out))
    assert any("<|endoftext|>" in t for t in texts) and len(texts) > 30
    # writing GPT-2's ranks under cl100k_base's name: the name brings cl100k's pattern back
    with pytest.raises(ConversionError):
        convert(out, tmp_path / "cl100k_base.tiktoken")
    assert not (tmp_path / "cl100k_base.tiktoken").exists()


def test_sentencepiece_model_to_json_and_back(tmp_path) -> None:
    import sentencepiece

    src = asset("llama2", "tokenizer.model")
    as_json = convert(src, tmp_path / "llama" / "tokenizer.json")
    back = convert(as_json, tmp_path / "again.model")
    sp = sentencepiece.SentencePieceProcessor(model_file=str(back))
    tok = ts.load(src)
    for text in strings()[:40]:
        assert sp.encode(text) == tok.encode_ordinary(text)


def test_trained_unigram_converts_to_model(tmp_path) -> None:
    import sentencepiece

    from .conftest import make_text

    tok = ts.train(texts=[make_text(i, 100) for i in range(30)], model="unigram",
                   vocab_size=300)
    path = convert(tok, tmp_path / "u.model")
    sp = sentencepiece.SentencePieceProcessor(model_file=str(path))
    text = make_text(999, 100)
    assert sp.encode(text) == tok.encode_ordinary(text)


def test_bert_json_to_vocab_txt(tmp_path) -> None:
    from tokensmith.formats import bert

    for name in ("bert-base-uncased", "bert-base-chinese"):
        src = asset(name, "tokenizer.json")
        out = convert(src, tmp_path / name / "vocab.txt")
        again = bert.load_vocab_txt(out, lowercase=name.endswith("uncased"))
        text = "Héllo, Wörld! 分词器 tokenization"
        assert again.encode(text) == ts.load(src).encode(text)


def test_formats_that_cannot_hold_the_tokenizer_are_refused(tmp_path) -> None:
    gpt2 = asset("gpt2", "tokenizer.json")
    with pytest.raises(ConversionError, match="SentencePiece"):
        convert(gpt2, tmp_path / "g.model")
    with pytest.raises(ConversionError, match="WordPiece"):
        convert(gpt2, tmp_path / "vocab.txt")
    assert list(tmp_path.iterdir()) == []


def test_convert_command(tmp_path, capsys) -> None:
    from tokensmith.cli import main

    src = asset("llama2", "tokenizer.model")
    assert main(["convert", str(src), str(tmp_path / "x.json")]) == 0
    assert "checked" in capsys.readouterr().out
    assert main(["convert", str(asset("gpt2", "tokenizer.json")), str(tmp_path / "y.model")]) == 2
    assert "SentencePiece" in capsys.readouterr().err
    assert not (tmp_path / "y.model").exists()
