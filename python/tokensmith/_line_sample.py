"""A uniform random sample of a corpus's lines, as ``sentencepiece`` takes one
(``input_sentence_size``), or of about so many bytes (``sample_bytes``).

Every line gets a random key from a generator seeded with ``seed``; the sample is the
lines with the smallest keys, as many as ``lines`` allows, or as fit in ``bytes``.
Kept in a heap by key, it needs memory for the sample only, whatever the corpus
size, and the same corpus and seed give the same sample. Lines keep their line
break; a document given as a string is cut into its lines.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from .errors import ConfigError

__all__ = ["LineSample", "SampleReport", "sample_lines"]


# (a NamedTuple and a plain class, not dataclasses: ``dataclasses`` imports ``inspect``,
# a megabyte of resident memory in every training process)
class LineSample(NamedTuple):
    """What to keep: at most ``lines`` lines, at most ``bytes`` bytes of lines."""

    lines: int | None = None
    bytes: int | None = None
    seed: int = 0

    @classmethod
    def of(cls, input_sentence_size: int | None, sample_bytes: int | None,
           seed: int) -> LineSample | None:
        """The sample the training options ask for, checked; ``None`` for all text."""
        for name, value in (("input_sentence_size", input_sentence_size),
                            ("sample_bytes", sample_bytes)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise ConfigError(f"{name} must be a positive integer or None, not {value!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ConfigError(f"sample_seed must be an integer, not {seed!r}")
        if input_sentence_size is None and sample_bytes is None:
            return None
        return cls(input_sentence_size, sample_bytes, seed)


class SampleReport:
    """How much was seen and how much kept."""

    __slots__ = ("lines_seen", "bytes_seen", "lines_kept", "bytes_kept")

    def __init__(self) -> None:
        self.lines_seen = self.bytes_seen = self.lines_kept = self.bytes_kept = 0

    def describe(self, seed: int) -> str:
        return (f"sampled {self.lines_kept:,} of {self.lines_seen:,} lines "
                f"({self.bytes_kept:,} of {self.bytes_seen:,} bytes, seed {seed})")


def _lines(texts: Iterable[str]) -> Iterator[str]:
    for text in texts:
        yield from text.splitlines(keepends=True)


def sample_lines(texts: Iterable[str], spec: LineSample) -> tuple[list[str], SampleReport]:
    """The sampled lines, in corpus order, and what was seen and kept."""
    rng = random.Random(spec.seed)
    report = SampleReport()
    heap: list[tuple[float, int, str, int]] = []  # (-key, order, line, size): largest key on top
    kept_bytes = 0
    for order, line in enumerate(_lines(texts)):
        size = len(line.encode("utf-8", "surrogatepass"))
        report.lines_seen += 1
        report.bytes_seen += size
        key = rng.random()
        full = (spec.lines is not None and len(heap) >= spec.lines) or (
            spec.bytes is not None and kept_bytes + size > spec.bytes)
        if full and heap and key >= -heap[0][0]:
            continue  # (a larger key than every kept line's: not in the sample)
        heapq.heappush(heap, (-key, order, line, size))
        kept_bytes += size
        while heap and ((spec.lines is not None and len(heap) > spec.lines) or (
                spec.bytes is not None and kept_bytes > spec.bytes)):
            kept_bytes -= heapq.heappop(heap)[3]
    kept = sorted(heap, key=lambda item: item[1])
    report.lines_kept, report.bytes_kept = len(kept), kept_bytes
    return [item[2] for item in kept], report
