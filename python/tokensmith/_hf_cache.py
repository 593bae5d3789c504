"""Tokenizers in the local Hugging Face cache, found by repository name.

``huggingface_hub`` keeps a download of ``org/name`` in
``<hub cache>/models--org--name/snapshots/<commit>/``, with ``refs/main`` naming the
commit of the branch. The hub cache is ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
``~/.cache/huggingface/hub`` (``$XDG_CACHE_HOME`` honoured); the older
``$HUGGINGFACE_HUB_CACHE`` and ``$TRANSFORMERS_CACHE`` are looked at too. Nothing here
touches the network.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# the files a snapshot folder must hold one of to be a tokenizer (formats.load_path)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.txt", "vocab.json")
_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def is_repo_id(name: str) -> bool:
    """Whether ``name`` reads as a Hugging Face repository (``org/name``)."""
    return bool(_REPO_ID.fullmatch(name)) and ".." not in name


def hub_caches() -> list[Path]:
    """The hub cache folders to look in, first the one ``huggingface_hub`` uses."""
    env = os.environ
    xdg = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    home = Path(env["HF_HOME"]) if env.get("HF_HOME") else xdg / "huggingface"
    found: list[Path] = []
    for place in (env.get("HF_HUB_CACHE"), env.get("HUGGINGFACE_HUB_CACHE"), home / "hub",
                  env.get("TRANSFORMERS_CACHE"), xdg / "huggingface" / "hub"):
        if place and Path(place).expanduser() not in found:
            found.append(Path(place).expanduser())
    return found


def _snapshot(repo: Path, revision: str) -> Path | None:
    """The snapshot of ``revision`` (a branch, tag or commit) in one repository folder,
    else its newest snapshot that holds a tokenizer file."""
    ref = repo / "refs" / revision
    commit = ref.read_text(encoding="utf-8").strip() if ref.is_file() else revision
    wanted = repo / "snapshots" / commit
    if wanted.is_dir():
        return wanted
    snapshots = [s for s in (repo / "snapshots").glob("*")
                 if s.is_dir() and any((s / f).exists() for f in TOKENIZER_FILES)]
    return max(snapshots, key=lambda s: s.stat().st_mtime) if snapshots else None


def find(repo_id: str, revision: str = "main") -> tuple[Path | None, list[Path]]:
    """(the snapshot folder of ``repo_id`` holding its tokenizer, or ``None``; the
    repository folders looked at)."""
    folder = "models--" + repo_id.replace("/", "--")
    searched = []
    for cache in hub_caches():
        repo = cache / folder
        searched.append(repo)
        if repo.is_dir():
            snapshot = _snapshot(repo, revision)
            if snapshot is not None:
                return snapshot, searched
    return None, searched
