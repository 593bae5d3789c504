"""WordPiece training (BERT): corpora in, a BERT-style :class:`Tokenizer` out.

Reached through ``tokensmith.train(..., model="wordpiece")``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TextIO

from ._limits import check_min_frequency, check_token_list, check_vocab_size, warn_shortfall
from ._line_sample import LineSample
from ._progress import TrainingEvents
from .corpus import Files, count_corpus
from .errors import ConfigError, VocabSizeError
from .tokenizer import Tokenizer

if TYPE_CHECKING:
    from .counts import WordCounts

__all__ = ["train_wordpiece"]

BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def train_wordpiece(
    files: Files | None = None,
    *,
    texts: Iterable[str] | None = None,
    vocab_size: int = 30_000,
    min_frequency: int = 2,
    special_tokens: Sequence[str] = BERT_SPECIALS,
    unk_token: str = "[UNK]",
    cls_token: str = "[CLS]",
    sep_token: str = "[SEP]",
    limit_alphabet: int | None = 1000,
    continuing_subword_prefix: str = "##",
    lowercase: bool = True,
    strip_accents: bool | None = None,
    clean_text: bool = True,
    handle_chinese_chars: bool = True,
    max_input_chars_per_word: int = 100,
    score: Literal["likelihood", "ratio", "frequency"] = "likelihood",
    candidates: int | None = None,
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
    """Train a WordPiece tokenizer the way BERT's is built.

    Text goes through ``BertNormalizer`` (``lowercase``, ``strip_accents`` —
    ``None`` follows ``lowercase`` —, ``clean_text``, ``handle_chinese_chars``)
    and ``BertPreTokenizer``; words start as characters, continuations spelled
    with ``continuing_subword_prefix``. Each step merges the adjacent pair
    ``(a, b)`` that most raises the likelihood of the corpus under a unigram
    model of its symbols (Schuster & Nakajima 2012), counted on the current
    segmentation: with ``k`` the pair's count, ``c_a``, ``c_b`` its symbols'
    counts, ``N`` all symbols and ``f(x) = x ln x``,
    ``gain = f(k) + f(c_a - k) - f(c_a) + f(c_b - k) - f(c_b) + f(N) - f(N - k)``.
    Ties go to the higher pair count, then the smaller ``(left id, right id)``.
    Pairs seen fewer than ``min_frequency`` times never merge.

    The tokenizer encodes by greedy longest match (MaxMatch), not by replaying
    merges, so whenever merging stops the trainer checks the vocabulary with it:
    the words are re-segmented as the tokenizer would segment them and merging
    goes on from those counts; in a full vocabulary, learned tokens that MaxMatch
    emits on no training word (merged away into longer ones: ``descri`` once
    ``description`` and ``describe`` exist) leave it, and merges fill their
    slots. Training ends when a check takes nothing out and no merge follows;
    slots no merge could fill go back to those tokens. On English this turns
    1.1% more tokens than ``tokenizers`` into 0.2% fewer (see
    ``docs/wordpiece_training.md``).

    ``candidates`` (a vocabulary size, counted as ``vocab_size`` is) learns that
    many tokens first and then prunes them to ``vocab_size``: in ten rounds, the
    learned tokens whose loss adds the fewest tokens to the training words (as
    MaxMatch segments them, each word weighted by its count) leave. The
    likelihood gain favours chains of rare strings seen only together (its gain
    grows with ``ln(N / k)``); they save few tokens, and pruning trades them for
    pieces the tokenizer uses more. By default (``None``) the trainer learns
    twice ``vocab_size`` when the vocabulary is at most 15% of the distinct
    words, where this lifted held-out compression 2.1% on English and on
    the 13-language PUD text at 8,000 tokens, and prunes nothing above that,
    where pruning kept whole training words over pieces that generalise (held-out
    compression fell 0.3% on English and code at 32,000); ``candidates=
    vocab_size`` turns it off. Only with ``score="likelihood"``.

    ``score="ratio"`` uses the textbook shorthand ``k / (c_a * c_b)`` instead:
    it leaves out how often the pair occurs, so pairs of rare symbols merge
    first (every pair of two symbols seen once scores 1) and the vocabulary
    fills with rare strings; kept for teaching, it compresses far worse.
    ``score="frequency"`` merges the most frequent pair, as BPE does (and
    ``tokenizers``' WordPieceTrainer): the same vocabulary as ``tokenizers``
    trains. Neither of these two runs the MaxMatch checks.

    ``vocab_size`` counts everything: the special tokens (ids 0, 1, … in the
    order given), the alphabet (the ``limit_alphabet`` most frequent
    characters, word-initial and continuation forms; words with any other
    character are left out, since WordPiece could only encode them as
    ``unk_token``) and the learned tokens. With ``cls_token`` and
    ``sep_token`` among the special tokens the tokenizer adds them as BERT
    does (``[CLS] A [SEP]``, ``[CLS] A [SEP] B [SEP]``).
    """
    out = stream or sys.stderr
    if other:
        raise ConfigError(
            f"{', '.join(sorted(other))}: not an option of WordPiece training (BPE options such "
            f"as pattern, byte_level or max_token_length do not apply)"
        )
    if files is None and texts is None and counts is None:
        raise ConfigError("give files (paths, folders or globs) or texts=[...] to train on")
    check_vocab_size(vocab_size)
    check_min_frequency(min_frequency)
    if errors not in ("strict", "replace", "skip"):
        raise ConfigError(f"errors must be 'strict', 'replace' or 'skip', not {errors!r}")
    if limit_alphabet is not None and limit_alphabet < 1:
        raise ConfigError("limit_alphabet must be at least 1 (or None for no limit)")
    if max_input_chars_per_word < 1:
        raise ConfigError("max_input_chars_per_word must be at least 1")
    if score not in _SCORE_LINES:
        raise ConfigError(f"score must be 'likelihood', 'ratio' or 'frequency', not {score!r}")
    grow_to = _candidates(candidates, vocab_size, score)
    specials = check_token_list(special_tokens)
    if not unk_token:
        raise ConfigError("WordPiece needs an unk_token for the words it cannot split")
    if unk_token not in specials:
        specials.append(unk_token)
    if vocab_size <= len(specials):
        raise VocabSizeError(
            f"vocab_size={vocab_size} leaves no room beside the {len(specials)} special tokens"
        )

    normalizer = {"type": "BertNormalizer", "clean_text": clean_text,
                  "handle_chinese_chars": handle_chinese_chars,
                  "strip_accents": strip_accents, "lowercase": lowercase}
    pre = {"type": "BertPreTokenizer"}
    counter = count_corpus({"normalizer": normalizer, "pre_tokenizer": pre}, files, texts,
                           errors, verbose=verbose, out=out, what="words",
                           text_field=text_field, counts=counts,
                           sample=LineSample.of(input_sentence_size, sample_bytes, sample_seed))

    events = TrainingEvents(verbose, progress, out, callback, "tokens")

    t1 = time.monotonic()
    if verbose and trace:
        print(_SCORE_LINES[score], file=out)
    tokens, alphabet, merges = counter.train_wordpiece(
        vocab_size - len(specials),
        min_frequency,
        limit_alphabet,
        continuing_subword_prefix,
        max_input_chars_per_word,
        trace if verbose or callback else 0,
        events if events.wanted else None,
        score,
        None if grow_to is None else grow_to - len(specials),
    )
    learned = len(tokens) - alphabet
    events.close(learned)
    vocab: dict[str, int] = {s: i for i, s in enumerate(specials)}
    for t in tokens:
        vocab.setdefault(t, len(vocab))
    del tokens  # (what is built next is on top of what is still held: the peak)
    text = json.dumps(_spec(vocab, specials, normalizer, pre, unk_token, cls_token, sep_token,
                            continuing_subword_prefix, max_input_chars_per_word),
                      ensure_ascii=False)
    del vocab
    from .formats.hf_json import loads

    tok = loads(text)
    del text
    warn_shortfall(vocab_size, tok.vocab_size, min_frequency)
    if verbose:
        print(f"kept {learned:,} learned tokens ({merges:,} merges) in "
              f"{time.monotonic() - t1:.1f} s; vocabulary {tok.vocab_size:,} tokens", file=out)
    return tok


_SCORE_LINES = {
    "likelihood": "merging by likelihood gain: the pair whose merge most raises the corpus "
                  "log-likelihood (count-weighted; score='ratio' for the textbook ratio); "
                  "then checks with MaxMatch: the corpus re-segmented as the tokenizer "
                  "would, tokens it never emits replaced by more merges; a vocabulary "
                  "small beside the words (or one given candidates=) is learned larger "
                  "and pruned to the tokens MaxMatch needs most",
    "ratio": "merging by the ratio count(ab) / (count(a) * count(b)): pairs of rare symbols "
             "first (score='likelihood', the default, weighs in how often a pair occurs)",
    "frequency": "merging by pair count, as BPE does (score='likelihood', the default, "
                 "weighs in how much more often a pair occurs than by chance)",
}


def _spec(vocab: dict[str, int], specials: list[str], normalizer: dict[str, Any],
          pre: dict[str, Any], unk: str, cls: str, sep: str, prefix: str,
          max_chars: int) -> dict[str, Any]:
    added = [
        {"id": vocab[s], "content": s, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}
        for s in specials
    ]
    post = None
    if cls in vocab and sep in vocab and cls in specials and sep in specials:
        post = {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": cls, "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": sep, "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": cls, "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": sep, "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": sep, "type_id": 1}}],
            "special_tokens": {t: {"id": t, "ids": [vocab[t]], "tokens": [t]} for t in (cls, sep)},
        }
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": normalizer,
        "pre_tokenizer": pre,
        "post_processor": post,
        "decoder": {"type": "WordPiece", "prefix": prefix, "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": unk, "continuing_subword_prefix": prefix,
                  "max_input_chars_per_word": max_chars, "vocab": vocab},
    }


def _candidates(candidates: int | None, vocab_size: int, score: str) -> int | None:
    """How many tokens to learn before pruning to ``vocab_size`` (that many: no pruning;
    None: the trainer's choice)."""
    if candidates is None:
        return None
    if isinstance(candidates, bool) or not isinstance(candidates, int):
        raise ConfigError(f"candidates must be an int (a vocabulary size), not {candidates!r}")
    if candidates < vocab_size:
        raise ConfigError(
            f"candidates={candidates:,} is below vocab_size={vocab_size:,}: the trainer learns "
            f"the candidates first and prunes them to vocab_size"
        )
    if candidates > vocab_size and score != "likelihood":
        raise ConfigError(
            f"candidates applies to score='likelihood' only (score={score!r} trains the "
            f"vocabulary its merges make)"
        )
    return candidates
