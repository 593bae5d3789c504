"""``tiktoken.model``: which encoding a model uses."""

from __future__ import annotations

from . import (
    MODEL_PREFIX_TO_ENCODING,
    MODEL_TO_ENCODING,
    encoding_for_model,
    encoding_name_for_model,
)

__all__ = ["MODEL_PREFIX_TO_ENCODING", "MODEL_TO_ENCODING", "encoding_for_model",
           "encoding_name_for_model"]
