"""The ``tokensmith`` command line: it mirrors the Python API.

``tokensmith train | encode | decode | count | inspect | demo | serve | compare |
evaluate | diagnose``; each
subcommand's ``--help`` shows examples. Errors in what the user gave
(files, options, text) print ``tokensmith: error: …`` and exit with 2.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import traceback
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, NoReturn, TextIO

from . import patterns
from ._cli_common import CommandError, _check_writable, _shown, _tokenizer_path
from ._sp_charsmap import RULE_NAMES
from ._version import __version__
from .errors import CorpusEncodingError, DisallowedSpecialTokenError, TokenizerError

__all__ = ["main", "CommandError"]

EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141

_STDIN_BLOCK = 1 << 20


# ------------------------------------------------------------------ helpers


def _err(message: str) -> None:
    print(f"tokensmith: error: {message}", file=sys.stderr)


def _os_message(e: OSError) -> str:
    if e.filename is not None and e.strerror:
        return f"{e.filename}: {e.strerror}"
    return str(e)


def _load(path: str) -> Any:
    from ._loading import load

    return load(path)


def _utf8(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CommandError(
            f"{name}: invalid UTF-8 at byte offset {e.start}; tokensmith reads UTF-8 text "
            f"(convert it first, e.g. with iconv)"
        ) from None


def _stdin_is_terminal() -> bool:
    try:
        return sys.stdin is None or sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def _read_stdin() -> str:
    if sys.stdin is None:
        raise CommandError("there is no standard input to read text from")
    buf = getattr(sys.stdin, "buffer", None)
    if buf is not None:
        return _utf8(buf.read(), "<stdin>")
    return sys.stdin.read()


def _read_text(args: argparse.Namespace) -> str:
    """The text to work on: the TEXT argument, ``--file``, or standard input."""
    if args.text is not None and args.file is not None:
        raise CommandError("give the text as an argument or with --file, not both")
    if args.file is not None and args.file != "-":
        return _utf8(Path(args.file).read_bytes(), args.file)
    if args.text is not None and args.text != "-":
        text = str(args.text)
        if "\n" not in text and len(text) < 4096 and Path(text).is_file():
            print(f"tokensmith: note: {text!r} is used as the text itself; to read the "
                  f"file it names, use --file {text}", file=sys.stderr)
        return text
    if args.file is None and args.text is None and _stdin_is_terminal():
        raise CommandError(
            "no text: give it as an argument, with --file FILE, or pipe it in "
            "(echo -n 'hello' | tokensmith ...)"
        )
    return _read_stdin()


def _stdin_blocks(errors: str) -> Iterator[str]:
    """Standard input as text blocks cut after a newline, for training on ``-``."""
    if sys.stdin is None:
        raise CommandError("there is no standard input to read a corpus from")
    if _stdin_is_terminal():
        print("reading the corpus from standard input (end it with Ctrl-D) …", file=sys.stderr)
    buf = getattr(sys.stdin, "buffer", None)
    if buf is None:  # a text stream (tests, embedding): already decoded
        while True:
            lines = sys.stdin.readlines(_STDIN_BLOCK)
            if not lines:
                return
            yield "".join(lines)
    handler = {"strict": "strict", "replace": "replace", "skip": "ignore"}[errors]
    offset = 0
    pending: list[bytes] = []  # bytes after the last newline seen, not yet decoded
    while True:
        chunk = buf.read(_STDIN_BLOCK)
        if chunk:
            nl = chunk.rfind(b"\n")
            if nl < 0:
                pending.append(chunk)
                continue
            data = b"".join(pending) + chunk[: nl + 1]
            pending = [chunk[nl + 1 :]]
        else:
            data = b"".join(pending)
        if data:
            try:
                text = data.decode("utf-8", handler)
            except UnicodeDecodeError as e:
                raise CorpusEncodingError(
                    f"<stdin>: invalid UTF-8 at byte offset {offset + e.start}",
                    "<stdin>",
                    offset + e.start,
                ) from None
            offset += len(data)
            yield text
        if not chunk:
            return


def _special_policy(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "allowed_special": "all" if args.allow_special else frozenset(),
        "disallowed_special": () if args.ordinary else "all",
    }


def _cli_special_error(e: DisallowedSpecialTokenError) -> CommandError:
    return CommandError(
        f"the text contains the special token {e.token!r}. Pass --allow-special to encode it "
        f"as the special token, or --ordinary to encode it as ordinary text"
    )


def _display_options(args: argparse.Namespace, stream: TextIO) -> dict[str, Any]:
    from .display import pick_escapes, use_color

    when: Literal["auto", "always", "never"] = "never" if args.no_color else args.color
    return {
        "color": use_color(stream, when),
        "escapes": args.escapes or pick_escapes(stream),
    }


def _visible(data: bytes | str) -> str:
    from .display import escape

    return "".join(txt for txt, _ in escape(data))


# ------------------------------------------------------------------ commands
def _fit(args: argparse.Namespace, files: list[str], texts: Any, **options: Any) -> Any:
    """Train on FILES (or on --counts); with --count-only, count FILES the way this
    training would, save the counts to -o and return None."""
    from .counts import WordCounts, count
    from .trainers import train

    if args.count_only:
        options.pop("vocab_size", None)
        bound = {"memory_limit": args.memory_limit} if args.memory_limit else {}
        counts = count(files or None, texts=texts, **bound, **options)
        print(f"saved {_shown(counts.save(args.out))} ({len(counts):,} distinct pieces, "
              f"{counts.total:,} counted)")
        return None
    if args.counts:
        parts = [WordCounts.load(p) for p in args.counts]
        return train(counts=WordCounts.merge(parts), **options)
    bound = {"memory_limit": args.memory_limit} if args.memory_limit else {}
    counts = count(files or None, texts=texts, **bound, **options)
    if args.keep_counts or counts.bytes_seen >= KEEP_COUNTS_BYTES:
        # (a long run keeps its counts, so that a failed or changed training need
        # not read the corpus again)
        path = _counts_path(args)
        counts.save(path)
        print(f"counts saved to {_shown(path)}: train again from them with --counts "
              f"{_shown(path)}", file=sys.stderr)
    for name in ("input_sentence_size", "sample_bytes", "sample_seed"):
        options.pop(name, None)
    return train(counts=counts, **options)


#: A training run that counts this many bytes or more keeps its counts (``--keep-counts``
#: keeps them whatever the size).
KEEP_COUNTS_BYTES = 256 << 20


def _counts_path(args: argparse.Namespace) -> Path:
    """Where a training run keeps its counts: beside its output, as ``*.counts``."""
    out = Path(args.out)
    if out.suffix.lower() in (".json", ".model"):
        return out.with_suffix(".counts")
    return _tokenizer_path(args.out).with_suffix(".counts")


def _size(text: str) -> int:
    """A size on the command line: bytes, or a number with K, M, G or T (powers of 1024)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper().removesuffix("B")
    try:
        if t and t[-1] in units:
            return int(float(t[:-1]) * units[t[-1]])
        return int(t)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size (e.g. 4G, 500M, 1000000)") from None


def _sampling(args: argparse.Namespace) -> dict[str, object]:
    """The sampling options of ``train``, as the trainers take them."""
    return {"input_sentence_size": args.input_sentence_size,
            "sample_bytes": args.sample_bytes, "sample_seed": args.sample_seed}


def _train_wordlevel(args: argparse.Namespace, files: list[str], texts: Any, target: Path,
                     verbose: bool) -> int:

    for flag, value in (("--char-level", args.char_level or None),
                        ("--max-token-length", args.max_token_length),
                        ("--limit-alphabet", args.limit_alphabet),
                        ("--end-of-word-suffix", args.end_of_word_suffix),
                        ("--normalizer", args.normalizer)):
        if value is not None:
            raise CommandError(f"{flag} does not apply to --model wordlevel")
    unk = args.unk_token or "[UNK]"
    specials = [unk] if args.special_tokens is None else args.special_tokens
    try:
        tok = _fit(args, files, texts, model="wordlevel", vocab_size=args.vocab_size,
                    min_frequency=args.min_frequency or 0, unk_token=unk,
                    special_tokens=[] if args.no_special_tokens else specials,
                    split=args.split or "whitespace", lowercase=args.lowercase,
                    errors=args.errors, text_field=args.text_field, verbose=verbose,
                    **_sampling(args))
    except CorpusEncodingError as e:
        raise CommandError(f"{e} On the command line: --errors replace or --errors skip.") from None
    if tok is None:  # --count-only
        return 0
    saved = tok.save(target)
    print(f"saved {_shown(saved)}")
    return 0



def cmd_train(args: argparse.Namespace) -> int:

    if not args.char_level and args.model == "bpe":
        for flag, value in (("--end-of-word-suffix", args.end_of_word_suffix),
                            ("--limit-alphabet", args.limit_alphabet)):
            if value is not None:
                raise CommandError(f"{flag} applies to character-level BPE: add --char-level")
    sp_model = args.model in ("unigram", "sentencepiece-bpe")
    if args.count_only:
        if args.counts:
            raise CommandError("--count-only counts FILES; --counts reads counts already made")
        if not args.out.lower().endswith(".counts"):
            raise CommandError("with --count-only, -o names the counts file: end it in .counts")
        target = Path(args.out)
    elif sp_model and args.out.lower().endswith(".model"):
        target = Path(args.out)
    else:
        target = _tokenizer_path(args.out)
    _check_writable(target)
    if not args.files and not args.counts:
        raise CommandError("give FILES to train on (or '-' for standard input), or --counts")
    if args.files and args.counts:
        raise CommandError("give FILES or --counts, not both")
    if not sp_model:
        for flag, value in (("--character-coverage", args.character_coverage),
                            ("--max-piece-length", args.max_piece_length),
                            ("--user-defined-symbol", args.user_defined_symbols),
                            ("--normalization-rule-name", args.normalization_rule_name)):
            if value is not None:
                raise CommandError(f"{flag} applies to --model unigram or sentencepiece-bpe")
        if args.byte_fallback:
            raise CommandError("--byte-fallback applies to --model unigram or sentencepiece-bpe")
    sources = list(dict.fromkeys(args.files))
    files = [f for f in sources if f != "-"]
    for f in files:
        if not any(ch in f for ch in "*?[") and not Path(f).exists():
            raise CommandError(f"{f}: no such file or folder")
    texts = _stdin_blocks(args.errors) if "-" in sources else None
    specials = ["<|endoftext|>"] if args.special_tokens is None else args.special_tokens
    if args.no_special_tokens:
        specials = []
    verbose = not args.quiet
    sys.stdout.flush()
    if sp_model:
        return _train_sentencepiece(args, files, texts, target, verbose)
    if args.split is not None and args.model != "wordlevel":
        raise CommandError("--split applies to --model wordlevel")
    if args.score is not None and args.model != "wordpiece":
        raise CommandError("--score applies to --model wordpiece")
    if args.candidates is not None and args.model != "wordpiece":
        raise CommandError("--candidates applies to --model wordpiece")
    if args.model == "wordlevel":
        return _train_wordlevel(args, files, texts, target, verbose)
    if args.model == "wordpiece":
        if args.char_level or args.max_token_length is not None:
            raise CommandError("--char-level and --max-token-length apply to --model bpe")
        options: dict[str, object] = {
            "lowercase": True,  # as BERT's uncased vocabularies
            "errors": args.errors, "text_field": args.text_field, "verbose": verbose,
            "trace": args.trace, "progress": verbose, **_sampling(args),
        }
        if args.min_frequency is not None:
            options["min_frequency"] = args.min_frequency
        if args.limit_alphabet is not None:
            options["limit_alphabet"] = args.limit_alphabet
        if args.score is not None:
            options["score"] = args.score
        if args.candidates is not None:
            options["candidates"] = args.candidates
        if args.special_tokens is not None or args.no_special_tokens:
            options["special_tokens"] = specials
        try:
            tok = _fit(args, files, texts, model="wordpiece",
                        vocab_size=args.vocab_size, **options)
        except CorpusEncodingError as e:
            raise CommandError(
                f"{e} On the command line: --errors replace or --errors skip."
            ) from None
        if tok is None:  # --count-only
            return 0
        saved = tok.save(target)
        print(f"saved {_shown(saved)}")
        return 0
    try:
        tok = _fit(
            args,
            files,
            texts,
            model=args.model,
            vocab_size=args.vocab_size,
            min_frequency=args.min_frequency or 0,
            special_tokens=specials,
            max_token_length=args.max_token_length,
            pattern=args.pattern,
            byte_level=not args.char_level,
            end_of_word_suffix=args.end_of_word_suffix,
            limit_alphabet=args.limit_alphabet,
            unk_token=args.unk_token or "<unk>",
            lowercase=args.lowercase,
            normalizer=args.normalizer,
            errors=args.errors,
            text_field=args.text_field,
            verbose=verbose,
            trace=args.trace,
            progress=verbose,
            **_sampling(args),
        )
    except CorpusEncodingError as e:
        raise CommandError(
            f"{e} On the command line: --errors replace or --errors skip."
        ) from None
    if tok is None:  # --count-only
        return 0
    saved = tok.save(target)
    print(f"saved {_shown(saved)}")
    if args.vocab_merges:
        for path in tok.save_vocab_merges(args.vocab_merges):
            print(f"saved {_shown(path)}")
        gpt2 = patterns.resolve(args.pattern) == patterns.GPT2
        if verbose and (args.char_level or not gpt2):
            what = ("character-level BPE" if args.char_level
                    else f"the {args.pattern!r} pre-tokenizer pattern")
            print(f"note: vocab.json + merges.txt cannot record {what}; readers of that pair "
                  f"assume GPT-2's byte-level BPE. For identical encodings load "
                  f"{_shown(saved)}", file=sys.stderr)
    if verbose:
        print(f"try it: tokensmith encode {shlex.quote(_shown(saved))} --show 'hello world'")
    return EXIT_OK


def _train_sentencepiece(args: argparse.Namespace, files: list[str],
                         texts: Iterable[str] | None, target: Path, verbose: bool) -> int:
    """``train --model unigram | sentencepiece-bpe``: a SentencePiece model, saved as
    ``.model`` (when ``--out`` ends so) or as ``tokenizer.json`` + ``tokenizer.model``."""

    for flag, used in (("--char-level", args.char_level),
                       ("--max-token-length", args.max_token_length is not None),
                       ("--end-of-word-suffix", args.end_of_word_suffix is not None),
                       ("--limit-alphabet", args.limit_alphabet is not None),
                       ("--min-frequency", args.min_frequency is not None),
                       ("--vocab-merges", args.vocab_merges is not None),
                       ("--lowercase", args.lowercase),
                       ("--normalizer", args.normalizer is not None),
                       ("--pattern", args.pattern != "gpt4")):
        if used:
            raise CommandError(f"{flag} does not apply to --model {args.model}")
    options: dict[str, object] = {
        "errors": args.errors, "text_field": args.text_field, "verbose": verbose,
        "progress": verbose, "byte_fallback": args.byte_fallback, **_sampling(args),
    }
    if args.model == "sentencepiece-bpe":
        options["trace"] = args.trace
    if args.character_coverage is not None:
        options["character_coverage"] = args.character_coverage
    if args.max_piece_length is not None:
        options["max_piece_length"] = args.max_piece_length
    if args.normalization_rule_name is not None:
        options["normalization_rule_name"] = args.normalization_rule_name
    if args.user_defined_symbols:
        options["user_defined_symbols"] = args.user_defined_symbols
    if args.no_special_tokens:
        options["special_tokens"] = []
    elif args.special_tokens is not None:
        options["special_tokens"] = args.special_tokens
    try:
        tok = _fit(args, files, texts, model=args.model,
                    vocab_size=args.vocab_size, **options)
    except CorpusEncodingError as e:
        raise CommandError(f"{e} On the command line: --errors replace or --errors skip.") from None
    if tok is None:  # --count-only
        return 0
    if target.suffix.lower() == ".model":
        print(f"saved {_shown(tok.save(target))}")
    else:
        print(f"saved {_shown(tok.save(target))}")
        print(f"saved {_shown(tok.save(target.with_name('tokenizer.model')))}")
    if verbose:
        print(f"try it: tokensmith encode {shlex.quote(_shown(target))} --show 'hello world'")
    return EXIT_OK


def cmd_convert(args: argparse.Namespace) -> int:
    from .convert import convert

    check = None
    if args.check_file:
        check = [Path(f).read_text(encoding="utf-8") for f in args.check_file]
    written = convert(args.source, args.target, check_text=check, format=args.format)
    print(f"saved {_shown(written)} (checked: same vocabulary, same ids and decoded text)")
    return EXIT_OK


def cmd_encode(args: argparse.Namespace) -> int:
    tok = _load(args.tokenizer)
    text = _read_text(args)
    policy = _special_policy(args)
    try:
        if args.html:
            _write_html(args, tok, text, policy)
        if args.show or (args.ids and not args.html):
            from .display import pieces, render, summary

            opts = _display_options(args, sys.stdout)
            items = pieces(tok, text, **policy)
            print(render(items, show_ids=args.ids, **opts).rstrip("\n"))
            n = sum(1 for p in items if p.id is not None)
            print(f"({summary(text, n)})")
        elif args.json:
            enc = tok.encode_full(text, **policy)
            print(json.dumps({"ids": enc.ids, "tokens": enc.tokens}, ensure_ascii=False))
        elif not args.html:
            ids = tok.encode(text, **policy)
            print(" ".join(map(str, ids)))
    except DisallowedSpecialTokenError as e:
        raise _cli_special_error(e) from None
    return EXIT_OK


def _write_html(args: argparse.Namespace, tok: Any, text: str, policy: dict[str, Any]) -> None:
    """``encode --html FILE``: the token view as a self-contained HTML page."""
    from ._io import atomic_write
    from .display import summary, to_html_page

    target = Path(args.html)
    _check_writable(target)
    page = to_html_page(tok, text, args.ids, title=f"{args.tokenizer}: tokens", **policy)
    atomic_write(target, page)
    n = tok.count(text, **policy)
    print(f"wrote {_shown(target)} ({summary(text, n)})", file=sys.stderr)


_ID_SPLIT = re.compile(r"[\s,\[\]]+")


def _parse_ids(words: Sequence[str]) -> list[int]:
    ids: list[int] = []
    for word in words:
        for item in _ID_SPLIT.split(word):
            if not item:
                continue
            try:
                ids.append(int(item))
            except ValueError:
                raise CommandError(
                    f"not a token id: {item!r} "
                    f"(give integers, e.g. tokensmith decode TOK 15339 1917)"
                ) from None
    return ids


def cmd_decode(args: argparse.Namespace) -> int:
    tok = _load(args.tokenizer)
    if args.ids:
        ids = _parse_ids(args.ids)
    else:
        if _stdin_is_terminal():
            raise CommandError(
                "no ids: give them as arguments or pipe them in "
                "(tokensmith encode TOK 'hi' | tokensmith decode TOK)"
            )
        ids = _parse_ids([_read_stdin()])
    text = tok.decode(ids, skip_special_tokens=args.skip_special)
    sys.stdout.write(text if args.no_newline else text + "\n")
    return EXIT_OK


def cmd_count(args: argparse.Namespace) -> int:
    tok = _load(args.tokenizer)
    text = _read_text(args)
    try:
        n = tok.count(text, **_special_policy(args))
        if args.json:
            print(json.dumps({"tokens": n, "characters": len(text),
                              "bytes": len(text.encode("utf-8", "surrogatepass"))}))
        else:
            print(n)
    except DisallowedSpecialTokenError as e:
        raise _cli_special_error(e) from None
    return EXIT_OK


def _describe(component: Any) -> str:
    """One pipeline component (``tokenizer.json`` spelling) as a short line."""
    if component is None:
        return "none"
    if not isinstance(component, dict):
        return str(component)
    kind = str(component.get("type", "?"))
    if kind == "Sequence":
        for key in ("normalizers", "pretokenizers", "pre_tokenizers", "processors", "decoders"):
            if isinstance(component.get(key), list):
                inner = ", ".join(_describe(c) for c in component[key])
                return f"Sequence[{inner}]"
    if kind == "Split":
        pat = component.get("pattern") or {}
        regex = pat.get("Regex") if isinstance(pat, dict) else None
        if regex is None and isinstance(pat, dict):
            regex = pat.get("String")
        names = [n for n, r in patterns.NAMED.items() if r == regex]
        if names:
            return f"Split({'/'.join(names)} pattern)"
        shown = regex if regex is None or len(regex) <= 40 else regex[:37] + "..."
        return f"Split({shown!r})"
    details = {k: v for k, v in component.items()
               if k in ("suffix", "prefix", "replacement") and v}
    if details:
        return f"{kind}({', '.join(f'{k}={v!r}' for k, v in details.items())})"
    return kind


def _inspect_data(tok: Any, top: int) -> dict[str, Any]:
    from .formats import hf_json

    spec = hf_json.document(tok)
    model = spec.get("model") or {}
    vocab = tok.get_vocab()
    specials = tok.special_tokens
    merges = tok.merges
    byte_level = tok.is_byte_level

    def data(token: str) -> bytes | str:
        i = vocab.get(token)
        if byte_level and i is not None:
            return tok.id_to_bytes(i) or token
        return token

    def merge_row(rank: int) -> dict[str, Any]:
        a, b = merges[rank]
        return {"rank": rank, "left": _visible(data(a)), "right": _visible(data(b)),
                "id": vocab.get(a + b), "merged": _visible(data(a + b))}

    first = [merge_row(r) for r in range(min(top, len(merges)))]
    last = [merge_row(r) for r in range(max(len(first), len(merges) - top), len(merges))]
    ordinary = [(t, i) for t, i in vocab.items() if t not in specials]

    def size(item: tuple[str, int]) -> int:
        d = data(item[0])
        return len(d) if isinstance(d, bytes) else len(d)

    longest = sorted(ordinary, key=lambda ti: (-size(ti), ti[1]))[:top]
    kind = str(model.get("type", "?"))
    if kind == "BPE":
        if byte_level:
            kind = "byte-level BPE"
        elif model.get("end_of_word_suffix"):
            kind = f"character-level BPE (end-of-word suffix {model['end_of_word_suffix']!r})"
        else:
            kind = "character-level BPE"
    return {
        "model": kind,
        "vocab_size": tok.vocab_size,
        "special_tokens": specials,
        "unk_token": model.get("unk_token"),
        "merges": len(merges),
        "merged_tokens": len({vocab.get(a + b) for a, b in merges} - {None}),
        "pipeline": {k: _describe(spec.get(k))
                     for k in ("normalizer", "pre_tokenizer", "post_processor", "decoder")},
        "first_merges": first,
        "last_merges": last,
        "longest_tokens": [{"id": i, "token": _visible(data(t)), "length": size((t, i))}
                           for t, i in longest],
        "length_unit": "bytes" if byte_level else "characters",
    }


def cmd_inspect(args: argparse.Namespace) -> int:
    tok = _load(args.tokenizer)
    info = _inspect_data(tok, max(args.top, 0))
    if args.json:
        print(json.dumps(info, ensure_ascii=False, indent=2))
        return EXIT_OK
    out: list[str] = []
    add = out.append
    add(f"tokenizer       {args.tokenizer}")
    add(f"model           {info['model']}")
    add(f"vocab size      {info['vocab_size']:,}")
    specials = info["special_tokens"]
    add("special tokens  " + (", ".join(f"{t} = {i}" for t, i in specials.items()) or "none"))
    if info["unk_token"]:
        add(f"unknown token   {info['unk_token']}")
    from .diagnostics import merge_phrase

    add(f"merges          {merge_phrase(info['merges'], info['merged_tokens'])}")
    for n, (stage, desc) in enumerate(info["pipeline"].items()):
        add(f"{'pipeline' if n == 0 else '':<16}{stage + ':':<16}{desc}")
    for title, rows in (("first merges", info["first_merges"]),
                        ("last merges", info["last_merges"])):
        if not rows:
            continue
        add(f"{title}:")
        for r in rows:
            add(f"  {r['rank']:>7}  [{r['left']}] + [{r['right']}] -> [{r['merged']}]"
                + (f"  id {r['id']}" if r["id"] is not None else ""))
    if info["longest_tokens"]:
        add(f"longest tokens ({info['length_unit']}):")
        for r in info["longest_tokens"]:
            add(f"  {r['length']:>7}  [{r['token']}]  id {r['id']}")
    print("\n".join(out))
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    when: Literal["auto", "always", "never"] = "never" if args.no_color else args.color
    run_demo(
        out=args.out,
        vocab_size=args.vocab_size,
        corpus_mb=args.corpus_mb,
        color=when,
        stream=sys.stdout,
    )
    return EXIT_OK


def _default_tokenizers() -> list[str]:
    """``serve`` with no TOKENIZER: ./tokensmith-demo (from ``tokensmith demo``) and the
    named encodings whose files are already on this machine; nothing is downloaded."""
    from . import pretrained

    found: list[str] = []
    if (Path("tokensmith-demo") / "tokenizer.json").is_file():
        found.append("tokensmith-demo")
    seen: set[Path] = set()
    for name in pretrained.list_encodings():
        try:
            path = pretrained.locate(name, offline=True).resolve()
        except (OSError, TokenizerError, ValueError):
            continue
        if path not in seen:  # gpt2 and r50k_base are one file
            seen.add(path)
            found.append(name)
    return found


def cmd_serve(args: argparse.Namespace) -> int:
    import warnings

    from .serve import RemoteAccessWarning, make_server

    names = list(dict.fromkeys(args.tokenizers)) or _default_tokenizers()
    if not names:
        raise CommandError(
            "no tokenizers to show: name them (tokensmith serve tok.json cl100k_base), or run "
            "`tokensmith demo` first, which saves ./tokensmith-demo (served by default, with "
            "the named encodings already on this machine)"
        )
    if args.max_bytes <= 0:
        raise CommandError("--max-bytes must be positive")
    if not 0 < args.timeout < float("inf"):
        raise CommandError("--timeout must be a positive number of seconds")
    print(f"loading {', '.join(names)} …", file=sys.stderr, flush=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RemoteAccessWarning)
        try:
            server = make_server(names, args.host, args.port, allow_remote=args.allow_remote,
                                 max_bytes=args.max_bytes, log=sys.stderr,
                                 timeout=args.timeout)
        except PermissionError as e:
            raise CommandError(str(e).replace("allow_remote=True, or ", "")) from None
        except OSError as e:
            if e.errno in (98, 48, 10048):  # EADDRINUSE on Linux, macOS, Windows
                raise CommandError(
                    f"port {args.port} on {args.host} is in use: pick another with --port N, "
                    f"or --port 0 for any free port"
                ) from None
            raise
    for w in caught:
        if issubclass(w.category, RemoteAccessWarning):
            print(f"tokensmith: warning: {w.message}", file=sys.stderr)
    with server:
        failed = [e for e in server.entries.values() if e.tokenizer is None]
        for entry in failed:
            print(f"tokensmith: warning: {entry.error}", file=sys.stderr)
        if len(failed) == len(server.entries):
            raise CommandError("none of the tokenizers could be loaded (see above)")
        print(f"tokensmith playground: {server.url}  (Ctrl-C to stop)", flush=True)
        if args.open:
            import webbrowser

            webbrowser.open(server.url)
        try:
            server.serve_forever(poll_interval=0.25)
        except KeyboardInterrupt:
            print("\ntokensmith: stopped", file=sys.stderr)
    return EXIT_OK


# ------------------------------------------------------------------ parser

_TOP_EPILOG = """\
examples:
  tokensmith demo                                    # train a tokenizer on Python's own docs
  tokensmith train corpus/*.txt --vocab-size 32000 --out my-tokenizer/
  tokensmith encode my-tokenizer/ "Hello, world!" --show
  tokensmith encode my-tokenizer/tokenizer.json --file README.md | tokensmith decode my-tokenizer/
  tokensmith count my-tokenizer/ --file README.md
  tokensmith inspect my-tokenizer/
  tokensmith serve my-tokenizer/ cl100k_base         # a web playground on 127.0.0.1:8000
  tokensmith compare my-tokenizer/ gpt2 cl100k_base --text notes.txt --html report.html
  tokensmith diagnose my-tokenizer/                  # what it learned: merges, scripts

Run `tokensmith COMMAND --help` for each command's options and examples.
"""

_TRAIN_EPILOG = """\
examples:
  # byte-level BPE (like GPT-2/GPT-4) with 32k tokens, saved as my-tok/tokenizer.json
  tokensmith train corpus/*.txt --vocab-size 32000 --out my-tok/

  # a whole folder, two special tokens, also write vocab.json + merges.txt
  tokensmith train data/ --vocab-size 8000 --out tok.json \\
      --special-token '<|endoftext|>' --special-token '<|pad|>' --vocab-merges tok-files/

  # text from a pipe ('-' is standard input), GPT-2's pre-tokenizer pattern
  zcat dump.txt.gz | tokensmith train - --vocab-size 4000 --pattern gpt2 --out tok.json

  # classic character-level BPE with an end-of-word marker (Sennrich et al. 2016)
  tokensmith train books.txt --vocab-size 5000 --char-level --end-of-word-suffix '</w>' \\
      --out char-bpe/

  # SentencePiece Unigram (T5/ALBERT style) on raw text, saved as a .model file
  tokensmith train zh.txt --model unigram --vocab-size 8000 --out zh-unigram.model

  # SentencePiece BPE with byte fallback (Llama-2 style): tokenizer.json + tokenizer.model
  tokensmith train corpus.txt --model sentencepiece-bpe --byte-fallback \\
      --vocab-size 32000 --out sp-bpe/

  # the same, text kept as it is (no NFKC; spm_train --normalization_rule_name=identity)
  tokensmith train corpus.txt --model sentencepiece-bpe --normalization-rule-name identity \\
      --vocab-size 32000 --out sp-bpe/

  # a corpus with a few bad bytes: replace them with U+FFFD instead of stopping
  tokensmith train scraped.txt --vocab-size 16000 --errors replace --out tok.json

FILES may be files, folders (read recursively), globs ('data/**/*.txt'),
.gz/.bz2/.xz files and .jsonl files (their "text" field).
"""

_CONVERT_EPILOG = """\
examples:
  tokensmith convert cl100k_base out/tokenizer.json          # a name: its rank file
  tokensmith convert gpt2/tokenizer.json out/vocab.json      # vocab.json + merges.txt
  tokensmith convert llama2/tokenizer.model out/tokenizer.json
  tokensmith convert out/tokenizer.json again.model          # and back
  tokensmith convert bert/tokenizer.json out/vocab.txt       # BERT's vocabulary

A conversion that would change the ids (cl100k as vocab.json + merges.txt, a
byte-level BPE as .model …) is refused with the reason, and nothing is written.
"""

_ENCODE_EPILOG = """\
examples:
  tokensmith encode tok.json "Hello, world!"            # the ids, e.g. 9906 11 1917 0
  tokensmith encode tok.json "Hello, world!" --show     # e.g. [Hello][,][␣world][!]
  tokensmith encode tok.json "Hello, world!" --ids      # e.g. [Hello|9906][,|11][␣world|1917][!|0]
  tokensmith encode tok.json --file notes.txt --show --no-color
  echo -n "piped text" | tokensmith encode tok.json
  tokensmith encode tok.json "a<|endoftext|>b" --allow-special
  tokensmith encode tok.json --file notes.txt --html notes-tokens.html --ids

--show draws token boundaries: coloured backgrounds in a terminal, [brackets]
otherwise. Whitespace is drawn as ␣ (space) → (tab) ↵ (newline); a token that
holds only some of a character's UTF-8 bytes appears as <0xE5>-style bytes.
"""

_DECODE_EPILOG = """\
examples:
  tokensmith decode tok.json 9906 11 1917 0
  tokensmith decode tok.json "[9906, 11, 1917, 0]"
  tokensmith encode tok.json "round trip" | tokensmith decode tok.json
"""

_COUNT_EPILOG = """\
examples:
  tokensmith count tok.json "How many tokens is this?"
  tokensmith count tok.json --file README.md
  cat *.md | tokensmith count tok.json
"""

_INSPECT_EPILOG = """\
examples:
  tokensmith inspect tok.json
  tokensmith inspect my-tokenizer/ --top 20
  tokensmith inspect gpt2-files/vocab.json --json
"""

_DEMO_EPILOG = """\
examples:
  tokensmith demo                          # saves ./tokensmith-demo/tokenizer.json
  tokensmith demo --vocab-size 8000 --out /tmp/pytok
  python -m tokensmith demo --no-color > demo.txt

The demo needs nothing downloaded: it trains on the documentation bundled
with the Python interpreter (pydoc_data.topics) and the standard library's
own .py sources, then shows how the new tokenizer cuts English, Chinese and
Python code.
"""


_SERVE_EPILOG = """\
examples:
  tokensmith serve my-tokenizer/ cl100k_base             # http://127.0.0.1:8000/
  tokensmith serve tok.json llama3/tokenizer.json --port 0 --open
  tokensmith serve                 # ./tokensmith-demo and the named encodings found locally

Paste text and see it cut by every tokenizer at once: counts, ids, each token's
bytes, and the characters whose bytes were split between tokens. With no
TOKENIZER, serves ./tokensmith-demo (saved by `tokensmith demo`) and the named
encodings (cl100k_base, o200k_base …) already on this machine; nothing is
downloaded. The playground listens on 127.0.0.1 only: another address needs
--allow-remote, since it has no authentication.
"""


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=32)


def _add_text_source(p: argparse.ArgumentParser) -> None:
    p.add_argument("text", nargs="?", metavar="TEXT",
                   help="the text ('-' or nothing: read standard input)")
    p.add_argument("-f", "--file", metavar="FILE", help="read the text from a UTF-8 file")
    p.add_argument("--allow-special", action="store_true",
                   help="encode special-token text (e.g. <|endoftext|>) as the special token")
    p.add_argument("--ordinary", action="store_true",
                   help="encode special-token text as ordinary text")


def _add_color(p: argparse.ArgumentParser) -> None:
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="colour token backgrounds: auto (a terminal, no NO_COLOR), always, never")
    p.add_argument("--no-color", action="store_true", help="same as --color never")


TOKENIZER_HELP = ("a tokenizer file (tokenizer.json, .model, .tiktoken, vocab.txt, vocab.json), "
                  "a folder holding one, or a name (cl100k_base, gpt-4o, org/name from the "
                  "Hugging Face cache)")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: the message and where the help is, not the whole
    usage block (``--help`` still prints it)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tokensmith",
        description=("Train, inspect, measure, change and use subword tokenizers (BPE, "
                     "WordPiece, Unigram) from the command line."),
        epilog=_TOP_EPILOG,
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=f"tokensmith {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")

    # train
    p = sub.add_parser(
        "train", help="train a tokenizer on text files and save tokenizer.json",
        description=("Train a tokenizer (byte-level or character-level BPE, WordPiece, "
                     "Unigram, SentencePiece BPE) on files (or standard input) and save it."),
        epilog=_TRAIN_EPILOG, formatter_class=_Formatter,
    )
    p.add_argument("files", nargs="*", metavar="FILES",
                   help="files, folders or globs to train on; '-' reads standard input")
    p.add_argument("--counts", nargs="+", metavar="FILE.counts",
                   help="train on word counts made by --count-only (added up) instead of FILES")
    p.add_argument("--memory-limit", type=_size, metavar="SIZE",
                   help="bound the table of word counts (e.g. 4G, 500M): past it, write "
                        "sorted runs to disk and add them up at the end (exact)")
    p.add_argument("--keep-counts", action="store_true",
                   help="save the word counts beside the output (done anyway from 256 MB "
                        "of text), to train again with --counts without reading the corpus")
    p.add_argument("--count-only", action="store_true",
                   help="count FILES the way this training would and save the counts to -o "
                        "(a .counts file) instead of training; shards counted apart add up")
    p.add_argument("--vocab-size", type=int, required=True, metavar="N",
                   help="total tokens: bytes/alphabet + merges + special tokens")
    p.add_argument("-o", "--out", required=True, metavar="PATH",
                   help="where to save: a .json file, or a folder (gets tokenizer.json)")
    p.add_argument("--model", default="bpe",
                   choices=["bpe", "wordpiece", "unigram", "sentencepiece-bpe", "wordlevel"],
                   help="bpe (default), wordpiece (BERT-style, by likelihood), unigram or "
                        "sentencepiece-bpe (SentencePiece models on raw text), or wordlevel "
                        "(whole words, the baseline)")
    p.add_argument("--min-frequency", type=int, default=None, metavar="N",
                   help="stop merging when no pair occurs N times")
    p.add_argument("--special-token", dest="special_tokens", action="append", metavar="TOKEN",
                   help="a special token (repeatable; default <|endoftext|>)")
    p.add_argument("--no-special-tokens", action="store_true", help="no special tokens at all")
    p.add_argument("--max-token-length", type=int, metavar="N",
                   help="longest learned token, in bytes (characters with --char-level)")
    p.add_argument("--pattern", default="gpt4", metavar="NAME|REGEX",
                   help="pre-tokenizer split: gpt4 (cl100k, default), gpt2, o200k, or a regex")
    p.add_argument("--char-level", action="store_true",
                   help="character-level BPE (words split at whitespace) instead of byte-level")
    p.add_argument("--end-of-word-suffix", metavar="SUFFIX",
                   help="with --char-level: mark word ends, e.g. '</w>'")
    p.add_argument("--limit-alphabet", type=int, metavar="N",
                   help="with --char-level: keep the N most frequent characters")
    p.add_argument("--unk-token", metavar="TOKEN",
                   help="with --char-level: the token for unseen characters (default <unk>); "
                        "with --model wordlevel: for unseen words (default [UNK])")
    p.add_argument("--score", choices=("likelihood", "ratio", "frequency"),
                   help="with --model wordpiece: merge by likelihood gain (default), by the "
                        "textbook ratio count(ab)/(count(a)count(b)), or by pair count")
    p.add_argument("--candidates", type=int, metavar="N",
                   help="with --model wordpiece (likelihood): learn N tokens, then prune to "
                        "--vocab-size by what MaxMatch needs (default: twice the size when "
                        "it is at most 15%% of the distinct words; N = the size: off)")
    p.add_argument("--split", choices=("whitespace", "spaces", "characters"),
                   help="with --model wordlevel: the pieces kept whole: words and punctuation "
                        "runs (whitespace, default), space-separated words, or characters")
    p.add_argument("--character-coverage", type=float, metavar="X",
                   help="unigram/sentencepiece-bpe: share of the text's characters that get a "
                        "piece (default 0.9995; 1.0 for small alphabets)")
    p.add_argument("--byte-fallback", action="store_true",
                   help="unigram/sentencepiece-bpe: add <0x00>..<0xFF> pieces so that no "
                        "character is unknown")
    p.add_argument("--max-piece-length", type=int, metavar="N",
                   help="unigram/sentencepiece-bpe: longest piece in characters (default 16)")
    p.add_argument("--normalization-rule-name", choices=RULE_NAMES, metavar="RULE",
                   help="unigram/sentencepiece-bpe: SentencePiece's normalization: nmt_nfkc "
                        "(default, as spm_train), nfkc, nmt_nfkc_cf, nfkc_cf (case-folded) or "
                        "identity (text as it is)")
    p.add_argument("--user-defined-symbol", dest="user_defined_symbols", action="append",
                   metavar="TEXT",
                   help="unigram/sentencepiece-bpe: a string always kept whole (repeatable)")
    p.add_argument("--lowercase", action="store_true", help="lowercase text before training")
    p.add_argument("--normalizer", choices=("nfc", "nfd", "nfkc", "nfkd"), type=str.lower,
                   help="Unicode normalization applied before training and encoding")
    p.add_argument("--errors", choices=("strict", "replace", "skip"), default="strict",
                   help="invalid UTF-8 in the corpus: stop (default), U+FFFD, or drop it")
    p.add_argument("--text-field", default="text", metavar="NAME",
                   help="the field of .jsonl records that holds the text (default: text)")
    p.add_argument("--input-sentence-size", type=int, metavar="N",
                   help="count a random sample of N lines of the corpus (as sentencepiece)")
    p.add_argument("--sample-bytes", type=int, metavar="B",
                   help="count a random sample of lines of about B bytes in all")
    p.add_argument("--sample-seed", type=int, default=0, metavar="S",
                   help="the seed of the sample (default 0)")
    p.add_argument("--vocab-merges", metavar="FOLDER",
                   help="also write vocab.json + merges.txt into FOLDER")
    p.add_argument("--trace", type=int, default=20, metavar="N",
                   help="print the first N merges while training (default 20)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no merge trace or progress bar; print only where files were saved")
    p.set_defaults(func=cmd_train)

    # encode
    p = sub.add_parser(
        "encode", help="text to token ids, or show how a text is cut into tokens",
        description="Encode text with a tokenizer: print the ids, or draw the token boundaries.",
        epilog=_ENCODE_EPILOG, formatter_class=_Formatter,
    )
    p.add_argument("tokenizer", metavar="TOKENIZER",
                   help=TOKENIZER_HELP)
    _add_text_source(p)
    p.add_argument("--json", action="store_true",
                   help="print {ids, tokens} as JSON (tokens: the token strings)")
    p.add_argument("-s", "--show", action="store_true", help="draw the token boundaries")
    p.add_argument("--ids", action="store_true",
                   help="draw the boundaries with each token's id after it (implies --show)")
    _add_color(p)
    p.add_argument("--escapes", choices=("symbols", "backslash"),
                   help="whitespace as ␣ → ↵ (symbols) or \\t \\n (backslash); "
                        "default: symbols when the terminal can print them")
    p.add_argument("--html", metavar="FILE",
                   help="write the token view as a self-contained HTML page (with --ids: "
                        "each id after its token)")
    p.set_defaults(func=cmd_encode)

    # decode
    p = sub.add_parser(
        "decode", help="token ids to text",
        description="Decode token ids (arguments or standard input) to text.",
        epilog=_DECODE_EPILOG, formatter_class=_Formatter,
    )
    p.add_argument("tokenizer", metavar="TOKENIZER", help=TOKENIZER_HELP)
    p.add_argument("ids", nargs="*", metavar="IDS",
                   help="token ids (spaces, commas or a JSON list); none: read standard input")
    p.add_argument("--skip-special", action="store_true", help="leave special tokens out")
    p.add_argument("-n", "--no-newline", action="store_true",
                   help="do not add a newline after the text (exact round trips)")
    p.set_defaults(func=cmd_decode)

    # count
    p = sub.add_parser(
        "count", help="count the tokens of a text",
        description="Print how many tokens a text encodes to.",
        epilog=_COUNT_EPILOG, formatter_class=_Formatter,
    )
    p.add_argument("tokenizer", metavar="TOKENIZER", help=TOKENIZER_HELP)
    _add_text_source(p)
    p.add_argument("--json", action="store_true",
                   help="print {tokens, characters, bytes} as JSON")
    p.set_defaults(func=cmd_count)

    # convert
    p = sub.add_parser(
        "convert", help="write a tokenizer in another file format, checked",
        description="Convert a tokenizer to another format (tokenizer.json, .tiktoken, "
                    "vocab.json + merges.txt, SentencePiece .model, BERT vocab.txt). The copy "
                    "is loaded back and must encode and decode a check text like the source, "
                    "or nothing is written.",
        epilog=_CONVERT_EPILOG, formatter_class=_Formatter,
    )
    p.add_argument("source", metavar="SOURCE",
                   help="a tokenizer file or folder, or a name such as cl100k_base")
    p.add_argument("target", metavar="TARGET",
                   help="where to write; the name decides the format (.json, .tiktoken, "
                        "vocab.json, .model, vocab.txt, or a folder for tokenizer.json)")
    p.add_argument("--format", choices=("tokenizer.json", "tiktoken", "vocab.json", "model",
                                        "vocab.txt"),
                   help="the format, when the target's name does not say it")
    p.add_argument("--check-file", action="append", metavar="FILE",
                   help="check with this UTF-8 text instead of the built-in sample (repeatable)")
    p.set_defaults(func=cmd_convert)

    # inspect
    p = sub.add_parser(
        "inspect", help="summarize a tokenizer: vocabulary, merges, pipeline",
        description="Summarize a tokenizer: model, vocabulary size, special tokens, merges, "
                    "longest tokens and pipeline components.",
        epilog=_INSPECT_EPILOG, formatter_class=_Formatter,
    )
    p.add_argument("tokenizer", metavar="TOKENIZER", help=TOKENIZER_HELP)
    p.add_argument("--top", type=int, default=8, metavar="N",
                   help="how many first/last merges and longest tokens to list (default 8)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=cmd_inspect)

    # demo
    p = sub.add_parser(
        "demo", help="train a tokenizer on Python's own docs and sources, and show it",
        description="Train a byte-level BPE tokenizer on text that ships with Python, show "
                    "how it cuts a few samples, and save it. Nothing is downloaded.",
        epilog=_DEMO_EPILOG, formatter_class=_Formatter,
    )
    p.add_argument("-o", "--out", default="tokensmith-demo", metavar="DIR",
                   help="where to save (a folder, or a .json path; default ./tokensmith-demo)")
    p.add_argument("--vocab-size", type=int, default=16000, metavar="N",
                   help="vocabulary size (default 16000)")
    p.add_argument("--corpus-mb", type=float, default=24.0, metavar="MB",
                   help="how much text to train on at most, in megabytes (default 24)")
    _add_color(p)
    p.set_defaults(func=cmd_demo)

    # serve
    p = sub.add_parser(
        "serve", help="a local web playground: see text tokenized by several tokenizers",
        description="Serve a web page where text is tokenized by several tokenizers at once.",
        epilog=_SERVE_EPILOG, formatter_class=_Formatter,
    )
    p.add_argument("tokenizers", nargs="*", metavar="TOKENIZER",
                   help="paths or named encodings (default: ./tokensmith-demo and the named "
                        "encodings found locally)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; others need --allow-remote)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free port)")
    p.add_argument("--open", action="store_true", help="open the page in a web browser")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow a --host other machines can reach (no authentication!)")
    p.add_argument("--max-bytes", type=int, default=1 << 20, metavar="N",
                   help="largest request accepted, in bytes (default 1 MiB)")
    p.add_argument("--timeout", type=float, default=5.0, metavar="SECONDS",
                   help="seconds a client has to send a request, and the longest an idle "
                        "connection stays open (default 5)")
    p.set_defaults(func=cmd_serve)

    # compare, evaluate, diagnose
    from ._cli_measure import add_commands

    add_commands(sub, _Formatter)

    # add-tokens, extend, prune, merge, resize, check
    from ._cli_surgery import add_commands as add_surgery_commands

    add_surgery_commands(sub, _Formatter)

    # completion
    from ._cli_completion import add_command as add_completion_command

    add_completion_command(sub, _Formatter, parser)
    return parser


# ------------------------------------------------------------------ entry point


def _tolerant_streams() -> None:
    """Characters a non-UTF-8 terminal cannot show become escapes, not a crash."""
    for stream in (sys.stdout, sys.stderr):
        enc = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        if enc != "utf8" and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    _tolerant_streams()
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        # argparse cannot give an optional TEXT that follows a flag
        # (`encode tok.json --show "text"`) to the positional: do it here
        if (extra and len(extra) == 1 and getattr(args, "text", "") is None
                and not extra[0].startswith("-")):
            args.text = extra[0]
        elif extra:
            if getattr(args, "text", None) is not None and not extra[0].startswith("-"):
                # (`tokensmith encode TOK hello world`: the shell split the text)
                _err(f"unrecognized arguments: {' '.join(extra)}; quote a text that has "
                     f"spaces: tokensmith {args.command} TOKENIZER "
                     f"'{args.text} {' '.join(extra)}'")
                return EXIT_USAGE
            parser.parse_args(argv)  # reports the unrecognized arguments and exits
    except SystemExit as e:  # --help, --version, or a usage error (argparse printed it)
        if e.code is None:
            return EXIT_OK
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.func(args) or EXIT_OK)
    except KeyboardInterrupt:
        print("\ntokensmith: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (| head): stop quietly, and keep Python's exit flush quiet too
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return EXIT_BROKEN_PIPE
    except (TokenizerError, CommandError) as e:
        _err(str(e))
        return EXIT_USAGE
    except OSError as e:
        _err(_os_message(e))
        return EXIT_USAGE
    except Exception as e:  # a bug: say so, with the traceback for the report
        traceback.print_exc()
        _err(f"unexpected {type(e).__name__}: {e} (this is a bug in tokensmith; please report it)")
        return EXIT_UNEXPECTED


if __name__ == "__main__":
    sys.exit(main())
