"""WordLevel training: a dictionary of whole words (or characters), ``[UNK]`` for the rest.

Reached through ``tokensmith.train(..., model="wordlevel")``. The vocabulary is
what ``tokenizers``' ``WordLevelTrainer`` makes from the same pieces: the special
tokens first (ids 0, 1, … in the order given), then the pieces seen at least
``min_frequency`` times, most frequent first, equal counts in code-point order,
``vocab_size`` entries in all. It is the word-level and character-level baseline
the subword methods are measured against (``tokensmith compare --baselines``).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TextIO

from ._limits import check_min_frequency, check_token_list, check_vocab_size
from ._line_sample import LineSample
from .corpus import Files, count_corpus
from .errors import ConfigError, VocabSizeError
from .tokenizer import Tokenizer

if TYPE_CHECKING:
    from .counts import WordCounts

__all__ = ["train_wordlevel", "PRE_TOKENIZERS"]

#: ``split=`` names and the pre-tokenizer each stands for: ``"whitespace"`` is
#: ``tokenizers``' Whitespace (runs of word characters, runs of punctuation),
#: ``"spaces"`` splits on whitespace only (a word keeps its punctuation), and
#: ``"characters"`` makes every character a piece (the character-level baseline).
PRE_TOKENIZERS: dict[str, dict[str, Any]] = {
    "whitespace": {"type": "Whitespace"},
    "spaces": {"type": "WhitespaceSplit"},
    "characters": {"type": "Split", "pattern": {"Regex": r"[\s\S]"}, "behavior": "Isolated",
                   "invert": False},
}


def train_wordlevel(
    files: Files | None = None,
    *,
    texts: Iterable[str] | None = None,
    vocab_size: int = 30_000,
    min_frequency: int = 0,
    special_tokens: Sequence[str] = ("[UNK]",),
    unk_token: str = "[UNK]",
    split: Literal["whitespace", "spaces", "characters"] = "whitespace",
    lowercase: bool = False,
    errors: Literal["strict", "replace", "skip"] = "strict",
    text_field: str = "text",
    input_sentence_size: int | None = None,
    sample_bytes: int | None = None,
    sample_seed: int = 0,
    counts: WordCounts | None = None,
    verbose: bool = False,
    stream: TextIO | None = None,
    callback: Callable[[str, tuple[Any, ...]], None] | None = None,
    **other: Any,
) -> Tokenizer:
    """Train a word-level tokenizer: every piece of ``split`` is one token or ``unk_token``.

    ``split`` chooses the pieces (see :data:`PRE_TOKENIZERS`); ``lowercase`` adds a
    Lowercase normalizer. ``unk_token`` is added to the special tokens when they lack
    it. ``vocab_size`` counts the special tokens. ``callback("word", (word, count,
    id))`` is called for every word kept, in id order.
    """
    out = stream or sys.stderr
    if other:
        raise ConfigError(
            f"{', '.join(sorted(other))}: not an option of WordLevel training (it keeps whole "
            f"pieces: no merges, no alphabet)"
        )
    check_vocab_size(vocab_size)
    check_min_frequency(min_frequency)
    if split not in PRE_TOKENIZERS:
        raise ConfigError(f"split={split!r}: choose one of {', '.join(PRE_TOKENIZERS)}")
    specials = check_token_list(special_tokens)
    if not unk_token:
        raise ConfigError("WordLevel needs an unk_token for the words it does not know")
    if unk_token not in specials:
        specials.append(unk_token)
    if vocab_size <= len(specials):
        raise VocabSizeError(
            f"vocab_size={vocab_size} leaves no room beside the {len(specials)} special tokens"
        )
    normalizer = {"type": "Lowercase"} if lowercase else None
    pre = PRE_TOKENIZERS[split]
    counter = count_corpus({"normalizer": normalizer, "pre_tokenizer": pre}, files, texts,
                           errors, verbose=verbose, out=out, what="words",
                           text_field=text_field, counts=counts,
                           sample=LineSample.of(input_sentence_size, sample_bytes, sample_seed))
    t1 = time.monotonic()
    vocab = _vocabulary(counter, specials, vocab_size, min_frequency, callback)
    spec = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": vocab[s], "content": s, "single_word": False, "lstrip": False,
             "rstrip": False, "normalized": False, "special": True}
            for s in specials
        ],
        "normalizer": normalizer,
        "pre_tokenizer": pre,
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": unk_token},
    }
    from .formats.hf_json import loads

    tok = loads(json.dumps(spec, ensure_ascii=False))
    if verbose:
        print(f"kept {len(vocab) - len(specials):,} of {counter.distinct:,} distinct "
              f"pieces in {time.monotonic() - t1:.1f} s", file=out)
    return tok


def _vocabulary(counter: Any, specials: list[str], vocab_size: int, min_frequency: int,
                callback: Callable[[str, tuple[Any, ...]], None] | None) -> dict[str, int]:
    """Special tokens, then the pieces by falling count (ties in code-point order).

    A piece equal to a special token takes the later id, as ``tokenizers`` builds
    its vocabulary from the same list (the special token's first id is left unused).
    """
    counts = [(w.decode("utf-8"), n) for w, n in counter.most_common(counter.distinct)
              if n >= min_frequency]
    counts.sort(key=lambda wn: (-wn[1], wn[0]))
    words = [w for w, _ in counts]
    vocab: dict[str, int] = {}
    for i, word in enumerate((specials + words)[:vocab_size]):
        vocab[word] = i
        if callback is not None and i >= len(specials):
            callback("word", (word, counts[i - len(specials)][1], i))
    return vocab
