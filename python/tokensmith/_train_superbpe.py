"""SuperBPE: byte-level BPE that learns superwords after subwords.

Reached through ``tokensmith.train(..., superword_start=N)``. SuperBPE (Liu et
al. 2025, "SuperBPE: Space Travel for Language Models") trains in two stages:

1. ordinary byte-level BPE, the text cut by ``pattern`` (words, numbers,
   punctuation and whitespace apart), until the vocabulary has
   ``superword_start`` tokens;
2. the cut is lifted to chunks of up to ``superword_words`` words
   (:func:`superword_pattern`), each chunk first segmented by the stage 1
   merges, and merging goes on across the spaces inside a chunk: tokens such
   as ``" of the"`` or ``", and"``.

The tokenizer keeps the stage 2 pattern: a saved ``tokenizer.json`` (or rank
file) is an ordinary BPE with a ``Split`` regex, and ``tokenizers`` and tiktoken
encode it id for id as tokensmith does, because stage 2 counted its pairs on
exactly the segmentation those libraries give a chunk (stage 1's merges applied
by rank over the whole chunk). The published trainer lifts the cut altogether
(digits apart); tokensmith bounds a chunk to ``superword_words`` words, so that
the distinct chunks counted in stage 2 (the memory it takes) grow like the
corpus's ``superword_words``-word sequences rather than like its lines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from .errors import ConfigError, VocabSizeError

if TYPE_CHECKING:
    from .corpus import Files
    from .tokenizer import Tokenizer

__all__ = ["superword_pattern", "train_superbpe"]

#: Most words a superword chunk may hold (``superword_words``).
MAX_WORDS = 16


def superword_pattern(words: int) -> str:
    """The stage 2 pre-tokenization: up to ``words`` words a chunk, where a word
    is a run of characters that are neither whitespace nor digits (letters and
    punctuation together: ``"way,"``), after any spaces or tabs; digits in groups
    of up to three; line breaks (with the whitespace before them) and other
    whitespace on their own."""
    if isinstance(words, bool) or not isinstance(words, int) or not 2 <= words <= MAX_WORDS:
        raise ConfigError(
            f"superword_words must be an int from 2 to {MAX_WORDS} (words a superword may "
            f"span), got {words!r}"
        )
    word = r"[^\S\r\n]*[^\s\p{N}]+"
    return rf"(?:{word}){{1,{words}}}|\p{{N}}{{1,3}}|\s*[\r\n]+|\s+"


def _check(vocab_size: int, superword_start: Any, specials: int, options: dict[str, Any]) -> None:
    """Typed errors for options SuperBPE training cannot take."""
    if isinstance(superword_start, bool) or not isinstance(superword_start, int):
        raise ConfigError(f"superword_start must be an int (a vocabulary size), "
                          f"got {superword_start!r}")
    if superword_start <= 256:
        raise ConfigError(f"superword_start={superword_start} leaves no subword merges before "
                          f"the superwords: it counts the 256 byte tokens, so use more than 256")
    if superword_start >= vocab_size - specials:
        raise VocabSizeError(
            f"superword_start={superword_start} is not below vocab_size={vocab_size} less the "
            f"{specials} special token(s): no room is left for superwords"
        )
    if not options.get("byte_level", True):
        raise ConfigError("superword_start needs byte-level BPE (byte_level=True): "
                          "character-level BPE cuts words at whitespace")
    for name in ("counts", "input_sentence_size", "sample_bytes"):
        if options.get(name) is not None:
            raise ConfigError(f"{name} cannot be combined with superword_start: the second "
                              f"stage counts the text again, cut into superword chunks")
    if options.get("text_field", "text") != "text":
        raise ConfigError("text_field cannot be combined with superword_start (the second "
                          "stage reads .jsonl records by their 'text' field)")


def train_superbpe(
    train_bpe: Callable[..., Tokenizer],
    files: Files | None = None,
    *,
    texts: Iterable[str] | None = None,
    vocab_size: int = 32_000,
    superword_start: int,
    superword_words: int = 4,
    special_tokens: Sequence[str] = ("<|endoftext|>",),
    min_frequency: int = 0,
    max_token_length: int | None = None,
    errors: str = "strict",
    verbose: bool = False,
    trace: int = 20,
    progress: bool | None = None,
    stream: TextIO | None = None,
    callback: Callable[[str, tuple[Any, ...]], None] | None = None,
    **options: Any,
) -> Tokenizer:
    """Train SuperBPE (see the module text): stage 1 with ``train_bpe``
    (:func:`tokensmith.trainers.train_bpe`, given by its caller), ``options`` being
    its arguments for stage 1 (``pattern``, ``normalizer`` …). Special tokens come
    last, after the superwords."""
    from ._limits import check_token_list
    from .surgery.add import add_tokens
    from .surgery.extend import extend

    specials = check_token_list(special_tokens)
    _check(vocab_size, superword_start, len(specials), options)
    stage2 = superword_pattern(superword_words)
    if texts is not None and not isinstance(texts, (list, tuple)):
        texts = list(texts)  # read by both stages
    report: dict[str, Any] = dict(verbose=verbose, trace=trace, progress=progress,
                                  stream=stream, callback=callback)
    if verbose:
        import sys

        print(f"SuperBPE stage 1: subwords up to {superword_start:,} tokens", file=stream or
              sys.stderr)
    sub = train_bpe(files, texts=texts, vocab_size=superword_start, special_tokens=(),
                    min_frequency=min_frequency, max_token_length=max_token_length,
                    errors=errors, **options, **report)
    lifted = _with_split_pattern(sub, stage2)
    if verbose:
        import sys

        print(f"SuperBPE stage 2: superwords of up to {superword_words} words, up to "
              f"{vocab_size - len(specials):,} tokens", file=stream or sys.stderr)
    whole = extend(lifted, files, texts=texts, vocab_size=vocab_size - len(specials),
                   min_frequency=min_frequency, max_token_length=max_token_length,
                   errors=errors, **report)  # type: ignore[arg-type]
    return add_tokens(whole, specials, special=True) if specials else whole


def _with_split_pattern(tok: Tokenizer, regex: str) -> Tokenizer:
    """``tok`` with the regex of its byte-level ``Split`` pre-tokenizer replaced."""
    import json

    from .surgery import _base
    from .tokenizer import Tokenizer as Tok

    doc = _base.spec(tok)
    pre = doc.get("pre_tokenizer") or {}
    splits = [p for p in pre.get("pretokenizers", []) if p.get("type") == "Split"]
    if len(splits) != 1:
        raise ConfigError("superword training needs the byte-level pre-tokenizer "
                          "(a Split pattern, then ByteLevel)")
    splits[0]["pattern"] = {"Regex": regex}
    return Tok.from_str(json.dumps(doc, ensure_ascii=False))
