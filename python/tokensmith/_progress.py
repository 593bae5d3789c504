"""What training reports: a small progress bar with an ETA (written to stderr), the
trace lines of BPE merges and Unigram EM steps, and :class:`TrainingEvents`, which
routes a trainer's events to them and to the user's callback."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO


def _fmt_time(s: float) -> str:
    s = max(0, int(s))
    if s >= 3600:
        return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
    return f"{s // 60}:{s % 60:02d}"


def format_merge(index: int, left: bytes, right: bytes, new_id: int, count: int) -> str:
    """One line of the training trace: ``merge 0: (b' ', b't') -> 256 ' t' (count 50)``."""
    raw = left + right
    try:
        merged = repr(raw.decode("utf-8"))
    except UnicodeDecodeError:  # part of a multi-byte character: show the bytes
        merged = repr(raw)
    return f"merge {index}: ({left!r}, {right!r}) -> {new_id} {merged} (count {count})"


def _chosen_for(rest: tuple[Any, ...]) -> str:
    """The end of a parity-aware merge's trace line: the language the merge was
    chosen for (its sixth item; ``None`` for a classical merge of the hybrid)."""
    if not rest:
        return ""
    return f" for {rest[0]}" if rest[0] is not None else " for all languages (classical)"


def format_em_step(round_: int, sub: int, pieces: int, objective: float, tokens: int) -> str:
    """One line of the Unigram training trace."""
    return (f"EM round {round_} step {sub}: {pieces:,} pieces, "
            f"-log p per word {objective:.4f}, {tokens:,} tokens")


class Progress:
    """``Progress(total, "merges")``; call :meth:`update` with the count done."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None,
                 in_bytes: bool = False) -> None:
        self.total = max(total, 1)
        self.label = label
        self.in_bytes = in_bytes  # (count bytes: show MB and MB/s)
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.start = time.monotonic()
        self.last_print = 0.0
        self.last_pct = -1
        self.last_done = -1

    def update(self, done: int, force: bool = False) -> None:
        if done == self.last_done:
            return
        now = time.monotonic()
        pct = int(100 * done / self.total)
        if not force:
            if self.tty:
                if now - self.last_print < 0.1 and done < self.total:
                    return
            elif pct < self.last_pct + 10 and done < self.total:
                return
        self.last_print, self.last_pct, self.last_done = now, pct, done
        elapsed = now - self.start
        eta = elapsed / done * (self.total - done) if done else 0.0
        width = 30
        fill = int(width * done / self.total)
        bar = "#" * fill + "-" * (width - fill)
        if self.in_bytes:
            rate = done / elapsed / 1e6 if elapsed > 0 else 0.0
            amount = f"{done / 1e6:,.0f}/{self.total / 1e6:,.0f} MB {rate:,.0f} MB/s"
        else:
            amount = f"{done}/{self.total}"
        line = (
            f"{self.label} [{bar}] {amount} {pct:3d}% "
            f"elapsed {_fmt_time(elapsed)} eta {_fmt_time(eta)}"
        )
        if self.tty:
            self.stream.write("\r" + line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self, done: int | None = None) -> None:
        """Draw the final state (``done`` may stop short of the total) and end the line."""
        if done is not None:
            self.update(done, force=True)
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


class TrainingEvents:
    """What a trainer reports, routed: the user's ``callback(kind, data)`` gets
    everything; with ``verbose`` the trace lines (``merge``, ``em``) go to
    ``out``; with ``progress`` (default: ``verbose``) a bar counts ``unit``.
    Pass the instance to the core trainer when :attr:`wanted`, and call
    :meth:`close` with the final count when training ends."""

    def __init__(self, verbose: bool, progress: bool | None, out: TextIO,
                 callback: Callable[[str, tuple[Any, ...]], None] | None, unit: str) -> None:
        self.verbose = verbose
        self.show_bar = verbose if progress is None else progress
        self.out = out
        self.callback = callback
        self.unit = unit
        self.bar: Progress | None = None

    @property
    def wanted(self) -> bool:
        return self.verbose or self.show_bar or self.callback is not None

    def __call__(self, kind: str, data: tuple[Any, ...]) -> None:
        if self.callback is not None:
            self.callback(kind, data)
        if kind == "merge" and self.verbose:
            print(format_merge(*data[:5]) + _chosen_for(data[5:]), file=self.out)
        elif kind == "removal" and self.verbose:
            from ._train_picky import format_removal

            print(format_removal(*data), file=self.out)
        elif kind == "em" and self.verbose:
            print(format_em_step(*data), file=self.out)
        elif kind == "progress" and self.show_bar:
            done, total = data
            if self.bar is None:
                self.bar = Progress(total, self.unit, self.out)
            self.bar.update(done)

    def close(self, n: int) -> None:
        if self.bar is not None:
            self.bar.close(n)
