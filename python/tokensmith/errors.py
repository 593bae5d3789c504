"""The exceptions tokensmith raises.

Every error is a :class:`TokenizerError`, itself a :class:`ValueError`, so
``except ValueError`` keeps working; the subclasses say what went wrong.
"""

from __future__ import annotations

__all__ = [
    "TokenizerError",
    "ConfigError",
    "InvalidPatternError",
    "VocabSizeError",
    "TokenizerFormatError",
    "TokenIdTypeError",
    "UnsupportedComponentError",
    "UnknownIdError",
    "DisallowedSpecialTokenError",
    "CorpusError",
    "CorpusEncodingError",
    "CorpusCompressionError",
    "EmptyCorpusError",
    "ChecksumError",
    "EvaluationError",
    "EmptyTextError",
    "ParallelTextError",
    "SurgeryError",
    "TokenExistsError",
    "InvalidTokenError",
    "VocabLimitError",
    "NotEnoughTextError",
    "PruneError",
    "IncompatibleTokenizersError",
    "CompatibilityError",
    "InternalError",
    "VocabShortfallWarning",
    "PortabilityWarning",
    "ClusterError",
    "UnknownOptionError",
]


class TokenizerError(ValueError):
    """Base class of every tokensmith error."""


class ConfigError(TokenizerError):
    """A setting that cannot be used."""


class UnknownOptionError(ConfigError, TypeError):
    """A keyword argument the function does not take (``min_freq=`` for
    ``min_frequency=``); the message suggests the closest one. A ``TypeError`` too, as
    Python raises for an unexpected keyword argument."""


class InvalidPatternError(ConfigError):
    """A pre-tokenizer regular expression that does not compile."""


class VocabSizeError(ConfigError):
    """A vocabulary size too small for the alphabet and the special tokens."""


class TokenizerFormatError(TokenizerError):
    """A tokenizer file that is malformed or truncated; the message names the field."""


class TokenIdTypeError(TokenizerFormatError, TypeError):
    """A token id that is not an integer (``tok.decode(["x"])``). It is a ``TypeError``, as
    Python code expects, and a :class:`TokenizerFormatError`, as earlier versions raised."""


class UnsupportedComponentError(TokenizerFormatError):
    """A tokenizer file that uses a component tokensmith does not implement."""


class UnknownIdError(TokenizerError, KeyError):
    """A token id that is not in the vocabulary."""

    def __init__(self, message: str, token_id: int | None = None) -> None:
        super().__init__(message)
        self.token_id = token_id

    def __str__(self) -> str:  # KeyError would add quotes
        return str(self.args[0])


class DisallowedSpecialTokenError(TokenizerError):
    """Text contains a special token's text and the call did not say what to do with it."""

    def __init__(self, token: str) -> None:
        self.token = token
        super().__init__(
            f"the text contains the special token {token!r}. Pass "
            f"allowed_special={{{token!r}}} (or allowed_special='all') to encode it as the "
            f"special token, or disallowed_special=() to encode it as ordinary text."
        )


class CorpusError(TokenizerError):
    """A training corpus that cannot be read."""


class CorpusEncodingError(CorpusError):
    """A corpus file that is not valid UTF-8."""

    def __init__(self, message: str, path: str = "", offset: int = 0) -> None:
        self.path = path
        self.offset = offset
        super().__init__(
            f"{message}. Fix the file, or pass errors='replace' (use U+FFFD) or "
            f"errors='skip' (drop the bad bytes)."
        )


class CorpusCompressionError(CorpusError):
    """A ``.gz``/``.bz2``/``.xz``/``.lzma`` corpus file that cannot be decompressed.

    ``path`` is the file, ``compression`` the format its name promises (``"gzip"`` …) and
    ``problem`` one of ``"truncated"``, ``"wrong-format"`` or ``"corrupt"``.
    """

    def __init__(
        self, message: str, path: str = "", compression: str = "", problem: str = ""
    ) -> None:
        self.path = path
        self.compression = compression
        self.problem = problem
        super().__init__(message)


class ClusterError(CorpusError):
    """The cluster that was to count the corpus (Ray) cannot be reached or started."""


class EmptyCorpusError(CorpusError):
    """A training corpus with no text in it."""


class ChecksumError(TokenizerError):
    """Downloaded bytes whose SHA-256 is not the one expected; nothing was saved."""

    def __init__(self, message: str, expected: str = "", actual: str = "") -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(message)


class EvaluationError(TokenizerError):
    """A measurement (``tokensmith.evaluate`` / ``compare``) that cannot be made."""


class EmptyTextError(EvaluationError):
    """No text to measure: every text given was empty."""


class ParallelTextError(EvaluationError):
    """Parallel texts that cannot be compared line by line (missing pivot, unequal lengths)."""


class SurgeryError(TokenizerError):
    """A change to a tokenizer's vocabulary (add, extend, prune, merge, resize) that
    cannot be made; the tokenizer it was asked of is unchanged."""


class TokenExistsError(SurgeryError):
    """A token to add is already in the vocabulary (``on_exists="error"``)."""

    def __init__(self, message: str, token: str = "", token_id: int | None = None) -> None:
        self.token = token
        self.token_id = token_id
        super().__init__(message)


class InvalidTokenError(SurgeryError):
    """A token that cannot be added: empty, only whitespace, or not a string."""


class VocabLimitError(SurgeryError, VocabSizeError):
    """The vocabulary would have more ids than the model has embedding rows."""

    def __init__(self, message: str, size: int = 0, limit: int = 0) -> None:
        self.size = size
        self.limit = limit
        super().__init__(message)


class NotEnoughTextError(SurgeryError, CorpusError):
    """The new text supports fewer new tokens than were asked for (``strict=True``)."""

    def __init__(self, message: str, asked: int = 0, learned: int = 0) -> None:
        self.asked = asked
        self.learned = learned
        super().__init__(message)


class PruneError(SurgeryError):
    """A prune that would remove a byte token, a special token or a token the kept
    ones need."""


class IncompatibleTokenizersError(SurgeryError):
    """Two tokenizers whose vocabularies cannot be merged (different model families,
    normalizers or byte handling)."""


class CompatibilityError(SurgeryError):
    """Raised by ``CompatibilityReport.raise_for_failures()``: an invariant is broken."""


class InternalError(RuntimeError):
    """A bug in tokensmith, not a problem with the input: the Rust core panicked.

    Never raised for bad input (that is a :class:`TokenizerError`), so it is not one; it
    replaces the ``PanicException`` a Rust panic would otherwise raise (a
    ``BaseException`` that ``except Exception`` does not catch). ``panic`` is the core's
    own message. The process is intact and other calls go on working.
    """

    def __init__(self, panic: str) -> None:
        self.panic = panic
        super().__init__(
            f"tokensmith internal error (a bug, not a problem with your input): {panic}. "
            "Please report it with the call and the input that caused it."
        )


class VocabShortfallWarning(UserWarning):
    """A trainer stopped short of the ``vocab_size`` asked for: the corpus has no more
    pairs (or pieces) frequent enough. ``asked`` and ``got`` are the two sizes."""

    def __init__(self, message: str, asked: int = 0, got: int = 0) -> None:
        self.asked = asked
        self.got = got
        super().__init__(message)


class PortabilityWarning(UserWarning):
    """A file was written that another library reads differently from tokensmith (or
    cannot read): the message names the difference."""
