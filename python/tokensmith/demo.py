"""``tokensmith demo``: train a tokenizer on text every Python installation ships.

The corpus is the interpreter's bundled documentation (``pydoc_data.topics``,
what ``help("for")`` shows) and standard-library ``.py`` sources, chosen
deterministically (sorted paths, test suites and third-party packages left
out) up to a size budget. Nothing is downloaded.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import sysconfig
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TextIO

from .errors import CorpusError

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

__all__ = ["DemoCorpus", "find_corpus", "run_demo", "SAMPLES"]

SAMPLES: tuple[tuple[str, str], ...] = (
    ("English", "Tokenizers turn text into the integers that language models read."),
    ("Chinese", "分词器把文本切成模型能读的整数。"),
    ("Python", 'def greet(name):\n    """Say hello."""\n    return f"Hello, {name}!"\n'),
)

# folders of the standard library that are not its own prose-and-code sources
_SKIP_DIRS = frozenset({
    "site-packages", "dist-packages", "__pycache__", "test", "tests", "idle_test",
    "encodings",  # code-page tables, mostly hex numbers
    "pydoc_data",  # already in the corpus, as text
})


@dataclass
class DemoCorpus:
    """What the demo trains on."""

    texts: list[str] = field(default_factory=list)  # documentation topics
    files: list[Path] = field(default_factory=list)  # standard-library sources
    stdlib: Path | None = None
    text_bytes: int = 0
    file_bytes: int = 0

    @property
    def total_bytes(self) -> int:
        return self.text_bytes + self.file_bytes


def _doc_topics() -> list[str]:
    try:
        from pydoc_data.topics import topics
    except ImportError:  # some distributions strip pydoc_data
        return []
    return [v for _, v in sorted(topics.items()) if isinstance(v, str) and v.strip()]


def _stdlib_sources(root: Path) -> Iterator[Path]:
    """The standard library's ``.py`` files: top-level modules first, then packages,
    each in sorted order; test suites and installed third-party packages skipped."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs
                         if d not in _SKIP_DIRS and not d.startswith(("config-", ".")))
        for name in sorted(files):
            if name.endswith(".py") and not name.startswith("test_"):
                yield Path(folder) / name


def find_corpus(budget_bytes: int = 6_000_000) -> DemoCorpus:
    """Documentation first, then standard-library sources, up to ``budget_bytes``.

    Raises :class:`~tokensmith.errors.CorpusError` when this Python has neither.
    """
    corpus = DemoCorpus()
    for text in _doc_topics():
        size = len(text.encode("utf-8", "surrogatepass"))
        if corpus.total_bytes + size > budget_bytes:
            break
        corpus.texts.append(text)
        corpus.text_bytes += size
    stdlib = sysconfig.get_paths().get("stdlib")
    if stdlib and Path(stdlib).is_dir():
        corpus.stdlib = Path(stdlib)
        for path in _stdlib_sources(corpus.stdlib):
            room = budget_bytes - corpus.total_bytes
            if room < 1024:
                break
            try:
                size = path.stat().st_size
            except OSError:
                continue
            if 0 < size <= room:  # files too big for what is left are skipped
                corpus.files.append(path)
                corpus.file_bytes += size
    if not corpus.texts and not corpus.files:
        raise CorpusError(
            "the demo found no text to train on: this Python has neither its bundled "
            "documentation (pydoc_data) nor standard-library .py sources"
            + (f" (looked in {stdlib})" if stdlib else "")
            + ". Train on your own files instead: tokensmith train FILES --vocab-size N --out DIR"
        )
    return corpus


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


def _longest_words(tok: Tokenizer, n: int = 8) -> list[str]:
    """The longest learned tokens that are a word (with or without its leading space)."""
    word = re.compile(r" ?[A-Za-z_]+")
    specials = set(tok.special_tokens.values())
    found: list[tuple[int, int, str]] = []
    for i in range(tok.vocab_size):
        if i in specials:
            continue
        data = tok.id_to_bytes(i)
        if not data or len(data) < 4:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if word.fullmatch(text):
            found.append((-len(text), i, text))
    return [t for _, _, t in sorted(found)[:n]]


def run_demo(
    out: str = "tokensmith-demo",
    vocab_size: int = 16000,
    *,
    corpus_mb: float = 24.0,
    color: Literal["auto", "always", "never"] = "auto",
    stream: TextIO | None = None,
) -> Path:
    """Train, show, save; returns the path of the saved ``tokenizer.json``."""
    from ._cli_common import CommandError, _check_writable, _shown, _tokenizer_path
    from .display import escape, pick_escapes, pieces, render, summary, use_color
    from .trainers import train

    w = stream or sys.stdout
    if corpus_mb <= 0:
        raise CommandError("--corpus-mb must be positive")
    target = _tokenizer_path(out)
    _check_writable(target)
    colored = use_color(w, color)
    escapes = pick_escapes(w)

    def say(line: str = "") -> None:
        print(line, file=w)

    t0 = time.monotonic()
    corpus = find_corpus(int(corpus_mb * 1e6))
    say("tokensmith demo: a byte-level BPE tokenizer trained on text that ships with Python")
    say()
    say(f"corpus: {_mb(corpus.total_bytes)}, nothing downloaded")
    if corpus.texts:
        say(f"  Python's bundled documentation (pydoc_data.topics): "
            f"{len(corpus.texts)} topics, {_mb(corpus.text_bytes)}")
    else:
        say("  (pydoc_data is not installed here: standard-library sources only)")
    if corpus.files:
        say(f"  standard-library sources: {len(corpus.files)} .py files from "
            f"{corpus.stdlib}, {_mb(corpus.file_bytes)}")
    say()
    say(f"training {vocab_size:,} tokens: 256 byte tokens + merges + 1 special token")
    say("each merge joins the most frequent adjacent pair of tokens into a new token:")
    w.flush()
    tok = train(
        [str(p) for p in corpus.files] or None,
        texts=corpus.texts or None,
        vocab_size=vocab_size,
        special_tokens=("<|endoftext|>",),
        errors="replace",
        verbose=True,
        trace=15,
        progress=True,
        stream=w,
    )
    w.flush()

    say()
    mark = "␣" if escapes == "symbols" else "' '"
    say("how it cuts text (" + ("each colour is one token" if colored else "[...] is one token")
        + f"; {mark} is a space):")
    for name, text in SAMPLES:
        items = pieces(tok, text)
        drawn = render(items, color=colored, escapes=escapes).rstrip("\n")
        say()
        say(f"{name}:")
        for line in drawn.split("\n"):
            say("  " + line)
        n = sum(1 for p in items if p.id is not None)
        say(f"  -> {summary(text, n)}")
        partial = any(
            isinstance(p.data, bytes) and any(t.startswith("<0x") for t, _ in escape(p.data))
            for p in items
        )
        if partial:
            say("  (<0x..> pieces are single bytes of characters the tokenizer never learned "
                "whole:")
            say("   its corpus is English and Python, so other scripts fall back to bytes)")
    words = _longest_words(tok)
    if words:
        say()
        say("longest words it learned: "
            + ", ".join("".join(t for t, _ in escape(x, escapes)) for x in words))

    saved = tok.save(target)
    say()
    say(f"saved {_shown(saved)} ({tok.vocab_size:,} tokens) in {time.monotonic() - t0:.1f} s")
    say(f"try it: tokensmith encode {shlex.quote(_shown(saved))} \"hello\"")
    w.flush()
    return saved
