"""Training: corpora in, :class:`~tokensmith.Tokenizer` out."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TextIO, overload

from . import _core, patterns
from ._limits import check_min_frequency, check_token_list, check_vocab_size, warn_shortfall
from ._line_sample import LineSample
from ._options import check_options
from ._progress import TrainingEvents, format_merge
from ._train_parity import ParityMeasure, parity_plan, train_parity
from ._train_picky import MAX_MERGES_PER_SLOT, check_picky
from .corpus import Files, count_corpus
from .errors import (
    ConfigError,
    InvalidPatternError,
    VocabSizeError,
)
from .tokenizer import Tokenizer

if TYPE_CHECKING:
    from .counts import WordCounts

__all__ = ["train", "train_bpe", "format_merge"]


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


# One signature per model, for type checkers and editors: each lists that trainer's
# options (``tests/test_footguns.py`` checks that they match the trainers).
@overload
def train(
    files: Files | None = None,
    *,
    texts: Iterable[str] | None = None,
    model: Literal["bpe"] = "bpe",
    vocab_size: int = ...,
    min_frequency: int = ...,
    special_tokens: Sequence[str] = ...,
    max_token_length: int | None = ...,
    pattern: str = ...,
    byte_level: bool = ...,
    end_of_word_suffix: str | None = ...,
    continuing_subword_prefix: str | None = ...,
    limit_alphabet: int | None = ...,
    unk_token: str | None = ...,
    lowercase: bool = ...,
    normalizer: str | None = ...,
    errors: Literal["strict", "replace", "skip"] = ...,
    text_field: str = ...,
    input_sentence_size: int | None = ...,
    sample_bytes: int | None = ...,
    sample_seed: int = ...,
    counts: WordCounts | None = ...,
    languages: Mapping[str, Files] | None = ...,
    parity_dev: Mapping[str, Files] | None = ...,
    parity_measure: ParityMeasure | None = ...,
    parity_start: int = ...,
    verbose: bool = ...,
    trace: int = ...,
    progress: bool | None = ...,
    stream: TextIO | None = ...,
    callback: Callable[[str, tuple[Any, ...]], None] | None = ...,
    superword_start: int | None = ...,
    superword_words: int = ...,
    picky_threshold: float | None = ...,
) -> Tokenizer: ...


@overload
def train(
    files: Files | None = None,
    *,
    texts: Iterable[str] | None = None,
    model: Literal["wordpiece"],
    vocab_size: int = ...,
    min_frequency: int = ...,
    special_tokens: Sequence[str] = ...,
    unk_token: str = ...,
    cls_token: str = ...,
    sep_token: str = ...,
    limit_alphabet: int | None = ...,
    continuing_subword_prefix: str = ...,
    lowercase: bool = ...,
    strip_accents: bool | None = ...,
    clean_text: bool = ...,
    handle_chinese_chars: bool = ...,
    max_input_chars_per_word: int = ...,
    score: Literal["likelihood", "ratio", "frequency"] = ...,
    candidates: int | None = ...,
    errors: Literal["strict", "replace", "skip"] = ...,
    text_field: str = ...,
    input_sentence_size: int | None = ...,
    sample_bytes: int | None = ...,
    sample_seed: int = ...,
    counts: WordCounts | None = ...,
    verbose: bool = ...,
    trace: int = ...,
    progress: bool | None = ...,
    stream: TextIO | None = ...,
    callback: Callable[[str, tuple[Any, ...]], None] | None = ...,
) -> Tokenizer: ...


@overload
def train(
    files: Files | None = None,
    *,
    texts: Iterable[str] | None = None,
    model: Literal["unigram"],
    vocab_size: int = ...,
    character_coverage: float = ...,
    max_piece_length: int = ...,
    seed_size: int = ...,
    shrinking_factor: float = ...,
    num_sub_iterations: int = ...,
    byte_fallback: bool = ...,
    unk_token: str = ...,
    bos_token: str | None = ...,
    eos_token: str | None = ...,
    pad_token: str | None = ...,
    special_tokens: Sequence[str] = ...,
    user_defined_symbols: Sequence[str] = ...,
    split_by_unicode_script: bool = ...,
    split_by_number: bool = ...,
    split_digits: bool = ...,
    treat_whitespace_as_suffix: bool = ...,
    add_dummy_prefix: bool = ...,
    remove_extra_whitespaces: bool = ...,
    normalization_rule_name: Literal["nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf",
                                     "identity"] = ...,
    hard_vocab_limit: bool = ...,
    errors: Literal["strict", "replace", "skip"] = ...,
    text_field: str = ...,
    input_sentence_size: int | None = ...,
    sample_bytes: int | None = ...,
    sample_seed: int = ...,
    counts: WordCounts | None = ...,
    verbose: bool = ...,
    progress: bool | None = ...,
    stream: TextIO | None = ...,
    callback: Callable[[str, tuple[Any, ...]], None] | None = ...,
) -> Tokenizer: ...


@overload
def train(
    files: Files | None = None,
    *,
    texts: Iterable[str] | None = None,
    model: Literal["sentencepiece-bpe", "sp-bpe"],
    vocab_size: int = ...,
    character_coverage: float = ...,
    max_piece_length: int = ...,
    byte_fallback: bool = ...,
    unk_token: str = ...,
    bos_token: str | None = ...,
    eos_token: str | None = ...,
    pad_token: str | None = ...,
    special_tokens: Sequence[str] = ...,
    user_defined_symbols: Sequence[str] = ...,
    split_by_unicode_script: bool = ...,
    split_by_number: bool = ...,
    split_digits: bool = ...,
    treat_whitespace_as_suffix: bool = ...,
    add_dummy_prefix: bool = ...,
    remove_extra_whitespaces: bool = ...,
    normalization_rule_name: Literal["nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf",
                                     "identity"] = ...,
    hard_vocab_limit: bool = ...,
    errors: Literal["strict", "replace", "skip"] = ...,
    text_field: str = ...,
    input_sentence_size: int | None = ...,
    sample_bytes: int | None = ...,
    sample_seed: int = ...,
    counts: WordCounts | None = ...,
    verbose: bool = ...,
    trace: int = ...,
    progress: bool | None = ...,
    stream: TextIO | None = ...,
    callback: Callable[[str, tuple[Any, ...]], None] | None = ...,
) -> Tokenizer: ...


@overload
def train(
    files: Files | None = None,
    *,
    texts: Iterable[str] | None = None,
    model: Literal["wordlevel"],
    vocab_size: int = ...,
    min_frequency: int = ...,
    special_tokens: Sequence[str] = ...,
    unk_token: str = ...,
    split: Literal["whitespace", "spaces", "characters"] = ...,
    lowercase: bool = ...,
    errors: Literal["strict", "replace", "skip"] = ...,
    text_field: str = ...,
    input_sentence_size: int | None = ...,
    sample_bytes: int | None = ...,
    sample_seed: int = ...,
    counts: WordCounts | None = ...,
    verbose: bool = ...,
    stream: TextIO | None = ...,
    callback: Callable[[str, tuple[Any, ...]], None] | None = ...,
) -> Tokenizer: ...


def train(
    files: Files | None = None,
    *,
    texts: Iterable[str] | None = None,
    model: Literal["bpe", "wordpiece", "unigram", "sentencepiece-bpe", "sp-bpe",
                   "wordlevel"] = "bpe",
    vocab_size: int = 32_000,
    **options: Any,
) -> Tokenizer:
    """Train a tokenizer on files (paths, folders, globs) and/or an iterable of strings.

    ``model="bpe"`` trains byte-level BPE by default (see :func:`tokensmith.train_bpe`
    for every option, among them character-level BPE with ``byte_level=False``);
    ``model="wordpiece"`` trains a BERT-style WordPiece tokenizer by likelihood
    (:func:`tokensmith.train_wordpiece`); ``model="unigram"`` and
    ``model="sentencepiece-bpe"`` train SentencePiece models on raw text
    (:func:`tokensmith.train_unigram`, :func:`tokensmith.train_sentencepiece_bpe`);
    ``model="wordlevel"`` keeps whole words (or characters) and ``[UNK]`` for the rest,
    the baseline of the textbooks (:func:`tokensmith.train_wordlevel`).
    The options are those functions' keyword arguments; one a model does not take is
    refused (:class:`~tokensmith.errors.UnknownOptionError`, with the closest name)
    before any work. ``text_field`` names the field of ``.jsonl`` records that holds
    the text.
    """
    trainer = _trainer(model)
    others = {m: _trainer(m)
              for m in ("bpe", "wordpiece", "unigram", "sentencepiece-bpe", "wordlevel")
              if _trainer(m) is not trainer}
    check_options(trainer, options, f"train(model={model!r})", others)
    return trainer(files, texts=texts, vocab_size=vocab_size, **options)


def _trainer(model: str) -> Callable[..., Tokenizer]:
    """The training function of a ``model`` name."""
    kind = model.lower().replace("_", "-") if isinstance(model, str) else ""
    if kind == "wordpiece":
        from ._train_wordpiece import train_wordpiece

        return train_wordpiece
    if kind == "unigram":
        from ._train_sentencepiece import train_unigram

        return train_unigram
    if kind in ("wordlevel", "word-level"):
        from ._train_wordlevel import train_wordlevel

        return train_wordlevel
    if kind in ("sentencepiece-bpe", "sp-bpe"):
        from ._train_sentencepiece import train_sentencepiece_bpe

        return train_sentencepiece_bpe
    if kind != "bpe":
        raise ConfigError(
            f"model={model!r}: choose 'bpe' (byte-level or character-level BPE), 'wordpiece', "
            f"'unigram', 'sentencepiece-bpe' or 'wordlevel'"
        )
    return train_bpe


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
    text_field: str = "text",
    input_sentence_size: int | None = None,
    sample_bytes: int | None = None,
    sample_seed: int = 0,
    counts: WordCounts | None = None,
    languages: Mapping[str, Files] | None = None,
    parity_dev: Mapping[str, Files] | None = None,
    parity_measure: ParityMeasure | None = None,
    parity_start: int = 0,
    verbose: bool = False,
    trace: int = 20,
    progress: bool | None = None,
    stream: TextIO | None = None,
    callback: Callable[[str, tuple[Any, ...]], None] | None = None,
    superword_start: int | None = None,
    superword_words: int = 4,
    picky_threshold: float | None = None,
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

    ``superword_start`` (SuperBPE, Liu et al. 2025; byte-level only): merging
    stops at that many tokens, the text is then cut into chunks of up to
    ``superword_words`` words instead of ``pattern``'s pieces, and merging goes on
    across the spaces inside a chunk (tokens such as ``" of the"``); the
    tokenizer keeps the chunk pattern (see :mod:`tokensmith._train_superbpe`).

    Parity-aware BPE (Foroutan, Meister et al. 2025): ``languages`` maps each
    language to its training files (two languages or more, instead of
    ``files``/``texts``/``counts``). Before each merge every language's cost is
    measured: its tokens on ``parity_dev`` (a line-aligned parallel dev text
    per language), or, with ``parity_measure="bytes"`` or ``"lines"``, its
    tokens per byte or per line of its own training text. The merge is the
    pair most frequent in the training text of the costliest language, applied
    to every language. The first ``parity_start`` merges are classical (the
    hybrid variant). A ``"merge"`` event then carries a sixth item, the
    language the merge was chosen for (``None`` for a classical merge), and its
    count is the pair's count in that language's training text (all languages'
    for a classical merge). See ``docs/parity.md`` for the formulas.

    ``picky_threshold`` (PickyBPE, Chizhov et al. 2024; byte-level only): after
    each merge, each of its two parts that is not a byte is removed when the
    share of its occurrences the merge consumed (its IoS) is at least this
    threshold τ in (0, 1]; its occurrences left split back into the tokens it
    was made of, and merging goes on until the vocabulary is full. The result
    is a ``"PickyBPE"`` model that encodes by replaying the merges and removals
    (an ordinary BPE when nothing was removed); ``"removal"`` events report each
    removal. See ``docs/picky.md``.
    """
    picky = check_picky(
        picky_threshold, byte_level=byte_level,
        parity=(languages is not None or parity_dev is not None or parity_measure is not None
                or parity_start != 0),
        superword=superword_start is not None)
    if superword_start is not None:
        from ._train_superbpe import train_superbpe

        if (languages is not None or parity_dev is not None or parity_measure is not None
                or parity_start != 0):
            raise ConfigError("superword_start= (SuperBPE) and languages=/parity_dev=/"
                              "parity_measure=/parity_start= (parity-aware BPE) are two "
                              "trainers; use one of them")

        return train_superbpe(
            train_bpe, files, texts=texts, vocab_size=vocab_size, superword_start=superword_start,
            superword_words=superword_words, special_tokens=special_tokens,
            min_frequency=min_frequency, max_token_length=max_token_length, errors=errors,
            verbose=verbose, trace=trace, progress=progress, stream=stream, callback=callback,
            pattern=pattern, byte_level=byte_level, end_of_word_suffix=end_of_word_suffix,
            continuing_subword_prefix=continuing_subword_prefix, limit_alphabet=limit_alphabet,
            unk_token=unk_token, lowercase=lowercase, normalizer=normalizer,
            text_field=text_field, input_sentence_size=input_sentence_size,
            sample_bytes=sample_bytes, counts=counts)
    out = stream or sys.stderr
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
    plan = parity_plan(
        languages, parity_dev, parity_measure, parity_start,
        merges=vocab_size - 256 - len(specials),
        corpus_given=files is not None or texts is not None or counts is not None,
        byte_level=byte_level, sampled=input_sentence_size is not None or sample_bytes is not None,
    )
    if plan is None and files is None and texts is None and counts is None:
        raise ConfigError("give files (paths, folders or globs) or texts=[...] to train on")

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

    events = TrainingEvents(verbose, progress, out, callback, "merges")
    sample = LineSample.of(input_sentence_size, sample_bytes, sample_seed)
    target = vocab_size - len(specials)
    t1 = time.monotonic()
    if plan is not None:
        trained, _ = train_parity(
            plan, components, errors=errors, text_field=text_field, sample=sample,
            verbose=verbose, out=out, vocab_size=target, min_frequency=min_frequency,
            max_token_length=max_token_length, trace=trace if verbose or callback else 0,
            events=events if events.wanted else None)
    elif picky is not None:
        counter = count_corpus(components, files, texts, errors, verbose=verbose, out=out,
                               text_field=text_field, counts=counts, sample=sample)
        t1 = time.monotonic()
        return _finish_picky(
            counter.train_picky_bpe(target, min_frequency, max_token_length, picky,
                                    trace if verbose or callback else 0,
                                    events if events.wanted else None),
            events, components, decoder, specials, vocab_size, min_frequency, verbose, out, t1)
    else:
        counter = count_corpus(components, files, texts, errors, verbose=verbose, out=out,
                               text_field=text_field, counts=counts, sample=sample)
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
    comps: dict[str, Any] = dict(components, decoder=decoder, post_processor=None)
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


def _finish_picky(trained: _core.TrainedPicky, events: TrainingEvents,
                  components: dict[str, Any], decoder: dict[str, Any], specials: list[str],
                  vocab_size: int, min_frequency: int, verbose: bool, out: TextIO,
                  t1: float) -> Tokenizer:
    """The tokenizer of a PickyBPE training: its model, then the special tokens."""
    learned = trained.vocab_len - 256
    events.close(learned)
    added = [
        {"id": trained.vocab_len + i, "content": s, "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": False, "special": True}
        for i, s in enumerate(specials)
    ]
    comps: dict[str, Any] = dict(components, decoder=decoder, post_processor=None)
    core = _core.Tokenizer.from_trained_picky(trained, json.dumps(comps), json.dumps(added))
    tok = Tokenizer(core)
    if trained.stopped_by_guard and tok.vocab_size < vocab_size:
        import warnings

        from .errors import VocabShortfallWarning

        warnings.warn(VocabShortfallWarning(
            f"vocab_size={vocab_size:,} asked for, {tok.vocab_size:,} trained: PickyBPE made "
            f"{MAX_MERGES_PER_SLOT} merges per vocabulary slot while removals kept freeing "
            f"slots; raise picky_threshold", vocab_size, tok.vocab_size), stacklevel=3)
    else:
        warn_shortfall(vocab_size, tok.vocab_size, min_frequency)
    if verbose:
        print(f"learned {learned:,} tokens with {trained.removals:,} removals in "
              f"{time.monotonic() - t1:.1f} s; vocabulary {tok.vocab_size:,} tokens", file=out)
    return tok
