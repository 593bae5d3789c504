"""Streaming decode: ids go in one at a time, text comes out as soon as it is whole.

A model generates one token at a time, and one token is not always whole
characters: byte-level BPE splits an emoji or a CJK character across tokens.
:class:`StreamDecoder` returns the text that each new id completes and keeps
back the bytes of a character that is not finished yet::

    stream = tok.decode_stream()
    for token_id in generated:
        print(stream.step(token_id), end="", flush=True)
    print(stream.flush())

How it works, and what is guaranteed:

* Byte-level tokenizers whose decoder is ``ByteLevel`` (tiktoken encodings,
  GPT-2, Llama-3, Qwen, DeepSeek …): each id's bytes go through an
  incremental UTF-8 decoder. A character is never split, and the pieces
  joined (with :meth:`StreamDecoder.flush`) equal ``tok.decode(ids)``
  exactly, U+FFFD for invalid bytes included. Special tokens give their text
  (or nothing with ``skip_special_tokens=True``).
* Every other tokenizer (character-level BPE with an end-of-word suffix,
  SentencePiece-style Metaspace with byte fallback, WordPiece …), the window
  mode: the decoder keeps a window of recent ids as context, decodes context +
  new ids with ``tok.decode`` and returns what the new ids added.

  - What is final is decided from the ids, not from the text: the only ids
    whose text can still change are byte pieces (``<0xE2>`` …, or the bytes of
    a byte-level model's tokens) that begin a UTF-8 character whose last bytes
    have not arrived, at most three ids. Those are held back; everything
    before them is returned. A real U+FFFD in the text (its three bytes, or an
    invalid byte) is returned at once.
  - The context reaches back to the last group of ids whose own text is not
    empty. A decoder treats the start of its text specially (Metaspace and
    SentencePiece drop the space of the first piece, ``Strip`` strips the
    text's first characters), and SentencePiece keeps doing so while the text
    is still empty, across control tokens such as ``<s>`` that decode to
    nothing: a context that is only ``<s>`` would look like the start of the
    text. Before any such group the context is every id from the start; a
    run of byte pieces stays whole in it too (``ByteFallback`` decodes a run
    as a whole). Runs of special tokens that decode to nothing count as one,
    and past 64 ids the context is cut to its first group and its latest
    ids, so that a step costs two or three decodes of a bounded window.

  The result equals ``tok.decode(ids)`` whenever a token's text depends only
  on the tokens before it in such a window and adding a token does not
  rewrite text already produced, which holds for the BPE end-of-word suffix,
  Metaspace, SentencePiece, byte-fallback, Fuse and Strip decoders. A decoder
  that rewrites earlier text cannot be undone in a stream: text already
  returned stays returned. That is WordPiece's ``cleanup`` joining ``" n't"``,
  and ``ByteFallback`` (the decoder of tokenizer.json files), which turns a
  whole run of byte pieces into U+FFFD when one byte in it is invalid (the
  SentencePiece decoder replaces only the bytes that are invalid).
"""

from __future__ import annotations

import codecs
import json
import re
import weakref
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from .errors import TokenIdTypeError, UnknownIdError

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

__all__ = ["StreamDecoder", "stream_decode"]

# window mode: a byte-fallback piece, as the ByteFallback and SentencePiece decoders read it
_BYTE_PIECE = re.compile(rb"<0x([0-9A-Fa-f]{2})>")
_MAX_CONTEXT = 64  # window mode: ids of context at most (see StreamDecoder._keep)

_PLAIN_BYTES: weakref.WeakKeyDictionary[Tokenizer, bool] = weakref.WeakKeyDictionary()


def _decodes_as_bytes(tok: Tokenizer) -> bool:
    """Whether ``tok.decode`` is "join the tokens' bytes, then UTF-8 with U+FFFD"."""
    known = _PLAIN_BYTES.get(tok)
    if known is None:
        known = False
        if tok.is_byte_level:
            decoder = json.loads(tok.to_str(pretty=False)).get("decoder")
            known = isinstance(decoder, dict) and decoder.get("type") == "ByteLevel"
        _PLAIN_BYTES[tok] = known
    return known


class StreamDecoder:
    """Decode ids one at a time without ever splitting a UTF-8 character.

    :meth:`step` takes one id and returns the text it completes (``""`` while
    a character waits for its remaining bytes); :meth:`flush` ends the stream,
    returns what is left (an unfinished character as U+FFFD, as
    ``tok.decode`` would) and makes the decoder ready for a new stream. An id
    that is not in the vocabulary raises
    :class:`~tokensmith.errors.UnknownIdError` and changes nothing.
    """

    def __init__(self, tok: Tokenizer, *, skip_special_tokens: bool = False) -> None:
        self._tok = tok
        self._skip = skip_special_tokens
        self._specials = frozenset(tok.special_tokens.values())
        self._bytes_mode = _decodes_as_bytes(tok)
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._byte_level_model = tok.is_byte_level
        # window mode: the ids whose text was returned and that the next ones are
        # decoded after (context), which of them begin a group of ids returned
        # together, and the decoded text of the context alone; the ids not returned
        # yet, with the bytes each carries (None: not a byte piece)
        self._context: list[int] = []
        self._starts: list[bool] = []
        self._text = ""
        self._pending: list[int] = []
        self._pending_bytes: list[bytes | None] = []
        # how many ids at the front of the context a cut keeps (the anchor: the
        # last group of ids with text of their own; 0 while there is none), how
        # many at its end are special tokens that decode to nothing, and whether
        # it ends in a byte piece
        self._anchor = 0
        self._silent = 0
        self._in_run = False

    @property
    def byte_level(self) -> bool:
        """True when ids are decoded byte by byte (exact for every input), False in the
        window mode used for other decoders."""
        return self._bytes_mode

    def _token_bytes(self, token_id: int) -> bytes:
        try:
            raw = self._tok.id_to_bytes(token_id)
        except OverflowError:
            raw = None
        except TypeError as e:
            raise TokenIdTypeError(f"token ids must be integers: {e}") from None
        if raw is None:
            raise UnknownIdError(f"token id {token_id} is not in the vocabulary", token_id)
        return raw

    def step(self, token_id: int) -> str:
        """Add one id; return the text that is now complete (possibly ``""``)."""
        raw = self._token_bytes(token_id)
        if self._skip and token_id in self._specials:
            return ""  # as tok.decode(..., skip_special_tokens=True): as if never there
        if self._bytes_mode:
            return self._utf8.decode(raw)
        return self._step_window(token_id, raw)

    def feed(self, ids: Iterable[int]) -> str:
        """Add several ids; return the text they complete."""
        return "".join([self.step(i) for i in ids])

    def flush(self) -> str:
        """End the stream: return the text still held back and reset."""
        if self._bytes_mode:
            out = self._utf8.decode(b"", final=True)
            self._utf8.reset()
            return out
        out = ""
        if self._pending:
            out = self._decode(self._context + self._pending)[len(self._text) :]
        self.reset()
        return out

    def reset(self) -> None:
        """Forget everything fed so far (held-back bytes included)."""
        self._utf8.reset()
        self._context = []
        self._starts = []
        self._text = ""
        self._pending = []
        self._pending_bytes = []
        self._anchor = 0
        self._silent = 0
        self._in_run = False

    # ------------------------------------------------------------ window mode
    def _decode(self, ids: list[int]) -> str:
        return self._tok.decode(ids, skip_special_tokens=self._skip)

    def _carried(self, raw: bytes) -> bytes | None:
        """The bytes an id adds to a run that the decoder turns into UTF-8 text as a
        whole: a byte-level model's token bytes, the byte of a byte-fallback piece;
        None for an id whose text is whole characters."""
        if self._byte_level_model:
            return raw
        m = _BYTE_PIECE.fullmatch(raw)
        return bytes([int(m[1], 16)]) if m else None

    def _unfinished(self) -> int:
        """How many of the newest pending ids carry the first bytes of a character
        that more bytes can still complete (0 to 3)."""
        carried = self._pending_bytes
        if carried[-1] is None:
            return 0
        tail = b""
        for raw in reversed(carried):
            if raw is None:
                break
            tail = raw + tail
            if len(tail) >= 3:  # an unfinished character has at most 3 bytes
                break
        # (a character begun before the pending ids is complete: ids are only
        # returned once their last character is)
        tail = tail[-3:]
        missing = len(tail) - codecs.utf_8_decode(tail, "replace", False)[1]
        held = size = 0
        while size < missing:
            held += 1
            size += len(carried[-held] or b"")
        return held

    def _step_window(self, token_id: int, raw: bytes) -> str:
        self._pending.append(token_id)
        self._pending_bytes.append(self._carried(raw))
        held = self._unfinished()
        if held == len(self._pending):
            return ""  # the first bytes of a character: wait for the rest
        ready = len(self._pending) - held
        group, self._pending = self._pending[:ready], self._pending[ready:]
        carried, self._pending_bytes = self._pending_bytes, self._pending_bytes[ready:]
        # a byte piece after a byte piece: one run of bytes, which tokenizers'
        # ByteFallback decodes as a whole (all U+FFFD when one byte is invalid)
        in_run = self._in_run and carried[0] is not None
        self._in_run = carried[ready - 1] is not None and not self._byte_level_model
        text = self._decode(self._context + group)
        out = text[len(self._text) :]
        self._keep(group, text, in_run)
        return out

    def _keep(self, group: list[int], text: str, in_run: bool) -> None:
        """Set the context after ``group`` was returned; ``text`` is the decode of
        the old context + ``group``, ``in_run`` whether ``group`` continues a run
        of byte pieces that ends the context.

        Decoding context + new ids gives the new ids' text exactly when the decoder
        is in the same state after the context as after all the ids so far. The
        state that outlives a token is "still at the start of the text" (Metaspace
        and SentencePiece drop the first piece's space; SentencePiece while the text
        is empty, across control tokens), so the context begins with a group of
        ids whose own text is not empty (the anchor), or at the start of the
        stream while there is no such group; and a run of byte pieces stays whole.
        """
        if not in_run:
            own = self._decode(group)
            if own:
                self._context, self._text = group, own
                self._starts = [True] + [False] * (len(group) - 1)
                self._anchor, self._silent = len(group), 0
                return
        context = self._context + group
        starts = self._starts + [True] + [False] * (len(group) - 1)
        specials = all(i in self._specials for i in group)
        shortened = False
        if specials and self._silent:
            # special tokens that decode to nothing (control tokens) next to each
            # other: the last of them does all that the run does
            gone = slice(len(context) - len(group) - self._silent, len(context) - len(group))
            del context[gone], starts[gone]
            shortened = True
        self._silent = len(group) if specials else 0
        if len(context) > _MAX_CONTEXT:
            # a long run of ids without text of their own, or of byte pieces: keep
            # the anchor (the first ids of the stream while there is none) and
            # the latest ids, from the start of a group (never inside a character)
            front = self._anchor
            if not front:
                front = _MAX_CONTEXT // 2
                while not starts[front]:
                    front += 1
            cut = len(context) - (_MAX_CONTEXT - front)
            while cut < len(context) - len(group) and not starts[cut]:
                cut += 1
            del context[front:cut], starts[front:cut]
            self._anchor = front
            self._silent = min(self._silent, len(context) - front)
            shortened = True
        self._context, self._starts = context, starts
        self._text = self._decode(context) if shortened else text


def stream_decode(
    tok: Tokenizer, ids: Iterable[int], *, skip_special_tokens: bool = False
) -> Iterator[str]:
    """Yield the text of ``ids`` in pieces as they complete (never an empty piece);
    the pieces joined equal ``tok.decode(ids)`` for byte-level tokenizers."""
    stream = StreamDecoder(tok, skip_special_tokens=skip_special_tokens)
    for token_id in ids:
        piece = stream.step(token_id)
        if piece:
            yield piece
    tail = stream.flush()
    if tail:
        yield tail
