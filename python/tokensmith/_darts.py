"""A darts-clone double-array trie, built in pure Python.

SentencePiece stores its normalization rules (``precompiled_charsmap``) as a
darts-clone double array: an array of 32-bit units in which the children of
a node sit at ``base ^ label`` for the node's ``base`` and each child's byte
``label``. ``sentencepiece`` (``Darts::DoubleArray::commonPrefixSearch``) and
tokensmith (``src/normalizers/precompiled.rs``) walk it the same way:

    pos = offset(units[0])                  # the root's base
    for byte in key:
        pos ^= byte; unit = units[pos]
        if label(unit) != byte: stop
        pos ^= offset(unit)                 # this node's base
        if has_leaf(unit): value(units[pos]) is the value of key[:i + 1]

A unit's bits (darts-clone's ``DoubleArrayUnit``): bits 0-7 the label, bit 8
``has_leaf``, bit 9 "offset shifted by 8", bits 10-31 the offset to the base
(``base = pos ^ offset``); a value unit is ``value | 1 << 31`` and sits at
``base ^ 0`` of the node its key ends at. Its label reads as ``1 << 31 | …``,
which no key byte equals, so a walk never takes it for a child.

Like darts-clone, the builder shares identical subtrees (a minimal automaton:
sub-tries with the same transitions and values become one block), which
keeps SentencePiece's Hangul rules (hundreds of thousands of keys ending in
the same few hundred tails) small.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["build_double_array"]

_LEAF_FLAG = 1 << 31
_HAS_LEAF = 1 << 8
# offsets up to 2**21 are stored as they are (darts-clone also stores larger
# ones divided by 256; the arrays built here stay far below that)
_MAX_DIRECT_OFFSET = 1 << 21

# A frozen state: (value or -1, ((label, child state id), ...)), labels ascending.
_Signature = tuple[int, tuple[tuple[int, int], ...]]


class _Minimizer:
    """Daciuk's incremental construction of a minimal acyclic automaton from
    keys given in sorted order: the path of the previous key stays open; the
    part of it the next key leaves is frozen, each node replaced by the one
    registered state with the same signature."""

    def __init__(self) -> None:
        self.states: list[_Signature] = []
        self.registry: dict[_Signature, int] = {}
        # the open path: per depth, (value, [(label, child id)]) of the node there
        self.path: list[tuple[list[int], list[tuple[int, int]]]] = [([-1], [])]
        self.labels: list[int] = []  # the bytes of the previous key

    def _freeze(self, depth: int) -> None:
        """Freeze the open nodes below ``depth``, deepest first."""
        while len(self.path) > depth + 1:
            value, edges = self.path.pop()
            label = self.labels.pop()
            sig: _Signature = (value[0], tuple(edges))
            state = self.registry.get(sig)
            if state is None:
                state = len(self.states)
                self.states.append(sig)
                self.registry[sig] = state
            self.path[-1][1].append((label, state))

    def add(self, key: bytes, value: int) -> None:
        if not key or bytes(self.labels) >= key:
            raise ValueError(f"keys must be non-empty, distinct and sorted: {key!r} after "
                             f"{bytes(self.labels)!r}")
        common = 0
        for a, b in zip(self.labels, key, strict=False):  # (the shorter decides)
            if a != b:
                break
            common += 1
        self._freeze(common)
        for byte in key[common:]:
            self.labels.append(byte)
            self.path.append(([-1], []))
        self.path[-1][0][0] = value

    def finish(self) -> int:
        """Freeze everything; the root's state id."""
        self._freeze(0)
        value, edges = self.path[0]
        sig: _Signature = (value[0], tuple(edges))
        self.states.append(sig)
        return len(self.states) - 1


class _Placer:
    """Choose a base for every state: a position ``e`` whose slots ``e ^ label``
    (and ``e ^ 0`` for a value) are all free, and that no other state uses.

    As in darts-clone the array grows by blocks of 256 units and only the free
    slots of the last few blocks are candidates (a doubly linked list of them,
    in position order); older holes stay empty. That keeps each search short."""

    WINDOW = 16  # blocks whose free slots are still searched

    def __init__(self) -> None:
        self.used = bytearray()
        self.bases: set[int] = set()
        self.next: list[int] = []
        self.prev: list[int] = []
        self.head = -1  # the first free slot of the window, -1 when none
        self.tail = -1
        self._grow()
        self._take(0)  # the root's own unit

    def _link(self, pos: int) -> None:
        self.prev[pos], self.next[pos] = self.tail, -1
        if self.tail >= 0:
            self.next[self.tail] = pos
        else:
            self.head = pos
        self.tail = pos

    def _unlink(self, pos: int) -> None:
        before, after = self.prev[pos], self.next[pos]
        if before >= 0:
            self.next[before] = after
        else:
            self.head = after
        if after >= 0:
            self.prev[after] = before
        else:
            self.tail = before
        self.prev[pos] = self.next[pos] = -2  # not in the list

    def _take(self, pos: int) -> None:
        self.used[pos] = 1
        if self.next[pos] != -2:
            self._unlink(pos)

    def _grow(self) -> None:
        """Add a block of 256 free slots; drop the free slots of the block that
        leaves the window from the list."""
        start = len(self.used)
        self.used.extend(bytes(256))
        self.next.extend([-2] * 256)
        self.prev.extend([-2] * 256)
        for pos in range(start, start + 256):
            self._link(pos)
        old = start - 256 * self.WINDOW
        if old >= 0:
            for pos in range(old, old + 256):
                if not self.used[pos] and self.next[pos] != -2:
                    self._unlink(pos)

    def _fits(self, base: int, labels: Sequence[int]) -> bool:
        if base in self.bases or base == 0 or (base | 0xFF) >= len(self.used):
            return False
        used = self.used
        return not any(used[base ^ c] for c in labels)

    def place(self, labels: Sequence[int]) -> int:
        """A free base for children with these labels (0: the value unit)."""
        first = labels[0]
        q = self.head
        while True:
            if q < 0:  # nothing in the window fits: a new block does
                self._grow()
                q = len(self.used) - 256
            base = q ^ first
            if self._fits(base, labels):
                break
            q = self.next[q]
        self.bases.add(base)
        for c in labels:
            self._take(base ^ c)
        return base


def build_double_array(keys: Sequence[tuple[bytes, int]]) -> list[int]:
    """The darts-clone units of a trie holding ``keys``: ``(key, value)`` pairs,
    keys distinct, non-empty, without NUL bytes and sorted bytewise, values in
    ``[0, 2**31)``. Look-ups as the module comment shows find each key's value."""
    if not keys:
        raise ValueError("a double array needs at least one key")
    minimizer = _Minimizer()
    for key, value in keys:
        if not 0 <= value < _LEAF_FLAG:
            raise ValueError(f"value {value} does not fit a darts-clone unit (31 bits)")
        if 0 in key:
            raise ValueError(f"a key holds a NUL byte: {key!r}")
        minimizer.add(key, value)
    root = minimizer.finish()
    states = minimizer.states

    placer = _Placer()
    base_of: dict[int, int] = {}
    order = [root]  # breadth first from the root: children near their parents
    i = 0
    while i < len(order):
        state = order[i]
        i += 1
        value, edges = states[state]
        labels = ([0] if value >= 0 else []) + [label for label, _ in edges]
        base_of[state] = placer.place(labels)
        for _, child in edges:
            if child not in base_of and states[child] != (-1, ()):
                base_of[child] = -1  # queued
                order.append(child)

    size = max(base | 0xFF for base in base_of.values()) + 1
    if size > _MAX_DIRECT_OFFSET:
        raise ValueError(f"the double array would need {size:,} units, more than this "
                         f"builder supports ({_MAX_DIRECT_OFFSET:,})")
    # A free slot holds a value unit (value 0): its label has bit 31 set, so no
    # walk takes it for a child, not even one on a NUL byte (a zero unit would
    # match label 0 and lead the walk on into another node's children).
    units = [_LEAF_FLAG] * size
    units[0] = base_of[root] << 10  # the root: at position 0, its offset is its base
    for state, base in base_of.items():
        value, edges = states[state]
        if value >= 0:
            units[base] = value | _LEAF_FLAG
        for label, child in edges:
            pos = base ^ label
            child_value, child_edges = states[child]
            unit = label
            if child_value >= 0:
                unit |= _HAS_LEAF
            if child_edges or child_value >= 0:
                unit |= (pos ^ base_of[child]) << 10
            units[pos] = unit
    # (every block is whole: sentencepiece reads units[base ^ byte] unchecked)
    return units
