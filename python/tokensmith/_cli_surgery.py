"""``tokensmith add-tokens | extend | prune | merge | resize | check``: changing a
vocabulary from the command line, and proving the change kept the old ids.

Registered by :func:`tokensmith.cli.build_parser`; errors are
:class:`tokensmith.cli.CommandError` or a :class:`tokensmith.TokenizerError`
(one line, exit status 2). The work is :mod:`tokensmith.surgery`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_commands"]

_ADD_EPILOG = """\
examples:
  # two tokens found in any text, ids after the last one
  tokensmith add-tokens llama3/tokenizer.json "<tool_call>" "</tool_call>" -o llama3-tools/

  # special tokens (matched only where encode allows them), within 128,512 rows
  tokensmith add-tokens cl100k_base "<|tool|>" --special --max-vocab 100352 -o cl100k-tool.tiktoken

SentencePiece models get user-defined pieces (--special: control pieces).
"""

_EXTEND_EPILOG = """\
examples:
  # Llama-2 for Chinese: 20,000 new Chinese pieces, English text unchanged
  tokensmith extend llama2/tokenizer.model --text zh.txt --add 20000 --scripts Han \\
      --protect en.txt -o llama2-zh.model
  tokensmith check llama2/tokenizer.model llama2-zh.model --text zh.txt en.txt

  # a GPT-style tokenizer grown to 110,000 ids on domain text
  tokensmith extend my-tok/tokenizer.json --text papers/*.txt --vocab-size 110000 -o my-tok-2/

Every old token keeps its id and merge; the new ones follow the last id.
"""

_MERGE_EPILOG = """\
examples:
  # the Chinese-LLaMA recipe: Llama-2's model plus the pieces of a Chinese one
  tokensmith train zh.txt --model sentencepiece-bpe --vocab-size 20000 --byte-fallback \
      -o zh-sp.model
  tokensmith merge llama2/tokenizer.model zh-sp.model -o llama2-zh.model
"""

_RESIZE_EPILOG = """\
examples:
  # pad to a multiple of 128 with <|reserved_special_token_N|>
  tokensmith resize my-tok/tokenizer.json --multiple-of 128 -o my-tok-padded/

  # only check that the vocabulary fits a model's 32,000 embedding rows
  tokensmith resize llama2-zh.model --max-vocab 32000
"""


def _error(message: str) -> Exception:
    from ._cli_common import CommandError

    return CommandError(message)


def _write(old: Any, new: Any, args: argparse.Namespace, what: str) -> int:
    """Save ``new`` to ``-o`` (the input's format for a folder) and say what changed."""
    from . import pretrained
    from ._cli_prune import _load_hint, _output_path
    from .surgery._base import origin

    target = args.out
    if not Path(target).suffix and not Path(target).is_file():
        Path(target).mkdir(parents=True, exist_ok=True)  # a name without a suffix: a folder
    out = _output_path(str(target), new, args.tokenizer)
    if out.suffix.lower() == ".tiktoken" and pretrained.encoding_for_file(out) is not None:
        raise _error(f"-o {out}: a rank file named like a known encoding is loaded with that "
                     f"encoding's special tokens; choose another name "
                     f"(e.g. {out.stem}-extended.tiktoken)")
    written = new.save(out)
    added = new.vocab_size - old.vocab_size
    span = f"; new ids {old.vocab_size:,}-{new.vocab_size - 1:,}" if added > 0 else ""
    text = (f"{what}: {old.vocab_size:,} -> {new.vocab_size:,} ids ({added:,} new{span}). "
            f"Wrote {written}. Check it: tokensmith check {args.tokenizer} {written} "
            f"--text FILE")
    if origin(new) == "tiktoken" and written.suffix.lower() == ".tiktoken":
        text += "." + _load_hint(new, written, False)
    print(text)
    return 0


def _texts(paths: list[str] | None) -> list[str] | None:
    if not paths:
        return None
    from .evaluate import split_documents

    docs: list[str] = []
    for p in paths:
        try:
            docs.extend(split_documents(Path(p).read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as e:
            raise _error(f"--protect {p}: cannot read it as UTF-8 text: {e}") from None
    return docs


def cmd_add_tokens(args: argparse.Namespace) -> int:
    from ._loading import load
    from .surgery import add_tokens

    tok = load(args.tokenizer)
    new = add_tokens(tok, args.tokens, special=args.special, single_word=args.single_word,
                     lstrip=args.lstrip, rstrip=args.rstrip, max_vocab=args.max_vocab)
    return _write(tok, new, args, f"added {'special ' if args.special else ''}tokens")


def cmd_extend(args: argparse.Namespace) -> int:
    from ._loading import load
    from .surgery import extend

    missing = [f for f in args.text if not any(ch in f for ch in "*?[") and not Path(f).exists()]
    if missing:
        raise _error(f"--text {missing[0]}: no such file")
    tok = load(args.tokenizer)
    new = extend(tok, args.text, add=args.add, vocab_size=args.vocab_size,
                 min_frequency=args.min_frequency, max_token_length=args.max_token_length,
                 character_coverage=args.character_coverage, protect=_texts(args.protect),
                 scripts=args.scripts,
                 strict=args.strict, max_vocab=args.max_vocab, errors=args.errors,
                 verbose=args.verbose)
    return _write(tok, new, args, "extended")


def cmd_merge(args: argparse.Namespace) -> int:
    from ._loading import load
    from .surgery import merge

    base, donor = load(args.tokenizer), load(args.donor)
    new = merge(base, donor, limit=args.limit, max_vocab=args.max_vocab)
    return _write(base, new, args, f"merged {args.donor} into {args.tokenizer}")


def cmd_resize(args: argparse.Namespace) -> int:
    from ._loading import load
    from .surgery import resize

    tok = load(args.tokenizer)
    new = resize(tok, args.multiple_of, size=args.size, max_vocab=args.max_vocab,
                 template=args.template)
    if args.out is None:
        if new is not tok:
            raise _error("-o OUT is needed to write the resized tokenizer")
        limit = f" (max_vocab {args.max_vocab:,})" if args.max_vocab else ""
        print(f"{args.tokenizer}: {tok.vocab_size:,} ids{limit}: fits")
        return 0
    return _write(tok, new, args, "resized")


def _common(p: argparse.ArgumentParser, out_required: bool = True) -> None:
    p.add_argument("-o", "--out", required=out_required, metavar="OUT",
                   help="where to write the result (.json, .tiktoken, .model; a folder gets "
                        "the input's format)")
    p.add_argument("--max-vocab", type=int, metavar="N",
                   help="refuse a result with more than N ids (the model's embedding rows)")


def _tokenizer_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("tokenizer", metavar="TOKENIZER",
                   help="a tokenizer file or folder (tokenizer.json, *.tiktoken, *.model, "
                        "vocab.txt …) or a name (cl100k_base, o200k_base, gpt2)")


def _add_add_tokens(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    p = sub.add_parser("add-tokens", help="add whole tokens after the last id",
                       description="Add tokens (found whole in text, or special) after the "
                                   "last id;\nevery old id is kept.",
                       epilog=_ADD_EPILOG, formatter_class=formatter)
    _tokenizer_arg(p)
    p.add_argument("tokens", nargs="+", metavar="TOKEN", help="the tokens to add")
    p.add_argument("--special", action="store_true",
                   help="special tokens: found only where encode allows them")
    p.add_argument("--single-word", action="store_true", help="match whole words only")
    p.add_argument("--lstrip", action="store_true", help="take the spaces before the token")
    p.add_argument("--rstrip", action="store_true", help="take the spaces after the token")
    _common(p)
    p.set_defaults(func=cmd_add_tokens)


def _add_extend(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    p = sub.add_parser("extend", help="learn new tokens on new text, old ids kept",
                       description="Continue training on new text: new tokens after the last "
                                   "id, every old\ntoken, id and merge kept.",
                       epilog=_EXTEND_EPILOG, formatter_class=formatter)
    _tokenizer_arg(p)
    p.add_argument("--text", nargs="+", action="extend", required=True, metavar="FILE",
                   help="the new text: files, folders or globs (.gz, .jsonl too)")
    size = p.add_mutually_exclusive_group(required=True)
    size.add_argument("--add", type=int, metavar="N", help="learn N new tokens")
    size.add_argument("--vocab-size", type=int, metavar="V", help="grow to V ids in all")
    p.add_argument("--protect", nargs="+", action="extend", metavar="FILE",
                   help="text whose ids must not change (new tokens it would use are left out)")
    p.add_argument("--scripts", nargs="+", metavar="NAME",
                   help="keep to new tokens with a character of these scripts (Han, Hiragana, "
                        "Katakana, Hangul, Cyrillic, Arabic …)")
    p.add_argument("--min-frequency", type=int, default=2, metavar="N",
                   help="stop when no pair occurs N times (default 2)")
    p.add_argument("--max-token-length", type=int, metavar="N",
                   help="longest new token, in bytes (characters for character-level models)")
    p.add_argument("--character-coverage", type=float, default=0.9995, metavar="F",
                   help="share of the new text's characters that get a token (default 0.9995)")
    p.add_argument("--strict", action="store_true",
                   help="fail when the text supports fewer new tokens than asked for")
    p.add_argument("--errors", choices=("strict", "replace", "skip"), default="strict",
                   help="invalid UTF-8 in a --text file: fail (default), replace it, or skip it")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print the trace of new merges and a progress bar")
    _common(p)
    p.set_defaults(func=cmd_extend)


def _add_merge(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    p = sub.add_parser("merge", help="add another vocabulary's tokens to a tokenizer",
                       description="Append the donor's tokens (pieces, merges) that the base "
                                   "lacks, after\nthe base's last id; base ids unchanged.",
                       epilog=_MERGE_EPILOG, formatter_class=formatter)
    _tokenizer_arg(p)
    p.add_argument("donor", metavar="DONOR", help="the tokenizer whose tokens to add")
    p.add_argument("--limit", type=int, metavar="N", help="add at most N tokens")
    _common(p)
    p.set_defaults(func=cmd_merge)


def _add_resize(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    p = sub.add_parser("resize", help="pad to a multiple with reserved tokens, or check a size",
                       description="Pad the vocabulary with reserved special tokens, or check "
                                   "that it fits\na model's embedding rows (--max-vocab).",
                       epilog=_RESIZE_EPILOG, formatter_class=formatter)
    _tokenizer_arg(p)
    size = p.add_mutually_exclusive_group()
    size.add_argument("--multiple-of", type=int, metavar="M", help="pad to a multiple of M")
    size.add_argument("--size", type=int, metavar="N", help="pad to exactly N ids")
    p.add_argument("--template", metavar="T",
                   help="reserved token name with {n} (default <|reserved_special_token_{n}|>)")
    _common(p, out_required=False)
    p.set_defaults(func=cmd_resize)


def add_commands(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    """Add the vocabulary-change commands to the ``tokensmith`` parser."""
    from ._cli_check import add_command as add_check
    from ._cli_prune import add_command as add_prune

    _add_add_tokens(sub, formatter)
    _add_extend(sub, formatter)
    add_prune(sub, formatter)
    _add_merge(sub, formatter)
    _add_resize(sub, formatter)
    add_check(sub, formatter)
