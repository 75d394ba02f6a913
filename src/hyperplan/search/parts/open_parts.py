"""The evidence widening's open parts (our design; ``MCTSConfig.evidence_width`` w > 1, three
by default): after the evidence widening added one child, up to w - 1 more recorded decisions
of A_dec(h), verified on their local objectives like the first, and about parts of the plan
still open at h -- none of their local objectives is one that a recorded decision on the
path h_0 to h is about. So a rollout can combine verified parts it has not yet fixed
(alternative products for the items still to choose), not gather more evidence for a part
already served."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hyperplan.search.common import INFO
from hyperplan.search.env import Action
from hyperplan.search.tree import Edge, Node

if TYPE_CHECKING:
    from hyperplan.search.mcts import HyperMCTS

__all__ = ["OpenParts"]


@dataclass(frozen=True)
class OpenParts:
    """Up to ``width - 1`` further children (``width``: the evidence widening's w, its first
    child included) among ``candidates``, the decisions after the first child in A_dec(h)
    order (:func:`~hyperplan.search.parts.evidence_widening.add_evidence`)."""

    width: int

    def add(self, search: HyperMCTS, node: Node, candidates: Sequence[Action],
            path: list[Edge]) -> None:
        if self.width < 2:
            return
        hypergraph = search.hypergraph
        assert hypergraph is not None
        commits = [a for a in candidates if a.kind is not INFO]
        if not commits:
            return
        ledger = search.ledger
        local, nodes, verified = ledger.local, hypergraph.nodes, ledger.verified
        served = ledger.served(hypergraph, path)
        added = 1
        for action, v in zip(commits, search.env.recorded_ids(commits), strict=True):
            stats = nodes.get(v) if v is not None else None
            if stats is None or not served.isdisjoint(stats.by_label):
                continue
            if v != verified[action.key][0] and not hypergraph.verified(v, local):
                continue
            node.widen(action, v, True, fresh=True)  # (as in the first child)
            added += 1
            if added >= self.width:
                return
