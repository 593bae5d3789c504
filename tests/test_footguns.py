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
