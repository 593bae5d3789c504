"""A tokenizer with the defaults of Hugging Face ``tokenizers``: text that spells a
special token (``[MASK]``, ``<|start_header_id|>``, ``</s>``) is that token, and
``decode`` leaves special tokens out. tokensmith's own default is tiktoken's (such text
is refused unless the call says what it is, and ``decode`` keeps every token); this view
is for code and habits written against ``tokenizers``. Same core, same ids; only the
defaults of the keyword arguments differ, and every call may still give them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from .tokenizer import Encoding, SpecialSet, Tokenizer

if TYPE_CHECKING:
    import numpy as np

ALL: SpecialSet = "all"


class HFTokenizer(Tokenizer):
    """:meth:`Tokenizer.hf`'s view (see the module)."""

    def encode(self, text: str, *, allowed_special: SpecialSet = ALL,
               disallowed_special: SpecialSet = (), add_special_tokens: bool = True) -> list[int]:
        return super().encode(text, allowed_special=allowed_special,
                              disallowed_special=disallowed_special,
                              add_special_tokens=add_special_tokens)

    def count(self, text: str, *, allowed_special: SpecialSet = ALL,
              disallowed_special: SpecialSet = (), add_special_tokens: bool = True) -> int:
        return super().count(text, allowed_special=allowed_special,
                             disallowed_special=disallowed_special,
                             add_special_tokens=add_special_tokens)

    def encode_batch(self, texts: Iterable[str], *, allowed_special: SpecialSet = ALL,
                     disallowed_special: SpecialSet = (), add_special_tokens: bool = True,
                     num_threads: int | None = None) -> list[list[int]]:
        return super().encode_batch(texts, allowed_special=allowed_special,
                                    disallowed_special=disallowed_special,
                                    add_special_tokens=add_special_tokens,
                                    num_threads=num_threads)

    def encode_full(self, text: str, pair: str | None = None, *,
                    allowed_special: SpecialSet = ALL, disallowed_special: SpecialSet = (),
                    add_special_tokens: bool = True) -> Encoding:
        return super().encode_full(text, pair, allowed_special=allowed_special,
                                   disallowed_special=disallowed_special,
                                   add_special_tokens=add_special_tokens)

    def encode_to_numpy(self, text: str, *, allowed_special: SpecialSet = ALL,
                        disallowed_special: SpecialSet = (),
                        add_special_tokens: bool = True) -> np.ndarray:
        return super().encode_to_numpy(text, allowed_special=allowed_special,
                                       disallowed_special=disallowed_special,
                                       add_special_tokens=add_special_tokens)

    def encode_batch_to_numpy(self, texts: Iterable[str], *, allowed_special: SpecialSet = ALL,
                              disallowed_special: SpecialSet = (),
                              add_special_tokens: bool = True,
                              num_threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        return super().encode_batch_to_numpy(texts, allowed_special=allowed_special,
                                             disallowed_special=disallowed_special,
                                             add_special_tokens=add_special_tokens,
                                             num_threads=num_threads)

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = True) -> str:
        return super().decode(ids, skip_special_tokens=skip_special_tokens)

    def decode_batch(self, batch: Iterable[Sequence[int]], *,
                     skip_special_tokens: bool = True) -> list[str]:
        return super().decode_batch(batch, skip_special_tokens=skip_special_tokens)

    def hf(self) -> HFTokenizer:
        return self

    def __repr__(self) -> str:
        return super().__repr__().replace("<tokensmith.Tokenizer", "<tokensmith.Tokenizer.hf()", 1)


def hf_view(tok: Tokenizer) -> HFTokenizer:
    """``tok`` with ``tokenizers``' defaults (same core; Python-side extras kept)."""
    view = HFTokenizer(tok._core)
    view.__dict__.update({k: v for k, v in vars(tok).items() if k not in Tokenizer._DERIVED})
    return view
