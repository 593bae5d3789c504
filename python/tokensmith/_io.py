"""Atomic file writes: a temporary file in the same folder, then a rename."""

from __future__ import annotations

import os
import stat
from pathlib import Path

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)


def _create_temp(folder: Path, name: str, mode: int) -> tuple[int, Path]:
    """A new, empty file next to the target, opened for writing; created with ``mode``,
    which the kernel restricts by the umask (and by a folder's default ACL), exactly as
    for any new file."""
    for _ in range(100):
        tmp = folder / f".{name}.{os.urandom(6).hex()}.tmp"
        try:
            return os.open(tmp, _FLAGS, mode), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a temporary file in {folder}")


def atomic_write(path: str | os.PathLike[str], data: str | bytes) -> Path:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half.

    A new file gets the permissions of any new file (``0o666`` less the umask); a file
    that is replaced keeps its permission bits.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        keep: int | None = stat.S_IMODE(os.stat(target).st_mode) & 0o777
    except OSError:  # not there (or not ours to look at): a new file
        keep = None
    # The umask is not read (os.umask would have to change it, which is not thread-safe):
    # a new file is created with 0o666 and the kernel applies it. A file that replaces
    # another starts private and gets the old file's bits before any data is written.
    fd, tmp = _create_temp(target.parent, target.name, 0o666 if keep is None else 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            if keep is not None:
                if hasattr(os, "fchmod"):
                    os.fchmod(f.fileno(), keep)
                else:  # Windows before Python 3.13
                    os.chmod(tmp, keep)
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return target
