"""Ending decisions last (our design; ``MCTSConfig.ending_last``, on by default at every lam,
so UCT has it too): the rollout chooser leaves a new history's *ending* children -- commits
that are not recorded, such as finishing or abstaining, which close the plan without adding a
decision the verifier scores -- for later while a recorded decision is among its children.
Without it the evidence pruning, which drops refuted recorded children but never an ending
one, can leave an ending child alone, taken without asking."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hyperplan.search.common import INFO
from hyperplan.search.parts.base import ChildFilter, Mark
from hyperplan.search.tree import Edge

if TYPE_CHECKING:
    from hyperplan.search.mcts import HyperMCTS

__all__ = ["EndingLast", "recorded_first"]


def recorded_first(edges: list[Edge]) -> list[Edge]:
    """``edges`` without the ending children when a recorded decision is among them, else
    all of ``edges``. Information steps stay: they neither end the plan nor fix part of it."""
    for edge in edges:  # most histories have no ending child: nothing is built for them
        if not edge.recorded and edge.action.kind is not INFO:
            break
    else:
        return edges
    for edge in edges:
        if edge.recorded:
            return [e for e in edges if e.recorded or e.action.kind is INFO]
    return edges


@dataclass(frozen=True)
class EndingLast(ChildFilter):
    """A child filter: :func:`recorded_first` (reads no mark)."""

    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset()

    def keep(self, search: HyperMCTS, edges: list[Edge]) -> list[Edge]:
        return recorded_first(edges)
