"""No import cycles among the modules of python/tokensmith (and, once the engine split
lands, of src/): the checks of ``scripts/import_cycles.py``, and that its cycle finder
does find cycles."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "import_cycles.py"


@pytest.fixture(scope="module")
def ic() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_import_cycles_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclass looks its module up)
    spec.loader.exec_module(module)
    return module


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def _shown(ic: ModuleType, edges: list[Any]) -> str:
    return "\n".join(f"{' -> '.join(ic.shortest_loop(c, edges))}: {c}"
                     for c in ic.strongly_connected(edges))


def test_python_package_has_no_import_cycle(ic: ModuleType) -> None:
    edges = ic.python_edges(ic.PYTHON_PACKAGE)
    assert len(edges) > 100  # (the package was read)
    assert ic.strongly_connected(edges) == [], _shown(ic, edges)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_rust_crate_has_no_module_cycle(ic: ModuleType, depth: int) -> None:
    edges = ic.rust_edges(ic.RUST_SRC, depth)
    assert ic.strongly_connected(edges) == [], _shown(ic, edges)


def test_finds_python_cycles(ic: ModuleType, tmp_path: Path) -> None:
    _write(tmp_path / "pkg", {
        "__init__.py": "from . import a, f\n",
        "a.py": "from . import b\nx = 1\n",
        # a lazy import is still an edge
        "b.py": "def f():\n    from .a import x\n    return x\n",
        # under TYPE_CHECKING it is not
        "c.py": """\
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from .d import y
            """,
        # importing pkg.sub.e runs pkg/sub/__init__.py, which imports d back
        "d.py": "import pkg.sub.e\ny = 2\n",
        "sub/__init__.py": "from ..d import y\n",
        "sub/e.py": "from .. import c\n",
        # the package's __init__ may import its modules; a module importing the package
        # (not a module of it) makes a cycle
        "f.py": "from . import x_defined_in_init\n",
    })
    edges = ic.python_edges(tmp_path / "pkg")
    assert ic.strongly_connected(edges) == [
        ["pkg", "pkg.f"],
        ["pkg.a", "pkg.b"],
        ["pkg.d", "pkg.sub"],
    ], _shown(ic, edges)
    assert ("pkg.c", "pkg.d") not in {(e.source, e.target) for e in edges}
    assert ic.shortest_loop(["pkg.d", "pkg.sub"], edges) == ["pkg.d", "pkg.sub", "pkg.d"]
    where = {e.where for e in edges if (e.source, e.target) == ("pkg.b", "pkg.a")}
    assert [w.rsplit("/", 1)[-1] for w in where] == ["b.py:2"]


def test_finds_rust_cycles(ic: ModuleType, tmp_path: Path) -> None:
    _write(tmp_path / "src", {
        # a test module in a file of its own is no edge either
        "lib.rs": "pub mod a;\npub mod b;\npub mod c;\n#[cfg(test)]\nmod tests;\n",
        "tests.rs": "use crate::c::X;\n",
        "a.rs": """\
            use crate::b::{self, Thing as Other};
            // crate::c::X in a comment is no edge, nor "crate::c::X" in a string
            pub fn f() -> &'static str { "crate::c::X" }
            #[cfg(test)]
            mod tests {
                use crate::c::Y;
            }
            """,
        "b/mod.rs": "pub mod inner;\npub struct Thing;\n",
        # a child using its parent is no cycle; super::super is the crate
        "b/inner.rs": "use super::Thing;\npub fn g() { super::super::a::f(); }\n",
        # a path through a module a `use` brought in names that module's module
        "c.rs": """\
            use crate::b::{self};
            pub struct X;
            pub struct Y;
            pub fn h() { b::inner::g() }
            #[cfg(test)]
            #[allow(unused)]
            pub(crate) mod tests {
                use crate::a::f;
            }
            """,
    })
    edges = ic.rust_edges(tmp_path / "src", 2)
    assert {(e.source, e.target) for e in edges} == {
        ("a", "b"), ("b::inner", "a"), ("c", "b"), ("c", "b::inner")}
    assert ic.strongly_connected(edges) == []
    # at depth 1, b::inner is b: a <-> b
    assert ic.strongly_connected(ic.rust_edges(tmp_path / "src", 1)) == [["a", "b"]]


def test_command_line(ic: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert ic.main(["--python"]) == 0
    assert "0 import cycle(s)" in capsys.readouterr().out
