"""Mistakes that used to pass silently: a misspelt pattern name, a string where a list of
special tokens belongs, a BPE that stops short of the vocabulary asked for."""

from __future__ import annotations

import pytest
import tokensmith as ts
from tokensmith.errors import ConfigError, InvalidPatternError, VocabShortfallWarning

from .conftest import make_text

TEXTS = [make_text(i) for i in range(10)]


@pytest.mark.parametrize("pattern, suggestion", [("gpt5", "gpt4"), ("o200", "o200k"),
                                                 ("cl100", "cl100k")])
def test_a_misspelt_pattern_name_is_refused_with_a_suggestion(pattern: str,
                                                             suggestion: str) -> None:
    with pytest.raises(InvalidPatternError, match=f"did you mean '{suggestion}'"):
        ts.train(texts=TEXTS, vocab_size=300, pattern=pattern)


def test_pattern_names_and_regexes_still_work() -> None:
    for pattern in ("GPT4", "o200k", r"\S+|\s+", "(?:abc)|."):
        tok = ts.train(texts=TEXTS, vocab_size=300, pattern=pattern)
        assert tok.decode(tok.encode("hello world")) == "hello world"


@pytest.mark.parametrize("model", ["bpe", "wordpiece", "unigram", "sentencepiece-bpe"])
def test_a_string_of_special_tokens_is_refused(model: str) -> None:
    with pytest.raises(ConfigError, match=r"did you mean special_tokens=\['<\|x\|>'\]"):
        ts.train(texts=TEXTS, model=model, vocab_size=300, special_tokens="<|x|>")


def test_user_defined_symbols_as_a_string_is_refused() -> None:
    with pytest.raises(ConfigError, match="user_defined_symbols must be a list"):
        ts.train(texts=TEXTS, model="unigram", vocab_size=300, user_defined_symbols="<b>")


@pytest.mark.parametrize("model", ["bpe", "wordpiece"])
def test_stopping_short_of_vocab_size_warns(model: str) -> None:
    with pytest.warns(VocabShortfallWarning, match="vocab_size=5,000 asked for") as caught:
        tok = ts.train(texts=["hello world"] * 10, model=model, vocab_size=5000)
    warning = caught[0].message
    assert isinstance(warning, VocabShortfallWarning)
    assert (warning.asked, warning.got) == (5000, tok.vocab_size)


def test_reaching_vocab_size_does_not_warn(recwarn: pytest.WarningsRecorder) -> None:
    tok = ts.train(texts=TEXTS, vocab_size=300)
    assert tok.vocab_size == 300
    assert not [w for w in recwarn if issubclass(w.category, VocabShortfallWarning)]


def test_inspect_diagnose_and_the_file_count_merges_alike(
        capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from tokensmith import cli

    from .conftest import asset

    path = asset("cl100k_base", "cl100k_base.tiktoken")
    tok = ts.load(path)
    d = ts.diagnose(tok)
    assert cli.main(["inspect", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    saved = json.loads(tok.to_str(pretty=False))["model"]["merges"]
    assert d.merges == info["merges"] == len(tok.merges) == len(saved) == 233_378
    assert d.merged_tokens == info["merged_tokens"] == 100_000
    assert "233,378 merges making 100,000 tokens" in d.summary()


@pytest.mark.parametrize("model, typo, meant", [
    ("bpe", "min_freq", "min_frequency"), ("wordpiece", "special_token", "special_tokens"),
    ("unigram", "seed_sise", "seed_size"), ("sentencepiece-bpe", "max_piece_len",
                                            "max_piece_length")])
def test_a_misspelt_option_is_refused_with_the_name_meant(model: str, typo: str,
                                                          meant: str) -> None:
    from tokensmith.errors import UnknownOptionError

    with pytest.raises(UnknownOptionError, match=f"did you mean {meant}=") as info:
        ts.train(texts=TEXTS, model=model, vocab_size=300, **{typo: 1})
    assert isinstance(info.value, TypeError)  # as Python's own unexpected keyword


def test_the_typed_signatures_list_each_trainers_options() -> None:
    import inspect
    import sys
    import typing

    if sys.version_info < (3, 11):
        pytest.skip("typing.get_overloads needs Python 3.11")
    from tokensmith import trainers

    def keywords(fn: object) -> dict[str, str]:
        params = inspect.signature(fn).parameters.items()  # type: ignore[arg-type]
        return {n: str(p.annotation) for n, p in params
                if p.kind is inspect.Parameter.KEYWORD_ONLY and n not in ("texts", "model")}

    overloads = typing.get_overloads(trainers.train)
    assert len(overloads) == 5
    for fn, model in ((ts.train_bpe, "bpe"), (ts.train_wordpiece, "wordpiece"),
                      (ts.train_unigram, "unigram"),
                      (ts.train_sentencepiece_bpe, "sentencepiece-bpe"),
                      (ts.train_wordlevel, "wordlevel")):
        typed = next(o for o in overloads
                     if model in str(inspect.signature(o).parameters["model"].annotation))
        assert keywords(typed) == keywords(fn), model


@pytest.mark.parametrize("model", ["bpe", "wordpiece", "unigram"])
def test_text_field_names_the_jsonl_field(tmp_path, model: str) -> None:  # type: ignore[no-untyped-def]
    import json

    from tokensmith import cli

    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"id": i, "body": t}) + "\n"
                            for i, t in enumerate(TEXTS)), encoding="utf-8")
    tok = ts.train([path], model=model, vocab_size=300, text_field="body")
    word = next(w for w in TEXTS[0].split() if w.isalpha()).lower()
    ids = tok.encode(word, add_special_tokens=False)
    assert tok.decode(ids).strip().lower() == word  # learned from the "body" fields
    with pytest.raises(ts.CorpusError, match="no string field 'text'"):
        ts.train([path], model=model, vocab_size=300)
    out = tmp_path / "tok.json"
    assert cli.main(["train", str(path), "--model", model, "--vocab-size", "300",
                     "--text-field", "body", "--out", str(out), "-q"]) == 0
