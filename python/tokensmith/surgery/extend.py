"""Extending a vocabulary by continued training on new text.

Every old token keeps its id, its bytes and (for BPE) its merge; the new
tokens take the ids after the last one. How each family learns them:

* **BPE** (byte-level, character-level, SentencePiece BPE): the new text is
  cut by the tokenizer's own normalizer and pre-tokenizer and counted; each
  distinct piece is first encoded by the existing model, and pairs are
  counted on that segmentation. The merge loop of the trainer (highest count
  first, ties to the smaller ids) then appends merges after the old ones. So
  on old text the new merges come last: a piece whose old encoding contains
  no pair a new merge joins encodes exactly as before. Characters the model
  has no token for (its unknown token, SentencePiece byte-fallback pieces)
  become new symbols when they are among the most frequent characters that
  cover ``character_coverage`` of the new text; the rest stay as they were.
  For rank files (tiktoken) and SentencePiece BPE the merge priority is the
  new token's rank or score: below every old one, in the order learned.
* **Unigram**: a Unigram model is trained on the new text alone (EM and
  pruning, :func:`tokensmith.train`), and its pieces that the old vocabulary
  lacks are added, most probable first. Their scores are put on the old
  model's scale: shifted by the median difference between the two models'
  scores of the pieces they share, so a new piece competes with old pieces as
  it did in the model that learned it. Old text changes only where a new
  piece gives a more probable segmentation.
* **WordPiece**: a WordPiece vocabulary is learned on the new text with the
  same normalization and the trainer's likelihood score, and its tokens the
  old vocabulary lacks are added in the order learned. Greedy longest match
  changes old text only where a new token is a longer match.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal, TextIO

from .._limits import check_min_frequency
from .._progress import TrainingEvents
from ..corpus import Files, count_corpus
from ..errors import ConfigError, NotEnoughTextError, VocabLimitError
from . import _base, _scripts
from ._append import NewToken, append_tokens

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer

__all__ = ["extend"]

SPACE = "\u2581"
UNKNOWN, BYTE = 2, 6
Errors = Literal["strict", "replace", "skip"]  # what to do with undecodable bytes


def extend(
    tok: Tokenizer,
    files: Files | None = None,
    *,
    texts: Iterable[str] | None = None,
    add: int | None = None,
    vocab_size: int | None = None,
    min_frequency: int = 2,
    max_token_length: int | None = None,
    character_coverage: float = 0.9995,
    protect: Iterable[str] | None = None,
    scripts: Iterable[str | tuple[int, int]] | None = None,
    strict: bool = False,
    max_vocab: int | None = None,
    errors: Errors = "strict",
    verbose: bool = False,
    trace: int = 20,
    progress: bool | None = None,
    stream: TextIO | None = None,
    callback: Callable[[str, tuple[Any, ...]], None] | None = None,
) -> Tokenizer:
    """A new tokenizer with ``add`` more tokens (or ``vocab_size`` in all) learned
    on ``files`` and/or ``texts``; ``tok`` is unchanged (see the module text for
    how each model family learns them).

    ``protect`` is text whose ids must not change (English documents when
    extending for Chinese, say): no new token may join tokens of its words
    (BPE), or be part of its words (Unigram, WordPiece), so its ids stay the
    same; others are learned in their place. ``scripts`` (``["Han"]``, or
    ``(first, last)`` code point ranges; names in
    :data:`tokensmith.surgery._scripts.SCRIPTS`) keeps to new tokens that hold
    a character of those scripts: extending for Chinese leaves the tokens of
    any English in the new text out, so English keeps its ids.

    Fewer tokens are learned when the text runs out of pairs seen
    ``min_frequency`` times: a warning says so, or with ``strict=True``
    :class:`~tokensmith.errors.NotEnoughTextError`. ``max_vocab`` (a model's
    embedding rows) refuses a result larger than it with
    :class:`~tokensmith.errors.VocabLimitError`. ``verbose``, ``trace``,
    ``progress``, ``stream`` and ``callback`` report as :func:`tokensmith.train`
    does.
    """
    n = _how_many(tok, add, vocab_size, max_vocab)
    if not 0.0 < character_coverage <= 1.0:
        raise ConfigError(f"character_coverage must be in (0, 1], got {character_coverage!r}")
    check_min_frequency(min_frequency)
    out = stream or sys.stderr
    doc = _base.spec(tok)
    fam = _base.family(tok, doc)
    t0 = time.monotonic()
    report = dict(verbose=verbose, progress=progress, out=out, callback=callback)
    guarded = _documents(protect)
    spans = _scripts.ranges(scripts)
    if fam in ("unigram", "wordpiece"):
        # with text to protect, learn more: the pieces it contains are left out
        want = n if not guarded else 2 * n + 256
        if fam == "unigram":
            new = _unigram_tokens(tok, doc, files, texts, want, character_coverage, errors,
                                  report)
        else:
            new = _wordpiece_tokens(tok, doc, files, texts, want, min_frequency, errors, report)
        if spans:
            new = [t for t in new if _scripts.has_char_in(t.data.decode("utf-8"), spans)]
        new = _outside(tok, doc, fam, new, guarded)[:n]
    else:
        # protected text: the merge loop refuses tokens made of its tokens; a few
        # spare ones replace what the check below may still leave out
        want = n if not guarded else n + n // 16 + 32
        new = _bpe_tokens(tok, doc, fam, files, texts, want, min_frequency, max_token_length,
                          character_coverage, errors, trace, report, guarded, spans)
    if guarded:
        new = _spare(tok, new, guarded)
    new = new[:n]  # a prefix keeps the merge closure: tokens only build on earlier ones
    _enough(n, len(new), strict)
    result = append_tokens(tok, new)
    if verbose:
        print(f"extended {tok.vocab_size:,} -> {result.vocab_size:,} tokens "
              f"({len(new):,} new) in {time.monotonic() - t0:.1f} s", file=out)
    return result


def _documents(protect: Iterable[str] | None) -> list[str]:
    if protect is None:
        return []
    if isinstance(protect, str):
        raise ConfigError("protect must be an iterable of texts, not one string; wrap it: "
                          "protect=[text]")
    docs = list(protect)
    if not all(isinstance(d, str) for d in docs):
        raise ConfigError("protect must hold strings")
    return docs


def _spare(tok: Tokenizer, new: list[NewToken], guarded: list[str]) -> list[NewToken]:
    """``new`` without the tokens that still change the ids of ``guarded`` (and the
    tokens built on them), checked by encoding it, until it keeps its ids (leaving
    a token out can let another apply)."""
    before = tok.encode_batch(guarded, disallowed_special=())
    first = tok.vocab_size
    for _ in range(16):
        after = append_tokens(tok, new).encode_batch(guarded, disallowed_special=())
        used = {i for b, a in zip(before, after, strict=True) if a != b for i in a if i >= first}
        if not used:
            return new
        new = _without(new, first, used)
    raise ConfigError("protect: the protected text keeps changing as new tokens are left "
                      "out; protect less text or extend by fewer tokens")


def _without(new: list[NewToken], first: int, drop: set[int]) -> list[NewToken]:
    """``new`` (ids from ``first``) without the ids in ``drop`` and every token whose
    merge uses a dropped one; the rest renumbered."""
    moved: dict[int, int] = {}
    kept: list[NewToken] = []
    for k, t in enumerate(new):
        old_id = first + k
        parts = [p for p in (t.left, t.right) if p is not None]
        if old_id in drop or any(p >= first and p not in moved for p in parts):
            continue
        moved[old_id] = first + len(kept)

        def at(p: int | None) -> int | None:
            return p if p is None or p < first else moved[p]

        kept.append(NewToken(t.data, left=at(t.left), right=at(t.right), score=t.score))
    return kept


def _how_many(tok: Tokenizer, add: int | None, vocab_size: int | None,
              max_vocab: int | None) -> int:
    if (add is None) == (vocab_size is None):
        raise ConfigError("say how many tokens to learn: add=N new tokens, or vocab_size=V "
                          "in all (one of the two)")
    n = add if add is not None else (vocab_size or 0) - tok.vocab_size
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        what = f"add={add!r}" if add is not None else (
            f"vocab_size={vocab_size!r} (the tokenizer already has {tok.vocab_size:,} ids)")
        raise ConfigError(f"{what}: the number of new tokens must be a positive integer")
    if max_vocab is not None and tok.vocab_size + n > max_vocab:
        raise VocabLimitError(
            f"extending {tok.vocab_size:,} ids by {n:,} gives {tok.vocab_size + n:,}, more than "
            f"max_vocab={max_vocab:,} (the model's embedding rows); ask for at most "
            f"{max(max_vocab - tok.vocab_size, 0):,} new tokens or resize the model",
            size=tok.vocab_size + n, limit=max_vocab,
        )
    return n


def _enough(asked: int, learned: int, strict: bool) -> None:
    if learned >= asked:
        return
    message = (f"the new text supports {learned:,} new tokens, not the {asked:,} asked for "
               f"(no more pairs or pieces occur often enough); give more text or lower "
               f"min_frequency")
    if strict:
        raise NotEnoughTextError(message, asked=asked, learned=learned)
    warnings.warn(message, stacklevel=3)


def _events(report: dict[str, Any], unit: str) -> TrainingEvents:
    return TrainingEvents(report["verbose"], report["progress"], report["out"],
                          report["callback"], unit)


# ---------------------------------------------------------------------- BPE


def _bpe_tokens(
    tok: Tokenizer, doc: dict[str, Any], fam: str, files: Files | None,
    texts: Iterable[str] | None, n: int, min_frequency: int, max_token_length: int | None,
    coverage: float, errors: Errors, trace: int, report: dict[str, Any], guarded: list[str],
    spans: list[tuple[int, int]],
) -> list[NewToken]:
    model = doc["model"]
    rules = _sp_rules(tok, doc) if fam == "sp-bpe" else None
    components = _counting_components(tok, doc, fam, rules)
    counter = count_corpus(components, files, texts, errors,
                           verbose=report["verbose"], out=report["out"])
    protect = _protected(components, guarded)
    events = _events(report, "merges")
    symbols, merges = counter.continue_bpe(
        tok._core, n, min_frequency, max_token_length, fam == "byte-bpe",
        model.get("continuing_subword_prefix") or None, model.get("end_of_word_suffix") or None,
        _foreign_ids(tok, doc, fam), coverage, rules,
        trace if report["verbose"] or report["callback"] else 0,
        events if events.wanted else None,
        protect,
        spans,
    )
    events.close(len(merges))
    new = [NewToken(bytes(data)) for _, data in symbols]
    new.extend(NewToken(bytes(data), left=a, right=b) for a, b, _, _, data in merges)
    return new


def _protected(components: dict[str, Any], guarded: list[str]) -> Any:
    """The protected text's pieces, counted as the new text's are (or ``None``)."""
    if not any(d.strip() for d in guarded):
        return None
    return count_corpus(components, None, guarded, "replace")


def _outside(tok: Tokenizer, doc: dict[str, Any], fam: str, new: list[NewToken],
             guarded: list[str]) -> list[NewToken]:
    """The Unigram or WordPiece pieces that no protected word contains. A piece
    that is no part of a word cannot be in its segmentation (Viterbi over pieces,
    or greedy longest match), so protected text keeps its ids."""
    if not any(d.strip() for d in guarded):
        return new
    rules = _sp_rules(tok, doc) if fam == "unigram" else None
    components = _counting_components(tok, doc, "sp-bpe" if fam == "unigram" else fam, rules)
    counter = _protected(components, guarded)
    words = [w.decode("utf-8", "replace") for w, _ in counter.most_common(counter.distinct)]
    anywhere = "\0" + "\0".join(words)
    if fam == "unigram":
        return [t for t in new if t.data.decode("utf-8") not in anywhere]
    prefix = doc["model"].get("continuing_subword_prefix", "##")
    inside = "\0".join(w[1:] for w in words)

    def used(token: str) -> bool:
        if prefix and token.startswith(prefix):
            return token[len(prefix):] in inside
        return "\0" + token in anywhere

    return [t for t in new if not used(t.data.decode("utf-8"))]


def _counting_components(tok: Tokenizer, doc: dict[str, Any], fam: str,
                         rules: tuple[Any, ...] | None) -> dict[str, Any]:
    """The normalizer and pre-tokenizer that cut the new text as the tokenizer does."""
    norm, pre = doc.get("normalizer"), doc.get("pre_tokenizer")
    if fam == "sp-bpe" or (pre is None and SPACE in "".join(tok.get_vocab())):
        suffix = bool(rules and rules[4])
        split = {"type": "Split", "pattern": {"String": SPACE},
                 "behavior": "MergedWithPrevious" if suffix else "MergedWithNext",
                 "invert": False}
        return {"normalizer": norm, "pre_tokenizer": pre or split, "lines": fam == "sp-bpe"}
    if pre is None:
        pre = {"type": "WhitespaceSplit"}
    return {"normalizer": norm, "pre_tokenizer": pre}


def _foreign_ids(tok: Tokenizer, doc: dict[str, Any], fam: str) -> list[int]:
    """Ids that stand for text the model has no token for."""
    model = doc["model"]
    if fam == "sp-bpe":
        return [i for i, row in enumerate(model["sentencepiece"]) if row[2] in (UNKNOWN, BYTE)]
    if fam == "byte-bpe":
        return []
    out = []
    unk = model.get("unk_token")
    if unk is not None and tok.token_to_id(unk) is not None:
        out.append(tok.token_to_id(unk))
    if model.get("byte_fallback"):
        out.extend(i for b in range(256)
                   if (i := tok.token_to_id(f"<0x{b:02X}>")) is not None)
    return [i for i in out if i is not None]


def _sp_rules(tok: Tokenizer, doc: dict[str, Any]) -> tuple[Any, ...]:
    """SentencePiece's piece rules, from the model's own trainer settings."""
    if _base.origin(tok) == "sentencepiece":
        t = _base.model_proto(tok).trainer_spec
        if t is not None:
            return (t.max_sentencepiece_length, t.split_by_unicode_script, t.split_by_number,
                    t.split_digits, t.treat_whitespace_as_suffix, t.allow_whitespace_only_pieces)
    norm = doc.get("normalizer") or {}
    return (16, True, True, False, bool(norm.get("treat_whitespace_as_suffix")), False)


# ------------------------------------------------------------------ Unigram


def _unigram_tokens(
    tok: Tokenizer, doc: dict[str, Any], files: Files | None, texts: Iterable[str] | None,
    n: int, coverage: float, errors: Errors, report: dict[str, Any],
) -> list[NewToken]:
    from .._train_sentencepiece import train_unigram

    norm = doc.get("normalizer") or {}
    old = {piece: score for piece, score in doc["model"]["vocab"]}
    texts = list(texts) if texts is not None else None
    donor = train_unigram(
        files, texts=texts, vocab_size=_donor_size(len(old), n), character_coverage=coverage,
        add_dummy_prefix=bool(norm.get("add_dummy_prefix", True)),
        remove_extra_whitespaces=bool(norm.get("remove_extra_whitespaces", True)),
        treat_whitespace_as_suffix=bool(norm.get("treat_whitespace_as_suffix", False)),
        hard_vocab_limit=False, errors=errors, verbose=report["verbose"],
        progress=report["progress"], stream=report["out"], callback=report["callback"],
    )
    rows = json.loads(donor.to_str(pretty=False))["model"]
    types = rows.get("piece_types") or [1] * len(rows["vocab"])
    learned = [(p, s) for (p, s), t in zip(rows["vocab"], types, strict=True) if t == 1]
    return calibrated_pieces(old, learned, n)


def calibrated_pieces(old: dict[str, float], learned: list[tuple[str, float]],
                      n: int) -> list[NewToken]:
    """The ``n`` most probable learned pieces the old vocabulary lacks, their
    scores shifted onto the old model's scale (the median difference over the
    pieces both have; none shared: just below the old model's lowest score)."""
    shared = sorted(old[p] - s for p, s in learned if p in old)
    if shared:
        shift = shared[len(shared) // 2]
    else:
        shift = min(old.values(), default=0.0) - max((s for _, s in learned), default=0.0) - 1.0
    fresh = sorted(((s, p) for p, s in learned if p not in old), key=lambda sp: (-sp[0], sp[1]))
    return [NewToken(p.encode("utf-8"), score=s + shift) for s, p in fresh[:n]]


def _donor_size(old: int, n: int) -> int:
    """A vocabulary large enough that ``n`` of its pieces are new ones."""
    return max(2 * n + 1000, min(old, 4 * n + 1000))


# ---------------------------------------------------------------- WordPiece


def _wordpiece_tokens(
    tok: Tokenizer, doc: dict[str, Any], files: Files | None, texts: Iterable[str] | None,
    n: int, min_frequency: int, errors: Errors, report: dict[str, Any],
) -> list[NewToken]:
    from .._train_wordpiece import train_wordpiece

    model, norm = doc["model"], doc.get("normalizer") or {}
    old = model["vocab"]
    prefix = model.get("continuing_subword_prefix", "##")
    texts = list(texts) if texts is not None else None
    bert = norm.get("type") == "BertNormalizer"
    donor = train_wordpiece(
        files, texts=texts, vocab_size=_donor_size(len(old), n), min_frequency=min_frequency,
        unk_token=model.get("unk_token", "[UNK]"), continuing_subword_prefix=prefix,
        lowercase=bool(norm.get("lowercase", False)) if bert else False,
        strip_accents=norm.get("strip_accents") if bert else False,
        handle_chinese_chars=bool(norm.get("handle_chinese_chars", True)) if bert else False,
        limit_alphabet=None, errors=errors, verbose=report["verbose"],
        progress=report["progress"], stream=report["out"], callback=report["callback"],
    )
    specials = set(donor.special_tokens)
    ordered = sorted(donor.get_vocab().items(), key=lambda kv: kv[1])
    fresh = [t for t, _ in ordered if t not in old and t not in specials]
    return [NewToken(t.encode("utf-8")) for t in fresh[:n]]
