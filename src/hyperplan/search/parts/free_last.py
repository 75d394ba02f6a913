"""Free decisions last (our design; ``MCTSConfig.free_last``, on by default at lam > 0): the
rollout chooser leaves a new history's *free* decisions -- recorded decisions the hypergraph
has scored under global objectives only, never under an objective about one part of the plan
(a coupon, which matters only through the total) -- for later while a recorded decision not
known to be free is among the children. A free decision taken on a partial plan fixes a
global resource before the plan it is judged on exists (a coupon applied to a partial cart
uses up threshold room a larger one needs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hyperplan.search.parts.base import ChildFilter, Mark, without_marked
from hyperplan.search.tree import Edge

if TYPE_CHECKING:
    from hyperplan.search.mcts import HyperMCTS

__all__ = ["FreeLast"]


@dataclass(frozen=True)
class FreeLast(ChildFilter):
    """A child filter: ``edges`` without the free children when a recorded decision that is
    not free is left among them, else all of ``edges``. Information steps and commits that
    are not recorded (finishing) do not hold the free ones back: they could be taken
    forever, or end the plan before its free decisions."""

    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset({Mark.FREE})

    def keep(self, search: HyperMCTS, edges: list[Edge]) -> list[Edge]:
        free = search.ledger.free
        if not free:  # (most searches have no free decision: no call for them)
            return edges
        rest = without_marked(edges, free)
        if rest is not edges:
            for edge in rest:
                if edge.recorded:
                    return rest
        return edges
