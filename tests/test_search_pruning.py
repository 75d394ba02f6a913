"""The evidence pruning (issue 25, item 2): selection and the rollout chooser skip a child whose
decision failed one of its own objectives in every rollout that took it, while another child
is left (:class:`~hyperplan.search.parts.pruning.EvidencePruning`).

Checked by reading searches after they ran (the compiled build refuses interpreted
subclasses of HyperMCTS, so nothing here hooks the search)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from typer.testing import CliRunner

from hyperplan.cli import app
from hyperplan.search.baselines import uct
from hyperplan.search.mcts import HyperMCTS, MCTSConfig, design_config
from hyperplan.search.parts.pruning import EvidencePruning
from hyperplan.search.policies import RandomPolicy
from hyperplan.search.trajectory_hypergraph import TrajectoryHypergraph
from hyperplan.search.tree import Node
from hyperplan_bench.eval.treesearch.toy import ToyShopEnv
from search_helpers import choices_before, no_call
from search_reference import TWO_GOALS_ABOUT, TWO_GOALS_AND_A_BUDGET, verdict_of


def test_refuted_means_every_observation_failed_one_of_the_decisions_own_objectives() -> None:
    objectives, about, local = TWO_GOALS_AND_A_BUDGET, TWO_GOALS_ABOUT, {"g1", "g2"}
    hg = TrajectoryHypergraph()
    hg.observe(["a", "b"], verdict_of({"g1": 1.0, "g2": 0.0, "budget": 0.0}, about), objectives)
    assert hg.refuted("b", local)  # g2 failed by the only rollout that took b
    assert not hg.refuted("a", local)  # g1 met; the failed budget is a global constraint
    assert hg.refuted("a", {"budget"})  # ... which a caller may ask about
    assert not hg.refuted("c", local)  # never observed: no evidence either way
    hg.observe(["b"], verdict_of({"g1": 0.0, "g2": 0.5, "budget": 0.0}, about), objectives)
    assert not hg.refuted("b", local)  # one partial success is enough to keep it
    hg.observe(["a"], verdict_of({"g1": 0.0, "g2": 0.0, "budget": 0.0}, about), objectives)
    assert not hg.refuted("a", local)  # met once, failed once: not refuted


@pytest.mark.parametrize("seed", [1, 5])
def test_local_marks_are_refuted_and_free_read_in_one_pass(seed: int) -> None:
    search = _search(seed)
    hypergraph, local = search.hypergraph, search.ledger.local
    assert hypergraph is not None
    marks = {v: hypergraph.local_marks(v, local) for v in hypergraph.nodes}
    assert marks == {v: (hypergraph.refuted(v, local), hypergraph.free(v, local))
                     for v in hypergraph.nodes}
    assert any(refuted for refuted, _ in marks.values())
    assert hypergraph.local_marks("never seen", local) == (False, False)


def _search(seed: int, **overrides: Any) -> HyperMCTS:
    config = replace(MCTSConfig(budget=40, early_stop=False, trace=True), **overrides)
    search = HyperMCTS(ToyShopEnv(seed, 4, 6), RandomPolicy(), config, seed)
    search.run()
    return search


@pytest.mark.parametrize("seed", [1, 5])
def test_the_refuted_set_is_what_the_hypergraph_refutes_after_every_rollout(seed: int) -> None:
    search = _search(seed)
    hypergraph = search.hypergraph
    assert hypergraph is not None
    expected = {v for v in hypergraph.nodes if hypergraph.refuted(v, search.ledger.local)}
    assert expected and search.ledger.refuted == expected


@pytest.mark.parametrize("seed", [1, 5])
def test_no_rollout_takes_a_refuted_child_while_another_is_left(seed: int) -> None:
    """Every rollout's path, walked down the final tree with the refuted set as it stood
    before that rollout (a second search with the budget cut there): at every history with a
    choice, the child taken is not refuted unless all its siblings are."""
    pruned_choices = 0
    for before, node, taken in choices_before(lambda **o: _search(seed, **o), 40):
        edges = node.edges
        out = [e for e in edges if e.recorded and e.identity in before.ledger.refuted]
        if len(edges) > 1 and out:
            pruned_choices += 1
            assert taken not in out or len(out) == len(edges)
    assert pruned_choices >= 10


def _a_node_with_children(search: HyperMCTS) -> Node:
    assert search.tree is not None
    return next(n for n in search.tree.nodes() if len(n.edges) >= 3
                and all(e.recorded for e in n.edges))


def test_the_only_child_left_is_taken_without_asking_the_policy() -> None:
    search = _search(2, evidence_widening=False, compose_every=0)
    node = _a_node_with_children(search)
    first, *rest = node.edges
    search.ledger.refuted = {e.identity for e in rest}
    assert EvidencePruning().keep(search, node.edges) == [first]
    assert search.select(node) is first  # even when another child was never visited
    assert no_call(search)._picked(node, node.edges) is first
    search.ledger.refuted = {e.identity for e in node.edges}  # all refuted: all are candidates
    assert EvidencePruning().keep(search, node.edges) == node.edges
    search.ledger.refuted = {rest[0].identity}
    assert rest[0] not in EvidencePruning().keep(search, node.edges)
    assert search.select(node) is not rest[0]


def test_no_pruning_at_lambda_zero_when_switched_off_or_in_the_other_designs() -> None:
    assert MCTSConfig().evidence_pruning
    assert not design_config("paper").evidence_pruning
    assert not design_config("commit-widen").evidence_pruning
    lam0 = _search(3, lam=0.0)
    assert not lam0.ledger.refuted
    assert lam0.trace == uct(ToyShopEnv(3, 4, 6), RandomPolicy(),
                             lam0.config, 3).trace
    off = _search(3, evidence_pruning=False)
    assert not off.ledger.refuted and off.trace != _search(3).trace  # it changes the search


@pytest.mark.parametrize("rule", ["evidence_pruning", "free_last"])
def test_search_run_reports_the_rule(rule: str) -> None:
    """The pruning here, free decisions last (tests/test_search_free_last.py) alike."""
    args = ["search", "run", "--suite", "toy", "--tasks", "2", "--rollouts", "5", "--seed", "1",
            "--methods", "hypermcts", "--json"]
    assert json.loads(CliRunner().invoke(app, args).stdout)[rule] is True
    paper = json.loads(CliRunner().invoke(app, [*args, "--design", "paper"]).stdout)
    assert paper[rule] is False
