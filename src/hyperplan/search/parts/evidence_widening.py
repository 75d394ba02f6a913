"""Evidence widening (our design; ``MCTSConfig.evidence_widening``, on by default at lam > 0):
beside the policy's children of a just-expanded history h, one more child -- the first commit
decision of A_dec(h), not yet a child, whose own objectives were met by every earlier rollout
that took it (:meth:`TrajectoryHypergraph.verified` over the local objectives; global
constraints, such as a total budget, are about the whole plan). This is where evidence from
other trajectories reaches a prefix the tree cannot share it with: the HyperMCTS paper's aim
that "evidence obtained from one rollout can inform other rollouts, including those that do
not share the same action prefix". No policy call; nothing is added before the first rollout.
With ``open_parts`` (:mod:`hyperplan.search.parts.open_parts`) further such children follow,
about parts of the plan still open."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hyperplan.search.common import INFO
from hyperplan.search.env import Action
from hyperplan.search.parts.base import Mark, Widener
from hyperplan.search.parts.open_parts import OpenParts
from hyperplan.search.tree import Edge, Node

if TYPE_CHECKING:
    from hyperplan.search.mcts import HyperMCTS

__all__ = ["EvidenceWidening", "add_evidence", "widen_verified"]


def add_evidence(search: HyperMCTS, node: Node, decisions: Sequence[Action],
                 index: Mapping[str, int]) -> list[Action] | None:
    """Widen ``node`` with the first verified decision of A_dec(h) (``decisions``) not yet a
    child. The verified decisions are kept by action key (the ledger), so a history is only
    looked at when one of them is among its decisions, and only up to the first that
    qualifies; the candidates are put in A_dec(h) order by ``index``, the environment's
    position index read with A_dec(h)
    (:meth:`~hyperplan.search.timing.TimedEnv.indexed_decisions`), not by a scan.

    Returns None when no child was added, else the candidates after the added one, in
    A_dec(h) order: the only ones the open parts can add (every candidate before it failed a
    test the further children pass too)."""
    verified = search.ledger.verified
    hits = verified.keys() & index.keys()
    if hits:
        for edge in node.edges:
            hits.discard(edge.action.key)
    if not hits:
        return None
    if len(hits) == 1:  # the only candidate, as it was taken: no lookup in A_dec(h)
        phi, action = verified[next(iter(hits))]
        return [] if widen_verified(search, node, action, phi) else None
    position = index.__getitem__
    ordered = [decisions[i] for i in sorted(map(position, hits))]
    for i, action in enumerate(ordered):
        if widen_verified(search, node, action, verified[action.key][0]):
            return ordered[i + 1:]
    return None


def widen_verified(search: HyperMCTS, node: Node, action: Action, known: Hashable) -> bool:
    """Widen ``node`` with ``action`` when it is a recorded commit decision verified on the
    local objectives; whether it was. ``known`` is the identity the ledger holds for the
    action's key, verified by construction, so the hypergraph is only asked about another
    one."""
    if action.kind is INFO:
        return False
    hypergraph = search.hypergraph
    assert hypergraph is not None
    v = search.env.recorded_id(action)
    if v is None or (v != known and not hypergraph.verified(v, search.ledger.local)):
        return False
    node.widen(action, v, True, fresh=True)  # not a child: hits exclude the children
    return True


@dataclass(frozen=True)
class EvidenceWidening(Widener):
    """A widener: :func:`add_evidence` at each expansion once some decision is verified,
    then ``open_parts`` (None: one child only)."""

    open_parts: OpenParts | None = None
    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset({Mark.VERIFIED})

    def visit(self, search: HyperMCTS, node: Node) -> None:
        return None

    def wants_index(self, search: HyperMCTS) -> bool:
        return bool(search.ledger.verified)

    def expanded(self, search: HyperMCTS, node: Node, decisions: Sequence[Action],
                 index: Mapping[str, int] | None, path: list[Edge]) -> None:
        if index is None:
            return
        rest = add_evidence(search, node, decisions, index)
        if rest and self.open_parts is not None:
            self.open_parts.add(search, node, rest, path)
