"""Composed rollouts (our design; ``MCTSConfig.compose_every``, every third iteration by
default at lam > 0): a use of the statistics to guide simulation beyond HyperUCT. From h_0
down, each history takes its first child whose decision met every objective it was scored on
in every rollout that took it (:meth:`TrajectoryHypergraph.verified` over all objectives,
global constraints included), so the parts that different trajectories got right are put
together in one; a history without such a child is walked as in the full-path rollout."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hyperplan.search.parts.base import Composer, Mark
from hyperplan.search.tree import Edge

if TYPE_CHECKING:
    from hyperplan.search.mcts import HyperMCTS

__all__ = ["ComposedRollouts"]


@dataclass(frozen=True)
class ComposedRollouts(Composer):
    """A composer: every ``every``-th iteration (the 3rd, 6th, ...) once some decision is
    verified; at each history the first child verified on every objective."""

    every: int
    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset({Mark.VERIFIED})

    def due(self, search: HyperMCTS) -> bool:
        m = self.every
        return m > 0 and bool(search.ledger.verified) and search.rollouts % m == m - 1

    def child(self, search: HyperMCTS, edges: list[Edge]) -> Edge | None:
        hypergraph = search.hypergraph
        if hypergraph is None:
            return None
        on = search.ledger.objective_ids
        return next((e for e in edges if e.recorded and hypergraph.verified(e.identity, on)),
                    None)
