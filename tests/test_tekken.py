"""Mistral's tokenizers against ``mistral-common``: tekken files (loaded, saved, built
here from a rank file) and the SentencePiece ``tokenizer.model.vN`` files it ships."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest
import tokensmith as ts
from tokensmith.errors import TokenizerFormatError

from .adversarial import strings
from .conftest import asset, corpus_file

mistral_common = pytest.importorskip(
    "mistral_common", reason="mistral-common is the reference for Mistral's tokenizers")
from mistral_common.tokens.tokenizers.sentencepiece import SentencePieceTokenizer  # noqa: E402
from mistral_common.tokens.tokenizers.tekken import Tekkenizer  # noqa: E402

DATA = Path(mistral_common.__file__).parent / "data"
TEKKEN = sorted(DATA.glob("tekken_*.json"))
MODELS = sorted(DATA.glob("*.model.v*"))


def _texts() -> list[str]:
    out: list[str] = []
    for name, size in (("en.txt", 60_000), ("code.txt", 40_000), ("zh.txt", 20_000),
                       ("ja.txt", 20_000)):
        text = corpus_file(name).read_text(encoding="utf-8")[:size]
        out += [text[i:i + 4000] for i in range(0, len(text), 4000)]
    return out + strings() + ["[INST] hi [/INST]", "<s></s>", "  \n\t x", ""]


@pytest.fixture(scope="module", params=[p.name for p in TEKKEN] or ["none"])
def tekken(request):  # type: ignore[no-untyped-def]
    if request.param == "none":
        pytest.skip("mistral-common ships no tekken file in this version")
    path = DATA / request.param
    return ts.load(path), Tekkenizer.from_file(path), path


def test_tekken_ids_equal_mistral_common(tekken) -> None:  # type: ignore[no-untyped-def]
    tok, ref, _ = tekken
    assert tok.vocab_size == ref.n_words
    for text in _texts():
        want = ref.encode(text, bos=True, eos=False)
        assert tok.encode(text, disallowed_special=()) == want, text[:80]
        assert tok.encode(text, disallowed_special=(), add_special_tokens=False) == want[1:]
        assert tok.decode(want, skip_special_tokens=True) == ref.decode(want)


def test_tekken_special_tokens(tekken) -> None:  # type: ignore[no-untyped-def]
    tok, ref, _ = tekken
    for i in range(ref.num_special_tokens):
        piece = ref.id_to_piece(i)
        assert tok.token_to_id(piece) == i == ref.get_special_token(piece)
    assert ref.bos_id == tok.token_to_id("<s>") and ref.eos_id == tok.token_to_id("</s>")
    chat = "[INST] What is 2+2? [/INST]"
    assert tok.encode(chat, allowed_special="all", add_special_tokens=False)[0] == \
        ref.get_special_token("[INST]")
    with pytest.raises(ts.errors.DisallowedSpecialTokenError):
        tok.encode(chat)  # spelled special tokens are refused unless the call says
    ids = ref.encode("hello", bos=True, eos=True)
    assert tok.decode(ids) == "<s>hello</s>"


def test_tekken_by_content_saved_and_reloaded(tekken, tmp_path) -> None:  # type: ignore[no-untyped-def]
    tok, ref, path = tekken
    renamed = tmp_path / "mistral-nemo.json"
    shutil.copyfile(path, renamed)
    assert ts.load(renamed).encode("naïve café 😀") == tok.encode("naïve café 😀")
    saved = tok.save(tmp_path / "tekken.json")
    again = Tekkenizer.from_file(saved)
    back = ts.load(saved)
    assert again.n_words == ref.n_words and again.num_special_tokens == ref.num_special_tokens
    for text in _texts()[::5]:
        want = ref.encode(text, bos=True, eos=False)
        assert again.encode(text, bos=True, eos=False) == want
        assert back.encode(text, disallowed_special=()) == want
    # a folder holding tekken.json loads as it
    assert ts.load(tmp_path).vocab_size == tok.vocab_size


def _build_tekken(tmp_path: Path, version: str = "v7") -> Path:
    """A tekken file made here from cl100k's tokens (tekken wants the 256 bytes first, in
    byte order, then the longer tokens by rank), 10 named special tokens of 100."""
    ranks = asset("cl100k_base", "cl100k_base.tiktoken").read_text().splitlines()
    longer = [base64.b64decode(line.split()[0]) for line in ranks[:50_000]]
    tokens = [bytes([b]) for b in range(256)] + [t for t in longer if len(t) > 1]
    vocab = []
    for rank, raw in enumerate(tokens):
        try:
            text: str | None = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        vocab.append({"rank": rank, "token_bytes": base64.b64encode(raw).decode(),
                      "token_str": text})
    names = ["<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[TOOL_CALLS]", "[IMG]", "<pad>",
             "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]"]
    data = {
        "config": {"pattern": ts.patterns.CL100K, "num_vocab_tokens": len(vocab),
                   "default_vocab_size": 40_100, "default_num_special_tokens": 100,
                   "version": version},
        "vocab": vocab,
        "special_tokens": [{"rank": i, "token_str": s, "is_control": True}
                           for i, s in enumerate(names)],
    }
    path = tmp_path / "tekken_built.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_tekken_file_built_from_cl100k(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = _build_tekken(tmp_path)
    tok, ref = ts.load(path), Tekkenizer.from_file(path)
    assert tok.vocab_size == ref.n_words == 40_100
    assert tok.id_to_token(57) == ref.id_to_piece(57) == "<SPECIAL_57>"
    for text in _texts()[::3]:
        assert tok.encode(text, disallowed_special=()) == ref.encode(text, bos=True, eos=False)


def test_bad_tekken_files_are_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    good = json.loads(_build_tekken(tmp_path).read_text(encoding="utf-8"))

    def refused(change, match: str) -> None:  # type: ignore[no-untyped-def]
        data = json.loads(json.dumps(good))
        change(data)
        path = tmp_path / "tekken_bad.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        with pytest.raises(TokenizerFormatError, match=match):
            ts.load(path)

    refused(lambda d: d["config"].pop("pattern"), "config.pattern")
    refused(lambda d: d["config"].update(version="v99"), "version")
    refused(lambda d: d["config"].update(default_num_special_tokens=5), "more than")
    refused(lambda d: d["config"].update(default_vocab_size=10**6), "vocab has")
    refused(lambda d: d["vocab"][7].update(rank=8), r"vocab\[7\]")
    refused(lambda d: d["special_tokens"][2].update(token_str="<s>"), "twice")
    refused(lambda d: (d.pop("special_tokens"), d["config"].update(version="v13")),
            "must list")
    (tmp_path / "tekken_cut.json").write_text(json.dumps(good)[:5000], encoding="utf-8")
    with pytest.raises(TokenizerFormatError):
        ts.load(tmp_path / "tekken_cut.json")


def test_saving_what_tekken_cannot_hold_is_refused(tmp_path, trained) -> None:  # type: ignore[no-untyped-def]
    # the trained fixture's special tokens follow its ordinary tokens
    with pytest.raises(ts.errors.UnsupportedComponentError, match="ids 0, 1"):
        trained.save(tmp_path / "tekken.json")


@pytest.mark.parametrize("path", MODELS, ids=[p.name for p in MODELS])
def test_sentencepiece_model_vn_files(path: Path) -> None:
    """Mistral's SentencePiece models (``.model.v1`` … ``.v7m1``), by content."""
    tok = ts.load(path)
    ref = SentencePieceTokenizer(str(path))
    for text in _texts():
        want = ref.encode(text, bos=False, eos=False)
        got = tok.encode(text, disallowed_special=(), add_special_tokens=False)
        assert got == want, text[:80]
        assert tok.decode(want, skip_special_tokens=True) == ref.decode(want)
