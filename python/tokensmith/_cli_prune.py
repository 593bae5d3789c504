"""``tokensmith prune``: a smaller vocabulary with the tokens some text uses.

Registered by :func:`tokensmith._cli_surgery.add_commands`; errors are
:class:`tokensmith.cli.CommandError` or a :class:`tokensmith.TokenizerError`
(one line, exit status 2). The work is :func:`tokensmith.surgery.prune.prune`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

__all__ = ["add_command"]

_EPILOG = """\
examples:
  # keep the tokens English text uses at least twice; ids compacted
  tokensmith prune cl100k_base --text en/*.txt --min-count 2 \\
      -o cl100k-en.tiktoken --id-map cl100k-en.idmap.json

  # Llama-2's SentencePiece model cut to 8,000 pieces, ids kept in place
  # (removed pieces become UNUSED), always keeping two domain terms
  tokensmith prune llama2/tokenizer.model --text corpus.txt --vocab-size 8000 \\
      --keep-ids --keep "▁GPU" "▁async" -o llama2-small.model

  # BERT's WordPiece vocabulary, pruned into a folder (writes tokenizer.json)
  tokensmith prune bert-base-uncased/tokenizer.json --text notes.txt -o bert-notes/

The output is written in the format its path names (.tiktoken, .model, .json;
a folder gets the input's format). Byte tokens, special and added tokens,
single characters where they would otherwise become unknown, and the tokens a
kept BPE token is built from are never removed. Text whose old tokens were all
kept is encoded to the same tokens: the id map (--id-map, JSON) says which new
id each old id became (-1: removed); in Python, IdMap.load(path) and
id_map.resize_embeddings(matrix) cut an embedding matrix to match.
"""


def _error(message: str) -> Exception:
    from ._cli_common import CommandError

    return CommandError(message)


def _output_path(out: str, tok: Any, source: str) -> Path:
    """``-o``: a file path, or a folder that gets a file in the input's format."""
    from .surgery._base import origin

    p = Path(out)
    if not (p.is_dir() or out.endswith(("/", os.sep))):
        return p
    kind = origin(tok)
    if kind == "sentencepiece":
        return p / "tokenizer.model"
    if kind == "tiktoken":
        stem = Path(source).name
        stem = stem[: -len(".tiktoken")] if stem.endswith(".tiktoken") else stem
        return p / f"{stem}-pruned.tiktoken"
    return p / "tokenizer.json"


def _load_hint(tok: Any, out: Path, keep_ids: bool) -> str:
    """How to load a pruned rank file (it holds neither the pattern nor the specials)."""
    from . import patterns

    src = tok._tiktoken
    name = next((n for n, rx in patterns.NAMED.items() if rx == src.pattern), None)
    pattern = repr(name) if name else "<the split regex of the input>"
    specials = {c: i for c, i in src.special_tokens.items() if not c.startswith("<|unused_")}
    shown = (
        repr(specials) if len(specials) <= 8 else f"<the {len(specials)} special tokens>"
    )
    more = (
        ", plus <|unused_{id}|> at every removed id (IdMap.load(...).removed())"
        if keep_ids else ""
    )
    return (
        f" A .tiktoken file holds only the ranks: load it with "
        f"tokensmith.formats.tiktoken.load({str(out)!r}, pattern={pattern}, "
        f"special_tokens={shown}{more})."
    )


def cmd_prune(args: argparse.Namespace) -> int:
    from . import pretrained
    from ._loading import load
    from .surgery._base import origin
    from .surgery.prune import _prune

    if args.min_count is not None and args.min_count < 0:
        raise _error("--min-count must be 0 or more")
    if args.vocab_size is not None and args.vocab_size < 1:
        raise _error("--vocab-size must be positive")
    missing = [f for f in args.text if not any(ch in f for ch in "*?[") and not Path(f).exists()]
    if missing:
        raise _error(f"--text {missing[0]}: no such file")
    tok = load(args.tokenizer)
    out = _output_path(args.out, tok, args.tokenizer)
    if out.suffix.lower() == ".tiktoken" and pretrained.encoding_for_file(out) is not None:
        raise _error(
            f"-o {out}: a rank file named like a known encoding is loaded with that encoding's "
            f"special tokens, which the prune changed; choose another name "
            f"(e.g. {out.stem}-pruned.tiktoken)"
        )
    if out.is_dir():
        raise _error(f"-o {out}: is a folder")
    result = _prune(
        tok,
        files=args.text,
        min_count=1 if args.min_count is None else args.min_count,
        vocab_size=args.vocab_size,
        keep_ids=args.keep_ids,
        keep=args.keep or (),
        errors=args.errors,
    )
    new = result.tokenizer
    written = new.save(out)
    map_path = result.id_map.save(args.id_map) if args.id_map else None
    c = result.counted
    n = 1 if args.min_count is None else args.min_count
    if args.vocab_size:
        rule = f"chosen by use (the most used first, up to {args.vocab_size:,} in all)"
    else:
        rule = "used at least " + {0: "0 times", 1: "once", 2: "twice"}.get(n, f"{n:,} times")
    removed = result.old_tokens - result.new_tokens
    how = (
        f"ids kept in place and removed ones marked unused, so vocab_size stays "
        f"{new.vocab_size:,}" if args.keep_ids
        else f"ids compacted in old-id order: vocab_size {result.old_size:,} -> {new.vocab_size:,}"
    )
    files = f"{len(args.text)} file{'s' if len(args.text) != 1 else ''}"
    text = (
        f"pruned {args.tokenizer}: {result.old_tokens:,} tokens -> {result.new_tokens:,} "
        f"({removed:,} removed; {how}). Token use was counted on {files} "
        f"({c.chars:,} characters, {c.tokens:,} tokens). Kept: {result.chosen:,} tokens "
        f"{rule}, {result.closure:,} added back because kept tokens are built from them, "
        f"and {result.protected:,} never removed ({result.why_protected}). "
        f"Wrote {written}"
        + (f" and the id map {map_path}" if map_path else " (no id map: pass --id-map)")
        + f" in {result.seconds:.1f} s."
    )
    if origin(new) == "tiktoken" and written.suffix.lower() == ".tiktoken":
        text += _load_hint(new, written, args.keep_ids)
    print(text)
    return 0


def add_command(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    """Add ``prune`` to the ``tokensmith`` parser."""
    p = sub.add_parser(
        "prune", help="remove the tokens some text rarely uses (old ids stay valid)",
        description="Count how often each token is used on the given text and write a smaller\n"
                    "tokenizer without the rarely used ones, in the input's format, plus an id\n"
                    "map from old ids to new ones. The input tokenizer is not changed.",
        epilog=_EPILOG, formatter_class=formatter,
    )
    p.add_argument("tokenizer", metavar="TOKENIZER",
                   help="a tokenizer file or folder (tokenizer.json, *.tiktoken, *.model, "
                        "vocab.txt …) or a name (cl100k_base, o200k_base, gpt2)")
    p.add_argument("--text", nargs="+", action="extend", required=True, metavar="FILE",
                   help="text files (or globs, folders, .gz/.jsonl) to count token use on")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--min-count", type=int, metavar="N",
                      help="remove the tokens used fewer than N times (default 1)")
    size.add_argument("--vocab-size", type=int, metavar="V",
                      help="keep the V most used tokens, counting the ones never removed")
    p.add_argument("--keep-ids", action="store_true",
                   help="keep every id in place and mark removed ids unused (default: "
                        "compact the ids)")
    p.add_argument("--keep", nargs="+", action="extend", metavar="TOKEN",
                   help="tokens never to remove, as the vocabulary spells them (Ġthe, ▁the, "
                        "##ing) or as their text")
    p.add_argument("-o", "--out", required=True, metavar="OUT",
                   help="where to write the pruned tokenizer (.tiktoken, .model or .json; a "
                        "folder gets the input's format)")
    p.add_argument("--id-map", metavar="PATH", help="also write the id map (JSON)")
    p.add_argument("--errors", choices=("strict", "replace", "skip"), default="strict",
                   help="invalid UTF-8 in a --text file: fail (default), replace it, or skip it")
    p.set_defaults(func=cmd_prune)
