"""The README's Python examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example(code: str, tmp_path, monkeypatch) -> None:
    import warnings

    from tokensmith.errors import VocabShortfallWarning

    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        # (an example asks for no more tokens than its text can give)
        warnings.simplefilter("error", VocabShortfallWarning)
        exec(compile(code, str(README), "exec"), {"__name__": "readme"})


def test_readme_has_examples() -> None:
    assert len(BLOCKS) >= 4
