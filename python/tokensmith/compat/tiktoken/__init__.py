"""tiktoken's public API on top of tokensmith.

Replace ``import tiktoken`` with::

    from tokensmith.compat import tiktoken

    enc = tiktoken.get_encoding("cl100k_base")      # or encoding_for_model("gpt-4o")
    enc.encode("hello world")                        # [15339, 1917]
    enc.decode(enc.encode("hello world"))            # 'hello world'

The ids are tiktoken's, exactly (the differential tests compare them on real
text and on adversarial Unicode). Special tokens follow tiktoken's rules:
text that spells a special token raises :class:`ValueError` unless
``allowed_special`` lets it through as the special token or
``disallowed_special=()`` encodes it as ordinary text. Nothing is ever added
around the text (no BOS/EOS), whatever tokenizer the encoding wraps.

Named encodings are found by :func:`tokensmith.load` (the tokensmith cache,
tiktoken's cache, data packages, or one checked download). Any byte-level
tokensmith tokenizer can be wrapped too: ``Encoding.from_tokenizer(tok)``.
"""

from __future__ import annotations

import base64
import bisect
import re
import threading
from collections.abc import Collection, Iterable, Iterator, Sequence
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any, Literal

from ... import pretrained
from ...errors import ConfigError, DisallowedSpecialTokenError, UnsupportedComponentError

if TYPE_CHECKING:
    from ...tokenizer import Tokenizer

__all__ = [
    "Encoding",
    "get_encoding",
    "encoding_for_model",
    "encoding_name_for_model",
    "list_encoding_names",
    "MODEL_TO_ENCODING",
    "MODEL_PREFIX_TO_ENCODING",
]

SpecialSet = Literal["all"] | Collection[str]

# --------------------------------------------------------------- model names
_O200K, _CL100K, _P50K, _R50K = "o200k_base", "cl100k_base", "p50k_base", "r50k_base"

#: Exact model name -> encoding name.
MODEL_TO_ENCODING: dict[str, str] = {
    # current chat and reasoning models
    **dict.fromkeys(
        ["gpt-5", "gpt-4.5", "gpt-4.1", "gpt-4o", "chatgpt-4o-latest", "o1", "o3", "o4-mini"],
        _O200K,
    ),
    # GPT-4 / GPT-3.5 generation and their embeddings
    **dict.fromkeys(
        ["gpt-4", "gpt-3.5-turbo", "gpt-3.5", "gpt-35-turbo", "davinci-002", "babbage-002",
         "text-embedding-ada-002", "text-embedding-3-small", "text-embedding-3-large"],
        _CL100K,
    ),
    # Codex and the later GPT-3 text models
    **dict.fromkeys(
        ["text-davinci-003", "text-davinci-002", "code-davinci-002", "code-davinci-001",
         "code-cushman-002", "code-cushman-001", "davinci-codex", "cushman-codex"],
        _P50K,
    ),
    "text-davinci-edit-001": "p50k_edit",
    "code-davinci-edit-001": "p50k_edit",
    # GPT-3 and GPT-2
    **dict.fromkeys(
        ["davinci", "curie", "babbage", "ada", "text-davinci-001", "text-curie-001",
         "text-babbage-001", "text-ada-001"],
        _R50K,
    ),
    **{
        f"text-{kind}-{size}-{suffix}": _R50K
        for kind, suffixes in (("similarity", ("001",)), ("search", ("doc-001", "query-001")))
        for size in ("davinci", "curie", "babbage", "ada")
        for suffix in suffixes
    },
    "code-search-babbage-code-001": _R50K,
    "code-search-ada-code-001": _R50K,
    "gpt2": "gpt2",
    "gpt-2": "gpt2",
}

#: Model-name prefix -> encoding name, tried in order after the exact names
#: (dated snapshots such as ``gpt-4o-2024-05-13`` and fine-tunes ``ft:…``).
MODEL_PREFIX_TO_ENCODING: dict[str, str] = {
    "gpt-5": _O200K,
    "gpt-4.5-": _O200K,
    "gpt-4.1-": _O200K,
    "gpt-4o-": _O200K,
    "chatgpt-4o-": _O200K,
    "gpt-oss-": "o200k_harmony",  # gpt-oss-20b, gpt-oss-120b
    "o1-": _O200K,
    "o3-": _O200K,
    "o4-mini-": _O200K,
    "ft:gpt-4o": _O200K,
    "gpt-4-": _CL100K,
    "gpt-3.5-turbo-": _CL100K,
    "gpt-35-turbo-": _CL100K,
    "ft:gpt-4": _CL100K,
    "ft:gpt-3.5-turbo": _CL100K,
    "ft:davinci-002": _CL100K,
    "ft:babbage-002": _CL100K,
}


def encoding_name_for_model(model_name: str) -> str:
    """The encoding name of a model; :class:`KeyError` when the model is not known."""
    if model_name in MODEL_TO_ENCODING:
        return MODEL_TO_ENCODING[model_name]
    for prefix, name in MODEL_PREFIX_TO_ENCODING.items():
        if model_name.startswith(prefix):
            return name
    raise KeyError(
        f"Could not automatically map {model_name!r} to an encoding. "
        f"Use get_encoding(name) with one of: {', '.join(list_encoding_names())}."
    )


def encoding_for_model(model_name: str) -> Encoding:
    """The :class:`Encoding` of a model (``"gpt-4o"``, ``"gpt-4"``, ``"text-davinci-003"`` …).

    Raises :class:`KeyError` when the model name is not known.
    """
    return get_encoding(encoding_name_for_model(model_name))


# ------------------------------------------------------------------ registry
_lock = threading.RLock()
_ENCODINGS: dict[str, Encoding] = {}


def list_encoding_names() -> list[str]:
    """The names :func:`get_encoding` accepts."""
    return list(pretrained.ENCODINGS)


def get_encoding(encoding_name: str) -> Encoding:
    """A named encoding (``"cl100k_base"``, ``"o200k_base"``, ``"r50k_base"``/``"gpt2"``,
    ``"p50k_base"``, ``"p50k_edit"``), loaded once and then shared.

    Raises :class:`ValueError` for an unknown name, like tiktoken. The rank file
    is found as :func:`tokensmith.load` finds it; when it is nowhere on the
    machine and cannot be downloaded the error says where it looked.
    """
    if not isinstance(encoding_name, str):
        raise ValueError(f"Expected a string in get_encoding, got {type(encoding_name)}")
    enc = _ENCODINGS.get(encoding_name)
    if enc is not None:
        return enc
    with _lock:
        enc = _ENCODINGS.get(encoding_name)
        if enc is not None:
            return enc
        spec = pretrained.ENCODINGS.get(encoding_name)
        if spec is None:
            raise ValueError(
                f"Unknown encoding {encoding_name!r}. "
                f"Known encodings: {', '.join(list_encoding_names())}."
            )
        tok = pretrained.load(spec.name)
        if tok.special_tokens != spec.special_tokens:
            # p50k_edit shares p50k_base's rank file but has more special tokens.
            from ...formats import tiktoken as tt

            tok = tt.loads(
                tt.dumps(tok).encode(), pattern=spec.pattern, special_tokens=spec.special_tokens
            )
        enc = Encoding.from_tokenizer(tok, name=encoding_name, pat_str=spec.pattern)
        _ENCODINGS[encoding_name] = enc
        return enc


# ------------------------------------------------------------------ encoding
class Encoding:
    """tiktoken's ``Encoding``: the same constructor, methods and errors.

    ``Encoding(name, pat_str=..., mergeable_ranks=..., special_tokens=...)``
    builds an encoding from ranks, as tiktoken does (ranks must be 0..n-1 with
    every single byte present, which is what tiktoken encodings are);
    :meth:`from_tokenizer` wraps a loaded tokensmith tokenizer.
    """

    def __init__(
        self,
        name: str,
        *,
        pat_str: str,
        mergeable_ranks: dict[bytes, int],
        special_tokens: dict[str, int],
        explicit_n_vocab: int | None = None,
    ) -> None:
        if not mergeable_ranks:
            raise ConfigError("mergeable_ranks is empty; an encoding needs the 256 single bytes")
        if explicit_n_vocab:
            top = max(max(mergeable_ranks.values()), max(special_tokens.values(), default=0))
            if len(mergeable_ranks) + len(special_tokens) != explicit_n_vocab or (
                top != explicit_n_vocab - 1
            ):
                raise ConfigError(
                    f"explicit_n_vocab={explicit_n_vocab}, but there are "
                    f"{len(mergeable_ranks)} mergeable tokens and {len(special_tokens)} "
                    f"special tokens with a largest id of {top}"
                )
        from ...formats import tiktoken as tt

        ranked = sorted(mergeable_ranks.items(), key=lambda kv: kv[1])
        data = b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in ranked)
        tok = tt.loads(
            data,
            pattern=_atomic_bounded_possessives(pat_str),
            special_tokens=dict(special_tokens),
        )
        self._setup(name, tok, pat_str)
        self.__dict__["_mergeable_ranks"] = dict(mergeable_ranks)

    def _setup(self, name: str, tok: Tokenizer, pat_str: str) -> None:
        self.name = name
        self._tok = tok
        self._pat_str = pat_str
        self._special_tokens: dict[str, int] = dict(tok.special_tokens)
        self._special_token_values = set(self._special_tokens.values())
        # names of special ids that have more than one name (o200k_harmony's 200018)
        names_of: dict[int, list[str]] = {}
        for content, i in self._special_tokens.items():
            names_of.setdefault(i, []).append(content)
        self._aliases = frozenset(n for ns in names_of.values() if len(ns) > 1 for n in ns)
        self.max_token_value: int = tok.vocab_size - 1

    @classmethod
    def from_tokenizer(
        cls, tok: Tokenizer, *, name: str | None = None, pat_str: str | None = None
    ) -> Encoding:
        """Wrap a byte-level tokensmith tokenizer (tiktoken files, GPT-2, Llama-3, Qwen …).

        Encoding never adds the tokenizer's BOS/EOS (``add_special_tokens=False``);
        ``decode`` joins the tokens' bytes, as tiktoken does.
        """
        if not tok.is_byte_level:
            raise UnsupportedComponentError(
                "the tiktoken API works on token bytes, and this tokenizer is not byte-level; "
                "use the tokensmith.Tokenizer API for it"
            )
        pattern = pat_str if pat_str is not None else (tok._core.split_regex() or "")
        enc = cls.__new__(cls)
        enc._setup(name if name is not None else "tokensmith", tok, pattern)
        return enc

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokensmith :class:`~tokensmith.Tokenizer` underneath."""
        return self._tok

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    def __reduce__(self) -> tuple[Any, ...]:
        if _ENCODINGS.get(self.name) is self:
            return (get_encoding, (self.name,))
        return (_rebuild, (self.name, self._pat_str, self._tok.to_str(pretty=False)))

    # ------------------------------------------------------------- encoding
    def _check_disallowed(
        self, texts: Iterable[str], allowed_special: SpecialSet, disallowed_special: SpecialSet
    ) -> None:
        """tiktoken refuses any text holding a string of ``disallowed_special``.

        The core already refuses special tokens that are neither allowed nor
        permitted; this handles what it cannot know: strings that are not
        special tokens, tokens named in both sets (disallowed wins), and a
        second name of an allowed id (o200k_harmony's ``<|reserved_200018|>``
        beside ``<|endofprompt|>``), which the core lets through with the id.
        """
        if not disallowed_special:
            return
        specials = self._special_tokens
        allowed = set(specials) if allowed_special == "all" else set(allowed_special)
        allowed_ids = {specials[t] for t in allowed if t in specials}
        if disallowed_special == "all":
            if not (self._aliases and allowed_ids):
                return
            extra = frozenset(
                t for t in self._aliases if t not in allowed and specials[t] in allowed_ids
            )
        else:
            extra = frozenset(
                t for t in disallowed_special
                if t not in specials or t in allowed or specials[t] in allowed_ids
            )
        if not extra:
            return
        pattern = _any_of(frozenset(disallowed_special) if disallowed_special != "all" else extra)
        for text in texts:
            if m := pattern.search(text):
                raise DisallowedSpecialTokenError(m.group())

    def encode(
        self,
        text: str,
        *,
        allowed_special: SpecialSet = frozenset(),
        disallowed_special: SpecialSet = "all",
    ) -> list[int]:
        """Token ids of ``text``; text spelling a disallowed special token raises ValueError."""
        self._check_disallowed((text,), allowed_special, disallowed_special)
        return self._tok.encode(
            text,
            allowed_special=allowed_special,
            disallowed_special=disallowed_special,
            add_special_tokens=False,
        )

    def encode_ordinary(self, text: str) -> list[int]:
        """Token ids of ``text`` with special-token text encoded as ordinary text."""
        return self._tok.encode_ordinary(text)

    def encode_batch(
        self,
        text: Sequence[str],
        *,
        num_threads: int = 8,
        allowed_special: SpecialSet = frozenset(),
        disallowed_special: SpecialSet = "all",
    ) -> list[list[int]]:
        """Encode many texts in parallel (Rust threads; ``num_threads`` is accepted for
        compatibility and not needed)."""
        texts = list(text)
        self._check_disallowed(texts, allowed_special, disallowed_special)
        return self._tok.encode_batch(
            texts,
            allowed_special=allowed_special,
            disallowed_special=disallowed_special,
            add_special_tokens=False,
        )

    def encode_ordinary_batch(
        self, text: Sequence[str], *, num_threads: int = 8
    ) -> list[list[int]]:
        """:meth:`encode_ordinary` over many texts, in parallel."""
        return self._tok.encode_batch(list(text), disallowed_special=(), add_special_tokens=False)

    def encode_to_numpy(
        self,
        text: str,
        *,
        allowed_special: SpecialSet = frozenset(),
        disallowed_special: SpecialSet = "all",
    ) -> Any:
        """:meth:`encode` as a ``numpy.uint32`` array."""
        import numpy as np

        ids = self.encode(
            text, allowed_special=allowed_special, disallowed_special=disallowed_special
        )
        return np.asarray(ids, dtype=np.uint32)

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of text (or bytes) that is exactly one token, special tokens included.

        Raises :class:`KeyError` when it is not one token.
        """
        raw = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else text_or_bytes
        found = self._mergeable_ranks.get(bytes(raw))
        if found is not None:
            return found
        try:
            return self._special_tokens[raw.decode("utf-8")]
        except (UnicodeDecodeError, KeyError):
            raise KeyError(bytes(raw)) from None

    # ------------------------------------------------------------- decoding
    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        """The bytes of ``tokens`` joined; an unknown id raises :class:`KeyError`."""
        return self._tok.decode_bytes(tokens)

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        """The text of ``tokens``; bytes that are not UTF-8 follow ``errors``
        (``"replace"`` gives U+FFFD, ``"strict"`` raises)."""
        return self._tok.decode_bytes(tokens).decode("utf-8", errors=errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token, special tokens included; :class:`KeyError` if unknown."""
        return self._tok.decode_single_token_bytes(token)

    def decode_tokens_bytes(self, tokens: Sequence[int]) -> list[bytes]:
        """The bytes of each token."""
        return [self._tok.decode_single_token_bytes(t) for t in tokens]

    def decode_with_offsets(self, tokens: Sequence[int]) -> tuple[str, list[int]]:
        """The text and, per token, the index of the first character it contributes to.

        A token that starts inside a UTF-8 character is given that character's
        index. Bytes that are not valid UTF-8 raise :class:`UnicodeDecodeError`.
        """
        pieces = self.decode_tokens_bytes(tokens)
        offsets: list[int] = []
        chars = 0
        for piece in pieces:
            inside = bool(piece) and 0x80 <= piece[0] < 0xC0
            offsets.append(max(0, chars - inside))
            chars += len(piece.translate(None, _CONTINUATION_BYTES))
        return b"".join(pieces).decode("utf-8", errors="strict"), offsets

    def decode_batch(
        self, batch: Sequence[Sequence[int]], *, errors: str = "replace", num_threads: int = 8
    ) -> list[str]:
        """:meth:`decode` over many token lists."""
        return [self.decode(tokens, errors=errors) for tokens in batch]

    def decode_bytes_batch(
        self, batch: Sequence[Sequence[int]], *, num_threads: int = 8
    ) -> list[bytes]:
        """:meth:`decode_bytes` over many token lists."""
        return [self._tok.decode_bytes(tokens) for tokens in batch]

    # ---------------------------------------------------- tiktoken's private encoders
    # (tiktoken's own tests and some tools call them; each gives tiktoken's ids)
    def _encode_single_piece(self, text_or_bytes: str | bytes) -> list[int]:
        """One piece by the ranks alone, no split pattern: its id when it is a token,
        else the byte pair merges by rank."""
        piece = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else text_or_bytes
        return _merge_by_rank(bytes(piece), self._mergeable_ranks)

    def _encode_only_native_bpe(self, text: str) -> list[int]:
        """The text cut by the split pattern (the ``regex`` module), each piece merged by
        :meth:`_encode_single_piece`: the slow path tiktoken's tests compare with."""
        pieces = _regex_module().findall(self._pat_str, text)
        return [i for piece in pieces for i in self._encode_single_piece(piece)]

    def _encode_bytes(self, data: bytes) -> list[int]:
        """Ids of bytes that need not be UTF-8, as tiktoken makes them: the valid
        UTF-8 start encoded as text, then its last piece (with the whitespace-only
        tokens before it, as tiktoken widens it) and the remaining bytes merged
        again as one piece."""
        try:
            return self.encode_ordinary(data.decode("utf-8"))
        except UnicodeDecodeError as e:
            cut = e.start
        valid = data[:cut].decode("utf-8")
        tokens = self.encode_ordinary(valid)
        pieces = _regex_module().findall(self._pat_str, valid)
        last = len(self._encode_single_piece(pieces[-1])) if pieces else 0

        last = self._widen_last_piece(tokens, last)
        tail = data[cut:]
        if last:
            tail = self.decode_bytes(tokens[-last:]) + tail
            tokens = tokens[:-last]
        return tokens + (_merge_by_rank(tail, self._mergeable_ranks) if tail else [])

    def _widen_last_piece(self, tokens: list[int], last: int) -> int:
        """How many tokens at the end of ``tokens`` may change when text is appended: the
        ``last`` tokens of the last piece and, when that piece starts with a token of
        whitespace only, the whitespace-only tokens before it (a split pattern such as
        ``\\s*[\\r\\n]+`` can join them with what follows), as tiktoken widens it."""

        def all_space(token: int) -> bool:
            return all(b in b" \n\t" for b in self.decode_single_token_bytes(token))

        if last and all_space(tokens[-last]):
            while last < len(tokens) and all_space(tokens[-last - 1]):
                last += 1
        return last

    def encode_with_unstable(
        self,
        text: str,
        *,
        allowed_special: SpecialSet = frozenset(),
        disallowed_special: SpecialSet = "all",
    ) -> tuple[list[int], list[list[int]]]:
        """The tokens of ``text`` that cannot change whatever text follows, and every
        token sequence that may continue them (tiktoken's unstable API; the same sets).

        The stable tokens decode to a prefix of ``text``; each completion, appended to
        them, decodes to text that starts with ``text``. Completions are sorted (tiktoken
        returns them in no set order). Needs the ``regex`` module for the split pattern.
        """
        allowed = self.special_tokens_set if allowed_special == "all" else set(allowed_special)
        tokens = self.encode(text, allowed_special=allowed, disallowed_special=disallowed_special)
        start = 0
        if allowed & self.special_tokens_set:
            for m in _any_of(frozenset(allowed & self.special_tokens_set)).finditer(text):
                start = m.end()
        pieces = _regex_module().findall(self._pat_str, text[start:])
        if not pieces:  # (the text ends with a special token, or is empty)
            return tokens, []
        last = self._widen_last_piece(tokens, len(self._encode_single_piece(pieces[-1])))
        unstable = self.decode_bytes(tokens[-last:])
        stable = tokens[:-last]
        found: set[tuple[int, ...]] = {(i,) for i in self._ranks_starting_with(unstable)}
        for cut in range(1, len(unstable)):
            prefix, suffix = unstable[:cut], unstable[cut:]
            for token in self._tokens_starting_with(suffix):
                found.add(self._completion(prefix + token, len(unstable)))
        if len(unstable) > 1 and (size := _trailing_white_space(unstable)):
            head, tail = unstable[:-size], unstable[-size:]
            found.add(tuple(_merge_by_rank(head, self._mergeable_ranks)
                            + _merge_by_rank(tail, self._mergeable_ranks)))
        return stable, [list(c) for c in sorted(found)]

    def _completion(self, candidate: bytes, needed: int) -> tuple[int, ...]:
        """The first tokens of ``candidate``, encoded as text when it is UTF-8 (a split
        may appear inside it), covering at least ``needed`` bytes."""
        try:
            ids = self.encode_ordinary(candidate.decode("utf-8"))
        except UnicodeDecodeError:
            ids = _merge_by_rank(candidate, self._mergeable_ranks)
        out: list[int] = []
        covered = 0
        for i in ids:
            out.append(i)
            covered += len(self.decode_single_token_bytes(i))
            if covered >= needed:
                break
        return tuple(out)

    def _tokens_starting_with(self, prefix: bytes) -> Iterator[bytes]:
        """The bytes of every ordinary token that starts with ``prefix``, in byte order."""
        ordered = self._sorted_token_bytes
        k = bisect.bisect_left(ordered, prefix)
        while k < len(ordered) and ordered[k].startswith(prefix):
            yield ordered[k]
            k += 1

    def _ranks_starting_with(self, prefix: bytes) -> Iterator[int]:
        ranks = self._mergeable_ranks
        return (ranks[t] for t in self._tokens_starting_with(prefix))

    @cached_property
    def _sorted_token_bytes(self) -> list[bytes]:
        return sorted(self._mergeable_ranks)

    # ---------------------------------------------------------------- misc
    def token_byte_values(self) -> list[bytes]:
        """The bytes of every ordinary (mergeable) token, sorted."""
        return list(self._sorted_token_bytes)

    @cached_property
    def _mergeable_ranks(self) -> dict[bytes, int]:
        """Token bytes -> rank (id) of every ordinary token, as tiktoken keeps them."""
        added = {i for _, i, _ in self._tok._core.added_tokens()}
        ranks: dict[bytes, int] = {}
        id_to_bytes = self._tok.id_to_bytes
        for i in range(self._tok.vocab_size):
            if i in added:
                continue
            b = id_to_bytes(i)
            if b is not None:
                ranks.setdefault(b, i)
        return ranks

    @property
    def eot_token(self) -> int:
        """The id of ``<|endoftext|>`` (:class:`KeyError` if the encoding has none)."""
        return self._special_tokens["<|endoftext|>"]

    @cached_property
    def special_tokens_set(self) -> set[str]:
        return set(self._special_tokens)

    def is_special_token(self, token: int) -> bool:
        return token in self._special_token_values

    @property
    def n_vocab(self) -> int:
        """One more than the largest id (``max_token_value + 1``)."""
        return self.max_token_value + 1


def _merge_by_rank(piece: bytes, ranks: dict[bytes, int]) -> list[int]:
    """Byte pair encoding of one piece by ranks, as tiktoken defines it: the piece's own
    id when it is a token; else start from single bytes and join, again and again, the
    adjacent pair whose join has the lowest rank (the leftmost of equals)."""
    whole = ranks.get(piece)
    if whole is not None:
        return [whole]
    parts = [piece[i:i + 1] for i in range(len(piece))]
    while len(parts) > 1:
        best, at = None, -1
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best is None or rank < best):
                best, at = rank, i
        if best is None:
            break
        parts[at:at + 2] = [parts[at] + parts[at + 1]]
    return [ranks[p] for p in parts]


# Unicode's White_Space characters (what Rust's ``char::is_whitespace`` tests, and so
# tiktoken; Python's ``str.isspace`` also takes U+001C-U+001F)
_WHITE_SPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"
    + "".join(map(chr, range(0x2000, 0x200B)))
)


def _trailing_white_space(data: bytes) -> int:
    """The length in bytes of the White_Space character that ``data`` ends with, or 0
    (also when the bytes at the end are not one whole UTF-8 character)."""
    for size in range(1, min(4, len(data)) + 1):
        if not 0x80 <= data[-size] < 0xC0:  # the last character's first byte
            try:
                ch = data[-size:].decode("utf-8")
            except UnicodeDecodeError:
                return 0
            return size if ch in _WHITE_SPACE else 0
    return 0


def _regex_module() -> Any:  # (the `regex` module: it has no type hints)
    """The third-party ``regex`` module, which reads tiktoken's patterns."""
    try:
        import regex
    except ImportError:
        raise ConfigError("this needs the regex module: pip install regex") from None
    return regex


def _rebuild(name: str, pat_str: str, json_text: str) -> Encoding:
    from ...tokenizer import Tokenizer

    return Encoding.from_tokenizer(Tokenizer.from_str(json_text), name=name, pat_str=pat_str)


_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))


@lru_cache(maxsize=128)
def _any_of(strings: frozenset[str]) -> re.Pattern[str]:
    # longest first, so that the leftmost match is also the longest one there
    return re.compile("|".join(re.escape(s) for s in sorted(strings, key=len, reverse=True)))


# ------------------------------------------------------ pattern compatibility
_BOUNDED = re.compile(r"\{\d+(?:,\d*)?\}")


def _atomic_bounded_possessives(pattern: str) -> str:
    """Write each possessive bounded repeat ``X{m,n}+`` as the atomic group ``(?>X{m,n})``.

    tiktoken's patterns (``\\p{N}{1,3}+`` in cl100k_base) mean the possessive
    form, which is exactly the atomic group; tokensmith's regex engine reads
    ``X{m,n}+`` as a repeat of a repeat, the way Oniguruma does.
    """
    if "}+" not in pattern:
        return pattern
    out: list[str] = []
    groups: list[int] = []
    atom = -1  # index in ``out`` where the last complete atom starts
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            j = _escape_end(pattern, i)
            atom = len(out)
            out.append(pattern[i:j])
        elif c == "[":
            j = _class_end(pattern, i)
            atom = len(out)
            out.append(pattern[i:j])
        elif c == "(":
            j = i + 1
            groups.append(len(out))
            out.append(c)
            atom = -1
        elif c == ")":
            j = i + 1
            out.append(c)
            atom = groups.pop() if groups else -1
        elif c == "{" and (m := _BOUNDED.match(pattern, i)):
            j = m.end()
            if j < n and pattern[j] == "+" and atom >= 0:
                out[atom:] = ["(?>", *out[atom:], m.group(), ")"]
                j += 1
            else:
                out.append(m.group())
            atom = -1
        else:
            j = i + 1
            out.append(c)
            atom = -1 if c in "|*+?^$" else len(out) - 1
        i = j
    return "".join(out)


def _escape_end(pattern: str, i: int) -> int:
    """End of the escape starting at ``pattern[i] == '\\'``."""
    n = len(pattern)
    if i + 1 >= n:
        return n
    kind = pattern[i + 1]
    if kind in "pPxu" and i + 2 < n and pattern[i + 2] == "{":
        close = pattern.find("}", i + 2)
        return n if close < 0 else close + 1
    if kind in "pP":
        return min(n, i + 3)
    if kind == "x":
        return min(n, i + 4)
    return i + 2


def _class_end(pattern: str, i: int) -> int:
    """End of the character class starting at ``pattern[i] == '['`` (nested classes too)."""
    n = len(pattern)
    j = i + 1
    if j < n and pattern[j] == "^":
        j += 1
    if j < n and pattern[j] == "]":
        j += 1
    while j < n:
        c = pattern[j]
        if c == "\\":
            j = _escape_end(pattern, j)
        elif c == "[":
            j = _class_end(pattern, j)
        elif c == "]":
            return j + 1
        else:
            j += 1
    return n
