"""``tokenizer.json`` files written here load in ``tokenizers`` and ``transformers``
and give the same ids there: SentencePiece pipelines are written with the components
``tokenizers`` has, plus tokensmith's exact settings, which tokensmith reads back."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import tokensmith as ts
from tokensmith.errors import PortabilityWarning

from .conftest import asset, corpus_file

tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a reference library")
spm = pytest.importorskip("sentencepiece", reason="sentencepiece is a reference library")
transformers = pytest.importorskip(
    "transformers", reason="transformers is where users load a tokenizer.json")


def _lines() -> list[str]:
    out: list[str] = []
    for name, size in (("en.txt", 60_000), ("code.txt", 40_000), ("zh.txt", 15_000),
                       ("ja.txt", 15_000)):
        text = corpus_file(name).read_text(encoding="utf-8")[:size]
        out += [line for line in text.split("\n") if line]
    return out + ["", " ", "  runs   of  spaces  ", "\ttab\tand\nnewline", "a\u2581b \u2581",
                  "x" * 300, "caf\u00e9 \u00bd \uff21\uff22 \u2460"]


def _save(tok: ts.Tokenizer, path: Path) -> list[str]:
    """Save, and return the portability warnings raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tok.save(path)
    return [str(w.message) for w in caught if issubclass(w.category, PortabilityWarning)]


MODELS = [
    ("llama2", "tokenizer.model", False),  # SentencePiece BPE, identity, byte fallback
    ("mistral", "tokenizer.model", False),
    ("sentencepiece-unigram", "test_model.model", True),  # Unigram, nmt_nfkc map
    ("sentencepiece-unigram", "test_ja_model.model", True),
]


@pytest.mark.parametrize(("folder", "name", "charsmap"), MODELS)
def test_model_files_resaved_as_json_load_in_tokenizers(tmp_path: Path, folder: str, name: str,
                                                        charsmap: bool) -> None:
    model = asset(folder, name)
    ref = spm.SentencePieceProcessor(model_file=str(model))
    tok = ts.load(model)
    path = tmp_path / "tokenizer.json"
    caught = _save(tok, path)
    # what tokenizers may do differently is said: the character map, the precision
    # of Unigram scores
    assert [("grapheme cluster" in m, "single precision" in m) for m in caught] == (
        [(True, True)] if charsmap else [])
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert "SentencePiece" not in json.dumps([doc["normalizer"]["type"], doc["decoder"]["type"]])
    hf = tokenizers.Tokenizer.from_file(str(path))
    back = ts.load(path)
    assert back.to_str() == tok.to_str()  # tokensmith reads its exact settings back
    for line in _lines():
        want = ref.encode(line)
        assert back.encode(line, disallowed_special=()) == want, line[:60]
        assert hf.encode(line, add_special_tokens=False).ids == want, line[:60]
        # (tokenizers drops <unk> when decoding, sentencepiece shows " ⁇ ")
        if ref.unk_id() not in want:
            assert hf.decode(want) == ref.decode(want), line[:60]


def _train(model: str, **options: object) -> ts.Tokenizer:
    text = corpus_file("en.txt").read_text(encoding="utf-8")[:600_000]
    zh = corpus_file("zh.txt").read_text(encoding="utf-8")[:100_000]
    return ts.train(texts=[text, zh], model=model, vocab_size=2000, **options)  # type: ignore[call-overload]


TRAINED = [("bpe", {}), ("bpe", {"byte_level": False}), ("wordpiece", {}), ("unigram", {}),
           ("sentencepiece-bpe", {}), ("wordlevel", {})]


@pytest.mark.parametrize(("model", "options"), TRAINED,
                         ids=["bpe", "char-bpe", "wordpiece", "unigram", "sp-bpe", "wordlevel"])
def test_every_trained_model_loads_in_transformers(tmp_path: Path, model: str,
                                                   options: dict[str, object]) -> None:
    tok = _train(model, **options)
    path = tmp_path / "tokenizer.json"
    caught = _save(tok, path)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(path))
    hf = tokenizers.Tokenizer.from_file(str(path))
    doubles = tok
    if model == "unigram":
        # tokensmith's Unigram is a SentencePiece model (single-precision Viterbi);
        # saving says that tokenizers sums in double, and every difference must be
        # that one: tokensmith reading the file as a plain Unigram agrees everywhere
        assert len(caught) == 1 and "double precision" in caught[0]
        doc = json.loads(path.read_text(encoding="utf-8"))
        del doc["model"]["piece_types"]
        doubles = ts.Tokenizer.from_str(json.dumps(doc))
    if model in ("unigram", "sentencepiece-bpe"):
        # trained with the nmt_nfkc rules (the default): saving says that tokenizers
        # applies the charsmap per grapheme cluster; on this text it agrees all the same
        assert len(caught) == 1 and "grapheme cluster" in caught[0]
    else:
        assert caught == []
    held = corpus_file("en.txt").read_text(encoding="utf-8")[600_000:640_000].split("\n")
    for line in [*held, *_lines()[-8:]]:
        want = doubles.encode(line, disallowed_special=())
        assert fast(line)["input_ids"] == want, line[:60]
        assert hf.encode(line).ids == want, line[:60]


def test_a_normalizer_tokenizers_cannot_express_stays_and_warns(tmp_path: Path) -> None:
    """User-defined symbols that the character map must not touch: no `tokenizers`
    chain does that, so the file keeps tokensmith's component and says why."""
    tok = ts.load(asset("sentencepiece-unigram", "test_model.model"))
    doc = json.loads(tok.to_str())
    spec = doc["normalizer"]["sentencepiece"]
    doc["normalizer"] = {"type": "SentencePiece", **spec, "user_defined_symbols": ["<sep>"]}
    odd = ts.Tokenizer.from_str(json.dumps(doc))
    caught = _save(odd, tmp_path / "tokenizer.json")
    assert len(caught) == 1 and "cannot load this file" in caught[0]
    written = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    assert written["normalizer"]["type"] == "SentencePiece"
    assert ts.load(tmp_path / "tokenizer.json").encode("a<sep>b") == odd.encode("a<sep>b")
