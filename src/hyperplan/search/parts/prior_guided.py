"""Rollout guidance (our design, the HyperMCTS paper's "domain-specific guidance", Appendix
A.3; ``MCTSConfig.rollout_guidance``, on in the commit-widen design): the hypergraph prior
picks among the policy's b candidates -- a use of the statistics beyond the HyperUCT term
(the paper's ablation removes "the hypergraph component as a whole"). Inactive at lam = 0
and while the hypergraph is empty, so lam = 0 always means plain UCT."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hyperplan.search.common import INFO
from hyperplan.search.config import BranchOn, InfoPrior
from hyperplan.search.env import Action
from hyperplan.search.parts.base import Mark, RolloutChooser
from hyperplan.search.selection import rank_by_prior
from hyperplan.search.tree import Node

if TYPE_CHECKING:
    from hyperplan.search.mcts import HyperMCTS

__all__ = ["PriorGuided", "guiding"]


def guiding(search: HyperMCTS) -> bool:
    """Whether the guidance is active now: lam > 0 and a non-empty hypergraph."""
    hypergraph = search.hypergraph
    return search.config.lam > 0 and hypergraph is not None and not hypergraph.empty


@dataclass(frozen=True)
class PriorGuided(RolloutChooser):
    """A rollout chooser: the policy's b candidates, the one with the highest prior (neutral
    for information actions, policy order on ties; with ``branch_on="commit"`` an information
    top candidate is taken as is). None when inactive (:func:`guiding`)."""

    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset()

    def choose(self, search: HyperMCTS, node: Node | None,
               actions: Sequence[Action]) -> Action | None:
        hypergraph = search.hypergraph
        if hypergraph is None or not guiding(search):
            return None
        if node is not None:
            search.goto(node)
        candidates = search.policy.propose(search.env, actions, search.config.branching,
                                           search.rng)
        if not candidates:
            return actions[0]
        at_commits = search.design.branch_on is BranchOn.COMMIT
        first = candidates[0]
        if len(candidates) == 1 or (at_commits and first.kind is INFO):
            return first  # nothing to rank (information steps as the policy ranks them)
        ids = search.env.recorded_ids(candidates)
        neutral = search.config.info_prior is InfoPrior.NEUTRAL
        return rank_by_prior(candidates, hypergraph.priors_of(ids), neutral, at_commits)
