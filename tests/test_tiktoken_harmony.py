"""o200k_harmony (gpt-oss), a second name for a special id, and ``encode_with_unstable``:
the tiktoken facade against tiktoken itself."""

from __future__ import annotations

import hashlib
import json
import random
import shutil

import pytest
import tokensmith as ts
from tokensmith.compat import tiktoken as ct
from tokensmith.errors import DisallowedSpecialTokenError, TokenizerFormatError

from .adversarial import strings
from .conftest import asset, corpus_file

tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is the reference for the facade")
pytest.importorskip("regex", reason="encode_with_unstable splits with the regex module")

URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


@pytest.fixture(scope="module")
def rank_dir(tmp_path_factory):
    """tiktoken's cache and tokensmith's cache, both holding the o200k and cl100k files."""
    folder = tmp_path_factory.mktemp("ranks")
    for name in ("o200k_base", "cl100k_base"):
        src = asset(name, f"{name}.tiktoken")
        shutil.copyfile(src, folder / f"{name}.tiktoken")
        shutil.copyfile(src, folder / hashlib.sha1(URL.format(name).encode()).hexdigest())
    return folder


@pytest.fixture(scope="module")
def harmony(rank_dir):
    """(facade, tiktoken) for o200k_harmony."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", str(rank_dir))
        mp.setenv("TOKENSMITH_CACHE", str(rank_dir))
        mp.setenv("TOKENSMITH_OFFLINE", "1")
        mp.setattr(ct, "_ENCODINGS", {})
        return ct.get_encoding("o200k_harmony"), tiktoken.get_encoding("o200k_harmony")


@pytest.fixture(scope="module", params=["cl100k_base", "o200k_base"])
def pair(request, rank_dir):
    name = request.param
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", str(rank_dir))
        real = tiktoken.get_encoding(name)
    return ct.Encoding.from_tokenizer(ts.load(rank_dir / f"{name}.tiktoken"), name=name), real


CHAT = (
    "<|start|>system<|message|>You are ChatGPT.<|end|><|start|>user<|message|>Hi 你好 "
    "<|end|><|start|>assistant<|channel|>final<|message|>Hello!<|return|><|endofprompt|>"
    "<|reserved_200018|><|reserved_201087|><|startoftext|><|endoftext|><|call|><|constrain|>"
)


def test_harmony_definition_is_tiktokens(harmony) -> None:
    facade, real = harmony
    assert facade.special_tokens_set == real.special_tokens_set
    assert {t: facade.encode_single_token(t) for t in facade.special_tokens_set} == {
        t: real.encode_single_token(t) for t in real.special_tokens_set
    }
    assert facade.n_vocab == real.n_vocab == 201088
    assert facade.max_token_value == real.max_token_value
    assert facade.eot_token == real.eot_token


def test_harmony_chat_text(harmony) -> None:
    facade, real = harmony
    ids = real.encode(CHAT, allowed_special="all")
    assert facade.encode(CHAT, allowed_special="all") == ids
    assert ids.count(200018) == 2  # both names of the one id
    assert facade.decode(ids) == real.decode(ids)
    assert facade.decode_single_token_bytes(200018) == b"<|endofprompt|>"
    assert facade.encode(CHAT, disallowed_special=()) == real.encode(CHAT, disallowed_special=())
    text = corpus_file("en.txt").read_text(encoding="utf-8")[:50_000]
    assert facade.encode_ordinary(text) == real.encode_ordinary(text)


def test_harmony_disallowed_names(harmony) -> None:
    """A special name refused by tiktoken is refused here too, also when another name
    of its id is allowed."""
    facade, real = harmony
    cases = [
        ("x <|reserved_200018|>", {"<|endofprompt|>"}, "all"),
        ("x <|endofprompt|>", {"<|reserved_200018|>"}, "all"),
        ("x <|call|>", set(), "all"),
        ("x <|reserved_200018|>", {"<|endofprompt|>"}, {"<|reserved_200018|>"}),
    ]
    for text, allowed, disallowed in cases:
        with pytest.raises(ValueError):
            real.encode(text, allowed_special=allowed, disallowed_special=disallowed)
        with pytest.raises(DisallowedSpecialTokenError):
            facade.encode(text, allowed_special=allowed, disallowed_special=disallowed)
    both = {"<|endofprompt|>", "<|reserved_200018|>"}
    text = "a<|endofprompt|>b<|reserved_200018|>c"
    assert facade.encode(text, allowed_special=both) == real.encode(text, allowed_special=both)


def test_alias_only_for_special_tokens() -> None:
    """Two added tokens may share an id only as names of one special token."""
    spec = {
        "version": "1.0",
        "model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []},
        "added_tokens": [
            {"id": 2, "content": "<x>", "special": True, "normalized": False,
             "single_word": False, "lstrip": False, "rstrip": False},
            {"id": 2, "content": "<y>", "special": True, "normalized": False,
             "single_word": False, "lstrip": False, "rstrip": False},
        ],
    }
    tok = ts.Tokenizer.from_str(json.dumps(spec))
    assert tok.encode("a<y>b<x>", allowed_special="all") == [0, 2, 1, 2]
    assert tok.decode([2]) == "<x>"
    assert ts.Tokenizer.from_str(tok.to_str()).encode("<y>", allowed_special="all") == [2]
    spec["added_tokens"][1]["special"] = False
    with pytest.raises(TokenizerFormatError, match="used twice"):
        ts.Tokenizer.from_str(json.dumps(spec))


def test_gpt_oss_model_names() -> None:
    from tiktoken.model import encoding_name_for_model

    for model in ["gpt-oss-20b", "gpt-oss-120b"]:
        assert ct.encoding_name_for_model(model) == encoding_name_for_model(model)
        assert ct.encoding_name_for_model(model) == "o200k_harmony"
    assert "o200k_harmony" in ct.list_encoding_names()


# ------------------------------------------------------------ encode_with_unstable
def _unstable_cases() -> list[str]:
    rng = random.Random(3)
    cases = [
        "hello fanta", "hello", "", " ", "hello ", "hello  ", "hello\n", "hello\n\n",
        "a\n \n", "x = 1\n    ", "price: 12", "price: 123", "don'", "don't", "中文", "中",
        "naïve caf", "hello 😀", "tab\t", "end.\u3000", "emoji 👍🏽", "  !", "<|endoftext|>",
        "hi<|endoftext|>", "hi<|endoftext|>there", "1234567",
    ]
    text = corpus_file("en.txt").read_text(encoding="utf-8")[:20_000]
    for _ in range(25):
        k = rng.randrange(len(text) - 200)
        cases.append(text[k:k + rng.randrange(1, 60)])
    cases += [s for s in strings()[:30] if len(s) < 40]
    return cases


def test_encode_with_unstable_matches_tiktoken(pair) -> None:
    facade, real = pair
    for text in _unstable_cases():
        stable, completions = facade.encode_with_unstable(text, allowed_special="all")
        want_stable, want = real.encode_with_unstable(text, allowed_special="all")
        assert stable == want_stable, text
        assert {tuple(c) for c in completions} == {tuple(c) for c in want}, text
        assert completions == sorted(completions)
        assert text.encode().startswith(facade.decode_bytes(stable))


def test_encode_with_unstable_refuses_like_tiktoken(pair) -> None:
    facade, real = pair
    with pytest.raises(ValueError):
        real.encode_with_unstable("x <|endoftext|>")
    with pytest.raises(DisallowedSpecialTokenError):
        facade.encode_with_unstable("x <|endoftext|>")
    stable, completions = facade.encode_with_unstable("x <|endoftext|>", disallowed_special=())
    want = real.encode_with_unstable("x <|endoftext|>", disallowed_special=())
    assert (stable, {tuple(c) for c in completions}) == (want[0], {tuple(c) for c in want[1]})
