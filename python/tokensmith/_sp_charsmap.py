"""SentencePiece's normalization rules (``normalization_rule_name``), built here.

``spm_train --normalization_rule_name=nmt_nfkc`` (its default) stores in the
``.model`` a ``precompiled_charsmap``: rules "this code point sequence becomes
that string", applied left to right by longest match. This module derives the
same rules from Python's :mod:`unicodedata`, the way sentencepiece's builder
(``src/builder.cc``) derives them from ICU, and serializes them in the format
sentencepiece reads (see :func:`charsmap`):

``nfkc``
    every character whose NFKC form differs becomes that form; and every
    sequence that NFKC composes (a base and combining marks, Hangul jamo) and
    whose characters each have a one-character NFKD form becomes the composed
    NFKC string, for every spelling of those characters (``Ｅ`` + U+0301 as
    well as ``E`` + U+0301). Rules that the shorter ones already give are dropped.
``nmt_nfkc``
    ``nfkc``, plus: TAB, LF, FF, CR, U+061C, U+1680, U+200B, U+200C, U+200E,
    U+200F, U+2028, U+2029, U+2581, U+FEFF and U+FFFD become a space; the C0 controls
    (but those four) and U+007F, U+008F, U+009F are removed; the full-width
    tilde U+FF5E stays (Japanese text uses it apart from ``~``).
``*_cf``
    then Unicode simple case folding: every replacement is folded character by
    character, and every other character with a folding gets a rule of its own.
``identity``
    no rules, no charsmap.

Python's :mod:`unicodedata` (Unicode 14.0 in Python 3.11) is older than the
Unicode of the ICU that generated the tables sentencepiece 0.2.3 ships (16.0
or later): code points assigned in between have rules there and none here
(see ``docs/sp_normalization.md``). A charsmap takes a few seconds to build; it is
built on first use and kept in the tokensmith cache folder.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from . import _darts
from ._darts import build_double_array
from ._io import atomic_write
from .errors import ConfigError

__all__ = ["RULE_NAMES", "check_rule_name", "charsmap", "rules", "compile_rules",
           "simple_case_fold"]

RULE_NAMES: tuple[str, ...] = ("nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity")

#: nmt_nfkc: characters that become a space (sentencepiece's ``MergeNmtMap``;
#: U+200D ZERO WIDTH JOINER is left alone there, as emoji sequences need it)
#: U+061C ARABIC LETTER MARK, the Arabic counterpart of U+200E and U+200F, is not
#: in that builder's list as of its 2025 source, but the tables that sentencepiece
#: 0.2.x ships map it to a space too: tokensmith follows the tables users run.
NMT_SPACES = (0x0009, 0x000A, 0x000C, 0x000D, 0x061C, 0x1680, 0x200B, 0x200C, 0x200E,
              0x200F, 0x2028, 0x2029, 0x2581, 0xFEFF, 0xFFFD)
#: nmt_nfkc: control characters removed (C0 but TAB LF FF CR, DEL, and two C1)
NMT_REMOVED = (*range(0x01, 0x09), 0x0B, *range(0x0E, 0x20), 0x7F, 0x8F, 0x9F)
#: nmt_nfkc: left as it is whatever NFKC says (FULLWIDTH TILDE)
NMT_KEPT = 0xFF5E

Rules = dict[str, str]


def check_rule_name(name: object) -> str:
    """``name`` if it is a rule name this module builds, else a ConfigError."""
    if not isinstance(name, str) or name not in RULE_NAMES:
        raise ConfigError(
            f"normalization_rule_name={name!r} is not a SentencePiece rule tokensmith builds; "
            f"use one of {', '.join(repr(n) for n in RULE_NAMES)}")
    return name


def _unicode_chars() -> Iterable[str]:
    """Every Unicode character (ICU's ``U_IS_UNICODE_CHAR``): no NUL, surrogates
    or noncharacters."""
    for cp in range(1, 0x110000):
        if 0xD800 <= cp <= 0xDFFF or 0xFDD0 <= cp <= 0xFDEF or cp & 0xFFFE == 0xFFFE:
            continue
        yield chr(cp)


@functools.lru_cache(maxsize=1)
def _decomposable() -> tuple[str, ...]:
    """The characters whose NFKD form is not themselves (the only ones with an
    NFKC rule, or another spelling of a character); a scan of all of Unicode."""
    is_nfkd = functools.partial(unicodedata.is_normalized, "NFKD")
    return tuple(c for c in _unicode_chars() if not is_nfkd(c))


@functools.lru_cache(maxsize=1)
def _foldable() -> tuple[str, ...]:
    """The characters whose full case folding is not themselves: the only ones
    that can have a simple case folding (see :func:`simple_case_fold`)."""
    return tuple(c for c in _unicode_chars() if c.casefold() != c)


def simple_case_fold(c: str) -> str:
    """ICU's ``u_foldCase(c, U_FOLD_CASE_DEFAULT)``: Unicode simple case folding
    (CaseFolding.txt status C and S), derived from Python's full folding.

    Where the full folding is one character it is the C mapping. Where it is
    several (status F), the simple folding is the S mapping, which is the
    character's lowercase when that is one other character (U+1E9E → U+00DF,
    U+1F88 → U+1F80), and none otherwise (U+00DF, U+0130 stay)."""
    full = c.casefold()
    if len(full) == 1:
        return full
    lower = c.lower()
    return lower if len(lower) == 1 else c


def _normalize(table: Rules, text: str, max_len: int) -> str:
    """``text`` rewritten by ``table``: the longest key (at most ``max_len``
    characters) at each position, else the character itself."""
    out = []
    i, n = 0, len(text)
    while i < n:
        for length in range(min(max_len, n - i), 0, -1):
            rep = table.get(text[i:i + length])
            if rep is not None:
                out.append(rep)
                i += length
                break
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _remove_redundant(table: Rules) -> Rules:
    """The rules without the sequences that shorter rules already rewrite the
    same way (sentencepiece's ``RemoveRedundantMap``)."""
    kept = {k: v for k, v in table.items() if len(k) == 1}
    longest = max(map(len, table))
    for length in range(2, longest + 1):
        for k, v in table.items():
            if len(k) == length and _normalize(kept, k, length - 1) != v:
                kept[k] = v
    return kept


def _nfkc() -> Rules:
    """sentencepiece's ``BuildNFKCMap`` (``BuildMapInternal`` with NFKC, NFKD)."""
    table: Rules = {}
    spellings: dict[str, list[str]] = {}  # NFKD character -> the other characters with that NFKD
    decomposed: set[str] = set()  # NFKD forms of several characters
    for c in _decomposable():
        nfkc = unicodedata.normalize("NFKC", c)
        if nfkc != c:
            table[c] = nfkc
        nfkd = unicodedata.normalize("NFKD", c)
        if len(nfkd) == 1:
            spellings.setdefault(nfkd, []).append(c)
        else:
            decomposed.add(nfkd)
    for nfkd in decomposed:
        nfkc = unicodedata.normalize("NFKC", nfkd)
        if nfkc == nfkd:
            continue
        # every spelling of the sequence: each character as itself or as one
        # of the characters whose NFKD form it is
        choices = [[ch, *spellings.get(ch, ())] for ch in nfkd]
        for spelled in itertools.product(*choices):
            key = "".join(spelled)
            if key != nfkc:
                table[key] = nfkc
    return _remove_redundant(table)


def _merge_nmt(table: Rules) -> Rules:
    """sentencepiece's ``MergeNmtMap``, then ``RemoveRedundantMap``."""
    table = dict(table)
    for cp in NMT_SPACES:
        table[chr(cp)] = " "
    for cp in NMT_REMOVED:
        table[chr(cp)] = ""
    table.pop(chr(NMT_KEPT), None)
    return _remove_redundant(table)


def _merge_case_fold(table: Rules) -> Rules:
    """sentencepiece's ``MergeUnicodeCaseFoldMap``: replacements folded, then a
    rule for every other character that folds."""
    folded = {k: "".join(map(simple_case_fold, v)) for k, v in table.items()}
    for c in _foldable():
        if c not in folded:
            f = simple_case_fold(c)
            if f != c:
                folded[c] = f
    return _remove_redundant(folded)


@functools.cache
def _rules(name: str) -> Rules:
    if name == "identity":
        return {}
    if name.endswith("_cf"):
        return _merge_case_fold(_rules(name[: -len("_cf")]))
    if name == "nmt_nfkc":
        return _merge_nmt(_rules("nfkc"))
    return _nfkc()


def rules(name: str) -> Rules:
    """The rules of ``name`` (see the module comment): a copy of the
    key → replacement table, empty for ``identity``."""
    return dict(_rules(check_rule_name(name)))


def compile_rules(table: Rules) -> bytes:
    """``table`` as a ``precompiled_charsmap``: the trie's size in bytes (uint32,
    little-endian), the darts-clone trie (little-endian units) from each key's
    UTF-8 bytes to the offset of its replacement, then the replacements, each
    ended by a NUL, equal ones stored once."""
    if not table:
        return b""
    pool = bytearray()
    offsets: dict[str, int] = {}
    for rep in sorted(set(table.values())):
        offsets[rep] = len(pool)
        pool += rep.encode("utf-8") + b"\0"
    keys = sorted((k.encode("utf-8"), offsets[v]) for k, v in table.items())
    units = build_double_array(keys)
    trie = b"".join(u.to_bytes(4, "little") for u in units)
    return len(trie).to_bytes(4, "little") + trie + bytes(pool)


def _cache_file(name: str) -> Path | None:
    """Where the charsmap of ``name`` is kept between runs: named by the Unicode
    version of :mod:`unicodedata` and a digest of the code that builds it, so a
    new Python or a change here builds it afresh. ``None`` if that code cannot be
    read (a frozen application): no cache then."""
    from .pretrained import cache_dir

    digest = hashlib.sha256()
    try:
        for module in (__file__, _darts.__file__):
            digest.update(Path(module).read_bytes())
    except OSError:
        return None
    return (cache_dir() / "sp-charsmap"
            / f"{name}-unicode{unicodedata.unidata_version}-{digest.hexdigest()[:16]}.bin")


def _read_cached(path: Path) -> bytes | None:
    """The blob kept at ``path`` if it is there and whole (its SHA-256 follows it)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    blob, check = data[:-32], data[-32:]
    return blob if len(data) > 32 and hashlib.sha256(blob).digest() == check else None


@functools.cache
def charsmap(name: str) -> bytes:
    """The ``precompiled_charsmap`` of the rule ``name``; ``b""`` for ``identity``.

    Building one takes a few seconds; it is kept in the tokensmith cache folder
    (see :func:`tokensmith.pretrained.cache_dir`) and in memory."""
    if check_rule_name(name) == "identity":
        return b""
    path = _cache_file(name)
    blob = _read_cached(path) if path else None
    if blob is None:
        blob = compile_rules(_rules(name))
        try:
            if path:
                atomic_write(path, blob + hashlib.sha256(blob).digest())
        except OSError:
            pass  # a read-only cache folder: the blob is built again next run
    return blob
