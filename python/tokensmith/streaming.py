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
  SentencePiece-style Metaspace with byte fallback, WordPiece …): the decoder
  keeps the ids of the piece it returned last as context, decodes context +
  new ids with ``tok.decode`` and returns what the new ids added. While that
  text ends in U+FFFD (an unfinished byte-fallback character, whose bytes the
  byte-fallback decoder turns into U+FFFD until the last one arrives) the new
  ids are held back, up to 32 of them. The result equals ``tok.decode(ids)``
  whenever a token's text depends only on the token before it and adding a
  token does not rewrite text already produced, which holds for the BPE
  end-of-word suffix, Metaspace, byte-fallback, Fuse and Strip decoders. A
  decoder that rewrites earlier text (WordPiece's ``cleanup`` joining
  ``" n't"``) cannot be undone in a stream: text already returned stays
  returned.
"""

from __future__ import annotations

import codecs
import json
import weakref
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from .errors import TokenIdTypeError, UnknownIdError

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

__all__ = ["StreamDecoder", "stream_decode"]

_REPLACEMENT = "\ufffd"
_MAX_PENDING = 32  # window mode: ids held back at most while the text ends in U+FFFD

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
        # window mode: the ids of the text returned last (context), the ids not
        # returned yet, and the decoded text of the context alone
        self._context: list[int] = []
        self._pending: list[int] = []
        self._text = ""

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
        return self._step_window(token_id)

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
        self._pending = []
        self._text = ""

    # ------------------------------------------------------------ window mode
    def _decode(self, ids: list[int]) -> str:
        return self._tok.decode(ids, skip_special_tokens=self._skip)

    def _step_window(self, token_id: int) -> str:
        self._pending.append(token_id)
        text = self._decode(self._context + self._pending)
        if text.endswith(_REPLACEMENT) and len(self._pending) < _MAX_PENDING:
            return ""  # maybe the first bytes of a character: wait for the rest
        out = text[len(self._text) :]
        self._context, self._pending = self._pending, []
        self._text = self._decode(self._context)
        return out

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
