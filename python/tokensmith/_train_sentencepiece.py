"""SentencePiece-style training: Unigram (EM + pruning) and BPE on raw text.

Reached through ``tokensmith.train(..., model="unigram")`` and
``tokensmith.train(..., model="sentencepiece-bpe")``. Both read text the way
``spm_train`` does: every line is a sentence, normalized by SentencePiece's
rules (``normalization_rule_name``, :mod:`tokensmith._sp_charsmap`); spaces
become ``▁`` and a ``▁`` starts every word (no other pre-tokenization, so
Chinese and Japanese train without word segmentation). The result is a
SentencePiece model: it saves as a ``.model`` file that the ``sentencepiece``
library loads and encodes with exactly as tokensmith does, and as
``tokenizer.json``.
"""

from __future__ import annotations

import base64
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TextIO

from ._limits import check_token_list, check_vocab_size
from ._line_sample import LineSample
from ._progress import TrainingEvents, format_em_step
from ._sp_charsmap import charsmap, check_rule_name
from .corpus import Files, count_corpus
from .errors import ConfigError, VocabSizeError
from .formats import sentencepiece as spm
from .tokenizer import Tokenizer

if TYPE_CHECKING:
    from .counts import WordCounts

__all__ = ["train_unigram", "train_sentencepiece_bpe", "format_em_step"]

SPACE = "\u2581"


def _count(
    files: Files | None,
    texts: Iterable[str] | None,
    *,
    add_dummy_prefix: bool,
    remove_extra_whitespaces: bool,
    treat_whitespace_as_suffix: bool,
    rule_name: str,
    user_defined_symbols: Sequence[str],
    errors: str,
    verbose: bool,
    out: TextIO,
    text_field: str = "text",
    counts: WordCounts | None = None,
    sample: LineSample | None = None,
) -> Any:
    """Words as SentencePiece reads them: each line normalized on its own (by the
    rules of ``rule_name``, user-defined symbols kept as they are), cut before `▁`."""
    rules = charsmap(rule_name)
    normalizer: dict[str, Any] = {
        "type": "SentencePiece",
        "precompiled_charsmap": base64.b64encode(rules).decode("ascii") if rules else None,
        "add_dummy_prefix": add_dummy_prefix,
        "remove_extra_whitespaces": remove_extra_whitespaces,
        "escape_whitespaces": True,
        "treat_whitespace_as_suffix": treat_whitespace_as_suffix,
    }
    pre = {
        "type": "Split",
        "pattern": {"String": SPACE},
        "behavior": "MergedWithPrevious" if treat_whitespace_as_suffix else "MergedWithNext",
        "invert": False,
    }
    if user_defined_symbols:
        normalizer["user_defined_symbols"] = list(user_defined_symbols)
    components: dict[str, Any] = {
        "normalizer": normalizer, "pre_tokenizer": pre, "lines": True,
        "space_cut": _space_cut(add_dummy_prefix, remove_extra_whitespaces,
                                treat_whitespace_as_suffix)}
    if rule_name != "identity":  # (for messages: the charsmap itself says it to the counter)
        components["normalization_rule_name"] = rule_name
    return count_corpus(components, files, texts, errors, verbose=verbose, out=out,
                        what="words", text_field=text_field, counts=counts, sample=sample)


def _space_cut(add_dummy_prefix: bool, remove_extra_whitespaces: bool,
               treat_whitespace_as_suffix: bool) -> str | None:
    """Where a long line may be cut at a lone space so that each part, normalized as a
    sentence of its own, gives the words the whole line gives: ``"before"`` or
    ``"after"`` the space, or ``None`` (nowhere).

    With both whitespace rules on, a part's leading space is dropped and the dummy
    prefix (or suffix) puts the ``▁`` back; with both off, the space stays with the word
    it belongs to (the next one, or the one before in suffix mode). One rule without
    the other would lose or double a ``▁`` at the cut. The normalization rules keep
    this true: no rule's key holds a space (no rule reads across the cut), and a
    replacement that starts with a space (``¨`` → ``" ̈"``) comes after the cut's
    space whole or cut, so it loses its space (both rules on) or keeps it (both off)
    alike."""
    if add_dummy_prefix and remove_extra_whitespaces:
        return "before"
    if not add_dummy_prefix and not remove_extra_whitespaces:
        return "after" if treat_whitespace_as_suffix else "before"
    return None


def _check_common(vocab_size: Any, character_coverage: float, max_piece_length: int,
                  errors: str, normalization_rule_name: Any) -> None:
    check_vocab_size(vocab_size)
    check_rule_name(normalization_rule_name)
    if not 0.0 < character_coverage <= 1.0:
        raise ConfigError(f"character_coverage must be in (0, 1], got {character_coverage!r}; "
                          "use 1.0 for languages with few characters, 0.9995 (default) for "
                          "Chinese or Japanese")
    if max_piece_length < 1:
        raise ConfigError("max_piece_length must be at least 1")
    if errors not in ("strict", "replace", "skip"):
        raise ConfigError(f"errors must be 'strict', 'replace' or 'skip', not {errors!r}")


def _meta(
    unk_token: str,
    bos_token: str | None,
    eos_token: str | None,
    pad_token: str | None,
    special_tokens: Sequence[str],
    user_defined_symbols: Sequence[str],
    byte_fallback: bool,
) -> list[tuple[str, int]]:
    """The pieces before the learned ones: (piece, type), in id order."""
    if not unk_token:
        raise ConfigError("a SentencePiece model needs an unk_token")
    meta: list[tuple[str, int]] = [(unk_token, spm.UNKNOWN)]
    controls = check_token_list(special_tokens)
    for t in (bos_token, eos_token, pad_token, *controls):
        if t:
            meta.append((t, spm.CONTROL))
    for t in check_token_list(user_defined_symbols, "user_defined_symbols"):
        meta.append((t, spm.USER_DEFINED))
    names = [m[0] for m in meta]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise ConfigError(f"{dup!r} is given twice among the special tokens and symbols")
    if byte_fallback:
        meta.extend((f"<0x{b:02X}>", spm.BYTE) for b in range(256))
    return meta


def _build(
    model_type: int,
    meta: list[tuple[str, int]],
    learned: list[tuple[str, float]],
    *,
    vocab_size: int,
    byte_fallback: bool,
    character_coverage: float,
    max_piece_length: int,
    split_by_unicode_script: bool,
    split_by_number: bool,
    split_digits: bool,
    treat_whitespace_as_suffix: bool,
    add_dummy_prefix: bool,
    remove_extra_whitespaces: bool,
    normalization_rule_name: str,
    extra: dict[str, Any],
) -> Tokenizer:
    pieces = [spm.SentencePiece(piece=p, score=0.0, type=t) for p, t in meta]
    taken = {p for p, _ in meta}
    pieces.extend(
        spm.SentencePiece(piece=p, score=float(s), type=spm.NORMAL)
        for p, s in learned if p not in taken
    )

    def find(kind: int, name: str | None) -> int:
        return next((i for i, (p, t) in enumerate(meta) if t == kind and p == name), -1)

    unk_piece = meta[0][0]
    control = [p for p, t in meta if t == spm.CONTROL]
    trainer = spm.TrainerSpec(
        model_type=model_type,
        vocab_size=len(pieces),
        character_coverage=character_coverage,
        max_sentencepiece_length=max_piece_length,
        split_by_unicode_script=split_by_unicode_script,
        split_by_number=split_by_number,
        split_digits=split_digits,
        treat_whitespace_as_suffix=treat_whitespace_as_suffix,
        byte_fallback=byte_fallback,
        unk_id=0,
        unk_piece=unk_piece,
        bos_id=find(spm.CONTROL, extra.get("bos")),
        eos_id=find(spm.CONTROL, extra.get("eos")),
        pad_id=find(spm.CONTROL, extra.get("pad")),
        **{k: v for k, v in extra.items() if k not in ("bos", "eos", "pad")},
    )
    for name, field in (("bos", "bos_piece"), ("eos", "eos_piece"), ("pad", "pad_piece")):
        if extra.get(name):
            setattr(trainer, field, extra[name])
    extra_control = [p for p in control if p not in (extra.get("bos"), extra.get("eos"),
                                                      extra.get("pad"))]
    if extra_control:
        trainer.control_symbols = extra_control
    user = [p for p, t in meta if t == spm.USER_DEFINED]
    if user:
        trainer.user_defined_symbols = user
    normalizer = spm.NormalizerSpec(
        name=normalization_rule_name,
        precompiled_charsmap=charsmap(normalization_rule_name),
        add_dummy_prefix=add_dummy_prefix,
        remove_extra_whitespaces=remove_extra_whitespaces,
        escape_whitespaces=True,
    )
    proto = spm.ModelProto(pieces=pieces, trainer_spec=trainer, normalizer_spec=normalizer)
    return spm.loads(proto.serialize())


def train_unigram(
    files: Files | None = None,
    *,
    texts: Iterable[str] | None = None,
    vocab_size: int = 8000,
    character_coverage: float = 0.9995,
    max_piece_length: int = 16,
    seed_size: int = 1_000_000,
    shrinking_factor: float = 0.75,
    num_sub_iterations: int = 2,
    byte_fallback: bool = False,
    unk_token: str = "<unk>",
    bos_token: str | None = "<s>",
    eos_token: str | None = "</s>",
    pad_token: str | None = None,
    special_tokens: Sequence[str] = (),
    user_defined_symbols: Sequence[str] = (),
    split_by_unicode_script: bool = True,
    split_by_number: bool = True,
    split_digits: bool = False,
    treat_whitespace_as_suffix: bool = False,
    add_dummy_prefix: bool = True,
    remove_extra_whitespaces: bool = True,
    normalization_rule_name: Literal["nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf",
                                     "identity"] = "nmt_nfkc",
    hard_vocab_limit: bool = True,
    errors: Literal["strict", "replace", "skip"] = "strict",
    text_field: str = "text",
    input_sentence_size: int | None = None,
    sample_bytes: int | None = None,
    sample_seed: int = 0,
    counts: WordCounts | None = None,
    verbose: bool = False,
    progress: bool | None = None,
    stream: TextIO | None = None,
    callback: Callable[[str, tuple[Any, ...]], None] | None = None,
    **other: Any,
) -> Tokenizer:
    """Train a Unigram language-model tokenizer (Kudo 2018) as ``spm_train
    --model_type=unigram`` does, with the same option names.

    ``vocab_size`` counts every piece: ``unk_token`` (id 0), ``bos_token``,
    ``eos_token``, ``pad_token`` and ``special_tokens`` (control pieces, never
    found in text), ``user_defined_symbols`` (always kept whole in text), the
    256 ``<0xXX>`` byte pieces with ``byte_fallback``, and the learned pieces.
    The characters that cover ``character_coverage`` of the text are always
    pieces; rarer ones encode as ``unk_token`` (or as bytes with
    ``byte_fallback``). See the module :mod:`tokensmith._train_sentencepiece`
    and the README for the algorithm. ``verbose`` prints each EM step
    (pieces, likelihood, corpus length in tokens) and a progress bar.

    ``normalization_rule_name`` is SentencePiece's: ``"nmt_nfkc"`` (the default,
    as ``spm_train``'s) applies NFKC, maps odd whitespace to a space and removes
    control characters; ``"nfkc"`` is NFKC alone; ``"nmt_nfkc_cf"`` and
    ``"nfkc_cf"`` add case folding; ``"identity"`` leaves text as it is. The
    rules are stored in the model (see :mod:`tokensmith._sp_charsmap`), which
    applies them when it encodes, in tokensmith and in ``sentencepiece`` alike.
    """
    if other:
        raise ConfigError(
            f"{', '.join(sorted(other))}: not an option of Unigram training (see "
            f"help(tokensmith.train) for the options of each model)"
        )
    out = stream or sys.stderr
    _check_common(vocab_size, character_coverage, max_piece_length, errors,
                  normalization_rule_name)
    if not 0.0 < shrinking_factor < 1.0:
        raise ConfigError(f"shrinking_factor must be between 0 and 1, got {shrinking_factor!r}")
    if seed_size < 1 or num_sub_iterations < 1:
        raise ConfigError("seed_size and num_sub_iterations must be at least 1")
    meta = _meta(unk_token, bos_token, eos_token, pad_token, special_tokens,
                 user_defined_symbols, byte_fallback)
    if vocab_size <= len(meta):
        raise VocabSizeError(
            f"vocab_size={vocab_size} leaves no room for learned pieces beside the {len(meta)} "
            f"special, user-defined and byte pieces; use more than {len(meta)}"
        )
    counter = _count(files, texts, add_dummy_prefix=add_dummy_prefix,
                     remove_extra_whitespaces=remove_extra_whitespaces,
                     treat_whitespace_as_suffix=treat_whitespace_as_suffix,
                     rule_name=normalization_rule_name,
                     user_defined_symbols=user_defined_symbols,
                     errors=errors, verbose=verbose, out=out, text_field=text_field,
                     counts=counts,
                     sample=LineSample.of(input_sentence_size, sample_bytes, sample_seed))
    events = TrainingEvents(verbose, progress, out, callback, "‰ of pruning")
    t1 = time.monotonic()
    learned, dropped = counter.train_unigram(
        vocab_size - len(meta), character_coverage, max_piece_length, seed_size,
        shrinking_factor, num_sub_iterations, hard_vocab_limit, split_by_unicode_script,
        split_by_number, split_digits, treat_whitespace_as_suffix, False, events,
    )
    events.close(1000)
    tok = _build(
        spm.UNIGRAM, meta, learned, vocab_size=vocab_size, byte_fallback=byte_fallback,
        character_coverage=character_coverage, max_piece_length=max_piece_length,
        split_by_unicode_script=split_by_unicode_script, split_by_number=split_by_number,
        split_digits=split_digits, treat_whitespace_as_suffix=treat_whitespace_as_suffix,
        add_dummy_prefix=add_dummy_prefix, remove_extra_whitespaces=remove_extra_whitespaces,
        normalization_rule_name=normalization_rule_name,
        extra={"bos": bos_token, "eos": eos_token, "pad": pad_token,
               "seed_sentencepiece_size": seed_size, "shrinking_factor": shrinking_factor,
               "num_sub_iterations": num_sub_iterations},
    )
    if verbose:
        where = "bytes" if byte_fallback else (
            f"{unk_token} (byte_fallback=True or character_coverage=1.0 keeps them)")
        note = f"; {dropped:,} rare characters left to {where}"
        print(f"learned {len(learned):,} pieces in {time.monotonic() - t1:.1f} s; vocabulary "
              f"{tok.vocab_size:,} pieces{note if dropped else ''}", file=out)
    return tok


def train_sentencepiece_bpe(
    files: Files | None = None,
    *,
    texts: Iterable[str] | None = None,
    vocab_size: int = 8000,
    character_coverage: float = 0.9995,
    max_piece_length: int = 16,
    byte_fallback: bool = False,
    unk_token: str = "<unk>",
    bos_token: str | None = "<s>",
    eos_token: str | None = "</s>",
    pad_token: str | None = None,
    special_tokens: Sequence[str] = (),
    user_defined_symbols: Sequence[str] = (),
    split_by_unicode_script: bool = True,
    split_by_number: bool = True,
    split_digits: bool = False,
    treat_whitespace_as_suffix: bool = False,
    add_dummy_prefix: bool = True,
    remove_extra_whitespaces: bool = True,
    normalization_rule_name: Literal["nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf",
                                     "identity"] = "nmt_nfkc",
    hard_vocab_limit: bool = True,
    errors: Literal["strict", "replace", "skip"] = "strict",
    text_field: str = "text",
    input_sentence_size: int | None = None,
    sample_bytes: int | None = None,
    sample_seed: int = 0,
    counts: WordCounts | None = None,
    verbose: bool = False,
    trace: int = 20,
    progress: bool | None = None,
    stream: TextIO | None = None,
    callback: Callable[[str, tuple[Any, ...]], None] | None = None,
    **other: Any,
) -> Tokenizer:
    """Train SentencePiece-style BPE (``spm_train --model_type=bpe``) on raw text.

    Words are ``▁``-prefixed runs between spaces, as characters; each step
    merges the most frequent adjacent pair whose result may be a piece (one
    script, ``▁`` only in front, at most ``max_piece_length`` characters);
    ties go, as in ``spm_train``, to the shorter piece, then the smaller
    string. A piece's score is minus its merge rank, so the saved ``.model``
    encodes in ``sentencepiece`` exactly as here; the kept characters follow
    the merged pieces, most frequent first. ``vocab_size``, the
    special pieces and ``normalization_rule_name`` are as in :func:`train_unigram`.
    """
    if other:
        raise ConfigError(
            f"{', '.join(sorted(other))}: not an option of SentencePiece BPE training (see "
            f"help(tokensmith.train) for the options of each model)"
        )
    out = stream or sys.stderr
    _check_common(vocab_size, character_coverage, max_piece_length, errors,
                  normalization_rule_name)
    meta = _meta(unk_token, bos_token, eos_token, pad_token, special_tokens,
                 user_defined_symbols, byte_fallback)
    if vocab_size <= len(meta):
        raise VocabSizeError(
            f"vocab_size={vocab_size} leaves no room for learned pieces beside the {len(meta)} "
            f"special, user-defined and byte pieces; use more than {len(meta)}"
        )
    counter = _count(files, texts, add_dummy_prefix=add_dummy_prefix,
                     remove_extra_whitespaces=remove_extra_whitespaces,
                     treat_whitespace_as_suffix=treat_whitespace_as_suffix,
                     rule_name=normalization_rule_name,
                     user_defined_symbols=user_defined_symbols,
                     errors=errors, verbose=verbose, out=out, text_field=text_field,
                     counts=counts,
                     sample=LineSample.of(input_sentence_size, sample_bytes, sample_seed))
    events = TrainingEvents(verbose, progress, out, callback, "merges")
    want = vocab_size - len(meta)
    # a merged string can arise twice (ab+c, a+bc): ask for a few more, keep the first
    slack = 16 + want // 100
    t1 = time.monotonic()
    alphabet, merged = counter.train_sentencepiece_bpe(
        want + slack, character_coverage, max_piece_length, split_by_unicode_script,
        split_by_number, split_digits, treat_whitespace_as_suffix, False,
        trace if verbose or callback else 0, events,
    )
    if len(alphabet) > want:
        raise VocabSizeError(
            f"vocab_size={vocab_size} cannot hold the {len(alphabet)} characters that cover "
            f"{character_coverage:.4%} of the text plus {len(meta)} special pieces; raise "
            f"vocab_size to at least {len(alphabet) + len(meta) + 1} or lower character_coverage"
        )
    taken = {p for p, _ in meta}
    chars = set(alphabet)
    pieces: list[str] = []
    seen: set[str] = set()
    for p, _n in merged:
        if p in seen or p in taken or p in chars:
            continue
        seen.add(p)
        pieces.append(p)
        if len(pieces) + len(alphabet) >= want:
            break
    events.close(len(pieces))
    if len(pieces) + len(alphabet) < want and hard_vocab_limit:
        raise VocabSizeError(
            f"the corpus gives only {len(pieces) + len(alphabet) + len(meta)} pieces, fewer than "
            f"vocab_size={vocab_size}; lower vocab_size, train on more text, or pass "
            f"hard_vocab_limit=False"
        )
    # scores: minus the merge rank; the characters (most frequent first) after them
    learned = [(p, -float(i)) for i, p in enumerate(pieces)]
    learned.extend((c, -float(len(pieces) + i)) for i, c in enumerate(alphabet))
    tok = _build(
        spm.BPE, meta, learned, vocab_size=vocab_size, byte_fallback=byte_fallback,
        character_coverage=character_coverage, max_piece_length=max_piece_length,
        split_by_unicode_script=split_by_unicode_script, split_by_number=split_by_number,
        split_digits=split_digits, treat_whitespace_as_suffix=treat_whitespace_as_suffix,
        add_dummy_prefix=add_dummy_prefix, remove_extra_whitespaces=remove_extra_whitespaces,
        normalization_rule_name=normalization_rule_name,
        extra={"bos": bos_token, "eos": eos_token, "pad": pad_token},
    )
    if verbose:
        print(f"learned {len(pieces):,} merged pieces in {time.monotonic() - t1:.1f} s; "
              f"vocabulary {tok.vocab_size:,} pieces", file=out)
    return tok

