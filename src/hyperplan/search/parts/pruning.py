"""Evidence pruning (our design; ``MCTSConfig.evidence_pruning``, on by default at lam > 0):
selection and the rollout chooser skip a child whose decision failed one of its own (local)
objectives in every rollout that took it, while some other child is left."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hyperplan.search.parts.base import ChildFilter, Mark, without_marked
from hyperplan.search.tree import Edge

if TYPE_CHECKING:
    from hyperplan.search.mcts import HyperMCTS

__all__ = ["EvidencePruning"]


@dataclass(frozen=True)
class EvidencePruning(ChildFilter):
    """A child filter: ``edges`` without the children whose decision is refuted -- it failed
    one of its own (local) objectives in every rollout that took it
    (:meth:`TrajectoryHypergraph.refuted`; global constraints, such as a total budget, are
    about the whole plan, so a failure there is not pinned on one decision) -- or all of
    ``edges`` when every one is. The counterpart of the evidence widening: what other
    trajectories showed to be wrong is not tried again at a prefix that has not seen it
    fail. Nothing is refuted before the first refutation."""

    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset({Mark.REFUTED})

    def keep(self, search: HyperMCTS, edges: list[Edge]) -> list[Edge]:
        refuted = search.ledger.refuted
        alive = without_marked(edges, refuted) if refuted else edges
        return alive if alive else edges
