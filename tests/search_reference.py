"""Reference pieces for the tree-search tests, written independently of mcts.py (they replay
actions instead of restoring snapshots): a plain UCT node, the expansion rule, progressive
widening by policy order, the UCT descent, a hypergraph that may not be read, and the two-item
verdicts the hand-checked hypergraph tests feed it."""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Iterable, Sequence

from hyperplan.search.env import Action, ActionKind, Objective, SearchEnv, Verdict
from hyperplan.search.policies import Policy
from hyperplan.search.trajectory_hypergraph import TrajectoryHypergraph


class RefNode:
    def __init__(self, action: Action | None, depth: int) -> None:
        self.action = action
        self.depth = depth
        self.n = 0
        self.w = 0.0
        self.children: list[RefNode] | None = None
        self.widened = 0
        self.saturated = False


def ref_children(
    env: SearchEnv, policy: Policy, decisions: Sequence[Action], b: int, rng: random.Random,
    branch_on: str,
) -> list[Action]:
    """The expansion rule, from the seed's sentence on decision points: the policy's b
    proposals; with "commit", an information top proposal alone, else the commits topped up
    from the remaining commits when information proposals were dropped."""
    proposed = policy.propose(env, decisions, b, rng)
    if branch_on != "commit" or not proposed:
        return proposed
    if proposed[0].kind is ActionKind.INFO:
        return proposed[:1]
    commits = [a for a in proposed if a.kind is ActionKind.COMMIT]
    if len(commits) < len(proposed) and len(commits) < b:
        have = {a.key for a in commits}
        rest = [a for a in decisions if a.kind is ActionKind.COMMIT and a.key not in have]
        if rest:
            commits += policy.propose(env, rest, b - len(commits), rng)
    return commits


def ref_widen(
    env: SearchEnv, policy: Policy, node: RefNode, widen: float, rng: random.Random
) -> None:
    """Progressive widening by policy order, from MCTSConfig's docstring: a commit decision
    point gets one more commit child whenever N(h) >= w (j + 1)^2."""
    assert node.children
    first = node.children[0].action
    if (not widen or node.saturated or first is None or first.kind is not ActionKind.COMMIT
            or node.n < widen * (node.widened + 1) ** 2):
        return
    have = {ch.action.key for ch in node.children if ch.action is not None}
    rest = [a for a in env.decisions() if a.kind is ActionKind.COMMIT and a.key not in have]
    if not rest:
        node.saturated = True
        return
    proposed = policy.propose(env, rest, 1, rng)
    node.children.append(RefNode(proposed[0] if proposed else rest[0], node.depth + 1))
    node.widened += 1


def ref_descend(env: SearchEnv, policy: Policy, root: RefNode, widen: float, c: float,
                rng: random.Random) -> tuple[RefNode, list[RefNode], list[str]]:
    """UCT selection from the root (unvisited children first, in order), stepping ``env``;
    the node reached, the path below the root and the action keys."""
    node, path, keys = root, [], []
    while node.children:
        ref_widen(env, policy, node, widen, rng)
        unvisited = [ch for ch in node.children if ch.n == 0]
        if unvisited:
            child = unvisited[0]
        else:
            log_n = math.log(node.n)
            child = max(node.children,
                        key=lambda ch: ch.w / ch.n + c * math.sqrt(log_n / ch.n))
        assert child.action is not None
        env.step(child.action)
        keys.append(child.action.key)
        path.append(child)
        node = child
    return node, path, keys


def ref_backup(root: RefNode, path: Sequence[RefNode], reward: float) -> None:
    root.n += 1
    for ch in path:
        ch.n += 1
        ch.w += reward


class Unreadable(TrajectoryHypergraph):
    """A hypergraph that may be updated but never read."""

    __slots__ = ()

    def prior(self, v: Hashable) -> float:
        raise AssertionError("the hypergraph was read at lam = 0")

    def known(self, v: Hashable) -> bool:
        raise AssertionError("the hypergraph was read at lam = 0")

    def priors_of(self, ids: Iterable[Hashable | None]) -> list[float]:
        raise AssertionError("the hypergraph was read at lam = 0")

    @property
    def empty(self) -> bool:
        raise AssertionError("the hypergraph was read at lam = 0")


TWO_GOALS_AND_A_BUDGET = [Objective("g1"), Objective("g2"), Objective("budget", scope="global")]
"""Two local objectives and a global one, for hand-checked hypergraph tests."""

TWO_GOALS_ABOUT: dict[str, frozenset[Hashable]] = {
    "g1": frozenset({"a"}), "g2": frozenset({"b"}), "budget": frozenset({"a", "b"})}
"""The decisions each of :data:`TWO_GOALS_AND_A_BUDGET` is about: g1 decision a, g2
decision b, the budget both."""


def verdict_of(scores: dict[str, float], about: dict[str, frozenset[Hashable]]) -> Verdict:
    """A failed verdict with these objective scores (reward: their mean) and decision sets."""
    return Verdict(reward=sum(scores.values()) / len(scores), success=False,
                   objective_scores=scores, objective_decisions=about)
