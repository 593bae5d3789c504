"""``tokensmith check OLD NEW``: prove that a changed tokenizer keeps the old ids.

Registered by :func:`tokensmith._cli_surgery.add_commands`. Exit status 0 when
every invariant holds, 1 when one is broken (the table and the failures are
printed), 2 for a mistake in the arguments (:class:`tokensmith.cli.CommandError`)
or a tokenizer that cannot be loaded.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_command", "cmd_check"]

EXIT_OK = 0
EXIT_BROKEN = 1

_EPILOG = """\
examples:
  # a tokenizer with added tokens against the one the model was trained with
  tokensmith check llama3/tokenizer.json llama3-extended/tokenizer.json --text corpus.txt

  # the model has 128,256 embedding rows: the new vocabulary must fit
  tokensmith check old.json new.json --text en.txt code.py --max-vocab 128256

  # after a prune: old ids are looked for where its id map sent them
  tokensmith check cl100k_base cl100k-en.tiktoken --id-map cl100k-en.idmap.json --text en.txt

  # a prune that kept the ids (removed ones are unused now) and lost its id map
  tokensmith check cl100k_base cl100k-en.tiktoken --removed-ok --text en.txt

  # machine-readable, and an HTML page to attach to the pull request
  tokensmith check old.json new.json --text corpus.txt --json > check.json
  tokensmith check old.json new.json --text corpus.txt --html check.html

What is checked: every old id still exists and decodes to the same bytes;
special tokens keep their ids; no token string has two ids; no new ids
without a token (--allow-gaps); every BPE token is made by a merge; the new
tokenizer round-trips every text the old one round-trips (the --text
documents and a built-in suite of adversarial Unicode, see
--no-adversarial); a text whose new encoding uses no new token keeps its
old ids exactly. Also reported: the share of texts whose ids changed, with
the first differences, bytes per token before and after, and per-language
token counts on --parallel files. Each --text file is read as UTF-8 and cut
into documents at blank lines.

Exit status: 0 compatible, 1 an invariant is broken, 2 a usage error.
"""


def _error(message: str) -> Exception:
    from ._cli_common import CommandError

    return CommandError(message)


def _read(path: str) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise _error(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _error(f"{path}: not UTF-8 (invalid byte at offset {e.start}); convert it "
                     f"with iconv -t UTF-8, or leave it out") from None


def _texts(args: argparse.Namespace) -> list[str]:
    from .evaluate import split_documents

    texts: list[str] = []
    for path in dict.fromkeys(args.text or []):
        texts.extend(split_documents(_read(path)))
    texts.extend(args.string or [])
    return texts


def _parallel(paths: list[str] | None) -> dict[str, list[str]] | None:
    if not paths:
        return None
    out: dict[str, list[str]] = {}
    for path in dict.fromkeys(paths):
        lang = Path(path).stem or path
        if lang in out:
            raise _error(f"--parallel: two files are named {lang!r}; each language needs "
                         f"one file named after it (de.txt, en.txt …)")
        out[lang] = _read(path).splitlines()
    return out


def cmd_check(args: argparse.Namespace) -> int:
    """Run ``tokensmith check``; returns the exit status."""
    from ._loading import load
    from .surgery.check import check_compatible

    if args.max_vocab is not None and args.max_vocab <= 0:
        raise _error(f"--max-vocab must be a positive number of ids, not {args.max_vocab}")
    texts = _texts(args)
    parallel = _parallel(args.parallel)
    id_map = None
    if args.id_map is not None:
        from .surgery.prune import IdMap

        if not Path(args.id_map).is_file():
            raise _error(f"--id-map {args.id_map}: no such file")
        id_map = IdMap.load(args.id_map)
    old, new = load(args.old), load(args.new)
    report = check_compatible(
        old, new, texts, max_vocab=args.max_vocab, allow_gaps=args.allow_gaps,
        parallel=parallel, adversarial=not args.no_adversarial, removed_ok=args.removed_ok,
        id_map=id_map,
    )
    if args.html:
        from .report import write_atomic

        written = write_atomic(Path(args.html), report.to_html(
            title=f"tokensmith check: {args.old} → {args.new}"))
        print(f"wrote {written} (open it in any browser)", file=sys.stderr)
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
    else:
        print(report.format_table())
    if not report.ok:
        print(f"tokensmith: {args.new} is not compatible with {args.old}: "
              f"{len(report.failures)} broken invariant"
              f"{'s' if len(report.failures) != 1 else ''}", file=sys.stderr)
        return EXIT_BROKEN
    return EXIT_OK


def add_command(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    """Add ``check`` to the ``tokensmith`` parser."""
    p = sub.add_parser(
        "check", help="prove a changed tokenizer keeps the old ids (exit 1 if not)",
        description="Check that NEW keeps every promise OLD made to a trained model: the\n"
                    "old ids, the special tokens, reachable tokens, lossless round trips,\n"
                    "and unchanged ids on text that no new token applies to.",
        epilog=_EPILOG, formatter_class=formatter,
    )
    p.add_argument("old", metavar="OLD",
                   help="the tokenizer the model was trained with: a file, folder or name "
                        "(cl100k_base …)")
    p.add_argument("new", metavar="NEW", help="the changed tokenizer: a file, folder or name")
    p.add_argument("--text", nargs="+", action="extend", metavar="FILE",
                   help="UTF-8 text files to encode with both (cut into documents at blank "
                        "lines)")
    p.add_argument("--string", action="append", metavar="S",
                   help="a text given on the command line (repeatable)")
    p.add_argument("--parallel", nargs="+", action="extend", metavar="FILE",
                   help="line-aligned translations, one file per language (de.txt is de), "
                        "for token counts per language before and after")
    p.add_argument("--max-vocab", type=int, metavar="N",
                   help="the model's embedding rows: fail when NEW has more ids")
    p.add_argument("--allow-gaps", action="store_true",
                   help="accept ids below the vocabulary size that have no token")
    p.add_argument("--id-map", metavar="FILE",
                   help="the id map a prune wrote (IdMap.save): where each old id went")
    p.add_argument("--removed-ok", action="store_true",
                   help="count old ids missing from NEW or marked unused (after a prune) "
                        "instead of failing")
    p.add_argument("--no-adversarial", action="store_true",
                   help="leave out the built-in adversarial Unicode texts")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--html", metavar="PATH", help="also write the report as an HTML page")
    p.set_defaults(func=cmd_check)
