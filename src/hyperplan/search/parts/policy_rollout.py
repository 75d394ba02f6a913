"""The policy's own rollout choice (Algorithm 1's simulation step): the chooser every design
falls back to when none of its own answers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hyperplan.search.env import Action
from hyperplan.search.parts.base import Mark, RolloutChooser
from hyperplan.search.tree import Node

if TYPE_CHECKING:
    from hyperplan.search.mcts import HyperMCTS

__all__ = ["PolicyRollout"]


@dataclass(frozen=True)
class PolicyRollout(RolloutChooser):
    """A rollout chooser: ``policy.rollout`` at the history (the environment taken to
    ``node`` first); it always answers."""

    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset()

    def choose(self, search: HyperMCTS, node: Node | None,
               actions: Sequence[Action]) -> Action | None:
        if node is not None:
            search.goto(node)
        return search.policy.rollout(search.env, actions, search.rng)
