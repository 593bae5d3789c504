"""A small progress bar with an ETA, written to stderr."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _fmt_time(s: float) -> str:
    s = max(0, int(s))
    if s >= 3600:
        return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
    return f"{s // 60}:{s % 60:02d}"


class Progress:
    """``Progress(total, "merges")``; call :meth:`update` with the count done."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None) -> None:
        self.total = max(total, 1)
        self.label = label
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
        line = (
            f"{self.label} [{bar}] {done}/{self.total} {pct:3d}% "
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
