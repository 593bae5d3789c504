"""Convert a tokenizer between file formats, and prove the copy encodes the same.

The byte-level BPE family has three common files: tiktoken rank files
(``*.tiktoken``), Hugging Face ``tokenizer.json``, and GPT-2's
``vocab.json`` + ``merges.txt``; SentencePiece models are ``.model`` files
and BERT's vocabularies ``vocab.txt``. :func:`convert` loads one, writes another,
loads what it wrote and checks that both encode a check text to the same ids
and decode them to the same text; only then is the file put in place::

    from tokensmith.convert import convert

    convert("cl100k_base", "out/tokenizer.json")          # a name or a path
    convert("gpt2/tokenizer.json", "out/vocab.json")       # writes vocab.json + merges.txt
    convert("out/tokenizer.json", "out/cl100k_base.tiktoken")

Not every tokenizer fits every format, and a conversion that would change
the ids is refused with :class:`ConversionError` and leaves no file behind:

* ``vocab.json`` + ``merges.txt`` carry no split pattern (readers use GPT-2's)
  and no special-token list (only ``<|endoftext|>`` is recognised): cl100k_base,
  o200k_base, Llama-3 or Qwen cannot be written that way.
* A ``.tiktoken`` file carries only ranks: tiktoken's rule (merge the pair of
  lowest rank) must reproduce the tokenizer's merges, which a BPE trained with
  its own merge order does not; the split pattern and special tokens come from
  the file's name (``cl100k_base.tiktoken`` …) or from the caller when loading.
* Post-processor templates (a BOS that ``tokenizer.json`` adds) exist only in
  ``tokenizer.json``; the check compares ids without them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .errors import TokenizerError, UnsupportedComponentError

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

__all__ = [
    "convert",
    "check_equivalent",
    "check_texts",
    "NotEquivalentError",
    "ConversionError",
    "SAMPLE_TEXT",
]

Format = Literal["tokenizer.json", "tiktoken", "vocab.json", "model", "vocab.txt"]


class NotEquivalentError(TokenizerError):
    """Two tokenizers that encode (or decode) a text differently.

    ``index`` is the text's position in the list, ``text`` the text,
    ``position`` the index of the first differing token, ``offset`` the
    character where that token starts, ``ids_a``/``ids_b`` the two encodings.
    """

    def __init__(
        self,
        message: str,
        *,
        index: int,
        text: str,
        position: int,
        offset: int,
        ids_a: list[int],
        ids_b: list[int],
    ) -> None:
        super().__init__(message)
        self.index = index
        self.text = text
        self.position = position
        self.offset = offset
        self.ids_a = ids_a
        self.ids_b = ids_b


class ConversionError(UnsupportedComponentError):
    """A conversion refused because the written file would not encode like the source.

    Nothing is left at the destination; ``__cause__`` holds the
    :class:`NotEquivalentError` when the check failed.
    """


# -------------------------------------------------------------- check text
#: The built-in multilingual sample that :func:`convert` checks with.
SAMPLE_TEXT = "\n".join(
    [
        "The quick brown fox jumps over the lazy dog. It's 9:41 AM; we'll see.",
        "Numbers: 0 7 42 365 2024 1234567 3.14159 -17 1e-9 $1,299.99 50% #1",
        "I'M sure THEY'RE right, you'D think she'S done, wE'vE gone, it'LL work.",
        "Über Straße naïve café coöperate façade déjà-vu Ærøskøbing Łódź İstanbul ı",
        "Съешь же ещё этих мягких французских булок, да выпей чаю.",
        "Pijamalı hasta yağız şoföre çabucak güvendi. Açıklamaları okudum.",
        "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία. Ἐν ἀρχῇ ἦν ὁ λόγος.",
        "نص عربي قصير للتجربة مع أرقام ١٢٣٤٥ وعلامات، ترقيم؟",
        "עברית: שלום עולם, מה שלומך? ‏(RTL)‏",
        "हिन्दी में एक वाक्य। ভাষা বাংলা। தமிழ் மொழி। ไทยภาษาไทยไม่มีช่องว่าง",
        "中文分词器把文本切成整数序列。日本語の文章、カタカナとひらがな。한국어 문장입니다.",
        "Emoji 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇯🇵 ❤️ ✨ and symbols ∑∫√∞ ≠ ≤ ≥ → ← © ® ™ ° ½ ¼",
        "def tokenize(text: str) -> list[int]:\n    return [ord(c) for c in text if c]\n",
        "for (int i = 0; i < n; ++i) {\n\tsum += a[i] * b[i];\n}\n\t-ilrsD \t%s",
        '{"key": [1, 2, 3], "nested": {"x": null, "y": true}}  <div class="a">x</div>',
        "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
        "https://example.com/path?q=1&lang=en#top user@example.org C:\\Windows\\x",
        "tabs\tand  double  spaces   triple\u00a0nbsp\u3000ideographic\r\nCRLF\rCR\n\n\n",
        "    indented\n        more\n\n    \n  \t mixed\n",
    ]
)


def check_texts(tok: Tokenizer | None = None) -> list[str]:
    """The default check texts: :data:`SAMPLE_TEXT` line by line and whole, generated
    adversarial strings, and (given ``tok``) each of its added tokens inside text."""
    texts = SAMPLE_TEXT.split("\n") + [SAMPLE_TEXT]
    texts += [
        "",
        " ",
        "\n",
        "a" * 3000,
        " " * 1000 + "x",
        "\n" * 500,
        "\t" * 200 + "x",
        "中" * 1000,
        "ab" * 1000,
        "😀" * 300,
        "1" * 1000,
        "!" * 500 + "?" * 3,
        "e\u0301 a\u0308\u0301 \u0915\u094d\u0937 \u0e01\u0e34\u0e4a x\u0301\u0302\u0303\u0304",
        "\x00\x01\x1f\x7f\x85\u200b\u200c\u200d\u2028\u2029\ufeff\ufffd",
        "ﬁ ﬂ ℌ Ⅻ ½ ǅ ² ｆｕｌｌ ｗｉｄｔｈ ０１２３ ﾊﾝｶｸ",
        "1234567 12 1 123456789012 ١٢٣٤٥ ०१२३ ๑๒๓ ⅣⅤ",
        "'s 't 're 've 'm 'll 'd 'S 'T 'RE 'Ve ’s ’ll x's y'all",
        "\ud800 lone \udfff surrogates",
    ]
    texts.append(_unicode_categories())
    if tok is not None:
        for content, _id, _special in tok._core.added_tokens():
            texts.append(f"x{content}y {content}{content} {content}")
    return texts


def _unicode_categories(per_category: int = 4) -> str:
    """A few code points of every Unicode general category, between letters and spaces."""
    seen: dict[str, list[str]] = {}
    for cp in range(0x20, 0x30000, 13):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        bucket = seen.setdefault(unicodedata.category(ch), [])
        if len(bucket) < per_category:
            bucket.append(ch)
    return "".join(f"a{ch}b {ch}1 {ch}{ch}  {ch}\n" for cat in sorted(seen) for ch in seen[cat])


# ------------------------------------------------------------------ checks
def check_equivalent(
    a: Tokenizer, b: Tokenizer, texts: Sequence[str], *, add_special_tokens: bool = False
) -> None:
    """Raise :class:`NotEquivalentError` at the first text that ``a`` and ``b`` encode to
    different ids, or whose ids they decode to different text.

    Special-token text is encoded as the special token (``allowed_special="all"``).
    """
    texts = list(texts)
    ids_a = a.encode_batch(texts, allowed_special="all", add_special_tokens=add_special_tokens)
    ids_b = b.encode_batch(texts, allowed_special="all", add_special_tokens=add_special_tokens)
    for index, (text, x, y) in enumerate(zip(texts, ids_a, ids_b, strict=True)):
        if x != y:
            pos = _first_difference(x, y)
            offset = _offset(a, text, pos, add_special_tokens)
            raise NotEquivalentError(
                f"text {index} ({_excerpt(text, offset)}) encodes differently from token "
                f"{pos} on (character {offset}): {x[pos : pos + 5]} against {y[pos : pos + 5]}",
                index=index, text=text, position=pos, offset=offset, ids_a=x, ids_b=y,
            )
        da, db = a.decode(x), b.decode(x)
        if da != db:
            pos = _first_difference(da, db)
            raise NotEquivalentError(
                f"text {index} ({_excerpt(text, 0)}) has the same ids but decodes differently "
                f"from character {pos}: {da[pos : pos + 20]!r} against {db[pos : pos + 20]!r}",
                index=index, text=text, position=-1, offset=pos, ids_a=x, ids_b=y,
            )


def _first_difference(x: Sequence[object], y: Sequence[object]) -> int:
    n = min(len(x), len(y))
    return next((k for k in range(n) if x[k] != y[k]), n)


def _offset(tok: Tokenizer, text: str, position: int, add_special_tokens: bool) -> int:
    try:
        offsets = tok.encode_full(
            text, allowed_special="all", add_special_tokens=add_special_tokens
        ).offsets
    except TokenizerError:
        return -1
    if position < len(offsets):
        return offsets[position][0]
    return len(text)


def _excerpt(text: str, offset: int) -> str:
    start = max(0, offset - 20)
    piece = text[start : start + 50]
    return f"{'…' if start else ''}{piece!r}{'…' if start + 50 < len(text) else ''}"


def _check_vocabularies(a: Tokenizer, b: Tokenizer) -> None:
    """Every id has the same bytes in both (ids that no text exercises included)."""
    if a.vocab_size != b.vocab_size:
        raise ConversionError(
            f"the written file has {b.vocab_size} ids, the source {a.vocab_size}"
        )
    for i in range(a.vocab_size):
        x, y = a.id_to_bytes(i), b.id_to_bytes(i)
        if x != y:
            raise ConversionError(f"token id {i} is {x!r} in the source and {y!r} once written")
    if a.special_tokens != b.special_tokens:
        lost = sorted(set(a.special_tokens.items()) ^ set(b.special_tokens.items()))
        raise ConversionError(
            f"the special tokens differ once written: {lost[:5]}"
            f"{' …' if len(lost) > 5 else ''}"
        )


# --------------------------------------------------------------- convert
def _format_of(dst: Path, explicit: str | None) -> Format:
    if explicit is not None:
        aliases: dict[str, Format] = {"json": "tokenizer.json", "tokenizer.json": "tokenizer.json",
                   "tiktoken": "tiktoken", "vocab.json": "vocab.json",
                   "vocab_merges": "vocab.json", "gpt2": "vocab.json", "model": "model",
                   "sentencepiece": "model", ".model": "model", "vocab.txt": "vocab.txt",
                   "bert": "vocab.txt", "wordpiece": "vocab.txt"}
        if explicit not in aliases:
            raise ConversionError(
                f"unknown format {explicit!r}; use 'tokenizer.json', 'tiktoken', 'vocab.json', "
                f"'model' (SentencePiece) or 'vocab.txt' (BERT WordPiece)"
            )
        return aliases[explicit]
    name = dst.name.lower()
    if name.endswith(".tiktoken"):
        return "tiktoken"
    if name.endswith(".model"):
        return "model"
    if name.endswith("vocab.txt"):
        return "vocab.txt"
    if name == "vocab.json" or name.endswith("-vocab.json") or name.endswith("merges.txt"):
        return "vocab.json"
    if name.endswith(".json") or dst.is_dir() or str(dst).endswith(("/", os.sep)):
        return "tokenizer.json"
    raise ConversionError(
        f"{dst}: cannot tell the format from the name; end it in .json (tokenizer.json), "
        f".tiktoken, vocab.json (with merges.txt beside it), .model (SentencePiece), "
        f"vocab.txt (BERT), end it in / for a folder, or name the format (format=... in "
        f"Python, --format on the command line)"
    )


def _targets(dst: Path, fmt: Format) -> list[Path]:
    """The final path(s) written; the first is the one returned."""
    if fmt == "tokenizer.json" and (dst.is_dir() or str(dst).endswith(("/", os.sep))):
        return [dst / "tokenizer.json"]
    if fmt == "vocab.json":
        if dst.is_dir() or str(dst).endswith(("/", os.sep)):
            return [dst / "vocab.json", dst / "merges.txt"]
        name = dst.name
        if name.lower().endswith("merges.txt"):
            stem = name[: -len("merges.txt")]
        elif name.lower().endswith("vocab.json"):
            stem = name[: -len("vocab.json")]
        else:
            raise ConversionError(f"{dst}: name it vocab.json or <prefix>-vocab.json")
        return [dst.with_name(stem + "vocab.json"), dst.with_name(stem + "merges.txt")]
    return [dst]


def _load_source(src: str | os.PathLike[str] | Tokenizer) -> Tokenizer:
    from .tokenizer import Tokenizer

    if isinstance(src, Tokenizer):
        return src
    inner = getattr(src, "tokenizer", None)  # tokensmith.compat.tiktoken.Encoding
    if isinstance(inner, Tokenizer):
        return inner
    from ._loading import load

    return load(src)


def _write_and_reload(tok: Tokenizer, staged: list[Path], fmt: Format) -> Tokenizer:
    from . import pretrained
    from .formats import gpt2, hf_json
    from .formats import tiktoken as tt

    if fmt == "tokenizer.json":
        hf_json.save(tok, staged[0])
        return hf_json.load(staged[0])
    if fmt == "model":
        from .formats import sentencepiece

        sentencepiece.save(tok, staged[0])
        return sentencepiece.load(staged[0])
    if fmt == "vocab.txt":
        from .formats import bert

        bert.save_vocab_txt(tok, staged[0])
        return bert.load_vocab_txt(staged[0], **_bert_options(tok))
    if fmt == "vocab.json":
        vocab, merges = staged
        prefix = vocab.name[: -len("-vocab.json")] if vocab.name != "vocab.json" else None
        gpt2.save_vocab_merges(tok, vocab.parent, prefix)
        return gpt2.load_vocab_merges(vocab, merges)
    pattern = tok._core.split_regex()
    known = pretrained.encoding_for_file(staged[0])
    if pattern is None and known is None:
        raise ConversionError(
            "a .tiktoken file needs a tokenizer whose pre-tokenizer is one split regex "
            "followed by byte-level bytes; this one's is not, so save it as tokenizer.json"
        )
    tt.save(tok, staged[0])
    if known is not None:  # the name decides the pattern and special tokens on loading
        return tt.load(staged[0], pattern=known.pattern, special_tokens=known.special_tokens)
    return tt.load(staged[0], pattern=pattern or "", special_tokens=tok.special_tokens)


def _bert_options(tok: Tokenizer) -> dict[str, Any]:
    """The ``load_vocab_txt`` options that rebuild ``tok``'s BERT pipeline (a
    ``vocab.txt`` holds only the vocabulary; the rest must come from somewhere)."""
    from .formats import hf_json

    spec = hf_json.document(tok)
    norm = spec.get("normalizer") or {}
    model = spec.get("model") or {}
    options: dict[str, Any] = {}  # (values of the tokenizer.json, as they are there)
    if norm.get("type") == "BertNormalizer":
        options.update(lowercase=bool(norm.get("lowercase", True)),
                       strip_accents=norm.get("strip_accents"),
                       tokenize_chinese_chars=bool(norm.get("handle_chinese_chars", True)),
                       clean_text=bool(norm.get("clean_text", True)))
    if model.get("type") == "WordPiece":
        options.update(unk_token=model.get("unk_token", "[UNK]"),
                       continuing_subword_prefix=model.get("continuing_subword_prefix", "##"),
                       max_input_chars_per_word=model.get("max_input_chars_per_word", 100))
    return options


def convert(
    src: str | os.PathLike[str] | Tokenizer,
    dst: str | os.PathLike[str],
    *,
    check_text: str | Sequence[str] | None = None,
    format: str | None = None,
) -> Path:
    """Convert ``src`` (a path, a known name such as ``"cl100k_base"``, or a loaded
    tokenizer) to the format that ``dst`` names, and return the path written.

    ``dst`` ending in ``.tiktoken`` writes a rank file; ``vocab.json`` (or
    ``<prefix>-vocab.json``, or ``merges.txt``) writes the ``vocab.json`` +
    ``merges.txt`` pair side by side; ``.model`` a SentencePiece model (for
    tokenizers read from one, or trained with ``model="unigram"`` /
    ``"sentencepiece-bpe"``); ``vocab.txt`` a BERT vocabulary (WordPiece; the
    copy is read back with the source's normalizer options); any other
    ``.json`` or a folder writes ``tokenizer.json``. ``format=``
    ("tokenizer.json", "tiktoken", "vocab.json", "model", "vocab.txt")
    overrides the name.

    The file is written in a temporary folder beside ``dst``, loaded back and
    checked: same bytes for every id, same special tokens, and the same ids and
    decoded text for ``check_text`` (default: :func:`check_texts` — a built-in
    multilingual sample, adversarial strings and every added token). Only a
    file that passes replaces ``dst``; otherwise :class:`ConversionError` is
    raised and nothing is left behind.
    """
    tok = _load_source(src)
    dst_path = Path(dst)
    if os.fspath(dst).endswith(("/", os.sep)):
        # a folder, made if need be: tokenizer.json (or the named format's files) in it
        dst_path.mkdir(parents=True, exist_ok=True)
    fmt = _format_of(dst_path, format)
    targets = _targets(dst_path, fmt)
    if check_text is None:
        texts = check_texts(tok)
    elif isinstance(check_text, str):
        texts = [check_text]
    else:
        texts = list(check_text)

    parent = targets[0].parent
    created = [d for d in (parent, *parent.parents) if not d.exists()]
    parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".tokensmith-convert-", dir=parent))
    done = False
    try:
        staged = [stage / t.name for t in targets]
        try:
            back = _write_and_reload(tok, staged, fmt)
        except ConversionError:
            raise
        except UnsupportedComponentError as e:
            raise ConversionError(f"{targets[0]}: {e}") from e
        try:
            _check_vocabularies(tok, back)
            check_equivalent(tok, back, texts)
        except ConversionError as e:
            raise ConversionError(
                f"{targets[0]}: refused, the written file would not encode like the source: {e}"
            ) from e
        except NotEquivalentError as e:
            raise ConversionError(
                f"{targets[0]}: refused, the written file would not encode like the source: "
                f"{e}. {_hint(fmt)}"
            ) from e
        for s, t in zip(staged, targets, strict=True):
            os.replace(s, t)
        done = True
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        if not done:
            for d in created:  # folders made for this conversion, innermost first
                try:
                    d.rmdir()
                except OSError:
                    break
    return targets[0]


def _hint(fmt: Format) -> str:
    if fmt == "vocab.json":
        return (
            "vocab.json + merges.txt cannot carry a split pattern other than GPT-2's, a "
            "normalizer or special tokens other than <|endoftext|>; write tokenizer.json instead"
        )
    if fmt == "tiktoken":
        return (
            "a .tiktoken file carries ranks only: no normalizer, no added tokens beyond the "
            "special tokens, and the pattern its name implies; write tokenizer.json instead"
        )
    if fmt == "model":
        return ("a .model file holds SentencePiece pipelines only (a .model read or trained "
                "here, or its tokenizer.json); write tokenizer.json instead")
    if fmt == "vocab.txt":
        return ("vocab.txt holds a WordPiece vocabulary only, read back as BERT's pipeline; "
                "write tokenizer.json instead")
    return "tokenizer.json should carry every component; please report this as a bug"
