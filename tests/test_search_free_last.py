"""Free decisions last (issue 25, item 2): the rollout chooser leaves a new history's free
decisions -- recorded decisions the hypergraph has scored under global objectives only, such
as coupons -- for later while a recorded decision not known to be free is among its children
(:class:`~hyperplan.search.parts.free_last.FreeLast`).

Checked by reading searches after they ran (the compiled build refuses interpreted
subclasses of HyperMCTS, so nothing here hooks the search)."""

from __future__ import annotations

from typing import Any

from hyperplan.search.baselines import uct
from hyperplan.search.env import Action
from hyperplan.search.mcts import HyperMCTS, MCTSConfig, design_config
from hyperplan.search.parts.free_last import FreeLast
from hyperplan.search.policies import make_policy
from hyperplan.search.trajectory_hypergraph import TrajectoryHypergraph
from hyperplan.search.tree import Edge, Node
from hyperplan_bench.eval.treesearch.runner import load_tasks, task_seed
from search_helpers import choices_before, generated_search, no_call
from search_reference import TWO_GOALS_AND_A_BUDGET, verdict_of

LOCAL = frozenset({"g1", "g2"})
# g1 is about a, g2 about b; the budget is about a, b and the coupon c
ABOUT = {"g1": frozenset({"a"}), "g2": frozenset({"b"}), "budget": frozenset({"a", "b", "c"})}


def test_free_means_scored_under_global_objectives_only() -> None:
    hg = TrajectoryHypergraph()
    assert not hg.free("c", LOCAL)  # never observed: nothing known
    hg.observe(["a", "b", "c"], verdict_of({"g1": 1.0, "g2": 1.0, "budget": 0.0}, ABOUT),
               TWO_GOALS_AND_A_BUDGET)
    assert hg.free("c", LOCAL)  # the budget and the trajectory only
    assert not hg.free("a", LOCAL) and not hg.free("b", LOCAL)  # each has a local objective
    about = {**ABOUT, "g2": frozenset({"b", "c"})}  # a later rollout scores c under g2
    hg.observe(["b", "c"], verdict_of({"g1": 0.0, "g2": 1.0, "budget": 0.0}, about),
               TWO_GOALS_AND_A_BUDGET)
    assert not hg.free("c", LOCAL)  # a local label, once seen, stays


def _search(seed: int, **overrides: Any) -> HyperMCTS:
    """HyperMCTS on one of three generated shopping tasks (coupons are its free decisions)."""
    return generated_search("shopping", 3, seed, **overrides)


def test_the_free_set_is_what_the_hypergraph_calls_free_and_holds_the_coupons() -> None:
    search = _search(0)
    hypergraph = search.hypergraph
    assert hypergraph is not None
    local = search.ledger.local
    assert search.ledger.free == {v for v in hypergraph.nodes if hypergraph.free(v, local)}
    assert search.ledger.free and all(str(v).startswith("coupon:") for v in search.ledger.free)


_ROOT = Node(None, 0)


def _edge(key: str, recorded: bool) -> Edge:
    return Edge(Action(key), key, recorded, _ROOT)


def test_free_children_wait_while_a_recorded_one_that_is_not_free_is_left() -> None:
    search = _search(1)
    search.ledger.free = {"coupon:x", "coupon:y"}
    coupon_x, coupon_y = _edge("coupon:x", True), _edge("coupon:y", True)
    choose, view, finish = _edge("choose:0:p1", True), _edge("view:p1", False), \
        _edge("finish", False)
    assert FreeLast().keep(search, [coupon_x, choose, coupon_y, view]) == [choose, view]
    # information steps and finishing do not hold free decisions back
    assert FreeLast().keep(search, [coupon_x, view, finish]) == [coupon_x, view, finish]
    assert FreeLast().keep(search, [coupon_x, coupon_y]) == [coupon_x, coupon_y]
    # the only child left is taken without asking the policy
    assert no_call(search)._picked(_ROOT, [coupon_x, coupon_y, choose]) is choose


def test_no_rollout_chooser_takes_a_free_child_while_another_recorded_one_is_new() -> None:
    """Every rollout's path, walked down the final tree with the free set as it stood before
    that rollout (a second search with the budget cut there): at a history the rollout
    expanded (its children all unvisited before it), the child taken is not free while a
    recorded child that is not free was among them."""
    checked = 0
    for before, node, taken in choices_before(lambda **o: _search(2, **o), 24):
        edges, free = node.edges, before.ledger.free
        fresh = all(e.n == (1 if e is taken else 0) for e in edges) and node.n == 1
        bound = [e for e in edges if e.recorded and e.identity not in free]
        if fresh and bound and len(edges) > 1 and any(
                e.recorded and e.identity in free for e in edges):
            checked += 1
            assert not (taken.recorded and taken.identity in free)
    assert checked >= 5


def test_off_at_lambda_zero_when_switched_off_or_in_the_other_designs() -> None:
    assert MCTSConfig().free_last
    assert not design_config("paper").free_last
    assert not design_config("commit-widen").free_last
    lam0 = _search(0, lam=0.0)
    assert not lam0.ledger.free
    env = load_tasks("shopping", 3, 5)[0]
    assert lam0.trace == uct(env, make_policy("heuristic"), lam0.config, task_seed(5, 0)).trace
    off = _search(0, free_last=False)
    assert not off.ledger.free and off.trace != _search(0).trace  # it changes the search

