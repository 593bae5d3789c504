"""Write a benchmark's table as a results file (``benchmarks/results/<name>.json``).

Every script here takes ``--json PATH`` and hands its table to ``write_results``,
which adds when and where it was measured. ``render.py`` documents the schema and
turns the files into the tables of the docs (``benchmarks/README.md`` and others).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

Cell = str | int | float | None
Column = str | dict[str, Any]


def machine() -> str:
    """Cores and memory of this machine, as ``"2 cores, 24 GB"``."""
    cores = os.cpu_count() or 1
    try:
        meminfo = Path("/proc/meminfo").read_text(encoding="ascii")
        kib = int(next(ln for ln in meminfo.splitlines() if ln.startswith("MemTotal:")).split()[1])
    except (OSError, StopIteration, ValueError, IndexError):
        return f"{cores} cores"
    return f"{cores} cores, {round(kib / 2**20)} GB"


def load_average() -> str:
    """The 1, 5 and 15-minute load averages now: ``"0.85 / 0.70 / 0.52 (1 / 5 / 15 min)"``."""
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1 / 5 / 15 min)"
    except OSError:
        return "unknown"


def command_line(script: str, argv: list[str] | None = None) -> str:
    """The command line that ran ``script``, from the repository's root (without
    ``--json PATH``, which only says where the results went)."""
    args, kept = list(sys.argv[1:] if argv is None else argv), []
    while args:
        arg = args.pop(0)
        if arg == "--json":
            args = args[1:]
        elif not arg.startswith("--json="):
            kept.append(arg)
    return " ".join(["python", f"benchmarks/{script}", *kept])


def _tidy(cell: Cell) -> Cell:
    """A float to six significant digits (what a table can show, and a short diff)."""
    return float(f"{cell:.6g}") if isinstance(cell, float) else cell


def _column(c: Column) -> dict[str, Any]:
    return {"name": c} if isinstance(c, str) else dict(c)


def write_results(path: str | Path, script: str, command: str, columns: list[Column],
                  rows: list[list[Cell]], notes: str = "", load: str | None = None) -> Path:
    """Write one table with its date, machine and load (``render.py`` has the schema).

    ``columns``: a header, or ``{"name", "format", "align", "group"}``; ``rows``:
    one cell a column (a string as it is shown, a number for the column's format,
    or None for an empty cell); ``load``: by default the load averages now.
    """
    cols = [_column(c) for c in columns]
    if any(len(r) != len(cols) for r in rows):
        raise ValueError(f"{script}: every row needs {len(cols)} cells")
    data = {
        "script": script,
        "command": command,
        "date": time.strftime("%Y-%m-%d"),
        "machine": machine(),
        "load": load or load_average(),
        "columns": cols,
        "rows": [[_tidy(c) for c in r] for r in rows],
        "notes": notes,
    }
    out = Path(path)
    out.write_text(dumps(data), encoding="utf-8")
    return out


def dumps(data: dict[str, Any]) -> str:
    """``data`` as JSON with a column or a row a line (readable in a diff)."""
    def one(x: Any) -> str:
        return json.dumps(x, ensure_ascii=False)

    lines = []
    for key, value in data.items():
        if key in ("columns", "rows") and value:
            items = ",\n".join(f"  {one(x)}" for x in value)
            lines.append(f" {one(key)}: [\n{items}\n ]")
        else:
            lines.append(f" {one(key)}: {one(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"
