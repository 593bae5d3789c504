"""``tokensmith compare | evaluate | diagnose``: the measuring half of the command line.

Registered by :func:`tokensmith.cli.build_parser`; errors are
:class:`tokensmith.cli.CommandError` (one line, exit status 2). Missing or
unreadable inputs become warnings in the output as long as something can
still be measured.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_commands"]

_COMPARE_EPILOG = """\
examples:
  # GPT-2 (BPE), BERT (WordPiece) and T5 (Unigram) on mixed Chinese-English text
  tokensmith compare gpt2/tokenizer.json bert-base-uncased/tokenizer.json t5/tokenizer.json \\
      --string "Tokenizers cut text into pieces. 分词器把文本切成小块。"

  # your tokenizer against named ones, on files, with an HTML report
  tokensmith compare my-tok/ cl100k_base o200k_base --text en.txt zh.txt code.py \\
      --html report.html

  # fragmentation of your domain's terms, parity on line-aligned translations
  tokensmith compare my-tok/ gpt2 --terms terms.txt --parallel pud/*.txt --pivot en

  tokensmith compare a.json b.json --text corpus.txt --json > scores.json

Each --text file is measured on its own and named after the file (en.txt ->
en), cut into documents at blank lines (--docs). --parallel files are
line-aligned translations named by language (de.txt -> de). A tokenizer that
fails to load, an empty file or unequal parallel files give a warning and the
rest is still measured. Definitions of every metric: python -m pydoc
tokensmith.evaluate
"""

_EVALUATE_EPILOG = """\
examples:
  tokensmith evaluate my-tok/ --text en.txt zh.txt
  tokensmith evaluate cl100k_base --text docs.txt --context-length 8192
  tokensmith evaluate my-tok/ --terms products.txt --parallel pud/*.txt --html eval.html
"""

_DIAGNOSE_EPILOG = """\
examples:
  tokensmith diagnose my-tok/                       # merges over time, lengths, scripts
  tokensmith diagnose my-tok/ --text corpus.txt     # compare scripts with the corpus
  tokensmith diagnose my-tok/ gpt2 --html learned.html
"""


def _error(message: str) -> Exception:
    from ._cli_common import CommandError

    return CommandError(message)


def _read(path: str, max_bytes: int | None, warnings: list[str]) -> str | None:
    """A UTF-8 file's text (its first ``max_bytes``, cut after a newline), or None."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            data = f.read() if max_bytes is None else f.read(max_bytes + 1)
    except OSError as e:
        warnings.append(f"{path}: cannot read: {e.strerror or e}")
        return None
    if max_bytes is not None and len(data) > max_bytes:
        data = data[:max_bytes]
        cut = data.rfind(b"\n")
        if cut > 0:
            data = data[: cut + 1]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        if max_bytes is not None and e.start >= len(data) - 3:
            return data[: e.start].decode("utf-8")  # a character cut at the limit
        warnings.append(f"{path}: invalid UTF-8 at byte offset {e.start}; invalid bytes "
                        f"were replaced by U+FFFD")
        return data.decode("utf-8", "replace")


def _names(paths: list[str]) -> list[str]:
    """File stems, with the parent folder added where two stems are equal."""
    stems = [Path(p).stem or p for p in paths]
    out = []
    for p, s in zip(paths, stems, strict=True):
        if stems.count(s) > 1:
            parent = Path(p).parent.name
            s = f"{parent}/{s}" if parent else p
        out.append(s)
    return out


def _inputs(args: argparse.Namespace) -> dict[str, Any]:
    from .evaluate import split_documents

    warnings: list[str] = []
    max_bytes = args.max_bytes
    if max_bytes is not None and max_bytes <= 0:
        raise _error("--max-bytes must be positive")
    texts: dict[str, list[str]] = {}
    files = list(dict.fromkeys(args.text or []))
    for name, path in zip(_names(files), files, strict=True):
        content = _read(path, max_bytes, warnings)
        if content is not None:
            texts[name] = split_documents(content, args.docs)
    for k, s in enumerate(args.string or [], 1):
        texts[f"string {k}" if len(args.string) > 1 else "string"] = [s]
    terms = None
    if args.terms is not None:
        content = _read(args.terms, None, warnings)
        if content is not None:
            terms = content.splitlines()
    parallel: dict[str, list[str]] | None = None
    if args.parallel:
        pfiles = list(dict.fromkeys(args.parallel))
        parallel = {}
        for name, path in zip(_names(pfiles), pfiles, strict=True):
            content = _read(path, None, warnings)
            if content is not None:
                parallel[name] = content.splitlines()
        if not parallel:
            parallel = None
    if not texts and terms is None and parallel is None:
        problems = "; ".join(warnings)
        raise _error("nothing to measure: give --text FILE, --string TEXT, --terms FILE or "
                     "--parallel FILE..." + (f" ({problems})" if problems else ""))
    return {"texts": texts or None, "terms": terms, "parallel": parallel,
            "warnings": warnings}


def _segmenter(spec: str | None) -> Any:
    """``MODULE:FUNCTION`` (e.g. ``jieba:lcut``): a callable from text to its words."""
    if spec is None:
        return None
    import importlib

    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise _error(f"--segmenter {spec!r}: give MODULE:FUNCTION, e.g. jieba:lcut")
    try:
        found: Any = importlib.import_module(module)
        for part in attr.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as e:
        raise _error(f"--segmenter {spec!r}: {e}") from None
    if not callable(found):
        raise _error(f"--segmenter {spec!r} is not a function")
    return found


def _run(args: argparse.Namespace, tokenizers: list[str]) -> Any:
    from .compare import compare

    if args.context_length is not None and args.context_length <= 0:
        raise _error("--context-length must be positive")
    segmenter = _segmenter(args.segmenter)
    given = _inputs(args)
    comp = compare(
        tokenizers, given["texts"], terms=given["terms"], parallel=given["parallel"],
        pivot=args.pivot, context_length=args.context_length, segmenter=segmenter,
        diagnostics=not args.no_diagnostics,
        baselines=[b for b in (getattr(args, "baselines", None) or "").split(",") if b],
    )
    comp.warnings[:0] = given["warnings"]
    return comp


def _write_html(path: str, html_text: str) -> None:
    from .report import write_atomic

    written = write_atomic(Path(path), html_text)
    print(f"wrote {written} (open it in any browser)", file=sys.stderr)


def cmd_compare(args: argparse.Namespace) -> int:
    comp = _run(args, list(dict.fromkeys(args.tokenizers)))
    if args.html:
        _write_html(args.html, comp.to_html())
    if args.json:
        print(comp.to_json())
    else:
        print(comp.table("markdown" if args.markdown else "text"))
    # (the others were measured and shown; the run still did not do all it was asked)
    for name, why in comp.unloaded.items():
        print(f"tokensmith: error: {name} could not be loaded: {why}", file=sys.stderr)
    return 1 if comp.unloaded else 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from .compare import format_table

    comp = _run(args, [args.tokenizer])
    if args.html:
        _write_html(args.html, comp.to_html(title=f"tokensmith evaluation: {comp.names[0]}"))
    if args.json:
        print(comp.to_json())
        return 0
    name = comp.names[0]
    out: list[str] = []
    for corpus, ev in comp.results[name].items():
        ev.warnings = []  # printed once, below
        out.append(f"on {corpus}: " + ev.summary())
    fmt = "markdown" if args.markdown else "text"
    for title, headers, rows in comp.sections():
        if title.startswith(("Parity", "Terms", "Vocabulary by script")):
            out.append(f"{title}\n{format_table(headers, rows, fmt)}")
    out += [f"warning: {w}" for w in comp.warnings]
    print("\n\n".join(out))
    return 0


def cmd_diagnose(args: argparse.Namespace) -> int:
    from ._loading import load
    from .diagnostics import diagnose
    from .evaluate import split_documents, tokenizer_name

    warnings: list[str] = []
    texts: list[str] | None = None
    if args.text:
        texts = []
        for path in args.text:
            content = _read(path, args.max_bytes, warnings)
            if content is not None:
                texts.extend(split_documents(content, "file"))
    results = []
    for source in dict.fromkeys(args.tokenizers):
        tok = load(source) if len(args.tokenizers) == 1 else _try_load(source, warnings)
        if tok is None:
            continue
        results.append(diagnose(tok, texts=texts, name=tokenizer_name(source)))
    if not results:
        raise _error("no tokenizer could be loaded: " + "; ".join(warnings))
    if args.html:
        from .report import render_diagnostics

        _write_html(args.html, render_diagnostics(results))
    if args.json:
        print(json.dumps([d.to_dict() for d in results], ensure_ascii=False, indent=2))
    else:
        print("\n\n".join(d.summary() for d in results))
    for w in warnings:
        print(f"tokensmith: warning: {w}", file=sys.stderr)
    return 0


def _try_load(source: str, warnings: list[str]) -> Any:
    from ._loading import load
    from .errors import TokenizerError

    try:
        return load(source)
    except (TokenizerError, OSError) as e:
        warnings.append(f"{source}: could not load: {e}")
        return None


def _add_inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--text", nargs="+", action="extend", metavar="FILE",
                   help="UTF-8 text files, each measured on its own")
    p.add_argument("--string", action="append", metavar="TEXT",
                   help="a text given on the command line (repeatable)")
    p.add_argument("--docs", choices=("paragraphs", "lines", "file"), default="paragraphs",
                   help="how a --text file is cut into documents for the length statistics "
                        "(default: at blank lines)")
    p.add_argument("--max-bytes", type=int, metavar="N",
                   help="read only the first N bytes of each --text file (cut after a newline)")
    p.add_argument("--terms", metavar="FILE",
                   help="a file of terms, one a line, to check for fragmentation")
    p.add_argument("--parallel", nargs="+", action="extend", metavar="FILE",
                   help="line-aligned translations, one file per language (named by the file: "
                        "de.txt is de)")
    p.add_argument("--pivot", default="en", metavar="LANG",
                   help="the language parity is relative to (default en)")
    p.add_argument("--context-length", type=int, metavar="N",
                   help="also count the documents longer than N tokens")
    p.add_argument("--segmenter", metavar="MODULE:FUNCTION",
                   help="a function from text to its words for fertility, e.g. jieba:lcut "
                        "(default: letter runs, one word per Han/kana character)")
    p.add_argument("--no-diagnostics", action="store_true",
                   help="leave out what each tokenizer learned (scripts, merges over time)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument("--markdown", action="store_true", help="print Markdown tables")
    p.add_argument("--html", metavar="PATH",
                   help="also write a self-contained HTML report with plots")


def add_commands(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    """Add ``compare``, ``evaluate`` and ``diagnose`` to the ``tokensmith`` parser."""
    p = sub.add_parser(
        "compare", help="tokenizers side by side on the same texts: cost, words, fairness",
        description="Measure several tokenizers on the same texts: tokens per byte and per\n"
                    "word, unknown tokens, vocabulary use, document lengths, fragmentation of\n"
                    "terms, parity across languages; as tables, JSON or an HTML report.",
        epilog=_COMPARE_EPILOG, formatter_class=formatter,
    )
    p.add_argument("tokenizers", nargs="+", metavar="TOKENIZER",
                   help="tokenizer files or folders (tokenizer.json, *.tiktoken, *.model, "
                        "vocab.txt …) or names (cl100k_base, o200k_base, gpt2)")
    _add_inputs(p)
    p.add_argument("--baselines", metavar="KINDS",
                   help="also measure word-level and/or character-level baselines built "
                        "from the texts, as large as the largest vocabulary compared: "
                        "word, char or word,char")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "evaluate", help="measure one tokenizer on texts (every metric, explained)",
        description="Measure one tokenizer: compression, fertility, unknown and byte-fallback\n"
                    "rates, vocabulary use, document lengths, Rényi efficiency, terms, parity.",
        epilog=_EVALUATE_EPILOG, formatter_class=formatter,
    )
    p.add_argument("tokenizer", metavar="TOKENIZER", help="a tokenizer file, folder or name")
    _add_inputs(p)
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser(
        "diagnose", help="what a tokenizer learned: merges over time, lengths, scripts",
        description="Show what a tokenizer learned: mean token length by merge rank, the\n"
                    "token length histogram, and the share of the vocabulary per script.",
        epilog=_DIAGNOSE_EPILOG, formatter_class=formatter,
    )
    p.add_argument("tokenizers", nargs="+", metavar="TOKENIZER",
                   help="tokenizer files, folders or names")
    p.add_argument("--text", nargs="+", action="extend", metavar="FILE",
                   help="texts to compare the vocabulary's scripts with")
    p.add_argument("--max-bytes", type=int, metavar="N",
                   help="read only the first N bytes of each --text file")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--html", metavar="PATH", help="also write an HTML report with plots")
    p.set_defaults(func=cmd_diagnose)
