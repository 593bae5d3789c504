"""What the command line's modules share: :class:`CommandError` and the checks and
names of output paths. A leaf: ``cli`` registers the commands of ``_cli_*`` and runs
``demo``, and those use these without importing ``cli`` back (``cli`` re-exports
them)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CommandError"]


class CommandError(Exception):
    """A mistake in what the user gave the command line; printed without a traceback."""


def _shown(path: Path) -> str:
    """A path as the user would type it: relative ones get a leading ``./``."""
    s = str(path)
    return s if path.is_absolute() or s.startswith(".") else f".{os.sep}{s}"


def _tokenizer_path(out: str) -> Path:
    """``--out``: a ``.json`` file, or a folder that gets ``tokenizer.json``."""
    p = Path(out)
    if p.is_dir() or out.endswith(("/", os.sep)) or p.suffix.lower() != ".json":
        return p / "tokenizer.json"
    return p


def _check_writable(target: Path) -> None:
    """Fail before a long training run, not after it, when the output cannot be written."""
    if target.is_dir():
        raise CommandError(f"{target}: is a folder; give a .json path or a folder to write into")
    parent = target.parent
    while not parent.exists():
        if parent == parent.parent:
            break
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        raise CommandError(f"cannot write {target}: {parent} is a file, not a folder")
    if parent.is_dir() and not os.access(parent, os.W_OK):
        raise CommandError(f"cannot write {target}: no permission to write in {parent}")
