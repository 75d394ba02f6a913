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
from hyperplan.search.mcts import HyperMCTS, MCTSConfig
from hyperplan.search.parts.progressive import ProgressiveWidening
from hyperplan.search.policies import HeuristicPolicy
from hyperplan.search.trajectory_hypergraph import Observation
from hyperplan.search.tree import HistoryTree, Pending, TreeError
from hyperplan_bench.eval.treesearch.toy import ToyShopEnv
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
            # widening happens on the way down, before the visit is backed up; the
            # evidence widening adds up to evidence_width children at the expansion
            assert node.widened <= math.floor(math.sqrt(max(0, node.n - 1) / widen)) + \
                config.evidence_width
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
    widening = search.design.wideners[0]
    assert isinstance(widening, ProgressiveWidening)
    env.reset()
    assert rest[widening.choice(search, rest)].key == first.key  # no evidence yet: policy order
    search.hypergraph.update([Observation(frozenset({favourite.key}), "item0", 0.9),
                              Observation(frozenset({first.key}), "item0", 0.2)])
    assert rest[widening.choice(search, rest)].key == favourite.key
    off = HyperMCTS(env, policy, MCTSConfig(lam=0.5, widen=1.0, widen_prior=False), 0)
    assert off.hypergraph is not None
    off.hypergraph.update([Observation(frozenset({favourite.key}), "item0", 0.9)])
    off_widening = off.design.wideners[0]
    assert isinstance(off_widening, ProgressiveWidening) and not off_widening.by_prior
    assert rest[off_widening.choice(off, rest)].key == first.key


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


def test_pending_sync_reads_only_the_ids_born_since_the_last_call() -> None:
    ids: list[object] = ["a", "b", None, "c"]
    pending = Pending([Action(k) for k in "abxc"], ids, [True, True, False, True])
    nodes: set[object] = set()
    born: list[object] = []
    assert pending.sync(nodes, born) == set()
    for v in ("z", "b"):
        nodes.add(v)
        born.append(v)
    assert pending.sync(nodes, born) == {"b"} and pending.cursor == 2
    nodes.add("a")
    born.append("a")
    assert pending.sync(nodes, born) == {"a", "b"}
    assert pending.take(1)[0].key == "b"  # taken: no longer pending, nor seen
    assert pending.sync(nodes, born) == {"a"} and pending.ids == ["a", None, "c"]
    nodes.add("c")
    born.append("c")
    assert pending.sync(nodes, born) == {"a", "c"} and not pending.unseen


def test_pending_keeps_an_identity_listed_twice_until_both_are_taken() -> None:
    pending = Pending([Action(k) for k in ("a1", "a2", "b")], ["a", "a", "b"],
                      [True, True, True])
    assert not pending.distinct
    assert pending.sync({"a"}, ["a"]) == {"a"}
    pending.take(0)
    assert pending.sync({"a"}, ["a"]) == {"a"}
    pending.take(0)
    assert pending.sync({"a"}, ["a"]) == set()


def test_incremental_seen_index_equals_a_full_scan_after_a_search() -> None:
    config = MCTSConfig(budget=80, branching=2, early_stop=False, widen=0.25, lam=0.5)
    checked = 0
    for seed in range(3):
        search = HyperMCTS(ToyShopEnv(seed, 3, 8), HeuristicPolicy(temperature=0.5), config, seed)
        search.run()
        hg = search.hypergraph
        assert search.tree is not None and hg is not None
        for node in search.tree.nodes():
            pending = node.pending
            if pending is None:
                continue
            full = {v for v in pending.ids if v is not None and v in hg.nodes}
            assert pending.sync(hg.nodes, hg.born) == full
            assert pending.unseen == {v for v in pending.ids if v is not None} - full
            checked += 1
    assert checked > 10
