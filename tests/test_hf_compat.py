"""Differential tests against the Hugging Face `tokenizers` library.

A tokenizer saved by tokensmith must load in `tokenizers` and give the same
ids, tokens, offsets and decodes; tokenizer.json files written by
`tokenizers` (for any pipeline component tokensmith implements) must load in
tokensmith and give the same results.
"""

from __future__ import annotations

import json

import pytest
import tokensmith as ts

from .adversarial import strings
from .conftest import asset, corpus_file, make_text

tokenizers = pytest.importorskip("tokenizers", reason="the tokenizers package is a test dependency")


def hf_from(tok: ts.Tokenizer):  # type: ignore[no-untyped-def]
    return tokenizers.Tokenizer.from_str(tok.to_str())


def assert_same(  # type: ignore[no-untyped-def]
    ours: ts.Tokenizer, hf, texts: list[str], offsets: bool = True
) -> None:
    for text in texts:
        want = hf.encode(text)
        got = ours.encode_full(text, allowed_special="all")
        assert got.ids == want.ids, f"ids differ on {text[:80]!r}"
        if offsets:
            assert got.tokens == want.tokens, f"tokens differ on {text[:80]!r}"
            want_offsets = [tuple(o) for o in want.offsets]
            assert got.offsets == want_offsets, f"offsets differ on {text[:80]!r}"
            assert got.type_ids == want.type_ids
            assert got.special_tokens_mask == want.special_tokens_mask
        assert ours.decode(got.ids) == hf.decode(want.ids, skip_special_tokens=False)
        assert ours.decode(got.ids, skip_special_tokens=True) == hf.decode(want.ids)


def real_text() -> list[str]:
    out = []
    for name, n in (("en.txt", 200_000), ("code.txt", 200_000), ("zh.txt", 100_000)):
        try:
            data = corpus_file(name).read_text(encoding="utf-8")
        except pytest.skip.Exception:
            continue
        out.append(data[:n])
        out.extend(data[i : i + 300] for i in range(n, n + 30_000, 1_000))
    return out


def test_trained_tokenizer_loads_in_tokenizers(trained: ts.Tokenizer, corpus_texts) -> None:
    hf = hf_from(trained)
    assert hf.get_vocab_size() == trained.vocab_size
    assert_same(trained, hf, corpus_texts + strings())


def test_trained_on_real_text_loads_in_tokenizers(tmp_path) -> None:
    en = corpus_file("en.txt")
    tok = ts.train(texts=[en.read_text(encoding="utf-8")[:2_000_000]], vocab_size=3000)
    path = tok.save(tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(path))
    assert_same(tok, hf, real_text())


def test_char_level_bpe_loads_in_tokenizers(corpus_texts) -> None:
    tok = ts.train(texts=corpus_texts, vocab_size=300, byte_level=False, end_of_word_suffix="</w>")
    hf = hf_from(tok)
    texts = corpus_texts[:20] + ["unseen ✗ characters here", "lowest newest"]
    for t in texts:
        assert tok.encode(t) == hf.encode(t).ids
        ids = hf.encode(t).ids
        assert tok.decode(ids) == hf.decode(ids, skip_special_tokens=False)
        assert tok.decode(ids, skip_special_tokens=True) == hf.decode(ids)
    assert tok.decode(tok.encode("lower newest")) == "lower newest"
    assert any(k.endswith("</w>") for k in tok.get_vocab())


def _with_components(  # type: ignore[no-untyped-def]
    base: ts.Tokenizer, **components
) -> tuple[ts.Tokenizer, object]:
    data = json.loads(base.to_str())
    data.update(components)
    text = json.dumps(data)
    return ts.Tokenizer.from_str(text), tokenizers.Tokenizer.from_str(text)


def _hf_json(obj) -> dict:  # type: ignore[no-untyped-def]
    """The JSON form `tokenizers` writes for a component."""
    return json.loads(obj.__getstate__()) if hasattr(obj, "__getstate__") else obj


@pytest.mark.parametrize(
    "behavior", ["removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous"]
)
@pytest.mark.parametrize("invert", [False, True])
def test_split_behaviours(trained: ts.Tokenizer, behavior: str, invert: bool) -> None:
    pre = tokenizers.pre_tokenizers
    for pattern in (tokenizers.Regex(r"\s+|[,.!?]"), "e", tokenizers.Regex(r"\p{N}{1,3}")):
        seq = pre.Sequence([pre.Split(pattern, behavior, invert=invert),
                            pre.ByteLevel(add_prefix_space=False, use_regex=False)])
        ours, hf = _with_components(trained, pre_tokenizer=_hf_json(seq))
        assert_same(ours, hf, strings()[:16] + ["eeee, e.e!  eel 1234567"])


@pytest.mark.parametrize("add_prefix_space", [False, True])
@pytest.mark.parametrize("trim_offsets", [False, True])
def test_byte_level_pretokenizer_and_processor(  # type: ignore[no-untyped-def]
    trained, add_prefix_space, trim_offsets
) -> None:
    pre = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space, use_regex=True)
    post = tokenizers.processors.ByteLevel(
        trim_offsets=trim_offsets, add_prefix_space=add_prefix_space
    )
    ours, hf = _with_components(trained, pre_tokenizer=_hf_json(pre), post_processor=_hf_json(post))
    assert_same(ours, hf, strings()[:20])


def test_normalizers(trained: ts.Tokenizer) -> None:
    n = tokenizers.normalizers
    for norm in (
        n.NFC(), n.NFD(), n.NFKC(), n.NFKD(), n.Lowercase(),
        n.Sequence([n.NFKD(), n.StripAccents(), n.Lowercase()]),
        n.Sequence([n.Strip(), n.Replace(" ", "▁"), n.Prepend("▁")]),
        n.Replace(tokenizers.Regex(r"\d+"), "<num>"),
    ):
        ours, hf = _with_components(trained, normalizer=_hf_json(norm))
        assert_same(ours, hf, strings()[:16] + ["ﬁ ｶﾀｶﾅ Å Ω ﬀ ǅ"])


def test_template_processing(trained: ts.Tokenizer) -> None:
    post = tokenizers.processors.TemplateProcessing(
        single="<|endoftext|> $A <|pad|>",
        pair="<|endoftext|> $A <|pad|> $B:1 <|pad|>:1",
        special_tokens=[("<|endoftext|>", 598), ("<|pad|>", 599)],
    )
    ours, hf = _with_components(trained, post_processor=_hf_json(post))
    assert_same(ours, hf, ["hello world", "", "分词"])
    for a, b in (("hello", "world"), ("x y", "")):
        got = ours.encode_full(a, b)
        want = hf.encode(a, b)
        assert (got.ids, got.type_ids, got.special_tokens_mask) == (
            want.ids, want.type_ids, want.special_tokens_mask)
        assert got.offsets == [tuple(o) for o in want.offsets]
    plain = hf.encode("hi", add_special_tokens=False).ids
    assert ours.encode("hi", add_special_tokens=False) == plain


def test_added_tokens_options(trained: ts.Tokenizer) -> None:
    data = json.loads(trained.to_str())
    extra = [
        {"id": 600, "content": "<mask>", "single_word": False, "lstrip": True, "rstrip": True,
         "normalized": False, "special": True},
        {"id": 601, "content": "fox", "single_word": True, "lstrip": False, "rstrip": False,
         "normalized": True, "special": False},
        {"id": 602, "content": "ÉCOLE", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": True, "special": False},
    ]
    data["added_tokens"] += extra
    data["normalizer"] = {"type": "Lowercase"}
    text = json.dumps(data)
    ours, hf = ts.Tokenizer.from_str(text), tokenizers.Tokenizer.from_str(text)
    assert_same(ours, hf, ["a  <mask>  b", "fox foxes the fox.", "école ÉCOLE", "x<mask>y"])


def test_decoders(trained: ts.Tokenizer) -> None:
    d = tokenizers.decoders
    for dec in (d.ByteLevel(), d.Sequence([d.ByteLevel(), d.Strip(" ", 1, 0)]), d.Fuse()):
        ours, hf = _with_components(trained, decoder=_hf_json(dec))
        for text in ["hello world", " two  spaces", "分词"]:
            ids = hf.encode(text).ids
            assert ours.decode(ids) == hf.decode(ids)


@pytest.mark.parametrize(
    "name", ["gpt2", "llama3", "qwen2.5", "qwen3", "deepseek-v3", "mistral", "llama2"]
)
def test_reference_files(name: str) -> None:
    path = asset(name, "tokenizer.json")
    ours = ts.load(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    texts = real_text() or [make_text(i, 2000) for i in range(5)]
    assert_same(ours, hf, texts + strings())
