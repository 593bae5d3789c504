"""Subword regularization: n-best and sampled encodings (Unigram), BPE-dropout
(SentencePiece BPE).

Works on any tokenizer whose model is Unigram (a SentencePiece ``.model``,
T5's ``tokenizer.json`` …); the text is normalized and pre-tokenized as
``encode`` does, added tokens are not split out, and no BOS/EOS is added.

>>> import tokensmith as ts                                   # doctest: +SKIP
>>> from tokensmith.sampling import encode_nbest, sample_encode
>>> tok = ts.load("test_model.model")                        # doctest: +SKIP
>>> encode_nbest(tok, "hello world", 3)                      # doctest: +SKIP
[[151, 88, 21, 887], [151, 88, 21, 19, 9], ...]
>>> sample_encode(tok, "hello world", alpha=0.1, seed=1)     # doctest: +SKIP

These follow ``sentencepiece``: ``encode_nbest`` gives the same lists as
``SentencePieceProcessor.nbest_encode_as_ids``, and ``sample_encode`` draws
as ``encode(..., enable_sampling=True, alpha=..., nbest_size=...)`` does
(with tokensmith's own random generator, seedable).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

__all__ = ["encode_nbest", "encode_nbest_with_scores", "sample_encode"]


def _clean(text: str) -> str:
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def encode_nbest_with_scores(tok: Tokenizer, text: str, n: int) -> list[tuple[list[int], float]]:
    """The ``n`` best encodings of ``text`` and their scores (sums of piece
    log-probabilities), best first."""
    if n < 1:
        return []
    return [(list(ids), score) for ids, score in tok._core.encode_nbest(_clean(text), n)]


def encode_nbest(tok: Tokenizer, text: str, n: int) -> list[list[int]]:
    """The ``n`` best encodings of ``text``, best first (fewer when the text
    has fewer segmentations)."""
    return [ids for ids, _ in encode_nbest_with_scores(tok, text, n)]


def sample_encode(
    tok: Tokenizer,
    text: str,
    *,
    alpha: float = 0.1,
    nbest_size: int = -1,
    seed: int | None = None,
) -> list[int]:
    """One encoding drawn at random (subword regularization).

    Unigram: ``nbest_size < 0`` samples from every segmentation with
    probability proportional to ``exp(alpha * score)``; ``nbest_size > 1``
    samples among the ``nbest_size`` best; 0 or 1 (or ``alpha == 0``) gives
    the best one.

    SentencePiece BPE (Llama-2 style ``.model`` files, ``model="sentencepiece-bpe"``):
    BPE-dropout (Provilkov et al. 2020) as ``sentencepiece`` samples it — each
    merge is skipped with probability ``alpha`` (0 gives the usual encoding, 1
    the characters); ``nbest_size`` does not apply.
    """
    if seed is None:
        seed = random.getrandbits(64)
    return tok._core.sample_encode(_clean(text), nbest_size, float(alpha), seed & (2**64 - 1))
