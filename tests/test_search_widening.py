"""Progressive widening of commit decision points (``MCTSConfig.widen``, issue 5).

Pinned: the square-root schedule b + floor(sqrt(N(h) / w)); distinct children; saturation
when A_dec(h) has no commit left; the hypergraph chooses the added decision at lam > 0 (the
highest prior among decisions it has seen, policy order without evidence) and is never read
at lam = 0 (UCT widens by policy order; decision-for-decision equality with an independent
reference UCT is in ``tests/test_search_core.py``).
"""

from __future__ import annotations

import math
import random

import pytest

from hyperplan.search.baselines import uct
from hyperplan.search.env import Action
from hyperplan.search.hypergraph import Observation
from hyperplan.search.mcts import HyperMCTS, MCTSConfig
from hyperplan.search.policies import HeuristicPolicy
from hyperplan.search.toy import ToyShopEnv
from hyperplan.search.tree import HistoryTree, TreeError
from search_reference import Unreadable


@pytest.mark.parametrize("widen", [0.25, 1.0, 4.0])
def test_widening_follows_the_square_root_schedule(widen: float) -> None:
    config = MCTSConfig(budget=60, branching=2, early_stop=False, widen=widen)
    search = HyperMCTS(ToyShopEnv(1, 3, 8), HeuristicPolicy(temperature=0.5), config, 1)
    search.run()
    assert search.tree is not None
    root = search.tree.root
    assert root.widened > 0 and len(root.edges) > 2
    for node in search.tree.nodes():
        keys = [e.action.key for e in node.edges]
        assert len(keys) == len(set(keys))
        if node.expanded and not node.saturated:
            # widening happens on the way down, before the visit is backed up
            assert node.widened <= math.floor(math.sqrt(max(0, node.n - 1) / widen)) + 1
            assert len(node.edges) <= 2 + node.widened


def test_widening_saturates_when_no_commit_is_left() -> None:
    config = MCTSConfig(budget=40, branching=2, early_stop=False, widen=0.25)
    search = HyperMCTS(ToyShopEnv(0, 2, 3), HeuristicPolicy(), config, 0)
    search.run()
    assert search.tree is not None
    root = search.tree.root
    assert root.saturated and len(root.edges) == 6  # 2 items x 3 products, all children


def test_algorithm_one_has_no_widening() -> None:
    search = HyperMCTS(ToyShopEnv(1, 3, 8), HeuristicPolicy(), MCTSConfig(
        budget=40, branching=2, early_stop=False, widen=0.0), 1)
    search.run()
    assert search.tree is not None
    assert all(n.widened == 0 and len(n.edges) <= 2 for n in search.tree.nodes())


def test_widening_adds_the_decision_with_the_best_prior() -> None:
    env = ToyShopEnv(0, 2, 6)
    policy = HeuristicPolicy(temperature=0.0)
    rest = [a for a in env.decisions() if a.key.startswith("P0.")]
    favourite = rest[-1]
    first = policy.propose(env, rest, 1, random.Random(0))[0]
    assert first.key != favourite.key
    config = MCTSConfig(lam=0.5, widen=1.0)
    search = HyperMCTS(env, policy, config, 0)
    assert search.hypergraph is not None
    env.reset()
    assert rest[search.widen_choice(rest)].key == first.key  # no evidence yet: policy order
    search.hypergraph.update([Observation(frozenset({favourite.key}), "item0", 0.9),
                              Observation(frozenset({first.key}), "item0", 0.2)])
    assert rest[search.widen_choice(rest)].key == favourite.key
    off = HyperMCTS(env, policy, MCTSConfig(lam=0.5, widen=1.0, widen_prior=False), 0)
    assert off.hypergraph is not None
    off.hypergraph.update([Observation(frozenset({favourite.key}), "item0", 0.9)])
    assert rest[off.widen_choice(rest)].key == first.key


def test_lambda_zero_widening_never_reads_the_hypergraph() -> None:
    config = MCTSConfig(budget=50, branching=2, lam=0.0, early_stop=False, trace=True,
                        widen=0.25, rollout_guidance=True)
    search = HyperMCTS(ToyShopEnv(2, 3, 6), HeuristicPolicy(temperature=0.5), config, 2)
    search.hypergraph = Unreadable()
    result = search.run()
    assert search.hypergraph.rollouts == 50
    plain = uct(ToyShopEnv(2, 3, 6), HeuristicPolicy(temperature=0.5), config, 2)
    assert result.trace == plain.trace


def test_node_widen_guards() -> None:
    tree = HistoryTree(None, 2)
    with pytest.raises(TreeError, match="expanded"):
        tree.root.widen(Action("a"), "a", True)
    tree.root.expand([(Action("a"), "a", True)], 2)
    with pytest.raises(TreeError, match="duplicate"):
        tree.root.widen(Action("a"), "a", True)
    edge = tree.root.widen(Action("b"), "b", True)
    assert edge.child.depth == 1 and tree.root.widened == 1 and len(tree.root.edges) == 2
    with pytest.raises(ValueError, match="widen"):
        MCTSConfig(widen=-1.0)
