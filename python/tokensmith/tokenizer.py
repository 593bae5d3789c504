"""The :class:`Tokenizer`: encode and decode through the whole pipeline."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar

from . import _core
from .errors import DisallowedSpecialTokenError, TokenIdTypeError, TokenizerFormatError

if TYPE_CHECKING:
    import numpy as np

    from ._batch import BatchEncoding
    from ._core import _Allowed
    from .streaming import StreamDecoder
    from .surgery.prune import IdMap

__all__ = ["Tokenizer", "Encoding"]

SpecialSet = Literal["all"] | Collection[str]
_T = TypeVar("_T")


class Encoding:
    """Everything one encode produces.

    ``offsets`` are ``(start, end)`` character offsets into the original
    string (``(0, 0)`` for tokens the post-processor added). Read-only.
    """

    # (a plain class, not a dataclass: `dataclasses` would double the time
    # `import tokensmith` takes)
    __slots__ = ("ids", "tokens", "offsets", "type_ids", "special_tokens_mask", "attention_mask")
    ids: list[int]
    tokens: list[str]
    offsets: list[tuple[int, int]]
    type_ids: list[int]
    special_tokens_mask: list[int]
    attention_mask: list[int]

    def __init__(self, ids: list[int], tokens: list[str], offsets: list[tuple[int, int]],
                 type_ids: list[int], special_tokens_mask: list[int],
                 attention_mask: list[int]) -> None:
        for name, value in zip(self.__slots__, (ids, tokens, offsets, type_ids,
                                                special_tokens_mask, attention_mask), strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: an Encoding is read-only")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: an Encoding is read-only")

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __reduce__(self) -> tuple[Any, ...]:  # (pickle and copy rebuild through __init__)
        return (self.__class__, self._fields())

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Encoding)
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # (mutable lists inside, as before)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__[:-1])
        return f"Encoding({shown})"

    def __len__(self) -> int:
        return len(self.ids)


class Operations(NamedTuple):
    """Reading, writing and changing tokenizers, as the methods of :class:`Tokenizer`
    offer them (``from_file``, ``save``, ``save_vocab_merges``, ``add_tokens``,
    ``extend``, ``prune``, ``resize``). :mod:`tokensmith.formats` and
    :mod:`tokensmith.surgery` do the work and build tokenizers, so they import this
    module; this module does not import them back but is given them, once, by the
    package (``tokensmith/__init__.py`` calls :func:`provide_operations`)."""

    load_path: Callable[[str | os.PathLike[str]], Tokenizer]
    save_path: Callable[..., Path]
    save_vocab_merges: Callable[[Tokenizer, str | os.PathLike[str], str | None],
                                tuple[Path, Path]]
    add_tokens: Callable[..., Tokenizer]
    extend: Callable[..., Tokenizer]
    prune: Callable[..., tuple[Tokenizer, IdMap]]
    resize: Callable[..., Tokenizer]


_provided: Operations | None = None


def provide_operations(operations: Operations) -> None:
    """Give :class:`Tokenizer` its file and vocabulary operations (see :class:`Operations`)."""
    global _provided
    _provided = operations


def _operations() -> Operations:
    if _provided is None:  # (importing any tokensmith module imports the package first)
        raise RuntimeError("tokensmith.tokenizer was given no file or vocabulary operations: "
                           "the tokensmith package provides them when it is imported")
    return _provided


def _unpickle(cls: type[Tokenizer], json_text: str, extras: dict[str, Any]) -> Tokenizer:
    """The tokenizer ``Tokenizer.__reduce__`` pickled."""
    tok = cls(_core.Tokenizer.from_json(json_text))
    tok.__dict__.update(extras)
    return tok


def _clean(text: str) -> str:
    """Lone surrogates cannot be UTF-8: they become U+FFFD, as tiktoken does."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class Tokenizer:
    """A loaded or trained tokenizer.

    Special tokens follow tiktoken's rule by default: text that spells a
    special token is refused with :class:`DisallowedSpecialTokenError`,
    unless the call says to encode it as the special token
    (``allowed_special``) or as ordinary text (``disallowed_special=()``).
    Added tokens that are not special are always recognised.
    """

    def __init__(self, core: _core.Tokenizer) -> None:
        self._core = core
        self._specials: dict[str, int] = {c: i for c, i, s in core.added_tokens() if s}
        # what the core takes for the default policy (refuse special tokens' text)
        self._refuse: tuple[_Allowed, _Allowed | None] = (
            "none", "none" if self._specials else None)
        # `encode`'s and `count`'s common calls (no `allowed_special`, the
        # default or an empty `disallowed_special`) go straight to the core,
        # without a Python frame: a short text's call cost more than its
        # encoding. The core sends every other call, and any that fails, to
        # the methods below, with the arguments as they were given. (Not
        # where a subclass has its own.)
        fast = _core.FastEncode(core, bool(self._specials), self._encode_py, self._count_py)
        if type(self).encode is Tokenizer.encode:
            self.__dict__["encode"] = fast.encode
        if type(self).count is Tokenizer.count:
            self.__dict__["count"] = fast.count

    def hf(self) -> Tokenizer:
        """This tokenizer with the defaults of Hugging Face ``tokenizers``: text that
        spells a special token is that token (``allowed_special="all"``), and ``decode``
        leaves special tokens out (``skip_special_tokens=True``). Same ids, same core;
        every call may still say otherwise."""
        return hf_view(self)

    # ------------------------------------------------------- model inputs
    def __call__(self, text: str | Sequence[str], text_pair: str | Sequence[str] | None = None,
                 **options: Any) -> BatchEncoding:
        """Model inputs, the Hugging Face way: ``tok(["a text", "another"], padding=True,
        truncation=True, max_length=128, return_tensors="np")`` gives ``input_ids``,
        ``attention_mask`` and, for pairs (``text_pair=``), ``token_type_ids``, as
        ``tokenizers`` with padding and truncation enabled does (special-token text is
        taken as the special token, as there).

        Options: ``add_special_tokens`` (True), ``padding`` (False, True/"longest",
        "max_length"), ``truncation`` (False, True/"longest_first"), ``max_length``,
        ``pad_to_multiple_of``, ``padding_side`` ("right"/"left"), ``pad_token`` (else
        the file's padding settings or a ``[PAD]``/``<pad>`` special token),
        ``return_tensors`` (None for lists, "np"), ``return_token_type_ids``,
        ``return_attention_mask`` (True), ``allowed_special`` ("all").
        """
        from ._batch import call
        from ._options import check_options

        check_options(call, options, "Tokenizer.__call__")
        return call(self, text, text_pair, **options)

    # ----------------------------------------------------------- pickling
    # What __init__ derives from the core (not pickled: made again on load).
    _DERIVED = frozenset({"_core", "_specials", "_refuse", "encode", "count"})

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (and deep-copied) as its ``tokenizer.json`` text and the Python-side
        extras of its origin (a rank file's pattern and special tokens, a ``.model``'s
        bytes), as ``tokenizers`` pickles: spawn-based multiprocessing, DataLoader workers
        and ``datasets.map(num_proc=...)`` get the same tokenizer."""
        extras = {k: v for k, v in vars(self).items() if k not in self._DERIVED}
        return (_unpickle, (type(self), self._core.to_json(False), extras))

    # ----------------------------------------------------------- construction
    @classmethod
    def from_str(cls, json_text: str) -> Tokenizer:
        """A tokenizer from the text of a ``tokenizer.json`` file."""
        if not json_text.strip():
            raise TokenizerFormatError("tokenizer.json is empty")
        try:
            core = _core.Tokenizer.from_json(json_text)
        except UnicodeEncodeError as e:  # a lone surrogate: no file read as UTF-8 holds one
            raise TokenizerFormatError(
                f"tokenizer.json text holds a lone surrogate (U+{ord(json_text[e.start]):04X}) "
                f"at character {e.start}, which is not Unicode text; fix the text (a JSON "
                f"escape such as \\ud800 decoded by Python makes one)"
            ) from None
        except TokenizerFormatError as e:
            raise type(e)(_json_message(str(e))) from None
        return Tokenizer(core)

    @classmethod
    def _from_json_file(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """A tokenizer from a ``tokenizer.json`` file, read by the core (errors name the file)."""
        try:
            core = _core.Tokenizer.from_json_file(os.fspath(path))
        except TokenizerFormatError as e:
            raise type(e)(f"{path}: {_json_message(str(e))}") from None
        return Tokenizer(core)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """A tokenizer from a file (``tokenizer.json``) or a folder that holds one."""
        return _operations().load_path(path)

    # ----------------------------------------------------------------- policy
    def _policy(
        self, allowed_special: SpecialSet, disallowed_special: SpecialSet
    ) -> tuple[_Allowed, _Allowed | None]:
        # the common cases first: short texts are call-bound
        if not allowed_special:
            if not disallowed_special:
                return "none", None
            if disallowed_special == "all":
                return self._refuse
        if allowed_special == "all":
            allowed: _Allowed = "all"
            allowed_names = set(self._specials)
        else:
            allowed_names = {t for t in allowed_special if t in self._specials}
            allowed = [self._specials[t] for t in allowed_names] if allowed_names else "none"
        if disallowed_special == "all":
            permitted: _Allowed | None = None if allowed == "all" else allowed
        else:
            banned = {t for t in disallowed_special if t in self._specials} - allowed_names
            if not banned:
                permitted = None
            else:
                permitted = [i for t, i in self._specials.items() if t not in banned] or "none"
        return allowed, permitted

    def _call(self, fn: Callable[..., _T], text: str | list[str], *args: Any) -> _T:
        try:
            return fn(text, *args)
        except UnicodeEncodeError:
            cleaned = [_clean(t) for t in text] if isinstance(text, list) else _clean(text)
            return fn(cleaned, *args)
        except DisallowedSpecialTokenError as e:
            raise DisallowedSpecialTokenError(e.token) from None

    # --------------------------------------------------------------- encoding
    def encode(
        self,
        text: str,
        *,
        allowed_special: SpecialSet = (),
        disallowed_special: SpecialSet = "all",
        add_special_tokens: bool = True,
    ) -> list[int]:
        """Token ids of ``text``.

        Text that spells a special token is refused (``DisallowedSpecialTokenError``)
        unless ``allowed_special`` names it (or is ``"all"``), which encodes it as the
        special token, or ``disallowed_special=()``, which encodes it as ordinary text.
        ``add_special_tokens`` lets the post-processor add its tokens (BOS, CLS/SEP …)
        when the tokenizer has one.
        """
        # (the same as `_core.FastEncode.encode`'s doc comment, its `help`: the
        # common calls go there, see `__init__`; and the same defaults as its
        # text_signature, `()` for `allowed_special`)
        allowed, permitted = self._policy(allowed_special, disallowed_special)
        return self._call(self._core.encode, text, allowed, permitted, add_special_tokens)

    # `encode` in Python, for the calls the core's fast path (`_core.FastEncode`,
    # bound in `__init__`) leaves to it
    _encode_py = encode

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode with every special token treated as ordinary text."""
        return self.encode(text, disallowed_special=(), add_special_tokens=False)

    def encode_batch(
        self,
        texts: Iterable[str],
        *,
        allowed_special: SpecialSet = (),
        disallowed_special: SpecialSet = "all",
        add_special_tokens: bool = True,
        num_threads: int | None = None,
    ) -> list[list[int]]:
        """Encode many texts in parallel (Rust threads, the GIL released).

        ``num_threads`` defaults to ``$TOKENSMITH_NUM_THREADS``, then
        ``$RAYON_NUM_THREADS``, then the number of cores.
        """
        allowed, permitted = self._policy(allowed_special, disallowed_special)
        batch = list(texts)
        if not batch:
            return []
        return self._call(
            lambda b: self._core.encode_batch(
                b, allowed, permitted, add_special_tokens, num_threads
            ),
            batch,
        )

    def encode_to_numpy(
        self,
        text: str,
        *,
        allowed_special: SpecialSet = (),
        disallowed_special: SpecialSet = "all",
        add_special_tokens: bool = True,
    ) -> np.ndarray:
        """The ids of ``text`` as a ``numpy.uint32`` array, with no Python int per token."""
        # numpy before the encoding (see `_numpy`)
        _, u32, frombuffer, _ = _numpy()
        allowed, permitted = self._policy(allowed_special, disallowed_special)
        try:
            raw = self._core.encode_flat(text, allowed, permitted, add_special_tokens)
        except (UnicodeEncodeError, DisallowedSpecialTokenError):
            raw = self._call(self._core.encode_flat, text, allowed, permitted, add_special_tokens)
        return frombuffer(raw, u32)

    def encode_batch_to_numpy(
        self,
        texts: Iterable[str],
        *,
        allowed_special: SpecialSet = (),
        disallowed_special: SpecialSet = "all",
        add_special_tokens: bool = True,
        num_threads: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """A batch as one flat ``uint32`` id array plus ``uint64`` offsets.

        Document ``i`` is ``ids[offsets[i]:offsets[i + 1]]``; ``len(offsets)``
        is one more than the number of documents. Needs numpy.
        """
        # numpy before the encoding (see `_numpy`)
        _, u32, frombuffer, u64 = _numpy()
        allowed, permitted = self._policy(allowed_special, disallowed_special)
        batch = list(texts)
        raw_ids, raw_offsets = self._call(
            lambda b: self._core.encode_batch_flat(
                b, allowed, permitted, add_special_tokens, num_threads
            ),
            batch,
        )
        return frombuffer(raw_ids, u32), frombuffer(raw_offsets, u64)

    def count(
        self,
        text: str,
        *,
        allowed_special: SpecialSet = (),
        disallowed_special: SpecialSet = "all",
        add_special_tokens: bool = True,
    ) -> int:
        """Number of tokens of ``text`` (the arguments as for ``encode``)."""
        # (as `_core.FastEncode.count`'s doc comment and text_signature)
        allowed, permitted = self._policy(allowed_special, disallowed_special)
        return self._call(self._core.count, text, allowed, permitted, add_special_tokens)

    # (for the calls `count`'s fast path leaves to Python)
    _count_py = count

    def encode_full(
        self,
        text: str,
        pair: str | None = None,
        *,
        allowed_special: SpecialSet = (),
        disallowed_special: SpecialSet = "all",
        add_special_tokens: bool = True,
    ) -> Encoding:
        """Ids, token strings, character offsets, type ids and masks."""
        allowed, permitted = self._policy(allowed_special, disallowed_special)

        def run(t: str) -> tuple[list[int], list[int], list[tuple[int, int]], bytes, list[str]]:
            p = pair
            try:
                return self._core.encode_full(t, p, allowed, permitted, add_special_tokens)
            except UnicodeEncodeError:
                p = _clean(p) if p is not None else None
                return self._core.encode_full(_clean(t), p, allowed, permitted, add_special_tokens)

        try:
            ids, type_ids, offsets, mask, tokens = run(text)
        except DisallowedSpecialTokenError as e:
            raise DisallowedSpecialTokenError(e.token) from None
        return Encoding(
            ids=ids,
            tokens=tokens,
            offsets=offsets,
            type_ids=type_ids,
            special_tokens_mask=list(mask),
            attention_mask=[1] * len(ids),
        )

    # --------------------------------------------------------------- decoding
    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = False) -> str:
        """Text of ``ids``; unknown ids raise :class:`UnknownIdError`.

        Bytes that do not form valid UTF-8 become U+FFFD.
        """
        try:  # (no closure: short decodes are call-bound)
            return self._core.decode(ids if type(ids) is list else list(ids), skip_special_tokens)
        except (OverflowError, TypeError) as e:
            raise _id_error(e) from None

    def decode_batch(
        self, batch: Iterable[Sequence[int]], *, skip_special_tokens: bool = False
    ) -> list[str]:
        return _with_ids(
            lambda: self._core.decode_batch([_as_list(x) for x in batch], skip_special_tokens)
        )

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        """The raw bytes of ``ids`` (no decoder, no replacement characters)."""
        try:
            return self._core.decode_bytes(ids if type(ids) is list else list(ids))
        except (OverflowError, TypeError) as e:
            raise _id_error(e) from None

    # ------------------------------------------------------------ vocabulary
    def token_to_id(self, token: str) -> int | None:
        return self._core.token_to_id(token)

    def id_to_token(self, token_id: int) -> str | None:
        return self._core.id_to_token(token_id) if token_id >= 0 else None

    def id_to_bytes(self, token_id: int) -> bytes | None:
        return self._core.id_to_bytes(token_id) if token_id >= 0 else None

    @property
    def vocab_size(self) -> int:
        """One more than the largest id, added tokens included."""
        return self._core.vocab_size

    def __len__(self) -> int:
        return self._core.vocab_size

    def get_vocab(self) -> dict[str, int]:
        """Token string -> id, added tokens included."""
        return self._core.get_vocab()

    @property
    def special_tokens(self) -> dict[str, int]:
        return dict(self._specials)

    @property
    def merges(self) -> list[tuple[str, str]]:
        """The BPE merges in rank order, as token strings."""
        return self._core.merges()

    @property
    def is_byte_level(self) -> bool:
        return self._core.byte_level

    # ------------------------------------------------------ vocabulary changes
    # Each returns a new tokenizer in this one's format; this one is unchanged.
    # (tokensmith.surgery has the details.)
    def add_tokens(self, tokens: Iterable[str], *, special: bool = False,
                   **options: Any) -> Tokenizer:
        """A new tokenizer with ``tokens`` added whole, ids after the last one
        (see :func:`tokensmith.surgery.add_tokens`)."""
        return _operations().add_tokens(self, tokens, special=special, **options)

    def extend(self, files: Any = None, *, texts: Iterable[str] | None = None,
               add: int | None = None, vocab_size: int | None = None,
               **options: Any) -> Tokenizer:
        """A new tokenizer with ``add`` tokens learned on new text, every old
        token, id and merge kept (see :func:`tokensmith.surgery.extend`)."""
        return _operations().extend(self, files, texts=texts, add=add, vocab_size=vocab_size,
                                    **options)

    def prune(self, files: Any = None, *, texts: Iterable[str] | None = None,
              **options: Any) -> tuple[Tokenizer, IdMap]:
        """``(new_tokenizer, id_map)`` without the tokens the text rarely uses
        (see :func:`tokensmith.surgery.prune`)."""
        return _operations().prune(self, texts=texts, files=files, **options)

    def resize(self, multiple_of: int | None = None, **options: Any) -> Tokenizer:
        """Pad with reserved special tokens to a multiple, or check ``max_vocab``
        (see :func:`tokensmith.surgery.resize`)."""
        return _operations().resize(self, multiple_of, **options)

    # ------------------------------------------------------------------ files
    def to_str(self, *, pretty: bool = True) -> str:
        """This tokenizer as ``tokenizer.json`` text."""
        return self._core.to_json(pretty)

    def save(self, path: str | os.PathLike[str], *, pretty: bool = True) -> Path:
        """Write ``tokenizer.json`` (atomically). A folder gets ``tokenizer.json`` inside."""
        return _operations().save_path(self, path, pretty=pretty)

    def save_vocab_merges(
        self, folder: str | os.PathLike[str], prefix: str | None = None
    ) -> tuple[Path, Path]:
        """Write the classic ``vocab.json`` + ``merges.txt`` pair; returns both paths."""
        return _operations().save_vocab_merges(self, folder, prefix)

    def __repr__(self) -> str:
        model = getattr(self._core, "model_type", "BPE")
        kind = f"byte-level {model}" if self.is_byte_level else model
        return f"<tokensmith.Tokenizer {kind}, {self.vocab_size} tokens>"

    # -------------------------------------------------------------- streaming
    def decode_stream(
        self, skip_special_tokens: bool = False
    ) -> StreamDecoder:
        """A decoder fed one id at a time that never splits a UTF-8 character::

            stream = tok.decode_stream()
            text = "".join(stream.step(i) for i in ids) + stream.flush()  # == tok.decode(ids)

        See :class:`tokensmith.streaming.StreamDecoder`.
        """
        from .streaming import StreamDecoder

        return StreamDecoder(self, skip_special_tokens=skip_special_tokens)

    def decode_single_token_bytes(self, token_id: int) -> bytes:
        """The bytes of one token (a special token's text for special tokens).

        Raises :class:`UnknownIdError` (a ``KeyError``) when the id is not in the vocabulary.
        """
        from .errors import UnknownIdError

        try:
            raw = self.id_to_bytes(token_id)
        except OverflowError:
            raw = None
        except TypeError as e:
            raise TokenIdTypeError(f"token ids must be integers: {e}") from None
        if raw is None:
            raise UnknownIdError(f"token id {token_id} is not in the vocabulary", token_id)
        return raw


def _as_list(ids: Sequence[int]) -> list[int]:
    return ids if isinstance(ids, list) else list(ids)


def _with_ids(fn: Callable[[], _T]) -> _T:
    """Run a decode; ids that are negative or too large are unknown ids."""
    try:
        return fn()
    except (OverflowError, TypeError) as e:
        raise _id_error(e) from None


def _json_message(msg: str) -> str:
    """A ``tokenizer.json`` parse error's message, with a hint where it helps."""
    return msg + " (the file looks truncated)" if "EOF while parsing" in msg else msg


def _id_error(e: Exception) -> Exception:
    """The error to raise for a decode that failed on its ids with ``e``."""
    if isinstance(e, OverflowError):
        from .errors import UnknownIdError

        return UnknownIdError("a token id is negative or too large for any vocabulary", None)
    return TokenIdTypeError(f"token ids must be integers: {e}")


_NUMPY: tuple[Any, Any, Any, Any] | None = None


def _numpy() -> tuple[Any, Any, Any, Any]:
    """(numpy, uint32 little-endian dtype, numpy.frombuffer, uint64 little-endian dtype),
    imported once.

    The ``encode_*_to_numpy`` methods call this before they encode: a
    missing numpy is then reported before the work, and numpy's import
    (tens of megabytes of libraries and their set-up) comes before the
    first encoding rather than between it and the next, whose caches it
    would leave cold (measured: the next megabyte of English 15% slower).
    """
    global _NUMPY
    if not _NUMPY:
        try:
            import numpy as np
        except ImportError:
            from .errors import ConfigError

            raise ConfigError("encode_*_to_numpy needs numpy: pip install 'tokensmith[numpy]' "
                              "(or pip install numpy)") from None
        _NUMPY = (np, np.dtype("<u4"), np.frombuffer, np.dtype("<u8"))
    return _NUMPY


# --------------------------------------------------------- Hugging Face defaults
_ALL: SpecialSet = "all"  # (the defaults of HFTokenizer)


class HFTokenizer(Tokenizer):
    """:meth:`Tokenizer.hf`'s view: the defaults of Hugging Face ``tokenizers``. Text
    that spells a special token (``[MASK]``, ``<|start_header_id|>``, ``</s>``) is that
    token, and ``decode`` leaves special tokens out. tokensmith's own default is
    tiktoken's (such text is refused unless the call says what it is, and ``decode`` keeps
    every token); this view is for code and habits written against ``tokenizers``. Same
    core, same ids; only the defaults of the keyword arguments differ, and every call may
    still give them."""

    def encode(self, text: str, *, allowed_special: SpecialSet = _ALL,
               disallowed_special: SpecialSet = (), add_special_tokens: bool = True) -> list[int]:
        return super().encode(text, allowed_special=allowed_special,
                              disallowed_special=disallowed_special,
                              add_special_tokens=add_special_tokens)

    def count(self, text: str, *, allowed_special: SpecialSet = _ALL,
              disallowed_special: SpecialSet = (), add_special_tokens: bool = True) -> int:
        return super().count(text, allowed_special=allowed_special,
                             disallowed_special=disallowed_special,
                             add_special_tokens=add_special_tokens)

    def encode_batch(self, texts: Iterable[str], *, allowed_special: SpecialSet = _ALL,
                     disallowed_special: SpecialSet = (), add_special_tokens: bool = True,
                     num_threads: int | None = None) -> list[list[int]]:
        return super().encode_batch(texts, allowed_special=allowed_special,
                                    disallowed_special=disallowed_special,
                                    add_special_tokens=add_special_tokens,
                                    num_threads=num_threads)

    def encode_full(self, text: str, pair: str | None = None, *,
                    allowed_special: SpecialSet = _ALL, disallowed_special: SpecialSet = (),
                    add_special_tokens: bool = True) -> Encoding:
        return super().encode_full(text, pair, allowed_special=allowed_special,
                                   disallowed_special=disallowed_special,
                                   add_special_tokens=add_special_tokens)

    def encode_to_numpy(self, text: str, *, allowed_special: SpecialSet = _ALL,
                        disallowed_special: SpecialSet = (),
                        add_special_tokens: bool = True) -> np.ndarray:
        return super().encode_to_numpy(text, allowed_special=allowed_special,
                                       disallowed_special=disallowed_special,
                                       add_special_tokens=add_special_tokens)

    def encode_batch_to_numpy(self, texts: Iterable[str], *, allowed_special: SpecialSet = _ALL,
                              disallowed_special: SpecialSet = (),
                              add_special_tokens: bool = True,
                              num_threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        return super().encode_batch_to_numpy(texts, allowed_special=allowed_special,
                                             disallowed_special=disallowed_special,
                                             add_special_tokens=add_special_tokens,
                                             num_threads=num_threads)

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = True) -> str:
        return super().decode(ids, skip_special_tokens=skip_special_tokens)

    def decode_batch(self, batch: Iterable[Sequence[int]], *,
                     skip_special_tokens: bool = True) -> list[str]:
        return super().decode_batch(batch, skip_special_tokens=skip_special_tokens)

    def hf(self) -> HFTokenizer:
        return self

    def __repr__(self) -> str:
        return super().__repr__().replace("<tokensmith.Tokenizer", "<tokensmith.Tokenizer.hf()", 1)


def hf_view(tok: Tokenizer) -> HFTokenizer:
    """``tok`` with ``tokenizers``' defaults (same core; Python-side extras kept)."""
    view = HFTokenizer(tok._core)
    view.__dict__.update({k: v for k, v in vars(tok).items() if k not in Tokenizer._DERIVED})
    return view
