"""The ordered history tree T_tree of HyperMCTS (HyperMCTS paper, the HyperUCT
rule and Algorithm 1).

A node is one observable history h (the order of actions matters: A1 B1 C1 and B1 A1 C1 are
different nodes even though the hypergraph pools them). It stores the visit count N(h), an
environment snapshot (taken lazily the first time the search reaches it, so expanding a node
costs no environment steps), and, once expanded, up to b child edges of *distinct* decisions.
An edge (h, a) stores the backup count N(h, a) and the sum of backed-up rewards, so
Q_tree(h, a) = W(h, a) / N(h, a) is the mean backed-up reward; its child node is made the first
time it is read (most children are never taken).

Each non-terminal node is expanded at most once (Algorithm 1): :meth:`Node.expand` refuses a
second call. Progressive widening (``MCTSConfig.widen``, our design, off in Algorithm 1) adds
single children to an expanded decision point later with :meth:`Node.widen`.
"""

from __future__ import annotations

from collections.abc import Container, Hashable, Sequence
from typing import Any, NamedTuple

from hyperplan.search.env import Action, TreeError

__all__ = ["Child", "Edge", "HistoryTree", "Node", "Pending", "TreeError", "backup"]


class Child(NamedTuple):
    """A child an expansion or a widening adds to a history h: the decision a, its identity
    phi(a, h) (None for a widening candidate that is not recorded), and whether a is a
    recorded decision of C(tau)."""

    action: Action
    identity: Hashable | None
    recorded: bool


child = tuple.__new__  # ``child(Child, (a, v, flag))``: a Child without the slow generated __new__


class Edge:
    """The tree edge (h, a): decision ``action`` at the ``parent`` history, its identity
    phi(a, h), whether it is a recorded decision for C(tau), the statistics N(h, a) and
    W(h, a) (sum of backed-up rewards), and the child history (h, a) (:attr:`child`)."""

    __slots__ = ("_child", "action", "identity", "n", "parent", "recorded", "w")

    def __init__(self, action: Action, identity: Hashable, recorded: bool, parent: Node) -> None:
        self.action = action
        self.identity = identity
        self.recorded = recorded
        self.parent = parent
        self._child: Node | None = None
        self.n = 0
        self.w = 0.0

    @property
    def child(self) -> Node:
        """The child history (h, a), made on first access: most children an expansion adds
        are never taken, so their nodes are not built until they are."""
        return self.child_node()

    def child_node(self) -> Node:
        """:attr:`child` as a method (the hot loops call it: no property lookup)."""
        node = self._child
        if node is None:
            parent = self.parent
            node = self._child = Node(parent, parent.depth + 1)
        return node

    @property
    def q(self) -> float:
        """Q_tree(h, a): mean backed-up reward (0 before the first backup)."""
        return self.w / self.n if self.n else 0.0

    def __repr__(self) -> str:
        return f"Edge({self.action.key!r}, n={self.n}, q={self.q:.3f})"


class Pending:
    """The decisions progressive widening may still add at one history h: the commit
    decisions of A_dec(h) that are not children yet, in the environment's order, with
    phi(a, h) (None when not recorded) and the recorded flag as parallel lists (A_dec(h) and
    phi(a, h) are fixed for h, so they are listed once).

    ``seen`` / ``unseen`` split the pending identities by whether the hypergraph has a node
    for them; :meth:`sync` moves identities to ``seen`` as the hypergraph grows, reading only
    the node ids it created since the last call (its ``born`` log), so a widening does not
    test every pending identity again (a node only ever joins V_k, never leaves it)."""

    __slots__ = ("actions", "cursor", "distinct", "ids", "recorded", "seen", "unseen")

    def __init__(
        self, actions: list[Action], ids: list[Hashable | None], recorded: list[bool]
    ) -> None:
        self.actions = actions
        self.ids = ids
        self.recorded = recorded
        known = [v for v in ids if v is not None]
        self.unseen: set[Hashable] = set(known)
        self.distinct = len(self.unseen) == len(known)  # no identity listed twice
        self.seen: set[Hashable] = set()
        self.cursor = 0  # how much of the hypergraph's born log sync has read

    def sync(self, nodes: Container[Hashable], born: list[Hashable]) -> set[Hashable]:
        """The pending identities the hypergraph has seen (``nodes``: its node ids, ``born``:
        the same ids in order of creation, append-only), updated from the ids born since the
        last call, or by testing the unseen ones when those are fewer."""
        unseen, start, end = self.unseen, self.cursor, len(born)
        if unseen and end > start:
            if end - start < len(unseen):
                found = [v for v in born[start:end] if v in unseen]
            else:
                found = [v for v in unseen if v in nodes]
            for v in found:
                unseen.discard(v)
                self.seen.add(v)
        self.cursor = end
        return self.seen

    def take(self, i: int) -> Child:
        """Remove and return the i-th decision."""
        v = self.ids[i]
        if v is not None and (self.distinct or self.ids.count(v) == 1):
            self.seen.discard(v)
            self.unseen.discard(v)
        return child(Child, (self.actions.pop(i), self.ids.pop(i), self.recorded.pop(i)))


class Node:
    """A history h: N(h), its snapshot (``None`` until first reached), depth (actions taken
    since h_0), terminal flag, and the child edges once expanded (with the proposal's
    ``scores`` when a scoring policy gave them).

    ``failed`` marks a history whose creating step raised (an invalid action): it is treated
    as terminal with reward 0."""

    __slots__ = ("depth", "edges", "expanded", "failed", "n", "parent", "pending", "saturated",
                 "scores", "snapshot", "terminal", "widened")

    def __init__(self, parent: Node | None, depth: int, snapshot: Any = None) -> None:
        self.parent = parent
        self.depth = depth
        self.snapshot = snapshot
        self.n = 0
        self.edges: list[Edge] = []
        self.expanded = False
        self.terminal = False
        self.failed = False
        self.widened = 0  # children added by progressive widening
        self.saturated = False  # widening found no decision left to add
        # commit decisions of A_dec(h) not yet children, listed at the first widening
        self.pending: Pending | None = None
        # a scoring policy's scores by action key from the proposal that expanded h (None:
        # none given), read by the search's rollout choice among the new children
        self.scores: dict[str, float] | None = None

    @property
    def materialized(self) -> bool:
        """Whether the environment state of this history has been computed and snapshotted."""
        return self.snapshot is not None or self.failed

    def expand(self, children: Sequence[Child], max_children: int) -> list[Edge]:
        """Add the child edges of ``children`` -- at most ``max_children`` (b), with distinct
        action keys. Raises :class:`TreeError` on a second expansion."""
        if self.expanded:
            raise TreeError("a node is expanded at most once")
        edges: list[Edge] = []
        keys: set[str] = set()
        for action, identity, recorded in children:  # (one pass: no comprehension calls)
            key = action.key
            if key in keys:
                raise TreeError(f"duplicate decision {key!r} in one expansion")
            keys.add(key)
            edges.append(Edge(action, identity, recorded, self))
        if len(edges) > max_children:
            raise TreeError(f"{len(edges)} children exceed the branching factor {max_children}")
        self.edges = edges
        self.expanded = True
        return edges

    def widen(self, action: Action, identity: Hashable, recorded: bool,
              fresh: bool = False) -> Edge:
        """Progressive widening: add one child edge to an expanded node (a decision distinct
        from its children; ``fresh``: the caller has made sure it is, so the children are not
        scanned again). Not part of Algorithm 1 (module doc)."""
        if not self.expanded:
            raise TreeError("only an expanded node is widened")
        if not fresh:
            key = action.key
            for e in self.edges:
                if e.action.key == key:
                    raise TreeError(f"duplicate decision {key!r} in a widening")
        edge = Edge(action, identity, recorded, self)
        self.edges.append(edge)
        self.widened += 1
        return edge

    def __repr__(self) -> str:
        return f"Node(depth={self.depth}, n={self.n}, children={len(self.edges)})"


class HistoryTree:
    """The search tree rooted at h_0 with branching factor b (``max_children``)."""

    __slots__ = ("max_children", "root")

    def __init__(self, root_snapshot: Any, max_children: int) -> None:
        if max_children < 1:
            raise ValueError("the branching factor b must be at least 1")
        self.root = Node(None, 0, root_snapshot)
        self.max_children = max_children

    def nodes(self) -> list[Node]:
        """Every node, depth-first (for tests and reports)."""
        out: list[Node] = []
        stack = [self.root]
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(edge.child for edge in reversed(node.edges))
        return out

    def histories(self) -> list[tuple[str, ...]]:
        """The action-key sequence of every node (root = ())."""
        out: list[tuple[str, ...]] = []
        stack: list[tuple[Node, tuple[str, ...]]] = [(self.root, ())]
        while stack:
            node, keys = stack.pop()
            out.append(keys)
            stack.extend((e.child, (*keys, e.action.key)) for e in reversed(node.edges))
        return out


def backup(path: list[Edge], root: Node, reward: float) -> None:
    """Backup of Algorithm 1: N(h) += 1 for every history on the path (root included),
    N(h, a) += 1 and W(h, a) += R for every edge on the path."""
    root.n += 1
    for edge in path:
        edge.n += 1
        edge.w += reward
        edge.child.n += 1  # (made when the path entered it: the property only reads it)
