"""Training: corpora in, :class:`~tokensmith.Tokenizer` out."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, TextIO

from . import _core, patterns
from ._limits import check_min_frequency, check_token_list, check_vocab_size, warn_shortfall
from ._progress import TrainingEvents
from .corpus import Files, count_corpus
from .errors import (
    ConfigError,
    InvalidPatternError,
    VocabSizeError,
)
from .tokenizer import Tokenizer

__all__ = ["train", "train_bpe", "format_merge"]


def format_merge(index: int, left: bytes, right: bytes, new_id: int, count: int) -> str:
    """One line of the training trace: ``merge 0: (b' ', b't') -> 256 ' t' (count 50)``."""
    raw = left + right
    try:
        merged = repr(raw.decode("utf-8"))
    except UnicodeDecodeError:  # part of a multi-byte character: show the bytes
        merged = repr(raw)
    return f"merge {index}: ({left!r}, {right!r}) -> {new_id} {merged} (count {count})"


def _check_pattern(pattern: str) -> str:
    regex = patterns.resolve(pattern)
    if not regex:
        raise InvalidPatternError("the pre-tokenizer pattern is empty")
    try:
        _core.check_regex(regex)
    except ConfigError as e:
        raise InvalidPatternError(f"{e}. Pass a valid regex or a name: "
                                  f"{', '.join(sorted(patterns.NAMED))}") from None
    return regex


def train(
    files: Files | None = None,
    *,
    texts: Iterable[str] | None = None,
    model: Literal["bpe", "wordpiece", "unigram", "sentencepiece-bpe"] = "bpe",
    vocab_size: int = 32_000,
    **options: Any,
) -> Tokenizer:
    """Train a tokenizer on files (paths, folders, globs) and/or an iterable of strings.

    ``model="bpe"`` trains byte-level BPE by default (see :func:`train_bpe`
    for every option, among them character-level BPE with ``byte_level=False``);
    ``model="wordpiece"`` trains a BERT-style WordPiece tokenizer by likelihood
    (see :func:`tokensmith._train_wordpiece.train_wordpiece`); ``model="unigram"``
    and ``model="sentencepiece-bpe"`` train SentencePiece models on raw text
    (see :func:`tokensmith._train_sentencepiece.train_unigram` and
    :func:`~tokensmith._train_sentencepiece.train_sentencepiece_bpe`).
    """
    kind = model.lower().replace("_", "-")
    if kind == "wordpiece":
        from ._train_wordpiece import train_wordpiece

        return train_wordpiece(files, texts=texts, vocab_size=vocab_size, **options)
    if kind == "unigram":
        from ._train_sentencepiece import train_unigram

        return train_unigram(files, texts=texts, vocab_size=vocab_size, **options)
    if kind in ("sentencepiece-bpe", "sp-bpe"):
        from ._train_sentencepiece import train_sentencepiece_bpe

        return train_sentencepiece_bpe(files, texts=texts, vocab_size=vocab_size, **options)
    if kind != "bpe":
        raise ConfigError(
            f"model={model!r}: choose 'bpe' (byte-level or character-level BPE), 'wordpiece', "
            f"'unigram' or 'sentencepiece-bpe'"
        )
    return train_bpe(files, texts=texts, vocab_size=vocab_size, **options)


def train_bpe(
    files: Files | None = None,
    *,
    texts: Iterable[str] | None = None,
    vocab_size: int = 32_000,
    min_frequency: int = 0,
    special_tokens: Sequence[str] = ("<|endoftext|>",),
    max_token_length: int | None = None,
    pattern: str = "gpt4",
    byte_level: bool = True,
    end_of_word_suffix: str | None = None,
    continuing_subword_prefix: str | None = None,
    limit_alphabet: int | None = None,
    unk_token: str | None = "<unk>",
    lowercase: bool = False,
    normalizer: str | None = None,
    errors: Literal["strict", "replace", "skip"] = "strict",
    verbose: bool = False,
    trace: int = 20,
    progress: bool | None = None,
    stream: TextIO | None = None,
    callback: Callable[[str, tuple[Any, ...]], None] | None = None,
) -> Tokenizer:
    """Train BPE.

    Byte-level (default, ``byte_level=True``): the 256 bytes are ids 0–255,
    learned merges follow (the first is id 256), then ``special_tokens``. Text
    is cut by ``pattern`` — ``"gpt4"`` (the cl100k regex, default), ``"gpt2"``,
    ``"o200k"``, or any regex — exactly as the saved tokenizer will cut it.

    Character-level (``byte_level=False``): the alphabet is the characters of
    the corpus (the ``limit_alphabet`` most frequent), words are cut at
    whitespace, ``end_of_word_suffix`` (e.g. ``"</w>"``, Sennrich et al. 2016)
    marks the last symbol of each word, characters never seen become
    ``unk_token``.

    ``vocab_size`` counts everything: alphabet, merges and special tokens.
    Merges stop early when no pair occurs ``min_frequency`` times (or at all).
    Ties between equally frequent pairs go to the pair with the smaller
    (left id, right id): results are the same on any machine and thread count.
    ``max_token_length`` caps a learned token in bytes (byte-level) or
    characters (character-level).

    ``verbose`` prints the first ``trace`` merges and a progress bar with an
    ETA to ``stream`` (stderr); ``callback(kind, data)`` receives the same
    events (``"merge"`` and ``"progress"``).
    """
    out = stream or sys.stderr
    if files is None and texts is None:
        raise ConfigError("give files (paths, folders or globs) or texts=[...] to train on")
    check_vocab_size(vocab_size)
    check_min_frequency(min_frequency)
    if errors not in ("strict", "replace", "skip"):
        raise ConfigError(f"errors must be 'strict', 'replace' or 'skip', not {errors!r}")
    specials = check_token_list(special_tokens)
    if not byte_level and unk_token and unk_token not in specials:
        specials.append(unk_token)
    if byte_level and vocab_size < 256 + len(specials):
        raise VocabSizeError(
            f"vocab_size={vocab_size} cannot hold the 256 byte tokens plus "
            f"{len(specials)} special token(s); use at least {256 + len(specials)}"
        )
    if max_token_length is not None and max_token_length < 2:
        raise ConfigError("max_token_length must be at least 2 (or None for no limit)")

    norms: list[dict[str, Any]] = []
    if normalizer:
        norms.append({"type": normalizer.upper()})
    if lowercase:
        norms.append({"type": "Lowercase"})
    norm: dict[str, Any] | None = (
        None if not norms else norms[0] if len(norms) == 1
        else {"type": "Sequence", "normalizers": norms}
    )
    if byte_level:
        regex = _check_pattern(pattern)
        pre: dict[str, Any] = {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated",
                 "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                 "use_regex": False},
            ],
        }
        decoder: dict[str, Any] = {"type": "ByteLevel", "add_prefix_space": True,
                                   "trim_offsets": True, "use_regex": True}
    else:
        pre = {"type": "WhitespaceSplit"}
        decoder = ({"type": "BPEDecoder", "suffix": end_of_word_suffix}
                   if end_of_word_suffix else {"type": "Fuse"})
    components = {"normalizer": norm, "pre_tokenizer": pre}

    counter = count_corpus(components, files, texts, errors, verbose=verbose, out=out)

    events = TrainingEvents(verbose, progress, out, callback, "merges")

    target = vocab_size - len(specials)
    t1 = time.monotonic()
    trained = counter.train_bpe(
        target,
        min_frequency,
        max_token_length,
        byte_level,
        None if byte_level else continuing_subword_prefix,
        None if byte_level else end_of_word_suffix,
        limit_alphabet,
        trace if verbose or callback else 0,
        events if events.wanted else None,
    )
    events.close(len(trained.merges()))
    base = trained.alphabet_size + len(trained.merges())
    added = [
        {"id": base + i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}
        for i, s in enumerate(specials)
    ]
    comps = dict(components, decoder=decoder, post_processor=None)
    if not byte_level and unk_token:
        comps["unk_token"] = unk_token
    core = _core.Tokenizer.from_trained(trained, json.dumps(comps), json.dumps(added))
    tok = Tokenizer(core)
    warn_shortfall(vocab_size, tok.vocab_size, min_frequency)
    if verbose:
        learned = len(trained.merges())
        note = "" if learned == target - trained.alphabet_size else (
            f" (stopped early: no pair left with count >= {max(min_frequency, 1)})")
        print(f"learned {learned:,} merges in {time.monotonic() - t1:.1f} s; "
              f"vocabulary {tok.vocab_size:,} tokens{note}", file=out)
    return tok
