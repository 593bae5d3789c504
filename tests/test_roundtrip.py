"""decode(encode(x)) == x for arbitrary Unicode text (hypothesis)."""

from __future__ import annotations

import tokensmith as ts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import asset

TEXT = st.text(
    alphabet=st.characters(exclude_categories=("Cs",)), max_size=300
) | st.lists(st.sampled_from(["a", " ", "  ", "\n", "é", "中", "😀", "'s", "1", "\t", "\u200d"]),
             max_size=200).map("".join)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=TEXT)
def test_trained_round_trip(trained: ts.Tokenizer, text: str) -> None:
    ids = trained.encode(text, disallowed_special=())
    assert trained.decode(ids) == text
    assert trained.decode_bytes(ids) == text.encode("utf-8")
    enc = trained.encode_full(text, disallowed_special=())
    assert enc.ids == ids
    assert all(0 <= s <= e <= len(text) for s, e in enc.offsets)


_GPT2: list[ts.Tokenizer] = []


def _gpt2() -> ts.Tokenizer:
    if not _GPT2:
        _GPT2.append(ts.load(asset("gpt2", "tokenizer.json")))
    return _GPT2[0]


def test_gpt2_round_trip() -> None:
    tok = _gpt2()

    @settings(max_examples=200, deadline=None)
    @given(text=TEXT)
    def check(text: str) -> None:
        assert tok.decode(tok.encode(text, disallowed_special=())) == text

    check()
