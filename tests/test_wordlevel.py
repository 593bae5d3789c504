"""WordLevel: the model and its trainer against ``tokenizers``' WordLevel and
WordLevelTrainer, id for id and vocabulary for vocabulary."""

from __future__ import annotations

import json

import pytest
import tokensmith as ts
from tokensmith.errors import ConfigError, TokenizerFormatError, VocabSizeError

from .conftest import corpus_file, make_text

tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is the WordLevel reference")
from tokenizers import models, normalizers, pre_tokenizers, trainers  # noqa: E402

SPLITS = {
    "whitespace": pre_tokenizers.Whitespace(),
    "spaces": pre_tokenizers.WhitespaceSplit(),
    "characters": pre_tokenizers.Split(tokenizers.Regex(r"[\s\S]"), "isolated"),
}


def _texts() -> list[str]:
    texts = [make_text(i, 300) for i in range(40)]
    texts += ["Ünïcode wörds, ÉTÉ été Été; 中文 中文 日本語", "a a a b b c", "[UNK] x"]
    return texts


def _real_text() -> list[str]:
    lines: list[str] = []
    for name in ("en.txt", "zh.txt", "code.txt"):
        text = corpus_file(name).read_text(encoding="utf-8")[:200_000]
        lines += text.splitlines()
    return [line for line in lines if line.strip()]


def _reference(texts: list[str], split: str, lowercase: bool = False,
               **options: object) -> tokenizers.Tokenizer:
    ref = tokenizers.Tokenizer(models.WordLevel(unk_token="[UNK]"))
    ref.pre_tokenizer = SPLITS[split]
    if lowercase:
        ref.normalizer = normalizers.Lowercase()
    trainer = trainers.WordLevelTrainer(show_progress=False, **options)  # type: ignore[arg-type]
    ref.train_from_iterator(texts, trainer)
    return ref


@pytest.mark.parametrize("split", list(SPLITS))
@pytest.mark.parametrize("options", [
    {"vocab_size": 300, "special_tokens": ["[UNK]", "[PAD]"]},
    {"vocab_size": 100_000, "min_frequency": 3, "special_tokens": ["[PAD]", "[UNK]"]},
    {"vocab_size": 50, "special_tokens": ["[UNK]"]},
])
def test_training_matches_tokenizers(split: str, options: dict) -> None:  # type: ignore[type-arg]
    texts = _texts()
    ref = _reference(texts, split, **options)
    tok = ts.train(texts=texts, model="wordlevel", split=split, **options)  # type: ignore[arg-type]
    assert tok.get_vocab() == ref.get_vocab()
    for text in texts[:10] + ["unseen wordz here", "", "  ", "ÉTÉ"]:
        want = ref.encode(text).ids
        assert tok.encode(text) == want, text
        assert tok.decode(want) == ref.decode(want, skip_special_tokens=False), text
        assert tok.decode(want, skip_special_tokens=True) == ref.decode(want), text


def test_lowercase_and_real_text() -> None:
    lines = _real_text()
    half = len(lines) // 2
    ref = _reference(lines[:half], "whitespace", lowercase=True, vocab_size=20_000,
                     special_tokens=["[UNK]"])
    tok = ts.train(texts=lines[:half], model="wordlevel", lowercase=True, vocab_size=20_000)
    assert tok.get_vocab() == ref.get_vocab()
    held_out = lines[half:]
    assert tok.encode_batch(held_out) == [e.ids for e in ref.encode_batch(held_out)]
    unk = tok.token_to_id("[UNK]")
    assert any(unk in ids for ids in tok.encode_batch(held_out[:500]))


def test_a_tokenizers_file_loads_and_a_saved_file_loads_in_tokenizers(tmp_path) -> None:  # type: ignore[no-untyped-def]
    texts = _texts()
    ref = _reference(texts, "spaces", vocab_size=500, special_tokens=["[UNK]"])
    ref.save(str(tmp_path / "ref.json"))
    tok = ts.load(tmp_path / "ref.json")
    assert tok._core.model_type == "WordLevel"
    for text in texts[:10]:
        assert tok.encode(text) == ref.encode(text).ids
    tok.save(tmp_path / "mine.json")
    back = tokenizers.Tokenizer.from_file(str(tmp_path / "mine.json"))
    for text in texts[:10]:
        assert back.encode(text).ids == tok.encode(text)
    assert ts.load(tmp_path / "mine.json").get_vocab() == tok.get_vocab()


def test_a_word_that_is_a_special_token_takes_the_later_id() -> None:
    """tokenizers builds the vocabulary from specials + words, a repeat taking the later id."""
    texts = ["[PAD] [PAD] [PAD] x y"]
    ref = _reference(texts, "spaces", vocab_size=10, special_tokens=["[UNK]", "[PAD]"])
    tok = ts.train(texts=texts, model="wordlevel", split="spaces", vocab_size=10,
                   special_tokens=["[UNK]", "[PAD]"])
    assert tok.get_vocab() == ref.get_vocab()
    assert tok.encode("x [PAD] y", allowed_special="all") == ref.encode("x [PAD] y").ids


def test_bad_input_is_refused() -> None:
    spec = {"version": "1.0", "model": {"type": "WordLevel", "vocab": {"a": 0},
                                        "unk_token": "[UNK]"}}
    with pytest.raises(TokenizerFormatError, match="unk_token"):
        ts.Tokenizer.from_str(json.dumps(spec))
    spec["model"]["vocab"] = {"a": 0, "[UNK]": 0}
    with pytest.raises(TokenizerFormatError, match="used twice"):
        ts.Tokenizer.from_str(json.dumps(spec))
    spec["model"]["vocab"] = {"a": -1, "[UNK]": 0}
    with pytest.raises(TokenizerFormatError, match="non-negative"):
        ts.Tokenizer.from_str(json.dumps(spec))
    with pytest.raises(ConfigError, match="split"):
        ts.train(texts=["a b"], model="wordlevel", split="words")  # type: ignore[arg-type]
    with pytest.raises(VocabSizeError):
        ts.train(texts=["a b"], model="wordlevel", vocab_size=1)
    with pytest.raises(ConfigError, match="special_tokens"):
        ts.train(texts=["a b"], model="wordlevel", special_tokens="[UNK]")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        ts.train(texts=["a b"], model="wordlevel", pattern="gpt2")  # type: ignore[call-overload]


def test_callback_reports_each_word_in_id_order() -> None:
    seen: list[tuple[str, int, int]] = []
    tok = ts.train(texts=["b a a c c c"], model="wordlevel", split="spaces",
                   callback=lambda kind, args: seen.append(args))  # type: ignore[arg-type]
    assert seen == [("c", 3, 1), ("a", 2, 2), ("b", 1, 3)]
    assert tok.encode("c a b d") == [1, 2, 3, 0]


def test_compare_puts_word_and_char_baselines_beside_subwords(trained) -> None:  # type: ignore[no-untyped-def]
    from tokensmith.compare import compare

    texts = {"mixed": _texts()}
    comp = compare({"bpe": trained}, texts, baselines=["word", "char"], diagnostics=False)
    assert comp.names == ["bpe", "word-level", "char-level"]
    assert comp.vocab_sizes["word-level"] <= trained.vocab_size
    word = comp.results["word-level"]["mixed"]
    char = comp.results["char-level"]["mixed"]
    bpe = comp.results["bpe"]["mixed"]
    assert word.coverage is not None and char.coverage is not None and bpe.coverage is not None
    # a dictionary of 600 words misses words of this text; one of characters misses none,
    # and byte-level BPE never has an unknown token
    assert word.coverage.unknown_rate > 0.01
    assert char.coverage.unknown_rate == 0.0 and bpe.coverage.unknown_rate == 0.0
    assert char.compression is not None and bpe.compression is not None
    assert char.compression.tokens > bpe.compression.tokens
    small = compare([trained], texts, baselines=["word"], baseline_vocab_size=5,
                    diagnostics=False)
    assert small.results["word-level"]["mixed"].coverage.unknown_rate > 0.5  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="baselines"):
        compare([trained], texts, baselines=["subword"])


def test_cli_compare_baselines(tmp_path, capsys, trained) -> None:  # type: ignore[no-untyped-def]
    from tokensmith import cli

    trained.save(tmp_path / "bpe.json")
    text = tmp_path / "t.txt"
    text.write_text("\n\n".join(_texts()), encoding="utf-8")
    code = cli.main(["compare", str(tmp_path / "bpe.json"), "--text", str(text),
                     "--baselines", "word,char", "--no-diagnostics", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    names = [t["name"] for t in out["tokenizers"]]
    assert names[1:] == ["word-level", "char-level"]
    assert out["tokenizers"][1]["model"] == "WordLevel"


def test_cli_trains_a_wordlevel_tokenizer(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from tokensmith import cli

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(_texts()), encoding="utf-8")
    out = tmp_path / "wl.json"
    code = cli.main(["train", str(corpus), "--model", "wordlevel", "--split", "spaces",
                     "--vocab-size", "200", "-o", str(out), "-q"])
    assert code == 0
    ref = _reference(_texts(), "spaces", vocab_size=200, special_tokens=["[UNK]"])
    assert ts.load(out).get_vocab() == ref.get_vocab()
    assert cli.main(["train", str(corpus), "--model", "bpe", "--split", "spaces",
                     "--vocab-size", "300", "-o", str(tmp_path / "b.json")]) != 0
    assert "--split applies to --model wordlevel" in capsys.readouterr().err
