"""Scored picks (our design; ``MCTSConfig.scored_picks``, on by default): with a scoring
policy (:class:`~hyperplan.search.policies.ScoringPolicy`), the rollout choice among a new
history's children is drawn from the scores its proposal gave, by the policy's own rollout
rule, instead of a second policy call (llm-reasoners' MCTS reuses ``fast_reward`` so). For
the heuristic policy the choice is the same, draw for draw."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hyperplan.search.env import Action, TreeError
from hyperplan.search.parts.base import Mark, RolloutChooser, edge_of
from hyperplan.search.tree import Edge, Node

if TYPE_CHECKING:
    from hyperplan.search.mcts import HyperMCTS

__all__ = ["ScoredPicks"]


@dataclass(frozen=True)
class ScoredPicks(RolloutChooser):
    """A rollout chooser inside the tree: when the proposal that expanded ``node`` scored
    every one of ``actions``, the policy's rule draws among those scores
    (:meth:`~hyperplan.search.timing.TimedPolicy.choose`, no call); None otherwise (a child
    without a score, a policy that does not score, a simulation below the tree)."""

    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset()

    def choose(self, search: HyperMCTS, node: Node | None,
               actions: Sequence[Action]) -> Action | None:
        if node is None:
            return None
        edge = self.pick(search, node, [edge_of(node.edges, a) for a in actions])
        return None if edge is None else edge.action

    def pick(self, search: HyperMCTS, node: Node, edges: list[Edge]) -> Edge | None:
        scores = node.scores
        if scores is None or not search.policy.scoring:
            return None
        known: list[float] = []
        for edge in edges:
            score = scores.get(edge.action.key)
            if score is None:
                return None
            known.append(score)
        i = search.policy.choose(known, search.rng)
        if not 0 <= i < len(edges):
            raise TreeError(f"the policy {search.policy.name!r} chose index {i} among "
                            f"{len(edges)} scored children")
        return edges[i]
