"""Find import cycles among the modules of ``python/tokensmith`` and ``src/``.

    python scripts/import_cycles.py [--python] [--rust] [--rust-depth N]

With neither ``--python`` nor ``--rust`` both are checked. Each cycle (a strongly
connected component of the import graph, found with Tarjan's algorithm) is
printed with one shortest loop through it and every edge inside it, each at the
``file:line`` that makes it. The exit status is 1 when a cycle was found, else 0.

Python: every ``.py`` file under the package is parsed with :mod:`ast`. Each
``import`` or ``from ... import`` of a ``tokensmith`` module, absolute or
relative, anywhere in a module (in functions too: a lazy import that dodges a
cycle at run time is still a cycle in the design) is an edge, except under
``if TYPE_CHECKING:``, which never runs. ``from P import x`` is an edge to the
submodule ``P.x`` when there is one, else to ``P`` (its ``__init__``); importing
``P.x`` is an edge to ``P`` too, as Python runs ``P/__init__.py`` first, unless
the importer is inside ``P``. Imports by ``importlib`` are not seen.

Rust: each file is a module (``src/models/bpe/merge.rs`` is
``models::bpe::merge``, ``mod.rs`` and ``lib.rs`` name their folder and the
crate). Comments and string literals are blanked; then ``use crate::…`` /
``use super::…`` trees, inline ``crate::…`` / ``super::…`` paths, and paths that
start with a module brought in by such a ``use`` are edges to the longest
existing module the path names. ``#[cfg(test)]`` modules are skipped. Modules
are cut to their first ``--rust-depth`` segments (default 2), and an edge
between a module and its own ancestor or descendant is never a cycle.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON_PACKAGE = ROOT / "python" / "tokensmith"
RUST_SRC = ROOT / "src"
MAX_PLACES = 4  # edge locations printed per pair of modules


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` at ``where`` (``path:line``)."""

    source: str
    target: str
    where: str


# -- cycles ---------------------------------------------------------------------------


def strongly_connected(edges: Iterable[Edge]) -> list[list[str]]:
    """The components of more than one node (Tarjan, iterative), each sorted."""
    graph: dict[str, list[str]] = {}
    for e in edges:
        graph.setdefault(e.source, []).append(e.target)
        graph.setdefault(e.target, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start not in index:
            _tarjan_from(start, graph, index, low, stack, on_stack, found)
    return sorted(found)


def _tarjan_from(start: str, graph: dict[str, list[str]], index: dict[str, int],
                 low: dict[str, int], stack: list[str], on_stack: set[str],
                 found: list[list[str]]) -> None:
    work: list[tuple[str, Iterator[str]]] = [(start, iter(graph[start]))]
    _visit(start, index, low, stack, on_stack)
    while work:
        node, successors = work[-1]
        child = next(successors, None)
        if child is None:
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                _pop_component(node, stack, on_stack, found)
        elif child not in index:
            _visit(child, index, low, stack, on_stack)
            work.append((child, iter(graph[child])))
        elif child in on_stack:
            low[node] = min(low[node], index[child])


def _visit(node: str, index: dict[str, int], low: dict[str, int], stack: list[str],
           on_stack: set[str]) -> None:
    index[node] = low[node] = len(index)
    stack.append(node)
    on_stack.add(node)


def _pop_component(root: str, stack: list[str], on_stack: set[str],
                   found: list[list[str]]) -> None:
    component: list[str] = []
    while True:
        node = stack.pop()
        on_stack.discard(node)
        component.append(node)
        if node == root:
            break
    if len(component) > 1:
        found.append(sorted(component))


def shortest_loop(component: Sequence[str], edges: Iterable[Edge]) -> list[str]:
    """A shortest path from the component's first node back to it (breadth first)."""
    members = set(component)
    succ: dict[str, list[str]] = {}
    for e in edges:
        if e.source in members and e.target in members:
            succ.setdefault(e.source, []).append(e.target)
    start = component[0]
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(succ.get(node, [])):
            if nxt == start:
                return _walk_back(node, came_from, start) + [start]
            if nxt not in came_from:
                came_from[nxt] = node
                queue.append(nxt)
    return [start]


def _walk_back(node: str, came_from: dict[str, str], start: str) -> list[str]:
    path = [node]
    while path[-1] != start:
        path.append(came_from[path[-1]])
    return path[::-1]


def report(title: str, edges: Sequence[Edge]) -> int:
    """Print the cycles among ``edges`` under ``title``; return how many there are."""
    cycles = strongly_connected(edges)
    print(f"{title}: {len(cycles)} import cycle(s)")
    for n, component in enumerate(cycles, 1):
        print(f"  cycle {n}: {' -> '.join(shortest_loop(component, edges))}")
        for line in _edge_lines(component, edges):
            print(f"    {line}")
    return len(cycles)


def _edge_lines(component: Sequence[str], edges: Iterable[Edge]) -> list[str]:
    members = set(component)
    places: dict[tuple[str, str], list[str]] = {}
    for e in edges:
        if e.source in members and e.target in members:
            places.setdefault((e.source, e.target), []).append(e.where)
    lines = []
    for (source, target), where in sorted(places.items()):
        shown = ", ".join(sorted(set(where))[:MAX_PLACES])
        more = len(set(where)) - MAX_PLACES
        lines.append(f"{source} -> {target}  ({shown}{f', +{more} more' if more > 0 else ''})")
    return lines


# -- Python ---------------------------------------------------------------------------


def python_modules(package_dir: Path) -> dict[str, Path]:
    """Module name -> file for every module of the package (``__init__`` names it).

    Extension modules (``*.so``, ``*.pyi``) are listed too, so that they resolve,
    though they are never parsed.
    """
    modules: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*")):
        if path.suffix not in (".py", ".pyi", ".so", ".pyd"):
            continue
        parts = list(path.relative_to(package_dir).parent.parts)
        stem = path.name.split(".", 1)[0]
        if stem != "__init__":
            parts.append(stem)
        name = ".".join([package_dir.name, *parts])
        if path.suffix == ".py" or name not in modules:
            modules[name] = path
    return modules


def python_edges(package_dir: Path) -> list[Edge]:
    """Every run-time import of one of the package's modules by another."""
    modules = python_modules(package_dir)
    edges: list[Edge] = []
    for name, path in modules.items():
        if path.suffix != ".py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for node in _runtime_imports(tree):
            for target in _import_targets(node, name, is_package, modules):
                where = f"{_shown(path)}:{node.lineno}"
                edges.extend(Edge(name, t, where) for t in _with_packages(target, name))
    return edges


def _with_packages(target: str, source: str) -> list[str]:
    """``target`` and the packages Python imports first to reach it (but not the
    ones ``source`` is in, which are imported already), never ``source`` itself."""
    parts = target.split(".")
    packages = [".".join(parts[:end]) for end in range(1, len(parts))]
    chain = [m for m in packages if m != source and not source.startswith(m + ".")]
    return chain + [target] if target != source else chain


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _runtime_imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements below ``node`` that are not under ``if TYPE_CHECKING:``."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
        return
    children: Iterable[ast.AST] = ast.iter_child_nodes(node)
    if isinstance(node, ast.If) and _is_type_checking(node.test):
        children = node.orelse
    for child in children:
        yield from _runtime_imports(child)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
                    modules: dict[str, Path]) -> Iterator[str]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield from _longest_module(alias.name, modules)
        return
    base = _absolute_base(node, module, is_package)
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        yield from _longest_module(submodule if submodule in modules else base, modules)


def _absolute_base(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    package = module.split(".")
    if not is_package:
        package = package[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join(package + ([node.module] if node.module else []))


def _longest_module(name: str, modules: dict[str, Path]) -> Iterator[str]:
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            yield candidate
            return


# -- Rust -----------------------------------------------------------------------------

_RUST_SKIP = re.compile(
    r"""//[^\n]*                                  # line comment
      | /\*.*?\*/                                 # block comment
      | b?r(\#*)".*?"\1                           # raw string
      | b?"(?:\\.|[^"\\])*"                       # string
      | b?'(?:\\u\{[0-9a-fA-F]+\}|\\.|[^'\\\n])'  # character
    """,
    re.VERBOSE | re.DOTALL,
)
_RUST_USE = re.compile(r"\buse\s+(::)?([^;]+);")
_RUST_PATH = re.compile(r"\b(\w+)((?:\s*::\s*\w+)+)")
_RUST_MOD = re.compile(r"((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?\bmod\s+(\w+)\s*\{")


def blank_rust(text: str) -> str:
    """``text`` with comments and literals turned to spaces (lines kept)."""
    return _RUST_SKIP.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)


def rust_modules(src_dir: Path) -> dict[tuple[str, ...], Path]:
    """Module path (``()`` for the crate) -> file, for every ``.rs`` file."""
    modules: dict[tuple[str, ...], Path] = {}
    for path in sorted(src_dir.rglob("*.rs")):
        parts = path.relative_to(src_dir).with_suffix("").parts
        if parts[-1] in ("mod", "lib", "main"):
            parts = parts[:-1]
        modules[tuple(parts)] = path
    return modules


_RUST_TEST_FILE = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")


def rust_test_modules(modules: dict[tuple[str, ...], Path]) -> set[tuple[str, ...]]:
    """Modules in files of their own declared ``#[cfg(test)] mod name;``."""
    tests = set()
    for module, path in modules.items():
        for m in _RUST_TEST_FILE.finditer(blank_rust(path.read_text(encoding="utf-8"))):
            tests.add((*module, m.group(1)))
    return tests


def rust_edges(src_dir: Path, depth: int = 2) -> list[Edge]:
    """Uses between modules cut to ``depth`` segments, leaving out ancestors
    and test modules (inline or in files of their own)."""
    modules = rust_modules(src_dir)
    tests = rust_test_modules(modules)
    edges: list[Edge] = []
    for module, path in modules.items():
        if any(module[: len(t)] == t for t in tests):
            continue
        text = blank_rust(path.read_text(encoding="utf-8"))
        for target, offset in _rust_references(text, module, modules):
            if _related(module, target):
                continue
            source, cut = module[:depth], target[:depth]
            if not _related(source, cut):
                line = text.count("\n", 0, offset) + 1
                edges.append(Edge(_rust_name(source), _rust_name(cut), f"{_shown(path)}:{line}"))
    return edges


def _rust_name(module: tuple[str, ...]) -> str:
    return "::".join(module) or "crate"


def _related(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Whether one module is the other or contains it."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _rust_references(text: str, module: tuple[str, ...],
                     modules: dict[tuple[str, ...], Path]) -> Iterator[tuple[tuple[str, ...], int]]:
    """(module named, offset) for each path in ``text`` that names a module."""
    scopes = _inline_modules(text)
    aliases: dict[str, tuple[str, ...]] = {}
    for m in _RUST_USE.finditer(text):
        here = _scope_at(scopes, m.start(), module)
        for path, alias in _expand_use(m.group(2)) if here is not None else ():
            full = _resolve(path, here, {})
            if full is not None:
                aliases.update({alias: full} if full in modules else {})
                yield _longest_rust_module(full, modules), m.start()
    for m in _RUST_PATH.finditer(text):
        here = _scope_at(scopes, m.start(), module)
        if here is None or _inside_use(text, m.start()):
            continue
        full = _resolve([m.group(1), *re.findall(r"\w+", m.group(2))], here, aliases)
        if full is not None:
            yield _longest_rust_module(full, modules), m.start()


def _inside_use(text: str, offset: int) -> bool:
    start = max(text.rfind(c, 0, offset) for c in ";{}") + 1
    return re.match(r"\s*(pub(\([^)]*\))?\s+)?use\b", text[start:offset]) is not None


def _resolve(path: Sequence[str], here: tuple[str, ...],
             aliases: dict[str, tuple[str, ...]]) -> tuple[str, ...] | None:
    """The absolute path of ``path`` used in module ``here``, or None if outside the crate."""
    head, rest = path[0], list(path[1:])
    if head == "crate":
        base: tuple[str, ...] = ()
    elif head == "self":
        base = here
    elif head == "super":
        base = here[:-1]
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
    elif head in aliases:
        base = aliases[head]
    else:
        return None
    return base + tuple(p for p in rest if p != "self")


def _longest_rust_module(path: tuple[str, ...],
                         modules: dict[tuple[str, ...], Path]) -> tuple[str, ...]:
    for end in range(len(path), -1, -1):
        if path[:end] in modules:
            return path[:end]
    return ()


def _expand_use(tree: str) -> Iterator[tuple[list[str], str]]:
    """(path segments, name bound) for each leaf of a use tree such as ``a::{b, c as d}``."""
    brace = tree.find("{")
    if brace < 0:
        path, _, alias = re.sub(r"\s+", " ", tree).strip().partition(" as ")
        segments = [s for s in re.split(r"\s*::\s*", path.strip()) if s not in ("", "*")]
        if segments:
            yield segments, alias.strip() or segments[-1]
        return
    head = [s for s in re.split(r"\s*::\s*", tree[:brace].strip()) if s]
    for part in _split_top(tree[brace + 1: tree.rfind("}")]):
        for segments, alias in _expand_use(part):
            # (``a::{self, …}`` binds ``a``)
            yield head + segments, head[-1] if alias == "self" and head else alias


def _split_top(inner: str) -> list[str]:
    """``inner`` split at the commas outside braces."""
    parts, depth, current = [], 0, []
    for ch in inner:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p for p in parts if p.strip()]


def _inline_modules(text: str) -> list[tuple[int, int, str | None]]:
    """(start, end, name) of each ``mod name { … }``; name None for ``#[cfg(test)]``."""
    scopes = []
    for m in _RUST_MOD.finditer(text):
        end, depth = m.end(), 1
        while depth and end < len(text):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            end += 1
        scopes.append((m.start(), end, None if "cfg(test)" in m.group(1) else m.group(2)))
    return scopes


def _scope_at(scopes: list[tuple[int, int, str | None]], offset: int,
              module: tuple[str, ...]) -> tuple[str, ...] | None:
    """The module at ``offset``, inline modules included; None inside a test module."""
    inner = [name for start, end, name in scopes if start <= offset < end]
    return None if None in inner else module + tuple(n for n in inner if n)


# -- command line ---------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="store_true", help="check python/tokensmith")
    parser.add_argument("--rust", action="store_true", help="check src/")
    parser.add_argument("--rust-depth", type=int, default=2, metavar="N",
                        help="path segments a Rust module is cut to (default 2)")
    args = parser.parse_args(argv)
    both = not (args.python or args.rust)
    found = 0
    if args.python or both:
        found += report("Python (python/tokensmith)", python_edges(PYTHON_PACKAGE))
    if args.rust or both:
        edges = rust_edges(RUST_SRC, args.rust_depth)
        found += report(f"Rust (src/, depth {args.rust_depth})", edges)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
